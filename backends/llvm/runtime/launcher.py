"""Calling compiled CPU kernels: ``CompiledKernel(module, func_name=None, threads=None)``.

A call takes the same arguments as the interpreter and is checked by the same
``bind_arguments`` before anything runs (array kinds, dtypes with byte order,
ranks, static sizes, one size per symbol, writable buffers, scalars the dtype
holds exactly; a function whose ``returns`` attribute is k > 0 may be called
without its last k parameters, which are then allocated zeroed and returned). A call of
positional numpy arrays, numpy scalars of the parameters' dtypes and plain ints in the
range of integer parameters is checked by a shorter path with the same outcome. Strides are not restricted: negative and zero strides and views at
any byte offset are addressed as they are, with no alignment requirement. Calls
whose strides are all whole numbers of elements (nearly every numpy view) use
code compiled for element strides; any other call uses a second variant, compiled
on first need, that takes byte strides. A tensor parameter whose memory may overlap a buffer parameter is
copied first, so tensors are values and inputs are never written.

``bind(*args, **kwargs)`` checks and packs some arguments once and returns a callable
taking the others (``bound.py``): the cost of a call that repeats most of its
arguments.

The native call releases the GIL. Parallel loops run on ``threads`` threads
(default ``os.cpu_count()``; 1 runs them in the calling thread). A non-zero status
becomes the interpreter's error (``status.error_for_status``).
"""
from __future__ import annotations

import ctypes
import hashlib
import os
from functools import lru_cache
from pathlib import Path

import llvmlite.ir as ir
import numpy as np

from ninfer_ir import errors as errors_module
from ninfer_ir.errors import CompileError, NinferError, VerifyError
from ninfer_ir.ir import FuncOp, Module
from ninfer_ir.types import BufferType, ShapedType
from ninfer_ir.backends.interp.eager import bind_arguments
from ninfer_ir.backends.signature import shares_elements

from ninfer_ir.backends.llvm.gen.codegen import lower_module, slot_layout
from ninfer_ir.backends.llvm.runtime.bound import BoundKernel
from ninfer_ir.backends.llvm.runtime.descriptors import (element_strides, int_range,
                                                          scalar_bits, write_arrays)
from ninfer_ir.backends.llvm.runtime.jit import JITModule, host_target
from ninfer_ir.backends.abi import ERR_SLOTS, error_for_status
from ninfer_ir.backends.llvm.runtime.threads import check_threads, par_entry

__all__ = ["CompiledKernel", "compile_module"]

_KERNEL_ARGS = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
_KEY_VERSION = 1
_ERR_BLOCK = ctypes.c_int64 * ERR_SLOTS
_forks = 0                    # forks between the first process and this one


def _count_fork() -> None:
    global _forks
    _forks += 1


os.register_at_fork(after_in_child=_count_fork)


