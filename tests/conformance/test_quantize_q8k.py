"""quantize to Q8_K (spec §4), checked against hand-derived values and the scalar model."""
import math
import struct

import numpy as np
import pytest

from ninfer_ir.numerics.quantized import (REASON_DS_NOT_FINITE, REASON_INVERSE_NOT_FINITE,
                                      REASON_NONFINITE_INPUT, REASON_SCALED_NOT_FINITE,
                                      domain_error, quantize_q8k)
from ninfer_ir.errors import DomainError, VerifyError

from . import scalar_model as model

F32 = np.float32
FLT_MAX = float(np.finfo(F32).max)


def fields(record):
    """(ds, q list, bsum list) decoded by the test's own decoder."""
    return model.q8k_decode(bytes(record))


def bits(x) -> int:
    return model.f32_bits(float(x))


def block(fill=0.0, **at):
    b = np.full(256, fill, dtype=F32)
    for pos, value in at.items():
        b[int(pos[1:])] = value
    return b


def expected_record(row) -> bytes:
    return model.quantize_block([float(x) for x in row], 0)


# --- the extreme, and the tie rule ----------------------------------------------

@pytest.mark.parametrize("first, second", [(3.0, -3.0), (-3.0, 3.0)])
def test_equal_magnitudes_take_the_minimum(first, second):
    row = block(0.25, p5=first, p200=second)
    row[7:30] = np.linspace(-2.9, 2.9, 23, dtype=F32)
    rec = quantize_q8k(row[np.newaxis])[0]
    ds, q, _ = fields(rec)
    # extreme = -3: inverse = R32(127/3) > 0, so ds > 0 and -3 maps to -127.
    inverse = model.f32_div(-127.0, -3.0)
    assert bits(ds) == bits(model.f32_div(1.0, inverse)) and ds > 0
    assert q[5 if first < 0 else 200] == -127
    assert q[200 if first < 0 else 5] == 127
    assert bytes(rec) == expected_record(row)


def test_larger_magnitude_wins_either_sign():
    pos = quantize_q8k(block(1.0, p3=-2.0, p9=2.5)[np.newaxis])[0]
    neg = quantize_q8k(block(1.0, p3=-2.5, p9=2.0)[np.newaxis])[0]
    assert fields(pos)[0] < 0 and fields(pos)[1][9] == -127
    assert fields(neg)[0] > 0 and fields(neg)[1][3] == -127


@pytest.mark.parametrize("c", [2.5, -2.5, 1.0, -1e-30, 7e20, -FLT_MAX, 3.0e-36])
def test_all_equal_block(c):
    rec = quantize_q8k(np.full((1, 256), c, dtype=F32))[0]
    ds, q, bsum = fields(rec)
    # both signs: the extreme is c itself and c * R32(-127/c) rounds to -127
    assert q == [-127] * 256
    assert bsum == [-16 * 127] * 16
    assert bits(ds) == bits(model.f32_div(1.0, model.f32_div(-127.0, float(F32(c)))))


# --- zero blocks -----------------------------------------------------------------

def test_zero_blocks_of_either_sign_are_all_zero_bytes():
    rng = np.random.default_rng(1)
    values = np.zeros((5, 256), dtype=F32)
    values[1] = -0.0
    values[2] = np.where(rng.random(256) < 0.5, -0.0, 0.0).astype(F32)
    values[3] = rng.standard_normal(256).astype(F32)
    values[4, :128] = -0.0
    rec = quantize_q8k(values)
    for g in (0, 1, 2, 4):
        assert bytes(rec[g]) == bytes(292), g          # ds = +0.0 (not -0.0), q = 0, bsum = 0
    assert bytes(rec[3]) == expected_record(values[3])


# --- subnormals -------------------------------------------------------------------

def test_subnormal_inputs_are_not_flushed():
    # extreme 2**-120 gives inverse = -127 * 2**120 exactly; k * 2**-130 is subnormal for k < 16
    row = np.zeros(256, dtype=F32)
    row[0] = 2.0 ** -120
    ks = np.arange(1, 16)
    row[1:16] = ks * 2.0 ** -130
    row[16:31] = -ks * 2.0 ** -130
    assert all(0 < abs(x) < np.finfo(F32).tiny for x in row[1:31])
    ds, q, bsum = fields(quantize_q8k(row[np.newaxis])[0])
    assert q[0] == -127
    for k in range(1, 16):
        want = round(-127 * k / 1024)               # the scaled value -127k/1024 is exact
        assert q[k] == want and q[15 + k] == -want, k
    assert q[1:16] != [0] * 15                       # a flush-to-zero would give all zeros
    assert bsum[0] == sum(q[0:16]) and bsum[1] == sum(q[16:32])
    assert bits(ds) == bits(model.f32_div(1.0, -127.0 * 2.0 ** 120))


