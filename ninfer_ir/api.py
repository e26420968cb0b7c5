"""The compile driver behind ``I.interpret``, ``I.lower``, ``I.compile`` and ``I.emit``.

The facade reaches the implementation packages (``frontend``, ``passes``,
``backends``) only here, lazily, so ``import ninfer_ir`` stays light and the
implementation packages can import the core without cycles.
"""
from __future__ import annotations

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
    """Compile for ``target`` ("interp" | "cpu" | "cuda") and return a callable kernel.

    ``threads``: a positive int, or None for all CPUs (cpu); ``cache_dir``: the object
    cache's directory (cpu; see docs/backends.md); a bad value is an ``OptionError``."""
    _check_target(target)
    from ninfer_ir.backends.llvm.threads import check_threads
    check_threads(threads)
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
