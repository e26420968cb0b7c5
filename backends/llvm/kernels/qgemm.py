"""The GEMM kernels of the quantized dot pairs: every dot of a block of weight rows with a
block of activation rows, on the stored record layouts. One kernel per pair of
``GEMM_PAIRS`` (``gemm_records.SCHEMES``), all with one signature::

    void ninfer_<stem>_gemm(i8* w, i64 w_row_stride_bytes, i64 w_rec_stride_bytes,
                            i8* x, i64 x_row_stride_bytes, i64 x_rec_stride_bytes,
                            i64 G, i64 M, i64 N,
                            float* y, i64 y_m_stride_elems, i64 y_n_stride_elems)

stores ``y[m*y_m + n*y_n] = dot(w + n*w_row, x + m*x_row)`` for every m < M, n < N, each
the bits of the pair's single dot (``ninfer_<stem>_dot``) and of its rows kernel: a
record's integers exact in i32 (any grouping), the pair's float steps on them one rounding
each, and a row's record values added in record order, the first one initialising the
sum. G <= 0 stores +0.0 everywhere. Records are read byte-aligned at any stride; ``y``
must be float-aligned and overlap neither input. The scratch (tens of KB) is on the
stack; the kernels are safe to call from several threads.

Blocking (shared by every pair). Lane ``l`` of a vector of ``L`` i32 lanes (16 on the
VNNI level, 8 below) holds weight row ``n0 + r*L + l``; a block is ``R`` such vectors
(``NB = R*L`` rows). For each m-chunk of up to ``MC`` activation rows, each block of rows
and each *step* of 256 weight elements (one K-quant record, or eight 32-element
records), the block's step is unpacked once into a tile in L1 (``gemm_records``: that
is the only part that differs per pair):

* codes: for group t of the step (a run of elements sharing one integer scale, or one
  32-element record) and dword j of it, one vector per r whose lane l holds four codes
  of row l as bytes. The dwords of L rows are brought into lanes by a transpose
  (two-source shuffles, log2 L stages);
* per-lane integers and floats of the step (scales, corrections, f32 of the binary16
  scales).

Then for ``C`` activation rows at a time (the microtile: ``R x C`` i32 accumulators in
registers), with ``xb`` four activation quants of one row broadcast to every lane, each
group's integer is ``sub = sum_j dot4(codes, xb)``, four byte products per lane, in one
of three forms (``Codes``):

* ``UNSIGNED``: the codes are unsigned (Q4_K, 0..15) and ``xb`` the signed quants;
* ``FLIPPED``: the codes are the signed levels c and ``xb ^ 0x80`` the unsigned x + 128:
  ``sum (x + 128) c = sum x c + 128 sum c``; the tile holds ``128 sum c`` per lane (a
  weight-only correction, computed at unpack), subtracted after the products;
* ``SIGNED``: signed codes times signed quants (the AVX2 level for codes of magnitude
  above 64, whose ``vpmaddubsw`` pairs could saturate, and the portable level).

``dot4`` is ``vpdpbusd`` on the VNNI level, ``vpmaddubsw`` (exact: pairs <= 2*255*64)
then ``vpmaddwd`` by ones on AVX2 (``SIGNED``: both widened to i16 and ``vpmaddwd``),
widened multiplies on the portable level. Integer sums wrap modulo 2**32 and the spec
bounds every record's integers within i32, so any grouping gives them exactly.

Two microtiles: ``kquant`` (one record a step: ``S += sub * sc[t]`` over the groups,
then the pair's float steps once per record) and ``blocks`` (eight records a step: the
float steps after each record, ``v = value(S, d_w, d_x)``, added in order in registers).
The running sums of the m-chunk live in a stack block between steps; a block is stored
to ``y`` after its last step. Rows past N repeat row N-1 and are not stored; records
past G in a last short step of eight repeat record G-1 and are not added; the last
activation rows of a chunk take a microtile of fewer rows.

At most ``GEMV_ROWS_MAX`` activation rows (one: a generated token) run as the pair's
rows kernel, once per activation row: the GEMV streams the weight rows without the
tile's transpose and is 1.3-2.2x faster there (Q5_0 2048x640, Q4_K 640x1024, Q6_K
640x2048, 1 thread); at two rows the two forms were within 20% of each other either way,
from three up the tile wins. The bits are the same (every form computes the single dot).

``add_gemm(module, isa, pair)`` adds the kernel for an ISA level (``jit.ISA_LEVELS``).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import llvmlite.ir as ir

from ninfer_ir.backends.llvm.gen.emitter import carried_loop
from ninfer_ir.backends.llvm.kernels.qir import (F16, F32, F32P, I8, I8P, I16, I32, I64, const,
                                                 entry_alloca, for_range, half_bits_to_float,
                                                 i32, i64, intrinsic, load, shuffle, splat,
                                                 vec, zero)

__all__ = ["GEMM_TYPE", "ENV_WORDS", "add_gemm", "add_gemm_par", "gemm_name", "Blocking",
           "blocking", "Codes", "Tile", "transpose", "bcast"]

GEMM_TYPE = ir.FunctionType(ir.VoidType(), [I8P, I64, I64, I8P, I64, I64, I64, I64, I64,
                                            F32P, I64, I64])
_ARG_NAMES = ("w", "w_row", "w_rec", "x", "x_row", "x_rec", "G", "M", "N", "y", "y_m", "y_n")
STEP_DWORDS = 64         # code dwords of a step (256 elements) per row
GEMV_ROWS_MAX = 1        # at most this many activation rows run as the rows kernel


def gemm_name(pair) -> str:
    return f"ninfer_{pair.stem}_gemm"


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


class Codes:
    """How a group's products are formed (see the module doc)."""
    UNSIGNED = "unsigned"
    FLIPPED = "flipped"
    SIGNED = "signed"