# The sources whose text decides the LLVM code emitted for a loop-level module: every
# module of this package and the IR core modules the emitter reads.
@lru_cache(maxsize=None)
def generator_digest() -> str:
    """sha256 over the source of the whole package (names and contents): any change to
    the compiler, the numerics or the runtime makes earlier cache entries unusable."""
    top = Path(errors_module.__file__).parent          # ninfer_ir/ (links to the rest)
    h = hashlib.sha256()
    files = sorted((Path(d, f).relative_to(top).as_posix(), Path(d, f))
                   for d, _, names in os.walk(top, followlinks=True) for f in names
                   if f.endswith(".py"))
    for name, path in files:
        data = path.read_bytes()
        h.update(f"{name}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


def _bodies_symbol(symbol: str) -> str:
    return f"{symbol}.bodies"


class _StoredInfo:
    """A ``KernelInfo`` for a kernel loaded from the object cache: the calling layout
    and body count at once, the check and guard tables (needed only to word an error)
    from a lowering run on first use."""

    def __init__(self, lowering, func, symbol, bodies):
        self.name = func.sym_name
        self.symbol = symbol
        self.func = func
        self.slots, self.n_slots = slot_layout(func)
        self.bodies = bodies
        self._lowering = lowering

    @property
    def checks(self):
        return self._lowering.kernels[self.name].checks

    @property
    def guards(self):
        return self._lowering.kernels[self.name].guards


class _Lowering:
    """The LLVM lowering of one function for one stride unit, run only when needed
    (an object-cache miss, the LLVM text asked for, or an error to word)."""

    def __init__(self, module, func, strides, isa, options):
        self._module, self._func, self.strides, self.isa = module, func, strides, isa
        self._options = options
        self._full = None
        self.info = None

    def _lower(self):
        if self._full is None:
            self._full = lower_module(self._module, strides=self.strides, **self._options)
        return self._full

    def build_for_jit(self):
        """The LLVM module to compile, with the body count exported beside the kernel."""
        lowered = lower_module(self._module, strides=self.strides, **self._options)
        info = lowered.kernels[self._func.sym_name]
        count = ir.GlobalVariable(lowered.llvm, ir.IntType(64), _bodies_symbol(info.symbol))
        count.initializer = ir.Constant(ir.IntType(64), info.bodies)
        count.global_constant = True
        self.info, self._full = info, lowered
        return lowered.llvm

    def info_from(self, jit):
        if self.info is None:
            symbol = f"nk.{self._func.sym_name}"
            addr = jit.global_address(_bodies_symbol(symbol))
            if addr:
                self.info = _StoredInfo(self, self._func, symbol,
                                        ctypes.c_int64.from_address(addr).value)
            else:
                self.info = self._lower().kernels[self._func.sym_name]
        return self.info

    @property
    def kernels(self):
        return self._lower().kernels

    @property
    def llvm(self):
        return self._lower().llvm


def _choose(module, func_name):
    if isinstance(module, str):
        from ninfer_ir.frontend.textual import parse
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
        threads = check_threads(threads)
        module, func = _choose(module, func_name)
        self.func = func
        self._module = Module([func]) if len(module.funcs) > 1 else module
        self._options = dict(isa=isa, bounds_checks=bounds_checks)
        self._jit_options = dict(cache_dir=cache_dir, use_cache=use_cache)
        self._variants: dict = {}
        self.lowered, self.jit, self._fn = self._variant("element")
        self.info = self.lowered.info
        self.threads = (os.cpu_count() or 1) if threads is None else threads
        self.native_threads = native_threads
        self._par = (-1, None)
        self.report = report
        self.n_outputs = int(func.attrs.get("returns", 0) or 0)
        self._plan = self._plan_params()
        shaped = [p for p in self._plan if p[1]]
        self._shaped_args = [p[0] for p in shaped]
        self._shaped_slots = [(p[6], p[4]) for p in shaped]
        self._scalars = [(p[0], p[6], scalar_bits(p[3])) for p in self._plan if not p[1]]
        self._int_ranges = {p[0]: int_range(p[3]) for p in self._plan if not p[1]}
        buffers = [u for u, p in enumerate(shaped) if p[2]]
        # (tensor, buffers it may overlap): such a tensor is copied before the call
        self._alias_pairs = [(t, buffers) for t, p in enumerate(shaped)
                             if not p[2] and buffers]
        self._slot_type = ctypes.c_int64 * max(1, self.info.n_slots)

    def _variant(self, strides):
        """(lowered, jit, entry) for descriptors with ``strides`` units, compiled once.

        The object cache is keyed on the loop-level IR text, the lowering options and
        the digest of the code generator's sources (the target is added by
        ``JITModule``), so a cache hit neither emits nor prints the LLVM module; the
        number of outlined parallel bodies travels in the object as the constant
        ``<symbol>.bodies``."""
        hit = self._variants.get(strides)
        if hit is None:
            self._module.verify()
            target = host_target(self._options["isa"])
            try:
                hit = self._build(strides, target)
            except NinferError:
                raise
            except Exception as e:  # a code generator bug: typed, naming the kernel
                raise CompileError(f"internal compiler error in the CPU backend while "
                                   f"compiling @{self.func.sym_name} ({target.isa}, "
                                   f"{strides} strides): {type(e).__name__}: {e}") from e
            self._variants[strides] = hit
        return hit

    def _build(self, strides, target):
        lowering = _Lowering(self._module, self.func, strides, target.isa, self._options)
        text = str(self._module)
        key = (f"ninfer_kernel/{_KEY_VERSION}/{generator_digest()}/"
               f"func={self.func.sym_name}/strides={strides}/"
               f"bounds_checks={bool(self._options['bounds_checks'])}\n{text}")
        jit = JITModule(lowering.build_for_jit, target=target, key_source=key,
                        **self._jit_options)
        info = lowering.info_from(jit)
        return lowering, jit, jit.get(info.symbol, ctypes.c_int64, _KERNEL_ARGS)

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
                if type(x) is int and not shaped:
                    bounds = self._int_ranges[k]
                    if bounds is None or not bounds[0] <= x <= bounds[1]:
                        return None
                elif shaped or not isinstance(x, np.generic) or x.dtype != dtype:
                    return None
            if shaped:
                size = x.shape
                for axis, d in dims:
                    if (symbols.setdefault(d, size[axis]) if d.__class__ is str else d) \
                            != size[axis]:
                        return None
                if buffer and not (x.flags.writeable and (x.flags.c_contiguous
                                                          or not shares_elements(x))):
                    return None
            arrays.append(x)
        return arrays

    def _pack(self, arrays):
        """The descriptor slots, the arrays to keep alive, and the stride unit."""
        xs = [arrays[k] for k in self._shaped_args]
        if self._alias_pairs:
            share = np.may_share_memory
            for t, bufs in self._alias_pairs:
                x = xs[t]
                for u in bufs:
                    if share(x, xs[u]):
                        xs[t] = x.copy()
                        break
        by_element = element_strides(xs)
        slots = self._slot_type()
        write_arrays(slots, zip(xs, self._shaped_slots), by_element)
        for k, off, bits in self._scalars:
            slots[off] = bits(arrays[k])
        return slots, xs, "element" if by_element else "byte"

    # --- calling ------------------------------------------------------------------
    def _parallel(self):
        """The ``par`` entry of this kernel's parallel loops (None for none), looked up
        again in a forked child (whose pool starts its own workers)."""
        forks, entry = self._par
        if forks != _forks:
            entry = None
            if self.info.bodies and self.threads > 1:
                entry = par_entry(self.threads, self.native_threads, **self._jit_options)
            self._par = (_forks, entry)
        return entry

    def bind(self, *args, **kwargs) -> BoundKernel:
        """The kernel with ``args`` (the first parameters) and ``kwargs`` (by name)
        checked and bound once; the returned ``BoundKernel`` takes the other parameters
        per call (``bound.py`` states the contract)."""
        return BoundKernel(self, args, kwargs)

    def __call__(self, *args, **kwargs):
        arrays = None if kwargs else self._fast_bind(args)
        if arrays is None:
            arrays, _, outputs = bind_arguments(self.func, args, kwargs)
        slots, keep, unit = self._pack(arrays)
        lowered, _, fn = self._variants.get(unit) or self._variant(unit)
        err = _ERR_BLOCK()
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
