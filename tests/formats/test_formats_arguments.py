"""Argument checks at every public entry point: the byte-order rule (non-native arrays
are read by value, their words unchanged) and a FormatError for every bad argument."""
import ml_dtypes
import numpy as np
import pytest

from ninfer_ir import formats
from ninfer_ir.formats import (DirectWords, FormatError, GgufBlocks, GroupedCodes, Nvfp4Codes,
                               RowScaledCodes)

BF16, FP32, INT32 = (formats.get(n) for n in ("bf16", "fp32", "int32"))
Q4, NV = formats.get("q4_g64_fp16"), formats.get("nvfp4")
ROW_BF16, ROW_FP16 = formats.get("fp8_e4m3fn_row_bf16"), formats.get("fp8_e4m3fn_row_fp16")
GGUF = formats.get("gguf_q8_0")
SWAPPED = ">" if np.little_endian else "<"


def swapped(a: np.ndarray) -> np.ndarray:
    """``a`` with the non-native byte order, same values."""
    return a.astype(a.dtype.newbyteorder(SWAPPED))


# -- byte order -----------------------------------------------------------------------
@pytest.mark.parametrize("fmt, native", [
    (FP32, np.float32([1.0, 2.0, 3.0, -0.0])),
    (FP32, np.uint32([0x7FC12345, 0x00000001])),
    (INT32, np.int32([-1, 2 ** 31 - 1, -2 ** 31])),
    (INT32, np.uint32([0x80000000])),
    (BF16, np.uint16([0x3F80, 0x7FA5])),
])
def test_direct_formats_read_non_native_arrays_by_value(fmt, native):
    other = swapped(native)
    assert not other.dtype.isnative
    want = fmt.encode(native, method="import_encoded").words
    got = fmt.encode(other, method="import_encoded").words
    assert got.dtype.isnative and np.array_equal(got, want)
    assert np.array_equal(fmt.decode(other).view(np.uint8), fmt.decode(native).view(np.uint8))


def test_big_endian_fp32_import_decodes_its_values():
    got = FP32.decode(FP32.encode(np.array([1.0, 2.0, 3.0], ">f4"), method="import_encoded"))
    assert got.tolist() == [1.0, 2.0, 3.0]


def test_grouped_planes_and_unpack_read_non_native_arrays_by_value():
    rng = np.random.default_rng(0)
    codes = rng.integers(-8, 8, (2, 70)).astype(np.int8)
    scales = np.float16([[0.5, -2.0], [1.0, 3.0]])
    want = Q4.encode((codes, scales), method="import_encoded")
    got = Q4.encode((codes, swapped(scales)), method="import_encoded")
    assert np.array_equal(got.scales.view(np.uint16), want.scales.view(np.uint16))
    assert np.array_equal(Q4.decode(got).view(np.uint32), Q4.decode(want).view(np.uint32))
    packed, _ = Q4.pack(want)
    back = Q4.unpack(packed, swapped(scales), 70)
    assert np.array_equal(back.scales.view(np.uint16), scales.view(np.uint16))
    back = Q4.unpack(packed, swapped(scales.view(np.uint16)), 70)
    assert np.array_equal(back.scales.view(np.uint16), scales.view(np.uint16))
    direct = GroupedCodes(Q4, codes, swapped(scales))
    assert direct.scales.dtype.isnative
    assert np.array_equal(direct.scales.view(np.uint16), scales.view(np.uint16))


def test_nvfp4_fp8_and_sources_read_non_native_arrays_by_value():
    codes = np.zeros((2, 16), np.uint8)
    enc = NV.encode((codes, np.ones((2, 1), np.uint8), swapped(np.float32([2.0]))),
                    method="import_encoded")
    assert enc.divisors.tolist() == [2.0]
    fp8 = ROW_FP16.encode((np.full((1, 2), 0x38, np.uint8), swapped(np.float16([0.5]))),
                          method="import_encoded")
    assert fp8.scales.tolist() == [0.5]
    x = np.random.default_rng(3).standard_normal((2, 64))
    for fmt, method in ((Q4, "grouped_absmax"), (ROW_BF16, "fp8_row_maxabs")):
        a, b = fmt.encode(x, method=method), fmt.encode(swapped(x), method=method)
        assert np.array_equal(a.codes, b.codes)
        assert np.array_equal(a.scales.view(np.uint16), b.scales.view(np.uint16))
    imp = np.linspace(0.5, 2, 64)
    a = Q4.encode(x, method="grouped_search", importance=imp)
    b = Q4.encode(x, method="grouped_search", importance=swapped(imp))
    assert np.array_equal(a.codes, b.codes)
    assert a.provenance["parameters"]["importance"] == b.provenance["parameters"]["importance"]


