"""``ninfer generate``: run Gemma 3 from its GGUF file and stream the text."""
from __future__ import annotations

import sys

from .common import EXIT_OK, check_input_file, usage


def cmd_generate(args) -> int:
    from ninfer_ir.models.gemma3 import Gemma3
    from ninfer_ir.models.tokenizer import StreamDecoder

    check_input_file(args.path)
    if args.temperature < 0:
        raise usage(f"--temperature {args.temperature}: must be 0 (greedy) or positive")
    forward = "reference" if args.reference else "kernels"
    if args.reference and args.target != "cpu":
        raise usage("--reference runs numpy only: it takes no --target")
    model = Gemma3(args.path, forward=forward, target=args.target, threads=args.threads,
                   max_context=args.context)
    c = model.config
    n_prompt = len(model.tokenizer.encode(args.prompt, special=True))
    if n_prompt > model.forward.max_context:
        raise usage(f"the prompt is {n_prompt} tokens, more than the "
                    f"{model.forward.max_context} positions of the cache (--context)")
    print(f"{args.path}: Gemma 3, {c.blocks} blocks, width {c.width}, vocabulary {c.vocab}; "
          f"opened in {model.open_seconds * 1e3:.0f} ms", file=sys.stderr)
    if args.reference:
        print("forward pass: reference (numpy) forward pass, float32 with decoded weights",
              file=sys.stderr)
    else:
        print(f"forward pass: DSL kernels on {args.target} (weights consumed as stored)",
              file=sys.stderr)
    stream = StreamDecoder(model.tokenizer)
    out = sys.stdout
    out.write(args.prompt)
    out.flush()
    count = 0
    for token in model.generate(args.prompt, args.max_tokens, args.temperature, args.seed):
        count += 1
        out.write(stream.push(token))
        out.flush()
    out.write(stream.flush() + "\n")
    out.flush()
    s = model.stats
    gen = f"{s['steps'] / s['step_seconds']:.2f} tokens/s" if s["step_seconds"] else "-"
    print(f"{count} tokens; prompt {s['prompt_tokens']} tokens in {s['prompt_seconds']:.2f} s "
          f"({s['prompt_tokens'] / s['prompt_seconds']:.2f} tokens/s); generation {gen} "
          f"({model.forward.name})", file=sys.stderr)
    return EXIT_OK
