"""Row-scaled FP8 weights: ``fp8_e4m3fn_row_bf16`` and ``fp8_e4m3fn_row_fp16``.

A matrix ``[N, K]`` holds one E4M3FN code word per element (``uint8``; the NaN
words 0x7f and 0xff are invalid) and one 16-bit multiplier per row: BF16 words
(``uint16``) or IEEE binary16 (``float16``). A valid row scale is finite with
its sign bit clear (``+0`` and subnormals included); a ``+0`` row admits only
the signed-zero codes 0x00 and 0x80. The represented weight is
``binary32(e4m3fn(c[n, k]) * s32[n])``.

``fp8_row_maxabs`` rounds the source to BF16 once (a binary64 source straight to
BF16, never through binary32), then per row computes
``f32(max|x| / 448)``, rounds it to the scale type (nearest even; a positive
value that rounds to zero becomes the smallest subnormal; an infinite scale is
refused), multiplies each BF16 value by ``f32(1 / scale)`` in binary32, clamps to
``[-448, 448]`` and rounds to E4M3FN (nearest even). All-zero rows get ``+0``
codes and scale. A BF16 scale so small that its binary32 reciprocal overflows
(below ``2**-128``) is refused as well.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Callable, Mapping

import numpy as np

from ..errors import DomainError
from ._base import (Category, Format, FormatError, array_arg, bool_arg, finite_source,
                    first_index, frozen, owned, record_of, require_dtype, row_pick, words16)
from ._floats import (BF16_MIN_SUBNORMAL, E4M3FN_MAX, E4M3FN_VALUES, F16_MIN_SUBNORMAL,
                      bf16_to_f32, f32_to_bf16, f32_to_e4m3fn, f32_to_f16, rescue_zero, to_bf16)

E4M3FN_NAN_MAGNITUDE = 0x7F
HALF_SIGN = 0x8000


@dataclass(frozen=True)
class RowScale:
    """How a 16-bit row scale is stored, expanded and rounded."""
    name: str                       # "bf16" | "fp16"
    dtype: np.dtype                 # storage dtype of the scale plane
    float_dtype_name: str           # numpy dtype name accepted in place of uint16 words
    exponent_mask: int
    min_subnormal: int
    to_f32: Callable[[np.ndarray], np.ndarray]          # words -> binary32
    from_f32: Callable[[np.ndarray], np.ndarray]        # binary32 -> words, nearest even

    def words(self, scales: np.ndarray) -> np.ndarray:
        return scales.view(np.uint16)

    def store(self, words: np.ndarray) -> np.ndarray:
        return words.astype(np.uint16).view(self.dtype)


def _f16_words_to_f32(words: np.ndarray) -> np.ndarray:
    return words.view(np.float16).astype(np.float32)


def _f32_to_f16_words(values: np.ndarray) -> np.ndarray:
    return f32_to_f16(values).view(np.uint16)


BF16_ROW_SCALE = RowScale("bf16", np.dtype(np.uint16), "bfloat16", 0x7F80, BF16_MIN_SUBNORMAL,
                          bf16_to_f32, f32_to_bf16)
FP16_ROW_SCALE = RowScale("fp16", np.dtype(np.float16), "float16", 0x7C00, F16_MIN_SUBNORMAL,
                          _f16_words_to_f32, _f32_to_f16_words)


@dataclass(frozen=True, eq=False)
class RowScaledCodes:
    """E4M3FN codes and per-row multipliers of one matrix (read-only)."""
    format: "Fp8RowFormat"
    codes: np.ndarray       # uint8 [N, K]
    scales: np.ndarray      # uint16 BF16 words or float16, [N]
    provenance: Mapping = field(default_factory=dict)

    def __post_init__(self):
        fmt = self.format
        if not isinstance(fmt, Fp8RowFormat):
            raise FormatError(f"RowScaledCodes needs a row-scaled FP8 format, got {fmt!r}")
        for key in ("codes", "scales"):
            object.__setattr__(self, key, array_arg(fmt.name, key, getattr(self, key)))
        require_dtype(fmt.name, "codes", self.codes, np.uint8)
        require_dtype(fmt.name, "scales", self.scales, fmt.row_scale.dtype)
        if self.codes.ndim != 2 or min(self.codes.shape) < 1:
            raise FormatError(f"{fmt.name}: codes must be [N, K] with N, K >= 1, "
                              f"got {self.codes.shape}")
        if self.scales.shape != self.codes.shape[:1]:
            raise FormatError(f"{fmt.name}: {self.codes.shape[0]} rows need scales "
                              f"({self.codes.shape[0]},), got {self.scales.shape}")
        object.__setattr__(self, "codes", frozen(self.codes))
        object.__setattr__(self, "scales", frozen(self.scales))
        object.__setattr__(self, "provenance", MappingProxyType(dict(self.provenance)))

    @property
    def shape(self) -> tuple[int, int]:
        return self.codes.shape

    def rows(self, index) -> "RowScaledCodes":
        """Rows ``index`` (slice or integer array) of both planes."""
        if isinstance(index, tuple):
            raise FormatError(f"{self.format.name}: rows() indexes the first axis only")
        codes, scales = row_pick(self.format.name, index, self.codes, self.scales)
        return RowScaledCodes(self.format, codes, scales, self.provenance)


class Fp8RowFormat(Format):
    """A row-scaled E4M3FN weight format (closed record)."""

    __slots__ = ("row_scale",)

    def __init__(self, name: str, *, row_scale: RowScale, methods=(), refusals=(), _token=None):
        super().__init__(_token=_token, methods=methods, refusals=refusals, name=name,
                         category=Category.ROW_SCALED, bits_per_weight=8.0,
                         code="E4M3FN word, every finite word (not 0x7f, 0xff)",
                         scale=f"one {row_scale.name} multiplier per row: finite, sign clear",
                         code_interval=None, row_scale=row_scale)

    def _own(self, encoded) -> RowScaledCodes:
        return record_of(self, "codes", encoded, RowScaledCodes)

    def validate(self, encoded) -> None:
        """Raise :class:`DomainError` unless every code and row scale is valid."""
        enc = self._own(encoded)
        nan_code = (enc.codes & 0x7F) == E4M3FN_NAN_MAGNITUDE
        if nan_code.any():
            at = first_index(nan_code)
            raise DomainError(f"{self.name}: NaN code word 0x{int(enc.codes[at]):02x} at {at}",
                              record=at[0])
        words = self.row_scale.words(enc.scales)
        exponent = self.row_scale.exponent_mask
        bad = ((words & HALF_SIGN) != 0) | ((words & exponent) == exponent)
        if bad.any():
            row = first_index(bad)[0]
            raise DomainError(f"{self.name}: row {row} scale word 0x{int(words[row]):04x} is "
                              "negative or not finite", record=row)
        loud = (words == 0) & np.any((enc.codes & 0x7F) != 0, axis=1)
        if loud.any():
            row = first_index(loud)[0]
            raise DomainError(f"{self.name}: row {row} has scale +0 but nonzero codes",
                              record=row)

    def decode(self, encoded, *, check: bool = True) -> np.ndarray:
        """``float32 [N, K]``: ``binary32(e4m3fn(c) * s32)``."""
        enc = self._own(encoded)
        if bool_arg(self.name, "check", check):
            self.validate(enc)
        scale32 = self.row_scale.to_f32(self.row_scale.words(enc.scales))
        with np.errstate(over="ignore"):            # binary32 overflow is the defined value
            return np.multiply(E4M3FN_VALUES[enc.codes], scale32[:, None], dtype=np.float32)


def import_encoded(fmt: Fp8RowFormat, source) -> RowScaledCodes:
    """Copy ``(codes, scales)`` (or RowScaledCodes) exactly, after validation. Scales may
    be given as the scale type's float dtype or as uint16 words."""
    if isinstance(source, RowScaledCodes):
        source = (source.codes, source.scales)
    if not isinstance(source, tuple) or len(source) != 2:
        raise FormatError(f"{fmt.name}: import_encoded takes RowScaledCodes or a "
                          "(codes, scales) tuple")
    codes = array_arg(fmt.name, "codes", source[0])
    require_dtype(fmt.name, "codes", codes, np.uint8)
    words = words16(fmt.name, "scales", source[1], fmt.row_scale.float_dtype_name)
    enc = RowScaledCodes(fmt, owned(codes, np.uint8),
                         owned(fmt.row_scale.store(words), fmt.row_scale.dtype))
    fmt.validate(enc)
    return enc


