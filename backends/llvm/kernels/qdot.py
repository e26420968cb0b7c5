"""Q4_K x Q8_K dot kernels (spec/quantized-ops.md §3): shared parts, AVX2 and portable.

Exported functions (names and signatures are the same on every ISA level)::

    float ninfer_q4k_q8k_dot(i8* w, i64 w_rec_stride_bytes,
                             i8* x, i64 x_rec_stride_bytes, i64 G)
    void  ninfer_q4k_q8k_dot_rows(i8* w, i64 w_row_stride_bytes, i64 w_rec_stride_bytes,
                                  i8* x, i64 x_rec_stride_bytes, i64 G,
                                  i64 nrows, float* y, i64 y_stride_elems)

``dot_rows`` stores ``y[r*y_stride] = dot(w + r*w_row_stride, x)`` for every
row. Every load is byte-aligned, so records may sit at any address. Inputs
are only read; ``y`` must not overlap them.

Per record the integers are exact in i32: ``S`` from the weights and the Q8_K
quants, ``T`` from the stored bsum pairs (|S| <= 30,965,760 for any bytes;
|T| <= 8*63*65,536). The f32 steps follow the spec one rounding at a time
with plain instructions (no FMA contraction, no fast-math flags)::

    p = f32(d) * sitofp(S);  n = f32(dmin) * sitofp(T);  v = ds * (p - n)

and the row result is ``((v0 + v1) + v2) + ...`` (G = 1 gives v0 itself,
G <= 0 gives +0.0). ``sitofp`` rounds to nearest even under the default
rounding mode, which is the spec's rounding ``f32(S)``; ``f32(d)`` from
binary16 is exact (``vcvtph2ps`` on x86 levels, integer bit assembly on the
portable level).

AVX2 level. Per 32-element sub-block, ``vpmaddubsw`` multiplies the u8 nibble
(<= 15, first operand: unsigned) by the i8 quant (second operand: signed) and
adds adjacent pairs into i16 with saturation. The largest possible magnitude
is 2*15*128 = 3840 (both quants -128, both nibbles 15) < 32767, so it never
saturates and each i16 is exact. ``vpmaddwd`` with the 6-bit scale (<= 63)
then gives i32 lanes of magnitude <= 2*3840*63 = 483,840, and the i32
accumulator holds partial sums of S, bounded by |S|'s bound. ``T`` uses
``vpmaddwd`` of the sixteen stored bsum (any i16) with each m (<= 63)
duplicated: |lane| <= 2*32768*63, no overflow.

Portable level. Target-independent vector IR: nibbles and quants widened to
<32 x i32>, multiplied by the scale in i32 and summed with
``llvm.vector.reduce.add``; no intrinsic that a target may lack.
"""
from __future__ import annotations

import llvmlite.ir as ir

from ninfer_ir.backends.llvm.kernels.qir import (F16, F32, F32P, I8, I8P, I16, I32, I64, const, const_vec, entry_alloca,
                  for_range, half_bits_to_float, i32, i64, intrinsic, load, shuffle, splat, vec,
                  zero)

DOT = "ninfer_q4k_q8k_dot"
DOT_ROWS = "ninfer_q4k_q8k_dot_rows"
Q4_RECORD = 144
Q8_RECORD = 292
Q4_QS = 16          # offset of the packed nibbles
Q8_QS = 4           # offset of the i8 quants
Q8_BSUM = 260       # offset of the sixteen i16 bsum

DOT_TYPE = ir.FunctionType(F32, [I8P, I64, I8P, I64, I64])
ROWS_TYPE = ir.FunctionType(ir.VoidType(), [I8P, I64, I64, I8P, I64, I64, I64, F32P, I64])
_ROW_ARG_NAMES = ("w", "w_row_stride", "w_rec_stride", "x", "x_rec_stride", "G", "nrows",
                  "y", "y_stride")


def declare_rows(module: ir.Module, name: str = DOT_ROWS) -> ir.Function:
    """A rows kernel's function ``name`` (``ROWS_TYPE``) with its arguments named."""
    fn = ir.Function(module, ROWS_TYPE, name=name)
    for arg, name in zip(fn.args, _ROW_ARG_NAMES):
        arg.name = name
    return fn


def store_zero_rows(b: ir.IRBuilder, nrows, y, y_stride) -> None:
    """y[r] = +0.0 for every row (the G <= 0 result)."""
    with for_range(b, 0, nrows, name="zr") as r:
        b.store(const(F32, 0.0), b.gep(y, [b.mul(r, y_stride)]), align=4)


def record_value(b: ir.IRBuilder, wrec, xrec, s, t, d, dmin) -> ir.Value:
    """v = ds * (d*f32(S) - dmin*f32(T)) with one rounding per step."""
    ds = load(b, xrec, 0, F32)
    p = b.fmul(d, b.sitofp(s, F32))
    n = b.fmul(dmin, b.sitofp(t, F32))
    return b.fmul(ds, b.fsub(p, n))


