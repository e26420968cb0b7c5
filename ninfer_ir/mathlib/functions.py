"""The f32 math functions, each one fixed algorithm of basic IEEE operations (see
``core``). Every function takes and returns an f32 ``Val``; NaN arguments are handled
by the caller (``mathlib.apply``), which gives the canonical quiet NaN, except for the
functions in ``HANDLES_NAN``, which give it themselves.

Method (``exp exp2 log log2 tanh sin cos``): the argument is widened to f64 (exactly),
reduced exactly, and the function is evaluated in plain f64 with a relative error of
about 2^-51; its rounding to f32 is the correctly rounded result except where the exact
value lies that close to an f32 rounding boundary. Those inputs were found by exhaustive
search and are listed with their results (``_fix``). ``exp``, ``exp2`` and ``tanh``
share one rational fit of tanh on a reduced argument (``_tanh_small``). ``erf`` evaluates a double-double
``hi + lo`` and rounds it once (``round_dd``). ``sqrt`` is the IEEE root (the basic
``sqrt`` op); ``rsqrt`` rounds an f64 approximation (the f32 ``1/sqrt`` and one Newton
step) and, where that approximation is too close to an f32 midpoint to decide (a
``branch``: rarely), corrects it with one exact test at the midpoint on its side. The
rounding-mode tricks (``floor`` … ``rint``) are exact in f32.
"""
from __future__ import annotations

from .core import (bits_const, branch, clamp, copysign, f32, f64, fast_two_sum, i64, pow2,
                   rne_int, round_dd, select, two_prod, two_sum, u32, u64)

QNAN = 0x7FC00000
INF = 0x7F800000

_h = float.fromhex
LN2_HI45 = _h("0x1.62e42fefa3a00p-1")     # ln 2 to 45 bits: k * LN2_HI45 is exact, |k| < 2^8
LN2_LO45 = _h("-0x1.0ca86c3898d00p-49")   # ln 2 - LN2_HI45
INV_LN2 = _h("0x1.71547652b82fep+0")           # 1 / ln 2, rounded to f64


def _horner(z, coeffs):
    acc = z * coeffs[-1] + coeffs[-2]
    for c in reversed(coeffs[:-2]):
        acc = acc * z + c
    return acc


def _estrin(z, coeffs):
    """sum coeffs[i] z^i by Estrin's scheme: pairs c0 + c1 z, then pairs of pairs with
    z^2, z^4 ... (a shallower tree than Horner's rule, so vector loops overlap better)."""
    terms = [z * coeffs[i + 1] + coeffs[i] if i + 1 < len(coeffs) else z.c.const(coeffs[i], z.t)
             for i in range(0, len(coeffs), 2)]
    p = z * z
    while len(terms) > 1:
        terms = [terms[i] + p * terms[i + 1] if i + 1 < len(terms) else terms[i]
                 for i in range(0, len(terms), 2)]
        p = p * p if len(terms) > 1 else p
    return terms[0]


def _fix(x, r, table):
    """``r`` with the results of the exceptional inputs in ``table`` (f32 bit patterns
    of ``x`` -> of the correctly rounded result) put in place."""
    xb = x.bitcast(u32)
    for xbits, rbits in table:
        r = select(xb.eq(xbits), bits_const(x.c, rbits, f32), r)
    return r


# Inputs at which the f64 evaluation below lies so close to an f32 rounding boundary that
# it rounds the wrong way (every such input, found by exhaustive search: scripts/check_math.py)
_EXP_FIX = ()
_EXP2_FIX = ((0x3b429d37, 0x3f804385), (0xb8d3d026, 0x3f7ffb69),
             (0xbcf3a937, 0x3f7ac6b1))
_LOG_FIX = ((0x3c413d3a, 0xc08e158f), (0x41178feb, 0x400fe5e7), (0x4c5d65a5, 0x418f034b),
            (0x65d890d3, 0x4254d1f9), (0x6f31a8ec, 0x42845a89))
_LOG2_FIX = ()
_TANH_FIX = ()
_EXPM1_FIX = ((0x3dc252dd, 0x3dcbd76b),)
_SIGMOID_FIX = ()
_SIN_FIX = ((0x46199998, 0xbeb1fa5d),)              # of |x|: the sign is applied after
_COS_FIX = ((0x5922aa80, 0x3f08aebf), (0x5f18b878, 0x3f7f14bb),
            (0x6115cb11, 0x3f78142f))                 # of |x|


