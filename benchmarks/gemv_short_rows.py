"""GEMV with short rows (K = 640, as in Gemma 3 270M) for the pairs of the model, hot
and cold, against ggml and against a plain read of the same bytes.

With K = 640 a row is only 20 records (680 bytes of Q8_0, 440 of Q5_0), so the rows
kernel's 16 per-row streams are each a dozen cache lines long: too short for the
hardware prefetchers to follow, which makes a walk from DRAM latency-bound
(docs/cpu-performance-notes.md, "Short rows"). For each shape (format, N x K):

* hot: back-to-back calls on one matrix (for a matrix larger than the last-level cache,
  such as the 262144 x 640 output projection, "hot" is itself a DRAM stream);
* cold: calls rotate over distinct copies of the matrix, 4x the last-level cache in all
  (``gemv_q4k.Cold``), as a model's layers do;
* ours: the tensor-level GEMV of ``gemv_formats`` (x quantized to Q8_0 inside the call,
  then the pair's rows kernel); ggml: ``ggml_mul_mat`` on the same bytes (one graph per
  copy on one pool); read: the compiled ``stream_read`` summing the weight bytes as i32
  words, the floor any GEMV over them meets where they live;
* GB/s of weight bytes per call, and ours / ggml (below 1: we are faster).

Wall time by default; ``--cpu-time`` (T = 1) times the calling thread's CPU time, which
a shared machine disturbs less (a stall on memory still counts).

Every compiled result is checked bit for bit against the interpreter (``gemv_formats``),
and ours against ggml to a relative 1e-4 (ggml rounds its float sums differently).

    PYTHONPATH=. python benchmarks/gemv_short_rows.py                 # default shapes
    PYTHONPATH=. python benchmarks/gemv_short_rows.py --shape q5_0:2048x640
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ninfer_ir as I  # noqa: E402
from ninfer_ir.quant import PAIRS  # noqa: E402
from gemv_formats import GGML_TYPES, check, gemv_module, random_weights  # noqa: E402
from gemv_q4k import (Cold, Evictor, GgmlGraphs, eviction_bytes,  # noqa: E402
                      last_level_cache, load_ggml, stream_read, time_interleaved)

SHAPES = ("q8_0:262144x640", "q5_0:2048x640", "q5_0:640x2048", "q8_0:2048x640",
          "q6_k:640x2048")


def parse_shape(text):
    fmt, _, dims = text.partition(":")
    n, _, k = dims.partition("x")
    pair = next((p for p in PAIRS.values() if p.lhs.name == fmt), None)
    if pair is None or not n.isdigit() or not k.isdigit() or int(k) % pair.block_elems:
        raise SystemExit(f"--shape {text!r}: want FORMAT:NxK with a weight format of the "
                         f"pair table and K a multiple of its block")
    return pair, int(n), int(k)


def gbps(nbytes, seconds):
    return nbytes / seconds / 1e9


def run_shape(pair, n, k, ggml, cold, reps, threads, rng, clock):
    g = k // pair.block_elems
    w = random_weights(rng, pair, n, g)
    x = rng.standard_normal((g, pair.block_elems)).astype(np.float32)
    ours = I.compile(gemv_module(pair), target="cpu", threads=threads)
    read = I.compile(stream_read, target="cpu", threads=threads)
    y = np.zeros(n, np.float32)
    words = np.zeros(n, np.int32)
    ws = cold.copies(w)
    peer = None
    if ggml is not None:
        peer = GgmlGraphs(ggml, [[(c, x)] for c in ws], threads,
                          ggml_type=GGML_TYPES[pair.lhs.name], block=pair.block_elems)
        ours(w, x, y)
        peer.run(0)
        err = np.abs(y - peer.result(0)).max() / np.abs(y).max()
        if err > 1e-4:
            raise AssertionError(f"{pair} {n}x{k}: ours and ggml differ by {err:.2g}")
    views = [c.reshape(n, -1).view(np.int32) for c in ws]
    groups = {"ours": ([lambda c=c: ours(c, x, y) for c in ws], None),
              "read": ([lambda v=v: read(v, words) for v in views], None)}
    if peer is not None:
        groups["ggml"] = ([lambda i=i: peer.run(i) for i in range(len(ws))], peer.pause)
    names = list(groups)
    settle = [after for _, after in groups.values()]
    hot = time_interleaved([fns[:1] for fns, _ in groups.values()], reps, settle, clock)
    colds = time_interleaved([fns for fns, _ in groups.values()], reps, settle, clock)
    if peer is not None:
        peer.close()
    out = {}
    for name, h, c in zip(names, hot, colds):
        out[name] = (statistics.median(h), statistics.median(c))
    return w.nbytes, len(ws), out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", action="append", metavar="FORMAT:NxK",
                        help=f"a shape (repeatable); default {' '.join(SHAPES)}")
    parser.add_argument("--reps", type=int, default=40)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--no-ggml", action="store_true")
    parser.add_argument("--cpu-time", action="store_true",
                        help="time the calling thread's CPU time (steadier on a shared "
                             "machine; T = 1 only: both run on the calling thread)")
    args = parser.parse_args(argv)
    shapes = [parse_shape(s) for s in (args.shape or SHAPES)]
    if args.cpu_time and args.threads != 1:
        raise SystemExit("--cpu-time measures the calling thread: T = 1 only")
    clock = time.thread_time if args.cpu_time else time.perf_counter
    ggml, why = (None, "skipped") if args.no_ggml else load_ggml()
    llc = last_level_cache()
    cold = Cold("rotate", eviction_bytes(llc), Evictor(1 << 20))
    print(f"T = {args.threads}; {'CPU' if args.cpu_time else 'wall'} time; "
          f"{cold.describe()}; ggml: "
          + (f"llama-cpp-python {ggml.version}" if ggml else f"not available ({why})"))
    print(f"{'shape':22} {'MB':>7} {'copies':>6} | {'hot us: ours':>12} {'ggml':>8} {'read':>8} "
          f"{'o/g':>5} {'GB/s':>5} | {'cold us: ours':>13} {'ggml':>8} {'read':>8} "
          f"{'o/g':>5} {'GB/s':>5}")
    rng = np.random.default_rng(0)
    checked = set()
    for pair, n, k in shapes:
        if pair.stem not in checked:
            check(pair, rng)
            checked.add(pair.stem)
        nbytes, copies, t = run_shape(pair, n, k, ggml, cold, args.reps, args.threads, rng,
                                      clock)
        cells = []
        for col in (0, 1):
            o, r = t["ours"][col], t["read"][col]
            gg = t["ggml"][col] if "ggml" in t else None
            cells.append(f"{o * 1e6:12.0f} {gg * 1e6 if gg else float('nan'):8.0f} "
                         f"{r * 1e6:8.0f} {o / gg if gg else float('nan'):5.2f} "
                         f"{gbps(nbytes, o):5.1f}")
        print(f"{pair.lhs.name + ' ' + str(n) + 'x' + str(k):22} {nbytes / 1e6:7.1f} "
              f"{copies:>6} | {cells[0]} | {cells[1]}")
    print("times: medians per call, microseconds; o/g = ours / ggml; GB/s: weight bytes "
          "per second of ours")


if __name__ == "__main__":
    main()