def record_d_dmin(b: ir.IRBuilder, wrec, isa: str):
    """f32(d), f32(dmin) of a Q4_K record, exactly."""
    if isa == "portable":
        d = half_bits_to_float(b, load(b, wrec, 0, I16))
        dmin = half_bits_to_float(b, load(b, wrec, 2, I16))
        return d, dmin
    pair = b.bitcast(load(b, wrec, 0, vec(I16, 2)), vec(F16, 2))
    wide = b.fpext(pair, vec(F32, 2))
    return b.extract_element(wide, i32(0)), b.extract_element(wide, i32(1))


# --- scale decoding (spec §2) -----------------------------------------------------

def decode_scales_bytes(b: ir.IRBuilder, header) -> ir.Value:
    """From a record's first 16 bytes (``<4 x i32>``, any number of copies),
    each 128-bit chunk of the result holds the bytes ``sc0..sc7, m0..m7``.

    With w1, w2, w3 the header dwords at bytes 4, 8, 12 (scale bytes 0-3,
    4-7, 8-11): sc0-3 = w1 & 0x3F..; sc4-7 = (w3 & 0x0F..) | ((w1 >> 2) & 0x30..);
    m0-3 = w2 & 0x3F..; m4-7 = ((w3 >> 4) & 0x0F..) | ((w2 >> 2) & 0x30..).
    The byte-wise forms (a >> 6) << 4 == (a >> 2) & 0x30 and the dword shifts
    only move bits within a byte once masked.
    """
    n = header.type.count
    copies = n // 4
    u = shuffle(b, header, header, [4 * k + i for k in range(copies) for i in (1, 3, 2, 3)])
    u = b.lshr(u, const_vec(I32, [0, 0, 0, 4] * copies))
    v = shuffle(b, header, header, [4 * k + i for k in range(copies) for i in (1, 1, 2, 2)])
    v = b.lshr(v, splat(I32, n, 2))
    low = b.and_(u, const_vec(I32, [0x3F3F3F3F, 0x0F0F0F0F, 0x3F3F3F3F, 0x0F0F0F0F] * copies))
    high = b.and_(v, const_vec(I32, [0, 0x30303030, 0, 0x30303030] * copies))
    return b.bitcast(b.or_(low, high), vec(I8, 4 * n))


def widen_bytes(b: ir.IRBuilder, table, picks) -> ir.Value:
    """A ``<len(picks) x i16>`` whose lane k is byte ``picks[k]`` of ``table``, zero-extended.

    ``picks[k]`` must index the 128-bit chunk of ``table`` that holds the
    lane's low byte, so the shuffle stays within chunks (``vpshufb``).
    """
    size = table.type.count
    mask = []
    for k, p in enumerate(picks):
        mask += [p, size]           # low byte, then a zero byte
    out = shuffle(b, table, zero(table.type), mask)
    return b.bitcast(out, vec(I16, len(picks)))


# --- AVX2 record core --------------------------------------------------------------

