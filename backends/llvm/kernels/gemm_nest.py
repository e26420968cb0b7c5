"""The GEMM nests in the CPU emitter: a loop the ``select`` pass put in a
``kernel_call {kernel = "<stem>_gemm"}`` or ``{kernel = "<stem>_gemm_quantize"}``
(``ninfer_ir/library.py``) becomes one call of ``ninfer_<stem>_gemm`` (``qgemm``),
split over the thread pool by blocks of weight rows.

``<stem>_gemm``: ``for m { for n { y[..., m, n] = quantized_dot(w[n], xq[m]) } }``; the
kernel reads the records of ``xq`` where they are. ``<stem>_gemm_quantize``: the body
first quantizes ``x[m]`` into a fresh buffer; the fast path quantizes every row of
the nest into one scratch block (the target's quantize kernel, e.g.
``ninfer_q8k_quantize``, row by row) and then calls
the GEMM on it. A failing quantize leaves nothing written by the fast path, and the
ordinary loop then runs from the start, so the error, and what was stored before it,
are the interpreter's.

The fast path runs when both loops have iterations and every index is in range, the
record counts agree, the records' bytes are contiguous (and, for ``x``, a record's floats
are contiguous with float-aligned row strides), ``y`` is float-aligned with
float-multiple strides, and ``y`` overlaps neither input (checked at run time unless the
IR shows it, as for the rows kernel); otherwise the ordinary loop nest runs. Results are
identical: each ``y[m, n]`` is the dot ``ninfer_<stem>_dot`` computes. With a pool
(``threads`` > 1) and at least ``ROWS_PARALLEL_ELEMENTS`` products, the blocks of
weight rows are spread over the pool (``ninfer_<stem>_gemm_par``); each block is
computed whole by one thread, so the split changes no result.
"""
from __future__ import annotations

import llvmlite.ir as ir

from ninfer_ir.backends.llvm.gen.emitter import I8P, I64, PAR_TYPE, Reg, carried_loop, i64c
from ninfer_ir.backends.llvm.kernels.qgemm import ENV_WORDS, add_gemm, add_gemm_par, blocking
from ninfer_ir.backends.llvm.kernels.qir import all_of
from ninfer_ir.backends.llvm.kernels.records import ROWS_PARALLEL_ELEMENTS, apart, scratch

__all__ = ["GemmNest", "GemmEpilogue", "gemm_call", "nest_conditions", "quantized_then"]

F32P = ir.FloatType().as_pointer()




class _Nest:
    """What the emitter calls on a selected nest (``rows.selected``)."""

    def emit_loop(self, e, loop, lb, step, n):
        """The whole loop, on the pool where there is one."""
        self._emit(e, loop, lb, step, i64c(0), n, e.par)

    def emit(self, e, loop, lb, step, k0, k1):
        """Iterations ``[k0, k1)`` of the loop over m, in the calling thread."""
        self._emit(e, loop, lb, step, k0, k1, None)


