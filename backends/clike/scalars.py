"""The scalar semantics of ``ninfer_ir.numerics.semantics`` spelled as C helper functions.

``Library`` collects the helpers one emission uses; each is defined once, after the
helpers it calls, and only if used. The helpers are plain C (no target intrinsics):
the few target-dependent primitives (f32/f64 ``+ - * /``, float bit casts, element
loads and stores) come from the emitter's ``PRIMS`` table, so one helper text serves
host C and CUDA. Every rule reproduces the interpreter bit for bit:

- integers wrap: arithmetic is done in the unsigned type of at least 32 bits, so no
  signed overflow (undefined in C) ever happens; ``div``/``rem`` by 0 give 0 and
  ``MIN / -1`` gives ``MIN`` (remainder 0) without trapping;
- shifts read the amount as u64; ``>= width`` gives 0 or the sign fill;
- f32/f64 ``+ - * /`` and ``sqrt`` are single IEEE operations, never contracted (the
  primitives are ``__fadd_rn``-style intrinsics on CUDA; host C is compiled with
  ``-ffp-contract=off``); ``rem`` is an exact integer ``fmod`` (CUDA's ``fmodf``
  contains FMA instructions); ``neg``/``abs`` flip or clear the sign bit;
- ``min``/``max`` propagate NaN as the canonical quiet NaN and order -0 < +0;
- a NaN produced from non-NaN operands (``0/0``, ``inf - inf``, ``x % 0``, ...) is
  ``semantics.produced_nan``, selected after the primitive (CUDA's is ``0x7fffffff``);
- ``f16`` and ``bf16`` are 16-bit words: f16 arithmetic is done in f32 and rounded
  once (exact for + - * / since 24 >= 2*11+2), conversions are integer code with
  numpy's rounding and NaN rules; ``bf16`` only converts through f32;
- float -> int truncates and saturates, NaN gives 0; f32 <-> f64 conversions keep
  NaN payloads the way x86 does (quiet bit set), so casts of NaN are exact too.
"""
from __future__ import annotations

from string import Template

import numpy as np

from ninfer_ir.numerics import semantics
from ninfer_ir.types import (ScalarType, bf16, bool_, f16, f32, f64, i64, index, u8, u16,
                             u32, u64)

__all__ = ["Library", "c_type", "c_name", "literal", "constant_bits"]

_BITWISE = {"and": "&", "or": "|", "xor": "^"}
_C_TYPES = {
    "f16": "nq_f16", "bf16": "nq_bf16", "f32": "float", "f64": "double",
    "i8": "nq_i8", "i16": "nq_i16", "i32": "nq_i32", "i64": "nq_i64",
    "u8": "nq_u8", "u16": "nq_u16", "u32": "nq_u32", "u64": "nq_u64",
    "bool": "nq_bool", "index": "nq_i64",
}

# Extra typedefs (the quantized-op prelude of backends.cuda.qkernels has the others).
TYPEDEFS = """typedef signed char nq_i8;
typedef short nq_i16;
typedef unsigned char nq_bool;
typedef unsigned short nq_f16;
typedef unsigned short nq_bf16;
"""

_UINT_TYPES = {1: u8, 2: u16, 4: u32, 8: u64}
_UINT_OF = {8: "nq_u8", 16: "nq_u16", 32: "nq_u32", 64: "nq_u64"}
_CANONICAL_NAN = {32: "0x7fc00000u", 64: "0x7ff8000000000000ull"}
_PRODUCED_NAN = {32: "0xffc00000u", 64: "0xfff8000000000000ull"}   # semantics.produced_nan
_QUIET_BIT = {32: "0x00400000u", 64: "0x0008000000000000ull"}


def c_type(t: ScalarType) -> str:
    return _C_TYPES[t.name]


def c_name(t: ScalarType) -> str:
    """The dtype's tag in helper names (``index`` is i64)."""
    return "i64" if t is index else t.name


def _wide(t: ScalarType) -> str:
    """The unsigned type integer arithmetic of ``t`` is done in (no signed overflow)."""
    return "nq_u64" if t.bits == 64 else "nq_u32"


