"""No pass turns f32 arithmetic into quantized arithmetic: ``I.lower`` of a kernel that
writes an f32 matmul or GEMV (any order), or an explicit decode + f32 contraction, holds no
``quantize``, ``quantize_into``, ``quantized_dot`` or ``decode`` and no narrowing cast that
the kernel did not write, and the f32 matmul still computes what the interpreter does."""
import collections

import numpy as np
import pytest

import ninfer_ir as I
from ninfer_ir.types import ShapedType
from tests.decode.decode_kernels import GEMV, q4_gemv_shift_mask, q4_gemv_tree, q4_gemv_xw


@I.kernel
def f32_matmul(a: I.Tensor[I.f32, "M", "K"], b: I.Tensor[I.f32, "K", "N"],
               c: I.Buffer[I.f32, "M", "N"]):
    for i in I.range(a.shape[0]):
        for j in I.range(b.shape[1]):
            c[i, j] = I.dot(a[i], b[:, j])


@I.kernel
def f32_gemv_tree(w: I.Tensor[I.f32, "N", "K"], x: I.Tensor[I.f32, "K"], y: I.Buffer[I.f32, "N"]):
    for n in I.range(w.shape[0]):
        y[n] = I.dot(w[n], x, order="chunk<64>/tree")


@I.kernel
def f32_scaled_matvec(w: I.Tensor[I.f32, "N", "K"], x: I.Tensor[I.f32, "K"], a: I.f32,
                      y: I.Buffer[I.f32, "N"]):
    for n in I.range(w.shape[0]):
        y[n] = I.dot(w[n] * a, x)


KERNELS = [f32_matmul, f32_gemv_tree, f32_scaled_matvec, q4_gemv_xw, q4_gemv_tree,
           q4_gemv_shift_mask, *GEMV.values()]
LOSSY = ("quantize", "quantize_into", "quantized_dot", "decode")


def _dtype(v):
    return v.type.dtype if isinstance(v.type, ShapedType) else v.type


def _narrowing_casts(module):
    out = set()
    for op in module.walk():
        if op.name != "cast":
            continue
        src, to = _dtype(op.operands[0]), op.attrs["to"]
        if (src.is_float and (not to.is_float or to.bits < src.bits)) or \
                (not src.is_float and not to.is_float and to.bits < src.bits):
            out.add((str(src), str(to)))
    return out


@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k.ir.funcs[0].sym_name)
def test_lowering_adds_no_lossy_operation(kernel):
    before, after = kernel.ir, I.lower(kernel, "cpu")
    count_before = collections.Counter(op.name for op in before.walk())
    count_after = collections.Counter(op.name for op in after.walk())
    for name in LOSSY:
        assert count_after[name] <= count_before[name], name
    assert _narrowing_casts(after) <= _narrowing_casts(before)


@pytest.mark.parametrize("kernel", [f32_matmul, f32_gemv_tree, f32_scaled_matvec],
                         ids=lambda k: k.ir.funcs[0].sym_name)
def test_f32_kernels_stay_f32(kernel):
    after = I.lower(kernel, "cpu")
    assert not {op.name for op in after.walk()} & {*LOSSY, "cast", "bitcast"}
    values = {str(_dtype(r)) for op in after.walk() for r in op.results
              if op.name not in ("dim", "constant", "cmp", "subview")}
    assert values <= {"f32", "index"}, values
    assert any(op.name in ("dot", "mul") for op in after.walk())


def test_f32_matmul_compiled_equals_interpreter():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((5, 70)).astype(np.float32)
    b = rng.standard_normal((70, 6)).astype(np.float32)
    got, want = np.zeros((5, 6), np.float32), np.zeros((5, 6), np.float32)
    I.compile(f32_matmul, "cpu")(a, b, got)
    I.interpret(f32_matmul, a, b, want)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
