"""Vector building blocks of the decode rows kernel (``llvmlite.ir``, target-independent IR).

Lanes are 32-bit; ``lanes`` is 16. Loads are byte-aligned; a 64-byte load of fewer
remaining bytes is masked (the other lanes read as zero and fault nothing). The
transpose is the classic butterfly: in round ``j`` (1, 2, 4, 8) the vectors ``i`` and
``i + j`` (``i & j == 0``) trade the lanes ``l`` with ``l & j`` set for the lanes ``l - j``,
so that after the four rounds vector ``d`` holds word ``d`` of every input vector.
"""
from __future__ import annotations

import llvmlite.ir as ir

from ninfer_ir.backends.llvm.gen.emitter import carried_loop
from ninfer_ir.backends.llvm.kernels.qir import gather_i32

__all__ = ["VecBuilder"]

I1, I8, I16, I32, I64 = (ir.IntType(n) for n in (1, 8, 16, 32, 64))
F16, F32 = ir.HalfType(), ir.FloatType()


class VecBuilder:
    """An ``ir.IRBuilder`` on a fresh function with vector helpers."""

    def __init__(self, fn: ir.Function, lanes: int):
        self.fn, self.lanes = fn, lanes
        self.vi, self.vf = ir.VectorType(I32, lanes), ir.VectorType(F32, lanes)
        self.vb = ir.VectorType(I8, 4 * lanes)
        self.entry = fn.append_basic_block("entry")
        self.b = ir.IRBuilder(fn.append_basic_block("start"))
        self._allocas = ir.IRBuilder(self.entry)
        self._allocas.branch(self.b.block)
        self._allocas.position_at_start(self.entry)

    # constants and splats
    def ci(self, v):
        return ir.Constant(self.vi, [ir.Constant(I32, v)] * self.lanes)

    def cf(self, v):
        return ir.Constant(self.vf, [ir.Constant(F32, v)] * self.lanes)

    def const_lanes(self):
        return ir.Constant(self.vi, [ir.Constant(I32, i) for i in range(self.lanes)])

    def splat(self, value):
        ty = ir.VectorType(value.type, self.lanes)
        one = self.b.insert_element(ir.Constant(ty, None), value, ir.Constant(I32, 0))
        return self.b.shuffle_vector(one, ir.Constant(ty, None), self.ci(0))

    def intrinsic(self, name, ret, args):
        fn = self.fn.module.globals.get(name)
        if fn is None:
            fn = ir.Function(self.fn.module, ir.FunctionType(ret, args), name=name)
        return fn

    def entry_alloca(self, ty):
        slot = self._allocas.alloca(ty)
        slot.align = 64
        return slot

    # memory
    def gather(self, base, offsets):
        """i32 loads at ``base + offsets[lane]`` bytes."""
        b, n = self.b, self.lanes
        fn = gather_i32(self.fn.module, n)
        addr = b.add(self.splat(b.ptrtoint(base, I64)), b.sext(offsets, ir.VectorType(I64, n)))
        mask = ir.Constant(ir.VectorType(I1, n), [ir.Constant(I1, 1)] * n)
        return b.call(fn, [b.inttoptr(addr, fn.function_type.args[0]), mask,
                           ir.Constant(self.vi, None)])

    def load_bytes(self, ptr, count=None):
        """The ``4 * lanes`` bytes at ``ptr`` as words; only ``count`` (i64) of them when
        given, the rest zero."""
        b = self.b
        typed = b.bitcast(ptr, self.vb.as_pointer())
        if count is None:
            return b.bitcast(b.load(typed, align=1), self.vi)
        n = 4 * self.lanes
        idx = ir.Constant(self.vb, [ir.Constant(I8, i) for i in range(n)])
        limit = b.trunc(b.select(b.icmp_signed("<", count, ir.Constant(I64, n)), count,
                                 ir.Constant(I64, n)), I8)
        one = b.insert_element(ir.Constant(self.vb, None), limit, ir.Constant(I32, 0))
        limits = b.shuffle_vector(one, ir.Constant(self.vb, None),
                                  ir.Constant(ir.VectorType(I32, n), [ir.Constant(I32, 0)] * n))
        mask = b.icmp_unsigned("<", idx, limits)
        fn = self.intrinsic(f"llvm.masked.load.v{n}i8.p0", self.vb,
                            [self.vb.as_pointer(), I32, ir.VectorType(I1, n), self.vb])
        return b.bitcast(b.call(fn, [typed, ir.Constant(I32, 1), mask,
                                     ir.Constant(self.vb, None)]), self.vi)

    # lanes
    def transpose(self, rows):
        """``lanes`` vectors of ``lanes`` words -> the same matrix transposed."""
        b, n = self.b, self.lanes
        v = list(rows)
        j = 1
        while j < n:
            low = [l if not l & j else n + l - j for l in range(n)]
            high = [l + j if not l & j else n + l for l in range(n)]
            for i in range(n):
                if i & j:
                    continue
                a, c = v[i], v[i + j]
                v[i] = b.shuffle_vector(a, c, ir.Constant(self.vi, [ir.Constant(I32, x)
                                                                    for x in low]))
                v[i + j] = b.shuffle_vector(a, c, ir.Constant(self.vi, [ir.Constant(I32, x)
                                                                        for x in high]))
            j *= 2
        return v

    def funnel(self, hi, lo, shift):
        """The low word of ``(hi:lo) >> shift`` per lane (``shift`` < 32)."""
        fn = self.intrinsic(f"llvm.fshr.v{self.lanes}i32", self.vi, [self.vi] * 3)
        return self.b.call(fn, [hi, lo, shift])

    def byte_to_top(self, words, j):
        """Byte ``j`` of each word moved to its top byte, the other bytes zero."""
        b, n = self.b, self.lanes
        mask = []
        for lane in range(n):
            mask += [4 * n] * 3 + [4 * lane + j]
        bytes_ = b.bitcast(words, self.vb)
        moved = b.shuffle_vector(bytes_, ir.Constant(self.vb, None),
                                 ir.Constant(ir.VectorType(I32, 4 * n),
                                             [ir.Constant(I32, x) for x in mask]))
        return b.bitcast(moved, self.vi)

    def half_to_float(self, words):
        """The binary16 in the low half of each word, converted exactly."""
        b = self.b
        halves = b.trunc(words, ir.VectorType(I16, self.lanes))
        return b.fpext(b.bitcast(halves, ir.VectorType(F16, self.lanes)), self.vf)

    # control flow
    def counted(self, lo, hi, carried, body, name):
        """``for i in [lo, hi)``: ``carried = body(i, carried)``; returns the final values."""
        return carried_loop(self.b, self.fn, lo, hi, carried, body, name, index_name=name)
