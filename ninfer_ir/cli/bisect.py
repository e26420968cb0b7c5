"""``ninfer bisect``: the first pass after which the interpreter computes other bits."""
from __future__ import annotations

import numpy as np

from .common import EXIT_FAILED, EXIT_OK, load_kernel, parse_assignments
from .inputs import make_inputs


def cmd_bisect(args) -> int:
    from ninfer_ir.passes.pipeline import default_passes
    from ninfer_ir.testing import bisect_passes

    kernel = load_kernel(args.file)
    inputs, sizes, _ = make_inputs(kernel.func, np.random.default_rng(args.seed),
                                   parse_assignments(args.dim))
    passes = default_passes(args.target)
    print(f"kernel {kernel.name} from {kernel.source_file}; "
          + (" ".join(f"{k}={v}" for k, v in sizes.items()) + "; " if sizes else "")
          + f"seed {args.seed}; {len(passes)} passes for {args.target}")
    result = bisect_passes(kernel, *inputs, target=args.target, passes=passes)
    if not result.found:
        print(result)
        return EXIT_OK
    print(result)
    print(f"\n// IR before {result.stage}\n{result.before.rstrip()}")
    print(f"\n// IR after {result.stage}\n{result.after.rstrip()}")
    print(f"\n// what {result.pass_name} changed\n{result.diff().rstrip()}")
    return EXIT_FAILED
