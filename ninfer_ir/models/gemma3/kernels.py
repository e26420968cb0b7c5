"""The DSL kernels of the Gemma 3 forward pass.

Each is exact on every target (the interpreter defines the bits; the CPU backend
reproduces them at any thread count: the parallel loops are over independent rows).
Weights in Q4_K, Q6_K, Q5_0 and Q8_0 are consumed as stored (``I.quantized_dot``
against the activation quantized in the kernel, to Q8_K or Q8_0, as llama.cpp does).

Every kernel takes M rows, one per token (a generated token alone, or a prompt's
tokens together); the projections are nests over the rows in the form the select pass
turns into a GEMM kernel where the target has one for the pair, and into rows kernels
otherwise. A batch starts with ``embed`` (the tokens' embedding rows decoded from the
table as stored, times sqrt(width)); a layer is six kernel calls, each one step of the
model:

* ``attn_in``: the attention norm, the activation quantized once per row, the q, k and
  v projections;
* ``qk_rope``: the q and k head norms, RoPE (and the query scale), k and v written into
  the cache at the positions;
* ``attention``: causal attention of each row's position over the cache;
* ``attn_out``: the output projection, the post-attention norm and residual, the FFN norm;
* ``gate_up``: the gate and up projections (the activation quantized once) with the
  GELU gating, all in one row loop;
* ``ffn_out``: the down projection, the post-FFN norm and residual.

The FFN takes two calls because the gating writes the FFN vector row by row while the
down projection quantizes it as blocks (``[F / 256, 256]`` for the K-quants), and a
kernel sees each argument in one shape.

The projection kernels are made per weight format (``SCHEMES``: a ggml type's record
format, the activation format of its quantized dot, the record bytes and values) by
the ``*_kernel`` functions, once per combination.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import ninfer_ir as I

GELU_C = 0.7978845608028654          # sqrt(2 / pi)


@dataclass(frozen=True)
class Scheme:
    """How a weight matrix of one ggml type is multiplied as stored."""
    name: str
    weight: object                   # its record format (I.quant.*)
    act: object                      # the format the activation is quantized to
    record: int                      # bytes per weight record
    block: int                       # values per record (and per activation record)
    act_record: int                  # bytes per activation record


SCHEMES = {12: Scheme("Q4_K", I.quant.q4_k, I.quant.q8_k, 144, 256, 292),
           14: Scheme("Q6_K", I.quant.q6_k, I.quant.q8_k, 210, 256, 292),
           6: Scheme("Q5_0", I.quant.q5_0, I.quant.q8_0, 22, 32, 34),
           8: Scheme("Q8_0", I.quant.q8_0, I.quant.q8_0, 34, 32, 34)}


@I.func
def rmsnorm_into(x: I.Tensor[I.f32, "D"], w: I.Tensor[I.f32, "D"], y: I.Buffer[I.f32, "D"],
                 eps: I.f32):
    ms = I.sum(x * x, order="tree") / I.cast(x.shape[0], I.f32)
    y[:] = x * I.rsqrt(ms + eps) * w


@I.func
def rmsnorm_blocks(x: I.Tensor[I.f32, "G", "B"], w: I.Tensor[I.f32, "G", "B"],
                   y: I.Buffer[I.f32, "G", "B"], eps: I.f32):
    """rmsnorm_into on a vector seen as [G, B] (the shape its quantization reads)."""
    ms = I.sum(I.sum(x * x, order="tree")) / I.cast(x.shape[0] * x.shape[1], I.f32)
    y[:] = x * I.rsqrt(ms + eps) * w


@I.func
def add_normed(h: I.Buffer[I.f32, "D"], y: I.Tensor[I.f32, "D"], w: I.Tensor[I.f32, "D"],
               eps: I.f32):
    """The residual step: h += rmsnorm(y) * w."""
    ms = I.sum(y * y, order="tree") / I.cast(y.shape[0], I.f32)
    h += y * I.rsqrt(ms + eps) * w


@I.func
def norm_rope(x: I.Tensor[I.f32, 2, "P"], w: I.Tensor[I.f32, 2, "P"], c: I.Tensor[I.f32, "P"],
              s: I.Tensor[I.f32, "P"], y: I.Buffer[I.f32, 2, "P"], scale_by: I.f32,
              eps: I.f32):
    """One head (D values seen as [2, D/2]): y = rope(rmsnorm(x) * w) * scale_by, the
    pairs (i, i + D/2) rotated by the angles whose cosines and sines are c and s."""
    r = I.rsqrt(I.sum(I.sum(x * x, order="tree")) / I.cast(2 * x.shape[1], I.f32) + eps)
    a = x[0] * r * w[0]
    b = x[1] * r * w[1]
    y[0] = (a * c - b * s) * scale_by
    y[1] = (a * s + b * c) * scale_by


@I.kernel
def qk_rope(q: I.Tensor[I.f32, "M", "H", 2, "P"], k: I.Tensor[I.f32, "M", "KV", 2, "P"],
            v: I.Tensor[I.f32, "M", "KV", "D"], q_norm: I.Tensor[I.f32, 2, "P"],
            k_norm: I.Tensor[I.f32, 2, "P"], inv_freq: I.Tensor[I.f32, "P"],
            q_out: I.Buffer[I.f32, "M", "H", 2, "P"],
            k_cache: I.Buffer[I.f32, "S", "KV", 2, "P"], v_cache: I.Buffer[I.f32, "S", "KV", "D"],
            pos: I.index, q_scale: I.f32, eps: I.f32):
    """The head norms and RoPE of q (times the query scale) and k of the positions
    ``pos + m``; k and v stored into the cache at those positions."""
    for m in I.range(q.shape[0]):
        angle = inv_freq * I.cast(pos + m, I.f32)
        c = I.cos(angle)
        s = I.sin(angle)
        for h in I.range(q.shape[1]):
            norm_rope(q[m, h], q_norm, c, s, q_out[m, h], q_scale, eps)
        for h in I.range(k.shape[1]):
            norm_rope(k[m, h], k_norm, c, s, k_cache[pos + m, h], 1.0, eps)
        v_cache[pos + m] = v[m]


@I.kernel
def attention(q: I.Tensor[I.f32, "M", "H", "D"], k: I.Tensor[I.f32, "S", "KV", "D"],
              v: I.Tensor[I.f32, "S", "KV", "D"], scores: I.Buffer[I.f32, "H", "S"],
              out: I.Buffer[I.f32, "M", "H", "D"], pos: I.index, window: I.index):
    """Causal attention of the query positions ``pos + m`` over the cache: position p
    attends to [max(0, p + 1 - window), p + 1). Softmax of q.k (q is pre-scaled; the
    dots summed as a tree, on vector lanes), weighted sum of v; head h reads KV head
    h // (H / KV). The heads run one after the other: at the context lengths of
    generation a head is a few microseconds of work, less than handing it to another
    thread costs."""
    group = q.shape[1] // k.shape[1]
    for m in I.range(q.shape[0]):
        stop = pos + m + 1
        start = I.maximum(stop - window, 0)
        for h in I.range(q.shape[1]):
            kv = h // group
            best: I.f32 = -3.0e38
            for s in I.range(start, stop):
                e = I.dot(q[m, h], k[s, kv], order="tree")
                scores[h, s] = e
                best = I.maximum(best, e)
            total: I.f32 = 0.0
            for s in I.range(start, stop):
                p = I.exp(scores[h, s] - best)
                scores[h, s] = p
                total += p
            row = out[m, h]
            row[:] = v[start, kv] * scores[h, start]
            for s in I.range(start + 1, stop):
                row += v[s, kv] * scores[h, s]
            row[:] = row / total


def activation_scheme(types, what: str) -> Scheme:
    """The one scheme whose activation format serves all of ``types`` (ggml types of
    matrices that multiply the same vector), or ``I.FormatError``."""
    schemes = []
    for t in types:
        if t not in SCHEMES:
            raise I.FormatError(f"{what}: ggml type {t} is not one the kernels read as "
                                f"stored ({', '.join(s.name for s in SCHEMES.values())})")
        schemes.append(SCHEMES[t])
    if len({(s.act.name, s.block) for s in schemes}) != 1:
        raise I.FormatError(f"{what}: {', '.join(s.name for s in schemes)} multiply "
                            f"activations quantized to different formats")
    return schemes[0]


@lru_cache(maxsize=None)
def embed_kernel(fmt):
    """``embed`` for a token embedding stored in the GGUF block format ``fmt`` (a
    ``ninfer_ir.formats`` record, ``gguf_*``)."""

    @I.kernel
    def embed(ids: I.Tensor[I.i32, "M"], table: I.Tensor[I.u8, "V", "R"],
              y: I.Buffer[I.f32, "M", "D"], s: I.f32):
        """y[m] = row ids[m] of the table, decoded, times s (sqrt(width))."""
        for m in I.range(ids.shape[0]):
            t = I.cast(ids[m], I.index)
            assert t >= 0, "token id below 0"
            assert t < table.shape[0], "token id beyond the vocabulary"
            y[m] = I.decode(table[t], format=fmt, k=y.shape[1]) * s
    return embed


@lru_cache(maxsize=None)
def attn_in_kernel(tq: int, tk: int, tv: int):
    """``attn_in`` for q, k, v weights of ggml types tq, tk, tv (one activation format)."""
    sq, sk, sv = SCHEMES[tq], SCHEMES[tk], SCHEMES[tv]
    act_s = activation_scheme((tq, tk, tv), "q, k, v")
    act, blk, arec = act_s.act, act_s.block, act_s.act_record
    fq, fk, fv, rq, rk, rv = sq.weight, sk.weight, sv.weight, sq.record, sk.record, sv.record

    @I.kernel
    def attn_in(h: I.Tensor[I.f32, "M", "G", blk], norm: I.Tensor[I.f32, "G", blk],
                wq: I.Tensor[I.u8, "Q", "G", rq], wk: I.Tensor[I.u8, "N", "G", rk],
                wv: I.Tensor[I.u8, "N", "G", rv], x: I.Buffer[I.f32, "M", "G", blk],
                xq: I.Buffer[I.u8, "M", "G", arec], q: I.Buffer[I.f32, "M", "Q"],
                k: I.Buffer[I.f32, "M", "N"], v: I.Buffer[I.f32, "M", "N"], eps: I.f32):
        """x = rmsnorm(h) * norm, quantized once into xq; q = Wq x, k = Wk x, v = Wv x
        (each a GEMM nest over the rows m)."""
        for m in I.range(h.shape[0]):
            rmsnorm_blocks(h[m], norm, x[m], eps)
            xq[m] = I.quantize(x[m], format=act)
        for m in I.range(h.shape[0]):
            for n in I.prange(wq.shape[0]):
                q[m, n] = I.quantized_dot(wq[n], xq[m], lhs_format=fq, rhs_format=act,
                                          acc_dtype=I.f32)
        for m in I.range(h.shape[0]):
            for n in I.prange(wk.shape[0]):
                k[m, n] = I.quantized_dot(wk[n], xq[m], lhs_format=fk, rhs_format=act,
                                          acc_dtype=I.f32)
        for m in I.range(h.shape[0]):
            for n in I.prange(wv.shape[0]):
                v[m, n] = I.quantized_dot(wv[n], xq[m], lhs_format=fv, rhs_format=act,
                                          acc_dtype=I.f32)
    return attn_in


@lru_cache(maxsize=None)
def projection(fmt, act):
    """``project(a, w, y)``: y[m] = W a[m] for every row m of ``a``, each row quantized
    once to ``act`` and multiplied by the ``fmt`` records of ``w`` as stored (a GEMM nest,
    the form the select pass gives to a GEMM kernel)."""

    @I.func
    def project(a: I.Tensor[I.f32, "M", "G", "B"], w: I.Tensor[I.u8, "N", "G", "R"],
                y: I.Buffer[I.f32, "M", "N"]):
        for m in I.range(a.shape[0]):
            aq = I.quantize(a[m], format=act)
            for n in I.prange(w.shape[0]):
                y[m, n] = I.quantized_dot(w[n], aq, lhs_format=fmt, rhs_format=act,
                                          acc_dtype=I.f32)
    return project


@lru_cache(maxsize=None)
def attn_out_kernel(to: int):
    """``attn_out`` for an output projection of ggml type ``to``."""
    so = activation_scheme((to,), "attn_output")
    blk, rec, project = so.block, so.record, projection(so.weight, so.act)

    @I.kernel
    def attn_out(a: I.Tensor[I.f32, "M", "G", blk], w: I.Tensor[I.u8, "N", "G", rec],
                 post: I.Tensor[I.f32, "N"], norm: I.Tensor[I.f32, "N"],
                 y: I.Buffer[I.f32, "M", "N"], h: I.Buffer[I.f32, "M", "N"],
                 x: I.Buffer[I.f32, "M", "N"], eps: I.f32):
        """y = Wo a (a GEMM nest); h += rmsnorm(y) * post; x = rmsnorm(h) * norm."""
        project(a, w, y)
        for m in I.range(a.shape[0]):
            add_normed(h[m], y[m], post, eps)
            rmsnorm_into(h[m], norm, x[m], eps)
    return attn_out


@lru_cache(maxsize=None)
def gate_up_kernel(tg: int, tu: int):
    """``gate_up`` for gate and up weights of one ggml type."""
    if tg != tu:
        raise I.FormatError(f"ffn_gate (ggml type {tg}) and ffn_up (ggml type {tu}) "
                            f"differ in type")
    sg = activation_scheme((tg, tu), "ffn_gate, ffn_up")
    act, blk, fmt, rec = sg.act, sg.block, sg.weight, sg.record

    @I.kernel
    def gate_up(x: I.Tensor[I.f32, "M", "G", blk], wg: I.Tensor[I.u8, "F", "G", rec],
                wu: I.Tensor[I.u8, "F", "G", rec], f: I.Buffer[I.f32, "M", "F"]):
        """f = gelu_tanh(Wg x) * (Wu x): each row of x quantized once, both dots in one
        row loop and the gating as its epilogue."""
        for m in I.range(x.shape[0]):
            xq = I.quantize(x[m], format=act)
            for n in I.prange(wg.shape[0]):
                g = I.quantized_dot(wg[n], xq, lhs_format=fmt, rhs_format=act,
                                    acc_dtype=I.f32)
                u = I.quantized_dot(wu[n], xq, lhs_format=fmt, rhs_format=act,
                                    acc_dtype=I.f32)
                t = I.tanh((g + g * g * g * 0.044715) * GELU_C)
                f[m, n] = g * 0.5 * (t + 1.0) * u
    return gate_up


@lru_cache(maxsize=None)
def ffn_out_kernel(td: int):
    """``ffn_out`` for a down projection of ggml type ``td``."""
    sd = activation_scheme((td,), "ffn_down")
    blk, rec, project = sd.block, sd.record, projection(sd.weight, sd.act)

    @I.kernel
    def ffn_out(f: I.Tensor[I.f32, "M", "G", blk], w: I.Tensor[I.u8, "N", "G", rec],
                post: I.Tensor[I.f32, "N"], y: I.Buffer[I.f32, "M", "N"],
                h: I.Buffer[I.f32, "M", "N"], eps: I.f32):
        """y = Wd f (a GEMM nest); h += rmsnorm(y) * post."""
        project(f, w, y)
        for m in I.range(f.shape[0]):
            add_normed(h[m], y[m], post, eps)
    return ffn_out


@lru_cache(maxsize=None)
def logits_kernel(te: int):
    """``logits`` for an output projection (the tied embedding) of ggml type ``te``."""
    se = activation_scheme((te,), "output")
    act, blk, fmt, rec = se.act, se.block, se.weight, se.record

    @I.kernel
    def logits(h: I.Tensor[I.f32, "G", blk], norm: I.Tensor[I.f32, "G", blk],
               w: I.Tensor[I.u8, "V", "G", rec], x: I.Buffer[I.f32, "G", blk],
               out: I.Buffer[I.f32, "V"], eps: I.f32):
        """out = W (rmsnorm(h) * norm), the activation quantized once."""
        rmsnorm_blocks(h, norm, x, eps)
        xq = I.quantize(x, format=act)
        for n in I.prange(w.shape[0]):
            out[n] = I.quantized_dot(w[n], xq, lhs_format=fmt, rhs_format=act,
                                     acc_dtype=I.f32)
    return logits
