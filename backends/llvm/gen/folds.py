"""Counted loops and ordered folds for the CPU emitter: ``dot`` and ``reduce`` on 1-D
views, and the cross-record sum of ``quantized_dot`` in a non-``seq`` order.

Every ``SumOrder`` is implemented, with exactly the interpreter's parenthesization:

- ``seq``: ``x0``, then ``acc = acc + x[k]`` (no initial accumulator: one element
  is returned as it is; none gives the identity);
- ``tree``: the adjacent-pair tree, computed in one pass with a stack of partial
  sums. After pushing element ``j``, the two top entries are merged
  ``trailing_zeros(j + 1)`` times (earlier + later); at the end the stack holds the
  sums of the binary decomposition of the length, largest first, and is folded
  from the top (``s0 + (s1 + (s2 + ...)))``), which is what carrying an odd last
  element up unchanged at every level gives;
- ``chunk<K>``: seq over each chunk, then the chunk sums by the top-level order.

Integer folds and ``min``/``max`` are associative and order-free; they use ``seq``.
"""
from __future__ import annotations

import llvmlite.ir as ir
import numpy as np

from ninfer_ir.numerics.folds import fold_identity
from ninfer_ir.sumorder import SumOrder
from ninfer_ir.types import ScalarType, f32

from ninfer_ir.backends.llvm.gen import scalars as S
from ninfer_ir.backends.llvm.gen.emitter import I64, Reg, carried_loop, i64c, no_lowering
from ninfer_ir.backends.llvm.gen.decoded import Decoded
from ninfer_ir.backends.llvm.gen.memory import load_element
from ninfer_ir.backends.llvm.gen.vfolds import unit_stride_loader, vector_fold
from ninfer_ir.backends.abi import Guard

__all__ = ["counted_loop", "fold_loop", "ordered_fold", "lower_dot", "lower_reduce"]

STACK_DEPTH = 64
STAGE = 64          # decoded elements per chunk of a staged dot


def fold_loop(e, k0, k1, inits, step):
    """``for k in [k0, k1)``: ``vals = step(k, vals)``; returns the final values."""
    return carried_loop(e.b, e.fn, k0, k1, inits, step)


def counted_loop(e, k0, k1, body):
    """``for k in [k0, k1): body(k)``."""
    def step(k, vals):
        body(k)
        return []
    fold_loop(e, k0, k1, [], step)


def seq_fold(e, lo, hi, elem, combine, identity):
    """``elem(lo)``, then ``acc = combine(acc, elem(k))``; ``identity`` when empty."""
    b = e.b
    pre = b.block
    first, merge = e.new_block("fold.first"), e.new_block("fold.end")
    b.cbranch(b.icmp_signed("<", lo, hi), first, merge)
    b.position_at_end(first)
    v0 = elem(lo)
    acc, = fold_loop(e, b.add(lo, i64c(1)), hi, [v0],
                     lambda k, vals: [combine(vals[0], elem(k))])
    last = b.block
    b.branch(merge)
    b.position_at_end(merge)
    out = b.phi(identity.type)
    out.add_incoming(identity, pre)
    out.add_incoming(acc, last)
    return out


def tree_fold(e, m, elem, combine, identity):
    """The adjacent-pair tree over ``elem(0..m)`` (see the module docstring)."""
    b = e.b
    ty = identity.type
    stack = e.entry_alloca(ir.ArrayType(ty, STACK_DEPTH))

    def at(sp):
        return b.gep(stack, [i64c(0), sp])

    def push(j, vals):
        sp, = vals
        v = elem(j)
        merges = S.intrinsic(b, "llvm.cttz.i64", I64, [b.add(j, i64c(1)),
                                                       ir.Constant(ir.IntType(1), 0)])

        def merge(t, mv):
            top = b.sub(mv[1], i64c(1))
            return [combine(b.load(at(top)), mv[0]), top]
        v, sp = fold_loop(e, i64c(0), merges, [v, sp], merge)
        b.store(v, at(sp))
        return [b.add(sp, i64c(1))]
    sp, = fold_loop(e, i64c(0), m, [i64c(0)], push)
    pre = b.block
    some, merge_bb = e.new_block("tree.some"), e.new_block("tree.end")
    b.cbranch(b.icmp_signed(">", sp, i64c(0)), some, merge_bb)
    b.position_at_end(some)
    top = b.load(at(b.sub(sp, i64c(1))))
    acc, = fold_loop(e, i64c(1), sp, [top],
                     lambda u, vals: [combine(b.load(at(b.sub(b.sub(sp, u), i64c(1)))),
                                              vals[0])])
    last = b.block
    b.branch(merge_bb)
    b.position_at_end(merge_bb)
    out = b.phi(ty)
    out.add_incoming(identity, pre)
    out.add_incoming(acc, last)
    return out


