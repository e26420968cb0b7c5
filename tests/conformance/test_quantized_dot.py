"""quantized_dot Q4_K x Q8_K (spec §3): exact statistics, rounding points, specials, orders."""
import math

import numpy as np
import pytest

from ninfer_ir.numerics.quantized import (quantized_dot_q4k_q8k, quantized_dot_rows,
                                      record_values)
from ninfer_ir.errors import VerifyError
from ninfer_ir.sumorder import SEQ, TREE, SumOrder

from . import scalar_model as model

F32 = np.float32
INF = math.inf
NAN = math.nan


def bits(x) -> int:
    return int(np.asarray(x, dtype=F32).reshape(()).view(np.uint32))


def fbits(x: float) -> int:
    return model.f32_bits(x)


# --- building records with chosen S and T --------------------------------------------

def _sub_block_for(target: int) -> tuple[list[int], list[int]]:
    """32 weights in [0,15] and 32 activations in [-128,127] whose dot is `target`."""
    assert abs(target) <= 55_000
    sign = 1 if target >= 0 else -1
    w, x, rem = [], [], target
    while abs(rem) >= 15 * 127:
        w.append(15)
        x.append(127 * sign)
        rem -= 15 * 127 * sign
    w.append(15)
    x.append(int(rem / 15))
    rem -= 15 * x[-1]
    w.append(1)
    x.append(rem)
    w += [0] * (32 - len(w))
    x += [0] * (32 - len(x))
    assert len(w) == 32 and sum(a * b for a, b in zip(w, x)) == target
    return w, x


def _split(target: int, limit: int) -> tuple[list[int], list[int]]:
    """Factors f[8] in [0,63] and parts p[8], |p| <= limit, with sum f*p == target."""
    factors, parts, rem = [], [], target
    for _ in range(7):
        part = max(-limit, min(limit, int(rem / 63)))
        factors.append(63)
        parts.append(part)
        rem -= 63 * part
    assert abs(rem) <= limit
    return factors + [1], parts + [rem]


