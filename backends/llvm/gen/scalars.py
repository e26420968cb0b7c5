"""The scalar half of the CPU emitter: IR scalar types as LLVM types, constants, and
one small function per elementwise op.

Each rule reproduces ``ninfer_ir.numerics.semantics`` exactly, without fast-math flags:

- integer ``div``/``rem`` divide by a guarded divisor (1 where the divisor is 0 or
  where ``MIN / -1`` would trap), then select 0 for a zero divisor; ``MIN / -1``
  is then ``MIN / 1 == MIN`` and every guarded remainder is 0, as specified;
- shifts read the amount as unsigned; ``>= width`` selects 0 (``shl``, unsigned
  ``shr``) or clamps a signed ``shr`` to ``width - 1`` (the sign fill);
- float ``min``/``max`` are ``llvm.minimum``/``llvm.maximum`` with a NaN result
  replaced by the dtype's canonical quiet NaN (what the interpreter returns);
- float comparisons are ordered (``ne`` is unordered-or-unequal);
- float -> int casts are ``llvm.fptosi.sat``/``fptoui.sat`` (truncate, saturate,
  NaN -> 0); ``bf16`` goes through f32 (widening is a shift; narrowing rounds to
  nearest even and quiets NaN by setting bit 6 of the upper half);
- a NaN converted to or from f16 keeps its payload the way numpy's binary16
  conversions do (never quieted; narrowing keeps the top payload bits, at least
  1), where the hardware instructions would quiet it.

A NaN produced from non-NaN operands is ``semantics.produced_nan``: what x86-64
computes for ``+ - * /``, and selected explicitly after ``frem``.
Arithmetic on two NaN operands returns a NaN whose payload the hardware picks (IEEE
leaves it open, and LLVM may commute the operands); one NaN operand gives that NaN,
quieted, as in the interpreter.

Register types: ``bool`` is ``i1``, ``bf16`` its ``i16`` word, ``f16`` is ``half``.
In memory ``bool`` is one byte (0 or 1).
"""
from __future__ import annotations

import llvmlite.ir as ir
import numpy as np

from ninfer_ir.numerics import semantics
from ninfer_ir.types import ScalarType, bf16, bool_, f16, f32, f64, i64, u64

__all__ = ["reg_type", "mem_type", "constant", "const_int", "to_register", "to_memory",
           "SCALAR_RULES", "cast", "float_nan", "float_minmax"]

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I16 = ir.IntType(16)
I32 = ir.IntType(32)
I64 = ir.IntType(64)

_FLOATS = {f16: ir.HalfType(), f32: ir.FloatType(), f64: ir.DoubleType()}
_SUFFIX = {16: "f16", 32: "f32", 64: "f64"}


def reg_type(t: ScalarType) -> ir.Type:
    if t is bool_:
        return I1
    if t in _FLOATS:
        return _FLOATS[t]
    return ir.IntType(t.bits)


def mem_type(t: ScalarType) -> ir.Type:
    return I8 if t is bool_ else reg_type(t)


def const_int(ty: ir.IntType, value: int) -> ir.Constant:
    """An integer constant given as any Python int (wrapped to the two's complement)."""
    w = ty.width
    value &= (1 << w) - 1
    if value >= 1 << (w - 1) and w > 1:
        value -= 1 << w
    return ir.Constant(ty, value)


def _bits_constant(t: ScalarType, arr) -> ir.Constant:
    """The constant whose bit pattern is the numpy scalar ``arr`` of dtype ``t``."""
    if t is bool_:
        return ir.Constant(I1, int(bool(arr)))
    word = int(np.asarray(arr, dtype=t.np_dtype).reshape(1).view(f"u{t.bits // 8}")[0])
    c = const_int(ir.IntType(t.bits), word)
    return c.bitcast(_FLOATS[t]) if t in _FLOATS else c


def constant(t: ScalarType, value) -> ir.Constant:
    """The ``constant`` op's value, converted exactly as the interpreter does."""
    if t.is_float and isinstance(value, int) and not isinstance(value, bool):
        src = i64 if -(1 << 63) <= value < (1 << 63) else u64
        arr = semantics.cast(np.asarray(value, dtype=src.np_dtype), src, t)
    elif t is bf16:
        arr = semantics.cast(np.asarray(value, dtype=np.float64), f64, bf16)
    else:
        arr = np.asarray(value, dtype=t.np_dtype)
    return _bits_constant(t, arr)


