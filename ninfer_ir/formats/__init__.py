"""The persistent numeric formats registry (``ninfer_ir.formats``).

A closed set of frozen format records, looked up by canonical name::

    from ninfer_ir import formats
    q4 = formats.get("q4_g64_fp16")
    enc = q4.encode(w, method="grouped_absmax")       # GroupedCodes: int8 codes, f16 scales
    w_hat = q4.decode(enc)                            # float32, exact oracle
    packed, scales = q4.pack(enc)                     # uint8 bit stream per row
    formats.get("gguf_q4_k").decode(blocks)           # uint8 [rows, bytes] -> float32 [rows, K]
    formats.layout("contiguous_le_v1", "fp32")        # a storage layout, checked for the pair

Unknown names and methods, wrong dtypes or shapes, and implicit type
conversions raise :class:`FormatError` (a ``ValueError``); bad numeric content
raises :class:`ninfer_ir.errors.DomainError`. See ``docs/formats.md``.
"""
from __future__ import annotations

from ._base import Category, Format, FormatError
from .direct import DirectFormat, DirectWords
from .fp8_row import Fp8RowFormat, RowScaledCodes
from .gguf import GgufBlocks, GgufFormat
from .grouped import GroupedCodes, GroupedFormat
from .layouts import Layout, layout, layouts
from .nvfp4 import Nvfp4Codes, Nvfp4Format
from .registry import get, names

__all__ = [
    "names", "get", "Format", "Category", "FormatError",
    "DirectFormat", "DirectWords", "GroupedFormat", "GroupedCodes", "Nvfp4Format",
    "Nvfp4Codes", "Fp8RowFormat", "RowScaledCodes", "GgufFormat", "GgufBlocks",
    "layouts", "layout", "Layout",
]
