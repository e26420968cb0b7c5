"""Q4_K x Q8_K GEMV on a CUDA GPU: time per GEMV against a copy of the same bytes.

For each shape N x K (K = 256*G input values, N output rows) this times one
GEMV -- quantizing x to Q8_K, then ``q4k_gemv`` over all rows -- with CUDA
events, and a device-to-device copy of the same number of weight bytes in the
same run. Several weight copies are cycled so that most reads come from HBM,
not L2; ``--hot`` reuses one copy (L2-resident where it fits). Prints µs per
GEMV, GB/s of weight bytes, and the GEMV time over the copy time.

    python benchmarks/gemv_q4k_cuda.py [--iters 200] [--hot] [--shapes 4096x4096,...]

Without a GPU it prints why and exits with status 0.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from ninfer_ir.backends.cuda import qkernels, runtime  # noqa: E402

SHAPES = ((4096, 4096), (11008, 4096), (4096, 11008), (1024, 1024), (4096, 14336),
          (14336, 4096))
ROTATE_BYTES = 512 << 20       # weight bytes cycled per shape in the cold setting


def _weights(cupy, n, g, rng):
    """Valid Q4_K records with moderate d/dmin (random bytes elsewhere)."""
    w = rng.integers(0, 256, size=(n, g, 144), dtype=np.uint8)
    scales = (rng.standard_normal((n, g, 2)) * 0.01).astype(np.float16)
    w[:, :, 0:4] = scales.view(np.uint8)
    return cupy.asarray(w)


def _time(cupy, fn, iters):
    """Mean µs of ``fn(i)`` over ``iters`` calls, after warm-up, by CUDA events."""
    for i in range(3):
        fn(i)
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    start.record()
    for i in range(iters):
        fn(i)
    stop.record()
    stop.synchronize()
    return cupy.cuda.get_elapsed_time(start, stop) * 1000.0 / iters


def bench_shape(cupy, n, k, iters, hot, rng):
    g = k // 256
    nbytes = n * g * 144
    copies = 1 if hot else max(2, -(-ROTATE_BYTES // nbytes))
    base = _weights(cupy, n, g, rng)
    plans = [runtime.GemvQ4K(base)]
    for _ in range(copies - 1):
        plans.append(runtime.GemvQ4K(base.copy()))
    x = cupy.asarray((rng.standard_normal((g, 256)) * 2).astype(np.float32))
    gemv_us = _time(cupy, lambda i: plans[i % copies].launch(x), iters)
    for plan in plans:
        plan.check()
    dst = cupy.empty(nbytes, dtype=cupy.uint8)
    stream = cupy.cuda.get_current_stream().ptr
    kind = cupy.cuda.runtime.memcpyDeviceToDevice

    def copy(i):
        src = plans[i % copies].w
        cupy.cuda.runtime.memcpyAsync(dst.data.ptr, src.data.ptr, nbytes, kind, stream)

    copy_us = _time(cupy, copy, iters)
    return {
        "shape": f"{n}x{k}", "G": g, "order": plans[0].sum_order, "weight_MB": nbytes / 1e6,
        "gemv_us": gemv_us, "gemv_GBps": nbytes / gemv_us / 1e3,
        "copy_us": copy_us, "copy_GBps": nbytes / copy_us / 1e3, "ratio": gemv_us / copy_us,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--hot", action="store_true", help="reuse one weight copy (L2-resident)")
    ap.add_argument("--shapes", default=None, help="comma-separated NxK, e.g. 4096x4096")
    args = ap.parse_args(argv)
    ok, why = runtime.gpu_available()
    if not ok:
        print(f"gemv_q4k_cuda: no GPU here ({why}); nothing to measure")
        return 0
    import cupy
    shapes = SHAPES
    if args.shapes:
        shapes = tuple(tuple(int(v) for v in s.split("x")) for s in args.shapes.split(","))
    for n, k in shapes:
        if k % 256:
            print(f"gemv_q4k_cuda: K={k} is not a multiple of 256", file=sys.stderr)
            return 2
    rng = np.random.default_rng(0)
    setting = "hot (one weight copy)" if args.hot else "cold (weight copies cycled)"
    print(f"device: {why}; {setting}; {args.iters} iterations; "
          f"groups per warp {qkernels.GROUPS}")
    head = (f"{'shape NxK':>12} {'G':>4} {'order':>15} {'MB':>7} {'gemv µs':>9} "
            f"{'GB/s':>7} {'copy µs':>9} {'GB/s':>7} {'gemv/copy':>9}")
    print(head)
    for n, k in shapes:
        r = bench_shape(cupy, n, k, args.iters, args.hot, rng)
        print(f"{r['shape']:>12} {r['G']:>4} {r['order']:>15} {r['weight_MB']:>7.2f} "
              f"{r['gemv_us']:>9.2f} {r['gemv_GBps']:>7.1f} {r['copy_us']:>9.2f} "
              f"{r['copy_GBps']:>7.1f} {r['ratio']:>9.2f}")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
