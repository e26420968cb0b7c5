"""``dot`` and ``reduce`` on 1-D views and the two quantized ops, in their one-worker
forms (a target with cooperative forms overrides the emitter's hooks).

- float ``add``/``mul`` folds (``dot``, ``reduce``, the record sum of
  ``quantized_dot``) follow the op's ``order`` exactly (``folds.fold``); integer
  folds and ``min``/``max`` are associative and run left to right from the first
  element; an empty fold gives the interpreter's identity;
- ``quantized_dot`` calls the emitter's ``quantized_dot_fn`` (``nq_qdot_thread``:
  ``qkernels.nq_q4k_q8k_record`` per record pair, folded in the declared order);
- ``quantize_into`` quantizes record by record with the emitter's
  ``quantize_record_fn`` (``qkernels``'s block quantizer);
  the first failing record stops the worker with status ``record * 8 + reason``.
"""
from __future__ import annotations

from ninfer_ir import ops as O
from ninfer_ir.numerics.folds import fold_identity
from ninfer_ir.types import ScalarType, f32

from ninfer_ir.alias import is_alloc, root
from ninfer_ir.backends.abi import quantize_tag

from . import folds
from .memory import Reg, address, element
from .scalars import c_type

__all__ = ["LOWERINGS", "identity"]


def identity(e, kind: str, t: ScalarType) -> str:
    """The interpreter's value of an empty fold."""
    return e.lib.constant(t, fold_identity(kind, t))


def _order(op):
    return folds.order_args(op.order)


def _ordered(e, t, kind, n, element, order, result):
    """``result = fold of element(k) for k < n`` in ``order`` (float add/mul)."""
    state, prefix = folds.fold(e.lib, t, kind)
    chunk, tree = order
    f, k = e.fresh("nq_f"), e.fresh("nq_k")
    e.open("{")
    e.line(f"{state} {f};")
    e.line(f"{state}_start(&{f});")
    e.line(f"for (nq_i64 {k} = 0; {k} < {n}; ++{k}) "
           f"{prefix}_push(&{f}, {element(k)}, {chunk}, {tree});")
    e.line(f"{result} = {prefix}_finish(&{f}, {chunk}, {tree}, {identity(e, kind, t)});")
    e.close("}")


def _plain(e, t, kind, n, element, result):
    """Left-to-right fold from the first element (associative folds)."""
    combine = e.lib.binary(kind, t)
    k = e.fresh("nq_k")
    e.line(f"{result} = {n} > 0 ? {element('0')} : {identity(e, kind, t)};")
    e.line(f"for (nq_i64 {k} = 1; {k} < {n}; ++{k}) "
           f"{result} = {combine}({result}, {element(k)});")


def lower_dot(e, op):
    a, b = (e.value(v) for v in op.operands)
    t = a.dtype
    if a.sizes[0] != b.sizes[0]:
        e.guard(f"{a.sizes[0]} == {b.sizes[0]}", ("dot", op, 0), [a.sizes[0], b.sizes[0]])
    mul = e.lib.binary("mul", t)
    r = e.declare(c_type(t), op.result)
    _ordered(e, t, "add", a.sizes[0],
             lambda k: f"{mul}({element(e, a, [k])}, {element(e, b, [k])})", _order(op), r)
    return Reg(r, t)


def lower_reduce(e, op):
    x = e.value(op.source)
    if isinstance(x, Reg) or len(x.sizes) != 1:
        raise e.no_lowering(op, " on a view of rank other than 1 (the passes lower "
                                "multi-axis reductions to loops)")
    t, kind = x.dtype, op.attrs["kind"]
    r = e.declare(c_type(t), op.result)

    def item(k):
        return element(e, x, [k])
    if t.is_float and kind in ("add", "mul"):
        _ordered(e, t, kind, x.sizes[0], item, _order(op), r)
    else:
        _plain(e, t, kind, x.sizes[0], item, r)
    return Reg(r, t)


def records_guard(e, op, a, b, what):
    if a.sizes[0] != b.sizes[0]:
        e.guard(f"{a.sizes[0]} == {b.sizes[0]}", ("records", op, 0, what), [a.sizes[0], b.sizes[0]])


def lower_quantized_dot(e, op):
    lhs, rhs = (e.value(v) for v in op.operands)
    records_guard(e, op, lhs, rhs, "lhs and rhs")
    chunk, tree = _order(op)
    call = (f"{e.quantized_dot_fn(op)}({lhs.ptr}, {lhs.strides[0]}, {lhs.strides[1]}, "
            f"{rhs.ptr}, {rhs.strides[0]}, {rhs.strides[1]}, {lhs.sizes[0]}, {chunk}, {tree})")
    return Reg(e.let(op.result, call, "float"), f32)


def quantize_operands(e, op):
    """``(values, dst, base)`` of a ``quantize_into``; ``base`` (C text or None) is the
    record number of the first row (errors name ``base + r``)."""
    values, dst = e.value(op.values), e.value(op.dest)
    base = e.value(op.base) if op.base is not None else None
    return values, dst, base


def lower_quantize_into(e, op):
    """Quantize every record; a failure leaves a destination that is not a fresh
    ``alloc`` untouched, as in the interpreter: such a destination is written only after
    a first pass over all records (into one scratch record) found no domain error."""
    values, dst, base = quantize_operands(e, op)
    records_guard(e, op, values, dst, "values and destination")
    passes = (None, dst) if not is_alloc(root(op.dest)) else (dst,)
    for out in passes:
        r = e.fresh("nq_r")
        e.open(f"for (nq_i64 {r} = 0; {r} < {values.sizes[0]}; ++{r}) {{")
        quantize_records(e, op, values, out, r, base)
        e.close("}")


def quantize_records(e, op, values, dst, r, base=None):
    """Quantize record ``r`` into ``dst`` (None: into a scratch record, to check it);
    a failure stops the worker with ``(record + tag) * 8 + reason``
    (``backends/abi.py``: the tag names the quantize target)."""
    reason = e.fresh("nq_reason")
    record = r if base is None else f"({base} + {r})"
    tag = quantize_tag(op.target)
    if tag:
        record = f"({record} + (nq_i64){tag}LL)"
    if dst is None:
        scratch = e.fresh("nq_scratch")
        e.line(f"nq_u8 {scratch}[{op.target.record_bytes}];")
        out, stride = scratch, "1"
    else:
        out, stride = address(dst, [r]), dst.strides[1]
    e.line(f"const int {reason} = {e.quantize_record_fn(op)}({address(values, [r])}, "
           f"{values.strides[1]}, {out}, {stride});")
    e.line(f"if ({reason} != 0) {e.fail_stmt(f'{record} * 8 + {reason}')}")


LOWERINGS = {
    O.DotOp: lower_dot, O.ReduceOp: lower_reduce, O.QuantizedDotOp: lower_quantized_dot,
    O.QuantizeIntoOp: lower_quantize_into,
}
