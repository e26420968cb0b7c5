"""``I.<op>(...)`` calls inside a kernel: one small handler per operation.

A handler binds the call's arguments (positional or keyword, as the eager
function takes them), checks the compile-time ones (formats, dtypes, orders)
and emits the op; the op's own verifier then checks shapes, and its message is
reported at the call (e.g. ``I.quantized_dot`` given ``w`` instead of ``w[n]``).
"""
from __future__ import annotations

import builtins

import numpy as np

from ninfer_ir import ops as O
from ninfer_ir.ir import Value
from ninfer_ir.numerics import semantics
from ninfer_ir.numerics.semantics import cast as cast_values
from ninfer_ir.numerics.semantics import to_python
from ninfer_ir.quant import QuantSchema
from ninfer_ir.types import (BufferType, ScalarType, ShapedType, TensorType, bool_, f64,
                             i64, index)

from .operators import OpRule

_MISSING = object()


def bind(lw, node, fname, params, required, defaults=None):
    """Arguments of ``I.fname`` by parameter name: ``{name: (value, node)}``."""
    out = {}
    if len(node.args) > len(params):
        raise lw.error(node.args[len(params)], f"I.{fname} takes at most {len(params)} "
                                               f"positional argument(s)")
    for p, a in zip(params, node.args):
        out[p] = (lw.expr(a), a)
    for kw in node.keywords:
        if kw.arg not in params:
            raise lw.error(kw, f"I.{fname} has no argument '{kw.arg}' "
                               f"(it takes {', '.join(params)})")
        if kw.arg in out:
            raise lw.error(kw, f"I.{fname} got argument '{kw.arg}' twice")
        out[kw.arg] = (lw.expr(kw.value), kw)
    for p in params[:required]:
        if p not in out:
            raise lw.error(node, f"I.{fname} needs the argument '{p}'")
    for p, d in (defaults or {}).items():
        out.setdefault(p, (d, node))
    return out


def _tensor(lw, fname, what, arg):
    v, where = arg
    if not isinstance(v, Value) or not isinstance(v.type, ShapedType):
        from .scope import describe
        raise lw.error(where, f"I.{fname}: {what} must be a tensor or buffer, got {describe(v)}")
    return v


def _static(lw, fname, what, arg, kind, example):
    v, where = arg
    if not isinstance(v, kind) or isinstance(v, bool) and kind is not bool:
        from .scope import describe
        raise lw.error(where, f"I.{fname}: {what} must be {example}, got {describe(v)}")
    return v


def _order(lw, fname, args):
    return _static(lw, fname, "order", args["order"], str, 'a summation order such as "seq"')


# -- the quantized ops ------------------------------------------------------------

def quantize(lw, node, fname):
    a = bind(lw, node, fname, ["values", "format"], 2)
    v = _tensor(lw, fname, "values", a["values"])
    fmt = _static(lw, fname, "format", a["format"], QuantSchema, "a quant schema (I.quant.q8_k, I.quant.q8_0)")
    return lw.value("quantize", [v], {"format": fmt}, what=f"I.{fname}", node=node)


def quantized_dot(lw, node, fname):
    a = bind(lw, node, fname, ["lhs", "rhs", "lhs_format", "rhs_format", "acc_dtype", "order"],
             5, {"order": "seq"})
    lhs = _tensor(lw, fname, "lhs", a["lhs"])
    rhs = _tensor(lw, fname, "rhs", a["rhs"])
    attrs = {
        "lhs_format": _static(lw, fname, "lhs_format", a["lhs_format"], QuantSchema,
                              "a quant schema (I.quant.q4_k)"),
        "rhs_format": _static(lw, fname, "rhs_format", a["rhs_format"], QuantSchema,
                              "a quant schema (I.quant.q8_k)"),
        "acc_dtype": _static(lw, fname, "acc_dtype", a["acc_dtype"], ScalarType, "a dtype (I.f32)"),
        "order": _order(lw, fname, a),
    }
    return lw.value("quantized_dot", [lhs, rhs], attrs, what=f"I.{fname}", node=node)


# -- explicit decode of one row of a registered format ---------------------------------

