"""grouped_absmax against an independent scalar implementation of the ordered
algorithm, plus the conformance cases one by one."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ninfer_ir import formats
from ninfer_ir.errors import DomainError
from ninfer_ir.formats import FormatError

from formats_oracles import Refused, absmax_rows, f16_word, f32, grouped_decode

CANONICAL = {"q4_g64_fp16": (64, -8, 7), "q5_g64_fp16": (64, -16, 15),
             "q6_g64_fp16": (64, -32, 31), "q8_g32_fp16": (32, -127, 127)}


def encode(name, x):
    return formats.get(name).encode(np.asarray(x, np.float32), method="grouped_absmax")


def source(style: str, rng, shape) -> np.ndarray:
    if style == "normal":
        return rng.standard_normal(shape) * 10.0 ** rng.integers(-6, 6)
    if style == "halves":                     # exact ties after scaling
        return rng.integers(-40, 41, shape) / 2.0
    if style == "tiny":                       # raw scale near / below binary16 subnormals
        return rng.standard_normal(shape) * 2.0 ** rng.integers(-40, -20)
    if style == "sparse":
        x = rng.standard_normal(shape)
        x[rng.random(shape) < 0.7] = 0.0
        return x
    return rng.uniform(-1, 1, shape) * 60000.0 * 31


@settings(max_examples=150, deadline=None)
@given(name=st.sampled_from(list(CANONICAL)), rows=st.integers(1, 3), k=st.integers(1, 140),
       style=st.sampled_from(["normal", "halves", "tiny", "sparse", "large"]),
       seed=st.integers(0, 2 ** 32 - 1))
def test_matches_the_scalar_oracle(name, rows, k, style, seed):
    group, qmin, qmax = CANONICAL[name]
    x = source(style, np.random.default_rng(seed), (rows, k)).astype(np.float32)
    try:
        want_words, want_codes = absmax_rows(x, group, qmin, qmax)
    except Refused:
        with pytest.raises(DomainError):
            encode(name, x)
        return
    enc = encode(name, x)
    assert enc.codes.dtype == np.int8 and enc.scales.dtype == np.float16
    assert np.array_equal(enc.scales.view(np.uint16), want_words)
    assert np.array_equal(enc.codes, want_codes)
    decoded = formats.get(name).decode(enc)
    assert np.array_equal(decoded.view(np.uint32), grouped_decode(want_codes, want_words, group))


def test_canonical_binary16_scale_rounding_ties_to_even():
    # Q4: amax / 7 lands exactly halfway between two binary16 neighbours
    halfway_down = 7 * (1 + 2.0 ** -11)          # between 1.0 and 1+2**-10 -> even 1.0
    halfway_up = 7 * (1 + 3 * 2.0 ** -11)        # between 1+2**-10 and 1+2**-9 -> even 1+2**-9
    enc = encode("q4_g64_fp16", [[halfway_down], [halfway_up]])
    assert enc.scales.view(np.uint16).tolist() == [[0x3C00], [0x3C02]]
    # a binary32 raw scale in the binary16 subnormal range rounds, it is not flushed
    amax = np.float32(7 * 3 * 2.0 ** -26)        # raw = 0.75 * 2**-24 -> 0x0001
    enc = encode("q4_g64_fp16", [[amax]])
    assert enc.scales.view(np.uint16).tolist() == [[0x0001]]
    amax = np.float32(7 * 5 * 2.0 ** -25)        # raw = 2.5 * 2**-24 -> tie -> 0x0002
    assert encode("q4_g64_fp16", [[amax]]).scales.view(np.uint16).tolist() == [[0x0002]]


def test_reciprocal_multiply_not_direct_division():
    # amax 49 gives scale 7.0; inv = f32(1/7). For x just below 24.5 the reciprocal
    # multiply rounds to exactly 3.5 (-> 4) while x / 7 stays below 3.5 (-> 3).
    x = float(np.nextafter(np.float32(24.5), np.float32(0)))
    inv = f32(1.0 / 7.0)
    by_reciprocal, by_division = f32(x * inv), f32(x / 7.0)
    assert by_reciprocal == 3.5 and by_division < 3.5
    assert round(by_reciprocal) == 4 and round(by_division) == 3
    enc = encode("q4_g64_fp16", [[49.0, x, -x]])
    assert enc.scales.tolist() == [[7.0]]
    assert enc.codes.tolist() == [[7, 4, -4]]


def test_ties_to_even_both_signs():
    # amax 7 -> scale 1.0 -> inv 1.0, so the normalized values are the inputs
    x = [7.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.5, -3.5]
    enc = encode("q4_g64_fp16", [x])
    assert enc.scales.view(np.uint16).tolist() == [[0x3C00]]
    assert enc.codes.tolist() == [[7, 0, 0, 2, -2, 2, -2, 4, -4]]


def test_clamp_after_rounding_and_q8_never_minus_128():
    # amax 127*1.0 on the negative side: -127 stays -127; Q4 negative extreme -> -7, not -8
    assert encode("q8_g32_fp16", [[-127.0, 126.5, -126.5]]).codes.tolist() == [[-127, 126, -126]]
    assert encode("q4_g64_fp16", [[-7.0, 3.0]]).codes.tolist() == [[-7, 3]]
    rng = np.random.default_rng(8)
    x = rng.standard_normal((64, 96)).astype(np.float32)
    x[:, ::7] = -np.abs(x[:, ::7]) * 50
    assert encode("q8_g32_fp16", x).codes.min() == -127


def test_minimum_subnormal_rescue():
    # amax / 7 rounds to binary16 zero: the scale becomes 0x0001 (2**-24), codes stay legal
    enc = encode("q4_g64_fp16", [[1e-10, -1e-10, 0.0]])
    assert enc.scales.view(np.uint16).tolist() == [[0x0001]]
    assert enc.codes.tolist() == [[0, 0, 0]]
    formats.get("q4_g64_fp16").validate(enc)
    amax = np.float32(2.0 ** -25)                # raw 2**-25 / 7, codes x * 2**24 = 0.5 -> 0
    enc = encode("q8_g32_fp16", [[amax * 3, amax]])
    assert enc.scales.view(np.uint16).tolist() == [[0x0001]]
    assert enc.codes.tolist() == [[2, 0]]        # 1.5 -> 2 (even), 0.5 -> 0 (even)


def test_all_zero_groups_get_positive_zero():
    enc = encode("q5_g64_fp16", [[0.0] * 64 + [-0.0] * 64 + [1.0]])
    assert enc.scales.view(np.uint16).tolist() == [[0x0000, 0x0000, f16_word(f32(1 / 15))]]
    assert not enc.codes[0, :128].any()


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_source_is_refused(bad):
    x = np.ones((2, 70), np.float32)
    x[1, 66] = bad
    with pytest.raises(DomainError, match=r"\(1, 66\)"):
        encode("q6_g64_fp16", x)


def test_unrepresentable_binary32_source_is_refused():
    x = np.array([[1.0, 1e39]], np.float64)       # finite double, +inf as binary32
    with pytest.raises(DomainError, match="finite binary32"):
        formats.get("q4_g64_fp16").encode(x, method="grouped_absmax")


def test_overflowing_scale_is_refused():
    # Q8: amax / 127 = 65520 is the binary16 tie between 65504 and infinity -> infinity
    with pytest.raises(DomainError, match="beyond binary16"):
        encode("q8_g32_fp16", [[127 * 65520.0]])
    assert encode("q8_g32_fp16", [[127 * 65519.0]]).scales.tolist() == [[65504.0]]
    with pytest.raises(DomainError):
        encode("q4_g64_fp16", [[3e38, 1.0]])


def test_partially_populated_group_round_trip():
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 70)).astype(np.float32)
    x[:, 64:] *= 100.0                                 # the partial group has its own scale
    enc = encode("q4_g64_fp16", x)
    assert enc.codes.shape == (2, 70) and enc.scales.shape == (2, 2)
    for r in range(2):
        tail = [float(v) for v in x[r, 64:]]
        assert enc.scales.view(np.uint16)[r, 1] == f16_word(f32(max(map(abs, tail)) / 7))
    decoded = formats.get("q4_g64_fp16").decode(enc)
    words, codes = absmax_rows(x, 64, -8, 7)
    assert np.array_equal(decoded.view(np.uint32), grouped_decode(codes, words, 64))


def test_ranks_and_sources():
    x = np.random.default_rng(2).standard_normal((2, 3, 40))
    q8 = formats.get("q8_g32_fp16")
    enc = q8.encode(x, method="grouped_absmax")                   # float64 rounds to binary32
    assert enc.codes.shape == (2, 3, 40) and enc.scales.shape == (2, 3, 2)
    same = q8.encode(x.astype(np.float32), method="grouped_absmax")
    assert np.array_equal(enc.codes, same.codes) and np.array_equal(enc.scales, same.scales)
    assert q8.encode(x[0, 0], method="grouped_absmax").codes.shape == (40,)
    with pytest.raises(FormatError):
        q8.encode(np.ones((2, 3), np.int32), method="grouped_absmax")
    with pytest.raises(FormatError):
        q8.encode(np.float32(1.0), method="grouped_absmax")
    assert enc.provenance["method"] == "grouped_absmax"
