"""Independent scalar oracles for the formats tests.

Everything here is plain Python arithmetic on IEEE doubles plus ``struct`` for
rounding to binary32/binary16 (round to nearest even). A product of two
binary32 values is exact in a double, and a double quotient rounds to the
correctly rounded binary32 quotient, so ``f32(a * b)`` and ``f32(a / b)`` below
are the binary32 operations. None of it calls ninfer_ir.
"""
from __future__ import annotations

import math
import struct

import numpy as np


def f32(x: float) -> float:
    """Round a double to binary32 (nearest even); overflow gives +-inf."""
    try:
        return struct.unpack("<f", struct.pack("<f", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def f32_bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def f16_word(x: float) -> int:
    """Round a double to a binary16 word (nearest even); overflow gives the inf word."""
    try:
        return struct.unpack("<H", struct.pack("<e", x))[0]
    except OverflowError:
        return 0x7C00 | (0x8000 if x < 0 else 0)


def f16_value(word: int) -> float:
    return struct.unpack("<e", struct.pack("<H", word))[0]


class Refused(Exception):
    """The oracle encoder refuses the input."""


def absmax_group(values: list[float], qmin: int, qmax: int) -> tuple[int, list[int]]:
    """Section 7 of the reference, one group of binary32 values -> (scale word, codes)."""
    for v in values:
        if not math.isfinite(v):
            raise Refused("non-finite")
    amax = max(abs(v) for v in values)
    if amax == 0:
        return 0x0000, [0] * len(values)
    raw = f32(amax / qmax)
    word = f16_word(raw)
    if word == 0:
        word = 0x0001
    if word == 0x7C00:
        raise Refused("scale overflow")
    inv = f32(1.0 / f16_value(word))
    codes = []
    for v in values:
        normalized = f32(v * inv)
        codes.append(min(max(round(normalized), qmin), qmax))   # round(): ties to even
    return word, codes


def absmax_rows(x: np.ndarray, group: int, qmin: int, qmax: int):
    """The oracle over a float32 array [..., K] -> (scale words [..., G], codes [..., K])."""
    rows = x.reshape(-1, x.shape[-1])
    k = x.shape[-1]
    n_groups = -(-k // group)
    words = np.zeros((len(rows), n_groups), dtype=np.uint16)
    codes = np.zeros(rows.shape, dtype=np.int64)
    for r, row in enumerate(rows):
        for g in range(n_groups):
            part = [float(v) for v in row[g * group:(g + 1) * group]]
            words[r, g], codes[r, g * group:g * group + len(part)] = absmax_group(part, qmin, qmax)
    return words.reshape(*x.shape[:-1], n_groups), codes.reshape(x.shape)


def grouped_decode(codes: np.ndarray, scale_words: np.ndarray, group: int) -> np.ndarray:
    """binary32(s32 * q) element by element -> uint32 bit patterns."""
    flat_codes = codes.reshape(-1, codes.shape[-1])
    flat_words = scale_words.reshape(-1, scale_words.shape[-1])
    out = np.zeros(flat_codes.shape, dtype=np.uint32)
    for r in range(len(flat_codes)):
        for k in range(flat_codes.shape[1]):
            s = f16_value(int(flat_words[r, k // group]))
            out[r, k] = f32_bits(f32(s * float(flat_codes[r, k])))
    return out.reshape(codes.shape)


def pack_bits(words: list[int], bits: int) -> bytes:
    """A little-endian bit stream: word k at bits [k*bits, (k+1)*bits)."""
    stream = 0
    for k, w in enumerate(words):
        stream |= w << (k * bits)
    return stream.to_bytes(-(-len(words) * bits // 8), "little")


def finite_f16_words(rng: np.random.Generator, shape, max_exponent: int = 22) -> np.ndarray:
    """Random finite binary16 words with biased exponent <= max_exponent (subnormals too)."""
    sign = rng.integers(0, 2, shape) << 15
    exponent = rng.integers(0, max_exponent + 1, shape) << 10
    mantissa = rng.integers(0, 1 << 10, shape)
    return (sign | exponent | mantissa).astype(np.uint16)