def test_all_subnormal_block_overflows_the_inverse():
    # every value subnormal: -127/extreme overflows binary32
    row = np.full(256, 1e-39, dtype=F32)
    with pytest.raises(DomainError) as info:
        quantize_q8k(row[np.newaxis])
    assert info.value.record == 0 and info.value.reason == REASON_INVERSE_NOT_FINITE


def _smallest_extreme_with_finite_inverse() -> float:
    """Found by the scalar model's exact rounding, walking one ulp at a time."""
    e = F32(127.0 / FLT_MAX)                         # near the boundary
    while math.isfinite(model.f32_div(-127.0, float(np.nextafter(e, F32(0))))):
        e = np.nextafter(e, F32(0))
    while not math.isfinite(model.f32_div(-127.0, float(e))):
        e = np.nextafter(e, F32(1))
    return float(e)


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_inverse_overflow_boundary(sign):
    e_ok = _smallest_extreme_with_finite_inverse()
    e_bad = float(np.nextafter(F32(e_ok), F32(0)))
    good = np.zeros((1, 256), dtype=F32)
    good[0, 17] = sign * e_ok
    good[0, 18] = -sign * e_ok / 2
    rec = quantize_q8k(good)[0]
    assert bytes(rec) == expected_record(good[0])
    assert fields(rec)[1][17] == -127
    bad = good.copy()
    bad[0, 17] = sign * e_bad
    bad[0, 18] = 0
    with pytest.raises(DomainError) as info:
        quantize_q8k(np.concatenate([good, bad]))
    assert info.value.record == 1 and info.value.reason == REASON_INVERSE_NOT_FINITE


# --- rounding of the scaled values -----------------------------------------------------

def _half_block(extreme: float, unit: float):
    """Block with extreme `extreme` whose scaled values are exactly k + 0.5, k = -127..126."""
    row = np.zeros(256, dtype=F32)
    row[0] = extreme
    row[1:255] = (np.arange(-127, 127) + 0.5) * unit
    return row


@pytest.mark.parametrize("extreme, unit", [
    (-127.0, 1.0),                  # inverse = 1
    (127.0, -1.0),                  # inverse = -1
    (-127.0 * 2.0 ** -10, 2.0 ** -10),  # inverse = 2**10
    (127.0 * 2.0 ** 20, -(2.0 ** 20)),  # inverse = -2**-20
])
def test_scaled_halves_round_to_even(extreme, unit):
    row = _half_block(extreme, unit)
    ds, q, bsum = fields(quantize_q8k(row[np.newaxis])[0])
    assert bits(ds) == bits(extreme / -127.0)         # 1/inverse is a power of two here
    assert q[0] == -127 and q[255] == 0
    scaled = {i: -127 + i - 1 + 0.5 for i in range(1, 255)}   # x * inverse, exactly
    table = {0.5: 0, 1.5: 2, 2.5: 2, 3.5: 4, -0.5: 0, -1.5: -2, -2.5: -2, -3.5: -4,
             125.5: 126, 126.5: 126, -126.5: -126, -125.5: -126}
    for i, s in scaled.items():
        if s in table:
            assert q[i] == table[s], s
        k = math.floor(s)
        assert q[i] == (k if k % 2 == 0 else k + 1), s    # the even neighbour
    assert bsum == [sum(q[16 * j:16 * j + 16]) for j in range(16)]


# --- bsum -------------------------------------------------------------------------------

def test_bsum_is_the_exact_sum_of_each_16():
    rng = np.random.default_rng(7)
    values = (rng.standard_normal((40, 256)) * rng.integers(1, 50, (40, 1))).astype(F32)
    values[5] = np.where(np.arange(256) % 2, 1.0, -1.0)    # q = +-127 alternating
    values[6, :] = 1.0                                        # q = -127 everywhere
    rec = quantize_q8k(values)
    for g in range(40):
        ds, q, bsum = fields(rec[g])
        assert bsum == [sum(q[16 * j:16 * j + 16]) for j in range(16)]
        assert all(-127 <= v <= 127 for v in q)
    assert fields(rec[5])[2] == [0] * 16
    assert fields(rec[6])[2] == [-2032] * 16


# --- domain errors ----------------------------------------------------------------------

@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("where", [0, 3, 5])
def test_nonfinite_input_names_the_record(bad, where):
    values = np.random.default_rng(2).standard_normal((6, 256)).astype(F32)
    values[where, 77] = bad
    with pytest.raises(DomainError) as info:
        quantize_q8k(values)
    err = info.value
    assert err.record == where and err.reason == REASON_NONFINITE_INPUT
    assert str(err) == f"quantize q8_k: record {where}: input holds NaN or inf"


def test_the_lowest_failing_record_is_reported_with_its_own_reason():
    values = np.ones((6, 256), dtype=F32)
    values[4, 0] = np.nan
    values[2] = 1e-45                      # inverse overflows
    values[5, 3] = np.inf
    with pytest.raises(DomainError) as info:
        quantize_q8k(values)
    assert info.value.record == 2 and info.value.reason == REASON_INVERSE_NOT_FINITE
    assert str(info.value) == "quantize q8_k: record 2: inverse = -127/extreme is not finite"


