"""``ninfer bench FILE.py[:kernel]``: a user kernel on the target, on the interpreter
and against a numpy baseline, each timed until stable (``ninfer_ir.testing.bench``)."""
from __future__ import annotations

import numpy as np

from .common import EXIT_FAILED, EXIT_OK, CliError, fmt_seconds, load_kernel, load_module, \
    parse_assignments, split_spec, usage
from .inputs import fresh_copy, make_inputs


def baseline_of(args):
    """The numpy baseline function of the file, or None when there is none."""
    module = load_module(split_spec(args.file)[0])
    name = args.baseline or "numpy_baseline"
    fn = getattr(module, name, None)
    if fn is None and args.baseline:
        raise usage(f"{split_spec(args.file)[0]} has no function named {name!r}")
    if fn is not None and not callable(fn):
        raise usage(f"--baseline {name}: not a function")
    return fn


def cmd_bench_kernel(args) -> int:
    import ninfer_ir as I
    from ninfer_ir.testing import bench, compare_targets

    kernel = load_kernel(args.file)
    baseline = baseline_of(args)
    inputs, sizes, _ = make_inputs(kernel.func, np.random.default_rng(args.seed),
                                   parse_assignments(args.dim))
    print(f"kernel {kernel.name} from {kernel.source_file}"
          + ("; " + " ".join(f"{k}={v}" for k, v in sizes.items()) if sizes else ""))
    try:
        compare_targets(kernel, *inputs, targets=("interp", args.target), threads=args.threads)
        print(f"{args.target} against the interpreter: bit-exact")
    except AssertionError as e:
        print(f"MISMATCH: {e}")
        return EXIT_FAILED
    except I.DomainError as e:
        raise CliError(f"DomainError on the random inputs (alike on the target and the "
                       f"interpreter), nothing to time: {e}") from None
    limit = 0.5 if args.quick else 2.0
    rows = []
    runs = [(args.target, I.compile(kernel, target=args.target,
                                    **({"threads": args.threads} if args.target == "cpu"
                                       else {}))),
            ("interp", I.compile(kernel, target="interp"))]
    if baseline is not None:
        runs.append((f"numpy ({baseline.__name__})", baseline))
    for name, fn in runs:
        rows.append((name, bench(fn, *fresh_copy(inputs), max_time=limit)))
    ref = rows[0][1].median
    print(f"\n{'what':<24} {'median':>10} {'spread':>8} {'calls':>9} {'vs ' + args.target:>9}")
    for name, t in rows:
        print(f"{name:<24} {fmt_seconds(t.median):>10} {100 * t.spread:>7.1f}% "
              f"{t.batches * t.number:>9} {t.median / ref:>8.2f}x"
              + ("" if t.stable else "  (not settled)"))
    if args.plot:
        plot(rows, kernel.name, args.plot)
    return EXIT_OK


def plot(rows, name: str, path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.barh([r[0] for r in rows], [r[1].median for r in rows],
            xerr=[r[1].median * r[1].spread for r in rows])
    ax.set_xscale("log")
    ax.set_xlabel("seconds per call (median; bars: interquartile spread)")
    ax.set_title(f"{name}")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"plot written to {path}")
