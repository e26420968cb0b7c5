"""The Gemma 3 forward pass as DSL kernels (``kernels.py``): Python allocates the
buffers, loops over tokens and layers and calls the kernels; every tensor operation
runs in a kernel, on the interpreter or a compiled target, with the same bits.

Per token: ``scale`` (the embedding row, decoded by ``ninfer_ir.formats``, times
sqrt(width)); per layer six calls, ``attn_in``, ``qk_rope``, ``attention``,
``attn_out``, ``gate_up``, ``ffn_out``; after the last token of a call, ``logits``
(the output norm and the tied output projection, read from the Q8_0 token embedding
in place). Every weight matrix is multiplied as stored (Q4_K, Q6_K, Q5_0, Q8_0).

The argument lists of a layer's calls are built once (views of the buffers, the
weights and the norms); per token only the position, the cache slot and the
attention range change. The KV cache is ``[position, layer, kv head, head size]``:
the positions in use are one contiguous span, so its resident memory grows with
the context used (numpy asks for huge pages for large arrays; a layer-major cache
touched at one position in every layer held 2 MB pages in every layer).
"""
from __future__ import annotations

import numpy as np

import ninfer_ir as I

from . import kernels as K
from .config import Gemma3Config
from .reference import Weights

F32 = np.float32


