"""The oracle of the in-kernel ``decode`` op: one packed row of a grouped format.

Element ``k`` is the ``b``-bit little-endian word at stream bits ``[k*b, (k+1)*b)``
(stream bit ``i`` is bit ``i % 8`` of byte ``i // 8``), read as the format's signed
code ``q`` (two's complement, or ``u - 1`` for Q2), and its value is
``binary32(s32 * binary32(q))`` with ``s32`` the exact binary32 of the group's
binary16 scale. Codes are not validated (the producer's contract).
"""
from __future__ import annotations

import numpy as np


def code_of_word(word: np.ndarray, fmt) -> np.ndarray:
    """Signed codes (int32) of ``b``-bit words (any unsigned array) for ``fmt``."""
    w = word.astype(np.int32)
    offset = getattr(fmt.word_codec, "offset", None)
    if offset is not None:
        return w - offset
    sign = 1 << (fmt.bits - 1)
    return (w ^ sign) - sign


def words_of_row(packed: np.ndarray, bits: int, k: int) -> np.ndarray:
    """The ``k`` words of one packed row (uint32)."""
    pos = np.arange(k, dtype=np.int64) * bits
    byte, off = pos >> 3, (pos & 7).astype(np.uint32)
    row = np.concatenate([np.asarray(packed, dtype=np.uint8), np.zeros(1, np.uint8)])
    pair = row[byte].astype(np.uint32) | (row[byte + 1].astype(np.uint32) << np.uint32(8))
    return (pair >> off) & np.uint32((1 << bits) - 1)


