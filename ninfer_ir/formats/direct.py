"""Direct scalar formats: ``bf16``, ``fp32`` and ``int32``.

Every logical coordinate owns one fixed-width word and every word is valid.
The persistent representation is the unsigned word (``uint16`` or ``uint32``);
``encode(..., method="import_encoded")`` keeps the words of a source of the same
type bit for bit (signed zeros, subnormals, NaN payloads and quiet/signalling
bits included) and refuses any source of another type: a conversion such as
FP32 -> BF16 must be named by the recipe, it is never implicit.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ._base import Category, Format, FormatError, as_array, owned, require_dtype
from ._floats import bf16_to_f32


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
        """The logical words of ``source``: its own words if it already is this type
        (as the native dtype or as unsigned words), otherwise a :class:`FormatError`."""
        a = as_array(self.name, "the source", source)
        if a.dtype == self.word_dtype:
            return a
        if a.dtype.name == self.native_dtype_name and a.dtype.itemsize == self.word_dtype.itemsize:
            return np.ascontiguousarray(a).view(self.word_dtype)
        raise FormatError(f"{self.name}: no implicit conversion from {a.dtype} to {self.name}; "
                          f"pass {self.native_dtype_name} values or {self.word_dtype} words, "
                          "or convert with a method the recipe names")

    def validate(self, words) -> None:
        """Check the word dtype; every word of a direct format is valid."""
        require_dtype(self.name, "words", as_array(self.name, "words", words), self.word_dtype)

    def decode(self, words) -> np.ndarray:
        """The exact value of every word (``float32`` for bf16/fp32, ``int32`` for int32)."""
        return self._decode_words(self.words(words))


def import_words(fmt: DirectFormat, source) -> np.ndarray:
    """``import_encoded`` for direct formats: a private, read-only copy of the words."""
    return owned(fmt.words(source), fmt.word_dtype)


def decode_bf16(words: np.ndarray) -> np.ndarray:
    return bf16_to_f32(words)


def decode_fp32(words: np.ndarray) -> np.ndarray:
    return np.array(words, dtype=np.uint32, order="C").view(np.float32)


def decode_int32(words: np.ndarray) -> np.ndarray:
    return np.array(words, dtype=np.uint32, order="C").view(np.int32)
