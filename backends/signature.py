"""Binding a call to a kernel's parameters, shared by every runtime (interpreter,
CPU, host C, CUDA) so that a bad call gets the same message everywhere.

``bind_call(func, args, kwargs, is_array, writable, convert=host_array)`` checks the
argument count and names, scalar types and ranges, array dtypes, ranks, static dims,
symbol consistency (the same symbol is the same size) and that buffers are writable,
with no two elements in the same memory (``shares_elements``).
Every array argument first goes through ``convert``: ``host_array`` views an object
exporting ``__dlpack__`` or the array interface (``__array_interface__``,
``__array_struct__``, ``__array__``) as a numpy array over the same memory, so a kernel
writes a buffer argument in place whatever object holds it. It returns
``(values, symbols, outputs)``: values per parameter (``None`` for the trailing output
buffers the call left out; ``out_shape`` gives their shapes), the symbol bindings
``name -> (size, where)`` and the indices of those outputs.
"""
from __future__ import annotations

import numpy as np

from ninfer_ir.numerics import semantics
from ninfer_ir.errors import VerifyError
from ninfer_ir.ir import FuncOp
from ninfer_ir.verifier import verify_returns_attr
from ninfer_ir.types import BufferType, ScalarType, ShapedType, bf16, bool_

__all__ = ["bind_call", "host_array", "out_shape", "param_name", "shares_elements",
           "snapshot_tensors"]

_DL_CPU = 1                       # DLPack's kDLCPU device type


def host_array(value):
    """``value`` as a numpy array over the same memory when it exports one of the array
    protocols, else ``value`` unchanged (the binder then refuses it).

    ``__dlpack__`` (with ``__dlpack_device__``) goes through ``np.from_dlpack``, the
    array interface through ``np.asarray``; neither copies, and a read-only export
    gives a read-only array. A DLPack array in device memory raises ``VerifyError``
    (it is not host memory)."""
    if isinstance(value, np.ndarray) or isinstance(value, (str, bytes)):
        return value
    if hasattr(value, "__dlpack__") and hasattr(value, "__dlpack_device__"):
        device = value.__dlpack_device__()
        if int(device[0]) != _DL_CPU:
            raise VerifyError(f"a {type(value).__name__} in DLPack device memory (device "
                              f"type {int(device[0])}, id {int(device[1])}) is not host memory; "
                              f"copy it to the host or use the cuda target")
        return np.from_dlpack(value)
    if any(hasattr(value, n) for n in ("__array_interface__", "__array_struct__",
                                        "__array__")):
        arr = np.asarray(value)
        return arr if arr.dtype != object else value
    return value


def param_name(func, k):
    hint = func.args[k].name_hint
    return f"argument {k} (%{hint})" if hint else f"argument {k}"


def _scalar(func, k, t, value):
    where = f"@{func.sym_name}: {param_name(func, k)}"
    if isinstance(value, (np.ndarray, np.generic)):
        if value.shape != () or value.dtype != t.np_dtype:
            raise VerifyError(f"{where} must be a {t} scalar (numpy {t.np_dtype}), got "
                              f"{value.dtype}[{','.join(map(str, value.shape))}]")
        return np.array(value).reshape(())
    if isinstance(value, bool):
        if t is not bool_:
            raise VerifyError(f"{where} must be a {t} scalar, got the Python bool {value}")
        return np.asarray(value)
    if isinstance(value, int) and t.is_int:
        lo, hi = semantics.int_range(t)
        if not lo <= value <= hi:
            raise VerifyError(f"{where}: {value} does not fit {t}")
        return np.asarray(value, dtype=t.np_dtype)
    if isinstance(value, float) and t.is_float and t is not bf16:
        v = np.asarray(value, dtype=t.np_dtype)
        if not (float(v) == value or (value != value and v != v)):
            raise VerifyError(f"{where}: the Python float {value!r} is not exactly a {t}; "
                              f"pass a numpy {t.np_dtype} scalar")
        return v
    raise VerifyError(f"{where} must be a {t} scalar, got {type(value).__name__}")


