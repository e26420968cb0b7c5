"""Grouped signed-integer formats: intervals, geometry, scale rules, decode oracle,
row views and gathers, and the packed carrier's bit order."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ninfer_ir import formats
from ninfer_ir.errors import DomainError
from ninfer_ir.formats import FormatError, GroupedCodes

from formats_oracles import f16_value, grouped_decode, pack_bits

# name: (bits, group, qmin, qmax)
GROUPED = {
    "q2_g64_fp16": (2, 64, -1, 2), "q4_g64_fp16": (4, 64, -8, 7),
    "q5_g64_fp16": (5, 64, -16, 15), "q6_g64_fp16": (6, 64, -32, 31),
    "q8_g32_fp16": (8, 32, -127, 127), "t2_g128_fp16": (2, 128, -1, 1),
}
STRICT = [n for n in GROUPED if n != "q2_g64_fp16"]


def imported(name, codes, scale_words):
    fmt = formats.get(name)
    return fmt.encode((np.asarray(codes), np.asarray(scale_words, np.uint16)),
                      method="import_encoded")


def random_plane(rng, name, shape, zero_groups=0.1):
    bits, group, qmin, qmax = GROUPED[name]
    codes = rng.integers(qmin, qmax + 1, shape)
    n_groups = -(-shape[-1] // group)
    words = rng.integers(0x0001, 0x7C00, (*shape[:-1], n_groups)) | \
        (rng.integers(0, 2, (*shape[:-1], n_groups)) << 15)
    zero = rng.random(words.shape) < zero_groups
    words[zero] = 0
    grouped_zero = np.repeat(zero, group, axis=-1)[..., :shape[-1]]
    codes[grouped_zero] = 0
    return codes.astype(np.int8), words.astype(np.uint16)


@pytest.mark.parametrize("name", list(GROUPED))
def test_legal_interval_endpoints(name):
    bits, group, qmin, qmax = GROUPED[name]
    fmt = formats.get(name)
    enc = imported(name, [[qmin, qmax, 0]], [[0x3C00]])                 # scale 1.0
    assert fmt.decode(enc).tolist() == [[qmin, qmax, 0]]
    for outside in (qmin - 1, qmax + 1):
        with pytest.raises(DomainError, match="outside"):
            imported(name, [[outside, 0]], [[0x3C00]])
        if -128 <= outside <= 127:                                  # representable in int8
            with pytest.raises(DomainError, match="outside"):
                fmt.validate(GroupedCodes(fmt, np.array([[outside]], np.int8),
                                          np.ones((1, 1), np.float16)))


def test_q8_rejects_minus_128_and_t2_rejects_word_0b10():
    with pytest.raises(DomainError):
        imported("q8_g32_fp16", [[-128]], [[0x3C00]])
    q8 = formats.get("q8_g32_fp16")
    with pytest.raises(DomainError):
        q8.unpack(np.array([[0x80]], np.uint8), np.ones((1, 1), np.float16), 1)
    t2 = formats.get("t2_g128_fp16")
    with pytest.raises(DomainError):
        t2.unpack(np.array([[0b10]], np.uint8), np.ones((1, 1), np.float16), 1)
    assert t2.unpack(np.array([[0b11]], np.uint8), np.ones((1, 1), np.float16), 1) \
        .codes.tolist() == [[-1]]


def test_q2_accepts_every_word_and_both_zero_scales():
    q2 = formats.get("q2_g64_fp16")
    packed = np.array([[0b11100100]], np.uint8)                      # words 0, 1, 2, 3
    for scale_word in (0x0000, 0x8000, 0x0001, 0xBC00, 0x7BFF):
        enc = q2.unpack(packed, np.array([[scale_word]], np.uint16).view(np.float16), 4)
        assert enc.codes.tolist() == [[-1, 0, 1, 2]]
        got = q2.decode(enc).view(np.uint32)
        assert np.array_equal(got, grouped_decode(enc.codes, np.array([[scale_word]]), 64))
    for bad in (0x7C00, 0xFC00, 0x7E00):
        with pytest.raises(DomainError):
            imported("q2_g64_fp16", [[0, 1]], [[bad]])


@pytest.mark.parametrize("name", STRICT)
def test_scale_rules(name):
    fmt = formats.get(name)
    for bad in (0x8000, 0x7C00, 0xFC00, 0x7E00, 0xFE01):           # -0, +-inf, NaNs
        with pytest.raises(DomainError, match="scale"):
            imported(name, [[0, 0]], [[bad]])
    with pytest.raises(DomainError, match="scale \\+0 but nonzero codes"):
        imported(name, [[0, 1]], [[0x0000]])
    for good in (0x0000, 0x0001, 0x8001, 0xBC00, 0x7BFF, 0xFBFF):
        enc = imported(name, [[0, 0]], [[good]])
        fmt.validate(enc)
    fmt.validate(imported(name, [[1, -1]], [[0x0001]]))             # subnormal scale is legal


def test_negative_scale_is_a_signed_multiply():
    q4 = formats.get("q4_g64_fp16")
    enc = imported("q4_g64_fp16", [[-8, 7, 1]], [[0xC600]])          # scale -6.0
    assert q4.decode(enc).tolist() == [[48.0, -42.0, -6.0]]
    enc = imported("q4_g64_fp16", [[-8]], [[0xBA00]])                # -m/8 puts m = 6 on -8
    assert q4.decode(enc).tolist() == [[6.0]]


@pytest.mark.parametrize("name", list(GROUPED))
@pytest.mark.parametrize("k", [1, 31, 33, 64, 65, 127, 129, 200])
def test_geometry_and_decode_oracle(name, k):
    bits, group, qmin, qmax = GROUPED[name]
    rng = np.random.default_rng(k)
    codes, words = random_plane(rng, name, (3, k))
    enc = imported(name, codes, words)
    assert enc.codes.shape == (3, k) and enc.codes.dtype == np.int8
    assert enc.scales.shape == (3, -(-k // group)) and enc.scales.dtype == np.float16
    got = formats.get(name).decode(enc)
    assert got.dtype == np.float32 and got.shape == (3, k)
    assert np.array_equal(got.view(np.uint32), grouped_decode(codes, words, group))


def test_wrong_geometry_is_refused():
    q4 = formats.get("q4_g64_fp16")
    with pytest.raises(FormatError, match="need scales"):
        GroupedCodes(q4, np.zeros((2, 65), np.int8), np.zeros((2, 1), np.float16))
    with pytest.raises(FormatError, match="dtype"):
        GroupedCodes(q4, np.zeros((2, 64), np.int16), np.zeros((2, 1), np.float16))
    with pytest.raises(FormatError):
        GroupedCodes(q4, np.zeros((2, 0), np.int8), np.zeros((2, 0), np.float16))
    with pytest.raises(FormatError, match="belong"):
        formats.get("q5_g64_fp16").decode(imported("q4_g64_fp16", [[1]], [[0x3C00]]))


def test_rank_three_groups_never_cross_rows():
    rng = np.random.default_rng(3)
    codes, words = random_plane(rng, "q6_g64_fp16", (2, 3, 70))
    enc = imported("q6_g64_fp16", codes, words)
    assert enc.scales.shape == (2, 3, 2)
    got = formats.get("q6_g64_fp16").decode(enc)
    assert np.array_equal(got.view(np.uint32), grouped_decode(codes, words, 64))


@pytest.mark.parametrize("name", ["q4_g64_fp16", "q5_g64_fp16", "q6_g64_fp16", "q8_g32_fp16"])
def test_row_views_and_gathers(name):
    fmt = formats.get(name)
    codes, words = random_plane(np.random.default_rng(5), name, (6, 100))
    enc = imported(name, codes, words)
    full = fmt.decode(enc)
    packed, scales = fmt.pack(enc)
    for index in (slice(1, 4), slice(None, None, 2), [5, 0, 3, 3], np.array([2]), 4, -1):
        rows = enc.rows(index)
        want = full[index] if not isinstance(index, int) else full[[index]]
        assert np.array_equal(fmt.decode(rows).view(np.uint32), want.view(np.uint32))
        if not isinstance(index, int):
            again = fmt.unpack(packed[index], scales[index], 100)
            assert np.array_equal(again.codes, rows.codes)
    with pytest.raises(FormatError):
        imported(name, codes[0], words[0]).rows(0)


# -- packed carrier -------------------------------------------------------------------
@pytest.mark.parametrize("name, codes, expected", [
    ("q4_g64_fp16", [1, -1, 7, -8], [0xF1, 0x87]),
    ("q2_g64_fp16", [-1, 0, 1, 2], [0xE4]),
    ("t2_g128_fp16", [-1, 0, 1, 1], [0x53]),
    ("q5_g64_fp16", [1, -1, 15, -16], [0xE1, 0x3F, 0x08]),
    ("q6_g64_fp16", [-32, 31, -1], [0xE0, 0xF7, 0x03]),
    ("q8_g32_fp16", [-127, 127, -1, 0], [0x81, 0x7F, 0xFF, 0x00]),
    ("q4_g64_fp16", [-8, 1, 2], [0x18, 0x02]),
])
def test_packed_bit_order_examples(name, codes, expected):
    fmt = formats.get(name)
    enc = imported(name, [codes], [[0x3C00]])
    packed, scales = fmt.pack(enc)
    assert packed.dtype == np.uint8 and packed.tolist() == [expected]
    assert scales.dtype == np.float16 and scales.view(np.uint16).tolist() == [[0x3C00]]
    assert fmt.unpack(packed, scales, len(codes)).codes.tolist() == [codes]


@settings(max_examples=100, deadline=None)
@given(name=st.sampled_from(list(GROUPED)), rows=st.integers(1, 3), k=st.integers(1, 150),
       seed=st.integers(0, 2 ** 32 - 1))
def test_pack_matches_bitstream_oracle_and_round_trips(name, rows, k, seed):
    bits, group, qmin, qmax = GROUPED[name]
    fmt = formats.get(name)
    codes, words = random_plane(np.random.default_rng(seed), name, (rows, k))
    enc = imported(name, codes, words)
    packed, scales = fmt.pack(enc)
    offset = 1 if name == "q2_g64_fp16" else 0
    for r in range(rows):
        logical = [(int(q) + offset) & ((1 << bits) - 1) for q in codes[r]]
        assert bytes(packed[r]) == pack_bits(logical, bits)
    back = fmt.unpack(packed, scales, k)
    assert np.array_equal(back.codes, codes)
    assert np.array_equal(back.scales.view(np.uint16), words)


def test_unpack_refuses_bad_carriers():
    q5 = formats.get("q5_g64_fp16")
    scales = np.ones((1, 1), np.float16)
    with pytest.raises(FormatError, match="pack into 2 bytes"):
        q5.unpack(np.zeros((1, 3), np.uint8), scales, 3)
    with pytest.raises(DomainError, match="padding"):
        q5.unpack(np.array([[0x00, 0x80]], np.uint8), scales, 3)     # bit 15 > 3*5 bits
    with pytest.raises(FormatError):
        q5.unpack(np.zeros((1, 2), np.int8), scales, 3)
    with pytest.raises(FormatError):
        q5.unpack(np.zeros((1, 2), np.uint8), scales, 0)
    with pytest.raises(DomainError):                                # +0 scale, nonzero code
        q5.unpack(np.array([[0x01, 0x00]], np.uint8), np.zeros((1, 1), np.float16), 3)


def test_import_preserves_scale_bits_and_copies():
    codes = np.array([[0, 1, -1]], np.int8)
    words = np.array([[0x8001]], np.uint16)                          # -2**-24
    enc = imported("q4_g64_fp16", codes, words)
    codes[0, 0] = 5
    assert enc.codes.tolist() == [[0, 1, -1]]
    assert enc.scales.view(np.uint16).tolist() == [[0x8001]]
    assert f16_value(0x8001) == -(2.0 ** -24)
    with pytest.raises(ValueError):
        enc.codes[0, 0] = 1
    q4 = formats.get("q4_g64_fp16")
    assert q4.encode(enc, method="import_encoded").codes.tolist() == [[0, 1, -1]]
    with pytest.raises(FormatError):
        q4.encode((np.zeros((1, 2), np.float32), np.zeros((1, 1), np.float16)),
                  method="import_encoded")
    with pytest.raises(DomainError):                                 # no silent int8 wrap
        q4.encode((np.array([[200]]), np.ones((1, 1), np.float16)), method="import_encoded")
