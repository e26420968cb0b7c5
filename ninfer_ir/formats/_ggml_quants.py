"""Decoders of ggml's scalar-grid blocks: Q8_0, Q4_0, Q5_0, Q2_0 and Q2_K..Q6_K.

Each ``decode_*`` takes ``uint8 [blocks, block_bytes]`` (byte images of ggml's
``block_*`` structs) and returns ``float32 [blocks, block_values]`` equal, bit
for bit, to ggml's ``dequantize_row_*``: every binary32 operation of the C code
is one rounded numpy operation here, in the same order (no fused multiply-add).
Output element ``o`` of a 256-value super-block is written below as
``o = 128*h + 32*j + m`` (or similar) to show which stored bits feed it.
"""
from __future__ import annotations

import numpy as np

F32 = np.float32
SHIFT_2BIT = np.array([0, 2, 4, 6], dtype=np.uint8)
SHIFT_4BIT = np.array([0, 4], dtype=np.uint8)
_SUB = np.arange(16)


def f16_field(blocks: np.ndarray, offset: int) -> np.ndarray:
    """The binary16 field at ``offset`` of every block, as binary32 ``[blocks, 1]``."""
    return np.ascontiguousarray(blocks[:, offset:offset + 2]).view(np.float16).astype(F32)


def nibbles(qs: np.ndarray) -> np.ndarray:
    """``[..., L]`` bytes -> ``[..., 2L]``: all low nibbles, then all high nibbles."""
    return np.concatenate([qs & 15, qs >> 4], axis=-1)


def decode_q8_0(b: np.ndarray) -> np.ndarray:
    return b[:, 2:34].view(np.int8).astype(F32) * f16_field(b, 0)


def decode_q4_0(b: np.ndarray) -> np.ndarray:
    q = nibbles(b[:, 2:18]).astype(np.int8) - 8
    return q.astype(F32) * f16_field(b, 0)


def decode_q5_0(b: np.ndarray) -> np.ndarray:
    high = np.unpackbits(b[:, 2:6], axis=1, bitorder="little")      # bit e of qh -> value e
    q = (nibbles(b[:, 6:22]) | (high << 4)).astype(np.int8) - 16
    return q.astype(F32) * f16_field(b, 0)


def q2_0_fields(b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Q2_0 blocks -> (offset words ``u`` uint8 [blocks, 64], scale words uint16 [blocks]).
    Value ``e`` is bits ``2*(e%4)`` of byte ``e//4``."""
    words = ((b[:, 2:18, None] >> SHIFT_2BIT) & 3).reshape(len(b), 64)
    return words, np.ascontiguousarray(b[:, 0:2]).view(np.uint16)[:, 0]


def decode_q2_0(b: np.ndarray) -> np.ndarray:
    words, _ = q2_0_fields(b)
    return (words.astype(np.int8) - 1).astype(F32) * f16_field(b, 0)


def decode_q2_k(b: np.ndarray) -> np.ndarray:
    # o = 128h + 32j + m: bits 2j of qs[32h + m]; sub-block o // 16 owns scales[o // 16]
    n = len(b)
    scales = b[:, 0:16]
    dl = f16_field(b, 80) * (scales & 15).astype(F32)
    ml = f16_field(b, 82) * (scales >> 4).astype(F32)
    q = (b[:, 16:80].reshape(n, 2, 1, 32) >> SHIFT_2BIT.reshape(1, 1, 4, 1)) & 3
    q = q.reshape(n, 16, 16).astype(F32)
    return (dl[:, :, None] * q - ml[:, :, None]).reshape(n, 256)


def q3_k_scales(packed: np.ndarray) -> np.ndarray:
    """The sixteen 6-bit Q3_K scales minus 32: low 4 bits from byte ``i % 8`` (nibble
    ``i // 8``), high 2 bits from byte ``8 + i % 4`` (pair ``i // 4``)."""
    low = (packed[:, _SUB % 8] >> (4 * (_SUB // 8))) & 15
    high = (packed[:, 8 + _SUB % 4] >> (2 * (_SUB // 4))) & 3
    return (low | (high << 4)).astype(np.int8) - 32


def decode_q3_k(b: np.ndarray) -> np.ndarray:
    # o = 128h + 32j + m: low bits 2j of qs[32h + m]; high bit 4h + j of hmask[m]
    n = len(b)
    dl = f16_field(b, 108) * q3_k_scales(b[:, 96:108]).astype(F32)
    low = (b[:, 32:96].reshape(n, 2, 1, 32) >> SHIFT_2BIT.reshape(1, 1, 4, 1)) & 3
    bit = (4 * np.arange(2).reshape(2, 1) + np.arange(4)).astype(np.uint8).reshape(1, 2, 4, 1)
    high = (b[:, 0:32].reshape(n, 1, 1, 32) >> bit) & 1
    q = low.astype(np.int8) - 4 * (1 - high.astype(np.int8))
    return (dl[:, :, None] * q.reshape(n, 16, 16).astype(F32)).reshape(n, 256)


def k4_scales_mins(packed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The eight 6-bit scales and mins of Q4_K/Q5_K (ggml's ``get_scale_min_k4``)."""
    first, second, rest = packed[:, 0:4], packed[:, 4:8], packed[:, 8:12]
    scales = np.concatenate([first & 63, (rest & 15) | ((first >> 6) << 4)], axis=1)
    mins = np.concatenate([second & 63, (rest >> 4) | ((second >> 6) << 4)], axis=1)
    return scales, mins


def _k4_apply(b: np.ndarray, q: np.ndarray) -> np.ndarray:
    scales, mins = k4_scales_mins(b[:, 4:16])
    d1 = f16_field(b, 0) * scales.astype(F32)
    m1 = f16_field(b, 2) * mins.astype(F32)
    return (d1[:, :, None] * q.astype(F32) - m1[:, :, None]).reshape(len(b), 256)


def decode_q4_k(b: np.ndarray) -> np.ndarray:
    # o = 64j + 32t + l: nibble t of qs[32j + l]; sub-block 2j + t
    q = (b[:, 16:144].reshape(len(b), 4, 1, 32) >> SHIFT_4BIT.reshape(1, 1, 2, 1)) & 15
    return _k4_apply(b, q.reshape(len(b), 8, 32))


def decode_q5_k(b: np.ndarray) -> np.ndarray:
    # as Q4_K, plus bit (2j + t) of qh[l] as the fifth bit
    n = len(b)
    low = (b[:, 48:176].reshape(n, 4, 1, 32) >> SHIFT_4BIT.reshape(1, 1, 2, 1)) & 15
    high = (b[:, 16:48].reshape(n, 1, 32) >> np.arange(8, dtype=np.uint8).reshape(1, 8, 1)) & 1
    return _k4_apply(b, low.reshape(n, 8, 32) | (high << 4))


def decode_q6_k(b: np.ndarray) -> np.ndarray:
    # o = 128h + 32t + l: nibble t // 2 of ql[64h + 32(t % 2) + l], bits 2t of qh[32h + l]
    n = len(b)
    dsc = f16_field(b, 208) * b[:, 192:208].view(np.int8).astype(F32)
    low = (b[:, 0:128].reshape(n, 2, 1, 2, 32) >> SHIFT_4BIT.reshape(1, 1, 2, 1, 1)) & 15
    high = (b[:, 128:192].reshape(n, 2, 1, 32) >> SHIFT_2BIT.reshape(1, 1, 4, 1)) & 3
    q = (low.reshape(n, 2, 4, 32) | (high << 4)).astype(np.int8) - 32
    return (dsc[:, :, None] * q.reshape(n, 16, 16).astype(F32)).reshape(n, 256)
