"""The bit-exact numpy oracle of the closed quantized ops (spec: quantized-ops.md, and
docs/spec/quantized-gguf.md for the 32-element schemas).

``quantize(values, schema)``  every target of ``quant.QUANTIZE_TARGETS``
``quantized_dot(lhs, rhs, pair, order)`` / ``quantized_dot_rows``
                              every pair of ``quant.PAIRS``: the fold of the pair's
                              record values ``v_b`` (its ``values_<stem>`` oracle)
``quantize_q8k``            f32[G,256]            -> u8[G,292]   (spec §4)
``quantized_dot_q4k_q8k``   u8[G,144], u8[G,292]  -> f32[]       (spec §3)

Everything is vectorised over records; there is no Python loop per element or
per record. Every f32 operation is a single numpy float32 ufunc call, which
rounds once to nearest-even and is never contracted into an FMA; integer
statistics are exact in int32/int64. Record layouts are read from the closed
schemas ``ninfer_ir.quant.q4_k`` / ``q8_k``.

Domain errors of ``quantize`` carry a reason code shared with the compiled
backends, which report ``(record, reason)`` through a status word and turn it
into the same ``DomainError`` with ``domain_error``.
"""
from __future__ import annotations

import importlib
from functools import lru_cache
from types import MappingProxyType

import numpy as np

from ..errors import DomainError, VerifyError
from ..quant import PAIRS, QUANTIZE_TARGETS, DotPair, pairs_text, q4_k, q8_k
from ..sumorder import SEQ, SumOrder

__all__ = [
    "REASON_NONFINITE_INPUT", "REASON_INVERSE_NOT_FINITE", "REASON_DS_NOT_FINITE",
    "REASON_SCALED_NOT_FINITE", "REASON_TEXT", "domain_error",
    "quantize_q8k", "q4k_fields", "q8k_fields", "record_values",
    "quantized_dot_q4k_q8k", "quantized_dot_rows", "quantize", "quantized_dot",
    "pair_values", "values_q4k_q8k", "oracle",
]

# --- domain errors of quantize ---------------------------------------------

REASON_NONFINITE_INPUT = 1      # the block holds NaN or +-inf
REASON_INVERSE_NOT_FINITE = 2   # R32(-127 / extreme) overflowed
REASON_DS_NOT_FINITE = 3        # R32(1 / inverse) is not finite
REASON_SCALED_NOT_FINITE = 4    # some R32(x * inverse) is not finite

REASON_TEXT = MappingProxyType({
    REASON_NONFINITE_INPUT: "input holds NaN or inf",
    REASON_INVERSE_NOT_FINITE: "inverse = -127/extreme is not finite",
    REASON_DS_NOT_FINITE: "ds = 1/inverse is not finite",
    REASON_SCALED_NOT_FINITE: "a scaled value x*inverse is not finite",
})


@lru_cache(maxsize=None)
def oracle(name: str):
    """The numerics function ``"<module>.<function>"`` (a name of the pair/target tables)."""
    module, _, fn = name.rpartition(".")
    return getattr(importlib.import_module(f"{__package__}.{module}"), fn)


def domain_error(block: int, reason: int, schema=q8_k) -> DomainError:
    """The canonical ``DomainError`` for quantize to ``schema`` failing on ``block``.

    Message: ``"quantize <schema>: record <block>: <reason text>"``. The error also
    carries ``.record == block`` and ``.reason == reason``.
    """
    block = int(block)
    reason = int(reason)
    texts = oracle(QUANTIZE_TARGETS[schema].oracle).__globals__["REASON_TEXT"]
    text = texts.get(reason, f"domain error (unknown reason code {reason})")
    err = DomainError(f"quantize {schema.name}: record {block}: {text}", record=block)
    err.reason = reason
    return err


# --- record layout, from the closed schemas ----------------------------------

_BLOCK = q8_k.block_elems                       # 256 logical elements per record
_Q4_D, _Q4_DMIN = q4_k.field("d"), q4_k.field("dmin")
_Q4_SCALES = q4_k.field("sc")                   # sc and m share these bytes
_Q4_Q = q4_k.field("q")
_Q4_SUBBLOCKS = q4_k.field("sc").count          # 8 sub-blocks ...
_Q4_SUB = _BLOCK // _Q4_SUBBLOCKS               # ... of 32 elements
_Q4_NIBBLE_GROUP = 2 * _Q4_SUB                  # 64 elements share 32 bytes (low, high nibble)

_Q8_DS, _Q8_Q, _Q8_BSUM = q8_k.field("ds"), q8_k.field("q"), q8_k.field("bsum")
_Q8_GROUP = _BLOCK // _Q8_BSUM.count            # 16 elements per bsum