# -- rounding to integers (exact in f32) ----------------------------------------------

_TWO23 = 8388608.0


def _rint_abs(a):
    return (a + _TWO23) - _TWO23              # RNE to an integer for 0 <= a < 2^23


def rint(x):
    a = x.abs()
    return select(a.lt(_TWO23), copysign(_rint_abs(a), x), x)


def floor(x):
    r = rint(x)
    return copysign(select(r.gt(x), r - 1.0, r), x)


def ceil(x):
    r = rint(x)
    return copysign(select(r.lt(x), r + 1.0, r), x)


def trunc(x):
    a = x.abs()
    r = select(a.lt(_TWO23), _rint_abs(a), a)
    return copysign(select(r.gt(a), r - 1.0, r), x)


# -- square roots -------------------------------------------------------------------

def _rounded(y, beyond):
    """The correctly rounded f32 of a positive value t, from an f64 ``y`` within 2^-34
    of it: r = f32(y) is right unless t lies beyond the f32 midpoint ``m`` between r and
    its neighbour on y's side; ``beyond(m)`` decides that exactly. (Were t on the other
    side of r, it would be within 2^-34 of r, far from both midpoints.)"""
    r = y.cast(f32)
    b = r.bitcast(u32)
    side = y.gt(r.cast(f64))
    n = select(side, b + 1, b - 1).bitcast(f32)
    return select(beyond((r.cast(f64) + n.cast(f64)) * 0.5, side), n, r)


def sqrt(x):
    # the IEEE root is correctly rounded, -0 -> -0, +inf -> +inf; x < 0 or NaN: the
    # canonical NaN
    return select(x.ge(0.0), x.sqrt(), bits_const(x.c, QNAN, f32))


def _above_one(m, xd):
    """Exactly whether m*m*xd > 1 for a 25-bit ``m`` and a 24-bit ``xd``: m*m (50 bits)
    is exact, and so are the products of xd with its top 27 bits ``a`` and the rest
    ``m*m - a``; a*xd - 1 is exact too (a*xd is within 2^-20 of 1)."""
    mm = m * m
    a = (mm.bitcast(i64) & -(1 << 26)).bitcast(f64)
    return (a * xd - 1.0).gt(-((mm - a) * xd))


def _rsqrt64(x, xd):
    """1/sqrt(x) for a positive finite f32 ``x`` (``xd`` its f64), relative error below
    2^-45: ``y = 1/sqrt(x)`` in f32 (two correct roundings: within 2^-23 relative; no
    overflow or underflow for any positive finite f32), then one Newton step
    ``y (3 - x y^2)/2`` in f64, which squares the error (1.5 * 2^-46 plus the f64
    roundings)."""
    y = (1.0 / x.sqrt()).cast(f64)
    return y * (1.5 - (xd * 0.5) * y * y)


_WIDE = 2.0 ** -44          # beyond _rsqrt64's error bound, with the products' rounding


def rsqrt(x):
    xd = x.cast(f64)
    y = _rsqrt64(x, xd)
    # The exact value lies strictly between lo = y (1 - 2^-44) and hi = y (1 + 2^-44),
    # each rounded once in f64 (2^-45.3 error, 2^-53 rounding): where both round to the
    # same f32 so does it (rounding is monotonic), and that is almost every x. Elsewhere
    # the exact test at the midpoint: 1/sqrt(x) > m exactly when m*m*x < 1 (never equal:
    # no tie). For x = 0, +inf, x < 0 or NaN the selects below give the result.
    lo, hi = (y * (1.0 - _WIDE)).cast(f32), (y * (1.0 + _WIDE)).cast(f32)
    (r,) = branch(lo.eq(hi), lambda: (lo,),
                  lambda: (_rounded(y, lambda m, up: _above_one(m, xd).ne(up)),))
    r = select(x.eq(0.0), copysign(bits_const(x.c, INF, f32), x), r)
    r = select(x.eq(float("inf")), x.c.const(0.0, f32), r)
    return select(x.ge(0.0), r, bits_const(x.c, QNAN, f32))      # x < 0 or NaN


# -- exponentials ---------------------------------------------------------------------