def float_nan(t: ScalarType) -> ir.Constant:
    return _bits_constant(t, np.asarray(np.nan, dtype=t.np_dtype))


def to_register(b: ir.IRBuilder, v, t: ScalarType):
    """A value loaded from memory as its register form."""
    return b.icmp_unsigned("!=", v, ir.Constant(I8, 0)) if t is bool_ else v


def to_memory(b: ir.IRBuilder, v, t: ScalarType):
    return b.zext(v, I8) if t is bool_ else v


def intrinsic(b: ir.IRBuilder, name: str, ret: ir.Type, args):
    module = b.module
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ret, [a.type for a in args]), name=name)
    return b.call(fn, list(args))


def _fsuffix(ty) -> str:
    return {ir.HalfType: "f16", ir.FloatType: "f32", ir.DoubleType: "f64"}[type(ty)]


def _signed(t: ScalarType) -> bool:
    return t.kind in ("int", "index")


# --- binary rules ------------------------------------------------------------------

def _arith(fop, iop):
    def rule(b, t, x, y):
        return getattr(b, fop)(x, y) if t.is_float else getattr(b, iop)(x, y)
    return rule


def _guarded_divisor(b, t, x, y):
    ty = x.type
    zero = ir.Constant(ty, 0)
    bad = b.icmp_unsigned("==", y, zero)
    if _signed(t):
        lo = const_int(ty, 1 << (t.bits - 1))
        overflow = b.and_(b.icmp_unsigned("==", x, lo), b.icmp_signed("==", y, const_int(ty, -1)))
        bad = b.or_(bad, overflow)
    return b.select(bad, ir.Constant(ty, 1), y)


def _div(b, t, x, y):
    if t.is_float:
        return b.fdiv(x, y)
    d = _guarded_divisor(b, t, x, y)
    q = b.sdiv(x, d) if _signed(t) else b.udiv(x, d)
    zero = ir.Constant(x.type, 0)
    return b.select(b.icmp_unsigned("==", y, zero), zero, q)


def _rem(b, t, x, y):
    if t.is_float:   # frem is a libm fmod: pin the NaN of x % 0 and inf % y
        r = b.frem(x, y)
        produced = b.and_(b.fcmp_unordered("uno", r, r), b.fcmp_ordered("ord", x, y))
        return b.select(produced, _bits_constant(t, semantics.produced_nan(t)), r)
    d = _guarded_divisor(b, t, x, y)
    return b.srem(x, d) if _signed(t) else b.urem(x, d)


def float_minmax(b: ir.IRBuilder, which: str, x, y):
    """``llvm.minimum``/``llvm.maximum`` (``which``: "min" or "max"): -0 < +0, and a NaN
    (of a payload LLVM picks) when either operand is one."""
    return intrinsic(b, f"llvm.{which}imum.{_fsuffix(x.type)}", x.type, [x, y])


def _minmax(which):
    def rule(b, t, x, y):
        if t.is_float:
            r = float_minmax(b, which, x, y)
            return b.select(b.fcmp_unordered("uno", x, y), float_nan(t), r)
        pred = "<" if which == "min" else ">"
        cmp = b.icmp_signed(pred, x, y) if _signed(t) else b.icmp_unsigned(pred, x, y)
        return b.select(cmp, x, y)
    return rule


def _shl(b, t, x, y):
    width = ir.Constant(x.type, t.bits)
    big = b.icmp_unsigned(">=", y, width)
    safe = b.select(big, ir.Constant(x.type, 0), y)
    return b.select(big, ir.Constant(x.type, 0), b.shl(x, safe))


def _shr(b, t, x, y):
    width = ir.Constant(x.type, t.bits)
    big = b.icmp_unsigned(">=", y, width)
    if _signed(t):
        return b.ashr(x, b.select(big, ir.Constant(x.type, t.bits - 1), y))
    safe = b.select(big, ir.Constant(x.type, 0), y)
    return b.select(big, ir.Constant(x.type, 0), b.lshr(x, safe))


def _bitwise(name):
    def rule(b, t, x, y):
        return getattr(b, name)(x, y)
    return rule


