"""Speed of the numpy oracle: quantize (Q8_K), quantized_dot (Q4_K x Q8_K), and a GEMV.

    python benchmarks/oracle.py [--records 16384 65536] [--repeat 7] [--gemv 4096x4096]

Prints the best and median time of each call in µs and records per second.
Inputs are random: finite f32 activations; Q4_K records with random nibbles and
scale bytes and small finite binary16 d/dmin; Q8_K records produced by quantize.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from ninfer_ir.numerics.quantized import (quantize_q8k, quantized_dot_q4k_q8k,  # noqa: E402
                                      quantized_dot_rows)


def random_q4k(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    recs = rng.integers(0, 256, shape + (144,), dtype=np.uint8)
    scales = (rng.standard_normal(shape + (2,)) * 0.01).astype("<f2")
    recs[..., 0:4] = scales.view(np.uint8).reshape(shape + (4,))
    return recs


def timed(fn, repeat: int) -> tuple[float, float]:
    fn()                                            # warm-up
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times), statistics.median(times)


def report(label: str, records: int, best: float, median: float) -> None:
    print(f"{label:<34} {best * 1e6:>12,.0f} µs best {median * 1e6:>12,.0f} µs median "
          f"{records / best:>14,.0f} records/s")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, nargs="+", default=[16384, 65536])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--gemv", default="4096x4096",
                        help="N x K of a Q4_K GEMV (K a multiple of 256); 'none' to skip")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    print(f"numpy {np.__version__}, {os.cpu_count()} CPUs")
    for g in args.records:
        values = rng.standard_normal((g, 256), dtype=np.float32)
        lhs = random_q4k(rng, (g,))
        rhs = quantize_q8k(values)
        report(f"quantize q8_k  G={g}", g, *timed(lambda: quantize_q8k(values), args.repeat))
        for order in ("seq", "chunk<8>/tree"):
            report(f"dot q4_k.q8_k  G={g} {order}", g,
                   *timed(lambda: quantized_dot_q4k_q8k(lhs, rhs, order), args.repeat))
    if args.gemv != "none":
        n, k = (int(v) for v in args.gemv.lower().split("x"))
        g = k // 256
        weights = random_q4k(rng, (n, g))
        x = rng.standard_normal((g, 256), dtype=np.float32)

        def gemv():
            return quantized_dot_rows(weights, quantize_q8k(x))

        report(f"GEMV {n}x{k} (quantize + N dots)", n * g, *timed(gemv, args.repeat))


if __name__ == "__main__":
    main()
