"""The numpy side of the oracle: the eager forms of the DSL calls, the numerics they
share with the interpreter, and the checks of numpy arguments against IR types
(``bind_arguments``, the interpreter's call boundary).

``quantize``, ``quantized_dot``, ``dot``, ``reduce``, ``cast`` and ``bitcast`` check
their arguments the way the verifier checks the op (same wording, raised as
``VerifyError``) and then call exactly the functions the interpreter's rules call:
``numerics.quantized`` for the two quantized ops, ``numerics.semantics`` for every
scalar rule, ``numerics.folds`` for the ordered contractions and ``numerics.decode``
for a grouped row. A bad run-time value (NaN into quantize) raises ``DomainError``.
Inputs are only read.
"""
from __future__ import annotations

import numpy as np

from ninfer_ir import ops as O
from ninfer_ir.errors import VerifyError
from ninfer_ir.numerics import quantized, semantics
from ninfer_ir.numerics.decode import decode_values, family, signature, values_problem
from ninfer_ir.numerics.folds import dot_values, reduce_values
from ninfer_ir.quant import QUANTIZE_TARGETS, QuantSchema, dot_pair, pairs_text
from ninfer_ir.sumorder import SumOrder
from ninfer_ir.types import (BufferType, ScalarType, ShapedType, bool_, f32, f64, from_numpy,
                             i64)

from ninfer_ir.backends.signature import bind_call, out_shape, snapshot_tensors

__all__ = ["quantize", "quantized_dot", "dot", "reduce", "cast", "bitcast", "bind_arguments",
           "decode", "select", "elementwise_function"]


# --- argument checks in the verifier's words -------------------------------------

def _describe(val) -> str:
    if isinstance(val, QuantSchema):
        return f"the quant schema {val}"
    if isinstance(val, ScalarType):
        return f"the dtype {val}"
    if isinstance(val, np.ndarray):
        return f"an array {val.dtype}[{','.join(map(str, val.shape))}]"
    return repr(val)


def _fail(op: str, message: str) -> VerifyError:
    return VerifyError(f"'{op}': {message}")


def _format(op: str, key: str, val) -> QuantSchema:
    if val is None:
        raise _fail(op, f"missing attribute '{key}'")
    if not isinstance(val, QuantSchema):
        raise _fail(op, f"attribute '{key}' must be a quant schema (I.quant.*), "
                        f"got {_describe(val)}")
    return val


def _order(op: str, order) -> SumOrder:
    if isinstance(order, SumOrder):
        return order
    if not isinstance(order, str):
        raise _fail(op, f"attribute 'order' must be a string, got {_describe(order)}")
    try:
        return SumOrder.coerce(order)
    except ValueError as e:
        raise _fail(op, f"bad summation order: {e}") from None


def _dtype_attr(op: str, key: str, val) -> ScalarType:
    if not isinstance(val, ScalarType):
        raise _fail(op, f"attribute '{key}' must be a dtype, got {_describe(val)}")
    return val


def _array(op: str, what: str, x) -> np.ndarray:
    if isinstance(x, np.generic):
        return np.asarray(x)
    if not isinstance(x, np.ndarray):
        raise _fail(op, f"{what} must be a numpy array or scalar, got {type(x).__name__}")
    return x


def _source_dtype(op: str, x: np.ndarray, src) -> ScalarType:
    if src is None:
        t = from_numpy(x.dtype)
        if t is None:
            raise _fail(op, f"arrays of numpy dtype {x.dtype} have no IR dtype")
        return t
    src = _dtype_attr(op, "src", src)
    if x.dtype != src.np_dtype:
        raise _fail(op, f"src = {src} needs numpy dtype {src.np_dtype}, got {x.dtype}")
    return src


# --- the eager calls ---------------------------------------------------------------

def quantize(values, format=None) -> np.ndarray:
    """``I.quantize(values, format=I.quant.q8_k)``: f32 ``[G,256]`` -> new u8 ``[G,292]``
    (``I.quant.q8_0``: f32 ``[G,32]`` -> u8 ``[G,34]``)."""
    fmt = _format("quantize", "format", format)
    if fmt not in QUANTIZE_TARGETS:
        raise _fail("quantize", f"attribute 'format' must be a quantize target "
                                f"({', '.join(str(s) for s in QUANTIZE_TARGETS)}), got {fmt}")
    return quantized.quantize(values, fmt)


