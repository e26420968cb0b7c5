"""Dot kernels of the 32-element pairs Q4_0/Q5_0/Q8_0/IQ4_NL x Q8_0
(docs/spec/quantized-gguf.md §4).

For each pair ``p`` of ``ninfer_ir.quant.PAIRS`` whose ``cpu_module`` is this one, two
exported functions with the signatures of ``qdot`` (the Q4_K ones)::

    float p.cpu_dot(i8* w, i64 w_rec_stride_bytes, i8* x, i64 x_rec_stride_bytes, i64 G)
    void  p.cpu_rows(i8* w, i64 w_row_stride_bytes, i64 w_rec_stride_bytes,
                     i8* x, i64 x_rec_stride_bytes, i64 G, i64 nrows, float* y,
                     i64 y_stride_elems)

Every load is byte-aligned (``align 1``), so records may sit at any address.

Integers. A record's 32 weight codes become one ``<32 x i8>`` of signed values
(Q4_0: nibble - 8; Q5_0: (nibble | fifth bit << 4) - 16; Q8_0: the stored i8;
IQ4_NL: the table value of the index, looked up with ``vpshufb`` on x86 levels and a
tree of selects on the index bits on the portable level);
with the 32 activation quants they are widened to i32 and multiplied, and
adjacent products are added (``vpmaddwd`` where the target has it):
16 exact i32 lanes of magnitude <= 2*128*128. ``S_b`` is their sum
(``llvm.vector.reduce.add`` in the single dot; in the rows kernel the lanes of
16 rows are transpose-reduced, ``qir.TransposeReducer``), exact and
|S_b| <= 2**19, so ``sitofp`` is exact.

Floats, one rounding per step, plain IEEE instructions (no FMA, no fast-math):
Q4_0 ``v = (S*d_w)*d_x``; Q5_0, Q8_0 and IQ4_NL ``v = (d_w*d_x)*S`` (the product of
two f32 is commutative, so Q8_0's ``S*(d_w*d_x)`` is the same value). The
binary16 scales are widened exactly (``vcvtph2ps`` on x86 levels, integer bit
assembly on the portable level). A row's result is ``((v0 + v1) + v2) + ...``
(G = 1 gives v0 itself, G <= 0 gives +0.0).

The rows kernel of the VNNI level is ``qdot_blocks_vnni`` (16 rows from base + k *
stride, four records per vector, the last block overlapping; fewer than 16 rows row by
row through the single dot's record loop, ``_row_sum``). On the AVX2 and portable
levels it takes blocks of 16 rows, lane i = row ``r0 + i`` (a short last
block repeats the last row and does not store it), one ``_row_pair_core`` per two rows
and a ``qir.TransposeReducer``. Either walks the records in
order, so each lane's sum is the sequential fold of its row. Each step also prefetches
1/G of the next block's rows in address order (``prefetch.prefetch_next_block``): with
short rows (K = 640: 20 records) the walk's 16 per-row streams are too short for the
hardware prefetchers, and from DRAM the walk ran at under half the read rate
(docs/cpu-performance-notes.md, "Short rows"). Prefetches are hints: results do not
change.
"""
from __future__ import annotations

import llvmlite.ir as ir

from ninfer_ir.quant import IQ4_NL_VALUES, PAIRS, DotPair, iq4_nl, q4_0, q5_0, q8_0
from ninfer_ir.backends.llvm.kernels.qdot import (DOT_TYPE, declare_rows, reduce_add,
                                                  store_zero_rows)
from ninfer_ir.backends.llvm.kernels.prefetch import prefetch_next_block
from ninfer_ir.backends.llvm.kernels.qdot_blocks_vnni import add_rows_vnni
from ninfer_ir.backends.llvm.kernels.qir import (F16, F32, I8, I16, I32, TransposeReducer,
                                                 const, const_vec, entry_alloca, for_range,
                                                 half_bits_to_float, i32, i64, intrinsic, load,
                                                 shuffle, splat, vec, zero)

LANES = 16
BLOCK = 32
V32B = vec(I8, BLOCK)
V32I = vec(I32, BLOCK)
V16I = vec(I32, LANES)
V16F = vec(F32, LANES)
_XQ = q8_0.field("q").start            # 2: the activation quants


# --- per-pair weight codes and record value ----------------------------------------------

def _nibbles(b, rec, offset):
    """The 32 nibbles of 16 packed bytes: low nibbles (elements 0-15), then high ones."""
    packed = load(b, rec, offset, vec(I8, 16))
    low = b.and_(packed, splat(I8, 16, 15))
    high = b.lshr(packed, splat(I8, 16, 4))
    return shuffle(b, low, high, range(BLOCK))


