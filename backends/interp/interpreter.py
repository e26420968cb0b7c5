"""The IR interpreter: the semantic oracle that runs a function of a Module on numpy
arrays, for IR at every level (the frontend's tensor-level IR and the passes'
loop-level IR).

``RULES`` maps every op class of ``OPS`` except ``func`` to a small function
``rule(run, step, vals)``; an op without one is refused before anything runs. A call
verifies the function, checks the arguments (``eager.bind_arguments``), numbers every SSA
value into one flat frame and runs the body. What an op computes comes from
``ninfer_ir.numerics`` only: ``semantics`` (scalar rules), ``folds`` (ordered
contractions), ``quantized`` (quantize, quantized_dot) and ``decode``. The rules of
the elementwise families are derived from the op classes (every ``UnaryOp`` runs
``_unary``, ...).

Values: a scalar is a 0-d numpy array of the exact dtype (``index`` is int64, ``bf16``
its uint16 word); a tensor is a numpy array; a buffer is a writable numpy array. A
buffer argument is the caller's array itself, and ``subview``s alias it, so stores
land there; a tensor argument becomes a read-only view, so inputs are never written,
and is first copied when it may share memory with a buffer argument (a tensor argument
is its value at the call: docs/ir.md, "Arguments").
``alloc`` gives a new zeroed array; a ``constant_tensor`` is its data's read-only
array. Every result is checked against its declared type.

Arguments are positional, then by parameter name (``%w`` is ``w=``). A scalar may be
a numpy scalar or 0-d array of its dtype, or a Python int, bool or float that the
dtype holds exactly. A function with the attribute ``returns = k`` (loop-level IR: its
results are its last k parameters, output buffers) may be called without them; they
are then allocated, zeroed, with sizes from the inputs' symbols, and returned.
``return`` of no value gives None, of one value that value, of several a tuple.

Fixed here: ``for`` iterates like Python's ``range(lb, ub, step)`` and a step of 0 is
an error; ``parallel`` loops run in order; a ``subview`` range ``r(start, stop, step)``
needs ``0 <= start <= stop <= dim`` and ``step >= 1``; an index needs ``0 <= i < dim``
(no negative wraparound, no clamping).

Errors:
- ``VerifyError``: the call does not fit the function (count, names, kinds, dtypes,
  ranks, static dims, one symbol bound to two sizes, a read-only array for a buffer,
  an output of unknown size), no function can be chosen, the IR does not verify, an
  op has no rule, bf16 arithmetic, or a result contradicts its declared type.
- ``DomainError``: what is found while running: an index or range out of bounds in
  ``subview``/``load``/``store`` (named in the message), a ``for`` step of 0, a
  negative ``alloc`` size, run-time sizes that differ where the types say ``?``, a
  false ``check`` (its message, verbatim), quantize's domain errors (record, reason).
"""
from __future__ import annotations

from types import MappingProxyType

import numpy as np

from ninfer_ir import ops as O
from ninfer_ir.errors import DomainError, VerifyError
from ninfer_ir.ir import FuncOp, Module
from ninfer_ir.types import ScalarType, ShapedType, bf16, f64, i64, u64
from ninfer_ir.numerics import domain, quantized, semantics
from ninfer_ir.numerics.decode import decode_values, values_problem
from ninfer_ir.numerics.folds import dot_values, reduce_values
from ninfer_ir.verifier import verify_func

from .eager import bind_arguments

__all__ = ["interpret", "InterpretedKernel", "bind_arguments", "RULES"]

_INDEX = np.int64


# --- plans ---------------------------------------------------------------------

class _Step:
    """One op, ready to run: its rule, operand and result slots, and region plans."""
    __slots__ = ("op", "rule", "ins", "outs", "blocks", "expect", "data")

    def __init__(self, op, rule, ins, outs, blocks, expect, data):
        self.op, self.rule, self.ins, self.outs = op, rule, ins, outs
        self.blocks, self.expect, self.data = blocks, expect, data


class _BlockPlan:
    __slots__ = ("args", "steps", "term")

    def __init__(self, args, steps, term):
        self.args, self.steps, self.term = args, steps, term


