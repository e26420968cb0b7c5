"""Grouped signed-integer formats: Q2/Q4/Q5/Q6/Q8 and T2 with binary16 group scales.

A logical tensor ``[..., K]`` holds one signed code per element (``int8``) and
one binary16 multiplier per group of ``G`` consecutive elements along K
(``float16 [..., ceil(K/G)]``); the last group of a row may be partial. The
represented weight is ``binary32(s32 * binary32(q))``.

The packed carrier (:meth:`GroupedFormat.pack`) stores each row's ``b``-bit
logical words as a little-endian bit stream: element ``k`` occupies stream bits
``[k*b, (k+1)*b)``, stream bit ``i`` is bit ``i % 8`` of byte ``i // 8``, and the
unused high bits of the last byte are zero.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

import numpy as np

from ..errors import DomainError
from ._base import (Category, Format, FormatError, array_arg, bool_arg, first_index, frozen,
                    int_arg, record_of, require_dtype, row_pick, words16)


class TwosComplementWords:
    """``b``-bit two's complement words: ``q = u`` if ``u < 2**(b-1)`` else ``u - 2**b``."""

    def __init__(self, bits: int):
        self.bits = bits
        self.text = f"{bits}-bit two's complement"

    def to_words(self, codes: np.ndarray) -> np.ndarray:
        return codes.astype(np.uint8) & np.uint8((1 << self.bits) - 1)

    def from_words(self, words: np.ndarray) -> np.ndarray:
        sign = np.uint8(1 << (self.bits - 1))
        return ((words ^ sign) - sign).view(np.int8)           # wraps modulo 256


class OffsetWords:
    """Unsigned words ``u`` with ``q = u - offset``."""

    def __init__(self, bits: int, offset: int):
        self.bits = bits
        self.offset = offset
        self.text = f"{bits}-bit unsigned word u, q = u - {offset}"

    def to_words(self, codes: np.ndarray) -> np.ndarray:
        return (codes.astype(np.int16) + self.offset).astype(np.uint8)

    def from_words(self, words: np.ndarray) -> np.ndarray:
        return (words - np.uint8(self.offset)).view(np.int8)   # wraps modulo 256


class ZeroOnlyWithZeroCodes:
    """Scale rule of Q4/Q5/Q6/Q8/T2: ``+0`` (then every code of the group is 0) or
    a finite nonzero binary16 of either sign; ``-0``, infinities and NaN are invalid."""

    text = "one binary16 multiplier per group: +0 with all-zero codes, or finite nonzero"

    def check(self, fmt: "GroupedFormat", enc: "GroupedCodes") -> None:
        words = enc.scales.view(np.uint16)
        bad = (words == 0x8000) | ~np.isfinite(enc.scales)
        if bad.any():
            at = first_index(bad)
            raise DomainError(f"{fmt.name}: invalid scale {enc.scales[at]!r} (word "
                              f"0x{int(words[at]):04x}) for group {at}", record=at[0])
        zero = words == 0
        if zero.any():
            loud = np.any(fmt.grouped(enc.codes) != 0, axis=-1) & zero
            if loud.any():
                at = first_index(loud)
                raise DomainError(f"{fmt.name}: group {at} has scale +0 but nonzero codes",
                                  record=at[0])


class AnyFiniteScale:
    """Scale rule of Q2: every finite binary16 word, both zeros included, with any codes."""

    text = "one binary16 multiplier per group: any finite word, both signed zeros included"

    def check(self, fmt: "GroupedFormat", enc: "GroupedCodes") -> None:
        bad = ~np.isfinite(enc.scales)
        if bad.any():
            at = first_index(bad)
            raise DomainError(f"{fmt.name}: non-finite scale {enc.scales[at]!r} for group {at}",
                              record=at[0])


