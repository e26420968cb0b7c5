"""The per-lane sums of the decode rows kernel in a declared ``SumOrder``.

Every lane sums its own row, so each order is computed vertically, lane by lane, with
exactly the interpreter's parenthesization:

* ``seq``: one running sum per lane from ``-0.0`` (``-0.0 + v`` is ``v``, so the first
  product is the first partial sum);
* ``chunk<C>``: a running chunk sum from ``-0.0``, added to the row's running sum
  (also from ``-0.0``) at every multiple of ``C`` and at the end;
* ``chunk<C>/tree``: the chunk sums go through the adjacent-pair tree computed with a
  stack, as ``folds.tree_fold`` does: after pushing chunk sum ``j`` the top two entries
  are merged ``trailing_zeros(j + 1)`` times (earlier + later); at the end the stack
  is folded from the top, ``s0 + (s1 + (s2 + ...))``.

Chunk boundaries fall at period starts (``C`` a multiple of the period's code count),
where the kernel calls ``boundary``; the code-by-code tail calls it for every code.
"""
from __future__ import annotations

import llvmlite.ir as ir

from ninfer_ir.sumorder import SumOrder

__all__ = ["RowSums", "order_tag"]

I64 = ir.IntType(64)
STACK_DEPTH = 64


def order_tag(order: SumOrder) -> str:
    """A symbol-name part for ``order``: ``seq``, ``chunk64``, ``chunk64tree``."""
    if order.chunk is None:
        return "seq"
    return f"chunk{order.chunk}" + ("tree" if order.tree else "")


def _i64(v):
    return ir.Constant(I64, v)


class RowSums:
    """The carried state of ``nvec`` vectors of lane sums (a flat list of values)."""

    def __init__(self, kb, order: SumOrder, nvec: int):
        self.kb, self.order, self.nvec = kb, order, nvec
        self.stack = None
        if order.tree:
            self.stack = kb.entry_alloca(ir.ArrayType(kb.vf, STACK_DEPTH * nvec))

    def start(self):
        zero = self.kb.cf(-0.0)
        if self.order.chunk is None:
            return [zero] * self.nvec
        if self.order.tree:
            return [zero] * self.nvec + [_i64(0), _i64(0)]      # chunk sums, sp, chunks
        return [zero] * (2 * self.nvec)                          # chunk sums, row sums

    def add(self, state, v, value):
        state = list(state)
        state[v] = self.kb.b.fadd(state[v], value)
        return state

    def boundary(self, state, k):
        """Before code ``k``: close the running chunk when ``k`` starts a new one."""
        if self.order.chunk is None:
            return state
        b = self.kb.b
        c = _i64(self.order.chunk)
        starts = b.and_(b.icmp_signed(">", k, _i64(0)),
                        b.icmp_signed("==", b.srem(k, c), _i64(0)))
        pre = b.block
        with b.if_then(starts):
            closed = self._close(state)
            closed_bb = b.block
        out = []
        for old, new in zip(state, closed):
            phi = b.phi(old.type)
            phi.add_incoming(old, pre)
            phi.add_incoming(new, closed_bb)
            out.append(phi)
        return out

    def finish(self, state):
        """The lane sums of every vector, the running chunk closed."""
        state = self._close(state)
        if not self.order.tree:
            return state[self.nvec:] if self.order.chunk is not None else state
        return self._fold(state[self.nvec])

    # chunk ends
    def _close(self, state):
        b, n, zero = self.kb.b, self.nvec, self.kb.cf(-0.0)
        if self.order.chunk is None:
            return state
        chunks = state[:n]
        if not self.order.tree:
            return [zero] * n + [b.fadd(acc, c) for acc, c in zip(state[n:], chunks)]
        sp, count = state[n], state[n + 1]
        merges = self.kb.intrinsic("llvm.cttz.i64", I64, [I64, ir.IntType(1)])
        times = b.call(merges, [b.add(count, _i64(1)), ir.Constant(ir.IntType(1), 0)])

        def merge(t, st):
            top = b.sub(st[n], _i64(1))
            return [b.fadd(b.load(self._at(top, v)), st[v]) for v in range(n)] + [top]
        st = self.kb.counted(_i64(0), times, chunks + [sp], merge, "merge")
        for v in range(n):
            b.store(st[v], self._at(st[n], v))
        return [zero] * n + [b.add(st[n], _i64(1)), b.add(count, _i64(1))]

    def _at(self, slot, v):
        b = self.kb.b
        index = b.add(b.mul(slot, _i64(self.nvec)), _i64(v))
        return b.gep(self.stack, [_i64(0), index])

    def _fold(self, sp):
        b, n = self.kb.b, self.nvec
        top = [b.load(self._at(b.sub(sp, _i64(1)), v)) for v in range(n)]

        def fold(u, acc):
            slot = b.sub(b.sub(sp, u), _i64(1))
            return [b.fadd(b.load(self._at(slot, v)), acc[v]) for v in range(n)]
        return self.kb.counted(_i64(1), sp, top, fold, "fold")
