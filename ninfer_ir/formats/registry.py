"""The closed table of persistent numeric formats, keyed by canonical name.

This table is the whole registry: there is no ``register()``, no constructor
taking (bits, group, scale type), and no lookup by number. Every row names the
conversion methods that can produce the format, and, where a method is
deliberately refused, why.
"""
from __future__ import annotations

from types import MappingProxyType

from . import _ggml_iquants as iq
from . import _ggml_quants as kq
from . import direct, fp8_row, gguf, grouped_methods, nvfp4
from ._base import _TOKEN, Format, FormatError
from .direct import DirectFormat
from .fp8_row import BF16_ROW_SCALE, FP16_ROW_SCALE, Fp8RowFormat
from .gguf import GgufFormat
from .grouped import AnyFiniteScale, GroupedFormat, OffsetWords, TwosComplementWords, \
    ZeroOnlyWithZeroCodes
from .nvfp4 import Nvfp4Format

_INT32_MIN, _INT32_MAX = -(1 << 31), (1 << 31) - 1
_DIRECT_IMPORT = {"import_encoded": direct.import_words}
_BF16_METHODS = {**_DIRECT_IMPORT, "fp32_to_bf16_rne": direct.fp32_to_bf16_rne}
_INT32_METHODS = {**_DIRECT_IMPORT, "fp32_to_int32": direct.fp32_to_int32}
_QUANTIZERS = {
    "grouped_absmax": grouped_methods.grouped_absmax,
    "grouped_search": grouped_methods.grouped_search,
    "import_encoded": grouped_methods.import_encoded,
}
_IMPORT_ONLY = {"import_encoded": grouped_methods.import_encoded}
_Q2_REFUSAL = ("floating-point-to-Q2 quantization is outside the conversion contract; "
               "import trained GSQ Q2_0 codes with import_encoded")
_T2_REFUSAL = ("ternary checkpoints are repacked without rounding; use import_encoded")
_GGUF_IMPORT = {"import_encoded": gguf.import_encoded}


def _direct(name, text, width, word_dtype, native, interval, decode_words, methods):
    return DirectFormat(name, category_text=text, width=width, word_dtype=word_dtype,
                        native_dtype_name=native, code_interval=interval,
                        decode_words=decode_words, methods=methods, _token=_TOKEN)


def _grouped(name, bits, group, interval, words, scale_rule, methods, refusal=None):
    refusals = {} if refusal is None else {m: refusal for m in ("grouped_absmax",
                                                               "grouped_search")}
    return GroupedFormat(name, bits=bits, group=group, code_interval=interval,
                         word_codec=words, scale_rule=scale_rule, methods=methods,
                         refusals=refusals, _token=_TOKEN)


def _gguf(name, ggml_type, block_values, block_bytes, decode_blocks):
    return GgufFormat(name, ggml_type=ggml_type, block_values=block_values,
                      block_bytes=block_bytes, decode_blocks=decode_blocks,
                      methods=_GGUF_IMPORT, _token=_TOKEN)


_STRICT = ZeroOnlyWithZeroCodes()
_TABLE: tuple[Format, ...] = (
    _direct("bf16", "bfloat16 bit encoding", 16, "uint16", "bfloat16", None,
            direct.decode_bf16, _BF16_METHODS),
    _direct("fp32", "IEEE-754 binary32", 32, "uint32", "float32", None, direct.decode_fp32,
            _DIRECT_IMPORT),
    _direct("int32", "32-bit two's-complement integer", 32, "uint32", "int32",
            (_INT32_MIN, _INT32_MAX), direct.decode_int32, _INT32_METHODS),

    _grouped("q2_g64_fp16", 2, 64, (-1, 2), OffsetWords(2, 1), AnyFiniteScale(),
             _IMPORT_ONLY, _Q2_REFUSAL),
    _grouped("q4_g64_fp16", 4, 64, (-8, 7), TwosComplementWords(4), _STRICT, _QUANTIZERS),
    _grouped("q5_g64_fp16", 5, 64, (-16, 15), TwosComplementWords(5), _STRICT, _QUANTIZERS),
    _grouped("q6_g64_fp16", 6, 64, (-32, 31), TwosComplementWords(6), _STRICT, _QUANTIZERS),
    _grouped("q8_g32_fp16", 8, 32, (-127, 127), TwosComplementWords(8), _STRICT, _QUANTIZERS),
    _grouped("t2_g128_fp16", 2, 128, (-1, 1), TwosComplementWords(2), _STRICT, _IMPORT_ONLY,
             _T2_REFUSAL),

    Nvfp4Format("nvfp4", methods={"import_encoded": nvfp4.import_encoded}, _token=_TOKEN),

    Fp8RowFormat("fp8_e4m3fn_row_bf16", row_scale=BF16_ROW_SCALE, _token=_TOKEN,
                 methods={"fp8_row_maxabs": fp8_row.fp8_row_maxabs,
                          "import_encoded": fp8_row.import_encoded}),
    Fp8RowFormat("fp8_e4m3fn_row_fp16", row_scale=FP16_ROW_SCALE, _token=_TOKEN,
                 methods={"fp8_row_maxabs": fp8_row.fp8_row_maxabs,
                          "import_encoded": fp8_row.import_encoded}),

    _gguf("gguf_q8_0", 8, 32, 34, kq.decode_q8_0),
    _gguf("gguf_q4_0", 2, 32, 18, kq.decode_q4_0),
    _gguf("gguf_q5_0", 6, 32, 22, kq.decode_q5_0),
    _gguf("gguf_q2_0", 42, 64, 18, kq.decode_q2_0),
    _gguf("gguf_q2_k", 10, 256, 84, kq.decode_q2_k),
    _gguf("gguf_q3_k", 11, 256, 110, kq.decode_q3_k),
    _gguf("gguf_q4_k", 12, 256, 144, kq.decode_q4_k),
    _gguf("gguf_q5_k", 13, 256, 176, kq.decode_q5_k),
    _gguf("gguf_q6_k", 14, 256, 210, kq.decode_q6_k),
    _gguf("gguf_iq2_xxs", 16, 256, 66, iq.decode_iq2_xxs),
    _gguf("gguf_iq2_xs", 17, 256, 74, iq.decode_iq2_xs),
    _gguf("gguf_iq3_xxs", 18, 256, 98, iq.decode_iq3_xxs),
    _gguf("gguf_iq1_s", 19, 256, 50, iq.decode_iq1_s),
    _gguf("gguf_iq4_nl", 20, 32, 18, iq.decode_iq4_nl),
    _gguf("gguf_iq3_s", 21, 256, 110, iq.decode_iq3_s),
    _gguf("gguf_iq2_s", 22, 256, 82, iq.decode_iq2_s),
    _gguf("gguf_iq4_xs", 23, 256, 136, iq.decode_iq4_xs),
    _gguf("gguf_iq1_m", 29, 256, 56, iq.decode_iq1_m),
)
_BY_NAME = MappingProxyType({fmt.name: fmt for fmt in _TABLE})


def names() -> tuple[str, ...]:
    """Every canonical format name, in the order of the reference tables."""
    return tuple(_BY_NAME)


def get(name: str) -> Format:
    """The format registered under ``name``; :class:`FormatError` for any other name."""
    if isinstance(name, str) and name in _BY_NAME:
        return _BY_NAME[name]
    raise FormatError(f"unknown numeric format {name!r}; the closed registry holds: "
                      f"{', '.join(_BY_NAME)}")
