"""``ninfer_q8k_quantize``: f32 rows -> Q8_K records (spec/quantized-ops.md §4).

``i64 ninfer_q8k_quantize(float* src, i64 src_row_stride_elems, i64 G,
                          i8* dst, i64 dst_row_stride_bytes)``

Row g (256 contiguous floats at ``src + g*src_row_stride_elems``) becomes the
292-byte record at ``dst + g*dst_row_stride_bytes``: ds f32 at [0,4), q i8 at
[4,260), bsum i16 at [260,292), all stored byte-aligned. Blocks are handled in
order; the first failing block g stops the kernel and the result is
``g*8 + reason`` (reasons as in the oracle: 1 non-finite input, 2 inverse,
3 ds, 4 a scaled value). 0 means success.

Numerics per block, all f32 operations plain IEEE (no fast-math flags):

* max/min by ``fcmp ogt``/``olt`` + select (``vmaxps``/``vminps``); inputs are
  checked finite first, so NaN handling never matters, and the sign of a zero
  max/min cannot change the result (an extreme of zero means an all-zero block);
* extreme = max if |max| > |min| else min (a tie takes the minimum);
* inverse = -127/extreme, ds = 1/inverse, scaled = x*inverse, each one rounding;
* q = roundeven(clamp(scaled, -128, 127)). Clamping to integer bounds before
  rounding equals rounding before saturating, because round-to-nearest-even
  is monotone and fixes integers. The rounding is ``llvm.roundeven`` on x86
  levels; the portable path adds and subtracts 1.5*2**23, which rounds to the
  nearest integer with ties to even for every |v| <= 2**22 under the default
  rounding mode (|v| <= 128 here);
* bsum_j = the exact i32 sum of the 16 q in group j (|bsum| <= 2048), stored as i16.
"""
from __future__ import annotations

import llvmlite.ir as ir

from ninfer_ir.backends.llvm.kernels.qir import (F32, F32P, I16, I32, I64, I8, I8P, any_lane,
                                                 const, entry_alloca, for_range, i64, intrinsic,
                                                 load, record_failer, shuffle, splat, store,
                                                 transpose_reduce, vec, zero)

NAME = "ninfer_q8k_quantize"
BLOCK = 256
RECORD = 292
LANES = 16
REASON_NONFINITE_INPUT = 1
REASON_INVERSE_NOT_FINITE = 2
REASON_DS_NOT_FINITE = 3
REASON_SCALED_NOT_FINITE = 4

V16F = vec(F32, LANES)
V16I = vec(I32, LANES)
INF = float("inf")


def _tree(b, values, pick):
    while len(values) > 1:
        values = [pick(values[k], values[k + 1]) for k in range(0, len(values), 2)]
    return values[0]


def _vmax(b, x, y):
    return b.select(b.fcmp_ordered(">", x, y), x, y)


def _vmin(b, x, y):
    return b.select(b.fcmp_ordered("<", x, y), x, y)


def _horizontal(b, v, pick):
    """Reduce a <16 x float> to a scalar with a halving shuffle tree."""
    width = LANES
    while width > 1:
        width //= 2
        lo = shuffle(b, v, v, range(width))
        hi = shuffle(b, v, v, range(width, 2 * width))
        v = pick(b, lo, hi)
    return b.extract_element(v, ir.Constant(I32, 0))


def _not_finite(b, fabs, v):
    """i1 lanes: true where v is NaN or +-inf."""
    return b.fcmp_unordered(">=", b.call(fabs, [v]), splat(F32, LANES, INF))