class _Planner:
    def __init__(self, symbols):
        self.slots = {}
        self.symbols = symbols

    def slot(self, v) -> int:
        s = self.slots.get(v)
        if s is None:
            s = self.slots[v] = len(self.slots)
        return s

    def block(self, block) -> _BlockPlan:
        args = tuple(self.slot(a) for a in block.args)
        steps = [self.step(op) for op in block.ops]
        term = steps.pop() if steps and steps[-1].op.terminator else None
        return _BlockPlan(args, steps, term)

    def step(self, op) -> _Step:
        rule = RULES.get(type(op))
        if rule is None:
            raise VerifyError(f"the interpreter has no rule for '{op.name}'", op)
        ins = tuple(self.slots[v] for v in op.operands)
        blocks = [self.block(r.block) for r in op.regions]
        outs = tuple(self.slot(r) for r in op.results)
        expect = tuple((s, r.type, self.expected(r.type)) for s, r in zip(outs, op.results))
        prepare = _PREPARE.get(type(op))
        return _Step(op, rule, ins, outs, blocks, expect or None,
                     prepare(op) if prepare else None)

    def expected(self, t):
        """(numpy dtype, shape) of a declared type; None for a size unknown here."""
        if isinstance(t, ScalarType):
            return t.np_dtype, ()
        shape = []
        for d in t.shape:
            if isinstance(d, str):
                d = self.symbols[d][0] if d in self.symbols else None
            shape.append(d)
        return t.dtype.np_dtype, tuple(shape)


# --- running -------------------------------------------------------------------

class _Run:
    """One invocation: the frame of values and the optional op counters."""
    __slots__ = ("env", "counters")

    def __init__(self, n_slots, counters):
        self.env = [None] * n_slots
        self.counters = counters

    def block(self, plan: _BlockPlan, argvals):
        env = self.env
        for s, v in zip(plan.args, argvals):
            env[s] = v
        counters = self.counters
        for step in plan.steps:
            r = step.rule(self, step, [env[i] for i in step.ins])
            outs = step.outs
            if outs:
                if len(outs) == 1:
                    env[outs[0]] = r
                else:
                    for s, v in zip(outs, r):
                        env[s] = v
                if step.expect is not None:
                    _check_results(step, env)
            if counters is not None:
                counters[step.op.name] = counters.get(step.op.name, 0) + 1
        term = plan.term
        if counters is not None:
            counters[term.op.name] = counters.get(term.op.name, 0) + 1
        return [env[i] for i in term.ins]


def _check_results(step, env):
    for slot, t, (dtype, want) in step.expect:
        got = env[slot]
        shape = got.shape
        ok = type(got) is np.ndarray and got.dtype == dtype and len(shape) == len(want)
        if ok:
            for s, w in zip(shape, want):
                if w is not None and s != w:
                    ok = False
                    break
        if not ok:
            raise domain.result_type(got.dtype, shape, t, step.op)


def _results(step, values):
    n = len(step.outs)
    if n == 1:
        return values[0]
    return tuple(values) if n else None


# --- rules: constants, shapes, views, memory --------------------------------------

def _prep_constant(op):
    t = op.result.type
    v = op.value
    if t.is_float and isinstance(v, int):
        src = i64 if -(1 << 63) <= v < (1 << 63) else u64
        return semantics.cast(np.asarray(v, dtype=src.np_dtype), src, t)
    if t is bf16:
        return semantics.cast(np.asarray(v, dtype=np.float64), f64, bf16)
    return np.asarray(v, dtype=t.np_dtype)


def _constant(run, step, vals):
    return step.data


def _constant_tensor(run, step, vals):
    return step.data


def _dim(run, step, vals):
    return np.asarray(vals[0].shape[step.op.axis], dtype=_INDEX)


def _indices(op, arr, raw):
    idx = tuple(int(v) for v in raw)
    for axis, (i, n) in enumerate(zip(idx, arr.shape)):
        if not 0 <= i < n:
            raise domain.bad_index(op.name, i, axis, n)
    return idx


def _subview(run, step, vals):
    op = step.op
    src = vals[0]
    key = []
    k = 1
    for axis, code in enumerate(op.axes()):
        n = src.shape[axis]
        if code == "i":
            i = int(vals[k])
            k += 1
            if not 0 <= i < n:
                raise domain.bad_index(op.name, i, axis, n)
            key.append(i)
        elif code == "r":
            start, stop, stride = int(vals[k]), int(vals[k + 1]), int(vals[k + 2])
            k += 3
            if stride < 1 or not 0 <= start <= stop <= n:
                raise domain.bad_range(op.name, start, stop, stride, axis, n)
            key.append(slice(start, stop, stride))
        else:
            key.append(slice(None))
    key.append(Ellipsis)             # an all-index view stays a 0-d view, not a copy
    return src[tuple(key)]


def _load(run, step, vals):
    src = vals[0]
    return np.array(src[_indices(step.op, src, vals[1:])])


def _store(run, step, vals):
    value, dst = vals[0], vals[1]
    if not dst.flags.writeable:
        raise VerifyError("store into a read-only array", step.op)
    dst[_indices(step.op, dst, vals[2:])] = value


def _same_shape(op, *arrays):
    shapes = [a.shape for a in arrays if a.ndim]
    if any(s != shapes[0] for s in shapes[1:]):
        raise DomainError(f"'{op.name}': operand shapes differ at run time: "
                          + " vs ".join(str(list(s)) for s in shapes))


