"""Loop-level IR -> ``llvmlite.ir.Module``: the CPU emitter.

The emitter is the table ``LOWERINGS`` (op class -> small function) plus the
structural cases below (functions, ``for``, ``if``, ``yield``/``return``). An op
with no entry, or in a form the passes remove (tensor-level elementwise ops,
``quantize``, multi-axis ``reduce``), raises ``VerifyError("no cpu lowering for
<op> ...")``.

Calling convention (one exported function per IR function ``@f``)::

    i64 @"nk.f"(i64* args, i8* par, i64* err)

- ``args`` holds 64-bit slots, parameter by parameter: a shaped parameter of rank
  r takes 1 + 2r slots (data address, r sizes, r strides); a scalar takes one
  slot holding its bits (low bits; bool is 0 or 1). Strides may have any sign and
  value. A module is emitted for one stride unit (``lower_module(strides=...)``):
  ``"element"`` (strides in elements; what numpy views almost always allow, and
  what lets LLVM vectorize unit-stride loops) or ``"byte"`` (strides in bytes: any
  byte-offset view, any odd stride).
- ``par`` is null (parallel loops then run in the calling thread) or
  ``i64 par(i8* body, i8* env, i64 n, i64* err)``, which runs the outlined
  ``i64 body(i8* env, i64 lo, i64 hi, i64* err)`` over contiguous ranges covering
  ``[0, n)`` and returns the status of the lowest failing range (0 if none); a
  range stops at its first failing iteration, so this is the status of the lowest
  failing iteration, as in the interpreter. Each range needs its own error block;
  ``par`` copies the reported range's block to ``err``.
- ``err`` points to ``i64[status.ERR_SLOTS]``: the numbers of a failed guard.
- The result is the status word (``backends/abi.py``).

Element loads and stores are ``align 1``, so no alignment is required of any view.
``alloc`` is a zeroed heap block (``calloc``), or a zeroed entry-block ``alloca``
for a static size up to ``STACK_LIMIT`` bytes; every heap block still live is
freed on every exit. Floating point is plain IEEE (no fast-math flags, so no
contraction into FMA).
"""
from __future__ import annotations

from dataclasses import dataclass

import llvmlite.ir as ir

from ninfer_ir import ops as O
from ninfer_ir.errors import VerifyError
from ninfer_ir.ir import FuncOp, Module
from ninfer_ir.ops_select import KernelCallOp
from ninfer_ir.types import ShapedType, bf16

from ninfer_ir.backends.llvm.gen import scalars as S
from ninfer_ir.backends.llvm.gen.emitter import (KERNEL_TYPE, Emitter, I8P, KernelInfo, View, from_word, i64c,
                      no_lowering, reg_value, wrap_value)
from ninfer_ir.backends.abi import REASON_CHECK

__all__ = ["Lowered", "lower_module", "emit", "LOWERINGS", "LEGALIZED_AWAY", "STRUCTURAL",
           "lowerings"]


@dataclass
class Lowered:
    llvm: ir.Module
    kernels: dict
    isa: str
    strides: str


# --- structural lowerings --------------------------------------------------------------

def _lower_for(e: Emitter, op):
    lb, ub, step = (e.value(v) for v in (op.lower, op.upper, op.step))
    inits = [e.value(v) for v in op.inits]
    e.ranges[op.body.args[0]] = (lb, ub, step)
    n = e.trip_count(op, lb, ub, step)
    if e.can_outline and not inits:
        from ninfer_ir.backends.llvm.gen.parallel import emit_parallel
        from ninfer_ir.backends.llvm.kernels.rows import selected
        rows = selected(op)
        if hasattr(rows, "emit_loop"):        # a nest that spreads itself over the pool
            rows.emit_loop(e, op, lb, step, n)
            return []
        if op.parallel or rows is not None:
            worth = rows.worth_threads(e, n) if rows is not None else None
            emit_parallel(e, op, lb, step, n, worth)
            return []
    return e.iterate(op, lb, step, i64c(0), n, inits)


