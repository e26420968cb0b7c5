"""What a launcher needs to run the C-like code of one function: its launch units,
parameter ABI, scratch-arena layout and control block.

Launch units. The top level of a loop-level function is cut into units that run one
after the other (separate launches on a GPU, plain calls in host C):

- ``par``: a top-level ``for`` with ``parallel = true``; its iterations are spread over
  workers (threads, or warps where the body has a quantized op) with a
  worker-stride loop, so any grid runs every iteration exactly once;
- ``quant``: a top-level ``quantize_into``; workers take records;
- ``seq``: a maximal run of other top-level ops, run by a single worker (nested
  loops, parallel or not, run in order inside it).

A ``seq`` unit whose ops are all *free* (constants, ``dim``, scalar arithmetic,
``dealloc``, and top-level ``alloc``s whose sizes need no run-time check) needs no
launch. Values cross units in two ways: ops without effects that read no memory
(constants, ``dim``, ``subview``, ``alloc`` addresses, scalar arithmetic) are
recomputed where needed, without their run-time guards (the unit that owns them
already passed them); every other scalar is written by its single-worker unit to a
*frame* word of the control block and read back by later units.

Control block (``nq_u64 ctl[]``, ``CTL_*`` offsets): the failed unit + 1 (0: none),
a spin lock, the failing key (iteration or record index: the lowest wins, which is
the interpreter's first failure), the status word (``backends/abi.py``),
the error block of the guard numbers, the arena layout words, then the frame.
Every unit starts by returning if an earlier unit failed.

Arena. Each ``alloc`` gets a 64-byte aligned slot; slots of ``par`` units are
replicated per worker. Sizes are host expressions (constants, argument shapes and
index scalars, integer arithmetic) evaluated by the launcher before the launch; the
launcher zero-fills the arena, and allocs inside loops zero their slot each time.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ninfer_ir.numerics import semantics
from ninfer_ir.errors import VerifyError
from ninfer_ir.ir import FuncOp
from ninfer_ir.types import index

from ninfer_ir.backends import signature

__all__ = ["CTL_FAILED", "CTL_LOCK", "CTL_KEY", "CTL_STATUS", "CTL_ERR", "ERR_SLOTS",
           "CTL_LAYOUT", "ALIGN", "Unit", "AllocSlot", "FuncPlan", "HostExpr",
           "evaluate", "layout", "bind_call", "out_shape", "snapshot_tensors", "index_scalars",
           "error_for",
           "choose", "fail_helpers"]

CTL_FAILED, CTL_LOCK, CTL_KEY, CTL_STATUS = 0, 1, 2, 3
CTL_ERR = 8
ERR_SLOTS = 64
CTL_LAYOUT = CTL_ERR + ERR_SLOTS
ALIGN = 64


# --- host expressions ------------------------------------------------------------

HostExpr = tuple
"""``("const", v)``, ``("arg", k)`` (an index scalar argument), ``("dim", k, axis)``
(an argument's size), ``("bin", name, dtype, a, b)``, ``("rlen", start, stop, step)``,
``("trip", lb, ub, step)``."""


def evaluate(expr: HostExpr, shapes, scalars) -> int:
    """The value of ``expr`` for the arguments' ``shapes`` and ``scalars`` (by index)."""
    kind = expr[0]
    if kind == "const":
        return int(expr[1])
    if kind == "arg":
        return int(scalars[expr[1]])
    if kind == "dim":
        return int(shapes[expr[1]][expr[2]])
    if kind == "bin":
        _, name, t, a, b = expr
        x, y = evaluate(a, shapes, scalars), evaluate(b, shapes, scalars)
        return int(semantics.binary(name, np.asarray(x).astype(t.np_dtype),
                                    np.asarray(y).astype(t.np_dtype), t))
    if kind == "rlen":
        start, stop, step = (evaluate(e, shapes, scalars) for e in expr[1:])
        return max(0, -(-(stop - start) // step)) if step > 0 else 0
    if kind == "trip":
        lb, ub, step = (evaluate(e, shapes, scalars) for e in expr[1:])
        return len(range(lb, ub, step)) if step else 0
    raise ValueError(f"bad host expression {expr!r}")


# --- the plan -------------------------------------------------------------------------

@dataclass
class Unit:
    """One launch: ``kind`` seq/par/quant, its top-level ``ops`` and C function name."""
    kind: str
    ops: list
    name: str = ""
    mapping: str = "single"           # "single" | "thread" | "warp"
    trip: HostExpr | None = None      # par/quant: the iteration count, when computable
    stride_word: int | None = None    # ctl layout word of the per-worker arena stride
    free: bool = False
    check: bool = False               # quant: quantize into scratch only (a first pass)

    @property
    def op(self):
        return self.ops[0]


@dataclass
class AllocSlot:
    op: object
    unit: int
    size: HostExpr                    # bytes
    word: int                         # ctl layout word of its offset
    top_level: bool


@dataclass
class FuncPlan:
    func: FuncOp
    params: list = field(default_factory=list)     # per IR param: C names (see emitter)
    units: list = field(default_factory=list)
    allocs: list = field(default_factory=list)
    frame: dict = field(default_factory=dict)      # Value -> frame word index
    checks: list = field(default_factory=list)
    guards: list = field(default_factory=list)
    n_layout: int = 0
    notes: list = field(default_factory=list)      # how quantized ops are scheduled
    symbols: dict = field(default_factory=dict)    # symbol -> (C name, size parameter)
    taken: set = field(default_factory=set)        # C names of the parameters

    @property
    def name(self) -> str:
        return self.func.sym_name

    @property
    def frame_base(self) -> int:
        return CTL_LAYOUT + self.n_layout

    @property
    def ctl_words(self) -> int:
        return self.frame_base + len(self.frame)

    @property
    def launches(self) -> list:
        return [u for u in self.units if not u.free]


def layout(plan: FuncPlan, shapes, scalars, workers) -> tuple[int, np.ndarray]:
    """``(arena bytes, ctl)`` for one call; ``workers[u]``: the worker count of unit u."""
    ctl = np.zeros(plan.ctl_words, dtype=np.uint64)
    offset, strides, within = 0, {}, {}
    for k, slot in enumerate(plan.allocs):
        nbytes = max(0, evaluate(slot.size, shapes, scalars))
        nbytes = -(-nbytes // ALIGN) * ALIGN
        if plan.units[slot.unit].kind == "par":
            within[k] = strides.get(slot.unit, 0)
            strides[slot.unit] = within[k] + nbytes
        else:
            ctl[CTL_LAYOUT + slot.word] = offset
            offset += nbytes
    bases = {}
    for u, stride in strides.items():
        bases[u] = offset
        ctl[CTL_LAYOUT + plan.units[u].stride_word] = stride
        offset += stride * max(1, workers[u])
    for k, inner in within.items():
        slot = plan.allocs[k]
        ctl[CTL_LAYOUT + slot.word] = bases[slot.unit] + inner
    return offset, ctl


# --- call binding: shared with every runtime (backends/signature.py) -----------------------

bind_call, out_shape = signature.bind_call, signature.out_shape
snapshot_tensors = signature.snapshot_tensors


def choose(module, func_name) -> FuncOp:
    """The function a call runs (the interpreter's rules and messages)."""
    names = ", ".join(f"@{f.sym_name}" for f in module.funcs) or "none"
    if func_name is not None:
        for f in module.funcs:
            if f.sym_name == func_name:
                return f
        raise VerifyError(f"the module has no function @{func_name}; it holds {names}")
    if len(module.funcs) != 1:
        raise VerifyError(f"the module holds {len(module.funcs)} functions ({names}); "
                          f"choose one with func_name=")
    return module.funcs[0]


def index_scalars(func: FuncOp, values) -> dict:
    """Index-typed scalar arguments by parameter index (host expressions read them)."""
    return {k: int(v) for k, (p, v) in enumerate(zip(func.args, values))
            if p.type is index}


# --- status ------------------------------------------------------------------------------

def fail_helpers(qualifier: str, lock: tuple = ("", "")) -> str:
    """C text of ``nq_fail`` (records a failure: the lowest key of a unit wins; ``lock``
    brackets the update where workers run concurrently) and ``nq_stopped``."""
    lock, unlock = lock
    ctl_failed, ctl_key, ctl_status, ctl_err = CTL_FAILED, CTL_KEY, CTL_STATUS, CTL_ERR
    return f"""{qualifier} void nq_fail(nq_u64* ctl, nq_u64 unit, nq_i64 key, nq_i64 code,
                    const nq_i64* nums, int n) {{
    volatile nq_u64* v = ctl;
{lock}    if (v[{ctl_failed}] != unit + 1u || (nq_i64)v[{ctl_key}] > key) {{
        v[{ctl_key}] = (nq_u64)key;
        v[{ctl_status}] = (nq_u64)code;
        for (int i = 0; i < n; ++i) v[{ctl_err} + i] = (nq_u64)nums[i];
        v[{ctl_failed}] = unit + 1u;
    }}
{unlock}}}
NQ_FN int nq_stopped(const nq_u64* ctl, nq_u64 unit) {{
    nq_u64 f = *(const volatile nq_u64*)ctl;
    return f != 0u && f != unit + 1u;
}}
"""




def error_for(plan: FuncPlan, ctl) -> Exception | None:
    """The exception a finished call's control block reports, or None."""
    if int(ctl[CTL_FAILED]) == 0:
        return None
    from ninfer_ir.backends.abi import error_for_status
    status = int(ctl[CTL_STATUS])
    nums = [int(np.int64(np.uint64(x))) for x in ctl[CTL_ERR:CTL_ERR + ERR_SLOTS]]
    return error_for_status(status, nums, plan.checks, plan.guards)

