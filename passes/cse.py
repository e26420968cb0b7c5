"""``cse``: common-subexpression elimination over pure ops without regions.

Two ops are the same expression when they have the same name, the same operand values,
the same attributes and the same result types; the later one is replaced by the earlier
one when the earlier one dominates it (same block, or an enclosing block). An op that
reads a buffer is only merged with one that reads the same memory state: every op that
may write memory starts a new memory epoch, and so does entering a loop body that
writes memory (the body runs again after its own writes). Two ``quantize`` ops of the
same values become one, so the records are prepared once for every consumer. A
``check`` of a condition that an earlier, dominating ``check`` already tested is removed.
"""
from __future__ import annotations

from ninfer_ir import ops as O
from ninfer_ir.printer import format_attr

from .analysis import reads, writes
from .manager import Pass


def _key(op, epoch):
    attrs = tuple(sorted((k, format_attr(v)) for k, v in op.attrs.items()))
    mem = epoch if reads(op) else None
    return (op.name, tuple(id(v) for v in op.operands), attrs,
            tuple(str(r.type) for r in op.results), mem)


class CSE(Pass):
    name = "cse"

    def run(self, module):
        self.merged = 0
        self.counter = 0
        self.epoch = 0
        for func in module.funcs:
            self._block(func.body, [{}])
        return {"merged": self.merged}

    def _bump(self):
        self.counter += 1
        self.epoch = self.counter

    def _lookup(self, scopes, key):
        for table in reversed(scopes):
            hit = table.get(key)
            if hit is not None:
                return hit
        return None

    def _block(self, block, scopes):
        for op in list(block.ops):
            if op.regions:
                entry_epoch = self.epoch
                for region in op.regions:
                    if isinstance(op, O.ForOp) and writes(op):
                        self._bump()
                    else:
                        self.epoch = entry_epoch
                    self._block(region.block, scopes + [{}])
                if writes(op):
                    self._bump()
                else:
                    self.epoch = entry_epoch
                continue
            if isinstance(op, O.CheckOp):
                key = ("check", id(op.cond))
                if self._lookup(scopes, key) is not None:
                    op.erase()
                    self.merged += 1
                else:
                    scopes[-1][key] = op
                continue
            if not op.pure or op.terminator:
                if writes(op):
                    self._bump()
                continue
            key = _key(op, self.epoch)
            hit = self._lookup(scopes, key)
            if hit is not None:
                for old, new in zip(op.results, hit.results):
                    old.replace_all_uses_with(new)
                op.erase()
                self.merged += 1
            else:
                scopes[-1][key] = op