_EXP_Q = [1.0 / f for f in (2, 6, 24, 120, 720, 5040, 40320, 362880, 3628800, 39916800,
                            479001600, 6227020800)]    # (exp(r) - 1 - r) / r^2, to r^11/13!


def _exp_dd(r, c):
    """exp(r + c) as a double-double for |r| <= 0.35 and |c| <= 2^-53 |r| (for ``erf``)."""
    s = r * r * _horner(r, _EXP_Q)
    hi, lo = fast_two_sum(r.c.const(1.0, f64), r)
    return fast_two_sum(hi, lo + (s + c + c * r))


LN2_HALF = _h("0x1.62e42fefa39efp-2")          # ln 2 / 2, rounded to f64
LN2_HALF_HI = LN2_HI45 / 2                     # its 44-bit head (k * LN2_HALF_HI is exact
LN2_HALF_LO = LN2_LO45 / 2                     # for |k| < 2^9) and the tail
_TANH_P = [_h(c) for c in ("0x1.0000000000000p+1", "0x1.c70fd479adb70p-3",
                           "0x1.1530e3b903302p-9")]
_TANH_Q = [_h(c) for c in ("0x1.0000000000000p+1", "0x1.c7194a73c0ba1p-1",
                           "0x1.03fc12c7a29fdp-5")]
# tanh(w) = w P(z) / Q(z), z = w^2, |w| <= ln 2 / 4 (both scaled by 2): a minimax
# rational fit of the relative error (Remez, mpmath), below 2^-56.5 with these f64
# coefficients


def _tanh_small(w):
    """(2 w P, 2 Q) in f64, whose ratio is tanh(w) for |w| <= ln 2 / 4 (relative error
    below 2^-56.5 before rounding; both terms positive near 2, Q > |w P|)."""
    z = w * w
    return w * _horner(z, _TANH_P), _horner(z, _TANH_Q)


def _exp_scaled(w, n):
    """e^{2w} 2^n in f64 for |w| <= ln 2 / 4 and an i64 ``n`` in [-1022, 1023]:
    e^{2w} = (1 + t)/(1 - t), t = tanh(w), one division (no cancellation)."""
    h2, q2 = _tanh_small(w)
    return (q2 + h2) / (q2 - h2) * pow2(n)


def exp(x):
    """x = k ln2 + 2w, |w| <= ln2/4: e^x = 2^k e^{2w} (w from a 44-bit head of ln2/2,
    exact, and its tail)."""
    t = clamp(x.cast(f64), -150.0, 100.0)      # beyond: 0 or inf in f32
    k, n = rne_int(t * INV_LN2)
    w = (t * 0.5 - k * LN2_HALF_HI) - k * LN2_HALF_LO
    return _fix(x, _exp_scaled(w, n).cast(f32), _EXP_FIX)


def exp2(x):
    """x = k + d, |d| <= 1/2 (both exact): 2^x = 2^k e^{2w}, w = d ln2/2."""
    t = clamp(x, -160.0, 130.0).cast(f64)
    k, n = rne_int(t)
    return _fix(x, _exp_scaled((t - k) * LN2_HALF, n).cast(f32), _EXP2_FIX)


def _exp_parts(t):
    """t = k ln2 + 2w, |w| <= ln2/4 (w from a 44-bit head of ln2/2, exact, and its tail):
    (k as an i64, 2wP, 2Q), so that e^{2w} = (2Q + 2wP) / (2Q - 2wP)."""
    k, n = rne_int(t * INV_LN2)
    h2, q2 = _tanh_small((t * 0.5 - k * LN2_HALF_HI) - k * LN2_HALF_LO)
    return n, h2, q2


def expm1(x):
    """e^x - 1 = 2^k (e^{2w} - 1) + (2^k - 1), with e^{2w} - 1 = 2 (2wP) / (2Q - 2wP): no
    cancellation at k = 0 (|x| below ln2/2, where the result is the quotient itself) and
    little elsewhere (the two terms have the same sign for k > 0, and the second
    dominates for k < 0). The result has the sign of x (so expm1(-0) = -0)."""
    t = clamp(x.cast(f64), -150.0, 100.0)      # beyond: -1 or inf in f32
    n, h2, q2 = _exp_parts(t)
    s = pow2(n)
    r = (h2 + h2) / (q2 - h2) * s + (s - 1.0)
    return copysign(_fix(x, r.cast(f32), _EXPM1_FIX), x)


