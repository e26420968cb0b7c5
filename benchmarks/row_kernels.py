"""Transformer row kernels on the CPU against a copy of the same bytes.

    PYTHONPATH=. python benchmarks/row_kernels.py [--repeat 200] [--threads 1]

Each kernel is written in the DSL with the math functions (``I.rsqrt``, ``I.exp``) and a
reduction order that runs on vector lanes (``tree``; docs/performance.md):

* ``rmsnorm``: ``y = x * rsqrt(dot(x, x) / D + eps) * g`` for each row of D floats (the
  row sums of a block of 16 rows first, then their ``rsqrt`` in one vectorised loop,
  kept in ``inv``, then the scaling);
* ``softmax``: ``m = max(x)``, ``y = exp(x - m)``, ``y = y * (1 / sum(y))``;
* ``silu_mul``: ``y = a / (1 + exp(-a)) * b`` elementwise.

Rows of 640 and 4096 floats (RMSNorm) and of 1024 floats (softmax) are run as a block of
rows per call (``--block`` floats in all), so that the call itself (a few microseconds from
Python) does not dominate; a 262144-float softmax row and the 11008-float SiLU-mul run
once per call (the latter with its call overhead, as a user would see it). The reference
is ``np.copyto`` of the kernel's input to its output buffer (the same bytes read and
written, for SiLU-mul one of its two inputs), best of ``--repeat`` in the same run; the
ratio is kernel / copy. Each kernel is first checked bit for bit against the interpreter
on a small part of its arguments (the interpreter runs loops one element at a time).
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import ninfer_ir as I                                            # noqa: E402
from ninfer_ir.testing import best_seconds                        # noqa: E402

ORDER = "tree"


@I.kernel
def rmsnorm_rows(x: I.Tensor[I.f32, "R", "D"], g: I.Tensor[I.f32, "D"],
                 y: I.Buffer[I.f32, "R", "D"], inv: I.Buffer[I.f32, "R"]):
    d = I.cast(x.shape[1], I.f32)
    rows = x.shape[0]
    for r0 in I.range(0, rows, 16):                # blocks of 16 rows stay in cache
        r1 = I.minimum(r0 + 16, rows)
        for r in I.range(r0, r1):
            inv[r] = I.dot(x[r], x[r], order="tree") / d
        for r in I.range(r0, r1):                  # the rsqrt of 16 rows at once
            inv[r] = I.rsqrt(inv[r] + 1e-6)
        for r in I.range(r0, r1):
            s = inv[r]
            for i in I.range(x.shape[1]):
                y[r, i] = x[r, i] * s * g[i]


@I.kernel
def softmax_rows(x: I.Tensor[I.f32, "R", "D"], y: I.Buffer[I.f32, "R", "D"]):
    d = x.shape[1]
    for r in I.range(x.shape[0]):
        m = I.max(x[r])
        for i in I.range(d):
            y[r, i] = I.exp(x[r, i] - m)
        inv = 1.0 / I.sum(y[r], order="tree")
        for i in I.range(d):
            y[r, i] = y[r, i] * inv


@I.kernel
def silu_mul(a: I.Tensor[I.f32, "N"], b: I.Tensor[I.f32, "N"], y: I.Buffer[I.f32, "N"]):
    for i in I.range(a.shape[0]):
        v = a[i]
        y[i] = v / (I.exp(-v) + 1.0) * b[i]



def _head(a):
    """A small part of an argument (two rows, 4101 columns) to check against the
    interpreter, which runs the loops one element at a time."""
    return a[:2, :4101] if a.ndim == 2 else a[:4101]


def _same(x, *rest):
    return [np.zeros_like(x)]


def _rms_outs(x, g):
    return [np.zeros_like(x), np.zeros(x.shape[0], np.float32)]


def cases(block: int, rng):
    def rows(d):
        return max(1, block // d)
    for d in (640, 4096):
        x = rng.normal(size=(rows(d), d)).astype(np.float32)
        g = rng.uniform(0.5, 1.5, d).astype(np.float32)
        yield f"rmsnorm D={d} ({rows(d)} rows)", rmsnorm_rows, [x, g], _rms_outs, x
    for d, r in ((1024, rows(1024)), (262144, 1)):
        x = (rng.normal(size=(r, d)) * 4).astype(np.float32)
        yield f"softmax D={d} ({r} row{'s' if r > 1 else ''})", softmax_rows, [x], _same, x
    a = rng.normal(size=11008).astype(np.float32) * 3
    b = rng.normal(size=11008).astype(np.float32)
    yield "silu_mul N=11008", silu_mul, [a, b], _same, a


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=200)
    ap.add_argument("--block", type=int, default=65536, help="floats per call for short rows")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    if hasattr(os, "getloadavg"):
        print(f"load average {os.getloadavg()[0]:.2f}; {args.threads} thread(s); "
              f"reductions in {ORDER}")
    print(f"{'kernel':34s} {'us/call':>9s} {'copy us':>9s} {'ratio':>7s}")
    for name, kernel, ins, make_outs, like in cases(args.block, rng):
        outs = make_outs(*ins)
        k = I.compile(kernel, target="cpu", threads=args.threads)
        small = [_head(a) for a in ins]
        got, want = make_outs(*small), make_outs(*small)
        k(*small, *got)
        I.interpret(kernel, *small, *want)
        if any(o.tobytes() != w.tobytes() for o, w in zip(got, want)):
            raise SystemExit(f"{name}: compiled result differs from the interpreter")
        dst = np.empty_like(like)
        ours = best_seconds(lambda: k(*ins, *outs), args.repeat)
        copy = best_seconds(lambda: np.copyto(dst, like), args.repeat)
        print(f"{name:34s} {ours * 1e6:9.2f} {copy * 1e6:9.2f} {ours / copy:7.2f}", flush=True)


if __name__ == "__main__":
    main()
