"""K-quant dot kernels Q2_K/Q3_K/Q5_K/Q6_K x Q8_K (docs/spec/quantized-kquants.md).

Per pair two exported functions with the C ABI of the Q4_K ones (``qdot``)::

    float ninfer_<stem>_dot(i8* w, i64 w_rec_stride_bytes,
                            i8* x, i64 x_rec_stride_bytes, i64 G)
    void  ninfer_<stem>_dot_rows(i8* w, i64 w_row_stride_bytes, i64 w_rec_stride_bytes,
                                 i8* x, i64 x_rec_stride_bytes, i64 G,
                                 i64 nrows, float* y, i64 y_stride_elems)

Every load is byte-aligned and stays inside its record. Inputs are only read.

A record is walked in eight chunks of 32 elements. Chunk c gives the
unsigned codes ``u`` (``<32 x i8>``, u <= 63, in logical element order) and
the Q8_K quants ``x`` of elements ``32c .. 32c+31``; the weight level is
``u - bias`` (bias 0, 4 or 32). The exact integers, per chunk:

* x86 levels: ``pairs = vpmaddubsw(u, x) - vpmaddubsw(bias, x)``. Each i16
  term sums two products of magnitude <= 63*128 (first operand unsigned), so
  it never saturates (<= 16,128), and the difference is the pair's exact
  ``sum((u - bias) * x)``, |.| <= 2*32*128 = 8,192, so the wrapping i16
  subtraction is exact. Then ``vpmaddwd(pairs, scale)`` with each pair's
  sub-block scale (|scale| <= 128) gives i32 lanes of |.| <= 2*8,192*128,
  summed into an i32 accumulator whose partial sums are partial sums of S,
  bounded by |S| < 2**27 (spec §4.2).
* portable: ``(u - bias)`` and ``x`` widened to i32, multiplied with the
  scale widened to i32, summed lane-wise and with ``llvm.vector.reduce.add``.

The AVX2 level takes one chunk per step (256-bit ``vpmaddubsw``/``vpmaddwd``),
the AVX-512 VNNI level two (their 512-bit forms; LLVM fuses the add into
``vpdpwssd``). T (Q2_K, Q5_K) is ``vpmaddwd`` of the stored bsum (any i16) and
each group's min: |T| <= 16*15*32768, exact in i32.

The rows kernel of the VNNI level is ``qdot_kquants_vnni``'s (16 rows at a time); the
code here is the single dot, the rows kernel of the other levels and the VNNI kernel's
path for a few rows. On x86 levels a row's records go in blocks of ``RECORD_BLOCK``: the unreduced
S (and T) vectors of the block's records are reduced by one shared tree of
two-source shuffles and adds (``_reduce_many``; integer, so exact in any
grouping) into one vector with a lane per record, and the float steps run
lane-wise on that vector. The float steps are the spec's, one rounding each,
with plain instructions (no FMA contraction, no fast-math flags)::

    p = f32(d) * sitofp(S);  [p = p - f32(dmin) * sitofp(T)];  v = ds * p

(a vector lane rounds exactly as the scalar instruction does). A row's result
is ``((v0 + v1) + v2) + ...``, added one v at a time in record order (G = 1:
v0; G <= 0: +0.0); the records after the last whole block go one by one.
"""
from __future__ import annotations

import llvmlite.ir as ir

from ninfer_ir.numerics.quantized_kquants import KQUANTS, KQuant
from ninfer_ir.quant import q8_k
from ninfer_ir.backends.llvm.runtime.jit import host_target
from ninfer_ir.backends.llvm.kernels.qdot import (DOT_TYPE, decode_scales_bytes, declare_rows,
                                                  reduce_add)
from ninfer_ir.backends.llvm.kernels.qir import (F16, F32, I8, I16, I32, const, const_vec,
                                                 entry_alloca, for_range, half_bits_to_float,
                                                 i32, i64, intrinsic, load, shuffle, splat, vec,
                                                 zero)

