"""``parallelize``: mark loop-level ``for`` loops whose iterations are independent as
``parallel = true``, so a backend may run them on many workers (the GPU's grid).

A loop (not already parallel, no carried values) qualifies when

* every op in it is a pure op, a ``store``, a ``check`` or structured control flow (no
  ``alloc``/``dealloc``/``copy``/``quantize_into``: those share memory between
  iterations);
* every ``store`` writes a function parameter or an ``alloc`` directly (not a view),
  all into one buffer, each with the loop's induction variable itself at one and the same
  index position, so two iterations never write the same element;
* nothing in the loop reads that buffer (or anything that may share its memory).

Results are unchanged: each iteration computes the same values whatever runs first. A
failing ``check`` still reports the lowest failing iteration (the backends' contract);
as everywhere, buffers are unspecified after a ``DomainError``.
"""
from __future__ import annotations

from ninfer_ir import ops as O
from ninfer_ir.ir import BlockArgument, FuncOp
from ninfer_ir.types import BufferType

from .analysis import may_alias
from .manager import Pass

_SHARED = (O.AllocOp, O.DeallocOp, O.CopyOp, O.QuantizeIntoOp, O.ReturnOp)


class Parallelize(Pass):
    name = "parallelize"

    def check(self, module):
        for op in module.walk():
            if isinstance(op, O.QuantizeOp):
                raise self.error("runs on loop-level IR, after 'lower'", op)

    def run(self, module):
        count = 0
        for func in module.funcs:
            count += self._region_ops(func.body.ops)
        return {"parallel": count}

    def _region_ops(self, ops) -> int:
        count = 0
        for op in ops:
            if isinstance(op, O.ForOp) and self._independent(op):
                op.attrs["parallel"] = True
                count += 1
                continue            # nested loops stay as they are inside a parallel one
            for region in op.regions:
                count += self._region_ops(region.block.ops)
        return count

    def _independent(self, loop) -> bool:
        if loop.parallel or loop.results or loop.inits:
            return False
        iv = loop.iv
        stores, inner = [], [o for o in loop.walk() if o is not loop]
        for o in inner:
            if isinstance(o, _SHARED):
                return False
            if isinstance(o, O.StoreOp):
                stores.append(o)
            elif not (o.pure or isinstance(o, (O.CheckOp, O.RegionOp, O.YieldOp))):
                return False
        if not stores:
            return False
        target = stores[0].dest
        if not _root_buffer(target):
            return False
        positions = {tuple(i for i, v in enumerate(s.indices) if v is iv) for s in stores}
        if any(s.dest is not target for s in stores) or len(positions) != 1 \
                or not next(iter(positions)):
            return False
        for o in inner:
            if isinstance(o, O.StoreOp):
                reads = [o.value, *o.indices]
            else:
                reads = o.operands
            for v in reads:
                if isinstance(v.type, BufferType) and may_alias(v, target):
                    return False
        return True


def _root_buffer(v) -> bool:
    if isinstance(v, BlockArgument):
        return isinstance(v.block.parent_op, FuncOp)
    return isinstance(v.op, O.AllocOp)