if not (_Q4_Q.nbytes * 2 == _BLOCK == _Q8_Q.nbytes and _Q4_SCALES.nbytes == 12
        and _Q8_BSUM.count == 2 * _Q4_SUBBLOCKS):
    raise ImportError("numerics.quantized: the q4_k/q8_k schemas no longer match spec §2")


def _describe(obj) -> str:
    if isinstance(obj, np.ndarray):
        return f"{obj.dtype}[{','.join(str(n) for n in obj.shape)}]"
    return type(obj).__name__


def _check_records(op: str, name: str, arr, schema, lead: str = "G") -> None:
    rank = len(lead.split(",")) + 1
    if (not isinstance(arr, np.ndarray) or arr.dtype != np.uint8 or arr.ndim != rank
            or arr.shape[-1] != schema.record_bytes):
        raise VerifyError(f"{op}: {name} must be u8[{lead},{schema.record_bytes}] "
                          f"({schema.name} records), got {_describe(arr)}")


def _bytes_as(arr: np.ndarray, field, dtype: str) -> np.ndarray:
    """The field's bytes of every record reinterpreted as little-endian ``dtype``."""
    raw = np.ascontiguousarray(arr[..., field.start:field.stop])
    return raw.view(dtype)


# --- quantize (spec §4) ------------------------------------------------------

def quantize_q8k(values: np.ndarray) -> np.ndarray:
    """Quantize f32 ``[G,256]`` into Q8_K records u8 ``[G,292]``; row g -> record g.

    Raises ``VerifyError`` for a wrong type/shape and ``DomainError`` (see
    ``domain_error``) naming the lowest failing block; nothing is returned then.
    The input is only read (any strides, any byte order).
    """
    if (not isinstance(values, np.ndarray) or values.dtype.kind != "f"
            or values.dtype.itemsize != 4 or values.ndim != 2 or values.shape[1] != _BLOCK):
        raise VerifyError(f"quantize: values must be f32[G,{_BLOCK}], got {_describe(values)}")
    g = values.shape[0]
    out = np.zeros((g, q8_k.record_bytes), dtype=np.uint8)
    if g == 0:
        return out
    x = values
    with np.errstate(all="ignore"):
        hi = x.max(axis=1)                          # NaN propagates into both
        lo = x.min(axis=1)
        finite = np.isfinite(hi) & np.isfinite(lo)
        extreme = np.where(np.abs(hi) > np.abs(lo), hi, lo)   # equal |.|: the minimum
        nonzero = finite & (extreme != 0)
        inverse = np.float32(-127.0) / extreme
        ds = np.float32(1.0) / inverse
        inverse_ok = np.isfinite(inverse)
        ds_ok = np.isfinite(ds)
        usable = nonzero & inverse_ok & ds_ok
        scale = np.where(usable, inverse, np.float32(0.0)).astype(np.float32)
        scaled = np.multiply(x, scale[:, np.newaxis], dtype=np.float32)
        np.rint(scaled, out=scaled)                 # ties to even
        top = scaled.max(axis=1)                    # a NaN or inf shows in max or min
        bottom = scaled.min(axis=1)
        scaled_ok = np.isfinite(top) & np.isfinite(bottom)

    reason = np.select(
        [~finite, ~nonzero, ~inverse_ok, ~ds_ok, ~scaled_ok],
        [REASON_NONFINITE_INPUT, 0, REASON_INVERSE_NOT_FINITE, REASON_DS_NOT_FINITE,
         REASON_SCALED_NOT_FINITE],
        default=0)
    failing = np.flatnonzero(reason)
    if failing.size:
        first = int(failing[0])
        raise domain_error(first, int(reason[first]))

    np.clip(scaled, -128.0, 127.0, out=scaled)     # saturate_i8; values are integral
    q = out[:, _Q8_Q.start:_Q8_Q.stop].view(np.int8)
    np.copyto(q, scaled, casting="unsafe")
    ds_bits = np.where(nonzero, ds, np.float32(0.0)).astype("<f4")   # zero block: +0.0
    out[:, _Q8_DS.start:_Q8_DS.stop] = ds_bits.view(np.uint8).reshape(g, _Q8_DS.nbytes)
    bsum = q.reshape(g, _Q8_BSUM.count, _Q8_GROUP).sum(axis=2, dtype=np.int16)
    out[:, _Q8_BSUM.start:_Q8_BSUM.stop] = bsum.astype("<i2").view(np.uint8)
    return out


# --- field decoders (spec §2) -------------------------------------------------

