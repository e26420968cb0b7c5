"""The Gemma 3 forward pass as DSL kernels (``kernels.py``): Python allocates the
buffers, loops over tokens and layers and calls the kernels; every tensor operation
runs in a kernel, on the interpreter or a compiled target, with the same bits.

Per token and layer: ``rmsnorm_rows`` (attention norm), three GEMVs (q, k, v),
``rmsnorm_rows`` on the q and k heads, ``rope_neox`` on q (with the query scale) and k,
the keys and values stored in the cache, ``attention``, the output GEMV,
``add_rmsnorm`` (post-attention norm and residual), ``rmsnorm_rows`` (FFN norm), the
gate and up GEMVs, ``gelu_gate``, the down GEMV and ``add_rmsnorm`` again. A GEMV is
``gemv_q4k``, ``gemv_q6k``, ``gemv_q5_0`` or ``gemv_q8_0`` on weights in those formats
as stored (the tied output projection reads the Q8_0 token embedding in place), and
``gemv_f32`` on weights of any other format, decoded once by ``ninfer_ir.formats``.
"""
from __future__ import annotations

import numpy as np

import ninfer_ir as I

from . import kernels as K
from .config import Gemma3Config
from .reference import Weights

F32 = np.float32
_KERNELS = ("rmsnorm_rows", "add_rmsnorm", "scale", "gemv_f32", "gemv_q4k", "gemv_q6k",
            "gemv_q5_0", "gemv_q8_0", "rope_neox", "attention", "gelu_gate")
# ggml type -> (the GEMV kernel that consumes it as stored, values per activation block)
AS_STORED = {12: ("gemv_q4k", 256), 14: ("gemv_q6k", 256), 6: ("gemv_q5_0", 32),
             8: ("gemv_q8_0", 32)}


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
        if target == "interp":
            self.k = {n: _interpreted(getattr(K, n)) for n in _KERNELS}
        else:
            self.k = {n: I.compile(getattr(K, n), target=target, threads=threads)
                      for n in _KERNELS}
        d, kvd = c.heads * c.head_dim, c.kv_heads * c.head_dim
        self.h, self.x, self.y = (np.zeros(c.width, F32) for _ in range(3))
        self.q, self.qn = (np.zeros((c.heads, c.head_dim), F32) for _ in range(2))
        self.att = np.zeros((c.heads, c.head_dim), F32)
        self.kv = np.zeros((2, c.kv_heads, c.head_dim), F32)
        self.g, self.u, self.f = (np.zeros(c.ffn, F32) for _ in range(3))
        self.qraw = np.zeros(d, F32)
        self.kvraw = np.zeros((2, kvd), F32)
        self.scores = np.zeros((c.heads, self.max_context), F32)
        self.logits = np.zeros(c.vocab, F32)
        shape = (c.blocks, self.max_context, c.kv_heads, c.head_dim)
        self.k_cache, self.v_cache = np.zeros(shape, F32), np.zeros(shape, F32)
        self.inv_freq = {base: (base ** (-np.arange(0, c.head_dim, 2) / c.head_dim)).astype(F32)
                         for base in {c.rope_base, c.rope_base_local}}
        self._mats: dict = {}

    def _norm(self, name: str) -> np.ndarray:
        return self.gguf.tensors[name].records            # F32 in the file: a view

    def _gemv(self, name: str, x: np.ndarray, y: np.ndarray) -> None:
        """y = W x with W the tensor ``name``: Q4_K, Q6_K, Q5_0 and Q8_0 as stored,
        other formats decoded to float32 once."""
        if name not in self._mats:
            t = self.gguf.tensors[name]
            kernel, block = AS_STORED.get(t.ggml_type, ("gemv_f32", 0))
            self._mats[name] = (kernel, block, t.records if block else self._w(name))
        kernel, block, w = self._mats[name]
        self.k[kernel](w, x.reshape(-1, block) if block else x, y)

    def forward(self, tokens, pos: int) -> np.ndarray:
        tokens = [int(t) for t in tokens]
        if not tokens:
            raise ValueError("forward needs at least one token")
        if pos + len(tokens) > self.max_context:
            raise ValueError(f"context of {self.max_context} positions exceeded")
        for i, tok in enumerate(tokens):
            self._token(tok, pos + i)
        c = self.cfg
        self.k["rmsnorm_rows"](self.h.reshape(1, -1), self._norm("output_norm.weight"),
                               self.x.reshape(1, -1), F32(c.eps))
        self._gemv(self._w.output_name(), self.x, self.logits)
        return self.logits.copy()

    def _token(self, tok: int, pos: int) -> None:
        c, k = self.cfg, self.k
        eps = F32(c.eps)
        row = self._w.rows("token_embd.weight", [tok])[0]
        k["scale"](row, self.h, F32(np.sqrt(c.width)))
        for layer in range(c.blocks):
            p = f"blk.{layer}."
            k["rmsnorm_rows"](self.h.reshape(1, -1), self._norm(p + "attn_norm.weight"),
                              self.x.reshape(1, -1), eps)
            self._gemv(p + "attn_q.weight", self.x, self.qraw)
            self._gemv(p + "attn_k.weight", self.x, self.kvraw[0])
            self._gemv(p + "attn_v.weight", self.x, self.kvraw[1])
            k["rmsnorm_rows"](self.qraw.reshape(c.heads, -1),
                              self._norm(p + "attn_q_norm.weight"), self.qn, eps)
            k["rmsnorm_rows"](self.kvraw[0].reshape(c.kv_heads, -1),
                              self._norm(p + "attn_k_norm.weight"), self.kv[0], eps)
            inv = self.inv_freq[c.rope_base_of(layer)]
            k["rope_neox"](self.qn.reshape(c.heads, 2, -1), inv,
                           self.q.reshape(c.heads, 2, -1), F32(pos), F32(c.query_scale))
            k["rope_neox"](self.kv[0].reshape(c.kv_heads, 2, -1), inv,
                           self.kv[1].reshape(c.kv_heads, 2, -1), F32(pos), F32(1.0))
            self.k_cache[layer, pos] = self.kv[1]
            self.v_cache[layer, pos] = self.kvraw[1].reshape(c.kv_heads, -1)
            start = max(0, pos + 1 - c.sliding_window) if c.is_local(layer) else 0
            k["attention"](self.q, self.k_cache[layer], self.v_cache[layer], self.scores,
                           self.att, start, pos + 1)
            self._gemv(p + "attn_output.weight", self.att.reshape(-1), self.y)
            k["add_rmsnorm"](self.h, self.y, self._norm(p + "post_attention_norm.weight"),
                             self.x, eps)
            k["rmsnorm_rows"](self.h.reshape(1, -1), self._norm(p + "ffn_norm.weight"),
                              self.x.reshape(1, -1), eps)
            self._gemv(p + "ffn_gate.weight", self.x, self.g)
            self._gemv(p + "ffn_up.weight", self.x, self.u)
            k["gelu_gate"](self.g, self.u, self.f)
            self._gemv(p + "ffn_down.weight", self.f, self.y)
            k["add_rmsnorm"](self.h, self.y, self._norm(p + "post_ffw_norm.weight"),
                             self.x, eps)


def _interpreted(kernel):
    def run(*args):
        return I.interpret(kernel, *args)
    run.__name__ = kernel.name
    return run
