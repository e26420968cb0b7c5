"""The DSL kernels of the Gemma 3 forward pass.

Each is exact on every target (the interpreter defines the bits; the CPU backend
reproduces them at any thread count: the parallel loops are over independent rows).
Weights in Q4_K, Q6_K, Q5_0 and Q8_0 are consumed as stored (``I.quantized_dot`` against
the activation quantized in the kernel, to Q8_K or Q8_0, as llama.cpp does);
``gemv_f32`` serves weights in any other format, decoded to float32 by
``ninfer_ir.formats``.
"""
from __future__ import annotations

import ninfer_ir as I

GELU_C = 0.7978845608028654          # sqrt(2 / pi)


@I.func
def rmsnorm_into(x: I.Tensor[I.f32, "D"], w: I.Tensor[I.f32, "D"], y: I.Buffer[I.f32, "D"],
                 eps: I.f32):
    ms = I.sum(x * x) / I.cast(x.shape[0], I.f32)
    y[:] = x * I.rsqrt(ms + eps) * w


@I.kernel
def rmsnorm_rows(x: I.Tensor[I.f32, "R", "D"], w: I.Tensor[I.f32, "D"],
                 y: I.Buffer[I.f32, "R", "D"], eps: I.f32):
    """y[r] = x[r] / sqrt(mean(x[r]^2) + eps) * w, every row (the q and k heads too)."""
    for r in I.range(x.shape[0]):
        rmsnorm_into(x[r], w, y[r], eps)


@I.kernel
def add_rmsnorm(h: I.Buffer[I.f32, "D"], x: I.Tensor[I.f32, "D"], w: I.Tensor[I.f32, "D"],
                y: I.Buffer[I.f32, "D"], eps: I.f32):
    """The residual step after attention or the FFN: y = rmsnorm(x) * w; h += y."""
    rmsnorm_into(x, w, y, eps)
    h += y


@I.kernel
def scale(x: I.Tensor[I.f32, "D"], y: I.Buffer[I.f32, "D"], s: I.f32):
    """y = x * s (the embedding row times sqrt(width))."""
    y[:] = x * s


@I.kernel
def gemv_f32(w: I.Tensor[I.f32, "N", "K"], x: I.Tensor[I.f32, "K"], y: I.Buffer[I.f32, "N"]):
    """y = W x, one dot per row, rows in parallel; each dot sums chunks of 16 products
    in order, then the chunks in order (faster on the CPU than one running sum)."""
    for n in I.prange(w.shape[0]):
        y[n] = I.dot(w[n], x, order="chunk<16>")


@I.kernel
def gemv_q4k(w: I.Tensor[I.u8, "N", "G", 144], x: I.Tensor[I.f32, "G", 256],
             y: I.Buffer[I.f32, "N"]):
    """y = W x with W in Q4_K records as stored and x quantized once to Q8_K."""
    xq = I.quantize(x, format=I.quant.q8_k)
    for n in I.prange(w.shape[0]):
        y[n] = I.quantized_dot(w[n], xq, lhs_format=I.quant.q4_k, rhs_format=I.quant.q8_k,
                               acc_dtype=I.f32)


@I.kernel
def gemv_q6k(w: I.Tensor[I.u8, "N", "G", 210], x: I.Tensor[I.f32, "G", 256],
             y: I.Buffer[I.f32, "N"]):
    """y = W x with W in Q6_K records as stored and x quantized once to Q8_K."""
    xq = I.quantize(x, format=I.quant.q8_k)
    for n in I.prange(w.shape[0]):
        y[n] = I.quantized_dot(w[n], xq, lhs_format=I.quant.q6_k, rhs_format=I.quant.q8_k,
                               acc_dtype=I.f32)


@I.kernel
def gemv_q5_0(w: I.Tensor[I.u8, "N", "G", 22], x: I.Tensor[I.f32, "G", 32],
              y: I.Buffer[I.f32, "N"]):
    """y = W x with W in Q5_0 records as stored and x quantized once to Q8_0."""
    xq = I.quantize(x, format=I.quant.q8_0)
    for n in I.prange(w.shape[0]):
        y[n] = I.quantized_dot(w[n], xq, lhs_format=I.quant.q5_0, rhs_format=I.quant.q8_0,
                               acc_dtype=I.f32)


@I.kernel
def gemv_q8_0(w: I.Tensor[I.u8, "N", "G", 34], x: I.Tensor[I.f32, "G", 32],
              y: I.Buffer[I.f32, "N"]):
    """y = W x with W in Q8_0 records as stored and x quantized once to Q8_0."""
    xq = I.quantize(x, format=I.quant.q8_0)
    for n in I.prange(w.shape[0]):
        y[n] = I.quantized_dot(w[n], xq, lhs_format=I.quant.q8_0, rhs_format=I.quant.q8_0,
                               acc_dtype=I.f32)


@I.kernel
def rope_neox(x: I.Tensor[I.f32, "H", 2, "P"], inv_freq: I.Tensor[I.f32, "P"],
              y: I.Buffer[I.f32, "H", 2, "P"], pos: I.f32, scale_by: I.f32):
    """Rotate the pairs (i, i + D/2) of every head (a head of D values seen as
    ``[2, D/2]``) by the angle pos * inv_freq[i], then multiply by ``scale_by`` (the
    query scale; 1 for keys)."""
    angle = inv_freq * pos
    c = I.cos(angle)
    s = I.sin(angle)
    for h in I.range(x.shape[0]):
        a = x[h, 0]
        b = x[h, 1]
        y[h, 0] = (a * c - b * s) * scale_by
        y[h, 1] = (a * s + b * c) * scale_by


@I.kernel
def attention(q: I.Tensor[I.f32, "H", "D"], k: I.Tensor[I.f32, "S", "KV", "D"],
              v: I.Tensor[I.f32, "S", "KV", "D"], scores: I.Buffer[I.f32, "H", "S"],
              out: I.Buffer[I.f32, "H", "D"], start: I.index, stop: I.index):
    """Causal attention of one query position over cache positions [start, stop):
    softmax of q.k (q is pre-scaled), weighted sum of v; head h reads KV head
    h // (H / KV)."""
    group = q.shape[0] // k.shape[1]
    for h in I.prange(q.shape[0]):
        kv = h // group
        best: I.f32 = -3.0e38
        for s in I.range(start, stop):
            e = I.dot(q[h], k[s, kv])
            scores[h, s] = e
            best = I.maximum(best, e)
        total: I.f32 = 0.0
        for s in I.range(start, stop):
            p = I.exp(scores[h, s] - best)
            scores[h, s] = p
            total += p
        row = out[h]
        row[:] = v[start, kv] * scores[h, start]
        for s in I.range(start + 1, stop):
            row += v[s, kv] * scores[h, s]
        row[:] = row / total


@I.kernel
def gelu_gate(g: I.Tensor[I.f32, "F"], u: I.Tensor[I.f32, "F"], y: I.Buffer[I.f32, "F"]):
    """y = gelu_tanh(g) * u."""
    t = I.tanh((g + g * g * g * 0.044715) * GELU_C)
    y[:] = g * 0.5 * (t + 1.0) * u
