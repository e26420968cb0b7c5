"""Arguments that are not numpy arrays but export ``__dlpack__`` or the array
interface: viewed without a copy (writes land in the caller's memory), read-only
exports refused for buffers, on the interpreter and the CPU backend alike."""
import numpy as np
import pytest

import ninfer_ir as I
from ninfer_ir.testing import assert_same_bits


class DLPackOnly:
    """Exposes only the DLPack protocol over a numpy array's memory."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, **kwargs):
        return self._a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


class ArrayInterfaceOnly:
    """Exposes only ``__array_interface__`` (pointer, shape, typestr, read-only flag)."""

    def __init__(self, a):
        self._a = a

    @property
    def __array_interface__(self):
        return self._a.__array_interface__


class ArrayMethodOnly:
    """Exposes only ``__array__`` returning a view of its memory."""

    def __init__(self, a):
        self._a = a

    def __array__(self, dtype=None, copy=None):
        return self._a


class OnDevice(DLPackOnly):
    def __dlpack_device__(self):
        return (2, 0)                  # kDLCUDA


@I.kernel
def scale_into(x: I.Tensor[I.f32, "N"], y: I.Buffer[I.f32, "N"]):
    for i in I.range(x.shape[0]):
        y[i] = x[i] * 3.0


WRAPPERS = [DLPackOnly, ArrayInterfaceOnly, ArrayMethodOnly]
TARGETS = ["interp", "cpu"]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("wrap", WRAPPERS, ids=lambda w: w.__name__)
def test_writes_land_in_the_exporters_memory(target, wrap):
    x = np.arange(6, dtype=np.float32) - 2.5
    y = np.zeros(6, np.float32)
    want = np.zeros(6, np.float32)
    I.interpret(scale_into, x, want)
    run = I.compile(scale_into, target=target)
    assert run(wrap(x), wrap(y)) is None
    assert_same_bits(y, want)                       # y is the exporter's memory


@pytest.mark.parametrize("wrap", WRAPPERS, ids=lambda w: w.__name__)
def test_calling_the_kernel_directly_accepts_exporters(wrap):
    x = np.linspace(-1, 1, 9, dtype=np.float32)
    y, want = np.zeros(9, np.float32), np.zeros(9, np.float32)
    I.interpret(scale_into, x, want)
    scale_into(wrap(x), wrap(y))
    assert_same_bits(y, want)


def test_strided_exports_are_addressed_as_they_are():
    base = np.arange(20, dtype=np.float32)
    y = np.zeros(20, np.float32)
    I.compile(scale_into)(DLPackOnly(base[::2]), ArrayInterfaceOnly(y[1::2]))
    assert_same_bits(y[1::2], base[::2] * np.float32(3))
    assert not y[::2].any()


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("wrap", WRAPPERS, ids=lambda w: w.__name__)
def test_a_read_only_export_is_refused_as_a_buffer(target, wrap):
    y = np.zeros(4, np.float32)
    y.flags.writeable = False
    run = I.compile(scale_into, target=target)
    with pytest.raises(I.VerifyError, match=r"argument 1 \(%y\) is read-only"):
        run(np.ones(4, np.float32), wrap(y))
    run(wrap(np.ones(4, np.float32)), np.zeros(4, np.float32))  # fine as a tensor
    assert not y.any()


@pytest.mark.parametrize("target", TARGETS)
def test_exporters_are_checked_like_arrays(target):
    run = I.compile(scale_into, target=target)
    with pytest.raises(I.VerifyError, match="must have numpy dtype float32"):
        run(DLPackOnly(np.ones(4)), np.zeros(4, np.float32))
    with pytest.raises(I.VerifyError, match="symbol N is 4"):
        run(ArrayInterfaceOnly(np.ones(4, np.float32)), DLPackOnly(np.zeros(5, np.float32)))
    with pytest.raises(I.VerifyError, match="exports neither __dlpack__ nor the array"):
        run([1.0, 2.0], np.zeros(2, np.float32))


def test_device_memory_is_refused_on_the_host():
    with pytest.raises(I.VerifyError, match="DLPack device memory .* not host memory"):
        I.compile(scale_into)(OnDevice(np.ones(2, np.float32)), np.zeros(2, np.float32))


@pytest.mark.gpu
def test_cuda_takes_dlpack_device_arrays_without_a_copy():
    from ninfer_ir.backends.cuda.runtime import gpu_available
    ok, why = gpu_available()
    if not ok:
        pytest.skip(f"no GPU: {why}")
    import cupy
    x = cupy.asarray(np.arange(5, dtype=np.float32))
    y = cupy.zeros(5, dtype=cupy.float32)
    want = np.zeros(5, np.float32)
    I.interpret(scale_into, x.get(), want)
    I.compile(scale_into, target="cuda")(DLPackOnly(x), DLPackOnly(y))
    assert_same_bits(y.get(), want)                 # written in y's device memory
