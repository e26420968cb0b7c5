"""SSA core: values with use lists, operations, blocks, regions, functions, modules.

Values compare by identity and carry a ``name_hint`` that the printer follows.
Only structured control flow: an op owns regions, a region holds one block, a
block holds a plain list of ops and its arguments.
"""
from __future__ import annotations

from typing import Iterator

from .errors import VerifyError
from .types import Type


class Use:
    __slots__ = ("op", "index")

    def __init__(self, op: "Operation", index: int):
        self.op = op
        self.index = index


class Value:
    __slots__ = ("type", "name_hint", "uses")

    def __init__(self, type: Type, name_hint: str | None = None):
        self.type = type
        self.name_hint = name_hint
        self.uses: list[Use] = []

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self is other

    def replace_all_uses_with(self, new: "Value") -> None:
        for use in list(self.uses):
            use.op.set_operand(use.index, new)

    @property
    def owner(self):
        raise NotImplementedError


class OpResult(Value):
    __slots__ = ("op", "index")

    def __init__(self, type, op, index, name_hint=None):
        super().__init__(type, name_hint)
        self.op = op
        self.index = index

    @property
    def owner(self):
        return self.op

    def __repr__(self):
        return f"<OpResult {self.name_hint or ''}#{self.index} of {self.op.name}>"


class BlockArgument(Value):
    __slots__ = ("block", "index")

    def __init__(self, type, block, index, name_hint=None):
        super().__init__(type, name_hint)
        self.block = block
        self.index = index

    @property
    def owner(self):
        return self.block

    def __repr__(self):
        return f"<BlockArgument {self.name_hint or ''}#{self.index}>"


class Block:
    def __init__(self, arg_types=(), arg_names=None):
        names = list(arg_names) if arg_names is not None else [None] * len(arg_types)
        self.args: list[BlockArgument] = [BlockArgument(t, self, i, n)
                                          for i, (t, n) in enumerate(zip(arg_types, names))]
        self.ops: list[Operation] = []
        self.parent: Region | None = None

    def add_arg(self, type, name_hint=None) -> BlockArgument:
        a = BlockArgument(type, self, len(self.args), name_hint)
        self.args.append(a)
        return a

    def append(self, op: "Operation") -> "Operation":
        return self.insert(len(self.ops), op)

    def insert(self, index: int, op: "Operation") -> "Operation":
        if op.parent is not None:
            raise VerifyError("op already belongs to a block", op)
        op.parent = self
        self.ops.insert(index, op)
        return op

    def remove(self, op: "Operation") -> None:
        self.ops.remove(op)
        op.parent = None

    @property
    def parent_op(self):
        return self.parent.parent if self.parent is not None else None

    @property
    def terminator(self):
        return self.ops[-1] if self.ops else None


class Region:
    def __init__(self, blocks=()):
        self.blocks: list[Block] = []
        self.parent: Operation | None = None
        for b in blocks:
            self.add_block(b)

    def add_block(self, block: Block) -> Block:
        block.parent = self
        self.blocks.append(block)
        return block

    @property
    def block(self) -> Block:
        return self.blocks[0]


