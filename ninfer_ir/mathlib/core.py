"""The vocabulary the math algorithms are written in: ``Val``, a value of one dtype in
some *context*, with the ordinary ops of the IR as Python operators and methods.

A context decides what an op *is*: ``NumpyContext`` evaluates it at once with the
scalar rules of ``ninfer_ir.numerics.semantics`` (what the interpreter runs for every op), and
``IRContext`` emits it with a ``Builder`` (what the ``expand`` pass does). An
algorithm written once against ``Val`` therefore gives, by construction, the same bits
in the interpreter and in every backend that computes the ordinary ops exactly.

Only basic IEEE operations appear: f32/f64 ``add sub mul div``, conversions, integer
bit operations, comparisons and selects; no FMA. Helpers at the end of this file are
the exact double-double building blocks (``two_sum``, ``two_prod``) and the
one final rounding ``round_dd`` (round-to-odd to 53 bits, then RNE to f32, which is
the correctly rounded f32 of ``hi + lo``).
"""
from __future__ import annotations

import numpy as np

from ninfer_ir.builder import Builder, region_with_block
from ninfer_ir.numerics import semantics
from ninfer_ir.types import ScalarType, bool_, f32, f64, i32, i64, u32, u64


class Val:
    """A value of dtype ``t`` in context ``c`` (``v`` is the context's handle)."""
    __slots__ = ("c", "v", "t")

    def __init__(self, c, v, t: ScalarType):
        self.c, self.v, self.t = c, v, t

    def _bin(self, name, other, swap=False):
        o = other if isinstance(other, Val) else self.c.const(other, self.t)
        a, b = (o, self) if swap else (self, o)
        return self.c.op(name, [a, b], {}, self.t)

    def __add__(self, o): return self._bin("add", o)
    def __radd__(self, o): return self._bin("add", o, True)
    def __sub__(self, o): return self._bin("sub", o)
    def __rsub__(self, o): return self._bin("sub", o, True)
    def __mul__(self, o): return self._bin("mul", o)
    def __rmul__(self, o): return self._bin("mul", o, True)
    def __truediv__(self, o): return self._bin("div", o)
    def __rtruediv__(self, o): return self._bin("div", o, True)
    def __and__(self, o): return self._bin("and", o)
    def __or__(self, o): return self._bin("or", o)
    def __xor__(self, o): return self._bin("xor", o)
    def __lshift__(self, o): return self._bin("shl", o)
    def __rshift__(self, o): return self._bin("shr", o)

    def __neg__(self):
        return self.c.op("neg", [self], {}, self.t)

    def abs(self):
        return self.c.op("abs", [self], {}, self.t)

    def sqrt(self):
        """The IEEE square root (the basic ``sqrt`` op: correctly rounded)."""
        return self.c.op("sqrt", [self], {}, self.t)

    def min(self, o):
        return self._bin("min", o)

    def max(self, o):
        return self._bin("max", o)

    def cmp(self, pred, o):
        o = o if isinstance(o, Val) else self.c.const(o, self.t)
        return self.c.op("cmp", [self, o], {"pred": pred}, bool_)

    def lt(self, o): return self.cmp("lt", o)
    def le(self, o): return self.cmp("le", o)
    def gt(self, o): return self.cmp("gt", o)
    def ge(self, o): return self.cmp("ge", o)
    def eq(self, o): return self.cmp("eq", o)
    def ne(self, o): return self.cmp("ne", o)

    def cast(self, to: ScalarType):
        return self if to is self.t else self.c.op("cast", [self], {"to": to}, to)

    def bitcast(self, to: ScalarType):
        return self.c.op("bitcast", [self], {"to": to}, to)


def select(cond: Val, a, b):
    """``a`` where ``cond`` else ``b`` (a Python number takes the other side's dtype)."""
    t = a.t if isinstance(a, Val) else b.t
    a = a if isinstance(a, Val) else cond.c.const(a, t)
    b = b if isinstance(b, Val) else cond.c.const(b, t)
    return cond.c.op("select", [cond, a, b], {}, t)


def branch(cond: Val, then_fn, else_fn) -> tuple:
    """``then_fn()`` where ``cond`` holds, else ``else_fn()``, element by element; each
    returns a tuple of ``Val`` of the same dtypes. It means the select of both (the arms
    are pure and total), but ``then_fn`` is the common case: the IR form is an ``if``
    marked ``likely`` that a backend may decide for a block of elements at once, so the
    other arm costs nothing where no element needs it."""
    return cond.c.branch(cond, then_fn, else_fn)


def bits_const(c, word: int, t: ScalarType) -> Val:
    """The float of dtype ``t`` with the bit pattern ``word`` (NaN, infinities)."""
    return c.const(word, u32 if t is f32 else u64).bitcast(t)