# --- the per-level primitives --------------------------------------------------------------

class Ops:
    """``dot4``, ``pairdot`` and the binary16 conversion of one ISA level."""

    def __init__(self, module, isa, lanes):
        self.module, self.isa, self.lanes = module, isa, lanes
        L = lanes
        self.vi = vec(I32, L)
        self.vf = vec(F32, L)
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

    def dot4(self, b, acc, u, s, signed=False):
        """acc + per lane the sum of four byte products of ``u`` (unsigned, or signed when
        ``signed``) and ``s`` (signed)."""
        L = self.lanes
        u8, s8 = b.bitcast(u, vec(I8, 4 * L)), b.bitcast(s, vec(I8, 4 * L))
        if self.isa == "avx512vnni" and not signed:
            return b.call(self._dpbusd, [acc, u8, s8])
        if self.isa == "avx2" and not signed:
            pairs = b.call(self._maddubs, [u8, s8])
            return b.add(acc, b.call(self._maddwd, [pairs, splat(I16, 16, 1)]))
        if self.isa == "avx2":
            u16, s16 = b.sext(u8, vec(I16, 32)), b.sext(s8, vec(I16, 32))
            halves = [b.call(self._maddwd, [shuffle(b, u16, u16, range(h, h + 16)),
                                            shuffle(b, s16, s16, range(h, h + 16))])
                      for h in (0, 16)]
            pairs = shuffle(b, halves[0], halves[1], range(16))
            return b.add(acc, b.add(shuffle(b, pairs, pairs, range(0, 16, 2)),
                                    shuffle(b, pairs, pairs, range(1, 16, 2))))
        wide = vec(I32, 4 * L)
        prod = b.mul(b.sext(u8, wide) if signed else b.zext(u8, wide), b.sext(s8, wide))
        for k in range(4):
            acc = b.add(acc, shuffle(b, prod, prod, [4 * i + k for i in range(L)]))
        return acc

    def byte_sums(self, b, v):
        """Per lane the sum of the four signed bytes of ``v``."""
        return self.dot4(b, zero(self.vi), splat(I32, self.lanes, 0x01010101), v)

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
        """Exact f32 of binary16 bits (``<L x i16>`` or a scalar i16)."""
        if self.isa == "portable":
            return half_bits_to_float(b, bits16)
        if isinstance(bits16.type, ir.VectorType):
            n = bits16.type.count
            return b.fpext(b.bitcast(bits16, vec(F16, n)), vec(F32, n))
        return b.fpext(b.bitcast(bits16, F16), F32)

    def lanes_of(self, b, values, ty):
        """A ``<L x ty>`` of the scalars ``values`` (one per lane)."""
        out = zero(vec(ty, self.lanes))
        for k, v in enumerate(values):
            out = b.insert_element(out, v, i32(k))
        return out


