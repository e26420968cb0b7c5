"""``canonicalize``: constant folding and algebraic identities that are exact.

Folding evaluates an op whose operands are all constants with the scalar-semantics
table (``ninfer_ir.semantics``), the same rules the interpreter runs. A result that is
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

from ninfer_ir import semantics
from ninfer_ir.builder import Builder
from ninfer_ir.ir import Operation
from ninfer_ir.types import ScalarType, ShapedType, bf16, bool_, index

from .analysis import attached, const_value, defining_op
from .manager import Pass

_BINARY = frozenset(semantics.BINARY)
_UNARY = frozenset(semantics.UNARY)


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
        if op.name == "dim":
            d = op.operands[0].type.shape[op.attrs["axis"]]
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
        name = op.name
        if name in _BINARY:
            out = semantics.binary(name, vals[0], vals[1], t)
        elif name in _UNARY:
            out = semantics.unary(name, vals[0], t)
        elif name == "cmp":
            out = semantics.compare(op.attrs["pred"], vals[0], vals[1], op.operands[0].type)
        elif name == "select":
            out = semantics.select(vals[0], vals[1], vals[2], op.operands[1].type)
        elif name == "cast":
            out = semantics.cast(vals[0], op.operands[0].type, op.attrs["to"])
        elif name == "bitcast":
            out = semantics.bitcast(vals[0], op.operands[0].type, op.attrs["to"]).reshape(())
        else:
            return False
        if rt.is_float and bool(np.isnan(out)):
            return False
        if rt.is_float and not _exact_float_constant(op, out, rt):
            return False
        return _replace_with_constant(op, semantics.to_python(out, rt), rt)

    # -- identities ---------------------------------------------------------------
    def _identity(self, op: Operation) -> bool:
        name = op.name
        if len(op.results) != 1 or op.regions:
            return False
        rt = op.result.type
        ops = op.operands
        et = _elem_type(op.result)

        def use(v):
            if v.type != rt:
                return False
            op.result.replace_all_uses_with(v)
            op.erase()
            return True

        if name in ("neg", "not"):
            inner = defining_op(ops[0])
            if inner is not None and inner.name == name:
                return use(inner.operands[0])
            return False
        if name in ("cast", "bitcast"):
            if _elem_type(ops[0]) is op.attrs["to"]:
                return use(ops[0])
            inner = defining_op(ops[0])
            if (name == "bitcast" and inner is not None and inner.name == "bitcast"
                    and _elem_type(inner.operands[0]) is op.attrs["to"]):
                return use(inner.operands[0])
            return False
        if name == "select":
            c = const_value(ops[0])
            if isinstance(c, bool):
                return use(ops[1] if c else ops[2])
            if ops[1] is ops[2]:
                return use(ops[1])
            return False
        if name == "cmp":
            x, y = ops
            if x is y and isinstance(rt, ScalarType) and _int_scalar_type(x.type):
                return _replace_with_constant(op, op.attrs["pred"] in ("eq", "le", "ge"), bool_)
            return False
        if et is bool_ and len(ops) == 2:
            return self._bool_identity(op, use)
        if not (isinstance(et, ScalarType) and et.is_int) or len(ops) != 2:
            return False
        x, y = ops
        scalar = isinstance(rt, ScalarType)
        if name in ("add", "or", "xor"):
            if _is_const(y, 0):
                return use(x)
            if _is_const(x, 0):
                return use(y)
        if name in ("sub", "shl", "shr") and _is_const(y, 0):
            return use(x)
        if name == "mul":
            if _is_const(y, 1):
                return use(x)
            if _is_const(x, 1):
                return use(y)
            if scalar and (_is_const(x, 0) or _is_const(y, 0)):
                return _replace_with_constant(op, 0, rt)
        if name == "div" and _is_const(y, 1):
            return use(x)
        if name == "and":
            if _all_ones(y):
                return use(x)
            if _all_ones(x):
                return use(y)
            if scalar and (_is_const(x, 0) or _is_const(y, 0)):
                return _replace_with_constant(op, 0, rt)
        if x is y:
            if name in ("and", "or", "min", "max"):
                return use(x)
            if scalar and name in ("sub", "xor"):
                return _replace_with_constant(op, 0, rt)
        return False

    def _bool_identity(self, op, use) -> bool:
        x, y = op.operands
        keep = {"and": True, "or": False, "xor": False}.get(op.name)
        if keep is None:
            return False
        if const_value(y) is keep:
            return use(x)
        if const_value(x) is keep:
            return use(y)
        if x is y and op.name in ("and", "or"):
            return use(x)
        return False

    # -- structured control flow -------------------------------------------------------
    def _structure(self, op: Operation) -> bool:
        if op.name == "check" and const_value(op.operands[0]) is True:
            op.erase()
            return True
        if op.name == "if":
            c = const_value(op.operands[0])
            if isinstance(c, bool):
                _inline_region(op, op.regions[0 if c else 1].block, {})
                return True
            return False
        if op.name == "for":
            lb, ub, step = (const_value(v) for v in op.operands[:3])
            if not all(isinstance(x, int) and not isinstance(x, bool) for x in (lb, ub, step)):
                return False
            if step == 0:
                return False
            trips = len(range(lb, ub, step))
            body = op.regions[0].block
            if trips == 0:
                for r, init in zip(op.results, op.operands[3:]):
                    r.replace_all_uses_with(init)
                op.erase()
                return True
            if trips == 1:
                mapping = {body.args[0]: op.operands[0]}
                mapping.update(zip(body.args[1:], op.operands[3:]))
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
