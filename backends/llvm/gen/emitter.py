"""The core of the CPU emitter: the values it maps IR values to (``View``, ``Reg``,
scalar ``ir.Value``s), the per-kernel record ``KernelInfo`` and ``Emitter``, the
builder state of one LLVM function: value map, run-time guards, the shared exit
block that frees live heap blocks and returns the status word, and counted loops.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field

import llvmlite.ir as ir

from ninfer_ir.errors import VerifyError
from ninfer_ir.ir import FuncOp
from ninfer_ir.types import ScalarType, ShapedType

from ninfer_ir.backends.llvm.gen import scalars as S
from ninfer_ir.backends.abi import ERR_SLOTS, REASON_GUARD, REASON_NO_MEMORY, Guard

__all__ = ["View", "Reg", "KernelInfo", "Emitter", "i64c", "no_lowering", "from_word",
           "to_word", "I8", "I64", "I8P", "I64P", "KERNEL_TYPE", "BODY_TYPE", "PAR_TYPE",
           "STACK_LIMIT", "reg_value", "wrap_value"]

I8 = ir.IntType(8)
I64 = ir.IntType(64)
I8P = I8.as_pointer()
I64P = I64.as_pointer()
KERNEL_TYPE = ir.FunctionType(I64, [I64P, I8P, I64P])
BODY_TYPE = ir.FunctionType(I64, [I8P, I64, I64, I64P])
PAR_TYPE = ir.FunctionType(I64, [I8P, I8P, I64, I64P])
STACK_LIMIT = 16384


def carried_loop(b, fn, lo, hi, carried, body, name="loop", index_name=""):
    """``for i in [lo, hi)``: ``carried = body(i, carried)`` as blocks ``name.head``,
    ``name.body``, ``name.done`` appended to ``fn``; returns the final carried values."""
    pre = b.block
    head = fn.append_basic_block(f"{name}.head")
    loop = fn.append_basic_block(f"{name}.body")
    done = fn.append_basic_block(f"{name}.done")
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(I64, name=index_name)
    i.add_incoming(lo, pre)
    phis = []
    for v in carried:
        phi = b.phi(v.type)
        phi.add_incoming(v, pre)
        phis.append(phi)
    b.cbranch(b.icmp_signed("<", i, hi), loop, done)
    b.position_at_end(loop)
    out = body(i, list(phis))
    latch = b.block
    i.add_incoming(b.add(i, ir.Constant(I64, 1)), latch)
    for phi, v in zip(phis, out):
        phi.add_incoming(v, latch)
    b.branch(head)
    b.position_at_end(done)
    return phis

class View:
    """A memory view: an ``i8*`` address, sizes and strides (``ir.Value`` each).

    Strides count ``unit`` bytes: 1 (byte strides) or the element size (element
    strides, which let LLVM version loops on a unit stride and vectorize them).
    """
    __slots__ = ("ptr", "shape", "strides", "dtype", "unit")

    def __init__(self, ptr, shape, strides, dtype, unit):
        self.ptr, self.shape, self.strides = ptr, list(shape), list(strides)
        self.dtype, self.unit = dtype, unit

    @property
    def itemsize(self) -> int:
        return max(1, self.dtype.bits // 8)

    def byte_strides(self, b):
        return [s if self.unit == 1 else b.mul(s, i64c(self.unit)) for s in self.strides]

    def advance(self, b, offset):
        """The address ``offset`` stride units further."""
        if self.unit == 1:
            return b.gep(self.ptr, [offset])
        typed = b.bitcast(self.ptr, ir.IntType(8 * self.unit).as_pointer())
        return b.bitcast(b.gep(typed, [offset]), I8P)


class Reg:
    """A rank-0 tensor held in a register (the result of dot/reduce/quantized_dot)."""
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def i64c(v: int) -> ir.Constant:
    return ir.Constant(I64, v)


def no_lowering(op, why="") -> VerifyError:
    return VerifyError(f"no cpu lowering for {op.name}{why}", op)


@dataclass
class KernelInfo:
    """What the launcher needs to call one compiled function."""
    name: str
    symbol: str
    func: FuncOp
    slots: list            # per parameter: (offset, count)
    n_slots: int
    checks: list           # check ops by id
    guards: list = field(default_factory=list)
    bodies: int = 0


# --- one LLVM function being emitted -----------------------------------------------------

class Emitter:
    """Builder state for one LLVM function: the value map, the shared exit block that
    frees live heap blocks and returns the status, and the run-time guards."""

    def __init__(self, kernel: KernelInfo, fn: ir.Function, err, options):
        self.kernel, self.fn, self.err, self.options = kernel, fn, err, options
        self.module = fn.module
        entry = fn.append_basic_block("entry")
        start = fn.append_basic_block("start")
        self.exit = fn.append_basic_block("exit")
        self.entry_b = ir.IRBuilder(entry)
        self.entry_b.position_before(self.entry_b.branch(start))
        self.b = ir.IRBuilder(start)
        self.values: dict = {}
        self.symbols: dict = {}
        self.heap_slots: list = []
        self.slot_of: dict = {}
        self.incoming: list = []
        self.can_outline = True
        self.ranges: dict = {}           # loop index value -> (lb, ub, step) ir values
        self.if_modes: dict = {}         # likely if -> "then" inside a block where it holds

    # values
    def value(self, v):
        return self.values[v]

    def bind(self, v, x):
        self.values[v] = x

    def entry_alloca(self, ty, align=None, name=""):
        slot = self.entry_b.alloca(ty, name=name)
        if align:
            slot.align = align
        return slot

    def new_block(self, name):
        return self.fn.append_basic_block(name)

    # exits
    def goto_exit(self, status):
        self.incoming.append((status, self.b.block))
        self.b.branch(self.exit)

    def fail_if(self, bad, status, nums=()):
        """If ``bad``: write ``nums`` to the error block and exit with ``status``."""
        if isinstance(bad, ir.Constant) and bad.constant == 0:
            return
        fail, ok = self.new_block("fail"), self.new_block("ok")
        self.b.cbranch(bad, fail, ok)
        self.b.position_at_end(fail)
        for k, n in enumerate(nums[:ERR_SLOTS]):
            self.b.store(n, self.b.gep(self.err, [i64c(k)]))
        self.goto_exit(status if isinstance(status, ir.Value) else i64c(status))
        self.b.position_at_end(ok)

    def guard(self, ok, guard: Guard, nums=()):
        """Exit with the guard's status unless ``ok``."""
        if isinstance(ok, ir.Constant) and ok.constant == 1:
            return
        gid = len(self.kernel.guards)
        self.kernel.guards.append(guard)
        self.fail_if(self.b.not_(ok), gid * 8 + REASON_GUARD, nums)

    def fail_if_null(self, ptr):
        self.fail_if(self.b.icmp_unsigned("==", ptr, ir.Constant(ptr.type, None)),
                     REASON_NO_MEMORY)

    def runtime(self, name, ret, args):
        fn = self.module.globals.get(name)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(ret, args), name=name)
        return fn

    def heap(self, nbytes):
        """A zeroed heap block of ``nbytes`` (an i64 value) freed on every exit."""
        calloc = self.runtime("calloc", I8P, [I64, I64])
        size = self.b.select(self.b.icmp_unsigned("==", nbytes, i64c(0)), i64c(1), nbytes)
        ptr = self.b.call(calloc, [i64c(1), size])
        self.fail_if_null(ptr)
        slot = self.entry_alloca(I8P)
        self.entry_b.store(ir.Constant(I8P, None), slot)
        self.b.store(ptr, slot)
        self.heap_slots.append(slot)
        return ptr, slot

    def free_slot(self, slot):
        free = self.runtime("free", ir.VoidType(), [I8P])
        self.b.call(free, [self.b.load(slot)])
        self.b.store(ir.Constant(I8P, None), slot)

    def finish(self):
        """Fall through to the exit with status 0 and close the function."""
        self.goto_exit(i64c(0))
        self.b.position_at_end(self.exit)
        status = self.b.phi(I64, name="status")
        for v, blk in self.incoming:
            status.add_incoming(v, blk)
        free = self.runtime("free", ir.VoidType(), [I8P])
        for slot in self.heap_slots:
            self.b.call(free, [self.b.load(slot)])
        self.b.ret(status)

    @contextmanager
    def unguarded(self):
        """Emit without bounds guards, where every index is known to be in range."""
        saved, self.options["bounds_checks"] = self.options["bounds_checks"], False
        try:
            yield
        finally:
            self.options["bounds_checks"] = saved

    # structure
    def block(self, block):
        """Emit the ops of ``block``; returns its terminator op."""
        for op in block.ops:
            if op.terminator:
                return op
            self.op(op)
        return None

    def op(self, op):
        rule = self.options["table"].get(type(op))
        if rule is None:
            why = self.options["legalized_away"].get(op.name)
            raise no_lowering(op, f" ({why})" if why else "")
        out = rule(self, op)
        if op.results:
            outs = out if isinstance(out, (list, tuple)) else [out]
            for r, x in zip(op.results, outs):
                self.bind(r, x)

    # loops
    def below(self, v, n) -> bool:
        """Whether the index value ``v`` (an IR value) is known to lie in ``[0, n)``: it is
        the index of an enclosing loop from a constant ``lb >= 0`` by a constant step
        ``> 0`` to ``ub``, where ``ub`` is ``n`` itself or a constant no larger, or an
        integer ``and`` a constant mask below a constant ``n`` (a table index). Such an
        index needs no bounds guard, which would otherwise be an exit inside the loop."""
        r = self.ranges.get(v)
        if r is None:
            return _masked_below(v, n)
        lb, ub, step = r
        if not (isinstance(lb, ir.Constant) and isinstance(step, ir.Constant)
                and lb.constant >= 0 and step.constant > 0):
            return False
        return ub is n or (isinstance(ub, ir.Constant) and isinstance(n, ir.Constant)
                           and ub.constant <= n.constant)

    def trip_count(self, op, lb, ub, step):
        b = self.b
        if not (isinstance(step, ir.Constant) and step.constant != 0):
            self.guard(b.icmp_signed("!=", step, i64c(0)), Guard("step", op))
        up = b.select(b.icmp_signed(">", ub, lb),
                      b.add(b.udiv(b.sub(b.sub(ub, lb), i64c(1)), step), i64c(1)), i64c(0))
        if isinstance(step, ir.Constant) and step.constant > 0:
            return up
        down = b.select(b.icmp_signed(">", lb, ub),
                        b.add(b.udiv(b.sub(b.sub(lb, ub), i64c(1)), b.neg(step)), i64c(1)),
                        i64c(0))
        return b.select(b.icmp_signed(">", step, i64c(0)), up, down)

    def iterate(self, op, lb, step, k0, k1, inits):
        from ninfer_ir.backends.llvm.kernels.rows import selected
        rows = selected(op) if not inits else None
        if rows is not None:
            rows.emit(self, op, lb, step, k0, k1)
            return []
        return self.loop(op, lb, step, k0, k1, inits)

    def loop(self, op, lb, step, k0, k1, inits, blocked=True):
        """``for k in [k0, k1)``: iv = lb + k*step; returns the final carried values. A
        body with ``likely`` ifs runs in blocks that decide them (``unswitch``) unless
        ``blocked`` is false."""
        if blocked and not inits:
            from ninfer_ir.backends.llvm.gen import unswitch
            p = unswitch.plan(op)
            if p is not None:
                unswitch.emit(self, op, p, lb, step, k0, k1)
                return []
        b = self.b
        pre = b.block
        head, body, done = self.new_block("for.head"), self.new_block("for.body"), \
            self.new_block("for.done")
        b.branch(head)
        b.position_at_end(head)
        k = b.phi(I64, name="k")
        k.add_incoming(k0, pre)
        carried = []
        for v in inits:
            phi = b.phi(reg_value(op, v).type)
            phi.add_incoming(reg_value(op, v), pre)
            carried.append(phi)
        b.cbranch(b.icmp_signed("<", k, k1), body, done)
        b.position_at_end(body)
        iv = b.add(lb, b.mul(k, step), name="iv")
        self.bind(op.body.args[0], iv)
        for a, phi in zip(op.body.args[1:], carried):
            self.bind(a, wrap_value(a.type, phi))
        term = self.block(op.body)
        nexts = [reg_value(op, self.value(v)) for v in term.operands]
        latch = b.block
        k.add_incoming(b.add(k, i64c(1)), latch)
        for phi, v in zip(carried, nexts):
            phi.add_incoming(v, latch)
        b.branch(head)
        b.position_at_end(done)
        return [wrap_value(r.type, phi) for r, phi in zip(op.results, carried)]


