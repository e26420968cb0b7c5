"""Loops whose body holds ``likely`` ifs (the math library's common-case arms, e.g. the
short argument reduction of ``sin``): the condition is decided for a block of
iterations at once.

A ``likely`` if's arms are pure scalar arithmetic (the verifier checks it), so its
result is the select of both arms, and LLVM's loop vectorizer, which turns every branch
of a loop body into selects, runs both arms for every vector. Instead, for each block
of ``BLOCK`` iterations::

    all = every likely if's condition holds on every iteration of the block
          (a loop of the conditions' backward slice alone: loads and arithmetic)
    if all:  the body, each likely if replaced by its then arm
    else:    the body, each likely if as both arms and a select

Each of the three loops is branch-free, so each is vectorized; the bits are the if's
by construction (where ``all`` holds, the select would pick the then arm everywhere).
The first loop reads what the body reads before the body runs, so a loop is taken this
way only when no store of its body may write memory that the slice loads (a read-only
input, or no alias: ``ninfer_ir.alias``), or when the only such stores write, after the
load, the very element the iteration loaded, indexed by the loop's own index
(``x[i] = sin(x[i])``), along an axis whose stride is not zero (checked at run time);
others keep the plain form.
"""
from __future__ import annotations

from dataclasses import dataclass

import llvmlite.ir as ir

from ninfer_ir import ops as O
from ninfer_ir.alias import is_input, may_alias
from ninfer_ir.ir import OpResult

from ninfer_ir.backends.llvm.gen import scalars as S
from ninfer_ir.backends.llvm.gen.emitter import View, carried_loop, i64c
from ninfer_ir.backends.llvm.gen.memory import element_ptr, load_element, lower_load

__all__ = ["BLOCK", "Plan", "plan", "emit"]

#: iterations per block whose conditions are decided together
BLOCK = 64


@dataclass(frozen=True)
class Plan:
    ifs: tuple          # the likely ifs at the top level of the body
    slice: tuple        # the body's ops that compute their conditions, in order
    own: tuple = ()     # (load, axis): loads of the element the iteration itself stores,
                        # whose axis (indexed by the loop's own index) needs a stride


def _slice_op(op) -> bool:
    """Ops the condition pass may run ahead of the body: loads and pure arithmetic."""
    if isinstance(op, O.LoadOp | O.ConstantOp):
        return True
    return (isinstance(op, O.ElementwiseOp) and not isinstance(op, O.ExpandedOp)
            and not (op.name in ("div", "rem") and not op.operands[-1].type.is_float))


def plan(loop) -> Plan | None:
    """How to block ``loop`` (a ``for`` without carried values), or None."""
    if loop.inits:
        return None
    body = loop.body
    ifs = tuple(op for op in body.ops if isinstance(op, O.IfOp) and op.likely)
    if not ifs:
        return None
    mine = set(body.ops)
    taken, work = set(), [i.cond for i in ifs]
    while work:
        v = work.pop()
        op = v.op if isinstance(v, OpResult) else None
        if op is None or op not in mine or op in taken:
            continue
        if not _slice_op(op):
            return None
        taken.add(op)
        work.extend(op.operands)
    own = []
    for load in (op for op in body.ops if op in taken and isinstance(op, O.LoadOp)):
        if is_input(load.source):
            continue
        writers = [inner for op in body.ops for inner in op.walk()
                   if any(may_alias(load.source, w) for w in inner.memory_writes())]
        if not writers:
            continue
        axis = _own_element(loop, body, load, writers)
        if axis is None:
            return None
        own.append((load, axis))
    return Plan(ifs, tuple(op for op in body.ops if op in taken), tuple(own))


def _own_element(loop, body, load, writers):
    """The axis by which every store that may write what ``load`` reads stores the very
    element ``load`` reads in the same iteration, after it (``x[i] = f(x[i])``): then no
    iteration writes what another one's condition reads, provided that axis has a
    stride (checked at run time). None when that is not so."""
    iv = loop.body.args[0]
    idx = list(load.indices)
    if iv not in idx:
        return None
    at = body.ops.index(load)
    for w in writers:
        if not (isinstance(w, O.StoreOp) and w.parent is body and w.dest is load.source
                and list(w.indices) == idx and body.ops.index(w) > at):
            return None
    return idx.index(iv)


