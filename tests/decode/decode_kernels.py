"""The decode GEMV kernels of the decode tests: one per grouped format, and variants.

Each ``<fmt>_gemv`` is ``y[n] = dot(decode(p[n], s[n], k=K), x)`` in the ``seq`` order,
the form the CPU backend runs a row per SIMD lane; ``GEMV`` maps format names to them.
"""
import numpy as np

import ninfer_ir as I

Q2 = I.formats.get("q2_g64_fp16")
Q4 = I.formats.get("q4_g64_fp16")
Q5 = I.formats.get("q5_g64_fp16")
Q6 = I.formats.get("q6_g64_fp16")
Q8 = I.formats.get("q8_g32_fp16")
T2 = I.formats.get("t2_g128_fp16")


@I.kernel
def q4_gemv(p: I.Tensor[I.u8, "N", "P"], s: I.Tensor[I.f16, "N", "S"],
            x: I.Tensor[I.f32, "K"], y: I.Buffer[I.f32, "N"]):
    for n in I.range(p.shape[0]):
        w = I.decode(p[n], s[n], format=Q4, k=x.shape[0])
        y[n] = I.dot(w, x)


def decode_gemv(fmt):
    """The GEMV ``y[n] = dot(decode(p[n], s[n]), x)`` for grouped format ``fmt``."""
    @I.kernel
    def gemv(p: I.Tensor[I.u8, "N", "P"], s: I.Tensor[I.f16, "N", "S"],
             x: I.Tensor[I.f32, "K"], y: I.Buffer[I.f32, "N"]):
        for n in I.range(p.shape[0]):
            y[n] = I.dot(I.decode(p[n], s[n], format=fmt, k=x.shape[0]), x)
    return gemv


GEMV = {fmt.name: decode_gemv(fmt) for fmt in (Q2, Q5, Q6, Q8, T2)}
GEMV["q4_g64_fp16"] = q4_gemv


@I.kernel
def q4_gemv_xw(p: I.Tensor[I.u8, "N", "P"], s: I.Tensor[I.f16, "N", "S"],
               x: I.Tensor[I.f32, "K"], y: I.Buffer[I.f32, "N"]):
    for n in I.prange(p.shape[0]):
        y[n] = I.dot(x, I.decode(p[n], s[n], format=Q4, k=x.shape[0]))


@I.kernel
def q4_gemv_tree(p: I.Tensor[I.u8, "N", "P"], s: I.Tensor[I.f16, "N", "S"],
                 x: I.Tensor[I.f32, "K"], y: I.Buffer[I.f32, "N"]):
    for n in I.range(p.shape[0]):
        w = I.decode(p[n], s[n], format=Q4, k=x.shape[0])
        y[n] = I.dot(w, x, order="chunk<64>/tree")


@I.kernel
def q4_gemv_pairs(p: I.Tensor[I.u8, "N", "P"], s: I.Tensor[I.f16, "N", "S"],
                  x: I.Tensor[I.f32, "K"], y: I.Buffer[I.f32, "N"]):
    for n in I.range(p.shape[0]):
        w = I.decode(p[n], s[n], format=Q4, k=x.shape[0])
        y[n] = I.dot(w, x, order="tree")


@I.kernel
def q4_gemv_shift_mask(p: I.Tensor[I.u8, "N", "P"], s: I.Tensor[I.f16, "N", "S"],
                       x: I.Tensor[I.f32, "K"], y: I.Buffer[I.f32, "N"]):
    """The q4_g64_fp16 decode written out: nibble k%2 of byte k//2, two's complement,
    times the group's scale; the sum starts at -0.0 like a seq dot."""
    for n in I.range(p.shape[0]):
        acc: I.f32 = -0.0
        for k in I.range(x.shape[0]):
            byte = p[n, k // 2]
            word = (byte >> I.cast((k % 2) * 4, I.u8)) & 15
            code = I.cast(word ^ 8, I.i32) - 8
            w = I.cast(s[n, k // 64], I.f32) * I.cast(code, I.f32)
            acc = acc + w * x[k]
        y[n] = acc


def packed_inputs(fmt, n, k, rng, *, scale_kinds="normal"):
    """Random packed rows (every word, legal or not, with zero padding bits), f16 scales
    (normal, tiny and subnormal, negative and signed zeros) and x."""
    nbytes = -(-k * fmt.bits // 8)
    p = rng.integers(0, 256, size=(n, nbytes), dtype=np.uint8)
    spare = nbytes * 8 - k * fmt.bits
    if spare:
        p[:, -1] &= np.uint8((1 << (8 - spare)) - 1)
    groups = -(-k // fmt.group)
    s = (rng.standard_normal((n, groups)) * 0.05).astype(np.float16)
    if scale_kinds == "all":
        pick = rng.integers(0, 5, size=s.shape)
        s[pick == 1] = np.float16(6e-8) * rng.integers(1, 1023, size=int((pick == 1).sum()))
        s[pick == 2] = -s[pick == 2]
        s[pick == 3] = np.float16(-0.0)
        s[pick == 4] = np.float16(0.0)
    x = rng.standard_normal(k).astype(np.float32)
    return p, s, x


def compile_cpu(kernel, threads=None):
    return I.compile(kernel, target="cpu", threads=threads)


def same_bits(got, want) -> bool:
    got, want = np.ascontiguousarray(got), np.ascontiguousarray(want)
    return got.dtype == want.dtype and got.shape == want.shape and \
        np.array_equal(got.view(np.uint8), want.view(np.uint8))