def _lower_kernel_call(e: Emitter, op):
    """The loop inside; ``for`` reads the kernel it names (``rows.selected``) and emits
    the kernel's run-time conditions, the call, and the loop where they fail."""
    e.block(op.regions[0].block)


def _lower_if(e: Emitter, op):
    if op.likely and op in e.if_modes:
        return _lower_likely_then(e, op)
    b = e.b
    cond = e.value(op.cond)
    then_bb, else_bb, merge = e.new_block("then"), e.new_block("else"), e.new_block("endif")
    b.cbranch(cond, then_bb, else_bb)
    arms = []
    for region, bb in zip(op.regions, (then_bb, else_bb)):
        b.position_at_end(bb)
        term = e.block(region.block)
        arms.append(([reg_value(op, e.value(v)) for v in term.operands], b.block))
        b.branch(merge)
    b.position_at_end(merge)
    out = []
    for k, r in enumerate(op.results):
        phi = b.phi(arms[0][0][k].type)
        for vals, blk in arms:
            phi.add_incoming(vals[k], blk)
        out.append(wrap_value(r.type, phi))
    return out


def _lower_likely_then(e: Emitter, op):
    """The then arm alone: inside a block of iterations where the condition holds on
    every one (``unswitch``)."""
    term = e.block(op.then_block)
    return [e.value(v) for v in term.operands]


def _lower_check(e: Emitter, op):
    cid = e.kernel.checks.index(op)
    e.fail_if(e.b.not_(e.value(op.cond)), cid * 8 + REASON_CHECK,
              [e.value(v) for v in op.nums])


def _lower_scalar(e: Emitter, op):
    for v in op.operands:
        if isinstance(v.type, ShapedType):
            raise no_lowering(op, f" on {v.type} (tensor-level elementwise ops are "
                                  f"lowered to loops by the passes)")
    t = op.operands[-1].type if op.operands else None
    if t is bf16 and op.computes:
        raise VerifyError("bf16 values are only cast or bitcast; cast to f32 to compute", op)
    return S.SCALAR_RULES[op.name](e.b, op, [e.value(v) for v in op.operands])


def _build_table():
    from ninfer_ir.backends.llvm.gen import decoded
    from ninfer_ir.backends.llvm.gen import folds
    from ninfer_ir.backends.llvm.gen import memory
    from ninfer_ir.backends.llvm.kernels import records
    table = {cls: _lower_scalar for name, cls in O.OPS.items() if name in S.SCALAR_RULES}
    table.update({
        O.ForOp: _lower_for, O.IfOp: _lower_if, O.CheckOp: _lower_check,
        KernelCallOp: _lower_kernel_call,
        O.ConstantTensorOp: memory.lower_constant_tensor, O.DimOp: memory.lower_dim, O.SubviewOp: memory.lower_subview,
        O.LoadOp: memory.lower_load, O.StoreOp: memory.lower_store,
        O.CopyOp: memory.lower_copy, O.AllocOp: memory.lower_alloc,
        O.DeallocOp: memory.lower_dealloc,
        O.DotOp: folds.lower_dot, O.ReduceOp: folds.lower_reduce,
        O.QuantizeIntoOp: records.lower_quantize_into,
        O.QuantizedDotOp: records.lower_quantized_dot,
        O.DecodeOp: decoded.lower_decode,
    })
    return table


#: op name -> why the CPU emitter never sees it (the passes remove it)
LEGALIZED_AWAY = {cls.name: f"removed by the {cls.legalized_by} pass"
                  for cls in O.OPS.values() if cls.legalized_by}

LOWERINGS: dict = {}


def lowerings() -> dict:
    """The table ``LOWERINGS``, built on first use (its rules import the kernel modules)."""
    if not LOWERINGS:
        LOWERINGS.update(_build_table())
    return LOWERINGS

#: ops handled by the function/region structure itself, not by the table
STRUCTURAL = ("func", "return", "yield")


# --- functions and modules --------------------------------------------------------------

def slot_layout(func: FuncOp):
    slots, off = [], 0
    for a in func.args:
        n = 1 + 2 * a.type.rank if isinstance(a.type, ShapedType) else 1
        slots.append((off, n))
        off += n
    return slots, off


