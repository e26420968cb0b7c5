"""The Gemma 3 forward pass as DSL kernels (``kernels.py``): Python allocates the
buffers, loops over tokens and layers and calls the kernels; every tensor operation
runs in a kernel, on the interpreter or a compiled target, with the same bits.

The tokens of a call go through the layers together, up to ``batch`` at a time (a
prompt at once, a generated token alone): every kernel takes M rows, one per token.
Per batch: ``embed`` (the embedding rows, decoded from the table as stored, times
sqrt(width)); per layer six calls, ``attn_in``, ``qk_rope``, ``attention``,
``attn_out``, ``gate_up``, ``ffn_out``; after the last token of a call, ``logits``
on the last row (the output norm and the tied output projection, read from the Q8_0
token embedding in place). Every weight matrix is multiplied as stored (Q4_K, Q6_K,
Q5_0, Q8_0). A row's arithmetic is the same whatever the batch, so a prompt read at
once gives the bits of the prompt read token by token.

The argument lists of a layer's calls are built once for one row and for a full
batch (views of the buffers, the weights, the norms and the layer's KV cache) and
bound once (``CompiledKernel.bind``: checked and packed at binding, docs/backends.md);
per call only the position changes (and for ``logits`` the row it reads, the last of
a batch, and the array it writes, returned by ``forward``). The KV cache is ``[position, layer, kv head, head size]``:
the positions in use are one contiguous span, so its resident memory grows with
the context used (numpy asks for huge pages for large arrays; a layer-major cache
touched at one position in every layer held 2 MB pages in every layer).
"""
from __future__ import annotations

from functools import partial

import numpy as np

import ninfer_ir as I

from . import kernels as K
from .config import Gemma3Config
from .reference import Weights

F32 = np.float32


