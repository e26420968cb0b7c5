"""``decode`` in the CPU emitter: one row of a registered format, as a lazy row.

The row is never stored: its element ``k`` is computed where it is read (``load``,
``dot``, ``reduce``, ``copy``; any other consumer, such as a ``subview``, is refused
with a ``VerifyError``). A grouped format's element is decoded here, exactly as
``ninfer_ir/numerics/decode.py``: the ``b``-bit little-endian word at stream bits
``[k*b, (k+1)*b)`` (two bytes read, the one past the row as 0), its signed code
(two's complement, or ``u - offset``), and ``binary32(s32 * binary32(q))`` with
``s32`` the binary32 of the group's binary16 scale. Every other format's element is
``ninfer_ir/mathlib/decoders.py``'s ``element`` emitted in ``LlvmContext`` (its
constant tables as internal LLVM globals). The row geometry is guarded like the
interpreter checks it. A row loop of dots over decoded grouped rows has a fast path
of its own (``qdecode``).
"""
from __future__ import annotations

import llvmlite.ir as ir
import numpy as np

from ninfer_ir import ops as O
from ninfer_ir.mathlib.core import Val
from ninfer_ir.mathlib.decoders import element
from ninfer_ir.numerics.decode import family, signature
from ninfer_ir.types import f16, f32, i64

from ninfer_ir.backends.llvm.gen import scalars as S
from ninfer_ir.backends.llvm.gen.emitter import i64c, no_lowering
from ninfer_ir.backends.llvm.gen.memory import conform, load_element
from ninfer_ir.backends.abi import Guard

__all__ = ["Decoded", "LlvmContext", "lower_decode", "READERS"]

I32 = ir.IntType(32)


class LlvmContext:
    """The math library's context that emits each op at the builder's position with
    the scalar rules of the CPU emitter (``scalars``), the same as for the IR's ops."""

    def __init__(self, b: ir.IRBuilder):
        self.b = b

    def const(self, value, t):
        return Val(self, S.constant(t, float(value) if t.is_float else value), t)

    def op(self, name, args, attrs, t):
        b, src, xs = self.b, args[-1].t, [a.v for a in args]
        if name in S.BINARY:
            r = S.BINARY[name](b, src, *xs)
        elif name in S.UNARY:
            r = S.UNARY[name](b, src, *xs)
        elif name == "cmp":
            r = S.compare(b, attrs["pred"], src, *xs)
        elif name == "select":
            r = b.select(*xs)
        elif name == "cast":
            r = S.cast(b, xs[0], src, attrs["to"])
        else:
            r = S.bitcast(b, xs[0], src, attrs["to"])
        return Val(self, r, t)

    def table(self, key, values, idx):
        from ninfer_ir.types import from_numpy
        t = from_numpy(values.dtype)
        module, name = self.b.module, f"ninfer_decode_table.{key}"
        try:
            g = module.get_global(name)
        except KeyError:
            ty = ir.ArrayType(ir.IntType(t.bits), len(values))
            if t.bits == 8:
                init = ir.Constant(ty, bytearray(values.view(np.uint8).tobytes()))
            else:
                init = ir.Constant(ty, [S.const_int(ir.IntType(t.bits), int(v)) for v in values])
            g = ir.GlobalVariable(module, ty, name)
            g.initializer, g.global_constant, g.linkage = init, True, "internal"
        at = idx.cast(i64).v
        return Val(self, self.b.load(self.b.gep(g, [i64c(0), at], inbounds=True)), t)


class _Row:
    """A row's operands (views, scalar registers) for ``decoders.element``."""

    def __init__(self, b, fmt, inputs):
        self.c, self.inputs = LlvmContext(b), inputs
        self.types = [op.dtype for op in signature(fmt)]

    def load(self, i, idx):
        return Val(self.c, load_element(self.c.b, self.inputs[i], [idx.v]), self.types[i])

    def scalar(self, i):
        return Val(self.c, self.inputs[i], self.types[i])


class Decoded:
    """A lazy 1-D row: ``shape`` like a view, ``element(b, k)`` computes one value;
    ``inputs``: the decode's row views and scalar registers (a grouped row: packed
    codes and scales)."""
    __slots__ = ("inputs", "fmt", "shape", "dtype")

    def __init__(self, inputs, fmt, k, dtype=f32):
        self.inputs, self.fmt, self.shape, self.dtype = list(inputs), fmt, [k], dtype

    @property
    def packed(self):
        return self.inputs[0]

    @property
    def scales(self):
        return self.inputs[1]

    def element(self, b, k):
        fmt = self.fmt
        if family(fmt) != "grouped":
            row = _Row(b, fmt, self.inputs)
            return element(fmt, row, Val(row.c, k, i64)).v
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
        if not isinstance(use.op, READERS + (O.DimOp,)):
            raise no_lowering(op, f" feeding '{use.op.name}': a decoded row is computed "
                                  f"where it is read ({', '.join(c.name for c in READERS)}); give it a buffer "
                                  f"to take a view of it")
    b = e.b
    fmt = op.attrs["format"]
    if family(fmt) != "grouped":
        inputs = [e.value(v) for v in op.operands]
        sizes = [x.shape[0] for x, spec in zip(inputs, signature(fmt)) if spec.kind == "row"]
        e.guard(_geometry_ok(b, fmt, sizes), Guard("decode", op), sizes)
        row = Decoded(inputs, fmt, _length(b, fmt, sizes), op.result.type.dtype)
        return conform(e, op, row, op.result.type)
    packed, scales, k = (e.value(v) for v in op.operands)
    want_p = b.udiv(b.add(b.mul(k, i64c(fmt.bits)), i64c(7)), i64c(8))
    want_s = b.udiv(b.add(k, i64c(fmt.group - 1)), i64c(fmt.group))
    ok = b.and_(b.and_(b.icmp_signed(">=", k, i64c(1)), b.icmp_signed("<", k, i64c(1 << 56))),
                b.and_(b.icmp_signed("==", packed.shape[0], want_p),
                       b.icmp_signed("==", scales.shape[0], want_s)))
    e.guard(ok, Guard("decode", op), [packed.shape[0], scales.shape[0], k])
    return conform(e, op, Decoded([packed, scales], fmt, k), op.result.type)


def _geometry_ok(b, fmt, sizes):
    """``numerics.decode.row_problem(fmt, sizes) is None``, emitted."""
    n = sizes[0]
    ok = b.icmp_signed(">=", n, i64c(1))
    fam = family(fmt)
    if fam == "gguf":
        return b.and_(ok, b.icmp_signed("==", b.srem(n, i64c(fmt.block_bytes)), i64c(0)))
    if fam == "nvfp4":
        whole = b.icmp_signed("==", b.and_(n, i64c(15)), i64c(0))
        return b.and_(b.and_(ok, whole), b.icmp_signed("==", sizes[1], b.ashr(n, i64c(4))))
    return ok


def _length(b, fmt, sizes):
    """``numerics.decode.row_length``, emitted (sizes already checked)."""
    if family(fmt) == "gguf":
        return b.mul(b.sdiv(sizes[0], i64c(fmt.block_bytes)), i64c(fmt.block_values))
    return sizes[0]
