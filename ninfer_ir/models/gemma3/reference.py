"""The numpy reference forward pass of Gemma 3, in float32, with a KV cache.

Weights are decoded with the ``ninfer_ir.formats`` decoders (the same values the
kernels consume) and kept as float32 after first use; the token embedding is decoded
whole on the first output projection (the output is tied to it). This pins the model's
semantics down; it is what llama.cpp is compared with and what the kernel forward
pass (``forward.py``) is compared with. Per layer, as llama.cpp's Gemma 3 graph:

    x = rmsnorm(h) * attn_norm
    q, k, v = Wq x, Wk x, Wv x                 per head: q, k = rmsnorm(q) * q_norm, ...
    q, k = rope(q), rope(k)                    NEOX pairs (i, i + D/2); base per layer
    a = softmax(q k^T * D^-0.5 over the visible cache) v
    h += rmsnorm(Wo a) * post_attention_norm
    x = rmsnorm(h) * ffn_norm
    h += rmsnorm(Wdown (gelu_tanh(Wgate x) * Wup x)) * post_ffw_norm

with ``h`` starting as ``embedding * sqrt(width)`` and the logits ``E rmsnorm(h) *
output_norm`` (``E`` the token embedding unless the file has ``output.weight``).
"""
from __future__ import annotations

import numpy as np

from .config import Gemma3Config

F32 = np.float32