def row_sizes(fmt, k: int) -> tuple[int, int]:
    """``(packed bytes, scales)`` of one row of ``k`` elements of ``fmt``."""
    return -(-k * fmt.bits // 8), -(-k // fmt.group)


def check_row(packed, scales, fmt, k) -> str | None:
    """Why ``packed`` (u8) and ``scales`` (f16) are not one row of ``k`` elements of
    ``fmt``, or None when they are."""
    if isinstance(k, (int, np.integer)) and not isinstance(k, bool) and k >= 1 \
            and (packed.shape[0], scales.shape[0]) == row_sizes(fmt, int(k)):
        return None
    return row_mismatch(packed.shape[0], scales.shape[0], fmt, k)


def row_mismatch(n_packed, n_scales, fmt, k) -> str:
    """The words of a row geometry that does not fit."""
    return (f"{n_packed} packed bytes and {n_scales} scales do not hold one {fmt.name} row "
            f"of {k!r} elements")


def decode_row(packed, scales, fmt, k: int) -> np.ndarray:
    q = code_of_word(words_of_row(packed, fmt.bits, k), fmt).astype(np.float32)
    s = np.asarray(scales, dtype=np.float16).astype(np.float32)
    return (s[np.arange(k) // fmt.group] * q).astype(np.float32)


# -- every registered format: operand signatures, row geometry, the oracle ---------------

class Operand:
    """One operand of ``decode`` for a format: a 1-D ``row`` of ``dtype``, a ``scalar``
    of ``dtype``, or the element ``count`` (an index; grouped formats only)."""
    __slots__ = ("name", "kind", "dtype")

    def __init__(self, name: str, kind: str, dtype=None):
        self.name, self.kind, self.dtype = name, kind, dtype

    def __repr__(self):
        return f"{self.name}: {self.dtype or 'index'}{'[..]' if self.kind == 'row' else ''}"


def family(fmt) -> str:
    """``grouped``, ``gguf``, ``direct``, ``fp8_row`` or ``nvfp4``."""
    from ninfer_ir.formats.direct import DirectFormat
    from ninfer_ir.formats.fp8_row import Fp8RowFormat
    from ninfer_ir.formats.gguf import GgufFormat
    from ninfer_ir.formats.grouped import GroupedFormat
    from ninfer_ir.formats.nvfp4 import Nvfp4Format
    for cls, name in ((GroupedFormat, "grouped"), (GgufFormat, "gguf"), (DirectFormat, "direct"),
                      (Fp8RowFormat, "fp8_row"), (Nvfp4Format, "nvfp4")):
        if isinstance(fmt, cls):
            return name
    raise TypeError(f"not a registered format: {fmt!r}")


def signature(fmt) -> tuple[Operand, ...]:
    """The operands ``decode`` takes for ``fmt``, in order."""
    from ninfer_ir.types import f16, f32, u8, u16, u32
    fam = family(fmt)
    if fam == "grouped":
        return Operand("packed", "row", u8), Operand("scales", "row", f16), Operand("k", "count")
    if fam == "gguf":
        return (Operand("blocks", "row", u8),)
    if fam == "direct":
        return (Operand("words", "row", u16 if fmt.width == 16 else u32),)
    if fam == "fp8_row":
        return (Operand("codes", "row", u8),
                Operand("scale", "scalar", u16 if fmt.row_scale.name == "bf16" else f16))
    return (Operand("codes", "row", u8), Operand("scales", "row", u8),
            Operand("divisor", "scalar", f32))


def result_dtype(fmt):
    from ninfer_ir.types import f32, i32
    return i32 if fmt.name == "int32" else f32


def row_length(fmt, sizes):
    """The element count of a (non-grouped) row whose row operands have ``sizes``."""
    if family(fmt) == "gguf":
        return sizes[0] // fmt.block_bytes * fmt.block_values
    return sizes[0]


def row_problem(fmt, sizes) -> str | None:
    """Why row operands of lengths ``sizes`` are not one row of ``fmt`` (not grouped), or
    None when they are."""
    fam = family(fmt)
    n = sizes[0]
    if fam == "gguf":
        if n >= 1 and n % fmt.block_bytes == 0:
            return None
        return (f"{n} bytes do not hold one {fmt.name} row (whole {fmt.block_bytes}-byte blocks "
                f"of {fmt.block_values} values, at least one)")
    if fam == "nvfp4":
        if n >= 1 and n % 16 == 0 and sizes[1] == n // 16:
            return None
        return (f"{n} codes and {sizes[1]} scales do not hold one nvfp4 row (K a positive "
                f"multiple of 16 codes and K/16 scales)")
    if n >= 1:
        return None
    return f"an empty row is not one {fmt.name} row (at least one element)"


def geometry_problem(fmt, nums) -> str:
    """The message of a failed row-geometry guard (``nums``: grouped ``(packed, scales, k)``,
    else the lengths of the row operands)."""
    if family(fmt) == "grouped":
        return row_mismatch(nums[0], nums[1], fmt, nums[2])
    return row_problem(fmt, nums)


def decode_values(fmt, values) -> np.ndarray:
    """The oracle of ``decode`` of any format: ``values`` are the operands' arrays (rows
    1-D, scalars 0-d) of a row whose geometry fits. The registry's own decode defines
    every value (codes are not validated: an FP8 NaN word decodes to NaN, an NVFP4 code
    byte's high four bits are ignored)."""
    from ninfer_ir.formats.fp8_row import RowScaledCodes
    from ninfer_ir.formats.nvfp4 import Nvfp4Codes
    fam = family(fmt)
    if fam == "grouped":
        return decode_row(values[0], values[1], fmt, int(values[2]))
    if fam in ("gguf", "direct"):
        return fmt.decode(np.asarray(values[0]))
    if fam == "fp8_row":
        codes, scale = values
        scale = np.asarray(scale).reshape(1).astype(fmt.row_scale.dtype)
        return fmt.decode(RowScaledCodes(fmt, np.asarray(codes)[None], scale), check=False)[0]
    codes, scales, divisor = values
    enc = Nvfp4Codes(fmt, (np.asarray(codes) & np.uint8(15))[None], np.asarray(scales)[None],
                     np.asarray(divisor, dtype=np.float32).reshape(1))
    return fmt.decode(enc, check=False)[0]


def values_problem(fmt, values) -> str | None:
    """Why operand arrays ``values`` (of the right dtypes and ranks) are not one row of
    ``fmt``, or None when they are (the interpreter's run-time check)."""
    if family(fmt) == "grouped":
        return check_row(values[0], values[1], fmt, values[2])
    sizes = [np.shape(v)[0] for v, op in zip(values, signature(fmt)) if op.kind == "row"]
    return row_problem(fmt, sizes)
