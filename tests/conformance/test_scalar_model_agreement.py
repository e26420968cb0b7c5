"""The vectorised oracle against the scalar model, bit for bit, on generated cases.

Hypothesis chooses the structure of each case (number of records, the kind of
every block or record, the sum order) and a seed from which numpy draws the
bulk of the values. Results are compared as bit patterns; a NaN result must be
a NaN in both (IEEE 754 does not fix NaN payloads).
"""
import math
import struct

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ninfer_ir.numerics.quantized import quantize_q8k, quantized_dot_q4k_q8k, record_values
from ninfer_ir.errors import DomainError

from . import scalar_model as model

F32 = np.float32


def fast(examples: int):
    return settings(max_examples=examples, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

ORDERS = st.one_of(
    st.sampled_from(["seq", "tree"]),
    st.builds(lambda k, t: f"chunk<{k}>" + ("/tree" if t else ""),
              st.integers(1, 5), st.booleans()))


def same_f32(got, want: float) -> bool:
    got = float(np.asarray(got, dtype=F32).reshape(()))
    if math.isnan(want):
        return math.isnan(got)
    return model.f32_bits(got) == model.f32_bits(want)


# --- quantize --------------------------------------------------------------------------

# weights: the error kinds are rarer so that most cases produce records
BLOCK_KINDS = (["normal"] * 6 + ["wide"] * 2 + ["tie"] * 2 + ["equal", "zeros", "signed_zeros",
               "halves", "halves", "subnormals", "subnormals", "boundary", "small_ints"]
               + ["tiny", "nan", "inf"])


def _block(kind: str, rng: np.random.Generator) -> np.ndarray:
    if kind == "normal":
        scale = 2.0 ** int(rng.integers(-60, 60))
        return (rng.standard_normal(256) * scale).astype(F32)
    if kind == "wide":
        exps = rng.uniform(-149, 127, 256)
        return (rng.choice([-1.0, 1.0], 256) * np.exp2(exps)).astype(F32)
    if kind == "tie":
        row = (rng.standard_normal(256) * 3).astype(F32)
        a = F32(np.abs(row).max() * 1.25)
        i, j = rng.choice(256, 2, replace=False)
        row[i], row[j] = a, -a
        return row
    if kind == "equal":
        return np.full(256, F32(rng.standard_normal() * 2.0 ** int(rng.integers(-100, 100))))
    if kind == "zeros":
        return np.zeros(256, dtype=F32)
    if kind == "signed_zeros":
        return np.where(rng.random(256) < 0.5, F32(-0.0), F32(0.0)).astype(F32)
    if kind == "halves":
        # extreme -/+127 * 2**-j makes inverse = +/-2**j exactly; x*inverse = k + 0.5
        j = int(rng.integers(-30, 30))
        sign = float(rng.choice([-1.0, 1.0]))
        row = ((rng.integers(-127, 127, 256) + 0.5) * (-sign) * 2.0 ** -j).astype(F32)
        row[int(rng.integers(256))] = sign * 127.0 * 2.0 ** -j
        return row
    if kind == "subnormals":
        row = (rng.integers(-2 ** 23, 2 ** 23, 256) * 2.0 ** -149).astype(F32)
        row[int(rng.integers(256))] = F32(rng.choice([-1.0, 1.0]) * rng.uniform(4e-37, 1e-35))
        return row
    if kind == "boundary":
        # extremes within a few ulps of 127/FLT_MAX: inverse just finite or just overflowing
        e = np.float32(127.0 / float(np.finfo(F32).max))
        e = e + np.float32(int(rng.integers(-4, 5))) * np.spacing(e)
        row = (rng.uniform(-1, 1, 256) * float(e)).astype(F32)
        row[int(rng.integers(256))] = F32(rng.choice([-1.0, 1.0]) * e)
        return row
    if kind == "small_ints":
        return rng.integers(-3, 4, 256).astype(F32)
    if kind == "tiny":
        return (rng.uniform(-1, 1, 256) * 1e-42).astype(F32)
    row = (rng.standard_normal(256)).astype(F32)
    row[int(rng.integers(256))] = {"nan": np.nan, "inf": float(rng.choice([-np.inf, np.inf]))}[kind]
    return row


@fast(1000)
@given(kinds=st.lists(st.sampled_from(BLOCK_KINDS), min_size=0, max_size=4),
       seed=st.integers(0, 2 ** 32 - 1), transpose=st.booleans())
def test_quantize_agrees_with_scalar_model(kinds, seed, transpose):
    rng = np.random.default_rng(seed)
    values = np.stack([_block(k, rng) for k in kinds]) if kinds else np.zeros((0, 256), F32)
    if transpose:                         # same values through a non-contiguous view
        values = np.ascontiguousarray(values.T).T
    snapshot = values.copy()
    rows = [[float(x) for x in row] for row in values]
    try:
        want = model.quantize(rows)
    except model.ModelDomainError as err:
        try:
            quantize_q8k(values)
        except DomainError as got:
            assert (got.record, got.reason) == (err.record, err.reason)
        else:
            raise AssertionError(f"expected DomainError for record {err.record}")
    else:
        got = quantize_q8k(values)
        assert got.shape == (len(kinds), 292)
        assert got.tobytes() == want
    assert np.array_equal(values, snapshot, equal_nan=True)


# --- dot -------------------------------------------------------------------------------------

HALF_KINDS = ["moderate"] * 5 + ["any", "any", "subnormal", "zero", "inf", "nan"]
DS_KINDS = ["moderate"] * 5 + ["wide", "wide", "subnormal", "zero", "inf", "nan"]
BSUM_KINDS = ["valid", "valid", "random"]


def _half_bits(kind: str, rng: np.random.Generator) -> int:
    sign = int(rng.integers(2)) << 15
    mant = int(rng.integers(1024))
    if kind == "moderate":
        return sign | int(rng.integers(5, 21)) << 10 | mant
    if kind == "any":
        return sign | int(rng.integers(0, 31)) << 10 | mant
    if kind == "subnormal":
        return sign | mant
    if kind == "zero":
        return sign
    if kind == "inf":
        return sign | 31 << 10
    return sign | 31 << 10 | (mant | 1)         # NaN


def _ds(kind: str, rng: np.random.Generator) -> float:
    if kind == "moderate":
        return float(F32(rng.standard_normal() * 2.0 ** int(rng.integers(-20, 5))))
    if kind == "wide":
        return float(F32(rng.standard_normal() * 2.0 ** int(rng.integers(-140, 100))))
    if kind == "subnormal":
        return struct.unpack("<f", struct.pack("<I", int(rng.integers(1, 1 << 23))
                                               | int(rng.integers(2)) << 31))[0]
    if kind == "zero":
        return float(rng.choice([0.0, -0.0]))
    if kind == "inf":
        return float(rng.choice([math.inf, -math.inf]))
    return math.nan


def _records(spec, rng):
    lhs, rhs = [], []
    for d_kind, dmin_kind, ds_kind, bsum_kind, narrow in spec:
        a = bytearray(rng.integers(0, 256, 144, dtype=np.uint8).tobytes())
        a[0:2] = _half_bits(d_kind, rng).to_bytes(2, "little")
        a[2:4] = _half_bits(dmin_kind, rng).to_bytes(2, "little")
        limit = 4 if narrow else 128
        q = rng.integers(-limit, limit, 256).tolist()
        bsum = (None if bsum_kind == "valid"
                else rng.integers(-32768, 32768, 16).tolist())
        lhs.append(bytes(a))
        rhs.append(model.pack_q8k(_ds(ds_kind, rng), q, bsum))
    return lhs, rhs


RECORD = st.tuples(st.sampled_from(HALF_KINDS), st.sampled_from(HALF_KINDS),
                   st.sampled_from(DS_KINDS), st.sampled_from(BSUM_KINDS), st.booleans())


@fast(1100)
@given(spec=st.lists(RECORD, min_size=0, max_size=7), seed=st.integers(0, 2 ** 32 - 1),
       order=ORDERS)
def test_dot_agrees_with_scalar_model(spec, seed, order):
    rng = np.random.default_rng(seed)
    lhs_b, rhs_b = _records(spec, rng)
    lhs = np.frombuffer(b"".join(lhs_b), dtype=np.uint8).reshape(len(spec), 144)
    rhs = np.frombuffer(b"".join(rhs_b), dtype=np.uint8).reshape(len(spec), 292)
    want_v = [model.record_value(a, b) for a, b in zip(lhs_b, rhs_b)]
    got_v = record_values(lhs, rhs)
    for g, w in enumerate(want_v):
        assert same_f32(got_v[g], w), (g, got_v[g], w)
    got = quantized_dot_q4k_q8k(lhs, rhs, order)
    assert same_f32(got, model.sum_in_order(want_v, order))
