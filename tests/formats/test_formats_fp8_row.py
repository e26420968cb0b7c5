"""Row-scaled FP8: code and row-scale validity, signed-zero rows, the multiplier
equation, exact plane round trips and the fp8_row_maxabs producer."""
import math

import ml_dtypes
import numpy as np
import pytest

from ninfer_ir import formats
from ninfer_ir.errors import DomainError
from ninfer_ir.formats import FormatError, RowScaledCodes

from formats_oracles import f16_value, f16_word, f32, f32_bits, finite_f16_words

ROW_BF16, ROW_FP16 = formats.get("fp8_e4m3fn_row_bf16"), formats.get("fp8_e4m3fn_row_fp16")
ONE = {ROW_BF16: 0x3F80, ROW_FP16: 0x3C00}


def imported(fmt, codes, scale_words):
    return fmt.encode((np.asarray(codes, np.uint8), np.asarray(scale_words, np.uint16)),
                      method="import_encoded")


def e4m3(word: int) -> float:
    return float(np.array([word], np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float64)[0])


def scale_value(fmt, word: int) -> float:
    if fmt is ROW_FP16:
        return f16_value(word)
    return float(np.array([word], np.uint16).view(ml_dtypes.bfloat16).astype(np.float64)[0])


@pytest.mark.parametrize("fmt", [ROW_BF16, ROW_FP16], ids=["bf16", "fp16"])
def test_code_validity(fmt):
    valid = np.array([w for w in range(256) if w not in (0x7F, 0xFF)], np.uint8)
    fmt.validate(imported(fmt, valid.reshape(2, 127), [ONE[fmt]] * 2))
    for nan_word in (0x7F, 0xFF):
        with pytest.raises(DomainError, match="NaN code"):
            imported(fmt, [[0, nan_word]], [ONE[fmt]])


@pytest.mark.parametrize("fmt, bad", [
    (ROW_BF16, 0x8000), (ROW_BF16, 0xBF80), (ROW_BF16, 0x7F80), (ROW_BF16, 0x7FC0),
    (ROW_BF16, 0xFF81), (ROW_FP16, 0x8000), (ROW_FP16, 0xBC00), (ROW_FP16, 0x7C00),
    (ROW_FP16, 0x7E00), (ROW_FP16, 0x8001),
])
def test_invalid_row_scales(fmt, bad):
    with pytest.raises(DomainError, match="negative or not finite"):
        imported(fmt, [[1, 2]], [bad])


@pytest.mark.parametrize("fmt", [ROW_BF16, ROW_FP16], ids=["bf16", "fp16"])
def test_valid_row_scales_and_signed_zero_rows(fmt):
    largest = 0x7F7F if fmt is ROW_BF16 else 0x7BFF
    enc = imported(fmt, [[0x00, 0x80], [0x01, 0x7E], [0x38, 0xB8]], [0x0000, 0x0001, largest])
    got = fmt.decode(enc)
    assert got[0].view(np.uint32).tolist() == [0x00000000, 0x80000000]   # +0 and -0 rows
    with pytest.raises(DomainError, match="scale \\+0 but nonzero codes"):
        imported(fmt, [[0x00, 0x01]], [0x0000])


@pytest.mark.parametrize("fmt", [ROW_BF16, ROW_FP16], ids=["bf16", "fp16"])
def test_multiplier_equation(fmt):
    rng = np.random.default_rng(7)
    codes = rng.integers(0, 256, (6, 40)).astype(np.uint8)
    codes[(codes & 0x7F) == 0x7F] = 0x00
    if fmt is ROW_FP16:
        words = finite_f16_words(rng, 6, max_exponent=30) & 0x7FFF
    else:
        words = (rng.integers(0, 0x7F80, 6) | np.array([0, 1, 0x7F, 0x80, 0, 0])).astype(np.uint16)
    words[4] = 0x0001                                  # smallest subnormal scale
    enc = imported(fmt, codes, words)
    got = fmt.decode(enc).view(np.uint32)
    for r in range(6):
        s = scale_value(fmt, int(words[r]))
        for k in range(40):
            assert got[r, k] == f32_bits(f32(e4m3(int(codes[r, k])) * s))