class KernelForward:
    """``forward(tokens, pos)`` -> float32 logits ``[vocab]`` after the last of
    ``tokens`` (at positions ``pos, pos + 1, ...``), as ``ReferenceForward``."""

    def __init__(self, gguf, config: Gemma3Config | None = None, target: str = "cpu",
                 threads: int | None = None, max_context: int = 4096):
        self.cfg = c = config or Gemma3Config.from_gguf(gguf)
        self.gguf, self.target = gguf, target
        self.name = f"kernel forward pass ({target})"
        self.max_context = min(max_context, c.context_length)
        self._w = Weights(gguf)
        self._compiled: dict = {}

        def kernel(k):
            if k not in self._compiled:
                self._compiled[k] = (_interpreted(k) if target == "interp" else
                                     I.compile(k, target=target, threads=threads))
            return self._compiled[k]
        self.kernel = kernel

        d = c.heads * c.head_dim
        self.h, self.x, self.y = (np.zeros(c.width, F32) for _ in range(3))
        self.q, self.q_rot, self.att = (np.zeros((c.heads, c.head_dim), F32) for _ in range(3))
        self.k, self.v = (np.zeros((c.kv_heads, c.head_dim), F32) for _ in range(2))
        self.f = np.zeros(c.ffn, F32)
        self.scores = np.zeros((c.heads, self.max_context), F32)
        self.logits = np.zeros(c.vocab, F32)
        shape = (self.max_context, c.blocks, c.kv_heads, c.head_dim)
        self.k_cache, self.v_cache = np.zeros(shape, F32), np.zeros(shape, F32)
        self.inv_freq = {base: (base ** (-np.arange(0, c.head_dim, 2) / c.head_dim)).astype(F32)
                         for base in {c.rope_base, c.rope_base_local}}
        self.eps = F32(c.eps)
        self.layers = [self._layer(i) for i in range(c.blocks)]
        emb = self._w.output_name()
        blk = K.activation_scheme((self._type(emb),), emb).block
        self._logits = (kernel(K.logits_kernel(self._type(emb))),
                        (self.h.reshape(-1, blk), self._vec("output_norm.weight", -1, blk),
                         self._mat(emb), self.x.reshape(-1, blk), self.logits, self.eps))

    def _type(self, name: str) -> int:
        return self.gguf.tensors[name].ggml_type

    def _mat(self, name: str) -> np.ndarray:
        """The records of a weight matrix in the map, ``[rows, records, bytes]``."""
        return self.gguf.tensors[name].records

    def _vec(self, name: str, *shape) -> np.ndarray:
        """A float32 norm weight in the map (a view), reshaped."""
        return self.gguf.tensors[name].records.reshape(shape or (-1,))

    def _layer(self, layer: int):
        """(attn_in, qk_rope, attn_out, gate_up, ffn_out) of ``layer``: each (kernel, its
        arguments) for the ones whose arguments never change; qk_rope's kernel and
        fixed arguments (the position and cache slot are added per token)."""
        c, p, eps, kernel = self.cfg, f"blk.{layer}.", self.eps, self.kernel
        names = [p + n + ".weight" for n in ("attn_q", "attn_k", "attn_v", "attn_output",
                                             "ffn_gate", "ffn_up", "ffn_down")]
        tq, tk, tv, to, tg, tu, td = (self._type(n) for n in names)
        wq, wk, wv, wo, wg, wu, wd = (self._mat(n) for n in names)
        b_in = K.activation_scheme((tq, tk, tv), p + "attn_q/k/v").block
        b_o = K.activation_scheme((to,), names[3]).block
        b_g = K.activation_scheme((tg, tu), p + "ffn_gate/up").block
        b_d = K.activation_scheme((td,), names[6]).block
        half = c.head_dim // 2
        attn_in = (kernel(K.attn_in_kernel(tq, tk, tv)),
                   (self.h.reshape(-1, b_in), self._vec(p + "attn_norm.weight", -1, b_in),
                    wq, wk, wv, self.x.reshape(-1, b_in), self.q.reshape(-1),
                    self.k.reshape(-1), self.v.reshape(-1), eps))
        rope = (kernel(K.qk_rope),
                (self.q.reshape(c.heads, 2, half), self.k.reshape(c.kv_heads, 2, half),
                 self.v, self._vec(p + "attn_q_norm.weight", 2, half),
                 self._vec(p + "attn_k_norm.weight", 2, half),
                 self.inv_freq[c.rope_base_of(layer)], self.q_rot.reshape(c.heads, 2, half)))
        attn_out = (kernel(K.attn_out_kernel(to)),
                    (self.att.reshape(-1, b_o), wo, self._vec(p + "post_attention_norm.weight"),
                     self._vec(p + "ffn_norm.weight"), self.y, self.h, self.x, eps))
        gate_up = (kernel(K.gate_up_kernel(tg, tu)), (self.x.reshape(-1, b_g), wg, wu, self.f))
        ffn_out = (kernel(K.ffn_out_kernel(td)),
                   (self.f.reshape(-1, b_d), wd, self._vec(p + "post_ffw_norm.weight"),
                    self.y, self.h, eps))
        return attn_in, rope, attn_out, gate_up, ffn_out

    def forward(self, tokens, pos: int) -> np.ndarray:
        tokens = [int(t) for t in tokens]
        if not tokens:
            raise ValueError("forward needs at least one token")
        if pos + len(tokens) > self.max_context:
            raise ValueError(f"context of {self.max_context} positions exceeded")
        for i, tok in enumerate(tokens):
            self._token(tok, pos + i)
        run, args = self._logits
        run(*args)
        return self.logits.copy()

    def _token(self, tok: int, pos: int) -> None:
        c = self.cfg
        row = self._w.rows("token_embd.weight", [tok])[0]
        self.kernel(K.scale)(row, self.h, F32(np.sqrt(c.width)))
        q_scale, fpos = F32(c.query_scale), F32(pos)
        attention = self.kernel(K.attention)
        for layer, (attn_in, rope, attn_out, gate_up, ffn_out) in enumerate(self.layers):
            attn_in[0](*attn_in[1])
            k_cache, v_cache = self.k_cache[:, layer], self.v_cache[:, layer]
            rope[0](*rope[1], k_cache[pos].reshape(c.kv_heads, 2, -1), v_cache[pos], fpos,
                    q_scale, self.eps)
            start = max(0, pos + 1 - c.sliding_window) if c.is_local(layer) else 0
            attention(self.q_rot, k_cache, v_cache, self.scores, self.att, start, pos + 1)
            attn_out[0](*attn_out[1])
            gate_up[0](*gate_up[1])
            ffn_out[0](*ffn_out[1])


def _interpreted(kernel):
    def run(*args):
        return I.interpret(kernel, *args)
    run.__name__ = kernel.name
    return run
