"""The loop-level IR contract of ``docs/ir.md``, as a check: ``loop_level_problems``
lists every place where a module is not yet what the backends consume."""
from __future__ import annotations

from ninfer_ir import ops as O
from ninfer_ir.ir import BlockArgument, FuncOp
from ninfer_ir.types import ShapedType

from .analysis import FUSED, next_op

_TENSOR_OPS = (O.QuantizeOp, O.CopyOp)


def _shaped_ok(v) -> str | None:
    if isinstance(v, BlockArgument):
        return None if isinstance(v.block.parent_op, FuncOp) else "a shaped block argument"
    op = v.op
    if isinstance(op, (O.AllocOp, O.SubviewOp, O.DecodeOp,     # a decode row is lazy: read
                       O.ConstantTensorOp)):
        return None
    if isinstance(op, O.ContractionOp):
        if v.type.rank != 0:
            return f"'{op.name}' gives a tensor of rank {v.type.rank}"
        nxt = next_op(op)
        if not isinstance(nxt, O.LoadOp) or nxt.source is not v or len(v.uses) != 1:
            return f"the rank-0 result of '{op.name}' is not loaded right after it (and only there)"
        return None
    return f"'{op.name}' computes a whole tensor"


def loop_level_problems(module) -> list[str]:
    """Human-readable problems; an empty list means the module is loop-level IR."""
    out = []
    for func in module.funcs:
        where = f"@{func.sym_name}"
        if func.result_types:
            out.append(f"{where} still returns values instead of writing output buffers")
        for op in func.walk():
            if op is func:
                continue
            if isinstance(op, _TENSOR_OPS):
                out.append(f"{where}: '{op.name}' is a tensor-level op")
            if FUSED in op.attrs:
                out.append(f"{where}: '{op.name}' is still marked fused")
            if isinstance(op, (O.DotOp, O.ReduceOp)) and any(o.type.rank != 1 for o in op.operands):
                out.append(f"{where}: '{op.name}' does not read 1-D views")
            for r in op.results:
                if isinstance(r.type, ShapedType):
                    problem = _shaped_ok(r)
                    if problem:
                        out.append(f"{where}: {problem}")
            for region in op.regions:
                for a in region.block.args:
                    if isinstance(a.type, ShapedType):
                        out.append(f"{where}: '{op.name}' carries a tensor")
    return out