def decode(lw, node, fname):
    """``I.decode(<row operands>, format=FMT[, k=K])`` -> f32[K]: the operands of the
    format's family (``numerics.decode.signature``). ``k`` is an operand of a grouped
    decode; for the other formats it only names the result's length (``x.shape[0]``),
    which the run-time shape check of the result then holds the row to."""
    from ninfer_ir.formats import Format
    from ninfer_ir.numerics.decode import family, result_dtype, row_length, signature
    args = [(lw.expr(a), a) for a in node.args]
    kws = {}
    for kw in node.keywords:
        if kw.arg in kws:
            raise lw.error(kw, f"I.{fname} got argument '{kw.arg}' twice")
        kws[kw.arg] = (lw.expr(kw.value), kw)
    at = next((i for i, (v, _) in enumerate(args) if isinstance(v, Format)), None)
    if "format" not in kws and at is not None:
        kws["format"], rest, args = args[at], args[at + 1:], args[:at]
        if len(rest) > 1 or (rest and "k" in kws):
            raise lw.error(node, f"I.{fname} takes the row operands, then format and k")
        if rest:
            kws["k"] = rest[0]
    if "format" not in kws:
        raise lw.error(node, f"I.{fname} needs the argument 'format'")
    fmt = _static(lw, fname, "format", kws.pop("format"), Format,
                  'a registered format (a module-level I.formats.get("gguf_q4_k"))')
    specs = signature(fmt)
    params = [op.name for op in specs]
    length = None if family(fmt) == "grouped" else kws.pop("k", None)
    bound = dict(zip(params, args))
    if len(args) > len(params):
        raise lw.error(args[len(params)][1], f"I.{fname} of {fmt.name} takes "
                                             f"{', '.join(params)}, format; got "
                                             f"{len(args)} row operand(s)")
    takes = ", ".join(params) + (", format" if family(fmt) == "grouped" else ", format[, k]")
    for name, arg in kws.items():
        if name not in params or name in bound:
            raise lw.error(arg[1], f"I.{fname} of {fmt.name} takes {takes}; got argument "
                                   f"'{name}'" + (" twice" if name in bound else ""))
        bound[name] = arg
    missing = [p for p in params if p not in bound]
    if missing:
        raise lw.error(node, f"I.{fname} of {fmt.name} needs the argument '{missing[0]}'")
    operands, sizes = [], []
    for spec in specs:
        v, where = bound[spec.name]
        if spec.kind == "count":
            operands.append(lw.as_index(v, where, "the element count k"))
            dim = _symbol_of(operands[-1]) if isinstance(v, Value) else int(v)
        elif spec.kind == "row":
            operands.append(_tensor(lw, fname, spec.name, (v, where)))
            sizes.append(operands[-1].type.shape[0] if operands[-1].type.rank == 1 else None)
        else:
            operands.append(_scalar_operand(lw, fname, spec, v, where))
    if family(fmt) != "grouped":
        static = all(isinstance(n, int) for n in sizes)
        dim = row_length(fmt, sizes) if static else (sizes[0] if family(fmt) != "gguf" else None)
        if length is not None:     # names the row length (checked at run time), no operand
            v, where = length
            dim = _symbol_of(lw.as_index(v, where, "the element count k")) \
                if isinstance(v, Value) else int(v)
    op = lw.emit("decode", operands, {"format": fmt}, [TensorType(result_dtype(fmt), (dim,))],
                 what=f"I.{fname}", node=node)
    return op.result


def _scalar_operand(lw, fname, spec, v, where):
    if not isinstance(v, Value) or v.type is not spec.dtype:
        from .scope import describe
        raise lw.error(where, f"I.{fname}: {spec.name} must be one {spec.dtype} scalar "
                              f"(such as s[n] of a {spec.dtype} tensor), got {describe(v)}")
    return v


def _symbol_of(v):
    """The shape symbol a ``dim`` op reads (``x.shape[0]`` of ``f32[K]`` -> "K")."""
    op = getattr(v, "op", None)
    if isinstance(op, O.DimOp):
        return op.source.type.shape[op.axis]
    return None


# -- contraction and reductions ------------------------------------------------------

def dot(lw, node, fname):
    a = bind(lw, node, fname, ["lhs", "rhs", "order"], 2, {"order": "seq"})
    lhs = _tensor(lw, fname, "lhs", a["lhs"])
    rhs = _tensor(lw, fname, "rhs", a["rhs"])
    return lw.value("dot", [lhs, rhs], {"order": _order(lw, fname, a)}, what=f"I.{fname}",
                    node=node)