def pair(s: int, t: int, d: float = 1.0, dmin: float = 0.0, ds: float = 1.0):
    """One (Q4_K, Q8_K) record pair with exactly the statistics S = s and T = t."""
    sc, dots = _split(s, 55_000)
    m, pairs = _split(t, 65_534)
    wq, xq = [], []
    for target in dots:
        w, x = _sub_block_for(target)
        wq += w
        xq += x
    bsum = []
    for p in pairs:
        bsum += [p // 2, p - p // 2]
    a = model.pack_q4k(d, dmin, sc, m, wq)
    b = model.pack_q8k(ds, xq, bsum)
    assert model.record_stats(a, b) == (s, t)
    return a, b


def arrays(pairs):
    lhs = np.frombuffer(b"".join(a for a, _ in pairs), dtype=np.uint8).reshape(-1, 144)
    rhs = np.frombuffer(b"".join(b for _, b in pairs), dtype=np.uint8).reshape(-1, 292)
    return lhs, rhs


def value(s, t, d=1.0, dmin=0.0, ds=1.0) -> float:
    lhs, rhs = arrays([pair(s, t, d, dmin, ds)])
    out = quantized_dot_q4k_q8k(lhs, rhs)
    assert out.shape == () and out.dtype == F32
    return out


# --- exact statistics at the extremes ----------------------------------------------------

@pytest.mark.parametrize("xq, s_want", [(-128, -30_965_760), (127, 30_723_840)])
@pytest.mark.parametrize("bsum, t_want", [(32767, 33_029_136), (-32768, -33_030_144),
                                          (-7, -7056)])
def test_exact_s_and_t_at_the_extremes(xq, s_want, bsum, t_want):
    a = model.pack_q4k(1.0, 0.0, [63] * 8, [63] * 8, [15] * 256)
    b = model.pack_q8k(1.0, [xq] * 256, [bsum] * 16)
    assert model.record_stats(a, b) == (s_want, t_want)   # 63*8*32*15*xq, 63*8*2*bsum
    lhs, rhs = arrays([(a, b)])
    # d = 1, dmin = 0, ds = 1: v = f32(S); both S values are exact in binary32
    assert bits(quantized_dot_q4k_q8k(lhs, rhs)) == fbits(float(s_want))
    # d = 0, dmin = 1: v = 0*f32(S) - f32(T) = -T (exact in binary32 as well)
    a0 = model.pack_q4k(0.0, 1.0, [63] * 8, [63] * 8, [15] * 256)
    lhs0, _ = arrays([(a0, b)])
    assert bits(quantized_dot_q4k_q8k(lhs0, rhs)) == fbits(float(-t_want))


def test_bsum_is_used_as_stored():
    # q all zero but bsum is not: T comes from the stored bsum
    a = model.pack_q4k(0.0, 2.0, [0] * 8, [1, 2, 3, 4, 5, 6, 7, 8], [0] * 256)
    b = model.pack_q8k(1.0, [0] * 256, [100, -1] * 8)
    lhs, rhs = arrays([(a, b)])
    t = 99 * (1 + 2 + 3 + 4 + 5 + 6 + 7 + 8)
    assert bits(quantized_dot_q4k_q8k(lhs, rhs)) == fbits(-2.0 * t)


# --- the rounding conversion f32(S) ---------------------------------------------------

@pytest.mark.parametrize("s, f32_s", [
    (16_777_219, 16_777_220),       # 3 mod 4: tie to the even mantissa, upward
    (-16_777_219, -16_777_220),
    (16_777_217, 16_777_216),       # 1 mod 4: tie to the even mantissa, downward
    (24_000_001, 24_000_000),
    (16_777_216, 16_777_216),
])
def test_f32_of_s_rounds_to_nearest_even(s, f32_s):
    assert bits(value(s, 0)) == fbits(float(f32_s))


def test_the_result_depends_on_rounding_s_first():
    s, d = 16_777_219, 1.5
    got = value(s, 0, d=d)
    assert bits(got) == fbits(25_165_830.0)                 # 1.5 * 16777220, exact
    single = model.r32(d * s)                               # R32(d*S) without f32(S)
    truncated = model.r32(d * (s - 1))                      # f32(S) by truncation
    assert single == truncated == 25_165_828.0
    assert bits(got) != fbits(single)


# --- no FMA contraction -------------------------------------------------------------------

def test_p_minus_n_is_not_fused():
    d = 1.0 + 2.0 ** -10                                    # exact in binary16
    s = 2 ** 20 + 1
    t = 2 ** 20 + 2 ** 10 + 1                               # = R32(d*S), exact in binary32
    got = value(s, t, d=d, dmin=1.0, ds=1.0)
    p = model.f32_mul(d, float(s))                          # R32(1049601 + 2**-10) = 1049601
    unfused = model.f32_mul(1.0, model.f32_sub(p, float(t)))
    fused = model.r32(d * s - t)                            # one rounding of d*S - n (f64 exact)
    assert unfused == 0.0 and fused == 2.0 ** -10
    assert bits(got) == fbits(unfused) == 0


# --- summation order ----------------------------------------------------------------------

def _orders_case():
    h = 2.0 ** -24
    return arrays([pair(1, 0, ds=1.0), pair(1, 0, ds=h), pair(1, 0, ds=h), pair(1, 0, ds=h)])


@pytest.mark.parametrize("order, want", [
    ("seq", 1.0), (SEQ, 1.0), ("chunk<1>", 1.0), ("chunk<3>", 1.0), ("chunk<4>/tree", 1.0),
    ("tree", 1.0 + 2.0 ** -23), (TREE, 1.0 + 2.0 ** -23), ("chunk<2>", 1.0 + 2.0 ** -23),
    ("chunk<2>/tree", 1.0 + 2.0 ** -23), ("chunk<1>/tree", 1.0 + 2.0 ** -23),
])
def test_sequential_and_pairwise_sums_differ(order, want):
    lhs, rhs = _orders_case()
    assert bits(quantized_dot_q4k_q8k(lhs, rhs, order)) == fbits(want)
    assert bits(quantized_dot_q4k_q8k(lhs, rhs, order=order)) == fbits(want)


def test_bad_order_text():
    lhs, rhs = _orders_case()
    with pytest.raises(ValueError, match="bad sum order"):
        quantized_dot_q4k_q8k(lhs, rhs, "pairwise")


# --- signed zero, no initial accumulator ------------------------------------------------------

NEGZERO = fbits(-0.0)


@pytest.mark.parametrize("order", ["seq", "tree", "chunk<2>", "chunk<2>/tree"])
def test_single_negative_zero_stays_negative(order):
    via_p = pair(0, 0, d=-1.0, dmin=0.0, ds=1.0)       # p = -0, n = +0, p - n = -0
    via_ds = pair(0, 0, d=1.0, dmin=0.0, ds=-1.0)      # p - n = +0, ds = -1
    for rec in (via_p, via_ds):
        lhs, rhs = arrays([rec])
        assert bits(quantized_dot_q4k_q8k(lhs, rhs, order)) == NEGZERO
    lhs, rhs = arrays([via_p, via_ds, via_p])
    assert bits(quantized_dot_q4k_q8k(lhs, rhs, order)) == NEGZERO
    lhs, rhs = arrays([via_p, pair(0, 0)])
    assert bits(quantized_dot_q4k_q8k(lhs, rhs, order)) == 0


# --- IEEE special values ---------------------------------------------------------------------

@pytest.mark.parametrize("s, t, d, dmin, ds, want", [
    (5, 0, INF, 0.0, 1.0, INF),                       # p = inf
    (-5, 0, INF, 0.0, 1.0, -INF),
    (0, 0, INF, 0.0, 1.0, NAN),                       # inf * 0
    (5, 3, 1.0, NAN, 1.0, NAN),                       # NaN dmin
    (5, 3, NAN, 0.0, 1.0, NAN),
    (5, 5, 1.0, 1.0, INF, NAN),                       # inf * (p - n = 0)
    (5, 3, 1.0, 1.0, -INF, -INF),
    (5, 3, INF, INF, 1.0, NAN),                       # inf - inf
    (5, 3, 1.0, 1.0, NAN, NAN),
    (1_000_000, 0, 65504.0, 0.0, 3e38, INF),         # overflow of ds * (p - n)
    (3, 0, 2.0 ** -24, 0.0, 1.0, 3 * 2.0 ** -24),     # smallest binary16 subnormal d
    (1, 0, 2.0 ** -24, 0.0, 2.0 ** -125, 2.0 ** -149),  # down to the smallest subnormal
    (0, 3, 0.0, 2.0 ** -20, 1.0, -3 * 2.0 ** -20),    # binary16 subnormal dmin
    (1, 0, 1.0, 0.0, 2.0 ** -149, 2.0 ** -149),       # subnormal ds
    (1, 0, 0.5, 0.0, 2.0 ** -149, 0.0),               # 2**-150: tie to even -> +0
    (1, 0, 0.75, 0.0, 2.0 ** -149, 2.0 ** -149),      # 0.75 ulp -> 1 ulp
    (1, 0, 1.5, 0.0, 2.0 ** -149, 2.0 ** -148),       # 1.5 ulp -> 2 ulp (even)
    (1, 0, 0.5, 0.0, 2.0 ** -126, 2.0 ** -127),       # a normal times 0.5 -> subnormal, kept
    (-1, 0, 0.5, 0.0, 2.0 ** -149, -0.0),             # rounds to -0
])
def test_ieee_specials(s, t, d, dmin, ds, want):
    got = value(s, t, d=d, dmin=dmin, ds=ds)
    if math.isnan(want):
        assert np.isnan(got)
    else:
        assert bits(got) == fbits(want)


@pytest.mark.parametrize("order", ["seq", "tree", "chunk<2>"])
def test_specials_through_the_sum(order):
    one, inf, ninf = pair(1, 0), pair(1, 0, d=INF), pair(1, 0, d=-INF)
    lhs, rhs = arrays([one, inf, one])
    assert bits(quantized_dot_q4k_q8k(lhs, rhs, order)) == fbits(INF)
    lhs, rhs = arrays([one, inf, ninf])
    assert np.isnan(quantized_dot_q4k_q8k(lhs, rhs, order))


# --- G = 0, shapes and types ---------------------------------------------------------------------

class Unreadable(np.ndarray):
    """An array whose elements cannot be read (any indexing, ufunc or numpy function raises)."""

    def __getitem__(self, item):
        raise AssertionError("the input was read")

    def __array_ufunc__(self, *args, **kwargs):
        raise AssertionError("the input was read")

    def __array_function__(self, *args, **kwargs):
        raise AssertionError("the input was read")

    def __array__(self, *args, **kwargs):
        raise AssertionError("the input was read")


def test_zero_records_give_positive_zero_without_reading():
    lhs = np.zeros((0, 144), dtype=np.uint8).view(Unreadable)
    rhs = np.zeros((0, 292), dtype=np.uint8).view(Unreadable)
    for order in ("seq", "tree", "chunk<4>/tree"):
        out = quantized_dot_q4k_q8k(lhs, rhs, order)
        assert type(out) is np.ndarray and out.shape == () and out.dtype == F32
        assert bits(out) == 0
    rows = quantized_dot_rows(np.zeros((3, 0, 144), np.uint8).view(Unreadable), rhs)
    assert rows.shape == (3,) and (rows.view(np.uint32) == 0).all()
    assert record_values(lhs, rhs).shape == (0,)


def test_dot_type_errors():
    good_l = np.zeros((3, 144), np.uint8)
    good_r = np.zeros((3, 292), np.uint8)
    with pytest.raises(VerifyError) as info:
        quantized_dot_q4k_q8k(np.zeros((3, 144), np.float32), good_r)
    assert str(info.value) == ("quantized_dot: lhs must be u8[G,144] (q4_k records), "
                               "got float32[3,144]")
    with pytest.raises(VerifyError, match=r"lhs must be u8\[G,144\].*got uint8\[2,3,144\]"):
        quantized_dot_q4k_q8k(np.zeros((2, 3, 144), np.uint8), good_r)   # not a batched dot
    with pytest.raises(VerifyError, match=r"rhs must be u8\[G,292\] \(q8_k records\), "
                                          r"got uint8\[3,291\]"):
        quantized_dot_q4k_q8k(good_l, np.zeros((3, 291), np.uint8))
    with pytest.raises(VerifyError, match=r"rhs must be u8.*got int8\[3,292\]"):
        quantized_dot_q4k_q8k(good_l, good_r.view(np.int8))
    with pytest.raises(VerifyError, match="same number of records G, got 3 and 2"):
        quantized_dot_q4k_q8k(good_l, np.zeros((2, 292), np.uint8))
    with pytest.raises(VerifyError, match=r"lhs must be u8\[G,144\].*got list"):
        quantized_dot_q4k_q8k([[0] * 144], good_r)
    with pytest.raises(VerifyError, match=r"lhs must be u8\[N,G,144\]"):
        quantized_dot_rows(good_l, good_r)
    with pytest.raises(VerifyError, match="same number of records G"):
        quantized_dot_rows(np.zeros((4, 2, 144), np.uint8), good_r)


# --- rows and layouts -------------------------------------------------------------------------

def _random_pairs(rng, n, g):
    lhs = rng.integers(0, 256, (n, g, 144), dtype=np.uint8)
    d = (rng.standard_normal((n, g, 2)) * 0.01).astype(np.float16)
    lhs[..., 0:4] = d.view(np.uint8).reshape(n, g, 4)
    rhs = rng.integers(0, 256, (g, 292), dtype=np.uint8)
    ds = (rng.standard_normal(g) * 0.05).astype("<f4")
    rhs[:, 0:4] = ds.view(np.uint8).reshape(g, 4)
    return lhs, rhs


@pytest.mark.parametrize("order", ["seq", "tree", "chunk<3>", "chunk<4>/tree"])
def test_rows_equal_one_dot_per_row(order):
    rng = np.random.default_rng(11)
    lhs, rhs = _random_pairs(rng, 9, 13)
    rows = quantized_dot_rows(lhs, rhs, order)
    assert rows.shape == (9,) and rows.dtype == F32
    for n in range(9):
        assert bits(rows[n]) == bits(quantized_dot_q4k_q8k(lhs[n], rhs, order))
        want = model.dot([bytes(r) for r in lhs[n]], [bytes(r) for r in rhs], order)
        assert bits(rows[n]) == fbits(want)
    assert quantized_dot_rows(lhs[:0], rhs, order).shape == (0,)


def test_record_values_and_layout_independence():
    rng = np.random.default_rng(12)
    lhs, rhs = _random_pairs(rng, 1, 20)
    lhs = lhs[0]
    v = record_values(lhs, rhs)
    assert v.shape == (20,) and v.dtype == F32
    for g in range(20):
        assert bits(v[g]) == fbits(model.record_value(bytes(lhs[g]), bytes(rhs[g])))
    # records at odd byte offsets and strides
    buf_l = np.zeros((20, 151), np.uint8)
    buf_l[:, 3:147] = lhs
    buf_r = np.zeros((40, 301), np.uint8)
    buf_r[::2, 1:293] = rhs
    frozen_l, frozen_r = buf_l[:, 3:147], buf_r[::2, 1:293]
    frozen_l.flags.writeable = False
    frozen_r.flags.writeable = False
    assert np.array_equal(record_values(frozen_l, frozen_r).view(np.uint32), v.view(np.uint32))
    got = quantized_dot_q4k_q8k(frozen_l, frozen_r, "tree")
    assert bits(got) == bits(SumOrder.parse("tree").evaluate(v))
