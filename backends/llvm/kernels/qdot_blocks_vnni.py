"""The AVX-512 VNNI rows kernel of the 32-element pairs Q4_0/Q5_0/Q8_0/IQ4_NL x Q8_0
(``pair.cpu_rows``, the GEMV fast path; docs/spec/quantized-gguf.md §4), called by
``qdot_blocks.add_rows`` for that level.

Work goes in blocks of 16 rows, one record of each row per step; lane i of the float
stage is row i of the block, and each lane's sum is the sequential fold of its row
(``acc = acc + v_g`` in record order, the first record by a select). A call with
fewer than 16 rows takes them row by row (``qdot_blocks._row_sum``); otherwise every
block holds 16 rows: the last block of a call starts at ``nrows - 16`` and may overlap
the one before it (those rows are computed again, with the same bits, and stored
again). So the rows of a block are always ``base + k * w_row_stride``, k = 0..15, and
the 16 addresses come from a few registers and the addressing modes.

Integers. A step splits the 16 records into four groups, group j holding the records
of rows j, j + 4, j + 8, j + 12; a group's sums (``_Nibbles.group``, ``_Bytes.group``)
are a ``<16 x i32>`` whose 128-bit chunk r holds four lanes adding up to ``S`` of the
group's r-th record. The weight codes are unsigned, ``u = c + bias``: Q4_0 the nibble
(bias 8), Q5_0 the nibble plus 16 where the fifth bit is set (16), IQ4_NL the table
value + 128 by ``vpshufb`` (128), Q8_0 the stored byte xor 0x80 (128).

* Q4_0, Q5_0, IQ4_NL: two ``<64 x i8>`` of codes, chunk r = record r's elements 0-15,
  then its elements 16-31 (the low and the high nibbles of its 16 quant bytes: one
  16-byte load per record), against the activation's quants 0-15 and 16-31 each
  broadcast to the four chunks:
  ``vpdpbusd(vpdpbusd(-B, u_low, x_low), u_high, x_high)``, where
  ``B = vpdpbusd(vpdpbusd(0, bias, x_low), bias, x_high)``.
* Q8_0: two records per ``<64 x i8>`` (rows j and j + 4, then j + 8 and j + 12; one
  32-byte load each) against the 32 quants twice, ``vpdpbusd(-B, u, x)`` with
  ``B = vpdpbusd(0, 128, x)``; two chunk shuffles and an add put each record's eight
  lanes into four of its chunk.

Either way a lane is ``sum((u - bias) * x) = sum(c * x)`` over eight elements of one
record, exactly (|lane| <= 8 * 128 * 128; ``vpdpbusd`` wraps, never saturates, and
nothing here comes near 2**31). A 4 x 4 transpose of in-lane unpacks and adds
(``_transpose4``) sums each record's four lanes into lane 4r + j = row 4r + j: the
record's ``S``, exact.

The first eight bytes of every record (d, then Q5_0's qh) are loaded as one i64 each
into two ``<8 x i64>`` (the "heads"); one word permute of them gives the 16 binary16
``d``. Q5_0's fifth bits (``_fifth_bits_vbmi``): a qword permute puts each record's
head in both qwords of its chunk, and ``vpmultishiftqb`` brings qh bit i (low codes) or
16 + i (high codes) to bit 4 of byte i, which an and and an or (one ``vpternlogq``) add
to the nibble. Without AVX512_VBMI (``_fifth_bits_masks``) a word permute of the heads
makes each group's 64 fifth bits of its low and of its high codes, which go through a
stack slot into mask registers and add 16 by a masked ``vpaddb`` (measured about 20%
slower per step on Zen 5: a mask register filled from memory or from a general
register costs more here than the three vector instructions).

Floats, lane-wise, the spec's steps with one rounding each: ``v = (S*d_w)*d_x`` (Q4_0)
or ``(d_w*d_x)*S`` (the others), ``f32(d)`` by ``vcvtph2ps`` (exact). Each step also
prefetches 1/G of the next block's rows in address order
(``prefetch.prefetch_next_block``; hints, no effect on results).

Measured (docs/cpu-performance-notes.md, "The 32-element rows kernel on AVX-512 VNNI"):
one thread, weights hot, Zen 5, machine shared, the kernel alone at K = 640, N = 2048:
Q5_0 56 Gmac/s (the previous kernel 31: 16 row pointers spilled per step, 15
``vpinsrw`` for the scales, mask registers by ``kunpckdq``, an eight-vector
transpose-reduce), Q8_0 53 (45), Q4_0 66 (40), IQ4_NL 63 (38); Q5_0 at N = 16384 67
(35), at K = 4096 63 (35). What did not pay: ``vpgatherqq`` for the heads (two per
step cost more than the 16 loads and inserts: microcoded), the heads for the scales
alone (16 word loads are 2-4% faster), Q8_0 as four records per vector (twice the
inserts).
"""
from __future__ import annotations

