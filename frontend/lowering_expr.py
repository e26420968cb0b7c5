"""Expressions of the DSL: names, constants, operators, attributes and calls
(indexing is in ``indexing.py``), lowered into IR at the builder's insertion point.

An expression evaluates to an SSA ``Value`` or to a static Python value (see
``scope.py``). Every node goes through ``visit``, which turns any failure below
it into an ``I.DSLError`` located at the innermost node being compiled.
"""
from __future__ import annotations

import ast

import numpy as np

from ninfer_ir.builder import Builder
from ninfer_ir.dense import Dense, DenseError
from ninfer_ir.errors import DSLError, VerifyError
from ninfer_ir.ir import Value
from ninfer_ir.ops import ConstantTensorOp
from ninfer_ir.quant import _QuantNamespace
from ninfer_ir.types import ScalarType, ShapedType, TensorType, bool_, index
from ninfer_ir.verifier import verify_op

from . import calls
from .diagnostics import UNSUPPORTED
from .indexing import IndexingLowering
from .operators import OPERATORS, UNSUPPORTED_OPERATORS, constant_value
from .scope import (OP_CALLS, Builtin, OpCall, RangeFn, ShapeProxy, classify, describe,
                    dtype_of, is_ninfer_module, is_static, resolve_global)



_NO_RESULTS = ("store", "copy", "yield", "return", "check")