class NumpyContext:
    """Evaluates every op at once on numpy arrays with ``ninfer_ir.numerics.semantics``."""

    def const(self, value, t):
        if t.is_float and isinstance(value, int):
            value = float(value)
        return Val(self, np.asarray(value, dtype=t.np_dtype), t)

    def wrap(self, array, t):
        return Val(self, np.asarray(array, dtype=t.np_dtype), t)

    def op(self, name, args, attrs, t):
        vs = [a.v for a in args]
        src = args[-1].t
        if name in semantics.BINARY:
            r = semantics.binary(name, vs[0], vs[1], src)
        elif name in semantics.UNARY:
            r = semantics.unary(name, vs[0], src)
        elif name == "cmp":
            r = semantics.compare(attrs["pred"], vs[0], vs[1], src)
        elif name == "select":
            r = semantics.select(vs[0], vs[1], vs[2], src)
        elif name == "cast":
            r = semantics.cast(vs[0], src, attrs["to"])
        elif name == "bitcast":
            r = semantics.bitcast(vs[0], src, attrs["to"])
        else:
            raise ValueError(f"the math library does not use '{name}'")
        return Val(self, r, t)


    def branch(self, cond, then_fn, else_fn):
        return tuple(select(cond, a, b) for a, b in zip(then_fn(), else_fn()))


class IRContext:
    """Emits every op with a ``Builder`` (before the ``math`` op being expanded)."""

    def __init__(self, builder):
        self.b = builder
        self.consts = {}

    def const(self, value, t):
        if t.is_float and isinstance(value, int):
            value = float(value)
        key = (t, type(value), value)
        hit = self.consts.get(key)
        if hit is None:
            hit = self.consts[key] = Val(self, self.b.constant(value, t), t)
        return hit

    def wrap(self, value, t):
        return Val(self, value, t)

    def op(self, name, args, attrs, t):
        return Val(self, self.b.value(name, *[a.v for a in args], **attrs), t)

    def branch(self, cond, then_fn, else_fn):
        outer, consts = self.b, self.consts
        regions, arms = [], []
        for fn in (then_fn, else_fn):
            region, block = region_with_block()
            self.b, self.consts = Builder().at_end(block), dict(consts)
            try:
                vals = tuple(fn())
                self.b.create("yield", [v.v for v in vals], result_types=[])
            finally:
                self.b, self.consts = outer, consts
            regions.append(region)
            arms.append(vals)
        types = [v.t for v in arms[0]]
        op = outer.create("if", [cond.v], {"likely": True}, result_types=types, regions=regions)
        return tuple(Val(self, r, t) for r, t in zip(op.results, types))


# -- exact building blocks ------------------------------------------------------------

_SPLIT = float(2 ** 27 + 1)


def two_sum(a: Val, b: Val):
    """s + e == a + b exactly (Knuth), s = fl(a + b)."""
    s = a + b
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    return s, e


def fast_two_sum(a: Val, b: Val):
    """s + e == a + b exactly when |a| >= |b| (or a == 0)."""
    s = a + b
    return s, b - (s - a)


def _split(a: Val):
    c = a * _SPLIT
    hi = c - (c - a)
    return hi, a - hi


def two_prod(a: Val, b: Val):
    """p + e == a * b exactly (Dekker, no FMA) while no intermediate overflows."""
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, e


def round_dd(hi: Val, lo: Val) -> Val:
    """The f32 nearest to ``hi + lo`` (ties to even): ``hi`` is first rounded to odd
    with the sign of ``lo`` as sticky bit, then converted once."""
    bits = hi.bitcast(u64)
    sticky = lo.ne(0.0) & (bits & 1).eq(0)
    away = select(hi.lt(0.0), lo.lt(0.0), lo.gt(0.0))     # |hi + lo| > |hi|
    odd = select(sticky, select(away, bits + 1, bits - 1), bits)
    return odd.bitcast(f64).cast(f32)


_MAGIC = 6755399441055744.0       # 1.5 * 2^52: x + _MAGIC rounds x to an integer
_MAGIC_BITS = 0x4338000000000000


def pow2(k: Val) -> Val:
    """2^k as an f64 for an i64 ``k`` in [-1022, 1023]."""
    return ((k + 1023) << 52).bitcast(f64)


def rne_int(x: Val):
    """(k, n): x rounded to the nearest integer (ties to even), |x| < 2^51, as an f64
    ``k`` and as an i64 ``n`` (read from the bits of x + 1.5 * 2^52: no conversion)."""
    s = x + _MAGIC
    return s - _MAGIC, s.bitcast(i64) - _MAGIC_BITS


def clamp(x: Val, lo: float, hi: float) -> Val:
    """x limited to [lo, hi] by compare and select (a NaN stays NaN)."""
    x = select(x.lt(lo), lo, x)
    return select(x.gt(hi), hi, x)


def copysign(mag: Val, sign_of: Val) -> Val:
    ut = u32 if mag.t is f32 else u64
    top = 1 << (mag.t.bits - 1)
    m = mag.bitcast(ut) & (top - 1)
    s = sign_of.bitcast(ut) & top
    return (m | s).bitcast(mag.t)


__all__ = ["Val", "NumpyContext", "IRContext", "select", "bits_const", "two_sum",
           "fast_two_sum", "two_prod", "round_dd", "pow2", "rne_int", "clamp",
           "copysign",
           "f32", "f64", "i32", "i64", "u32", "u64", "bool_"]
