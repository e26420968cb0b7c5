"""The quantized ops in the CPU emitter: ``quantize_into`` and ``quantized_dot`` call the
hand-written kernels of ``qkernels``; ``RecordRows`` is the row dot
``quantized_dot(w[n], xq)`` of a row loop the ``select`` pass put in a
``kernel_call {kernel = "<stem>_dot_rows"}``, computed by the rows kernel of the dot's
pair (``pair.cpu_rows``, the GEMV fast path) a block of rows at a time
(``rows.RowsCall`` drives it and runs the loop's epilogue).

Layout needs of the kernels, checked at run time: the bytes of a record contiguous
(last stride 1); for quantize, the 256 floats of a row contiguous (last stride 4),
the row stride a whole number of floats, and source and destination disjoint. A
view that does not satisfy them is staged: copied into a contiguous scratch block.
Quantize writes straight into a fresh ``alloc`` only; any other destination gets
the records copied in after a successful quantize, so a failing quantize leaves it
untouched, as in the interpreter. Addresses need no alignment (the kernels
load bytes); the rows kernel writes its results into an aligned staging block.

The rows kernel is called when every row index is in range, the record counts agree
and the records are contiguous; otherwise the ordinary loop runs and reports the
interpreter's error at the right iteration. Results are identical: the rows kernel
computes each row exactly as the single dot does. A row loop of at least
``ROWS_PARALLEL_ELEMENTS`` logical elements whose rows are independent is split over the
thread pool like a parallel loop, even when not marked parallel.
"""
from __future__ import annotations

import llvmlite.ir as ir

from ninfer_ir.alias import is_alloc, is_input, may_alias, root
from ninfer_ir import ops as O
from ninfer_ir.sumorder import SumOrder

from ninfer_ir.backends.llvm.gen.emitter import Reg, i64c
from ninfer_ir.backends.llvm.gen.folds import ordered_fold
from ninfer_ir.backends.llvm.gen.memory import copy_grid, disjoint
from ninfer_ir.backends.abi import REASON_NO_MEMORY, Guard, quantize_tag

__all__ = ["add_quantized_library", "lower_quantize_into", "lower_quantized_dot",
           "RecordRows"]

F32 = ir.FloatType()
_LIMIT = 1 << 40          # records; more than any array can hold
ROWS_PARALLEL_ELEMENTS = 8192 * 256   # a row loop this large runs on the pool (~50 us of work)


def add_quantized_library(module: ir.Module, isa: str, ops) -> None:
    """Add to ``module`` the kernels (for ``isa``) of the quantize targets and dot pairs
    the quantized ops ``ops`` use, as the tables of ``ninfer_ir.quant`` name them."""
    from ninfer_ir.backends.llvm.kernels.qkernels import add_kernels_for
    pairs = {op.pair for op in ops if isinstance(op, O.QuantizedDotOp)}
    targets = {op.target for op in ops if isinstance(op, O.QuantizeIntoOp)}
    add_kernels_for(module, isa, sorted(pairs, key=lambda p: p.stem),
                    sorted(targets, key=lambda t: t.stem))


def _merge(e, direct, stage, names):
    """Branch on ``direct``: the direct values, or the ones ``stage()`` computes (in a
    staging block); returns the merged values (phis) and the staging flag."""
    b = e.b
    pre = b.block
    stage_bb, merge = e.new_block("stage"), e.new_block("staged")
    b.cbranch(direct, merge, stage_bb)
    b.position_at_end(stage_bb)
    staged = stage()
    stage_end = b.block
    b.branch(merge)
    b.position_at_end(merge)
    out = []
    for d, s in zip(names, staged):
        phi = b.phi(d.type)
        phi.add_incoming(d, pre)
        phi.add_incoming(s, stage_end)
        out.append(phi)
    return out


def _records_guard(e, op, what, a, c):
    e.guard(e.b.icmp_signed("==", a, c), Guard("records", op, what=what), [a, c])


def scratch(e, g, per_record):
    e.fail_if(e.b.icmp_unsigned(">", g, i64c(_LIMIT)), REASON_NO_MEMORY)
    return e.heap(e.b.mul(g, i64c(per_record)))


def lower_quantize_into(e, op):
    """Source staged unless its rows are contiguous floats apart from the destination;
    destination staged unless it is a fresh ``alloc`` with contiguous records, so that
    a failing quantize leaves memory the caller can see untouched, as the interpreter
    does."""
    b = e.b
    true = ir.Constant(ir.IntType(1), 1)
    src, dst = e.value(op.operands[0]), e.value(op.operands[1])
    g = src.shape[0]
    _records_guard(e, op, "values and destination", g, dst.shape[0])
    (s0, s1), (d0, d1) = src.byte_strides(b), dst.strides
    target = op.target
    rec, block = target.record_bytes, target.block_elems
    src_ok = b.and_(b.and_(b.icmp_signed("==", s1, i64c(4)),
                           b.icmp_signed("==", b.srem(s0, i64c(4)), i64c(0))),
                    apart(e, op.operands[1], op.operands[0]))
    slots = []

    def stage_src():
        tmp, slot = scratch(e, g, 4 * block)
        slots.append(slot)
        copy_grid(e, src.ptr, s0, s1, tmp, i64c(4 * block), i64c(4), g, block, 4)
        return [tmp, i64c(block)]
    vp, vstride = _merge(e, src_ok, stage_src, [src.ptr, b.sdiv(s0, i64c(4))])

    def stage_dst():
        tmp, slot = scratch(e, g, rec)
        slots.append(slot)
        return [tmp, i64c(rec), true]
    fresh = is_alloc(root(op.operands[1]))
    dst_ok = b.icmp_signed("==", d1, i64c(1)) if fresh else ir.Constant(ir.IntType(1), 0)
    dp, dstride, staged = _merge(e, dst_ok, stage_dst,
                                 [dst.ptr, d0, ir.Constant(ir.IntType(1), 0)])
    fn = e.module.globals[target.cpu]
    status = b.call(fn, [b.bitcast(vp, F32.as_pointer()), vstride, g, dp, dstride])
    with b.if_then(b.and_(staged, b.icmp_signed("==", status, i64c(0)))):
        copy_grid(e, dp, i64c(rec), i64c(1), dst.ptr, d0, d1, g, rec, 1)
    for slot in slots:
        e.free_slot(slot)
    # status = (record + base + the target's tag) * 8 + reason (backends/abi.py)
    offset = i64c(quantize_tag(target))
    if len(op.operands) == 3:     # records numbered from a base
        offset = b.add(offset, e.value(op.operands[2]))
    if len(op.operands) == 3 or quantize_tag(target):
        status = b.select(b.icmp_signed("==", status, i64c(0)), status,
                          b.add(status, b.mul(offset, i64c(8))))
    e.fail_if(b.icmp_signed("!=", status, i64c(0)), status)