def _shaped(func, k, t, value, symbols, is_array, writable, convert):
    where = f"@{func.sym_name}: {param_name(func, k)}"
    try:
        value = convert(value)
    except VerifyError as e:
        raise VerifyError(f"{where}: {e}") from None
    except (BufferError, TypeError, ValueError, RuntimeError) as e:
        raise VerifyError(f"{where}: cannot view the {type(value).__name__} as an array "
                          f"({type(e).__name__}: {e})") from None
    if not is_array(value):
        raise VerifyError(f"{where} must be an array (numpy or device) for {t}, got "
                          f"{type(value).__name__}, which exports neither __dlpack__ nor the "
                          f"array interface")
    if value.dtype != t.dtype.np_dtype:
        raise VerifyError(f"{where} must have numpy dtype {t.dtype.np_dtype} for {t}, "
                          f"got {value.dtype}")
    if value.ndim != t.rank:
        raise VerifyError(f"{where} must have rank {t.rank} for {t}, got shape "
                          f"{list(value.shape)}")
    for axis, (d, n) in enumerate(zip(t.shape, value.shape)):
        if isinstance(d, int) and d != n:
            raise VerifyError(f"{where}: axis {axis} must be {d} for {t}, got shape "
                              f"{list(value.shape)}")
        if isinstance(d, str):
            bound = symbols.setdefault(d, (n, f"{param_name(func, k)} axis {axis}"))
            if bound[0] != n:
                raise VerifyError(f"{where}: symbol {d} is {bound[0]} (from {bound[1]}) but "
                                  f"axis {axis} is {n}")
    if isinstance(t, BufferType) and not writable(value):
        raise VerifyError(f"{where} is read-only but {t} is written")
    if isinstance(t, BufferType) and shares_elements(value):
        raise VerifyError(f"{where}: two of its elements share memory (strides "
                          f"{list(value.strides)} for shape {list(value.shape)}), but {t} is "
                          f"written element by element; pass an array whose elements are "
                          f"distinct (a copy)")
    return value


def shares_elements(x) -> bool:
    """Whether two elements of the array ``x`` (numpy or device) may share memory: a
    zero stride on an axis of two or more, or strides that interleave. The test is the
    usual sufficient one (each axis, by increasing stride, steps past the span of the
    ones below it), so an exotic interleaved layout without a shared byte counts too."""
    if 0 in x.shape:                     # no elements (numpy gives such arrays zero strides)
        return False
    span = x.itemsize
    for stride, n in sorted((abs(s), n) for s, n in zip(x.strides, x.shape) if n > 1):
        if stride < span:
            return True
        span += stride * (n - 1)
    return False


_MISSING = object()


def bind_call(func: FuncOp, args, kwargs, is_array, writable, convert=host_array,
              partial: bool = False):
    """Check a call like the interpreter does (same messages).

    Returns ``(values, symbols, outputs)``: values per parameter (``None`` for the
    outputs to allocate), symbol bindings ``name -> (size, where)`` and the output
    parameter indices to allocate (their shapes follow from ``out_shape``).
    With ``partial`` the parameters not given are left free rather than missing: their
    values are ``None``, the third element lists them, and the given ones are checked
    as in a full call.
    """
    params = func.args
    verify_returns_attr(func)
    n_out = func.attrs.get("returns", 0)
    given = list(args)
    if len(given) > len(params):
        raise VerifyError(f"@{func.sym_name} takes {len(params)} argument(s), got {len(given)}")
    names = {p.name_hint: k for k, p in enumerate(params) if p.name_hint}
    slots = given + [_MISSING] * (len(params) - len(given))
    for key, value in kwargs.items():
        k = names.get(key)
        if k is None:
            raise VerifyError(f"@{func.sym_name} has no parameter %{key}")
        if slots[k] is not _MISSING:
            raise VerifyError(f"@{func.sym_name}: {param_name(func, k)} is given twice")
        slots[k] = value
    missing = [k for k, v in enumerate(slots) if v is _MISSING]
    outputs = list(range(len(params) - n_out, len(params)))
    if partial:
        outputs = missing
    elif missing and not (n_out and missing == outputs):
        raise VerifyError(f"@{func.sym_name}: missing "
                          + ", ".join(param_name(func, k) for k in missing))
    outputs = outputs if missing else []
    symbols, values = {}, []
    for k, (p, v) in enumerate(zip(params, slots)):
        if k in outputs:
            values.append(None)
        elif isinstance(p.type, ScalarType):
            values.append(_scalar(func, k, p.type, v))
        else:
            values.append(_shaped(func, k, p.type, v, symbols, is_array, writable, convert))
    return values, symbols, outputs


def snapshot_tensors(func: FuncOp, values, may_share, copy) -> None:
    """A tensor argument is a value: what it held when the call began. Replace, in
    ``values`` (from ``bind_call``), each tensor argument that ``may_share`` memory with
    a buffer argument by ``copy(value)``, so stores into the buffer during the call are
    not seen through the tensor (docs/ir.md, "Arguments")."""
    buffers = [v for p, v in zip(func.args, values)
               if v is not None and isinstance(p.type, BufferType)]
    if not buffers:
        return
    for k, (p, v) in enumerate(zip(func.args, values)):
        if (v is not None and isinstance(p.type, ShapedType) and not isinstance(p.type, BufferType)
                and any(may_share(v, b) for b in buffers)):
            values[k] = copy(v)


def out_shape(func: FuncOp, k: int, symbols) -> tuple:
    t = func.args[k].type
    shape = []
    for d in t.shape:
        if isinstance(d, str) and d in symbols:
            d = symbols[d][0]
        if not isinstance(d, int):
            raise VerifyError(f"@{func.sym_name}: cannot allocate the output "
                              f"{param_name(func, k)} of type {t}: its size is not known "
                              f"from the inputs; pass it explicitly")
        shape.append(d)
    return tuple(shape)
