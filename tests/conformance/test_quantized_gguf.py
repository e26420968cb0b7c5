"""The oracle of the 32-element GGUF schemas (docs/spec/quantized-gguf.md) against
independent references: gguf-py's dequantizer (the weight codes and scales), a scalar
model of ggml's reference quantizer written here element by element, and gguf-py's
quantizer (which, like ggml's reference, rounds ties away from zero)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ninfer_ir as I
from ninfer_ir.numerics import quantized as Q
from ninfer_ir.quant import PAIRS

gguf = pytest.importorskip("gguf")
from gguf import GGMLQuantizationType as T  # noqa: E402
from gguf.quants import dequantize, quantize as gguf_quantize  # noqa: E402

F32 = np.float32
Q80 = I.quant.q8_0
SMALL_PAIRS = [p for p in PAIRS.values() if p.rhs is Q80]


def h16(v):
    return np.array([v], np.float16).view(np.uint8)


def bits(a):
    return np.ascontiguousarray(np.asarray(a, F32)).view(np.uint32)


def random_records(rng, schema, *lead, scale=0.02):
    w = rng.integers(0, 256, (*lead, schema.record_bytes), dtype=np.uint8)
    d = (rng.standard_normal((*lead, 1)) * scale).astype(np.float16)
    w[..., 0:2] = d.view(np.uint8)
    return w


# --- the dots: codes and scales from gguf-py, the float steps of the spec ----------------

def reference_values(pair, w, xq):
    """v_b from gguf-py's decoding: code = dequantized / d (exact: |code| * |d| fits f32)."""
    g = w.shape[0]
    dw = w[:, 0:2].copy().view(np.float16)[:, 0].astype(F32)
    dx = xq[:, 0:2].copy().view(np.float16)[:, 0].astype(F32)
    wd = dequantize(w.reshape(-1), getattr(T, pair.lhs.name.upper())).reshape(g, 32)
    xd = dequantize(xq.reshape(-1), T.Q8_0).reshape(g, 32)
    codes = np.rint(wd / dw[:, None]).astype(np.int64)
    xcodes = np.rint(xd / dx[:, None]).astype(np.int64)
    assert np.array_equal((codes * dw[:, None]).astype(F32), wd)      # exact reconstruction
    s = (codes * xcodes).sum(axis=1).astype(F32)
    mul = lambda a, b: np.multiply(a, b, dtype=F32)                    # noqa: E731
    if pair.lhs.name == "q4_0":
        return mul(mul(s, dw), dx)
    if pair.lhs.name in ("q5_0", "iq4_nl"):
        return mul(mul(dw, dx), s)
    return mul(s, mul(dw, dx))


@pytest.mark.parametrize("pair", SMALL_PAIRS, ids=str)
def test_record_values_match_gguf_decoding(pair):
    rng = np.random.default_rng(len(pair.stem))
    w = random_records(rng, pair.lhs, 257)
    xq = Q.quantize(rng.standard_normal((257, 32)).astype(F32) * 3, Q80)
    assert np.array_equal(bits(Q.pair_values(pair)(w, xq)), bits(reference_values(pair, w, xq)))


@pytest.mark.parametrize("pair", SMALL_PAIRS, ids=str)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_record_values_any_bytes(pair, data):
    g = data.draw(st.integers(1, 9))
    w = np.frombuffer(data.draw(st.binary(min_size=g * pair.lhs.record_bytes,
                                          max_size=g * pair.lhs.record_bytes)), np.uint8)
    w = w.reshape(g, pair.lhs.record_bytes).copy()
    xq = np.frombuffer(data.draw(st.binary(min_size=g * 34, max_size=g * 34)), np.uint8)
    xq = xq.reshape(g, 34).copy()
    for r in (w, xq):          # finite, non-zero scales so that gguf-py's codes are recoverable
        d = r[:, 0:2].copy().view(np.float16)
        ok = np.isfinite(d) & (d != 0)
        r[:, 0:2] = np.where(ok, d, np.float16(0.5)).view(np.uint8)
    assert np.array_equal(bits(Q.pair_values(pair)(w, xq)), bits(reference_values(pair, w, xq)))


@pytest.mark.parametrize("pair", SMALL_PAIRS, ids=str)
def test_dot_folds_the_values_in_order_and_keeps_a_lone_minus_zero(pair):
    rng = np.random.default_rng(1)
    w = random_records(rng, pair.lhs, 11)
    xq = Q.quantize(rng.standard_normal((11, 32)).astype(F32), Q80)
    v = Q.pair_values(pair)(w, xq)
    acc = v[0]
    for x in v[1:]:
        acc = F32(acc + x)
    assert bits(Q.quantized_dot(w, xq, pair))[()] == bits(acc)[()]
    tree = Q.quantized_dot(w, xq, pair, "tree")
    assert tree.shape == () and tree.dtype == F32
    # G = 1 whose value is -0.0: the result is -0.0 (no initial +0.0)
    w1 = w[:1].copy()
    w1[0, 0:2] = h16(-1.0)
    x1 = np.zeros((1, 34), np.uint8)
    x1[0, 0:2] = h16(1.0)
    assert bits(Q.quantized_dot(w1, x1, pair))[()] == bits(F32(-0.0))[()]
    assert Q.quantized_dot(w[:0], xq[:0], pair).tobytes() == F32(0.0).tobytes()