def _record_operands(e, op):
    """``(lhs ptr, lhs record stride, rhs ptr, rhs record stride, G)``, staged if needed."""
    b = e.b
    lhs, rhs = e.value(op.operands[0]), e.value(op.operands[1])
    g = lhs.shape[0]
    _records_guard(e, op, "lhs and rhs", g, rhs.shape[0])
    (l0, l1), (r0, r1) = lhs.strides, rhs.strides
    pair = op.pair
    lrec, rrec = pair.lhs.record_bytes, pair.rhs.record_bytes
    direct = b.and_(b.icmp_signed("==", l1, i64c(1)), b.icmp_signed("==", r1, i64c(1)))
    slot_box = []

    def stage():
        tmp, slot = scratch(e, g, lrec + rrec)
        slot_box.append(slot)
        rtmp = b.gep(tmp, [b.mul(g, i64c(lrec))])
        copy_grid(e, lhs.ptr, l0, l1, tmp, i64c(lrec), i64c(1), g, lrec, 1)
        copy_grid(e, rhs.ptr, r0, r1, rtmp, i64c(rrec), i64c(1), g, rrec, 1)
        return [tmp, i64c(lrec), rtmp, i64c(rrec)]
    merged = _merge(e, direct, stage, [lhs.ptr, l0, rhs.ptr, r0])
    return merged + [g], slot_box[0]


def lower_quantized_dot(e, op):
    b = e.b
    (lp, ls, rp, rs, g), slot = _record_operands(e, op)
    dot = e.module.globals[op.pair.cpu_dot]
    order = SumOrder.parse(op.attrs.get("order", "seq"))
    if order.chunk is None and not order.tree:
        value = b.call(dot, [lp, ls, rp, rs, g])
    else:
        def record(k):
            return b.call(dot, [b.gep(lp, [b.mul(k, ls)]), ls, b.gep(rp, [b.mul(k, rs)]), rs,
                                i64c(1)])
        value = ordered_fold(e, g, record, b.fadd, ir.Constant(F32, 0.0), order)
    e.free_slot(slot)
    return Reg(value)


# --- the GEMV fast path ---------------------------------------------------------------

def apart(e, written, read):
    """i1: the buffer value ``written`` shares no byte with the value ``read``. A register,
    a tensor parameter (the launcher copies them) and a fresh ``alloc`` overlap no other
    root (``ninfer_ir.alias``); anything else is checked at run time."""
    if isinstance(e.value(read), Reg) or is_input(read) or not may_alias(written, read):
        return ir.Constant(ir.IntType(1), 1)
    return disjoint(e.b, e.value(written), e.value(read))


class RecordRows:
    """The row dot ``quantized_dot(w[n], xq)`` of a matched row loop
    (``library.QuantizedRow``) as calls of the rows kernel (``rows.RowsCall``)."""

    def __init__(self, part):
        self.part = part

    def _operands(self, e):
        w, xq = self.part.params
        return e.value(w), e.value(xq)

    def big(self, e, n):
        """i1: ``n`` rows hold enough logical elements to gain from threads."""
        b = e.b
        g = self._operands(e)[0].shape[1]
        elements = b.mul(b.mul(n, g), i64c(self.part.op.pair.block_elems))
        return b.icmp_signed(">=", elements, i64c(ROWS_PARALLEL_ELEMENTS))

    def conditions(self, e, first, last):
        """i1s under which no row of ``[first, last)`` fails and the kernel reads the
        layout (``first >= 0`` is checked by the caller)."""
        b = e.b
        w, x = self._operands(e)
        return [b.icmp_signed("<=", last, w.shape[0]),
                b.icmp_signed("==", w.shape[1], x.shape[0]),
                b.icmp_signed("==", w.strides[2], i64c(1)),
                b.icmp_signed("==", x.strides[1], i64c(1))]

    def call(self, e, first, rows, out):
        """``out[0:rows]`` (an ``f32*``) = the dots of rows ``first ..``."""
        b = e.b
        w, x = self._operands(e)
        wp = b.gep(w.ptr, [b.mul(first, w.strides[0])])
        fn = e.module.globals[self.part.op.pair.cpu_rows]
        b.call(fn, [wp, w.strides[0], w.strides[1], x.ptr, x.strides[0], w.shape[1], rows,
                    out, i64c(1)])
