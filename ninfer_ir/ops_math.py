"""The math family: ``%y = math(%x) {fn = "exp"}``, one elementwise op for every function
of ``ninfer_ir.mathlib`` (``sqrt rsqrt exp exp2 log log2 tanh erf sin cos floor ceil
trunc rint``).

f32 results are correctly rounded (round-to-nearest-even of the exact value, C99 Annex F
special cases, one canonical quiet NaN ``0x7FC00000``); an f16 argument is widened to
f32, the f32 result is computed and rounded to f16. No op of the backends computes
``math``: the ``expand_math`` pass rewrites it into ordinary ops (the algorithms of
``mathlib``), and the interpreter runs the same algorithms on numpy arrays.
"""
from __future__ import annotations

from .ir import Operation
from .opbase import attr, n_operands, n_results
from .types import ScalarType, ShapedType, TensorType, f16, f32


class MathOp(Operation):
    name = "math"
    #: dtypes a math function takes (its result has the same dtype)
    dtypes = (f32, f16)

    def infer_types(self):
        if len(self.operands) != 1:
            return None
        t = self.operands[0].type
        if isinstance(t, ShapedType):
            return [TensorType(t.dtype, t.shape)]
        return [t] if isinstance(t, ScalarType) else None

    def verify_(self):
        from .mathlib import FUNCTIONS
        n_operands(self, 1)
        n_results(self, 1)
        fn = attr(self, "fn", str, "a function name")
        if fn not in FUNCTIONS:
            raise self.error(f"unknown math function {fn!r}; use one of "
                             f"{', '.join(sorted(FUNCTIONS))}")
        t = self.operands[0].type
        if not isinstance(t, (ScalarType, ShapedType)):
            raise self.error(f"operand has unsupported type {t}")
        dtype = t.dtype if isinstance(t, ShapedType) else t
        if dtype not in self.dtypes:
            raise self.error(f"{fn} takes f32 or f16 values, got {dtype}")
        if self.result.type != self.infer_types()[0]:
            raise self.error(f"result type {self.result.type} must be "
                             f"{self.infer_types()[0]}")
