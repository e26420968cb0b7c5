"""Checks shared by the op verifiers (``ops.py``, ``ops_quant.py``)."""
from __future__ import annotations

from .ir import Operation
from .quant import QuantSchema
from .types import ScalarType, ShapedType, bf16, dims_equal, index


def shaped(op, v, what):
    if not isinstance(v.type, ShapedType):
        raise op.error(f"{what} must be a tensor or buffer, got {v.type}")
    return v.type


def scalar(op, v, what):
    if not isinstance(v.type, ScalarType):
        raise op.error(f"{what} must be a scalar, got {v.type}")
    return v.type


def index_operand(op, v, what):
    if v.type is not index:
        raise op.error(f"{what} must be of type index, got {v.type}")


def attr(op, key, kind, what):
    if key not in op.attrs:
        raise op.error(f"missing attribute '{key}'")
    val = op.attrs[key]
    if not isinstance(val, kind) or (kind is int and isinstance(val, bool)):
        raise op.error(f"attribute '{key}' must be {what}, got {describe(val)}")
    return val


def describe(val):
    if isinstance(val, QuantSchema):
        return f"the quant schema {val}"
    if is_format(val):
        return f"the format {val.name}"
    if isinstance(val, ScalarType):
        return f"the dtype {val}"
    return repr(val)


def no_bf16(op, dtype):
    if dtype is bf16:
        raise op.error("bf16 values are only cast or bitcast; cast to f32 to compute")


def is_format(val):
    from .formats import Format
    return isinstance(val, Format)


def n_operands(op, n):
    if len(op.operands) != n:
        raise op.error(f"expects {n} operand(s), got {len(op.operands)}")


def n_results(op, n):
    if len(op.results) != n:
        raise op.error(f"expects {n} result(s), got {len(op.results)}")


def shapes_compatible(a, b) -> bool:
    """Same rank and every dim provably equal."""
    return len(a) == len(b) and all(dims_equal(x, y) for x, y in zip(a, b))


def order_attr(op):
    from .sumorder import SumOrder
    val = op.attrs.get("order", "seq")
    if not isinstance(val, str):
        raise op.error(f"attribute 'order' must be a string, got {describe(val)}")
    try:
        SumOrder.parse(val)
    except ValueError as e:
        raise op.error(f"bad summation order: {e}") from None


# -- named accessors -------------------------------------------------------------------

def operand_at(k: int) -> property:
    """A read-only accessor for operand ``k`` (``lhs = operand_at(0)``)."""
    return property(lambda self: self.operands[k])


def operands_from(k: int) -> property:
    """A read-only accessor for the operands from ``k`` on (a new list)."""
    return property(lambda self: self.operands[k:])


def attribute(key: str) -> property:
    """A read-only accessor for the attribute ``key``."""
    return property(lambda self: self.attrs[key])


# -- traits shared by op classes of several files -----------------------------------

class ReadsNothing:
    """Trait: the op reads no element of its operands (shapes, views, control, stores)."""

    def memory_reads(self) -> list:
        return []


class OrderedOp:
    """Trait: the op folds a sequence in the declared ``order`` attribute (a ``SumOrder``)."""

    @property
    def order(self):
        from .sumorder import SumOrder
        return SumOrder.coerce(self.attrs.get("order", "seq"))


class WritesDest:
    """Trait: the op writes the elements of its destination buffer, operand ``dest_index``,
    and reads only its first operand."""
    dest_index = 1

    @property
    def dest(self):
        return self.operands[self.dest_index]

    def memory_reads(self) -> list:
        return self.operands[:1]

    def memory_writes(self) -> list:
        return [self.dest]


class ContractionOp(OrderedOp, Operation):
    """Family: an ordered fold over the last axis of its operand(s) (``reduce``, ``dot``,
    ``quantized_dot``); ``order`` is its ``SumOrder``."""
