"""GEMV with epilogues on the CPU: ``y[n] = f(dot(w[n], x))`` against the plain GEMV.

Each row loop below keeps the rows kernel (the ``select`` pass's remark says so; the
script stops if one does not): the kernel computes the dots of a block of rows, then the
loop's own epilogue runs on the block. For Q4_K x Q8_K (x quantized in the call) and
for the decode + f32 dot of ``q4_g64_fp16``, on N x K weights, at 1 and 2 threads:

* plain:    y[n] = dot(n)
* bias:     y[n] = dot(n) + b[n]
* silu:     y[n] = silu(dot(n)), silu(g) = g * (1 / (1 + exp(-g)))
* residual: y[n] = y[n] + dot(n)
* gate/up:  y[n] = silu(dot_g(n)) * dot_u(n), two weight matrices over the same x

and prints its ratio to the plain GEMV of the same format and thread count (for gate/up,
to two plain GEMVs called one after the other, one on each of its weight matrices: the
same weight bytes read). Each sample times the plain GEMV and then the epilogue loop
right after it (best of ``--calls`` calls each), so a slow phase of a shared machine hits
both alike; the ratio is the median over ``--rounds`` samples. A last line gives what each
epilogue costs per row, on 65536 Q4_K rows of one record each. Every kernel is checked
bit for bit against the interpreter on 64 rows first.

    PYTHONPATH=. python benchmarks/gemv_epilogue.py            # 4096 x 4096
    PYTHONPATH=. python benchmarks/gemv_epilogue.py --quick    # 1024 x 1024
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import ninfer_ir as I  # noqa: E402
from gemv_decode import encoded  # noqa: E402
from q4k_gemv import random_q4k  # noqa: E402

Q4K, Q8K = I.quant.q4_k, I.quant.q8_k
FMT = I.formats.get("q4_g64_fp16")
THREADS = (1, 2)
CHECK_ROWS = 64


@I.kernel
def q4k_plain(w: I.Tensor[I.u8, "N", "G", 144], x: I.Tensor[I.f32, "G", 256],
              y: I.Buffer[I.f32, "N"]):
    xq = I.quantize(x, format=Q8K)
    for n in I.range(w.shape[0]):
        y[n] = I.quantized_dot(w[n], xq, lhs_format=Q4K, rhs_format=Q8K, acc_dtype=I.f32)


@I.kernel
def q4k_bias(w: I.Tensor[I.u8, "N", "G", 144], x: I.Tensor[I.f32, "G", 256],
             b: I.Tensor[I.f32, "N"], y: I.Buffer[I.f32, "N"]):
    xq = I.quantize(x, format=Q8K)
    for n in I.range(w.shape[0]):
        y[n] = I.quantized_dot(w[n], xq, lhs_format=Q4K, rhs_format=Q8K,
                               acc_dtype=I.f32) + b[n]


@I.kernel
def q4k_silu(w: I.Tensor[I.u8, "N", "G", 144], x: I.Tensor[I.f32, "G", 256],
             y: I.Buffer[I.f32, "N"]):
    xq = I.quantize(x, format=Q8K)
    for n in I.range(w.shape[0]):
        g = I.quantized_dot(w[n], xq, lhs_format=Q4K, rhs_format=Q8K, acc_dtype=I.f32)
        y[n] = g * (1.0 / (1.0 + I.exp(-g)))


@I.kernel
def q4k_residual(w: I.Tensor[I.u8, "N", "G", 144], x: I.Tensor[I.f32, "G", 256],
                 y: I.Buffer[I.f32, "N"]):
    xq = I.quantize(x, format=Q8K)
    for n in I.range(w.shape[0]):
        y[n] = y[n] + I.quantized_dot(w[n], xq, lhs_format=Q4K, rhs_format=Q8K,
                                      acc_dtype=I.f32)


@I.kernel
def q4k_gate_up(wg: I.Tensor[I.u8, "N", "G", 144], wu: I.Tensor[I.u8, "N", "G", 144],
                x: I.Tensor[I.f32, "G", 256], y: I.Buffer[I.f32, "N"]):
    xq = I.quantize(x, format=Q8K)
    for n in I.range(wg.shape[0]):
        g = I.quantized_dot(wg[n], xq, lhs_format=Q4K, rhs_format=Q8K, acc_dtype=I.f32)
        u = I.quantized_dot(wu[n], xq, lhs_format=Q4K, rhs_format=Q8K, acc_dtype=I.f32)
        y[n] = g * (1.0 / (1.0 + I.exp(-g))) * u


@I.kernel
def dec_plain(p: I.Tensor[I.u8, "N", "P"], s: I.Tensor[I.f16, "N", "S"],
              x: I.Tensor[I.f32, "K"], y: I.Buffer[I.f32, "N"]):
    for n in I.range(p.shape[0]):
        y[n] = I.dot(I.decode(p[n], s[n], format=FMT, k=x.shape[0]), x)


@I.kernel
def dec_bias(p: I.Tensor[I.u8, "N", "P"], s: I.Tensor[I.f16, "N", "S"],
             x: I.Tensor[I.f32, "K"], b: I.Tensor[I.f32, "N"], y: I.Buffer[I.f32, "N"]):
    for n in I.range(p.shape[0]):
        y[n] = I.dot(I.decode(p[n], s[n], format=FMT, k=x.shape[0]), x) + b[n]


@I.kernel
def dec_silu(p: I.Tensor[I.u8, "N", "P"], s: I.Tensor[I.f16, "N", "S"],
             x: I.Tensor[I.f32, "K"], y: I.Buffer[I.f32, "N"]):
    for n in I.range(p.shape[0]):
        g = I.dot(I.decode(p[n], s[n], format=FMT, k=x.shape[0]), x)
        y[n] = g * (1.0 / (1.0 + I.exp(-g)))


@I.kernel
def dec_residual(p: I.Tensor[I.u8, "N", "P"], s: I.Tensor[I.f16, "N", "S"],
                 x: I.Tensor[I.f32, "K"], y: I.Buffer[I.f32, "N"]):
    for n in I.range(p.shape[0]):
        y[n] = y[n] + I.dot(I.decode(p[n], s[n], format=FMT, k=x.shape[0]), x)


@I.kernel
def dec_gate_up(pg: I.Tensor[I.u8, "N", "P"], sg: I.Tensor[I.f16, "N", "S"],
                pu: I.Tensor[I.u8, "N", "P"], su: I.Tensor[I.f16, "N", "S"],
                x: I.Tensor[I.f32, "K"], y: I.Buffer[I.f32, "N"]):
    for n in I.range(pg.shape[0]):
        g = I.dot(I.decode(pg[n], sg[n], format=FMT, k=x.shape[0]), x)
        u = I.dot(I.decode(pu[n], su[n], format=FMT, k=x.shape[0]), x)
        y[n] = g * (1.0 / (1.0 + I.exp(-g))) * u


KINDS = ("plain", "bias", "silu", "residual", "gate/up")
KERNELS = {"Q4_K": (q4k_plain, q4k_bias, q4k_silu, q4k_residual, q4k_gate_up),
           FMT.name: (dec_plain, dec_bias, dec_silu, dec_residual, dec_gate_up)}


def _arguments(fmt, rng, n, k):
    """(weights of one matrix, weights of the second, x, b) for ``fmt``."""
    if fmt == "Q4_K":
        w1, w2 = (random_q4k(rng, n, k // 256) for _ in range(2))
        return (w1,), (w2,), rng.standard_normal((k // 256, 256)).astype(np.float32)
    w1, w2 = (FMT.pack(encoded(FMT, rng, n, k)) for _ in range(2))
    return tuple(w1), tuple(w2), rng.standard_normal(k).astype(np.float32)


def _calls(kind, w1, w2, x, b, y):
    return {"plain": (*w1, x, y), "bias": (*w1, x, b, y), "silu": (*w1, x, y),
            "residual": (*w1, x, y), "gate/up": (*w1, *w2, x, y)}[kind]


def _check(kernel, kind, w1, w2, x, b, rows):
    """The compiled kernel gives the interpreter's bits on the first ``rows`` rows."""
    w1, w2 = (tuple(a[:rows] for a in w) for w in (w1, w2))
    want = _calls(kind, w1, w2, x, b[:rows], np.ones(rows, np.float32))
    got = [a.copy() for a in want]
    I.interpret(kernel, *want)
    I.compile(kernel, "cpu")(*got)
    if got[-1].tobytes() != want[-1].tobytes():
        raise SystemExit(f"{kernel.ir.funcs[0].sym_name}: compiled result differs from the "
                         f"interpreter")