import llvmlite.ir as ir

from ninfer_ir.quant import IQ4_NL_VALUES, DotPair, iq4_nl, q4_0, q5_0, q8_0
from ninfer_ir.backends.llvm.runtime.jit import host_target
from ninfer_ir.backends.llvm.kernels.qdot import declare_rows, store_zero_rows
from ninfer_ir.backends.llvm.kernels.prefetch import prefetch_next_block
from ninfer_ir.backends.llvm.kernels.qir import (F16, F32, I1, I8, I16, I32, I64, const_vec,
                                                 entry_alloca, for_range, i32, i64,
                                                 intrinsic, load, shuffle, splat, vec, zero)

__all__ = ["add_rows_vnni"]

LANES = 16                  # rows per block (lanes of the float stage)
GROUPS = 4                  # records per 512-bit vector of codes
V16B = vec(I8, 16)
V64B = vec(I8, 64)
V16I = vec(I32, LANES)
V16F = vec(F32, LANES)
V8Q = vec(I64, 8)
_XQ = q8_0.field("q").start        # 2: the activation quants


def _opaque(b, v):
    """``v`` through an empty asm statement: LLVM cannot see what it holds."""
    return b.call(ir.InlineAsm(ir.FunctionType(v.type, [v.type]), "", "=v,0" if isinstance(
        v.type, ir.VectorType) else "=r,0"), [v])


# --- the sums of a group --------------------------------------------------------------------
#
# A group is the records of rows j, j + 4, j + 8, j + 12; its sums are a <16 x i32> whose
# 128-bit chunk r holds four lanes that add up to the S of its r-th record.

def _dpbusd(b, acc, u, x):
    fn = intrinsic(b.module, "llvm.x86.avx512.vpdpbusd.512", V16I, [V16I, V64B, V64B])
    return b.call(fn, [acc, u, x])


def _four(b, recs, offset):
    """``<64 x i8>``: the 16 bytes at ``offset`` of each of four records, in order."""
    parts = [load(b, r, offset, V16B) for r in recs]
    return shuffle(b, shuffle(b, parts[0], parts[1], range(32)),
                   shuffle(b, parts[2], parts[3], range(32)), range(64))


class _Nibbles:
    """Q4_0, Q5_0, IQ4_NL: a group's codes are two ``<64 x i8>`` (chunk r = record r's
    elements 0-15, then 16-31), against the activation's quants 0-15 and 16-31 each
    broadcast to the four chunks."""

    def __init__(self, bias, offset, unsigned=None):
        self.bias = bias
        self.offset = offset            # of the packed nibbles in the record
        self.unsigned = unsigned        # index -> unsigned code (IQ4_NL), else the nibble

    def x_side(self, b, xrec):
        """The two activation vectors and the start ``-B`` of every group's sums."""
        xs = [load(b, xrec, _XQ + h, V16B) for h in (0, 16)]
        xs = [shuffle(b, v, v, list(range(16)) * GROUPS) for v in xs]
        total = zero(V16I)
        for v in xs:
            total = _dpbusd(b, total, splat(I8, 64, self.bias), v)
        return xs, b.sub(zero(V16I), total)

    def group(self, b, recs, xs, start, fifth):
        v = _four(b, recs, self.offset)
        codes = b.and_(v, splat(I8, 64, 15)), b.lshr(v, splat(I8, 64, 4))
        if fifth:
            codes = fifth(*codes)
        if self.unsigned:
            codes = [self.unsigned(b, c) for c in codes]
        return _dpbusd(b, _dpbusd(b, start, codes[0], xs[0]), codes[1], xs[1])


