"""Direct scalar formats: ``bf16``, ``fp32`` and ``int32``.

Every logical coordinate owns one fixed-width word and every word is valid.
The persistent representation is the unsigned word (``uint16`` or ``uint32``),
held in a :class:`DirectWords` record with its provenance.
``encode(..., method="import_encoded")`` keeps the words of a source of the same
type bit for bit (signed zeros, subnormals, NaN payloads and quiet/signalling
bits included) and refuses any source of another type. A conversion between
types is never implicit; the recipe names one of these methods:

``fp32_to_bf16_rne`` (target ``bf16``, source ``float32``)
    Round each binary32 value to BF16, nearest even. ``nonfinite`` is required:
    ``"refuse"`` raises :class:`DomainError` for an infinite or NaN source value
    and for a finite value that rounds beyond the largest BF16 (to infinity);
    ``"keep"`` maps infinities to infinities, lets overflow round to infinity,
    and maps a NaN to the high half of its binary32 word with the quiet bit
    (0x0040) set, keeping its sign and leading payload bits.

``fp32_to_int32`` (target ``int32``, source ``float32``)
    Value conversion with two required policies. ``rounding``: ``"exact"``
    (a non-integral value is a :class:`DomainError`), ``"nearest_even"`` or
    ``"toward_zero"``. ``out_of_range``: ``"refuse"`` (a rounded value outside
    ``[-2**31, 2**31 - 1]``, infinities included, is a :class:`DomainError`) or
    ``"saturate"`` (clamped to that interval). A NaN has no integer value and
    is always refused.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Callable, Mapping

import numpy as np

from ..errors import DomainError
from ._base import (Category, Format, FormatError, array_arg, choice_arg, first_index, frozen,
                    owned, record_of, require_dtype)
from ._floats import bf16_to_f32, f32_to_bf16

_BF16_QUIET = 0x0040
_INT32_LIMITS = (-(1 << 31), (1 << 31) - 1)


@dataclass(frozen=True, eq=False)
class DirectWords:
    """The logical words of one direct tensor (read-only), with their provenance."""
    format: "DirectFormat"
    words: np.ndarray
    provenance: Mapping = field(default_factory=dict)

    def __post_init__(self):
        if not isinstance(self.format, DirectFormat):
            raise FormatError(f"DirectWords needs a direct format, got {self.format!r}")
        words = array_arg(self.format.name, "words", self.words)
        require_dtype(self.format.name, "words", words, self.format.word_dtype)
        object.__setattr__(self, "words", frozen(words))
        object.__setattr__(self, "provenance", MappingProxyType(dict(self.provenance)))

    @property
    def shape(self) -> tuple[int, ...]:
        return self.words.shape


class DirectFormat(Format):
    """A direct scalar format: one logical word per element, no scale."""

    __slots__ = ("width", "word_dtype", "native_dtype_name", "_decode_words")

    def __init__(self, name: str, *, category_text: str, width: int, word_dtype,
                 native_dtype_name: str, code_interval, decode_words: Callable, _token=None,
                 methods=()):
        super().__init__(_token=_token, methods=methods, name=name, category=Category.DIRECT,
                         bits_per_weight=float(width), code=category_text, scale=None,
                         code_interval=code_interval, width=width,
                         word_dtype=np.dtype(word_dtype), native_dtype_name=native_dtype_name,
                         _decode_words=decode_words)

    def words(self, source) -> np.ndarray:
        """The logical words of ``source``: a :class:`DirectWords` of this format, or an
        array already of this type (the native dtype or the unsigned words, in either
        byte order); any other type is a :class:`FormatError`."""
        if isinstance(source, DirectWords):
            return record_of(self, "words", source, DirectWords).words
        a = array_arg(self.name, "the source", source)
        if a.dtype == self.word_dtype:
            return a
        if a.dtype.name == self.native_dtype_name and a.dtype.itemsize == self.word_dtype.itemsize:
            return np.ascontiguousarray(a).view(self.word_dtype)
        raise FormatError(f"{self.name}: no implicit conversion from {a.dtype} to {self.name}; "
                          f"pass {self.native_dtype_name} values or {self.word_dtype} words, "
                          "or convert with a method the recipe names")

    def validate(self, words) -> None:
        """Check the word type; every word of a direct format is valid."""
        self.words(words)

    def decode(self, words) -> np.ndarray:
        """The exact value of every word (``float32`` for bf16/fp32, ``int32`` for int32)."""
        return self._decode_words(self.words(words))


def import_words(fmt: DirectFormat, source) -> DirectWords:
    """``import_encoded`` for direct formats: a private, read-only copy of the words."""
    return DirectWords(fmt, owned(fmt.words(source), fmt.word_dtype))


def _fp32_source(fmt: DirectFormat, source) -> np.ndarray:
    """A binary32 source: float32 values (either byte order) or fp32 DirectWords."""
    if isinstance(source, DirectWords) and source.format.name == "fp32":
        return source.words.view(np.float32)
    a = array_arg(fmt.name, "the source", source)
    if a.dtype != np.float32:
        raise FormatError(f"{fmt.name}: this conversion reads binary32 values, got {a.dtype}")
    return a


def fp32_to_bf16_rne(fmt: DirectFormat, source, *, nonfinite: str) -> DirectWords:
    """FP32 -> BF16, round to nearest even; see the module docstring."""
    choice_arg(fmt.name, "nonfinite", nonfinite, ("refuse", "keep"))
    x = _fp32_source(fmt, source)
    bits = np.ascontiguousarray(x).view(np.uint32)
    nan = np.isnan(x)
    words = np.where(nan, (bits >> 16).astype(np.uint16) | np.uint16(_BF16_QUIET),
                     f32_to_bf16(np.where(nan, np.float32(0), x)))
    if nonfinite == "refuse":
        bad = (words & 0x7FFF) >= 0x7F80
        if bad.any():
            at = first_index(bad)
            raise DomainError(f"{fmt.name}: source value {x[at]!r} at {at} is not finite in "
                              "BF16 (nonfinite='refuse')", record=at[0] if x.ndim else None)
    return DirectWords(fmt, words.astype(np.uint16))


def fp32_to_int32(fmt: DirectFormat, source, *, rounding: str, out_of_range: str) -> DirectWords:
    """FP32 -> INT32 value conversion; see the module docstring."""
    choice_arg(fmt.name, "rounding", rounding, ("exact", "nearest_even", "toward_zero"))
    choice_arg(fmt.name, "out_of_range", out_of_range, ("refuse", "saturate"))
    x = _fp32_source(fmt, source).astype(np.float64)        # exact

    def refuse(mask, why):
        if mask.any():
            at = first_index(mask)
            raise DomainError(f"{fmt.name}: source value {x[at]!r} at {at} {why}",
                              record=at[0] if x.ndim else None)

    refuse(np.isnan(x), "is NaN, which has no int32 value")
    with np.errstate(invalid="ignore"):
        if rounding == "exact":
            refuse(np.isfinite(x) & (np.trunc(x) != x), "is not an integer (rounding='exact')")
            whole = x
        else:
            whole = np.rint(x) if rounding == "nearest_even" else np.trunc(x)
    lo, hi = _INT32_LIMITS
    if out_of_range == "refuse":
        refuse((whole < lo) | (whole > hi), "is outside the int32 range (out_of_range='refuse')")
    values = np.clip(whole, lo, hi).astype(np.int64).astype(np.int32)
    return DirectWords(fmt, values.view(np.uint32))


def decode_bf16(words: np.ndarray) -> np.ndarray:
    return bf16_to_f32(words)


def decode_fp32(words: np.ndarray) -> np.ndarray:
    return np.array(words, dtype=np.uint32, order="C").view(np.float32)


def decode_int32(words: np.ndarray) -> np.ndarray:
    return np.array(words, dtype=np.uint32, order="C").view(np.int32)