def _codes_q4_0(b, rec):
    return b.sub(_nibbles(b, rec, q4_0.field("q").start), splat(I8, BLOCK, 8))


def _fifth_bits(b, rec, isa):
    """<32 x i8>: 16 where bit j of Q5_0's qh is set, else 0. AVX-512: the word is the
    lane mask itself (bit j is lane j of the ``<32 x i1>``); elsewhere byte j//8 is
    tested against 1 << j%8 (a byte shuffle and a test, no per-lane shifts)."""
    if isa == "avx512vnni":
        mask = b.bitcast(load(b, rec, q5_0.field("qh").start, I32), vec(ir.IntType(1), BLOCK))
    else:
        qh = load(b, rec, q5_0.field("qh").start, vec(I8, 4))
        spread = shuffle(b, qh, qh, [j // 8 for j in range(BLOCK)])
        bit = b.and_(spread, const_vec(I8, [1 << (j % 8) for j in range(BLOCK)]))
        mask = b.icmp_unsigned("!=", bit, zero(V32B))
    return b.select(mask, splat(I8, BLOCK, 16), zero(V32B))


def _unsigned_q4_0(b, rec, isa):
    return _nibbles(b, rec, q4_0.field("q").start)


def _unsigned_q5_0(b, rec, isa):
    return b.or_(_nibbles(b, rec, q5_0.field("q").start), _fifth_bits(b, rec, isa))


def _unsigned_iq4_nl(b, rec, isa):
    """The table value + 128 (1..241) of each index."""
    index = _nibbles(b, rec, iq4_nl.field("q").start)
    table = [v + 128 for v in IQ4_NL_VALUES]
    if isa != "portable":
        pshufb = intrinsic(b.module, "llvm.x86.avx2.pshuf.b", V32B, [V32B, V32B])
        return b.call(pshufb, [const_vec(I8, table * 2), index])
    level = [splat(I8, BLOCK, t) for t in table]
    for bit in range(4):                      # pick by index bit 0, then 1, 2, 3
        set_ = b.icmp_unsigned("!=", b.and_(index, splat(I8, BLOCK, 1 << bit)), zero(V32B))
        level = [b.select(set_, level[k + 1], level[k]) for k in range(0, len(level), 2)]
    return level[0]


def _unsigned_q8_0(b, rec, isa):
    return b.xor(load(b, rec, q8_0.field("q").start, V32B), splat(I8, BLOCK, 0x80))


def _value_s_dw_dx(b, s, dw, dx):
    return b.fmul(b.fmul(s, dw), dx)


def _value_dwdx_s(b, s, dw, dx):
    return b.fmul(b.fmul(dw, dx), s)


#: stem -> (unsigned codes u = c + bias of a record (<32 x i8>), bias, v from f32(S), d_w, d_x)
_PAIR_CODE = {
    "q40_q80": (_unsigned_q4_0, 8, _value_s_dw_dx),
    "q50_q80": (_unsigned_q5_0, 16, _value_dwdx_s),
    "q80_q80": (_unsigned_q8_0, 128, _value_dwdx_s),
    "iq4nl_q80": (_unsigned_iq4_nl, 128, _value_dwdx_s),
}


def _signed(b, unsigned, bias):
    """The signed codes c = u - bias as <32 x i8> (exact: c lies in [-128, 127])."""
    return b.sub(unsigned, splat(I8, BLOCK, bias))
_MINE = [p for p in PAIRS.values() if p.cpu_module == __name__.rpartition(".")[2]]
if {p.stem for p in _MINE} != set(_PAIR_CODE):
    raise ImportError("qdot_blocks: its pairs of ninfer_ir.quant.PAIRS and its code differ")


# --- shared pieces ------------------------------------------------------------------------

def _half(b, bits, isa):
    """f32 of binary16 bits (scalar i16 or a vector of them), exactly."""
    if isa == "portable":
        return half_bits_to_float(b, bits)
    if isinstance(bits.type, ir.VectorType):
        return b.fpext(b.bitcast(bits, vec(F16, bits.type.count)), vec(F32, bits.type.count))
    return b.fpext(b.bitcast(bits, F16), F32)


def _pair_sums(b, codes, xq):
    """<16 x i32>: lane k = codes[2k]*xq[2k] + codes[2k+1]*xq[2k+1], exact."""
    prod = b.mul(b.sext(codes, V32I), b.sext(xq, V32I))
    return b.add(shuffle(b, prod, prod, range(0, BLOCK, 2)),
                 shuffle(b, prod, prod, range(1, BLOCK, 2)))


def _halves(b, v):
    """<16 x i32> -> <8 x i32>: lane k = v[k] + v[k+8] (exact)."""
    return b.add(shuffle(b, v, v, range(8)), shuffle(b, v, v, range(8, 16)))


def _name_args(fn, names):
    for arg, name in zip(fn.args, names):
        arg.name = name


# --- the single dot -------------------------------------------------------------------------

def _row_sum(b, module, isa, pair, w, w_rec, x, x_rec, count, acc):
    """Store into ``acc`` (an f32 slot) the dot of one row: record by record, sequential
    sum (+0.0 for G <= 0)."""
    unsigned_of, bias, value_of = _PAIR_CODE[pair.stem]
    b.store(const(F32, 0.0), acc)                       # the G <= 0 result
    with for_range(b, 0, count, name="g") as g:
        wrec = b.gep(w, [b.mul(g, w_rec)])
        xrec = b.gep(x, [b.mul(g, x_rec)])
        codes = _signed(b, unsigned_of(b, wrec, isa), bias)
        s = reduce_add(b, module, _pair_sums(b, codes, load(b, xrec, _XQ, V32B)))
        v = value_of(b, b.sitofp(s, F32), _half(b, load(b, wrec, 0, I16), isa),
                     _half(b, load(b, xrec, 0, I16), isa))
        first = b.icmp_signed("==", g, i64(0))
        b.store(b.select(first, v, b.fadd(b.load(acc), v)), acc)


def add_dot(module: ir.Module, isa: str, pair: DotPair) -> ir.Function:
    """``pair.cpu_dot``: record by record, sequential sum."""
    fn = ir.Function(module, DOT_TYPE, name=pair.cpu_dot)
    w, w_rec, x, x_rec, count = fn.args
    _name_args(fn, ("w", "w_rec_stride", "x", "x_rec_stride", "G"))
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    acc = entry_alloca(b, F32, "acc")
    _row_sum(b, module, isa, pair, w, w_rec, x, x_rec, count, acc)
    b.ret(b.load(acc))
    return fn


# --- the rows kernel (GEMV) --------------------------------------------------------------------

def _row_pair_core(module, isa, stem, unsigned_of, bias):
    """(AVX2 and portable levels) ``(row_pair_sums(b, rec_a, rec_b, xq) -> <16 x i32>, biased)``: lanes 0-7 hold
    partial sums of row a's record, lanes 8-15 of row b's, each exact; their total is
    ``S`` or, when ``biased``, ``S + bias * sum(xq)``.

    * avx2: ``vpmaddubsw`` (u8 x i8 pairs into i16: at most 2*31*128 < 2**15, exact) and
      ``vpmaddwd`` by ones for Q4_0 and Q5_0; Q8_0's unsigned codes reach 255, which could
      saturate, so it takes the signed codes widened to i16 and ``vpmaddwd``;
    * portable: signed codes widened to i32, multiplied and added in pairs.
    """
    if isa == "avx2":
        maddubs = intrinsic(module, "llvm.x86.avx2.pmadd.ub.sw", vec(I16, 16), [V32B, V32B])
        maddwd = intrinsic(module, "llvm.x86.avx2.pmadd.wd", vec(I32, 8),
                           [vec(I16, 16), vec(I16, 16)])
        ones = splat(I16, 16, 1)
        if bias < 64:
            def avx2(b, rec_a, rec_b, xq):
                part = [b.call(maddwd, [b.call(maddubs, [unsigned_of(b, r, isa), xq]), ones])
                        for r in (rec_a, rec_b)]
                return shuffle(b, part[0], part[1], range(LANES))
            return avx2, True

        def avx2_signed(b, rec_a, rec_b, xq):
            xw = b.sext(xq, vec(I16, BLOCK))
            x_lo, x_hi = (shuffle(b, xw, xw, range(h, h + 16)) for h in (0, 16))
            part = []
            for r in (rec_a, rec_b):
                cw = b.sext(_signed(b, unsigned_of(b, r, isa), bias), vec(I16, BLOCK))
                lo = b.call(maddwd, [shuffle(b, cw, cw, range(16)), x_lo])
                hi = b.call(maddwd, [shuffle(b, cw, cw, range(16, 32)), x_hi])
                part.append(b.add(lo, hi))
            return shuffle(b, part[0], part[1], range(LANES))
        return avx2_signed, False

    def portable(b, rec_a, rec_b, xq):
        part = [_halves(b, _pair_sums(b, _signed(b, unsigned_of(b, r, isa), bias), xq))
                for r in (rec_a, rec_b)]
        return shuffle(b, part[0], part[1], range(LANES))
    return portable, False


def _few_rows(b, module, isa, pair, w, w_row, w_rec, x, x_rec, count, nrows, y, y_stride):
    """Row by row through ``_row_sum``."""
    acc = entry_alloca(b, F32, "row")
    with for_range(b, 0, nrows, name="fr") as r:
        _row_sum(b, module, isa, pair, b.gep(w, [b.mul(r, w_row)]), w_rec, x, x_rec, count, acc)
        b.store(b.load(acc), b.gep(y, [b.mul(r, y_stride)]), align=4)


def add_rows(module: ir.Module, isa: str, pair: DotPair,
             vbmi: bool | None = None) -> ir.Function:
    """``pair.cpu_rows``: blocks of 16 rows, one lane per row (``qdot_blocks_vnni`` on the
    VNNI level; ``vbmi`` as there)."""
    unsigned_of, bias, value_of = _PAIR_CODE[pair.stem]
    if isa == "avx512vnni":
        return add_rows_vnni(module, pair, value_of, lambda b, *args: _few_rows(
            b, module, isa, pair, *args), vbmi)
    row_pair_sums, biased = _row_pair_core(module, isa, pair.stem, unsigned_of, bias)
    fn = declare_rows(module, pair.cpu_rows)
    w, w_row, w_rec, x, x_rec, count, nrows, y, y_stride = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    accbuf = entry_alloca(b, V16F, "acc", align=64)
    empty = fn.append_basic_block("empty")
    work = fn.append_basic_block("work")
    done = fn.append_basic_block("done")
    b.cbranch(b.icmp_signed("<=", count, i64(0)), empty, work)
    b.position_at_end(empty)
    store_zero_rows(b, nrows, y, y_stride)
    b.branch(done)

    b.position_at_end(work)
    last_row = b.sub(nrows, i64(1))
    with for_range(b, 0, nrows, step=LANES, name="r0") as r0:
        bases = []
        for i in range(LANES):
            row = b.add(r0, i64(i))
            row = b.select(b.icmp_signed(">", row, last_row), last_row, row)
            bases.append(b.gep(w, [b.mul(row, w_row)]))
        with for_range(b, 0, count, name="g") as g:
            prefetch_next_block(b, module, bases[0], g, count, count, w_row)
            offset = b.mul(g, w_rec)
            recs = [b.gep(base, [offset]) for base in bases]
            xrec = b.gep(x, [b.mul(g, x_rec)])
            xq = load(b, xrec, _XQ, V32B)
            reducer = TransposeReducer(b, LANES)
            dbits = zero(vec(I16, LANES))
            for k in range(0, LANES, 2):
                reducer.push(row_pair_sums(b, recs[k], recs[k + 1], xq), [k] * 8 + [k + 1] * 8)
            for i in range(LANES):
                dbits = b.insert_element(dbits, load(b, recs[i], 0, I16), i32(i))
            sums = reducer.result()
            if biased:      # sum of u*x = S + bias * sum(x)
                sumx = reduce_add(b, module, b.sext(xq, V32I))
                sumx = b.mul(sumx, i32(bias))
                sums = b.sub(sums, shuffle(b, b.insert_element(zero(V16I), sumx, i32(0)),
                                           zero(V16I), [0] * LANES))
            s = b.sitofp(sums, V16F)
            dx = _half(b, load(b, xrec, 0, I16), isa)
            dxv = shuffle(b, b.insert_element(zero(V16F), dx, i32(0)), zero(V16F), [0] * LANES)
            v = value_of(b, s, _half(b, dbits, isa), dxv)
            first = b.icmp_signed("==", g, i64(0))
            acc = b.load(accbuf, align=64)
            b.store(b.select(first, v, b.fadd(acc, v)), accbuf, align=64)
        rows_here = b.sub(nrows, r0)
        stop = b.select(b.icmp_signed("<", rows_here, i64(LANES)), rows_here, i64(LANES))
        lanes_f = b.bitcast(accbuf, F32.as_pointer())
        with for_range(b, 0, stop, name="st") as i:
            value = b.load(b.gep(lanes_f, [i]), align=4)
            b.store(value, b.gep(y, [b.mul(b.add(r0, i), y_stride)]), align=4)
    b.branch(done)
    b.position_at_end(done)
    b.ret_void()
    return fn
