"""Builders of loop-level code used by ``lower``: loop nests, elements of tensor
expressions, ordered folds and bounds checks."""
from __future__ import annotations

from ninfer_ir import ops as O
from ninfer_ir.numerics import semantics
from ninfer_ir.builder import Builder, region_with_block
from ninfer_ir.numerics import domain
from ninfer_ir.types import ScalarType, ShapedType, index

from .analysis import FUSED, bound_le, const_value, in_range, is_fused


def loop_nest(b: Builder, bounds, names=None):
    """Nested ``for`` loops from 0 to each bound (step 1) at ``b``; returns a builder in
    the innermost body (before its ``yield``) and the induction variables."""
    ivs = []
    if not bounds:
        return b, ivs
    c0 = b.constant(0, index, name="c0")
    c1 = b.constant(1, index, name="c1")
    for k, ub in enumerate(bounds):
        name = names[k] if names else f"i{k}"
        region, block = region_with_block([index], [name])
        b.create("for", [c0, ub, c1], {}, result_types=[], regions=[region])
        Builder().at_end(block).create("yield", [], result_types=[])
        ivs.append(block.args[0])
        b = Builder().before(block.ops[-1])
    return b, ivs


class Elements:
    """Scalar elements of tensor values, emitted where a loop needs them.

    ``scalars`` maps a rank-0 tensor to the scalar register that holds it. A value that
    is a parameter, a view or a buffer is read with ``load``; a ``fused`` op is rebuilt
    as the scalar op on its operands' elements. ``memo`` shares the elements one loop
    body emits for one index tuple.
    """

    def __init__(self, scalars: dict):
        self.scalars = scalars

    def elem(self, b: Builder, v, idx, memo: dict):
        if isinstance(v.type, ScalarType):
            return v
        if v in self.scalars:
            return self.scalars[v]
        if v in memo:
            return memo[v]
        op = getattr(v, "op", None)
        if op is not None and is_fused(op):
            r = self.expr(b, op, idx, memo)
        else:
            r = b.value("load", v, *idx, name=v.name_hint)
        memo[v] = r
        return r

    def expr(self, b: Builder, op, idx, memo: dict):
        """The scalar op computing element ``idx`` of elementwise ``op``'s result."""
        ins = []
        for o in op.operands:
            sub = idx if isinstance(o.type, ShapedType) and o.type.rank == len(idx) else ()
            ins.append(self.elem(b, o, sub, memo))
        attrs = {k: v for k, v in op.attrs.items() if k != FUSED}
        return b.create(op.name, ins, attrs, names=[op.results[0].name_hint]).result


def identity(kind: str, t: ScalarType):
    """The value of an empty fold (as the interpreter defines it)."""
    if kind == "add":
        return 0.0 if t.is_float else 0
    if kind == "mul":
        return 1.0 if t.is_float else 1
    if t.is_float:
        return float("inf") if kind == "min" else float("-inf")
    lo, hi = semantics.int_range(t)
    return hi if kind == "min" else lo


def fold_loop(b: Builder, kind: str, t: ScalarType, length, element, name=None):
    """A left-to-right fold of ``element(builder, k)`` for ``k`` in ``[0, length)``.

    The first element starts the accumulator (there is no initial value, so a single
    ``-0.0`` stays ``-0.0``); an empty range gives ``identity(kind, t)``. When the length
    is not a constant the fold sits in ``if (0 < length)``.
    """
    static = const_value(length)

    def body(bb: Builder):
        c0 = bb.constant(0, index, name="c0")
        c1 = bb.constant(1, index, name="c1")
        first = element(bb, c0)
        region, block = region_with_block([index, t], ["k", name or "acc"])
        loop = bb.create("for", [c1, length, c1, first], {}, regions=[region],
                         names=[name])
        inner = Builder().at_end(block)
        nxt = element(inner, block.args[0])
        acc = inner.create(kind, [block.args[1], nxt], {}, names=[name]).result
        inner.create("yield", [acc], result_types=[])
        return loop.results[0]

    if isinstance(static, int) and static >= 1:
        return body(b)
    if static == 0:
        return b.constant(identity(kind, t), t, name=name)
    c0 = b.constant(0, index, name="c0")
    cond = b.value("cmp", c0, length, pred="lt", name="nonempty")
    then_region, then_block = region_with_block()
    else_region, else_block = region_with_block()
    guard = b.create("if", [cond], {}, result_types=[t], regions=[then_region, else_region],
                     names=[name])
    tb = Builder().at_end(then_block)
    tb.create("yield", [body(tb)], result_types=[])
    eb = Builder().at_end(else_block)
    eb.create("yield", [eb.constant(identity(kind, t), t)], result_types=[])
    return guard.results[0]