def _copy(run, step, vals):
    src, dst = vals
    if src.shape != dst.shape:
        raise domain.copy_shapes(src.shape, dst.shape)
    if np.may_share_memory(dst, src):
        src = src.copy()             # value semantics: read every element before any write
    np.copyto(dst, src)


def _alloc(run, step, vals):
    t = step.op.result.type
    sizes = iter(vals)
    shape = []
    for d in t.shape:
        if not isinstance(d, int):
            d = int(next(sizes))
            if d < 0:
                raise domain.negative_alloc(d, t)
        shape.append(d)
    return np.zeros(shape, dtype=t.dtype.np_dtype)


def _dealloc(run, step, vals):
    return None


# --- rules: scalar semantics -------------------------------------------------------

def _dtype(v):
    t = v.type
    return t.dtype if isinstance(t, ShapedType) else t


def _prep_dtype(op):
    t = _dtype(op.operands[-1])
    if t is bf16 and getattr(op, "computes", True):      # reduce and dot compute too
        raise VerifyError("bf16 values are only cast or bitcast; cast to f32 to compute", op)
    return t


def _pair(step, vals):
    a, b = vals
    if a.ndim and b.ndim and a.shape != b.shape:
        _same_shape(step.op, a, b)
    return a, b


def _binary(run, step, vals):
    return semantics.binary(step.op.name, *_pair(step, vals), step.data)


def _unary(run, step, vals):
    x = vals[0]
    r = semantics.unary(step.op.name, x, step.data)
    return r.copy() if r is x else r      # |u| is u: a result never aliases a buffer


def _cmp(run, step, vals):
    return semantics.compare(step.op.pred, *_pair(step, vals), step.data)


def _select(run, step, vals):
    c, a, b = vals
    if c.ndim or a.ndim or b.ndim:
        _same_shape(step.op, c, a, b)
    return semantics.select(c, a, b, step.data)


def _cast(run, step, vals):
    return semantics.cast(vals[0], step.data, step.op.to)


def _bitcast(run, step, vals):
    x = vals[0]
    return semantics.bitcast(x, step.data, step.op.to).reshape(x.shape)


def _expanded(run, step, vals):
    return step.op.lib().evaluate(step.op.attrs["fn"], vals[0], step.data)


# --- rules: reductions and the quantized ops -----------------------------------------

def _reduce(run, step, vals):
    t, order = step.data
    return reduce_values(vals[0], step.op.kind, t, order)


def _dot(run, step, vals):
    a, b = vals
    if a.shape != b.shape:
        raise domain.dot_lengths(a.shape[0], b.shape[0])
    t, order = step.data
    return dot_values(a, b, t, order)


def _prep_fold(op):
    return _prep_dtype(op), op.order


def _records_match(op, a, b, what):
    if a.shape[0] != b.shape[0]:
        raise domain.record_counts(op.name, what, a.shape[0], b.shape[0])


def _quantize(run, step, vals):
    return quantized.quantize(vals[0], step.data.schema)


def _quantize_into(run, step, vals):
    values, dst = vals[0], vals[1]
    _records_match(step.op, values, dst, "values and destination")
    schema = step.data.schema
    try:
        records = quantized.quantize(values, schema)
    except DomainError as e:
        if len(vals) == 3 and e.record is not None:
            raise quantized.domain_error(int(vals[2]) + e.record, e.reason, schema) from None
        raise
    dst[...] = records


def _quantized_dot(run, step, vals):
    lhs, rhs = vals
    _records_match(step.op, lhs, rhs, "lhs and rhs")
    pair, order = step.data
    return quantized.quantized_dot(lhs, rhs, pair, order)


def _prep_pair(op):
    return op.pair, op.order


def _prep_target(op):
    return op.target


def _decode(run, step, vals):
    fmt = step.op.format
    if step.op.count is not None:
        vals = [*vals[:2], int(vals[2])]
    problem = values_problem(fmt, vals)
    if problem:
        raise domain.decode_row(problem)
    return decode_values(fmt, vals)


def _check(run, step, vals):
    if not bool(vals[0]):
        raise DomainError(step.op.format([int(v) for v in vals[1:]]))


# --- rules: structured control flow ---------------------------------------------------

def _for(run, step, vals):
    lb, ub, stride = int(vals[0]), int(vals[1]), int(vals[2])
    if stride == 0:
        raise domain.zero_step()
    carried = vals[3:]
    body = step.blocks[0]
    block = run.block
    for i in range(lb, ub, stride):
        carried = block(body, [np.asarray(i, dtype=_INDEX), *carried])
    return _results(step, carried)


