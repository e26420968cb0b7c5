"""``Dense``: the contents of a constant tensor (the ``value`` of ``constant_tensor``).

A ``Dense`` holds a read-only, C-contiguous, little-endian numpy array of one IR dtype
(``bf16`` as its 16-bit words) and its textual form::

    dense<f32[4] [1.0, -0.0, inf, nan]>         small: every element in decimal
    dense<u8[2,2] [[1, 2], [3, 4]]>              nested lists follow the shape
    dense<f32[] 1.5>                             rank 0: one element
    dense<f32[300] "0000803f...">                the little-endian bytes in hex

The decimal form is printed when the tensor has at most ``DECIMAL_LIMIT`` elements
and every element reads back to the same bits (a NaN other than the canonical quiet
NaN, or any ``bf16`` data, is printed in hex); otherwise hex. Either form is exact,
so the printed text (which keys the compile caches) is the data bit for bit.

A constant holds at most ``MAX_BYTES`` bytes: the data is emitted into the generated
code (an LLVM global, a C array), so larger data belongs in a kernel argument.
"""
from __future__ import annotations

import hashlib

import numpy as np

from .types import ScalarType, bf16, bool_, from_numpy

__all__ = ["Dense", "DenseError", "MAX_BYTES", "DECIMAL_LIMIT", "dtype_of_array"]

#: the largest constant tensor, in bytes (1 MiB)
MAX_BYTES = 1 << 20
#: tensors with at most this many elements print in decimal (when exact)
DECIMAL_LIMIT = 256


class DenseError(ValueError):
    """Data that cannot be a constant tensor (the message says why)."""


def dtype_of_array(dt: np.dtype) -> ScalarType:
    """The IR dtype of a numpy dtype a constant tensor may hold, else ``DenseError``."""
    dt = np.dtype(dt)
    if dt.name == "bfloat16":                      # ml_dtypes.bfloat16
        return bf16
    if dt.fields is None and dt.kind in "biuf" and dt.byteorder in ("=", "<", ">", "|"):
        t = from_numpy(dt.newbyteorder("="))
        if t is not None:
            return t
    raise DenseError(f"numpy dtype {dt} cannot be a constant tensor; the dtypes are "
                     f"bool, int8-64, uint8-64, float16, float32, float64 and "
                     f"ml_dtypes.bfloat16")


def _storage(t: ScalarType) -> np.dtype:
    return np.dtype(t.np_dtype).newbyteorder("<")


