"""Planning one function for the C-like emitter: launch units, values that cross them
(recomputed or passed through the frame), arena slots and C parameter names.

See ``plan`` for what the units, the frame and the arena are.
"""
from __future__ import annotations

import re

from ninfer_ir import ops as O
from ninfer_ir.alias import is_alloc, root
from ninfer_ir.ir import BlockArgument, FuncOp
from ninfer_ir.types import ScalarType, ShapedType, TensorType, index

from . import memory
from .plan import AllocSlot, FuncPlan, Unit

__all__ = ["build", "nest", "externals", "sanitize", "unique", "SCALAR_OPS", "RECOMPUTABLE",
           "RESERVED"]

SCALAR_OPS = tuple(sorted(O.ELEMENTWISE, key=lambda cls: cls.name))
#: ops without effects that read no memory: recomputed in every unit that uses them
RECOMPUTABLE = SCALAR_OPS + (O.ConstantOp, O.ConstantTensorOp, O.DimOp, O.SubviewOp, O.AllocOp,
                              O.DecodeOp)

RESERVED = set("""auto break case char const continue default do double else enum extern
float for goto if inline int long register restrict return short signed sizeof static
struct switch typedef union unsigned void volatile while bool true false class delete
new namespace operator private protected public template this throw try catch typename
using virtual threadIdx blockIdx blockDim gridDim warpSize min max abs fabs fmod memcpy
memset main asm""".split())


def build(e, func: FuncOp) -> FuncPlan:
    """The plan of ``func`` for emitter ``e`` (its ``mapping_of`` and ``no_lowering``)."""
    plan = FuncPlan(func)
    plan.checks = [op for op in func.walk() if isinstance(op, O.CheckOp)]
    _name_params(plan)
    for op in func.body.ops:
        if isinstance(op, O.ReturnOp):
            if op.operands:
                raise e.no_lowering(op, " with values (results are trailing output buffers "
                                        "at loop level)")
            continue
        if isinstance(op, O.ForOp) and op.parallel:
            plan.units.append(Unit("par", [op], mapping=e.mapping_of(op)))
        elif isinstance(op, O.QuantizeIntoOp):
            # a failure leaves a caller's buffer untouched, as in the interpreter: a first
            # launch checks every record, and the next one (skipped once a launch has
            # failed) writes them
            if not is_alloc(root(op.dest)):
                plan.units.append(Unit("quant", [op], mapping=e.mapping_of(op), check=True))
            plan.units.append(Unit("quant", [op], mapping=e.mapping_of(op)))
        elif plan.units and plan.units[-1].kind == "seq":
            plan.units[-1].ops.append(op)
        else:
            plan.units.append(Unit("seq", [op]))
    base = re.sub(r"[^A-Za-z0-9_]", "_", func.sym_name)
    for k, unit in enumerate(plan.units):
        unit.name = f"nk_{base}_{k}"
        for v in externals(unit.ops):
            _need(e, plan, v)
        if unit.kind == "par":
            unit.trip = ("const", 1)
            for loop in nest(unit.op):
                bounds = [memory.host_value(v) for v in (loop.lower, loop.upper, loop.step)]
                unit.trip = None if None in bounds or unit.trip is None else \
                    ("bin", "mul", index, unit.trip, ("trip", *bounds))
            unit.stride_word = _layout_word(plan)
        elif unit.kind == "quant":
            shape = memory.host_shape(unit.op.values)
            unit.trip = shape[0] if shape else None
    for k, unit in enumerate(plan.units):
        for top in unit.ops:
            for op in top.walk():
                if isinstance(op, O.AllocOp):
                    _alloc_slot(e, plan, k, op)
    return plan


