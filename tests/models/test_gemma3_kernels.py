"""The Gemma 3 kernels: the CPU backend gives the interpreter's bits (1 and 2 threads),
and the values agree with the numpy reference within float32 rounding."""
import numpy as np
import pytest

import ninfer_ir as I
from ninfer_ir.models.gemma3 import kernels as K
from ninfer_ir.models.gemma3 import reference as R
from ninfer_ir.q4k import encode_q4k

RNG = np.random.default_rng(7)


def f32(*shape, s=1.0):
    return (RNG.standard_normal(shape) * s).astype(np.float32)


def run_both(kernel, args, outs, threads):
    """Run on the interpreter and the CPU; the output buffers (indices) must agree bit
    for bit; returns the interpreter's copies of all arguments."""
    want = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    I.interpret(kernel, *want)
    I.compile(kernel, target="cpu", threads=threads)(*got)
    for i in outs:
        assert np.array_equal(got[i].view(np.uint32), want[i].view(np.uint32)), \
            f"{kernel.name}: argument {i} differs from the interpreter"
    return want


def records(n, g, size):
    """Random Q5_0 / Q8_0 blocks with a small finite f16 scale d (bytes 0-1)."""
    w = RNG.integers(0, 256, (n, g, size), dtype=np.uint8)
    w[:, :, 0:2] = (RNG.standard_normal((n, g, 1)) * 1e-2).astype(np.float16).view(np.uint8)
    return w


def q6k_records(n, g):
    """Random Q6_K blocks: any ql/qh bytes and scales, a small finite f16 d (208-209)."""
    w = RNG.integers(0, 256, (n, g, 210), dtype=np.uint8)
    w[:, :, 208:210] = (RNG.standard_normal((n, g, 1)) * 1e-3).astype(np.float16).view(np.uint8)
    return w


CASES = {
    "rmsnorm_rows": lambda: ((f32(4, 64), f32(64), np.zeros((4, 64), np.float32),
                              np.float32(1e-6)), [2]),
    "add_rmsnorm": lambda: ((f32(64), f32(64, s=3), f32(64), np.zeros(64, np.float32),
                             np.float32(1e-6)), [0, 3]),
    "scale": lambda: ((f32(64), np.zeros(64, np.float32), np.float32(25.3)), [1]),
    "gemv_f32": lambda: ((f32(33, 64), f32(64), np.zeros(33, np.float32)), [2]),
    "gemv_q4k": lambda: ((encode_q4k(f32(9, 512, s=0.05)).reshape(9, 2, 144), f32(2, 256),
                          np.zeros(9, np.float32)), [2]),
    "gemv_q6k": lambda: ((q6k_records(9, 2), f32(2, 256), np.zeros(9, np.float32)), [2]),
    "gemv_q5_0": lambda: ((records(9, 3, 22), f32(3, 32), np.zeros(9, np.float32)), [2]),
    "gemv_q8_0": lambda: ((records(9, 3, 34), f32(3, 32), np.zeros(9, np.float32)), [2]),
    "rope_neox": lambda: ((f32(3, 2, 8), (10000.0 ** (-np.arange(0, 16, 2) / 16)).astype(
        np.float32), np.zeros((3, 2, 8), np.float32), np.float32(37), np.float32(0.25)), [2]),
    "attention": lambda: ((f32(4, 16), f32(12, 2, 16), f32(12, 2, 16),
                           np.zeros((4, 12), np.float32), np.zeros((4, 16), np.float32),
                           3, 11), [3, 4]),
    "gelu_gate": lambda: ((f32(50, s=3), f32(50), np.zeros(50, np.float32)), [2]),
}


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("name", sorted(CASES))
def test_cpu_is_bit_exact(name, threads):
    args, outs = CASES[name]()
    run_both(getattr(K, name), list(args), outs, threads)


def test_values_match_the_reference():
    """Against the numpy reference's formulas (float32 rounding differs: 1e-5)."""
    x, w = f32(4, 64), f32(64)
    y = np.zeros_like(x)
    I.interpret(K.rmsnorm_rows, x, w, y, np.float32(1e-6))
    np.testing.assert_allclose(y, R.rmsnorm(x, w, 1e-6), rtol=1e-5, atol=1e-5)

    g, u, out = f32(50, s=3), f32(50), np.zeros(50, np.float32)
    I.interpret(K.gelu_gate, g, u, out)
    np.testing.assert_allclose(out, R.gelu_tanh(g) * u, rtol=1e-5, atol=1e-6)

    q = f32(3, 16)
    inv = (10000.0 ** (-np.arange(0, 16, 2) / 16)).astype(np.float32)
    got = np.zeros_like(q)
    I.interpret(K.rope_neox, q.reshape(3, 2, 8), inv, got.reshape(3, 2, 8), np.float32(37),
                np.float32(1))
    cos, sin = R.rope_tables(np.array([37]), 16, 10000.0)
    np.testing.assert_allclose(got, R.rope_neox(q[None], cos, sin)[0], atol=1e-5)

    q, k, v = f32(4, 16), f32(12, 2, 16), f32(12, 2, 16)
    out, sc = np.zeros((4, 16), np.float32), np.zeros((4, 12), np.float32)
    I.interpret(K.attention, q, k, v, sc, out, 3, 11)
    kv = np.arange(4) // 2
    s = np.einsum("hd,shd->hs", q, k[3:11][:, kv])
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    np.testing.assert_allclose(out, np.einsum("hs,shd->hd", p, v[3:11][:, kv]), atol=1e-5)


@pytest.mark.parametrize("name", sorted(CASES))
def test_cuda_source_is_generated(name):
    """Without a GPU: the CUDA C of every kernel (the bits on a GPU: test_gemma3_tiny.py)."""
    src = I.emit(getattr(K, name), target="cuda", kind="cuda")
    assert f"{name}" in src and "__global__" in src