__all__ = ["add_dot", "add_rows"]

Q8_QS = q8_k.field("q").start
Q8_BSUM = q8_k.field("bsum").start
V32 = vec(I8, 32)


def _kind(pair) -> KQuant:
    return KQUANTS[pair.lhs.name]


# --- unpacking: codes of chunk c and the scale table -------------------------------------

def _field(b, w, parts, mask: int):
    """``(src >> shift) & mask`` of 32-byte sources, concatenated: ``parts`` lists one
    ``(byte offset, shift)`` per 32 lanes. The shift runs in 16-bit lanes (one
    variable shift for all parts); the mask removes the bits that crossed a byte."""
    srcs = {}
    for off, _ in parts:
        if off not in srcs:
            srcs[off] = load(b, w, off, V32)
    v = srcs[parts[0][0]]
    for k in range(1, len(parts)):
        nxt = srcs[parts[k][0]]
        if k > 1:       # widen the second operand to the running width
            nxt = shuffle(b, nxt, nxt, list(range(32)) + [-1] * (32 * k - 32))
        v = shuffle(b, v, nxt, list(range(32 * (k + 1))))
    n = 32 * len(parts)
    shifts = [sh for _, sh in parts for _ in range(16)]
    if any(shifts):
        words = b.bitcast(v, vec(I16, n // 2))
        v = b.bitcast(b.lshr(words, const_vec(I16, shifts)), vec(I8, n))
    return b.and_(v, splat(I8, n, mask))


def _codes(b, kind: KQuant, w, chunks):
    """The codes u of the elements of ``chunks`` (32 each, spec §2), ``<32*len x i8>``."""
    name, at = kind.name, kind.at
    n = 32 * len(chunks)

    def high(low, parts, mask, shift):
        return b.or_(low, b.shl(_field(b, w, parts, mask), splat(I8, n, shift)))

    if name == "q2_k":
        return _field(b, w, [(at("q") + 32 * (c // 4), 2 * (c % 4)) for c in chunks], 3)
    if name == "q3_k":
        low = _field(b, w, [(at("q") + 32 * (c // 4), 2 * (c % 4)) for c in chunks], 3)
        return high(low, [(at("hmask"), c) for c in chunks], 1, 2)
    if name == "q5_k":
        low = _field(b, w, [(at("q") + 32 * (c // 2), 4 * (c % 2)) for c in chunks], 15)
        return high(low, [(at("qh"), c) for c in chunks], 1, 4)
    if name == "q6_k":
        low = _field(b, w, [(at("ql") + 64 * (c // 4) + 32 * (c % 2), 4 * (c % 4 // 2))
                            for c in chunks], 15)
        return high(low, [(at("qh") + 32 * (c // 4), 2 * (c % 4)) for c in chunks], 3, 4)
    raise ValueError(name)


def _scale_table(b, kind: KQuant, w):
    """``(scales, mins)``: ``<16 x i8>`` holding each sub-block's scale as a signed byte
    in lane j (Q5_K: lanes 0-7), and the mins (Q2_K: lanes 0-15, Q5_K: lanes 8-15 of
    the same table) or None."""
    name, at = kind.name, kind.at
    if name == "q2_k":
        s = load(b, w, at("sc"), vec(I8, 16))
        return b.and_(s, splat(I8, 16, 15)), _shr16(b, s, 4, 15)
    if name == "q3_k":
        low8 = load(b, w, at("sc"), vec(I8, 8))
        high4 = load(b, w, at("sc") + 8, vec(I8, 4))
        lo = shuffle(b, low8, low8, list(range(8)) * 2)
        lo = b.and_(b.lshr(lo, const_vec(I8, [0] * 8 + [4] * 8)), splat(I8, 16, 15))
        hi = shuffle(b, high4, high4, list(range(4)) * 4)
        hi = b.and_(b.lshr(hi, const_vec(I8, [0] * 4 + [2] * 4 + [4] * 4 + [6] * 4)),
                    splat(I8, 16, 3))
        sc = b.or_(lo, b.shl(hi, splat(I8, 16, 4)))
        return b.sub(sc, splat(I8, 16, 32)), None
    if name == "q5_k":
        # the 16 bytes holding d, dmin and the scales, as Q4_K's header: sc0..7, m0..7
        table = decode_scales_bytes(b, load(b, w, at("sc") - 4, vec(I32, 4)))
        return table, table
    if name == "q6_k":
        return load(b, w, at("sc"), vec(I8, 16)), None
    raise ValueError(name)


def _shr16(b, v, shift, mask):
    return b.and_(b.lshr(v, splat(I8, 16, shift)), splat(I8, 16, mask))


def _lanes(b, table, picks, ty):
    """``<len(picks) x ty>``: lane k is byte ``picks[k]`` of ``table``, sign-extended."""
    return b.sext(shuffle(b, table, table, picks), vec(ty, len(picks)))


def _chunk_scale_picks(kind: KQuant, c: int, per: int):
    """Scale index of each of 32/per consecutive groups of ``per`` elements of chunk c."""
    return [(32 * c + per * k) // kind.sub for k in range(32 // per)]


def _min_picks(kind: KQuant):
    """The min of each of the sixteen bsum, as lanes of the table of ``_scale_table``."""
    return list(range(16)) if kind.name == "q2_k" else [8 + k // 2 for k in range(16)]


def _min_terms(b, kind: KQuant, mins, xrec, module):
    """T: the stored bsum times the mins, exact in i32 (portable)."""
    bsum = b.sext(load(b, xrec, Q8_BSUM, vec(I16, 16)), vec(I32, 16))
    return reduce_add(b, module, b.mul(bsum, _lanes(b, mins, _min_picks(kind), I32)))


def _min_products(b, kind: KQuant, mins, xrec, module):
    """``vpmaddwd`` of the stored bsum and the mins: eight i32 lanes summing to T."""
    maddwd = intrinsic(module, "llvm.x86.avx2.pmadd.wd", vec(I32, 8),
                       [vec(I16, 16), vec(I16, 16)])
    bsum = load(b, xrec, Q8_BSUM, vec(I16, 16))
    return b.call(maddwd, [bsum, _lanes(b, mins, _min_picks(kind), I16)])


# --- the record cores ------------------------------------------------------------------

_X86 = {   # chunks per step: (maddubs, maddwd) intrinsics and their widths
    1: ("llvm.x86.avx2.pmadd.ub.sw", "llvm.x86.avx2.pmadd.wd"),
    2: ("llvm.x86.avx512.pmaddubs.w.512", "llvm.x86.avx512.pmaddw.d.512"),
}


def _lanes_x86(b, module, kind: KQuant, w, xrec, step: int):
    """S and T of one record as unreduced i32 vectors (lanes summing to S, to T)."""
    n = 32 * step
    ub, wd = _X86[step]
    maddubs = intrinsic(module, ub, vec(I16, n // 2), [vec(I8, n), vec(I8, n)])
    maddwd = intrinsic(module, wd, vec(I32, n // 4), [vec(I16, n // 2), vec(I16, n // 2)])
    scales, mins = _scale_table(b, kind, w)
    acc = zero(vec(I32, n // 4))
    for c0 in range(0, 8, step):
        chunks = list(range(c0, c0 + step))
        u = _codes(b, kind, w, chunks)
        x = load(b, xrec, Q8_QS + 32 * c0, vec(I8, n))
        pairs = b.call(maddubs, [u, x])
        if kind.bias:
            pairs = b.sub(pairs, b.call(maddubs, [splat(I8, n, kind.bias), x]))
        picks = [p for c in chunks for p in _chunk_scale_picks(kind, c, 2)]
        acc = b.add(acc, b.call(maddwd, [pairs, _lanes(b, scales, picks, I16)]))
    return acc, (_min_products(b, kind, mins, xrec, module) if kind.has_mins else None)


def _reduce_many(b, vectors):
    """``<k x i32>`` whose lane r is the sum of the lanes of ``vectors[r]`` (k vectors of
    equal width, both powers of two). Each step pairs up vectors X, Y whose owners hold
    m lanes each (in blocks) into one vector whose owners hold m/2: the low half of every
    block plus its high half, X's blocks first. Once one vector is left it folds onto
    itself the same way. Integer adds: exact in any grouping."""
    width = vectors[0].type.count
    m = width                                       # lanes per owner
    while len(vectors) > 1:
        half = m // 2
        lo = [k * m + i for k in range(2 * width // m) for i in range(half)]
        hi = [k * m + half + i for k in range(2 * width // m) for i in range(half)]
        vectors = [b.add(shuffle(b, x, y, lo), shuffle(b, x, y, hi))
                   for x, y in zip(vectors[0::2], vectors[1::2])]
        m = half
    v = vectors[0]
    while m > 1:                                   # one vector: fold each owner in half
        n, half = v.type.count, m // 2
        lo = [k * m + i for k in range(n // m) for i in range(half)]
        hi = [k * m + half + i for k in range(n // m) for i in range(half)]
        v = b.add(shuffle(b, v, v, lo), shuffle(b, v, v, hi))
        m = half
    return v


def _stats_x86(b, module, kind: KQuant, w, xrec, step: int):
    s, t = _lanes_x86(b, module, kind, w, xrec, step)
    return reduce_add(b, module, s), (reduce_add(b, module, t) if t is not None else None)


def _stats_portable(b, module, kind: KQuant, w, xrec):
    wide = vec(I32, 32)
    scales, mins = _scale_table(b, kind, w)
    acc = zero(wide)
    for c in range(8):
        level = b.sub(b.zext(_codes(b, kind, w, [c]), wide), splat(I32, 32, kind.bias))
        x = b.sext(load(b, xrec, Q8_QS + 32 * c, V32), wide)
        scale = _lanes(b, scales, _chunk_scale_picks(kind, c, 1), I32)
        acc = b.add(acc, b.mul(b.mul(level, x), scale))
    s = reduce_add(b, module, acc)
    t = _min_terms(b, kind, mins, xrec, module) if kind.has_mins else None
    return s, t


def _half(b, w, offset: int, isa: str):
    """f32 of the binary16 at ``offset``, exactly."""
    if isa == "portable":
        return half_bits_to_float(b, load(b, w, offset, I16))
    return b.fpext(b.bitcast(load(b, w, offset, I16), F16), F32)


def _record_value(b, module, kind: KQuant, isa: str, w, xrec):
    if isa == "portable":
        s, t = _stats_portable(b, module, kind, w, xrec)
    else:
        s, t = _stats_x86(b, module, kind, w, xrec, 2 if isa == "avx512vnni" else 1)
    p = b.fmul(_half(b, w, kind.d, isa), b.sitofp(s, F32))
    if kind.has_mins:
        p = b.fsub(p, b.fmul(_half(b, w, kind.dmin, isa), b.sitofp(t, F32)))
    return b.fmul(load(b, xrec, 0, F32), p)


def _gather_f32(b, values):
    out = zero(vec(F32, len(values)))
    for k, v in enumerate(values):
        out = b.insert_element(out, v, i32(k))
    return out


def _block_values(b, module, kind: KQuant, isa: str, wrecs, xrecs):
    """The v of ``len(wrecs)`` consecutive records at once: the integer lanes of all of
    them reduced by one shared tree, then the spec's float steps lane-wise (each lane
    rounds exactly as the one-record code does)."""
    step = 2 if isa == "avx512vnni" else 1
    lanes = [_lanes_x86(b, module, kind, w, xr, step) for w, xr in zip(wrecs, xrecs)]
    s = b.sitofp(_reduce_many(b, [sv for sv, _ in lanes]), vec(F32, len(wrecs)))
    d = _gather_f32(b, [_half(b, w, kind.d, isa) for w in wrecs])
    p = b.fmul(d, s)
    if kind.has_mins:
        t = b.sitofp(_reduce_many(b, [tv for _, tv in lanes]), vec(F32, len(wrecs)))
        dmin = _gather_f32(b, [_half(b, w, kind.dmin, isa) for w in wrecs])
        p = b.fsub(p, b.fmul(dmin, t))
    v = b.fmul(_gather_f32(b, [load(b, xr, 0, F32) for xr in xrecs]), p)
    return [b.extract_element(v, i32(k)) for k in range(len(wrecs))]


RECORD_BLOCK = 8    # records of a row whose integer sums are reduced together (x86 levels)


def _row_sum(b, module, kind, isa, wrow, w_rec, x, x_rec, count, acc):
    """acc = v0 + v1 + ... in record order (count >= 1); the first v initialises it.
    On x86 levels blocks of ``RECORD_BLOCK`` records first, then the rest one by one."""
    def add(g, v):
        first = b.icmp_signed("==", g, i64(0))
        b.store(b.select(first, v, b.fadd(b.load(acc), v)), acc)

    start = i64(0)
    if isa != "portable":
        start = b.mul(b.sdiv(count, i64(RECORD_BLOCK)), i64(RECORD_BLOCK))
        with for_range(b, 0, start, RECORD_BLOCK, name="gb") as g0:
            gs = [b.add(g0, i64(k)) for k in range(RECORD_BLOCK)]
            values = _block_values(b, module, kind, isa,
                                   [b.gep(wrow, [b.mul(g, w_rec)]) for g in gs],
                                   [b.gep(x, [b.mul(g, x_rec)]) for g in gs])
            add(g0, values[0])
            for v in values[1:]:
                b.store(b.fadd(b.load(acc), v), acc)
    with for_range(b, start, count, name="g") as g:
        xrec = b.gep(x, [b.mul(g, x_rec)])
        add(g, _record_value(b, module, kind, isa, b.gep(wrow, [b.mul(g, w_rec)]), xrec))


def add_dot(module: ir.Module, isa: str, pair) -> ir.Function:
    """Add ``ninfer_<stem>_dot`` for ``isa`` to ``module``."""
    kind = _kind(pair)
    fn = ir.Function(module, DOT_TYPE, name=pair.cpu_dot)
    w, w_rec, x, x_rec, count = fn.args
    for arg, name in zip(fn.args, ("w", "w_rec_stride", "x", "x_rec_stride", "G")):
        arg.name = name
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    acc = entry_alloca(b, F32, "acc")
    b.store(const(F32, 0.0), acc)
    _row_sum(b, module, kind, isa, w, w_rec, x, x_rec, count, acc)
    b.ret(b.load(acc))
    return fn


def add_rows(module: ir.Module, isa: str, pair) -> ir.Function:
    """Add ``ninfer_<stem>_dot_rows`` for ``isa``: on the VNNI level the kernel of
    ``qdot_kquants_vnni`` (blocks of 16 rows sharing each Q8_K record), else row by row,
    each exactly as ``dot``."""
    if isa == "avx512vnni":      # imported here: that module builds on this one
        from ninfer_ir.backends.llvm.kernels.qdot_kquants_vnni import add_rows_vnni
        return add_rows_vnni(module, pair, host_target(isa).has_feature("gfni"))
    kind = _kind(pair)
    fn = declare_rows(module, pair.cpu_rows)
    w, w_row, w_rec, x, x_rec, count, nrows, y, y_stride = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    acc = entry_alloca(b, F32, "acc")
    with for_range(b, 0, nrows, name="r") as r:
        b.store(const(F32, 0.0), acc)
        _row_sum(b, module, kind, isa, b.gep(w, [b.mul(r, w_row)]), w_rec, x, x_rec, count,
                 acc)
        b.store(b.load(acc), b.gep(y, [b.mul(r, y_stride)]), align=4)
    b.ret_void()
    return fn
