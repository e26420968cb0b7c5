"""The compile driver behind ``I.interpret``, ``I.lower``, ``I.compile``, ``I.emit`` and
direct kernel calls (``call``).

The facade reaches the implementation packages (``frontend``, ``passes``,
``backends``) only here, lazily, so ``import ninfer_ir`` stays light and the
implementation packages can import the core without cycles.
"""
from __future__ import annotations

import numpy as np

from . import targets as _targets
from .errors import NinferError, TargetUnavailable
from .ir import Module


def module_of(kernel) -> Module:
    """The IR Module of an ``@I.kernel`` (or a Module itself)."""
    if isinstance(kernel, Module):
        return kernel
    ir = getattr(kernel, "ir", None)
    if isinstance(ir, Module):
        return ir
    raise NinferError(f"expected an @I.kernel function or an IR Module, got {type(kernel).__name__}")


def interpret(kernel, *args, counters=None, func_name=None, **kwargs):
    """Run a kernel on numpy arrays with the interpreter (the oracle)."""
    from ninfer_ir.backends.interp.interpreter import interpret as _interpret
    return _interpret(module_of(kernel), *args, func_name=func_name, counters=counters,
                      **kwargs)


def lower(kernel, target: str = "cpu", print_after=None, dump_dir=None, report=False):
    """The Module after the whole pass pipeline for ``target`` (the input is not changed).

    ``print_after``: ``"all"`` or a set of pass names whose output is printed;
    ``dump_dir``: a folder that receives every stage as a ``.nir`` file;
    ``report=True`` also returns the pipeline report (timings, peak local bytes, and
    ``remarks``: per loop, the library kernel it runs as or why none).
    """
    row = _targets.get(target)
    from ninfer_ir.passes.pipeline import lower as _lower
    module, rep = _lower(module_of(kernel), target=row.pipeline or "cpu",
                         print_after=print_after, dump_dir=dump_dir)
    return (module, rep) if report else module


def compile(kernel, target: str = "cpu", print_after=None, dump_dir=None, threads=None,
            cache_dir=None):
    """Compile for ``target`` ("interp" | "cpu" | "cuda") and return a callable kernel."""
    row = _targets.get(target)
    module = module_of(kernel)
    build = _targets.resolve(row.compile)
    if row.pipeline is None:
        return build(module)
    lowered, rep = lower(module, target, print_after=print_after, dump_dir=dump_dir, report=True)
    if row.available is not None:
        ok, why = _targets.resolve(row.available)()
        if not ok:
            raise TargetUnavailable(f"target {target!r} cannot run here: {why}")
    options = {k: v for k, v in (("threads", threads), ("cache_dir", cache_dir))
               if k in row.options or v is not None}
    unknown = sorted(set(options) - set(row.options))
    if unknown:
        raise NinferError(f"target {target!r} takes no option {', '.join(unknown)}")
    return build(lowered, report=rep, **options)


def emit(kernel, target: str = "cpu", kind: str | None = None) -> str:
    """Source text for ``target``: ``llvm``/``asm`` (cpu) or ``cuda``/``ptx`` (cuda).

    Works without a GPU for every target."""
    row = _targets.get(target)
    kinds = row.emit_kinds
    if not kinds:
        raise NinferError(f"I.emit supports targets {', '.join(_targets.EMIT_TARGETS)}, "
                          f"got {target!r}")
    kind = kind or kinds[0]
    if kind not in kinds:
        raise NinferError(f"target {target!r} emits {' or '.join(kinds)}, not {kind!r}")
    return _targets.resolve(row.emit)(lower(kernel, target), kind=kind)


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
        options = {"threads": threads} if "threads" in _targets.get(target).options else {}
        hit = memo[(target, threads, sizes)] = compile(kernel.specialized(dict(sizes)), target,
                                                       **options)
    return hit
