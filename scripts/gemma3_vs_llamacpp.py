"""Gemma 3 270M against llama.cpp (llama-cpp-python): tokenizer ids, greedy tokens under
teacher forcing, logit differences and speed.

    python scripts/gemma3_vs_llamacpp.py [MODEL.gguf] [--forward kernels|reference]
                                          [--tokens 32] [--threads 2]

For each prompt llama.cpp generates ``--tokens`` greedy tokens; our forward pass reads
the same prompt and then llama.cpp's tokens one by one (teacher forcing). Reported per
prompt: whether the prompt's ids are llama.cpp's, how many of our next-token argmaxes
are llama.cpp's token, and the largest |our logit - llama.cpp's logit| relative to the
spread (max - min) of llama.cpp's logits at that position; then tokens/s of both (ours
after a first call that decodes the weights it keeps in float32 and compiles).
llama.cpp's CPU matrix products quantize activations (to Q8_0 / Q8_K), the reference
does not: small logit differences are expected, argmax flips only at near-ties.
"""
import argparse
import time

import numpy as np

from ninfer_ir.models.gemma3 import Gemma3, cached_gguf

PROMPTS = ["The capital of France is",
           "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
           "<start_of_turn>user\nWrite a haiku about the sea.<end_of_turn>\n<start_of_turn>model\n",
           "Once upon a time, in a small village by the mountains, there lived"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", nargs="?")
    ap.add_argument("--forward", default="kernels", choices=["kernels", "reference"])
    ap.add_argument("--target", default="cpu")
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)
    from llama_cpp import Llama
    path = str(args.model or cached_gguf())
    llm = Llama(path, n_ctx=512, n_threads=args.threads, n_threads_batch=args.threads,
                logits_all=True, verbose=False)
    total_agree = total = 0
    worst = 0.0
    ours_gen, ours_prompt, llm_gen, llm_prompt = [], [], [], []
    model = Gemma3(path, forward=args.forward, target=args.target, threads=args.threads,
                   max_context=512)
    t0 = time.perf_counter()
    model.forward.forward([model.tokenizer.bos_id], 0)   # decodes what it decodes, compiles
    print(f"{model.forward.name}: first call (weights decoded; kernels compiled, if any) "
          f"{time.perf_counter() - t0:.1f} s", flush=True)
    for prompt in PROMPTS:                  # each prompt overwrites the cache from position 0
        ids = model.tokenizer.encode(prompt, special=True)
        same_ids = ids == llm.tokenize(prompt.encode(), add_bos=True, special=True)
        llm.reset()
        t0 = time.perf_counter()
        llm.eval(ids)
        llm_prompt.append(len(ids) / (time.perf_counter() - t0))
        want_logits, toks = [], []
        t0 = time.perf_counter()
        for _ in range(args.tokens):
            row = np.array(llm.scores[llm.n_tokens - 1], np.float32)
            want_logits.append(row)
            toks.append(int(row.argmax()))
            llm.eval([toks[-1]])
        llm_gen.append(args.tokens / (time.perf_counter() - t0))
        t0 = time.perf_counter()
        got = [model.forward.forward(ids, 0)]
        ours_prompt.append(len(ids) / (time.perf_counter() - t0))
        t0 = time.perf_counter()
        for i, tok in enumerate(toks[:-1]):
            got.append(model.forward.forward([tok], len(ids) + i))
        ours_gen.append((args.tokens - 1) / (time.perf_counter() - t0))
        agree = sum(int(g.argmax()) == t for g, t in zip(got, toks))
        rel = max(float(np.abs(g - w).max() / (w.max() - w.min()))
                  for g, w in zip(got, want_logits))
        total_agree, total, worst = total_agree + agree, total + len(toks), max(worst, rel)
        print(f"{prompt[:40]!r:<44} ids as llama.cpp: {same_ids}; next token agrees "
              f"{agree}/{len(toks)}; max |logit diff| / spread {rel:.4f}; "
              f"llama.cpp text {model.tokenizer.decode(toks)[:50]!r}", flush=True)
    print(f"\n{model.forward.name}: next-token agreement {total_agree}/{total} "
          f"({100 * total_agree / total:.1f}%), largest logit difference "
          f"{worst:.4f} of the spread")
    print(f"tokens/s (threads {args.threads}, median over prompts): generation ours "
          f"{np.median(ours_gen):.2f}, llama.cpp {np.median(llm_gen):.2f}; prompt ours "
          f"{np.median(ours_prompt):.2f}, llama.cpp {np.median(llm_prompt):.2f}")


if __name__ == "__main__":
    raise SystemExit(main())
