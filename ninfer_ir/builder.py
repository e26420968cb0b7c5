"""A builder with an explicit insertion point (no implicit global builder)."""
from __future__ import annotations

from .errors import VerifyError
from .ir import Block, Operation, OpResult, Region
from .ops import OPS, ConstantOp
from .types import ScalarType


class Builder:
    def __init__(self, block: Block | None = None, index: int | None = None):
        self.block = block
        self.index = index

    # -- insertion point ----------------------------------------------------
    def at_end(self, block: Block) -> "Builder":
        self.block, self.index = block, None
        return self

    def before(self, op: Operation) -> "Builder":
        self.block, self.index = op.parent, op.parent.ops.index(op)
        return self

    def after(self, op: Operation) -> "Builder":
        self.block, self.index = op.parent, op.parent.ops.index(op) + 1
        return self

    def insert(self, op: Operation) -> Operation:
        if self.block is None:
            raise VerifyError("builder has no insertion point", op)
        if self.index is None:
            self.block.append(op)
        else:
            self.block.insert(self.index, op)
            self.index += 1
        return op

    # -- creation -----------------------------------------------------------
    def create(self, name_or_cls, operands=(), attrs=None, result_types=None,
               regions=(), names=None) -> Operation:
        """Create and insert an op; result types are inferred when not given."""
        cls = OPS[name_or_cls] if isinstance(name_or_cls, str) else name_or_cls
        op = object.__new__(cls)
        Operation.__init__(op, list(operands), [], attrs or {}, regions)
        if result_types is None:
            result_types = op.infer_types()
            if result_types is None:
                raise VerifyError(f"cannot infer the result types of '{cls.name}'", op)
        names = list(names) if names is not None else [None] * len(result_types)
        op.results = [OpResult(t, op, i, n) for i, (t, n) in
                      enumerate(zip(result_types, names))]
        return self.insert(op)

    def value(self, name_or_cls, *operands, name=None, **attrs):
        """Create a single-result op and return its result."""
        return self.create(name_or_cls, operands, attrs,
                           names=[name] if name else None).result

    def constant(self, value, type: ScalarType, name=None):
        op = object.__new__(ConstantOp)
        Operation.__init__(op, (), [type], {"value": value}, (), [name])
        return self.insert(op).result


def region_with_block(arg_types=(), arg_names=None) -> tuple[Region, Block]:
    block = Block(arg_types, arg_names)
    return Region([block]), block
