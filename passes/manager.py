"""The pass manager: runs named passes in order, verifies the module after each one,
prints or dumps the IR after the passes asked for, and times every pass.

    pm = PassManager([Canonicalize(), CSE(), DCE()], print_after="all")
    report = pm.run(module)          # mutates ``module`` in place

A pass is a small class with a ``name`` and a ``run(module) -> dict`` that returns
its statistics. It checks its own preconditions in ``check(module)`` and raises
``PassError`` (which names the pass) when the module is not at the level it needs.
"""
from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field

from ninfer_ir.errors import VerifyError
from ninfer_ir.ir import Module


class PassError(VerifyError):
    """A pass met IR it cannot handle (a precondition does not hold), or the IR a pass
    produced does not verify. The message starts with the pass's name."""

    def __init__(self, pass_name: str, message: str, op=None):
        self.pass_name = pass_name
        text = f"pass '{pass_name}': {message}"
        if op is not None:
            from ninfer_ir.printer import print_op
            text += f"\n  in: {print_op(op)}"
        super().__init__(text)
        self.op = op


class Pass:
    """Base class of every pass. Subclasses set ``name`` and implement ``run``."""

    name: str = "<pass>"

    def check(self, module: Module) -> None:
        """Raise ``self.error(...)`` when ``module`` does not meet the pass's preconditions."""

    def run(self, module: Module) -> dict:
        """Transform ``module`` in place; return statistics (name -> number or text)."""
        raise NotImplementedError

    def error(self, message: str, op=None) -> PassError:
        return PassError(self.name, message, op)

    def __repr__(self):
        return f"<pass {self.name}>"


@dataclass
class PassRecord:
    """One pass's run: its position (1-based), name, wall time and statistics."""
    index: int
    name: str
    seconds: float
    stats: dict = field(default_factory=dict)

    @property
    def stage(self) -> str:
        return f"{self.index:02d}-{self.name}"


@dataclass
class Report:
    """What a pipeline run measured."""
    passes: list = field(default_factory=list)
    #: function name -> PeakBytes (filled by the pipeline from the final module)
    peak_local_bytes: dict = field(default_factory=dict)
    #: per loop, the library kernel ``select`` chose or why none (``passes.select.Remark``)
    remarks: list = field(default_factory=list)

    @property
    def total_seconds(self) -> float:
        return sum(p.seconds for p in self.passes)

    def timings(self) -> dict:
        return {p.stage: p.seconds for p in self.passes}

    def to_dict(self) -> dict:
        return {
            "passes": [{"stage": p.stage, "name": p.name, "seconds": p.seconds,
                        "stats": dict(p.stats)} for p in self.passes],
            "total_seconds": self.total_seconds,
            "peak_local_bytes": {k: str(v) for k, v in self.peak_local_bytes.items()},
            "remarks": [str(r) for r in self.remarks],
        }


class PassManager:
    """Runs ``passes`` in order on a module.

    ``print_after``: ``None``, ``"all"`` or a collection of pass names; the IR after each
    selected pass is written to ``print_to`` (a stream with ``write``, or a callable taking
    ``(stage, text)``; default ``sys.stdout``), headed by a ``// IR after <stage>`` line
    (a comment in the IR grammar, so the output still parses).
    ``dump_dir``: when given, the input is written to ``00-input.nir`` and the IR after
    every pass to ``NN-<name>.nir`` in that folder.
    ``verify``: verify the module before the first pass and after every pass.
    """

    def __init__(self, passes, print_after=None, print_to=None, dump_dir=None,
                 verify: bool = True):
        self.passes = list(passes)
        for p in self.passes:
            if not isinstance(p, Pass):
                raise TypeError(f"not a pass: {p!r}")
        if print_after is None:
            self.print_after = frozenset()
        elif print_after == "all":
            self.print_after = "all"
        elif isinstance(print_after, str):
            self.print_after = frozenset([print_after])
        else:
            self.print_after = frozenset(print_after)
        if self.print_after != "all":
            known = {p.name for p in self.passes}
            unknown = sorted(set(self.print_after) - known)
            if unknown:
                raise ValueError(f"print_after names unknown pass(es) {', '.join(unknown)}; "
                                 f"the pipeline runs {', '.join(p.name for p in self.passes)}")
        self.print_to = print_to
        self.dump_dir = dump_dir
        self.verify = verify

    def run(self, module: Module) -> Report:
        report = Report()
        if self.verify:
            module.verify()
        if self.dump_dir is not None:
            os.makedirs(self.dump_dir, exist_ok=True)
            self._dump("00-input", str(module))
        for k, p in enumerate(self.passes, 1):
            p.check(module)
            t0 = time.perf_counter()
            stats = p.run(module) or {}
            seconds = time.perf_counter() - t0
            record = PassRecord(k, p.name, seconds, dict(stats))
            report.passes.append(record)
            if self.verify:
                try:
                    module.verify()
                except VerifyError as e:
                    raise PassError(p.name, f"produced IR that does not verify: {e.message}",
                                    e.op) from None
            text = None
            if self.print_after == "all" or p.name in self.print_after:
                text = str(module)
                self._emit(record.stage, text)
            if self.dump_dir is not None:
                self._dump(record.stage, text if text is not None else str(module))
        return report

    def _emit(self, stage: str, text: str) -> None:
        sink = self.print_to if self.print_to is not None else sys.stdout
        if callable(sink) and not hasattr(sink, "write"):
            sink(stage, text)
        else:
            sink.write(f"// IR after {stage}\n{text}\n")

    def _dump(self, stage: str, text: str) -> None:
        with open(os.path.join(self.dump_dir, f"{stage}.nir"), "w", encoding="utf-8") as f:
            f.write(text)
