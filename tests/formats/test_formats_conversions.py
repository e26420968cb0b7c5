"""Recipe-named conversions into the direct formats: FP32 -> BF16 (round to nearest
even, explicit non-finite policy) and FP32 -> INT32 (explicit rounding and range)."""
import ml_dtypes
import numpy as np
import pytest

from ninfer_ir import formats
from ninfer_ir.errors import DomainError
from ninfer_ir.formats import FormatError

BF16, FP32, INT32 = (formats.get(n) for n in ("bf16", "fp32", "int32"))


def f32(*words):
    return np.array(words, np.uint32).view(np.float32)


def test_fp32_to_bf16_hand_derived_words():
    # binary32 word -> BF16 word, rounding the low 16 bits to nearest, ties to even
    cases = {
        0x3F800000: 0x3F80, 0x3F808000: 0x3F80,    # 1 + 2**-8: tie, even stays
        0x3F818000: 0x3F82,                        # tie, odd rounds up
        0x3F808001: 0x3F81,                        # just above the tie
        0x80000000: 0x8000, 0x00000001: 0x0000,    # -0, tiny subnormal rounds to +0
        0x00008000: 0x0000, 0x00018000: 0x0002,    # subnormal ties
        0x7F7F7FFF: 0x7F7F,                        # largest finite below the tie
    }
    got = BF16.encode(f32(*cases), method="fp32_to_bf16_rne", nonfinite="refuse")
    assert got.words.tolist() == list(cases.values())
    assert got.provenance["method"] == "fp32_to_bf16_rne"
    assert dict(got.provenance["parameters"]) == {"nonfinite": "refuse"}


def test_fp32_to_bf16_matches_ml_dtypes_on_random_words():
    rng = np.random.default_rng(5)
    words = rng.integers(0, 1 << 32, 200_000, dtype=np.uint64).astype(np.uint32)
    x = words.view(np.float32)
    x = x[np.isfinite(x)]
    got = BF16.encode(x, method="fp32_to_bf16_rne", nonfinite="keep").words
    assert np.array_equal(got, x.astype(ml_dtypes.bfloat16).view(np.uint16))


def test_fp32_to_bf16_nonfinite_policy():
    special = f32(0x7F800000, 0xFF800000, 0x7FC00000, 0xFFA12345, 0x7F800001, 0x7F7FFFFF)
    kept = BF16.encode(special, method="fp32_to_bf16_rne", nonfinite="keep").words
    # infinities stay; NaN -> high half with the quiet bit 0x0040; overflow -> infinity
    assert kept.tolist() == [0x7F80, 0xFF80, 0x7FC0, 0xFFE1, 0x7FC0, 0x7F80]
    for bad in special:
        with pytest.raises(DomainError, match="not finite in BF16"):
            BF16.encode(np.float32([1.0, bad]), method="fp32_to_bf16_rne", nonfinite="refuse")


def test_fp32_to_int32_rounding_policies():
    x = np.float32([0.5, 1.5, 2.5, -0.5, -1.5, -2.7, 3.0, -0.0])
    even = INT32.encode(x, method="fp32_to_int32", rounding="nearest_even",
                        out_of_range="refuse")
    assert INT32.decode(even).tolist() == [0, 2, 2, 0, -2, -3, 3, 0]
    trunc = INT32.encode(x, method="fp32_to_int32", rounding="toward_zero",
                         out_of_range="refuse")
    assert INT32.decode(trunc).tolist() == [0, 1, 2, 0, -1, -2, 3, 0]
    with pytest.raises(DomainError, match="not an integer"):
        INT32.encode(x, method="fp32_to_int32", rounding="exact", out_of_range="refuse")
    exact = INT32.encode(np.float32([7, -8, 16777216]), method="fp32_to_int32",
                         rounding="exact", out_of_range="refuse")
    assert exact.words.tolist() == [7, 0xFFFFFFF8, 16777216]
    assert dict(exact.provenance["parameters"]) == {"rounding": "exact",
                                                    "out_of_range": "refuse"}


def test_fp32_to_int32_range_policy():
    # -2**31 is in range; 2**31 (a binary32 value) is not; 2147483520 is the largest
    # binary32 below 2**31
    edges = np.float32([-2.0 ** 31, 2147483520.0, 2.0 ** 31, -2.0 ** 32, np.inf, -np.inf])
    sat = INT32.encode(edges, method="fp32_to_int32", rounding="exact", out_of_range="saturate")
    assert INT32.decode(sat).tolist() == [-2 ** 31, 2147483520, 2 ** 31 - 1, -2 ** 31,
                                          2 ** 31 - 1, -2 ** 31]
    ok = INT32.encode(edges[:2], method="fp32_to_int32", rounding="exact", out_of_range="refuse")
    assert INT32.decode(ok).tolist() == [-2 ** 31, 2147483520]
    for bad in edges[2:]:
        with pytest.raises(DomainError, match="outside the int32 range"):
            INT32.encode(np.float32([bad]), method="fp32_to_int32", rounding="nearest_even",
                         out_of_range="refuse")
    with pytest.raises(DomainError, match="NaN"):
        INT32.encode(np.float32([np.nan]), method="fp32_to_int32", rounding="nearest_even",
                     out_of_range="saturate")


def test_conversions_are_never_implicit():
    x = np.float32([1.0])
    for fmt, method in ((BF16, "fp32_to_bf16_rne"), (INT32, "fp32_to_int32")):
        with pytest.raises(FormatError, match="options"):       # policies are required
            fmt.encode(x, method=method)
        with pytest.raises(FormatError, match="binary32"):      # only FP32 sources
            fmt.encode(np.float64([1.0]), method=method, **(
                {"nonfinite": "keep"} if fmt is BF16 else
                {"rounding": "exact", "out_of_range": "refuse"}))
    with pytest.raises(FormatError, match="nonfinite"):
        BF16.encode(x, method="fp32_to_bf16_rne", nonfinite="yes")
    with pytest.raises(FormatError, match="rounding"):
        INT32.encode(x, method="fp32_to_int32", rounding="up", out_of_range="refuse")
    with pytest.raises(FormatError, match="unknown conversion method"):
        FP32.encode(x, method="fp32_to_bf16_rne", nonfinite="keep")
    assert BF16.methods == ("import_encoded", "fp32_to_bf16_rne")
    assert INT32.methods == ("import_encoded", "fp32_to_int32")
    assert FP32.methods == ("import_encoded",)


def test_fp32_direct_words_are_a_valid_source():
    stored = FP32.encode(np.float32([1.5, -2.25]), method="import_encoded")
    got = BF16.encode(stored, method="fp32_to_bf16_rne", nonfinite="refuse")
    assert got.words.tolist() == [0x3FC0, 0xC010]
