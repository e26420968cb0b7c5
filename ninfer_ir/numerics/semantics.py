"""The scalar-semantics table: the single source of truth for what every elementwise
op computes. The interpreter, constant folding and the emitters' tests use it.

Every rule works on numpy arrays (0-d for scalars) of the op's dtype and never
inherits numpy's type promotion: widths, wrapping, shifts, division and
rounding are explicit here.

- Integers wrap (two's complement). ``div`` truncates toward zero, ``rem`` takes
  the sign of the dividend; a zero divisor gives 0 and ``MIN / -1`` gives ``MIN``.
- Shifts: an amount (read as unsigned) >= the width gives 0 (``shl``, unsigned
  ``shr``) or the sign fill (signed ``shr``).
- Floats: IEEE binary16/32/64 with round-to-nearest-even; no FMA, no flush to zero.
  A NaN produced from non-NaN operands (``0/0``, ``inf - inf``, ``0 * inf``, ``x % 0``,
  ``inf % y``) is ``produced_nan``: sign set, quiet, zero payload (the x86-64 default
  NaN). One NaN operand gives that NaN, quieted. ``sqrt`` is the IEEE square root
  (correctly rounded; -0 gives -0, a negative number ``produced_nan``).
  ``min``/``max`` propagate NaN and order -0 < +0 (IEEE 754-2019 minimum/maximum).
- Comparisons on floats are ordered: any NaN gives false, except ``ne``.
- Casts: int->int wraps or extends; int->float and float->float round to nearest
  even; float->int truncates toward zero and saturates, NaN gives 0; to bool means
  ``!= 0``; bool -> number gives 0 or 1. ``bf16`` is a 16-bit word: it is only
  cast or bitcast, never computed on directly.
"""
from __future__ import annotations

import numpy as np

from ..types import ScalarType, bf16, bool_, f32, index