def reg_value(op, x):
    if isinstance(x, View):
        raise no_lowering(op, " carrying or yielding a view (only scalars and rank-0 values)")
    return x.value if isinstance(x, Reg) else x


def wrap_value(t, v):
    return Reg(v) if isinstance(t, ShapedType) else v


def from_word(b, word, t: ScalarType):
    """A scalar's register value from the 64-bit slot holding its bits."""
    if t.bits == 1:
        return b.icmp_unsigned("!=", word, i64c(0))
    ty = S.reg_type(t)
    low = word if t.bits == 64 else b.trunc(word, ir.IntType(t.bits))
    return low if low.type == ty else b.bitcast(low, ty)


def to_word(b, v):
    """The 64-bit slot form of a register value or pointer."""
    ty = v.type
    if isinstance(ty, ir.PointerType):
        return b.ptrtoint(v, I64)
    if not isinstance(ty, ir.IntType):
        v = b.bitcast(v, ir.IntType({ir.HalfType: 16, ir.FloatType: 32,
                                      ir.DoubleType: 64}[type(ty)]))
    return v if v.type.width == 64 else b.zext(v, I64)


def _masked_below(v, n) -> bool:
    """``v`` is ``cast(and(a, c))`` (or ``and(a, c)``) with a constant ``0 <= c < n``:
    whatever ``a`` holds, ``v`` lies in ``[0, c]``."""
    op = getattr(v, "op", None)
    if op is not None and op.name == "cast":
        op = getattr(op.operands[0], "op", None)
    if op is None or op.name != "and" or not isinstance(n, ir.Constant):
        return False
    for w in op.operands:
        c = getattr(w, "op", None)
        if c is not None and c.name == "constant" and isinstance(c.attrs["value"], int):
            return 0 <= c.attrs["value"] < n.constant
    return False