class Operation:
    """Generic operation. Subclasses set ``name`` and implement ``verify_``."""

    name: str = "<op>"
    #: True for ops with no side effect (may be CSE'd, hoisted, removed if unused)
    pure: bool = True
    #: True for ops that end a block
    terminator: bool = False
    #: False where infer_types() may be less precise than the declared result types
    exact_inference: bool = True
    #: (file, line, col) of the source the frontend built the op from, when recorded
    #: (loops); not part of the textual IR, kept by ``clone_op``
    loc: tuple | None = None
    #: the pass that removes the op before any emitter sees it (the emitters' tables of
    #: ops they never lower are derived from it), or None
    legalized_by: str | None = None

    def __init__(self, operands=(), result_types=(), attrs=None, regions=(),
                 result_names=None):
        self.operands: list[Value] = []
        self.attrs: dict = dict(attrs or {})
        self.parent: Block | None = None
        names = list(result_names) if result_names is not None else [None] * len(result_types)
        self.results: list[OpResult] = [OpResult(t, self, i, n)
                                        for i, (t, n) in enumerate(zip(result_types, names))]
        self.regions: list[Region] = []
        for v in operands:
            self._add_operand(v)
        for r in regions:
            self.add_region(r)

    # -- operands --------------------------------------------------------
    def _add_operand(self, v: Value) -> None:
        if not isinstance(v, Value):
            raise VerifyError(f"operand {len(self.operands)} is not an SSA value: {v!r}")
        v.uses.append(Use(self, len(self.operands)))
        self.operands.append(v)

    def set_operand(self, i: int, v: Value) -> None:
        old = self.operands[i]
        old.uses = [u for u in old.uses if not (u.op is self and u.index == i)]
        self.operands[i] = v
        v.uses.append(Use(self, i))

    def set_operands(self, values) -> None:
        self.drop_operands()
        for v in values:
            self._add_operand(v)

    def drop_operands(self) -> None:
        for i, v in enumerate(self.operands):
            v.uses = [u for u in v.uses if not (u.op is self and u.index == i)]
        self.operands = []

    def add_region(self, region: Region) -> Region:
        region.parent = self
        self.regions.append(region)
        return region

    # -- convenience -----------------------------------------------------
    @property
    def result(self) -> OpResult:
        if len(self.results) != 1:
            raise VerifyError(f"op has {len(self.results)} results, not one", self)
        return self.results[0]

    @property
    def parent_op(self):
        return self.parent.parent_op if self.parent is not None else None

    def erase(self) -> None:
        """Remove from its block; results must be unused."""
        for r in self.results:
            if r.uses:
                raise VerifyError(f"cannot erase: result {r.index} still has uses", self)
        for region in self.regions:
            for block in region.blocks:
                for op in list(reversed(block.ops)):
                    op.drop_all_references()
        self.drop_operands()
        if self.parent is not None:
            self.parent.remove(self)

    def drop_all_references(self) -> None:
        self.drop_operands()
        for region in self.regions:
            for block in region.blocks:
                for op in block.ops:
                    op.drop_all_references()

    def walk(self) -> Iterator["Operation"]:
        """Pre-order walk over this op and every op nested in its regions."""
        yield self
        for region in self.regions:
            for block in region.blocks:
                for op in list(block.ops):
                    yield from op.walk()

    def is_ancestor_of(self, other: "Operation") -> bool:
        p = other
        while p is not None:
            if p is self:
                return True
            p = p.parent_op
        return False

    # -- typing and verification ------------------------------------------
    def infer_types(self):
        """Result types implied by operands and attributes, or None to skip the check."""
        return None

    def verify_(self) -> None:
        """Op-specific checks; raise VerifyError."""

    def error(self, message: str) -> VerifyError:
        return VerifyError(message, self)

    # -- memory effects (the op itself, nested regions not counted) ---------------
    def memory_reads(self) -> list:
        """Operands whose elements this op reads; by default all of them."""
        return list(self.operands)

    def memory_writes(self) -> list:
        """Operands whose elements this op writes (or frees); by default none."""
        return []

    def __repr__(self):
        return f"<{self.name} op>"


class FuncOp(Operation):
    """A function: a symbol name, parameters (the entry block's arguments) and results."""

    name = "func"
    pure = False

    def __init__(self, sym_name: str, arg_types=(), result_types=(), arg_names=None,
                 attrs=None):
        super().__init__((), (), attrs, (Region([Block(arg_types, arg_names)]),))
        self.sym_name = sym_name
        self.result_types = list(result_types)

    @property
    def body(self) -> Block:
        return self.regions[0].block

    @property
    def args(self):
        return self.body.args

    @property
    def arg_types(self):
        return [a.type for a in self.body.args]


class Module:
    def __init__(self, funcs=()):
        self.funcs: list[FuncOp] = list(funcs)

    def add(self, func: FuncOp) -> FuncOp:
        self.funcs.append(func)
        return func

    def get(self, name: str) -> FuncOp:
        for f in self.funcs:
            if f.sym_name == name:
                return f
        raise KeyError(name)

    def walk(self) -> Iterator[Operation]:
        for f in self.funcs:
            yield from f.walk()

    def __str__(self):
        from .printer import print_module
        return print_module(self)

    def verify(self) -> "Module":
        from .verifier import verify
        verify(self)
        return self

    def clone(self) -> "Module":
        return Module([clone_op(f, {}) for f in self.funcs])


def clone_op(op: Operation, mapping: dict) -> Operation:
    """Deep copy of ``op`` and its regions; ``mapping`` maps old values to new ones
    (operands defined outside ``op`` and absent from it are kept as they are)."""
    new = object.__new__(type(op))
    Operation.__init__(new, [mapping.get(v, v) for v in op.operands],
                       [r.type for r in op.results], dict(op.attrs), (),
                       [r.name_hint for r in op.results])
    for k, v in op.__dict__.items():
        if k not in new.__dict__:
            new.__dict__[k] = list(v) if isinstance(v, list) else v
    for old_r, new_r in zip(op.results, new.results):
        mapping[old_r] = new_r
    for region in op.regions:
        new_region = Region()
        for block in region.blocks:
            nb = Block([a.type for a in block.args], [a.name_hint for a in block.args])
            for a, b in zip(block.args, nb.args):
                mapping[a] = b
            for inner in block.ops:
                nb.append(clone_op(inner, mapping))
            new_region.add_block(nb)
        new.add_region(new_region)
    return new
