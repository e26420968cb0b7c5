"""The AVX-512 VNNI rows kernel of the K-quant dots (``ninfer_<stem>_dot_rows`` of
Q2_K/Q3_K/Q5_K/Q6_K x Q8_K, the GEMV fast path; docs/spec/quantized-kquants.md).

Work goes in blocks of 16 rows x one record, as the Q4_K kernel (``qdot_vnni``): lane
i of every vector of the float stage is row ``r0 + i``, so each row's sum over records
is a vertical add, ``acc = acc + v_g`` in record order (the first record initialises
it by a select). Rows past the end of a short last block repeat the last row and are
not stored; fewer than ``FEW_ROWS`` rows go row by row through the record code of
``qdot_kquants``. Nothing is read when G <= 0 or there are no rows. Each step
prefetches the records a few steps (``prefetch.STEPS``) further along the walk (hints only).

Step g loads Q8_K record g once for the 16 rows: its quants ``x`` as four 64-byte
vectors ``X_i`` (elements 64i .. 64i+63) and, for the formats with a level bias
(Q3_K: 4, Q6_K: 32), ``B_i = -vpdpbusd(0, bias, X_i)``: lane k is -bias times the sum
of the four quants 64i + 4k .. +3 (|.| <= 32*512).

Per record, for each i, the codes u of elements 64i .. 64i+63 (unsigned, u <= 63) are
bit fields of the record's bytes, one ``vgf2p8affineqb`` per field (or a 16-bit shift
and a mask without GFNI), combined with one or. Then
``D_i = vpdpbusd(B_i, u, X_i)``: lane k is ``sum((u - bias) * x)`` over its four
elements, exactly (an identity of integers; |lane| <= 4*32*128 = 16,384, Q6_K's
extreme), so the bias costs nothing per row. Two records a, b (rows k, k+1) go together:
``vpackssdw(D_i of a, D_i of b)`` is exact (every lane fits i16) and holds, in 128-bit
chunk c, four lanes of a (group 4i + c) then four of b; one ``vpdpwssd`` with the
matching scale of each lane (one ``vpermw`` of the two records' sixteen scale words)
adds it into an accumulator whose lanes 4c, 4c+1 hold partial sums of a's S and 4c+2,
4c+3 of b's: each is a sum of terms of S, bounded by spec §3's ``|S| < 2**27``.
T (Q2_K, Q5_K) is one ``vpmaddwd`` of the stored bsum (twice) with both records' mins:
eight lanes per record, |lane| <= 2*32768*63.

The S vectors of the eight row pairs (and the T vectors) are transpose-reduced
(``qir.TransposeReducer``: integer adds, exact in any grouping) into one vector each,
lane i = row i. ``d`` (and ``dmin``) of the 16 records are one gather of the i32 that
holds them (at ``d - 2`` when ``d`` ends the record, so nothing past it is read). Then
the spec's float steps, lane-wise, one rounding each, nothing fused::

    p = f32(d) * sitofp(S);  [p = p - f32(dmin) * sitofp(T)];  v = ds * p
"""
from __future__ import annotations

import llvmlite.ir as ir

from ninfer_ir.numerics.quantized_kquants import KQUANTS, KQuant
from ninfer_ir.backends.llvm.kernels.qdot import (Q8_BSUM, Q8_QS, decode_scales_bytes,
                                                  declare_rows, store_zero_rows)
from ninfer_ir.backends.llvm.kernels import qdot_kquants as kq
from ninfer_ir.backends.llvm.kernels.prefetch import prefetch_ahead, prefetch_first_steps
from ninfer_ir.backends.llvm.kernels.qir import (F16, F32, I1, I8, I16, I32, I64,
                                                 TransposeReducer, const, entry_alloca,
                                                 const_vec, for_range, gather_i32, i32, i64,
                                                 intrinsic, load, shuffle, splat, vec, zero)

__all__ = ["add_rows_vnni"]

LANES = 16          # rows per block (lanes of the float stage)
FEW_ROWS = 4        # fewer rows than this go row by row
V64B = vec(I8, 64)
V16I = vec(I32, 16)
V16F = vec(F32, 16)
W32 = vec(I16, 32)


class _Fns:
    """The intrinsics the record code calls; ``gfni`` selects the bit-field extraction."""

    def __init__(self, module, gfni: bool):
        self.gfni = gfni
        if gfni:
            self.affine = intrinsic(module, "llvm.x86.vgf2p8affineqb.512", V64B,
                                    [V64B, V64B, I8])
        self.dpwssd = intrinsic(module, "llvm.x86.avx512.vpdpwssd.512", V16I,
                                [V16I, W32, W32])
        self.dpbusd = intrinsic(module, "llvm.x86.avx512.vpdpbusd.512", V16I,
                                [V16I, V64B, V64B])
        self.packssdw = intrinsic(module, "llvm.x86.avx512.packssdw.512", W32, [V16I, V16I])
        self.permw = intrinsic(module, "llvm.x86.avx512.permvar.hi.512", W32, [W32, W32])
        self.maddwd512 = intrinsic(module, "llvm.x86.avx512.pmaddw.d.512", V16I, [W32, W32])
        self.gather = gather_i32(module, LANES)


