"""Q4_K GEMV: y = W x with W in Q4_K records and x quantized once to Q8_K.

    python examples/q4k_gemv.py [--n 4096] [--k 4096] [--target cpu] [--quiet]

Compiles the kernel, runs it on random weights, checks it bit for bit against the
interpreter (the oracle) and prints the IR and the timing.
"""
import argparse
import time

import numpy as np

import ninfer_ir as I


@I.kernel
def q4k_gemv(w: I.Tensor[I.u8, "N", "G", 144], x: I.Tensor[I.f32, "G", 256],
             y: I.Buffer[I.f32, "N"]):
    xq = I.quantize(x, format=I.quant.q8_k)        # prepared once, shared by every row
    for n in I.range(w.shape[0]):
        y[n] = I.quantized_dot(w[n], xq, lhs_format=I.quant.q4_k,
                               rhs_format=I.quant.q8_k, acc_dtype=I.f32)


def random_q4k(rng, n, g):
    """Valid Q4_K records: finite f16 d/dmin, any 6-bit scales, any nibbles."""
    w = rng.integers(0, 256, size=(n, g, 144), dtype=np.uint8)
    d = (rng.standard_normal((n, g, 2)) * 1e-3).astype(np.float16)
    w[:, :, 0:4] = d.view(np.uint8).reshape(n, g, 4)
    return w


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=4096, help="rows of W")
    ap.add_argument("--k", type=int, default=4096, help="columns of W (a multiple of 256)")
    ap.add_argument("--target", default="cpu", choices=["cpu", "cuda", "interp"])
    ap.add_argument("--repeat", type=int, default=20, help="timed calls")
    ap.add_argument("--quiet", action="store_true", help="do not print the IR")
    args = ap.parse_args(argv)
    if args.k % 256:
        ap.error("--k must be a multiple of 256")
    rng = np.random.default_rng(0)
    g = args.k // 256
    w = random_q4k(rng, args.n, g)
    x = rng.standard_normal((g, 256)).astype(np.float32)

    if not args.quiet:
        print(q4k_gemv.ir)
    t0 = time.perf_counter()
    try:
        kernel = I.compile(q4k_gemv, target=args.target)
    except I.TargetUnavailable as e:
        print(f"target unavailable: {e}")
        return 3
    t_compile = time.perf_counter() - t0

    y = np.empty(args.n, np.float32)
    kernel(w, x, y)                                   # warm up
    reps = max(1, args.repeat)
    t0 = time.perf_counter()
    for _ in range(reps):
        kernel(w, x, y)
    t_run = (time.perf_counter() - t0) / reps

    expect = np.empty(args.n, np.float32)
    I.interpret(q4k_gemv, w, x, expect)
    exact = np.array_equal(y.view(np.uint32), expect.view(np.uint32))
    print(f"Q4_K GEMV {args.n}x{args.k} on {args.target}: compile {t_compile * 1e3:.1f} ms, "
          f"{t_run * 1e6:.1f} us per call (quantize included), "
          f"{w.nbytes / t_run / 1e9:.1f} GB/s of weights")
    print(f"bit-exact against the interpreter: {exact}")
    if not exact:
        bad = np.flatnonzero(y.view(np.uint32) != expect.view(np.uint32))
        print(f"{bad.size} of {args.n} rows differ; first: row {bad[0]}: {y[bad[0]]!r} "
              f"against {expect[bad[0]]!r}")
    return 0 if exact else 1


if __name__ == "__main__":
    raise SystemExit(main())