def emit(e, loop, p: Plan, lb, step, k0, k1) -> None:
    """``for k in [k0, k1)`` of ``loop`` (iv = lb + k*step) in blocks, as above; where an
    element the loop stores in place has no stride, the plain loop."""
    b = e.b
    if not p.own:
        _blocks(e, loop, p, lb, step, k0, k1)
        return
    strided = ir.Constant(ir.IntType(1), 1)
    for load, axis in p.own:
        view = e.value(load.source)
        strided = b.and_(strided, b.icmp_signed("!=", view.strides[axis], i64c(0)))
    with b.if_else(strided) as (blocked, plain):
        with blocked:
            _blocks(e, loop, p, lb, step, k0, k1)
        with plain:
            e.loop(loop, lb, step, k0, k1, [], blocked=False)


def _blocks(e, loop, p: Plan, lb, step, k0, k1) -> None:
    b, fn = e.b, e.fn
    span = b.sub(k1, k0)
    nblocks = b.select(b.icmp_signed(">", span, i64c(0)),
                       b.sdiv(b.add(span, i64c(BLOCK - 1)), i64c(BLOCK)), i64c(0))
    iv_arg = loop.body.args[0]

    def block(j, _):
        kb = b.add(k0, b.mul(j, i64c(BLOCK)))
        end = b.add(kb, i64c(BLOCK))
        ke = b.select(b.icmp_signed("<", end, k1), end, k1)

        def test(k, acc):
            e.bind(iv_arg, b.add(lb, b.mul(k, step), name="iv"))
            all_ = acc[0]
            for op in p.slice:
                if isinstance(op, O.LoadOp):
                    value, inside = _test_load(e, op)
                    e.bind(op.result, value)
                    all_ = b.and_(all_, inside)
                else:
                    e.op(op)
            for i in p.ifs:
                all_ = b.and_(all_, e.value(i.cond))
            return [all_]

        all_, = carried_loop(b, fn, kb, ke, [ir.Constant(ir.IntType(1), 1)], test,
                             name="likely.test")
        saved = e.if_modes
        with b.if_else(all_) as (then, otherwise):
            with then:
                e.if_modes = dict.fromkeys(p.ifs, "then")
                e.loop(loop, lb, step, kb, ke, [], blocked=False)
            with otherwise:
                e.if_modes = {}
                e.loop(loop, lb, step, kb, ke, [], blocked=False)
        e.if_modes = saved
        return []

    carried_loop(b, fn, i64c(0), nblocks, [], block, name="likely.block")


def _test_load(e, op):
    """The load ``op`` in the condition pass: (value, i1 every index in range). No guard
    fails here: an index out of range reads a stack slot instead and makes the block
    take both arms, so the ordinary loop reports the error at its own iteration, after
    the stores of the iterations before it, as the loop in order does."""
    src = e.value(op.source)
    b = e.b
    if not isinstance(src, View):
        return lower_load(e, op), ir.Constant(ir.IntType(1), 1)
    idx = [e.value(v) for v in op.indices]
    unproven = [b.icmp_unsigned("<", i, n) for v, i, n in zip(op.indices, idx, src.shape)
                if not e.below(v, n)]
    if not unproven:
        return load_element(b, src, idx), ir.Constant(ir.IntType(1), 1)
    inside = unproven[0]
    for c in unproven[1:]:
        inside = b.and_(inside, c)
    ty = S.mem_type(src.dtype)
    spare = e.entry_alloca(ty)
    e.entry_b.store(ir.Constant(ty, None), spare)
    ptr = b.select(inside, element_ptr(b, src, idx), spare)
    return S.to_register(b, b.load(ptr, align=1), src.dtype), inside
