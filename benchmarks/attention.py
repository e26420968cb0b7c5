"""Decoding attention on the CPU: one query row against a cache of keys and values.

    PYTHONPATH=. python benchmarks/attention.py [--repeat 20] [--lengths 512 4096 32768]
                                                [--dims 128 256] [--quick]

For a query ``q`` (``D`` floats), keys ``k`` and values ``v`` (``L x D``, f32 or f16) and a
scale ``c`` (an f32, ``1 / sqrt(D)`` rounded), the kernel computes, in these orders:

* the scores ``s[t] = dot(q, k[t]) * c``, each dot in ``tree`` order (the adjacent-pair
  tree of the ``D`` products, an f16 key widened to f32 first, exactly);
* ``m = max(s)``, ``s[t] = exp(s[t] - m)`` (the correctly rounded ``I.exp``),
  ``inv = 1 / sum(s)`` with the sum in ``tree`` order;
* ``o[i] = (((0 + s[0] v[0, i]) + s[1] v[1, i]) + ...) * inv``: for each output element
  the weighted values are added in position order (``seq`` over ``t``), which runs on
  vector lanes across ``i``.

Every step rounds to f32 as written (no contraction into FMA). The scores are kept in
``s`` (an ``L``-float scratch buffer the caller passes). Both kernels are checked bit
for bit against the interpreter on a short cache (37 positions) before timing.

The references, best of ``--repeat`` in the same run:

* ``numpy``: ``e = exp(k @ q * c - max)``, ``o = (e @ v) / sum(e)`` with numpy's float32
  (BLAS ``gemv`` on one thread, numpy's ``exp``; an f16 cache is first converted to
  float32, as numpy's own f16 products are many times slower);
* ``read``: reading the K and V bytes once (``np.maximum.reduce`` over their 64-bit
  words, the fastest read-only pass numpy has here): the bandwidth bound, since exact
  softmax needs every score before the first value is weighted, so K and V are each
  read once;
* ``copy``: ``np.copyto`` of the K and V bytes (read and write).
"""
from __future__ import annotations

import argparse
import os
import sys

if __name__ == "__main__":                                     # numpy's BLAS on one thread
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np                                                # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import ninfer_ir as I                                            # noqa: E402
from ninfer_ir.testing import best_seconds                        # noqa: E402

CHECK_LENGTH = 37


@I.func
def attend(q, k, v, c, s, o):
    n = k.shape[0]
    d = k.shape[1]
    for t in I.range(n):
        s[t] = I.dot(q, I.cast(k[t], I.f32), order="tree") * c
    m = I.max(s)
    for t in I.range(n):
        s[t] = I.exp(s[t] - m)
    inv = 1.0 / I.sum(s, order="tree")
    for i in I.range(d):
        o[i] = 0.0
    for t in I.range(n):
        w = s[t]
        for i in I.range(d):
            o[i] = o[i] + w * I.cast(v[t, i], I.f32)
    for i in I.range(d):
        o[i] = o[i] * inv


@I.kernel
def attend_f32(q: I.Tensor[I.f32, "D"], k: I.Tensor[I.f32, "L", "D"],
               v: I.Tensor[I.f32, "L", "D"], c: I.f32, s: I.Buffer[I.f32, "L"],
               o: I.Buffer[I.f32, "D"]):
    attend(q, k, v, c, s, o)


@I.kernel
def attend_f16(q: I.Tensor[I.f32, "D"], k: I.Tensor[I.f16, "L", "D"],
               v: I.Tensor[I.f16, "L", "D"], c: I.f32, s: I.Buffer[I.f32, "L"],
               o: I.Buffer[I.f32, "D"]):
    attend(q, k, v, c, s, o)


KERNELS = {"f32": (attend_f32, np.float32), "f16": (attend_f16, np.float16)}


def inputs(rng, length: int, dim: int, dtype):
    """``q, k, v, c`` for a cache of ``length`` positions of ``dim`` floats."""
    q = rng.normal(size=dim).astype(np.float32)
    k = rng.normal(size=(length, dim)).astype(dtype)
    v = rng.normal(size=(length, dim)).astype(dtype)
    return q, k, v, np.float32(1 / np.sqrt(dim))


def outputs(length: int, dim: int):
    return np.zeros(length, np.float32), np.zeros(dim, np.float32)


def numpy_attend(q, k, v, c):
    k, v = k.astype(np.float32, copy=False), v.astype(np.float32, copy=False)
    s = (k @ q) * c
    e = np.exp(s - s.max())
    return (e @ v) / e.sum()


def check(run, kernel, rng, dim: int, dtype):
    """Raise unless ``run`` gives the interpreter's bits on a short cache."""
    args = inputs(rng, CHECK_LENGTH, dim, dtype)
    got, want = outputs(CHECK_LENGTH, dim), outputs(CHECK_LENGTH, dim)
    run(*args, *got)
    I.interpret(kernel, *args, *want)
    if any(g.tobytes() != w.tobytes() for g, w in zip(got, want)):
        raise SystemExit(f"attention {dtype.__name__} D={dim}: compiled result differs "
                         f"from the interpreter")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--lengths", type=int, nargs="+", default=[512, 4096, 32768])
    ap.add_argument("--dims", type=int, nargs="+", default=[128, 256])
    ap.add_argument("--quick", action="store_true", help="D = 128, L = 512, 3 repeats")
    args = ap.parse_args(argv)
    if args.quick:
        args.repeat, args.lengths, args.dims = 3, [512], [128]
    rng = np.random.default_rng(0)
    if hasattr(os, "getloadavg"):
        print(f"load average {os.getloadavg()[0]:.2f}; 1 thread")
    print(f"{'cache':5s} {'D':>4s} {'L':>6s} {'K+V MiB':>8s} {'ours us':>9s} {'numpy us':>9s} "
          f"{'read us':>8s} {'copy us':>8s} {'/numpy':>7s} {'/read':>6s}")
    for name, (kernel, dtype) in KERNELS.items():
        run = I.compile(kernel, target="cpu")
        for dim in args.dims:
            check(run, kernel, rng, dim, dtype)
            for length in args.lengths:
                q, k, v, c = inputs(rng, length, dim, dtype)
                s, o = outputs(length, dim)
                words = [a.reshape(-1).view(np.uint64) for a in (k, v)]
                dst = [np.empty_like(a) for a in (k, v)]
                ours = best_seconds(lambda: run(q, k, v, c, s, o), args.repeat)
                ref = best_seconds(lambda: numpy_attend(q, k, v, c), args.repeat)
                read = best_seconds(lambda: [np.maximum.reduce(w) for w in words], args.repeat)
                copy = best_seconds(lambda: [np.copyto(d, a) for d, a in zip(dst, (k, v))],
                                    args.repeat)
                mib = (k.nbytes + v.nbytes) / 2**20
                print(f"{name:5s} {dim:4d} {length:6d} {mib:8.2f} {ours * 1e6:9.1f} "
                      f"{ref * 1e6:9.1f} {read * 1e6:8.1f} {copy * 1e6:8.1f} "
                      f"{ours / ref:7.2f} {ours / read:6.2f}", flush=True)


if __name__ == "__main__":
    main()
