"""Per-element time of the compiled f32 math functions against numpy's f32 ufuncs.

    python benchmarks/math_functions.py [--n 1000000] [--repeat 15]

Each function runs as the CPU kernel ``y = I.<fn>(x)`` on one thread over ``--n`` f32
values from its ordinary domain, and numpy's float32 function on the same values in
the same run, each writing into an output array allocated once (numpy's results are not
correctly rounded; ``rsqrt`` is ``1 / np.sqrt``, ``erf`` and ``sigmoid`` are scipy's
float32 ``erf`` and ``expit``). The two are timed alternately, one call of each per
round, so that both see the same machine; figures are the best of ``--repeat`` rounds,
in ns per element, with the ratio.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "scripts"))

import ninfer_ir as I                                            # noqa: E402
from check_math import kernel_module                            # noqa: E402

NUMPY = {"sqrt": np.sqrt, "rsqrt": lambda x, out: np.divide(np.float32(1.0), np.sqrt(x, out=out),
                                                            out=out),
         "exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2, "tanh": np.tanh,
         "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "rint": np.rint,
         "erf": lambda x, out: __import__("scipy.special").special.erf(x, out=out),
         "sin": np.sin, "cos": np.cos, "expm1": np.expm1,
         "sigmoid": lambda x, out: __import__("scipy.special").special.expit(x, out=out)}
DOMAIN = {"erf": (-4.0, 4.0), "sin": (-100.0, 100.0), "cos": (-100.0, 100.0),
          "sqrt": (0.0, 1e6), "rsqrt": (1e-6, 1e6), "exp": (-80.0, 80.0), "exp2": (-120.0, 120.0),
          "log": (1e-6, 1e6), "log2": (1e-6, 1e6), "tanh": (-12.0, 12.0),
          "expm1": (-20.0, 20.0), "sigmoid": (-20.0, 20.0)}


def interleaved_best(fns, repeat: int) -> list[float]:
    """The fastest of ``repeat`` calls of each of ``fns``, in seconds, calling them in
    turn (one call of each per round)."""
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            start = time.perf_counter()
            fn()
            best[i] = min(best[i], time.perf_counter() - start)
    return best


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--functions", default=",".join(NUMPY))
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    print(f"{'function':9s} {'ninfer ns/elem':>15s} {'numpy ns/elem':>14s} {'ratio':>7s}")
    for fn in args.functions.split(","):
        ref = NUMPY[fn]
        lo, hi = DOMAIN.get(fn, (-1e4, 1e4))
        x = rng.uniform(lo, hi, args.n).astype(np.float32)
        y, z = np.empty_like(x), np.empty_like(x)
        k = I.compile(kernel_module(fn), target="cpu", threads=1)
        k(x, y)
        ref(x, out=z)
        ours, theirs = (t / args.n * 1e9 for t in
                        interleaved_best([lambda: k(x, y), lambda: ref(x, out=z)],
                                         args.repeat))
        print(f"{fn:9s} {ours:15.2f} {theirs:14.2f} {ours / theirs:7.1f}", flush=True)


if __name__ == "__main__":
    main()
