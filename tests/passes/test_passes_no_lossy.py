"""No pass ever adds lossy quantization (spec quantized-ops §4, last sentence): no new
quantize, quantized_dot or narrowing cast appears at any stage of any test kernel, and an
ordinary f32 matmul stays f32 all the way down."""
import pytest

import ninfer_ir as I
from ninfer_ir.types import ShapedType
from tests.kernels import KERNELS as REGISTRY
from tests.passes.harness import stages
from tests.passes.ir_kernels import KERNELS, MATMUL_F32

MODULES = [(f"ir:{k}", lambda t=t: I.parse(t)) for k, t in sorted(KERNELS.items())] + \
          [(f"dsl:{k}", lambda c=c: c.kernel.ir) for k, c in sorted(REGISTRY.items())]


def _dtype(v):
    return v.type.dtype if isinstance(v.type, ShapedType) else v.type


def _narrowing(src, to) -> bool:
    if src.is_float and not to.is_float:
        return True
    if src.is_float and to.is_float:
        return to.bits < src.bits or (src.name, to.name) in (("f16", "bf16"), ("bf16", "f16"))
    if not src.is_float and to.is_float:
        return to.bits <= src.bits
    return to.bits < src.bits or (src.is_signed != to.is_signed and to.bits <= src.bits)


def _lossy(module):
    quantizes = sum(op.name in ("quantize", "quantize_into") for op in module.walk())
    qdots = sum(op.name == "quantized_dot" for op in module.walk())
    casts = {(str(_dtype(op.operands[0])), str(op.attrs["to"])) for op in module.walk()
             if op.name == "cast" and _narrowing(_dtype(op.operands[0]), op.attrs["to"])}
    return quantizes, qdots, casts


@pytest.mark.parametrize("name, make", MODULES, ids=[m[0] for m in MODULES])
def test_no_stage_adds_lossy_operations(name, make):
    module = make()
    q0, d0, c0 = _lossy(module)
    for stage, m in stages(module)[1:]:
        q, d, c = _lossy(m)
        assert q <= q0, f"{stage} adds a quantize"
        assert d <= d0, f"{stage} adds a quantized_dot"
        assert c <= c0, f"{stage} adds narrowing casts {c - c0}"


@pytest.mark.parametrize("make", [lambda: I.parse(MATMUL_F32),
                                  lambda: REGISTRY["f32_gemv"].kernel.ir])
def test_f32_matmul_stays_f32(make):
    for stage, m in stages(make()):
        names = {op.name for op in m.walk()}
        assert not names & {"quantize", "quantize_into", "quantized_dot", "cast", "bitcast"}
        dtypes = {str(_dtype(v)) for op in m.walk() for v in op.results
                  if op.name not in ("dim", "constant", "cmp")}
        assert dtypes <= {"f32", "index"}, (stage, dtypes)
        dots = [op for op in m.walk() if op.name == "dot"]
        assert dots and all(str(_dtype(d.operands[0])) == "f32" for d in dots), stage


def test_the_narrowing_rule_knows_the_user_casts():
    module = REGISTRY["guarded_gather"].kernel.ir
    assert _lossy(module)[2] == set()
    assert _lossy(I.parse(KERNELS["int_identities"]))[2] == {("i32", "i8")}
