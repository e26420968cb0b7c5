"""The f32 math functions, each one fixed algorithm of basic IEEE operations (see
``core``). Every function takes and returns an f32 ``Val``; NaN arguments are handled
by the caller (``mathlib.apply``), which gives the canonical quiet NaN.

Method (``exp exp2 log log2 tanh sin cos``): the argument is widened to f64 (exactly),
reduced exactly, and the function is evaluated in plain f64 with a relative error of
about 2^-51; its rounding to f32 is the correctly rounded result except where the exact
value lies that close to an f32 rounding boundary. Those inputs were found by exhaustive
search and are listed with their results (``_fix``). ``erf`` evaluates a double-double
``hi + lo`` and rounds it once (``round_dd``). ``sqrt`` and ``rsqrt`` round a Newton
approximation and correct it with one exact test at the f32 midpoint on its side. The
rounding-mode tricks (``floor`` … ``rint``) are exact in f32.
"""
from __future__ import annotations

import numpy as np

from .core import (bits_const, clamp, copysign, f32, f64, fast_two_sum, i64, pow2,
                   rne_int, round_dd, select, two_prod, two_sum, u32, u64)

QNAN = 0x7FC00000
INF = 0x7F800000

_h = float.fromhex
LN2_HI45 = _h("0x1.62e42fefa3a00p-1")     # ln 2 to 45 bits: k * LN2_HI45 is exact, |k| < 2^8
LN2_LO45 = _h("-0x1.0ca86c3898d00p-49")   # ln 2 - LN2_HI45
INV_LN2 = _h("0x1.71547652b82fep+0")           # 1 / ln 2, rounded to f64
SQRT2 = _h("0x1.6a09e667f3bcdp+0")


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
_EXP2_FIX = ((0x3b429d37, 0x3f804385), (0xbcf3a937, 0x3f7ac6b1))
_LOG_FIX = ((0x3c413d3a, 0xc08e158f), (0x41178feb, 0x400fe5e7), (0x4c5d65a5, 0x418f034b),
            (0x65d890d3, 0x4254d1f9), (0x6f31a8ec, 0x42845a89))
_LOG2_FIX = ()
_TANH_FIX = ()
_SIN_FIX = ((0x46199998, 0xbeb1fa5d),)              # of |x|: the sign is applied after
_COS_FIX = ((0x5f18b878, 0x3f7f14bb), (0x6115cb11, 0x3f78142f))   # of |x|


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

def _rsqrt64(xd):
    """1/sqrt(xd) for a positive normal f64, relative error below 2^-34: an integer
    first guess (within 3.5 %) and three Newton steps y(3 - x y^2)/2."""
    y = (xd.c.const(0x5FE6EB50C7B537A9, u64) - (xd.bitcast(u64) >> 1)).bitcast(f64)
    half = xd * 0.5
    for _ in range(3):
        y = y * (1.5 - half * y * y)
    return y


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
    xd = x.cast(f64)
    # a midpoint has 25 bits: its square is exact
    r = _rounded(xd * _rsqrt64(xd), lambda m, up: select(up, (m * m).le(xd), (m * m).gt(xd)))
    r = select(x.eq(0.0), x, r)
    r = select(x.lt(0.0), bits_const(x.c, QNAN, f32), r)
    return select(x.eq(float("inf")), x, r)


def _above_one(m, xd):
    """Exactly whether m*m*xd > 1 (m*m is exact; the product's error term by Dekker)."""
    p, e = two_prod(m * m, xd)
    return (p - 1.0).gt(-e)


def rsqrt(x):
    xd = x.cast(f64)
    # 1/sqrt(x) > m exactly when m*m*x < 1 (never equal: no tie)
    r = _rounded(_rsqrt64(xd), lambda m, up: _above_one(m, xd).ne(up))
    r = select(x.eq(0.0), copysign(bits_const(x.c, INF, f32), x), r)
    r = select(x.lt(0.0), bits_const(x.c, QNAN, f32), r)
    return select(x.eq(float("inf")), x.c.const(0.0, f32), r)


# -- exponentials ---------------------------------------------------------------------

_EXP_Q = [1.0 / f for f in (2, 6, 24, 120, 720, 5040, 40320, 362880, 3628800, 39916800,
                            479001600, 6227020800)]    # (exp(r) - 1 - r) / r^2, to r^11/13!