_REDUCE_KIND = {"sum": "add", "prod": "mul", "max": "max", "min": "min"}


def reduction(lw, node, fname):
    if fname in ("max", "min") and len(node.args) >= 2:
        raise lw.error(node, f"I.{fname}(x) reduces the last axis of one tensor; use "
                             f"I.{fname}imum(a, b) for the elementwise {fname}imum")
    a = bind(lw, node, fname, ["x", "order"], 1, {"order": "seq"})
    return _reduce(lw, node, fname, a, _REDUCE_KIND[fname])


def reduce(lw, node, fname):
    a = bind(lw, node, fname, ["x", "kind", "order"], 2, {"order": "seq"})
    kind = _static(lw, fname, "kind", a["kind"], str, 'one of "add", "mul", "min", "max"')
    return _reduce(lw, node, fname, a, kind)


def _reduce(lw, node, fname, a, kind):
    x = _tensor(lw, fname, "x", a["x"])
    return lw.value("reduce", [x], {"kind": kind, "order": _order(lw, fname, a)},
                    what=f"I.{fname}", node=node)


# -- conversions ---------------------------------------------------------------------

def cast(lw, node, fname):
    a = bind(lw, node, fname, ["x", "dtype"], 2)
    to = _static(lw, fname, "dtype", a["dtype"], ScalarType, "a dtype such as I.f32")
    x, where = a["x"]
    if not isinstance(x, Value):
        return lw.const(_cast_constant(lw, where, x, to), to, where, fresh=True)
    x = lw.as_scalar(x, where)
    src = x.type.dtype if isinstance(x.type, ShapedType) else x.type
    if src == to and not isinstance(x.type, BufferType):
        return x
    return lw.value(fname, [x], {"to": to}, what=f"I.{fname}", node=node)


def _cast_constant(lw, where, x, to):
    """A Python constant converted as the IR cast from i64 / f64 / bool converts."""
    from .scope import describe
    if isinstance(x, bool):
        src = bool_
    elif isinstance(x, int):
        if not -(1 << 63) <= x < (1 << 63):
            raise lw.error(where, f"{describe(x)} does not fit i64")
        src = i64
    elif isinstance(x, float):
        src = f64
    else:
        raise lw.error(where, f"I.cast: cannot convert {describe(x)}")
    return to_python(cast_values(np.asarray(x, dtype=src.np_dtype), src, to), to)


def bitcast(lw, node, fname):
    a = bind(lw, node, fname, ["x", "dtype"], 2)
    _static(lw, fname, "dtype", a["dtype"], ScalarType, "a dtype such as I.u32")
    x, where = a["x"]
    if not isinstance(x, Value):
        from .scope import describe
        raise lw.error(where, f"I.bitcast needs an IR value, got {describe(x)} (a Python "
                              f"constant has no bit pattern; type it with I.cast first)")
    return cast(lw, node, fname)


# -- elementwise ----------------------------------------------------------------------

def select(lw, node, c, a, b):
    """``select(c, a, b)``; a constant side takes the other side's dtype."""
    from .scope import describe, dtype_of, is_static
    if is_static(c):
        return a if c else b
    a, b = lw.as_scalar(a, node), lw.as_scalar(b, node)
    if is_static(a) and is_static(b):
        raise lw.error(node, f"cannot select between {describe(a)} and {describe(b)}: give "
                             f"one of them a type with I.cast")
    if is_static(a):
        a = lw.const(a, dtype_of(b), node)
    if is_static(b):
        b = lw.const(b, dtype_of(a), node)
    if dtype_of(a) != dtype_of(b):
        raise lw.error(node, f"the two sides of a select have different types, {a.type} and "
                             f"{b.type}: convert one with I.cast")
    return lw.value("select", [c, a, b], what="select", node=node)


def select_call(lw, node, fname):
    a = bind(lw, node, fname, ["cond", "a", "b"], 3)
    c, where = a["cond"]
    from .scope import is_static
    if not is_static(c):
        c = lw.as_scalar(c, where)
        d = c.type.dtype if isinstance(c.type, ShapedType) else c.type
        if d is not bool_:
            raise lw.error(where, f"I.select: the condition must be bool, got {c.type}")
    return select(lw, node, c, a["a"][0], a["b"][0])


