"""The C-like emitter: loop-level IR -> C source, shared by every C-like target.

Design. ``RULES`` maps each op class to a small function (``memory``,
``contractions``) or method (scalar ops, ``for``, ``if``, ``check``); an op without
one raises ``VerifyError("no <target> lowering for <op>")``. Everything that differs
between targets is data or a hook on the class:

- ``KERNEL`` (qualifier of a launch unit's function), ``PRIMS`` (the f32/f64
  arithmetic, float bit casts and element loads/stores the scalar helpers are
  written with), ``FN_BIG`` (qualifier of the large helpers), ``WARP_OPS`` (ops that
  make a parallel loop one warp per iteration), ``library()`` (fixed source placed
  before the helpers: types, ``nq_fail``/``nq_stopped``, the quantized-op code);
- ``worker_decls(mapping)`` (worker index and count of a unit), ``mapping_of(op)``
  (one thread or one warp per iteration), ``effect``/``begin_effect`` (who performs
  a side effect), ``zero``, ``fail_call``, and the quantized-op hooks
  ``quantized_dot_fn`` and ``quantize_record_fn``.

Every SSA value becomes one C variable (named after its hint) or a literal; views
are a byte pointer with size and byte-stride expressions (``memory.View``); rank-0
results of dot/reduce/quantized_dot are plain scalars (``memory.Reg``). Launch
units, the control block and the arena are described in ``plan``.
"""
from __future__ import annotations

import re

from ninfer_ir import ops as O
from ninfer_ir.errors import VerifyError
from ninfer_ir.ir import FuncOp, Module
from ninfer_ir.types import ShapedType, bf16

from . import contractions, folds, memory, scalars, units
from .memory import Reg, View
from .plan import CTL_LAYOUT, FuncPlan
from .units import RESERVED, SCALAR_OPS, externals, sanitize, unique

__all__ = ["CLikeEmitter", "Emitted", "LEGALIZED_AWAY", "RULES", "RESERVED"]

#: op name -> why an emitter never sees it (the passes remove it)
LEGALIZED_AWAY = {cls.name: f"removed by the {cls.legalized_by} pass"
                  for cls in O.OPS.values() if cls.legalized_by}

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_INT = re.compile(r"-?[0-9]+\Z")


class Emitted:
    """The emitted source: fixed ``library`` text, generated ``helpers`` and
    ``kernels``, and one ``FuncPlan`` per function."""

    def __init__(self, library: str, helpers: str, kernels: str, plans: dict):
        self.library, self.helpers, self.kernels, self.plans = library, helpers, kernels, plans

    @property
    def generated(self) -> str:
        return self.helpers + self.kernels

    @property
    def source(self) -> str:
        return self.library + self.helpers + self.kernels