def int_range(t: ScalarType) -> tuple[int, int]:
    if t.kind == "uint":
        return 0, (1 << t.bits) - 1
    if t.kind in ("int", "index"):
        return -(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1
    if t is bool_:
        return 0, 1
    raise TypeError(f"{t} is not an integer type")


def np_dtype(t: ScalarType) -> np.dtype:
    return t.np_dtype


def _quiet():
    return np.errstate(all="ignore")


def _as(x, t: ScalarType):
    return np.asarray(x, dtype=t.np_dtype)


# -- binary rules ------------------------------------------------------------

def _add(a, b, t):
    return a + b


def _sub(a, b, t):
    return a - b


def _mul(a, b, t):
    return a * b


def _div(a, b, t):
    if t.is_float:
        return a / b
    return _int_divrem(a, b, t)[0]


def _rem(a, b, t):
    if t.is_float:
        return np.fmod(a, b)
    return _int_divrem(a, b, t)[1]


def _int_divrem(a, b, t):
    a, b = np.broadcast_arrays(a, b)
    if t.bits < 64:
        x, y = a.astype(np.int64), b.astype(np.int64)
        zero = y == 0
        ys = np.where(zero, 1, y)
        q = np.abs(x) // np.abs(ys) * np.where((x < 0) != (ys < 0), -1, 1)
        q = np.where(zero, 0, q)
        r = np.where(zero, 0, x - q * ys)
        return q.astype(t.np_dtype), r.astype(t.np_dtype)
    q = np.zeros(a.shape, dtype=t.np_dtype)
    r = np.zeros(a.shape, dtype=t.np_dtype)
    lo, hi = int_range(t)
    for idx in np.ndindex(a.shape):
        x, y = int(a[idx]), int(b[idx])
        if y == 0:
            continue
        qq = abs(x) // abs(y) * (-1 if (x < 0) != (y < 0) else 1)
        q[idx] = (qq - lo) % (hi - lo + 1) + lo
        r[idx] = x - qq * y
    return q, r


def _fminmax(a, b, pick_min):
    nan = np.isnan(a) | np.isnan(b)
    if pick_min:
        lt = (a < b) | ((a == b) & np.signbit(a))
    else:
        lt = (a > b) | ((a == b) & ~np.signbit(a))
    out = np.where(lt, a, b)
    return np.where(nan, np.asarray(np.nan, dtype=a.dtype), out).astype(a.dtype)


def _min(a, b, t):
    if t.is_float:
        return _fminmax(a, b, True)
    return np.minimum(a, b)


def _max(a, b, t):
    if t.is_float:
        return _fminmax(a, b, False)
    return np.maximum(a, b)


def _and(a, b, t):
    return a & b


def _or(a, b, t):
    return a | b


def _xor(a, b, t):
    return a ^ b


def _shift_amount(b, t):
    return b.astype(np.uint64) if t.kind != "uint" else b.astype(np.uint64)


def _shl(a, b, t):
    amt = _shift_amount(b, t)
    big = amt >= t.bits
    safe = np.where(big, 0, amt).astype(t.np_dtype)
    out = np.left_shift(a, safe)
    return np.where(big, np.zeros_like(a), out).astype(t.np_dtype)


def _shr(a, b, t):
    amt = _shift_amount(b, t)
    big = amt >= t.bits
    safe = np.where(big, 0, amt).astype(t.np_dtype)
    out = np.right_shift(a, safe)   # arithmetic for signed numpy dtypes, logical for unsigned
    if t.kind == "uint":
        fill = np.zeros_like(a)
    else:
        fill = np.where(a < 0, np.asarray(-1, dtype=t.np_dtype), np.asarray(0, dtype=t.np_dtype))
    return np.where(big, fill, out).astype(t.np_dtype)


BINARY = {
    "add": _add, "sub": _sub, "mul": _mul, "div": _div, "rem": _rem,
    "min": _min, "max": _max, "and": _and, "or": _or, "xor": _xor,
    "shl": _shl, "shr": _shr,
}


_PRODUCED_NAN_BITS = {16: 0xFE00, 32: 0xFFC00000, 64: 0xFFF8000000000000}
_QUIET_BITS = {16: 0x0200, 32: 0x00400000, 64: 0x0008000000000000}


def produced_nan(t: ScalarType) -> np.ndarray:
    """The NaN of float dtype ``t`` that an op produces from non-NaN operands."""
    bits = _PRODUCED_NAN_BITS[t.bits]
    return np.asarray(bits, dtype=np.dtype(f"u{t.bits // 8}")).view(t.np_dtype)


def quieted(a, t: ScalarType) -> np.ndarray:
    """``a`` (floats of dtype ``t``) with the quiet bit set: a NaN operand's result."""
    u = np.dtype(f"u{t.bits // 8}")
    return (np.asarray(a, t.np_dtype).view(u) | np.asarray(_QUIET_BITS[t.bits], u)).view(
        t.np_dtype)


def binary(name: str, a, b, t: ScalarType):
    """Evaluate binary op ``name`` on values of dtype ``t`` (broadcasting a scalar)."""
    if t is bf16:
        raise TypeError("bf16 values are only cast or bitcast; cast to f32 to compute")
    with _quiet():
        a, b = _as(a, t), _as(b, t)
        r = np.asarray(BINARY[name](a, b, t), dtype=t.np_dtype)
        if t.is_float and name in ("add", "sub", "mul", "div", "rem"):
            nan = np.isnan(r)
            if nan.any():     # numpy leaves a produced NaN to the hardware: pin it
                r = np.where(nan & ~np.isnan(a) & ~np.isnan(b), produced_nan(t), r)
        return r


# -- unary rules -------------------------------------------------------------

def _neg(a, t):
    if t.is_float:
        return np.negative(a)
    return (np.zeros_like(a) - a).astype(t.np_dtype)


def _abs(a, t):
    if t.is_float:
        return np.abs(a)
    if t.kind == "uint":
        return a.copy()
    return np.where(a < 0, _neg(a, t), a).astype(t.np_dtype)


def _not(a, t):
    if t is bool_:
        return ~a
    return np.invert(a)


def _sqrt(a, t):
    """IEEE square root, correctly rounded (numpy's f16 root is the f32 one rounded once,
    exact since 24 >= 2*11+2); -0 gives -0; a negative number gives ``produced_nan``; a
    NaN gives that NaN, quieted."""
    r = np.sqrt(a)
    nan = np.isnan(a)
    r = np.where(~nan & (a < 0), produced_nan(t), r)
    return np.where(nan, quieted(a, t), r).astype(t.np_dtype)


UNARY = {"neg": _neg, "abs": _abs, "not": _not, "sqrt": _sqrt}


def unary(name: str, a, t: ScalarType):
    if t is bf16:
        raise TypeError("bf16 values are only cast or bitcast; cast to f32 to compute")
    with _quiet():
        return np.asarray(UNARY[name](_as(a, t), t), dtype=t.np_dtype)


# -- comparison and select ------------------------------------------------------

_CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
        "gt": np.greater, "ge": np.greater_equal}


