"""Augmented assignment to a whole buffer name (``b += v``) stores into the buffer,
as ``b[:] = b + v`` does (numpy's in-place update), at every nesting and on every
target; it does not rebind the name."""
import numpy as np
import pytest

import ninfer_ir as I


@I.kernel
def cast_add(a: I.Tensor[I.i64, 2, 3], o2: I.Buffer[I.u8, 2, 3]):
    o2 += I.cast(a, I.u8) % 8 * 2


@I.kernel
def add_in_loop(a: I.Tensor[I.f32, "N"], o: I.Buffer[I.f32, "N"]):
    for i in I.range(3):
        o += a


@I.kernel
def view_and_scalar(a: I.Tensor[I.f32, "N"], o: I.Buffer[I.f32, "N"], s: I.Buffer[I.f32]):
    v = o[1:]
    v *= 2.0
    s += 1.5


@I.kernel
def sub_in_branch(a: I.Tensor[I.f32, "N"], o: I.Buffer[I.f32, "N"]):
    if a.shape[0] > 2:
        o -= a


@I.kernel
def rebinds_a_tensor(a: I.Tensor[I.f32, "N"], o: I.Buffer[I.f32, "N"]):
    t = a
    t += 1.0                       # a tensor is a value: the name is rebound
    o[:] = t


TARGETS = ["interp", "cpu"]


def same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("target", TARGETS)
def test_whole_buffer_update_is_stored(target):
    a = np.arange(6, dtype=np.int64).reshape(2, 3)
    o = np.full((2, 3), 1, np.uint8)
    I.compile(cast_add, target)(a, o)
    assert same(o, (1 + (a.astype(np.uint8) % 8) * 2).astype(np.uint8))


@pytest.mark.parametrize("target", TARGETS)
def test_update_inside_a_loop_is_not_loop_carried(target):
    text = str(add_in_loop.ir)
    assert "  for(" in text and "= for(" not in text       # the loop carries nothing
    a = np.arange(4, dtype=np.float32)
    o = np.ones(4, np.float32)
    I.compile(add_in_loop, target)(a, o)
    want = np.ones(4, np.float32)
    for _ in range(3):
        want = want + a
    assert same(o, want)


@pytest.mark.parametrize("target", TARGETS)
def test_view_and_rank0_buffers_update_in_place(target):
    a = np.zeros(4, np.float32)
    o = np.array([1, 2, 3, 4], np.float32)
    s = np.array(1.0, np.float32)
    I.compile(view_and_scalar, target)(a, o, s)
    assert same(o, np.array([1, 4, 6, 8], np.float32))
    assert same(s, np.array(2.5, np.float32))


@pytest.mark.parametrize("target", TARGETS)
def test_update_inside_an_if(target):
    a = np.arange(4, dtype=np.float32)
    o = np.ones(4, np.float32)
    I.compile(sub_in_branch, target)(a, o)
    assert same(o, np.float32(1) - a)


@pytest.mark.parametrize("target", TARGETS)
def test_a_tensor_name_is_still_rebound(target):
    a = np.arange(4, dtype=np.float32)
    o = np.zeros(4, np.float32)
    I.compile(rebinds_a_tensor, target)(a, o)
    assert same(o, a + np.float32(1))
    assert same(a, np.arange(4, dtype=np.float32))