def _exp_dd(r, c):
    """exp(r + c) as a double-double for |r| <= 0.35 and |c| <= 2^-53 |r|."""
    s = r * r * _horner(r, _EXP_Q)
    hi, lo = fast_two_sum(r.c.const(1.0, f64), r)
    return fast_two_sum(hi, lo + (s + c + c * r))


def _expm1_r(r):
    """e^r - 1 in f64 for |r| <= 0.35, as r + r^2 q(r) (q by Estrin's scheme): relative
    error about 2^-52."""
    return r + r * r * _estrin(r, _EXP_Q)


def _reduce_ln2(t):
    """(k, n, r) with t = k ln 2 + r, k integral (an f64; n: the same as i64), |r| <= 0.35
    (t an f64, |t| < 2^8, whose products with a 45-bit ln 2 head are exact; r carries one
    rounding of the tail)."""
    k, n = rne_int(t * INV_LN2)
    return k, n, (t - k * LN2_HI45) - k * LN2_LO45


_EXP_T = np.array([_h(c) for c in (
    "0x1.0000000000000p+0", "0x1.02c9a3e778061p+0", "0x1.059b0d3158574p+0",
    "0x1.0874518759bc8p+0", "0x1.0b5586cf9890fp+0", "0x1.0e3ec32d3d1a2p+0",
    "0x1.11301d0125b51p+0", "0x1.1429aaea92de0p+0", "0x1.172b83c7d517bp+0",
    "0x1.1a35beb6fcb75p+0", "0x1.1d4873168b9aap+0", "0x1.2063b88628cd6p+0",
    "0x1.2387a6e756238p+0", "0x1.26b4565e27cddp+0", "0x1.29e9df51fdee1p+0",
    "0x1.2d285a6e4030bp+0", "0x1.306fe0a31b715p+0", "0x1.33c08b26416ffp+0",
    "0x1.371a7373aa9cbp+0", "0x1.3a7db34e59ff7p+0", "0x1.3dea64c123422p+0",
    "0x1.4160a21f72e2ap+0", "0x1.44e086061892dp+0", "0x1.486a2b5c13cd0p+0",
    "0x1.4bfdad5362a27p+0", "0x1.4f9b2769d2ca7p+0", "0x1.5342b569d4f82p+0",
    "0x1.56f4736b527dap+0", "0x1.5ab07dd485429p+0", "0x1.5e76f15ad2148p+0",
    "0x1.6247eb03a5585p+0", "0x1.6623882552225p+0", "0x1.6a09e667f3bcdp+0",
    "0x1.6dfb23c651a2fp+0", "0x1.71f75e8ec5f74p+0", "0x1.75feb564267c9p+0",
    "0x1.7a11473eb0187p+0", "0x1.7e2f336cf4e62p+0", "0x1.82589994cce13p+0",
    "0x1.868d99b4492edp+0", "0x1.8ace5422aa0dbp+0", "0x1.8f1ae99157736p+0",
    "0x1.93737b0cdc5e5p+0", "0x1.97d829fde4e50p+0", "0x1.9c49182a3f090p+0",
    "0x1.a0c667b5de565p+0", "0x1.a5503b23e255dp+0", "0x1.a9e6b5579fdbfp+0",
    "0x1.ae89f995ad3adp+0", "0x1.b33a2b84f15fbp+0", "0x1.b7f76f2fb5e47p+0",
    "0x1.bcc1e904bc1d2p+0", "0x1.c199bdd85529cp+0", "0x1.c67f12e57d14bp+0",
    "0x1.cb720dcef9069p+0", "0x1.d072d4a07897cp+0", "0x1.d5818dcfba487p+0",
    "0x1.da9e603db3285p+0", "0x1.dfc97337b9b5fp+0", "0x1.e502ee78b3ff6p+0",
    "0x1.ea4afa2a490dap+0", "0x1.efa1bee615a27p+0", "0x1.f50765b6e4540p+0",
    "0x1.fa7c1819e90d8p+0")])
