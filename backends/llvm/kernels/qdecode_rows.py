"""The decode-GEMV rows kernel: ``y[r] = dot(decode(p[r], s[r], K), x)`` for a range of
rows, one row per SIMD lane.

A dot in the ``seq`` order is one chain of dependent f32 additions per row, so the
kernel runs 16 rows side by side (8 without AVX-512), a row per lane, and ``VECTORS``
such vectors at once to cover the latency of the additions. Each lane sums its own row
with the interpreter's arithmetic: ``w = s32 * q`` (exact: an 11-bit scale times a
code of at most 8 bits), ``w * x[k]`` rounded, then added in the dot's order
(``qdecode_orders``: ``seq``, ``chunk<C>`` or ``chunk<C>/tree``). Plain ``fmul``/``fadd``,
never contracted.

Reading the codes (``qdecode_plan``): each row of a vector gives 64 bytes (a masked
load where fewer remain), the 16 x 16 words are transposed in registers (a lane per
row; 8 lanes and 32 bytes without AVX-512) and kept in a small stack block, and the
chunk is walked period by period. A code is a shift of its word (a funnel shift of
two words when it crosses one). Codes of at most 4 bits on AVX-512 then go through
``vpermps`` from a table of the 16 code values (it reads only the low 4 bits of each
lane, so no mask is needed); Q8 codes are moved to the top byte of their lane by a
byte shuffle and converted as ``q * 2**24``, with the scale taken as ``s * 2**-24``
(both exact, so the product is ``s * q``); other codes are sign-extended with two
shifts (Q2 subtracts its offset) and converted. A group's scales are gathered as the
32-bit words that hold them and converted exactly; they are fetched when the group
changes. A last period with fewer codes than a whole one is read code by code.

Signature (every stride in bytes)::

    void ninfer_decode_rows.<format>.<order>[.xw](i8* p, i64 p_row_stride, i8* s,
        i64 s_row_stride, i64 s_col_stride, i8* x, i64 x_stride, i64 K, i64 rows,
        i8* y, i64 y_stride)

``.xw`` computes the products as ``x[k] * w`` (for ``dot(x, w)``). Requirements, checked
by the caller (``qdecode.DecodeRows``): ``rows >= 1``, ``K >= 1``; each row of ``p`` is
``ceil(K*b/8)`` contiguous bytes and each row of ``s`` holds ``ceil(K/G)`` scales;
``s``, ``s_row_stride`` and ``s_col_stride`` even and ``|s_row_stride| <=
STRIDE_LIMIT``; ``y`` shares no byte with ``p``, ``s`` or ``x``. A scale is read
through its aligned 4-byte word, which never crosses a page.
"""
from __future__ import annotations

import llvmlite.ir as ir

from ninfer_ir.sumorder import SEQ, SumOrder

from ninfer_ir.backends.llvm.kernels.qdecode_orders import RowSums, order_tag
from ninfer_ir.backends.llvm.kernels.qdecode_plan import plan_for
from ninfer_ir.backends.llvm.kernels.qdecode_vec import VecBuilder

__all__ = ["add_decode_rows", "rows_kernel_name", "lanes_for", "VECTORS", "STRIDE_LIMIT",
           "SIGNATURE"]

I8, I32, I64 = (ir.IntType(n) for n in (8, 32, 64))
F32 = ir.FloatType()
I8P = I8.as_pointer()
VECTORS = 4                 # vectors of rows in flight in the main row loop
STRIDE_LIMIT = 1 << 24      # largest |scale row stride| (bytes) the 32-bit lane offsets allow
SIGNATURE = ir.FunctionType(ir.VoidType(), [I8P, I64, I8P, I64, I64, I8P, I64, I64, I64,
                                            I8P, I64])


def lanes_for(isa: str) -> int:
    """Rows per vector: 16 with AVX-512, else 8."""
    return 16 if isa == "avx512vnni" else 8


