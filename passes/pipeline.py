"""The default pass pipeline and ``lower(module, target)``.

    module, report = lower(kernel_module, target="cpu", print_after="all")

Order (each pass checks its own preconditions; ``docs/passes.md`` walks the GEMV through
every stage):

 1. canonicalize  fold constants and exact identities, so later passes see plain values
 2. cse           one op per expression: two ``quantize`` of one input become one
 3. licm          hoist loop-invariant ops (a ``quantize`` written in the row loop)
 4. dce           drop what folding, merging and hoisting left unused
 5. fuse          mark single-consumer elementwise chains to be computed per element
 6. materialize   buffers, lifetimes and reuse for the values that need memory
 7. lower         loops, ``quantize_into``, output parameters, bounds checks
 8. expand        each ``math`` op (``I.exp`` …) becomes the ordinary ops of its algorithm
 9. canonicalize  fold the index arithmetic and one-trip loops lowering produced
10. cse           share the constants and ``dim``s of the loop nests
11. licm          hoist per-row invariants of the loop nests (the guard of a fold)
12. dce           drop the rest
13. parallelize   (cuda only) mark loops whose iterations are independent as parallel,
                  so the row loop of a GEMV written with ``I.range`` fills the grid
14. select        wrap each loop that a library kernel of the target computes in
                  ``kernel_call`` (the CPU's GEMV rows kernels), and note for every loop
                  which kernel it got or why none (``Report.remarks``)
"""
from __future__ import annotations

from ninfer_ir.errors import TargetUnavailable
from ninfer_ir.ir import FuncOp, Module
from ninfer_ir.targets import TARGETS

from .canonicalize import Canonicalize
from .cse import CSE
from .dce import DCE
from .expand import Expand
from .fuse import Fuse
from .licm import LICM
from .lower import Lower
from .manager import PassManager, Report
from .materialize import Materialize
from .parallelize import Parallelize
from .peak import peak_bytes
from .select import SelectKernels

PIPELINES = ("cpu", "cuda")


def default_passes(target: str = "cpu") -> list:
    """The pass list for ``target`` (a row of ``ninfer_ir.targets``, or a pipeline name);
    every target takes the same loop-level IR."""
    if target in TARGETS:
        target = TARGETS[target].pipeline or "cpu"
    if target not in PIPELINES:
        raise TargetUnavailable(f"unknown target {target!r}; use one of {', '.join(TARGETS)}")
    passes = [Canonicalize(), CSE(), LICM(), DCE(), Fuse(), Materialize(), Lower(),
              Expand(), Canonicalize(), CSE(), LICM(), DCE()]
    if target == "cuda":
        passes.append(Parallelize())
    passes.append(SelectKernels("cuda" if target == "cuda" else "cpu"))
    return passes


def lower(module, target: str = "cpu", print_after=None, dump_dir=None, print_to=None,
          passes=None) -> tuple[Module, Report]:
    """Run the pipeline for ``target`` on a copy of ``module``.

    ``print_after``: ``"all"`` or a collection of pass names whose output is printed to
    ``print_to`` (a stream or a ``(stage, text)`` callable; default stdout);
    ``dump_dir``: a folder that receives ``00-input.nir`` and one ``NN-<pass>.nir`` per
    stage; ``passes``: a pass list instead of ``default_passes(target)``.

    Returns the lowered module and a ``Report``: per-pass ``passes`` records (name,
    seconds, statistics), ``total_seconds``, ``peak_local_bytes`` (function name ->
    ``PeakBytes`` of the result) and ``remarks`` (the ``select`` pass's ``Remark`` per
    loop: the library kernel it got, or why none). The input module is not changed.
    """
    if isinstance(module, FuncOp):
        module = Module([module])
    if not isinstance(module, Module):
        raise TypeError(f"lower takes an IR Module, got {type(module).__name__}")
    work = module.clone()
    pm = PassManager(passes if passes is not None else default_passes(target),
                     print_after=print_after, print_to=print_to, dump_dir=dump_dir)
    report = pm.run(work)
    report.remarks = [r for p in pm.passes if isinstance(p, SelectKernels) for r in p.remarks]
    report.peak_local_bytes = {f.sym_name: peak_bytes(f) for f in work.funcs}
    return work, report