BINARY = {
    "add": _arith("fadd", "add"), "sub": _arith("fsub", "sub"), "mul": _arith("fmul", "mul"),
    "div": _div, "rem": _rem, "min": _minmax("min"), "max": _minmax("max"),
    "and": _bitwise("and_"), "or": _bitwise("or_"), "xor": _bitwise("xor"),
    "shl": _shl, "shr": _shr,
}


# --- unary rules ---------------------------------------------------------------------

def _neg(b, t, x):
    return b.fneg(x) if t.is_float else b.sub(ir.Constant(x.type, 0), x)


def _abs(b, t, x):
    if t.is_float:
        return intrinsic(b, f"llvm.fabs.{_fsuffix(x.type)}", x.type, [x])
    if not _signed(t):
        return x
    neg = b.sub(ir.Constant(x.type, 0), x)
    return b.select(b.icmp_signed("<", x, ir.Constant(x.type, 0)), neg, x)


def _not(b, t, x):
    return b.xor(x, ir.Constant(x.type, -1 if t is not bool_ else 1))


def _sqrt(b, t, x):
    """``llvm.sqrt`` (x86 ``sqrtss``/``sqrtps``: correctly rounded, a NaN operand comes
    back quieted); a negative operand's NaN is selected, not left to the instruction."""
    r = intrinsic(b, f"llvm.sqrt.{_fsuffix(x.type)}", x.type, [x])
    negative = b.fcmp_ordered("<", x, ir.Constant(x.type, 0.0))
    return b.select(negative, _bits_constant(t, semantics.produced_nan(t)), r)


UNARY = {"neg": _neg, "abs": _abs, "not": _not, "sqrt": _sqrt}

_FCMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def compare(b, pred: str, t: ScalarType, x, y):
    op = _FCMP[pred]
    if t.is_float:
        if pred == "ne":
            return b.fcmp_unordered("!=", x, y)
        return b.fcmp_ordered(op, x, y)
    if _signed(t):
        return b.icmp_signed(op, x, y)
    return b.icmp_unsigned(op, x, y)


# --- casts ------------------------------------------------------------------------------

def _bf16_to_f32(b, word):
    return b.bitcast(b.shl(b.zext(word, I32), ir.Constant(I32, 16)), ir.FloatType())


def _f32_to_bf16(b, x):
    bits = b.bitcast(x, I32)
    upper = b.lshr(bits, ir.Constant(I32, 16))
    lsb = b.and_(upper, ir.Constant(I32, 1))
    rounded = b.lshr(b.add(b.add(bits, ir.Constant(I32, 0x7FFF)), lsb), ir.Constant(I32, 16))
    quiet = b.or_(upper, ir.Constant(I32, 0x40))
    isnan = b.fcmp_unordered("uno", x, x)
    return b.trunc(b.select(isnan, quiet, rounded), I16)


def _f64_to_half(b, x):
    """binary64 -> binary16 with one rounding: narrow to binary32 rounding to odd
    (exact enough, as 24 >= 11 + 2 bits), then round to nearest even."""
    f = b.fptrunc(x, ir.FloatType())
    back = b.fpext(f, ir.DoubleType())
    bits = b.bitcast(f, I32)
    too_big = b.fcmp_ordered(">", intrinsic(b, "llvm.fabs.f64", back.type, [back]),
                             intrinsic(b, "llvm.fabs.f64", x.type, [x]))
    toward_zero = b.select(too_big, b.sub(bits, ir.Constant(I32, 1)), bits)
    inexact = b.fcmp_ordered("!=", back, x)
    odd = b.select(inexact, b.or_(toward_zero, ir.Constant(I32, 1)), toward_zero)
    return b.fptrunc(b.bitcast(odd, ir.FloatType()), ir.HalfType())


def _half_nan_widened(b, x, to):
    """The interpreter's f16 -> f32/f64 of a NaN: payload kept, never quieted."""
    h = b.zext(b.bitcast(x, I16), I64)
    sign = b.shl(b.and_(h, ir.Constant(I64, 0x8000)), ir.Constant(I64, to.bits - 16))
    mant = b.and_(h, ir.Constant(I64, 0x3FF))
    if to is f32:
        body = b.or_(ir.Constant(I64, 0x7F800000), b.shl(mant, ir.Constant(I64, 13)))
        return b.bitcast(b.trunc(b.or_(sign, body), I32), reg_type(to))
    body = b.or_(const_int(I64, 0x7FF << 52), b.shl(mant, ir.Constant(I64, 42)))
    return b.bitcast(b.or_(sign, body), reg_type(to))


