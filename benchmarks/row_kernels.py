"""Transformer row kernels on the CPU against a copy of the same bytes.

    PYTHONPATH=. python benchmarks/row_kernels.py [--repeat 200] [--threads 1]

Each kernel is written in the DSL with the math functions (``I.rsqrt``, ``I.exp``) and a
reduction order that runs on vector lanes (``tree``; docs/performance.md):

* ``rmsnorm``: ``y = x * rsqrt(dot(x, x) / D + eps) * g`` for each row of D floats (the
  row sums of a block of 16 rows first, then their ``rsqrt`` in one vectorised loop,
  kept in ``inv``, then the scaling);
* ``softmax``: ``m = max(x)``, ``y = exp(x - m)``, ``y = y * (1 / sum(y))``;
* ``silu_mul``: ``y = a / (1 + exp(-a)) * b`` elementwise, for each row of N floats.

Every kernel runs on a block of rows per call (``--block`` floats in all; the 262144-float
softmax row is one row), so that the call from Python (its cost, ``call``, is printed:
an empty kernel's call time) does not dominate. The reference ``copy`` is ``np.copyto``
between two float buffers, best of ``--repeat`` in the same run, that reads and writes
as many bytes as the kernel's row data: the input rows into the output rows for RMSNorm
and softmax (``x`` to ``y``), and for SiLU-mul, which reads two floats and writes one per
element, a copy of 1.5 floats per element (the same 12 bytes moved). The ratio is
kernel / copy.

For the kernels built on ``I.exp`` two more columns show what the exponential alone
costs in the same run, as a multiple of the same copy: ``exp``, a DSL loop ``y = exp(x)``
over the same elements (the correctly rounded ``I.exp`` of docs/math.md), and
``np.exp``, numpy's own float32 exponential (vectorised, not correctly rounded) over the
same elements. Each kernel is first checked bit for bit against the interpreter on a
small part of its arguments (the interpreter runs loops one element at a time).
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
def silu_mul(a: I.Tensor[I.f32, "R", "N"], b: I.Tensor[I.f32, "R", "N"],
             y: I.Buffer[I.f32, "R", "N"]):
    for r in I.range(a.shape[0]):
        for i in I.range(a.shape[1]):
            v = a[r, i]
            y[r, i] = v / (I.exp(-v) + 1.0) * b[r, i]


@I.kernel
def exp_rows(x: I.Tensor[I.f32, "R", "D"], y: I.Buffer[I.f32, "R", "D"]):
    for r in I.range(x.shape[0]):
        for i in I.range(x.shape[1]):
            y[r, i] = I.exp(x[r, i])


@I.kernel
def empty(x: I.Tensor[I.f32, "N"], y: I.Buffer[I.f32, "N"]):
    y[0] = x[0]



def _head(a):
    """A small part of an argument (two rows, 4101 columns) to check against the
    interpreter, which runs the loops one element at a time."""
    return a[:2, :4101] if a.ndim == 2 else a[:4101]


def _floats(n):
    """An ``n``-float buffer whose first byte is 16 bytes past a 64-byte boundary, as
    numpy's large arrays are here (so the copy and the kernel see the same alignment)."""
    buf = np.empty(n + 32, np.float32)
    k = (4 - buf.ctypes.data // 4) % 16
    return buf[k:k + n]


def _same(x, *rest):
    return [np.zeros_like(x)]


def _rms_outs(x, g):
    return [np.zeros_like(x), np.zeros(x.shape[0], np.float32)]


def cases(block: int, rng):
    """``(name, kernel, inputs, make_outputs, floats copied, exp elements or 0)``."""
    def rows(d):
        return max(1, block // d)
    for d in (640, 4096):
        x = rng.normal(size=(rows(d), d)).astype(np.float32)
        g = rng.uniform(0.5, 1.5, d).astype(np.float32)
        yield f"rmsnorm D={d} ({rows(d)} rows)", rmsnorm_rows, [x, g], _rms_outs, x.size, 0
    for d, r in ((1024, rows(1024)), (262144, 1)):
        x = (rng.normal(size=(r, d)) * 4).astype(np.float32)
        yield (f"softmax D={d} ({r} row{'s' if r > 1 else ''})", softmax_rows, [x], _same,
               x.size, x.size)
    a = rng.normal(size=(rows(11008), 11008)).astype(np.float32) * 3
    b = rng.normal(size=a.shape).astype(np.float32)
    yield (f"silu_mul N=11008 ({a.shape[0]} rows)", silu_mul, [a, b], _same,
           a.size * 3 // 2, a.size)


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
    k = I.compile(empty, target="cpu")
    one = np.zeros(16, np.float32)
    call = best_seconds(lambda: k(one, one), args.repeat * 10)
    print(f"call: an empty kernel's call from Python {call * 1e6:.2f} us")
    print(f"{'kernel':34s} {'us/call':>9s} {'copy us':>9s} {'ratio':>7s} {'exp':>7s} "
          f"{'np.exp':>7s}")
    exp_k = I.compile(exp_rows, target="cpu", threads=args.threads)
    for name, kernel, ins, make_outs, copied, exps in cases(args.block, rng):
        outs = make_outs(*ins)
        k = I.compile(kernel, target="cpu", threads=args.threads)
        small = [_head(a) for a in ins]
        got, want = make_outs(*small), make_outs(*small)
        k(*small, *got)
        I.interpret(kernel, *small, *want)
        if any(o.tobytes() != w.tobytes() for o, w in zip(got, want)):
            raise SystemExit(f"{name}: compiled result differs from the interpreter")
        src, dst = _floats(copied), _floats(copied)
        src[:] = rng.normal(size=copied)
        ours = best_seconds(lambda: k(*ins, *outs), args.repeat)
        copy = best_seconds(lambda: np.copyto(dst, src), args.repeat)
        line = f"{name:34s} {ours * 1e6:9.2f} {copy * 1e6:9.2f} {ours / copy:7.2f}"
        if exps:
            x = ins[0].reshape(1, -1)
            y = np.empty_like(x)
            ours_exp = best_seconds(lambda: exp_k(x, y), args.repeat)
            np_exp = best_seconds(lambda: np.exp(x, out=y), args.repeat)
            line += f" {ours_exp / copy:7.2f} {np_exp / copy:7.2f}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
