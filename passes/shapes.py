"""Index values for dimensions, shared by ``materialize`` and ``lower``.

A static dimension is a constant. A symbol (``N``) is the ``dim`` of the first function
parameter that has it, created once at the top of the function, so that every loop
bound and allocation size of that symbol is the same SSA value. A ``?`` dimension is
the ``dim`` of the view, parameter or buffer the value's shape comes from.
"""
from __future__ import annotations

from ninfer_ir import ops as O
from ninfer_ir.builder import Builder
from ninfer_ir.ir import BlockArgument, FuncOp
from ninfer_ir.types import ShapedType, index


def shape_source(v, axis):
    """``(value, axis)`` of a parameter, view or buffer whose dimension ``axis`` is the
    same size as ``v``'s, or None."""
    while True:
        if isinstance(v, BlockArgument):
            return v, axis
        op = v.op
        if isinstance(op, (O.SubviewOp, O.AllocOp)):
            return v, axis
        if isinstance(op, O.ElementwiseOp):
            rank = v.type.rank
            nxt = [o for o in op.operands
                   if isinstance(o.type, ShapedType) and o.type.rank == rank]
            if not nxt:
                return None
            v = nxt[0]
        elif isinstance(op, O.ReduceOp):
            v = op.source
        elif isinstance(op, O.QuantizeOp) and axis == 0:
            v = op.values
        else:
            return v, axis


def func_of(op):
    while not isinstance(op, FuncOp):
        op = op.parent_op
    return op


class Dims:
    """The index values of dimensions in one function. Every symbol of the parameter
    types gets a ``dim`` at the top of the function when the object is made (an existing
    top-level ``dim`` of a parameter is moved there and reused); ``finish()`` erases the
    ones it created that nothing used."""

    def __init__(self, func: FuncOp):
        self.func = func
        self.symbols = {}
        self.created = []
        body = func.body
        for op in list(body.ops):
            if isinstance(op, O.DimOp) and op.source in func.args:
                d = op.source.type.shape[op.axis]
                if isinstance(d, str) and d not in self.symbols:
                    body.remove(op)
                    body.insert(len(self.symbols), op)
                    self.symbols[d] = op.result
        b = Builder(body, len(self.symbols))
        for a in func.args:
            if not isinstance(a.type, ShapedType):
                continue
            for axis, d in enumerate(a.type.shape):
                if isinstance(d, str) and d not in self.symbols:
                    self.symbols[d] = b.value("dim", a, axis=axis, name=d)
                    self.created.append(self.symbols[d])

    def value(self, b: Builder, v, axis):
        """An index value equal to ``v.type.shape[axis]``, created with ``b`` if needed."""
        d = v.type.shape[axis]
        if isinstance(d, int):
            return b.constant(d, index, name=f"c{d}")
        if isinstance(d, str) and d in self.symbols:
            return self.symbols[d]
        src = shape_source(v, axis)
        if src is None:
            return b.value("dim", v, axis=axis)
        return b.value("dim", src[0], axis=src[1])

    def finish(self) -> None:
        for v in self.created:
            if not v.uses:
                v.op.erase()