def _half_nan_narrowed(b, x, src):
    """The interpreter's f32/f64 -> f16 of a NaN: the top payload bits, at least 1."""
    w = ir.IntType(src.bits)
    bits = b.bitcast(x, w)
    sign = b.trunc(b.lshr(bits, ir.Constant(w, src.bits - 16)), I16)
    sign = b.and_(sign, ir.Constant(I16, 0x8000))
    shift = 13 if src is f32 else 42
    mant = b.trunc(b.and_(b.lshr(bits, ir.Constant(w, shift)), ir.Constant(w, 0x3FF)), I16)
    mant = b.select(b.icmp_unsigned("==", mant, ir.Constant(I16, 0)), ir.Constant(I16, 1), mant)
    return b.bitcast(b.or_(b.or_(sign, ir.Constant(I16, 0x7C00)), mant), ir.HalfType())


def _float_to_float(b, x, src, to):
    dst = reg_type(to)
    if to.bits > src.bits:
        r = b.fpext(x, dst)
        if src is f16:
            r = b.select(b.fcmp_unordered("uno", x, x), _half_nan_widened(b, x, to), r)
        return r
    r = _f64_to_half(b, x) if src is f64 and to is f16 else b.fptrunc(x, dst)
    if to is f16:
        r = b.select(b.fcmp_unordered("uno", x, x), _half_nan_narrowed(b, x, src), r)
    return r


def cast(b: ir.IRBuilder, x, src: ScalarType, to: ScalarType):
    """``semantics.cast`` on a register value."""
    if src is to:
        return x
    if src is bf16:
        return cast(b, _bf16_to_f32(b, x), f32, to)
    if to is bf16:
        return _f32_to_bf16(b, cast(b, x, src, f32))
    if to is bool_:
        if src.is_float:
            return b.fcmp_unordered("!=", x, ir.Constant(x.type, 0.0))
        return b.icmp_unsigned("!=", x, ir.Constant(x.type, 0))
    dst = reg_type(to)
    if src is bool_:
        return b.uitofp(x, dst) if to.is_float else b.zext(x, dst)
    if to.is_float and src.is_float:
        return _float_to_float(b, x, src, to)
    if to.is_float:
        return b.sitofp(x, dst) if _signed(src) else b.uitofp(x, dst)
    if src.is_float:
        if src is f16:      # exact; the f16 forms of the saturating casts mishandle NaN
            x = b.fpext(x, ir.FloatType())
        kind = "fptosi" if _signed(to) else "fptoui"
        return intrinsic(b, f"llvm.{kind}.sat.i{to.bits}.{_fsuffix(x.type)}", dst, [x])
    if to.bits < src.bits:
        return b.trunc(x, dst)
    if to.bits > src.bits:
        return b.sext(x, dst) if _signed(src) else b.zext(x, dst)
    return x


def bitcast(b: ir.IRBuilder, x, src: ScalarType, to: ScalarType):
    dst = reg_type(to)
    return x if x.type == dst else b.bitcast(x, dst)


# --- the table: op name -> rule(builder, op, operand values) ----------------------------

def _operand_dtype(op):
    return op.operands[-1].type


def _binary_rule(b, op, args):
    return BINARY[op.name](b, _operand_dtype(op), *args)


def _unary_rule(b, op, args):
    return UNARY[op.name](b, _operand_dtype(op), *args)


def _cmp_rule(b, op, args):
    return compare(b, op.pred, _operand_dtype(op), *args)


def _select_rule(b, op, args):
    return b.select(*args)


def _cast_rule(b, op, args):
    return cast(b, args[0], op.source.type, op.to)


def _bitcast_rule(b, op, args):
    return bitcast(b, args[0], op.source.type, op.to)


def _constant_rule(b, op, args):
    return constant(op.result.type, op.value)


SCALAR_RULES = {name: _binary_rule for name in BINARY}
SCALAR_RULES.update({name: _unary_rule for name in UNARY})
SCALAR_RULES.update({"cmp": _cmp_rule, "select": _select_rule, "cast": _cast_rule,
                     "bitcast": _bitcast_rule, "constant": _constant_rule})
