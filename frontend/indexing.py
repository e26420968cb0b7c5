"""Indexing: ``x[i]`` reads an element (``load``) when every axis is indexed and is
a view (``subview``) otherwise; slices with a provable length get a static dim."""
from __future__ import annotations

import ast

from ninfer_ir.ir import OpResult, Value
from ninfer_ir.ops import AddOp, ConstantOp, DimOp
from ninfer_ir.types import ShapedType

from .scope import ShapeProxy, describe, is_static


class IndexingLowering:
    """Mixin of ``ExprLowering``: subscripts and views."""

    def visit_Subscript(self, node):
        base = self.expr(node.value)
        if isinstance(base, ShapeProxy):
            k = self.expr(node.slice)
            if isinstance(k, bool) or not isinstance(k, int):
                raise self.error(node.slice, "x.shape[...] needs a Python int axis")
            return self.dim(base.value, k, node)
        if isinstance(base, tuple):
            k = self.expr(node.slice)
            if isinstance(k, bool) or not isinstance(k, int) or not -len(base) <= k < len(base):
                raise self.error(node.slice, f"a tuple of {len(base)} takes a constant index "
                                             f"in range, got {describe(k)}")
            return base[k]
        if isinstance(base, Value) and isinstance(base.type, ShapedType):
            axes = self.index_axes(base, node.slice, node)
            return self.view(base, axes, node)
        raise self.error(node, f"cannot index {describe(base)}")

    def index_axes(self, base: Value, slice_node, node):
        """Per axis: ("i", idx) | ("r", start, stop, step, length) | (":",)."""
        t = base.type
        elts = slice_node.elts if isinstance(slice_node, ast.Tuple) else [slice_node]
        if len(elts) > t.rank:
            raise self.error(node, f"too many indices ({len(elts)}) for {t} of rank {t.rank}")
        axes = []
        for k, e in enumerate(elts):
            d = t.shape[k]
            if isinstance(e, ast.Slice):
                axes.append(self._slice_axis(base, k, d, e))
                continue
            v = self.expr(e)
            if isinstance(v, int) and not isinstance(v, bool) and isinstance(d, int) \
                    and v >= d:
                raise self.error(e, f"index {v} is out of bounds for axis {k} of size {d}")
            axes.append(("i", self.as_index(v, e)))
        axes += [(":",)] * (t.rank - len(elts))
        return axes

    def _slice_axis(self, base, k, d, e):
        if e.lower is None and e.upper is None and e.step is None:
            return (":",)
        lo = self.expr(e.lower) if e.lower is not None else 0
        hi = self.expr(e.upper) if e.upper is not None else None
        st = self.expr(e.step) if e.step is not None else 1
        if is_static(st) and (isinstance(st, bool) or not isinstance(st, int) or st <= 0):
            raise self.error(e.step, f"a slice step must be a positive integer, got "
                                     f"{describe(st)}")
        for v, sub in ((lo, e.lower), (hi, e.upper)):
            if isinstance(v, int) and not isinstance(v, bool) and isinstance(d, int) and v > d:
                raise self.error(sub, f"slice bound {v} is out of bounds for axis {k} "
                                      f"of size {d}")
        if hi is None:
            hi = d if isinstance(d, int) else self.dim(base, k, e)
        start = self.as_index(lo, e.lower or e, "slice start")
        stop = self.as_index(hi, e.upper or e, "slice stop")
        step = self.as_index(st, e.step or e, "slice step")
        length = None
        s0, s1, s2 = (self.known_dim(x) for x in (start, stop, step))
        if isinstance(s2, int) and s2 > 0:
            if isinstance(s0, int) and isinstance(s1, int):
                length = len(range(s0, s1, s2))
            elif s0 == 0 and s2 == 1 and s1 is not None:
                length = s1
            else:
                c = _offset_of(stop, start)
                if c is not None:
                    length = len(range(0, c, s2))
        return ("r", start, stop, step, length)

    def known_dim(self, v: Value):
        """The int or symbol a value is known to equal (constants and dims), or None."""
        if isinstance(v, OpResult):
            if isinstance(v.op, ConstantOp):
                return v.op.attrs.get("value")
            if isinstance(v.op, DimOp):
                return v.op.operands[0].type.shape[v.op.attrs["axis"]]
        return None

    def view(self, base: Value, axes, node, force_view=False):
        """A full index reads the element (``load``); anything else is a ``subview``."""
        t = base.type
        if not force_view and all(a[0] == "i" for a in axes):
            return self.value("load", [base] + [a[1] for a in axes], node=node)
        if all(a[0] == ":" for a in axes):
            return base
        operands, shape, codes = [base], [], ""
        for a, d in zip(axes, t.shape):
            codes += a[0]
            if a[0] == "i":
                operands.append(a[1])
            elif a[0] == "r":
                operands += list(a[1:4])
                shape.append(a[4])
            else:
                shape.append(d)
        rt = type(t)(t.dtype, shape)
        return self.emit("subview", operands, {"axes": codes}, [rt], what="indexing",
                         node=node).result


def _offset_of(stop: Value, start: Value):
    """C >= 0 when ``stop - start`` is the constant C (``stop`` is ``start + C``, or
    both add a constant to the same value), else None."""
    b1, c1 = _split_offset(start)
    b2, c2 = _split_offset(stop)
    if b1 is b2 and c2 >= c1:
        return c2 - c1
    return None


def _split_offset(v: Value):
    """(base, C) with v == base + C for a constant C (C = 0 when v is no such add)."""
    op = getattr(v, "op", None)
    if isinstance(op, AddOp):
        a, b = op.operands
        for x, y in ((a, b), (b, a)):
            if isinstance(getattr(y, "op", None), ConstantOp):
                c = y.op.attrs.get("value")
                if isinstance(c, int):
                    return x, c
    return v, 0