def _bind_params(e: Emitter, func: FuncOp, args):
    b = e.b
    for a, (off, n) in zip(func.args, e.kernel.slots):
        words = [b.load(b.gep(args, [i64c(off + k)])) for k in range(n)]
        t = a.type
        if not isinstance(t, ShapedType):
            e.bind(a, from_word(b, words[0], t))
            continue
        shape = []
        for axis, d in enumerate(t.shape):
            if isinstance(d, int):
                shape.append(i64c(d))
            elif isinstance(d, str):
                shape.append(e.symbols.setdefault(d, words[1 + axis]))
            else:
                shape.append(words[1 + axis])
        unit = 1 if e.options["strides"] == "byte" else max(1, t.dtype.bits // 8)
        e.bind(a, View(b.inttoptr(words[0], I8P), shape, words[1 + t.rank:], t.dtype, unit))


def _emit_func(module: ir.Module, func: FuncOp, options) -> KernelInfo:
    slots, n_slots = slot_layout(func)
    symbol = f"nk.{func.sym_name}"
    checks = [op for op in func.walk() if isinstance(op, O.CheckOp)]
    kernel = KernelInfo(func.sym_name, symbol, func, slots, n_slots, checks)
    fn = ir.Function(module, KERNEL_TYPE, name=symbol)
    args, par, err = fn.args
    par.name, err.name = "par", "err"
    e = Emitter(kernel, fn, err, options)
    e.par = par
    _bind_params(e, func, args)
    term = e.block(func.body)
    if term is not None and term.operands:
        raise no_lowering(term, " with values (results are trailing output buffers "
                                "at loop level)")
    e.finish()
    return kernel


def lower_module(module: Module, *, isa: str | None = None, bounds_checks: bool = True,
                 strides: str = "element") -> Lowered:
    """Emit every function of a loop-level ``module`` into one LLVM module.

    ``strides``: the unit of the strides in parameter descriptors, ``"element"``
    (every stride a whole number of elements) or ``"byte"`` (any stride)."""
    if strides not in ("element", "byte"):
        raise ValueError(f"strides must be 'element' or 'byte', got {strides!r}")
    from ninfer_ir.backends.llvm.gen.builtins import add_half_builtins
    from ninfer_ir.backends.llvm.gen.memory import mark_constant_loads
    from ninfer_ir.backends.llvm.kernels.records import add_quantized_library
    from ninfer_ir.backends.llvm.runtime.jit import host_target
    target = host_target(isa)
    isa = target.isa
    module.verify()
    llmod = ir.Module(name="ninfer")
    llmod.triple = target.triple
    options = {"bounds_checks": bounds_checks, "isa": isa, "strides": strides,
               "table": lowerings(), "legalized_away": LEGALIZED_AWAY}
    quantized = [op for op in module.walk() if isinstance(op, (O.QuantizeIntoOp, O.QuantizedDotOp))]
    if quantized:
        add_quantized_library(llmod, isa, quantized)
    kernels = {f.sym_name: _emit_func(llmod, f, options) for f in module.funcs}
    mark_constant_loads(llmod)
    add_half_builtins(llmod, isa)
    return Lowered(llmod, kernels, isa, strides)


def emit(module: Module, kind: str = "llvm", *, isa: str | None = None,
         optimized: bool = False) -> str:
    """Text of the CPU code of a loop-level module: ``kind="llvm"`` (the emitted LLVM
    IR, or after the O3 pipeline with ``optimized=True``) or ``"asm"``."""
    if kind not in ("llvm", "asm"):
        raise ValueError(f"unknown kind {kind!r} for the cpu target; use 'llvm' or 'asm'")
    lowered = lower_module(module, isa=isa)
    if kind == "llvm" and not optimized:
        return str(lowered.llvm)
    from ninfer_ir.backends.llvm.runtime.jit import JITModule
    jit = JITModule(lowered.llvm, isa=lowered.isa)
    return jit.asm() if kind == "asm" else jit.optimized_ir()
