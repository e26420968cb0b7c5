"""Q4_K GEMM on the CPU: ours against ggml's ``ggml_mul_mat`` on the same bytes.

One call of ours is the whole DSL kernel ``q4k_gemm`` of ``examples/q4k_gemm.py`` (each
activation row quantized to Q8_K, then every Q4_K x Q8_K dot: the ``select`` pass makes
the nest one call of the GEMM kernel), compiled with ``threads=T``; one call of ggml's
is a graph of one Q4_K x f32 ``ggml_mul_mat`` node on a persistent ggml thread pool of T
threads (it quantizes the activations to Q8_K inside the node too), reached through
llama-cpp-python as ``gemv_q4k.py`` reaches it. For each M and T the weights
(N x K = 4096 x 4096 by default, 9.4 MB) stay in the caches (back-to-back calls; ours and
ggml's take turns in runs of a few calls, so the phases of a shared machine hit both
alike). Printed: the median and best ms per call, GFLOP/s (2*M*N*K per call) and the
ratio ours / ggml (below 1: we are faster), all measured in one run; for one thread also
the CPU time the calling thread spent in each call (both run there), which the other work
of a shared machine does not inflate as it does the wall time. Our result is
checked bit for bit against the interpreter once per M.

    PYTHONPATH=. python benchmarks/gemm_q4k.py                  # M = 2, 8, 32, 128, 512
    PYTHONPATH=. python benchmarks/gemm_q4k.py --m 8,32 --reps 5
    PYTHONPATH=. python benchmarks/gemm_q4k.py --quick           # seconds
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "examples"))

import ninfer_ir as I  # noqa: E402
from gemv_q4k import (THREADS, let_pool_sleep, load_ggml, machine_line, random_q4k,  # noqa: E402
                      time_interleaved)
from q4k_gemm import q4k_gemm  # noqa: E402

ROWS = (2, 8, 32, 128, 512)
TARGET_ROWS = (8, 32, 128, 512)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--m", default=",".join(map(str, ROWS)), help="activation rows, "
                        "comma-separated")
    parser.add_argument("--n", type=int, default=4096, help="weight rows")
    parser.add_argument("--k", type=int, default=4096, help="columns (a multiple of 256)")
    parser.add_argument("--reps", type=int, default=None,
                        help="timed calls per config (default: 30 GFLOP of work, 12 to 200)")
    parser.add_argument("--quick", action="store_true",
                        help="M = 2, 8 with N = K = 1024, a few calls (seconds)")
    parser.add_argument("--no-check", action="store_true", help="skip the interpreter check")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.k % 256:
        parser.error("--k must be a multiple of 256")
    if args.quick:
        args.m, args.n, args.k, args.reps = "2,8", 1024, 1024, args.reps or 5
    rows = [int(v) for v in args.m.split(",")]
    print(machine_line())
    ggml, why = load_ggml()
    print("ggml peer: " + (f"llama-cpp-python {ggml.version}, ggml_mul_mat Q4_K x f32"
                           if ggml else f"not available ({why})"))
    rng = np.random.default_rng(args.seed)
    n, g = args.n, args.k // 256
    w = random_q4k(rng, n, g)
    kernels = {t: I.compile(q4k_gemm, target="cpu", threads=t) for t in THREADS}
    results = []
    for m in rows:
        x = rng.standard_normal((m, g, 256)).astype(np.float32)
        y = np.zeros((m, n), np.float32)
        exact = None
        if not args.no_check and m * n * g <= 32 * 4096 * 16:
            want = np.zeros_like(y)
            I.interpret(q4k_gemm, w, x, want)
            kernels[1](w, x, y)
            exact = np.array_equal(y.view(np.uint32), want.view(np.uint32))
        reps = args.reps or max(12, min(200, int(3e10 / (2 * m * n * args.k))))
        for t in THREADS:
            groups = {"ours": [lambda t=t: kernels[t](w, x, y)]}
            settle = [let_pool_sleep]
            peer = None
            if ggml is not None:
                peer = ggml.gemv([w], x, t)
                groups["ggml"] = [peer]
                settle = [let_pool_sleep, peer.pause]
            cpu = {name: [] for name in groups}
            if t == 1:         # one thread: both run in the calling thread; time its CPU too
                groups = {name: [_cpu_timed(fn, cpu[name]) for fn in fns]
                          for name, fns in groups.items()}
            try:
                times = dict(zip(groups, time_interleaved(list(groups.values()), reps, settle)))
            finally:
                if peer is not None:
                    peer.close()
            for name, spent in cpu.items():
                if spent:
                    times[name + " cpu"] = spent[len(groups[name]):]    # not the warm-ups
            results.append((m, t, times, exact))
    flops = 2 * n * args.k
    head = (f"{'M':>5} {'T':>2} {'ours ms':>9} {'GFLOP/s':>8} {'ggml ms':>9} {'GFLOP/s':>8} "
            f"{'ours/ggml':>9}  exact")
    tables = (("median of the timed calls", statistics.median, ""),
              ("best of the timed calls", min, ""),
              ("median CPU time of the calling thread (1 thread)", statistics.median, " cpu"))
    for label, stat, kind in tables:
        print(f"\nQ4_K GEMM, N x K = {n} x {args.k}, x quantized inside each call: {label}; "
              f"ms per call")
        print(head)
        print("-" * len(head))
        for m, t, times, exact in results:
            if "ours" + kind not in times:
                continue
            ours = stat(times["ours" + kind])
            cells = [f"{m:>5}", f"{t:>2}", f"{ours * 1e3:9.3f}", f"{m * flops / ours / 1e9:8.0f}"]
            if "ggml" + kind in times:
                peer = stat(times["ggml" + kind])
                cells += [f"{peer * 1e3:9.3f}", f"{m * flops / peer / 1e9:8.0f}",
                          f"{ours / peer:9.2f}"]
            else:
                cells += [f"{'-':>9}", f"{'-':>8}", f"{'-':>9}"]
            cells.append({True: " yes", False: " NO", None: " -"}[exact])
            print(" ".join(cells))
    if ggml is not None:
        print("\ntargets (medians, ratios within this run):")
        for m, t, times, _ in results:
            if m in TARGET_ROWS and (n, args.k) == (4096, 4096):
                r = statistics.median(times["ours"]) / statistics.median(times["ggml"])
                line = (f"  M = {m}, {t} thread{'s' if t > 1 else ''}: ours/ggml {r:.2f} "
                        f"(target <= 1.0) {'met' if r <= 1.0 else 'MISSED'}")
                if "ours cpu" in times:
                    c = statistics.median(times["ours cpu"]) / statistics.median(times["ggml cpu"])
                    line += f"; CPU time {c:.2f}"
                print(line)
    return 0


def _cpu_timed(fn, sink):
    """``fn`` that also appends the CPU seconds the calling thread spent in it to ``sink``
    (on a shared machine, what other work cannot add to: a one-thread call runs there)."""
    def timed():
        start = time.thread_time()
        fn()
        sink.append(time.thread_time() - start)
    return timed


if __name__ == "__main__":
    sys.exit(main())
