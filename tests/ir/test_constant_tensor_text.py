"""The textual form of constant tensors: exact in both directions (decimal for small
tables whose every element reads back, hex of the little-endian bytes otherwise),
print/parse/print a fixpoint, and located errors for text that does not fit."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ninfer_ir as I
from ninfer_ir.dense import DECIMAL_LIMIT, MAX_BYTES, Dense

F32_BITS = [0x7FC00000, 0x7FC00001, 0xFFBFFFFF, 0x7F800001, 0x80000000, 0x00000000,
            0x00000001, 0x807FFFFF, 0x7F800000, 0xFF800000, 0x3DCCCCCD, 0x7F7FFFFF]


def module_of(data: Dense) -> str:
    shape = ",".join(map(str, data.shape))
    return (f"func @f() {{\n  %t = constant_tensor() {{value = {data.text()}}} : "
            f"tensor<{data.dtype}[{shape}]>\n  return()\n}}\n")


def round_trip(array) -> tuple[str, Dense]:
    data = Dense.from_array(array)
    text = module_of(data)
    module = I.parse(text)
    again = str(module)
    assert again == text                                  # print/parse/print fixpoint
    back = module.funcs[0].body.ops[0].value
    assert back == data and back.array.tobytes() == np.ascontiguousarray(array).tobytes()
    return text, back


def test_specials_round_trip_bit_for_bit():
    text, _ = round_trip(np.uint32(F32_BITS).view(np.float32))
    assert '"' in text                                    # NaN payloads force hex


def test_small_tables_print_in_decimal():
    text, _ = round_trip(np.float32([1.5, -0.0, np.inf, -np.inf, np.nan, 1e-45, 0.1]))
    assert "dense<f32[7] [1.5, -0.0, inf, -inf, nan, 1e-45, 0.1]>" in text
    text, _ = round_trip(np.array([[1, -2], [3, 4]], np.int8))
    assert "dense<i8[2,2] [[1, -2], [3, 4]]>" in text
    text, _ = round_trip(np.array([np.iinfo(np.int64).min], np.int64))
    assert "[-9223372036854775808]" in text
    text, _ = round_trip(np.array([np.iinfo(np.uint64).max], np.uint64))
    assert "[18446744073709551615]" in text
    text, _ = round_trip(np.array(2.5, np.float16))
    assert "dense<f16[] 2.5>" in text
    text, _ = round_trip(np.zeros((2, 0), np.float32))
    assert "dense<f32[2,0] [[], []]>" in text


def test_large_tables_print_in_hex():
    text, _ = round_trip(np.arange(DECIMAL_LIMIT + 1, dtype=np.float32))
    assert f'dense<f32[{DECIMAL_LIMIT + 1}] "000000000000803f' in text
    round_trip(np.arange(DECIMAL_LIMIT, dtype=np.float32))


def test_bf16_prints_its_words_in_hex():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    text, back = round_trip(np.float32([1.0, -2.0]).astype(ml_dtypes.bfloat16))
    assert 'dense<bf16[2] "803f00c0">' in text and back.dtype is I.bf16


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["f16", "f32", "f64", "i8", "u16", "i32", "u64", "bool"]),
       st.lists(st.integers(0, 2**64 - 1), min_size=0, max_size=40))
def test_random_bit_patterns_round_trip(name, words):
    dtype = np.dtype(I.types.scalar(name).np_dtype)
    raw = b"".join(w.to_bytes(8, "little") for w in words)
    raw = raw[:len(raw) // dtype.itemsize * dtype.itemsize]
    array = np.frombuffer(raw, dtype=dtype) if name != "bool" else \
        np.frombuffer(raw, dtype=np.uint8) % 2 == 1
    round_trip(array)


def test_handwritten_integers_for_floats_are_read():
    m = I.parse('func @f() {\n  %t = constant_tensor() {value = dense<f32[2] [1, -3]>} : '
                'tensor<f32[2]>\n  return()\n}\n')
    assert m.funcs[0].body.ops[0].value.array.tolist() == [1.0, -3.0]
    assert "dense<f32[2] [1.0, -3.0]>" in str(m)


def body(attr: str, result: str = "tensor<f32[2]>") -> str:
    return f"func @f() {{\n  %t = constant_tensor() {{value = {attr}}} : {result}\n  return()\n}}\n"


@pytest.mark.parametrize("attr, message", [
    ('dense<f32[2] "0000">', "needs 16 hex digits"),
    ('dense<f32[2] "zz00000000000000">', "hex digits only"),
    ('dense<f32[2] [1.0]>', "expected a list of 2 items, got 1 items"),
    ('dense<f32[2] [[1.0], [2.0]]>', "nests deeper than the shape"),
    ('dense<u8[2] [1, 256]>', "256 does not fit u8"),
    ('dense<i32[2] [1, 2.5]>', "i32 data needs integers"),
    ('dense<bool[2] [true, 1]>', "bool data needs true or false"),
    ('dense<bool[2] "0002">', "bool data bytes must be 00 or 01"),
    ('dense<bf16[1] [1.0]>', "bf16 data is written in hex"),
    ('dense<f32[2] ["x", 1.0]>', "f32 data needs numbers"),
    ('dense<f32[N] [1.0, 2.0]>', "static shape"),
    ('dense<index[2] [1, 2]>', "not an element type of dense data"),
    ('dense<f32[2] [9007199254740993, 1]>', "not exact in f32 data"),
    ('sparse<f32[2] [1.0, 2.0]>', "unknown attribute 'sparse<...>'"),
    (f'dense<u8[{MAX_BYTES + 1}] "00">', "more than a constant tensor holds"),
])
def test_bad_dense_text_is_a_located_parse_error(attr, message):
    with pytest.raises(I.ParseError, match="bad dense data|static shape|element type|unknown "
                                           "attribute") as info:
        I.parse(body(attr))
    assert message in str(info.value)
    assert info.value.line == 2 and info.value.col > 1


@pytest.mark.parametrize("attr, result, message", [
    ("dense<f32[2] [1.0, 2.0]>", "tensor<f32[3]>", "the data is f32[2] but the result is"),
    ("dense<f32[2] [1.0, 2.0]>", "tensor<f16[2]>", "the data is f32[2] but the result is"),
    ("dense<f32[2] [1.0, 2.0]>", "buffer<f32[2]>", "a tensor type of static shape"),
    ("dense<f32[2] [1.0, 2.0]>", "tensor<f32[N]>", "a tensor type of static shape"),
    ("[1.0, 2.0]", "tensor<f32[2]>", "attribute 'value' must be dense data"),
])
def test_inconsistent_constants_are_verify_errors(attr, result, message):
    with pytest.raises(I.VerifyError, match="constant_tensor") as info:
        I.parse(body(attr, result))
    assert message in str(info.value)


def test_an_error_message_abbreviates_a_large_table():
    data = Dense.from_array(np.zeros(4096, np.float32))
    with pytest.raises(I.VerifyError, match="the data is f32.4096. but the result") as info:
        I.parse(body(data.text(), "tensor<f32[4095]>"))
    assert len(str(info.value)) < 1000


def test_operands_are_refused():
    text = ("func @f(%x: index) {\n  %t = constant_tensor(%x) {value = dense<f32[1] [1.0]>}"
            " : tensor<f32[1]>\n  return()\n}\n")
    with pytest.raises(I.VerifyError, match="expects 0 operand"):
        I.parse(text)


def test_equal_data_compares_and_hashes_equal_and_is_read_only():
    a = Dense.from_array(np.float32([1, 2]))
    b = Dense.from_array(np.float32([1, 2]))
    c = Dense.from_array(np.float32([1, -2]))
    d = Dense.from_array(np.int32([1, 2]))
    assert a == b and hash(a) == hash(b) and a != c and a != d
    with pytest.raises(ValueError):
        a.array[0] = 5