def quantized_dot(lhs, rhs, lhs_format=None, rhs_format=None, acc_dtype=None,
                  order="seq") -> np.ndarray:
    """Records of a pair of the table (e.g. Q4_K u8 ``[G,144]`` x Q8_K u8 ``[G,292]``)
    -> rank-0 f32, summed in ``order``."""
    lf = _format("quantized_dot", "lhs_format", lhs_format)
    rf = _format("quantized_dot", "rhs_format", rhs_format)
    pair = dot_pair(lf, rf)
    if pair is None:
        raise _fail("quantized_dot", f"lhs_format x rhs_format must be a pair of the table "
                                     f"({pairs_text()}), got {lf} x {rf}")
    acc = _dtype_attr("quantized_dot", "acc_dtype", acc_dtype)
    if acc is not f32:
        raise _fail("quantized_dot", f"acc_dtype must be f32, got {acc}")
    return quantized.quantized_dot(lhs, rhs, pair, order=_order("quantized_dot", order))


def dot(lhs, rhs, order="seq") -> np.ndarray:
    """Sum of ``R(lhs[i]*rhs[i])`` over two 1-D float arrays of one dtype, in ``order``."""
    a, b = _array("dot", "lhs", lhs), _array("dot", "rhs", rhs)
    if a.ndim != 1 or b.ndim != 1:
        raise _fail("dot", f"dot takes two rank-1 vectors, got {_describe(a)} and {_describe(b)}")
    t = from_numpy(a.dtype)
    if a.dtype != b.dtype or t is None or not t.is_float:
        raise _fail("dot", f"dot takes two float vectors of one dtype, got {_describe(a)} "
                           f"and {_describe(b)}")
    if a.shape != b.shape:
        raise _fail("dot", f"vector lengths {a.shape[0]} and {b.shape[0]} differ")
    return dot_values(a, b, t, _order("dot", order))


def reduce(x, kind=None, order="seq") -> np.ndarray:
    """Reduce the last axis of ``x`` with ``kind`` (add/mul/min/max) in ``order``."""
    x = _array("reduce", "operand", x)
    if x.ndim < 1:
        raise _fail("reduce", "needs rank >= 1")
    if kind is None:
        raise _fail("reduce", "missing attribute 'kind'")
    if kind not in O.REDUCE_KINDS:
        raise _fail("reduce", f"unknown reduction {kind!r}; use one of "
                              f"{', '.join(O.REDUCE_KINDS)}")
    t = _source_dtype("reduce", x, None)
    if t is bool_:
        raise _fail("reduce", "cannot reduce bool values")
    return reduce_values(x, kind, t, _order("reduce", order))


def _python_scalar(x):
    """A Python bool/int/float as the kernel frontend types a constant: bool, i64, f64."""
    if isinstance(x, bool):
        return np.asarray(x), bool_
    if isinstance(x, int):
        if not -(1 << 63) <= x < (1 << 63):
            raise _fail("cast", f"{x} does not fit i64")
        return np.asarray(x, dtype=np.int64), i64
    return np.asarray(x, dtype=np.float64), f64


def cast(x, dtype, src=None) -> np.ndarray:
    """Value conversion to ``dtype`` (``semantics.cast``). A Python bool, int or float
    converts from bool, i64 or f64; ``src = I.bf16`` reads u16 words as bf16. Returns
    a new array (rank 0 for a scalar)."""
    to = _dtype_attr("cast", "to", dtype)
    if isinstance(x, (bool, int, float)) and src is None:
        x, s = _python_scalar(x)
    else:
        x = _array("cast", "operand", x)
        s = _source_dtype("cast", x, src)
    return np.array(semantics.cast(x, s, to), dtype=to.np_dtype)


def bitcast(x, dtype, src=None) -> np.ndarray:
    """Reinterpret the bits of ``x`` as ``dtype`` (equal widths, no bool)."""
    to = _dtype_attr("bitcast", "to", dtype)
    if isinstance(x, (bool, int, float)):
        raise _fail("bitcast", f"a Python {type(x).__name__} has no bit pattern; type it "
                               f"with I.cast first")
    x = _array("bitcast", "operand", x)
    s = _source_dtype("bitcast", x, src)
    if s.bits != to.bits or s is bool_ or to is bool_:
        raise _fail("bitcast", f"bitcast needs equal widths, got {s} to {to}")
    return np.array(semantics.bitcast(x, s, to)).reshape(x.shape)


# --- the call boundary: numpy arguments against a function's parameters ----------