def rows_kernel_name(fmt, order: SumOrder = SEQ, swapped: bool = False) -> str:
    return f"ninfer_decode_rows.{fmt.name}.{order_tag(order)}" + (".xw" if swapped else "")


def add_decode_rows(module: ir.Module, fmt, isa: str, swapped: bool = False,
                    order: SumOrder = SEQ) -> ir.Function:
    """The rows kernel for ``fmt`` and ``order`` in ``module`` (added once)."""
    name = rows_kernel_name(fmt, order, swapped)
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, SIGNATURE, name=name)
        fn.linkage = "internal"
        fn.attributes.add("noinline")
        _RowsKernel(fn, fmt, isa, swapped, order).build()
    return fn


def _i64(v):
    return ir.Constant(I64, v)


class _RowsKernel(VecBuilder):
    def __init__(self, fn, fmt, isa, swapped, order):
        super().__init__(fn, lanes_for(isa))
        self.fmt, self.swapped, self.plan = fmt, swapped, plan_for(fmt, 4 * self.lanes)
        self.order = order
        self.use_table = isa == "avx512vnni" and fmt.bits <= 4
        self.offset = getattr(fmt.word_codec, "offset", None)
        (self.p, self.prs, self.s, self.srs, self.scs, self.x, self.xs, self.k, self.rows,
         self.y, self.ys) = fn.args
        for a, nm in zip(fn.args, ("p", "prs", "s", "srs", "scs", "x", "xs", "K", "rows",
                                   "y", "ys")):
            a.name = nm
        self.scale_factor = 2.0 ** -24 if fmt.bits == 8 else 1.0

    # --- decoding -----------------------------------------------------------------------
    def table(self):
        bits, values = self.fmt.bits, []
        for u in range(16):
            w = u & ((1 << bits) - 1)
            if self.offset is not None:
                values.append(float(w - self.offset))
            else:
                sign = 1 << (bits - 1)
                values.append(float((w ^ sign) - sign))
        return ir.Constant(self.vf, [ir.Constant(F32, v) for v in values])

    def code_value(self, word, shift):
        """f32 value of the code at bit ``shift`` of each lane's word (Q8: ``q * 2**24``)."""
        b, bits = self.b, self.fmt.bits
        if bits == 8:
            return b.sitofp(self.byte_to_top(word, shift // 8), self.vf)
        if self.use_table:
            idx = word if shift == 0 else b.lshr(word, self.ci(shift))
            perm = self.intrinsic("llvm.x86.avx512.permvar.sf.512", self.vf, [self.vf, self.vi])
            return b.call(perm, [self.table(), idx])
        if self.offset is not None:
            code = b.and_(b.lshr(word, self.ci(shift)), self.ci((1 << bits) - 1))
            return b.sitofp(b.sub(code, self.ci(self.offset)), self.vf)
        top = 32 - shift - bits
        up = word if top == 0 else b.shl(word, self.ci(top))
        return b.sitofp(b.ashr(up, self.ci(32 - bits)), self.vf)

    def scales(self, base, offsets, group):
        """f32 scales (times ``scale_factor``) of ``group`` for a vector's rows."""
        b = self.b
        at = b.gep(base, [b.mul(group, self.scs)])
        low = self.splat(b.trunc(b.ptrtoint(at, I64), I32))
        half = b.and_(b.add(low, offsets), self.ci(3))          # 0 or 2
        words = self.gather(at, b.sub(offsets, half))
        value = self.half_to_float(b.lshr(words, b.shl(half, self.ci(3))))
        return value if self.scale_factor == 1.0 else b.fmul(value, self.cf(self.scale_factor))

    def x_splat(self, k):
        b = self.b
        ptr = b.bitcast(b.gep(self.x, [b.mul(k, self.xs)]), F32.as_pointer())
        return self.splat(b.load(ptr, align=1))

    def product(self, scale, q, xk):
        b = self.b
        w = b.fmul(scale, q)
        return b.fmul(xk, w) if self.swapped else b.fmul(w, xk)

    # --- one block of rows ---------------------------------------------------------------
    def block(self, r0, nvec, rem):
        """Rows ``r0 ..`` in ``nvec`` vectors; ``rem`` (i64, or None) clamps the lanes of
        a single last vector to its ``rem`` rows (the extra lanes repeat the last row)."""
        b, plan, n = self.b, self.plan, self.lanes
        bits, group = self.fmt.bits, self.fmt.group

        def row_of(v, lane):
            r = _i64(v * n + lane)
            if rem is not None:
                r = b.select(b.icmp_signed("<", r, rem), r, b.sub(rem, _i64(1)))
            return b.add(r0, r)
        rows = [[row_of(v, lane) for lane in range(n)] for v in range(nvec)]
        row_ptrs = [[b.gep(self.p, [b.mul(r, self.prs)]) for r in rv] for rv in rows]
        lanes = self.const_lanes()
        if rem is not None:
            rem32 = self.splat(b.trunc(rem, I32))
            lanes = b.select(b.icmp_signed("<", lanes, rem32), lanes,
                             b.sub(rem32, self.ci(1)))
        s_off = b.mul(lanes, self.splat(b.trunc(self.srs, I32)))
        sbase = [b.gep(self.s, [b.mul(rv[0], self.srs)]) for rv in rows]
        words = self.entry_alloca(ir.ArrayType(self.vi, n * nvec))

        k = self.k
        nbytes = b.udiv(b.add(b.mul(k, _i64(bits)), _i64(7)), _i64(8))

        def word_at(v, d):
            return b.gep(words, [_i64(0), b.add(_i64(n * v), d) if not isinstance(d, int)
                                 else _i64(n * v + d)])

        def load_chunk(c):
            """Transpose the chunk ``c`` of every vector into ``words``."""
            start = b.mul(c, _i64(plan.chunk_bytes))
            left = b.sub(nbytes, start)
            whole = b.icmp_signed(">=", left, _i64(4 * n))
            ptrs = [[b.gep(rp, [start]) for rp in row_ptrs[v]] for v in range(nvec)]

            def transposed(count):
                for v in range(nvec):
                    cols = self.transpose([self.load_bytes(q, count) for q in ptrs[v]])
                    for d, col in enumerate(cols):
                        b.store(col, word_at(v, d), align=64)
            with b.if_else(whole) as (plain, masked):
                with plain:
                    transposed(None)
                with masked:
                    transposed(left)

        def fetch_scales(gi, state):
            """The scale vectors of group ``gi``, fetched when it changes."""
            cur, old = state[0], state[1:]
            pre = b.block
            with b.if_then(b.icmp_signed("!=", gi, cur)):
                fresh = [self.scales(sb, s_off, gi) for sb in sbase]
                fresh_bb = b.block
            out = []
            for o, f in zip(old, fresh):
                phi = b.phi(o.type)
                phi.add_incoming(o, pre)
                phi.add_incoming(f, fresh_bb)
                out.append(phi)
            return out

        def period(c0, j, sums, scales):
            """The whole period ``j`` of the chunk starting at code ``c0``."""
            base = b.mul(j, _i64(plan.period_words))
            cols = [[b.load(word_at(v, b.add(base, _i64(w))), align=64)
                     for w in range(plan.period_words)] for v in range(nvec)]
            k0 = b.add(c0, b.mul(j, _i64(plan.period_codes)))
            sums = row_sums.boundary(sums, k0)
            for c in range(plan.period_codes):
                word, shift, crosses = plan.slot(c)
                xk = self.x_splat(b.add(k0, _i64(c)))
                for v in range(nvec):
                    w = cols[v][word]
                    if crosses:
                        w, shift_c = self.funnel(cols[v][word + 1], w, self.ci(shift)), 0
                    else:
                        shift_c = shift
                    q = self.code_value(w, shift_c)
                    sums = row_sums.add(sums, v, self.product(scales[v], q, xk))
            return sums

        def single(c0, kk, sums, scales):
            """Code ``kk`` alone (the last, partial period)."""
            sums = row_sums.boundary(sums, kk)
            bit = b.mul(b.sub(kk, c0), _i64(bits))
            d = b.lshr(bit, _i64(5))
            nxt = b.add(d, _i64(1))
            nxt = b.select(b.icmp_signed("<", nxt, _i64(n)), nxt, d)
            shift = self.splat(b.trunc(b.and_(bit, _i64(31)), I32))
            xk = self.x_splat(kk)
            for v in range(nvec):
                lo, hi = b.load(word_at(v, d), align=64), b.load(word_at(v, nxt), align=64)
                w = self.funnel(hi, lo, shift)
                if bits == 8:
                    w = b.shl(w, self.ci(24))
                    q = b.sitofp(w, self.vf)
                else:
                    q = self.code_value(w, 0)
                sums = row_sums.add(sums, v, self.product(scales[v], q, xk))
            return sums

        row_sums = RowSums(self, self.order, nvec)
        m = len(row_sums.start())

        def chunk_body(c, state):
            load_chunk(c)
            c0 = b.mul(c, _i64(plan.chunk_codes))
            left = b.sub(k, c0)
            whole = b.sdiv(left, _i64(plan.period_codes))
            whole = b.select(b.icmp_signed("<", whole, _i64(plan.periods)), whole,
                             _i64(plan.periods))

            def period_body(j, st):
                sums, cur, scales = st[:m], st[m], st[m + 1:]
                gi = b.udiv(b.add(c0, b.mul(j, _i64(plan.period_codes))), _i64(group))
                scales = fetch_scales(gi, [cur] + scales)
                return period(c0, j, sums, scales) + [gi] + scales
            st = self.counted(_i64(0), whole, state, period_body, "period")

            def single_body(kk, st):
                sums, cur, scales = st[:m], st[m], st[m + 1:]
                gi = b.udiv(kk, _i64(group))
                scales = fetch_scales(gi, [cur] + scales)
                return single(c0, kk, sums, scales) + [gi] + scales
            first = b.add(c0, b.mul(whole, _i64(plan.period_codes)))
            last = b.add(c0, _i64(plan.chunk_codes))
            last = b.select(b.icmp_signed("<", k, last), k, last)
            return self.counted(first, last, st, single_body, "code")

        chunks = b.udiv(b.add(k, _i64(plan.chunk_codes - 1)), _i64(plan.chunk_codes))
        start = row_sums.start() + [_i64(-1)] + [self.cf(0.0)] * nvec
        state = self.counted(_i64(0), chunks, start, chunk_body, "chunk")
        for v, acc in enumerate(row_sums.finish(state[:m])):
            for lane in range(n):
                ptr = b.bitcast(b.gep(self.y, [b.mul(rows[v][lane], self.ys)]),
                                F32.as_pointer())
                b.store(b.extract_element(acc, ir.Constant(I32, lane)), ptr, align=1)

    def build(self):
        b = self.b
        step = self.lanes * VECTORS
        blocks = b.sdiv(self.rows, _i64(step))

        def main(i, carried):
            self.block(b.mul(i, _i64(step)), VECTORS, None)
            return []
        self.counted(_i64(0), blocks, [], main, "rows")
        full = b.mul(blocks, _i64(step))

        def rest(i, carried):
            r0 = b.add(full, b.mul(i, _i64(self.lanes)))
            left = b.sub(self.rows, r0)
            self.block(r0, 1, b.select(b.icmp_signed("<", left, _i64(self.lanes)), left,
                                       _i64(self.lanes)))
            return []
        count = b.sdiv(b.add(b.sub(self.rows, full), _i64(self.lanes - 1)), _i64(self.lanes))
        self.counted(_i64(0), count, [], rest, "rest")
        b.ret_void()