_EXP2_P = [_h(c) for c in (
    "0x1.62e42fefa39efp-7", "0x1.ebfbdff82c58fp-15", "0x1.c6b08d704a0c0p-23",
    "0x1.3b2ab6fba4e77p-31", "0x1.5d87fe78a6731p-40", "0x1.430912f86c787p-49")]
# 2^(j/64), j = 0..63, and (ln 2 / 64)^i / i!, i = 1..6 (the series of 2^(d/64) - 1,
# |d| <= 1/2, truncation below 2^-64), rounded to f64 (mpmath at 120 bits)


def _exp_table(n, p):
    """2^(n/64) (1 + p) in f64, for an i64 ``n`` (2^(n/64) a normal f64): the table entry
    2^(j/64), j = n mod 64, times 1 + p, scaled by 2^(n div 64) (exact)."""
    t = p.c.table(_EXP_T, n & 63)
    return (t + t * p) * pow2(n >> 6)


def exp(x):
    k, n, r = _reduce_ln2(clamp(x.cast(f64), -150.0, 100.0))   # beyond: 0 or inf in f32
    return _fix(x, ((1.0 + _expm1_r(r)) * pow2(n)).cast(f32), _EXP_FIX)


def exp2(x):
    """x = (k + d)/64, k integral, |d| <= 1/2: 2^(k/64) from the table, 2^(d/64) - 1 by
    its Taylor series to d^6 (summed by Estrin's scheme)."""
    t = clamp(x.cast(f64), -160.0, 130.0) * 64.0   # exact
    k, n = rne_int(t)
    d = t - k                                      # exact, |d| <= 1/2
    p = d * _estrin(d, _EXP2_P)
    return _fix(x, _exp_table(n, p).cast(f32), _EXP2_FIX)


# -- logarithms -----------------------------------------------------------------------

_ATANH_P = [_h(c) for c in (
    "0x1.5555555555558p-2", "0x1.99999999952e2p-3", "0x1.2492492df148dp-3",
    "0x1.c71c62e5800a1p-4", "0x1.7462b4ab2ef6bp-4", "0x1.39fe606542ddep-4",
    "0x1.2b584aae78a57p-4")]
# (atanh(s) - s) / s^3 as a polynomial in z = s^2 on [0, 0.0295] (|s| <= 0.1716): a
# Chebyshev fit (mpmath), error below 2^-52.4 (2^-57.5 relative to atanh s)


def _log_parts(x):
    """(e, l) with log(x) = e ln 2 + l (l = log m, m in [0.7, 1.42], relative error about
    2^-52) for a positive finite f32 ``x``; e is an integral f64."""
    b = x.cast(f64).bitcast(i64)
    e = ((b >> 52) - 1023).cast(f64)
    m = ((b & 0xFFFFFFFFFFFFF) | (1023 << 52)).bitcast(f64)
    big = m.gt(SQRT2)
    m = select(big, m * 0.5, m)
    e = select(big, e + 1.0, e)
    f = m - 1.0                                  # exact; 24 bits, so 2 + f is exact too
    t = f / (f + 2.0)                            # log m = 2 atanh(f / (2 + f))
    z = t * t
    return e, t * 2.0 + (t * 2.0) * z * _estrin(z, _ATANH_P)


def _log_specials(x, r):
    r = select(x.eq(0.0), bits_const(x.c, INF | 0x80000000, f32), r)
    r = select(x.lt(0.0), bits_const(x.c, QNAN, f32), r)
    return select(x.eq(float("inf")), x, r)


def log(x):
    e, l = _log_parts(x)
    r = (e * LN2_HI45 + (l + e * LN2_LO45)).cast(f32)
    return _log_specials(x, _fix(x, r, _LOG_FIX))


def log2(x):
    e, l = _log_parts(x)
    return _log_specials(x, _fix(x, (e + l * INV_LN2).cast(f32), _LOG2_FIX))


# -- hyperbolic tangent ---------------------------------------------------------------

