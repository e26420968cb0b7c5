"""``canonicalize``: constant folding and algebraic identities that are exact.

Folding evaluates an op whose operands are all constants with the scalar-semantics
table (``ninfer_ir.numerics.semantics``), the same rules the interpreter runs. A result that is
a NaN is not folded (a constant prints as ``nan`` and would lose its sign and
payload bits), and nothing involving ``bf16`` words is folded.

Identities are applied only where they hold bit for bit for the dtype:

* integers (wrapping): ``x+0``, ``x-0``, ``x*1``, ``x/1``, ``x|0``, ``x^0``, ``x&~0``,
  shifts by 0, ``x&x``, ``x|x``, ``min(x,x)``, ``max(x,x)`` give ``x``; for scalars also
  ``x*0``, ``x&0`` give 0, ``x-x``, ``x^x`` give 0 and ``cmp(x, x)`` its constant.
  Never for floats: ``x+0.0`` is not ``x`` for ``x = -0.0``, ``x*1.0`` quiets a
  signalling NaN, ``min(x, x)`` rewrites a NaN's payload.
* bool: ``x and true``, ``x or false``, ``x xor false``, ``x and x``, ``x or x`` give ``x``.
* any dtype: ``neg(neg(x))``, ``not(not(x))``, a cast or bitcast to the operand's own
  type, ``bitcast(bitcast(x))`` back to ``x``'s type, ``select`` on a constant condition
  or with equal arms, ``dim`` of a static dimension.

Structure: a ``check`` of ``true`` is removed, an ``if`` on a constant condition is replaced by the region it takes, a
``for`` with constant bounds that runs zero times by its initial values, and one that
runs exactly once by its body.
"""
from __future__ import annotations

import math

import numpy as np

from ninfer_ir import ops as O
from ninfer_ir.numerics import semantics
from ninfer_ir.builder import Builder
from ninfer_ir.ir import Operation
from ninfer_ir.types import ScalarType, ShapedType, bf16, bool_, index

from .analysis import attached, const_value, defining_op
from .manager import Pass


def _int_scalar_type(t) -> bool:
    return isinstance(t, ScalarType) and t.is_int


def _elem_type(v):
    t = v.type
    return t.dtype if isinstance(t, ShapedType) else t


def _is_const(v, value) -> bool:
    c = const_value(v)
    return c is not None and not isinstance(c, bool) and isinstance(c, int) and c == value


def _all_ones(v) -> bool:
    t = v.type
    if not _int_scalar_type(t):
        return False
    c = const_value(v)
    if not isinstance(c, int) or isinstance(c, bool):
        return False
    lo, hi = semantics.int_range(t)
    return c == (-1 if lo < 0 else hi)


def _is_unit(v, unit) -> bool:
    """``v`` is the constant ``unit`` of a ``BinaryOp`` hook (an int, or ``ONES``)."""
    return _all_ones(v) if unit == O.ONES else _is_const(v, unit)


