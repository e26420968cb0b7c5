"""What every registered numeric format shares: the closed frozen record, its
category, the registry's error type and a few array checks.

A format object is created only by this package (a private token guards the
constructor), cannot be changed after creation, pickles and copies as itself,
and prints as its canonical name.
"""
from __future__ import annotations

import dataclasses
import hashlib
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

    def encode(self, source, *, method, **options):
        """Produce this format's words from ``source`` with a conversion method: the
        name of a built-in method, or a Python callable ``method(format, source,
        **options)`` that returns anything ``import_encoded`` of this format accepts
        (its words are then validated and copied exactly). The result records the
        method's identity and every parameter in ``.provenance``."""
        if callable(method) and not isinstance(method, str):
            identity, convert = method_identity(method), method
        elif isinstance(method, str) and method in self._refusals:
            raise FormatError(f"{self.name}: {method} refuses this target; "
                              f"{self._refusals[method]}")
        elif isinstance(method, str) and method in self._methods:
            identity, convert = method, self._methods[method]
        else:
            raise FormatError(f"{self.name}: unknown conversion method {method!r}; "
                              f"this format accepts {', '.join(self._methods)} or a "
                              "Python callable")
        recorded = {key: provenance_value(self.name, key, value)
                    for key, value in _parameters(self.name, identity, convert, self, source,
                                                  options).items()}
        result = convert(self, source, **options)
        if convert is method:
            result = self._methods["import_encoded"](self, result)
        return dataclasses.replace(result, provenance={
            "method": identity, "parameters": MappingProxyType(recorded)})


def _parameters(fmt_name, identity, convert, fmt, source, options) -> dict:
    """The options a conversion method receives, with the defaults of those not given."""
    try:
        signature = inspect.signature(convert)
    except (TypeError, ValueError):     # a callable without an inspectable signature
        return dict(options)
    try:
        signature.bind(fmt, source, **options)
    except TypeError as exc:
        raise FormatError(f"{fmt_name}: {identity} options: {exc}") from None
    parameters = dict(options)
    for i, p in enumerate(signature.parameters.values()):
        keyword = p.kind is p.KEYWORD_ONLY or (p.kind is p.POSITIONAL_OR_KEYWORD and i >= 2)
        if keyword and p.name not in parameters and p.default is not p.empty:
            parameters[p.name] = p.default
    return parameters


def method_identity(method) -> str:
    """``module.qualname`` of a callable conversion method."""
    module = getattr(method, "__module__", None) or "?"
    name = getattr(method, "__qualname__", None) or type(method).__qualname__
    return f"{module}.{name}"


