"""The AVX-512 VNNI Q4_K x Q8_K kernels: ``ninfer_q4k_q8k_dot_rows`` (the GEMV
fast path) and ``ninfer_q4k_q8k_dot`` (the same record code, one record at a
time, with exact ``llvm.vector.reduce.add`` of its S and T lanes).

Work is organised as blocks of 16 rows x one record: lane i of every vector
in the float stage is row ``r0 + i``, so the sequential cross-record sum of
each row is a plain vertical vector add, ``acc = acc + v_g``, strictly in
record order (the first record initialises ``acc`` by a select, so there is
no initial accumulator). Rows past the end of a short last block repeat the
last row and are not stored.

The Q8_K side is rearranged once per chunk of up to 64 records into 64-byte
aligned stack slots shared by every row block:

    X0 = q[0:32]    ++ q[64:96]     partners of the low nibbles of bytes 0-63
    X1 = q[32:64]   ++ q[96:128]    partners of the high nibbles of bytes 0-63
    X2 = q[128:160] ++ q[192:224]   low nibbles of bytes 64-127
    X3 = q[160:192] ++ q[224:256]   high nibbles of bytes 64-127
    bsum (16 x i16), ds (f32).

Between chunks the running sums live in ``y``.

A block's walk is 16 streams of records one row stride apart, each only as long
as a row (2304 bytes for K = 4096); the hardware prefetchers keep few of them
ahead, so with the weights in DRAM the loads stall and the record code waits on
them. Each step therefore prefetches the records a few steps further along the walk
(into the next block past the end of this one), which lets the DRAM transfer
overlap the arithmetic, and, where a block's span is small, 1/G of the next
block's span in address order (``kernels/prefetch.py``). Prefetches are hints:
results do not change.

Per Q4_K record (two 64-byte loads of nibbles ``Q0``, ``Q1``):

* ``Dj = vpdpbusd(0, nibbles, Xj)``: u8 nibbles are the first (unsigned)
  operand, the i8 quants the second (signed) one. Each i32 lane sums four
  products: |lane| <= 4*15*128 = 7680. In D0 lanes 0-7 belong to sub-block 0
  and lanes 8-15 to sub-block 2; D1: 1 and 3; D2: 4 and 6; D3: 5 and 7.
  The high nibbles are ``(Q >> 4) & 15`` by a 16-bit shift and a mask, or,
  where the target has GFNI, one ``vgf2p8affineqb`` (an exact bit matrix).
* The scales come from one in-register decode: a byte shuffle puts each
  6-bit field's bytes into an i16 word (low byte: the byte holding its low
  bits; high byte: the byte holding its top two bits, or zero), then
  ``(word >> k) & keep | (word >> 10) & ~keep`` with k = 0 or 4 and keep =
  0x3F or 0x0F gives sc0..sc7, m0..m7 (spec §2).

The rows kernel takes the records of two rows a, b at a time (one decode for
both):

* ``vpackssdw(Dj of a, Dj of b)``, j = 0..3: exact, every lane fits i16;
  each 128-bit chunk holds four lanes of a then four of b.
* ``vpdpwssd`` of each with the matching scales (a vpermw of the decoded
  words) into one accumulator: each i32 lane gains two products of magnitude
  <= 7680*63 and holds a partial sum of one record's S, so |lane| <=
  8*63*61,440 < 2**31. Chunks hold lanes of a, a, b, b.
* ``T``: ``vpmaddwd`` of the stored bsum (any i16, twice) with both records'
  m (<= 63) duplicated per pair: |lane| <= 2*32768*63, and eight lanes of one
  record sum to <= 33,030,144.

The single-record dot packs D0 with D1 and D2 with D3 instead and reduces
each record's lanes with ``llvm.vector.reduce.add``.

The eight S and eight T vectors of a block (one per pair of rows) are
transpose-reduced (exact integer sums, any grouping) to one vector each,
lane i = row i. Then ``p = f32(d)*sitofp(S)``,
``n = f32(dmin)*sitofp(T)``, ``v = ds*(p - n)`` (``vcvtph2ps``, ``vcvtdq2ps``,
``vmulps``, ``vsubps``: one rounding each, nothing fused); d and dmin of the
16 rows are gathered. Neither kernel reads its inputs when G <= 0 or there
are no rows.
"""
from __future__ import annotations

import llvmlite.ir as ir

from ninfer_ir.backends.llvm.kernels.qdot import (Q4_QS, Q8_BSUM, Q8_QS, add_dot_simple, declare_rows, reduce_add, row_sum,
                   store_zero_rows)
