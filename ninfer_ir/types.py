"""Types of the IR: scalars, tensors (read-only values) and buffers (writable memory).

Types are frozen, interned values whose ``str()`` is exactly their IR syntax:
``f32``, ``index``, ``tensor<u8[N,G,144]>``, ``buffer<f32[N]>``, ``tensor<f32[]>``.
A dimension is an ``int`` (static), a symbol name (the same name is the same size
everywhere in a function) or ``None`` (unknown, printed ``?``).
"""
from __future__ import annotations

import re

import numpy as np

_SYMBOL = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class Type:
    """Base of every IR type. Instances are interned: compare with ``is`` or ``==``."""
    __slots__ = ()


class ScalarType(Type):
    __slots__ = ("name", "kind", "bits", "np_dtype")
    _table: dict[str, "ScalarType"] = {}

    def __new__(cls, name: str, kind: str, bits: int, np_dtype):
        if name in cls._table:
            raise TypeError(f"scalar type {name!r} already exists")
        self = object.__new__(cls)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "kind", kind)        # "float" | "int" | "uint" | "bool" | "index"
        object.__setattr__(self, "bits", bits)
        object.__setattr__(self, "np_dtype", np.dtype(np_dtype))
        cls._table[name] = self
        return self

    def __setattr__(self, key, value):
        raise AttributeError("types are immutable")

    def __reduce__(self):
        return (scalar, (self.name,))

    def __str__(self):
        return self.name

    def __repr__(self):
        return f"I.{self.name}" if self.name != "bool" else "I.bool_"

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_int(self) -> bool:
        """Any integer-like scalar: signed, unsigned or index (not bool)."""
        return self.kind in ("int", "uint", "index")

    @property
    def is_signed(self) -> bool:
        return self.kind in ("int", "index", "float")


f16 = ScalarType("f16", "float", 16, np.float16)
bf16 = ScalarType("bf16", "float", 16, np.uint16)     # stored as its 16-bit word
f32 = ScalarType("f32", "float", 32, np.float32)
f64 = ScalarType("f64", "float", 64, np.float64)
i8 = ScalarType("i8", "int", 8, np.int8)
i16 = ScalarType("i16", "int", 16, np.int16)
i32 = ScalarType("i32", "int", 32, np.int32)
i64 = ScalarType("i64", "int", 64, np.int64)
u8 = ScalarType("u8", "uint", 8, np.uint8)
u16 = ScalarType("u16", "uint", 16, np.uint16)
u32 = ScalarType("u32", "uint", 32, np.uint32)
u64 = ScalarType("u64", "uint", 64, np.uint64)
bool_ = ScalarType("bool", "bool", 1, np.bool_)
index = ScalarType("index", "index", 64, np.int64)

SCALARS = dict(ScalarType._table)


def scalar(name: str) -> ScalarType:
    try:
        return SCALARS[name]
    except KeyError:
        raise ValueError(f"unknown scalar type {name!r}") from None


def from_numpy(dtype) -> ScalarType | None:
    dt = np.dtype(dtype)
    for t in (f16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64, bool_):
        if t.np_dtype == dt:
            return t
    return None


Dim = "int | str | None"


def _check_dim(d):
    if d is None:
        return None
    if isinstance(d, (bool, np.bool_)):
        raise TypeError(f"bad dimension {d!r}")
    if isinstance(d, (int, np.integer)):
        if d < 0:
            raise TypeError(f"negative dimension {d}")
        return int(d)
    if isinstance(d, str) and _SYMBOL.match(d):
        return d
    raise TypeError(f"bad dimension {d!r}: use an int, a symbol name or None")


def dim_str(d) -> str:
    return "?" if d is None else str(d)


class ShapedType(Type):
    """Common base of tensor and buffer types: a dtype and a shape."""
    __slots__ = ("dtype", "shape")
    _prefix = ""
    _interned: dict = {}

    def __new__(cls, dtype: ScalarType, shape=()):
        if not isinstance(dtype, ScalarType):
            raise TypeError(f"element type must be a scalar type, got {dtype!r}")
        shape = tuple(_check_dim(d) for d in shape)
        key = (cls, dtype, shape)
        hit = ShapedType._interned.get(key)
        if hit is not None:
            return hit
        self = object.__new__(cls)
        object.__setattr__(self, "dtype", dtype)
        object.__setattr__(self, "shape", shape)
        ShapedType._interned[key] = self
        return self

    def __setattr__(self, key, value):
        raise AttributeError("types are immutable")

    def __reduce__(self):
        return (type(self), (self.dtype, self.shape))

    @property
    def rank(self) -> int:
        return len(self.shape)

    def __str__(self):
        return f"{self._prefix}<{self.dtype}[{','.join(dim_str(d) for d in self.shape)}]>"

    __repr__ = __str__

    def with_shape(self, shape):
        return type(self)(self.dtype, shape)

    def with_dtype(self, dtype):
        return type(self)(dtype, self.shape)

    @property
    def writable(self) -> bool:
        return False


class TensorType(ShapedType):
    """A read-only n-d value (ordinary tensor semantics)."""
    __slots__ = ()
    _prefix = "tensor"


class BufferType(ShapedType):
    """Writable n-d memory; readable wherever a tensor is expected."""
    __slots__ = ()
    _prefix = "buffer"

    @property
    def writable(self) -> bool:
        return True


def is_shaped(t) -> bool:
    return isinstance(t, ShapedType)


def dims_equal(a, b) -> bool:
    """Provably equal: both static and equal, or the same symbol."""
    return a is not None and a == b
