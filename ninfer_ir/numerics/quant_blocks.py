"""The bit-exact numpy oracle of the 32-element GGUF schemas (docs/spec/quantized-gguf.md).

``quantize_q80``        f32[G,32]                   -> u8[G,34]  Q8_0 records   (§3)
``values_q40_q80``      u8[..., G,18], u8[G,34]     -> f32[..., G]  v_b         (§4.1)
``values_q50_q80``      u8[..., G,22], u8[G,34]     -> f32[..., G]  v_b         (§4.2)
``values_q80_q80``      u8[..., G,34], u8[G,34]     -> f32[..., G]  v_b         (§4.3)
``values_iq4nl_q80``    u8[..., G,18], u8[G,34]     -> f32[..., G]  v_b         (§4.4)

The dots themselves (the fold of v_b in the op's order, the rows form) are the
shared code of ``numerics.quantized``, which finds these functions through the
pair table ``ninfer_ir.quant.PAIRS``. Everything is vectorised over records;
every f32 operation is one numpy float32 ufunc call (one rounding, never an FMA);
integer sums are exact. Layouts come from the closed schemas.
"""
from __future__ import annotations

from types import MappingProxyType

import numpy as np

from ..errors import VerifyError
from ..quant import IQ4_NL_VALUES, iq4_nl, q4_0, q5_0, q8_0

__all__ = ["REASON_TEXT", "quantize_q80", "values_q40_q80", "values_q50_q80",
           "values_q80_q80", "values_iq4nl_q80"]

# --- domain errors of quantize q8_0 (same reason codes and status word as q8_k) ---

REASON_TEXT = MappingProxyType({
    1: "input holds NaN or inf",
    2: "id = 1/d is not finite",
    3: "d = amax/127 does not fit binary16",
})
# No fourth reason: with id finite, d >= 2**-128 carries at most 2**-22 relative rounding
# error even as a subnormal, so |R32(x*id)| < 127.5 and every q lies in [-127, 127]
# (docs/spec/quantized-gguf.md §3).

_BLOCK = q8_0.block_elems                     # 32
_D = q8_0.field("d")
_Q = q8_0.field("q")
_Q4 = q4_0.field("q")
_Q5H, _Q5 = q5_0.field("qh"), q5_0.field("q")
_IQ4 = iq4_nl.field("q")
_IQ4_VALUES = np.array(IQ4_NL_VALUES, dtype=np.int16)

if not (_Q.nbytes == _BLOCK == 2 * _Q4.nbytes == 2 * _Q5.nbytes and _Q5H.nbytes * 8 == _BLOCK
        and q4_0.field("d").start == q5_0.field("d").start == _D.start):
    raise ImportError("numerics.quant_blocks: the q8_0/q4_0/q5_0 schemas no longer match the spec")


def _half(arr: np.ndarray, start: int) -> np.ndarray:
    """The binary16 at byte ``start`` of every record, as f32 (exact)."""
    raw = np.ascontiguousarray(arr[..., start:start + 2])
    return raw.view("<f2")[..., 0].astype(np.float32)


def _round_half_away(s: np.ndarray) -> np.ndarray:
    """C ``roundf``: nearest integer, ties away from zero (exact, f32 in and out)."""
    t = np.trunc(s)
    frac = np.abs(np.subtract(s, t, dtype=np.float32))     # exact
    away = np.add(t, np.sign(s), dtype=np.float32)          # |t| < 2**24 here: exact
    return np.where(frac >= np.float32(0.5), away, t).astype(np.float32)


def quantize_q80(values: np.ndarray) -> np.ndarray:
    """Quantize f32 ``[G,32]`` into Q8_0 records u8 ``[G,34]`` (spec §3); row g -> record g.

    Raises ``VerifyError`` for a wrong type/shape and ``DomainError`` naming the
    lowest failing record (reasons ``REASON_TEXT``). The input is only read.
    """
    from .quantized import domain_error
    if (not isinstance(values, np.ndarray) or values.dtype.kind != "f"
            or values.dtype.itemsize != 4 or values.ndim != 2 or values.shape[1] != _BLOCK):
        got = (f"{values.dtype}[{','.join(map(str, values.shape))}]"
               if isinstance(values, np.ndarray) else type(values).__name__)
        raise VerifyError(f"quantize: values must be f32[G,{_BLOCK}], got {got}")
    g = values.shape[0]
    out = np.zeros((g, q8_0.record_bytes), dtype=np.uint8)
    if g == 0:
        return out
    x = values.astype(np.float32, copy=False)
    with np.errstate(all="ignore"):
        amax = np.abs(x).max(axis=1)                       # NaN and inf show here
        finite = np.isfinite(amax)
        d = np.divide(amax, np.float32(127.0), dtype=np.float32)
        nonzero = d != 0
        inverse = np.divide(np.float32(1.0), np.where(nonzero, d, np.float32(1.0)),
                            dtype=np.float32)
        inverse = np.where(nonzero, inverse, np.float32(0.0)).astype(np.float32)
        d_half = d.astype(np.float16)                      # round to nearest even
        scaled = np.multiply(x, inverse[:, np.newaxis], dtype=np.float32)
        q = _round_half_away(scaled)
    reason = np.select(
        [~finite, ~nonzero, ~np.isfinite(inverse), ~np.isfinite(d_half)],
        [1, 0, 2, 3], default=0)
    failing = np.flatnonzero(reason)
    if failing.size:
        first = int(failing[0])
        raise domain_error(first, int(reason[first]), q8_0)
    out[:, _D.start:_D.stop] = d_half.astype("<f2").view(np.uint8).reshape(g, 2)
    np.copyto(out[:, _Q.start:_Q.stop].view(np.int8), q, casting="unsafe")
    return out