def bcast(b, ops, ptr, offset, ty=I32, flip=False):
    """The ``ty`` at ``ptr + offset`` in every lane (``flip``: its bytes plus 128)."""
    value = load(b, ptr, offset, ty)
    if flip:
        value = b.xor(value, const(ty, -0x7F7F7F80))        # 0x80808080
    lanes = ops.lanes
    one = b.insert_element(zero(vec(ty, lanes)), value, i32(0))
    return shuffle(b, one, zero(vec(ty, lanes)), [0] * lanes)


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

class Tile:
    """Byte offsets of the unpacked step in its stack slot (one vector = ``4L`` bytes):
    the codes ``[group][dword][r]``, then each named per-lane table ``[k][r]``."""

    def __init__(self, blk: Blocking, group_dwords: int, tables: dict):
        self.vbytes = 4 * blk.lanes
        self.rows = blk.rows
        self.group_dwords = group_dwords
        at = STEP_DWORDS * blk.rows
        self._tables = {}
        for name, count in tables.items():
            self._tables[name] = at
            at += count * blk.rows
        self.vectors = at

    def codes(self, t, j, r):
        return ((t * self.group_dwords + j) * self.rows + r) * self.vbytes

    def group_bytes(self):
        """Bytes from one group's codes to the next."""
        return self.group_dwords * self.rows * self.vbytes

    def table(self, name, k, r):
        return (self._tables[name] + k * self.rows + r) * self.vbytes

    @property
    def nbytes(self):
        return self.vectors * self.vbytes


# --- the microtiles --------------------------------------------------------------------------

def _group_sums(b, ops, scheme, tile, code_base, xs, R):
    """Per (r, i) the integer of one group: ``code_base`` its codes in the tile, ``xs[i]``
    the first of its activation quants of row i."""
    vi = ops.vi
    cols = len(xs)
    subs = [zero(vi)] * (R * cols)
    flipped = scheme.codes == Codes.FLIPPED
    for j in range(tile.group_dwords):
        codes = [load(b, code_base, tile.codes(0, j, r), vi, align=64) for r in range(R)]
        for i in range(cols):
            # flipped: x + 128 of each byte, taken before the broadcast (a vector xor of
            # the broadcast sends LLVM's x86 code generator into a loop)
            xb = bcast(b, ops, xs[i], 4 * j, flip=flipped)
            for r in range(R):
                k = r * cols + i
                if scheme.codes == Codes.UNSIGNED:
                    subs[k] = ops.dot4(b, subs[k], codes[r], xb)
                elif flipped:
                    subs[k] = ops.dot4(b, subs[k], xb, codes[r])
                else:
                    subs[k] = ops.dot4(b, subs[k], codes[r], xb, signed=True)
    return subs


def _acc_slot(b, ops, acc_ptr, blk, i, r):
    return b.bitcast(b.gep(acc_ptr, [i64(i * blk.block + r * ops.lanes)]), ops.vf.as_pointer())