class CLikeEmitter:
    target = "c"
    KERNEL = ""
    PRIMS: dict = {}
    WARP_OPS: tuple = ()
    FN_BIG = "NQ_FN"
    #: qualifiers of the file-scope arrays that hold constant tensors
    CONST_DATA = "static const"

    # -- module and function ------------------------------------------------------------

    def emit_module(self, module: Module) -> Emitted:
        module.verify()
        self.lib = scalars.Library(self.PRIMS, fn_big=self.FN_BIG)
        self.quantized = any(isinstance(op, (O.QuantizedDotOp, O.QuantizeIntoOp))
                             for op in module.walk())
        kernels, plans = [], {}
        for func in module.funcs:
            plan = self.plan_function(func)
            texts = [self.emit_unit(plan, k, u) for k, u in enumerate(plan.units)]
            kernels.append(self.summary(plan))
            kernels.extend(t for t in texts if t)
            plans[func.sym_name] = plan
        return Emitted(self.library(), self.lib.text(), "".join(kernels), plans)

    def library(self) -> str:
        return ""

    def plan_function(self, func: FuncOp) -> FuncPlan:
        return units.build(self, func)

    def mapping_of(self, op) -> str:
        """How a ``par``/``quant`` unit maps iterations to workers."""
        if self.WARP_OPS and any(isinstance(o, self.WARP_OPS) for o in op.walk()):
            return "warp"
        return "thread"

    def signature(self, plan) -> str:
        parts = []
        for p in plan.params:
            if p["kind"] == "scalar":
                parts.append(f"{scalars.c_type(p['type'])} {p['name']}")
                continue
            const = "" if p["type"].writable else "const "
            parts.append(f"{const}nq_u8* {p['name']}")
            parts.extend(f"nq_i64 {n}" for n in p["sizes"] + p["strides"])
        parts += ["nq_u8* nq_arena", "nq_u64* nq_ctl"]
        return ", ".join(parts)

    def summary(self, plan) -> str:
        lines = [f"/* @{plan.name}: {len(plan.launches)} launch(es)"]
        for u in plan.launches:
            what = {"seq": "one worker", "quant": f"{u.mapping} per record",
                    "par": f"one {u.mapping} per iteration"}[u.kind]
            lines.append(f" *   {u.name}: {u.kind}, {what}")
        lines.extend(f" *   {note}" for note in plan.notes)
        return "\n".join(lines) + "\n */\n"

    # -- one launch unit -----------------------------------------------------------------

    def emit_unit(self, plan, k, unit) -> str:
        self.plan, self.unit_index, self.unit = plan, k, unit
        self.lines, self.depth = [], 1
        self.values, self.taken = {}, set(plan.taken) | {s for s, _ in plan.symbols.values()}
        self.symbols = {d: s for d, (s, _) in plan.symbols.items()}
        self.key, self.mode, self.guards_on, self.work = "0", unit.mapping, True, 0
        self.below = {}
        for a, p in zip(plan.func.args, plan.params):
            if p["kind"] == "scalar":
                self.values[a] = p["name"]
                continue
            sizes = [str(d) if isinstance(d, int) else self.symbols[d] if isinstance(d, str)
                     else n for d, n in zip(p["type"].shape, p["sizes"])]
            self.values[a] = View(p["name"], sizes, p["strides"], p["type"].dtype)
        self.line(f"if (nq_stopped(nq_ctl, {k})) return;")
        for s, n in plan.symbols.values():
            self.line(f"const nq_i64 {s} = {n};")
        self.line(self.worker_decls(unit.mapping))
        self.guards_on = False
        for v in externals(unit.ops):
            self.materialize(v)
        self.guards_on, self.work = True, 0
        getattr(self, f"emit_{unit.kind}")(unit)
        if unit.kind == "seq" and self.work == 0:
            unit.free = True
            return ""
        body = "\n".join(self.lines)
        return f"{self.KERNEL}void {unit.name}({self.signature(plan)}) {{\n{body}\n}}\n"

    def materialize(self, v):
        if v in self.values:
            return
        slot = self.plan.frame.get(v)
        if slot is not None:
            t = v.type.dtype if isinstance(v.type, ShapedType) else v.type
            name = self.fresh(v.name_hint or "v")
            self.line(f"{scalars.c_type(t)} {name};")
            self.line(f"memcpy(&{name}, nq_ctl + {self.plan.frame_base + slot}, sizeof({name}));")
            self.values[v] = Reg(name, t) if isinstance(v.type, ShapedType) else name
            return
        for x in v.op.operands:
            self.materialize(x)
        self.op(v.op)

    def emit_seq(self, unit):
        for op in unit.ops:
            self.op(op)
            for r in op.results:
                if r in self.plan.frame:
                    x = self.values[r]
                    x = x.expr if isinstance(x, Reg) else x
                    self.effect(f"memcpy(nq_ctl + {self.plan.frame_base + self.plan.frame[r]}, "
                                f"&{x}, sizeof({x}));")

    def emit_par(self, unit):
        chain = units.nest(unit.op)
        if len(chain) > 1:
            mark = self._mark()
            if self._emit_nest(chain):
                return
            self._restore(mark)
        self._emit_nest(chain[:1])

    def _emit_nest(self, chain) -> bool:
        """One worker-stride loop over the product of ``chain``'s iterations (row-major:
        the interpreter's order). False if an outer body's ops needed a guard (they
        would not run for an empty inner loop), after which the caller rolls back."""
        trips = []
        for loop in chain:
            lb, ub, st = (self.value(v) for v in (loop.lower, loop.upper, loop.step))
            self.step_guard(loop, st)
            trips.append(self.fresh("nq_n"))
            self.line(f"const nq_i64 {trips[-1]} = {folds.trip(self.lib)}({lb}, {ub}, {st});")
        total = trips[0]
        if len(chain) > 1:
            total = self.fresh("nq_n")
            self.line(f"const nq_i64 {total} = {' * '.join(trips)};")
        k = self.fresh("nq_k")
        self.open(f"for (nq_i64 {k} = nq_worker; {k} < {total}; {k} += nq_workers) {{")
        self.key = k
        for j, loop in enumerate(chain):
            kj = k
            if len(chain) > 1:
                kj = self.fresh(f"nq_k{j}")
                inner = " * ".join(trips[j + 1:])
                expr = f"{k} / ({inner})" if inner else k
                self.line(f"const nq_i64 {kj} = {expr}" + (f" % {trips[j]};" if j else ";"))
            lb, ub, st = (self.value(v) for v in (loop.lower, loop.upper, loop.step))
            iv = self.fresh(loop.body.args[0].name_hint or "i")
            self.line(f"const nq_i64 {iv} = {_iv(lb, kj, st)};")
            self.values[loop.body.args[0]] = iv
            self.note_range(iv, lb, ub, st)
            if j == len(chain) - 1:
                self.block(loop.body)
                continue
            guards = len(self.plan.guards)
            for op in loop.body.ops[:-2]:
                self.op(op)
            if len(self.plan.guards) != guards:
                return False
        self.close("}")
        return True

    def _mark(self):
        return (len(self.lines), self.depth, len(self.plan.guards), dict(self.values),
                set(self.taken), dict(self.below), self.work, set(self.lib.defs))

    def _restore(self, mark):
        n, self.depth, guards, self.values, self.taken, self.below, self.work, defs = mark
        del self.lines[n:]
        del self.plan.guards[guards:]
        for name in set(self.lib.defs) - defs:
            del self.lib.defs[name]

    def emit_quant(self, unit):
        op = unit.op
        values, dst, base = contractions.quantize_operands(self, op)
        contractions.records_guard(self, op, values, dst, "values and destination")
        r = self.fresh("nq_r")
        self.open(f"for (nq_i64 {r} = nq_worker; {r} < {values.sizes[0]}; {r} += nq_workers) {{")
        self.key = r
        contractions.quantize_records(self, op, values, None if unit.check else dst, r, base)
        self.close("}")

    # -- target hooks (host C: one worker does everything) -----------------------------------

    def worker_decls(self, mapping) -> str:
        return "const nq_i64 nq_worker = 0, nq_workers = 1;"

    def effect(self, stmt: str):
        self.work += 1
        self.line(stmt)

    def begin_effect(self):
        self.work += 1

    def end_effect(self):
        pass

    def zero(self, ptr, nbytes):
        z = self.fresh("nq_z")
        self.line(f"for (nq_i64 {z} = 0; {z} < {nbytes}; ++{z}) {ptr}[{z}] = 0;")

    def fail_stmt(self, code: str, nums=()) -> str:
        """``{ record the failure; return; }`` (the worker stops)."""
        self.work += 1
        decl, arr = "", "0"
        if nums:
            decl = f"nq_i64 nq_e[{len(nums)}] = {{{', '.join(f'(nq_i64)({n})' for n in nums)}}}; "
            arr = "nq_e"
        call = f"nq_fail(nq_ctl, {self.unit_index}, {self.key}, {code}, {arr}, {len(nums)});"
        return f"{{ {decl}{self.fail_call(call)} return; }}"

    def fail_call(self, call: str) -> str:
        return call

    def quantized_dot_fn(self, op) -> str:
        """The C function computing ``op`` (the fold helpers' arguments)."""
        return folds.qdot_thread(self.lib, op.pair)

    def quantize_record_fn(self, op) -> str:
        return folds.quantize_record(self.lib, op.target)

    def arena_address(self, slot) -> str:
        off = f"nq_arena + nq_ctl[{CTL_LAYOUT + slot.word}]"
        if self.plan.units[slot.unit].kind == "par":
            off += f" + nq_worker * nq_ctl[{CTL_LAYOUT + self.unit.stride_word}]"
        return off

    def plan_alloc(self, op):
        return next(s for s in self.plan.allocs if s.op is op)

    # -- text ---------------------------------------------------------------------------

    def line(self, text: str):
        self.lines.append("    " * self.depth + text)

    def open(self, text: str):
        self.line(text)
        self.depth += 1

    def close(self, text: str):
        self.depth -= 1
        self.line(text)

    def fresh(self, hint: str) -> str:
        """A new C name: ``nq_*`` hints are the emitter's own, others are sanitized."""
        return unique(hint if hint.startswith("nq_") else sanitize(hint), self.taken)

    def in_range(self, i: str, n: str) -> bool:
        """``0 <= i < n`` is known: ``i`` counts up from a literal >= 0 to ``n``."""
        if _INT.match(i) and _INT.match(n):
            return 0 <= int(i) < int(n)
        return self.below.get(i) == n

    def let(self, value, expr: str, ctype: str | None = None) -> str:
        name = self.fresh(value.name_hint or "v")
        self.line(f"const {ctype or scalars.c_type(value.type)} {name} = {expr};")
        return name

    def declare(self, ctype: str, value) -> str:
        name = self.fresh(value.name_hint or "v")
        self.line(f"{ctype} {name};")
        return name

    def temp(self, ctype: str, expr: str, value, suffix: str = "") -> str:
        if _IDENT.match(expr) or _INT.match(expr):
            return expr
        name = self.fresh(f"{value.name_hint or 'v'}_{suffix}" if suffix else value.name_hint or "v")
        self.line(f"{ctype} const {name} = {expr};" if "*" in ctype
                  else f"const {ctype} {name} = {expr};")
        return name

    def value(self, v):
        try:
            return self.values[v]
        except KeyError:
            raise VerifyError(f"{self.target}: a value is used outside its scope",
                              getattr(v, "op", None)) from None

    def guard(self, cond: str, spec, nums):
        if not self.guards_on:
            return
        from ninfer_ir.backends.abi import REASON_GUARD, Guard
        kind, op, axis = spec[:3]
        gid = len(self.plan.guards)
        self.plan.guards.append(Guard(kind, op, axis, spec[3] if len(spec) > 3 else ""))
        self.line(f"if (!({cond})) {self.fail_stmt(str(gid * 8 + REASON_GUARD), nums)}")

    def note_range(self, iv, lb, ub, st):
        if _INT.match(lb) and int(lb) >= 0 and _INT.match(st) and int(st) > 0:
            self.below[iv] = ub

    def step_guard(self, op, st):
        if not (_INT.match(st) and int(st) != 0):
            self.guard(f"{st} != 0", ("step", op, 0), [])

    def no_lowering(self, op, why: str = "") -> VerifyError:
        return VerifyError(f"no {self.target} lowering for {op.name}{why}", op)

    # -- ops ------------------------------------------------------------------------------

    def block(self, block):
        for op in block.ops:
            if op.terminator:
                return op
            self.op(op)
        return None

    def op(self, op):
        rule = RULES.get(type(op))
        if rule is None:
            why = LEGALIZED_AWAY.get(op.name)
            raise self.no_lowering(op, f" ({why})" if why else "")
        out = rule(self, op)
        if op.results:
            outs = out if isinstance(out, list) else [out]
            for r, x in zip(op.results, outs):
                self.values[r] = x

    def lower_constant(self, op):
        return self.lib.constant(op.result.type, op.attrs["value"])

    def lower_scalar(self, op):
        for v in op.operands:
            if isinstance(v.type, ShapedType):
                raise self.no_lowering(op, f" on {v.type} (tensor-level elementwise ops are "
                                           f"lowered to loops by the passes)")
        x = [self.value(v) for v in op.operands]
        t = op.operands[-1].type
        name, lib = op.name, self.lib
        if t is bf16 and op.computes:
            raise VerifyError("bf16 values are only cast or bitcast; cast to f32 to compute", op)
        return self.let(op.result, lib.scalar_expr(name, t, x, op.attrs))

    def lower_for(self, op):
        lb, ub, st = (self.value(v) for v in (op.lower, op.upper, op.step))
        carried = []
        for a, v in zip(op.body.args[1:], op.inits):
            name = self.fresh(a.name_hint or "acc")
            self.line(f"{_ctype(a.type)} {name} = {_scalar_of(self, op, self.value(v))};")
            carried.append(name)
        self.step_guard(op, st)
        iv = self.fresh(op.body.args[0].name_hint or "i")
        if st == "1":
            self.open(f"for (nq_i64 {iv} = {lb}; {iv} < {ub}; ++{iv}) {{")
        else:
            k, n = self.fresh("nq_k"), self.fresh("nq_n")
            self.open(f"for (nq_i64 {k} = 0, {n} = {folds.trip(self.lib)}({lb}, {ub}, {st}); "
                      f"{k} < {n}; ++{k}) {{")
            self.line(f"const nq_i64 {iv} = {_iv(lb, k, st)};")
        self.values[op.body.args[0]] = iv
        self.note_range(iv, lb, ub, st)
        for a, name in zip(op.body.args[1:], carried):
            self.values[a] = _wrap(a.type, name)
        term = self.block(op.body)
        self.assign(op, carried, term.operands)
        self.close("}")
        return [_wrap(r.type, name) for r, name in zip(op.results, carried)]

    def assign(self, op, names, values):
        exprs = [_scalar_of(self, op, self.value(v)) for v in values]
        pairs = [(n, x) for n, x in zip(names, exprs) if n != x]
        if len(pairs) > 1 and any(x in names for _, x in pairs):
            temps = []
            for (n, x), v in zip(pairs, values):
                t = self.fresh("nq_t")
                self.line(f"const {_ctype(v.type)} {t} = {x};")
                temps.append((n, t))
            pairs = temps
        for n, x in pairs:
            self.line(f"{n} = {x};")

    def lower_if(self, op):
        names = [self.declare(_ctype(r.type), r) for r in op.results]
        self.open(f"if ({self.value(op.cond)}) {{")
        self.assign(op, names, self.block(op.regions[0].block).operands)
        self.close("} else {")
        self.depth += 1
        self.assign(op, names, self.block(op.regions[1].block).operands)
        self.close("}")
        return [_wrap(r.type, n) for r, n in zip(op.results, names)]

    def lower_kernel_call(self, op):
        """The C-like targets have no library kernels: the loop the call stands for."""
        self.block(op.regions[0].block)

    def lower_check(self, op):
        from ninfer_ir.backends.abi import REASON_CHECK
        cid = self.plan.checks.index(op)
        nums = [self.value(v) for v in op.nums]
        self.line(f"if (!{self.value(op.cond)}) "
                  f"{self.fail_stmt(str(cid * 8 + REASON_CHECK), nums)}")


def _iv(lb, k, st) -> str:
    if st == "1":
        return k if lb == "0" else f"{lb} + {k}"
    return f"(nq_i64)((nq_u64)({lb}) + (nq_u64){k} * (nq_u64)({st}))"


def _ctype(t) -> str:
    return scalars.c_type(t.dtype if isinstance(t, ShapedType) else t)


def _wrap(t, name):
    return Reg(name, t.dtype) if isinstance(t, ShapedType) else name


def _scalar_of(e, op, x):
    if not isinstance(x, (str, Reg)):
        raise e.no_lowering(op, " carrying or yielding a view (only scalars and rank-0 values)")
    return x.expr if isinstance(x, Reg) else x


RULES = {cls: CLikeEmitter.lower_scalar for cls in SCALAR_OPS}
RULES.update({O.ConstantOp: CLikeEmitter.lower_constant, O.ForOp: CLikeEmitter.lower_for,
              O.IfOp: CLikeEmitter.lower_if, O.CheckOp: CLikeEmitter.lower_check,
              O.KernelCallOp: CLikeEmitter.lower_kernel_call})
RULES.update(memory.LOWERINGS)
RULES.update(contractions.LOWERINGS)