def ordered_fold(e, n, elem, combine, identity, order: SumOrder | None, loader=None,
                 neutral=None):
    """Fold ``elem(0..n)`` with ``combine`` in ``order`` (None: any order, seq used).

    ``loader`` (``vfolds.unit_stride_loader``) and ``neutral`` let a non-``seq`` order
    run on vector lanes (``vfolds.vector_fold``) when the operands have unit stride."""
    b = e.b
    if order is None or (order.chunk is None and not order.tree):
        return seq_fold(e, i64c(0), n, elem, combine, identity)
    if loader is not None:
        out = vector_fold(e, n, loader, elem, combine, identity, neutral, order,
                          lambda: ordered_fold(e, n, elem, combine, identity, order))
        if out is not None:
            return out
    top_elem, count = elem, n
    if order.chunk is not None:
        k = i64c(order.chunk)
        count = b.sdiv(b.add(n, i64c(order.chunk - 1)), k)

        def chunk_sum(j):
            lo = b.mul(j, k)
            hi = b.add(lo, k)
            hi = b.select(b.icmp_signed("<", n, hi), n, hi)
            return seq_fold(e, lo, hi, elem, combine, identity)
        top_elem = chunk_sum
    if order.tree:
        return tree_fold(e, count, top_elem, combine, identity)
    return seq_fold(e, i64c(0), count, top_elem, combine, identity)


def _identity(kind: str, t: ScalarType):
    value = fold_identity(kind, t)
    return S.constant(t, float(value) if t.is_float else int(value))


def _neutral(kind: str, t: ScalarType):
    """``u`` with ``u + x == x`` (``-0.0``) or ``u * x == x`` (``1.0``) for every float x."""
    return S.constant(t, -0.0 if kind == "add" else 1.0)


def _vector(e, op, v):
    x = e.value(v)
    if isinstance(x, Reg) or len(x.shape) != 1:
        raise no_lowering(op, " on anything but 1-D views (multi-axis reductions are "
                              "lowered to loops by the passes)")
    return x


def lower_dot(e, op):
    b = e.b
    x, y = _vector(e, op, op.operands[0]), _vector(e, op, op.operands[1])
    t = x.dtype
    e.guard(b.icmp_signed("==", x.shape[0], y.shape[0]), Guard("dot", op),
            [x.shape[0], y.shape[0]])
    order = SumOrder.parse(op.attrs.get("order", "seq"))
    if t is f32 and order.chunk is None and not order.tree and \
            (isinstance(x, Decoded) or isinstance(y, Decoded)):
        return Reg(_staged_seq_dot(e, x, y))

    def elem(k):
        return S.BINARY["mul"](b, t, load_element(b, x, [k]), load_element(b, y, [k]))
    def add(p, q):
        return S.BINARY["add"](b, t, p, q)
    loader = unit_stride_loader(e, [x, y], lambda p, q: S.BINARY["mul"](b, t, p, q))
    return Reg(ordered_fold(e, x.shape[0], elem, add, _identity("add", t), order, loader,
                            _neutral("add", t)))


def _staged_seq_dot(e, x, y):
    """The ``seq`` f32 dot of a decoded row: each chunk of ``STAGE`` elements is first
    decoded into a stack buffer (a loop that carries no value, which LLVM may
    vectorize), then its rounded products are added in order. The sum starts at -0.0,
    so the first addition gives the first product exactly; an empty dot is +0."""
    b = e.b
    n = x.shape[0]
    buf = e.entry_alloca(ir.ArrayType(ir.FloatType(), STAGE), align=64)
    dec = x if isinstance(x, Decoded) else y

    def slot(k, lo):
        return b.gep(buf, [i64c(0), b.sub(k, lo)])

    def chunk(j, vals):
        lo = b.mul(j, i64c(STAGE))
        hi = b.add(lo, i64c(STAGE))
        hi = b.select(b.icmp_signed("<", n, hi), n, hi)
        counted_loop(e, lo, hi, lambda k: b.store(dec.element(b, k), slot(k, lo)))

        def add(k, acc):
            w = b.load(slot(k, lo))
            pair = (w, load_element(b, y, [k])) if dec is x else (load_element(b, x, [k]), w)
            return [S.BINARY["add"](b, f32, acc[0], S.BINARY["mul"](b, f32, *pair))]
        return fold_loop(e, lo, hi, vals, add)
    chunks = b.sdiv(b.add(n, i64c(STAGE - 1)), i64c(STAGE))
    acc, = fold_loop(e, i64c(0), chunks, [S.constant(f32, -0.0)], chunk)
    return b.select(b.icmp_signed(">", n, i64c(0)), acc, S.constant(f32, 0.0))


