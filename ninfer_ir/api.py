"""The compile driver behind ``I.interpret``, ``I.lower``, ``I.compile``, ``I.emit`` and
direct kernel calls (``call``).

The facade reaches the implementation packages (``frontend``, ``passes``,
``backends``) only here, lazily, so ``import ninfer_ir`` stays light and the
implementation packages can import the core without cycles.
"""
from __future__ import annotations

import numpy as np

from .errors import NinferError, TargetUnavailable
from .ir import Module

TARGETS = ("interp", "cpu", "cuda")
EMIT_KINDS = {"cpu": ("llvm", "asm"), "cuda": ("cuda", "ptx")}


def module_of(kernel) -> Module:
    """The IR Module of an ``@I.kernel`` (or a Module itself)."""
    if isinstance(kernel, Module):
        return kernel
    ir = getattr(kernel, "ir", None)
    if isinstance(ir, Module):
        return ir
    raise NinferError(f"expected an @I.kernel function or an IR Module, got {type(kernel).__name__}")


def _check_target(target: str) -> None:
    if target not in TARGETS:
        raise NinferError(f"unknown target {target!r}; use one of {', '.join(TARGETS)}")


def interpret(kernel, *args, counters=None, func_name=None, **kwargs):
    """Run a kernel on numpy arrays with the interpreter (the oracle)."""
    from ninfer_ir.backends.interp.interpreter import interpret as _interpret
    return _interpret(module_of(kernel), *args, func_name=func_name, counters=counters,
                      **kwargs)


def lower(kernel, target: str = "cpu", print_after=None, dump_dir=None, report=False):
    """The Module after the whole pass pipeline for ``target`` (the input is not changed).

    ``print_after``: ``"all"`` or a set of pass names whose output is printed;
    ``dump_dir``: a folder that receives every stage as a ``.nir`` file;
    ``report=True`` also returns the pipeline report (timings, peak local bytes).
    """
    _check_target(target)
    from ninfer_ir.passes.pipeline import lower as _lower
    module, rep = _lower(module_of(kernel), target=target if target != "interp" else "cpu",
                         print_after=print_after, dump_dir=dump_dir)
    return (module, rep) if report else module


def compile(kernel, target: str = "cpu", print_after=None, dump_dir=None, threads=None,
            cache_dir=None):
    """Compile for ``target`` ("interp" | "cpu" | "cuda") and return a callable kernel."""
    _check_target(target)
    module = module_of(kernel)
    if target == "interp":
        from ninfer_ir.backends.interp.interpreter import InterpretedKernel
        return InterpretedKernel(module)
    lowered, rep = lower(module, target, print_after=print_after, dump_dir=dump_dir, report=True)
    if target == "cpu":
        from ninfer_ir.backends.llvm.launcher import compile_module
        return compile_module(lowered, threads=threads, cache_dir=cache_dir, report=rep)
    from ninfer_ir.backends.cuda.runtime import gpu_available
    ok, why = gpu_available()
    if not ok:
        raise TargetUnavailable(f"target 'cuda' cannot run here: {why}")
    from ninfer_ir.backends.cuda.launcher import compile_module as _cuda_compile
    return _cuda_compile(lowered, report=rep)


def emit(kernel, target: str = "cpu", kind: str | None = None) -> str:
    """Source text for ``target``: ``llvm``/``asm`` (cpu) or ``cuda``/``ptx`` (cuda).

    Works without a GPU for every target."""
    if target not in EMIT_KINDS:
        raise NinferError(f"I.emit supports targets {', '.join(EMIT_KINDS)}, got {target!r}")
    kinds = EMIT_KINDS[target]
    kind = kind or kinds[0]
    if kind not in kinds:
        raise NinferError(f"target {target!r} emits {' or '.join(kinds)}, not {kind!r}")
    lowered = lower(kernel, target)
    if target == "cpu":
        from ninfer_ir.backends.llvm.codegen import emit as _emit
        return _emit(lowered, kind=kind)
    from ninfer_ir.backends.cuda.emitter import emit as _cuda_emit
    return _cuda_emit(lowered, kind=kind)


def _binder(target: str):
    """(is_array, writable, convert) of ``target``'s call binder."""
    if target == "cuda":
        from ninfer_ir.backends.cuda.launcher import _device_or_host_array, _is_array, _writable
        return _is_array, _writable, _device_or_host_array
    from ninfer_ir.backends.signature import host_array
    return (lambda v: isinstance(v, np.ndarray)), (lambda v: v.flags.writeable), host_array


def signature(func, values, shapes: bool = True) -> tuple | None:
    """The dispatch key of argument values: per parameter its dtype, and for an array
    its shape (when ``shapes``) and layout class: "contiguous" (C order), "strided"
    (any other view) or "device" (a device array). ``None`` when a value is not an
    array where the parameter is shaped (the call must be bound first)."""
    if len(values) != len(func.args):
        return None
    key = []
    for p, v in zip(func.args, values):
        dtype = getattr(p.type, "np_dtype", None)
        if dtype is not None:                          # a scalar parameter
            key.append((dtype.str,))
        elif v is None:                                # an output the call left out
            key.append(None)
        elif type(v) is np.ndarray:
            key.append((v.dtype.str, v.shape if shapes else None,
                        "contiguous" if v.flags.c_contiguous else "strided"))
        elif hasattr(v, "__cuda_array_interface__"):
            key.append((v.dtype.str, tuple(v.shape) if shapes else None, "device"))
        else:
            return None
    return tuple(key)


def call(kernel, args, kwargs):
    """``kernel(*args, **kwargs)`` on ``I.config.target``: compiled on first use for each
    argument signature (see ``Kernel.__call__``) and cached in ``kernel.overloads``."""
    from .config import config
    target, threads, specialize = config.target, config.threads, config.specialize
    if target == "interp":
        run = kernel.overloads.get("interp")
        if run is None:
            run = kernel.overloads["interp"] = compile(kernel, "interp")
        return run(*args, **kwargs)
    func = kernel.func
    if not kwargs:                                     # a plain call with arrays: no binding
        key = signature(func, args, specialize)
        run = kernel.overloads.get((target, threads, key)) if key is not None else None
        if run is not None:
            return run(*args)
    from ninfer_ir.backends.signature import bind_call
    values, symbols, outputs = bind_call(func, args, kwargs, *_binder(target))
    key = (target, threads, signature(func, values, specialize))
    run = kernel.overloads.get(key)
    if run is None:
        sizes = tuple(sorted((name, n) for name, (n, _) in symbols.items())) \
            if specialize else ()
        run = kernel.overloads[key] = _compiled(kernel, target, threads, sizes)
    return run(*values[:len(values) - len(outputs)])


def _compiled(kernel, target, threads, sizes):
    """The compiled kernel for ``sizes`` (one per target, threads and sizes: signatures
    differing only in layout share it)."""
    memo = kernel._compiled
    hit = memo.get((target, threads, sizes))
    if hit is None:
        hit = memo[(target, threads, sizes)] = compile(kernel.specialized(dict(sizes)), target,
                                                       threads=threads)
    return hit
