"""``select``: which loops run as one call of a hand-written library kernel.

A loop that computes exactly what a kernel of ``ninfer_ir.ops_select.KERNELS``
computes is wrapped in ``kernel_call(params) {kernel = "..."}``, its region the loop
itself, so the choice is in the IR (``--print-after all`` shows it) and the loop stays
its meaning (the interpreter runs it; the CPU emitter runs it where the kernel's
run-time conditions fail). Each loop also gets a ``Remark``: the kernel it got, or
why none (``ninfer ir --remarks``, ``Report.remarks``).

What each kernel of the CPU library (``backends/llvm``) computes is
``ninfer_ir/library.py``, which the CPU emitter reads too. The CUDA target
has no library kernels (each ``quantized_dot`` is one warp-cooperative dot in its
declared order); its remarks say how the loop runs.
"""
from __future__ import annotations

from dataclasses import dataclass

from ninfer_ir import ops as O
from ninfer_ir.builder import region_with_block
from ninfer_ir.library import GemmEpilogueParts, Match, RowLoop, match_loop
from ninfer_ir.ops_select import KernelCallOp
from ninfer_ir.printer import Namer, print_func

from .manager import Pass

__all__ = ["SelectKernels", "Remark"]


@dataclass(frozen=True)
class Remark:
    """What ``select`` decided for one loop: ``kernel`` (None: no kernel) and why."""
    func: str
    loop: str                  # the induction variable as printed, e.g. "%n"
    loc: tuple | None          # (file, line, col) of the source loop, when known
    kernel: str | None
    reason: str

    def __str__(self):
        where = f"{self.loc[0]}:{self.loc[1]}: " if self.loc else ""
        head = f"{where}loop {self.loop} in @{self.func}"
        if self.kernel is None:
            return f"{head}: no kernel: {self.reason}"
        return f"{head}: kernel {self.kernel}: {self.reason}"


def _cuda_reason(loop) -> str:
    quantized = any(isinstance(op, (O.QuantizedDotOp, O.QuantizeIntoOp))
                    for op in loop.walk())
    how = ("a parallel loop: its iterations are spread over GPU threads"
           if loop.parallel else "runs its iterations in order")
    if quantized:
        how += "; each quantized op is one warp-cooperative op in its declared order"
    return f"the cuda target has no library kernels: {how}"


class SelectKernels(Pass):
    """Wrap each loop a library kernel of ``target`` computes in ``kernel_call``; keep a
    ``Remark`` per loop in ``self.remarks``."""
    name = "select"

    def __init__(self, target: str = "cpu"):
        if target not in ("cpu", "cuda"):
            raise ValueError(f"select: unknown target {target!r}; use 'cpu' or 'cuda'")
        self.target = target
        self.remarks: list[Remark] = []

    def run(self, module):
        self.remarks = []
        chosen = 0
        for func in module.funcs:
            namer = Namer()
            print_func(func, namer)
            for op in list(func.walk()):
                if not isinstance(op, O.ForOp) or isinstance(op.parent_op, KernelCallOp):
                    continue
                call = _enclosing_call(op)
                if call is not None:     # the inner loop of a nest that a kernel computes
                    self.remarks.append(Remark(
                        func.sym_name, namer.known(op.body.args[0]), getattr(op, "loc", None),
                        call.kernel, f"the inner loop of the nest of loop "
                                     f"{namer.known(call.loop.body.args[0])}, which the "
                                     f"kernel computes"))
                    continue
                found = match_loop(op, namer.known) if self.target == "cpu" else _cuda_reason(op)
                iv = namer.known(op.body.args[0])
                loc = getattr(op, "loc", None)
                if isinstance(found, Match):
                    _wrap(op, found)
                    chosen += 1
                    self.remarks.append(Remark(func.sym_name, iv, loc, found.kernel,
                                               _why(found)))
                else:
                    self.remarks.append(Remark(func.sym_name, iv, loc, None, found))
        return {"kernels": chosen, "loops": len(self.remarks)}


def _why(match: Match) -> str:
    if isinstance(match.parts, GemmEpilogueParts):
        dots = match.attrs["dots"]
        return (f"the GEMM kernel computes the {'dots' if dots > 1 else 'dot'} of the whole "
                f"nest into a staging block, then the loop's epilogue runs on it "
                f"(`{match.attrs['epilogue']}`)")
    if not isinstance(match.parts, RowLoop) or not match.parts.epilogue or match.parts.plain:
        return "the loop computes what the kernel computes"
    dots = len(match.parts.dots)
    return (f"the kernel computes the row{' dots' if dots > 1 else ' dot'} of each block "
            f"of rows, then the loop's epilogue runs on the block "
            f"(`{match.attrs['epilogue']}`)")


def _enclosing_call(op):
    """The ``kernel_call`` around ``op``, if any."""
    p = op.parent_op
    while p is not None and not isinstance(p, KernelCallOp):
        p = p.parent_op
    return p


def _wrap(loop, match: Match) -> None:
    block = loop.parent
    at = block.ops.index(loop)
    block.remove(loop)
    region, inner = region_with_block()
    call = KernelCallOp(match.params, [], {"kernel": match.kernel, **match.attrs}, [region])
    inner.append(loop)
    inner.append(O.YieldOp())
    block.insert(at, call)