from ninfer_ir.backends.llvm.kernels.prefetch import (prefetch_ahead, prefetch_first_steps,
                                                      prefetch_next_block)
from ninfer_ir.backends.llvm.kernels.qir import (F16, F32, I8, I8P, I16, I32, I64, TransposeReducer, const_vec, entry_alloca,
                  for_range, gather_i32, i32, i64, intrinsic, load, shuffle, splat, store, vec, zero)

LANES = 16              # rows per block (lanes of the float stage)
CHUNK = 64              # Q8_K records prepared per chunk
FEW_ROWS = 4            # fewer rows than this go record by record
SLOT = 320              # bytes per prepared Q8_K record
SLOT_BSUM = 256
SLOT_DS = 288
V64B = vec(I8, 64)
V16I = vec(I32, 16)
V16F = vec(F32, 16)
PTRS = ir.VectorType(I32.as_pointer(), LANES)
PREFETCH_LINES = (0, 64, 128)   # with records 144 bytes apart, these cover every line


class _Intrinsics:
    """The intrinsics the record code calls; ``gfni`` selects the high-nibble extraction."""

    def __init__(self, module, gfni: bool):
        self.gfni = gfni
        if gfni:
            self.affine = intrinsic(module, "llvm.x86.vgf2p8affineqb.512", V64B,
                                    [V64B, V64B, I8])
        self.dpbusd = intrinsic(module, "llvm.x86.avx512.vpdpbusd.512", V16I, [V16I, V64B, V64B])
        self.dpwssd = intrinsic(module, "llvm.x86.avx512.vpdpwssd.512", V16I,
                                [V16I, vec(I16, 32), vec(I16, 32)])
        self.packssdw = intrinsic(module, "llvm.x86.avx512.packssdw.512", vec(I16, 32),
                                  [V16I, V16I])
        self.maddwd = intrinsic(module, "llvm.x86.avx2.pmadd.wd", vec(I32, 8),
                                [vec(I16, 16), vec(I16, 16)])
        self.maddwd512 = intrinsic(module, "llvm.x86.avx512.pmaddw.d.512", V16I,
                                   [vec(I16, 32), vec(I16, 32)])
        self.gather = gather_i32(module, LANES)


# --- scale decoding -------------------------------------------------------------------
# Word k of the decoded vector is sc_k (k < 8) or m_{k-8}; the shuffle picks its
# bytes from the 16-byte record header (scale bytes start at offset 4).
_WORD_LOW = [4, 5, 6, 7, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15]
_WORD_HIGH = [None] * 4 + [4, 5, 6, 7] + [None] * 4 + [8, 9, 10, 11]
_WORD_SHIFT = [0] * 12 + [4] * 4
_WORD_KEEP = [0x3F] * 4 + [0x0F] * 4 + [0x3F] * 4 + [0x0F] * 4


