"""Calling compiled CPU kernels: ``CompiledKernel(module, func_name=None, threads=None)``.

A call takes the same arguments as the interpreter and is checked by the same
``bind_arguments`` before anything runs (array kinds, dtypes with byte order,
ranks, static sizes, one size per symbol, writable buffers, scalars the dtype
holds exactly; a function whose ``returns`` attribute is k > 0 may be called
without its last k parameters, which are then allocated zeroed and returned). Strides are not restricted: negative and zero strides and views at
any byte offset are addressed as they are, with no alignment requirement. Calls
whose strides are all whole numbers of elements (nearly every numpy view) use
code compiled for element strides; any other call uses a second variant, compiled
on first need, that takes byte strides. A tensor parameter whose memory may overlap a buffer parameter is
copied first, so tensors are values and inputs are never written.

The native call releases the GIL. Parallel loops run on ``threads`` threads
(default ``os.cpu_count()``; 1 runs them in the calling thread). A non-zero status
becomes the interpreter's error (``status.error_for_status``).
"""
from __future__ import annotations

import ctypes
import os

import numpy as np

from ninfer_ir.errors import VerifyError
from ninfer_ir.ir import FuncOp, Module
from ninfer_ir.types import BufferType, ShapedType
from backends.interp.eager import bind_arguments

from .codegen import lower_module
from .jit import JITModule
from .status import ERR_SLOTS, error_for_status
from .threads import par_entry

__all__ = ["CompiledKernel", "compile_module"]

_KERNEL_ARGS = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)


def _choose(module, func_name):
    if isinstance(module, str):
        from ninfer_ir import parse
        module = parse(module)
    if isinstance(module, FuncOp):
        return Module([module]), module
    if not isinstance(module, Module):
        raise VerifyError(f"compile takes a loop-level Module, a FuncOp or IR text, "
                          f"got {type(module).__name__}")
    if func_name is None:
        if len(module.funcs) != 1:
            names = ", ".join(f"@{f.sym_name}" for f in module.funcs) or "none"
            raise VerifyError(f"the module holds {len(module.funcs)} functions ({names}); "
                              f"choose one with func_name=")
        return module, module.funcs[0]
    for f in module.funcs:
        if f.sym_name == func_name:
            return module, f
    raise VerifyError(f"the module has no function @{func_name}")


