"""The closed table of storage layouts registered beside the numeric formats.

A layout maps a format's logical words (or codes and scales) to bytes. The
table names every layout the reference registers and the formats it serves;
a format/layout pair outside it is refused, and so is a registered layout
whose byte rules are not public, until they are defined here:

====================================  =====================================  ==========
layout                                formats                                byte rules
====================================  =====================================  ==========
``contiguous_le_v1``                  ``bf16``, ``fp32``, ``int32``          defined
``row_split_k128_v1``                 the six grouped formats                not defined
``block_scale_k16_m128x4_v1``         ``nvfp4``                              scale plane
``row_scale_v1``                      ``fp8_e4m3fn_row_bf16``                not defined
``row_interleaved_v1``                ``fp8_e4m3fn_row_fp16``                not defined
====================================  =====================================  ==========

``contiguous_le_v1``: the words of a direct tensor in row-major (C) order of its
logical coordinates, each word little-endian, no padding.

``block_scale_k16_m128x4_v1``: the E4M3FN block-scale plane ``[N, K/16]`` of an
``nvfp4`` matrix in NVIDIA's 128x4 tiling of 1D block-scaling factors (cuBLASLt's
"1D block scaling factors layout", CUTLASS's ``SfKMajorAtom``). Rows are padded to
a multiple of 128 and scale columns to a multiple of 4; each 128x4 tile is 512
contiguous bytes, tiles in row-major order over (row tile, column tile), and
inside a tile scale ``(r, c)`` sits at ``(r % 32) * 16 + (r // 32) * 4 + c``.
Padding bytes are 0x00 (written so, refused otherwise on reading). The packing
of the E2M1 code plane and the placement of the divisors are not public rules
and are not defined here.
"""
from __future__ import annotations

from types import MappingProxyType

import numpy as np

from ..errors import DomainError
from ._base import _TOKEN, Format, FormatError, array_arg, first_index, int_arg, require_dtype
from .direct import DirectWords
from .nvfp4 import GROUP

TILE_ROWS, TILE_COLS = 128, 4
TILE_BYTES = TILE_ROWS * TILE_COLS
_SUB_ROWS = 32                      # a tile is 4 row groups of 32 rows, interleaved


class Layout:
    """One registered storage layout (closed record)."""

    __slots__ = ("name", "format_names", "defined", "rule")

    def __init__(self, name: str, format_names: tuple[str, ...], rule: str | None, *,
                 _token=None):
        if _token is not _TOKEN:
            raise TypeError("storage layouts form a closed set; look one up with "
                            "ninfer_ir.formats.layout(name)")
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "format_names", format_names)
        object.__setattr__(self, "defined", rule is not None)
        object.__setattr__(self, "rule", rule)

    def __setattr__(self, key, value):
        raise AttributeError(f"storage layout {self.name!r} is immutable")

    def __reduce__(self):
        return (layout, (self.name,))

    def __repr__(self) -> str:
        return f"formats.layout({self.name!r})"

    def check(self, fmt) -> Format:
        """``fmt`` (a Format or its name) if this layout is registered for it and its
        byte rules are defined; otherwise a :class:`FormatError`."""
        from .registry import get
        fmt = fmt if isinstance(fmt, Format) else get(fmt)
        if fmt.name not in self.format_names:
            raise FormatError(f"{self.name} is not a registered layout of {fmt.name}; it "
                              f"serves {', '.join(self.format_names)}")
        if not self.defined:
            raise FormatError(f"{self.name}: its byte rules (packing, padding, order) are "
                              "not defined in this registry, so it can be neither written "
                              "nor read")
        return fmt


class ContiguousLittleEndian(Layout):
    """``contiguous_le_v1``: direct words, row-major, little-endian, no padding."""

    __slots__ = ()

    def to_bytes(self, fmt, words) -> np.ndarray:
        """``uint8 [size * word bytes]`` for a DirectWords record or same-type array."""
        fmt = self.check(fmt)
        little = np.ascontiguousarray(fmt.words(words), dtype=fmt.word_dtype.newbyteorder("<"))
        return little.reshape(-1).view(np.uint8)

    def from_bytes(self, fmt, data, shape) -> DirectWords:
        """The DirectWords of logical ``shape`` stored in ``data`` (``uint8``, exactly
        the size of the shape's words)."""
        fmt = self.check(fmt)
        if not isinstance(shape, tuple):
            raise FormatError(f"{self.name}: shape must be a tuple, got {shape!r}")
        dims = tuple(int_arg(fmt.name, "a dimension", d, minimum=0) for d in shape)
        data = array_arg(fmt.name, "stored bytes", data)
        require_dtype(fmt.name, "stored bytes", data, np.uint8)
        want = int(np.prod(dims, dtype=np.int64)) * fmt.word_dtype.itemsize
        if data.ndim != 1 or data.size != want:
            raise FormatError(f"{self.name}: shape {dims} of {fmt.name} needs {want} bytes, "
                              f"got an array of shape {data.shape}")
        words = np.ascontiguousarray(data).view(fmt.word_dtype.newbyteorder("<"))
        return DirectWords(fmt, words.astype(fmt.word_dtype).reshape(dims),
                           {"layout": self.name})