def sigmoid(x):
    """1 / (1 + e^{-x}) for -x = k ln2 + 2w: (2Q - 2wP) / ((2Q - 2wP) + 2^k (2Q + 2wP)), a
    sum of positive terms. For k = 0 (|x| < ln2/2) that is 1/2 - tanh(w)/2, whose exact
    value lies within |x|^3/48 of 1/2 + x/4 (an f32 midpoint for every x = odd 2^-j):
    there 1/2 and -tanh(w)/2 are summed as a double-double and rounded once
    (``round_dd``). One division either way (its operands chosen by select)."""
    t = clamp(-(x.cast(f64)), -150.0, 150.0)   # beyond: 1 or 0 in f32
    n, h2, q2 = _exp_parts(t)
    d = q2 - h2
    near = n.eq(0)
    ratio = select(near, h2, d) / select(near, q2, d + pow2(n) * (q2 + h2))
    hi, lo = fast_two_sum(t.c.const(0.5, f64), ratio * -0.5)      # 1/2 - tanh(w)/2
    return _fix(x, select(near, round_dd(hi, lo), ratio.cast(f32)), _SIGMOID_FIX)


# -- logarithms -----------------------------------------------------------------------

_ATANH_P = [_h(c) for c in (
    "0x1.5555555555558p-2", "0x1.99999999952e2p-3", "0x1.2492492df148dp-3",
    "0x1.c71c62e5800a1p-4", "0x1.7462b4ab2ef6bp-4", "0x1.39fe606542ddep-4",
    "0x1.2b584aae78a57p-4")]
# (atanh(s) - s) / s^3 as a polynomial in z = s^2 on [0, 0.0295] (|s| <= 0.1716): a
# Chebyshev fit (mpmath), error below 2^-52.4 (2^-57.5 relative to atanh s)


_SQRT_HALF_BITS = 0x3FE6A09E667F3BCD             # sqrt(1/2) rounded to f64, its bits


def _log_parts(x):
    """(e, t, z) with x = 2^e m, m in [sqrt(1/2), sqrt(2)), log m = 2 atanh(t),
    t = (m - 1)/(m + 1), z = t^2, for a positive finite f32 ``x``; e is an integral f64.
    Taking sqrt(1/2)'s bits from x's before splitting off the exponent puts m in range
    with integer operations only."""
    b = x.cast(f64).bitcast(i64)
    d = b - _SQRT_HALF_BITS
    e = (d >> 52).cast(f64)
    m = (b - (d & -(1 << 52))).bitcast(f64)
    f = m - 1.0                                  # exact; 24 bits, so 2 + f is exact too
    t = f / (f + 2.0)                            # log m = 2 atanh(f / (2 + f))
    return e, t, t * t


def _log_specials(x, r):
    r = select(x.eq(0.0), bits_const(x.c, INF | 0x80000000, f32), r)
    r = select(x.eq(float("inf")), x, r)
    return select(x.ge(0.0), r, bits_const(x.c, QNAN, f32))      # x < 0 or NaN


def log(x):
    e, t, z = _log_parts(x)
    l = t * 2.0 + (t * 2.0) * z * _estrin(z, _ATANH_P)     # relative error about 2^-52
    r = (e * LN2_HI45 + (l + e * LN2_LO45)).cast(f32)
    return _log_specials(x, _fix(x, r, _LOG_FIX))


_ATANH_P2 = [c * (2 * INV_LN2) for c in _ATANH_P]   # the series times 2/ln2 (rounded)


def log2(x):
    e, t, z = _log_parts(x)
    l2 = t * (2 * INV_LN2) + (t * z) * _estrin(z, _ATANH_P2)    # log2 m
    return _log_specials(x, _fix(x, (e + l2).cast(f32), _LOG2_FIX))


# -- hyperbolic tangent ---------------------------------------------------------------

TWO_OVER_LN2 = _h("0x1.71547652b82fep+1")      # 2 / ln 2, rounded to f64


