"""Runtime helpers LLVM calls by name when a target lacks binary16 hardware.

On x86-64 without F16C (the ``"portable"`` level) LLVM lowers every ``half``
conversion to the compiler-rt functions ``__extendhfsf2`` and ``__truncsfhf2``,
which the JIT cannot resolve in the host process. This module defines them, with
integer operations only, in the module being compiled, matching what the x86
conversion instructions compute (round to nearest even; a NaN keeps its sign and
upper payload bits and comes out quiet). ``double -> half`` never needs a helper:
the scalar emitter narrows it through f32 with round-to-odd.
"""
from __future__ import annotations

import llvmlite.ir as ir

__all__ = ["add_half_builtins"]

I16 = ir.IntType(16)
I32 = ir.IntType(32)
F16 = ir.HalfType()
F32 = ir.FloatType()


def _c(v):
    return ir.Constant(I32, v)


def _extend(module):
    fn = ir.Function(module, ir.FunctionType(F32, [F16]), name="__extendhfsf2")
    b = ir.IRBuilder(fn.append_basic_block())
    h = b.zext(b.bitcast(fn.args[0], I16), I32)
    sign = b.shl(b.and_(h, _c(0x8000)), _c(16))
    exponent = b.and_(b.lshr(h, _c(10)), _c(31))
    mantissa = b.and_(h, _c(0x3FF))
    normal = b.or_(b.shl(b.add(exponent, _c(112)), _c(23)), b.shl(mantissa, _c(13)))
    quiet = b.select(b.icmp_unsigned("!=", mantissa, _c(0)), _c(0x400000), _c(0))
    special = b.or_(b.or_(_c(0x7F800000), b.shl(mantissa, _c(13))), quiet)
    tiny = b.bitcast(b.fmul(b.uitofp(mantissa, F32), ir.Constant(F32, 2.0 ** -24)), I32)
    body = b.select(b.icmp_unsigned("==", exponent, _c(0)), tiny,
                    b.select(b.icmp_unsigned("==", exponent, _c(31)), special, normal))
    b.ret(b.bitcast(b.or_(body, sign), F32))


def _truncate(module):
    fn = ir.Function(module, ir.FunctionType(F16, [F32]), name="__truncsfhf2")
    b = ir.IRBuilder(fn.append_basic_block())
    x = fn.args[0]
    bits = b.bitcast(x, I32)
    sign = b.and_(b.lshr(bits, _c(16)), _c(0x8000))
    mag = b.and_(bits, _c(0x7FFFFFFF))
    nan = b.or_(_c(0x7E00), b.and_(b.lshr(mag, _c(13)), _c(0x3FF)))
    rebased = b.sub(mag, _c(0x38000000))
    lsb = b.and_(b.lshr(rebased, _c(13)), _c(1))
    normal = b.lshr(b.add(b.add(rebased, _c(0xFFF)), lsb), _c(13))
    absx = b.bitcast(mag, F32)
    tiny = b.sub(b.bitcast(b.fadd(absx, ir.Constant(F32, 0.5)), I32), _c(0x3F000000))
    out = b.select(b.icmp_unsigned(">", mag, _c(0x7F800000)), nan,
                   b.select(b.icmp_unsigned(">=", mag, _c(0x477FF000)), _c(0x7C00),
                            b.select(b.icmp_unsigned(">=", mag, _c(0x38800000)), normal, tiny)))
    b.ret(b.bitcast(b.trunc(b.or_(out, sign), I16), F16))


def add_half_builtins(module: ir.Module, isa: str) -> None:
    """Define the binary16 helpers in ``module`` when compiling for ``isa`` needs them."""
    if isa != "portable":
        return
    if "__extendhfsf2" not in module.globals:
        _extend(module)
    if "__truncsfhf2" not in module.globals:
        _truncate(module)
