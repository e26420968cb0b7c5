"""The quantized ops in the CPU emitter: ``quantize_into`` and ``quantized_dot`` call the
hand-written kernels of ``qkernels``; a row loop of quantized dots becomes one call of
``ninfer_q4k_q8k_dot_rows`` (the GEMV fast path) where the ``select`` pass put it in a
``kernel_call {kernel = "q4k_q8k_dot_rows"}``; ``selected`` also gives the row loop of
dots over decoded rows (``decode_dot_rows``), whose fast path is ``qdecode.DecodeRows``.

Layout needs of the kernels, checked at run time: the bytes of a record contiguous
(last stride 1); for quantize, the 256 floats of a row contiguous (last stride 4),
the row stride a whole number of floats, and source and destination disjoint. A
view that does not satisfy them is staged: copied into a contiguous scratch block.
Quantize writes straight into a fresh ``alloc`` only; any other destination gets
the records copied in after a successful quantize, so a failing quantize leaves it
untouched, as in the interpreter. Addresses need no alignment (the kernels
load bytes), except ``y`` of the rows kernel: the fast path is taken only when
``y`` is 4-byte aligned with a stride that is a whole number of floats.

The fast path: ``for %n = lb .. ub step 1 { %wn = subview(%w, %n) {axes = "i::"};
%r = quantized_dot(%wn, %xq) {order = "seq"}; %s = load(%r); store(%s, %y, %n) }``
with ``%w``, ``%xq``, ``%y`` defined outside the loop (``ninfer_ir/library.py``). It
runs when every row index is in range and the record counts agree; otherwise the
ordinary loop runs and reports the interpreter's error at the right iteration. Results
are identical: the rows kernel computes each row exactly as the single dot does. Its iterations
are independent when ``y`` overlaps neither operand (checked at run time unless
the IR shows it: tensor parameters never overlap buffers, as the launcher copies
them, and an ``alloc`` overlaps no other root), so an independent row loop of at least ``ROWS_PARALLEL_ELEMENTS`` logical elements is
split over the thread pool like a parallel loop, even when not marked parallel.
"""
from __future__ import annotations

import llvmlite.ir as ir

from ninfer_ir.alias import is_alloc, is_input, may_alias, root
from ninfer_ir.errors import VerifyError
from ninfer_ir.library import GEMM_KERNELS, Match, match_loop
from ninfer_ir.ops_select import KernelCallOp
from ninfer_ir import ops as O
from ninfer_ir.sumorder import SumOrder

from ninfer_ir.backends.llvm.gen.emitter import I64, Reg, i64c
from ninfer_ir.backends.llvm.gen.folds import ordered_fold
from ninfer_ir.backends.llvm.gen.memory import copy_grid, disjoint
from ninfer_ir.backends.abi import REASON_NO_MEMORY, Guard, quantize_tag

__all__ = ["add_quantized_library", "lower_quantize_into", "lower_quantized_dot",
           "selected", "emit_rows", "rows_worth_threads"]

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


def _scratch(e, g, per_record):
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
                    _apart(e, op.operands[1], op.operands[0]))
    slots = []

    def stage_src():
        tmp, slot = _scratch(e, g, 4 * block)
        slots.append(slot)
        copy_grid(e, src.ptr, s0, s1, tmp, i64c(4 * block), i64c(4), g, block, 4)
        return [tmp, i64c(block)]
    vp, vstride = _merge(e, src_ok, stage_src, [src.ptr, b.sdiv(s0, i64c(4))])

    def stage_dst():
        tmp, slot = _scratch(e, g, rec)
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
        tmp, slot = _scratch(e, g, lrec + rrec)
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

def selected(loop):
    """The matched ops of a loop the ``select`` pass put in a ``kernel_call``: the tuple
    ``(subview, quantized_dot, store)`` of ``q4k_q8k_dot_rows``, a ``qdecode.DecodeRows``
    of ``decode_dot_rows``, a ``gemm_nest.GemmNest`` of the GEMM kernels, or None for
    any other loop."""
    call = loop.parent_op
    if not isinstance(call, KernelCallOp):
        return None
    found = match_loop(loop)
    if not isinstance(found, Match) or found.kernel != call.kernel:
        why = found if isinstance(found, str) else f"it is a {found.kernel} loop"
        raise VerifyError(f"kernel_call names {call.kernel} but its loop is not one: {why}",
                          call)
    if any(a is not b for a, b in zip(found.params, call.operands)):
        raise VerifyError(f"the parameters of kernel_call {call.kernel} are not those of "
                          f"its loop", call)
    if found.kernel in GEMM_KERNELS:
        from ninfer_ir.backends.llvm.kernels.gemm_nest import GemmNest
        return GemmNest(found.kernel, *found.parts)
    if isinstance(found.parts[1], O.QuantizedDotOp):
        return found.parts
    from ninfer_ir.backends.llvm.kernels.qdecode import DecodeRows
    return DecodeRows(loop, *found.parts)


