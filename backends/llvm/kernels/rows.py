"""A row loop the ``select`` pass put in a ``kernel_call``: the library kernels compute
the row dots of a block of rows into a staging block, then the loop's epilogue runs on
each row of the block (``ninfer_ir/library.py`` says which loops match).

    for each block of up to BLOCK_ROWS rows:
        for each row dot d:  stage_d[0:count] = rows kernel of d (records or decode)
        for each row n of the block, in order:
            bind n and each dot's value (stage_d[j]); emit the epilogue's ops

The epilogue is the loop's own ops, emitted by the ordinary lowerings in the loop's
order, and each dot is computed by the kernel exactly as the single op computes it, so
the result is the loop's bit for bit. Moving the dots of a block ahead of the epilogues
of its rows is safe when (checked at run time, else the loop itself runs):

* no dot can fail: its rows in range, its record counts / row geometry right, its
  layout one the kernel reads (``DotCall.conditions``);
* no dot reads memory the epilogue writes (each output apart from each dot's inputs,
  ``records.apart``);
* and no epilogue load or store can fail either (every index in range for every row),
  so a loop without ``check`` ops fails nowhere, which lets a large one run on the
  thread pool (a ``check`` may fail mid-loop, so such a loop keeps one thread).

Threads (``worth_threads``): a loop with enough dot work (``DotCall.big``) is split over
the pool, like a parallel loop, when its rows are also independent of one another: each
output's row axis has a stride of at least one element, and each load or other store
of the epilogue either touches the same element as a store (same buffer, same
indices) or shares no byte with it.
"""
from __future__ import annotations

import llvmlite.ir as ir

from ninfer_ir.errors import VerifyError
from ninfer_ir.library import (GEMM_KERNELS, GemmEpilogueParts, Match, QuantizedRow,
                               match_loop)
from ninfer_ir.ops_select import KernelCallOp

from ninfer_ir.backends.llvm.gen.emitter import Reg, carried_loop, i64c
from ninfer_ir.backends.llvm.kernels.qir import all_of
from ninfer_ir.backends.llvm.kernels.records import apart

__all__ = ["selected", "RowsCall", "BLOCK_ROWS"]

F32 = ir.FloatType()
BLOCK_ROWS = 64     # rows per kernel call: 4 vectors of 16 lanes of the decode kernel


def selected(loop):
    """The ``RowsCall`` of a loop the ``select`` pass put in a ``kernel_call``, or None
    for any other loop."""
    call = loop.parent_op
    if not isinstance(call, KernelCallOp):
        return None
    found = match_loop(loop)
    if not isinstance(found, Match) or found.kernel != call.kernel:
        why = found if isinstance(found, str) else f"it is a {found.kernel} loop"
        raise VerifyError(f"kernel_call names {call.kernel} but its loop is not one: {why}",
                          call)
    gemm = found.kernel in GEMM_KERNELS
    if len(found.params) != len(call.operands) or \
            (not gemm and len(found.parts.dots) != call.dots) or \
            any(a is not b for a, b in zip(found.params, call.operands)):
        raise VerifyError(f"the parameters of kernel_call {call.kernel} are not those of "
                          f"its loop", call)
    if gemm:
        from ninfer_ir.backends.llvm.kernels.gemm_nest import GemmEpilogue, GemmNest
        if isinstance(found.parts, GemmEpilogueParts):
            p = found.parts
            return GemmEpilogue(found.kernel, p.inner, p.rows, p.quant)
        return GemmNest(found.kernel, *found.parts)
    return RowsCall(found.parts)


def _dot_call(part):
    if isinstance(part, QuantizedRow):
        from ninfer_ir.backends.llvm.kernels.records import RecordRows
        return RecordRows(part)
    from ninfer_ir.backends.llvm.kernels.qdecode import DecodeRows
    return DecodeRows(part)