def _float_minmax_fold(e, x, kind, t):
    """A float ``min``/``max`` fold, computed on integer keys: an element's bits with the
    magnitude bits flipped when the sign is set, read as a signed integer, are ordered as
    the floats are with -0 < +0 (``llvm.minimum``/``maximum`` order), so the fold is an
    integer ``smin``/``smax`` (order-free; LLVM vectorises it with one-cycle integer
    operations, where ``llvm.maximum`` on vectors is a chain of compares and blends).
    Alongside, the largest magnitude bits say whether some element is a NaN (above those
    of infinity): the result is then the canonical NaN when at least two elements were
    combined (the elementwise rule's NaN at every step); one element is returned as it
    is. An empty fold gives the identity, whose key starts the fold.

    Each partial result has one user (``llvm.smax``, not a compare and a select): once
    LLVM fully unrolls a static-length fold inside a loop, LoopVectorize's uniformity
    walk (``isUniformAcrossVFsAndUFs``, not memoized) visits a chain whose values feed
    two users in time exponential in its length."""
    b = e.b
    n = x.shape[0]
    it = ir.IntType(t.bits)
    magnitude = ir.Constant(it, (1 << (t.bits - 1)) - 1)
    infinity = b.bitcast(S.constant(t, float("inf")), it)

    def key(bits):                          # an involution: also maps a key back to bits
        return b.xor(bits, b.and_(b.ashr(bits, ir.Constant(it, t.bits - 1)), magnitude))

    pick = f"llvm.s{kind}.i{t.bits}"
    widest = f"llvm.umax.i{t.bits}"

    def step(k, vals):                      # intrinsics: each partial result has one user
        acc, mag = vals
        bits = b.bitcast(load_element(b, x, [k]), it)
        return [S.intrinsic(b, pick, it, [acc, key(bits)]),
                S.intrinsic(b, widest, it, [mag, b.and_(bits, magnitude)])]
    start = key(b.bitcast(_identity(kind, t), it))
    acc, mag = fold_loop(e, i64c(0), n, [start, ir.Constant(it, 0)], step)
    r = b.bitcast(key(acc), S.reg_type(t))
    pre = b.block
    nan_bb, end = e.new_block("minmax.nan"), e.new_block("minmax.end")
    b.cbranch(b.icmp_unsigned(">", mag, infinity), nan_bb, end)
    b.position_at_end(nan_bb)               # some element is a NaN, so n >= 1
    nan = b.select(b.icmp_signed(">", n, i64c(1)), S.float_nan(t),
                   load_element(b, x, [i64c(0)]))
    b.branch(end)
    b.position_at_end(end)
    out = b.phi(r.type)
    out.add_incoming(r, pre)
    out.add_incoming(nan, nan_bb)
    return out


def lower_reduce(e, op):
    b = e.b
    x = _vector(e, op, op.operands[0])
    t, kind = x.dtype, op.attrs["kind"]
    if t.bits == 16 and t.is_float and t.np_dtype == np.uint16:
        raise no_lowering(op, " on bf16 (cast to f32 to compute)")
    if t.is_float and kind in ("min", "max"):
        return Reg(_float_minmax_fold(e, x, kind, t))
    order = None
    if t.is_float and kind in ("add", "mul"):
        order = SumOrder.parse(op.attrs.get("order", "seq"))
    rule = S.BINARY[kind]
    loader = unit_stride_loader(e, [x], lambda v: v) if order is not None else None
    return Reg(ordered_fold(e, x.shape[0], lambda k: load_element(b, x, [k]),
                            lambda p, q: rule(b, t, p, q), _identity(kind, t), order, loader,
                            _neutral(kind, t) if order is not None else None))
