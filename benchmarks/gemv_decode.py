"""Decode + f32 GEMV on the CPU: ``y[n] = dot(decode(p[n], s[n]), x)`` in the ``seq`` order.

For each grouped format (q4_g64, q8_g32, t2_g128, q2_g64 by default), shape N x K and
thread count T (1, 2), the DSL kernel compiled with ``I.compile(..., threads=T)`` and
called as a user calls it, weights hot in the caches (back-to-back calls). It prints:

* us: time per call (median and best of all timed calls);
* GB/s: bytes of packed codes and scales per call over the best time;
* numpy: the baseline that dequantizes then multiplies, ``fmt.decode(fmt.unpack(p, s, K))``
  then ``W @ x`` in f32 (OpenBLAS limited to T threads), per call, and ``numpy/ours``;
  ``mv only`` is ``W @ x`` on the matrix dequantized beforehand;
* Q4_K: the Q4_K GEMV of ``examples/q4k_gemv.py`` (x quantized to Q8_K in the call, then a
  Q4_K x Q8_K dot per row) compiled the same way on the same N x K, and ``ours/Q4_K``.

Calls are spread over ``--rounds`` rounds that visit every configuration in turn, so a
slow phase of a shared machine hits all of them alike; "best" is the steadier figure.
Each kernel is checked bit for bit against the interpreter on its first 64 rows before
timing.

    PYTHONPATH=. python benchmarks/gemv_decode.py             # 4096x4096 and 11008x4096
    PYTHONPATH=. python benchmarks/gemv_decode.py --quick     # 1024x1024, seconds
"""
from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "examples"))

import ninfer_ir as I  # noqa: E402
from q4k_gemv import q4k_gemv, random_q4k  # noqa: E402

Q2 = I.formats.get("q2_g64_fp16")
Q4 = I.formats.get("q4_g64_fp16")
Q5 = I.formats.get("q5_g64_fp16")
Q6 = I.formats.get("q6_g64_fp16")
Q8 = I.formats.get("q8_g32_fp16")
T2 = I.formats.get("t2_g128_fp16")


def decode_gemv(fmt):
    """The GEMV ``y[n] = dot(decode(p[n], s[n]), x)`` for grouped format ``fmt``."""
    @I.kernel
    def gemv(p: I.Tensor[I.u8, "N", "P"], s: I.Tensor[I.f16, "N", "S"],
             x: I.Tensor[I.f32, "K"], y: I.Buffer[I.f32, "N"]):
        for n in I.range(p.shape[0]):
            y[n] = I.dot(I.decode(p[n], s[n], format=fmt, k=x.shape[0]), x)
    return gemv


KERNELS = {fmt.name: decode_gemv(fmt) for fmt in (Q2, Q4, Q5, Q6, Q8, T2)}
DEFAULT_FORMATS = ("q4_g64_fp16", "q8_g32_fp16", "t2_g128_fp16", "q2_g64_fp16")
SHAPES = ((4096, 4096), (11008, 4096))
QUICK_SHAPES = ((1024, 1024),)
THREADS = (1, 2)
CHECK_ROWS = 64