def tanh(x):
    a = clamp(x.cast(f64).abs(), 0.0, 10.0)   # tanh(10) rounds to 1 in f32
    _, n, r = _reduce_ln2(a * 2.0)             # e^{2a} - 1 = 2^k (e^r - 1) + 2^k - 1
    s = pow2(n)
    em = _expm1_r(r) * s + (s - 1.0)           # exact terms, k = 0 for 2a < ln 2 / 2
    return copysign(_fix(x.abs(), (em / (em + 2.0)).cast(f32), _TANH_FIX), x)


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
    "-0x1.5555555555555p-3", "0x1.1111111111111p-7", "-0x1.a01a01a01a01ap-13",
    "0x1.71de3a556c734p-19", "-0x1.ae64567f544e4p-26", "0x1.6124613a86d09p-33",
    "-0x1.ae7f3e733b81fp-41", "0x1.952c77030ad4ap-49", "-0x1.2f49b46814157p-57")]
_COS_C = [_h(c) for c in (
    "0x1.5555555555555p-5", "-0x1.6c16c16c16c17p-10", "0x1.a01a01a01a01ap-16",
    "-0x1.27e4fb7789f5cp-22", "0x1.1eed8eff8d898p-29", "-0x1.93974a8c07c9dp-37",
    "0x1.ae7f3e733b81fp-45", "-0x1.6827863b97d97p-53", "0x1.e542ba4020225p-62")]
# (-1)^n / (2n+1)!, n = 1..9 and (-1)^n / (2n)!, n = 2..10 (Taylor, |r| <= pi/4)


def _reduce_pio2(x):
    """|x| = (4j + q) pi/2 + r for a finite f32 ``x``: (q as u64 in 0..3, r as a
    double-double, |r| <= pi/4). Payne-Hanek: the 24-bit significand times a 128-bit
    window of 2/pi chosen by the exponent, in exact 32-bit limb arithmetic."""
    c = x.c
    b = x.bitcast(u32).cast(u64) & 0x7FFFFFFF
    big_e = b >> 23
    m = select(big_e.eq(0), b & 0x7FFFFF, (b & 0x7FFFFF) | 0x800000)
    # x = m 2^e, e = max(E, 1) - 150; the window starts at bit e - 1 of 2/pi, which is
    # bit (e - 1) + 31 = max(E, 1) - 120 of the limbs (clamped: tiny x use another path)
    pos = (big_e.max(120) - 120)
    q0, sh = pos >> 5, pos & 31
    limbs = [c.const(v, u64) for v in _TWO_OVER_PI]

    def limb(j):                                  # limbs[q0 + j], q0 in 0..4
        v = limbs[j]
        for d in range(1, 5):
            v = select(q0.eq(d), limbs[j + d], v)
        return v

    picked = [limb(j) for j in range(5)]
    w = [((picked[j] << sh) | (picked[j + 1] >> (32 - sh))) & 0xFFFFFFFF for j in range(4)]
    mask = 0xFFFFFFFF
    t = m * w[3]
    l0, t = t & mask, m * w[2] + (t >> 32)
    l1, t = t & mask, m * w[1] + (t >> 32)
    l2, t = t & mask, m * w[0] + (t >> 32)
    l3 = t & mask                                 # P = m W; |x| 2/pi = P / 2^126 mod 4
    quad = l3 >> 30
    f_hi = ((l3 & 0x3FFFFFFF) << 34) | (l2 << 2) | (l1 >> 30)      # fraction bits, top 64
    f_lo = ((l1 & 0x3FFFFFFF) << 2) | (l0 >> 30)                   # the next 32
    quad = (quad + (f_hi >> 63)) & 3              # round to the nearest quadrant
    fs = f_hi.bitcast(i64)                        # f - 1 when f >= 1/2
    hi = (fs & -2048).cast(f64)                   # exact: a multiple of 2^11 below 2^63
    lo = (fs & 2047).cast(f64) + f_lo.cast(f64) * 2.0 ** -32      # exact: 43 bits
    r = (hi + lo) * (PIO2 * 2.0 ** -64)           # hi + lo: the fraction, rounded once
    a = x.cast(f64).abs()
    small = a.lt(0.78)                            # below pi/4: r = |x|, q = 0
    return select(small, c.const(0, u64), quad), select(small, a, r)


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
}

#: per function, the name of its table of exceptional inputs (see ``_fix``)
EXCEPTIONS = {"exp": "_EXP_FIX", "exp2": "_EXP2_FIX", "log": "_LOG_FIX", "log2": "_LOG2_FIX",
              "tanh": "_TANH_FIX", "sin": "_SIN_FIX", "cos": "_COS_FIX"}