@dataclass(frozen=True, eq=False)
class GroupedCodes:
    """Signed codes and binary16 group scales of one grouped tensor (read-only)."""
    format: "GroupedFormat"
    codes: np.ndarray
    scales: np.ndarray
    provenance: Mapping = field(default_factory=dict)

    def __post_init__(self):
        fmt = self.format
        if not isinstance(fmt, GroupedFormat):
            raise FormatError(f"GroupedCodes needs a grouped format, got {fmt!r}")
        for key in ("codes", "scales"):
            object.__setattr__(self, key, array_arg(fmt.name, key, getattr(self, key)))
        require_dtype(fmt.name, "codes", self.codes, np.int8)
        require_dtype(fmt.name, "scales", self.scales, np.float16)
        if self.codes.ndim < 1 or self.codes.shape[-1] < 1:
            raise FormatError(f"{fmt.name}: codes need shape [..., K] with K >= 1, "
                              f"got {self.codes.shape}")
        want = fmt.scale_shape(self.codes.shape)
        if self.scales.shape != want:
            raise FormatError(f"{fmt.name}: codes {self.codes.shape} need scales {want}, "
                              f"got {self.scales.shape}")
        object.__setattr__(self, "codes", frozen(self.codes))
        object.__setattr__(self, "scales", frozen(self.scales))
        object.__setattr__(self, "provenance", MappingProxyType(dict(self.provenance)))

    @property
    def shape(self) -> tuple[int, ...]:
        """The logical shape ``[..., K]``."""
        return self.codes.shape

    def rows(self, index) -> "GroupedCodes":
        """The rows ``index`` (a slice, an integer array or a list) of the first axis;
        groups never cross rows, so this is a plain view or gather of both planes."""
        if self.codes.ndim < 2 or isinstance(index, tuple):
            raise FormatError(f"{self.format.name}: rows() indexes the first axis of a "
                              f"tensor of rank >= 2, got {index!r} for {self.codes.shape}")
        codes, scales = row_pick(self.format.name, index, self.codes, self.scales)
        return GroupedCodes(self.format, codes, scales, self.provenance)