def compare(pred: str, a, b, t: ScalarType):
    with _quiet():
        return np.asarray(_CMP[pred](_as(a, t), _as(b, t)), dtype=np.bool_)


def select(c, a, b, t: ScalarType):
    return np.asarray(np.where(np.asarray(c, dtype=np.bool_), _as(a, t), _as(b, t)),
                      dtype=t.np_dtype)


# -- casts -------------------------------------------------------------------------

def _bf16_to_f32(words):
    return (np.asarray(words, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def _f32_to_bf16(x):
    bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    nan = np.isnan(np.asarray(x, dtype=np.float32))
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    quiet = (bits >> 16) | 0x40
    return np.where(nan, quiet, rounded).astype(np.uint16)


def _float_to_int(x, to: ScalarType):
    lo, hi = int_range(to)
    t = np.trunc(np.asarray(x, dtype=np.float64))
    t = np.where(np.isnan(t), 0.0, t)
    limit = 2.0 ** (to.bits if to.kind == "uint" else to.bits - 1)
    below = t <= float(lo)
    above = t >= limit if to.bits == 64 else t >= float(hi)
    inner = np.where(below | above, 0.0, t)
    wide = np.uint64 if to.kind == "uint" else np.int64
    out = inner.astype(wide).astype(to.np_dtype)
    out = np.where(below, np.asarray(lo).astype(to.np_dtype), out)
    out = np.where(above, np.asarray(hi).astype(to.np_dtype), out)
    return np.asarray(out, dtype=to.np_dtype)


def cast(x, src: ScalarType, to: ScalarType):
    """Value conversion from ``src`` to ``to`` (rules in the module docstring)."""
    with _quiet():
        if src is to:
            return _as(x, to)
        if src is bf16:
            return cast(_bf16_to_f32(x), f32, to)
        if to is bf16:    # through f32: the bf16 word of the f32 value, rounded to nearest even
            return _f32_to_bf16(cast(x, src, f32))
        a = _as(x, src)
        if to is bool_:
            return np.asarray(a != 0, dtype=np.bool_)
        if src is bool_:
            return a.astype(to.np_dtype)
        if to.is_float:
            return a.astype(to.np_dtype)   # one correctly rounded conversion
        if src.is_float:
            return _float_to_int(a, to)
        return a.astype(to.np_dtype)      # int -> int: wrap or extend


def bitcast(x, src: ScalarType, to: ScalarType):
    a = _as(x, src)
    return np.ascontiguousarray(a).view(to.np_dtype).reshape(a.shape)


def to_python(value, t: ScalarType):
    """A numpy scalar/0-d array of dtype ``t`` as a Python constant for the IR."""
    v = np.asarray(value, dtype=t.np_dtype).item()
    if t is bool_:
        return bool(v)
    if t.is_int or t is index:
        return int(v)
    return float(v)