def tanh(x):
    """|x| = a = k ln2/2 + w, |w| <= ln2/4, so e^{2a} = 2^k (1 + t)/(1 - t) with
    t = tanh(w) = 2wP / 2Q (``_tanh_small``), and tanh(a) = (e^{2a} - 1)/(e^{2a} + 1)
    = (m + 2wP)/(m + 2Q), m = (2^k - 1)/2 (2Q + 2wP): k = 0 gives m = 0 (exactly) and
    t itself, with no cancellation. One division."""
    # |x| clamped at 10 (tanh(10) rounds to 1 in f32) as an integer minimum of the bits
    # (the same order for non-negative floats; a NaN, clamped too, is replaced by ``apply``)
    a = (x.bitcast(u32) & 0x7FFFFFFF).min(0x41200000).bitcast(f32).cast(f64)
    k, n = rne_int(a * TWO_OVER_LN2)
    h2, q2 = _tanh_small(a - k * LN2_HALF)     # w's rounding error: about 2^-53 a
    m = (pow2(n - 1) - 0.5) * (q2 + h2)        # 2^(k-1) - 1/2 is exact
    return copysign(_fix(x.abs(), ((m + h2) / (m + q2)).cast(f32), _TANH_FIX), x)


# -- error function -------------------------------------------------------------------

TWO_OVER_SQRTPI_HI = _h("0x1.20dd750429b6dp+0")
TWO_OVER_SQRTPI_LO = _h("0x1.1ae3a914fed80p-56")
_ERF_P = [_h(c) for c in (
    "-0x1.5555555555555p-2", "0x1.999999999999ap-4", "-0x1.8618618618618p-6",
    "0x1.2f684bda12f68p-8", "-0x1.8d3018d3018d3p-11", "0x1.c01c01c01c01cp-14",
    "-0x1.bbd779334ef0bp-17", "0x1.87a00187a0018p-20", "-0x1.3777c55568ccdp-23",
    "0x1.c2e3054870b38p-27", "-0x1.2b67310aa9f3ap-30", "0x1.6f448e13e85e1p-34",
    "-0x1.a289ee7e40f74p-38", "0x1.bd577e658d020p-42", "-0x1.bc6250fb14231p-46",
    "0x1.a173a167fba4dp-50", "-0x1.7271cbe5863ecp-54", "0x1.377c2110f2083p-58",
    "-0x1.f1b4073b34a68p-63")]
# (-1)^n / (n! (2n + 1)), n = 1..19: erf(a) = 2/sqrt(pi) (a + a z P(z)), z = a^2, |a| < 1
_ERFCX = [_h(c) for c in reversed((
    "-0x1.420310f099db7p-52", "0x1.9bfbe256dd411p-50", "-0x1.c480ca5ea5ea5p-49",
    "0x1.10e7fe2a11d89p-46", "-0x1.badf0a0961ec3p-44", "0x1.09090b921bfb1p-41",
    "-0x1.2a99d6e72464fp-39", "0x1.594336e66c1e4p-37", "-0x1.8ae0a49d3ff68p-35",
    "0x1.b9f6d8c3402d9p-33", "-0x1.e5d4baaabca11p-31", "0x1.064513e553340p-28",
    "-0x1.15ca88c84622ap-26", "0x1.205d7cb87afc0p-24", "-0x1.2514a3f2728c3p-22",
    "0x1.234fee0ffe359p-20", "-0x1.1ad10daea5f5ep-18", "0x1.0bcba3234f3c0p-16",
    "-0x1.edd42399031cdp-15", "0x1.ba8a67cfaac93p-13", "-0x1.809ce8ab53558p-11",
    "0x1.435c04e207eadp-9", "-0x1.0632076809dfbp-7", "0x1.98958a7a8e4a0p-6",
    "-0x1.3086d7f01ac85p-4", "0x1.afbb3f3b7343bp-3"))]
# erfc(a) e^{a^2} on [1, 4] in t = a - 5/2: a Chebyshev fit (mpmath), error below 2^-60


def erf(x):
    a = clamp(x.cast(f64).abs(), 0.0, 4.0)   # erf(4) rounds to 1 in f32
    z = a * a                                 # exact: a has 24 bits
    sh, sl = fast_two_sum(a, a * z * _horner(z, _ERF_P))
    p, e = two_prod(sh, a.c.const(TWO_OVER_SQRTPI_HI, f64))
    sh, sl = fast_two_sum(p, e + (sh * TWO_OVER_SQRTPI_LO + sl * TWO_OVER_SQRTPI_HI))
    k, n = rne_int(-(z * INV_LN2))        # erf = 1 - e^{-z} erfcx(a) for a >= 1
    r, c = fast_two_sum(-z - k * LN2_HI45, -(k * LN2_LO45))
    eh, el = _exp_dd(r, c)
    s = pow2(n)
    rx = _horner(a - 2.5, _ERFCX)
    ch, cl = two_prod(eh * s, rx)
    lh, ll = two_sum(a.c.const(1.0, f64), -ch)
    lh, ll = fast_two_sum(lh, ll - (cl + el * s * rx))
    small = a.lt(1.0)
    return copysign(round_dd(select(small, sh, lh), select(small, sl, ll)), x)


