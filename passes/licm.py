"""``licm``: loop-invariant code motion out of ``for`` loops.

A pure op without regions in a loop body is hoisted in front of the loop when each of
its operands is defined outside the loop (or by an op hoisted before it) and, if it
reads a buffer, nothing in the loop may write memory that buffer may share. Inner loops
are treated first, so an op climbs out of a loop nest one loop at a time.

Ops that may fail. Hoisting must not make a call fail that did not fail, nor change
which error a failing call reports. An op that may stop the kernel with an error (a
``quantize`` raises a ``DomainError`` on NaN, inf or overflow; a ``load`` or ``subview``
whose index is not provably in range) is therefore hoisted only when

* no op before it in the body that stays in the loop may fail (so in the first
  iteration it is the first op that can fail, and its operands and the memory it reads
  are the same before the loop as there), and
* the loop provably runs at least once (constant bounds, or an upper bound that is a
  static dimension); otherwise, when the step is a positive constant and ``guard`` is
  set (the default), the hoisted op and the loop are wrapped together in
  ``if (lb < ub)``, whose else region yields the loop's initial values. A loop whose trip
  count and step are unknown keeps such an op. Such a guarded group leaves as many
  enclosing loops as it can at once: an enclosing loop qualifies when it meets the same
  conditions, its bounds and those of the loops inside it are known outside it, and
  an iteration in which the inner loop runs zero times does nothing (its other ops are
  pure and cannot fail, and it yields its carried values unchanged). The guard then
  tests that every loop it left is non-empty, which is exactly when the op ran before,
  and the else region, which yields the initial values, is then exactly the nest.

Stores that come before the hoisted op in the body are not re-run before it: when a call
raises a ``DomainError`` the contents of its output buffers are unspecified.
"""
from __future__ import annotations

from ninfer_ir import ops as O
from ninfer_ir.builder import Builder, region_with_block
from ninfer_ir.ir import Operation

from .analysis import (conflicts, defined_outside, may_fail, positive_step, reads,
                       trip_at_least_one, writes)
from .manager import Pass


class LICM(Pass):
    name = "licm"

    def __init__(self, guard: bool = True):
        self.guard = guard

    def run(self, module):
        stats = {"hoisted": 0, "guarded": 0}
        for func in module.funcs:
            loops = [op for op in func.walk() if isinstance(op, O.ForOp)]
            for loop in reversed(loops):
                self._loop(loop, stats)
        return stats

    def _loop(self, loop: Operation, stats) -> None:
        body = loop.regions[0].block
        loop_writes = writes(loop)
        moved: set = set()
        free, guarded = [], []
        guarded_vals: set = set()
        blocked = False
        sure = trip_at_least_one(loop)
        can_guard = self.guard and positive_step(loop)
        for op in list(body.ops):
            if op.terminator:
                break
            ok = (op.pure and not op.regions
                  and all(v in moved or defined_outside(v, loop) for v in op.operands))
            if ok and reads(op) and conflicts(reads(op), loop_writes):
                ok = False
            fails = may_fail(op)
            needs_guard = any(v in guarded_vals for v in op.operands)
            if ok and fails:
                if blocked:
                    ok = False
                elif not sure:
                    if can_guard:
                        needs_guard = True
                    else:
                        ok = False
            if not ok:
                blocked = blocked or fails
                continue
            moved.update(op.results)
            if needs_guard and not sure:
                guarded.append(op)
                guarded_vals.update(op.results)
            else:
                free.append(op)
        for op in free:
            body.remove(op)
            loop.parent.insert(loop.parent.ops.index(loop), op)
        if guarded:
            target, conds = self._climb(loop, guarded, guarded_vals)
            _guard(target, guarded, conds)
            stats["guarded"] += len(guarded)
        stats["hoisted"] += len(free) + len(guarded)

    def _climb(self, loop, group, group_vals):
        """The outermost loop of the nest that ``group`` (ops that need a guard) can leave
        together, and the loops whose non-emptiness the guard must test."""
        target, conds = loop, [loop]
        while True:
            outer = target.parent_op
            if not isinstance(outer, O.ForOp) or target.parent is not outer.body:
                break
            if not all(v in group_vals or defined_outside(v, outer)
                       for op in group for v in op.operands):
                break
            if any(conflicts(reads(op), writes(outer)) for op in group):
                break
            if not all(defined_outside(v, outer) for c in conds for v in (c.lower, c.upper)):
                break
            if not _only_runs(outer, target):
                break
            outer_sure = trip_at_least_one(outer)
            if not outer_sure and not (self.guard and positive_step(outer)):
                break
            target = outer
            if not outer_sure:
                conds.append(outer)
        return target, conds


def _only_runs(outer: Operation, target: Operation) -> bool:
    """True when an iteration of ``outer`` in which ``target`` runs zero times does
    nothing: every other op of its body is pure and cannot fail, and the values it
    yields are its carried values passed through ``target`` unchanged."""
    body = outer.regions[0].block
    for op in body.ops[:-1]:
        if op is not target and (not op.pure or op.regions or may_fail(op)):
            return False
    carried = body.args[1:]
    for k, v in enumerate(body.ops[-1].operands):
        if v is carried[k]:
            continue
        if getattr(v, "op", None) is target and target.inits[v.index] is carried[k]:
            continue
        return False
    return True


def _guard(loop: Operation, ops: list, conds: list) -> None:
    """Wrap ``ops`` (moved out of a loop nested in ``loop``, or out of ``loop``) and
    ``loop`` in ``if (lb < ub and ...)`` over the loops of ``conds``."""
    b = Builder().before(loop)
    cond = None
    for c in conds:
        nonempty = b.value("cmp", c.lower, c.upper, pred="lt", name="nonempty")
        cond = nonempty if cond is None else b.value("and", cond, nonempty, name="nonempty")
    then_region, then_block = region_with_block()
    else_region, else_block = region_with_block()
    result_types = [r.type for r in loop.results]
    guard = b.create("if", [cond], {}, result_types=result_types,
                     regions=[then_region, else_region],
                     names=[r.name_hint for r in loop.results])
    outer = loop.parent
    outer.remove(loop)
    for op in ops:
        op.parent.remove(op)
        then_block.append(op)
    then_block.append(loop)
    for r, g in zip(loop.results, guard.results):
        r.replace_all_uses_with(g)
    Builder().at_end(then_block).create("yield", list(loop.results), result_types=[])
    Builder().at_end(else_block).create("yield", list(loop.inits), result_types=[])
