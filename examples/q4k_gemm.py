"""Q4_K GEMM: Y = X W^T for a batch of M activation rows, W in Q4_K records.

    python examples/q4k_gemm.py [--m 8] [--n 512] [--k 1024] [--target cpu]

Each activation row is quantized to Q8_K once, inside a parallel loop over the
rows, then dotted with every weight row. The result is checked bit for bit
against the interpreter; exit status 0 means identical bits.
"""
import argparse
import time

import numpy as np

import ninfer_ir as I
from ninfer_ir.q4k import random_q4k


@I.kernel
def q4k_gemm(w: I.Tensor[I.u8, "N", "G", 144], x: I.Tensor[I.f32, "M", "G", 256],
             y: I.Buffer[I.f32, "M", "N"]):
    for m in I.prange(x.shape[0]):                    # activation rows, in parallel
        xq = I.quantize(x[m], format=I.quant.q8_k)   # one Q8_K copy per row
        for n in I.range(w.shape[0]):
            y[m, n] = I.quantized_dot(w[n], xq, lhs_format=I.quant.q4_k,
                                      rhs_format=I.quant.q8_k, acc_dtype=I.f32)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--m", type=int, default=8, help="activation rows")
    ap.add_argument("--n", type=int, default=512, help="rows of W")
    ap.add_argument("--k", type=int, default=1024, help="columns of W (a multiple of 256)")
    ap.add_argument("--target", default="cpu", choices=["cpu", "cuda", "interp"])
    ap.add_argument("--quiet", action="store_true", help="do not print the IR")
    args = ap.parse_args(argv)
    if args.k % 256:
        ap.error("--k must be a multiple of 256")
    rng = np.random.default_rng(0)
    g = args.k // 256
    w = random_q4k(rng, args.n, g)
    x = rng.standard_normal((args.m, g, 256)).astype(np.float32)
    if not args.quiet:
        print(q4k_gemm.ir)
    try:
        kernel = I.compile(q4k_gemm, target=args.target)
    except I.TargetUnavailable as e:
        print(f"target unavailable: {e}")
        return 3

    y = np.empty((args.m, args.n), np.float32)
    kernel(w, x, y)
    t0 = time.perf_counter()
    kernel(w, x, y)
    seconds = time.perf_counter() - t0

    expect = np.empty_like(y)
    I.interpret(q4k_gemm, w, x, expect)
    exact = np.array_equal(y.view(np.uint32), expect.view(np.uint32))
    print(f"Q4_K GEMM {args.m}x{args.n}x{args.k} on {args.target}: {seconds * 1e3:.2f} ms, "
          f"{2 * args.m * args.n * args.k / seconds / 1e9:.1f} GFLOP/s")
    print(f"bit-exact against the interpreter: {exact}")
    return 0 if exact else 1


if __name__ == "__main__":
    raise SystemExit(main())
