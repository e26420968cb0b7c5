"""Gemma 3's hyperparameters, read from a GGUF file's ``gemma3.*`` metadata.

What the GGUF leaves out is what llama.cpp's Gemma 3 loader assumes (its
``LLM_ARCH_GEMMA3`` hyperparameters): with a sliding window, every sixth layer
(5, 11, 17, ...) attends globally with the file's RoPE base and the others attend
over the last ``sliding_window`` positions with RoPE base 10000; the query scale is
``key_length ** -0.5``; no final logit soft-capping unless the file sets one.
"""
from __future__ import annotations

from dataclasses import dataclass

from ninfer_ir.errors import FormatError

ARCH = "gemma3"
LOCAL_ROPE_BASE = 10000.0          # llama.cpp: rope_freq_base_train_swa for gemma3
SLIDING_PATTERN = 6                # llama.cpp: set_swa_pattern(6)


@dataclass(frozen=True)
class Gemma3Config:
    blocks: int
    width: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    vocab: int
    eps: float
    rope_base: float
    rope_base_local: float
    sliding_window: int              # 0: every layer global
    sliding_pattern: int
    context_length: int
    final_softcap: float             # 0: none

    @property
    def query_scale(self) -> float:
        return self.head_dim ** -0.5

    def is_local(self, layer: int) -> bool:
        """Whether ``layer`` attends over a sliding window (with the local RoPE base)."""
        return self.sliding_window > 0 and layer % self.sliding_pattern < self.sliding_pattern - 1

    def rope_base_of(self, layer: int) -> float:
        return self.rope_base_local if self.is_local(layer) else self.rope_base

    @classmethod
    def from_gguf(cls, gguf) -> "Gemma3Config":
        md = gguf.metadata
        arch = md.get("general.architecture")
        if arch != ARCH:
            raise FormatError(f"{gguf.path}: general.architecture is {arch!r}, not {ARCH!r}")

        def key(name, default=None):
            full = f"{ARCH}.{name}"
            if full in md:
                return md[full]
            if default is None:
                raise FormatError(f"{gguf.path}: metadata {full!r} is missing")
            return default

        heads = int(key("attention.head_count"))
        width = int(key("embedding_length"))
        emb = gguf.tensors.get("token_embd.weight")
        if emb is None:
            raise FormatError(f"{gguf.path}: no tensor 'token_embd.weight'")
        window = int(key("attention.sliding_window", 0))
        return cls(blocks=int(key("block_count")), width=width, heads=heads,
                   kv_heads=int(key("attention.head_count_kv", heads)),
                   head_dim=int(key("attention.key_length", width // heads)),
                   ffn=int(key("feed_forward_length")), vocab=int(emb.shape[0]),
                   eps=float(key("attention.layer_norm_rms_epsilon")),
                   rope_base=float(key("rope.freq_base", 10000.0)),
                   rope_base_local=float(key("rope.freq_base_swa", LOCAL_ROPE_BASE)),
                   sliding_window=window,
                   sliding_pattern=int(key("attention.sliding_window_pattern",
                                           SLIDING_PATTERN)),
                   context_length=int(key("context_length", 8192)),
                   final_softcap=float(key("final_logit_softcapping", 0.0)))