def test_non_finite_scales_follow_ieee():
    pair = PAIRS[I.quant.q8_0, Q80]
    rng = np.random.default_rng(2)
    w = random_records(rng, pair.lhs, 4)
    xq = Q.quantize(rng.standard_normal((4, 32)).astype(F32), Q80)
    w[1, 0:2] = h16(np.inf)
    v = Q.pair_values(pair)(w, xq)
    assert np.isinf(v[1]) or np.isnan(v[1])
    assert np.isfinite(np.delete(v, 1)).all()


# --- Q8_0 quantization ------------------------------------------------------------------

def ggml_reference_q80(x):
    """ggml's quantize_row_q8_0_ref, element by element on binary32 scalars."""
    out = np.zeros((x.shape[0], 34), np.uint8)
    for g, row in enumerate(x.astype(F32)):
        amax = F32(0.0)
        for v in row:
            amax = max(amax, abs(v))
        d = F32(amax / F32(127.0))
        inv = F32(F32(1.0) / d) if d != 0 else F32(0.0)
        out[g, 0:2] = h16(d)     # round to nearest even
        for j, v in enumerate(row):
            p = float(F32(v * inv))
            q = int(np.floor(abs(p) + 0.5)) if abs(p) % 1 != 0.5 else int(abs(p)) + 1
            out[g, 2 + j] = np.int8(q if p >= 0 else -q).view(np.uint8)
    return out


def test_quantize_is_ggmls_reference_quantizer():
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((40, 32)) * rng.choice([1e-3, 1.0, 1e3], (40, 1))).astype(F32)
    x[5] = 0.0
    x[6] = -0.0
    x[7, :] = 0.0
    x[7, 3] = 2.5e-30                                  # tiny amax: subnormal binary16 d
    x[8] = np.arange(32, dtype=F32) - 16               # exact half-integers after scaling
    x[8, 31] = 127.0
    x[9] = 0.0
    x[9, :4] = [127.0, 2.5, -2.5, 0.5]                 # ties: roundf goes away from zero
    got = Q.quantize(x, Q80)
    assert got.tobytes() == ggml_reference_q80(x).tobytes()
    assert got[9, 2:6].view(np.int8).tolist() == [127, 3, -3, 1]


def test_quantize_matches_gguf_py_ties_included():
    rng = np.random.default_rng(4)
    x = (rng.standard_normal((300, 32)) * rng.choice([1e-6, 1.0, 1e4], (300, 1))).astype(F32)
    x[0] = 0.0
    x[0, :4] = [127.0, 2.5, -2.5, 0.5]
    x[1] = 0.0
    got = Q.quantize(x, Q80)
    assert got.tobytes() == gguf_quantize(x, T.Q8_0).tobytes()
    assert got[0, 3:6].view(np.int8).tolist() == [3, -3, 1]


@pytest.mark.parametrize("poison,reason", [(np.nan, 1), (np.inf, 1), (-np.inf, 1),
                                           (1e-40, 2), (-3e-39, 2), (1e7, 3), (-8321040.0, 3)])
def test_quantize_domain_errors(poison, reason):
    x = np.random.default_rng(5).standard_normal((6, 32)).astype(F32)
    x[4] = 0.0
    x[4, 3] = poison
    x[5, 0] = np.nan                                   # a later failing record never wins
    with pytest.raises(I.DomainError) as e:
        I.quantize(x, format=Q80)
    assert e.value.record == 4 and e.value.reason == reason
    assert str(e.value).startswith("quantize q8_0: record 4: ")
    x[4, 3] = 8321039.0                                # d rounds to 65504: representable
    x[5, 0] = 1.0
    assert I.quantize(x, format=Q80)[4, 0:2].view(np.float16)[0] == np.float16(65504)


def test_quantize_shapes_and_empty():
    assert I.quantize(np.zeros((0, 32), F32), format=Q80).shape == (0, 34)
    with pytest.raises(I.VerifyError, match=r"f32\[G,32\]"):
        I.quantize(np.zeros((2, 256), F32), format=Q80)
    x = np.random.default_rng(6).standard_normal((3, 64)).astype(F32)[:, ::2]
    assert I.quantize(x, format=Q80).tobytes() == I.quantize(x.copy(), format=Q80).tobytes()
