"""Which pass changed a kernel's bits: run the interpreter after every pass.

    result = bisect(kernel, random_inputs(kernel, seed=0))
    print(result)            # the first pass whose output computes other bits, or "none"

The pipeline (``default_passes(target)`` or the ``passes`` given) runs on a copy of
the kernel's Module; the IR after every pass is read back from its text and run by
the interpreter on its own copy of the arguments. Every written buffer and returned
value (a result that lowering turned into an output buffer comes back as a returned
value, so the stages compare alike) is compared with the unlowered kernel's,
bit for bit with NaN meeting any NaN (``ninfer_ir.testing.assert_same_bits``); a
``DomainError`` counts as an outcome, so a pass that makes a run fail or stop failing
is found too. A pass whose output does not verify is reported as the culprit with the
``PassError``.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass

from ninfer_ir.errors import DomainError
from ninfer_ir.ir import Module

from .manager import PassError, PassManager
from .pipeline import default_passes

__all__ = ["bisect", "Bisection"]


@dataclass
class Bisection:
    """The outcome: ``stage`` ("NN-name") and ``pass_name`` of the first pass that
    changed the outcome (``None`` when no pass did), ``before``/``after`` (the IR
    texts around it), ``problem`` (what differs, in words) and ``stages`` (how many
    stages were run)."""
    stage: str | None
    pass_name: str | None
    before: str
    after: str
    problem: str
    stages: int

    @property
    def found(self) -> bool:
        return self.stage is not None

    def diff(self) -> str:
        return "".join(difflib.unified_diff(
            self.before.splitlines(keepends=True), self.after.splitlines(keepends=True),
            fromfile="before", tofile=f"after {self.stage}"))

    def __str__(self):
        if not self.found:
            return f"no pass changed the bits ({self.stages} stages run in the interpreter)"
        return f"first pass that changes the bits: {self.stage} ({self.problem})"


def _outcome(module: Module, args):
    """(outputs, None) or (None, the DomainError's message) of interpreting ``module``."""
    from ninfer_ir.backends.interp.interpreter import interpret
    from ninfer_ir.testing import fresh_copy, outputs_of
    call_args = fresh_copy(args)
    try:
        returned = interpret(module, *call_args)
    except DomainError as e:
        return None, f"DomainError: {e}"
    return outputs_of(module.funcs[0], call_args, returned), None


def _problem(ref, got) -> str | None:
    from ninfer_ir.testing import differences
    (ref_out, ref_err), (out, err) = ref, got
    if ref_err or err:
        return None if ref_err == err else f"{err or 'no error'}, before: {ref_err or 'no error'}"
    problems = differences(out, ref_out)
    return "; ".join(problems) if problems else None


def bisect(kernel, args, target: str = "cpu", passes=None) -> Bisection:
    """Run ``kernel`` (an ``@I.kernel`` or a Module) on ``args`` in the interpreter after
    every pass of ``passes`` (default ``default_passes(target)``) and return the first
    pass whose IR computes other bits than the kernel's own IR."""
    from ninfer_ir import parse
    from ninfer_ir.api import module_of
    module = module_of(kernel)
    stages = []
    pm = PassManager(passes if passes is not None else default_passes(target),
                     print_after="all", print_to=lambda stage, text: stages.append((stage, text)))
    work = module.clone()
    source = str(module)
    ref = _outcome(module, args)
    try:
        pm.run(work)
        failure = None
    except PassError as e:
        failure = e
    before = source
    for stage, text in stages:
        problem = _problem(ref, _outcome(parse(text), args))
        if problem is not None:
            return Bisection(stage, stage.split("-", 1)[1], before, text, problem,
                             len(stages) + 1)
        before = text
    if failure is not None:
        k = len(stages) + 1
        return Bisection(f"{k:02d}-{failure.pass_name}", failure.pass_name, before, str(work),
                         f"PassError: {failure}", k + 1)
    return Bisection(None, None, before, before, "", len(stages) + 1)
