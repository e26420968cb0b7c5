"""A program fuzzer: random valid kernels run differentially, and hostile inputs.

    from ninfer_ir import fuzz
    summary = fuzz.run_programs(seed=0, count=50)      # generated / refused / passed / failed
    fuzz.check_program(fuzz.generate(7))               # one program: a diff.Result
    fuzz.fuzz_parse(seed=0, count=500)                 # mutated IR text into I.parse
    fuzz.fuzz_formats(seed=0, count=500)               # random operands into I.formats

``generate`` (``gen.py``) writes DSL source; ``check_program`` loads it from a real file,
makes arguments (``inputs.py``) and compares every variant with the interpreter
(``diff.py``); a failure is reduced to the fewest statements and smallest sizes that still
fail the same way. ``scripts/fuzz.py`` is the command line.
"""
from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import dataclass, field

from .diff import ISA_VARIANTS, VARIANTS, Refused, Result, compare, load_kernel
from .gen import EXCLUDED, Program, generate
from .hostile import fuzz_formats, fuzz_parse

__all__ = ["generate", "check_program", "run_programs", "fuzz_parse", "fuzz_formats",
           "Program", "Result", "Summary", "Failure", "EXCLUDED", "VARIANTS", "ISA_VARIANTS"]


@dataclass
class Failure:
    seed: int
    category: str
    detail: str
    source: str            # the reduced program
    sizes: dict
    arguments: dict        # name -> the argument the reduced program fails with


@dataclass
class Summary:
    generated: int = 0
    refused: int = 0
    passed: int = 0
    failed: int = 0
    failures: list = field(default_factory=list)
    refusals: list = field(default_factory=list)
    seconds: float = 0.0


class _Workdir:
    def __init__(self):
        self.path = tempfile.mkdtemp(prefix="ninfer_fuzz_")

    def close(self):
        shutil.rmtree(self.path, ignore_errors=True)


def _check(program: Program, keep, arguments: dict, variants, work: str) -> Result:
    source = program.source(keep)
    try:
        kernel = load_kernel(source, work)
    except Refused as e:
        return Result("refused", str(e), "refused")
    names = [p.name for p in program.param_list(keep)]
    return compare(program, kernel, [arguments[n] for n in names], variants, cache_dir=work,
                   keep=keep)


def check_program(program: Program, variants=VARIANTS, reduce: bool = True,
                  workdir: str | None = None):
    """(Result, Failure or None) for one program."""
    from .inputs import make_arguments
    work = _Workdir() if workdir is None else None
    path = workdir or work.path
    try:
        try:
            kernel = load_kernel(program.source(), path)
        except Refused as e:
            return Result("refused", str(e), "refused"), None
        arguments = make_arguments(program, kernel, program.seed)
        res = compare(program, kernel, [arguments[p.name] for p in program.param_list()],
                      variants, cache_dir=path)
        if res.status != "failed":
            return res, None
        keep = list(range(len(program.stmts)))
        if reduce:
            keep = _reduce(program, keep, arguments, variants, path, res.category)
        final = _check(program, keep, arguments, variants, path)
        if final.status != "failed":
            final, keep = res, list(range(len(program.stmts)))
        used = {p.name for p in program.param_list(keep)}
        return res, Failure(program.seed, final.category, final.detail, program.source(keep),
                            program.sizes, {k: v for k, v in arguments.items() if k in used})
    finally:
        if work is not None:
            work.close()


def _reduce(program, keep, arguments, variants, work, category) -> list:
    """Drop statements while the failure keeps its category."""
    changed = True
    while changed and len(keep) > 1:
        changed = False
        for k in list(keep):
            trial = [j for j in keep if j != k]
            if _check(program, trial, arguments, variants, work).category == category:
                keep, changed = trial, True
                break
    return keep


def run_programs(seed: int = 0, count: int | None = 100, seconds: float | None = None,
                 variants=VARIANTS, reduce: bool = True, progress=None,
                 known: bool = False) -> Summary:
    """Generate and check programs ``seed, seed + 1, ...`` until ``count`` or ``seconds``."""
    s = Summary()
    start = time.monotonic()
    work = _Workdir()
    try:
        k = 0
        while (count is None or k < count) and (seconds is None
                                                or time.monotonic() - start < seconds):
            program = generate(seed + k, known=known)
            res, failure = check_program(program, variants, reduce, workdir=work.path)
            s.generated += 1
            if res.status == "refused":
                s.refused += 1
                s.refusals.append((program.seed, res.detail))
            elif res.status == "passed":
                s.passed += 1
            else:
                s.failed += 1
                s.failures.append(failure)
            if progress is not None:
                progress(program, res, failure)
            k += 1
    finally:
        work.close()
    s.seconds = time.monotonic() - start
    return s
