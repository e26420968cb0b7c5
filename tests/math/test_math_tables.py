"""Constant tables in the math library: a ``load`` from a ``constant_tensor`` at an index
masked into range by an integer ``and`` needs no bounds guard and leaves the loop
vectorizable on the CPU; any other index keeps its guard."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import ninfer_ir as I
from ninfer_ir.backends.clike.host import HostKernel

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import check_math  # noqa: E402

_LUT = """func @lut(%x: tensor<i64[N]>, %y: buffer<f64[N]>) {{
  %N = dim(%x) {{axis = 0}} : index
  %c0 = constant() {{value = 0}} : index
  %c1 = constant() {{value = 1}} : index
  %m = constant() {{value = {mask}}} : i64
  %t = constant_tensor() {{value = dense<f64[4] [1.5, -2.0, 0.25, 8.0]>}} : tensor<f64[4]>
  for(%c0, %N, %c1) ({{
  ^(%i: index):
    %v = load(%x, %i) : i64
    %j = and(%v, %m) : i64
    %k = cast(%j) {{to = index}} : index
    %e = load(%t, %k) : f64
    store(%e, %y, %i)
    yield()
  }})
  return()
}}
"""


def test_a_masked_table_index_is_unguarded_and_the_loop_vectorized():
    m = I.parse(_LUT.format(mask=3))
    x = np.arange(-50, 50, dtype=np.int64) * 7
    want = np.array([1.5, -2.0, 0.25, 8.0])[x & 3]
    k = I.compile(m, target="cpu", threads=1)
    got = np.empty(x.size)
    k(x, got)
    assert np.array_equal(got, want)
    host = np.empty(x.size)
    HostKernel(I.lower(m, "cuda"))(x, host)
    assert np.array_equal(host, want)
    assert "vector.body" in k.jit.optimized_ir()
    assert "!noalias" in k.llvm_ir() and "!alias.scope" in k.llvm_ir()


def test_an_index_the_mask_does_not_bound_keeps_its_guard():
    m = I.parse(_LUT.format(mask=7))             # 0..7 in a table of 4
    x = np.arange(8, dtype=np.int64)
    with pytest.raises(I.DomainError, match="index 4 is out of range"):
        I.compile(m, target="cpu", threads=1)(x, np.empty(8))


@pytest.mark.parametrize("fn", ["exp2", "exp", "log", "tanh", "sin"])
def test_the_math_loops_are_vectorized(fn):
    k = I.compile(check_math.kernel_module(fn), target="cpu", threads=1)
    ir = k.jit.optimized_ir()
    assert "vector.body" in ir
    assert "fptosi" not in ir and "fptoui" not in ir      # no conversion LLVM scalarises