def _apart(e, written, read):
    """i1: the buffer value ``written`` shares no byte with the value ``read``. Tensor
    parameters never overlap buffers (the launcher copies them) and a fresh ``alloc``
    overlaps no other root (``ninfer_ir.alias``); anything else is checked at run time."""
    if is_input(read) or not may_alias(written, read):
        return ir.Constant(ir.IntType(1), 1)
    return disjoint(e.b, e.value(written), e.value(read))


def _independent(e, pattern):
    """i1: the output ``y`` overlaps neither ``w`` nor ``xq``."""
    sv, qd, st = pattern
    return e.b.and_(_apart(e, st.operands[1], sv.operands[0]),
                    _apart(e, st.operands[1], qd.operands[1]))


def rows_worth_threads(e, pattern, n):
    """i1: the row loop is independent and holds enough records to gain from threads."""
    if not isinstance(pattern, tuple):
        return pattern.worth_threads(e, n)
    b = e.b
    g = e.value(pattern[0].operands[0]).shape[1]
    elements = b.mul(b.mul(n, g), i64c(pattern[1].pair.block_elems))
    big = b.icmp_signed(">=", elements, i64c(ROWS_PARALLEL_ELEMENTS))
    return b.and_(big, _independent(e, pattern))


def emit_rows(e, pattern, loop, lb, step, k0, k1):
    """Iterations ``[k0, k1)`` of a matched row loop: one rows call when it is safe,
    else the ordinary loop."""
    if not isinstance(pattern, tuple):
        return pattern.emit(e, loop, lb, step, k0, k1)
    b = e.b
    sv, qd, st = pattern
    w, x, y = e.value(sv.operands[0]), e.value(qd.operands[1]), e.value(st.operands[1])
    strides = y.byte_strides(b)
    ys = strides[-1]
    first, last = b.add(lb, k0), b.add(lb, k1)
    lead = [e.value(v) for v in st.operands[2:-1]]       # fixed leading indices of y
    y_base = y.ptr
    in_range = []
    for axis, i in enumerate(lead):
        y_base = b.gep(y_base, [b.mul(i, strides[axis])])
        in_range += [b.icmp_signed(">=", i, i64c(0)), b.icmp_signed("<", i, y.shape[axis])]
    y_addr = b.ptrtoint(y_base, I64)
    conds = [
        b.icmp_signed("<", k0, k1), b.icmp_signed(">=", first, i64c(0)),
        b.icmp_signed("<=", last, w.shape[0]), b.icmp_signed("<=", last, y.shape[-1]),
        *in_range,
        b.icmp_signed("==", w.shape[1], x.shape[0]),
        b.icmp_signed("==", w.strides[2], i64c(1)), b.icmp_signed("==", x.strides[1], i64c(1)),
        b.icmp_signed("==", b.srem(ys, i64c(4)), i64c(0)),
        b.icmp_unsigned("==", b.and_(y_addr, i64c(3)), i64c(0)),
        _independent(e, pattern),
    ]
    fast = conds[0]
    for c in conds[1:]:
        fast = b.and_(fast, c)
    with b.if_else(fast) as (then, otherwise):
        with then:
            rows = e.module.globals[qd.pair.cpu_rows]
            wp = b.gep(w.ptr, [b.mul(first, w.strides[0])])
            yp = b.bitcast(b.gep(y_base, [b.mul(first, ys)]), F32.as_pointer())
            b.call(rows, [wp, w.strides[0], w.strides[1], x.ptr, x.strides[0], w.shape[1],
                          b.sub(k1, k0), yp, b.sdiv(ys, i64c(4))])
        with otherwise:
            e.loop(loop, lb, step, k0, k1, [])

