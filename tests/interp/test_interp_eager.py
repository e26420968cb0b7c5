"""The eager forms of the DSL calls equal the interpreter and speak the verifier's words."""
import numpy as np
import pytest

import ninfer_ir as I
from ninfer_ir.backends.interp import bitcast, cast, dot, interpret, quantize, quantized_dot, reduce
from ninfer_ir.numerics import quantized as quantops


def records(g, seed=0):
    rng = np.random.default_rng(seed)
    w = rng.integers(0, 256, (g, 144), dtype=np.uint8)
    w[:, 0:4] = rng.uniform(1e-3, 1e-2, (g, 2)).astype("<f2").view(np.uint8)
    x = rng.standard_normal((g, 256)).astype(np.float32)
    return w, x


def test_quantize_and_quantized_dot():
    w, x = records(5)
    xq = quantize(x, format=I.quant.q8_k)
    assert xq.dtype == np.uint8 and xq.shape == (5, 292)
    assert np.array_equal(xq, quantops.quantize_q8k(x))
    for order in ("seq", "tree", "chunk<2>"):
        r = quantized_dot(w, xq, lhs_format=I.quant.q4_k, rhs_format=I.quant.q8_k,
                          acc_dtype=I.f32, order=order)
        assert r.shape == () and r.dtype == np.float32
        want = quantops.quantized_dot_q4k_q8k(w, xq, order=order)
        assert r.tobytes() == want.tobytes()


def test_eager_equals_interpreter():
    w, x = records(3, seed=1)
    text = """func @f(%w: tensor<u8[G,144]>, %x: tensor<f32[G,256]>) -> (tensor<f32[]>) {
  %xq = quantize(%x) {format = #q8_k} : tensor<u8[G,292]>
  %r = quantized_dot(%w, %xq) {acc_dtype = f32, lhs_format = #q4_k, order = "tree", rhs_format = #q8_k} : tensor<f32[]>
  return(%r)
}
"""
    eager = quantized_dot(w, quantize(x, format=I.quant.q8_k), lhs_format=I.quant.q4_k,
                          rhs_format=I.quant.q8_k, acc_dtype=I.f32, order="tree")
    assert interpret(I.parse(text), w, x).tobytes() == eager.tobytes()


@pytest.mark.parametrize("fmt,match", [
    (I.f32, r"attribute 'format' must be a quant schema \(I.quant.\*\), got the dtype f32"),
    ("q8_k", r"attribute 'format' must be a quant schema \(I.quant.\*\), got 'q8_k'"),
    (I.quant.q4_k, r"attribute 'format' must be a quantize target \(#q8_k, #q8_0\), got #q4_k"),
    (None, "missing attribute 'format'"),
])
def test_quantize_format_errors(fmt, match):
    with pytest.raises(I.VerifyError, match=match):
        quantize(np.zeros((1, 256), np.float32), format=fmt)


def test_quantized_dot_attribute_errors():
    w, x = records(1)
    xq = quantize(x, format=I.quant.q8_k)
    good = dict(lhs_format=I.quant.q4_k, rhs_format=I.quant.q8_k, acc_dtype=I.f32)
    for change, match in [
        (dict(lhs_format=I.quant.q8_k), "must be a pair of the table .*, got #q8_k x #q8_k"),
        (dict(rhs_format=I.u8), "attribute 'rhs_format' must be a quant schema"),
        (dict(acc_dtype=I.f16), "acc_dtype must be f32, got f16"),
        (dict(acc_dtype="f32"), "attribute 'acc_dtype' must be a dtype"),
        (dict(order="zigzag"), "bad summation order"),
        (dict(order=3), "attribute 'order' must be a string"),
    ]:
        with pytest.raises(I.VerifyError, match=match):
            quantized_dot(w, xq, **{**good, **change})
    with pytest.raises(I.VerifyError, match="same number of records"):
        quantized_dot(w, quantize(np.zeros((2, 256), np.float32), format=I.quant.q8_k), **good)


def test_quantize_domain_error():
    x = np.zeros((3, 256), np.float32)
    x[2, 0] = np.inf
    with pytest.raises(I.DomainError, match="record 2"):
        quantize(x, format=I.quant.q8_k)


def test_dot_and_reduce():
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((2, 21)).astype(np.float32)
    want = np.float32(0)
    for i in range(21):
        want = np.float32(want + a[i] * b[i]) if i else np.float32(a[0] * b[0])
    r = dot(lhs=a, rhs=b)
    assert r.shape == () and r.dtype == np.float32 and r.tobytes() == want.tobytes()
    assert dot(a, b, order="tree").dtype == np.float32
    with pytest.raises(I.VerifyError, match="two float vectors of one dtype"):
        dot(a, b.astype(np.float64))
    with pytest.raises(I.VerifyError, match="lengths 21 and 20 differ"):
        dot(a, b[:20])
    m = rng.standard_normal((3, 5)).astype(np.float32)
    s = reduce(m, "add", order="seq")
    assert s.shape == (3,) and np.array_equal(s[0:1], np.float32([fold_seq(m[0])]))
    with pytest.raises(I.VerifyError, match="unknown reduction"):
        reduce(m, "prod")


def fold_seq(v):
    acc = v[0]
    for x in v[1:]:
        acc = np.float32(acc + x)
    return acc


def test_cast_and_bitcast():
    r = cast(np.float32(-2.5), I.i32)
    assert isinstance(r, np.ndarray) and r.dtype == np.int32 and r.shape == () and r == -2
    assert list(cast(np.array([300, -1], np.int32), I.u8)) == [44, 255]
    bf = cast(np.float32(1.0), I.bf16)
    assert bf.dtype == np.uint16 and int(bf) == 0x3F80
    assert float(cast(bf, I.f32, src=I.bf16)) == 1.0
    u = bitcast(np.float32(1.0), I.u32)
    assert u.shape == () and int(u) == 0x3F800000
    assert bitcast(np.zeros(4, np.float16), I.i16).dtype == np.int16
    with pytest.raises(I.VerifyError, match="bitcast needs equal widths, got f32 to u16"):
        bitcast(np.float32(1.0), I.u16)
    with pytest.raises(I.VerifyError, match="attribute 'to' must be a dtype"):
        cast(np.float32(1.0), np.float64)
    with pytest.raises(I.VerifyError, match="must be a numpy array or scalar"):
        cast([1.0], I.f32)


def test_python_constants_cast_like_kernel_constants():
    r = cast(0.1, I.f32)                       # from f64, one rounding
    assert r.dtype == np.float32 and r.tobytes() == np.float32(0.1).tobytes()
    assert int(cast(-7, I.u8)) == 249 and cast(True, I.i32) == 1
    assert cast(2**62 + 1, I.f32) == np.float32(2.0**62)
    with pytest.raises(I.VerifyError, match="does not fit i64"):
        cast(2**64, I.f32)
    with pytest.raises(I.VerifyError, match="has no bit pattern"):
        bitcast(1.0, I.u64)


def test_reduce_needs_a_kind():
    with pytest.raises(I.VerifyError, match="missing attribute 'kind'"):
        reduce(np.zeros(3, np.float32))