class RowsCall:
    """A matched ``library.RowLoop``: its dot calls, run-time conditions and emission."""

    def __init__(self, rows):
        self.rows = rows
        self.iv = rows.loop.body.args[0]
        self.dots = [_dot_call(d) for d in rows.dots]

    def _prologue(self, e):
        for op in self.rows.prologue:
            e.op(op)

    def _in_range(self, e, first, last):
        """i1s: every index of every epilogue load and store in range for rows
        ``[first, last)`` (``first >= 0`` is checked by the caller)."""
        b, out = e.b, []
        for op in self.rows.loads + self.rows.stores:
            view = e.value(op.source)
            if isinstance(view, Reg):
                continue
            for axis, i in enumerate(op.indices):
                if i is self.iv:
                    out.append(b.icmp_signed("<=", last, view.shape[axis]))
                else:
                    out.append(b.icmp_unsigned("<", e.value(i), view.shape[axis]))
        return out

    def _dots_apart(self, e):
        """i1s: no output shares a byte with a dot's inputs."""
        return [apart(e, y, x) for y in self.rows.outputs
                for d in self.dots for x in d.part.params]

    def _rows_apart(self, e):
        """i1s: the rows of the epilogue touch different memory (see the module doc)."""
        b, out = e.b, []
        stores = self.rows.stores
        for st in stores:
            view = e.value(st.dest)
            axis = list(st.indices).index(self.iv)
            stride = view.byte_strides(b)[axis]
            size = i64c(view.itemsize)
            out.append(b.or_(b.icmp_signed(">=", stride, size),
                             b.icmp_signed("<=", stride, b.neg(size))))
        for k, st in enumerate(stores):
            for other in self.rows.loads + stores[k + 1:]:
                if other.source is st.dest and list(other.indices) == list(st.indices):
                    continue
                out.append(apart(e, st.dest, other.source))
        return out

    def worth_threads(self, e, n):
        """i1: the rows are independent and hold enough dot work to gain from threads."""
        b = e.b
        self._prologue(e)
        if self.rows.checks:       # a check may fail mid-loop: the rows stay in order
            return ir.Constant(ir.IntType(1), 0)
        big = ir.Constant(ir.IntType(1), 0)
        for d in self.dots:
            big = b.or_(big, d.big(e, n))
        return all_of(b, [big] + self._dots_apart(e) + self._rows_apart(e))

    def emit(self, e, loop, lb, step, k0, k1):
        """Iterations ``[k0, k1)``: blocks of kernel calls and epilogues when that is
        safe, else the ordinary loop."""
        b = e.b
        self._prologue(e)
        first, last = b.add(lb, k0), b.add(lb, k1)
        conds = [b.icmp_signed("<", k0, k1), b.icmp_signed(">=", first, i64c(0))]
        for d in self.dots:
            conds += d.conditions(e, first, last)
        conds += self._in_range(e, first, last) + self._dots_apart(e)
        with b.if_else(all_of(b, conds)) as (then, otherwise):
            with then:
                self._blocks(e, first, b.sub(k1, k0))
            with otherwise:
                self.fallback(e, loop, lb, step, k0, k1)

    def fallback(self, e, loop, lb, step, k0, k1):
        """The ordinary loop, where the blocks would not compute what it computes."""
        e.loop(loop, lb, step, k0, k1, [])

    def _blocks(self, e, first, count):
        b = e.b
        stages = [e.entry_alloca(ir.ArrayType(F32, BLOCK_ROWS), align=16) for _ in self.dots]
        blocks = b.udiv(b.add(count, i64c(BLOCK_ROWS - 1)), i64c(BLOCK_ROWS))

        def block(k, _):
            start = b.mul(k, i64c(BLOCK_ROWS))
            left = b.sub(count, start)
            rows = b.select(b.icmp_signed("<", left, i64c(BLOCK_ROWS)), left,
                            i64c(BLOCK_ROWS))
            row0 = b.add(first, start)
            for d, stage in zip(self.dots, stages):
                d.call(e, row0, rows, b.gep(stage, [i64c(0), i64c(0)]))

            def row(j, _):
                e.bind(self.iv, b.add(row0, j))
                for d, stage in zip(self.dots, stages):
                    e.bind(d.part.result, Reg(b.load(b.gep(stage, [i64c(0), j]))))
                for op in self.rows.epilogue:
                    e.op(op)
                return []
            # every index is in range (``_in_range``): no bounds guards, so LLVM may
            # vectorize the epilogue
            with e.unguarded():
                carried_loop(b, e.fn, i64c(0), rows, [], row, name="epilogue")
            return []
        carried_loop(b, e.fn, i64c(0), blocks, [], block, name="rowblock")