def test_planes_round_trip_exactly():
    codes = np.arange(254, dtype=np.uint8)
    codes = np.where(codes >= 0x7F, codes + 1, codes).astype(np.uint8).reshape(2, 127)
    scales = np.array([0x0001, 0x7F7F], np.uint16)
    enc = imported(ROW_BF16, codes, scales)
    assert isinstance(enc, RowScaledCodes) and enc.scales.dtype == np.uint16
    assert np.array_equal(enc.codes, codes) and np.array_equal(enc.scales, scales)
    again = ROW_BF16.encode(enc, method="import_encoded")
    assert np.array_equal(again.codes, codes)
    fp16 = ROW_FP16.encode((codes, np.array([1.5, 2.0], np.float16)), method="import_encoded")
    assert fp16.scales.dtype == np.float16 and fp16.scales.tolist() == [1.5, 2.0]
    bf = ROW_BF16.encode((codes, np.array([1.5, 2.0], ml_dtypes.bfloat16)),
                         method="import_encoded")
    assert bf.scales.tolist() == [0x3FC0, 0x4000]
    assert np.array_equal(ROW_BF16.decode(bf.rows([1])), ROW_BF16.decode(bf)[[1]])


def test_geometry():
    with pytest.raises(FormatError):
        imported(ROW_BF16, np.zeros((2, 3, 4)), [0, 0])
    with pytest.raises(FormatError):
        imported(ROW_BF16, np.zeros((2, 4)), [0, 0, 0])
    with pytest.raises(FormatError):
        ROW_FP16.encode((np.zeros((1, 4), np.uint8), np.zeros(1, np.float32)),
                        method="import_encoded")


# -- fp8_row_maxabs -------------------------------------------------------------------
def maxabs_reference(fmt, x: np.ndarray):
    """Independent fp8_row_maxabs: ml_dtypes for BF16/E4M3FN rounding, struct for f16."""
    values = x.astype(np.float32).astype(ml_dtypes.bfloat16).astype(np.float32)
    codes = np.zeros(x.shape, np.uint8)
    words = np.zeros(len(x), np.uint16)
    for r, row in enumerate(values):
        amax = max(abs(float(v)) for v in row)
        if amax == 0:
            continue
        raw = f32(amax / 448.0)
        if fmt is ROW_FP16:
            word = f16_word(raw) or 0x0001
            assert word != 0x7C00, "reference refuses"
        else:
            word = int(np.array([raw], np.float32).astype(ml_dtypes.bfloat16).view(np.uint16)[0])
            word = word or 0x0001
        inv = f32(1.0 / scale_value(fmt, word))
        scaled = [min(max(f32(float(v) * inv), -448.0), 448.0) for v in row]
        e4 = np.array(scaled, np.float32).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
        codes[r], words[r] = e4, word
    return codes, words


@pytest.mark.parametrize("fmt", [ROW_BF16, ROW_FP16], ids=["bf16", "fp16"])
@pytest.mark.parametrize("scale", [1e-6, 1.0, 300.0, 1e5])
def test_maxabs_matches_reference(fmt, scale):
    rng = np.random.default_rng(int(scale * 10) % 97)
    x = (rng.standard_normal((12, 75)) * scale).astype(np.float32)
    x[3] = 0.0
    x[4, ::2] = -0.0
    x[5] = np.where(rng.random(75) < 0.5, -0.0, 0.0)
    enc = fmt.encode(x, method="fp8_row_maxabs")
    codes, words = maxabs_reference(fmt, x)
    assert np.array_equal(enc.codes, codes)
    assert np.array_equal(enc.scales.view(np.uint16), words)
    fmt.validate(enc)
    assert enc.scales.view(np.uint16)[5] == 0 and not enc.codes[5].any()   # all-zero row
    assert np.all(enc.codes[4, ::2] == 0x80)                                # signed zeros kept
    # rows are independent of each other
    single = fmt.encode(x[7:8], method="fp8_row_maxabs")
    assert np.array_equal(single.codes[0], enc.codes[7])


