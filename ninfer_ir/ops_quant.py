"""The quantized ops (spec §1–§4): ``quantize``, ``quantized_dot`` and their destination
form ``quantize_into`` (``decode`` is in ``ops_decode``)."""
from __future__ import annotations

from .ir import Operation
from .opbase import (ContractionOp, WritesDest, describe, index_operand, n_operands, n_results,
                     operand_at, order_attr)
from .quant import (QUANTIZE_TARGETS, DotPair, QuantizeTarget, QuantSchema, dot_pair,
                    pairs_text)
from .types import BufferType, ScalarType, ShapedType, TensorType, dims_equal, f32, u8

# -- the quantized ops (spec §1); formats from the closed tables of ninfer_ir.quant ------

def _format_attr(op, key):
    if key not in op.attrs:
        raise op.error(f"missing attribute '{key}'")
    val = op.attrs[key]
    if not isinstance(val, QuantSchema):
        raise op.error(f"attribute '{key}' must be a quant schema (I.quant.*), "
                       f"got {describe(val)}")
    return val


def quantize_target_of(op) -> QuantizeTarget:
    """The quantize target named by ``op``'s ``format`` (verified)."""
    fmt = _format_attr(op, "format")
    target = QUANTIZE_TARGETS.get(fmt)
    if target is None:
        raise op.error(f"attribute 'format' must be a quantize target "
                       f"({', '.join(str(s) for s in QUANTIZE_TARGETS)}), got {fmt}")
    return target


def dot_pair_of(op) -> DotPair:
    """The dot pair named by ``op``'s ``lhs_format`` and ``rhs_format`` (verified)."""
    lhs, rhs = _format_attr(op, "lhs_format"), _format_attr(op, "rhs_format")
    pair = dot_pair(lhs, rhs)
    if pair is None:
        raise op.error(f"lhs_format x rhs_format must be a pair of the table "
                       f"({pairs_text()}), got {lhs} x {rhs}")
    return pair


def _records(op, v, what, dtype, width):
    t = v.type
    if not isinstance(t, ShapedType):
        raise op.error(f"{what} must be a tensor, got {t}")
    if t.dtype != dtype:
        raise op.error(f"{what} must have dtype {dtype}, got {t}")
    if t.rank != 2:
        raise op.error(f"{what} must be rank 2 [G,{width}] (no batch axes), got {t}")
    if t.shape[1] != width:
        raise op.error(f"{what} must have trailing dim {width}, got {t}")
    if t.shape[0] is None:
        raise op.error(f"{what} has an unknown record count G (?), which is not allowed "
                       f"here: give G as a number or a symbol, got {t}")
    return t.shape[0]


class QuantizeOp(Operation):
    """``quantize(values) {format}``: f32[G,E] -> u8[G,R] records of a quantize target
    (E, R from the schema: Q8_K 256/292, spec §4; Q8_0 32/34, quantized-gguf §3)."""
    name = "quantize"
    legalized_by = "materialize"     # into alloc + quantize_into

    values = operand_at(0)

    def infer_types(self):
        if len(self.operands) != 1 or not isinstance(self.operands[0].type, ShapedType):
            return None
        target = QUANTIZE_TARGETS.get(self.attrs.get("format"))
        if target is None:
            return None
        t = self.operands[0].type
        return [TensorType(u8, (t.shape[0] if t.rank else None, target.record_bytes))]

    @property
    def target(self) -> QuantizeTarget:
        return quantize_target_of(self)

    def verify_(self):
        n_operands(self, 1)
        n_results(self, 1)
        target = quantize_target_of(self)
        g = _records(self, self.operands[0], "values", f32, target.block_elems)
        r = self.result.type
        if not isinstance(r, TensorType):
            raise self.error(f"result must be a tensor, got {r}")
        rg = _records(self, self.result, "result", u8, target.record_bytes)
        if not dims_equal(g, rg):
            raise self.error(f"result G ({rg}) must equal the input's G ({g})")


class QuantizedDotOp(ContractionOp):
    """``quantized_dot(lhs, rhs) {lhs_format, rhs_format}``: records of a pair of the table
    (e.g. Q4_K u8[G,144] x Q8_K u8[G,292], spec §3) -> rank-0 f32."""
    name = "quantized_dot"

    lhs = operand_at(0)
    rhs = operand_at(1)

    def infer_types(self):
        return [TensorType(f32, ())]

    def verify_(self):
        n_operands(self, 2)
        n_results(self, 1)
        pair = dot_pair_of(self)
        acc = self.attrs.get("acc_dtype")
        if not isinstance(acc, ScalarType):
            raise self.error(f"attribute 'acc_dtype' must be a dtype, got {describe(acc)}")
        if acc is not f32:
            raise self.error(f"acc_dtype must be f32, got {acc}")
        gl = _records(self, self.operands[0], "lhs", u8, pair.lhs.record_bytes)
        gr = _records(self, self.operands[1], "rhs", u8, pair.rhs.record_bytes)
        if not dims_equal(gl, gr):
            raise self.error(f"lhs and rhs must have the same G, got {gl} and {gr}")
        order_attr(self)

    @property
    def pair(self) -> DotPair:
        return dot_pair_of(self)


class QuantizeIntoOp(WritesDest, Operation):
    """``quantize_into(values, dst[, base])``: quantize written into a buffer (destination
    form). The optional ``base`` (index) is the record number of ``values``' first
    row within the whole quantization, so a ``DomainError`` names the same record when
    the passes quantize a fused input record by record."""
    name = "quantize_into"
    pure = False

    values = operand_at(0)

    @property
    def base(self):
        """The record base (an index value), or None."""
        return self.operands[2] if len(self.operands) == 3 else None

    def verify_(self):
        if len(self.operands) not in (2, 3):
            raise self.error(f"expects 2 or 3 operand(s), got {len(self.operands)}")
        if len(self.operands) == 3:
            index_operand(self, self.operands[2], "the record base")
        n_results(self, 0)
        target = quantize_target_of(self)
        g = _records(self, self.operands[0], "values", f32, target.block_elems)
        dst = self.operands[1].type
        if not isinstance(dst, BufferType):
            raise self.error(f"destination must be a buffer, got {dst}")
        dg = _records(self, self.operands[1], "destination", u8, target.record_bytes)
        if isinstance(g, int) and isinstance(dg, int) and g != dg:   # else checked at run time
            raise self.error(f"destination G ({dg}) must equal the input's G ({g})")

    @property
    def target(self) -> QuantizeTarget:
        return quantize_target_of(self)

