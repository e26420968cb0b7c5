"""GEMM per dot pair with a GEMM kernel on the CPU: ours against ggml's ``ggml_mul_mat``.

For each pair of ``ninfer_ir.ops_select.GEMM_PAIRS`` (default: Q8_0, Q5_0, Q4_0 x Q8_0 and
Q6_K x Q8_K), each M and each thread count T, one call of ours is the DSL nest
``for m: xq = quantize(x[m]); for n: y[m, n] = quantized_dot(w[n], xq)`` (the ``select``
pass makes it one call of the pair's GEMM kernel, ``<stem>_gemm_quantize``), compiled with
``threads=T``; one call of ggml's is a graph of one ``ggml_mul_mat`` node of the same
weight bytes and the f32 activations (ggml quantizes them to the same activation format
inside the node) on a persistent ggml pool of T threads, reached through llama-cpp-python
(``gemv_q4k.py``'s loader). Weights (N x K = 4096 x 4096 by default) stay hot; ours and
ggml's take turns in runs of a few calls (``gemv_q4k.time_interleaved``). Printed: median
ms per call and the ratio ours / ggml (below 1: we are faster), all from one run, and at
one thread also the median CPU time of the calling thread in each call (both run there),
which the other work of a shared machine does not inflate as it does the wall time. Our
result is checked bit for bit against the interpreter on a small shape per pair first.

    PYTHONPATH=. python benchmarks/gemm_formats.py                   # M = 8, 32, 128, 512
    PYTHONPATH=. python benchmarks/gemm_formats.py --pairs q80_q80 --m 32 --quick
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ninfer_ir as I  # noqa: E402
from ninfer_ir.ops_select import PAIRS_BY_STEM  # noqa: E402
from gemv_formats import GGML_TYPES, GgmlGemv, random_weights  # noqa: E402
from gemv_q4k import (THREADS, let_pool_sleep, load_ggml,  # noqa: E402
                      machine_line, time_interleaved)
from gemm_q4k import _cpu_timed  # noqa: E402

DEFAULT_PAIRS = ("q80_q80", "q50_q80", "q6k_q8k", "q40_q80")
ROWS = (8, 32, 128, 512)


def gemm_kernel(pair):
    """The nest of ``pair`` with x quantized in the body (``<stem>_gemm_quantize``)."""
    lhs, rhs = getattr(I.quant, pair.lhs.name), getattr(I.quant, pair.rhs.name)

    @I.kernel
    def gemm(w: I.Tensor[I.u8, "N", "G", pair.lhs.record_bytes],
             x: I.Tensor[I.f32, "M", "G", pair.block_elems], y: I.Buffer[I.f32, "M", "N"]):
        for m in I.range(x.shape[0]):
            xq = I.quantize(x[m], format=rhs)
            for n in I.range(w.shape[0]):
                y[m, n] = I.quantized_dot(w[n], xq, lhs_format=lhs, rhs_format=rhs,
                                          acc_dtype=I.f32)
    return gemm


def check(kernel, pair, rng):
    """Compiled = interpreter, bit for bit, on a small odd shape."""
    w = random_weights(rng, pair, 37, 9)
    x = rng.standard_normal((5, 9, pair.block_elems)).astype(np.float32)
    want, got = np.zeros((5, 37), np.float32), np.zeros((5, 37), np.float32)
    I.interpret(kernel, w, x, want)
    I.compile(kernel, target="cpu")(w, x, got)
    return want.tobytes() == got.tobytes()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", default=",".join(DEFAULT_PAIRS))
    parser.add_argument("--m", default=",".join(map(str, ROWS)))
    parser.add_argument("--n", type=int, default=4096)
    parser.add_argument("--k", type=int, default=4096, help="a multiple of 256")
    parser.add_argument("--reps", type=int, default=None,
                        help="timed calls per config (default: 20 GFLOP of work, 8 to 100)")
    parser.add_argument("--quick", action="store_true", help="N = K = 1024, 5 calls")
    args = parser.parse_args(argv)
    if args.quick:
        args.n, args.k, args.reps = 1024, 1024, args.reps or 5
    print(machine_line())
    ggml, why = load_ggml()
    print("ggml peer: " + (f"llama-cpp-python {ggml.version}, ggml_mul_mat x f32"
                           if ggml else f"not available ({why})"))
    rng = np.random.default_rng(0)
    rows = [int(v) for v in args.m.split(",")]
    print(f"\nGEMM, N x K = {args.n} x {args.k}, x quantized inside each call; median ms per "
          f"call")
    head = (f"{'pair':14} {'M':>4} {'T':>2} {'ours ms':>9} {'ggml ms':>9} {'ours/ggml':>9}"
            f" {'CPU ours':>9} {'CPU ggml':>9} {'CPU ratio':>9}")
    print(head + "\n" + "-" * len(head))
    for stem in args.pairs.split(","):
        pair = PAIRS_BY_STEM[stem]
        kernel = gemm_kernel(pair)
        exact = check(kernel, pair, rng)
        g = args.k // pair.block_elems
        w = random_weights(rng, pair, args.n, g)
        kernels = {t: I.compile(kernel, target="cpu", threads=t) for t in THREADS}
        for m in rows:
            x = rng.standard_normal((m, g, pair.block_elems)).astype(np.float32)
            y = np.zeros((m, args.n), np.float32)
            reps = args.reps or max(8, min(100, int(2e10 / (2 * m * args.n * args.k))))
            for t in THREADS:
                groups = {"ours": [lambda t=t: kernels[t](w, x, y)]}
                settle = [let_pool_sleep]
                peer = None
                if ggml is not None:
                    peer = GgmlGemv(ggml, GGML_TYPES[pair.lhs.name], w, x, t)
                    groups["ggml"] = [peer]
                    settle = [let_pool_sleep, peer.pause]
                cpu = {name: [] for name in groups}
                if t == 1:
                    groups = {name: [_cpu_timed(fn, cpu[name]) for fn in fns]
                              for name, fns in groups.items()}
                try:
                    times = dict(zip(groups, time_interleaved(list(groups.values()), reps,
                                                              settle)))
                finally:
                    if peer is not None:
                        peer.close()
                ours = statistics.median(times["ours"])
                cells = f"{str(pair):14} {m:>4} {t:>2} {ours * 1e3:9.3f}"
                if "ggml" in times:
                    peer_t = statistics.median(times["ggml"])
                    cells += f" {peer_t * 1e3:9.3f} {ours / peer_t:9.2f}"
                    if cpu["ours"]:          # the first call of each is a warm-up
                        c_ours = statistics.median(cpu["ours"][1:])
                        c_peer = statistics.median(cpu["ggml"][1:])
                        cells += f" {c_ours * 1e3:9.3f} {c_peer * 1e3:9.3f} " \
                                 f"{c_ours / c_peer:9.2f}"
                print(cells + ("" if exact else "  NOT EXACT"), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