class KernelForward:
    """``forward(tokens, pos)`` -> float32 logits ``[vocab]`` after the last of
    ``tokens`` (at positions ``pos, pos + 1, ...``), as ``ReferenceForward``. The tokens
    go through the layers ``batch`` at a time (one row each in every kernel call)."""

    def __init__(self, gguf, config: Gemma3Config | None = None, target: str = "cpu",
                 threads: int | None = None, max_context: int = 4096, batch: int = 64):
        self.cfg = c = config or Gemma3Config.from_gguf(gguf)
        self.gguf, self.target = gguf, target
        self.name = f"kernel forward pass ({target})"
        self.max_context = min(max_context, c.context_length)
        if batch < 1:
            raise ValueError(f"batch must be at least 1, not {batch}")
        self.batch = batch
        self._w = Weights(gguf)
        self._compiled: dict = {}
        self._threads = threads
        b, hd = batch, c.head_dim
        self.h, self.x, self.y = (np.zeros((b, c.width), F32) for _ in range(3))
        self.ids = np.zeros(b, np.int32)
        self.q = np.zeros((b, c.heads * hd), F32)
        self.q_rot, self.att = (np.zeros((b, c.heads, hd), F32) for _ in range(2))
        self.k, self.v = (np.zeros((b, c.kv_heads * hd), F32) for _ in range(2))
        self.f = np.zeros((b, c.ffn), F32)
        self.scores = np.zeros((c.heads, self.max_context), F32)
        shape = (self.max_context, c.blocks, c.kv_heads, hd)
        self.k_cache, self.v_cache = np.zeros(shape, F32), np.zeros(shape, F32)
        self.inv_freq = {base: (base ** (-np.arange(0, hd, 2) / hd)).astype(F32)
                         for base in {c.rope_base, c.rope_base_local}}
        self.eps = F32(c.eps)
        table = gguf.tensors["token_embd.weight"]
        if table.format is None:
            raise I.FormatError(f"token_embd.weight: {table.type_name} is not a GGUF block "
                                f"format, which the embed kernel decodes")
        self._embed = self.kernel(K.embed_kernel(table.format))
        self._table = table.records.reshape(table.records.shape[0], -1)  # [vocab, bytes]
        self._plans = [self._plan(i) for i in range(c.blocks)]
        emb = self._w.output_name()
        self._emb_block = K.activation_scheme((self._type(emb),), emb).block
        self._logits = _bind(self.kernel(K.logits_kernel(self._type(emb))),
                             norm=self._vec("output_norm.weight", -1, self._emb_block),
                             w=self._mat(emb),
                             x=np.zeros((c.width // self._emb_block, self._emb_block), F32),
                             eps=self.eps)
        self._calls = {m: self._bound_calls(m) for m in (1, batch)}

    def kernel(self, k):
        """``k`` compiled for the target (once), or run by the interpreter."""
        if k not in self._compiled:
            self._compiled[k] = (_interpreted(k) if self.target == "interp" else
                                 I.compile(k, target=self.target, threads=self._threads))
        return self._compiled[k]

    def _type(self, name: str) -> int:
        return self.gguf.tensors[name].ggml_type

    def _mat(self, name: str) -> np.ndarray:
        """The records of a weight matrix in the map, ``[rows, records, bytes]``."""
        return self.gguf.tensors[name].records

    def _vec(self, name: str, *shape) -> np.ndarray:
        """A float32 norm weight in the map (a view), reshaped."""
        return self.gguf.tensors[name].records.reshape(shape or (-1,))

    def _plan(self, layer: int) -> dict:
        """The kernels, weights, norms and activation blocks of ``layer``."""
        c, p = self.cfg, f"blk.{layer}."
        names = [p + n + ".weight" for n in ("attn_q", "attn_k", "attn_v", "attn_output",
                                             "ffn_gate", "ffn_up", "ffn_down")]
        tq, tk, tv, to, tg, tu, td = (self._type(n) for n in names)
        s_in = K.activation_scheme((tq, tk, tv), p + "attn_q/k/v")
        half = c.head_dim // 2
        return dict(
            attn_in=self.kernel(K.attn_in_kernel(tq, tk, tv)), b_in=s_in.block,
            b_xq=s_in.act_record, attn_out=self.kernel(K.attn_out_kernel(to)),
            b_o=K.activation_scheme((to,), names[3]).block,
            gate_up=self.kernel(K.gate_up_kernel(tg, tu)),
            b_g=K.activation_scheme((tg, tu), p + "ffn_gate/up").block,
            ffn_out=self.kernel(K.ffn_out_kernel(td)),
            b_d=K.activation_scheme((td,), names[6]).block,
            w=[self._mat(n) for n in names],
            attn_norm=self._vec(p + "attn_norm.weight"),
            q_norm=self._vec(p + "attn_q_norm.weight", 2, half),
            k_norm=self._vec(p + "attn_k_norm.weight", 2, half),
            post_attn=self._vec(p + "post_attention_norm.weight"),
            ffn_norm=self._vec(p + "ffn_norm.weight"),
            post_ffw=self._vec(p + "post_ffw_norm.weight"),
            inv_freq=self.inv_freq[c.rope_base_of(layer)],
            window=c.sliding_window if c.is_local(layer) else self.max_context)

    def _layer_calls(self, m: int) -> list:
        """Per layer, for ``m`` tokens at once: (attn_in, qk_rope, attention, attn_out,
        gate_up, ffn_out), each (kernel, arguments, arguments by name) with views of the
        first ``m`` rows of the buffers; qk_rope and attention leave the position
        free."""
        c, eps, half = self.cfg, self.eps, self.cfg.head_dim // 2
        h, x, y, f = self.h[:m], self.x[:m], self.y[:m], self.f[:m]
        q_rot, att = self.q_rot[:m], self.att[:m]
        n, kv = self.max_context, c.kv_heads
        k_cache = self.k_cache.reshape(n, c.blocks, kv, 2, half)
        out = []
        for layer, pl in enumerate(self._plans):
            wq, wk, wv, wo, wg, wu, wd = pl["w"]
            b_in = pl["b_in"]
            xq = np.zeros((m, c.width // b_in, pl["b_xq"]), np.uint8)
            out.append((
                (pl["attn_in"], (h.reshape(m, -1, b_in), pl["attn_norm"].reshape(-1, b_in),
                                 wq, wk, wv, x.reshape(m, -1, b_in), xq, self.q[:m],
                                 self.k[:m], self.v[:m], eps), {}),
                (self.kernel(K.qk_rope),
                 (self.q[:m].reshape(m, c.heads, 2, half), self.k[:m].reshape(m, -1, 2, half),
                  self.v[:m].reshape(m, kv, -1), pl["q_norm"], pl["k_norm"],
                  pl["inv_freq"], q_rot.reshape(m, c.heads, 2, half), k_cache[:, layer],
                  self.v_cache[:, layer]), dict(q_scale=F32(c.query_scale), eps=eps)),
                (self.kernel(K.attention),
                 (q_rot, self.k_cache[:, layer], self.v_cache[:, layer], self.scores, att),
                 dict(window=pl["window"])),
                (pl["attn_out"], (att.reshape(m, -1, pl["b_o"]), wo, pl["post_attn"],
                                  pl["ffn_norm"], y, h, x, eps), {}),
                (pl["gate_up"], (x.reshape(m, -1, pl["b_g"]), wg, wu, f), {}),
                (pl["ffn_out"], (f.reshape(m, -1, pl["b_d"]), wd, pl["post_ffw"], y, h, eps),
                 {})))
        return out

    def _bound_calls(self, m: int) -> tuple:
        """For ``m`` tokens at once: ``embed`` (of the ids in ``ids``), and per layer its
        six calls bound (``_layer_calls``), qk_rope and attention taking the position."""
        embed = _bind(self._embed, self.ids[:m], self._table, self.h[:m],
                      F32(np.sqrt(self.cfg.width)))
        return embed, [tuple(_bind(k, *args, **named) for k, args, named in layer)
                       for layer in self._layer_calls(m)]

    def forward(self, tokens, pos: int) -> np.ndarray:
        tokens = [int(t) for t in tokens]
        if not tokens:
            raise ValueError("forward needs at least one token")
        if pos + len(tokens) > self.max_context:
            raise ValueError(f"context of {self.max_context} positions exceeded")
        for at in range(0, len(tokens), self.batch):
            chunk = tokens[at:at + self.batch]
            self._rows(chunk, pos + at)
        logits = np.empty(self.cfg.vocab, F32)          # written whole by the kernel
        self._logits(self.h[len(chunk) - 1].reshape(-1, self._emb_block), out=logits)
        return logits

    def _rows(self, tokens: list, pos: int) -> None:
        """Every layer on ``tokens`` at positions pos, pos + 1, ... (one row each)."""
        m = len(tokens)
        embed, layers = self._calls.get(m) or self._bound_calls(m)
        self.ids[:m] = tokens
        embed()
        for attn_in, rope, attention, attn_out, gate_up, ffn_out in layers:
            attn_in()
            rope(pos)
            attention(pos)
            attn_out()
            gate_up()
            ffn_out()


def _bind(run, *args, **named):
    """``run`` with ``args`` (its first parameters) and ``named`` bound: ``run.bind``
    where the target has it (cpu: checked and packed once), else a partial call."""
    bind = getattr(run, "bind", None)
    return bind(*args, **named) if bind is not None else partial(run, *args, **named)


def _interpreted(kernel):
    def run(*args, **named):
        return I.interpret(kernel, *args, **named)
    run.__name__ = kernel.name
    return run
