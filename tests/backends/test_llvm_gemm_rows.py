"""A GEMM's inner row loop (``y[m, n] = dot(w[n], xq)``, leading index fixed) takes the
rows kernel too, and stays bit-exact for any layout of y."""
import numpy as np
import pytest

import ninfer_ir as I
from tests.kernels import KERNELS


def _inputs(rng, n, g, m):
    w = rng.integers(0, 256, (n, g, 144), dtype=np.uint8)
    w[:, :, 0:4] = (rng.standard_normal((n, g, 2)) * 1e-3).astype(np.float16) \
        .view(np.uint8).reshape(n, g, 4)
    return w, rng.standard_normal((m, g, 256)).astype(np.float32)


def test_gemm_inner_loop_calls_the_rows_kernel():
    text = I.emit(KERNELS["q4k_gemm"].kernel, target="cpu", kind="llvm")
    assert "call void @\"ninfer_q4k_q8k_dot_rows\"" in text or "ninfer_q4k_q8k_dot_rows(" in text


@pytest.mark.parametrize("layout", ["c", "transposed", "every_other_column"])
@pytest.mark.parametrize("threads", [1, 2])
def test_gemm_rows_are_exact_for_any_y_layout(layout, threads):
    kernel = KERNELS["q4k_gemm"].kernel
    rng = np.random.default_rng(7)
    w, x = _inputs(rng, 300, 3, 5)
    want = np.zeros((5, 300), np.float32)
    I.interpret(kernel, w, x, want)
    if layout == "c":
        y = np.zeros((5, 300), np.float32)
    elif layout == "transposed":
        y = np.zeros((300, 5), np.float32).T
    else:
        y = np.zeros((5, 600), np.float32)[:, ::2]
    I.compile(kernel, target="cpu", threads=threads)(w, x, y)
    assert np.array_equal(y.view(np.uint32), want.view(np.uint32))
