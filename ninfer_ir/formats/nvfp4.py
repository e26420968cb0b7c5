"""``nvfp4``: E2M1 codes, one E4M3FN scale per 16 values along K, and one FP32
weight divisor per stacked source matrix.

For a matrix ``[N, K]`` (``K`` a multiple of 16) holding ``D`` stacked sources
of ``N / D`` consecutive rows each::

    W[n, k] = binary32(binary32(e2m1(c[n, k]) * e4m3fn(s[n, k // 16])) / d[n // (N / D)])

Codes are stored one E2M1 word per ``uint8`` (0..15), scales as E4M3FN words
(``uint8``) and divisors as ``float32``. There is no built-in floating-point to
NVFP4 quantizer; ``import_encoded`` copies all three fields exactly.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

import numpy as np

from ..errors import DomainError
from ._base import (Category, Format, FormatError, array_arg, bool_arg, first_index, frozen,
                    owned, record_of, require_dtype)
from ._floats import E2M1_VALUES, E4M3FN_VALUES

GROUP = 16
E2M1_WORDS = 16
E4M3FN_LARGEST_SCALE_WORD = 0x7E     # sign bit clear, below the NaN word 0x7f
F32_INFINITY_WORD = 0x7F800000


@dataclass(frozen=True, eq=False)
class Nvfp4Codes:
    """The three fields of one NVFP4 plane (read-only)."""
    format: "Nvfp4Format"
    codes: np.ndarray       # uint8 [N, K], E2M1 words
    scales: np.ndarray      # uint8 [N, K/16], E4M3FN words
    divisors: np.ndarray    # float32 [D]
    provenance: Mapping = field(default_factory=dict)

    def __post_init__(self):
        if not isinstance(self.format, Nvfp4Format):
            raise FormatError(f"Nvfp4Codes needs the nvfp4 format, got {self.format!r}")
        name = self.format.name
        for key in ("codes", "scales", "divisors"):
            object.__setattr__(self, key, array_arg(name, key, getattr(self, key)))
        require_dtype(name, "codes", self.codes, np.uint8)
        require_dtype(name, "scales", self.scales, np.uint8)
        require_dtype(name, "divisors", self.divisors, np.float32)
        if self.codes.ndim != 2 or min(self.codes.shape) < 1 or self.codes.shape[1] % GROUP:
            raise FormatError(f"{name}: codes must be [N, K] with N, K >= 1 and K a multiple "
                              f"of {GROUP}, got {self.codes.shape}")
        n, k = self.codes.shape
        if self.scales.shape != (n, k // GROUP):
            raise FormatError(f"{name}: codes {self.codes.shape} need scales {(n, k // GROUP)}, "
                              f"got {self.scales.shape}")
        if self.divisors.ndim != 1 or len(self.divisors) < 1 or n % len(self.divisors):
            raise FormatError(f"{name}: divisors must be [D] with D >= 1 dividing N = {n}, "
                              f"got {self.divisors.shape}")
        for key in ("codes", "scales", "divisors"):
            object.__setattr__(self, key, frozen(getattr(self, key)))
        object.__setattr__(self, "provenance", MappingProxyType(dict(self.provenance)))

    @property
    def shape(self) -> tuple[int, int]:
        return self.codes.shape


class Nvfp4Format(Format):
    """The block-scaled floating-point weight format (closed record)."""

    __slots__ = ("group",)

    def __init__(self, name: str, *, methods=(), refusals=(), _token=None):
        super().__init__(_token=_token, methods=methods, refusals=refusals, name=name,
                         category=Category.BLOCK_SCALED, bits_per_weight=4 + 8 / GROUP,
                         code="E2M1 word, all 16 valid",
                         scale=f"one E4M3FN word per {GROUP} values along K (sign clear, not "
                               "NaN); one finite positive FP32 divisor per stacked source",
                         code_interval=None, group=GROUP)

    def _own(self, encoded) -> Nvfp4Codes:
        return record_of(self, "codes", encoded, Nvfp4Codes)

    def validate(self, encoded) -> None:
        """Raise :class:`DomainError` unless codes, scales and divisors are valid."""
        enc = self._own(encoded)
        checks = (
            ("code word", enc.codes, enc.codes >= E2M1_WORDS),
            ("scale word", enc.scales, enc.scales > E4M3FN_LARGEST_SCALE_WORD),
        )
        for what, words, bad in checks:
            if bad.any():
                at = first_index(bad)
                raise DomainError(f"{self.name}: invalid {what} 0x{int(words[at]):02x} at {at}",
                                  record=at[0])
        divisor_words = enc.divisors.view(np.uint32)
        bad = (divisor_words == 0) | (divisor_words >= F32_INFINITY_WORD)
        if bad.any():
            at = first_index(bad)
            raise DomainError(f"{self.name}: divisor {at[0]} = {float(enc.divisors[at])!r} is "
                              "not finite and strictly positive", record=at[0])

    def decode(self, encoded, *, check: bool = True) -> np.ndarray:
        """``float32 [N, K]`` by the reconstruction equation of the module docstring."""
        enc = self._own(encoded)
        if bool_arg(self.name, "check", check):
            self.validate(enc)
        n, k = enc.codes.shape
        product = E2M1_VALUES[enc.codes].reshape(n, k // GROUP, GROUP)
        product *= E4M3FN_VALUES[enc.scales][..., None]
        rows_per_source = n // len(enc.divisors)
        divisor = np.repeat(enc.divisors, rows_per_source)[:, None, None]
        with np.errstate(over="ignore", under="ignore"):
            return np.divide(product, divisor, dtype=np.float32).reshape(n, k)


def import_encoded(fmt: Nvfp4Format, source) -> Nvfp4Codes:
    """Copy ``(codes, scales, divisors)`` (or an Nvfp4Codes) exactly, after validation."""
    if isinstance(source, Nvfp4Codes):
        source = (source.codes, source.scales, source.divisors)
    if not isinstance(source, tuple) or len(source) != 3:
        raise FormatError(f"{fmt.name}: import_encoded takes Nvfp4Codes or a "
                          "(codes, scales, divisors) tuple")
    codes, scales, divisors = (array_arg(fmt.name, what, a) for what, a in
                               zip(("codes", "scales", "divisors"), source))
    require_dtype(fmt.name, "codes", codes, np.uint8)
    require_dtype(fmt.name, "scales", scales, np.uint8)
    require_dtype(fmt.name, "divisors", divisors, np.float32)
    enc = Nvfp4Codes(fmt, owned(codes, np.uint8), owned(scales, np.uint8),
                     owned(divisors, np.float32))
    fmt.validate(enc)
    return enc