def bind_arguments(func, args, kwargs):
    """Check a call against ``func``'s parameters (``backends/signature.py``).

    Returns ``(values, symbols, outputs)``: the parameter values (read-only views for
    tensors), the symbol bindings ``name -> (size, where)`` and the indices of the
    output buffers allocated here (empty unless the call left them out).
    """
    values, symbols, outputs = bind_call(func, args, kwargs,
                                         lambda v: isinstance(v, np.ndarray),
                                         lambda v: v.flags.writeable)
    snapshot_tensors(func, values, np.may_share_memory, np.copy)
    for k, p in enumerate(func.args):
        if k in outputs:
            values[k] = np.zeros(out_shape(func, k, symbols), dtype=p.type.dtype.np_dtype)
        elif isinstance(p.type, ShapedType) and not isinstance(p.type, BufferType):
            view = values[k].view()
            view.flags.writeable = False
            values[k] = view
    return values, symbols, outputs


# -- decode and elementwise helpers of the facade -------------------------------------

def decode(*rows, format=None, k=None, **named) -> np.ndarray:
    """Eager ``I.decode``: one row of any registered format (operands as the format's
    family takes them, ``numerics.decode.signature``) -> f32[K] (i32[K] for int32)."""
    from ninfer_ir.formats import Format
    rows = list(rows)
    at = next((i for i, a in enumerate(rows) if isinstance(a, Format)), None)
    if format is None and at is not None:      # I.decode(p, s, FMT, K): format positional
        format, rest, rows = rows[at], rows[at + 1:], rows[:at]
        if len(rest) > 1 or (rest and k is not None):
            raise _fail("decode", "takes the row operands, then format and k")
        k = rest[0] if rest else k
    if not isinstance(format, Format):
        raise _fail("decode", f"attribute 'format' must be a registered format "
                              f"(I.formats.get(...)), got {_describe(format)}")
    specs = [op for op in signature(format) if op.kind != "count"]
    for spec in specs[len(rows):]:                 # rows given by name (codes=..., scale=...)
        if spec.name in named:
            rows.append(named.pop(spec.name))
    if named:
        raise _fail("decode", f"a {format.name} decode has no argument "
                              f"{', '.join(map(repr, named))} (or got it twice)")
    if len(rows) != len(specs):
        raise _fail("decode", f"a {format.name} decode takes "
                              f"{', '.join(map(repr, specs))}; got {len(rows)} operand(s)")
    values = []
    for spec, x in zip(specs, rows):
        a = _array("decode", spec.name, x)
        if a.dtype != spec.dtype.np_dtype or a.ndim != (1 if spec.kind == "row" else 0):
            raise _fail("decode", f"{spec.name} must be one {spec.dtype} "
                                  f"{'row' if spec.kind == 'row' else 'scalar'}, got "
                                  f"{_describe(a)}")
        values.append(a)
    if family(format) == "grouped":
        values.append(k)
    problem = values_problem(format, values)
    if problem:
        raise _fail("decode", problem)
    out = decode_values(format, values)
    if family(format) != "grouped" and k is not None and k != out.shape[0]:
        raise _fail("decode", f"the row holds {out.shape[0]} elements, not k = {k!r}")
    return out


def _numeric(op, *xs):
    arrs = [np.asarray(x) for x in xs]
    from ninfer_ir.types import from_numpy
    t = from_numpy(arrs[0].dtype)
    if t is None or any(a.dtype != arrs[0].dtype for a in arrs):
        raise _fail(op, f"operands must share one supported dtype, got "
                        f"{', '.join(str(a.dtype) for a in arrs)}")
    return arrs, t


def elementwise_function(cls):
    """The eager ``I.<cls.dsl_call>`` of a unary or binary op class: its ``semantics``
    rule on numpy arrays of one dtype."""
    name = cls.name
    if issubclass(cls, O.UnaryOp):
        def call(x):
            (x,), t = _numeric(name, x)
            return semantics.unary(name, x, t)
    elif issubclass(cls, O.BinaryOp):
        def call(a, b):
            (a, b), t = _numeric(name, a, b)
            return semantics.binary(name, a, b, t)
    else:
        raise TypeError(f"no eager form for the op class {cls.__name__}")
    call.__name__ = call.__qualname__ = cls.dsl_call
    call.__doc__ = f"Eager ``I.{cls.dsl_call}``: the ``{name}`` op on numpy arrays " \
                   f"({(cls.__doc__ or '').strip() or name})."
    return call


def select(c, a, b) -> np.ndarray:
    (a, b), t = _numeric("select", a, b)
    return semantics.select(np.asarray(c, dtype=np.bool_), a, b, t)


def expanded(cls, fn, x) -> np.ndarray:
    """``fn`` of the expanded family ``cls`` (e.g. ``MathOp``) of an array or scalar,
    elementwise."""
    (x,), t = _numeric(fn, x)
    if t not in cls.dtypes:
        raise _fail(fn, f"takes {' or '.join(map(str, cls.dtypes))} values, got {x.dtype}")
    return cls.lib().evaluate(fn, x, t)