def _int_literal(t: ScalarType, v: int) -> str:
    ct = c_type(t)
    if t.bits == 64:
        if t.kind == "uint":
            return f"{v}ull"
        if v == -(1 << 63):
            return "(-9223372036854775807ll - 1)"
        if 0 <= v < (1 << 31):
            return str(v)
        return f"({v}ll)" if v < 0 else f"{v}ll"
    if t.kind == "uint" and t.bits == 32:
        return f"{v}u"
    if t is bool_:
        return str(int(v))
    if v == -(1 << 31):
        return "(-2147483647 - 1)"
    return f"({ct}){v}" if v < 0 or t.bits < 32 else str(v)


def constant_bits(t: ScalarType, value):
    """The interpreter's value of ``constant() {value}`` of type ``t`` (a numpy scalar)."""
    if t.is_float and isinstance(value, int) and not isinstance(value, bool):
        src = i64 if -(1 << 63) <= value < (1 << 63) else u64
        return semantics.cast(np.asarray(value, dtype=src.np_dtype), src, t)
    if t is bf16:
        return semantics.cast(np.asarray(value, dtype=np.float64), f64, bf16)
    return np.asarray(value, dtype=t.np_dtype)


def literal(t: ScalarType, value) -> str:
    """A C expression of type ``t`` with exactly the interpreter's constant."""
    arr = constant_bits(t, value)
    if t is f16 or t is bf16:
        return f"(({c_type(t)})0x{int(arr.view(np.uint16)):04x}u)"
    if t is f32 or t is f64:
        x = float(arr)
        bits = int(arr.view(np.uint32 if t is f32 else np.uint64))
        if not np.isfinite(x):
            return (f"nq_from_bits(0x{bits:08x}u)" if t is f32
                    else f"nq_from_bits64(0x{bits:016x}ull)")
        text = x.hex() if x != 0 else ("-0x0p+0" if np.signbit(x) else "0x0p+0")
        return text + ("f" if t is f32 else "")
    return _int_literal(t, int(arr))


def _fill(template: str, **kw) -> str:
    return Template(template).substitute(**kw)