def _if(run, step, vals):
    branch = step.blocks[0] if bool(vals[0]) else step.blocks[1]
    return _results(step, run.block(branch, ()))


def _kernel_call(run, step, vals):
    """A library kernel's call means its region: the loop it stands for."""
    run.block(step.blocks[0], ())


def _terminator(run, step, vals):
    return vals


_RULES = {cls: _binary for cls in O.BINARY}
_RULES.update({cls: _unary for cls in O.UNARY})
_RULES.update({
    O.ConstantOp: _constant, O.ConstantTensorOp: _constant_tensor, O.DimOp: _dim, O.SubviewOp: _subview, O.LoadOp: _load,
    O.StoreOp: _store, O.CopyOp: _copy, O.CmpOp: _cmp,
    O.SelectOp: _select, O.CastOp: _cast, O.BitcastOp: _bitcast,
    O.ReduceOp: _reduce, O.DotOp: _dot, O.QuantizeOp: _quantize,
    O.QuantizedDotOp: _quantized_dot, O.QuantizeIntoOp: _quantize_into,
    O.ForOp: _for, O.IfOp: _if, O.YieldOp: _terminator, O.ReturnOp: _terminator,
    O.AllocOp: _alloc, O.DeallocOp: _dealloc, O.CheckOp: _check, O.DecodeOp: _decode,
    O.KernelCallOp: _kernel_call,
})
_RULES.update({cls: _expanded for cls in O.EXPANDED})
#: op class -> rule; every op of ``OPS`` except ``func`` has one.
RULES = MappingProxyType(_RULES)

_PREPARE = {cls: _prep_dtype for cls in O.ELEMENTWISE}
_PREPARE.update({O.ReduceOp: _prep_fold, O.DotOp: _prep_fold, O.ConstantOp: _prep_constant,
                 O.ConstantTensorOp: lambda op: op.value.array,
                 O.QuantizedDotOp: _prep_pair, O.QuantizeOp: _prep_target,
                 O.QuantizeIntoOp: _prep_target})


# --- entry point --------------------------------------------------------------------

def _resolve(obj, func_name):
    if isinstance(obj, str):
        from ninfer_ir.frontend.textual import parse
        obj = parse(obj)
    if isinstance(obj, FuncOp):
        if func_name is not None and func_name != obj.sym_name:
            raise VerifyError(f"asked for @{func_name} but was given @{obj.sym_name}")
        return obj
    if isinstance(obj, Module):
        if func_name is not None:
            for f in obj.funcs:
                if f.sym_name == func_name:
                    return f
            raise VerifyError(f"the module has no function @{func_name}; it holds "
                              f"{_names(obj)}")
        if len(obj.funcs) != 1:
            raise VerifyError(f"the module holds {len(obj.funcs)} functions ({_names(obj)}); "
                              f"choose one with func_name=")
        return obj.funcs[0]
    for attr in ("module", "ir"):
        inner = getattr(obj, attr, None)
        if isinstance(inner, (Module, FuncOp, str)):
            return _resolve(inner, func_name)
    raise VerifyError(f"interpret takes a Module, a FuncOp, IR text or a kernel, "
                      f"got {type(obj).__name__}")


def _names(module):
    return ", ".join(f"@{f.sym_name}" for f in module.funcs) or "none"


def interpret(module_or_func, *args, func_name=None, counters=None, **kwargs):
    """Run a function of ``module_or_func`` (a Module, FuncOp, IR text, or an object
    whose ``module`` or ``ir`` is one of these) on numpy arrays; returns its result(s).

    ``func_name`` picks the function of a module that holds several. ``counters``: a
    dict to which each executed op adds 1 under its name (``"func"``: per call).
    """
    func = _resolve(module_or_func, func_name)
    verify_func(func)
    values, symbols, outputs = bind_arguments(func, args, kwargs)
    planner = _Planner(symbols)
    for a in func.args:
        planner.slot(a)
    body = planner.block(func.body)
    run = _Run(len(planner.slots), counters)
    if counters is not None:
        counters["func"] = counters.get("func", 0) + 1
    returned = run.block(body, values)
    if outputs:
        returned = [values[k] for k in outputs]
    if not returned:
        return None
    return returned[0] if len(returned) == 1 else tuple(returned)


class InterpretedKernel:
    """What ``I.compile(kernel, target="interp")`` returns: a callable that runs one
    function of a module with ``interpret`` (same arguments, results and errors)."""

    target = "interp"

    def __init__(self, module, func_name=None):
        self.func = _resolve(module, func_name)
        verify_func(self.func)
        self.module = module if isinstance(module, Module) else None

    def __call__(self, *args, counters=None, **kwargs):
        return interpret(self.func, *args, counters=counters, **kwargs)

    def __repr__(self):
        return f"<InterpretedKernel @{self.func.sym_name}>"