class ExprLowering(IndexingLowering):
    """Mixin: expression lowering. The statement visitor supplies ``src``,
    ``fn``, ``builder``, ``env``, ``blocks`` and ``op_nodes``."""

    # -- the visit wrapper --------------------------------------------------
    def visit(self, node):
        method = getattr(self, "visit_" + type(node).__name__, None)
        if method is None:
            raise self.error(node, UNSUPPORTED.get(
                type(node).__name__, f"'{type(node).__name__}' is not supported inside a kernel"))
        outer, self.current = self.current, node
        try:
            return method(node)
        except DSLError:
            raise
        except VerifyError as e:
            name = e.op.name if e.op is not None else "op"
            raise self.error(node, f"invalid '{name}': {e.message}") from None
        except RecursionError:
            raise self.error(node, "the kernel nests too deeply to compile") from None
        except Exception as e:  # any other failure still points at the source
            err = self.error(node, f"cannot compile this {type(node).__name__.lower()}: "
                                   f"{type(e).__name__}: {e}")
            err.internal = e
            raise err from None
        finally:
            self.current = outer

    def expr(self, node):
        return self.visit(node)

    def error(self, node, message: str) -> DSLError:
        return self.src.error(node, message)

    # -- emitting ops ---------------------------------------------------------
    def emit(self, name, operands, attrs=None, result_types=None, regions=(), hint=None,
             what=None, node=None):
        if result_types is None and name in _NO_RESULTS:
            result_types = []
        names = hint if isinstance(hint, list) else [hint] if hint else None
        op = self.builder.create(name, operands, attrs or {}, result_types, regions,
                                 names=names)
        self.op_nodes[op] = node if node is not None else self.current
        try:
            verify_op(op)
        except VerifyError as e:
            raise self.error(node if node is not None else self.current,
                             f"{what or repr(name)}: {e.message}") from None
        return op

    def value(self, name, operands, attrs=None, hint=None, what=None, node=None) -> Value:
        return self.emit(name, operands, attrs, None, (), hint, what, node).result

    def _cached(self, key):
        for _, cache in reversed(self.blocks):
            if key in cache:
                return cache[key]
        return None

    def const(self, v, dtype: ScalarType, node, fresh=False) -> Value:
        """Constant ``v`` as ``dtype`` (shared within a block unless ``fresh``)."""
        try:
            val = constant_value(v, dtype)
        except ValueError as e:
            raise self.error(node, str(e)) from None
        key = ("constant", dtype, repr(val))
        if not fresh:
            hit = self._cached(key)
            if hit is not None:
                return hit
        hint = None if fresh else _const_hint(val, dtype)
        r = self.emit("constant", [], {"value": val}, [dtype], hint=hint, node=node).result
        if not fresh:
            self.blocks[-1][1][key] = r
        return r

    def dim(self, v: Value, axis: int, node):
        t = v.type
        if not -t.rank <= axis < t.rank:
            raise self.error(node, f"axis {axis} is out of range for {t} (rank {t.rank})")
        axis %= t.rank
        d = t.shape[axis]
        if isinstance(d, int):
            return d
        key = ("dim", v, axis)
        hit = self._cached(key)
        if hit is None:
            hit = self.value("dim", [v], {"axis": axis}, hint=d, node=node)
            self.blocks[-1][1][key] = hit
        return hit

    # -- conversions ------------------------------------------------------------
    def as_scalar(self, v, node):
        """A rank-0 tensor or buffer becomes its element (``load``)."""
        if isinstance(v, Value) and isinstance(v.type, ShapedType) and v.type.rank == 0:
            key = ("load", v)
            cacheable = isinstance(v.type, TensorType)
            hit = self._cached(key) if cacheable else None
            if hit is None:
                hit = self.value("load", [v], node=node)
                if cacheable:
                    self.blocks[-1][1][key] = hit
            return hit
        return v

    def typed(self, v, dtype: ScalarType, node, what: str):
        """``v`` as a scalar of ``dtype``: constants are typed, others must match."""
        if is_static(v):
            return self.const(v, dtype, node)
        v = self.as_scalar(v, node)
        if isinstance(v.type, ShapedType):
            raise self.error(node, f"{what} must be a {dtype} scalar, got {v.type}")
        if v.type != dtype:
            raise self.error(node, f"{what} has type {v.type} but {dtype} is needed "
                                   f"(no implicit conversion; use I.cast(..., I.{_py(dtype)}))")
        return v

    def as_index(self, v, node, what="index"):
        if is_static(v):
            if isinstance(v, bool) or not isinstance(v, int):
                raise self.error(node, f"{what} must be an integer, got {describe(v)}")
            if v < 0:
                raise self.error(node, f"negative {what} {v}: negative indices are not "
                                       f"supported inside a kernel")
            return self.const(v, index, node)
        v = self.as_scalar(v, node)
        if v.type is index:
            return v
        if isinstance(v.type, ScalarType) and v.type.is_int:
            raise self.error(node, f"{what} has type {v.type}; indices are index values "
                                   f"(use I.cast(..., I.index))")
        raise self.error(node, f"{what} must be an index value, got {v.type}")

    def as_bool(self, v, node, what="condition"):
        v = self.as_scalar(v, node)
        if v.type is not bool_:
            raise self.error(node, f"{what} must be bool, got {v.type}; compare explicitly "
                                   f"(e.g. x != 0)")
        return v

    # -- names, constants, attributes -----------------------------------------------
    def visit_Constant(self, node):
        if isinstance(node.value, (bool, int, float, str)) or node.value is None \
                or node.value is Ellipsis:
            return node.value
        raise self.error(node, f"the constant {node.value!r} is not supported inside a kernel")

    def visit_Name(self, node):
        b = self.env.get(node.id)
        if b is not None:
            return b.value
        if node.id in self.env.dead:
            raise self.error(node, self.env.dead[node.id])
        if node.id == self.fn.__name__:
            raise self.error(node, f"'{node.id}' is the kernel being compiled: recursion "
                                   f"is not supported")
        found, obj = resolve_global(node.id, self.fn)
        if not found:
            raise self.error(node, f"name '{node.id}' is not defined")
        if isinstance(obj, np.ndarray):
            return self.constant_tensor(node, obj)
        ok, v = classify(obj, node.id, self.kernel_types)
        if not ok:
            raise self.error(node, v)
        return v

    def constant_tensor(self, node, obj) -> Value:
        """The ``constant_tensor`` of the array that ``node`` names, at the top of the
        function (one op per array). The data is the array's contents at the first
        lowering of the kernel (``constants`` keeps that copy for later lowerings)."""
        key = (self.fn, node.id)
        data = self.constants.get(key)
        if data is None:
            try:
                data = Dense.from_array(obj)
            except DenseError as e:
                raise self.error(node, f"the array '{node.id}' cannot be a constant tensor: "
                                       f"{e}") from None
            self.constants[key] = data
        top, cache = self.blocks[0]
        hit = cache.get(("constant_tensor", data))
        if hit is not None:
            return hit
        at = 0
        while at < len(top.ops) and isinstance(top.ops[at], ConstantTensorOp):
            at += 1
        saved, self.builder = self.builder, Builder(top, at)
        try:
            r = self.value("constant_tensor", [], {"value": data}, hint=node.id, node=node)
        finally:
            self.builder = saved
        cache[("constant_tensor", data)] = r
        return r

    def visit_Tuple(self, node):
        return tuple(self.expr(e) for e in node.elts)

    def visit_Attribute(self, node):
        base = self.expr(node.value)
        attr = node.attr
        if isinstance(base, Value):
            t = base.type
            if isinstance(t, ShapedType) and attr == "shape":
                return ShapeProxy(base)
            if attr == "dtype":
                return dtype_of(base)
            if isinstance(t, ShapedType) and attr == "ndim":
                return t.rank
            raise self.error(node, f"'.{attr}' is not supported on a {t} value "
                                   f"(use .shape, .dtype or .ndim)")
        if is_ninfer_module(base):
            if attr in OP_CALLS:
                return OpCall(attr)
            if attr in ("range", "prange"):
                return RangeFn("I." + attr, attr == "prange")
            if not hasattr(base, attr):
                raise self.error(node, f"ninfer_ir has no attribute '{attr}'")
            ok, v = classify(getattr(base, attr), "I." + attr, self.kernel_types)
            if not ok:
                raise self.error(node, f"I.{attr} cannot be used inside a kernel")
            return v
        if isinstance(base, _QuantNamespace):
            try:
                return getattr(base, attr)
            except AttributeError as e:
                raise self.error(node, str(e)) from None
        raise self.error(node, f"'.{attr}' is not supported on {describe(base)}")

    # -- operators ----------------------------------------------------------------
    def visit_BinOp(self, node):
        if type(node.op) in UNSUPPORTED_OPERATORS:
            raise self.error(node, UNSUPPORTED_OPERATORS[type(node.op)])
        a, b = self.expr(node.left), self.expr(node.right)
        return self.binary(OPERATORS[type(node.op)], a, b, node)

    def binary(self, rule, a, b, node):
        if is_static(a) and is_static(b):
            return self.fold(rule, node, a, b)
        a, b = self.as_scalar(a, node), self.as_scalar(b, node)
        if is_static(a):
            a = self.const(a, dtype_of(b), node)
        elif is_static(b):
            b = self.const(b, dtype_of(a), node)
        da, db = dtype_of(a), dtype_of(b)
        if da != db:
            raise self.error(node, f"operands of '{rule.symbol}' have different types, "
                                   f"{a.type} and {b.type}: there is no implicit promotion; "
                                   f"convert one with I.cast(x, I.{_py(da)})")
        self._check_kind(rule, da, node)
        return self.value(rule.ir, [a, b], dict(rule.attrs), what=f"'{rule.symbol}'", node=node)

    def _check_kind(self, rule, dtype, node):
        if rule.only == "float" and not dtype.is_float:
            raise self.error(node, f"'{rule.symbol}' needs float operands, got {dtype}; "
                                   f"{rule.advice}")
        if rule.only == "int" and not dtype.is_int:
            raise self.error(node, f"'{rule.symbol}' needs integer operands, got {dtype}; "
                                   f"{rule.advice}")

    def fold(self, rule, node, *args):
        for a in args:
            if not isinstance(a, (bool, int, float)) and rule.symbol not in ("==", "!="):
                raise self.error(node, f"'{rule.symbol}' cannot take {describe(a)}")
        try:
            return rule.fold(*args)
        except Exception as e:
            raise self.error(node, f"'{rule.symbol}' on Python constants failed: {e}") from None

    def visit_UnaryOp(self, node):
        rule = OPERATORS[type(node.op)]
        v = self.expr(node.operand)
        if is_static(v):
            return self.fold(rule, node, v)
        v = self.as_scalar(v, node)
        if isinstance(node.op, ast.UAdd):
            return v
        if isinstance(node.op, ast.Not) and dtype_of(v) is not bool_:
            raise self.error(node, f"'not' needs a bool value, got {v.type}; compare "
                                   f"explicitly (x == 0)")
        return self.value(rule.ir, [v], what=f"'{rule.symbol}'", node=node)

    def visit_BoolOp(self, node):
        rule = OPERATORS[type(node.op)]
        vals = [self.expr(v) for v in node.values]
        if all(is_static(v) for v in vals):
            out = vals[0]
            for v in vals[1:]:
                out = (out and v) if isinstance(node.op, ast.And) else (out or v)
            return out
        ir = []
        for v, sub in zip(vals, node.values):
            if is_static(v):
                if not isinstance(v, bool):
                    raise self.error(sub, f"'{rule.symbol}' with an IR condition needs bool "
                                          f"operands, got {describe(v)}")
                ir.append(self.const(v, bool_, sub))
            else:
                ir.append(self.as_bool(v, sub, f"operand of '{rule.symbol}'"))
        out = ir[0]
        for v in ir[1:]:
            out = self.value(rule.ir, [out, v], what=f"'{rule.symbol}'", node=node)
        return out

    def visit_Compare(self, node):
        left = self.expr(node.left)
        result = None
        for op, right_node in zip(node.ops, node.comparators):
            if type(op) in UNSUPPORTED_OPERATORS:
                raise self.error(node, UNSUPPORTED_OPERATORS[type(op)])
            right = self.expr(right_node)
            r = self.binary(OPERATORS[type(op)], left, right, node)
            if result is None:
                result = r
            elif is_static(result) and is_static(r):
                result = result and r
            else:
                rule = OPERATORS[ast.And]
                result = self.binary(rule, self.as_bool_operand(result, node),
                                     self.as_bool_operand(r, node), node)
            left = right
        return result

    def as_bool_operand(self, v, node):
        return self.const(v, bool_, node) if is_static(v) else v

    def visit_IfExp(self, node):
        c = self.expr(node.test)
        if is_static(c):
            return self.expr(node.body if c else node.orelse)
        c = self.as_bool(c, node.test)
        return calls.select(self, node, c, self.expr(node.body), self.expr(node.orelse))

    # -- calls --------------------------------------------------------------------
    def visit_Call(self, node):
        if isinstance(node.func, ast.Name) and node.func.id == self.fn.__name__ \
                and node.func.id not in self.env:
            raise self.error(node, f"'{node.func.id}' calls itself: recursion is not "
                                   f"supported inside a kernel")
        f = self.expr(node.func)
        for a in node.args:
            if isinstance(a, ast.Starred):
                raise self.error(a, "'*' arguments are not supported inside a kernel")
        for kw in node.keywords:
            if kw.arg is None:
                raise self.error(kw.value, "'**' arguments are not supported inside a kernel")
        if isinstance(f, OpCall):
            return calls.CALLS[f.name](self, node, f.name)
        if isinstance(f, RangeFn):
            raise self.error(node, f"{f.spelling}(...) can only be the iterable of a for "
                                   f"loop: for i in {f.spelling}(...)")
        if isinstance(f, Builtin):
            return calls.static_builtin(self, node, f.name)
        from .helpers import Func, inline
        if isinstance(f, Func):
            return inline(self, node, f)
        raise self.error(node, f"cannot call {describe(f)} inside a kernel")


def _const_hint(val, dtype: ScalarType):
    if dtype is bool_:
        return "true" if val else "false"
    if isinstance(val, int):
        base = f"c{val}" if val >= 0 else f"cm{-val}"
        return base if dtype is index else f"{base}_{dtype}"
    return "cst"


def _py(dtype: ScalarType) -> str:
    return "bool_" if dtype is bool_ else dtype.name