def test_maxabs_rescue_and_refusals():
    tiny = np.array([[1e-12, -2e-12]], np.float32)
    assert ROW_FP16.encode(tiny, method="fp8_row_maxabs").scales.view(np.uint16).tolist() == [1]
    with pytest.raises(DomainError, match="not usable"):
        ROW_FP16.encode(np.array([[3e7]], np.float32), method="fp8_row_maxabs")
    with pytest.raises(DomainError, match="not usable"):               # 1/scale overflows
        ROW_BF16.encode(np.array([[1e-38]], np.float32), method="fp8_row_maxabs")
    with pytest.raises(DomainError, match="overflows BF16"):
        ROW_BF16.encode(np.array([[3.4e38]], np.float32), method="fp8_row_maxabs")
    for bad in (math.nan, math.inf):
        with pytest.raises(DomainError):
            ROW_BF16.encode(np.array([[1.0, bad]], np.float32), method="fp8_row_maxabs")
    with pytest.raises(FormatError):
        ROW_BF16.encode(np.ones(4, np.float32), method="fp8_row_maxabs")


def test_maxabs_e4m3fn_ties_to_even():
    # amax 448 -> scale 448/448 = 1.0 -> reciprocal 1.0: the values themselves are rounded
    row = [448.0, 1.0625, 1.1875, -1.0625, 432.0, 3 * 2.0 ** -10, 2.0 ** -10, -(2.0 ** -10)]
    enc = ROW_BF16.encode(np.array([row], np.float32), method="fp8_row_maxabs")
    assert enc.scales.tolist() == [0x3F80]
    # 1.0625 -> 1.0 (0x38), 1.1875 -> 1.25 (0x3a), 432 -> 448 (0x7e),
    # 3*2**-10 -> 2*2**-9 (0x02), 2**-10 -> +0 (0x00), -2**-10 -> -0 (0x80)
    assert enc.codes.tolist() == [[0x7E, 0x38, 0x3A, 0xB8, 0x7E, 0x02, 0x00, 0x80]]


def test_e4m3fn_rounding_at_every_midpoint():
    from ninfer_ir.formats._floats import f32_to_e4m3fn
    finite = np.arange(0x7F, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float64)
    mids = ((finite[:-1] + finite[1:]) / 2).astype(np.float32)      # exact in binary32
    probes = np.concatenate([finite.astype(np.float32), mids,
                             np.nextafter(mids, np.float32(0)), np.nextafter(mids, np.float32(1e9))])
    probes = np.concatenate([probes, -probes])
    want = probes.astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    assert np.array_equal(f32_to_e4m3fn(probes), want)


def test_maxabs_rounds_a_binary64_source_to_bf16_once():
    # 1 + 2**-4 + 2**-8 + 2**-40 rounds straight to BF16 1 + 2**-4 + 2**-7 (word 0x3F89):
    # it lies just above the tie 1 + 2**-4 + 2**-8. Through binary32 first, the 2**-40
    # is lost, the value becomes that exact tie, and ties-to-even gives 0x3F88.
    x = np.array([[448.0, 1 + 2 ** -4 + 2 ** -8 + 2 ** -40]])
    assert x.astype(ml_dtypes.bfloat16).view(np.uint16).tolist() == [[0x43E0, 0x3F89]]
    enc = ROW_BF16.encode(x, method="fp8_row_maxabs")
    assert enc.scales.tolist() == [0x3F80]                   # 448 / 448 = 1
    assert enc.codes.tolist() == [[0x7E, 0x39]]             # E4M3FN 1.125 (not 0x38, 1.0)


@pytest.mark.parametrize("fmt", [ROW_BF16, ROW_FP16], ids=["bf16", "fp16"])
def test_maxabs_binary64_sources_equal_their_bf16_rounding(fmt):
    rng = np.random.default_rng(11)
    magnitudes = [1e-30, 1e-3, 1.0, 1e20] if fmt is ROW_BF16 else [1e-9, 1e-3, 1.0, 1e4]
    x = rng.standard_normal((16, 96)) * rng.choice(magnitudes, (16, 1))
    via_bf16 = x.astype(ml_dtypes.bfloat16)                 # one rounding, independent
    direct = fmt.encode(x, method="fp8_row_maxabs")
    staged = fmt.encode(via_bf16, method="fp8_row_maxabs")
    assert np.array_equal(direct.codes, staged.codes)
    assert np.array_equal(direct.scales.view(np.uint16), staged.scales.view(np.uint16))
