"""Scalar arguments of a compiled CPU kernel: numpy scalars and plain Python ints (for
integer parameters) give the interpreter's results, at the edges of each dtype's range;
an int out of range or a float that is not the dtype's value is the binder's error."""
import numpy as np
import pytest

import ninfer_ir as I


@I.kernel
def put(a: I.i32, b: I.u64, c: I.index, d: I.f32, e: I.i8, out: I.Buffer[I.f64, 5]):
    out[0] = I.cast(a, I.f64)
    out[1] = I.cast(b, I.f64)
    out[2] = I.cast(c, I.f64)
    out[3] = I.cast(d, I.f64)
    out[4] = I.cast(e, I.f64)


CALLS = [
    (-1, 2**64 - 1, -(2**63), np.float32(-0.0), -128),
    (2**31 - 1, 2**63, 2**63 - 1, np.float32(3.4e38), 127),
    (np.int32(-7), np.uint64(5), np.int64(-3), np.float32(1.25), np.int8(-1)),
    (0, 0, 0, np.float32("nan"), 0),
]


@pytest.mark.parametrize("args", CALLS)
def test_scalars_reach_the_kernel_as_the_interpreter_sees_them(args):
    k = I.compile(put, target="cpu", threads=1)
    got, want = np.zeros(5), np.zeros(5)
    k(*args, got)
    I.interpret(put, *args, want)
    assert np.array_equal(got.view(np.uint64), want.view(np.uint64))


@pytest.mark.parametrize("bad, where", [
    ((2**31, 0, 0, np.float32(0), 0), "argument 0"),
    ((0, -1, 0, np.float32(0), 0), "argument 1"),
    ((0, 0, 2**63, np.float32(0), 0), "argument 2"),
    ((0, 0, 0, 0.1, 0), "argument 3"),
    ((0, 0, 0, np.float32(0), 128), "argument 4"),
    ((0, 0, True, np.float32(0), 0), "argument 2"),
])
def test_out_of_range_scalars_are_refused(bad, where):
    k = I.compile(put, target="cpu", threads=1)
    with pytest.raises(I.VerifyError, match=where):
        k(*bad, np.zeros(5))
