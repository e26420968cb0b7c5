"""The oracle of the in-kernel ``decode`` op: one packed row of a grouped format.

Element ``k`` is the ``b``-bit little-endian word at stream bits ``[k*b, (k+1)*b)``
(stream bit ``i`` is bit ``i % 8`` of byte ``i // 8``), read as the format's signed
code ``q`` (two's complement, or ``u - 1`` for Q2), and its value is
``binary32(s32 * binary32(q))`` with ``s32`` the exact binary32 of the group's
binary16 scale. Codes are not validated (the producer's contract).
"""
from __future__ import annotations

import numpy as np


def code_of_word(word: np.ndarray, fmt) -> np.ndarray:
    """Signed codes (int32) of ``b``-bit words (any unsigned array) for ``fmt``."""
    w = word.astype(np.int32)
    offset = getattr(fmt.word_codec, "offset", None)
    if offset is not None:
        return w - offset
    sign = 1 << (fmt.bits - 1)
    return (w ^ sign) - sign


def words_of_row(packed: np.ndarray, bits: int, k: int) -> np.ndarray:
    """The ``k`` words of one packed row (uint32)."""
    pos = np.arange(k, dtype=np.int64) * bits
    byte, off = pos >> 3, (pos & 7).astype(np.uint32)
    row = np.concatenate([np.asarray(packed, dtype=np.uint8), np.zeros(1, np.uint8)])
    pair = row[byte].astype(np.uint32) | (row[byte + 1].astype(np.uint32) << np.uint32(8))
    return (pair >> off) & np.uint32((1 << bits) - 1)


def row_sizes(fmt, k: int) -> tuple[int, int]:
    """``(packed bytes, scales)`` of one row of ``k`` elements of ``fmt``."""
    return -(-k * fmt.bits // 8), -(-k // fmt.group)


def check_row(packed, scales, fmt, k) -> str | None:
    """Why ``packed`` (u8) and ``scales`` (f16) are not one row of ``k`` elements of
    ``fmt``, or None when they are."""
    if isinstance(k, (int, np.integer)) and not isinstance(k, bool) and k >= 1 \
            and (packed.shape[0], scales.shape[0]) == row_sizes(fmt, int(k)):
        return None
    return row_mismatch(packed.shape[0], scales.shape[0], fmt, k)


def row_mismatch(n_packed, n_scales, fmt, k) -> str:
    """The words of a row geometry that does not fit."""
    return (f"{n_packed} packed bytes and {n_scales} scales do not hold one {fmt.name} row "
            f"of {k!r} elements")


def decode_row(packed, scales, fmt, k: int) -> np.ndarray:
    q = code_of_word(words_of_row(packed, fmt.bits, k), fmt).astype(np.float32)
    s = np.asarray(scales, dtype=np.float16).astype(np.float32)
    return (s[np.arange(k) // fmt.group] * q).astype(np.float32)