def _word_mask() -> list[int]:
    """Byte shuffle of the header copied into both 128-bit halves (in-lane: ``vpshufb``)."""
    mask = []
    for k, (low, high) in enumerate(zip(_WORD_LOW, _WORD_HIGH)):
        base = 16 * (k // 8)                            # this word's 128-bit half
        mask += [base + low, 32 if high is None else base + high]    # 32: a zero byte
    return mask


def _scale_words(base: int) -> list[int]:
    """The scale word of each i16 lane of vpackssdw(Da, Db) (Da covers sub-blocks base, base+2)."""
    return [base + (0 if p < 4 else 1) + (0 if c < 2 else 2) for c in range(4) for p in range(8)]


_WORDS = _word_mask()
_SC01 = _scale_words(0)
_SC23 = _scale_words(4)
_MDUP = [8 + k // 2 for k in range(16)]

# Record pairs (a, b): the decoded words of a are words 0-15 and of b words
# 16-31 of one <32 x i16>. vpackssdw(Dj of a, Dj of b) holds, in each 128-bit
# chunk c, four lanes of a then four of b; Dj covers sub-block BASE[j] in
# chunks 0-1 and BASE[j] + 2 in chunks 2-3.
_PAIR_WORDS = [64 if m == 32 else m + 32 * (k // 32) for k, m in enumerate(_WORDS * 2)]
_DJ_BASE = (0, 1, 4, 5)
_PAIR_SCALES = [[(0 if p < 4 else 16) + base + (0 if c < 2 else 2)
                 for c in range(4) for p in range(8)] for base in _DJ_BASE]
_PAIR_MDUP = [(0 if k < 16 else 16) + 8 + (k % 16) // 2 for k in range(32)]
_PAIR_S_OWNERS = [0, 0, 1, 1] * 4          # lanes of the pair's S vector: a, a, b, b per chunk
_PAIR_T_OWNERS = [0] * 8 + [1] * 8


def _decode_words(b, copies, mask):
    """Scale words from header copies (two per record) by the byte shuffle ``mask``."""
    n = len(mask) // 2
    words = b.bitcast(shuffle(b, copies, zero(copies.type), mask), vec(I16, n))
    reps = n // 16
    low = b.lshr(words, const_vec(I16, _WORD_SHIFT * reps))
    high = b.lshr(words, splat(I16, n, 10))
    keep = const_vec(I16, _WORD_KEEP * reps)
    drop = const_vec(I16, [~k & 0xFFFF for k in _WORD_KEEP * reps])
    return b.or_(b.and_(low, keep), b.and_(high, drop))


def _decode_scales(b, header_bytes):
    """sc0..sc7, m0..m7 as a <16 x i16> (spec §2)."""
    both = shuffle(b, header_bytes, header_bytes, list(range(16)) * 2)
    return _decode_words(b, both, _WORDS)


def _decode_pair(b, header_a, header_b):
    """The words of records a (0-15) and b (16-31) as one <32 x i16>."""
    a2 = shuffle(b, header_a, header_a, list(range(16)) * 2)
    b2 = shuffle(b, header_b, header_b, list(range(16)) * 2)
    return _decode_words(b, shuffle(b, a2, b2, range(64)), _PAIR_WORDS)


# GF2P8AFFINEQB computes, per byte x, bit i of the result as the parity of
# (byte 7-i of the qword matrix) AND x. With matrix bytes 7..4 = 0x10, 0x20,
# 0x40, 0x80 and bytes 3..0 = 0, result bit i = x bit i+4 for i < 4 and 0
# above: x >> 4, the high nibble, in one instruction.
_HIGH_NIBBLE_MATRIX = ir.Constant(V64B, [ir.Constant(I8, v) for v in
                                         [0, 0, 0, 0, 0x80, 0x40, 0x20, 0x10] * 8])


# --- one record -------------------------------------------------------------------------

def _record(b, fns, rec, slot):
    """(S lanes <16 x i32>, T lanes <8 x i32>) of the Q4_K record at ``rec``."""
    scales = _decode_scales(b, load(b, rec, 0, vec(I8, 16)))
    parts = _products(b, fns, rec, slot)
    p01 = b.call(fns.packssdw, [parts[0], parts[1]])
    p23 = b.call(fns.packssdw, [parts[2], parts[3]])
    acc = b.call(fns.dpwssd, [zero(V16I), p01, shuffle(b, scales, scales, _SC01)])
    acc = b.call(fns.dpwssd, [acc, p23, shuffle(b, scales, scales, _SC23)])
    bsum = load(b, slot, SLOT_BSUM, vec(I16, 16), align=32)
    t = b.call(fns.maddwd, [bsum, shuffle(b, scales, scales, _MDUP)])
    return acc, t


def _high_low(b, fns, packed):
    low = b.and_(packed, splat(I8, 64, 0x0F))
    if fns.gfni:
        return low, b.call(fns.affine, [packed, _HIGH_NIBBLE_MATRIX, ir.Constant(I8, 0)])
    shifted = b.lshr(b.bitcast(packed, vec(I16, 32)), splat(I16, 32, 4))
    return low, b.and_(b.bitcast(shifted, V64B), splat(I8, 64, 0x0F))


def _products(b, fns, rec, slot):
    """D0..D3 of one record (see the module doc)."""
    parts = []
    for half in (0, 1):
        low, high = _high_low(b, fns, load(b, rec, Q4_QS + 64 * half, V64B))
        for j, nibbles in ((2 * half, low), (2 * half + 1, high)):
            xq = load(b, slot, 64 * j, V64B, align=64)
            parts.append(b.call(fns.dpbusd, [zero(V16I), nibbles, xq]))
    return parts


def _record_pair(b, fns, rec_a, rec_b, slot):
    """S and T lanes of two records against one prepared Q8_K slot.

    S: ``vpackssdw(Dj of a, Dj of b)`` times the two records' scales, four
    ``vpdpwssd`` into one vector whose chunks hold a, a, b, b;
    T: ``vpmaddwd`` of the bsum (twice) with both records' m, lanes 0-7 a.
    """
    words = _decode_pair(b, load(b, rec_a, 0, vec(I8, 16)), load(b, rec_b, 0, vec(I8, 16)))
    da, db = _products(b, fns, rec_a, slot), _products(b, fns, rec_b, slot)
    acc = zero(V16I)
    for j in range(4):
        packed = b.call(fns.packssdw, [da[j], db[j]])
        acc = b.call(fns.dpwssd, [acc, packed, shuffle(b, words, words, _PAIR_SCALES[j])])
    bsum = load(b, slot, SLOT_BSUM, vec(I16, 16), align=32)
    bsum2 = shuffle(b, bsum, bsum, list(range(16)) * 2)
    t = b.call(fns.maddwd512, [bsum2, shuffle(b, words, words, _PAIR_MDUP)])
    return acc, t


def _lane_values(b, fns, recs, slot, ptr_vec, dsv):
    """v of 16 Q4_K records against one prepared Q8_K slot, lane i = record i.

    ``ptr_vec`` holds the 16 record addresses (for gathering d and dmin),
    ``dsv`` the (splat) ds.
    """
    s_red = TransposeReducer(b, LANES)
    t_red = TransposeReducer(b, LANES)
    for k in range(0, LANES, 2):
        s, t = _record_pair(b, fns, recs[k], recs[k + 1], slot)
        s_red.push(s, [k + o for o in _PAIR_S_OWNERS])
        t_red.push(t, [k + o for o in _PAIR_T_OWNERS])
    svec = s_red.result()
    tvec = t_red.result()
    ones = ir.Constant(vec(ir.IntType(1), LANES), [ir.Constant(ir.IntType(1), 1)] * LANES)
    heads = b.call(fns.gather, [ptr_vec, ones, zero(V16I)])
    d = b.fpext(b.bitcast(b.trunc(heads, vec(I16, LANES)), vec(F16, LANES)), V16F)
    dmin_bits = b.trunc(b.lshr(heads, splat(I32, LANES, 16)), vec(I16, LANES))
    dmin = b.fpext(b.bitcast(dmin_bits, vec(F16, LANES)), V16F)
    p = b.fmul(d, b.sitofp(svec, V16F))
    n = b.fmul(dmin, b.sitofp(tvec, V16F))
    return b.fmul(dsv, b.fsub(p, n))


def _address_vector(b, pointers):
    addr = zero(vec(I64, LANES))
    for i, ptr in enumerate(pointers):
        addr = b.insert_element(addr, b.ptrtoint(ptr, I64), i32(i))
    return addr


def _splat(b, value, ty):
    return shuffle(b, b.insert_element(zero(ty), value, i32(0)), zero(ty), [0] * ty.count)


# --- driver ---------------------------------------------------------------------------------

def _prepare_x(b, x, x_rec, g0, count, xp):
    halves = vec(I8, 32)
    with for_range(b, 0, count, name="xk") as k:
        xr = b.gep(x, [b.mul(b.add(g0, k), x_rec)])
        slot = b.gep(xp, [b.mul(k, i64(SLOT))])
        q = [load(b, xr, Q8_QS + 32 * i, halves) for i in range(8)]
        for j, (lo, hi) in enumerate(((0, 2), (1, 3), (4, 6), (5, 7))):
            store(b, shuffle(b, q[lo], q[hi], range(64)), slot, 64 * j, align=64)
        store(b, load(b, xr, Q8_BSUM, vec(I16, 16)), slot, SLOT_BSUM, align=32)
        store(b, load(b, xr, 0, F32), slot, SLOT_DS, align=4)


def add_rows_vnni(module: ir.Module, gfni: bool = False) -> ir.Function:
    """``ninfer_q4k_q8k_dot_rows``; ``gfni`` extracts high nibbles with GF2P8AFFINEQB."""
    fns = _Intrinsics(module, gfni)
    fn = declare_rows(module)
    w, w_row, w_rec, x, x_rec, count, nrows, y, y_stride = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    xp = b.bitcast(entry_alloca(b, ir.ArrayType(I8, CHUNK * SLOT), "xprep", align=64), I8P)
    accbuf = entry_alloca(b, V16F, "acc", align=64)

    empty = fn.append_basic_block("empty")
    work = fn.append_basic_block("work")
    done = fn.append_basic_block("done")
    check_rows = fn.append_basic_block("check_rows")
    b.cbranch(b.icmp_signed("<=", count, i64(0)), empty, check_rows)
    b.position_at_end(empty)
    store_zero_rows(b, nrows, y, y_stride)
    b.branch(done)
    few = fn.append_basic_block("few_rows")
    b.position_at_end(check_rows)
    b.cbranch(b.icmp_signed("<=", nrows, i64(0)), done, few)

    # A handful of rows: record by record per row rather than a block of 16 lanes.
    b.position_at_end(few)
    one_by_one = fn.append_basic_block("one_by_one")
    b.cbranch(b.icmp_signed("<", nrows, i64(FEW_ROWS)), one_by_one, work)
    b.position_at_end(one_by_one)
    row_acc = entry_alloca(b, F32, "row")
    stats = _vnni_stats(gfni)
    with for_range(b, 0, nrows, name="fr") as r:
        row_sum(b, module, stats, "avx512vnni", b.gep(w, [b.mul(r, w_row)]), w_rec, x, x_rec,
                count, row_acc)
        b.store(b.load(row_acc), b.gep(y, [b.mul(r, y_stride)]), align=4)
    b.branch(done)

    b.position_at_end(work)
    last_row = b.sub(nrows, i64(1))
    with for_range(b, 0, count, step=CHUNK, name="g0") as g0:
        left = b.sub(count, g0)
        ng = b.select(b.icmp_signed("<", left, i64(CHUNK)), left, i64(CHUNK))
        _prepare_x(b, x, x_rec, g0, ng, xp)
        chunk_base = b.mul(g0, w_rec)
        with for_range(b, 0, nrows, step=LANES, name="r0") as r0:
            rows_here = b.sub(nrows, r0)
            lanes_f = b.bitcast(accbuf, F32.as_pointer())
            # Running sums of earlier chunks come back from y.
            later = b.icmp_signed(">", g0, i64(0))
            with b.if_then(later):
                with for_range(b, 0, LANES, name="ld") as i:
                    row = b.add(r0, b.select(b.icmp_signed("<", i, rows_here), i, i64(0)))
                    value = b.load(b.gep(y, [b.mul(row, y_stride)]), align=4)
                    b.store(value, b.gep(lanes_f, [i]), align=4)
            bases = []
            for i in range(LANES):
                row = b.add(r0, i64(i))
                row = b.select(b.icmp_signed(">", row, last_row), last_row, row)
                bases.append(b.gep(w, [b.add(b.mul(row, w_row), chunk_base)]))
            addr_vec = _address_vector(b, bases)
            with b.if_then(b.icmp_signed("==", r0, i64(0))):
                # the first block of a call: its first steps have not been prefetched
                prefetch_first_steps(b, module, bases[0], ng, w_row, w_rec, PREFETCH_LINES)
            with for_range(b, 0, ng, name="g") as g:
                offset = b.mul(g, w_rec)
                prefetch_ahead(b, module, bases[0], g, ng, w_row, w_rec, PREFETCH_LINES)
                prefetch_next_block(b, module, bases[0], g, ng, count, w_row)
                recs = [b.gep(base, [offset]) for base in bases]
                heads = b.inttoptr(b.add(addr_vec, _splat(b, offset, vec(I64, LANES))), PTRS)
                slot = b.gep(xp, [b.mul(g, i64(SLOT))])
                dsv = _splat(b, load(b, slot, SLOT_DS, F32, align=4), V16F)
                values = _lane_values(b, fns, recs, slot, heads, dsv)
                first = b.icmp_signed("==", b.add(g0, g), i64(0))
                acc = b.load(accbuf, align=64)
                b.store(b.select(first, values, b.fadd(acc, values)), accbuf, align=64)
            stop = b.select(b.icmp_signed("<", rows_here, i64(LANES)), rows_here, i64(LANES))
            with for_range(b, 0, stop, name="st") as i:
                value = b.load(b.gep(lanes_f, [i]), align=4)
                b.store(value, b.gep(y, [b.mul(b.add(r0, i), y_stride)]), align=4)
    b.branch(done)
    b.position_at_end(done)
    b.ret_void()
    return fn


def _vnni_stats(gfni: bool):
    def stats(b: ir.IRBuilder, module, wrec, xrec):
        return _record_stats(b, _Intrinsics(module, gfni), module, wrec, xrec)
    return stats


def _record_stats(b: ir.IRBuilder, fns, module, wrec, xrec):
    """(S, T) of one record pair: the rows kernel's record code on a one-record slot."""
    slot = b.bitcast(entry_alloca(b, ir.ArrayType(I8, SLOT), "xslot", align=64), I8P)
    _prepare_x(b, xrec, i64(0), i64(0), i64(1), slot)
    s, t = _record(b, fns, wrec, slot)
    return reduce_add(b, module, s), reduce_add(b, module, t)


def add_dot_vnni(module: ir.Module, gfni: bool = False) -> ir.Function:
    """``ninfer_q4k_q8k_dot`` record by record with the VNNI record code."""
    return add_dot_simple(module, "avx512vnni", _vnni_stats(gfni))