def encoded(fmt, rng, n, k):
    """Legal codes (uniform over the format's interval) and scales of either sign."""
    lo, hi = fmt.code_interval
    codes = rng.integers(lo, hi + 1, size=(n, k)).astype(np.int8)
    scales = ((0.01 + 0.04 * rng.random((n, -(-k // fmt.group))))
              * rng.choice([-1.0, 1.0], size=(n, -(-k // fmt.group)))).astype(np.float16)
    return fmt.encode((codes, scales), method="import_encoded")


def blas_threads():
    """A function setting OpenBLAS's thread count (found in the loaded library), or None."""
    np.ones((4, 4), np.float32) @ np.ones(4, np.float32)
    with open("/proc/self/maps") as maps:
        paths = sorted({line.split()[-1] for line in maps if "openblas" in line.lower()})
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for name in ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
                     "openblas_set_num_threads64_", "openblas_set_num_threads"):
            fn = getattr(lib, name, None)
            if fn is not None:
                fn.argtypes = [ctypes.c_int]
                return fn
    return None


class Case:
    """One configuration: a callable and the timings collected for it."""

    def __init__(self, run, setup=None):
        self.run, self.setup, self.times = run, setup, []

    def sample(self, calls):
        if self.setup is not None:
            self.setup()
        self.run()
        for _ in range(calls):
            t0 = time.perf_counter()
            self.run()
            self.times.append(time.perf_counter() - t0)

    @property
    def median(self):
        return statistics.median(self.times)

    @property
    def best(self):
        return min(self.times)


def check(kernel, compiled, p, s, x):
    rows = min(CHECK_ROWS, p.shape[0])
    got, want = np.zeros(rows, np.float32), np.zeros(rows, np.float32)
    compiled(p[:rows], s[:rows], x, got)
    I.interpret(kernel, p[:rows], s[:rows], x, want)
    if not np.array_equal(got.view(np.uint32), want.view(np.uint32)):
        raise SystemExit(f"{kernel.ir.funcs[0].sym_name}: compiled result differs from the "
                         f"interpreter")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--formats", nargs="+", default=list(DEFAULT_FORMATS), choices=sorted(KERNELS))
    ap.add_argument("--quick", action="store_true", help="1024x1024 only")
    ap.add_argument("--rounds", type=int, default=5, help="rounds over every configuration")
    ap.add_argument("--calls", type=int, default=4, help="timed calls per configuration and round")
    args = ap.parse_args(argv)
    shapes = QUICK_SHAPES if args.quick else SHAPES
    set_blas = blas_threads()
    rng = np.random.default_rng(0)
    cases, rows = {}, []
    for n, k in shapes:
        x = rng.standard_normal(k).astype(np.float32)
        w4k = random_q4k(rng, n, k // 256)
        x4k = x.reshape(k // 256, 256)
        y = np.empty(n, np.float32)
        for t in THREADS:
            q4k = I.compile(q4k_gemv, target="cpu", threads=t)
            cases[("Q4_K", n, k, t)] = Case(lambda c=q4k, w=w4k, v=x4k, y=y: c(w, v, y))
        for name in args.formats:
            fmt, kernel = I.formats.get(name), KERNELS[name]
            p, s = fmt.pack(encoded(fmt, rng, n, k))
            w = fmt.decode(fmt.unpack(p, s, k), check=False)
            for t in THREADS:
                ours = I.compile(kernel, target="cpu", threads=t)
                if t == THREADS[0]:
                    check(kernel, ours, p, s, x)
                blas = (lambda t=t: set_blas(t)) if set_blas else None
                cases[(name, n, k, t)] = Case(lambda c=ours, p=p, s=s, x=x, y=y: c(p, s, x, y))
                cases[("numpy", name, n, k, t)] = Case(
                    lambda f=fmt, p=p, s=s, k=k, x=x: f.decode(f.unpack(p, s, k), check=False) @ x,
                    blas)
                cases[("mv", name, n, k, t)] = Case(lambda w=w, x=x: w @ x, blas)
                rows.append((name, n, k, t, p.nbytes + s.nbytes))
    for _ in range(max(1, args.rounds)):
        for case in cases.values():
            case.sample(max(1, args.calls))

    target = I.compile(KERNELS["q4_g64_fp16"], "cpu").isa
    print(f"decode GEMV, seq order, weights hot; {args.rounds} rounds x {args.calls} calls; "
          f"CPU code for {target}; OpenBLAS threads set: {set_blas is not None}")
    for stat in ("median", "best"):
        print(f"\n{stat} of all calls")
        print(f"{'format':<14}{'N x K':>12}{'T':>3}{'us':>10}{'GB/s':>7}{'numpy us':>11}"
              f"{'numpy/ours':>11}{'mv only us':>11}{'Q4_K us':>10}{'ours/Q4_K':>10}")
        for name, n, k, t, nbytes in rows:
            ours = getattr(cases[(name, n, k, t)], stat)
            base = getattr(cases[("numpy", name, n, k, t)], stat)
            mv = getattr(cases[("mv", name, n, k, t)], stat)
            q4k = getattr(cases[("Q4_K", n, k, t)], stat)
            print(f"{name:<14}{f'{n}x{k}':>12}{t:>3}{ours * 1e6:>10.0f}"
                  f"{nbytes / ours / 1e9:>7.1f}{base * 1e6:>11.0f}{base / ours:>11.1f}"
                  f"{mv * 1e6:>11.0f}{q4k * 1e6:>10.0f}{ours / q4k:>10.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
