"""The closed quantization-schema registry: ``I.quant.q4_k`` and ``I.quant.q8_k``.

A schema is a frozen record that holds the spec's record table as data
(record bytes, logical elements, every field's byte span, bit width and
signedness). The set is closed: there is no ``register()``, and constructing a
new schema object outside this module is refused. A schema is not a dtype.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True)
class QuantField:
    """One field of a record: ``count`` elements of ``bits`` each in ``[start, stop)``."""
    name: str
    start: int          # first byte, relative to the record
    stop: int           # one past the last byte
    count: int          # number of logical elements in the field
    bits: int           # bit width of one element
    signed: bool
    kind: str           # "float" | "int"

    @property
    def nbytes(self) -> int:
        return self.stop - self.start


_TOKEN = object()


class QuantSchema:
    """A closed, typed record format. Only this module can make one."""

    __slots__ = ("name", "record_bytes", "block_elems", "fields", "__weakref__")

    def __init__(self, name, record_bytes, block_elems, fields, *, _token=None):
        if _token is not _TOKEN:
            raise TypeError("quant schemas form a closed set (I.quant.q4_k, I.quant.q8_k); "
                            "new schemas cannot be constructed")
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "record_bytes", record_bytes)
        object.__setattr__(self, "block_elems", block_elems)
        object.__setattr__(self, "fields", MappingProxyType({f.name: f for f in fields}))

    def __setattr__(self, key, value):
        raise AttributeError("quant schemas are immutable")

    def __delattr__(self, key):
        raise AttributeError("quant schemas are immutable")

    def __reduce__(self):
        return (_lookup, (self.name,))

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __str__(self) -> str:
        return f"#{self.name}"

    def __repr__(self) -> str:
        return f"I.quant.{self.name}"

    def field(self, name: str) -> QuantField:
        return self.fields[name]


# --- the spec's record tables (spec/quantized-ops.md §2) -------------------

q4_k = QuantSchema("q4_k", 144, 256, (
    QuantField("d", 0, 2, 1, 16, True, "float"),
    QuantField("dmin", 2, 4, 1, 16, True, "float"),
    QuantField("sc", 4, 16, 8, 6, False, "int"),   # shares [4,16) with m
    QuantField("m", 4, 16, 8, 6, False, "int"),
    QuantField("q", 16, 144, 256, 4, False, "int"),
), _token=_TOKEN)

q8_k = QuantSchema("q8_k", 292, 256, (
    QuantField("ds", 0, 4, 1, 32, True, "float"),
    QuantField("q", 4, 260, 256, 8, True, "int"),
    QuantField("bsum", 260, 292, 16, 16, True, "int"),
), _token=_TOKEN)

SCHEMAS = MappingProxyType({s.name: s for s in (q4_k, q8_k)})


def _lookup(name: str) -> QuantSchema:
    return SCHEMAS[name]


class _QuantNamespace:
    """``I.quant``: read-only attribute access to the closed schema table."""

    __slots__ = ()

    def __getattr__(self, name):
        try:
            return SCHEMAS[name]
        except KeyError:
            raise AttributeError(f"I.quant has no schema {name!r}; the closed set is "
                                 f"{', '.join(SCHEMAS)}") from None

    def __setattr__(self, key, value):
        raise AttributeError("I.quant is closed: schemas cannot be added or replaced")

    def __delattr__(self, key):
        raise AttributeError("I.quant is closed")

    def __dir__(self):
        return list(SCHEMAS)

    def __iter__(self):
        return iter(SCHEMAS.values())

    def __contains__(self, item):
        return any(item is s for s in SCHEMAS.values())

    def __repr__(self):
        return f"I.quant({', '.join(SCHEMAS)})"


namespace = _QuantNamespace()
