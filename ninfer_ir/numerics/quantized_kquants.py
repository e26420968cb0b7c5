"""Bit-exact numpy oracles of the K-quant dots Q2_K/Q3_K/Q5_K/Q6_K x Q8_K
(spec: docs/spec/quantized-kquants.md).

Every pair computes, per record pair b, exact integers

    S_b = sum over sub-blocks j of  sc_b[j] * sum(w_b[e] * xq_b[e], e in sub-block j)
    T_b = sum over min groups k of  m_b[k] * (sum of the Q8_K bsum in group k)   (Q2_K, Q5_K)

where ``w_b[e]`` is the weight's signed integer level (``u - bias`` for the
stored unsigned code ``u``), and then, one binary32 rounding per step:

    p_b = R32(f32(d_b) * f32(S_b))
    n_b = R32(f32(dmin_b) * f32(T_b))            (pairs with mins)
    v_b = R32(ds_b * R32(p_b - n_b))             (pairs with mins)
    v_b = R32(ds_b * p_b)                        (Q3_K, Q6_K)

The dot is the f32 fold of ``v_b`` over records in the op's ``SumOrder``,
exactly as for Q4_K x Q8_K. Everything is vectorised over records: integer
sums are exact in int32/int64 and every f32 step is one numpy float32 ufunc
call (one rounding, never contracted).

A format is described once, by a :class:`KQuant`: its closed schema (the byte
spans), the sub-block size, the level bias and how its codes and scales
unpack. :data:`KQUANTS` maps the lhs schema name to it. ``values_<stem>`` are
the oracle entries of the closed pair table (``ninfer_ir.quant.PAIRS``).
"""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Callable

import numpy as np

from ..quant import q2_k, q3_k, q5_k, q6_k, q8_k

__all__ = ["KQuant", "KQUANTS", "Q2_K", "Q3_K", "Q5_K", "Q6_K", "Q8Side", "fields",
           "record_values", "values_q2k_q8k", "values_q3k_q8k", "values_q5k_q8k",
           "values_q6k_q8k"]

_BLOCK = q8_k.block_elems


@dataclass(frozen=True)
class KQuant:
    """One K-quant weight format as the dot sees it (layout from its closed schema).

    ``unpack(lhs)`` maps records ``[..., R]`` to ``(u, sc, m)``: the unsigned
    codes u8 ``[..., 256]`` in logical element order, the sub-block scales
    (``[..., 256 // sub]``, signed where the format's are) and the mins
    (``[..., n_mins]``) or None. The level of element e is ``u[e] - bias``.
    """
    schema: object            # the lhs QuantSchema
    sub: int                  # elements per scale
    bias: int                 # level = code - bias
    unpack: Callable

    @property
    def name(self) -> str:
        return self.schema.name

    @property
    def record_bytes(self) -> int:
        return self.schema.record_bytes

    def at(self, field: str) -> int:
        """First byte of ``field`` in a record."""
        return self.schema.field(field).start

    @property
    def d(self) -> int:
        return self.at("d")

    @property
    def has_mins(self) -> bool:
        return "dmin" in self.schema.fields

    @property
    def dmin(self) -> int | None:
        return self.at("dmin") if self.has_mins else None

    @property
    def n_sub(self) -> int:
        return _BLOCK // self.sub


def _span(a: np.ndarray, schema, field: str) -> np.ndarray:
    f = schema.field(field)
    return a[..., f.start:f.stop]


def _bits(a: np.ndarray, shifts, width: int) -> np.ndarray:
    """``(a[..., None, :] >> shifts[:, None]) & (2**width - 1)``, the last two axes flattened."""
    sh = np.asarray(shifts, dtype=np.uint8)[:, None]
    out = (a[..., None, :] >> sh) & np.uint8((1 << width) - 1)
    return out.reshape(a.shape[:-1] + (a.shape[-1] * len(shifts),))


