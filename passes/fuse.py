"""``fuse``: chains of elementwise ops are computed per element inside their consumer.

An elementwise op (``add`` … ``shr``, ``neg``, ``abs``, ``not``, ``cmp``, ``select``,
``cast``, ``bitcast``) with a tensor result of rank >= 1 is fused into its consumer when

* its result has exactly one use, by an op in the same block, and that consumer reads
  elements one at a time: another elementwise op, a ``load``, the source of a ``copy``,
  a ``dot``, or a ``reduce`` (a float ``add``/``mul`` fold only in the ``seq`` order,
  which a loop evaluates exactly; integer folds and ``min``/``max`` in any order);
* no op between it and the point where the chain is evaluated may write memory it
  reads (a load after a store to the same buffer stays after it), and, for a ``copy``,
  it reads no buffer that may share memory with the destination other than the
  destination itself (element i is read before element i is written).

A fused op is marked ``fused = true`` and moved to just before its consumer; it gets no
buffer (``materialize``) and ``lower`` emits it as scalar ops in the consumer's loop,
so an explicitly decoded f32 weight row that feeds a ``dot`` is never stored.

Only elementwise ops are fused, and only into a single consumer: a ``quantize`` is never
fused or duplicated, so records shared by several consumers are prepared once. A chain
feeding a ``quantize`` is fused into its input reads: ``lower`` computes one record's
values (256 for Q8_K, 32 for Q8_0) at a time into a fixed staging row and quantizes it with
``quantize_into(row, dst[g], g)``, whose record base keeps the ``DomainError``'s record
number that of the whole quantization.
"""
from __future__ import annotations

from ninfer_ir import ops as O
from ninfer_ir.types import TensorType

from .analysis import FUSED, conflicts, is_fused, reads, writes
from .manager import Pass


def tensor_level_error(module):
    """The first op that only exists after ``materialize``, else None."""
    for op in module.walk():
        if isinstance(op, (O.AllocOp, O.DeallocOp, O.QuantizeIntoOp)):
            return op
    return None


def in_place_ok(op, dst) -> bool:
    """Can elementwise ``op`` be computed straight into ``dst``? Element i of every
    operand is read before element i of ``dst`` is written, so an operand that is ``dst``
    itself is fine; any other buffer that may share memory with it is not."""
    return not conflicts([r for r in reads(op) if r is not dst], [dst])


def _candidate(op) -> bool:
    if not isinstance(op, O.ElementwiseOp) or len(op.results) != 1 or is_fused(op):
        return False
    t = op.result.type
    return isinstance(t, TensorType) and t.rank >= 1 and len(op.result.uses) == 1


def _order_free(op: O.ReduceOp) -> bool:
    t = op.source.type.dtype
    if not t.is_float or op.kind in ("min", "max"):
        return True
    return op.order.is_seq


def accepts(user, index: int) -> bool:
    """Can ``user`` read operand ``index`` as an expression evaluated per element?"""
    if isinstance(user, O.ElementwiseOp):
        t = user.results[0].type
        return isinstance(t, TensorType) and t.rank >= 1
    if isinstance(user, (O.LoadOp, O.CopyOp, O.QuantizeOp)):
        return index == 0
    if isinstance(user, O.DotOp):
        return user.order.is_seq
    if isinstance(user, O.ReduceOp):
        return _order_free(user)
    return False


def misplaced_fused_op(module):
    """The first op marked ``fused`` that is not where ``fuse`` puts one (exactly one use,
    by a consumer that reads it per element, in the same block, with only fused ops in
    between), else None."""
    for op in module.walk():
        if not is_fused(op):
            continue
        if not isinstance(op, O.ElementwiseOp) or len(op.results) != 1 \
                or len(op.result.uses) != 1:
            return op
        use = op.result.uses[0]
        user = use.op
        if user.parent is not op.parent or not accepts(user, use.index):
            return op
        ops = op.parent.ops
        if not all(is_fused(o) for o in ops[ops.index(op) + 1:ops.index(user)]):
            return op
    return None


class Fuse(Pass):
    name = "fuse"

    def check(self, module):
        op = tensor_level_error(module)
        if op is not None:
            raise self.error("runs on tensor-level IR, before 'materialize'; found "
                             f"'{op.name}'", op)

    def run(self, module):
        count = 0
        for func in module.funcs:
            blocks = [r.block for o in func.walk() for r in o.regions]
            for block in blocks:
                count += self._block(block)
        return {"fused": count}

    def _block(self, block) -> int:
        pos = {op: k for k, op in enumerate(block.ops)}
        root_of = {}
        chosen = []
        for op in reversed(block.ops):
            if not _candidate(op):
                continue
            use = op.result.uses[0]
            user = use.op
            if user.parent is not block or not accepts(user, use.index):
                continue
            root = root_of.get(user, user)
            if isinstance(root, O.CopyOp) and not in_place_ok(op, root.dest):
                continue
            between = block.ops[pos[op] + 1:pos[root]]
            written = [w for o in between for w in writes(o)]
            if conflicts(reads(op), written):
                continue
            root_of[op] = root
            chosen.append(op)
        for op in chosen:
            op.attrs[FUSED] = True
            user = op.result.uses[0].op
            block.remove(op)
            block.insert(block.ops.index(user), op)
        return len(chosen)