#: how ``I.<call>`` evaluates on Python constants where Python's builtin is the rule
_PYTHON_FOLDS = {"minimum": builtins.min, "maximum": builtins.max, "abs": builtins.abs}


def _numeric_fold(cls):
    """``I.<call>`` on Python constants, typed as the kernel types a constant (bool,
    i64, f64; all of one type) and evaluated by the op's ``semantics`` rule."""
    def fold(*xs):
        types = {bool_ if isinstance(x, bool) else i64 if isinstance(x, int) else f64
                 for x in xs}
        if len(types) != 1:
            raise ValueError("the constants have different types; type them with I.cast")
        t = types.pop()
        vals = [np.asarray(x, dtype=t.np_dtype) for x in xs]
        if issubclass(cls, O.UnaryOp):
            return to_python(semantics.unary(cls.name, *vals, t), t)
        return to_python(semantics.binary(cls.name, *vals, t), t)
    return fold


def _elementwise_call(cls):
    """The handler of ``I.<cls.dsl_call>`` for a unary or binary op class."""
    rule = OpRule(cls.name, f"I.{cls.dsl_call}",
                  _PYTHON_FOLDS.get(cls.dsl_call) or _numeric_fold(cls))
    unary = issubclass(cls, O.UnaryOp)

    def handler(lw, node, fname):
        if not unary:
            a = bind(lw, node, fname, ["a", "b"], 2)
            return lw.binary(rule, a["a"][0], a["b"][0], node)
        a = bind(lw, node, fname, ["x"], 1)
        x, where = a["x"]
        if not isinstance(x, Value):
            return lw.fold(rule, where, x)
        return lw.value(cls.name, [lw.as_scalar(x, where)], what=f"I.{fname}", node=node)
    return handler


def _expanded_call(cls):
    """``I.exp(x)`` …: one op of the expanded family ``cls`` on a scalar or elementwise on
    a tensor/view."""
    def handler(lw, node, fname):
        a = bind(lw, node, fname, ["x"], 1)
        x, where = a["x"]
        if not isinstance(x, Value):
            from .scope import describe
            raise lw.error(where, f"I.{fname} needs an {' or '.join(map(str, cls.dtypes))} "
                                  f"value, got {describe(x)} (type a constant with I.cast)")
        return lw.value(cls.name, [lw.as_scalar(x, where)], {"fn": fname},
                        what=f"I.{fname}", node=node)
    return handler


CALLS = {
    "quantize": quantize, "quantized_dot": quantized_dot, "dot": dot, "decode": decode,
    "sum": reduction, "prod": reduction, "max": reduction, "min": reduction,
    "reduce": reduce, "cast": cast, "bitcast": bitcast, "select": select_call,
}
CALLS.update({name: _elementwise_call(cls) for name, cls in O.DSL_CALLS.items()})
CALLS.update({fn: _expanded_call(cls) for cls in O.EXPANDED for fn in cls.functions()})

_BUILTIN_ALTERNATIVE = {"abs": "I.abs", "min": "I.minimum", "max": "I.maximum",
                        "int": "I.cast", "float": "I.cast", "bool": "I.cast", "len": ".shape"}


def static_builtin(lw, node, name):
    """``abs/min/max/int/float/bool/len`` on Python constants (evaluated by Python)."""
    from .scope import is_static
    from .scope import ShapeProxy
    if node.keywords:
        raise lw.error(node.keywords[0], f"{name}() takes no keyword arguments here")
    args = [lw.expr(a) for a in node.args]
    if name == "len" and len(args) == 1 and isinstance(args[0], ShapeProxy):
        return args[0].value.type.rank
    for v, where in zip(args, node.args):
        if not is_static(v) or not isinstance(v, (bool, int, float, tuple)):
            raise lw.error(where, f"the builtin {name}() only takes Python constants inside "
                                  f"a kernel; use {_BUILTIN_ALTERNATIVE[name]}")
    try:
        return getattr(builtins, name)(*args)
    except Exception as e:
        raise lw.error(node, f"{name}() on Python constants failed: {e}") from None