def _avx2_stats(b: ir.IRBuilder, module, wrec, xrec):
    maddubs = intrinsic(module, "llvm.x86.avx2.pmadd.ub.sw", vec(I16, 16),
                        [vec(I8, 32), vec(I8, 32)])
    maddwd = intrinsic(module, "llvm.x86.avx2.pmadd.wd", vec(I32, 8),
                       [vec(I16, 16), vec(I16, 16)])
    header = load(b, wrec, 0, vec(I32, 4))
    header2 = shuffle(b, header, header, list(range(4)) * 2)
    table = decode_scales_bytes(b, header2)                    # <32 x i8>, two copies
    low_mask = splat(I8, 32, 0x0F)
    acc = zero(vec(I32, 8))
    for c in range(4):
        packed = load(b, wrec, Q4_QS + 32 * c, vec(I8, 32))
        low = b.and_(packed, low_mask)
        shifted = b.lshr(b.bitcast(packed, vec(I16, 16)), splat(I16, 16, 4))
        high = b.and_(b.bitcast(shifted, vec(I8, 32)), low_mask)
        for half, nib in ((0, low), (1, high)):
            sub = 2 * c + half
            xq = load(b, xrec, Q8_QS + 64 * c + 32 * half, vec(I8, 32))
            pairs = b.call(maddubs, [nib, xq])                  # exact, see module doc
            scale = widen_bytes(b, table, [16 * (k // 8) + sub for k in range(16)])
            acc = b.add(acc, b.call(maddwd, [pairs, scale]))
    s = reduce_add(b, module, acc)
    bsum = load(b, xrec, Q8_BSUM, vec(I16, 16))
    mdup = widen_bytes(b, table, [16 * (k // 8) + 8 + k // 2 for k in range(16)])
    t = reduce_add(b, module, b.call(maddwd, [bsum, mdup]))
    return s, t


def reduce_add(b, module, v):
    n = v.type.count
    fn = intrinsic(module, f"llvm.vector.reduce.add.v{n}i32", I32, [v.type])
    return b.call(fn, [v])


# --- portable record core ------------------------------------------------------------

def _portable_stats(b: ir.IRBuilder, module, wrec, xrec):
    wide = vec(I32, 32)
    raw = [b.zext(load(b, wrec, 4 + k, I8), I32) for k in range(12)]
    sc, m = [], []
    for field, out in ((0, sc), (1, m)):
        for i in range(4):
            out.append(b.and_(raw[4 * field + i], i32(63)))
        for t in range(4):
            lowbits = b.and_(b.lshr(raw[8 + t], i32(4 * field)), i32(15))
            highbits = b.shl(b.lshr(raw[4 * field + t], i32(6)), i32(4))
            out.append(b.or_(lowbits, highbits))
    acc = zero(wide)
    for c in range(4):
        packed = load(b, wrec, Q4_QS + 32 * c, vec(I8, 32))
        nibbles = (b.and_(packed, splat(I8, 32, 15)), b.lshr(packed, splat(I8, 32, 4)))
        for half in (0, 1):
            sub = 2 * c + half
            xq = b.sext(load(b, xrec, Q8_QS + 64 * c + 32 * half, vec(I8, 32)), wide)
            prod = b.mul(b.zext(nibbles[half], wide), xq)
            scale = b.insert_element(zero(wide), sc[sub], i32(0))
            scale = shuffle(b, scale, scale, [0] * 32)
            acc = b.add(acc, b.mul(prod, scale))
    s = reduce_add(b, module, acc)
    bsum = b.sext(load(b, xrec, Q8_BSUM, vec(I16, 16)), vec(I32, 16))
    mvec = zero(vec(I32, 16))
    for k in range(16):
        mvec = b.insert_element(mvec, m[k // 2], i32(k))
    t = reduce_add(b, module, b.mul(bsum, mvec))
    return s, t


# --- simple drivers: record by record ---------------------------------------------------

def _stats_for(isa: str):
    if isa == "avx2":
        return _avx2_stats
    if isa == "portable":
        return _portable_stats
    raise ValueError(f"no simple record core for ISA level {isa!r}")


def row_sum(b: ir.IRBuilder, module, stats, isa: str, wrow, w_rec, x, x_rec, count, acc):
    """The v of records 0..count-1 (count >= 1) added in order; the result is left in ``acc``.

    The first record's v initialises the sum (no initial accumulator).
    """
    with for_range(b, 0, count, name="g") as g:
        wrec = b.gep(wrow, [b.mul(g, w_rec)])
        xrec = b.gep(x, [b.mul(g, x_rec)])
        s, t = stats(b, module, wrec, xrec)
        d, dmin = record_d_dmin(b, wrec, isa)
        v = record_value(b, wrec, xrec, s, t, d, dmin)
        first = b.icmp_signed("==", g, i64(0))
        b.store(b.select(first, v, b.fadd(b.load(acc), v)), acc)


def add_dot_simple(module: ir.Module, isa: str, stats=None) -> ir.Function:
    """``ninfer_q4k_q8k_dot`` record by record with the ``stats`` core of ``isa``."""
    stats = stats or _stats_for(isa)
    fn = ir.Function(module, DOT_TYPE, name=DOT)
    w, w_rec, x, x_rec, count = fn.args
    for arg, name in zip(fn.args, ("w", "w_rec_stride", "x", "x_rec_stride", "G")):
        arg.name = name
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    acc = entry_alloca(b, F32, "acc")
    b.store(const(F32, 0.0), acc)                       # the G <= 0 result
    row_sum(b, module, stats, isa, w, w_rec, x, x_rec, count, acc)
    b.ret(b.load(acc))
    return fn


def add_rows_simple(module: ir.Module, isa: str) -> ir.Function:
    """``ninfer_q4k_q8k_dot_rows`` row by row, record by record."""
    stats = _stats_for(isa)
    fn = declare_rows(module)
    w, w_row, w_rec, x, x_rec, count, nrows, y, y_stride = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    acc = entry_alloca(b, F32, "acc")
    with for_range(b, 0, nrows, name="r") as r:
        b.store(const(F32, 0.0), acc)
        row_sum(b, module, stats, isa, b.gep(w, [b.mul(r, w_row)]), w_rec, x, x_rec, count, acc)
        b.store(b.load(acc), b.gep(y, [b.mul(r, y_stride)]), align=4)
    b.ret_void()
    return fn