# -- sine and cosine -------------------------------------------------------------------

PIO2 = _h("0x1.921fb54442d18p+0")         # pi / 2 rounded to f64
_TWO_OVER_PI = (0x0, 0xa2f9836e, 0x4e441529, 0xfc2757d1, 0xf534ddc0, 0xdb629599,
                0x3c439041, 0xfe5163ab, 0xdebbc561)
# 2/pi in 32-bit limbs, most significant first; limb k holds the bits of weight
# 2^(31 - 32k) .. 2^(-32k) (limb 0 is the integer part, 0)
_SIN_S = [_h(c) for c in (
    "-0x1.5555555555555p-3", "0x1.1111111110bacp-7", "-0x1.a01a019e8214ap-13",
    "0x1.71de37947b7d5p-19", "-0x1.ae6008de3fb50p-26", "0x1.5e0a547eb63b8p-33")]
_COS_C = [_h(c) for c in (
    "0x1.5555555555555p-5", "-0x1.6c16c16c16963p-10", "0x1.a01a019f4de4cp-16",
    "-0x1.27e4fa16d281dp-22", "0x1.1eeb67d6be385p-29", "-0x1.907cddbdcf545p-37")]
# (sin r - r) / (r z) and (cos r - 1 + z/2) / z^2 as polynomials in z = r^2, |r| <= pi/4:
# Chebyshev fits (mpmath), relative errors of sin r and cos r below 2^-55.4 and 2^-59.5


TWO_OVER_PI = _h("0x1.45f306dc9c883p-1")     # 2 / pi, rounded to f64
PIO2_1 = _h("0x1.921fb54000000p+0")          # pi / 2 in three parts: 29 bits,
PIO2_2 = _h("0x1.10b4612000000p-30")         # 29 bits (so k * PIO2_1, k * PIO2_2 are
PIO2_3 = _h("-0x1.676733ae8fe48p-60")        # exact for k < 2^24) and the rest, rounded
SHORT_LIMIT = 2.0 ** 24                      # |x| below: the short reduction


def _reduce_short(a):
    """a = k pi/2 + r for an f64 ``0 <= a < 2^24`` (Cody and Waite): (k mod 4 as u64, r),
    |r| <= pi/4 (a hair more where a 2/pi rounds across a half). k < 2^24, so
    a - k PIO2_1 is exact (Sterbenz) and each later subtraction is rounded once
    relative to r: relative error about 2^-52, as the long reduction's. Below pi/4,
    k = 0 and r = a exactly."""
    k, n = rne_int(a * TWO_OVER_PI)
    r = ((a - k * PIO2_1) - k * PIO2_2) - k * PIO2_3
    return n.bitcast(u64) & 3, r


