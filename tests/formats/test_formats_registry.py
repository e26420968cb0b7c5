"""The closed registry: names, categories, figures, lookup and immutability."""
import copy
import pickle

import numpy as np
import pytest

from ninfer_ir import errors
from ninfer_ir import formats
from ninfer_ir.formats import Category, FormatError

# Canonical names and full-group logical bits per weight, as the reference tables list them.
SEED_TABLE = {
    "bf16": (Category.DIRECT, 16), "fp32": (Category.DIRECT, 32),
    "int32": (Category.DIRECT, 32),
    "q2_g64_fp16": (Category.GROUPED, 2.25), "q4_g64_fp16": (Category.GROUPED, 4.25),
    "q5_g64_fp16": (Category.GROUPED, 5.25), "q6_g64_fp16": (Category.GROUPED, 6.25),
    "q8_g32_fp16": (Category.GROUPED, 8.50), "t2_g128_fp16": (Category.GROUPED, 2.125),
    "nvfp4": (Category.BLOCK_SCALED, 4 + 8 / 16),
    "fp8_e4m3fn_row_bf16": (Category.ROW_SCALED, 8), "fp8_e4m3fn_row_fp16": (Category.ROW_SCALED, 8),
}
# name: (ggml type, block values, block bytes, bits/weight)
GGUF_TABLE = {
    "gguf_q8_0": (8, 32, 34, 8.50), "gguf_q4_0": (2, 32, 18, 4.50),
    "gguf_q5_0": (6, 32, 22, 5.50), "gguf_q2_0": (42, 64, 18, 2.25),
    "gguf_q2_k": (10, 256, 84, 2.625), "gguf_q3_k": (11, 256, 110, 3.4375),
    "gguf_q4_k": (12, 256, 144, 4.50), "gguf_q5_k": (13, 256, 176, 5.50),
    "gguf_q6_k": (14, 256, 210, 6.5625), "gguf_iq2_xxs": (16, 256, 66, 2.0625),
    "gguf_iq2_xs": (17, 256, 74, 2.3125), "gguf_iq3_xxs": (18, 256, 98, 3.0625),
    "gguf_iq1_s": (19, 256, 50, 1.5625), "gguf_iq4_nl": (20, 32, 18, 4.50),
    "gguf_iq3_s": (21, 256, 110, 3.4375), "gguf_iq2_s": (22, 256, 82, 2.5625),
    "gguf_iq4_xs": (23, 256, 136, 4.25), "gguf_iq1_m": (29, 256, 56, 1.75),
}
CODE_INTERVALS = {
    "q2_g64_fp16": (-1, 2), "q4_g64_fp16": (-8, 7), "q5_g64_fp16": (-16, 15),
    "q6_g64_fp16": (-32, 31), "q8_g32_fp16": (-127, 127), "t2_g128_fp16": (-1, 1),
    "int32": (-2147483648, 2147483647),
}


def test_names_are_exactly_the_reference_tables():
    assert formats.names() == tuple(SEED_TABLE) + tuple(GGUF_TABLE)


@pytest.mark.parametrize("name", list(SEED_TABLE))
def test_category_and_bits_per_weight(name):
    fmt = formats.get(name)
    category, bits = SEED_TABLE[name]
    assert fmt.name == name and str(fmt) == name
    assert fmt.category is category
    assert fmt.bits_per_weight == bits
    assert isinstance(fmt.code, str) and fmt.code
    assert fmt.code_interval == CODE_INTERVALS.get(name)


@pytest.mark.parametrize("name", list(GGUF_TABLE))
def test_gguf_rows(name):
    fmt = formats.get(name)
    ggml_type, values, nbytes, bits = GGUF_TABLE[name]
    assert fmt.category is Category.GGUF_BLOCK
    assert (fmt.ggml_type, fmt.block_values, fmt.block_bytes) == (ggml_type, values, nbytes)
    assert fmt.bits_per_weight == bits


@pytest.mark.parametrize("name", ["q3_g64_fp16", "Q4_G64_FP16", "q4_g32_fp16", "gguf_q4_1",
                                  "", "fp16", "float32"])
def test_unknown_names_are_refused(name):
    with pytest.raises(FormatError, match="unknown numeric format") as info:
        formats.get(name)
    assert isinstance(info.value, ValueError) and isinstance(info.value, errors.NinferError)
    assert "q4_g64_fp16" in str(info.value)          # the message lists the known names


@pytest.mark.parametrize("key", [None, 4, 12, b"q4_g64_fp16", ("q4_g64_fp16",)])
def test_non_string_keys_are_refused(key):
    with pytest.raises(FormatError):
        formats.get(key)


def test_open_ended_constructors_are_refused():
    from ninfer_ir.formats.grouped import TwosComplementWords, ZeroOnlyWithZeroCodes
    with pytest.raises(TypeError, match="closed set"):
        formats.GroupedFormat("q3_g64_fp16", bits=3, group=64, code_interval=(-4, 3),
                              word_codec=TwosComplementWords(3),
                              scale_rule=ZeroOnlyWithZeroCodes())
    with pytest.raises(TypeError, match="closed set"):
        formats.GgufFormat("gguf_q4_1", ggml_type=3, block_values=32, block_bytes=20,
                           decode_blocks=lambda b: b)
    with pytest.raises(TypeError):
        formats.Format()
    assert not hasattr(formats, "register")


def test_formats_are_frozen_and_interned():
    fmt = formats.get("q4_g64_fp16")
    with pytest.raises(AttributeError):
        fmt.group = 32
    with pytest.raises(AttributeError):
        fmt.name = "x"
    with pytest.raises(AttributeError):
        del fmt.bits
    assert formats.get("q4_g64_fp16") is fmt
    assert copy.copy(fmt) is fmt and copy.deepcopy(fmt) is fmt
    assert pickle.loads(pickle.dumps(fmt)) is fmt
    assert repr(fmt) == "formats.get('q4_g64_fp16')"


def test_unknown_and_refused_methods():
    x = np.ones((2, 64), np.float32)
    with pytest.raises(FormatError, match="unknown conversion method"):
        formats.get("q4_g64_fp16").encode(x, method="gptq")
    for name in ("q2_g64_fp16", "t2_g128_fp16"):
        for method in ("grouped_absmax", "grouped_search"):
            with pytest.raises(FormatError, match="refuses"):
                formats.get(name).encode(x, method=method)
    with pytest.raises(FormatError, match="unknown conversion method"):
        formats.get("nvfp4").encode(x, method="grouped_absmax")     # no NVFP4 quantizer
    with pytest.raises(FormatError, match="unexpected keyword"):
        formats.get("q4_g64_fp16").encode(x, method="grouped_absmax", importance=np.ones(64))
    with pytest.raises(FormatError):
        formats.get("q4_g64_fp16").encode(x, method=None)
    assert set(formats.get("q8_g32_fp16").methods) == {"grouped_absmax", "grouped_search",
                                                       "import_encoded"}
    assert formats.get("q2_g64_fp16").methods == ("import_encoded",)