def nonnegative(i) -> bool:
    """Provably ``i >= 0``: a constant, a ``dim``, or the induction variable of a loop that
    starts at a constant >= 0 and steps up."""
    c = const_value(i)
    if isinstance(c, int) and not isinstance(c, bool):
        return c >= 0
    op = getattr(i, "op", None)
    if op is not None:
        return isinstance(op, O.DimOp)
    loop = i.block.parent_op
    if not isinstance(loop, O.ForOp) or i.index != 0:
        return False
    lb, step = const_value(loop.lower), const_value(loop.step)
    return isinstance(lb, int) and lb >= 0 and isinstance(step, int) and step >= 1


def check_index(b: Builder, dims, op_name: str, shaped, axis: int, i) -> None:
    """``check(0 <= i < dim)`` unless it provably holds; the message carries ``i`` and
    ``dim`` as the interpreter's does."""
    if in_range(i, shaped, axis):
        return
    d = dims.value(b, shaped, axis)
    ok = b.value("cmp", i, d, pred="lt")
    if not nonnegative(i):
        c0 = b.constant(0, index, name="c0")
        ok = b.value("and", b.value("cmp", i, c0, pred="ge"), ok)
    message = domain.bad_index(op_name, "{0}", axis, "{1}").message
    b.create("check", [ok, i, d], {"message": message}, result_types=[])


def check_range(b: Builder, dims, shaped, axis: int, start, stop, step) -> None:
    """``check(0 <= start <= stop <= dim and step >= 1)`` unless it provably holds."""
    s0, s1, st = const_value(start), const_value(stop), const_value(step)
    d = shaped.type.shape[axis]
    if (isinstance(s0, int) and isinstance(s1, int) and isinstance(st, int)
            and 0 <= s0 <= s1 and st >= 1 and bound_le(stop, d)):
        return
    dv = dims.value(b, shaped, axis)
    conds = [b.value("cmp", start, stop, pred="le"), b.value("cmp", stop, dv, pred="le")]
    if not nonnegative(start):
        conds.insert(0, b.value("cmp", start, b.constant(0, index, name="c0"), pred="ge"))
    if not (isinstance(st, int) and st >= 1):
        conds.append(b.value("cmp", step, b.constant(1, index, name="c1"), pred="ge"))
    ok = conds[0]
    for c in conds[1:]:
        ok = b.value("and", ok, c)
    message = domain.bad_range("subview", "{0}", "{1}", "{2}", axis, "{3}").message
    b.create("check", [ok, start, stop, step, dv], {"message": message}, result_types=[])


def check_same_shape(b: Builder, dims, src, dst) -> None:
    """``check``, axis by axis, that ``src`` and ``dst`` have one shape at run time where
    their types do not show it; the message carries both shapes, as the interpreter's."""
    same = [da is not None and da == db for da, db in zip(src.type.shape, dst.type.shape)]
    if all(same):
        return
    rank = src.type.rank
    _check_sizes(b, [dims.value(b, src, a) for a in range(rank)],
                 [dims.value(b, dst, a) for a in range(rank)], same)


def check_records(b: Builder, dims, values, dst) -> None:
    """``check`` that ``quantize(values)`` (``[G, R]``) fits the records ``dst``, as the
    interpreter's ``copy`` of the records into ``dst`` does."""
    g, rec = values.type.shape[0], dst.type.shape[1]
    same = [g is not None and g == dst.type.shape[0], True]
    if all(same):
        return
    xs = [dims.value(b, values, 0), b.constant(rec, index)]
    _check_sizes(b, xs, [dims.value(b, dst, 0), dims.value(b, dst, 1)], same)


def _check_sizes(b: Builder, xs, ys, same) -> None:
    rank = len(xs)
    src = [f"{{{k}}}" for k in range(rank)]
    dst = [f"{{{rank + k}}}" for k in range(rank)]
    for axis, known in enumerate(same):
        if not known:
            ok = b.value("cmp", xs[axis], ys[axis], pred="eq")
            b.create("check", [ok, *xs, *ys],
                     {"message": domain.copy_size_message(src, dst, axis)}, result_types=[])