# --- bit fields ---------------------------------------------------------------------------

def _affine_matrix(starts, width: int, dest: int) -> ir.Constant:
    """GF2P8AFFINEQB matrices (one per qword) moving bits ``[s, s + width)`` of each byte to
    ``[dest, dest + width)``: result bit i is the parity of (matrix byte 7 - i) AND x, so
    byte ``7 - (dest + t)`` is ``1 << (s + t)`` and every other byte is zero; s is
    ``starts[0]`` in bytes 0-31 and ``starts[1]`` in bytes 32-63."""
    out = []
    for q in range(8):
        rows = [0] * 8
        for t in range(width):
            rows[7 - (dest + t)] = 1 << (starts[q // 4] + t)
        out += rows
    return const_vec(I8, out)


def _bits(b, fns, v, starts, width: int, dest: int):
    """``<64 x i8>``: bits ``[s, s + width)`` of each byte of ``v`` at ``[dest, dest +
    width)``, zeros elsewhere (s: ``starts[0]`` in bytes 0-31, ``starts[1]`` in 32-63).
    Without GFNI: a variable 16-bit shift (one direction for both halves), then a mask;
    the bits that cross from the neighbouring byte land outside the field."""
    if fns.gfni:
        return b.call(fns.affine, [v, _affine_matrix(starts, width, dest), const(I8, 0)])
    moves = [s - dest for s in starts]
    words = b.bitcast(v, W32)
    if all(m >= 0 for m in moves):
        if any(moves):
            words = b.lshr(words, const_vec(I16, [m for m in moves for _ in range(16)]))
    else:
        assert all(m <= 0 for m in moves), starts
        words = b.shl(words, const_vec(I16, [-m for m in moves for _ in range(16)]))
    return b.and_(b.bitcast(words, V64B), splat(I8, 64, ((1 << width) - 1) << dest))


def _dup32(b, w, offset: int):
    """The 32 bytes at ``offset``, twice (``<64 x i8>``)."""
    v = load(b, w, offset, vec(I8, 32))
    return shuffle(b, v, v, list(range(32)) * 2)


def _codes(b, fns, kind: KQuant, w, i: int):
    """The codes u of elements 64i .. 64i+63 (chunks 2i, 2i+1; spec §2), ``<64 x i8>``."""
    name, at = kind.name, kind.at
    h, pair = i // 2, 2 * (i % 2)           # half of the record, first chunk within it
    if name in ("q2_k", "q3_k"):
        u = _bits(b, fns, _dup32(b, w, at("q") + 32 * h), (2 * pair, 2 * pair + 2), 2, 0)
        if name == "q2_k":
            return u
        return b.or_(u, _bits(b, fns, _dup32(b, w, at("hmask")), (2 * i, 2 * i + 1), 1, 2))
    if name == "q5_k":
        low = _bits(b, fns, _dup32(b, w, at("q") + 32 * i), (0, 4), 4, 0)
        return b.or_(low, _bits(b, fns, _dup32(b, w, at("qh")), (2 * i, 2 * i + 1), 1, 4))
    if name == "q6_k":
        ql = load(b, w, at("ql") + 64 * h, V64B)
        if i % 2:
            ql = b.bitcast(b.lshr(b.bitcast(ql, W32), splat(I16, 32, 4)), V64B)
        high = _bits(b, fns, _dup32(b, w, at("qh") + 32 * h), (2 * pair, 2 * pair + 2), 2, 4)
        return b.or_(b.and_(ql, splat(I8, 64, 15)), high)
    raise ValueError(name)


# --- scales -----------------------------------------------------------------------------

W16 = vec(I16, 16)


def _scale_words(b, kind: KQuant, w):
    """``(scales, mins)``: ``<16 x i16>`` whose lane j is the scale of the 16 elements
    16j .. 16j+15, and the min each stored bsum j is multiplied by (or None)."""
    name, at = kind.name, kind.at
    if name == "q6_k":
        return b.sext(load(b, w, at("sc"), vec(I8, 16)), W16), None
    if name == "q2_k":
        words = b.zext(load(b, w, at("sc"), vec(I8, 16)), W16)
        return b.and_(words, splat(I16, 16, 15)), b.lshr(words, splat(I16, 16, 4))
    if name == "q3_k":
        # word j: low byte sc[j % 8] (low nibble j < 8, high nibble j >= 8), high byte
        # sc[8 + j % 4] (bits 2*(j // 4) .. +1); the 16 bytes loaded end at the scales'
        # end, so nothing past the record is read.
        raw = load(b, w, at("sc") - 4, vec(I8, 16))
        picks = [p for j in range(16) for p in (4 + j % 8, 12 + j % 4)]
        words = b.bitcast(shuffle(b, raw, raw, picks), W16)
        low = b.lshr(words, const_vec(I16, [4 * (j // 8) for j in range(16)]))
        high = b.lshr(words, const_vec(I16, [4 + 2 * (j // 4) for j in range(16)]))
        sc = b.or_(b.and_(low, splat(I16, 16, 15)), b.and_(high, splat(I16, 16, 0x30)))
        return b.sub(sc, splat(I16, 16, 32)), None
    if name == "q5_k":
        table = decode_scales_bytes(b, load(b, w, at("sc") - 4, vec(I32, 4)))
        words = b.zext(table, W16)                       # sc0..sc7, m0..m7
        return (shuffle(b, words, words, [j // 2 for j in range(16)]),
                shuffle(b, words, words, [8 + j // 2 for j in range(16)]))
    raise ValueError(name)


def _spread(b, fns, words, i: int):
    """``<32 x i16>``: the scale of each i16 lane of ``vpackssdw(Da, Db)`` for elements
    64i .. 64i+63 of records a and b (``words``: a's 16 scale words, then b's). Chunk c
    of the pack holds four lanes of Da (group 4i + c of a), then four of Db."""
    picks = [(0 if k % 8 < 4 else 16) + 4 * i + k // 8 for k in range(32)]
    return b.call(fns.permw, [words, const_vec(I16, picks)])


def _opaque(b, v):
    """``v`` through an empty asm statement. LLVM cannot see what it holds, so it keeps
    the ``vpermw`` of the words rather than moving each permute ahead of the extension
    that made them (a byte shuffle and a second extension per use)."""
    asm = ir.InlineAsm(ir.FunctionType(v.type, [v.type]), "", "=v,0")
    return b.call(asm, [v])


def _pair_s(b, fns, kind: KQuant, wa, wb, xs, biased, words):
    """The S lanes of records a and b: lanes 4c, 4c+1 sum to a's S, 4c+2, 4c+3 to b's."""
    acc = zero(V16I)
    for i in range(4):
        da, db = (b.call(fns.dpbusd, [biased[i], _codes(b, fns, kind, w, i), xs[i]])
                  for w in (wa, wb))
        acc = b.call(fns.dpwssd, [acc, b.call(fns.packssdw, [da, db]),
                                  _spread(b, fns, words, i)])
    return acc


_S_OWNERS = [0, 0, 1, 1] * 4


def _step_values(b, fns, kind: KQuant, recs, xrec, heads):
    """v of 16 records (one per row) against one Q8_K record, lane i = record i."""
    xs = [load(b, xrec, Q8_QS + 64 * i, V64B) for i in range(4)]
    biased = [zero(V16I)] * 4
    if kind.bias:
        biased = [b.sub(zero(V16I), b.call(fns.dpbusd, [zero(V16I), splat(I8, 64, kind.bias),
                                                        x])) for x in xs]
    s_red = TransposeReducer(b, LANES)
    t_red = TransposeReducer(b, LANES) if kind.has_mins else None
    if kind.has_mins:
        bsum = load(b, xrec, Q8_BSUM, W16)
        bsum2 = shuffle(b, bsum, bsum, list(range(16)) * 2)
    for k in range(0, LANES, 2):
        (sa, ma), (sb, mb) = (_scale_words(b, kind, w) for w in recs[k:k + 2])
        words = _opaque(b, shuffle(b, sa, sb, list(range(32))))
        s_red.push(_pair_s(b, fns, kind, recs[k], recs[k + 1], xs, biased, words),
                   [k + o for o in _S_OWNERS])
        if kind.has_mins:
            t_red.push(b.call(fns.maddwd512, [bsum2, shuffle(b, ma, mb, list(range(32)))]),
                       [k] * 8 + [k + 1] * 8)
    s = b.sitofp(s_red.result(), V16F)
    halves = b.bitcast(heads, vec(F16, 2 * LANES))
    d_half = (kind.d - _head_offset(kind)) // 2
    d = b.fpext(shuffle(b, halves, halves, [2 * k + d_half for k in range(LANES)]), V16F)
    p = b.fmul(d, s)
    if kind.has_mins:
        t = b.sitofp(t_red.result(), V16F)
        dmin = b.fpext(shuffle(b, halves, halves, [2 * k + 1 for k in range(LANES)]), V16F)
        p = b.fsub(p, b.fmul(dmin, t))
    ds = load(b, xrec, 0, F32)
    dsv = shuffle(b, b.insert_element(zero(V16F), ds, i32(0)), zero(V16F), [0] * LANES)
    return b.fmul(dsv, p)


def _head_offset(kind: KQuant) -> int:
    """Where the gathered i32 holding d (and dmin) starts: d, or d - 2 when d ends the
    record (then d is its high half)."""
    return kind.d - 2 if kind.d == kind.record_bytes - 2 else kind.d


# --- driver ----------------------------------------------------------------------------

def add_rows_vnni(module: ir.Module, pair, gfni: bool) -> ir.Function:
    """``ninfer_<stem>_dot_rows`` of a K-quant pair for the VNNI level; ``gfni`` extracts
    bit fields with GF2P8AFFINEQB."""
    kind = KQUANTS[pair.lhs.name]
    fns = _Fns(module, gfni)
    fn = declare_rows(module, pair.cpu_rows)
    w, w_row, w_rec, x, x_rec, count, nrows, y, y_stride = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    accbuf = entry_alloca(b, V16F, "acc", align=64)
    row_acc = entry_alloca(b, F32, "row")

    empty, rows_check = fn.append_basic_block("empty"), fn.append_basic_block("rows")
    few, work, done = (fn.append_basic_block(n) for n in ("few_rows", "work", "done"))
    b.cbranch(b.icmp_signed("<=", count, i64(0)), empty, rows_check)
    b.position_at_end(empty)
    store_zero_rows(b, nrows, y, y_stride)
    b.branch(done)
    b.position_at_end(rows_check)
    b.cbranch(b.icmp_signed("<", nrows, i64(FEW_ROWS)), few, work)

    b.position_at_end(few)
    with for_range(b, 0, nrows, name="fr") as r:
        kq._row_sum(b, module, kind, "avx512vnni", b.gep(w, [b.mul(r, w_row)]), w_rec, x,
                    x_rec, count, row_acc)
        b.store(b.load(row_acc), b.gep(y, [b.mul(r, y_stride)]), align=4)
    b.branch(done)

    b.position_at_end(work)
    last_row = b.sub(nrows, i64(1))
    head = _head_offset(kind)
    lines = range(0, kind.record_bytes, 64)
    with for_range(b, 0, nrows, step=LANES, name="r0") as r0:
        bases = []
        addr = zero(vec(I64, LANES))
        for i in range(LANES):
            row = b.add(r0, i64(i))
            row = b.select(b.icmp_signed(">", row, last_row), last_row, row)
            base = b.gep(w, [b.mul(row, w_row)])
            bases.append(base)
            addr = b.insert_element(addr, b.ptrtoint(base, I64), i32(i))
        with b.if_then(b.icmp_signed("==", r0, i64(0))):
            # the first block of a call: its first steps have not been prefetched
            prefetch_first_steps(b, module, bases[0], count, w_row, w_rec, lines)
        with for_range(b, 0, count, name="g") as g:
            prefetch_ahead(b, module, bases[0], g, count, w_row, w_rec, lines)
            offset = b.mul(g, w_rec)
            recs = [b.gep(base, [offset]) for base in bases]
            step = b.add(offset, i64(head))
            steps = shuffle(b, b.insert_element(zero(vec(I64, LANES)), step, i32(0)),
                            zero(vec(I64, LANES)), [0] * LANES)
            ptrs = b.inttoptr(b.add(addr, steps), ir.VectorType(I32.as_pointer(), LANES))
            ones = ir.Constant(vec(I1, LANES), [ir.Constant(I1, 1)] * LANES)
            heads = b.call(fns.gather, [ptrs, ones, zero(V16I)])
            xrec = b.gep(x, [b.mul(g, x_rec)])
            values = _step_values(b, fns, kind, recs, xrec, heads)
            first = b.icmp_signed("==", g, i64(0))
            acc = b.load(accbuf, align=64)
            b.store(b.select(first, values, b.fadd(acc, values)), accbuf, align=64)
        rows_here = b.sub(nrows, r0)
        stop = b.select(b.icmp_signed("<", rows_here, i64(LANES)), rows_here, i64(LANES))
        lanes_f = b.bitcast(accbuf, F32.as_pointer())
        with for_range(b, 0, stop, name="st") as i:
            b.store(b.load(b.gep(lanes_f, [i]), align=4),
                    b.gep(y, [b.mul(b.add(r0, i), y_stride)]), align=4)
    b.branch(done)
    b.position_at_end(done)
    b.ret_void()
    return fn
