"""``materialize``: decide where every tensor value lives.

* A rank-0 tensor (the result of a ``dot``, ``quantized_dot`` or 1-D ``reduce``, or
  elementwise arithmetic on those) is a register value.
* A ``fused`` op's value is an expression evaluated inside its consumer (``fuse``).
* Parameters and ``subview``s of them are the caller's memory.
* A value the function returns is computed into an output buffer (``lower`` adds it
  as a trailing parameter).
* A value whose only use is a ``copy`` into a buffer is computed straight into that
  buffer when nothing in between touches the buffer and the op does not read it (the
  copy moves up to just after the op).
* Every other tensor result of rank >= 1 (elementwise, ``reduce``, ``quantize``) gets a
  buffer: ``%b = alloc(sizes)`` before the op and ``copy(%t, %b)`` right after it
  (``lower`` turns the pair into a loop nest, or ``quantize_into``, writing ``%b``),
  and ``dealloc(%b)`` after the op of the block that holds the value's last use
  (through views and fused expressions).

Reuse: a later temporary in the same block whose buffer type (dtype and shape, with
the same symbols or the same size values) equals that of a buffer whose value is dead
takes that buffer instead of a new one. Buffers with loop-invariant sizes in the body
of a sequential ``for`` are allocated once around the loop (never around a
``parallel`` loop, whose iterations would share them).

The statistics give, per function, the peak invocation-local bytes (``peak.py``).
"""
from __future__ import annotations

from ninfer_ir import ops as O
from ninfer_ir.builder import Builder
from ninfer_ir.types import BufferType, ShapedType, TensorType

from .analysis import (all_reads, ancestor_in, conflicts, defined_outside,
                       is_fused, reads, writes)
from .fuse import misplaced_fused_op, tensor_level_error
from .manager import Pass
from .peak import peak_bytes
from .shapes import Dims

_COMPUTE = (O.ElementwiseOp, O.ReduceOp, O.QuantizeOp)


def needs_buffer(op) -> bool:
    """A tensor result of rank >= 1 computed by an op (not a view, not fused)."""
    if not isinstance(op, _COMPUTE) or is_fused(op) or len(op.results) != 1:
        return False
    t = op.result.type
    return isinstance(t, TensorType) and t.rank >= 1


def returned(v) -> bool:
    return any(isinstance(u.op, O.ReturnOp) for u in v.uses)


def effective_users(v):
    """The ops where ``v``'s elements are read: views and fused ops are followed to
    their own users."""
    out = []
    for u in v.uses:
        op = u.op
        view = isinstance(op, O.SubviewOp)
        if view or is_fused(op):
            out.extend(effective_users(op.results[0]))
            if view and not op.results[0].uses:
                out.append(op)
        else:
            out.append(op)
    return out


class Materialize(Pass):
    name = "materialize"

    def __init__(self, reuse: bool = True, hoist_allocs: bool = True):
        self.reuse = reuse
        self.hoist_allocs = hoist_allocs

    def check(self, module):
        op = tensor_level_error(module)
        if op is not None:
            raise self.error(f"the module is already materialized (found '{op.name}')", op)
        op = misplaced_fused_op(module)
        if op is not None:
            raise self.error("an op marked fused is not right before its only consumer", op)
        for op in module.walk():
            if isinstance(op, O.RegionOp) and any(isinstance(r.type, ShapedType)
                                                for r in op.results):
                raise self.error(f"a tensor carried by '{op.name}' is not supported; carry "
                                 f"scalars, or write the tensor into a buffer", op)

    def run(self, module):
        stats = {"buffers": 0, "reused": 0, "in_place": 0, "hoisted": 0}
        self.peaks = {}
        for func in module.funcs:
            dims = Dims(func)
            blocks = [r.block for o in func.walk() for r in o.regions]
            for block in blocks:
                self._block(block, dims, stats)
            dims.finish()
            if self.hoist_allocs:
                stats["hoisted"] += _hoist_allocs(func)
            self.peaks[func.sym_name] = peak_bytes(func)
        for name, p in self.peaks.items():
            stats[f"peak_bytes[{name}]"] = str(p)
        return stats

    def _block(self, block, dims, stats) -> None:
        records = []
        for op in list(block.ops):
            if not needs_buffer(op) or returned(op.result):
                continue
            t = op.result
            copy = _copy_in_place(op)
            if copy is not None:
                block.remove(copy)
                block.insert(block.ops.index(op) + 1, copy)
                stats["in_place"] += 1
                continue
            b = Builder().before(_chain_start(op))
            sizes = [dims.value(b, t, axis) for axis, d in enumerate(t.type.shape)
                     if not isinstance(d, int)]
            buf_type = BufferType(t.type.dtype, t.type.shape)
            alloc = b.create("alloc", sizes, {}, result_types=[buf_type], names=[t.name_hint])
            copy = Builder().after(op).create("copy", [t, alloc.result], result_types=[])
            records.append((op, alloc, copy))
        if not records:
            return
        pos = {op: k for k, op in enumerate(block.ops)}
        live, free, last_of = [], [], {}
        for op, alloc, copy in records:
            start = pos[alloc]
            free += [a for end, a in live if end < start]
            live = [(end, a) for end, a in live if end >= start]
            users = effective_users(op.result) + [copy]
            end = max(pos[ancestor_in(block, u)] for u in users)
            mine = alloc
            if self.reuse:
                match = next((a for a in free if _same_size(a, alloc)), None)
                if match is not None:
                    free.remove(match)
                    copy.set_operand(1, match.result)
                    alloc.erase()
                    mine = match
                    stats["reused"] += 1
            if mine is alloc:
                stats["buffers"] += 1
            last_of[mine] = end
            live.append((end, mine))
        at = {k: op for op, k in pos.items()}
        for a, end in last_of.items():
            Builder().after(_computed_by(at[end])).create("dealloc", [a.result],
                                                          result_types=[])