class Dense:
    """Immutable constant-tensor data; compares and hashes by dtype, shape and bits."""

    __slots__ = ("dtype", "array", "_text", "_key")

    def __init__(self, dtype: ScalarType, array: np.ndarray):
        store = _storage(dtype)
        arr = np.array(array, dtype=store, order="C", copy=True)
        if arr.nbytes > MAX_BYTES:
            raise DenseError(f"{arr.nbytes} bytes is more than a constant tensor holds "
                             f"({MAX_BYTES} bytes, 1 MiB); pass larger data as an argument")
        arr.flags.writeable = False
        self.dtype, self.array = dtype, arr
        self._text = None
        self._key = None

    # -- construction ------------------------------------------------------------------
    @classmethod
    def from_array(cls, obj) -> "Dense":
        """A copy of the numpy array ``obj`` (any layout, any byte order)."""
        if not isinstance(obj, np.ndarray):
            raise DenseError(f"expected a numpy array, got {type(obj).__name__}")
        t = dtype_of_array(obj.dtype)
        if obj.nbytes > MAX_BYTES:
            raise DenseError(f"the array has {obj.nbytes} bytes, more than a constant "
                             f"tensor holds ({MAX_BYTES} bytes, 1 MiB); pass it as an "
                             f"argument instead")
        if t is bf16:
            obj = obj.view(np.uint16)
        return cls(t, obj)

    @classmethod
    def from_hex(cls, dtype: ScalarType, shape, text: str) -> "Dense":
        n = int(np.prod(shape, dtype=np.int64)) * _storage(dtype).itemsize
        if n > MAX_BYTES:
            raise DenseError(f"{n} bytes is more than a constant tensor holds "
                             f"({MAX_BYTES} bytes, 1 MiB)")
        if len(text) != 2 * n:
            raise DenseError(f"{dtype}[{','.join(map(str, shape))}] needs {2 * n} hex digits "
                             f"({n} bytes), got {len(text)}")
        try:
            raw = bytes.fromhex(text)
        except ValueError:
            raise DenseError("the data string must hold hex digits only") from None
        if dtype is bool_ and any(b > 1 for b in raw):
            raise DenseError("bool data bytes must be 00 or 01")
        return cls(dtype, np.frombuffer(raw, dtype=_storage(dtype)).reshape(shape))

    @classmethod
    def from_values(cls, dtype: ScalarType, shape, values) -> "Dense":
        """From nested lists of Python numbers (the decimal form), checked against
        ``shape`` and ``dtype``."""
        if dtype is bf16:
            raise DenseError("bf16 data is written in hex")
        flat: list = []
        _flatten(values, tuple(shape), flat)
        n = int(np.prod(shape, dtype=np.int64)) * _storage(dtype).itemsize
        if n > MAX_BYTES:
            raise DenseError(f"{n} bytes is more than a constant tensor holds "
                             f"({MAX_BYTES} bytes, 1 MiB)")
        return cls(dtype, np.array([_element(dtype, v) for v in flat],
                                   dtype=_storage(dtype)).reshape(shape))

    # -- properties ------------------------------------------------------------------
    @property
    def shape(self) -> tuple:
        return self.array.shape

    @property
    def nbytes(self) -> int:
        return self.array.nbytes

    def tobytes(self) -> bytes:
        return self.array.tobytes()

    def digest(self) -> str:
        """sha256 of dtype, shape and bytes (hex): names the data in generated code."""
        if self._key is None:
            h = hashlib.sha256(f"{self.dtype}{list(self.shape)}".encode())
            h.update(self.tobytes())
            self._key = h.hexdigest()
        return self._key

    def __eq__(self, other):
        if not isinstance(other, Dense):
            return NotImplemented
        return self.dtype is other.dtype and self.shape == other.shape \
            and self.digest() == other.digest()

    def __hash__(self):
        return hash(self.digest())

    def __repr__(self):
        return f"<Dense {self.dtype}{list(self.shape)}>"

    # -- text ------------------------------------------------------------------------
    def text(self) -> str:
        """``dense<f32[4] [...]>`` or ``dense<f32[4] "hex">`` (exact either way)."""
        if self._text is None:
            head = f"{self.dtype}[{','.join(map(str, self.shape))}]"
            body = self._decimal() if self.array.size <= DECIMAL_LIMIT else None
            if body is None:
                body = '"' + self.tobytes().hex() + '"'
            self._text = f"dense<{head} {body}>"
        return self._text

    def _decimal(self):
        if self.dtype is bf16:
            return None
        words = [_word(self.dtype, x) for x in self.array.reshape(-1)]
        if any(w is None for w in words):
            return None
        if not self.shape:
            return words[0]
        return _nest(words, self.shape)


def _flatten(v, shape, out):
    if not shape:
        if isinstance(v, list):
            raise DenseError("the data nests deeper than the shape")
        out.append(v)
        return
    if not isinstance(v, list) or len(v) != shape[0]:
        got = f"{len(v)} items" if isinstance(v, list) else "one value"
        raise DenseError(f"the data does not match the shape: expected a list of "
                         f"{shape[0]} items, got {got}")
    for x in v:
        _flatten(x, shape[1:], out)


def _element(t: ScalarType, v):
    if t is bool_:
        if not isinstance(v, bool):
            raise DenseError(f"bool data needs true or false, got {v!r}")
        return v
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise DenseError(f"{t} data needs numbers, got {v!r}")
    if t.is_float:
        if isinstance(v, int) and abs(v) >= 1 << 53:
            raise DenseError(f"the integer {v} is not exact in {t} data; write it as a float")
        return float(v)
    if not isinstance(v, int):
        raise DenseError(f"{t} data needs integers, got {v!r}")
    info = np.iinfo(t.np_dtype)
    if not info.min <= v <= info.max:
        raise DenseError(f"{v} does not fit {t}")
    return v


def _word(t: ScalarType, x):
    """The decimal text of one element, or None when no decimal reads back exactly."""
    if t is bool_:
        return "true" if x else "false"
    if not t.is_float:
        return str(int(x))
    bits = np.dtype(f"u{t.bits // 8}")
    want = x.view(bits)
    for s in (str(x), repr(float(x))):
        if s in ("inf", "-inf", "nan") or _is_number(s):
            back = np.array(float(s), dtype=t.np_dtype).view(bits)
            if back == want:
                return s
    return None


def _is_number(s: str) -> bool:
    body = s[1:] if s.startswith("-") else s
    return body[:1].isdigit() and ("." in body or "e" in body)


def _nest(words, shape):
    if len(shape) == 1:
        return "[" + ", ".join(words) + "]"
    step = len(words) // shape[0] if shape[0] else 0
    return "[" + ", ".join(_nest(words[k * step:(k + 1) * step], shape[1:])
                           for k in range(shape[0])) + "]"
