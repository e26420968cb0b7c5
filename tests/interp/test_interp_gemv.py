"""The Q4_K GEMV of docs/ir.md, at tensor level and lowered, against quantized_dot_rows."""

import numpy as np
import pytest

import ninfer_ir as I
from ninfer_ir.backends.interp import interpret
from ninfer_ir.numerics.quantized import quantize_q8k, quantized_dot_rows

from tests.passes.ir_kernels import GEMV as _GEMV_SEQ, GEMV_INNER  # noqa: E402

GEMV = _GEMV_SEQ.replace('order = "seq"', 'order = "ORDER"')
assert 'order = "ORDER"' in GEMV

# quantize inside the loop: the same values, but quantize runs once per row
UNHOISTED = GEMV_INNER.replace("@gemv_inner", "@q4k_gemv")

LOWERED = """func @gemv_lowered(%w: tensor<u8[N,G,144]>, %x: tensor<f32[G,256]>, %y: buffer<f32[N]>) {returns = 1} {
  %c0 = constant() {value = 0} : index
  %c1 = constant() {value = 1} : index
  %g = dim(%x) {axis = 0} : index
  %xq = alloc(%g) : buffer<u8[G,292]>
  quantize_into(%x, %xq) {format = #q8_k}
  %n_rows = dim(%w) {axis = 0} : index
  for(%c0, %n_rows, %c1) {parallel = true} ({
  ^(%n: index):
    %wn = subview(%w, %n) {axes = "i::"} : tensor<u8[G,144]>
    %r = quantized_dot(%wn, %xq) {acc_dtype = f32, lhs_format = #q4_k, order = "seq", rhs_format = #q8_k} : tensor<f32[]>
    %s = load(%r) : f32
    store(%s, %y, %n)
    yield()
  })
  dealloc(%xq)
  return()
}
"""


def inputs(n, g, seed=0):
    rng = np.random.default_rng(seed)
    w = rng.integers(0, 256, (n, g, 144), dtype=np.uint8)
    scales = rng.uniform(1e-3, 2e-2, (n, g, 2)).astype("<f2")
    w[..., 0:4] = scales.view(np.uint8).reshape(n, g, 4)
    x = (rng.standard_normal((g, 256)) * 2).astype(np.float32)
    return w, x


def reference(w, x, order="seq"):
    return quantized_dot_rows(w, quantize_q8k(x), order=order)


@pytest.mark.parametrize("n,g", [(1, 1), (7, 3), (64, 8), (5, 0), (0, 4)])
@pytest.mark.parametrize("order", ["seq", "tree", "chunk<2>/tree"])
def test_gemv_is_bit_exact(n, g, order):
    w, x = inputs(n, g, seed=n * 31 + g)
    w0, x0 = w.copy(), x.copy()
    y = np.full(n, np.nan, np.float32)
    assert interpret(I.parse(GEMV.replace("ORDER", order)), w, x, y) is None
    assert np.array_equal(y.view(np.uint32), reference(w, x, order).view(np.uint32))
    assert np.array_equal(w, w0) and np.array_equal(x.view(np.uint32), x0.view(np.uint32))


def test_lowered_gemv_equals_tensor_level():
    w, x = inputs(33, 5, seed=3)
    y = np.zeros(33, np.float32)
    interpret(I.parse(GEMV.replace("ORDER", "seq")), w, x, y)
    counters = {}
    out = interpret(I.parse(LOWERED), w, x, counters=counters)     # output allocated here
    assert np.array_equal(out.view(np.uint32), y.view(np.uint32))
    assert counters["quantize_into"] == 1 and counters["alloc"] == 1 == counters["dealloc"]


def test_counters_show_the_hoisted_quantize_runs_once():
    w, x = inputs(12, 2, seed=4)
    hoisted, unhoisted = {}, {}
    y1, y2 = np.zeros(12, np.float32), np.zeros(12, np.float32)
    interpret(I.parse(GEMV.replace("ORDER", "seq")), w, x, y1, counters=hoisted)
    interpret(I.parse(UNHOISTED), w, x, y2, counters=unhoisted)
    assert np.array_equal(y1.view(np.uint32), y2.view(np.uint32))
    assert hoisted["quantize"] == 1 and unhoisted["quantize"] == 12
    assert hoisted["quantized_dot"] == unhoisted["quantized_dot"] == 12
    assert hoisted["func"] == 1
    interpret(I.parse(GEMV.replace("ORDER", "seq")), w, x, y1, counters=hoisted)
    assert hoisted["quantize"] == 2 and hoisted["func"] == 2        # counts accumulate


def test_gemv_domain_error_leaves_output_untouched():
    w, x = inputs(4, 2, seed=5)
    x[1, 17] = np.nan
    y = np.full(4, 7.0, np.float32)
    with pytest.raises(I.DomainError, match="record 1"):
        interpret(I.parse(GEMV.replace("ORDER", "seq")), w, x, y)
    assert (y == 7.0).all()


def test_gemv_full_size():
    """A 4096-row GEMV (the size the benchmarks use) through the vectorised interpreter."""
    w, x = inputs(4096, 16, seed=6)
    y = np.zeros(4096, np.float32)
    module = I.parse(GEMV.replace("ORDER", "seq"))
    interpret(module, w, x, y)
    assert np.array_equal(y.view(np.uint32), reference(w, x).view(np.uint32))


def test_interpreted_kernel():
    from ninfer_ir.backends.interp.interpreter import InterpretedKernel
    module = I.parse(GEMV.replace("ORDER", "seq"))
    kernel = InterpretedKernel(module)
    w, x = inputs(9, 2, seed=7)
    y = np.zeros(9, np.float32)
    counters = {}
    assert kernel(w, x, y=y, counters=counters) is None
    assert np.array_equal(y.view(np.uint32), reference(w, x).view(np.uint32))
    assert counters["quantize"] == 1 and kernel.module is module and kernel.target == "interp"
