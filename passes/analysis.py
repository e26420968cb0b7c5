"""Facts about ops that several passes share: which ops are elementwise, what memory an
op reads and writes, which ops may raise at run time, and when an index is provably in
range.

Memory model: ``ninfer_ir.alias`` (``root``, ``may_alias``). Tensor parameters are
read-only inputs: no op writes them.
"""
from __future__ import annotations

from ninfer_ir import ops as O
from ninfer_ir.alias import may_alias
from ninfer_ir.ir import BlockArgument, FuncOp, Operation, OpResult, Value
from ninfer_ir.types import BufferType, dims_equal, index

FUSED = "fused"


def defining_op(v: Value) -> Operation | None:
    return v.op if isinstance(v, OpResult) else None


def defined_by(v: Value, cls) -> Operation | None:
    """The op of class ``cls`` (or a tuple of classes) that defines ``v``, else None."""
    op = defining_op(v)
    return op if isinstance(op, cls) else None


def const_value(v: Value):
    """The Python value of a ``constant`` result, else None."""
    op = defined_by(v, O.ConstantOp)
    return None if op is None else op.attrs.get("value")


def is_fused(op: Operation) -> bool:
    return op.attrs.get(FUSED) is True


# -- memory -----------------------------------------------------------------------

def reads(op: Operation) -> list[Value]:
    """Buffers whose elements ``op`` itself reads (not counting nested regions)."""
    return [v for v in op.memory_reads() if isinstance(v.type, BufferType)]


def writes(op: Operation) -> list[Value]:
    """Buffers ``op`` (or any op nested in it) may write; ``dealloc`` counts as a write."""
    out = []
    for o in op.walk():
        out.extend(o.memory_writes())
    return out


def all_reads(op: Operation) -> list[Value]:
    out = []
    for o in op.walk():
        out.extend(reads(o))
    return out


def conflicts(read_bufs, write_bufs) -> bool:
    return any(may_alias(r, w) for r in read_bufs for w in write_bufs)


# -- failure ----------------------------------------------------------------------

def may_fail(op: Operation) -> bool:
    """True when ``op`` (or an op nested in it) can stop the kernel with an error."""
    for o in op.walk():
        if isinstance(o, (O.QuantizeOp, O.QuantizeIntoOp, O.CheckOp)):
            return True
        if isinstance(o, O.IndexedOp) and not indices_proven(o):
            return True
        if isinstance(o, O.CopyOp) and not _same_shape(o.source.type, o.dest.type):
            return True
        if isinstance(o, O.ForOp) and not _nonzero_const(o.step):
            return True
    return False


def _nonzero_const(v) -> bool:
    c = const_value(v)
    return isinstance(c, int) and not isinstance(c, bool) and c != 0


def _same_shape(a, b) -> bool:
    return len(a.shape) == len(b.shape) and all(dims_equal(x, y) for x, y in zip(a.shape, b.shape))


def indexed(op: Operation):
    """``(shaped value, [(axis, index value)])`` for load/store/subview, else None."""
    if isinstance(op, O.IndexedOp):
        return op.source, op.index_pairs()
    return None


def indices_proven(op: Operation) -> bool:
    got = indexed(op)
    if got is None:
        return True
    if isinstance(op, O.SubviewOp) and op.has_ranges:
        return False
    src, pairs = got
    return all(in_range(i, src, axis) for axis, i in pairs)


def in_range(i: Value, shaped: Value, axis: int) -> bool:
    """Provably ``0 <= i < shaped.shape[axis]``."""
    d = shaped.type.shape[axis]
    c = const_value(i)
    if isinstance(c, int) and not isinstance(c, bool):
        return c >= 0 and isinstance(d, int) and c < d
    if isinstance(i, BlockArgument) and i.index == 0:
        loop = i.block.parent_op
        if not isinstance(loop, O.ForOp):
            return False
        lb, ub, step = const_value(loop.lower), loop.upper, const_value(loop.step)
        if not (isinstance(lb, int) and lb >= 0 and isinstance(step, int) and step >= 1):
            return False
        return bound_le(ub, d)
    return False


def bound_le(ub: Value, d) -> bool:
    """Provably ``ub <= d`` for an index value ``ub`` and a dimension ``d``."""
    c = const_value(ub)
    if isinstance(c, int) and not isinstance(c, bool):
        return isinstance(d, int) and c <= d
    op = defining_op(ub)
    if op is None:
        return False
    if isinstance(op, O.DimOp):
        src_dim = op.source.type.shape[op.axis]
        if dims_equal(src_dim, d):
            return True
        return src_dim is None and _alloc_dim_le(op.source, op.axis, d)
    if isinstance(op, O.MinOp) and op.result.type is index:
        return bound_le(op.lhs, d) or bound_le(op.rhs, d)
    return False


def _alloc_dim_le(buf: Value, axis: int, d) -> bool:
    a = defined_by(buf, O.AllocOp)
    if a is None:
        return False
    k = sum(1 for x in a.result.type.shape[:axis] if not isinstance(x, int))
    return bound_le(a.sizes[k], d)


# -- loops --------------------------------------------------------------------------

def trip_at_least_one(loop: O.ForOp) -> bool:
    lb, ub, step = (const_value(v) for v in (loop.lower, loop.upper, loop.step))
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in (lb, step)):
        return False
    if step < 1:
        return False
    if isinstance(ub, int) and not isinstance(ub, bool):
        return lb < ub
    op = defined_by(loop.upper, O.DimOp)
    if op is not None:
        d = op.source.type.shape[op.axis]
        return isinstance(d, int) and lb < d
    return False


def positive_step(loop: O.ForOp) -> bool:
    s = const_value(loop.step)
    return isinstance(s, int) and not isinstance(s, bool) and s >= 1


def defined_outside(v: Value, op: Operation) -> bool:
    """True when ``v`` is defined outside ``op`` (so it is available before ``op``)."""
    owner = v.op if isinstance(v, OpResult) else v.block.parent_op
    if isinstance(v, BlockArgument) and isinstance(owner, FuncOp):
        return True
    if isinstance(v, OpResult):
        return not op.is_ancestor_of(owner)
    return owner is not op and not op.is_ancestor_of(owner)


def ancestor_in(block, op: Operation) -> Operation | None:
    """The op of ``block`` that is ``op`` or contains it, else None."""
    while op is not None and op.parent is not block:
        op = op.parent_op
    return op


def next_op(op: Operation) -> Operation | None:
    """The op after ``op`` in its block, else None."""
    ops = op.parent.ops
    k = ops.index(op) + 1
    return ops[k] if k < len(ops) else None


def attached(op: Operation, func: FuncOp) -> bool:
    """``op`` is still inside ``func`` (not in an erased or detached op)."""
    while op is not None and op is not func:
        if op.parent is None:
            return False
        op = op.parent.parent_op
    return op is func
