"""What every registered numeric format shares: the closed frozen record, its
category, the registry's error type and a few array checks.

A format object is created only by this package (a private token guards the
constructor), cannot be changed after creation, pickles and copies as itself,
and prints as its canonical name.
"""
from __future__ import annotations

import inspect
from enum import Enum
from types import MappingProxyType
from typing import Any, Callable, Mapping

import numpy as np

from ..errors import DomainError, FormatError, NinferError  # noqa: F401  (FormatError re-exported)


class Category(str, Enum):
    """The five categories of the persistent numeric formats."""
    DIRECT = "direct scalar"
    GROUPED = "grouped signed integer"
    BLOCK_SCALED = "block-scaled floating point"
    ROW_SCALED = "row-scaled floating point"
    GGUF_BLOCK = "gguf block"

    def __str__(self) -> str:
        return self.value


_TOKEN = object()
Method = Callable[..., Any]


class Format:
    """Base class of every numeric format record; see the module docstring."""

    __slots__ = ("name", "category", "bits_per_weight", "code", "scale", "code_interval",
                 "_methods", "_refusals", "__weakref__")

    def __init__(self, *, _token=None, methods: Mapping[str, Method] = (),
                 refusals: Mapping[str, str] = (), **fields):
        if _token is not _TOKEN:
            raise TypeError("numeric formats form a closed set; look one up with "
                            "ninfer_ir.formats.get(name) instead of constructing it")
        object.__setattr__(self, "_methods", MappingProxyType(dict(methods)))
        object.__setattr__(self, "_refusals", MappingProxyType(dict(refusals)))
        for key, value in fields.items():
            object.__setattr__(self, key, value)

    def __setattr__(self, key, value):
        raise AttributeError(f"numeric format {self.name!r} is immutable")

    def __delattr__(self, key):
        raise AttributeError(f"numeric format {self.name!r} is immutable")

    def __reduce__(self):
        from .registry import get
        return (get, (self.name,))

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"formats.get({self.name!r})"

    @property
    def methods(self) -> tuple[str, ...]:
        """Names of the conversion methods that can produce this format."""
        return tuple(self._methods)

    def encode(self, source, *, method: str, **options):
        """Produce this format's words from ``source`` with the named conversion method."""
        if isinstance(method, str) and method in self._refusals:
            raise FormatError(f"{self.name}: {method} refuses this target; "
                              f"{self._refusals[method]}")
        if not isinstance(method, str) or method not in self._methods:
            raise FormatError(f"{self.name}: unknown conversion method {method!r}; "
                              f"this format accepts {', '.join(self._methods)}")
        convert = self._methods[method]
        try:
            inspect.signature(convert).bind(self, source, **options)
        except TypeError as exc:
            raise FormatError(f"{self.name}: {method} options: {exc}") from None
        return convert(self, source, **options)


def frozen(a: np.ndarray) -> np.ndarray:
    """A read-only view of ``a`` (no copy)."""
    view = a.view()
    view.flags.writeable = False
    return view


def owned(a: np.ndarray, dtype) -> np.ndarray:
    """A read-only, C-contiguous private copy of ``a`` as ``dtype`` words."""
    copy = np.array(a, dtype=dtype, copy=True, order="C")
    copy.flags.writeable = False
    return copy


def as_array(fmt_name: str, what: str, obj) -> np.ndarray:
    """``np.asarray(obj)``, with a :class:`FormatError` for what is no array (a ragged
    sequence, an object numpy cannot convert)."""
    try:
        a = np.asarray(obj)
    except (ValueError, TypeError) as e:
        raise FormatError(f"{fmt_name}: {what} must be an array, got {type(obj).__name__} "
                          f"({e})") from None
    return a


def require_dtype(fmt_name: str, what: str, a: np.ndarray, dtype) -> None:
    if a.dtype != np.dtype(dtype):
        raise FormatError(f"{fmt_name}: {what} must have dtype {np.dtype(dtype)}, got {a.dtype}")


def first_index(mask: np.ndarray) -> tuple[int, ...]:
    """Coordinates of the first True element of ``mask`` (which has one)."""
    return tuple(int(i) for i in np.unravel_index(int(np.argmax(mask)), mask.shape))


def words16(fmt_name: str, what: str, a, float_dtype_name: str) -> np.ndarray:
    """Accept 16-bit words either as ``uint16`` or as the named 16-bit float
    dtype (``float16``, or ``bfloat16`` from ml_dtypes); return ``uint16`` words."""
    a = as_array(fmt_name, what, a)
    if a.dtype == np.uint16:
        return a
    if a.dtype.name == float_dtype_name and a.dtype.itemsize == 2:
        return np.ascontiguousarray(a).view(np.uint16)
    raise FormatError(f"{fmt_name}: {what} must be {float_dtype_name} values or their uint16 "
                      f"words, got {a.dtype}")


def finite_f32(fmt_name: str, source) -> np.ndarray:
    """A floating-point source as binary32 (round to nearest even); every value must
    stay finite, otherwise :class:`DomainError` names the first offender."""
    a = as_array(fmt_name, "the source", source)
    if a.dtype.kind != "f" and a.dtype.name != "bfloat16":
        raise FormatError(f"{fmt_name}: expected a floating-point source, got {a.dtype}")
    if a.ndim < 1 or a.size == 0:
        raise FormatError(f"{fmt_name}: the source needs a shape [..., K] with every "
                          f"dimension positive, got {a.shape}")
    with np.errstate(over="ignore", invalid="ignore"):
        values = a.astype(np.float32)
    bad = ~np.isfinite(values)
    if bad.any():
        at = first_index(bad)
        raise DomainError(f"{fmt_name}: source value {a[at]!r} at {at} is not a finite binary32",
                          record=at[0])
    return values