# -- typed errors ---------------------------------------------------------------------
RAGGED = [[1.0, 2.0], [3.0]]


@pytest.mark.parametrize("call", [
    lambda: Q4.encode(RAGGED, method="grouped_absmax"),
    lambda: Q4.encode(RAGGED, method="grouped_search"),
    lambda: ROW_BF16.encode(RAGGED, method="fp8_row_maxabs"),
    lambda: FP32.encode(RAGGED, method="import_encoded"),
    lambda: FP32.decode(RAGGED),
    lambda: BF16.encode(RAGGED, method="fp32_to_bf16_rne", nonfinite="keep"),
    lambda: Q4.encode((RAGGED, np.ones((2, 1), np.float16)), method="import_encoded"),
    lambda: Q4.encode((np.zeros((1, 64), np.int8), RAGGED), method="import_encoded"),
    lambda: Q4.unpack(RAGGED, np.ones((1, 1), np.float16), 2),
    lambda: NV.encode((RAGGED, RAGGED, RAGGED), method="import_encoded"),
    lambda: ROW_BF16.encode((RAGGED, [1]), method="import_encoded"),
    lambda: GGUF.decode(RAGGED),
    lambda: Q4.encode(np.ones((1, 2), np.float32), method="grouped_search",
                      importance=[[1.0], []]),
])
def test_ragged_lists_are_format_errors(call):
    with pytest.raises(FormatError):
        call()


@pytest.mark.parametrize("bad", ["yes", 1, 0, None, "False", np.int8(1)])
def test_booleans_must_be_booleans(bad):
    x = np.ones((1, 64), np.float32)
    with pytest.raises(FormatError, match="negative_scales"):
        Q4.encode(x, method="grouped_search", negative_scales=bad)
    enc = Q4.encode(x, method="grouped_absmax")
    with pytest.raises(FormatError, match="check"):
        Q4.decode(enc, check=bad)
    with pytest.raises(FormatError, match="check"):
        NV.decode(NV.encode((np.zeros((1, 16), np.uint8), np.zeros((1, 1), np.uint8),
                             np.float32([1.0])), method="import_encoded"), check=bad)
    with pytest.raises(FormatError, match="check"):
        ROW_BF16.decode(ROW_BF16.encode(x, method="fp8_row_maxabs"), check=bad)
    assert Q4.encode(x, method="grouped_search", negative_scales=np.True_).scales.shape == (1, 1)


@pytest.mark.parametrize("bad", ["a", 2.0, True, None, -32, 0, [32]])
def test_integer_arguments(bad):
    with pytest.raises(FormatError):
        GGUF.row_bytes(bad)
    with pytest.raises(FormatError):
        Q4.packed_row_bytes(bad)
    with pytest.raises(FormatError):
        Q4.unpack(np.zeros((1, 1), np.uint8), np.ones((1, 1), np.float16), bad)


@pytest.mark.parametrize("shape", ["ab", (), (2, "3"), (2, 0), [2, 64], (True, 64), None])
def test_scale_shape_arguments(shape):
    with pytest.raises(FormatError):
        Q4.scale_shape(shape)


def test_scale_shape_accepts_numpy_dimensions():
    assert Q4.scale_shape((np.int64(3), 65)) == (3, 2)
    assert Q4.scale_shape(np.zeros((3, 65)).shape) == (3, 2)