def _selected(kernel):
    remarks = I.lower(kernel, "cpu", report=True)[1].remarks
    if not all(r.kernel for r in remarks):
        raise SystemExit(f"{kernel.ir.funcs[0].sym_name}: {remarks}")


def _best(run, calls):
    """The best time of ``calls`` calls of ``run``, after one untimed call."""
    run()
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    return min(times)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1024 x 1024")
    ap.add_argument("--rounds", type=int, default=15, help="rounds over every configuration")
    ap.add_argument("--calls", type=int, default=3, help="timed calls per sample")
    args = ap.parse_args(argv)
    n = k = 1024 if args.quick else 4096
    rng = np.random.default_rng(0)
    runs = {}
    for fmt, kernels in KERNELS.items():
        w1, w2, x = _arguments(fmt, rng, n, k)
        b = rng.standard_normal(n).astype(np.float32)
        for kind, kernel in zip(KINDS, kernels):
            _selected(kernel)
            y = np.zeros(n, np.float32)
            call = _calls(kind, w1, w2, x, b, y)
            _check(kernel, kind, w1, w2, x, b, CHECK_ROWS)
            for t in THREADS:
                c = I.compile(kernel, "cpu", threads=t)
                runs[(fmt, kind, t)] = lambda c=c, a=call: c(*a)
                if kind == "plain":      # the two plain GEMVs the gate/up loop replaces
                    other = _calls(kind, w2, w1, x, b, y)
                    runs[(fmt, "2x plain", t)] = lambda c=c, a=call, o=other: (c(*a), c(*o))
    ratios = {key: [] for key in runs}
    times = {key: [] for key in runs}
    calls = max(1, args.calls)
    for _ in range(max(1, args.rounds)):
        for fmt in KERNELS:
            for t in THREADS:
                for kind in KINDS[1:]:
                    base_key = (fmt, "2x plain" if kind == "gate/up" else "plain", t)
                    base = _best(runs[base_key], calls)
                    ours = _best(runs[(fmt, kind, t)], calls)
                    times[base_key].append(base)
                    times[(fmt, kind, t)].append(ours)
                    ratios[(fmt, kind, t)].append(ours / base)
    print(f"GEMV {n} x {k} with epilogues, weights hot; {args.rounds} rounds; each sample "
          f"is the best of {calls} calls of the plain GEMV (for gate/up: two plain GEMVs, "
          f"one on each of its matrices) then the best of {calls} calls of the epilogue "
          f"loop, right after; ratio = median over the samples of epilogue / plain "
          f"(min and max in brackets); us = median of the samples")
    print(f"{'format':<14}{'T':>3}{'plain us':>10}" + "".join(f"{kind:>24}"
                                                           for kind in KINDS[1:]))
    for fmt in KERNELS:
        for t in THREADS:
            cells = []
            for kind in KINDS[1:]:
                r = ratios[(fmt, kind, t)]
                us = statistics.median(times[(fmt, kind, t)]) * 1e6
                cells.append(f"{us:.0f} {statistics.median(r):.3f} [{min(r):.2f},{max(r):.2f}]")
            plain = statistics.median(times[(fmt, "plain", t)]) * 1e6
            print(f"{fmt:<14}{t:>3}{plain:>10.0f}" + "".join(f"{c:>24}" for c in cells))
    _per_row(rng, calls, max(1, args.rounds))
    return 0


def _per_row(rng, calls, rounds, n=65536):
    """What the epilogue itself costs: Q4_K rows of one record each (a short dot), 1
    thread, nanoseconds per row (best sample)."""
    w1, _, x = _arguments("Q4_K", rng, n, 256)
    b = rng.standard_normal(n).astype(np.float32)
    y = np.zeros(n, np.float32)
    runs = {kind: (lambda c=I.compile(kernel, "cpu", threads=1), a=_calls(kind, w1, w1, x, b, y):
                   c(*a)) for kind, kernel in zip(KINDS[:4], KERNELS["Q4_K"])}
    best = {kind: min(_best(run, calls) for _ in range(rounds)) for kind, run in runs.items()}
    print(f"\nper row, Q4_K rows of 1 record, {n} rows, 1 thread: " +
          ", ".join(f"{kind} {t * 1e9 / n:.2f} ns" for kind, t in best.items()))


if __name__ == "__main__":
    raise SystemExit(main())