class GroupedFormat(Format):
    """A grouped signed-integer format (closed record)."""

    __slots__ = ("bits", "group", "qmax", "word_codec", "scale_rule")

    def __init__(self, name: str, *, bits: int, group: int, code_interval: tuple[int, int],
                 word_codec, scale_rule, methods=(), refusals=(), _token=None):
        super().__init__(_token=_token, methods=methods, refusals=refusals, name=name,
                         category=Category.GROUPED, bits_per_weight=bits + 16 / group,
                         code=f"{word_codec.text}, legal codes [{code_interval[0]}, "
                              f"{code_interval[1]}]",
                         scale=f"{scale_rule.text} of {group} along K",
                         code_interval=code_interval, bits=bits, group=group,
                         qmax=code_interval[1], word_codec=word_codec, scale_rule=scale_rule)

    # -- geometry ---------------------------------------------------------------
    def scale_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """Shape of the scale tensor for a logical shape ``[..., K]``."""
        if not isinstance(shape, tuple) or not shape:
            raise FormatError(f"{self.name}: a logical shape is a non-empty tuple, got {shape!r}")
        dims = [int_arg(self.name, "a dimension", d, minimum=0) for d in shape]
        if dims[-1] < 1:
            raise FormatError(f"{self.name}: K must be positive, got shape {shape}")
        return (*dims[:-1], -(-dims[-1] // self.group))

    def packed_row_bytes(self, k: int) -> int:
        """Bytes of one packed row of ``k`` codes."""
        return -(-int_arg(self.name, "K", k) * self.bits // 8)

    def grouped(self, a) -> np.ndarray:
        """``a [..., K]`` zero-padded to whole groups and split as ``[..., groups, G]``."""
        a = array_arg(self.name, "the array", a)
        if a.ndim < 1:
            raise FormatError(f"{self.name}: expected an array [..., K], got a scalar")
        a = _padded(a, self.group)
        return a.reshape(*a.shape[:-1], a.shape[-1] // self.group, self.group)

    def _own(self, encoded) -> GroupedCodes:
        return record_of(self, "codes", encoded, GroupedCodes)

    # -- validity and decoding --------------------------------------------------
    def validate(self, encoded) -> None:
        """Raise :class:`DomainError` unless every code is legal and every scale valid."""
        enc = self._own(encoded)
        lo, hi = self.code_interval
        bad = (enc.codes < lo) | (enc.codes > hi)
        if bad.any():
            at = first_index(bad)
            raise DomainError(f"{self.name}: code {int(enc.codes[at])} at {at} is outside "
                              f"[{lo}, {hi}]", record=at[0])
        self.scale_rule.check(self, enc)

    def decode(self, encoded, *, check: bool = True) -> np.ndarray:
        """``float32 [..., K]``: ``binary32(s32 * binary32(q))`` for every element."""
        enc = self._own(encoded)
        if bool_arg(self.name, "check", check):
            self.validate(enc)
        return self.reconstruct(enc.codes, enc.scales)

    def reconstruct(self, codes, scales) -> np.ndarray:
        """The reconstruction equation alone, on codes that need not be valid (what an
        in-kernel ``decode`` computes): ``float32 [..., K]``, each ``binary32(s32 *
        binary32(q))`` for signed codes ``q [..., K]`` and binary16 ``scales [...,
        groups]``."""
        codes = np.asarray(codes)
        k = codes.shape[-1]
        values = self.grouped(codes).astype(np.float32)
        values *= np.asarray(scales, dtype=np.float16).astype(np.float32)[..., None]
        values = values.reshape(*codes.shape[:-1], -1)
        return values if values.shape[-1] == k else np.ascontiguousarray(values[..., :k])

    # -- packed carrier ---------------------------------------------------------
    def pack(self, encoded) -> tuple[np.ndarray, np.ndarray]:
        """``(packed uint8 [..., ceil(K*bits/8)], scales float16 [..., ceil(K/G)])``."""
        enc = self._own(encoded)
        self.validate(enc)
        words = self.word_codec.to_words(enc.codes)
        k = words.shape[-1]
        # a chunk of `per` words fills `size` bytes exactly: one byte for b in {2, 4, 8},
        # b bytes (eight words) for b in {5, 6}; little-endian within the chunk
        per, size = _CHUNKS[self.bits]
        dtype = np.dtype("<u8") if size > 1 else np.dtype(np.uint8)
        chunks = _padded(words, per).reshape(*words.shape[:-1], -1, per)
        stream = np.zeros(chunks.shape[:-1], dtype=dtype)
        for i in range(per):
            stream |= chunks[..., i].astype(dtype) << dtype.type(self.bits * i)
        packed = stream[..., None].view(np.uint8)[..., :size]
        packed = packed.reshape(*words.shape[:-1], -1)[..., :self.packed_row_bytes(k)]
        return np.ascontiguousarray(packed), np.array(enc.scales)

    def unpack(self, packed, scales, k: int) -> GroupedCodes:
        """Inverse of :meth:`pack` for rows of ``k`` logical codes; validates the result."""
        packed = array_arg(self.name, "packed codes", packed)
        require_dtype(self.name, "packed codes", packed, np.uint8)
        k = int_arg(self.name, "K", k)
        width = self.packed_row_bytes(k)
        if packed.ndim < 1 or packed.shape[-1] != width:
            raise FormatError(f"{self.name}: {k} codes per row pack into {width} bytes, "
                              f"got packed shape {packed.shape}")
        scales = words16(self.name, "scales", scales, "float16").view(np.float16)
        per, size = _CHUNKS[self.bits]
        chunks = _padded(packed, size).reshape(*packed.shape[:-1], -1, size)
        if size > 1:
            chunks = _padded(chunks, 8).view("<u8")           # [..., chunks, 1]
        mask = chunks.dtype.type((1 << self.bits) - 1)
        words = np.empty((*chunks.shape[:-1], per), dtype=np.uint8)
        for i in range(per):
            words[..., i] = (chunks[..., 0] >> chunks.dtype.type(self.bits * i)) & mask
        words = words.reshape(*packed.shape[:-1], -1)
        if words[..., k:].any():
            at = first_index(words[..., k:] != 0)
            raise DomainError(f"{self.name}: nonzero padding bits after code {k} in packed "
                              f"row {at[:-1]}", record=at[0] if len(at) > 1 else None)
        enc = GroupedCodes(self, self.word_codec.from_words(words[..., :k]), np.array(scales),
                           {"method": "unpack"})
        self.validate(enc)
        return enc


_CHUNKS = {2: (4, 1), 4: (2, 1), 5: (8, 5), 6: (8, 6), 8: (1, 1)}   # bits: (words, bytes)


def _padded(a: np.ndarray, multiple: int) -> np.ndarray:
    """``a`` with zeros appended along the last axis up to a multiple of ``multiple``."""
    pad = -a.shape[-1] % multiple
    if not pad:
        return a
    return np.concatenate([a, np.zeros((*a.shape[:-1], pad), a.dtype)], axis=-1)