def add_q8k_quantize(module: ir.Module, isa: str) -> ir.Function:
    """Add ``ninfer_q8k_quantize`` for ISA level ``isa`` to ``module``."""
    fnty = ir.FunctionType(I64, [F32P, I64, I64, I8P, I64])
    fn = ir.Function(module, fnty, name=NAME)
    src, src_stride, count, dst, dst_stride = fn.args
    for arg, name in zip(fn.args, ("src", "src_stride", "G", "dst", "dst_stride")):
        arg.name = name
    src.add_attribute("noalias")
    dst.add_attribute("noalias")
    fabs = intrinsic(module, "llvm.fabs.v16f32", V16F, [V16F])
    roundeven = intrinsic(module, "llvm.roundeven.v16f32", V16F, [V16F])

    b = ir.IRBuilder(fn.append_basic_block("entry"))
    status = entry_alloca(b, I64, "status")
    b.store(i64(0), status)
    exit_block = fn.append_basic_block("exit")
    with for_range(b, 0, count, name="g") as g:
        row = b.gep(src, [b.mul(g, src_stride)])
        rowb = b.bitcast(row, I8P)
        rec = b.gep(dst, [b.mul(g, dst_stride)])
        xs = [load(b, rowb, 64 * k, V16F, align=4) for k in range(LANES)]

        fail = record_failer(fn, b, status, g, exit_block)

        nonfinite = _tree(b, [_not_finite(b, fabs, x) for x in xs], b.or_)
        fail(REASON_NONFINITE_INPUT, any_lane(b, nonfinite), "input")

        top = _horizontal(b, _tree(b, xs, lambda x, y: _vmax(b, x, y)), _vmax)
        bottom = _horizontal(b, _tree(b, xs, lambda x, y: _vmin(b, x, y)), _vmin)
        fabs1 = intrinsic(module, "llvm.fabs.f32", F32, [F32])
        bigger = b.fcmp_ordered(">", b.call(fabs1, [top]), b.call(fabs1, [bottom]))
        extreme = b.select(bigger, top, bottom)

        zero_block = fn.append_basic_block("zero")
        scale_block = fn.append_basic_block("scale")
        next_block = fn.append_basic_block("next")
        b.cbranch(b.fcmp_ordered("==", extreme, const(F32, 0.0)), zero_block, scale_block)

        b.position_at_end(zero_block)
        _store_zero_record(b, rec)
        b.branch(next_block)

        b.position_at_end(scale_block)
        inverse = b.fdiv(const(F32, -127.0), extreme)
        fail(REASON_INVERSE_NOT_FINITE,
             b.fcmp_unordered(">=", b.call(fabs1, [inverse]), const(F32, INF)), "inverse")
        ds = b.fdiv(const(F32, 1.0), inverse)
        fail(REASON_DS_NOT_FINITE,
             b.fcmp_unordered(">=", b.call(fabs1, [ds]), const(F32, INF)), "ds")
        inv = b.insert_element(zero(V16F), inverse, ir.Constant(I32, 0))
        inv = shuffle(b, inv, inv, [0] * LANES)
        scaled = [b.fmul(x, inv) for x in xs]
        bad_scaled = _tree(b, [_not_finite(b, fabs, s) for s in scaled], b.or_)
        fail(REASON_SCALED_NOT_FINITE, any_lane(b, bad_scaled), "scaled")

        q32 = []
        for j, s in enumerate(scaled):
            clamped = _vmin(b, _vmax(b, s, splat(F32, LANES, -128.0)), splat(F32, LANES, 127.0))
            if isa == "portable":
                magic = splat(F32, LANES, 1.5 * 2.0 ** 23)
                rounded = b.fsub(b.fadd(clamped, magic), magic)
            else:
                rounded = b.call(roundeven, [clamped])
            qi = b.fptosi(rounded, V16I)
            q32.append(qi)
            store(b, b.trunc(qi, vec(I8, LANES)), rec, 4 + 16 * j)
        bsum = transpose_reduce(b, q32)
        store(b, b.trunc(bsum, vec(I16, LANES)), rec, 260)
        store(b, ds, rec, 0)
        b.branch(next_block)
        b.position_at_end(next_block)
    b.branch(exit_block)
    b.position_at_end(exit_block)
    b.ret(b.load(status))
    return fn


def _store_zero_record(b, rec) -> None:
    """ds = +0.0, q = 0, bsum = 0: 292 zero bytes."""
    z64 = zero(vec(I8, 64))
    for off in range(0, 256, 64):
        store(b, z64, rec, off)
    store(b, zero(vec(I8, 32)), rec, 256)
    store(b, zero(I32), rec, 288)


add_quantize = add_q8k_quantize     # the name the quantize-target table looks up
