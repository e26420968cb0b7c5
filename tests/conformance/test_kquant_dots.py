"""The K-quant dot oracles (docs/spec/quantized-kquants.md) against an independent reference.

The reference reads the weights through gguf-py's ``gguf.quants.dequantize`` (bit-identical
to ggml's decoders): with d = 1, dmin = 0 each element decodes to ``sc * w``, so
``S = sum(dequant * x)`` exactly (float64, |S| < 2**53); with d = 0, dmin = 1 an element
decodes to ``-m`` of its group, which gives the mins and with the stored bsum ``T``. The
float steps are then the spec's, one numpy f32 operation each.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ninfer_ir.numerics import quantized_kquants as K
from ninfer_ir.numerics.quantized import quantize_q8k

gguf_quants = pytest.importorskip("gguf.quants")
from gguf import GGMLQuantizationType  # noqa: E402

F32 = np.float32
GGML = {"q2_k": GGMLQuantizationType.Q2_K, "q3_k": GGMLQuantizationType.Q3_K,
        "q5_k": GGMLQuantizationType.Q5_K, "q6_k": GGMLQuantizationType.Q6_K}
VALUES = {"q2_k": K.values_q2k_q8k, "q3_k": K.values_q3k_q8k, "q5_k": K.values_q5k_q8k,
          "q6_k": K.values_q6k_q8k}
KINDS = list(K.KQUANTS.values())
IDS = [k.name for k in KINDS]


def _put_half(a: np.ndarray, offset: int, values) -> None:
    h = np.broadcast_to(np.asarray(values, dtype="<f2"), a.shape[:-1])
    a[..., offset:offset + 2] = np.ascontiguousarray(h)[..., None].view(np.uint8)


def _dequant(kind, lhs, d, dmin):
    a = lhs.copy()
    _put_half(a, kind.d, d)
    if kind.has_mins:
        _put_half(a, kind.dmin, dmin)
    out = gguf_quants.dequantize(a.reshape(-1), GGML[kind.name])
    return out.reshape(lhs.shape[0], 256).astype(np.float64)


def reference(kind, lhs, rhs):
    """v_b from gguf-py's decoding and the spec's float steps."""
    x = rhs[:, 4:260].view(np.int8).astype(np.float64)
    s = (_dequant(kind, lhs, 1.0, 0.0) * x).sum(axis=1)
    d = np.ascontiguousarray(lhs[:, kind.d:kind.d + 2]).view("<f2")[:, 0].astype(F32)
    ds = np.ascontiguousarray(rhs[:, 0:4]).view("<f4")[:, 0]
    with np.errstate(all="ignore"):
        p = np.multiply(d, s.astype(F32), dtype=F32)
        if kind.has_mins:
            minus_m = _dequant(kind, lhs, 0.0, 1.0)                  # -m of each element
            per_bsum = -minus_m[:, ::16]                             # the min of each bsum group
            bsum = np.ascontiguousarray(rhs[:, 260:292]).view("<i2").astype(np.float64)
            t = (per_bsum * bsum).sum(axis=1)
            dmin = np.ascontiguousarray(lhs[:, kind.dmin:kind.dmin + 2]).view("<f2")[:, 0]
            p = np.subtract(p, np.multiply(dmin.astype(F32), t.astype(F32), dtype=F32),
                            dtype=F32)
        return np.multiply(ds, p, dtype=F32)


def same_bits(a, b) -> bool:
    a, b = np.asarray(a, F32), np.asarray(b, F32)
    nan = np.isnan(a) & np.isnan(b)                # a NaN's payload is not specified
    return bool(np.all(nan | (a.view(np.uint32) == b.view(np.uint32))))


def random_records(rng, kind, g, scale_lo=1e-3, scale_hi=1.0):
    lhs = rng.integers(0, 256, (g, kind.record_bytes), dtype=np.uint8)
    _put_half(lhs, kind.d, rng.uniform(-scale_hi, scale_hi, g))
    if kind.has_mins:
        _put_half(lhs, kind.dmin, rng.uniform(scale_lo, scale_hi, g))
    return lhs


@pytest.mark.parametrize("kind", KINDS, ids=IDS)
def test_values_match_gguf_decoding_valid_q8k(kind):
    rng = np.random.default_rng(11)
    lhs = random_records(rng, kind, 64)
    rhs = quantize_q8k(rng.standard_normal((64, 256)).astype(F32) * F32(3))
    got = VALUES[kind.name](lhs, rhs)
    assert got.dtype == F32 and got.shape == (64,)
    assert same_bits(got, reference(kind, lhs, rhs))


@pytest.mark.parametrize("kind", KINDS, ids=IDS)
def test_values_match_gguf_decoding_random_bytes(kind):
    # Any bytes: bsum not matching the quants, extreme codes and scales, specials in d/ds.
    rng = np.random.default_rng(12)
    lhs = rng.integers(0, 256, (200, kind.record_bytes), dtype=np.uint8)
    rhs = rng.integers(0, 256, (200, 292), dtype=np.uint8)
    assert same_bits(VALUES[kind.name](lhs, rhs), reference(kind, lhs, rhs))


@pytest.mark.parametrize("kind", KINDS, ids=IDS)
def test_extreme_integers_reach_the_bounds(kind):
    # All codes at the level of largest magnitude, all x = -128, largest scales: S (and T)
    # at the spec's bounds, where f32(S) rounds for Q5_K and Q6_K.
    lhs = np.zeros((1, kind.record_bytes), np.uint8)
    rhs = np.zeros((1, 292), np.uint8)
    rhs[:, 4:260] = np.uint8(0x80)                                    # x = -128
    rhs[:, 260:292] = np.frombuffer(np.array([-32768] * 16, "<i2").tobytes(), np.uint8)
    rhs[:, 0:4] = np.frombuffer(np.array([1.0], "<f4").tobytes(), np.uint8)
    if kind.name in ("q2_k", "q5_k"):
        lhs[:] = 0xFF                                                 # top codes, scales, mins
    elif kind.name == "q3_k":
        lhs[:, 32:96] = 0                                             # low bits 0, high bits 0:
        lhs[:, 0:32] = 0                                              # level -4 everywhere
        lhs[:, 96:108] = 0                                            # scales -32
    else:
        lhs[:, 0:192] = 0                                             # level -32 everywhere
        lhs[:, 192:208] = 0x80                                        # scales -128
    _put_half(lhs, kind.d, 1.0)
    if kind.has_mins:
        _put_half(lhs, kind.dmin, 1.0)
    x = -128
    top = {"q2_k": (3, 15, 16), "q3_k": (-4, -32, 16), "q5_k": (31, 63, 32),
           "q6_k": (-32, -128, 16)}[kind.name]
    level, scale, sub = top
    s = (256 // sub) * scale * sub * level * x
    bound = {"q2_k": 1_474_560, "q3_k": 4_194_304, "q5_k": 63_995_904,
             "q6_k": 134_217_728}[kind.name]
    assert abs(s) <= bound
    if kind.name in ("q3_k", "q6_k"):
        assert abs(s) == bound
    p = F32(s)
    if kind.has_mins:
        t = (15 * 16 if kind.name == "q2_k" else 63 * 16) * -32768
        p = F32(p - F32(t))
    got = VALUES[kind.name](lhs, rhs)
    assert same_bits(got, [p])
    assert same_bits(got, reference(kind, lhs, rhs))


_SPECIAL_HALVES = [0.0, -0.0, 6e-8, -6e-8, 65504.0, np.inf, -np.inf, np.nan, 1.0, -1.0]
_SPECIAL_FLOATS = [0.0, -0.0, 1e-45, 3.4e38, np.inf, -np.inf, np.nan, 1.0, -2.5]


@pytest.mark.parametrize("kind", KINDS, ids=IDS)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_special_scales(kind, data):
    seed = data.draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    g = data.draw(st.integers(1, 4))
    lhs = rng.integers(0, 256, (g, kind.record_bytes), dtype=np.uint8)
    rhs = quantize_q8k(rng.standard_normal((g, 256)).astype(F32))
    _put_half(lhs, kind.d, [data.draw(st.sampled_from(_SPECIAL_HALVES)) for _ in range(g)])
    if kind.has_mins:
        _put_half(lhs, kind.dmin,
                  [data.draw(st.sampled_from(_SPECIAL_HALVES)) for _ in range(g)])
    ds = np.array([data.draw(st.sampled_from(_SPECIAL_FLOATS)) for _ in range(g)], "<f4")
    rhs[:, 0:4] = ds.view(np.uint8).reshape(g, 4)
    assert same_bits(VALUES[kind.name](lhs, rhs), reference(kind, lhs, rhs))


@pytest.mark.parametrize("kind", KINDS, ids=IDS)
def test_leading_axes_and_views(kind):
    # [N, G, R] rows against one rhs equal the row-by-row values; strided views read right.
    rng = np.random.default_rng(13)
    big = rng.integers(0, 256, (3, 10, kind.record_bytes + 7), dtype=np.uint8)
    lhs = big[:, 1::2, 3:3 + kind.record_bytes]                       # non-contiguous
    rhs = quantize_q8k(rng.standard_normal((5, 256)).astype(F32))
    got = VALUES[kind.name](lhs, rhs)
    assert got.shape == (3, 5)
    for n in range(3):
        assert same_bits(got[n], reference(kind, np.ascontiguousarray(lhs[n]), rhs))
    assert VALUES[kind.name](lhs[:, :0], rhs[:0]).shape == (3, 0)


@pytest.mark.parametrize("kind", KINDS, ids=IDS)
def test_inputs_are_not_written(kind):
    rng = np.random.default_rng(14)
    lhs = rng.integers(0, 256, (4, kind.record_bytes), dtype=np.uint8)
    rhs = rng.integers(0, 256, (4, 292), dtype=np.uint8)
    before = lhs.copy(), rhs.copy()
    VALUES[kind.name](lhs, rhs)
    assert np.array_equal(lhs, before[0]) and np.array_equal(rhs, before[1])