class BlockScale128x4(Layout):
    """``block_scale_k16_m128x4_v1``: the NVFP4 block-scale plane in 128x4 tiles."""

    __slots__ = ()

    def padded_shape(self, n: int, k: int) -> tuple[int, int]:
        """(rows, scale columns) of the stored plane of an ``[n, k]`` matrix."""
        n = int_arg(self.name, "N", n)
        k = int_arg(self.name, "K", k)
        if k % GROUP:
            raise FormatError(f"{self.name}: K = {k} is not a multiple of {GROUP}")
        return -(-n // TILE_ROWS) * TILE_ROWS, -(-(k // GROUP) // TILE_COLS) * TILE_COLS

    def scale_offset(self, row: int, col: int, n: int, k: int) -> int:
        """Byte offset of scale ``(row, col)`` (``col`` = K index // 16) in the plane."""
        rows, cols = self.padded_shape(n, k)
        row = int_arg(self.name, "row", row, minimum=0)
        col = int_arg(self.name, "col", col, minimum=0)
        if row >= n or col >= k // GROUP:
            raise FormatError(f"{self.name}: scale ({row}, {col}) is outside [{n}, {k // GROUP}]")
        tile = row // TILE_ROWS * (cols // TILE_COLS) + col // TILE_COLS
        r = row % TILE_ROWS
        return (tile * TILE_BYTES + (r % _SUB_ROWS) * (TILE_COLS * TILE_COLS)
                + (r // _SUB_ROWS) * TILE_COLS + col % TILE_COLS)

    def scale_plane(self, fmt, encoded) -> np.ndarray:
        """The stored bytes ``uint8 [rows * cols]`` of the scale plane of ``encoded``."""
        fmt = self.check(fmt)
        enc = fmt._own(encoded)
        n, k = enc.shape
        rows, cols = self.padded_shape(n, k)
        padded = np.zeros((rows, cols), np.uint8)
        padded[:n, :k // GROUP] = enc.scales
        tiles = padded.reshape(rows // TILE_ROWS, TILE_ROWS // _SUB_ROWS, _SUB_ROWS,
                               cols // TILE_COLS, TILE_COLS)
        return np.ascontiguousarray(tiles.transpose(0, 3, 2, 1, 4)).reshape(-1)

    def scales_from_plane(self, fmt, plane, n: int, k: int) -> np.ndarray:
        """The scale words ``uint8 [n, k / 16]`` stored in ``plane``; nonzero padding is a
        :class:`DomainError`."""
        fmt = self.check(fmt)
        rows, cols = self.padded_shape(n, k)
        plane = array_arg(fmt.name, "scale plane", plane)
        require_dtype(fmt.name, "scale plane", plane, np.uint8)
        if plane.shape != (rows * cols,):
            raise FormatError(f"{self.name}: [{n}, {k}] needs a scale plane of "
                              f"{rows * cols} bytes, got shape {plane.shape}")
        tiles = plane.reshape(rows // TILE_ROWS, cols // TILE_COLS, _SUB_ROWS,
                              TILE_ROWS // _SUB_ROWS, TILE_COLS)
        padded = tiles.transpose(0, 3, 2, 1, 4).reshape(rows, cols)
        pad = np.ones((rows, cols), bool)
        pad[:n, :k // GROUP] = False
        loud = pad & (padded != 0)
        if loud.any():
            at = first_index(loud)
            raise DomainError(f"{self.name}: padding scale at {at} is 0x{int(padded[at]):02x}, "
                              "not 0x00")
        return np.ascontiguousarray(padded[:n, :k // GROUP])


_GROUPED = ("q2_g64_fp16", "q4_g64_fp16", "q5_g64_fp16", "q6_g64_fp16", "q8_g32_fp16",
            "t2_g128_fp16")
_TABLE = (
    ContiguousLittleEndian("contiguous_le_v1", ("bf16", "fp32", "int32"),
                           "row-major words, little-endian, no padding", _token=_TOKEN),
    Layout("row_split_k128_v1", _GROUPED, None, _token=_TOKEN),
    BlockScale128x4("block_scale_k16_m128x4_v1", ("nvfp4",),
                    "E4M3FN scale plane in 128x4 tiles of 512 bytes; code plane and "
                    "divisor placement not defined", _token=_TOKEN),
    Layout("row_scale_v1", ("fp8_e4m3fn_row_bf16",), None, _token=_TOKEN),
    Layout("row_interleaved_v1", ("fp8_e4m3fn_row_fp16",), None, _token=_TOKEN),
)
_BY_NAME = MappingProxyType({lay.name: lay for lay in _TABLE})


def layouts() -> tuple[str, ...]:
    """Every registered storage layout name."""
    return tuple(_BY_NAME)


def layout(name: str, fmt=None) -> Layout:
    """The layout registered under ``name``; with ``fmt`` (a format or its name), also
    check that the pair is registered and the layout's byte rules are defined."""
    if not (isinstance(name, str) and name in _BY_NAME):
        raise FormatError(f"unknown storage layout {name!r}; the closed table holds: "
                          f"{', '.join(_BY_NAME)}")
    found = _BY_NAME[name]
    if fmt is not None:
        found.check(fmt)
    return found
