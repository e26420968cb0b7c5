"""Where and why Gemma 3 270M's next tokens differ from llama.cpp's (llama-cpp-python).

    PYTHONPATH=. python scripts/gemma3_agreement.py [MODEL.gguf] [--prompts 8] [--tokens 64]
        [--variants kernels,ref,ref+all,...] [--threads 2] [--layers] [--check-quant]
        [--nodes 0,1,5] [--quiet]

For each prompt llama.cpp generates ``--tokens`` greedy tokens (its logits recorded at
every step); every variant then reads the prompt and llama.cpp's tokens (teacher forcing)
and is scored by next-token agreement (our argmax == llama.cpp's token), the largest and
the mean RMS |our logit - llama.cpp's| relative to the spread (max - min) of llama.cpp's
logits, and the agreement where llama.cpp's top-2 margin is at least 1% of the spread
(elsewhere: a near tie). At every position where a variant disagrees, llama.cpp's margin
of its token over ours and our margin of ours over its are listed.

Variants: ``kernels`` is the DSL forward pass (``forward.py``, ``--target``, default cpu);
``ref`` is the float32 numpy reference (``reference.py``); ``ref+E1+E2...`` is the reference
with some of llama.cpp's CPU arithmetic emulated:

    act    activations quantized as llama.cpp's CPU matrix products do, by llama.cpp's own
           quantize_row_q8_K / quantize_row_q8_0 (Q8_K for Q4_K/Q6_K weights, Q8_0 for
           Q5_0/Q8_0), dequantized and multiplied in float32
    kv     the KV cache in f16, the queries rounded to f16 for the K product and the
           softmax probabilities rounded to f16 for the V product (its default attention
           without flash attention: ggml's F16 x F32 matrix product converts the F32 side)
    gelu   GELU read from ggml's f16 table at the f16-rounded input (read from the library)
    rope   rotation angles p * theta_scale^i built by repeated f32 multiplication
    norm   the RMSNorm sum of squares in float64
    all    all of these
    ulp    (a control, not llama.cpp's) every scaled embedding value moved one ulp up:
           how far a rounding-level change alone carries

The variants' argmaxes are also compared with each other: two variants that differ
only in rounding show how much agreement rounding alone costs.

``--nodes 0,1,5`` checks every step of those blocks on llama.cpp's own inputs (the
named nodes of its graph), by the plain reference and with its arithmetic emulated.
``--layers`` compares the hidden state after every block (first prompt, every position)
between the variants and llama.cpp (read through its graph callback: the ``l_out-N``
tensors). ``--check-quant`` counts activations whose Q8_K / Q8_0 bytes from
``ninfer_ir``'s quantizers differ from llama.cpp's. Needs the model file and
llama-cpp-python; exits 3 without them. Not part of the test suite (minutes of CPU).
"""
from __future__ import annotations

import argparse
import ctypes
import sys
import time
from pathlib import Path

import numpy as np

from ninfer_ir.models.gemma3 import Gemma3, cached_gguf
from ninfer_ir.models.gemma3.reference import ReferenceForward, rmsnorm
from ninfer_ir.models.gemma3.samples import PROMPTS

F32, F16 = np.float32, np.float16
EMULATIONS = ("act", "kv", "gelu", "rope", "norm")
DECISIVE = 0.01       # a top-2 margin of llama.cpp's below this fraction of the spread: a near tie
NUDGE = "ulp"          # not arithmetic of llama.cpp's: the embedding one ulp up
# ggml type -> (activation format, values per block) of llama.cpp's CPU matrix product
ACT_FORMAT = {12: ("q8_k", 256), 14: ("q8_k", 256), 6: ("q8_0", 32), 8: ("q8_0", 32)}
RECORD = {"q8_k": 292, "q8_0": 34}