def test_nonfinite_input_comes_before_a_bad_inverse():
    values = np.full((2, 256), 1e-45, dtype=F32)
    values[1, 9] = np.nan
    values[0] = 1.0
    with pytest.raises(DomainError) as info:
        quantize_q8k(values)
    assert info.value.record == 1 and info.value.reason == REASON_NONFINITE_INPUT
    values[1, 9] = 1e-45
    with pytest.raises(DomainError) as info:
        quantize_q8k(values)
    assert info.value.reason == REASON_INVERSE_NOT_FINITE


def test_nan_in_an_otherwise_zero_block_is_an_error_not_a_zero_record():
    values = np.zeros((3, 256), dtype=F32)
    values[1, 255] = np.nan
    with pytest.raises(DomainError) as info:
        quantize_q8k(values)
    assert info.value.record == 1


@pytest.mark.parametrize("extreme", [FLT_MAX, -FLT_MAX, 1.0, -1e-30])
def test_ds_and_scaled_stay_finite_at_the_range_ends(extreme):
    """Once inverse is finite, |inverse| >= 127/FLT_MAX is normal, so ds = 1/inverse is
    finite, and |x * inverse| <= |extreme * inverse| ~ 127: reasons 3 and 4 cannot
    arise from binary32 input. The ends of the range quantize without error."""
    row = np.linspace(-abs(extreme) / 2, abs(extreme) / 2, 256, dtype=F32)
    row[100] = extreme
    rec = quantize_q8k(row[np.newaxis])[0]
    assert bytes(rec) == expected_record(row)
    assert math.isfinite(fields(rec)[0]) and fields(rec)[1][100] == -127


@pytest.mark.parametrize("reason, text", [
    (REASON_NONFINITE_INPUT, "input holds NaN or inf"),
    (REASON_INVERSE_NOT_FINITE, "inverse = -127/extreme is not finite"),
    (REASON_DS_NOT_FINITE, "ds = 1/inverse is not finite"),
    (REASON_SCALED_NOT_FINITE, "a scaled value x*inverse is not finite"),
    (99, "domain error (unknown reason code 99)"),
])
def test_domain_error_message_format(reason, text):
    err = domain_error(12, reason)
    assert isinstance(err, DomainError) and isinstance(err, ValueError)
    assert str(err) == f"quantize q8_k: record 12: {text}"
    assert err.record == 12 and err.reason == reason
    assert [REASON_NONFINITE_INPUT, REASON_INVERSE_NOT_FINITE, REASON_DS_NOT_FINITE,
            REASON_SCALED_NOT_FINITE] == [1, 2, 3, 4]


# --- the input is only read; layout; type errors -------------------------------------------

def test_input_is_never_written_and_any_layout_gives_the_same_records():
    rng = np.random.default_rng(3)
    base = (rng.standard_normal((9, 256)) * 10).astype(F32)
    want = quantize_q8k(base.copy())
    frozen = base.copy()
    frozen.flags.writeable = False
    assert np.array_equal(quantize_q8k(frozen), want)
    assert np.array_equal(frozen, base)
    fortran = np.asfortranarray(base)
    assert np.array_equal(quantize_q8k(fortran), want)
    wide = np.zeros((18, 512), dtype=F32)
    wide[::2, ::2] = base
    assert np.array_equal(quantize_q8k(wide[::2, ::2]), want)
    assert np.array_equal(quantize_q8k(base.astype(">f4")), want)
    with_nan = base.copy()
    with_nan[4, 4] = np.nan
    snapshot = with_nan.copy()
    with pytest.raises(DomainError):
        quantize_q8k(with_nan)
    assert np.array_equal(with_nan, snapshot, equal_nan=True)


def test_record_layout_bytes():
    row = block(0.0, p0=-127.0, p1=1.0, p16=-2.0)
    rec = quantize_q8k(row[np.newaxis])[0]
    assert rec.dtype == np.uint8 and rec.shape == (292,)
    assert bytes(rec[0:4]) == struct.pack("<f", 1.0)          # inverse 1, ds 1
    assert rec[4] == 0x81 and rec[5] == 1 and rec[20] == 0xFE  # -127, 1, -2
    assert bytes(rec[260:264]) == struct.pack("<hh", -126, -2)


def test_empty_input():
    out = quantize_q8k(np.zeros((0, 256), dtype=F32))
    assert out.shape == (0, 292) and out.dtype == np.uint8


@pytest.mark.parametrize("bad", [
    np.zeros((2, 256), dtype=np.float64), np.zeros((2, 256), dtype=np.float16),
    np.zeros((2, 256), dtype=np.int32), np.zeros(256, dtype=F32),
    np.zeros((1, 2, 256), dtype=F32), np.zeros((2, 255), dtype=F32), [[0.0] * 256],
])
def test_wrong_type_or_shape_is_a_verify_error(bad):
    with pytest.raises(VerifyError, match=r"quantize: values must be f32\[G,256\], got"):
        quantize_q8k(bad)