def micro_kquant(b, fn, ops, blk, scheme, tile, tp, xrows, acc_ptr, first, nrec, x_rec):
    """One record a step: ``S += sub * sc[t]`` per group, then ``scheme.values``; the
    values are added into the running sums at ``acc_ptr`` (row i at ``i*NB``)."""
    R, cols = blk.rows, len(xrows)
    per = scheme.groups_per_iter
    gbytes = tile.group_bytes()

    def body(s, sums):
        out = list(sums)
        for u in range(per):
            t = b.add(b.mul(s, i64(per)), i64(u))
            code_base = b.gep(tp, [b.mul(t, i64(gbytes))])
            xoff = b.add(i64(scheme.x_quants), b.mul(t, i64(4 * tile.group_dwords)))
            subs = _group_sums(b, ops, scheme, tile, code_base,
                               [b.gep(xr, [xoff]) for xr in xrows], R)
            sc_base = b.gep(tp, [b.mul(t, i64(R * tile.vbytes))])
            scales = [load(b, sc_base, tile.table("sc", 0, r), ops.vi, align=64)
                      for r in range(R)]
            out = [b.add(out[k], b.mul(subs[k], scales[k // cols])) for k in range(R * cols)]
        return out
    sums = carried_loop(b, fn, i64(0), i64(scheme.groups // per), [zero(ops.vi)] * (R * cols),
                        body, "t", "t")
    for i in range(cols):
        values = scheme.values(b, ops, tile, tp, xrows[i], sums[i::cols])
        for r, v in enumerate(values):
            where = _acc_slot(b, ops, acc_ptr, blk, i, r)
            old = b.load(where, align=4)
            b.store(b.select(first, v, b.fadd(old, v)), where, align=4)


def micro_blocks(b, fn, ops, blk, scheme, tile, tp, xrows, acc_ptr, first, nrec, x_rec):
    """``nrec`` records a step, each record's values added in order to the running sums
    (kept in registers through the step)."""
    R, cols = blk.rows, len(xrows)
    gbytes = tile.group_bytes()
    slots = [_acc_slot(b, ops, acc_ptr, blk, i, r) for r in range(R) for i in range(cols)]
    olds = [b.load(p, align=4) for p in slots]

    def body(k, accs):
        code_base = b.gep(tp, [b.mul(k, i64(gbytes))])
        xrecs = [b.gep(xr, [b.mul(k, x_rec)]) for xr in xrows]
        subs = _group_sums(b, ops, scheme, tile, code_base,
                           [b.gep(xr, [i64(scheme.x_quants)]) for xr in xrecs], R)
        tbase = b.gep(tp, [b.mul(k, i64(R * tile.vbytes))])
        start = b.and_(first, b.icmp_signed("==", k, i64(0)))
        values = scheme.values(b, ops, tile, tbase, xrecs, subs)
        return [b.select(start, v, b.fadd(a, v)) for a, v in zip(accs, values)]
    accs = carried_loop(b, fn, i64(0), nrec, olds, body, "k", "k")
    for p, v in zip(slots, accs):
        b.store(v, p, align=4)


# --- the kernel ------------------------------------------------------------------------------

def _prefetch(b, module, ptr, nbytes):
    pf = intrinsic(module, "llvm.prefetch.p0", ir.VoidType(), [I8P, I32, I32, I32])
    for line in range(0, nbytes, 64):
        b.call(pf, [b.gep(ptr, [i64(line)]), i32(0), i32(3), i32(1)])


def _rows_kernel(module: ir.Module, isa: str, pair) -> ir.Function:
    """The pair's rows kernel (``pair.cpu_rows``) in ``module``, added if absent."""
    from ninfer_ir.backends.llvm.kernels.qkernels import add_kernels_for
    return add_kernels_for(module, isa, (pair,))[pair.cpu_rows]


def add_gemm(module: ir.Module, isa: str, pair) -> ir.Function:
    """Add ``ninfer_<stem>_gemm`` of ``pair`` for ``isa`` to ``module`` (once); returns it."""
    from ninfer_ir.backends.llvm.kernels.gemm_records import scheme_of
    name = gemm_name(pair)
    if name in module.globals:
        return module.globals[name]
    blk = blocking(isa)
    L, R, C, MC, NB = blk.lanes, blk.rows, blk.cols, blk.chunk, blk.block
    ops = Ops(module, isa, L)
    scheme = scheme_of(pair, isa)
    tile = Tile(blk, scheme.group_dwords, scheme.tables)
    micro = micro_kquant if scheme.kind == "kquant" else micro_blocks
    NR = scheme.records
    fn = ir.Function(module, GEMM_TYPE, name=name)
    for arg, arg_name in zip(fn.args, _ARG_NAMES):
        arg.name = arg_name
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
    # few activation rows: each is the pair's rows kernel over the weight rows (the GEMV
    # fast path; the same bits, as every form of the dot), which streams the weights
    # without the tile's transpose
    few = fn.append_basic_block("few")
    blocked = fn.append_basic_block("blocked")
    b.cbranch(b.icmp_signed("<=", m_rows, i64(GEMV_ROWS_MAX)), few, blocked)
    b.position_at_end(few)
    rows_fn = _rows_kernel(module, isa, pair)
    with for_range(b, 0, m_rows, name="gm") as m:
        b.call(rows_fn, [w, w_row, w_rec, b.gep(x, [b.mul(m, x_row)]), x_rec, count,
                         n_rows, b.gep(y, [b.mul(m, y_m)]), y_n])
    b.branch(done)
    b.position_at_end(blocked)
    last = b.sub(n_rows, i64(1))
    last_rec = b.sub(count, i64(1))
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
            with for_range(b, 0, count, step=NR, name="g") as g:
                nrec = b.sub(count, g)
                nrec = b.select(b.icmp_signed("<", nrec, i64(NR)), nrec, i64(NR))
                recs = []
                for k in range(NR):     # records past G repeat record G-1 (not added)
                    gk = b.add(g, i64(k))
                    gk = b.select(b.icmp_signed(">", gk, last_rec), last_rec, gk)
                    recs.append(b.mul(gk, w_rec))
                for r in range(R):
                    scheme.unpack(b, ops, tile, tp,
                                  [[b.gep(row, [off]) for off in recs]
                                   for row in rows[r * L:(r + 1) * L]], r)
                # the records of the next step of the walk, or the next block's first
                ahead = b.select(b.icmp_signed("<", b.add(g, i64(NR)), count),
                                 b.mul(b.add(g, i64(NR)), w_rec), b.mul(i64(NB), w_row))
                for row in rows:
                    _prefetch(b, module, b.gep(row, [ahead]), NR * pair.lhs.record_bytes)
                first = b.icmp_signed("==", g, i64(0))
                xg = b.gep(x_chunk, [b.mul(g, x_rec)])
                with for_range(b, 0, full, step=C, name="mb") as mb:
                    xrows = [b.gep(xg, [b.mul(b.add(mb, i64(i)), x_row)]) for i in range(C)]
                    micro(b, fn, ops, blk, scheme, tile, tp, xrows,
                          b.gep(acc, [b.mul(mb, i64(NB))]), first, nrec, x_rec)
                rest = b.sub(mc, full)
                for cols in range(1, C):
                    with b.if_then(b.icmp_signed("==", rest, i64(cols))):
                        xrows = [b.gep(xg, [b.mul(b.add(full, i64(i)), x_row)])
                                 for i in range(cols)]
                        micro(b, fn, ops, blk, scheme, tile, tp, xrows,
                              b.gep(acc, [b.mul(full, i64(NB))]), first, nrec, x_rec)
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

PAR_BODY_TYPE = ir.FunctionType(I64, [I8P, I64, I64, I64.as_pointer()])
ENV_WORDS = len(_ARG_NAMES)


def add_gemm_par(module: ir.Module, isa: str, pair) -> ir.Function:
    """Add (once) ``i64 ninfer_<stem>_gemm_par(i8* env, i64 lo, i64 hi, i64* err)``, the
    body a thread pool runs: ``env`` holds the twelve arguments of the GEMM as i64 words,
    and the call computes the blocks ``[lo, hi)`` of ``blocking(isa).block`` weight rows
    each (the last one cut at N). It cannot fail: the status is 0."""
    name = gemm_name(pair) + "_par"
    if name in module.globals:
        return module.globals[name]
    gemm = add_gemm(module, isa, pair)
    nb = blocking(isa).block
    fn = ir.Function(module, PAR_BODY_TYPE, name=name)
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