class Ggml:
    """llama.cpp's CPU library, loaded by llama-cpp-python: its activation quantizers and
    its GELU table (filled once the CPU backend has started)."""

    def __init__(self):
        import llama_cpp
        lib = Path(llama_cpp.__file__).parent / "lib"
        self.cpu = ctypes.CDLL(str(lib / "libggml-cpu.so.0"))
        self.base = ctypes.CDLL(str(lib / "libggml-base.so.0"))
        for name in ("quantize_row_q8_K", "quantize_row_q8_0"):
            f = getattr(self.cpu, name)
            f.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
            f.restype = None
        self.base.ggml_get_name.argtypes = [ctypes.c_void_p]
        self.base.ggml_get_name.restype = ctypes.c_char_p
        self.base.ggml_nelements.argtypes = [ctypes.c_void_p]
        self.base.ggml_nelements.restype = ctypes.c_int64
        self.base.ggml_nbytes.argtypes = [ctypes.c_void_p]
        self.base.ggml_nbytes.restype = ctypes.c_size_t
        self.base.ggml_backend_tensor_get.argtypes = [ctypes.c_void_p, ctypes.c_void_p,
                                                      ctypes.c_size_t, ctypes.c_size_t]

    def quantize(self, x: np.ndarray, fmt: str) -> np.ndarray:
        """Rows ``x`` ``[T, K]`` f32 -> the records u8 ``[T, K / block, bytes]``."""
        x = np.ascontiguousarray(x, F32)
        block = 256 if fmt == "q8_k" else 32
        out = np.zeros((x.shape[0], x.shape[1] // block, RECORD[fmt]), np.uint8)
        f = self.cpu.quantize_row_q8_K if fmt == "q8_k" else self.cpu.quantize_row_q8_0
        for r in range(x.shape[0]):
            f(x[r].ctypes.data, out[r].ctypes.data, x.shape[1])
        return out

    def gelu_table(self) -> np.ndarray:
        table = (ctypes.c_uint16 * 65536).in_dll(self.cpu, "ggml_table_gelu_f16")
        return np.frombuffer(table, np.uint16).view(F16).astype(F32)


def dequantize(records: np.ndarray, fmt: str) -> np.ndarray:
    """Q8_K (f32 scale, 256 int8) or Q8_0 (f16 scale, 32 int8) records -> f32 rows."""
    if fmt == "q8_k":
        d = records[..., :4].copy().view(F32)
        q = records[..., 4:260].view(np.int8)
    else:
        d = records[..., :2].copy().view(F16).astype(F32)
        q = records[..., 2:34].view(np.int8)
    return (q.astype(F32) * d).reshape(records.shape[0], -1)


class Emulated(ReferenceForward):
    """The numpy reference with some of llama.cpp's CPU arithmetic (``EMULATIONS``)."""

    def __init__(self, gguf, config, max_context, emulate, ggml: Ggml, quant_check=None):
        super().__init__(gguf, config, max_context)
        self.emulate, self.ggml, self.quant_check = set(emulate), ggml, quant_check
        self.name = "ref" + "".join(f"+{e}" for e in emulate)
        if "kv" in self.emulate:
            self.k_cache = self.k_cache.astype(F16)
            self.v_cache = self.v_cache.astype(F16)
        if "gelu" in self.emulate:
            self.table = ggml.gelu_table()
        self.trace = None                      # a list: the hidden state after each block

    def forward_all(self, tokens) -> np.ndarray:
        """The logits ``[T, vocab]`` after every one of ``tokens`` (from position 0)."""
        c, w = self.cfg, self.w
        h = w.rows("token_embd.weight", tokens) * F32(np.sqrt(c.width))
        if NUDGE in self.emulate:
            h = np.nextafter(h, F32(np.inf))
        positions = np.arange(len(tokens))
        for layer in range(c.blocks):
            h = self._block(layer, h, positions)
            if self.trace is not None:
                self.trace.append(h.copy())
        return self._matmul(rmsnorm(h, w("output_norm.weight"), c.eps), w.output_name())

    def _matmul(self, x, name):
        if "act" in self.emulate:
            fmt, _ = ACT_FORMAT.get(self.w.gguf.tensors[name].ggml_type, (None, 0))
            if fmt:
                records = self.ggml.quantize(x, fmt)
                if self.quant_check is not None:
                    self.quant_check.compare(x, records, fmt)
                x = dequantize(records, fmt)
        return super()._matmul(x, name)

    def _gelu(self, x):
        if "gelu" not in self.emulate:
            return super()._gelu(x)
        looked = self.table[x.astype(F16).view(np.uint16)]
        return np.where(x <= -10, F32(0), np.where(x >= 10, x, looked)).astype(F32)

    def _attend(self, q, keys, vals, visible):
        if "kv" in self.emulate:
            q = q.astype(F16).astype(F32)
            keys, vals = keys.astype(F32), vals.astype(F32)
            c = self.cfg
            kv_of_head = np.arange(c.heads) // (c.heads // c.kv_heads)
            scores = np.einsum("thd,shd->hts", q, keys[:, kv_of_head])
            scores = np.where(visible[None], scores, -np.inf)
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            probs = (scores / scores.sum(axis=-1, keepdims=True)).astype(F16).astype(F32)
            return np.einsum("hts,shd->thd", probs, vals[:, kv_of_head])
        return super()._attend(q, keys, vals, visible)


def install_emulations():
    """Module-level rope and rmsnorm replacements for the ``rope`` and ``norm`` emulations
    (the reference calls these functions by name); returns a context switcher."""
    from ninfer_ir.models.gemma3 import reference as R
    plain = {"rope_tables": R.rope_tables, "rmsnorm": R.rmsnorm}

    def rope_tables_ggml(positions, dim, base):
        scale = F32(np.power(F32(base), F32(-2.0) / F32(dim)))     # powf
        theta = positions.astype(F32)
        cos, sin = [], []
        for _ in range(dim // 2):
            cos.append(np.cos(theta))
            sin.append(np.sin(theta))
            theta = (theta * scale).astype(F32)
        return np.stack(cos, -1).astype(F32), np.stack(sin, -1).astype(F32)

    def rmsnorm_f64(x, w, eps):
        ms = (np.sum((x * x).astype(np.float64), axis=-1, keepdims=True) / x.shape[-1])
        scale = F32(1.0) / np.sqrt(ms.astype(F32) + F32(eps))
        return (x * scale.astype(F32)) * w

    def switch(emulate):
        R.rope_tables = rope_tables_ggml if "rope" in emulate else plain["rope_tables"]
        R.rmsnorm = rmsnorm_f64 if "norm" in emulate else plain["rmsnorm"]
    return switch


class QuantCheck:
    """Counts activation records whose bytes from ``ninfer_ir``'s quantizers differ from
    llama.cpp's, and the largest difference in their quantized values."""

    def __init__(self):
        from ninfer_ir.numerics.quant_blocks import quantize_q80
        from ninfer_ir.numerics.quantized import quantize_q8k
        self.ours = {"q8_k": (quantize_q8k, 256), "q8_0": (quantize_q80, 32)}
        self.counts = {"q8_k": [0, 0], "q8_0": [0, 0]}
        self.worst = {"q8_k": 0, "q8_0": 0}

    def compare(self, x, records, fmt):
        quantize, block = self.ours[fmt]
        ours = quantize(np.ascontiguousarray(x, F32).reshape(-1, block))
        theirs = records.reshape(-1, RECORD[fmt])
        differ = (ours != theirs).any(axis=1)
        self.counts[fmt][0] += int(differ.sum())
        self.counts[fmt][1] += differ.size
        if differ.any():
            qs = slice(4, 260) if fmt == "q8_k" else slice(2, 34)
            delta = np.abs(ours[:, qs].view(np.int8).astype(int)
                           - theirs[:, qs].view(np.int8).astype(int))
            self.worst[fmt] = max(self.worst[fmt], int(delta.max()))

    def report(self):
        for fmt, (bad, total) in self.counts.items():
            print(f"quantize {fmt}: {bad} of {total} activation records differ from "
                  f"llama.cpp's bytes (largest quant difference {self.worst[fmt]})")


class LlamaCpp:
    """llama.cpp through llama-cpp-python, greedy, logits at every step; with
    ``capture`` the hidden state after every block (graph callback, ``l_out-N``)."""

    def __init__(self, path, threads, ggml: Ggml, n_ctx=1024):
        import llama_cpp
        from llama_cpp import Llama
        from llama_cpp import llama_cpp as C
        self.ggml, self.capture, self.layers = ggml, None, {}
        self._cb = C.ggml_backend_sched_eval_callback(self._callback)
        defaults = C.llama_context_default_params

        def params():
            p = defaults()
            p.cb_eval = self._cb
            return p
        C.llama_context_default_params = params
        try:
            self.llm = Llama(str(path), n_ctx=n_ctx, n_threads=threads,
                             n_threads_batch=threads, logits_all=True, verbose=False)
        finally:
            C.llama_context_default_params = defaults
        self.version = llama_cpp.__version__

    def _callback(self, tensor, ask, _user):
        """The graph callback: asked (``ask``) whether a node's value is wanted, then
        given it; ``capture`` is a predicate on node names (or None: nothing)."""
        name = self.ggml.base.ggml_get_name(tensor).decode()
        if self.capture is None or not self.capture(name):
            return not ask            # keep computing; want nothing else
        if ask:
            return True
        n = self.ggml.base.ggml_nelements(tensor)
        if self.ggml.base.ggml_nbytes(tensor) != 4 * n:        # f32 values only
            return True
        buf = np.empty(n, F32)
        self.ggml.base.ggml_backend_tensor_get(tensor, buf.ctypes.data, 0, 4 * n)
        self.layers.setdefault(name, []).append(buf)
        return True

    def generate(self, ids, tokens):
        """llama.cpp's greedy continuation of ``ids`` and its logits before each token."""
        llm = self.llm
        llm.reset()
        llm.eval(ids)
        want, toks = [], []
        for _ in range(tokens):
            row = np.array(llm.scores[llm.n_tokens - 1], F32)
            want.append(row)
            toks.append(int(row.argmax()))
            llm.eval([toks[-1]])
        return toks, np.stack(want)

    def hidden(self, width):
        """The captured hidden states: ``[blocks, positions, width]``."""
        blocks = sorted(int(n.split("-")[1]) for n in self.layers if n.startswith("l_out-"))
        return np.stack([np.concatenate(self.layers[f"l_out-{i}"]).reshape(-1, width)
                         for i in blocks])


def kernel_logits(fwd, ids, toks, trace=None):
    """Teacher-forced logits of the DSL forward pass; ``trace`` gets the hidden state
    after every block, one ``[positions, width]`` array per block (the rows of ``h``
    after each layer's ``ffn_out`` call)."""
    rows = None
    if trace is not None:
        plain, cached = fwd._bound_calls, fwd._calls
        rows = [[] for _ in range(fwd.cfg.blocks)]

        def traced(m):
            embed, layers = plain(m)

            def after(run, layer):
                def call(*args):
                    run(*args)
                    rows[layer].append(fwd.h[:m].copy())
                return call
            return embed, [calls[:-1] + (after(calls[-1], i),)
                           for i, calls in enumerate(layers)]
        fwd._bound_calls, fwd._calls = traced, {}
    try:
        got = [fwd.forward(ids, 0)]
        for i, tok in enumerate(toks[:-1]):
            got.append(fwd.forward([tok], len(ids) + i))
    finally:
        if trace is not None:
            fwd._bound_calls, fwd._calls = plain, cached
            trace[:] = [np.concatenate(r) for r in rows]
    return np.stack(got)


def node_check(llama, model, ggml, switch, layer, prompt):
    """Every step of block ``layer`` on llama.cpp's own inputs (its graph's named nodes),
    by the plain reference and with llama.cpp's arithmetic emulated: the relative
    difference from llama.cpp's output of the step."""
    c, gguf = model.config, model.gguf
    ids = model.tokenizer.encode(prompt, special=True)
    t, sfx = len(ids), f"-{layer}"
    before = f"l_out-{layer - 1}" if layer else "inp_scaled"
    llama.layers = {}
    llama.capture = lambda name: name.endswith(sfx) or name == before
    llama.llm.reset()
    llama.llm.eval(ids)
    llama.capture = None
    nodes = {name: [v.reshape(t, -1) for v in vals] for name, vals in llama.layers.items()}
    p = f"blk.{layer}."
    cos_sin = {}
    print(f"\nblock {layer} ({'local' if c.is_local(layer) else 'global'}, RoPE base "
          f"{c.rope_base_of(layer):g}) on llama.cpp's inputs, {t} positions: "
          "|step - llama.cpp's| / |llama.cpp's|")
    print(f"  {'step':<28}{'float32':>12}{'emulated':>12}")
    plain = Emulated(gguf, c, t, (), ggml)
    emul = Emulated(gguf, c, t, EMULATIONS, ggml)
    heads = lambda x, n: x.reshape(t, n, c.head_dim)                        # noqa: E731
    visible = np.tril(np.ones((t, t), bool))

    def steps(f):
        from ninfer_ir.models.gemma3 import reference as R
        switch(f.emulate)
        key = frozenset(f.emulate)
        if key not in cos_sin:
            cos_sin[key] = R.rope_tables(np.arange(t), c.head_dim, c.rope_base_of(layer))
        cos, sin = cos_sin[key]
        x, q, k = nodes["attn_norm" + sfx][0], nodes["Qcur" + sfx], nodes["Kcur" + sfx]
        kv_dtype = F16 if "kv" in f.emulate else F32
        out = {"attn_norm": R.rmsnorm(nodes[before][0], f.w(p + "attn_norm.weight"), c.eps)}
        for name in ("attn_q", "attn_k", "attn_v"):
            out[name] = f._matmul(x, p + name + ".weight")
        out["attn_q_norm"] = R.rmsnorm(heads(q[0], c.heads), f.w(p + "attn_q_norm.weight"),
                                       c.eps).reshape(t, -1)
        out["rope (q)"] = R.rope_neox(heads(nodes["Qcur_normed" + sfx][0], c.heads),
                                      cos, sin).reshape(t, -1)
        keys = heads(k[-1], c.kv_heads).astype(kv_dtype)
        vals = heads(nodes["Vcur" + sfx][0], c.kv_heads).astype(kv_dtype)
        out["attention"] = f._attend(heads(q[-1], c.heads) * F32(c.query_scale), keys, vals,
                                     visible).reshape(t, -1)
        o = f._matmul(nodes["kqv_out" + sfx][0], p + "attn_output.weight")
        out["attn_output, post norm"] = R.rmsnorm(o, f.w(p + "post_attention_norm.weight"),
                                                  c.eps)
        out["ffn_norm"] = R.rmsnorm(nodes["sa_out" + sfx][0], f.w(p + "ffn_norm.weight"),
                                    c.eps)
        xf = nodes["ffn_norm" + sfx][0]
        out["ffn_gate"] = f._matmul(xf, p + "ffn_gate.weight")
        out["ffn_up"] = f._matmul(xf, p + "ffn_up.weight")
        out["gelu gate"] = f._gelu(nodes["ffn_gate" + sfx][0]) * nodes["ffn_up" + sfx][0]
        d = f._matmul(nodes["ffn_geglu" + sfx][0], p + "ffn_down.weight")
        out["ffn_down, post norm"] = R.rmsnorm(d, f.w(p + "post_ffw_norm.weight"), c.eps)
        switch(())
        return out
    want = {"attn_norm": "attn_norm", "attn_q": "Qcur", "attn_k": "Kcur", "attn_v": "Vcur",
            "attn_q_norm": "Qcur_normed", "rope (q)": "Qcur", "attention": "kqv",
            "attn_output, post norm": "attn_post_norm", "ffn_norm": "ffn_norm",
            "ffn_gate": "ffn_gate", "ffn_up": "ffn_up", "gelu gate": "ffn_geglu",
            "ffn_down, post norm": "ffn_post_norm"}
    a, b = steps(plain), steps(emul)
    for step, node in want.items():
        ref = nodes[node + sfx][-1 if step == "rope (q)" else 0]
        if step == "attention":               # llama.cpp's kqv is [heads, T, D]
            ref = ref.reshape(c.heads, t, -1).transpose(1, 0, 2).reshape(t, -1)
        scale = np.linalg.norm(ref)
        print(f"  {step:<28}{np.linalg.norm(a[step] - ref) / scale:12.2e}"
              f"{np.linalg.norm(b[step] - ref) / scale:12.2e}")


def margin(row, a, b):
    return float(row[a] - row[b])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", nargs="?")
    ap.add_argument("--prompts", type=int, default=8, help=f"how many of the {len(PROMPTS)}")
    ap.add_argument("--tokens", type=int, default=64, help="greedy tokens per prompt")
    ap.add_argument("--variants", default="kernels,ref,ref+act,ref+kv,ref+gelu,ref+all",
                    help="comma-separated: kernels, ref, ref+E+E... (E in "
                         f"{', '.join(EMULATIONS)}, all)")
    ap.add_argument("--target", default="cpu", help="target of the kernels variant")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--layers", action="store_true",
                    help="per-block hidden-state divergence on the first prompt")
    ap.add_argument("--check-quant", action="store_true",
                    help="compare ninfer_ir's Q8_K/Q8_0 activation bytes with llama.cpp's")
    ap.add_argument("--nodes", default="", metavar="BLOCKS",
                    help="comma-separated blocks to check step by step on llama.cpp's own "
                         "inputs (the fourth prompt), then stop")
    ap.add_argument("--quiet", action="store_true", help="no per-position listing")
    args = ap.parse_args(argv)
    path = args.model or cached_gguf()
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        path = None
    if path is None:
        print("needs the Gemma 3 GGUF file and llama-cpp-python", file=sys.stderr)
        return 3
    ggml = Ggml()
    llama = LlamaCpp(path, args.threads, ggml)
    model = Gemma3(path, forward="reference", max_context=1024)
    cfg, gguf = model.config, model.gguf
    switch = install_emulations()
    quant_check = QuantCheck() if args.check_quant else None
    if args.nodes:
        for layer in (int(b) for b in args.nodes.split(",")):
            node_check(llama, model, ggml, switch, layer, PROMPTS[3])
        return 0
    variants = {}
    for spec in args.variants.split(","):
        if spec == "kernels":
            from ninfer_ir.models.gemma3.forward import KernelForward
            variants[spec] = KernelForward(gguf, cfg, args.target, args.threads, 1024)
            continue
        parts = spec.split("+")
        emulate = tuple(e for e in parts[1:] if e != "all")
        if "all" in parts[1:]:
            emulate = EMULATIONS + emulate
        if parts[0] != "ref" or not set(emulate) <= set(EMULATIONS + (NUDGE,)):
            ap.error(f"unknown variant {spec!r}")
        variants[spec] = Emulated(gguf, cfg, 1024, emulate, ggml,
                                  quant_check if "act" in emulate else None)
    print(f"llama-cpp-python {llama.version}; {args.prompts} prompts x {args.tokens} tokens; "
          f"threads {args.threads}", flush=True)
    score = {v: [0, 0, 0.0] for v in variants}          # agree, total, worst rel diff
    rms = {v: [] for v in variants}                     # RMS logit difference / spread
    decisive = {v: [0, 0] for v in variants}            # agree, total where margin >= 1%
    margins = []                                        # llama.cpp's top-2 margin / spread
    misses = {v: [] for v in variants}
    argmaxes = {v: [] for v in variants}
    hidden = {}
    for pi, prompt in enumerate(PROMPTS[:args.prompts]):
        ids = model.tokenizer.encode(prompt, special=True)
        same = ids == llama.llm.tokenize(prompt.encode(), add_bos=True, special=True)
        if args.layers and pi == 0:
            llama.capture = lambda name: name.startswith("l_out-")
        t0 = time.perf_counter()
        toks, want = llama.generate(ids, args.tokens)
        llama.capture = None
        print(f"prompt {pi} ({len(ids)} ids, same as llama.cpp's: {same}): llama.cpp "
              f"{time.perf_counter() - t0:.1f} s", flush=True)
        spread = want.max(axis=1) - want.min(axis=1)
        top2 = np.sort(want, axis=1)[:, -2:]
        margins.append((top2[:, 1] - top2[:, 0]) / spread)
        clear = margins[-1] >= DECISIVE
        for name, fwd in variants.items():
            t0 = time.perf_counter()
            trace = [] if args.layers and pi == 0 else None
            if name == "kernels":
                got = kernel_logits(fwd, ids, toks, trace)
            else:
                switch(fwd.emulate)
                fwd.trace = trace
                got = fwd.forward_all(ids + toks[:-1])[len(ids) - 1:]
                fwd.trace = None
                switch(())
            if trace is not None:
                h = np.stack(trace)                       # -> [blocks, positions, width]
                hidden[name] = h
            ours = got.argmax(axis=1)
            argmaxes[name].append(ours)
            agree = int((ours == np.array(toks)).sum())
            rel = float((np.abs(got - want).max(axis=1) / spread).max())
            s = score[name]
            s[0], s[1], s[2] = s[0] + agree, s[1] + len(toks), max(s[2], rel)
            rms[name].append(np.sqrt(np.mean((got - want) ** 2, axis=1)) / spread)
            hits = ours == np.array(toks)
            decisive[name][0] += int(hits[clear].sum())
            decisive[name][1] += int(clear.sum())
            for t in np.flatnonzero(ours != np.array(toks)):
                w, g, tok, mine = want[t], got[t], toks[t], int(ours[t])
                misses[name].append((pi, int(t), margin(w, tok, mine), margin(g, mine, tok),
                                     float(spread[t]), float(np.abs(g - w).max())))
            print(f"  {name:<24} agrees {agree}/{len(toks)}; max |diff| / spread {rel:.4f} "
                  f"({time.perf_counter() - t0:.1f} s)", flush=True)
    m = np.concatenate(margins)
    print(f"\nllama.cpp's top-2 margin / spread: median {np.median(m):.4f}; "
          f"{int((m < DECISIVE).sum())} of {m.size} positions below {DECISIVE}")
    print("next-token agreement over all prompts; largest and mean RMS logit difference / "
          f"spread; agreement where llama.cpp's margin >= {DECISIVE} of the spread:")
    for name, (agree, total, rel) in score.items():
        d_ok, d_all = decisive[name]
        print(f"  {name:<24} {agree}/{total} ({100 * agree / total:.1f}%)  {rel:.4f}  "
              f"{np.mean(np.concatenate(rms[name])):.5f}  {d_ok}/{d_all}")
    if len(variants) > 1:
        print("\nnext-token agreement between variants (%):")
        names = list(variants)
        picks = {n: np.concatenate(argmaxes[n]) for n in names}
        print("  " + " " * 24 + " ".join(f"{n[:12]:>12}" for n in names))
        for a in names:
            print(f"  {a:<24}" + " ".join(f"{100 * np.mean(picks[a] == picks[b]):12.1f}"
                                           for b in names))
    if not args.quiet:
        print("\ndisagreements: prompt, step; llama.cpp's margin of its token over ours; our "
              "margin of our token over llama.cpp's; llama.cpp's spread; our max |diff|")
        for name, rows in misses.items():
            for pi, t, lm, om, sp, dmax in rows:
                print(f"  {name:<24} p{pi} t{t:<3} llama {lm:.4f}  ours {om:.4f}  "
                      f"spread {sp:.2f}  max|diff| {dmax:.4f}")
    if quant_check is not None:
        quant_check.report()
    if args.layers:
        ref = llama.hidden(cfg.width)
        print(f"\nhidden state after each block, first prompt ({ref.shape[1]} positions): "
              "median over positions of |ours - llama.cpp| / |llama.cpp|")
        print("  block " + " ".join(f"{n[:14]:>14}" for n in hidden))
        for b in range(cfg.blocks):
            cells = []
            for name, h in hidden.items():
                n = min(len(h[b]), len(ref[b]))
                d = (np.linalg.norm(h[b, :n] - ref[b, :n], axis=1)
                     / np.linalg.norm(ref[b, :n], axis=1))
                cells.append(f"{np.median(d):14.2e}")
            print(f"  {b:5d} " + " ".join(cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
