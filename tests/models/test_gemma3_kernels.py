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
        assert np.array_equal(got[i].view(np.uint8), want[i].view(np.uint8)), \
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


Q4K, Q6K, Q50, Q80 = 12, 14, 6, 8          # ggml types


def weights(kind, n, k):
    """Random records of ggml type ``kind`` for an n x k matrix."""
    if kind == Q4K:
        return encode_q4k(f32(n, k, s=0.05)).reshape(n, k // 256, 144)
    if kind == Q6K:
        return q6k_records(n, k // 256)
    return records(n, k // 32, 22 if kind == Q50 else 34)


def zeros(*shape):
    return np.zeros(shape, np.float32)


EPS = np.float32(1e-6)
INV = (10000.0 ** (-np.arange(0, 8, 2) / 8)).astype(np.float32)
CASES = {
    "embed q8_0": lambda: (
        K.embed_kernel(I.formats.get("gguf_q8_0")),
        (np.int32([6, 0, 6]), weights(Q80, 7, 64).reshape(7, -1), zeros(3, 64),
         np.float32(25.3)), [2]),
    "embed q6_k": lambda: (
        K.embed_kernel(I.formats.get("gguf_q6_k")),
        (np.int32([1, 4]), weights(Q6K, 5, 256).reshape(5, -1), zeros(2, 256),
         np.float32(16.0)), [2]),
    "attn_in q5_0 q5_0 q8_0": lambda: (
        K.attn_in_kernel(Q50, Q50, Q80),
        (f32(3, 2, 32, s=3), f32(2, 32), weights(Q50, 8, 64), weights(Q50, 5, 64),
         weights(Q80, 5, 64), zeros(3, 2, 32), np.zeros((3, 2, 34), np.uint8), zeros(3, 8),
         zeros(3, 5), zeros(3, 5), EPS), [5, 6, 7, 8, 9]),
    "attn_in q4_k q6_k q4_k": lambda: (
        K.attn_in_kernel(Q4K, Q6K, Q4K),
        (f32(2, 2, 256), f32(2, 256), weights(Q4K, 9, 512), weights(Q6K, 3, 512),
         weights(Q4K, 3, 512), zeros(2, 2, 256), np.zeros((2, 2, 292), np.uint8),
         zeros(2, 9), zeros(2, 3), zeros(2, 3), EPS), [5, 6, 7, 8, 9]),
    "qk_rope": lambda: (
        K.qk_rope, (f32(2, 3, 2, 4), f32(2, 1, 2, 4), f32(2, 1, 8), f32(2, 4), f32(2, 4), INV,
                    zeros(2, 3, 2, 4), f32(40, 1, 2, 4), f32(40, 1, 8), 37,
                    np.float32(0.25), EPS), [6, 7, 8]),
    "attention": lambda: (
        K.attention, (f32(3, 4, 16), f32(12, 2, 16), f32(12, 2, 16), zeros(4, 12),
                      zeros(3, 4, 16), 8, 5), [3, 4]),
    "attn_out q4_k": lambda: (
        K.attn_out_kernel(Q4K),
        (f32(3, 2, 256), weights(Q4K, 40, 512), f32(40), f32(40), zeros(3, 40), f32(3, 40),
         zeros(3, 40), EPS), [4, 5, 6]),
    "gate_up q5_0": lambda: (
        K.gate_up_kernel(Q50, Q50),
        (f32(2, 2, 32), weights(Q50, 50, 64), weights(Q50, 50, 64), zeros(2, 50)), [3]),
    "ffn_out q6_k": lambda: (
        K.ffn_out_kernel(Q6K),
        (f32(3, 2, 256), weights(Q6K, 40, 512), f32(40), zeros(3, 40), f32(3, 40), EPS),
        [3, 4]),
    "logits q8_0": lambda: (
        K.logits_kernel(Q80),
        (f32(2, 32), f32(2, 32), weights(Q80, 70, 64), zeros(2, 32), zeros(70), EPS), [3, 4]),
}


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("name", sorted(CASES))
def test_cpu_is_bit_exact(name, threads):
    kernel, args, outs = CASES[name]()
    run_both(kernel, list(args), outs, threads)


def test_values_match_the_reference():
    """Against the numpy reference's formulas (float32 rounding differs: 1e-5); the
    quantized projections are checked on whole forward passes (test_gemma3_tiny.py)."""
    _, args, _ = CASES["attn_in q5_0 q5_0 q8_0"]()
    h, w = args[0], args[1]
    I.interpret(K.attn_in_kernel(Q50, Q50, Q80), *args)
    for m in range(3):
        np.testing.assert_allclose(args[5][m].reshape(-1),
                                   R.rmsnorm(h[m].reshape(-1), w.reshape(-1), 1e-6),
                                   rtol=1e-5, atol=1e-5)

    q, k, v, qn, kn = f32(2, 3, 8), f32(2, 1, 8), f32(2, 1, 8), f32(8), f32(8)
    qo, kc, vc = zeros(2, 3, 8), f32(40, 1, 8), f32(40, 1, 8)
    before = (kc.copy(), vc.copy())
    I.interpret(K.qk_rope, q.reshape(2, 3, 2, 4), k.reshape(2, 1, 2, 4), v, qn.reshape(2, 4),
                kn.reshape(2, 4), INV, qo.reshape(2, 3, 2, 4), kc.reshape(40, 1, 2, 4), vc,
                37, np.float32(0.25), EPS)
    ko, vo = kc[37:39], vc[37:39]
    for cache, old in zip((kc, vc), before):         # only positions 37 and 38 written
        assert np.array_equal(np.delete(cache, [37, 38], 0), np.delete(old, [37, 38], 0))
    cos, sin = R.rope_tables(np.array([37, 38]), 8, 10000.0)
    for m in range(2):
        c, s = cos[m:m + 1], sin[m:m + 1]
        np.testing.assert_allclose(qo[m], R.rope_neox(R.rmsnorm(q[m], qn, 1e-6)[None], c, s)[0]
                                   * 0.25, atol=1e-5)
        np.testing.assert_allclose(ko[m], R.rope_neox(R.rmsnorm(k[m], kn, 1e-6)[None], c, s)[0],
                                   atol=1e-5)
    assert np.array_equal(vo, v)

    # positions 8, 9, 10 with a window of 5: [4, 9), [5, 10), [6, 11)
    q, k, v = f32(3, 4, 16), f32(12, 2, 16), f32(12, 2, 16)
    out, sc = np.zeros((3, 4, 16), np.float32), np.zeros((4, 12), np.float32)
    I.interpret(K.attention, q, k, v, sc, out, 8, 5)
    kv = np.arange(4) // 2
    for m in range(3):
        lo, hi = 4 + m, 9 + m
        s = np.einsum("hd,shd->hs", q[m], k[lo:hi][:, kv])
        p = np.exp(s - s.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        np.testing.assert_allclose(out[m], np.einsum("hs,shd->hd", p, v[lo:hi][:, kv]),
                                   atol=1e-5)


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_embed_is_the_registry_decode_times_the_scale(target):
    """Each row: ``ninfer_ir.formats``' decode of the table row, times s in f32 (bits);
    an id outside the table is an I.DomainError."""
    fmt = I.formats.get("gguf_q8_0")
    table = weights(Q80, 7, 64).reshape(7, -1)
    ids, y, s = np.int32([6, 0, 6, 3]), zeros(4, 64), np.float32(25.3)
    run = I.compile(K.embed_kernel(fmt), target=target, threads=1)
    run(ids, table, y, s)
    want = fmt.decode(table[ids]) * s
    assert np.array_equal(y.view(np.uint32), want.view(np.uint32))
    for bad in (7, -1):
        with pytest.raises(I.DomainError, match="token id"):
            run(np.int32([0, bad, 1, 2]), table, y, s)


def test_mixed_activation_formats_are_refused():
    """q, k and v share one quantized activation: a mix of K-quants (Q8_K) and Q5_0
    (Q8_0) is a clear FormatError, as is a type without a quantized dot."""
    with pytest.raises(I.FormatError, match="different formats"):
        K.attn_in_kernel(Q4K, Q50, Q50)
    with pytest.raises(I.FormatError, match="ggml type 1 is not"):
        K.attn_out_kernel(1)
    with pytest.raises(I.FormatError, match="differ in type"):
        K.gate_up_kernel(Q50, Q80)


@pytest.mark.parametrize("name", sorted(CASES))
def test_cuda_source_is_generated(name):
    """Without a GPU: the CUDA C of every kernel, and its PTX compiled by NVRTC and
    checked exact (no approximate, fused or flush-to-zero instruction); the bits on a
    GPU: test_gemma3_tiny.py."""
    from ninfer_ir.backends.cuda import nvrtc
    kernel = CASES[name]()[0]
    src = I.emit(kernel, target="cuda", kind="cuda")
    assert kernel.name in src and "__global__" in src
    if "nvrtc" not in nvrtc.available_compilers():
        pytest.skip("NVRTC is not installed (the project's cuda extra)")
    ptx = I.emit(kernel, target="cuda", kind="ptx")
    assert ".entry" in ptx and "fma.rn" not in ptx and ".approx" not in ptx
