"""The call boundary: argument checks, read-only inputs, output buffers, function choice."""
import numpy as np
import pytest

import ninfer_ir as I
from ninfer_ir.backends.interp import interpret

TWO = """func @f(%w: tensor<u8[N,G,144]>, %x: tensor<f32[G,256]>, %y: buffer<f32[N]>) {
  return()
}
"""


def args(n=3, g=2):
    return (np.zeros((n, g, 144), np.uint8), np.zeros((g, 256), np.float32),
            np.zeros(n, np.float32))


def test_good_call():
    assert interpret(I.parse(TWO), *args()) is None


@pytest.mark.parametrize("change,match", [
    (lambda a: (a[0], np.zeros((3, 256), np.float32), a[2]),
     r"symbol G is 2 \(from argument 0 \(%w\) axis 1\) but axis 0 is 3"),
    (lambda a: (a[0], a[1], np.zeros(4, np.float32)), "symbol N is 3"),
    (lambda a: (a[0], a[1].astype(np.float64), a[2]), "numpy dtype float32"),
    (lambda a: (a[0], a[1], a[2].astype(">f4")), "numpy dtype float32"),
    (lambda a: (a[0], a[1][None], a[2]), "must have rank 2"),
    (lambda a: (a[0][..., :143], a[1], a[2]), "axis 2 must be 144"),
    (lambda a: (a[0], a[1], list(a[2])), r"must be an array \(numpy or device\)"),
    (lambda a: (a[0], a[1]), r"missing argument 2 \(%y\)"),
    (lambda a: (*a, a[2]), "takes 3 argument"),
])
def test_bad_arguments_are_refused(change, match):
    with pytest.raises(I.VerifyError, match=match):
        interpret(I.parse(TWO), *change(args()))


def test_read_only_buffer_is_refused():
    w, x, y = args()
    y.flags.writeable = False
    with pytest.raises(I.VerifyError, match="read-only"):
        interpret(I.parse(TWO), w, x, y)


def test_keyword_arguments():
    w, x, y = args()
    assert interpret(I.parse(TWO), w, y=y, x=x) is None
    with pytest.raises(I.VerifyError, match="no parameter %z"):
        interpret(I.parse(TWO), w, x, y, z=1)
    with pytest.raises(I.VerifyError, match="given twice"):
        interpret(I.parse(TWO), w, x, y, x=x)


def test_tensor_inputs_are_read_only_views():
    text = """func @f(%x: tensor<f32[4]>) -> (tensor<f32[4]>) {
  return(%x)
}
"""
    x = np.arange(4, dtype=np.float32)
    r = interpret(I.parse(text), x)
    assert np.shares_memory(r, x) and not r.flags.writeable and x.flags.writeable


SCALARS = """func @f(%a: i8, %b: f32, %c: bool, %i: index) -> (i8, f32, bool, index) {
  return(%a, %b, %c, %i)
}
"""


def test_scalar_arguments():
    a, b, c, i = interpret(I.parse(SCALARS), -3, 0.5, True, 7)
    assert (a.dtype, b.dtype, c.dtype, i.dtype) == (np.int8, np.float32, np.bool_, np.int64)
    assert all(v.ndim == 0 and isinstance(v, np.ndarray) for v in (a, b, c, i))
    interpret(I.parse(SCALARS), np.int8(1), np.array(0.1, np.float32), np.bool_(False),
              np.int64(2))


@pytest.mark.parametrize("vals,match", [
    ((300, 0.5, True, 0), "300 does not fit i8"),
    ((1, 0.1, True, 0), "not exactly a f32"),
    ((1, np.float64(0.5), True, 0), "must be a f32 scalar"),
    ((1, 0.5, 1, 0), "must be a bool scalar"),
    ((1.0, 0.5, True, 0), "must be a i8 scalar"),
    ((1, 0.5, True, np.int32(0)), "must be a index scalar"),
])
def test_bad_scalar_arguments(vals, match):
    with pytest.raises(I.VerifyError, match=match):
        interpret(I.parse(SCALARS), *vals)


OUT = """func @f(%x: tensor<f32[K]>, %s: buffer<f32[]>, %y: buffer<f32[K]>) {returns = 2} {
  %c0 = constant() {value = 0} : index
  %v = load(%x, %c0) : f32
  store(%v, %s)
  copy(%x, %y)
  return()
}
"""


def test_output_buffers_are_allocated_when_left_out():
    x = np.array([2.5, 1.0], np.float32)
    s, y = interpret(I.parse(OUT), x)
    assert s.shape == () and s.dtype == np.float32 and float(s) == 2.5
    assert np.array_equal(y, x) and not np.shares_memory(y, x)
    s2, y2 = np.zeros((), np.float32), np.zeros(2, np.float32)
    assert interpret(I.parse(OUT), x, s2, y2) is None
    assert float(s2) == 2.5 and np.array_equal(y2, x)


def test_output_of_unknown_size_cannot_be_allocated():
    text = OUT.replace("%y: buffer<f32[K]>", "%y: buffer<f32[?]>")
    with pytest.raises(I.VerifyError, match="cannot allocate the output"):
        interpret(I.parse(text), np.ones(2, np.float32))


def test_choosing_the_function():
    text = TWO + "func @g(%a: f32) -> (f32) {\n  return(%a)\n}\n"
    m = I.parse(text)
    assert float(interpret(m, np.float32(2), func_name="g")) == 2.0
    with pytest.raises(I.VerifyError, match="holds 2 functions"):
        interpret(m, np.float32(2))
    with pytest.raises(I.VerifyError, match="no function @h"):
        interpret(m, func_name="h")
    assert float(interpret(m.funcs[1], np.float32(3))) == 3.0
    assert float(interpret("func @g(%a: f32) -> (f32) {\n  return(%a)\n}\n", np.float32(4))) == 4
    with pytest.raises(I.VerifyError, match="interpret takes"):
        interpret(42)