def _q4_scales(lhs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """sc[...,8] and m[...,8] (u8, 6-bit values) from the 12 shared bytes."""
    s = lhs[..., _Q4_SCALES.start:_Q4_SCALES.stop]
    low_sc, low_m, high = s[..., 0:4], s[..., 4:8], s[..., 8:12]
    shape = s.shape[:-1] + (_Q4_SUBBLOCKS,)
    sc = np.empty(shape, dtype=np.uint8)
    m = np.empty(shape, dtype=np.uint8)
    sc[..., 0:4] = low_sc & 63
    m[..., 0:4] = low_m & 63
    sc[..., 4:8] = (high & 15) | ((low_sc >> 6) << 4)
    m[..., 4:8] = (high >> 4) | ((low_m >> 6) << 4)
    return sc, m


def _q4_nibbles(lhs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The packed weights as (low, high) nibbles, each u8 ``[..., 4, 32]``.

    Element ``64*j + t`` is ``low[..., j, t]``; element ``64*j + 32 + t`` is
    ``high[..., j, t]``.
    """
    packed = lhs[..., _Q4_Q.start:_Q4_Q.stop]
    packed = packed.reshape(packed.shape[:-1] + (_BLOCK // _Q4_NIBBLE_GROUP, _Q4_SUB))
    return packed & 15, packed >> 4


def q4k_fields(lhs: np.ndarray):
    """Decode Q4_K records u8 ``[G,144]``.

    Returns ``(d f32[G], dmin f32[G], sc u8[G,8], m u8[G,8], q u8[G,256])``;
    binary16 -> f32 is exact.
    """
    _check_records("q4k_fields", "lhs", lhs, q4_k)
    d = _bytes_as(lhs, _Q4_D, "<f2")[:, 0].astype(np.float32)
    dmin = _bytes_as(lhs, _Q4_DMIN, "<f2")[:, 0].astype(np.float32)
    sc, m = _q4_scales(lhs)
    low, high = _q4_nibbles(lhs)
    q = np.stack([low, high], axis=-2).reshape(lhs.shape[0], _BLOCK)
    return d, dmin, sc, m, q


def q8k_fields(rhs: np.ndarray):
    """Decode Q8_K records u8 ``[G,292]``: ``(ds f32[G], q i8[G,256], bsum i16[G,16])``."""
    _check_records("q8k_fields", "rhs", rhs, q8_k)
    ds = _bytes_as(rhs, _Q8_DS, "<f4")[:, 0].astype(np.float32)
    q = rhs[:, _Q8_Q.start:_Q8_Q.stop].view(np.int8).copy()
    bsum = _bytes_as(rhs, _Q8_BSUM, "<i2").astype(np.int16)
    return ds, q, bsum


# --- dot (spec §3) ------------------------------------------------------------

class _Q8Prepared:
    """The Q8_K side of a dot, decoded once and shared by every lhs row."""

    __slots__ = ("ds", "xq_low", "xq_high", "bsum_pairs")

    def __init__(self, rhs: np.ndarray):
        g = rhs.shape[0]
        self.ds = _bytes_as(rhs, _Q8_DS, "<f4")[:, 0].astype(np.float32)
        xq = rhs[:, _Q8_Q.start:_Q8_Q.stop].view(np.int8)
        xq = xq.reshape(g, _BLOCK // _Q4_NIBBLE_GROUP, 2, _Q4_SUB)
        self.xq_low = xq[:, :, 0, :]        # partners of the low nibbles
        self.xq_high = xq[:, :, 1, :]       # partners of the high nibbles
        bsum = _bytes_as(rhs, _Q8_BSUM, "<i2").astype(np.int64)
        self.bsum_pairs = bsum.reshape(g, _Q4_SUBBLOCKS, 2).sum(axis=2)   # [G,8]


def _values(lhs: np.ndarray, rhs: _Q8Prepared) -> np.ndarray:
    """v_b for Q4_K records ``[..., G, 144]`` against the prepared Q8_K ``[G]``."""
    lead = lhs.shape[:-1]
    sc, m = _q4_scales(lhs)
    low, high = _q4_nibbles(lhs)
    # Sub-block dots: u8 (<=15) x i8 products fit i16; 32 of them fit i32.
    dot_low = np.multiply(low, rhs.xq_low, dtype=np.int16).sum(axis=-1, dtype=np.int32)
    dot_high = np.multiply(high, rhs.xq_high, dtype=np.int16).sum(axis=-1, dtype=np.int32)
    sub = np.stack([dot_low, dot_high], axis=-1).reshape(lead + (_Q4_SUBBLOCKS,))
    s = (sub.astype(np.int64) * sc.astype(np.int64)).sum(axis=-1)
    t = (rhs.bsum_pairs * m.astype(np.int64)).sum(axis=-1)
    d = _bytes_as(lhs, _Q4_D, "<f2")[..., 0].astype(np.float32)
    dmin = _bytes_as(lhs, _Q4_DMIN, "<f2")[..., 0].astype(np.float32)
    # |S|, |T| < 2**53: int64 -> f64 is exact, so f64 -> f32 is the one rounding.
    fs = s.astype(np.float64).astype(np.float32)
    ft = t.astype(np.float64).astype(np.float32)
    with np.errstate(all="ignore"):
        p = np.multiply(d, fs, dtype=np.float32)
        n = np.multiply(dmin, ft, dtype=np.float32)
        diff = np.subtract(p, n, dtype=np.float32)
        return np.multiply(rhs.ds, diff, dtype=np.float32)


def values_q4k_q8k(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """v_b (f32 ``[..., G]``) of Q4_K records ``[..., G, 144]`` and Q8_K ``[G, 292]``."""
    return _values(lhs, _Q8Prepared(rhs))


def _check_pair(op: str, lhs, rhs, lead: str = "G", pair: DotPair = PAIRS[q4_k, q8_k]) -> None:
    _check_records(op, "lhs", lhs, pair.lhs, lead)
    _check_records(op, "rhs", rhs, pair.rhs)
    if lhs.shape[-2] != rhs.shape[0]:
        raise VerifyError(f"{op}: lhs and rhs must hold the same number of records G, "
                          f"got {lhs.shape[-2]} and {rhs.shape[0]}")


def record_values(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """The per-record values ``v_b`` (f32 ``[G]``) of a Q4_K x Q8_K dot."""
    _check_pair("record_values", lhs, rhs)
    if lhs.shape[0] == 0:
        return np.zeros(0, dtype=np.float32)
    return _values(lhs, _Q8Prepared(rhs))


def quantized_dot_q4k_q8k(lhs: np.ndarray, rhs: np.ndarray,
                          order: SumOrder | str = SEQ) -> np.ndarray:
    """The quantized dot of u8 ``[G,144]`` Q4_K and u8 ``[G,292]`` Q8_K records.

    Returns a rank-0 f32 array: the ``v_b`` summed in ``order`` (a ``SumOrder``
    or its text). ``G == 0`` gives ``+0.0`` without reading the inputs.
    """
    return quantized_dot(lhs, rhs, PAIRS[q4_k, q8_k], order)


_ROW_BLOCK_RECORDS = 1 << 16    # records per chunk of rows in quantized_dot_rows


def quantized_dot_rows(lhs: np.ndarray, rhs: np.ndarray, order: SumOrder | str = SEQ,
                       pair: DotPair = PAIRS[q4_k, q8_k]) -> np.ndarray:
    """One quantized dot per row: u8 ``[N,G,R]`` x u8 ``[G,R']`` -> f32 ``[N]``.

    Row n equals ``quantized_dot(lhs[n], rhs, pair, order)`` bit for bit.
    """
    order = SumOrder.coerce(order)
    _check_pair("quantized_dot_rows", lhs, rhs, lead="N,G", pair=pair)
    n_rows, g = lhs.shape[0], lhs.shape[1]
    out = np.zeros(n_rows, dtype=np.float32)
    if n_rows == 0 or g == 0:
        return out
    values = pair_values(pair)
    step = max(1, _ROW_BLOCK_RECORDS // g)
    for start in range(0, n_rows, step):
        stop = min(n_rows, start + step)
        out[start:stop] = order.evaluate_rows(values(lhs[start:stop], rhs))
    return out


# --- every pair and target of the closed tables ---------------------------------------------

def pair_values(pair: DotPair):
    """The pair's record-value oracle ``values_<stem>(lhs[..., G, R], rhs[G, R']) -> f32[..., G]``."""
    return oracle(f"{pair.oracle_module}.{pair.oracle}")


def quantize(values: np.ndarray, schema=q8_k) -> np.ndarray:
    """``quantize(values, format=schema)`` for every target of ``QUANTIZE_TARGETS``."""
    target = QUANTIZE_TARGETS.get(schema)
    if target is None:
        raise VerifyError(f"quantize: format must be one of "
                          f"{', '.join(s.name for s in QUANTIZE_TARGETS)}, got {schema}")
    return oracle(target.oracle)(values)


def quantized_dot(lhs: np.ndarray, rhs: np.ndarray, pair: DotPair = PAIRS[q4_k, q8_k],
                  order: SumOrder | str = SEQ) -> np.ndarray:
    """The quantized dot of a pair of the table: rank-0 f32, the ``v_b`` folded in
    ``order``; ``G == 0`` gives ``+0.0`` without reading the inputs."""
    if not isinstance(pair, DotPair):
        raise VerifyError(f"quantized_dot: the formats must be a pair of the table "
                          f"({pairs_text()}), got {pair}")
    order = SumOrder.coerce(order)
    _check_pair("quantized_dot", lhs, rhs, pair=pair)
    if lhs.shape[0] == 0:
        return np.zeros((), dtype=np.float32)
    v = pair_values(pair)(lhs, rhs)
    return np.asarray(order.evaluate(v), dtype=np.float32).reshape(())

