"""``ninfer_q80_quantize``: f32 rows -> Q8_0 records (docs/spec/quantized-gguf.md §3).

``i64 ninfer_q80_quantize(float* src, i64 src_row_stride_elems, i64 G,
                          i8* dst, i64 dst_row_stride_bytes)``

Row g (32 contiguous floats at ``src + g*src_row_stride_elems``) becomes the
34-byte record at ``dst + g*dst_row_stride_bytes`` (d binary16 at [0,2), q i8
at [2,34), byte stores). Blocks are handled in order; the first failing block g
stops the kernel with status ``g*8 + reason`` (1 non-finite input, 2 id not
finite, 3 d does not fit binary16); 0 means success. The same status word as ``ninfer_q8k_quantize``.

Numerics per block, plain IEEE f32 instructions:

* amax = the largest |x| (``fcmp ogt`` + select tree; inputs checked finite first);
* d = amax / 127; a zero d gives 34 zero bytes; id = 1 / d;
* binary16 of d, rounded to nearest even, by integer steps on the f32 bits (no
  conversion instruction or library call, the same on every ISA level):
  normal range ``(bits + 0xFFF + ((bits >> 13) & 1)) >> 13`` minus the exponent
  rebias, subnormal range ``roundeven(d * 2**24)`` (the 1.5*2**23 trick: exact
  for values below 2**22); a result of 0x7C00 or more is reason 3;
* scaled = x * id, |scaled| < 127.5 (spec §3: id finite bounds the error of d);
  q = trunc(scaled) + sign(scaled) where |scaled - trunc(scaled)| >= 0.5, i.e.
  C ``roundf`` (ties away from zero); ``fptosi`` gives the truncation and
  ``sitofp`` of it is exact, so ``scaled - trunc`` is exact.
"""
from __future__ import annotations

import llvmlite.ir as ir

from ninfer_ir.quant import QUANTIZE_TARGETS, q8_0
from ninfer_ir.backends.llvm.kernels.qir import (F32, F32P, I16, I32, I64, I8, I8P, any_lane,
                                                 const, entry_alloca, for_range, i32, i64,
                                                 intrinsic, load, record_failer, shuffle, splat,
                                                 store, vec, zero)

TARGET = QUANTIZE_TARGETS[q8_0]
NAME = TARGET.cpu
BLOCK = q8_0.block_elems
_Q = q8_0.field("q").start
V = vec(F32, BLOCK)
VI = vec(I32, BLOCK)
INF = float("inf")


def _horizontal_max(b, v):
    width = BLOCK
    while width > 1:
        width //= 2
        lo = shuffle(b, v, v, range(width))
        hi = shuffle(b, v, v, range(width, 2 * width))
        v = b.select(b.fcmp_ordered(">", lo, hi), lo, hi)
    return b.extract_element(v, i32(0))




def _half_bits(b, d):
    """i32 binary16 bits of the positive finite f32 ``d``, rounded to nearest even
    (0x7C00 or more: does not fit)."""
    bits = b.bitcast(d, I32)
    normal = b.sub(b.lshr(b.add(b.add(bits, i32(0xFFF)), b.and_(b.lshr(bits, i32(13)), i32(1))),
                          i32(13)), i32(112 << 10))
    magic = const(F32, 1.5 * 2.0 ** 23)
    scaled = b.fmul(d, const(F32, 2.0 ** 24))          # exact: a power of two, d < 2**-14
    tiny = b.fptosi(b.fsub(b.fadd(scaled, magic), magic), I32)
    return b.select(b.icmp_unsigned("<", bits, i32(0x38800000)), tiny, normal)


def add_quantize(module: ir.Module, isa: str) -> ir.Function:
    """Add ``ninfer_q80_quantize`` (the same code on every ISA level)."""
    del isa
    fnty = ir.FunctionType(I64, [F32P, I64, I64, I8P, I64])
    fn = ir.Function(module, fnty, name=NAME)
    src, src_stride, count, dst, dst_stride = fn.args
    for arg, name in zip(fn.args, ("src", "src_stride", "G", "dst", "dst_stride")):
        arg.name = name
    src.add_attribute("noalias")
    dst.add_attribute("noalias")
    fabs = intrinsic(module, f"llvm.fabs.v{BLOCK}f32", V, [V])

    b = ir.IRBuilder(fn.append_basic_block("entry"))
    status = entry_alloca(b, I64, "status")
    b.store(i64(0), status)
    exit_block = fn.append_basic_block("exit")
    with for_range(b, 0, count, name="g") as g:
        row = b.bitcast(b.gep(src, [b.mul(g, src_stride)]), I8P)
        rec = b.gep(dst, [b.mul(g, dst_stride)])
        xs = load(b, row, 0, V, align=4)

        fail = record_failer(fn, b, status, g, exit_block)

        mags = b.call(fabs, [xs])
        fail(1, any_lane(b, b.fcmp_unordered(">=", mags, splat(F32, BLOCK, INF))), "input")
        d = b.fdiv(_horizontal_max(b, mags), const(F32, 127.0))

        zero_block = fn.append_basic_block("zero")
        scale_block = fn.append_basic_block("scale")
        next_block = fn.append_basic_block("next")
        b.cbranch(b.fcmp_ordered("==", d, const(F32, 0.0)), zero_block, scale_block)

        b.position_at_end(zero_block)
        store(b, zero(vec(I8, BLOCK)), rec, _Q)
        store(b, zero(I16), rec, 0)
        b.branch(next_block)

        b.position_at_end(scale_block)
        inverse = b.fdiv(const(F32, 1.0), d)
        fail(2, b.fcmp_unordered(">=", b.bitcast(b.and_(b.bitcast(inverse, I32),
                                                         i32(0x7FFFFFFF)), F32),
                                 const(F32, INF)), "inverse")
        half = _half_bits(b, d)
        fail(3, b.icmp_unsigned(">=", half, i32(0x7C00)), "d")
        inv = shuffle(b, b.insert_element(zero(V), inverse, i32(0)), zero(V), [0] * BLOCK)
        scaled = b.fmul(xs, inv)
        trunc = b.fptosi(scaled, VI)
        frac = b.call(fabs, [b.fsub(scaled, b.sitofp(trunc, V))])
        step = b.select(b.fcmp_ordered("<", scaled, splat(F32, BLOCK, 0.0)),
                        splat(I32, BLOCK, -1), splat(I32, BLOCK, 1))
        away = b.fcmp_ordered(">=", frac, splat(F32, BLOCK, 0.5))
        q = b.add(trunc, b.select(away, step, zero(VI)))
        store(b, b.trunc(q, vec(I8, BLOCK)), rec, _Q)
        store(b, b.trunc(half, I16), rec, 0)
        b.branch(next_block)
        b.position_at_end(next_block)
    b.branch(exit_block)
    b.position_at_end(exit_block)
    b.ret(b.load(status))
    return fn