def _iq4_nl_unsigned(b, index):
    """The table value + 128 (1..241) of each index, by ``vpshufb``."""
    pshufb = intrinsic(b.module, "llvm.x86.avx512.pshuf.b.512", V64B, [V64B, V64B])
    return b.call(pshufb, [const_vec(I8, [v + 128 for v in IQ4_NL_VALUES] * 4), index])


class _Bytes:
    """Q8_0: two records per ``<64 x i8>`` (rows j and j + 4, then j + 8 and j + 12; each
    32 bytes, one load), unsigned codes ``q xor 0x80`` against the activation's 32 quants
    twice; the four lanes of a record in each 128-bit chunk of one ``vpdpbusd`` go to the
    group's sums by two chunk shuffles and an add."""

    bias = 128

    def x_side(self, b, xrec):
        x = load(b, xrec, _XQ, vec(I8, 32))
        x = shuffle(b, x, x, list(range(32)) * 2)
        return x, b.sub(zero(V16I), _dpbusd(b, zero(V16I), splat(I8, 64, self.bias), x))

    def group(self, b, recs, x, start, fifth):
        sums = []
        for pair in (recs[0:2], recs[2:4]):
            q = [load(b, r, q8_0.field("q").start, vec(I8, 32)) for r in pair]
            u = b.xor(shuffle(b, q[0], q[1], range(64)), splat(I8, 64, 0x80))
            sums.append(_dpbusd(b, start, u, x))

        def chunks(cs):
            return [4 * c + k for c in cs for k in range(4)]
        return b.add(shuffle(b, sums[0], sums[1], chunks((0, 2, 4, 6))),
                     shuffle(b, sums[0], sums[1], chunks((1, 3, 5, 7))))


#: stem -> how a group's sums are made
_GROUPS = {"q40_q80": _Nibbles(8, q4_0.field("q").start),
           "q50_q80": _Nibbles(16, q5_0.field("q").start),
           "iq4nl_q80": _Nibbles(128, iq4_nl.field("q").start, _iq4_nl_unsigned),
           "q80_q80": _Bytes()}


def _transpose4(b, acc):
    """``<16 x i32>`` whose lane 4r + j sums lanes 4r .. 4r+3 of ``acc[j]`` (exact):
    in-lane unpacks of dwords, then of qwords, each followed by an add."""
    def pick(u, v, lanes):
        return shuffle(b, u, v, [4 * c + k for c in range(4) for k in lanes])
    t = [b.add(pick(acc[k], acc[k + 1], (0, 16, 1, 17)),
               pick(acc[k], acc[k + 1], (2, 18, 3, 19))) for k in (0, 2)]
    return b.add(pick(t[0], t[1], (0, 1, 16, 17)), pick(t[0], t[1], (2, 3, 18, 19)))


# --- a step: one record of 16 rows -----------------------------------------------------------