class Canonicalize(Pass):
    name = "canonicalize"

    def __init__(self, max_rounds: int = 8):
        self.max_rounds = max_rounds

    def run(self, module):
        stats = {"folded": 0, "simplified": 0, "regions": 0}
        for func in module.funcs:
            for _ in range(self.max_rounds):
                changed = self._round(func, stats)
                if not changed:
                    break
        return stats

    # -- one sweep ------------------------------------------------------------
    def _round(self, func, stats) -> bool:
        changed = False
        for op in list(func.walk()):
            if op is func or not attached(op, func):
                continue
            if self._fold(op):
                stats["folded"] += 1
                changed = True
            elif self._identity(op):
                stats["simplified"] += 1
                changed = True
            elif self._structure(op):
                stats["regions"] += 1
                changed = True
        return changed

    # -- constant folding ------------------------------------------------------
    def _fold(self, op: Operation) -> bool:
        if isinstance(op, O.DimOp):
            d = op.source.type.shape[op.axis]
            if isinstance(d, int):
                return _replace_with_constant(op, d, index)
            return False
        if op.regions or len(op.results) != 1 or not op.operands:
            return False
        rt = op.result.type
        if not isinstance(rt, ScalarType) or rt is bf16:
            return False
        vals = []
        for v in op.operands:
            if not isinstance(v.type, ScalarType) or v.type is bf16:
                return False
            c = const_value(v)
            if c is None:
                return False
            vals.append(_constant_array(c, v.type))
        t = op.operands[-1].type
        if isinstance(op, O.BinaryOp):
            out = semantics.binary(op.name, vals[0], vals[1], t)
        elif isinstance(op, O.UnaryOp):
            out = semantics.unary(op.name, vals[0], t)
        elif isinstance(op, O.CmpOp):
            out = semantics.compare(op.pred, vals[0], vals[1], op.lhs.type)
        elif isinstance(op, O.SelectOp):
            out = semantics.select(vals[0], vals[1], vals[2], op.true_value.type)
        elif isinstance(op, O.BitcastOp):
            out = semantics.bitcast(vals[0], op.source.type, op.to).reshape(())
        elif isinstance(op, O.CastOp):
            out = semantics.cast(vals[0], op.source.type, op.to)
        else:
            return False
        if rt.is_float and bool(np.isnan(out)):
            return False
        if rt.is_float and not _exact_float_constant(op, out, rt):
            return False
        return _replace_with_constant(op, semantics.to_python(out, rt), rt)

    # -- identities ---------------------------------------------------------------
    def _identity(self, op: Operation) -> bool:
        if len(op.results) != 1 or op.regions:
            return False
        rt = op.result.type

        def use(v):
            if v.type != rt:
                return False
            op.result.replace_all_uses_with(v)
            op.erase()
            return True

        if isinstance(op, O.UnaryOp):
            inner = defining_op(op.operand)
            if op.involution and type(inner) is type(op):
                return use(inner.operand)
            return False
        if isinstance(op, O.CastOp):
            if _elem_type(op.source) is op.to:
                return use(op.source)
            inner = defining_op(op.source)
            if (isinstance(op, O.BitcastOp) and isinstance(inner, O.BitcastOp)
                    and _elem_type(inner.source) is op.to):
                return use(inner.source)
            return False
        if isinstance(op, O.SelectOp):
            c = const_value(op.cond)
            if isinstance(c, bool):
                return use(op.true_value if c else op.false_value)
            if op.true_value is op.false_value:
                return use(op.true_value)
            return False
        if isinstance(op, O.CmpOp):
            x, y = op.lhs, op.rhs
            if x is y and isinstance(rt, ScalarType) and _int_scalar_type(x.type):
                return _replace_with_constant(op, op.pred in ("eq", "le", "ge"), bool_)
            return False
        if not isinstance(op, O.BinaryOp):
            return False
        et = _elem_type(op.result)
        if et is bool_:
            return self._bool_identity(op, use)
        if not (isinstance(et, ScalarType) and et.is_int):
            return False
        return self._int_identity(op, use, isinstance(rt, ScalarType))

    def _int_identity(self, op, use, scalar: bool) -> bool:
        """The identities an integer binary op declares (``BinaryOp`` hooks)."""
        x, y = op.lhs, op.rhs
        if op.identity is not None:
            if _is_unit(y, op.identity):
                return use(x)
            if op.commutative and _is_unit(x, op.identity):
                return use(y)
        if op.absorbing is not None and scalar \
                and (_is_unit(x, op.absorbing) or _is_unit(y, op.absorbing)):
            return _replace_with_constant(op, op.absorbing, op.result.type)
        if x is y:
            if op.idempotent:
                return use(x)
            if scalar and op.self_inverse:
                return _replace_with_constant(op, 0, op.result.type)
        return False

    def _bool_identity(self, op, use) -> bool:
        if op.identity is None:
            return False
        x, y = op.lhs, op.rhs
        keep = op.identity == O.ONES      # the identity as a bool: all ones is true
        if const_value(y) is keep:
            return use(x)
        if op.commutative and const_value(x) is keep:
            return use(y)
        if x is y and op.idempotent:
            return use(x)
        return False

    # -- structured control flow -------------------------------------------------------
    def _structure(self, op: Operation) -> bool:
        if isinstance(op, O.CheckOp) and const_value(op.cond) is True:
            op.erase()
            return True
        if isinstance(op, O.IfOp):
            c = const_value(op.cond)
            if isinstance(c, bool):
                _inline_region(op, op.then_block if c else op.else_block, {})
                return True
            return False
        if isinstance(op, O.ForOp):
            lb, ub, step = (const_value(v) for v in (op.lower, op.upper, op.step))
            if not all(isinstance(x, int) and not isinstance(x, bool) for x in (lb, ub, step)):
                return False
            if step == 0:
                return False
            trips = len(range(lb, ub, step))
            body = op.body
            if trips == 0:
                for r, init in zip(op.results, op.inits):
                    r.replace_all_uses_with(init)
                op.erase()
                return True
            if trips == 1:
                mapping = {body.args[0]: op.lower}
                mapping.update(zip(body.args[1:], op.inits))
                _inline_region(op, body, mapping)
                return True
        return False


def _constant_array(value, t: ScalarType):
    """A constant's value as a 0-d array of its type, read as the interpreter reads it
    (an integer written for a float type converts with one rounding)."""
    if t.is_float and isinstance(value, int) and not isinstance(value, bool):
        src = "i64" if -(1 << 63) <= value < (1 << 63) else "u64"
        from ninfer_ir.types import scalar
        st = scalar(src)
        return semantics.cast(np.asarray(value, dtype=st.np_dtype), st, t)
    return np.asarray(value, dtype=t.np_dtype)


def _exact_float_constant(op, out, rt) -> bool:
    """The folded value survives the trip through a printed constant bit for bit."""
    v = semantics.to_python(out, rt)
    if math.isinf(v) or v == 0.0:
        return True
    back = np.asarray(v, dtype=rt.np_dtype)
    return back.tobytes() == np.asarray(out, dtype=rt.np_dtype).tobytes()


def _replace_with_constant(op: Operation, value, t) -> bool:
    b = Builder().before(op)
    c = b.constant(value, t, name=op.results[0].name_hint)
    op.result.replace_all_uses_with(c)
    op.erase()
    return True


def _inline_region(op: Operation, block, mapping: dict) -> None:
    """Replace ``op`` by the ops of ``block`` (block arguments by ``mapping``); the values
    its ``yield`` gives replace ``op``'s results."""
    for a, v in mapping.items():
        a.replace_all_uses_with(v)
    parent = op.parent
    pos = parent.ops.index(op)
    term = block.ops[-1]
    for inner in list(block.ops[:-1]):
        block.remove(inner)
        parent.insert(pos, inner)
        pos += 1
    yielded = list(term.operands)
    for r, v in zip(op.results, yielded):
        r.replace_all_uses_with(v)
    term.drop_operands()
    op.erase()
