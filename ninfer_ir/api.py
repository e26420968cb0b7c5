"""The compile driver behind ``I.interpret``, ``I.lower``, ``I.compile`` and ``I.emit``.

The facade reaches the implementation packages (``frontend``, ``passes``,
``backends``) only here, lazily, so ``import ninfer_ir`` stays light and the
implementation packages can import the core without cycles.
"""
from __future__ import annotations

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
    ``report=True`` also returns the pipeline report (timings, peak local bytes).
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