def _heads(b, row):
    """Q5_0, per group j: a ``<8 x i64>`` whose chunk r holds the first eight bytes of the
    record of row j + 4r (d, qh, two quant bytes) twice."""
    out = []
    for j in range(GROUPS):
        parts = [load(b, row(j + 4 * r), 0, I64) for r in range(4)]
        v = zero(V8Q)
        for q in range(8):
            v = b.insert_element(v, parts[q // 2], i32(q))
        out.append(v)
    return out


def _scales(b, row, heads):
    """``<16 x i16>``: the binary16 d of row i in lane i: from Q5_0's heads (word 0 of
    each chunk), else 16 word loads (``vpinsrw``; measured 2-4% faster than loading heads
    for the scales alone)."""
    if heads is None:
        words = zero(vec(I16, LANES))
        for k in range(LANES):
            words = b.insert_element(words, load(b, row(k), 0, I16), i32(k))
        return words
    words = [b.bitcast(h, vec(I16, 32)) for h in heads]
    firsts = [shuffle(b, words[k], words[k + 1], [8 * r for r in range(4)] +
                      [32 + 8 * r for r in range(4)]) for k in (0, 2)]
    by_group = shuffle(b, firsts[0], firsts[1], range(LANES))     # lane 4j + r: row j + 4r
    return shuffle(b, by_group, by_group, [4 * (i % 4) + i // 4 for i in range(LANES)])


def _fifth_bits_vbmi(b, heads):
    """Per group j, ``fifth(low, high)`` adding 16 to the codes whose fifth bit is set,
    with ``vpmultishiftqb`` (AVX512_VBMI) on the group's heads (qh is bits 16-47 of
    both qwords of a chunk): byte i of a chunk takes the eight bits from 12 + i (low
    codes: qh bit i lands on bit 4) or 28 + i (high codes: qh bit 16 + i), of which bit 4
    is kept and or-ed in (one ``vpternlogq`` with the and)."""
    multishift = intrinsic(b.module, "llvm.x86.avx512.pmultishift.qb.512", V64B,
                           [V64B, V64B])
    sixteen = splat(I8, 64, 16)

    def fifth_of(src):
        def fifth(low, high):
            return tuple(b.or_(v, b.and_(b.call(multishift, [const_vec(
                I8, [at + i % 16 for i in range(64)]), src]), sixteen))
                for v, at in ((low, 12), (high, 28)))
        return fifth
    return [fifth_of(b.bitcast(h, V64B)) for h in heads]


def _fifth_bits_masks(b, heads, slot):
    """``_fifth_bits_vbmi`` without VBMI: word permutes of the heads make, per group, the
    64 fifth bits of its low codes (qh bits 0-15 of its four records: word 1 of each
    chunk) and of its high codes (bits 16-31: word 2), which go through ``slot`` (a stack
    ``<8 x i64>``, read back through an opaque pointer: one ``kmovq`` load per mask
    rather than a vector extract and a move from a general register) and add 16 by a
    masked ``vpaddb`` (16 through an opaque value, else LLVM turns the add into an or
    and a masked move)."""
    words = [b.bitcast(h, vec(I16, 32)) for h in heads]
    pairs = [shuffle(b, words[k], words[k + 1], [32 * g + 8 * r + h for g in (0, 1)
                                                 for h in (1, 2) for r in range(4)])
             for k in (0, 2)]
    b.store(b.bitcast(shuffle(b, pairs[0], pairs[1], range(32)), V8Q), slot, align=64)
    qwords = _opaque(b, b.bitcast(slot, I64.as_pointer()))
    masks = [b.bitcast(b.load(b.gep(qwords, [i32(k)]), align=8), vec(I1, 64))
             for k in range(2 * GROUPS)]
    sixteen = _opaque(b, splat(I8, 64, 16))

    def fifth_of(j):
        def fifth(low, high):
            return tuple(b.select(m, b.add(v, sixteen), v)
                         for v, m in zip((low, high), masks[2 * j:2 * j + 2]))
        return fifth
    return [fifth_of(j) for j in range(GROUPS)]


def _step(b, pair, vbmi, value_of, row, xrec, slot):
    """v of the 16 records ``row(0..15)`` against the Q8_0 record at ``xrec``."""
    kind = _GROUPS[pair.stem]
    xs, start = kind.x_side(b, xrec)
    heads, fifth = None, [None] * GROUPS
    if pair.stem == "q50_q80":
        heads = _heads(b, row)
        fifth = _fifth_bits_vbmi(b, heads) if vbmi else _fifth_bits_masks(b, heads, slot)
    sums = [kind.group(b, [row(j + 4 * r) for r in range(4)], xs, start, fifth[j])
            for j in range(GROUPS)]
    s = b.sitofp(_transpose4(b, sums), V16F)
    dw = b.fpext(b.bitcast(_scales(b, row, heads), vec(F16, LANES)), V16F)
    dx = b.fpext(load(b, xrec, 0, F16), F32)
    dxv = shuffle(b, b.insert_element(zero(V16F), dx, i32(0)), zero(V16F), [0] * LANES)
    return value_of(b, s, dw, dxv)


def _rows_at(b, rec, w_row, odd):
    """``row(k)``: the record of row k (0..15) at ``rec + k * w_row``, as an address mode
    ``base + index * scale``: base ``rec`` for rows 0-7 and ``rec + 8 * w_row`` (opaque,
    so LLVM does not fold it back into 16 row offsets that spill) for rows 8-15, index
    ``w_row`` or ``odd[3, 5, 7]`` scaled by 1, 2, 4 (6 = 3 * 2)."""
    bases = [rec, _opaque(b, b.gep(rec, [b.shl(w_row, i64(3))]))]

    def row(k):
        base, k = bases[k // 8], k % 8
        if k == 0:
            return base
        index, scale = (w_row, k) if k in (1, 2, 4) else (odd[3], 2) if k == 6 else (odd[k], 1)
        return b.gep(base, [index if scale == 1 else b.shl(index, i64(scale.bit_length() - 1))])
    return row


# --- the driver ----------------------------------------------------------------------------

def add_rows_vnni(module: ir.Module, pair: DotPair, value_of, few_rows,
                  vbmi: bool | None = None) -> ir.Function:
    """``pair.cpu_rows`` for the VNNI level. ``value_of(b, S, d_w, d_x)`` is the pair's
    record value; ``few_rows(b, *args)`` emits the row-by-row loop for fewer than 16 rows
    (``args``: the function's arguments); ``vbmi``: Q5_0's fifth bits by
    ``vpmultishiftqb`` (default: when the VNNI target has AVX512_VBMI)."""
    if vbmi is None:
        vbmi = host_target("avx512vnni").has_feature("avx512vbmi")
    fn = declare_rows(module, pair.cpu_rows)
    w, w_row, w_rec, x, x_rec, count, nrows, y, y_stride = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    accbuf = entry_alloca(b, V16F, "acc", align=64)
    slot = entry_alloca(b, V8Q, "masks", align=64)
    empty, check = fn.append_basic_block("empty"), fn.append_basic_block("check")
    few, work, done = (fn.append_basic_block(n) for n in ("few", "work", "done"))
    b.cbranch(b.icmp_signed("<=", count, i64(0)), empty, check)
    b.position_at_end(empty)
    store_zero_rows(b, nrows, y, y_stride)
    b.branch(done)
    b.position_at_end(check)
    b.cbranch(b.icmp_signed("<", nrows, i64(LANES)), few, work)
    b.position_at_end(few)
    few_rows(b, *fn.args)
    b.branch(done)

    b.position_at_end(work)
    last_block = b.sub(nrows, i64(LANES))
    odd = {k: b.mul(w_row, i64(k)) for k in (3, 5, 7)}      # 3, 5 and 7 row strides
    with for_range(b, 0, nrows, step=LANES, name="r0") as r0:
        first_row = b.select(b.icmp_signed(">", r0, last_block), last_block, r0)
        base = b.gep(w, [b.mul(first_row, w_row)])
        with for_range(b, 0, count, name="g") as g:
            prefetch_next_block(b, module, base, g, count, count, w_row)
            rec = b.gep(base, [b.mul(g, w_rec)])
            v = _step(b, pair, vbmi, value_of, _rows_at(b, rec, w_row, odd),
                      b.gep(x, [b.mul(g, x_rec)]), slot)
            first = b.icmp_signed("==", g, i64(0))
            acc = b.load(accbuf, align=64)
            b.store(b.select(first, v, b.fadd(acc, v)), accbuf, align=64)
        acc = b.load(accbuf, align=64)
        for i in range(LANES):
            b.store(b.extract_element(acc, i32(i)),
                    b.gep(y, [b.mul(b.add(first_row, i64(i)), y_stride)]), align=4)
    b.branch(done)
    b.position_at_end(done)
    b.ret_void()
    return fn
