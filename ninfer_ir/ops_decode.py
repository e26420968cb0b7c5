"""The ``decode`` op: one row of any registered format, in kernels, -> f32[K] (i32[K]
for ``int32``). Its operands depend on the format's family (``numerics.decode.signature``):

* grouped: ``decode(packed u8[P], scales f16[S], k: index)`` (the ``pack`` carrier);
* ``gguf_*``: ``decode(blocks u8[R])`` with ``K = R / block_bytes * block_values``;
* ``bf16`` / ``fp32`` / ``int32``: ``decode(words u16[K] | u32[K])``;
* ``fp8_e4m3fn_row_bf16`` / ``_fp16``: ``decode(codes u8[K], scale: u16 | f16)``, the row's
  scale word as a scalar (BF16 word, or binary16);
* ``nvfp4``: ``decode(codes u8[K], scales u8[K/16], divisor: f32)``.

Each element is exactly what the registry's ``decode`` gives (see docs/decode.md).
"""
from __future__ import annotations

from .ir import Operation
from .numerics.decode import family, result_dtype, row_length, row_problem, row_sizes, \
    signature
from .opbase import attribute, describe, index_operand, n_operands, n_results, shaped
from .types import ScalarType, TensorType

__all__ = ["DecodeOp"]


def _format(op):
    from .formats import Format
    val = op.attrs.get("format")
    if val is None:
        raise op.error("missing attribute 'format'")
    if not isinstance(val, Format):
        raise op.error(f"attribute 'format' must be a registered format "
                       f"(I.formats.get(...)), got {describe(val)}")
    return val


class DecodeOp(Operation):
    """``decode(<row operands>) {format = #name}``: one row of ``format`` -> f32[K]; no
    validation of codes (the producer's contract); the row geometry is checked at run
    time (and here, where the sizes are static)."""
    name = "decode"

    format = attribute("format")

    @property
    def count(self):
        """The element count operand (grouped formats), else None."""
        return self.operands[2] if family(self.format) == "grouped" else None

    def verify_(self):
        fmt = _format(self)
        sig = signature(fmt)
        n_operands(self, len(sig))
        n_results(self, 1)
        sizes = []
        for spec, v in zip(sig, self.operands):
            what = f"{spec.name} (operand '{spec.name}' of a {fmt.name} decode)"
            if spec.kind == "count":
                index_operand(self, v, "the element count")
            elif spec.kind == "scalar":
                if not isinstance(v.type, ScalarType) or v.type is not spec.dtype:
                    raise self.error(f"{what} must be one {spec.dtype} scalar, got {v.type}")
            else:
                t = shaped(self, v, what)
                if t.dtype is not spec.dtype or t.rank != 1:
                    raise self.error(f"{spec.name} must be one {spec.dtype} row, got {t}")
                sizes.append(t.shape[0])
        want = result_dtype(fmt)
        r = self.result.type
        if not isinstance(r, TensorType) or r.dtype is not want or r.rank != 1:
            raise self.error(f"result must be tensor<{want}[K]>, got {r}")
        k = r.shape[0]
        if family(fmt) == "grouped":
            self._grouped_sizes(fmt, k, *sizes)
            return
        if all(isinstance(n, int) for n in sizes):
            problem = row_problem(fmt, sizes)
            if problem:
                raise self.error(problem)
            if isinstance(k, int) and k != row_length(fmt, sizes):
                raise self.error(f"the row holds {row_length(fmt, sizes)} elements, but the "
                                 f"result is {r}")

    def _grouped_sizes(self, fmt, k, p, s):
        if not isinstance(k, int):
            return
        if k < 1:
            raise self.error("a decoded row holds at least one element")
        want_p, want_s = row_sizes(fmt, k)
        if isinstance(p, int) and p != want_p:
            raise self.error(f"{k} {fmt.bits}-bit codes pack into {want_p} bytes, got "
                             f"{self.operands[0].type}")
        if isinstance(s, int) and s != want_s:
            raise self.error(f"{k} elements in groups of {fmt.group} need {want_s} "
                             f"scales, got {self.operands[1].type}")
