"""The descriptor a compiled CPU kernel reads its arguments from: one int64 slot per
scalar (its bits), and per array its data address, then its sizes, then its strides
(in elements, or in bytes for the byte-stride variant); ``slot_layout`` in the code
generator gives each parameter's first slot."""
from __future__ import annotations

import ctypes
import sys
import sysconfig

import numpy as np

__all__ = ["data_address", "element_strides", "int_range", "scalar_bits", "write_arrays"]


def _choose_data_address():
    """A function giving the data address of an ndarray.

    ``ndarray.ctypes.data`` builds a helper object on every use (about 0.8 us). On
    CPython with numpy's C layout (``PyArrayObject``: the object header, then the
    ``data`` pointer, the field ``PyArray_DATA`` reads) the address is read from the
    array object directly; this is used only when it agrees with ``ctypes.data`` on
    a set of probe views, else ``ctypes.data`` is used."""
    def slow(x):
        return x.ctypes.data
    if sys.implementation.name != "cpython" or sysconfig.get_config_var("Py_GIL_DISABLED"):
        return slow
    offset = object.__basicsize__
    read = ctypes.c_size_t.from_address
    ndarray = np.ndarray

    def fast(x):
        return read(id(x) + offset).value if type(x) is ndarray else x.ctypes.data
    base = np.arange(4 * 6 * 8, dtype=np.float32).reshape(4, 6, 8)
    probes = [base, base[1:, ::-2, 3], base[::-1], base[2, 3, 4:5], base.T, base[0, 0, 0:0],
              np.zeros((), np.float64), np.frombuffer(bytes(64), np.uint8, offset=3, count=5),
              np.zeros(7, np.int8)[1:].view(np.uint8)]
    try:
        if all(fast(x) == slow(x) for x in probes):
            return fast
    except Exception:
        pass
    return slow


data_address = _choose_data_address()


def int_range(dtype):
    """(lowest, highest) of an integer scalar dtype (a plain Python int of that range
    is taken as it is), or None."""
    if dtype.kind not in "iu":
        return None
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


def scalar_bits(dtype):
    """A function giving a scalar argument of ``dtype`` (a numpy scalar of the dtype,
    or a Python int in range for an integer dtype) as its descriptor slot: its bits as
    an unsigned integer of its size, read as a signed 64-bit value."""
    if dtype.kind in "iub":
        mask = (1 << (8 * dtype.itemsize)) - 1

        def bits(x):
            b = int(x) & mask
            return b - (1 << 64) if b >= 1 << 63 else b
        return bits

    def bits(x):
        b = int.from_bytes(x.tobytes(), "little")
        return b - (1 << 64) if b >= 1 << 63 else b
    return bits


def element_strides(xs) -> bool:
    """Whether every stride of the arrays ``xs`` is a whole number of elements (the
    element-stride variant can address them)."""
    for x in xs:
        size = x.itemsize
        for st in x.strides:
            if st % size:
                return False
    return True


def write_arrays(slots, entries, by_element: bool) -> None:
    """Write each ``(array, (first slot, rank))`` of ``entries`` into ``slots``: the
    data address, the sizes and the strides (in elements when ``by_element``)."""
    address = data_address
    for x, (off, rank) in entries:
        slots[off] = address(x)
        if rank == 1:
            slots[off + 1] = x.shape[0]
            slots[off + 2] = x.strides[0] // x.itemsize if by_element else x.strides[0]
        elif rank:
            slots[off + 1:off + 1 + rank] = x.shape
            if by_element:
                size = x.itemsize
                slots[off + 1 + rank:off + 1 + 2 * rank] = [st // size for st in x.strides]
            else:
                slots[off + 1 + rank:off + 1 + 2 * rank] = x.strides