class GemmNest(_Nest):
    """The matched ops of a GEMM nest (``library.Match.parts``) and its emission."""

    def __init__(self, kernel, inner, sv, qd, st, quant):
        self.kernel = kernel
        self.inner, self.sv, self.qd, self.st, self.quant = inner, sv, qd, st, quant
        self.pair = qd.pair

    def _emit(self, e, loop, lb, step, k0, k1, par):
        b = e.b
        w, y = e.value(self.sv.operands[0]), e.value(self.st.operands[1])
        rows_of = self.quant.operands[0] if self.quant is not None else self.qd.operands[1]
        src_value = rows_of.op.operands[0]
        src = e.value(src_value)
        m_first, m_count = b.add(lb, k0), b.sub(k1, k0)
        n_first, n_end = e.value(self.inner.operands[0]), e.value(self.inner.operands[1])
        n_count = b.sub(n_end, n_first)
        count = w.shape[1]
        y_strides = y.byte_strides(b)
        ym, yn = y_strides[-2], y_strides[-1]
        y_base = y.ptr
        in_range = []
        for axis, v in enumerate(self.st.operands[2:-2]):
            i = e.value(v)
            y_base = b.gep(y_base, [b.mul(i, y_strides[axis])])
            in_range += [b.icmp_signed(">=", i, i64c(0)), b.icmp_signed("<", i, y.shape[axis])]
        s0, s1, _ = src.byte_strides(b)
        w0, w1, _ = w.byte_strides(b)
        conds = nest_conditions(e, self.quant, self.qd.operands[1], src, [w], m_first,
                                b.add(lb, k1), n_first, n_end, count) + [
            b.icmp_signed("<=", b.add(lb, k1), y.shape[-2]),
            b.icmp_signed("<=", n_end, y.shape[-1]), *in_range,
            b.icmp_signed("==", b.srem(ym, i64c(4)), i64c(0)),
            b.icmp_signed("==", b.srem(yn, i64c(4)), i64c(0)),
            b.icmp_unsigned("==", b.and_(b.ptrtoint(y_base, I64), i64c(3)), i64c(0)),
            apart(e, self.st.operands[1], self.sv.operands[0]),
            apart(e, self.st.operands[1], src_value),
        ]
        fast = all_of(b, conds)
        with b.if_else(fast) as (then, otherwise):
            with then:
                y_first = b.gep(y_base, [b.add(b.mul(m_first, ym), b.mul(n_first, yn))])
                w_first = b.gep(w.ptr, [b.mul(n_first, w0)])
                if self.quant is None:
                    xq = b.gep(src.ptr, [b.mul(m_first, s0)])
                    self._gemm(e, par, [w_first, w0, w1, xq, s0, s1, count, m_count,
                                        n_count, y_first, b.sdiv(ym, i64c(4)),
                                        b.sdiv(yn, i64c(4))])
                else:
                    self._quantized(e, par, loop, lb, step, k0, k1, src, m_first, m_count,
                                    count, [w_first, w0, w1], [n_count, y_first, ym, yn])
            with otherwise:
                e.loop(loop, lb, step, k0, k1, [])

    def _quantized(self, e, par, loop, lb, step, k0, k1, x, m_first, m_count, count,
                   w_args, tail):
        """Quantize rows ``m_first ..`` of ``x`` into scratch, then the GEMM on it; the
        ordinary loop if a quantize fails."""
        b = e.b
        n_count, y_first, ym, yn = tail
        quantized_then(e, self.quant, x, m_first, m_count, count,
                       lambda: e.loop(loop, lb, step, k0, k1, []),
                       lambda xq, row_bytes, rec: self._gemm(
                           e, par, w_args + [xq, row_bytes, rec, count, m_count, n_count,
                                             y_first, b.sdiv(ym, i64c(4)),
                                             b.sdiv(yn, i64c(4))]))

    def _gemm(self, e, par, args):
        gemm_call(e, par, self.pair, args)


def gemm_call(e, par, pair, args):
    """One GEMM call of ``pair`` with the twelve ``args`` (``y`` an i8*), spread over
    ``par`` (the pool, or None)."""
    b = e.b
    isa = e.options["isa"]
    args = args[:9] + [b.bitcast(args[9], F32P)] + args[10:]
    if par is None:
        b.call(add_gemm(e.module, isa, pair), args)
        return
    body = add_gemm_par(e.module, isa, pair)
    e.kernel.bodies += 1          # a body the pool runs: the launcher then passes ``par``
    nb = blocking(isa).block
    m_count, n_count, count = args[7], args[8], args[6]
    blocks = b.sdiv(b.add(n_count, i64c(nb - 1)), i64c(nb))
    work = b.mul(b.mul(b.mul(m_count, n_count), count), i64c(pair.block_elems))
    worth = b.and_(b.icmp_signed(">=", work, i64c(ROWS_PARALLEL_ELEMENTS)),
                   b.icmp_signed(">", blocks, i64c(1)))
    env = e.entry_alloca(ir.ArrayType(I64, ENV_WORDS))
    for k, v in enumerate(args):
        word = b.ptrtoint(v, I64) if isinstance(v.type, ir.PointerType) else v
        b.store(word, b.gep(env, [i64c(0), i64c(k)]))
    env_ptr = b.bitcast(env, I8P)
    alone = b.or_(b.icmp_unsigned("==", par, ir.Constant(I8P, None)), b.not_(worth))
    with b.if_else(alone) as (direct, pooled):
        with direct:
            b.call(add_gemm(e.module, isa, pair), args)
        with pooled:
            b.call(b.bitcast(par, PAR_TYPE.as_pointer()),
                   [b.bitcast(body, I8P), env_ptr, blocks, e.err])