def _q4k_style_scales(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The eight 6-bit scales and mins packed in 12 bytes as in Q4_K (and Q5_K)."""
    low_sc, low_m, high = s[..., 0:4], s[..., 4:8], s[..., 8:12]
    sc = np.concatenate([low_sc & 63, (high & 15) | ((low_sc >> 6) << 4)], axis=-1)
    m = np.concatenate([low_m & 63, (high >> 4) | ((low_m >> 6) << 4)], axis=-1)
    return sc, m


def _two_bit_codes(qs: np.ndarray) -> np.ndarray:
    """Element 128*h + 32*k + l is bits 2k..2k+1 of ``qs[32*h + l]`` (64 bytes)."""
    lead = qs.shape[:-1]
    return _bits(qs.reshape(lead + (2, 32)), (0, 2, 4, 6), 2).reshape(lead + (_BLOCK,))


def _unpack_q2k(a):
    # scales: low nibble the scale, high nibble the min of each 16 elements.
    s = _span(a, q2_k, "sc")
    return _two_bit_codes(_span(a, q2_k, "q")), s & 15, s >> 4


def _unpack_q3k(a):
    # Bit k of hmask[l] is the high bit of element 32*k + l; code = low2 | high << 2,
    # level = code - 4 ("subtract 4 when the bit is clear"); sixteen 6-bit scales - 32.
    high = _bits(_span(a, q3_k, "hmask"), range(8), 1)
    u = _two_bit_codes(_span(a, q3_k, "q")) | (high << 2)
    s = _span(a, q3_k, "sc")
    lo4 = _bits(s[..., 0:8], (0, 4), 4)                           # j -> byte j % 8, nibble j // 8
    hi2 = _bits(s[..., 8:12], (0, 2, 4, 6), 2)                    # j -> byte 8 + j % 4, pair j // 4
    sc = (lo4 | (hi2 << 4)).astype(np.int16) - 32
    return u, sc, None


def _unpack_q5k(a):
    # Element 64*j + 32*h + l: nibble h of qs[32*j + l], plus 16 * bit (2j+h) of qh[l].
    lead = a.shape[:-1]
    sc, m = _q4k_style_scales(_span(a, q5_k, "sc"))
    qs = _span(a, q5_k, "q").reshape(lead + (4, 32))
    low = _bits(qs, (0, 4), 4).reshape(lead + (_BLOCK,))
    high = _bits(_span(a, q5_k, "qh"), range(8), 1)
    return low | (high << 4), sc, m


def _unpack_q6k(a):
    # Element 128*h + 32*c + l: nibble c // 2 of ql[64*h + 32*(c % 2) + l],
    # plus 16 * bits 2c..2c+1 of qh[32*h + l]; level = code - 32; scales i8.
    lead = a.shape[:-1]
    ql = _span(a, q6_k, "ql").reshape(lead + (2, 64))
    low = _bits(ql, (0, 4), 4).reshape(lead + (2, 4, 32))          # [h, nibble*2 + c%2, l]
    qh = _span(a, q6_k, "qh").reshape(lead + (2, 32))
    high = _bits(qh, (0, 2, 4, 6), 2).reshape(lead + (2, 4, 32))   # [h, c, l]
    u = (low | (high << 4)).reshape(lead + (_BLOCK,))
    sc = _span(a, q6_k, "sc").view(np.int8).astype(np.int16)
    return u, sc, None


Q2_K = KQuant(q2_k, 16, 0, _unpack_q2k)
Q3_K = KQuant(q3_k, 16, 4, _unpack_q3k)
Q5_K = KQuant(q5_k, 32, 0, _unpack_q5k)
Q6_K = KQuant(q6_k, 16, 32, _unpack_q6k)

KQUANTS = MappingProxyType({k.name: k for k in (Q2_K, Q3_K, Q5_K, Q6_K)})


def _half(a: np.ndarray, offset: int) -> np.ndarray:
    return np.ascontiguousarray(a[..., offset:offset + 2]).view("<f2")[..., 0].astype(np.float32)


def fields(kind: KQuant, lhs: np.ndarray):
    """``(d f32[...], dmin f32[...] | None, levels i16[..., 256], sc i16[..., n_sub], m)``
    (``m`` is None for the formats without mins)."""
    u, sc, m = kind.unpack(lhs)
    levels = u.astype(np.int16) - np.int16(kind.bias)
    dmin = _half(lhs, kind.dmin) if kind.has_mins else None
    return _half(lhs, kind.d), dmin, levels, sc.astype(np.int16), m


class Q8Side:
    """The Q8_K records ``[G, 292]`` of a dot, decoded once and shared by every lhs row."""

    __slots__ = ("ds", "xq", "bsum")

    def __init__(self, rhs: np.ndarray):
        self.ds = np.ascontiguousarray(_span(rhs, q8_k, "ds")).view("<f4")[:, 0].astype(
            np.float32)
        self.xq = _span(rhs, q8_k, "q").view(np.int8).astype(np.int16)
        self.bsum = np.ascontiguousarray(_span(rhs, q8_k, "bsum")).view("<i2").astype(np.int64)


def record_values(kind: KQuant, lhs: np.ndarray, rhs: Q8Side) -> np.ndarray:
    """``v_b`` (f32 ``[..., G]``) of records ``lhs [..., G, R]`` against the prepared rhs."""
    d, dmin, levels, sc, m = fields(kind, lhs)
    # |level * xq| <= 32 * 128: exact in int16; a sub-block's sum is exact in int32.
    prod = np.multiply(levels, rhs.xq, dtype=np.int16)
    sub = prod.reshape(prod.shape[:-1] + (kind.n_sub, kind.sub)).sum(axis=-1, dtype=np.int32)
    s = (sub.astype(np.int64) * sc.astype(np.int64)).sum(axis=-1)
    fs = s.astype(np.float64).astype(np.float32)    # |S| < 2**53: one rounding
    with np.errstate(all="ignore"):
        p = np.multiply(d, fs, dtype=np.float32)
        if kind.has_mins:
            n_min = m.shape[-1]
            group = rhs.bsum.reshape(rhs.bsum.shape[:-1] + (n_min, 16 // n_min)).sum(axis=-1)
            t = (group * m.astype(np.int64)).sum(axis=-1)
            ft = t.astype(np.float64).astype(np.float32)
            p = np.subtract(p, np.multiply(dmin, ft, dtype=np.float32), dtype=np.float32)
        return np.multiply(rhs.ds, p, dtype=np.float32)


# --- the oracle entries of the dot-pair table: values_<stem>(lhs, rhs) -> v_b ----------------

def values_q2k_q8k(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """``v_b`` of Q2_K records ``[..., G, 84]`` and Q8_K records ``[G, 292]``."""
    return record_values(Q2_K, lhs, Q8Side(rhs))


def values_q3k_q8k(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """``v_b`` of Q3_K records ``[..., G, 110]`` and Q8_K records ``[G, 292]``."""
    return record_values(Q3_K, lhs, Q8Side(rhs))


def values_q5k_q8k(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """``v_b`` of Q5_K records ``[..., G, 176]`` and Q8_K records ``[G, 292]``."""
    return record_values(Q5_K, lhs, Q8Side(rhs))


def values_q6k_q8k(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """``v_b`` of Q6_K records ``[..., G, 210]`` and Q8_K records ``[G, 292]``."""
    return record_values(Q6_K, lhs, Q8Side(rhs))
