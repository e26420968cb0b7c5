"""The one operator table of the DSL (AST operator -> IR op) and the rule that
gives a Python constant an IR type."""
from __future__ import annotations

import ast
import math
import operator
from dataclasses import dataclass, field

import numpy as np

from ninfer_ir.numerics.semantics import int_range
from ninfer_ir.types import ScalarType, bf16, bool_


@dataclass(frozen=True)
class OpRule:
    ir: str                    # IR op name
    symbol: str                # the Python spelling, for messages
    fold: object               # Python evaluation on compile-time constants
    attrs: dict = field(default_factory=dict)
    #: "any", or "float" / "int": the dtypes the DSL accepts it on, with the advice otherwise
    only: str = "any"
    advice: str = ""


def _not(a):
    return not a


OPERATORS = {
    ast.Add: OpRule("add", "+", operator.add),
    ast.Sub: OpRule("sub", "-", operator.sub),
    ast.Mult: OpRule("mul", "*", operator.mul),
    ast.Div: OpRule("div", "/", operator.truediv, only="float",
                    advice="use // for integer division (truncates toward zero)"),
    ast.FloorDiv: OpRule("div", "//", operator.floordiv, only="int",
                         advice="use / for float division"),
    ast.Mod: OpRule("rem", "%", operator.mod),
    ast.BitAnd: OpRule("and", "&", operator.and_),
    ast.BitOr: OpRule("or", "|", operator.or_),
    ast.BitXor: OpRule("xor", "^", operator.xor),
    ast.LShift: OpRule("shl", "<<", operator.lshift),
    ast.RShift: OpRule("shr", ">>", operator.rshift),
    ast.Eq: OpRule("cmp", "==", operator.eq, {"pred": "eq"}),
    ast.NotEq: OpRule("cmp", "!=", operator.ne, {"pred": "ne"}),
    ast.Lt: OpRule("cmp", "<", operator.lt, {"pred": "lt"}),
    ast.LtE: OpRule("cmp", "<=", operator.le, {"pred": "le"}),
    ast.Gt: OpRule("cmp", ">", operator.gt, {"pred": "gt"}),
    ast.GtE: OpRule("cmp", ">=", operator.ge, {"pred": "ge"}),
    ast.And: OpRule("and", "and", None),
    ast.Or: OpRule("or", "or", None),
    ast.USub: OpRule("neg", "-", operator.neg),
    ast.UAdd: OpRule("", "+", operator.pos),
    ast.Invert: OpRule("not", "~", operator.invert),
    ast.Not: OpRule("not", "not", _not),
}

#: operators with no IR counterpart, and what to write instead
UNSUPPORTED_OPERATORS = {
    ast.Pow: "'**' is not supported; multiply explicitly",
    ast.MatMult: "'@' is not supported; use I.dot (or write the loops)",
    ast.Is: "'is' is not supported; compare values with ==",
    ast.IsNot: "'is not' is not supported; compare values with !=",
    ast.In: "'in' is not supported inside a kernel",
    ast.NotIn: "'not in' is not supported inside a kernel",
}


def describe_static(v) -> str:
    if isinstance(v, bool):
        return f"the bool constant {v}"
    if isinstance(v, int):
        return f"the int constant {v}"
    if isinstance(v, float):
        return f"the float constant {v!r}"
    return f"the Python value {v!r}"


def constant_value(v, dtype: ScalarType):
    """The attribute value of constant ``v`` typed as ``dtype``, or raise
    ``ValueError`` with the reason it cannot be."""
    if dtype is bf16:
        raise ValueError("bf16 values are only cast or bitcast; compute in f32")
    if isinstance(v, bool):
        if dtype is bool_:
            return v
        raise ValueError(f"{describe_static(v)} cannot be a {dtype} value")
    if isinstance(v, int):
        if dtype is bool_:
            raise ValueError(f"{describe_static(v)} cannot be a bool value; use True/False")
        if dtype.is_float:
            f = float(v)
            if not np.isfinite(dtype.np_dtype.type(f)):
                raise ValueError(f"{describe_static(v)} overflows {dtype}")
            return f
        lo, hi = int_range(dtype)
        if not lo <= v <= hi:
            raise ValueError(f"{describe_static(v)} does not fit {dtype} "
                             f"(range {lo}..{hi})")
        return v
    if isinstance(v, float):
        if dtype.is_float:
            if math.isfinite(v):
                with np.errstate(all="ignore"):
                    if not np.isfinite(dtype.np_dtype.type(v)):
                        raise ValueError(f"{describe_static(v)} overflows {dtype}")
            return v
        raise ValueError(f"{describe_static(v)} cannot be a {dtype} value; "
                         f"use an int constant or I.cast")
    raise ValueError(f"{describe_static(v)} has no IR type")
