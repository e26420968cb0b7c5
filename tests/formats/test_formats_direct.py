"""Direct scalar formats: exact word round trips and no implicit cross-type encoding."""
import ml_dtypes
import numpy as np
import pytest

from ninfer_ir import formats
from ninfer_ir.formats import FormatError

bf16, fp32, int32 = (formats.get(n) for n in ("bf16", "fp32", "int32"))

# (word, value) pairs written from the bit layout: sign 15, exponent 14..7 (bias 127), fraction 6..0
BF16_WORDS = [
    (0x0000, 0.0), (0x8000, -0.0), (0x0001, 2.0 ** -133), (0x807F, -127 * 2.0 ** -133),
    (0x0080, 2.0 ** -126), (0x3F80, 1.0), (0xC000, -2.0), (0x7F7F, 255 * 2.0 ** 120),
    (0x7F80, np.inf), (0xFF80, -np.inf),
]
BF16_NANS = [0x7FC0, 0xFFC0, 0x7F81, 0xFF81, 0x7FFF, 0x7FA5]        # quiet, signalling, payloads
FP32_WORDS = [0x00000000, 0x80000000, 0x00000001, 0x807FFFFF, 0x00800000, 0x3F800000,
              0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000,
              0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF800001, 0x7FC12345, 0x7FBFFFFF]


def test_bf16_representative_words_decode_exactly():
    words = np.array([w for w, _ in BF16_WORDS], np.uint16)
    got = bf16.decode(words)
    assert got.dtype == np.float32
    want = np.array([v for _, v in BF16_WORDS], np.float32)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))     # signed zeros too


def test_bf16_nan_payload_and_quiet_bit_survive():
    words = np.array(BF16_NANS, np.uint16)
    got = bf16.decode(words).view(np.uint32)
    assert np.array_equal(got, words.astype(np.uint32) << 16)
    stored = bf16.encode(words, method="import_encoded").words
    assert stored.dtype == np.uint16 and np.array_equal(stored, words)


def test_bf16_all_words_match_ml_dtypes():
    words = np.arange(1 << 16, dtype=np.uint16)
    got = bf16.decode(words)
    ref = words.view(ml_dtypes.bfloat16).astype(np.float32)
    finite_or_inf = ~np.isnan(ref)
    assert np.array_equal(got.view(np.uint32)[finite_or_inf], ref.view(np.uint32)[finite_or_inf])
    assert np.array_equal(np.isnan(got), np.isnan(ref))
    assert np.array_equal(bf16.encode(words.view(ml_dtypes.bfloat16),
                                      method="import_encoded").words, words)


def test_fp32_words_round_trip_bit_for_bit():
    words = np.array(FP32_WORDS, np.uint32)
    values = fp32.decode(words)
    assert values.dtype == np.float32
    assert np.array_equal(values.view(np.uint32), words)
    assert np.array_equal(fp32.encode(values, method="import_encoded").words, words)
    assert values[2] == 2.0 ** -149 and values[5] == 1.0 and np.signbit(values[1])


def test_int32_words_and_extrema():
    words = np.array([0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0x80000001], np.uint32)
    assert int32.decode(words).tolist() == [0, 1, 2147483647, -2147483648, -1, -2147483647]
    values = np.array([-2147483648, 2147483647, -1, 0], np.int32)
    stored = int32.encode(values, method="import_encoded").words
    assert stored.dtype == np.uint32
    assert stored.tolist() == [0x80000000, 0x7FFFFFFF, 0xFFFFFFFF, 0]
    assert np.array_equal(int32.decode(stored), values)


def test_stored_words_are_private_and_read_only():
    source = np.array([1.5, -0.0], np.float32)
    stored = fp32.encode(source, method="import_encoded").words
    source[0] = 7.0
    assert fp32.decode(stored)[0] == 1.5
    with pytest.raises(ValueError):
        stored[0] = 0


@pytest.mark.parametrize("fmt, source", [
    (bf16, np.ones(3, np.float32)), (bf16, np.ones(3, np.float16)),
    (bf16, np.ones(3, np.int16)), (fp32, np.ones(3, np.float64)),
    (fp32, np.ones(3, np.float16)), (fp32, np.ones(3, np.int32)),
    (fp32, np.ones(3, ml_dtypes.bfloat16)), (int32, np.ones(3, np.int64)),
    (int32, np.ones(3, np.float32)), (int32, np.ones(3, np.uint16)),
])
def test_implicit_cross_type_encoding_is_refused(fmt, source):
    with pytest.raises(FormatError, match="no implicit conversion"):
        fmt.encode(source, method="import_encoded")
    with pytest.raises(FormatError):
        fmt.decode(source)


def test_validate_checks_word_dtype_only():
    bf16.validate(np.arange(1 << 16, dtype=np.uint16))         # every word is valid
    fp32.validate(np.array(FP32_WORDS, np.uint32))
    with pytest.raises(FormatError):
        fp32.validate(np.zeros(2, np.uint16))
