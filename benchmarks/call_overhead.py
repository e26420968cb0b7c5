"""The Python cost of calling a compiled CPU kernel: a plain call against a bound one.

    python benchmarks/call_overhead.py [--repeat 5] [--calls 20000]

Two kernels whose native work is a few nanoseconds, so the time is the launcher's:
``empty`` (one scalar parameter) and ``twelve`` (12 parameters: 5 tensors, 5 buffers,
2 scalars, the argument list of a model's projection kernel). For each, microseconds
per call (the best of ``--repeat`` runs of ``--calls`` calls) for

* the plain call ``k(*args)`` (checks every argument, tests every tensor against every
  buffer for overlap, packs the descriptor);
* the bound call with no free argument, ``k.bind(*args)()``;
* the bound call with one free scalar (a position), ``k.bind(..., pos=...)`` called
  as ``bound(pos)``;
* for ``twelve``, the bound call with one free array (checked per call, tested for
  overlap against the buffers).

and the ratio plain / bound, measured in the same run.
"""
import argparse
import time

import numpy as np

import ninfer_ir as I


@I.kernel
def empty(n: I.index):
    for i in I.range(n):
        pass


@I.kernel
def twelve(a: I.Tensor[I.f32, "M", "D"], b: I.Tensor[I.f32, "D"], c: I.Tensor[I.u8, "N", "G", 34],
           d: I.Tensor[I.u8, "N", "G", 34], e: I.Tensor[I.f32, "N"],
           x: I.Buffer[I.f32, "M", "D"], y: I.Buffer[I.u8, "M", "G", 34],
           q: I.Buffer[I.f32, "M", "N"], k: I.Buffer[I.f32, "M", "N"],
           v: I.Buffer[I.f32, "M", "N"], eps: I.f32, pos: I.index):
    for i in I.range(pos):
        x[0, 0] = a[0, 0] + b[0] + e[0] + eps


def twelve_args():
    f32 = np.float32
    return [np.ones((1, 64), f32), np.ones(64, f32), np.zeros((8, 2, 34), np.uint8),
            np.zeros((8, 2, 34), np.uint8), np.ones(8, f32), np.zeros((1, 64), f32),
            np.zeros((1, 2, 34), np.uint8), np.zeros((1, 8), f32), np.zeros((1, 8), f32),
            np.zeros((1, 8), f32), f32(1e-6), 0]


def per_call(run, calls: int, repeat: int) -> float:
    """Microseconds per call of ``run()``, the best of ``repeat`` runs."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(calls):
            run()
        best = min(best, (time.perf_counter() - t0) / calls)
    return 1e6 * best


def cases():
    """(kernel, [(what, callable of no arguments)]) per kernel."""
    e = I.compile(empty, target="cpu", threads=1)
    yield "empty (1 scalar)", [
        ("plain call", lambda: e(0)),
        ("bound, nothing free", lambda b=e.bind(0): b()),
        ("bound, 1 free scalar", lambda b=e.bind(): b(0))]
    t = I.compile(twelve, target="cpu", threads=1)
    args = twelve_args()
    fixed = args[:-1]
    named = dict(zip("bcdexyqkv", args[1:10]), eps=args[10], pos=0)
    yield "twelve (10 arrays, 2 scalars)", [
        ("plain call", lambda: t(*args)),
        ("bound, nothing free", lambda b=t.bind(*args): b()),
        ("bound, 1 free scalar", lambda b=t.bind(*fixed): b(0)),
        ("bound, 1 free array", lambda b=t.bind(**named), a=args[0]: b(a))]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--calls", type=int, default=20000)
    args = ap.parse_args(argv)
    for name, runs in cases():
        print(f"{name}: us per call (best of {args.repeat} x {args.calls} calls)")
        plain = None
        for what, run in runs:
            run()                                          # compiles what it needs
            us = per_call(run, args.calls, args.repeat)
            plain = plain or us
            print(f"  {what:<24} {us:8.2f} us   plain / this {plain / us:6.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
