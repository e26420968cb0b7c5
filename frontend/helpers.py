"""``@I.func`` helper functions: DSL code that kernels (and other helpers) call.

A call is inlined: the helper's body is lowered in place, in the caller's block, with
its parameters bound to the call's arguments, and the value of its final ``return`` is
the call's value (no ``return``: None). Annotated parameters are checked at every call
(a scalar dtype takes a scalar of that dtype, or a Python constant it holds;
``I.Tensor[dtype, dims…]`` a tensor or buffer of that dtype and rank, with its int
dims; ``I.Buffer[…]`` a buffer); unannotated ones take any value. A return
annotation is checked the same way. A helper that calls itself, directly or through
other helpers, is refused at the call. Errors inside a helper point into its file.
"""
from __future__ import annotations

import ast

from ninfer_ir.errors import DSLError
from ninfer_ir.ir import Value
from ninfer_ir.types import BufferType, ScalarType, ShapedType

from .scope import describe, is_static


class Func:
    """A helper function (``@I.func``): ``.fn`` the Python function, ``.name``."""

    def __init__(self, fn, src):
        self.fn = fn
        self.name = fn.__name__
        self.src = src
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn

    def __call__(self, *args, **kwargs):
        raise DSLError(f"I.func '{self.name}' is called from inside a kernel, not from Python")

    def __repr__(self):
        return f"<I.func {self.name} from {self.src.filename}>"


def func(fn=None):
    """Mark a Python function as a DSL helper: ``@I.func``. Its source is read now and
    lowered, inlined, at each call from a kernel."""
    if fn is None:
        return func
    from .diagnostics import capture
    if not callable(fn) or not hasattr(fn, "__code__"):
        raise DSLError(f"I.func decorates a Python function, got {type(fn).__name__}")
    try:
        src = capture(fn)
    except DSLError as e:
        raise e.with_traceback(None) from None
    return Func(fn, src)


def _bind(lw, node, f: Func):
    a = f.src.func_def.args
    extra = a.posonlyargs + a.kwonlyargs + [x for x in (a.vararg, a.kwarg) if x]
    if extra or a.defaults:
        raise f.src.error(extra[0] if extra else a.defaults[0],
                          "helper parameters must be plain positional parameters without "
                          "defaults")
    params = [p.arg for p in a.args]
    if len(node.args) > len(params):
        raise lw.error(node, f"{f.name}() takes {len(params)} argument(s), got "
                             f"{len(node.args)}")
    vals = {p: (lw.expr(x), x) for p, x in zip(params, node.args)}
    for kw in node.keywords:
        if kw.arg not in params:
            raise lw.error(kw, f"{f.name}() has no parameter '{kw.arg}'")
        if kw.arg in vals:
            raise lw.error(kw, f"{f.name}() got '{kw.arg}' twice")
        vals[kw.arg] = (lw.expr(kw.value), kw.value)
    missing = [p for p in params if p not in vals]
    if missing:
        raise lw.error(node, f"{f.name}() needs the argument '{missing[0]}'")
    return [(p, *vals[p], arg) for p, arg in zip(params, a.args)]


def _check(lw, sub, value, where, key, ann_node, what):
    """``value`` against the annotation ``key`` at ``ann_node`` (evaluated in the helper)."""
    from .dsl import ShapedSpec
    ann = sub.annotation(key, ann_node) if ann_node is not None else None
    if ann is None:
        return value
    if isinstance(ann, ScalarType):
        if is_static(value):
            return lw.const(value, ann, where, fresh=True)
        value = lw.as_scalar(value, where)
        if value.type is not ann:
            raise lw.error(where, f"{what} must be {ann}, got {value.type}")
        return value
    if not isinstance(ann, ShapedSpec) or not ann.items \
            or not isinstance(ann.items[0], ScalarType):
        raise sub.error(ann_node, f"the annotation of {what} must be a scalar dtype, "
                                  f"I.Tensor[...] or I.Buffer[...], got {ann!r}")
    t = value.type if isinstance(value, Value) else None
    ok = isinstance(t, ShapedType) and t.dtype is ann.items[0] and t.rank == len(ann.items) - 1
    ok = ok and all(not isinstance(d, int) or d == s for d, s in zip(ann.items[1:], t.shape))
    if ok and ann.kind == "buffer" and not isinstance(t, BufferType):
        ok = False
    if not ok:
        raise lw.error(where, f"{what} must be {ann!r}, got {describe(value)}")
    return value


def inline(lw, node, f: Func):
    """Lower a call of helper ``f`` at ``node`` into ``lw``'s block; returns its value."""
    stack = getattr(lw, "helper_stack", ())
    if f in stack:
        chain = " -> ".join([g.name for g in stack[stack.index(f):]] + [f.name])
        raise lw.error(node, f"'{f.name}' is called recursively ({chain}): recursion is not "
                             f"supported in I.func helpers")
    from .lowering_ast import Lowering
    sub = Lowering(f.fn, f.src, lw.kernel_types, constants=lw.constants)
    sub.builder, sub.blocks, sub.op_nodes = lw.builder, lw.blocks, lw.op_nodes
    sub.helper_stack = (*stack, f)
    for name, value, where, param in _bind(lw, node, f):
        value = _check(lw, sub, value, where, name, param.annotation,
                       f"parameter '{name}' of {f.name}()")
        sub.env.bind(name, value, param)
    body = f.src.func_def.body
    result = None
    for k, stmt in enumerate(body):
        if isinstance(stmt, ast.Return):
            if k != len(body) - 1:
                raise sub.error(stmt, "return must be the last statement of a helper")
            if stmt.value is not None:
                result = sub.expr(stmt.value)
                result = _check(lw, sub, result, node, "return", f.src.func_def.returns,
                                f"the result of {f.name}()")
        else:
            sub.visit(stmt)
    return result