def rmsnorm(x: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    ms = np.mean(x * x, axis=-1, keepdims=True, dtype=F32)
    return (x / np.sqrt(ms + F32(eps))) * w


def gelu_tanh(x: np.ndarray) -> np.ndarray:
    c = F32(np.sqrt(2.0 / np.pi))
    return F32(0.5) * x * (F32(1) + np.tanh(c * (x + F32(0.044715) * x * x * x)))


def rope_tables(positions: np.ndarray, dim: int, base: float) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin, f32 ``[T, dim/2]``: angle ``p * base^(-2i/dim)``."""
    inv = base ** (-np.arange(0, dim, 2, dtype=np.float64) / dim)
    ang = positions.astype(np.float64)[:, None] * inv[None, :]
    return np.cos(ang).astype(F32), np.sin(ang).astype(F32)


def rope_neox(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """Rotate pairs (i, i + D/2) of ``x`` ``[T, H, D]``."""
    half = x.shape[-1] // 2
    a, b = x[..., :half], x[..., half:]
    c, s = cos[:, None, :], sin[:, None, :]
    return np.concatenate([a * c - b * s, a * s + b * c], axis=-1)


def _decode_in_chunks(t, values_per_chunk: int = 1 << 22) -> np.ndarray:
    """``t.decode()`` into one float32 array, a few MB at a time (the decoders'
    temporaries stay small next to the 671 MB of the decoded token embedding)."""
    if len(t.shape) == 1:
        return t.decode()
    out = np.empty(t.shape, F32)
    step = max(1, values_per_chunk // t.shape[-1])
    for r in range(0, t.shape[0], step):
        out[r:r + step] = t.decode(rows=slice(r, r + step))
    return out


class Weights:
    """The GGUF's tensors decoded to float32 on first use, by name."""

    def __init__(self, gguf):
        self.gguf, self._cache = gguf, {}

    def __call__(self, name: str) -> np.ndarray:
        if name not in self._cache:
            t = self.gguf.tensors.get(name)
            if t is None:
                raise KeyError(f"{self.gguf.path}: no tensor {name!r}")
            self._cache[name] = _decode_in_chunks(t)
        return self._cache[name]

    def rows(self, name: str, ids) -> np.ndarray:
        """Rows ``ids`` of a matrix, decoded (without decoding the rest)."""
        t = self.gguf.tensors[name]
        return np.concatenate([t.decode(rows=slice(i, i + 1)) for i in ids])

    def output_name(self) -> str:
        return "output.weight" if "output.weight" in self.gguf.tensors else "token_embd.weight"


class ReferenceForward:
    """``forward(tokens, pos)`` -> float32 logits ``[vocab]`` after the last of
    ``tokens`` (at positions ``pos, pos + 1, ...``), their keys and values appended to
    the cache."""

    name = "reference (numpy) forward pass"

    def __init__(self, gguf, config: Gemma3Config | None = None, max_context: int = 4096):
        self.cfg = config or Gemma3Config.from_gguf(gguf)
        self.w = Weights(gguf)
        self.max_context = min(max_context, self.cfg.context_length)
        c = self.cfg
        shape = (c.blocks, self.max_context, c.kv_heads, c.head_dim)
        self.k_cache = np.zeros(shape, F32)
        self.v_cache = np.zeros(shape, F32)

    def forward(self, tokens, pos: int) -> np.ndarray:
        c, w = self.cfg, self.w
        tokens = [int(t) for t in tokens]
        t_count = len(tokens)
        if not t_count:
            raise ValueError("forward needs at least one token")
        if pos + t_count > self.max_context:
            raise ValueError(f"context of {self.max_context} positions exceeded")
        h = w.rows("token_embd.weight", tokens) * F32(np.sqrt(c.width))
        positions = np.arange(pos, pos + t_count)
        for layer in range(c.blocks):
            h = self._block(layer, h, positions)
        out = rmsnorm(h[-1:], w("output_norm.weight"), c.eps)
        logits = self._matmul(out, w.output_name())[0]
        if c.final_softcap:
            cap = F32(c.final_softcap)
            logits = np.tanh(logits / cap) * cap
        return logits.astype(F32)

    def _block(self, layer: int, h: np.ndarray, positions: np.ndarray) -> np.ndarray:
        c, w, p = self.cfg, self.w, f"blk.{layer}."
        t_count, d = h.shape[0], c.head_dim
        x = rmsnorm(h, w(p + "attn_norm.weight"), c.eps)
        q = self._matmul(x, p + "attn_q.weight").reshape(t_count, c.heads, d)
        k = self._matmul(x, p + "attn_k.weight").reshape(t_count, c.kv_heads, d)
        v = self._matmul(x, p + "attn_v.weight").reshape(t_count, c.kv_heads, d)
        q = rmsnorm(q, w(p + "attn_q_norm.weight"), c.eps)
        k = rmsnorm(k, w(p + "attn_k_norm.weight"), c.eps)
        cos, sin = rope_tables(positions, d, c.rope_base_of(layer))
        q = rope_neox(q, cos, sin) * F32(c.query_scale)
        k = rope_neox(k, cos, sin)
        first, last = int(positions[0]), int(positions[-1]) + 1
        self.k_cache[layer, first:last] = k
        self.v_cache[layer, first:last] = v
        keys, vals = self.k_cache[layer, :last], self.v_cache[layer, :last]
        kpos = np.arange(last)[None, :]
        visible = kpos <= positions[:, None]
        if c.is_local(layer):
            visible &= positions[:, None] - kpos < c.sliding_window
        att = self._attend(q, keys, vals, visible).reshape(t_count, -1)
        o = self._matmul(att, p + "attn_output.weight")
        h = h + rmsnorm(o, w(p + "post_attention_norm.weight"), c.eps)
        x = rmsnorm(h, w(p + "ffn_norm.weight"), c.eps)
        g = self._gelu(self._matmul(x, p + "ffn_gate.weight"))
        g = g * self._matmul(x, p + "ffn_up.weight")
        f = self._matmul(g, p + "ffn_down.weight")
        return h + rmsnorm(f, w(p + "post_ffw_norm.weight"), c.eps)

    # The steps below are methods so that a diagnostic can swap one numeric choice
    # (scripts/gemma3_agreement.py emulates llama.cpp's CPU arithmetic this way).

    def _matmul(self, x: np.ndarray, name: str) -> np.ndarray:
        """x W^T for the rows ``x`` ``[T, K]`` and the matrix ``name`` ``[N, K]``."""
        return x @ self.w(name).T

    def _gelu(self, x: np.ndarray) -> np.ndarray:
        return gelu_tanh(x)

    def _attend(self, q: np.ndarray, keys: np.ndarray, vals: np.ndarray,
                visible: np.ndarray) -> np.ndarray:
        """softmax(q k^T) v per head over the ``visible`` ``[T, S]`` cache positions:
        ``q`` ``[T, H, D]`` (already scaled), ``keys`` and ``vals`` ``[S, KV, D]``."""
        c = self.cfg
        kv_of_head = np.arange(c.heads) // (c.heads // c.kv_heads)
        scores = np.einsum("thd,shd->hts", q, keys[:, kv_of_head])      # [H, T, S]
        scores = np.where(visible[None], scores, -np.inf)
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        probs = scores / scores.sum(axis=-1, keepdims=True)
        return np.einsum("hts,shd->thd", probs, vals[:, kv_of_head])