def nest_conditions(e, quant, xq, src, ws, m_first, m_end, n_first, n_end, count):
    """i1s of a GEMM nest over rows ``[m_first, m_end)`` of the activations ``src`` and
    ``[n_first, n_end)`` of each weight view of ``ws``: both ranges non-empty and in
    range, ``count`` records a row everywhere, each weight row's record bytes
    contiguous, and the activation rows in a layout the GEMM reads: contiguous record
    bytes (records form, ``quant`` None), or contiguous floats with float-aligned row
    strides and a quantize buffer ``xq`` (an ``alloc`` sized outside the nest) of
    ``count`` records."""
    b = e.b
    conds = [b.icmp_signed(">", m_end, m_first), b.icmp_signed(">", n_end, n_first),
             b.icmp_signed(">=", m_first, i64c(0)), b.icmp_signed("<=", m_end, src.shape[0]),
             b.icmp_signed(">=", n_first, i64c(0)), b.icmp_signed("==", count, src.shape[1])]
    for w in ws:
        conds += [b.icmp_signed("<=", n_end, w.shape[0]), b.icmp_signed("==", w.shape[1], count),
                  b.icmp_signed("==", w.byte_strides(b)[2], i64c(1))]
    s0, s1, s2 = src.byte_strides(b)
    if quant is None:
        return conds + [b.icmp_signed("==", s2, i64c(1))]
    alloc = xq.op
    size = e.value(alloc.operands[0]) if alloc.operands else i64c(alloc.result.type.shape[0])
    return conds + [b.icmp_signed("==", s2, i64c(4)),
                    b.icmp_signed("==", b.srem(s1, i64c(4)), i64c(0)),
                    b.icmp_signed("==", b.srem(s0, i64c(4)), i64c(0)),
                    b.icmp_signed("==", size, count)]


def quantized_then(e, quant, x, m_first, m_count, count, fallback, run):
    """Rows ``m_first ..`` of the f32 ``x`` quantized by ``quant``'s CPU kernel into one
    scratch block, then ``run(xq, row bytes, record bytes)``; if a row fails,
    ``fallback()`` instead (the ordinary loop, from the start, so the error and what was
    stored before it are the interpreter's). The block is freed either way."""
    b = e.b
    rec = quant.target.record_bytes
    row_bytes = b.mul(count, i64c(rec))
    xq, slot = scratch(e, b.mul(m_count, count), rec)
    s0, s1, _ = x.byte_strides(b)
    kernel = e.module.globals[quant.target.cpu]

    def row(i, carried):
        src = b.bitcast(b.gep(x.ptr, [b.mul(b.add(m_first, i), s0)]), F32P)
        status = b.call(kernel, [src, b.sdiv(s1, i64c(4)), count,
                                 b.gep(xq, [b.mul(i, row_bytes)]), i64c(rec)])
        return [b.or_(carried[0], b.icmp_signed("!=", status, i64c(0)))]
    (failed,) = carried_loop(b, e.fn, i64c(0), m_count, [ir.Constant(ir.IntType(1), 0)],
                             row, name="gemm.quantize")
    with b.if_else(failed) as (bad, good):
        with bad:
            e.free_slot(slot)
            fallback()
        with good:
            run(xq, row_bytes, i64c(rec))
            e.free_slot(slot)


