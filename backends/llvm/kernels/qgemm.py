"""The Q4_K x Q8_K GEMM kernel: every dot of a block of weight rows with a block of
activation rows, on the stored record layout (spec/quantized-ops.md §3)::

    void ninfer_q4k_q8k_gemm(i8* w, i64 w_row_stride_bytes, i64 w_rec_stride_bytes,
                             i8* x, i64 x_row_stride_bytes, i64 x_rec_stride_bytes,
                             i64 G, i64 M, i64 N,
                             float* y, i64 y_m_stride_elems, i64 y_n_stride_elems)

stores ``y[m*y_m + n*y_n] = dot(w + n*w_row, x + m*x_row)`` for every m < M, n < N, each
the bits of ``ninfer_q4k_q8k_dot`` (and of the rows kernel): the integers S and T of a
record pair exact in i32 (any grouping), then ``p = f32(d)*f32(S)``, ``n = f32(dmin)*
f32(T)``, ``v = ds*(p - n)``, one rounding each, and the row's v added in record order,
the first one initialising the sum. G <= 0 stores +0.0 everywhere. Records are read
byte-aligned at any stride; ``y`` must be float-aligned and overlap neither input. The
scratch (about 27 KB) is on the stack; the kernel is safe to call from several threads.

Blocking. Lane ``l`` of a vector of ``L`` i32 lanes (16 on the VNNI level, 8 below)
holds weight row ``n0 + r*L + l``; a block is ``R`` such vectors (``NB = R*L`` rows). For
each m-chunk of up to ``MC`` activation rows, each block of rows and each record g, the
block's records are unpacked once into a tile in L1:

* codes: for sub-block s (32 values) and dword j < 8 of it, one vector per r whose lane
  l holds the four 4-bit codes of values ``32s + 4j .. 32s + 4j + 3`` of row l as bytes:
  the packed dword ``8*(s//2) + j`` of the record shifted by ``4*(s%2)`` and masked. The
  dwords of L rows are brought into lanes by a transpose (two-source shuffles, log2 L
  stages);
* sc[s], m[s] (the 6-bit fields, spec §2) per lane as i32, m duplicated into both i16
  halves; f32(d), f32(dmin) per lane.

Then for ``C`` activation rows at a time (the microtile: ``R x C`` accumulators in
registers), with ``xb`` the Q8_K quants ``32s + 4j .. +3`` of one activation row
broadcast to every lane::

    sub = sum_j dot4(codes[s][j], xb)          (u8 x i8 products, four per lane)
    S  += sub * sc[s]                           (|sub| <= 61,440, |S| <= 30,965,760)
    T   = sum_s pairdot(m[s] m[s], bsum[2s] bsum[2s+1])

``dot4`` is ``vpdpbusd`` on the VNNI level, ``vpmaddubsw`` (exact: |pair| <= 3,840) then
``vpmaddwd`` by ones on AVX2, widened multiplies on the portable level; ``pairdot`` is
``vpdpwssd`` / ``vpmaddwd`` / widened multiplies. The float stage is per lane, and the
running sums of the m-chunk live in a stack block between records; a block is stored to
``y`` after its last record. Rows past N repeat row N-1 and are not stored; the last
activation rows of a chunk take a microtile of fewer rows.

``add_gemm(module, isa)`` adds the kernel for an ISA level (``jit.ISA_LEVELS``).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import llvmlite.ir as ir

from ninfer_ir.backends.llvm.kernels.qdot import Q4_QS, Q8_BSUM, Q8_QS
from ninfer_ir.backends.llvm.kernels.qir import (F16, F32, F32P, I8, I8P, I16, I32, I64, const,
                                                 const_vec, entry_alloca, for_range,
                                                 half_bits_to_float, i32, i64, intrinsic,
                                                 load, shuffle, splat, store, vec, zero)

__all__ = ["GEMM", "GEMM_TYPE", "GEMM_PAR", "ENV_WORDS", "add_gemm", "add_gemm_par", "Blocking",
           "blocking"]

GEMM = "ninfer_q4k_q8k_gemm"
GEMM_TYPE = ir.FunctionType(ir.VoidType(), [I8P, I64, I64, I8P, I64, I64, I64, I64, I64,
                                            F32P, I64, I64])
_ARG_NAMES = ("w", "w_row", "w_rec", "x", "x_row", "x_rec", "G", "M", "N", "y", "y_m", "y_n")
SUBS = 8                 # sub-blocks of 32 values per record
DWORDS = 8               # code dwords per sub-block (four values each)
PACKED_DWORDS = 32       # dwords of packed codes per Q4_K record
PREFETCH_LINES = (0, 64, 128)   # every line of a 144-byte record


@dataclass(frozen=True)
class Blocking:
    """The blocking of one ISA level: ``lanes`` rows per vector, ``rows`` vectors per
    block of weight rows, ``cols`` activation rows per microtile, ``chunk`` activation
    rows whose running sums stay in the stack block."""
    lanes: int
    rows: int
    cols: int
    chunk: int

    @property
    def block(self) -> int:
        return self.lanes * self.rows


@lru_cache(maxsize=None)
def blocking(isa: str) -> Blocking:
    if isa == "avx512vnni":
        return Blocking(lanes=16, rows=2, cols=6, chunk=128)
    return Blocking(lanes=8, rows=2, cols=2, chunk=64)


# --- the per-level primitives --------------------------------------------------------------

class _Ops:
    """``dot4``, ``pairdot`` and the binary16 conversion of one ISA level."""

    def __init__(self, module, isa, lanes):
        self.isa, self.lanes = isa, lanes
        L = lanes
        self.vi = vec(I32, L)
        if isa == "avx512vnni":
            self._dpbusd = intrinsic(module, "llvm.x86.avx512.vpdpbusd.512", self.vi,
                                     [self.vi, vec(I8, 64), vec(I8, 64)])
            self._dpwssd = intrinsic(module, "llvm.x86.avx512.vpdpwssd.512", self.vi,
                                     [self.vi, vec(I16, 32), vec(I16, 32)])
        elif isa == "avx2":
            self._maddubs = intrinsic(module, "llvm.x86.avx2.pmadd.ub.sw", vec(I16, 16),
                                      [vec(I8, 32), vec(I8, 32)])
            self._maddwd = intrinsic(module, "llvm.x86.avx2.pmadd.wd", vec(I32, 8),
                                     [vec(I16, 16), vec(I16, 16)])

    def dot4(self, b, acc, codes, xb):
        """acc + per lane the sum of four u8 code x i8 quant products."""
        L = self.lanes
        w8, x8 = b.bitcast(codes, vec(I8, 4 * L)), b.bitcast(xb, vec(I8, 4 * L))
        if self.isa == "avx512vnni":
            return b.call(self._dpbusd, [acc, w8, x8])
        if self.isa == "avx2":
            pairs = b.call(self._maddubs, [w8, x8])
            return b.add(acc, b.call(self._maddwd, [pairs, splat(I16, 16, 1)]))
        prod = b.mul(b.zext(w8, vec(I32, 4 * L)), b.sext(x8, vec(I32, 4 * L)))
        for k in range(4):
            acc = b.add(acc, shuffle(b, prod, prod, [4 * i + k for i in range(L)]))
        return acc

    def pairdot(self, b, acc, mm, bs):
        """acc + per lane lo(mm)*lo(bs) + hi(mm)*hi(bs) (i16 halves, signed)."""
        L = self.lanes
        m16, b16 = b.bitcast(mm, vec(I16, 2 * L)), b.bitcast(bs, vec(I16, 2 * L))
        if self.isa == "avx512vnni":
            return b.call(self._dpwssd, [acc, m16, b16])
        if self.isa == "avx2":
            return b.add(acc, b.call(self._maddwd, [m16, b16]))
        prod = b.mul(b.sext(m16, vec(I32, 2 * L)), b.sext(b16, vec(I32, 2 * L)))
        even = shuffle(b, prod, prod, [2 * i for i in range(L)])
        odd = shuffle(b, prod, prod, [2 * i + 1 for i in range(L)])
        return b.add(acc, b.add(even, odd))

    def half_to_f32(self, b, bits16):
        """Exact f32 of binary16 bits (``<L x i16>``)."""
        if self.isa == "portable":
            return half_bits_to_float(b, bits16)
        return b.fpext(b.bitcast(bits16, vec(F16, self.lanes)), vec(F32, self.lanes))


# --- the transpose -------------------------------------------------------------------------

def transpose(b, rows, wanted):
    """Columns ``wanted`` of the L x L matrix whose row l is ``rows[l]`` (``<L x i32>``),
    each as a vector: out[k] lane l = rows[l][k]. Stage by stage (s = L/2 .. 1) the
    off-diagonal s x s blocks of each 2s x 2s block swap places, one two-source shuffle
    per vector; only the shuffles the wanted columns depend on are emitted."""
    L = len(rows)
    sizes = []
    s = L // 2
    while s:
        sizes.append(s)
        s //= 2
    memo = {}

    def at(stage, i):
        if stage == 0:
            return rows[i]
        if (stage, i) not in memo:
            s = sizes[stage - 1]
            lo, hi = at(stage - 1, i & ~s), at(stage - 1, i | s)
            if i & s:
                mask = [j + s if not j & s else L + j for j in range(L)]
            else:
                mask = [j if not j & s else L + j - s for j in range(L)]
            memo[(stage, i)] = shuffle(b, lo, hi, mask)
        return memo[(stage, i)]
    return {k: at(len(sizes), k) for k in wanted}


# --- the tile ------------------------------------------------------------------------------

class _Tile:
    """Byte offsets of the unpacked block in its stack slot (one vector = ``4L`` bytes)."""

    def __init__(self, blk: Blocking):
        self.vbytes = 4 * blk.lanes
        self.rows = blk.rows
        n = SUBS * DWORDS * blk.rows
        self.sc0 = n
        self.mn0 = n + SUBS * blk.rows
        self.d0 = self.mn0 + SUBS * blk.rows
        self.vectors = self.d0 + 2 * blk.rows

    def codes(self, s, j, r):
        return ((s * DWORDS + j) * self.rows + r) * self.vbytes

    def sc(self, s, r):
        return (self.sc0 + s * self.rows + r) * self.vbytes

    def mn(self, s, r):
        return (self.mn0 + s * self.rows + r) * self.vbytes

    def d(self, r):
        return (self.d0 + r) * self.vbytes

    def dmin(self, r):
        return (self.d0 + self.rows + r) * self.vbytes

    @property
    def nbytes(self):
        return self.vectors * self.vbytes


def _unpack(b, ops, tile, tp, recs, r):
    """Unpack the records ``recs`` (one i8* per lane) into vector column ``r`` of the tile."""
    L = ops.lanes
    vi = ops.vi
    nib = splat(I32, L, 0x0F0F0F0F)
    for q in range(PACKED_DWORDS // L):
        cols = transpose(b, [load(b, rec, Q4_QS + 4 * q * L, vi) for rec in recs], range(L))
        for k, v in cols.items():
            c, j = divmod(q * L + k, DWORDS)
            store(b, b.and_(v, nib), tp, tile.codes(2 * c, j, r), align=64)
            store(b, b.and_(b.lshr(v, splat(I32, L, 4)), nib), tp, tile.codes(2 * c + 1, j, r),
                  align=64)
    head = transpose(b, [load(b, rec, 0, vi) for rec in recs], range(4))

    def byte_bits(v, shift, mask):
        return b.and_(b.lshr(v, splat(I32, L, shift)) if shift else v, splat(I32, L, mask))
    h1, h2, h3 = head[1], head[2], head[3]
    for field, low, out in ((0, h1, tile.sc), (1, h2, tile.mn)):
        for s in range(SUBS):
            if s < 4:
                value = byte_bits(low, 8 * s, 63)
            else:
                t = s - 4
                value = b.or_(byte_bits(h3, 8 * t + 4 * field, 15),
                              b.shl(byte_bits(low, 8 * t + 6, 3), splat(I32, L, 4)))
            if field:
                value = b.or_(value, b.shl(value, splat(I32, L, 16)))
            store(b, value, tp, out(s, r), align=64)
    d_bits = b.trunc(head[0], vec(I16, L))
    dmin_bits = b.trunc(b.lshr(head[0], splat(I32, L, 16)), vec(I16, L))
    store(b, ops.half_to_f32(b, d_bits), tp, tile.d(r), align=64)
    store(b, ops.half_to_f32(b, dmin_bits), tp, tile.dmin(r), align=64)


def _bcast(b, ops, ptr, offset, ty=I32):
    value = load(b, ptr, offset, ty)
    lanes = ops.lanes
    one = b.insert_element(zero(vec(ty, lanes)), value, i32(0))
    return shuffle(b, one, zero(vec(ty, lanes)), [0] * lanes)


def _micro(b, fn, ops, blk, tile, tp, xrows, acc_ptr, first):
    """The microtile: ``len(xrows)`` activation records (i8* each) against the tile; the
    lane values v are added into the running sums at ``acc_ptr`` (row i at ``i*NB``)."""
    L, R = ops.lanes, blk.rows
    cols = len(xrows)
    vi = ops.vi
    pre = b.block
    head = fn.append_basic_block("sub.head")
    body = fn.append_basic_block("sub.body")
    done = fn.append_basic_block("sub.done")
    b.branch(head)
    b.position_at_end(head)
    s = b.phi(I64, name="s")
    s.add_incoming(i64(0), pre)
    sums = []
    for _ in range(R * cols):
        phi = b.phi(vi)
        phi.add_incoming(zero(vi), pre)
        sums.append(phi)
    b.cbranch(b.icmp_signed("<", s, i64(SUBS)), body, done)
    b.position_at_end(body)
    subs = [zero(vi)] * (R * cols)
    code_base = b.gep(tp, [b.mul(s, i64(DWORDS * R * tile.vbytes))])
    xoff = b.add(i64(Q8_QS), b.mul(s, i64(32)))
    xs = [b.gep(xr, [xoff]) for xr in xrows]
    for j in range(DWORDS):
        codes = [load(b, code_base, tile.codes(0, j, r), vi, align=64) for r in range(R)]
        for i in range(cols):
            xb = _bcast(b, ops, xs[i], 4 * j)
            for r in range(R):
                subs[r * cols + i] = ops.dot4(b, subs[r * cols + i], codes[r], xb)
    sc_base = b.gep(tp, [b.mul(s, i64(R * tile.vbytes))])
    scales = [load(b, sc_base, tile.sc(0, r), vi, align=64) for r in range(R)]
    nxt = [b.add(sums[k], b.mul(subs[k], scales[k // cols])) for k in range(R * cols)]
    latch = b.block
    s.add_incoming(b.add(s, i64(1)), latch)
    for phi, v in zip(sums, nxt):
        phi.add_incoming(v, latch)
    b.branch(head)
    b.position_at_end(done)

    vf = vec(F32, L)
    for i in range(cols):
        ds = _bcast(b, ops, xrows[i], 0, F32)
        t = [zero(vi)] * R
        for sb in range(SUBS):
            bs = _bcast(b, ops, xrows[i], Q8_BSUM + 4 * sb)
            for r in range(R):
                t[r] = ops.pairdot(b, t[r], load(b, tp, tile.mn(sb, r), vi, align=64), bs)
        for r in range(R):
            d = load(b, tp, tile.d(r), vf, align=64)
            dmin = load(b, tp, tile.dmin(r), vf, align=64)
            p = b.fmul(d, b.sitofp(sums[r * cols + i], vf))
            n = b.fmul(dmin, b.sitofp(t[r], vf))
            v = b.fmul(ds, b.fsub(p, n))
            where = b.bitcast(b.gep(acc_ptr, [i64(i * blk.block + r * L)]), vf.as_pointer())
            old = b.load(where, align=4)
            b.store(b.select(first, v, b.fadd(old, v)), where, align=4)


def _prefetch(b, module, ptr):
    pf = intrinsic(module, "llvm.prefetch.p0", ir.VoidType(), [I8P, I32, I32, I32])
    for line in PREFETCH_LINES:
        b.call(pf, [b.gep(ptr, [i64(line)]), i32(0), i32(3), i32(1)])


def add_gemm(module: ir.Module, isa: str) -> ir.Function:
    """Add ``ninfer_q4k_q8k_gemm`` for ``isa`` to ``module`` (once); returns it."""
    if GEMM in module.globals:
        return module.globals[GEMM]
    blk = blocking(isa)
    L, R, C, MC, NB = blk.lanes, blk.rows, blk.cols, blk.chunk, blk.block
    ops = _Ops(module, isa, L)
    tile = _Tile(blk)
    fn = ir.Function(module, GEMM_TYPE, name=GEMM)
    for arg, name in zip(fn.args, _ARG_NAMES):
        arg.name = name
    w, w_row, w_rec, x, x_row, x_rec, count, m_rows, n_rows, y, y_m, y_n = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    tp = b.bitcast(entry_alloca(b, ir.ArrayType(I8, tile.nbytes), "tile", align=64), I8P)
    acc = b.bitcast(entry_alloca(b, ir.ArrayType(F32, MC * NB), "sums", align=64), F32P)
    done = fn.append_basic_block("done")
    work = fn.append_basic_block("work")
    empty = fn.append_basic_block("empty")
    some = fn.append_basic_block("some")
    nothing = b.or_(b.icmp_signed("<=", m_rows, i64(0)), b.icmp_signed("<=", n_rows, i64(0)))
    b.cbranch(nothing, done, some)
    b.position_at_end(some)
    b.cbranch(b.icmp_signed("<=", count, i64(0)), empty, work)

    b.position_at_end(empty)
    with for_range(b, 0, m_rows, name="zm") as m:
        with for_range(b, 0, n_rows, name="zn") as n:
            b.store(const(F32, 0.0), b.gep(y, [b.add(b.mul(m, y_m), b.mul(n, y_n))]), align=4)
    b.branch(done)

    b.position_at_end(work)
    last = b.sub(n_rows, i64(1))
    with for_range(b, 0, m_rows, step=MC, name="m0") as m0:
        left = b.sub(m_rows, m0)
        mc = b.select(b.icmp_signed("<", left, i64(MC)), left, i64(MC))
        full = b.mul(b.sdiv(mc, i64(C)), i64(C))
        x_chunk = b.gep(x, [b.mul(m0, x_row)])
        with for_range(b, 0, n_rows, step=NB, name="n0") as n0:
            rows = []
            for k in range(NB):
                n = b.add(n0, i64(k))
                rows.append(b.gep(w, [b.mul(b.select(b.icmp_signed(">", n, last), last, n),
                                            w_row)]))
            with for_range(b, 0, count, name="g") as g:
                wg = b.mul(g, w_rec)
                recs = [b.gep(row, [wg]) for row in rows]
                for r in range(R):
                    _unpack(b, ops, tile, tp, recs[r * L:(r + 1) * L], r)
                # the records of the next step of the walk: g + 1, or the next block's first
                ahead = b.select(b.icmp_signed("<", b.add(g, i64(1)), count),
                                 b.add(wg, w_rec), b.mul(i64(NB), w_row))
                for row in rows:
                    _prefetch(b, module, b.gep(row, [ahead]))
                first = b.icmp_signed("==", g, i64(0))
                xg = b.gep(x_chunk, [b.mul(g, x_rec)])
                with for_range(b, 0, full, step=C, name="mb") as mb:
                    xrows = [b.gep(xg, [b.mul(b.add(mb, i64(i)), x_row)]) for i in range(C)]
                    _micro(b, fn, ops, blk, tile, tp, xrows, b.gep(acc, [b.mul(mb, i64(NB))]),
                           first)
                rest = b.sub(mc, full)
                for cols in range(1, C):
                    with b.if_then(b.icmp_signed("==", rest, i64(cols))):
                        xrows = [b.gep(xg, [b.mul(b.add(full, i64(i)), x_row)])
                                 for i in range(cols)]
                        _micro(b, fn, ops, blk, tile, tp, xrows,
                               b.gep(acc, [b.mul(full, i64(NB))]), first)
            n_left = b.sub(n_rows, n0)
            nb = b.select(b.icmp_signed("<", n_left, i64(NB)), n_left, i64(NB))
            with for_range(b, 0, mc, name="sm") as i:
                y_row = b.gep(y, [b.add(b.mul(b.add(m0, i), y_m), b.mul(n0, y_n))])
                src = b.gep(acc, [b.mul(i, i64(NB))])
                with for_range(b, 0, nb, name="sn") as j:
                    b.store(b.load(b.gep(src, [j]), align=4), b.gep(y_row, [b.mul(j, y_n)]),
                            align=4)
    b.branch(done)
    b.position_at_end(done)
    b.ret_void()
    return fn


# --- the thread-pool body ------------------------------------------------------------------

GEMM_PAR = "ninfer_q4k_q8k_gemm_par"
PAR_BODY_TYPE = ir.FunctionType(I64, [I8P, I64, I64, I64.as_pointer()])
ENV_WORDS = len(_ARG_NAMES)


def add_gemm_par(module: ir.Module, isa: str) -> ir.Function:
    """Add (once) ``i64 ninfer_q4k_q8k_gemm_par(i8* env, i64 lo, i64 hi, i64* err)``, the
    body a thread pool runs: ``env`` holds the twelve arguments of ``ninfer_q4k_q8k_gemm``
    as i64 words, and the call computes the blocks ``[lo, hi)`` of ``blocking(isa).block``
    weight rows each (the last one cut at N). It cannot fail: the status is 0."""
    if GEMM_PAR in module.globals:
        return module.globals[GEMM_PAR]
    gemm = add_gemm(module, isa)
    nb = blocking(isa).block
    fn = ir.Function(module, PAR_BODY_TYPE, name=GEMM_PAR)
    fn.linkage = "internal"
    env, lo, hi, _ = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    slots = b.bitcast(env, I64.as_pointer())
    w, w_row, w_rec, x, x_row, x_rec, count, m_rows, n_rows, y, y_m, y_n = (
        b.load(b.gep(slots, [i64(k)])) for k in range(ENV_WORDS))
    first = b.mul(lo, i64(nb))
    stop = b.mul(hi, i64(nb))
    stop = b.select(b.icmp_signed("<", stop, n_rows), stop, n_rows)
    w_ptr = b.gep(b.inttoptr(w, I8P), [b.mul(first, w_row)])
    y_ptr = b.gep(b.inttoptr(y, F32P), [b.mul(first, y_n)])
    b.call(gemm, [w_ptr, w_row, w_rec, b.inttoptr(x, I8P), x_row, x_rec, count, m_rows,
                  b.sub(stop, first), y_ptr, y_m, y_n])
    b.ret(i64(0))
    return fn
