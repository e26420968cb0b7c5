"""Exact conversions between the registry's small float words and binary32.

Decoding (word -> binary32) is exact for every word. Encoding rounds to nearest,
ties to even, and never flushes subnormals; callers decide what an overflow or a
non-finite value means.
"""
from __future__ import annotations

import numpy as np

F16_MIN_SUBNORMAL = 0x0001          # binary16 word of 2**-24
BF16_MIN_SUBNORMAL = 0x0001         # bfloat16 word of 2**-133
SIGN16 = 0x8000
E4M3FN_MAX = np.float32(448.0)


def _e2m1_values() -> np.ndarray:
    magnitude = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0], dtype=np.float32)
    table = np.concatenate([magnitude, -magnitude])     # bit 3 negates, 0x8 is -0.0
    table.flags.writeable = False
    return table


def _e4m3fn_values() -> np.ndarray:
    word = np.arange(256)
    exponent, fraction = (word >> 3) & 0xF, word & 0x7
    magnitude = np.where(exponent == 0, fraction * 2.0 ** -9,
                         (1.0 + fraction / 8.0) * np.exp2(exponent - 7.0))
    magnitude[(exponent == 15) & (fraction == 7)] = np.nan
    table = np.where(word & 0x80, -magnitude, magnitude).astype(np.float32)
    table.flags.writeable = False
    return table


E2M1_VALUES = _e2m1_values()        # word 0..15 -> binary32
E4M3FN_VALUES = _e4m3fn_values()    # word 0..255 -> binary32 (NaN at 0x7f, 0xff)


def bf16_to_f32(words: np.ndarray) -> np.ndarray:
    """bfloat16 words (uint16) -> binary32, by placing each word in the high half."""
    return (words.astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16(values: np.ndarray) -> np.ndarray:
    """Finite binary32 -> bfloat16 words, round to nearest even (may give +-inf words)."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    return ((bits + (np.uint32(0x7FFF) + ((bits >> 16) & 1))) >> 16).astype(np.uint16)


def to_bf16(values: np.ndarray) -> np.ndarray:
    """Finite values of any real floating dtype -> bfloat16 words, rounded once, to
    nearest even (may give +-inf words).

    Dtypes no wider than binary32 convert to binary32 exactly first. A wider source
    (binary64, extended) is rounded straight to BF16, never through binary32 (that
    would round twice): with ``|x| = m * 2**e``, ``0.5 <= m < 1``, the BF16 quantum is
    ``2**(max(e - 1, -126) - 7)``; ``x / quantum`` is exact, ``rint`` rounds it to
    nearest even, and the product is a BF16 value (or at least ``2**128``: infinity).
    """
    values = np.asarray(values)
    if values.dtype.itemsize <= 4:
        return f32_to_bf16(values.astype(np.float32))
    _, exponent = np.frexp(values)
    quantum = np.ldexp(np.ones_like(values), np.maximum(exponent - 1, -126) - 7)
    rounded = np.rint(values / quantum) * quantum
    with np.errstate(over="ignore"):
        return f32_to_bf16(rounded.astype(np.float32))


def f32_to_f16(values: np.ndarray) -> np.ndarray:
    """binary32 -> binary16, round to nearest even with subnormals (may give +-inf)."""
    with np.errstate(over="ignore"):
        return np.asarray(values, dtype=np.float32).astype(np.float16)


def f32_to_e4m3fn(values: np.ndarray) -> np.ndarray:
    """binary32 with ``|v| <= 448`` -> E4M3FN words, round to nearest even.

    Normal results (``|v| >= 2**-6``) round the binary32 word to 3 fraction bits
    (a carry moves into the exponent) and rebias the exponent from 127 to 7;
    subnormal results count quanta of ``2**-9``, an exact scaling.
    """
    values = np.asarray(values, dtype=np.float32)
    magnitude = np.abs(values)
    bits = magnitude.view(np.uint32)
    rounded = (bits + (np.uint32(0x7FFFF) + ((bits >> 20) & 1))) >> 20
    normal = rounded.astype(np.int32) - ((127 - 7) << 3)
    subnormal = np.rint(magnitude * np.float32(2.0 ** 9)).astype(np.int32)
    word = np.where(magnitude < np.float32(2.0 ** -6), subnormal, normal).astype(np.uint8)
    return np.where(np.signbit(values), word | np.uint8(0x80), word)


def rescue_zero(words: np.ndarray, raw: np.ndarray, min_word: int) -> np.ndarray:
    """Replace a 16-bit float word that rounded to zero from a nonzero ``raw``
    value by the smallest subnormal of the same sign."""
    underflow = ((words & 0x7FFF) == 0) & (raw != 0)
    return np.where(underflow, (words & SIGN16) | min_word, words).astype(np.uint16)