def _reduce_long(x):
    """|x| = (4j + q) pi/2 + r for a finite f32 ``x`` with |x| >= 2^24: (q as u64 in
    0..3, r as an f64, |r| <= pi/4). Payne-Hanek: the 24-bit significand times a
    128-bit window of 2/pi chosen by the exponent, in exact 32-bit limb arithmetic."""
    c = x.c
    b = x.bitcast(u32).cast(u64) & 0x7FFFFFFF
    big_e = b >> 23
    m = (b & 0x7FFFFF) | 0x800000
    # x = m 2^e, e = E - 150; the window starts at bit e - 1 of 2/pi, which is bit
    # (e - 1) + 31 = E - 120 of the limbs (E >= 151 here: pos >= 31)
    pos = big_e - 120
    q0, sh = pos >> 5, pos & 31
    # pairs of limbs: pairs[k] = limbs k and k + 1 as one 64-bit word
    pairs = [c.const((_TWO_OVER_PI[k] << 32) | _TWO_OVER_PI[k + 1], u64) for k in range(8)]

    def pair(j):                                  # pairs[q0 + j], q0 in 0..4
        v = pairs[j]
        for d in range(1, 5):
            v = select(q0.eq(d), pairs[j + d], v)
        return v

    # window word j: the 32 bits of limbs q0 + j, q0 + j + 1 from bit sh of the first
    w = [(pair(j) << sh) >> 32 for j in range(4)]
    mask = 0xFFFFFFFF
    t = m * w[3]
    l0, t = t & mask, m * w[2] + (t >> 32)
    l1, t = t & mask, m * w[1] + (t >> 32)
    l2, t = t & mask, m * w[0] + (t >> 32)       # P = m W; |x| 2/pi = P / 2^126 mod 4:
    quad = t >> 30                                # bits 126, 127 of P (and above: masked)
    f_hi = (t << 34) | (l2 << 2) | (l1 >> 30)     # fraction bits, top 64
    f_lo = ((l1 & 0x3FFFFFFF) << 2) | (l0 >> 30)                   # the next 32
    quad = (quad + (f_hi >> 63)) & 3              # round to the nearest quadrant
    fs = f_hi.bitcast(i64)                        # f - 1 when f >= 1/2
    hi = (fs & -2048).cast(f64)                   # exact: a multiple of 2^11 below 2^63
    lo = (fs & 2047).cast(f64) + f_lo.cast(f64) * 2.0 ** -32      # exact: 43 bits
    return quad, (hi + lo) * (PIO2 * 2.0 ** -64)  # hi + lo: the fraction, rounded once


def _reduce_pio2(x):
    """|x| = (4j + q) pi/2 + r: (q, r) for a finite f32 ``x``. Arguments below 2^24
    take the short reduction; the long one runs only for the blocks of elements that
    hold a larger argument (``branch``)."""
    a = x.cast(f64).abs()
    return branch(a.lt(SHORT_LIMIT), lambda: _reduce_short(a), lambda: _reduce_long(x))


def _sin_or_cos(x, cosine: bool):
    """sin |x| or cos |x| in f64, relative error about 2^-51, for a finite f32 ``x``. The
    quadrant decides, per element, which series of r to sum: ``r + r z S(z)`` or
    ``(1 - z/2) + z^2 C(z)`` (z = r^2); the one sum takes the series' coefficients by
    select, so each element pays for one series, not both."""
    quad, r = _reduce_pio2(x)
    z = r * r
    use_c = (quad & 1).ne(0) if not cosine else (quad & 1).eq(0)
    coeffs = [select(use_c, z.c.const(c, f64), s) for s, c in zip(_SIN_S, _COS_C)]
    a = select(use_c, 1.0 - z * 0.5, r)
    v = a + select(use_c, z * z, r * z) * _horner(z, coeffs)
    negate = ((quad + 1) if cosine else quad) & 2
    return select(negate.ne(0), -v, v)


def sin(x):
    r = _fix(x.abs(), _sin_or_cos(x, False).cast(f32), _SIN_FIX)
    r = (r.bitcast(u32) ^ (x.bitcast(u32) & 0x80000000)).bitcast(f32)   # sin(-x) = -sin(x)
    return select(x.abs().eq(float("inf")), bits_const(x.c, QNAN, f32), r)


def cos(x):
    r = _fix(x.abs(), _sin_or_cos(x, True).cast(f32), _COS_FIX)
    return select(x.abs().eq(float("inf")), bits_const(x.c, QNAN, f32), r)


FUNCTIONS = {
    "sqrt": sqrt, "rsqrt": rsqrt, "exp": exp, "exp2": exp2, "log": log, "log2": log2,
    "tanh": tanh, "erf": erf, "sin": sin, "cos": cos, "floor": floor, "ceil": ceil, "trunc": trunc, "rint": rint,
    "expm1": expm1, "sigmoid": sigmoid,
}

#: the functions whose result for a NaN argument is already the quiet NaN (``apply``
#: adds no select for them)
HANDLES_NAN = frozenset({"sqrt", "rsqrt", "log", "log2"})

#: per function, the name of its table of exceptional inputs (see ``_fix``)
EXCEPTIONS = {"exp": "_EXP_FIX", "exp2": "_EXP2_FIX", "log": "_LOG_FIX", "log2": "_LOG2_FIX",
              "tanh": "_TANH_FIX", "sin": "_SIN_FIX", "cos": "_COS_FIX",
              "expm1": "_EXPM1_FIX", "sigmoid": "_SIGMOID_FIX"}
