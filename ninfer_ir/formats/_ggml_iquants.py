"""Decoders of ggml's i-quant blocks (IQ1..IQ4), same contract as ``_ggml_quants``.

Grid lookups use ggml's lattices from ``_ggml_grids``; signs come either from
ggml's ``ksigns_iq2xs`` (a 7-bit index whose eighth sign is the parity of the
other seven) or straight from a byte, bit ``j`` negating coordinate ``j``.
"""
from __future__ import annotations

import numpy as np

from ._ggml_grids import grid
from ._ggml_quants import F32, SHIFT_4BIT, f16_field, nibbles

IQ1_DELTA = F32(0.125)
IQ4_NL_VALUES = np.array([-127, -104, -83, -65, -49, -35, -22, -10,
                          1, 13, 25, 38, 53, 69, 89, 113], dtype=F32)
_BIT = np.arange(8, dtype=np.uint8)
_SEVEN_BIT_FIELDS = np.array([0, 7, 14, 21], dtype=np.uint32)


def _sign_factors(bytes_: np.ndarray) -> np.ndarray:
    """``[len, 8]`` of +1/-1: bit ``j`` of each byte set -> coordinate ``j`` negated."""
    return np.where((bytes_[:, None] >> _BIT) & 1, F32(-1), F32(1))


_INDEX7 = np.arange(128, dtype=np.uint8)
_PARITY7 = np.unpackbits(_INDEX7[:, None], axis=1).sum(axis=1).astype(np.uint8) & 1
KSIGNS = _INDEX7 | (_PARITY7 << 7)                 # ggml's ksigns_iq2xs
KSIGN_FACTORS = _sign_factors(KSIGNS)              # [128, 8]
BYTE_SIGN_FACTORS = _sign_factors(np.arange(256, dtype=np.uint8))   # [256, 8]