# --- record values of the dots (spec §4) --------------------------------------------------

def _nibbles(packed: np.ndarray) -> np.ndarray:
    """u8 ``[..., 16]`` -> the 32 codes ``[..., 32]``: low nibbles, then high nibbles."""
    return np.concatenate([packed & 15, packed >> 4], axis=-1)


def _activation(rhs: np.ndarray):
    return rhs[:, _Q.start:_Q.stop].view(np.int8), _half(rhs, _D.start)


def _check(lhs, rhs) -> None:
    if lhs.shape[-2] != rhs.shape[0]:
        raise VerifyError(f"lhs and rhs must hold the same number of records G, "
                          f"got {lhs.shape[-2]} and {rhs.shape[0]}")


def _sum(w: np.ndarray, xq: np.ndarray) -> np.ndarray:
    """S_b = sum of w*xq over a record, exact (products fit i16, the sum i32), as f32
    (|S_b| <= 2**19: exact)."""
    prod = np.multiply(w.astype(np.int16), xq.astype(np.int16), dtype=np.int16)
    return prod.sum(axis=-1, dtype=np.int32).astype(np.float32)


def values_q40_q80(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """v_b = R32(R32(f32(S_b) * d_w) * d_x) with w = nibble - 8 (spec §4.1)."""
    _check(lhs, rhs)
    xq, dx = _activation(rhs)
    w = _nibbles(lhs[..., _Q4.start:_Q4.stop]).astype(np.int16) - 8
    s = _sum(w, xq)
    with np.errstate(all="ignore"):
        return np.multiply(np.multiply(s, _half(lhs, 0), dtype=np.float32), dx,
                           dtype=np.float32)


def _q5_codes(lhs: np.ndarray) -> np.ndarray:
    """The 32 signed 5-bit codes of Q5_0 records: (nibble | fifth bit << 4) - 16."""
    high = np.unpackbits(lhs[..., _Q5H.start:_Q5H.stop], axis=-1, bitorder="little")
    low = _nibbles(lhs[..., _Q5.start:_Q5.stop])
    return (low | (high << 4)).astype(np.int16) - 16


def values_q50_q80(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """v_b = R32(R32(d_w * d_x) * f32(S_b)) (spec §4.2)."""
    _check(lhs, rhs)
    xq, dx = _activation(rhs)
    s = _sum(_q5_codes(lhs), xq)
    with np.errstate(all="ignore"):
        return np.multiply(np.multiply(_half(lhs, 0), dx, dtype=np.float32), s,
                           dtype=np.float32)


def values_q80_q80(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """v_b = R32(f32(S_b) * R32(d_w * d_x)) (spec §4.3)."""
    _check(lhs, rhs)
    xq, dx = _activation(rhs)
    s = _sum(lhs[..., _Q.start:_Q.stop].view(np.int8), xq)
    with np.errstate(all="ignore"):
        return np.multiply(s, np.multiply(_half(lhs, 0), dx, dtype=np.float32),
                           dtype=np.float32)


def values_iq4nl_q80(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """v_b = R32(R32(d_w * d_x) * f32(S_b)) with w = IQ4_NL_VALUES[index] (spec §4.4)."""
    _check(lhs, rhs)
    xq, dx = _activation(rhs)
    s = _sum(_IQ4_VALUES[_nibbles(lhs[..., _IQ4.start:_IQ4.stop])], xq)
    with np.errstate(all="ignore"):
        return np.multiply(np.multiply(_half(lhs, 0), dx, dtype=np.float32), s,
                           dtype=np.float32)