def nest(op) -> list:
    """The perfectly nested parallel loops from ``op`` inward that one worker-stride loop
    over their product space can run: each inner loop is the last op of its parent's
    body, after ops without effects, with bounds defined outside ``op`` and a positive
    constant step (its trip count is known before the nest starts)."""
    chain = [op]
    while True:
        body = chain[-1].body.ops[:-1]
        inner = body[-1] if body else None
        if not (isinstance(inner, O.ForOp) and inner.parallel):
            return chain
        if not all(isinstance(o, RECOMPUTABLE) and not isinstance(o, O.AllocOp)
                   for o in body[:-1]):
            return chain
        if any(_defined_in(op, v) for v in (inner.lower, inner.upper, inner.step)):
            return chain
        step = getattr(inner.step, "op", None)
        if not (isinstance(step, O.ConstantOp) and step.attrs["value"] > 0):
            return chain
        chain.append(inner)


def _defined_in(op, v) -> bool:
    owner = v.block.parent_op if isinstance(v, BlockArgument) else v.op
    return owner is not None and op.is_ancestor_of(owner)


def _need(e, plan, v):
    """Make ``v`` available outside its unit: recomputed, or through the frame."""
    if isinstance(v, BlockArgument) or v in plan.frame:
        return
    if isinstance(v.op, RECOMPUTABLE):
        for x in v.op.operands:
            _need(e, plan, x)
        return
    if isinstance(v.type, ShapedType) and not (isinstance(v.type, TensorType)
                                               and v.type.rank == 0):
        raise e.no_lowering(v.op, " whose view is used by a later launch unit")
    plan.frame[v] = len(plan.frame)


def _layout_word(plan) -> int:
    plan.n_layout += 1
    return plan.n_layout - 1


def _alloc_slot(e, plan, unit, op):
    t = op.result.type
    dims = memory.host_shape(op.result)
    if dims is None or None in dims:
        raise e.no_lowering(op, " whose size is not computable from the arguments "
                                "(the arena is sized before the launch)")
    size = ("const", max(1, t.dtype.bits // 8))
    for d in dims:
        size = ("bin", "mul", index, size, d)
    top = op.parent is plan.func.body
    plan.allocs.append(AllocSlot(op, unit, size, _layout_word(plan), top))


def _name_params(plan):
    taken = set()
    for k, a in enumerate(plan.func.args):
        name = unique(sanitize(a.name_hint or f"arg{k}"), taken)
        t = a.type
        if isinstance(t, ScalarType):
            plan.params.append({"name": name, "kind": "scalar", "type": t})
            continue
        sizes = [unique(f"{name}_n{i}", taken) for i in range(t.rank)]
        strides = [unique(f"{name}_s{i}", taken) for i in range(t.rank)]
        plan.params.append({"name": name, "kind": "view", "type": t, "sizes": sizes,
                            "strides": strides})
    for p in plan.params:
        if p["kind"] == "view":
            for d, n in zip(p["type"].shape, p["sizes"]):
                if isinstance(d, str) and d not in plan.symbols:
                    plan.symbols[d] = (unique(f"sym_{d}", taken), n)
    plan.taken = taken


def externals(ops) -> list:
    """Values the ops use but neither define nor receive as region arguments."""
    inside, used = set(), []
    for top in ops:
        for op in top.walk():
            inside.update(op.results)
            for region in op.regions:
                for block in region.blocks:
                    inside.update(block.args)
    for top in ops:
        for op in top.walk():
            for v in op.operands:
                if v not in inside and v not in used and not (
                        isinstance(v, BlockArgument) and isinstance(v.block.parent_op, FuncOp)):
                    used.append(v)
    return used


def sanitize(hint: str) -> str:
    """A C identifier from a value's name hint, clear of keywords and ``nq_``/``nk_``."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", hint) or "v"
    if name[0].isdigit():
        name = "v" + name
    if name in RESERVED or name.startswith(("nq_", "nk_", "__")):
        name = name.lstrip("_") + "_"
        if name.startswith(("nq_", "nk_")):
            name = "v" + name
    return name


def unique(name: str, taken: set) -> str:
    cand, k = name, 0
    while cand in taken:
        k += 1
        cand = f"{name}_{k}"
    taken.add(cand)
    return cand
