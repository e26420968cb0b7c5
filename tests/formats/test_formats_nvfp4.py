"""nvfp4: E2M1 and E4M3FN words against ml_dtypes, field validity and the
divisor-based reconstruction equation for one and several stacked sources."""
import ml_dtypes
import numpy as np
import pytest

from ninfer_ir import formats
from ninfer_ir.errors import DomainError
from ninfer_ir.formats import FormatError, Nvfp4Codes
from ninfer_ir.formats._floats import E4M3FN_VALUES

from formats_oracles import f32, f32_bits

nvfp4 = formats.get("nvfp4")
ONE_E4M3 = 0x38


def plane(codes, scales, divisors):
    return nvfp4.encode((np.asarray(codes, np.uint8), np.asarray(scales, np.uint8),
                         np.asarray(divisors, np.float32)), method="import_encoded")


def e4m3(word: int) -> float:
    return float(np.array([word], np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float64)[0])


def e2m1(word: int) -> float:
    return float(np.array([word], np.uint8).view(ml_dtypes.float4_e2m1fn).astype(np.float64)[0])


def test_all_16_e2m1_words():
    codes = np.arange(16, dtype=np.uint8).reshape(1, 16)
    got = nvfp4.decode(plane(codes, [[ONE_E4M3]], [1.0]))
    want = codes.view(ml_dtypes.float4_e2m1fn).astype(np.float32)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))   # 0x8 is -0.0
    assert got[0, :8].tolist() == [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]


def test_all_256_e4m3fn_words():
    words = np.arange(256, dtype=np.uint8)
    want = words.view(ml_dtypes.float8_e4m3fn).astype(np.float32)
    nan = np.isnan(want)
    assert nan.nonzero()[0].tolist() == [0x7F, 0xFF]
    assert np.array_equal(np.isnan(E4M3FN_VALUES), nan)
    assert np.array_equal(E4M3FN_VALUES.view(np.uint32)[~nan], want.view(np.uint32)[~nan])
    # through the public decode: every valid scale word times code 1.0 (word 0x2)
    valid = np.arange(0x7F, dtype=np.uint8)
    codes = np.full((len(valid), 16), 0x2, np.uint8)
    got = nvfp4.decode(plane(codes, valid[:, None], [1.0]))
    assert np.array_equal(got[:, 0].view(np.uint32), want[:0x7F].view(np.uint32))


@pytest.mark.parametrize("word", [0x7F, 0xFF, 0x80, 0x88, 0xFE])
def test_invalid_scale_words(word):
    with pytest.raises(DomainError, match="scale word"):
        plane(np.zeros((1, 16)), [[word]], [1.0])


def test_valid_scale_words_include_positive_zero():
    enc = plane(np.full((1, 32), 0x7), [[0x00, 0x7E]], [1.0])
    assert nvfp4.decode(enc).tolist() == [[0.0] * 16 + [6.0 * 448.0] * 16]


@pytest.mark.parametrize("divisor", [0.0, -0.0, -1.0, np.inf, -np.inf, np.nan])
def test_invalid_divisors(divisor):
    with pytest.raises(DomainError, match="divisor"):
        plane(np.zeros((2, 16)), [[ONE_E4M3], [ONE_E4M3]], [1.0, divisor])


def test_code_words_above_15_are_invalid():
    with pytest.raises(DomainError, match="code word"):
        plane(np.full((1, 16), 16), [[ONE_E4M3]], [1.0])


def test_geometry():
    with pytest.raises(FormatError, match="multiple of 16"):
        plane(np.zeros((2, 20)), np.zeros((2, 1)), [1.0])
    with pytest.raises(FormatError, match="dividing N"):
        plane(np.zeros((3, 16)), np.zeros((3, 1)), [1.0, 2.0])
    with pytest.raises(FormatError, match="need scales"):
        plane(np.zeros((2, 32)), np.zeros((2, 1)), [1.0])
    with pytest.raises(FormatError, match="dtype"):
        nvfp4.encode((np.zeros((1, 16), np.int8), np.zeros((1, 1), np.uint8),
                      np.ones(1, np.float32)), method="import_encoded")


def reference(codes, scales, divisors) -> np.ndarray:
    n, k = codes.shape
    rows_per_source = n // len(divisors)
    out = np.zeros((n, k), np.uint32)
    for r in range(n):
        d = float(divisors[r // rows_per_source])
        for c in range(k):
            product = f32(e2m1(int(codes[r, c])) * e4m3(int(scales[r, c // 16])))
            out[r, c] = f32_bits(f32(product / d))
    return out


@pytest.mark.parametrize("sources", [1, 2, 4])
def test_reconstruction_equation(sources):
    rng = np.random.default_rng(sources)
    n, k = 8, 48
    codes = rng.integers(0, 16, (n, k)).astype(np.uint8)
    scales = rng.integers(0, 0x7F, (n, k // 16)).astype(np.uint8)
    divisors = np.array([3.0, 0.7, 1e-30, 2.5e4][:sources], np.float32)
    got = nvfp4.decode(plane(codes, scales, divisors))
    assert np.array_equal(got.view(np.uint32), reference(codes, scales, divisors))


def test_import_copies_all_three_fields_exactly():
    codes = np.arange(32, dtype=np.uint8).reshape(2, 16) % 16
    scales = np.array([[0x01], [0x7E]], np.uint8)
    divisors = np.array([np.float32(1e-45)], np.float32)             # positive subnormal
    enc = plane(codes, scales, divisors)
    codes[0, 0] = 9
    assert enc.codes[0, 0] == 0 and enc.divisors.view(np.uint32).tolist() == [1]
    assert isinstance(enc, Nvfp4Codes) and enc.shape == (2, 16)
    again = nvfp4.encode(enc, method="import_encoded")
    assert np.array_equal(again.scales, scales) and np.array_equal(again.codes, enc.codes)
