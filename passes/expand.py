"""``expand``: every op of an expanded family (``ninfer_ir.ops.ExpandedOp``: the ``math``
ops) becomes the ordinary ops of its algorithm.

The algorithms are those of the family's library (``ninfer_ir.mathlib`` for ``math``; the
interpreter runs the same ones on numpy arrays), emitted right before the op with the
library's ``expand``; the op's uses then read the expansion's result and the op is
erased. It runs after ``lower``, where every such op computes one scalar inside its loop,
so the expansion is scalar code that the later passes fold, share and hoist like any
other: straight-line, except where an algorithm has a common and a rare case (``sin`` and
``cos``: the short and the long argument reduction; ``rsqrt``: the exact midpoint test),
which is an ``if`` marked ``likely`` whose arms are pure (docs/ir.md).
"""
from __future__ import annotations

from ninfer_ir.builder import Builder
from ninfer_ir.ops import ExpandedOp
from ninfer_ir.types import ShapedType

from .manager import Pass


class Expand(Pass):
    name = "expand"

    def run(self, module):
        count = 0
        for op in [op for op in module.walk() if isinstance(op, ExpandedOp)]:
            t = op.operands[0].type
            dtype = t.dtype if isinstance(t, ShapedType) else t
            result = op.lib().expand(Builder().before(op), op.attrs["fn"], op.operands[0], dtype)
            op.result.replace_all_uses_with(result)
            op.erase()
            count += 1
        return {"expanded": count}