class CompiledKernel:
    """A loop-level function compiled for the host CPU, callable on numpy arrays."""

    def __init__(self, module, func_name: str | None = None, *, threads: int | None = None,
                 isa: str | None = None, bounds_checks: bool = True, cache_dir=None,
                 use_cache: bool = True, report=None, native_threads: bool = True):
        module, func = _choose(module, func_name)
        self.func = func
        self._module = Module([func]) if len(module.funcs) > 1 else module
        self._options = dict(isa=isa, bounds_checks=bounds_checks)
        self._jit_options = dict(cache_dir=cache_dir, use_cache=use_cache)
        self._variants: dict = {}
        self.lowered, self.jit, self._fn = self._variant("element")
        self.info = self.lowered.kernels[func.sym_name]
        self.threads = (os.cpu_count() or 1) if threads is None else max(1, int(threads))
        self.native_threads = native_threads
        self._par = (None, None)
        self.report = report
        self.n_outputs = int(func.attrs.get("returns", 0) or 0)
        self._plan = self._plan_params()

    def _variant(self, strides):
        """(lowered, jit, entry) for descriptors with ``strides`` units, compiled once."""
        hit = self._variants.get(strides)
        if hit is None:
            lowered = lower_module(self._module, strides=strides, **self._options)
            jit = JITModule(lowered.llvm, isa=lowered.isa, **self._jit_options)
            symbol = lowered.kernels[self.func.sym_name].symbol
            hit = (lowered, jit, jit.get(symbol, ctypes.c_int64, _KERNEL_ARGS))
            self._variants[strides] = hit
        return hit

    @property
    def isa(self) -> str:
        return self.lowered.isa

    def asm(self) -> str:
        return self.jit.asm()

    def llvm_ir(self) -> str:
        return str(self.lowered.llvm)

    # --- arguments -------------------------------------------------------------------
    def _plan_params(self):
        plan = []
        for k, (a, (off, _)) in enumerate(zip(self.func.args, self.info.slots)):
            t = a.type
            if isinstance(t, ShapedType):
                dims = tuple((axis, d) for axis, d in enumerate(t.shape) if d is not None)
                plan.append((k, True, isinstance(t, BufferType), t.dtype.np_dtype, t.rank,
                             dims, off))
            else:
                plan.append((k, False, False, t.np_dtype, 0, (), off))
        return plan

    def _fast_bind(self, args):
        """The parameter arrays for a plain call (positional numpy arguments), or None
        to let ``bind_arguments`` check the call and word the error."""
        n, total = len(args), len(self._plan)
        if n != total and (n != total - self.n_outputs or not self.n_outputs):
            return None
        symbols = {}
        arrays = []
        for k, shaped, buffer, dtype, rank, dims, _ in self._plan:
            if k >= n:
                shape = [symbols.get(d) if isinstance(d, str) else d for _, d in dims]
                if len(shape) != rank or None in shape:
                    return None
                arrays.append(np.zeros(shape, dtype))
                continue
            x = args[k]
            if type(x) is not np.ndarray or x.dtype != dtype or x.ndim != rank:
                if shaped or not isinstance(x, np.generic) or x.dtype != dtype:
                    return None
            if shaped:
                size = x.shape
                for axis, d in dims:
                    if (symbols.setdefault(d, size[axis]) if d.__class__ is str else d) \
                            != size[axis]:
                        return None
                if buffer and not x.flags.writeable:
                    return None
            arrays.append(x)
        return arrays

    def _pack(self, arrays):
        """The descriptor slots, the arrays to keep alive, and the stride unit."""
        plan = self._plan
        buffers = [x for p, x in zip(plan, arrays) if p[2]]
        shaped = []
        for p, x in zip(plan, arrays):
            if p[1]:
                if not p[2] and buffers and any(np.may_share_memory(x, w) for w in buffers):
                    x = x.copy()
                shaped.append(x)
        by_element = all(s % x.itemsize == 0 for x in shaped for s in x.strides)
        slots = [0] * max(1, self.info.n_slots)
        it = iter(shaped)
        for (_, is_shaped, _, _, rank, _, off), x in zip(plan, arrays):
            if is_shaped:
                x = next(it)
                slots[off] = x.ctypes.data
                slots[off + 1:off + 1 + rank] = x.shape
                if by_element:
                    size = x.itemsize
                    slots[off + 1 + rank:off + 1 + 2 * rank] = [s // size for s in x.strides]
                else:
                    slots[off + 1 + rank:off + 1 + 2 * rank] = x.strides
            else:
                bits = int(np.asarray(x).reshape(1).view(f"u{x.dtype.itemsize}")[0])
                slots[off] = bits - (1 << 64) * (bits >= 1 << 63)
        return (ctypes.c_int64 * len(slots))(*slots), shaped, \
            "element" if by_element else "byte"

    # --- calling ------------------------------------------------------------------
    def _parallel(self):
        pid, entry = self._par
        if pid != os.getpid():
            entry = None
            if self.info.bodies and self.threads > 1:
                entry = par_entry(self.threads, self.native_threads)
            self._par = (os.getpid(), entry)
        return entry

    def __call__(self, *args, **kwargs):
        arrays = None if kwargs else self._fast_bind(args)
        if arrays is None:
            arrays, _, outputs = bind_arguments(self.func, args, kwargs)
        slots, keep, unit = self._pack(arrays)
        lowered, _, fn = self._variants.get(unit) or self._variant(unit)
        err = (ctypes.c_int64 * ERR_SLOTS)()
        status = fn(slots, self._parallel(), err)
        del keep
        if status != 0:
            info = lowered.kernels[self.func.sym_name]
            raise error_for_status(status, list(err), info.checks, info.guards)
        n = len(self._plan)
        if len(args) + len(kwargs) == n or not self.n_outputs:
            return None
        out = arrays[n - self.n_outputs:]
        return out[0] if len(out) == 1 else tuple(out)


def compile_module(module, func_name: str | None = None, **options) -> CompiledKernel:
    """Compile one function of a loop-level module for the host CPU."""
    return CompiledKernel(module, func_name, **options)