def _computed_by(op):
    """The op that evaluates ``op``: the ``copy`` right after it that stores its value
    (``lower`` computes the value there), else ``op`` itself. A buffer that ``op`` reads
    last is freed after that copy, never between the two."""
    ops = op.parent.ops
    k = ops.index(op)
    if needs_buffer(op) and k + 1 < len(ops):
        nxt = ops[k + 1]
        if nxt.name == "copy" and nxt.operands[0] is op.result:
            return nxt
    return op


def _chain_start(op):
    """The first of the fused ops right before ``op`` (``op`` itself if there are none):
    a buffer for ``op`` is allocated before the chain that is evaluated with it."""
    ops = op.parent.ops
    k = ops.index(op)
    while k > 0 and is_fused(ops[k - 1]):
        k -= 1
    return ops[k]


def _chain_reads(op) -> list:
    """Buffers read by ``op`` and the fused ops that feed it."""
    out = list(reads(op))
    for v in op.operands:
        src = getattr(v, "op", None)
        if src is not None and is_fused(src):
            out += _chain_reads(src)
    return out


def _copy_in_place(op):
    """The ``copy`` that is the only use of ``op``'s value, when the value can be computed
    straight into its destination: the destination exists before ``op``, nothing between
    ``op`` and the copy touches memory it may share, and ``op`` reads none of it (an
    elementwise op may read the destination itself: element i is read before it is
    written)."""
    uses = op.result.uses
    if len(uses) != 1 or not isinstance(uses[0].op, O.CopyOp) or uses[0].index != 0:
        return None
    copy = uses[0].op
    block = op.parent
    if copy.parent is not block:
        return None
    dst = copy.dest
    ops = block.ops
    k, c = ops.index(op), ops.index(copy)
    owner = getattr(dst, "op", None)
    if owner is not None and owner.parent is block and ops.index(owner) > k:
        return None
    for o in ops[k + 1:c]:
        if conflicts(all_reads(o) + writes(o), [dst]):
            return None
    chain = _chain_reads(op)
    if isinstance(op, O.ElementwiseOp):
        chain = [r for r in chain if r is not dst]
    if conflicts(chain, [dst]):
        return None
    return copy


def _same_size(a, b) -> bool:
    if a.result.type is not b.result.type:
        return False
    return all(x is y for x, y in zip(a.operands, b.operands))


def _hoist_allocs(func) -> int:
    """Move an alloc/dealloc pair in the body of a sequential ``for`` around the loop
    when its sizes are defined outside the loop (repeatedly, outwards)."""
    moved = 0
    changed = True
    while changed:
        changed = False
        for op in list(func.walk()):
            if not isinstance(op, O.AllocOp) or op.parent is None:
                continue
            loop = op.parent.parent_op
            if not isinstance(loop, O.ForOp) or loop.parallel:
                continue
            body = op.parent
            deallocs = [u.op for u in op.result.uses if isinstance(u.op, O.DeallocOp)]
            if len(deallocs) != 1 or deallocs[0].parent is not body:
                continue
            sizes = [_size_op(v, loop) for v in op.sizes]
            if any(s is False for s in sizes):
                continue
            outer = loop.parent
            for s in sizes:
                if s is not None:
                    body.remove(s)
                    outer.insert(outer.ops.index(loop), s)
            body.remove(op)
            outer.insert(outer.ops.index(loop), op)
            body.remove(deallocs[0])
            outer.insert(outer.ops.index(loop) + 1, deallocs[0])
            moved += 1
            changed = True
    return moved


def _size_op(v, loop):
    """For a size ``v`` of an alloc in ``loop``'s body: None when ``v`` is defined outside
    the loop, the ``dim``/``constant`` op to move out with the alloc when its operands
    are, else False."""
    if defined_outside(v, loop):
        return None
    op = getattr(v, "op", None)
    if isinstance(op, (O.DimOp, O.ConstantOp)) and op.parent is loop.body \
            and all(defined_outside(x, loop) for x in op.operands) and len(v.uses) == 1:
        return op
    return False
