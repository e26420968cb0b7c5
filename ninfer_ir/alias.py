"""Which IR values may share memory: the one alias analysis of the passes and the
backends.

A shaped value's *root* is the function parameter, ``alloc`` or ``constant_tensor`` it
is a view of. Two roots may overlap unless they are different values and one of them
is an ``alloc`` or a ``constant_tensor`` (memory of its own: fresh, or the read-only
data of the compiled code). Tensor parameters are read-only inputs that the calling convention
keeps apart from every buffer (a launcher copies a tensor argument that overlaps a
buffer argument).
"""
from __future__ import annotations

from . import ops as O
from .ir import BlockArgument, FuncOp, OpResult, Value
from .types import TensorType

__all__ = ["root", "is_alloc", "is_constant", "may_alias", "is_input"]


def root(v: Value) -> Value:
    """The parameter or alloc that a view chain starts from."""
    while isinstance(v, OpResult) and isinstance(v.op, O.SubviewOp):
        v = v.op.source
    return v


def is_alloc(v: Value) -> bool:
    """``v`` is the result of an ``alloc`` (fresh memory)."""
    return isinstance(v, OpResult) and isinstance(v.op, O.AllocOp)


def is_constant(v: Value) -> bool:
    """``v`` is the result of a ``constant_tensor`` (read-only data of its own)."""
    return isinstance(v, OpResult) and isinstance(v.op, O.ConstantTensorOp)


def may_alias(a: Value, b: Value) -> bool:
    """``a`` and ``b`` may share memory, as far as the IR shows."""
    a, b = root(a), root(b)
    if a is b:
        return True
    return not (is_alloc(a) or is_alloc(b) or is_constant(a) or is_constant(b))


def is_input(v: Value) -> bool:
    """``v`` is a tensor parameter or a constant tensor, or a view of one: read-only,
    and apart from every buffer (by the calling convention, or as data of its own)."""
    r = root(v)
    return isinstance(v.type, TensorType) and (is_constant(r) or isinstance(
        r, BlockArgument) and isinstance(r.block.parent_op, FuncOp))
