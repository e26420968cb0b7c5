"""``dce``: dead-code elimination.

Removes pure ops whose results are unused, and ``for``/``if`` ops whose results are
unused and whose regions hold only such ops. Effects (stores, copies, ``quantize_into``,
``check``, ``alloc``/``dealloc``) are never removed, and neither is a pure op that may
stop the kernel with an error (a ``quantize`` can raise a ``DomainError``, a ``load`` or
``subview`` whose index is not provably in range can fail): removing it would turn a
failing call into a succeeding one.
"""
from __future__ import annotations

from ninfer_ir import ops as O

from .analysis import may_fail
from .manager import Pass


def _removable(op) -> bool:
    if op.terminator or any(r.uses for r in op.results):
        return False
    if op.regions:
        if not isinstance(op, O.RegionOp):
            return False
        return not _inner_effects(op) and not may_fail(op)
    return op.pure and not may_fail(op)


def _inner_effects(op) -> bool:
    return any(o is not op and not o.pure and not o.terminator and not isinstance(o, O.RegionOp)
               for o in op.walk())


class DCE(Pass):
    name = "dce"

    def run(self, module):
        removed = 0
        for func in module.funcs:
            changed = True
            while changed:
                changed = False
                for op in reversed(list(func.walk())):
                    if op is func or op.parent is None:
                        continue
                    if _removable(op):
                        op.erase()
                        removed += 1
                        changed = True
        return {"removed": removed}