def _u32(fields: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(fields).view("<u4")[..., 0]


def _u16(fields: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(fields).view("<u2")


def _quarter_scale(d: np.ndarray, field: np.ndarray) -> np.ndarray:
    """ggml's ``d * (0.5f + field) * 0.25f`` (IQ2 block scales)."""
    return (d * (F32(0.5) + field.astype(F32))) * F32(0.25)


def _half_nibble_scales(d: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """IQ2_XS/IQ2_S: scale byte ``ib`` -> low nibble for entries 0,1, high for 2,3."""
    db = _quarter_scale(d[:, :, None], np.stack([scales & 15, scales >> 4], axis=-1))
    return db[:, :, [0, 0, 1, 1]]                  # [blocks, 8, 4]


def decode_iq2_xxs(b: np.ndarray) -> np.ndarray:
    n = len(b)
    sub = b[:, 2:66].reshape(n, 8, 8)              # per 32 values: 4 grid bytes, one u32
    aux = _u32(sub[:, :, 4:8])
    db = _quarter_scale(f16_field(b, 0), aux >> 28)
    signs = KSIGN_FACTORS[(aux[:, :, None] >> _SEVEN_BIT_FIELDS) & 127]
    values = (db[:, :, None, None] * grid("iq2xxs")[sub[:, :, 0:4]]) * signs
    return values.reshape(n, 256)


def decode_iq2_xs(b: np.ndarray) -> np.ndarray:
    n = len(b)
    qs = _u16(b[:, 2:66]).reshape(n, 8, 4)
    db = _half_nibble_scales(f16_field(b, 0), b[:, 66:74])
    values = (db[..., None] * grid("iq2xs")[qs & 511]) * KSIGN_FACTORS[qs >> 9]
    return values.reshape(n, 256)


def decode_iq2_s(b: np.ndarray) -> np.ndarray:
    n = len(b)
    high = (b[:, 66:74, None] >> np.array([0, 2, 4, 6], dtype=np.uint8)) & 3
    index = b[:, 2:34].reshape(n, 8, 4) | (high.astype(np.uint16) << 8)
    db = _half_nibble_scales(f16_field(b, 0), b[:, 74:82])
    signs = BYTE_SIGN_FACTORS[b[:, 34:66].reshape(n, 8, 4)]
    return ((db[..., None] * grid("iq2s")[index]) * signs).reshape(n, 256)


def decode_iq3_xxs(b: np.ndarray) -> np.ndarray:
    n = len(b)
    aux = _u32(b[:, 66:98].reshape(n, 8, 4))
    db = (f16_field(b, 0) * (F32(0.5) + (aux >> 28).astype(F32))) * F32(0.5)
    signs = KSIGN_FACTORS[(aux[:, :, None] >> _SEVEN_BIT_FIELDS) & 127]
    lattice = grid("iq3xxs")[b[:, 2:66].reshape(n, 8, 8)].reshape(n, 8, 4, 8)
    return ((db[:, :, None, None] * lattice) * signs).reshape(n, 256)


def decode_iq3_s(b: np.ndarray) -> np.ndarray:
    n = len(b)
    high = (b[:, 66:74, None] >> np.arange(8, dtype=np.uint8)) & 1
    index = b[:, 2:66].reshape(n, 8, 8) | (high.astype(np.uint16) << 8)
    lattice = grid("iq3s")[index].reshape(n, 8, 4, 8)
    odd_even = nibbles(b[:, 106:110]).reshape(n, 2, 4).transpose(0, 2, 1).reshape(n, 8)
    db = f16_field(b, 0) * (1 + 2 * odd_even.astype(np.int32)).astype(F32)
    signs = BYTE_SIGN_FACTORS[b[:, 74:106].reshape(n, 8, 4)]
    return ((db[:, :, None, None] * lattice) * signs).reshape(n, 256)


def decode_iq1_s(b: np.ndarray) -> np.ndarray:
    n = len(b)
    qh = _u16(b[:, 34:50])                          # [n, 8]
    dl = f16_field(b, 0) * (2 * ((qh >> 12) & 7).astype(np.int32) + 1).astype(F32)
    delta = np.where(qh & 0x8000, -IQ1_DELTA, IQ1_DELTA)
    high = (qh[:, :, None] >> np.array([0, 3, 6, 9], dtype=np.uint16)) & 7
    lattice = grid("iq1s")[b[:, 2:34].reshape(n, 8, 4) | (high << 8)]
    return (dl[:, :, None, None] * (lattice + delta[:, :, None, None])).reshape(n, 256)


def decode_iq1_m(b: np.ndarray) -> np.ndarray:
    n = len(b)
    sc = _u16(b[:, 48:56])                          # [n, 4]
    d_word = ((sc[:, 0] >> 12) | ((sc[:, 1] >> 8) & 0x00F0) | ((sc[:, 2] >> 4) & 0x0F00)
              | (sc[:, 3] & 0xF000)).astype(np.uint16)
    d = d_word.view(np.float16).astype(F32)[:, None, None]
    # sub-block ib: 3-bit fields at 6*(ib % 2) and +3 of sc[ib // 2]
    field_shift = np.array([[0, 3], [6, 9]], dtype=np.uint16)
    fields = (sc[:, :, None, None] >> field_shift) & 7            # [n, 4, 2, 2]
    dl = d * (2 * fields.reshape(n, 8, 2).astype(np.int32) + 1).astype(F32)
    dl = dl[:, :, [0, 0, 1, 1]]                                      # [n, 8, 4]
    qh = (b[:, 32:48].reshape(n, 8, 2, 1) >> SHIFT_4BIT) & 15       # nibble per entry
    qh = qh.reshape(n, 8, 4)
    lattice = grid("iq1s")[b[:, 0:32].reshape(n, 8, 4) | ((qh & 7).astype(np.uint16) << 8)]
    delta = np.where(qh & 8, -IQ1_DELTA, IQ1_DELTA)
    return (dl[..., None] * (lattice + delta[..., None])).reshape(n, 256)


def decode_iq4_nl(b: np.ndarray) -> np.ndarray:
    return f16_field(b, 0) * IQ4_NL_VALUES[nibbles(b[:, 2:18])]


def decode_iq4_xs(b: np.ndarray) -> np.ndarray:
    n = len(b)
    scales_h = _u16(b[:, 2:4])                                        # [n, 1]
    low = nibbles(b[:, 4:8]).reshape(n, 2, 4).transpose(0, 2, 1).reshape(n, 8)
    high = (scales_h >> (2 * np.arange(8, dtype=np.uint16))) & 3
    ls = (low | (high << 4)).astype(np.int32) - 32
    dl = f16_field(b, 0) * ls.astype(F32)
    values = IQ4_NL_VALUES[nibbles(b[:, 8:136].reshape(n, 8, 16))]
    return (dl[:, :, None] * values).reshape(n, 256)
