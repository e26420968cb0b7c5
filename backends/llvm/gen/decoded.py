"""``decode`` in the CPU emitter: one packed row of a grouped format, as a lazy f32 row.

The row is never stored: its element ``k`` is computed where it is read (``load``,
``dot``, ``reduce``, ``copy``; any other consumer, such as a ``subview``, is refused
with a ``VerifyError``), exactly as ``ninfer_ir/numerics/decode.py``: the ``b``-bit
little-endian word at stream bits ``[k*b, (k+1)*b)`` (two bytes read, the one past
the row as 0), its signed code (two's complement, or ``u - offset``), and
``binary32(s32 * binary32(q))`` with ``s32`` the binary32 of the group's binary16
scale. The row geometry is guarded like the interpreter checks it. A row loop of dots
over decoded rows has a fast path of its own (``qdecode``).
"""
from __future__ import annotations

import llvmlite.ir as ir

from ninfer_ir import ops as O
from ninfer_ir.types import f16, f32

from ninfer_ir.backends.llvm.gen import scalars as S
from ninfer_ir.backends.llvm.gen.emitter import i64c, no_lowering
from ninfer_ir.backends.llvm.gen.memory import conform, load_element
from ninfer_ir.backends.abi import Guard

__all__ = ["Decoded", "lower_decode", "READERS"]

I32 = ir.IntType(32)


class Decoded:
    """A lazy 1-D f32 row: ``shape`` like a view, ``element(b, k)`` computes one value."""
    __slots__ = ("packed", "scales", "fmt", "shape", "dtype")

    def __init__(self, packed, scales, fmt, k):
        self.packed, self.scales, self.fmt, self.shape, self.dtype = packed, scales, fmt, [k], f32

    def element(self, b, k):
        fmt = self.fmt
        pos = b.mul(k, i64c(fmt.bits))
        byte = b.lshr(pos, i64c(3))
        shift = b.trunc(b.and_(pos, i64c(7)), I32)
        low = b.zext(load_element(b, self.packed, [byte]), I32)
        nxt = b.add(byte, i64c(1))
        inside = b.icmp_unsigned("<", nxt, self.packed.shape[0])
        safe = b.select(inside, nxt, byte)
        high = b.select(inside, b.zext(load_element(b, self.packed, [safe]), I32),
                        ir.Constant(I32, 0))
        pair = b.or_(low, b.shl(high, ir.Constant(I32, 8)))
        word = b.and_(b.lshr(pair, shift), ir.Constant(I32, (1 << fmt.bits) - 1))
        offset = getattr(fmt.word_codec, "offset", None)
        if offset is not None:
            code = b.sub(word, ir.Constant(I32, offset))
        else:
            sign = ir.Constant(I32, 1 << (fmt.bits - 1))
            code = b.sub(b.xor(word, sign), sign)
        q = b.sitofp(code, ir.FloatType())
        half = load_element(b, self.scales, [b.udiv(k, i64c(fmt.group))])
        s = S.cast(b, half, f16, f32)
        return b.fmul(s, q)


#: the ops that read a decoded row element by element
READERS = (O.LoadOp, O.DotOp, O.ReduceOp, O.CopyOp)


def lower_decode(e, op):
    for use in op.result.uses:
        if not isinstance(use.op, READERS):
            raise no_lowering(op, f" feeding '{use.op.name}': a decoded row is computed "
                                  f"where it is read ({', '.join(c.name for c in READERS)}); give it a buffer "
                                  f"to take a view of it")
    b = e.b
    packed, scales, k = (e.value(v) for v in op.operands)
    fmt = op.attrs["format"]
    want_p = b.udiv(b.add(b.mul(k, i64c(fmt.bits)), i64c(7)), i64c(8))
    want_s = b.udiv(b.add(k, i64c(fmt.group - 1)), i64c(fmt.group))
    ok = b.and_(b.and_(b.icmp_signed(">=", k, i64c(1)), b.icmp_signed("<", k, i64c(1 << 56))),
                b.and_(b.icmp_signed("==", packed.shape[0], want_p),
                       b.icmp_signed("==", scales.shape[0], want_s)))
    e.guard(ok, Guard("decode", op), [packed.shape[0], scales.shape[0], k])
    return conform(e, op, Decoded(packed, scales, fmt, k), op.result.type)

