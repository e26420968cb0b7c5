"""Random arguments for a kernel, made from its parameter annotations.

* a symbol dim takes its size from ``--dim NAME=SIZE`` (default ``DEFAULT_DIM``);
  an unknown dim (``None``) is ``DEFAULT_DIM``;
* ``u8[..., 144]`` tensors are valid Q4_K records, ``u8[..., 292]`` valid Q8_K
  records (quantized from standard normal values);
* float tensors are standard normal (``bf16`` as the words of such values);
  integer tensors uniform over a moderate range; ``bool`` tensors random;
* buffers are zero-filled;
* a scalar parameter takes ``--dim NAME=VALUE`` when given, else a random value
  (floats standard normal, integers 1..16, bools random).
"""
from __future__ import annotations

import numpy as np

from ninfer_ir.types import BufferType, ScalarType, ShapedType

from .common import usage
from ninfer_ir.q4k import random_q4k

DEFAULT_DIM = 16
_INT_RANGE = {8: None, 16: None, 32: (-(1 << 15), 1 << 15), 64: (-(1 << 15), 1 << 15)}


def param_name(p, k: int) -> str:
    return p.name_hint or f"arg{k}"


def symbol_sizes(func, given: dict) -> dict:
    """Every symbol of the parameters -> its size."""
    sizes = {}
    for p in func.args:
        if isinstance(p.type, ShapedType):
            for d in p.type.shape:
                if isinstance(d, str):
                    sizes[d] = given.get(d, DEFAULT_DIM)
    for name, size in sizes.items():
        if isinstance(size, float) or size < 0:
            raise usage(f"--dim {name}={size}: a size must be a non-negative integer")
    return sizes


def _check_names(func, given: dict, sizes: dict) -> None:
    scalars = {param_name(p, k) for k, p in enumerate(func.args)
               if isinstance(p.type, ScalarType)}
    unknown = sorted(set(given) - set(sizes) - scalars)
    if unknown:
        known = ", ".join(sorted(set(sizes) | scalars)) or "none"
        raise usage(f"--dim names {', '.join(unknown)}, which the kernel does not have "
                    f"(symbols and scalar parameters: {known})")


def _floats(rng, shape, dtype: ScalarType) -> np.ndarray:
    v = rng.standard_normal(shape).astype(np.float32)
    if dtype.name == "bf16":
        return (v.view(np.uint32) >> 16).astype(np.uint16)
    return v.astype(dtype.np_dtype)


def _ints(rng, shape, dtype: ScalarType) -> np.ndarray:
    info = np.iinfo(dtype.np_dtype)
    if dtype.kind == "index":
        lo, hi = 0, DEFAULT_DIM
    elif _INT_RANGE.get(dtype.bits) is None:
        lo, hi = int(info.min), int(info.max) + 1
    else:
        lo, hi = _INT_RANGE[dtype.bits]
        lo = max(lo, int(info.min))
    return rng.integers(lo, hi, size=shape, dtype=np.int64).astype(dtype.np_dtype)


def _array(rng, shape, dtype: ScalarType):
    """A random array of ``shape``/``dtype`` and a few words on how it was made."""
    if dtype.name == "u8" and shape and shape[-1] == 144:
        return random_q4k(rng, *shape[:-1]), "Q4_K records"
    if dtype.name == "u8" and shape and shape[-1] == 292:
        from ninfer_ir import quantize, quant
        rows = int(np.prod(shape[:-1]))
        x = rng.standard_normal((rows, 256)).astype(np.float32)
        return np.asarray(quantize(x, format=quant.q8_k)).reshape(shape), "Q8_K records"
    if dtype.is_float:
        return _floats(rng, shape, dtype), "normal"
    if dtype.kind == "bool":
        return rng.integers(0, 2, size=shape).astype(bool), "random bools"
    return _ints(rng, shape, dtype), "random ints"


def _scalar(rng, dtype: ScalarType, value=None):
    if value is None:
        if dtype.is_float:
            return _floats(rng, (), dtype)[()], "random"
        if dtype.kind == "bool":
            return np.bool_(rng.integers(0, 2)), "random"
        return dtype.np_dtype.type(rng.integers(1, DEFAULT_DIM + 1)), "random"
    try:
        if dtype.name == "bf16":
            return _floats_from(value), "given"
        return np.asarray(value).astype(dtype.np_dtype)[()], "given"
    except (OverflowError, ValueError) as e:
        raise usage(f"--dim: {value!r} is not a {dtype}: {e}") from None


def _floats_from(value) -> np.uint16:
    return np.uint16(np.float32(value).view(np.uint32) >> 16)


#: ``ninfer run`` holds about this many copies of the inputs at once
_COPIES = 4


def _memory_bytes() -> int | None:
    import os
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


def _check_size(func, sizes: dict) -> None:
    """A usage error when the arrays for ``sizes`` cannot fit in this machine's memory."""
    total = 0
    for p in func.args:
        t = p.type
        if isinstance(t, ShapedType):
            n = 1
            for d in t.shape:
                n *= sizes[d] if isinstance(d, str) else DEFAULT_DIM if d is None else d
            total += n * t.dtype.np_dtype.itemsize
    memory = _memory_bytes()
    if memory is not None and total * _COPIES > memory:
        given = " ".join(f"{k}={v}" for k, v in sizes.items())
        raise usage(f"--dim {given}: the arguments take {total / 2**30:.3g} GiB, and a run "
                    f"holds {_COPIES} copies; this machine has {memory / 2**30:.3g} GiB")


def make_inputs(func, rng: np.random.Generator, given: dict):
    """(arguments in parameter order, {symbol: size}, one description per parameter)."""
    sizes = symbol_sizes(func, given)
    _check_names(func, given, sizes)
    _check_size(func, sizes)
    args, notes = [], []
    for k, p in enumerate(func.args):
        name, t = param_name(p, k), p.type
        if isinstance(t, ScalarType):
            value, how = _scalar(rng, t, given.get(name))
            args.append(value)
            notes.append(f"{name}: {t} = {value} ({how})")
            continue
        shape = tuple(sizes[d] if isinstance(d, str) else DEFAULT_DIM if d is None else d
                      for d in t.shape)
        if isinstance(t, BufferType):
            arr, how = np.zeros(shape, t.dtype.np_dtype), "zeros"
        else:
            arr, how = _array(rng, shape, t.dtype)
        args.append(arr)
        notes.append(f"{name}: {t.dtype}[{','.join(map(str, shape))}] ({how})")
    return args, sizes, notes


def fresh_copy(args: list) -> list:
    """Independent copies (a kernel may write its buffers)."""
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]