def fp8_row_maxabs(fmt: Fp8RowFormat, source) -> RowScaledCodes:
    """The ``fp8_row_maxabs`` producer of the module docstring."""
    x = finite_source(fmt.name, source)
    if x.ndim != 2:
        raise FormatError(f"{fmt.name}: fp8_row_maxabs takes a matrix [N, K], got {x.shape}")
    x_bf16 = to_bf16(x)
    overflow = (x_bf16 & 0x7FFF) == 0x7F80
    if overflow.any():
        at = first_index(overflow)
        raise DomainError(f"{fmt.name}: source value {x[at]!r} at {at} overflows BF16",
                          record=at[0])
    values = bf16_to_f32(x_bf16)
    amax = np.max(np.abs(values), axis=1)
    raw = np.divide(amax, E4M3FN_MAX, dtype=np.float32)
    scale = fmt.row_scale
    words = rescue_zero(scale.from_f32(raw), raw, scale.min_subnormal)
    scale32 = scale.to_f32(words)
    with np.errstate(divide="ignore", over="ignore"):
        inv = np.where(amax == 0, np.float32(0), np.divide(np.float32(1), scale32,
                                                           dtype=np.float32))
    unusable = ~np.isfinite(scale32) | ~np.isfinite(inv)
    if unusable.any():
        row = first_index(unusable)[0]
        raise DomainError(f"{fmt.name}: row {row} (max |x| = {float(amax[row])!r}) needs a "
                          f"{scale.name} scale {float(raw[row])!r} that is not usable: it or "
                          "its binary32 reciprocal is infinite", record=row)
    scaled = np.clip(np.multiply(values, inv[:, None], dtype=np.float32), -E4M3FN_MAX, E4M3FN_MAX)
    codes = np.where((amax == 0)[:, None], np.uint8(0), f32_to_e4m3fn(scaled))
    return RowScaledCodes(fmt, codes.astype(np.uint8), scale.store(words))
