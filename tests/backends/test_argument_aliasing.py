"""A tensor argument is its value at the call (docs/ir.md, "Arguments"): when it shares
memory with a buffer argument, stores into the buffer are not seen through the tensor.
Every target computes what the snapshot semantics give, checked against a reference
written here from the rule itself."""
import shutil

import numpy as np
import pytest

import ninfer_ir as I
from ninfer_ir.backends.clike.host import HostKernel


@I.kernel
def shift_add(x: I.Tensor[I.f32, "N"], y: I.Buffer[I.f32, "N"]):
    for i in I.range(1, x.shape[0]):
        y[i] = x[i - 1] + 1.0


def reference(a):
    """y[i] = old_a[i - 1] + 1 for i >= 1, y[0] unchanged."""
    out = a.copy()
    out[1:] = a[:-1] + np.float32(1.0)
    return out


def _runners():
    yield "interp", lambda *a: I.interpret(shift_add, *a)
    yield "cpu", I.compile(shift_add, "cpu", threads=1)
    yield "cpu-2", I.compile(shift_add, "cpu", threads=2)
    if shutil.which("cc") or shutil.which("gcc"):
        yield "host-c", HostKernel(I.lower(shift_add))


RUNNERS = dict(_runners())


@pytest.mark.parametrize("target", list(RUNNERS))
def test_same_array_as_tensor_and_buffer(target):
    a = np.arange(6, dtype=np.float32) * 10
    want = reference(a)
    RUNNERS[target](a, a)
    assert np.array_equal(a.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("target", list(RUNNERS))
def test_overlapping_views_as_tensor_and_buffer(target):
    base = np.arange(8, dtype=np.float32)
    x, y = base[0:6], base[2:8]          # y[i] is x[i + 2]
    old_x = x.copy()
    want_y = y.copy()
    want_y[1:] = old_x[:-1] + np.float32(1.0)
    RUNNERS[target](x, y)
    assert np.array_equal(y.view(np.uint32), want_y.view(np.uint32))


@pytest.mark.gpu
def test_cuda_follows_the_snapshot_rule():
    from ninfer_ir.backends.cuda import runtime
    ok, why = runtime.gpu_available()
    if not ok:
        pytest.skip(f"no GPU: {why}")
    import cupy
    k = I.compile(shift_add, "cuda")
    a = np.arange(6, dtype=np.float32) * 10
    want = reference(a)
    k(a, a)                                # numpy: each argument its own device copy
    assert np.array_equal(a.view(np.uint32), want.view(np.uint32))
    d = cupy.arange(6, dtype=cupy.float32) * 10
    k(d, d)                                # cupy: the tensor is copied before the launch
    assert np.array_equal(d.get().view(np.uint32), want.view(np.uint32))


@I.kernel
def sin_in_place(x: I.Buffer[I.f32, "M", "N"]):
    x[:] = I.sin(x)


def _self_runners():
    yield "interp", lambda *a: I.interpret(sin_in_place, *a)
    yield "cpu", I.compile(sin_in_place, "cpu", threads=1)
    yield "cpu-bound", lambda *a: I.compile(sin_in_place, "cpu", threads=1).bind(*a)()
    yield "cpu-bound-free", lambda *a: I.compile(sin_in_place, "cpu", threads=1).bind()(*a)
    if shutil.which("cc") or shutil.which("gcc"):
        yield "host-c", HostKernel(I.lower(sin_in_place))


SELF_RUNNERS = dict(_self_runners())


def _strided(base, shape, strides):
    return np.lib.stride_tricks.as_strided(base, shape=shape, strides=strides, writeable=True)


@pytest.mark.parametrize("target", list(SELF_RUNNERS))
@pytest.mark.parametrize("shape,strides", [((3, 300), (400, 0)), ((4, 5), (8, 4))])
def test_a_buffer_whose_elements_share_memory_is_refused(target, shape, strides):
    """A zero stride (every element of a row one float) or rows that overlap: element by
    element writes have no one result that vector code gives, so every target refuses
    the call, with the interpreter's message, before writing anything."""
    base = np.arange(400 * 4, dtype=np.float32)
    x = _strided(base, shape, strides)
    before = base.copy()
    with pytest.raises(I.VerifyError, match="two of its elements share memory"):
        SELF_RUNNERS[target](x)
    assert np.array_equal(base, before)


@pytest.mark.parametrize("target", list(SELF_RUNNERS))
def test_strided_buffers_with_distinct_elements_are_taken(target):
    """Reversed, every other column, a transpose, and a zero stride on an axis of one:
    the same bits as on a contiguous copy."""
    base = np.random.default_rng(2).uniform(-50, 50, (6, 8)).astype(np.float32)
    for make in (lambda a: a[::-1, ::2], lambda a: a.T[:, 1:],
                 lambda a: _strided(a, (1, 8), (0, 4))):
        want = make(base.copy()).copy()
        I.interpret(sin_in_place, want)
        view = make(base.copy())
        SELF_RUNNERS[target](view)
        assert np.array_equal(np.ascontiguousarray(view).view(np.uint32),
                              want.view(np.uint32))


def test_which_layouts_share_elements():
    from ninfer_ir.backends.signature import shares_elements
    a = np.zeros((4, 6), np.float32)
    assert not shares_elements(a) and not shares_elements(a.T) and not shares_elements(a[::-1, ::3])
    assert not shares_elements(np.zeros((0, 2), np.float32))      # no elements: strides (0, 0)
    assert not shares_elements(_strided(a, (1, 6), (0, 4)))       # a zero stride on an axis of one
    assert shares_elements(_strided(a, (2, 6), (0, 4)))
    assert shares_elements(_strided(a, (3, 4), (8, 4)))           # rows two floats apart, four long