class Library:
    """The helper functions one emission needs, in definition order.

    ``prims`` maps primitive names to C expression templates over ``$a``/``$b``
    (see ``CLikeEmitter.PRIMS``); ``fn`` is the helpers' qualifier and ``fn_big``
    that of the large ones (whole records), which a GPU compiler should not inline
    at every call site.
    """

    def __init__(self, prims: dict, fn: str = "NQ_FN", fn_big: str = "NQ_FN"):
        self.prims = prims
        self.fn, self.fn_big = fn, fn_big
        self.defs: dict[str, str] = {}

    def text(self) -> str:
        return "".join(self.defs.values())

    def use(self, name: str, make) -> str:
        """Define ``name`` with ``make()`` (which may use other helpers) unless known."""
        if name not in self.defs:
            body = make()
            self.defs[name] = body
        return name

    def constant(self, t: ScalarType, value) -> str:
        """``literal(t, value)``, defining the bit-pattern helper it may use."""
        if t is f64:
            self.bits64()
        return literal(t, value)

    def prim(self, key: str, a: str = "a", b: str = "b") -> str:
        return _fill(self.prims[key], a=a, b=b)

    def define(self, name: str, template: str, big: bool = False, **kw) -> str:
        fn = self.fn_big if big else self.fn
        return self.use(name, lambda: _fill(template, FN=fn, NAME=name, **kw))

    # -- float bit patterns and conversions ---------------------------------------

    def bits64(self) -> None:
        """Define ``nq_bits64`` and ``nq_from_bits64`` (f64 <-> its u64 word)."""
        self.define("nq_bits64", "$FN nq_u64 nq_bits64(double x) { $P }\n",
                    P=self.prims["bits64"])
        self.define("nq_from_bits64", "$FN double nq_from_bits64(nq_u64 u) { $P }\n",
                    P=self.prims["from_bits64"])

    def f16_to_f32(self) -> str:
        return self.define("nq_f16_to_f32", """$FN float $NAME(nq_f16 w) {
    nq_u32 h = w, sign = (h & 0x8000u) << 16, e = (h >> 10) & 31u, m = h & 1023u;
    if (e == 31u) return nq_from_bits(sign | 0x7f800000u | (m << 13));
    if (e != 0u) return nq_from_bits(sign | ((e + 112u) << 23) | (m << 13));
    if (m == 0u) return nq_from_bits(sign);
    e = 113u;
    while ((m & 1024u) == 0u) { m <<= 1; e -= 1u; }
    return nq_from_bits(sign | (e << 23) | ((m & 1023u) << 13));
}
""")

    def f16_to_f64(self) -> str:
        self.bits64()
        self.f16_to_f32()
        self.f32_to_f64()
        return self.define("nq_f16_to_f64", """$FN double $NAME(nq_f16 w) {
    if ((w & 0x7c00u) == 0x7c00u && (w & 1023u) != 0u)
        return nq_from_bits64(((nq_u64)(w & 0x8000u) << 48) | 0x7ff0000000000000ull
                              | ((nq_u64)(w & 1023u) << 42));
    return nq_f32_to_f64(nq_f16_to_f32(w));
}
""")

    def f32_to_f16(self) -> str:
        return self.define("nq_f32_to_f16", """$FN nq_f16 $NAME(float x) {
    nq_u32 f = nq_bits(x), sign = (f >> 16) & 0x8000u, a = f & 0x7fffffffu;
    if (a >= 0x7f800000u) {
        nq_u32 m = (a & 0x7fffffu) >> 13;
        if (a == 0x7f800000u) return (nq_f16)(sign | 0x7c00u);
        return (nq_f16)(sign | 0x7c00u | (m ? m : 1u));
    }
    if (a >= 0x477ff000u) return (nq_f16)(sign | 0x7c00u);
    if (a >= 0x38800000u) {
        nq_u32 r = a - 0x38000000u;
        return (nq_f16)(sign | ((r + 0xfffu + ((r >> 13) & 1u)) >> 13));
    }
    if (a < 0x33000000u) return (nq_f16)sign;
    {
        nq_u32 s = 126u - (a >> 23), m = (a & 0x7fffffu) | 0x800000u;
        nq_u32 q = m >> s, rest = m & ((1u << s) - 1u), half = 1u << (s - 1u);
        if (rest > half || (rest == half && (q & 1u))) q += 1u;
        return (nq_f16)(sign | q);
    }
}
""")

    def f64_to_f16(self) -> str:
        self.bits64()
        return self.define("nq_f64_to_f16", """$FN nq_f16 $NAME(double x) {
    nq_u64 f = nq_bits64(x), a = f & 0x7fffffffffffffffull;
    nq_u32 sign = (nq_u32)(f >> 48) & 0x8000u;
    if (a >= 0x7ff0000000000000ull) {
        nq_u32 m = (nq_u32)((a & 0xfffffffffffffull) >> 42);
        if (a == 0x7ff0000000000000ull) return (nq_f16)(sign | 0x7c00u);
        return (nq_f16)(sign | 0x7c00u | (m ? m : 1u));
    }
    if (a >= 0x40effe0000000000ull) return (nq_f16)(sign | 0x7c00u);
    if (a >= 0x3f10000000000000ull) {
        nq_u64 r = a - 0x3f00000000000000ull;
        return (nq_f16)(sign | (nq_u32)((r + 0x1ffffffffffull + ((r >> 42) & 1u)) >> 42));
    }
    if (a < 0x3e60000000000000ull) return (nq_f16)sign;
    {
        nq_u32 s = 1051u - (nq_u32)(a >> 52);
        nq_u64 m = (a & 0xfffffffffffffull) | 0x10000000000000ull;
        nq_u64 q = m >> s, rest = m & ((1ull << s) - 1u), half = 1ull << (s - 1u);
        if (rest > half || (rest == half && (q & 1u))) q += 1u;
        return (nq_f16)(sign | (nq_u32)q);
    }
}
""")

    def f32_to_f64(self) -> str:
        self.bits64()
        return self.define("nq_f32_to_f64", """$FN double $NAME(float x) {
    if (x != x) {
        nq_u32 b = nq_bits(x);
        return nq_from_bits64(((nq_u64)(b & 0x80000000u) << 32) | 0x7ff8000000000000ull
                              | ((nq_u64)(b & 0x7fffffu) << 29));
    }
    return $P;
}
""", P=self.prim("f2d", "x"))

    def f64_to_f32(self) -> str:
        self.bits64()
        return self.define("nq_f64_to_f32", """$FN float $NAME(double x) {
    if (x != x) {
        nq_u64 b = nq_bits64(x);
        return nq_from_bits((nq_u32)(b >> 32 & 0x80000000u) | 0x7fc00000u
                            | (nq_u32)((b >> 29) & 0x3fffffu));
    }
    return $P;
}
""", P=self.prim("d2f", "x"))

    def bf16_to_f32(self) -> str:
        return self.define("nq_bf16_to_f32",
                           "$FN float $NAME(nq_bf16 w) { return nq_from_bits((nq_u32)w << 16); }\n")

    def f32_to_bf16(self) -> str:
        return self.define("nq_f32_to_bf16", """$FN nq_bf16 $NAME(float x) {
    nq_u32 b = nq_bits(x);
    if (x != x) return (nq_bf16)((b >> 16) | 0x40u);
    return (nq_bf16)(((nq_u64)b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
}
""")

    def f2i_sat(self, to: ScalarType) -> str:
        lo, hi = semantics.int_range(to)
        top = float(2 ** (to.bits if to.kind == "uint" else to.bits - 1)) if to.bits == 64 \
            else float(hi)
        return self.define(f"nq_f2i_sat_{c_name(to)}", """$FN $T $NAME(double x) {
    if (x != x) return 0;
    if (x <= $LO) return $LOV;
    if (x >= $TOP) return $HIV;
    return ($T)($VIA)x;
}
""", T=c_type(to), LO=float(lo).hex(), TOP=top.hex(), LOV=_int_literal(to, lo),
            HIV=_int_literal(to, hi), VIA="nq_u64" if to.kind == "uint" else "nq_i64")

    # -- binary and unary ops ---------------------------------------------------------

    def scalar_expr(self, name: str, t: ScalarType, x, attrs) -> str:
        """A C expression for scalar op ``name`` on operand expressions ``x`` of dtype
        ``t`` (the last operand's; ``attrs``: ``pred`` of ``cmp``, ``to`` of casts)."""
        if name == "select":
            return f"({x[0]} ? {x[1]} : {x[2]})"
        if name == "cmp":
            return self.compare_expr(attrs["pred"], t, x[0], x[1])
        if name == "bitcast":
            return self.bitcast_expr(t, attrs["to"], x[0])
        if name == "cast":
            return self.cast_expr(t, attrs["to"], x[0])
        if name == "sqrt":
            return f"{self.sqrt(t)}({x[0]})"
        if name in ("neg", "abs", "not"):
            return self.unary_expr(name, t, x[0])
        if name in _BITWISE:
            return f"({c_type(t)})({x[0]} {_BITWISE[name]} {x[1]})"
        return f"{self.binary(name, t)}({x[0]}, {x[1]})"

    def binary(self, name: str, t: ScalarType) -> str:
        """The helper computing ``name`` on two values of ``t``; returns its name."""
        tag = f"nq_{name}_{c_name(t)}"
        if t is f16:
            return self._via_f32(tag, self.binary(name, f32), 2)
        if t.is_float:
            return self._float_binary(tag, name, t)
        return self._int_binary(tag, name, t)

    def sqrt(self, t: ScalarType) -> str:
        """The helper computing the IEEE square root of a ``t``; returns its name. The
        primitive (``sqrtf``/``__fsqrt_rn``) is correctly rounded; the NaN of a negative
        operand and the quieted NaN operand are selected around it (CUDA's differ)."""
        tag = f"nq_sqrt_{c_name(t)}"
        if t is f16:
            return self._via_f32(tag, self.sqrt(f32), 1)
        w = t.bits
        bits, from_bits = self._bit_casts(w)
        return self.define(tag, "$FN $T $NAME($T a) {\n"
                                "    if (a != a) return $FROM($BITS(a) | $QUIET);\n"
                                "    return a < 0 ? $FROM($NAN) : $P;\n}\n",
                           T=c_type(t), P=self.prim(f"fsqrt{w}", "a"), BITS=bits,
                           FROM=from_bits, QUIET=_QUIET_BIT[w], NAN=_PRODUCED_NAN[w])

    def _via_f32(self, tag, inner, arity: int):
        """The f16 helper ``tag`` of the f32 helper ``inner`` on ``arity`` operands: each
        widened, the f32 result rounded once."""
        self.f16_to_f32()
        self.f32_to_f16()
        names = "ab"[:arity]
        return self.define(tag, "$FN nq_f16 $NAME($PARAMS) {\n"
                                "    return nq_f32_to_f16($F($ARGS));\n}\n",
                           F=inner, PARAMS=", ".join(f"nq_f16 {n}" for n in names),
                           ARGS=", ".join(f"nq_f16_to_f32({n})" for n in names))

    def _bit_casts(self, w: int) -> tuple[str, str]:
        """The helpers between a float of ``w`` bits and its word (defining the 64-bit
        ones where needed)."""
        if w == 64:
            self.bits64()
            return "nq_bits64", "nq_from_bits64"
        return "nq_bits", "nq_from_bits"

    def _float_binary(self, tag, name, t):
        w = t.bits
        T = c_type(t)
        bits, from_bits = self._bit_casts(w)
        if name in ("add", "sub", "mul", "div"):   # a produced NaN is pinned (CUDA's differs)
            return self.define(tag, "$FN $T $NAME($T a, $T b) {\n    const $T r = $P;\n"
                                    "    return (r != r && a == a && b == b) ? $FROM($NAN) : r;\n}\n",
                               T=T, P=self.prim(f"f{name}{w}"), FROM=from_bits,
                               NAN=_PRODUCED_NAN[w])
        if name == "rem":
            return self._fmod(tag, t)
        if name in ("min", "max"):
            top = "0x80000000u" if w == 32 else "0x8000000000000000ull"
            pick = ("a < b || (a == b && ($BITS(a) & $TOP))" if name == "min"
                    else "a > b || (a == b && !($BITS(a) & $TOP))")
            return self.define(tag, "$FN $T $NAME($T a, $T b) {\n"
                                    "    if (a != a || b != b) return $FROM($NAN);\n"
                                    "    return (" + pick + ") ? a : b;\n}\n",
                               T=T, BITS=bits, FROM=from_bits, TOP=top,
                               NAN=_CANONICAL_NAN[w])
        raise KeyError(name)

    def _fmod(self, tag, t):
        """Exact ``fmod`` by shift-and-subtract on the significands."""
        w = t.bits
        U = _UINT_OF[w]
        mant = 23 if w == 32 else 52
        emask = "0xffu" if w == 32 else "0x7ffu"
        one = "1u" if w == 32 else "1ull"
        bits, from_bits = self._bit_casts(w)
        return self.define(tag, """$FN $T $NAME($T x, $T y) {
    $U ux = $BITS(x), uy = $BITS(y), sx = ux & ($ONE << $TOPBIT);
    int ex = (int)((ux >> $MANT) & $EMASK), ey = (int)((uy >> $MANT) & $EMASK);
    $U mx, my, r;
    if (x != x || y != y) return $FROM((x != x ? ux : uy) | $QUIET);
    if ((uy << 1) == 0 || ex == (int)$EMASK) return $FROM($NANBITS);
    if ((ux << 1) <= (uy << 1)) return (ux << 1) == (uy << 1) ? $FROM(sx) : x;
    if (ex == 0) { for (r = ux << ($W - $MANT - 1); (r >> ($W - 1)) == 0; r <<= 1) ex--; mx = ux << (1 - ex); }
    else mx = (ux & (($ONE << $MANT) - 1)) | ($ONE << $MANT);
    if (ey == 0) { for (r = uy << ($W - $MANT - 1); (r >> ($W - 1)) == 0; r <<= 1) ey--; my = uy << (1 - ey); }
    else my = (uy & (($ONE << $MANT) - 1)) | ($ONE << $MANT);
    for (; ex > ey; ex--) {
        if (mx >= my) { mx -= my; if (mx == 0) return $FROM(sx); }
        mx <<= 1;
    }
    if (mx >= my) { mx -= my; if (mx == 0) return $FROM(sx); }
    while ((mx >> $MANT) == 0) { mx <<= 1; ex--; }
    if (ex > 0) return $FROM(sx | (mx - ($ONE << $MANT)) | (($U)ex << $MANT));
    return $FROM(sx | (mx >> (1 - ex)));
}
""", T=c_type(t), U=U, MANT=mant, EMASK=emask, ONE=one, W=w, TOPBIT=w - 1, BITS=bits,
            FROM=from_bits, NANBITS=_PRODUCED_NAN[w], QUIET=_QUIET_BIT[w])

    def _int_binary(self, tag, name, t):
        T, W = c_type(t), _wide(t)
        signed = t.kind in ("int", "index")
        kw = dict(T=T, W=W, BITS=t.bits)
        if name in ("add", "sub", "mul"):
            op = {"add": "+", "sub": "-", "mul": "*"}[name]
            return self.define(tag, "$FN $T $NAME($T a, $T b) { return ($T)(($W)a $OP ($W)b); }\n",
                               OP=op, **kw)
        if name in ("div", "rem"):
            op = "/" if name == "div" else "%"
            by_minus_one = ""
            if signed:   # MIN / -1 would trap: a / -1 is -a (wrapping), a % -1 is 0
                by_minus_one = ("    if (b == ($T)-1) return ($T)(0 - ($W)a);\n" if name == "div"
                                else "    if (b == ($T)-1) return 0;\n")
            return self.define(tag, "$FN $T $NAME($T a, $T b) {\n    if (b == 0) return 0;\n"
                                    + by_minus_one + "    return ($T)(a $OP b);\n}\n", OP=op, **kw)
        if name in ("min", "max"):
            op = "<" if name == "min" else ">"
            return self.define(tag, "$FN $T $NAME($T a, $T b) { return a $OP b ? a : b; }\n",
                               OP=op, **kw)
        if name == "shl":
            return self.define(tag, "$FN $T $NAME($T a, $T b) {\n"
                                    "    return (nq_u64)b >= $BITS ? ($T)0 : ($T)(($W)a << (nq_u64)b);\n}\n",
                               **kw)
        if name == "shr":
            fill = "(a < 0 ? ($T)-1 : ($T)0)" if signed else "($T)0"
            return self.define(tag, "$FN $T $NAME($T a, $T b) {\n"
                                    "    return (nq_u64)b >= $BITS ? $FILL : ($T)(a >> (nq_u64)b);\n}\n",
                               FILL=_fill(fill, T=T), **kw)
        raise KeyError(name)

    def unary_expr(self, name: str, t: ScalarType, a: str) -> str:
        """A C expression for unary ``name`` of ``a`` (dtype ``t``)."""
        T = c_type(t)
        if name == "not":
            return f"(nq_bool)!{a}" if t is bool_ else f"({T})~{a}"
        if t.is_float:
            w = t.bits
            sign = {16: "0x8000u", 32: "0x80000000u", 64: "0x8000000000000000ull"}[w]
            op = "^ " if name == "neg" else "& ~"
            if w == 16:
                return f"({T})({a} {op}{sign})"
            if w == 32:
                return f"nq_from_bits(nq_bits({a}) {op}{sign})"
            self.bits64()
            return f"nq_from_bits64(nq_bits64({a}) {op}{sign})"
        neg = f"({T})(0 - ({_wide(t)}){a})"
        if name == "neg":
            return neg
        if t.kind == "uint":
            return a
        return f"({a} < 0 ? {neg} : {a})"

    def compare_expr(self, pred: str, t: ScalarType, a: str, b: str) -> str:
        op = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}[pred]
        if t is f16:
            self.f16_to_f32()
            a, b = f"nq_f16_to_f32({a})", f"nq_f16_to_f32({b})"
        return f"(nq_bool)({a} {op} {b})"

    # -- casts ---------------------------------------------------------------------------

    def cast_expr(self, src: ScalarType, to: ScalarType, x: str) -> str:
        """A C expression converting ``x`` from ``src`` to ``to`` (semantics.cast)."""
        if src is to:
            return x
        if src is bf16:
            return self.cast_expr(f32, to, f"{self.bf16_to_f32()}({x})")
        if to is bf16:
            return f"{self.f32_to_bf16()}({self.cast_expr(src, f32, x)})"
        T = c_type(to)
        if to is bool_:
            if src is f16:
                return f"(nq_bool)(({x} & 0x7fffu) != 0u)"
            return f"(nq_bool)({x} != 0)"
        if src is bool_:
            if to is f16:
                return f"(({x}) ? (nq_f16)0x3c00u : (nq_f16)0u)"
            return f"({T})({x})"
        if to is f16:
            if src is f64:
                return f"{self.f64_to_f16()}({x})"
            return f"{self.f32_to_f16()}({self.cast_expr(src, f32, x)})"
        if src is f16:
            if to is f64:
                return f"{self.f16_to_f64()}({x})"
            return self.cast_expr(f32, to, f"{self.f16_to_f32()}({x})")
        if src is f32 and to is f64:
            return f"{self.f32_to_f64()}({x})"
        if src is f64 and to is f32:
            return f"{self.f64_to_f32()}({x})"
        if to.is_float:
            return self.prim("i2f" if to is f32 else "i2d", f"({c_type(src)})({x})")
        if src.is_float:
            arg = x if src is f64 else self.prim("f2d", x)
            return f"{self.f2i_sat(to)}({arg})"
        return f"({T})({x})"

    def bitcast_expr(self, src: ScalarType, to: ScalarType, x: str) -> str:
        if src is to:
            return x
        T = c_type(to)
        if src is f32:
            return f"({T})nq_bits({x})"
        if src is f64:
            self.bits64()
            return f"({T})nq_bits64({x})"
        if to is f32:
            return f"nq_from_bits((nq_u32)({x}))"
        if to is f64:
            self.bits64()
            return f"nq_from_bits64((nq_u64)({x}))"
        return f"({T})({x})"

    # -- memory --------------------------------------------------------------------------

    def load(self, t: ScalarType) -> str:
        """``T nq_load_<t>(const nq_u8* p)``: one element of memory as its register value."""
        T = c_type(t)
        if t is bool_:
            return self.define("nq_load_bool",
                               "$FN nq_bool $NAME(const nq_u8* p) { return (nq_bool)(*p != 0); }\n")
        return self.define(f"nq_load_{c_name(t)}", "$FN $T $NAME(const nq_u8* p) { $BODY }\n",
                           T=T, BODY=_fill(self.prims["load"], T=T))

    def store(self, t: ScalarType) -> str:
        T = c_type(t)
        if t is bool_:
            return self.define("nq_store_bool",
                               "$FN void $NAME(nq_u8* p, nq_bool v) { *p = (nq_u8)(v != 0); }\n")
        return self.define(f"nq_store_{c_name(t)}", "$FN void $NAME(nq_u8* p, $T v) { $BODY }\n",
                           T=T, BODY=_fill(self.prims["store"], T=T))

    def bytes_copy(self, nbytes: int) -> str:
        """``nq_mv<N>(dst, src)``: copy one element of ``N`` bytes unchanged."""
        u = _UINT_TYPES[nbytes]
        ld, st = self.load(u), self.store(u)
        return self.define(f"nq_mv{nbytes}",
                           "$FN void $NAME(nq_u8* d, const nq_u8* s) { $ST(d, $LD(s)); }\n",
                           ST=st, LD=ld)