class GemmEpilogue(_Nest):
    """A GEMM nest whose inner loop has an epilogue or several dots (``f[m, n] =
    gelu(g) * u`` of two dots): each dot as one GEMM call into a staging block of the
    nest's ``M x N`` results, then the epilogue over ``(m, n)`` in the nest's order, with
    each dot's value read from its block. The dots cannot fail and read nothing the
    epilogue writes, and no epilogue load or store can fail (every index in range:
    checked at run time with the layout, else the ordinary nest runs), so moving every
    dot ahead of every epilogue changes no result; a failing quantize of the activation
    rows, done first, leaves the ordinary nest to run from the start, as in
    ``GemmNest``."""

    def __init__(self, kernel, inner, rows, quant):
        self.kernel, self.inner, self.rows, self.quant = kernel, inner, rows, quant
        self.pair = rows.dots[0].op.pair

    def _emit(self, e, loop, lb, step, k0, k1, par):
        b = e.b
        rows, inner = self.rows, self.inner
        for op in rows.prologue:
            e.op(op)
        m_iv, n_iv = loop.body.args[0], inner.body.args[0]
        xq_value = rows.dots[0].op.operands[1]
        rows_of = self.quant.operands[0] if self.quant is not None else xq_value
        src_value = rows_of.op.operands[0]
        src = e.value(src_value)
        m_first, m_count, m_end = b.add(lb, k0), b.sub(k1, k0), b.add(lb, k1)
        n_first, n_end = e.value(inner.operands[0]), e.value(inner.operands[1])
        n_count = b.sub(n_end, n_first)
        weights = [d.view.operands[0] for d in rows.dots]
        ws = [e.value(w) for w in weights]
        count = ws[0].shape[1]
        conds = nest_conditions(e, self.quant, xq_value, src, ws, m_first, m_end, n_first,
                                n_end, count)
        for op in rows.loads + rows.stores:      # every epilogue index in range
            view = e.value(op.source)
            if isinstance(view, Reg):
                continue
            for axis, i in enumerate(op.indices):
                if i is m_iv:
                    conds.append(b.icmp_signed("<=", m_end, view.shape[axis]))
                elif i is n_iv:
                    conds.append(b.icmp_signed("<=", n_end, view.shape[axis]))
                else:
                    conds.append(b.icmp_unsigned("<", e.value(i), view.shape[axis]))
        for y in rows.outputs:                   # the dots read nothing the epilogue writes
            conds += [apart(e, y, w) for w in weights] + [apart(e, y, src_value)]
        with b.if_else(all_of(b, conds)) as (then, otherwise):
            with then:
                self._staged(e, par, loop, lb, step, k0, k1, src, ws, m_first, m_count,
                             n_first, n_count, count)
            with otherwise:
                e.loop(loop, lb, step, k0, k1, [])

    def _staged(self, e, par, loop, lb, step, k0, k1, src, ws, m_first, m_count, n_first,
                n_count, count):
        b = e.b
        if self.quant is None:
            s0, s1, _ = src.byte_strides(b)
            self._run(e, par, b.gep(src.ptr, [b.mul(m_first, s0)]), s0, s1, ws, m_first,
                      m_count, n_first, n_count, count)
            return
        quantized_then(e, self.quant, src, m_first, m_count, count,
                       lambda: e.loop(loop, lb, step, k0, k1, []),
                       lambda xq, row_bytes, rec: self._run(
                           e, par, xq, row_bytes, rec, ws, m_first, m_count, n_first,
                           n_count, count))

    def _run(self, e, par, xq, xq_row, xq_rec, ws, m_first, m_count, n_first, n_count,
             count):
        """The GEMMs into the staging block, then the epilogue."""
        b = e.b
        rows, dots = self.rows, self.rows.dots
        per_dot = b.mul(m_count, n_count)
        stage, slot = scratch(e, b.mul(per_dot, i64c(len(dots))), 4)
        stage_f = b.bitcast(stage, F32P)
        for k, w in enumerate(ws):
            w0, w1, _ = w.byte_strides(b)
            y_first = b.gep(stage, [b.mul(b.mul(per_dot, i64c(k)), i64c(4))])
            gemm_call(e, par, self.pair,
                      [b.gep(w.ptr, [b.mul(n_first, w0)]), w0, w1, xq, xq_row, xq_rec, count,
                       m_count, n_count, y_first, n_count, i64c(1)])
        m_iv, n_iv = self.inner.parent.parent_op.body.args[0], self.inner.body.args[0]

        def row(i, _):
            e.bind(m_iv, b.add(m_first, i))
            at = b.mul(i, n_count)

            def col(j, _):
                e.bind(n_iv, b.add(n_first, j))
                for k, d in enumerate(dots):
                    where = b.add(b.add(b.mul(per_dot, i64c(k)), at), j)
                    e.bind(d.result, Reg(b.load(b.gep(stage_f, [where]))))
                for op in rows.epilogue:
                    e.op(op)
                return []
            carried_loop(b, e.fn, i64c(0), n_count, [], col, name="gemm.epilogue")
            return []
        with e.unguarded():        # every index is in range (checked): LLVM may vectorize
            carried_loop(b, e.fn, i64c(0), m_count, [], row, name="gemm.rows")
        e.free_slot(slot)