@pytest.mark.parametrize("value", [
    np.array(["a", "b"]), np.array([1 + 2j]), np.array([True, False]),
    np.array([object()], dtype=object), np.zeros(2, [("a", "u1"), ("b", "u1")]),
    np.zeros(2, "V4"),
])
def test_non_numeric_arrays_are_refused(value):
    for call in (lambda: FP32.encode(value, method="import_encoded"),
                 lambda: Q4.encode(value, method="grouped_absmax"),
                 lambda: GGUF.decode(value),
                 lambda: Q4.encode((value, np.ones((1, 1), np.float16)), method="import_encoded")):
        with pytest.raises(FormatError):
            call()


@pytest.mark.parametrize("source_format", [["gguf_q2_0"], 42, b"gguf_q2_0"])
def test_source_format_must_be_a_name(source_format):
    with pytest.raises(FormatError, match="source_format"):
        formats.get("q2_g64_fp16").encode(np.zeros((1, 18), np.uint8), method="import_encoded",
                                          source_format=source_format)


@pytest.mark.parametrize("index", ["a", 1.5, (0, 1), [0.5], True, 7, -8, [0, 9],
                                   np.array([[0]], object)])
def test_bad_row_indexes(index):
    x = np.ones((6, 64), np.float32)
    for enc in (Q4.encode(x, method="grouped_absmax"), ROW_BF16.encode(x, method="fp8_row_maxabs")):
        with pytest.raises(FormatError):
            enc.rows(index)


def test_good_row_indexes():
    x = np.arange(6 * 64, dtype=np.float32).reshape(6, 64)
    enc = Q4.encode(x, method="grouped_absmax")
    assert enc.rows(-1).codes.shape == (1, 64)
    assert np.array_equal(enc.rows(-1).codes, enc.codes[5:])
    assert np.array_equal(enc.rows(np.int64(2)).codes, enc.codes[2:3])
    assert np.array_equal(enc.rows([5, 0, 0]).codes, enc.codes[[5, 0, 0]])
    assert np.array_equal(enc.rows(slice(1, 3)).scales, enc.scales[1:3])


@pytest.mark.parametrize("record, args", [
    (GroupedCodes, (FP32, np.zeros((1, 64), np.int8), np.ones((1, 1), np.float16))),
    (GroupedCodes, ("q4_g64_fp16", np.zeros((1, 64), np.int8), np.ones((1, 1), np.float16))),
    (RowScaledCodes, (Q4, np.zeros((1, 2), np.uint8), np.zeros(1, np.uint16))),
    (Nvfp4Codes, (None, np.zeros((1, 16), np.uint8), np.zeros((1, 1), np.uint8),
                  np.float32([1.0]))),
    (DirectWords, (Q4, np.zeros(2, np.uint32))),
    (DirectWords, (FP32, np.zeros(2, np.uint16))),
    (GgufBlocks, (FP32, np.zeros((1, 34), np.uint8))),
    (GgufBlocks, (GGUF, np.zeros((1, 33), np.uint8))),
])
def test_records_check_their_format_and_fields(record, args):
    with pytest.raises(FormatError):
        record(*args)


def test_records_of_another_format_are_refused():
    enc = Q4.encode(np.ones((1, 64), np.float32), method="grouped_absmax")
    with pytest.raises(FormatError, match="belong to q4_g64_fp16"):
        formats.get("q5_g64_fp16").decode(enc)
    words = FP32.encode(np.float32([1.0]), method="import_encoded")
    with pytest.raises(FormatError, match="belong to fp32"):
        INT32.decode(words)
    blocks = GGUF.encode(np.zeros((1, 34), np.uint8), method="import_encoded")
    with pytest.raises(FormatError, match="belong to gguf_q8_0"):
        formats.get("gguf_q4_0").decode(blocks)
    with pytest.raises(FormatError):
        ROW_FP16.decode(ROW_BF16.encode(np.ones((1, 2), np.float32), method="fp8_row_maxabs"))


def test_ml_dtypes_words_still_accepted():
    x = np.float32([1.5, -2.0]).astype(ml_dtypes.bfloat16)
    assert BF16.encode(x, method="import_encoded").words.tolist() == [0x3FC0, 0xC000]
    assert BF16.encode(swapped(x.view(np.uint16)), method="import_encoded").words.tolist() == \
        [0x3FC0, 0xC000]