def provenance_value(fmt_name: str, key: str, value):
    """A method parameter as provenance records it: numbers, strings, booleans and
    None as they are; an array (or a list/tuple of numbers) as its identity, the
    SHA-256 of its little-endian C-order bytes with its dtype and shape."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.generic) and value.dtype.kind in "biuf":
        return value.item()
    if isinstance(value, (np.ndarray, list, tuple)):
        a = array_arg(fmt_name, f"parameter {key!r}", value)
        little = np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<"))
        return MappingProxyType({"sha256": hashlib.sha256(little.tobytes()).hexdigest(),
                                 "dtype": str(a.dtype), "shape": a.shape})
    raise FormatError(f"{fmt_name}: parameter {key!r} of type {type(value).__name__} cannot "
                      "be recorded in provenance; pass numbers, strings, booleans, None or "
                      "arrays")


# -- argument checks shared by every entry point ------------------------------------
# Byte order: the registry reads arrays by value. An array whose dtype has an explicit
# non-native byte order (``>f4`` on a little-endian host) is byte-swapped to native order
# first, so its words are exactly the words it denotes; results are native-order arrays.
# Byte order of stored bytes belongs to a storage layout (see layouts.py).

def native(a: np.ndarray) -> np.ndarray:
    """``a`` in native byte order, every word unchanged (a byte swap, never a cast)."""
    if a.dtype.isnative:
        return a
    return a.byteswap().view(a.dtype.newbyteorder("="))


def array_arg(fmt_name: str, what: str, value) -> np.ndarray:
    """``value`` as a rectangular native-order numeric array, or a :class:`FormatError`
    (ragged nesting, objects, strings, booleans, complex or structured values)."""
    try:
        a = np.asarray(value)
    except (ValueError, TypeError) as exc:
        raise FormatError(f"{fmt_name}: {what} is not a rectangular numeric array "
                          f"({exc})") from None
    kind = a.dtype.kind
    if kind in "ObSUMmca" or a.dtype.names is not None or \
            (kind == "V" and a.dtype.name.startswith("void")):
        raise FormatError(f"{fmt_name}: {what} must hold numbers, got dtype {a.dtype}")
    return native(a)


def int_arg(fmt_name: str, what: str, value, minimum: int = 1) -> int:
    """A Python or numpy integer (not a bool) at least ``minimum``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) \
            or value < minimum:
        raise FormatError(f"{fmt_name}: {what} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def bool_arg(fmt_name: str, what: str, value) -> bool:
    """A Python or numpy bool; strings, integers and anything else are refused."""
    if not isinstance(value, (bool, np.bool_)):
        raise FormatError(f"{fmt_name}: {what} must be True or False, got {value!r}")
    return bool(value)


def choice_arg(fmt_name: str, what: str, value, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise FormatError(f"{fmt_name}: {what} must be one of {', '.join(choices)}, "
                          f"got {value!r}")
    return value


def record_of(fmt, what: str, value, record_type):
    """``value`` as a ``record_type`` of ``fmt`` (GroupedCodes, DirectWords, ...)."""
    if not isinstance(value, record_type):
        raise FormatError(f"{fmt.name}: expected {record_type.__name__}, got "
                          f"{type(value).__name__}")
    if value.format is not fmt:
        raise FormatError(f"{fmt.name}: these {what} belong to {value.format.name}")
    return value


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


def require_dtype(fmt_name: str, what: str, a: np.ndarray, dtype) -> None:
    if a.dtype != np.dtype(dtype):
        raise FormatError(f"{fmt_name}: {what} must have dtype {np.dtype(dtype)}, got {a.dtype}")


def first_index(mask: np.ndarray) -> tuple[int, ...]:
    """Coordinates of the first True element of ``mask`` (which has one)."""
    return tuple(int(i) for i in np.unravel_index(int(np.argmax(mask)), mask.shape))


def words16(fmt_name: str, what: str, a, float_dtype_name: str) -> np.ndarray:
    """Accept 16-bit words either as ``uint16`` or as the named 16-bit float
    dtype (``float16``, or ``bfloat16`` from ml_dtypes); return ``uint16`` words."""
    a = array_arg(fmt_name, what, a)
    if a.dtype == np.uint16:
        return a
    if a.dtype.name == float_dtype_name and a.dtype.itemsize == 2:
        return np.ascontiguousarray(a).view(np.uint16)
    raise FormatError(f"{fmt_name}: {what} must be {float_dtype_name} values or their uint16 "
                      f"words, got {a.dtype}")


def row_pick(fmt_name: str, index, *planes):
    """``plane[index]`` of each plane along the first axis; an integer keeps the axis.
    Bad or out-of-range indexes are a :class:`FormatError`."""
    if isinstance(index, (bool, np.bool_)):
        raise FormatError(f"{fmt_name}: row index must be an integer, slice or integer "
                          f"array, got {index!r}")
    if isinstance(index, (int, np.integer)):
        n = len(planes[0])
        if not -n <= index < n:
            raise FormatError(f"{fmt_name}: row {int(index)} is outside {n} rows")
        index = slice(int(index) % n, int(index) % n + 1)
    elif not isinstance(index, slice):
        index = array_arg(fmt_name, "row index", index)
        if index.dtype.kind not in "iu":
            raise FormatError(f"{fmt_name}: row index array must hold integers, got "
                              f"{index.dtype}")
    try:
        return tuple(plane[index] for plane in planes)
    except IndexError as exc:
        raise FormatError(f"{fmt_name}: bad row index: {exc}") from None


def finite_source(fmt_name: str, source) -> np.ndarray:
    """A floating-point source ``[..., K]`` in its own dtype; every value must be finite,
    otherwise :class:`DomainError` names the first offender."""
    a = array_arg(fmt_name, "the source", source)
    if a.dtype.kind != "f" and a.dtype.name != "bfloat16":
        raise FormatError(f"{fmt_name}: expected a floating-point source, got {a.dtype}")
    if a.ndim < 1 or a.size == 0:
        raise FormatError(f"{fmt_name}: the source needs a shape [..., K] with every "
                          f"dimension positive, got {a.shape}")
    bad = ~np.isfinite(a.astype(np.float64) if a.dtype.name == "bfloat16" else a)
    if bad.any():
        at = first_index(bad)
        raise DomainError(f"{fmt_name}: source value {a[at]!r} at {at} is not finite",
                          record=at[0])
    return a


def finite_f32(fmt_name: str, source) -> np.ndarray:
    """A floating-point source as binary32 (round to nearest even); every value must
    stay finite, otherwise :class:`DomainError` names the first offender."""
    a = finite_source(fmt_name, source)
    with np.errstate(over="ignore", invalid="ignore"):
        values = a.astype(np.float32)
    bad = ~np.isfinite(values)
    if bad.any():
        at = first_index(bad)
        raise DomainError(f"{fmt_name}: source value {a[at]!r} at {at} is not a finite binary32",
                          record=at[0])
    return values
