"""GEMV per dot pair of the closed table (``ninfer_ir.quant.PAIRS``) on the CPU, against
the plain loop and against ggml.

For every pair (weights ``lhs`` x activation ``rhs``) and thread count T in (1, 2), one
call is ``y = W x`` for W of N x K = 4096 x 4096 weights and f32 x, with x quantized to
the pair's activation format inside the call, as a user calls the compiled kernel:

* ours: the tensor-level GEMV (quantize, then a row loop of ``quantized_dot``), compiled
  with ``I.compile(..., target="cpu", threads=T)``; the ``select`` pass runs the row loop
  as the pair's rows kernel (``<stem>_dot_rows``);
* loop: the same lowered module with the ``kernel_call`` taken away, so every row is one
  call of the pair's single-dot kernel (the ordinary loop); its ratio to ours is what the
  rows kernel gains;
* ggml: where llama-cpp-python is installed, ``ggml_mul_mat`` on the same weight bytes
  (ggml quantizes x to the same activation format inside it) on a persistent ggml pool of
  T threads (``benchmarks/gemv_q4k.py``'s loader), and the ratio ours / ggml.

Weights stay hot in the caches (back-to-back calls); the figures are the median and the
best of ``--reps`` calls, taken in interleaved rounds. Every compiled result is checked
bit for bit against the interpreter on a small shape first. Adding a pair to the table
adds a row here: the kernels are built from the pair's schemas, and its ggml type from
``GGML_TYPES``.

    PYTHONPATH=. python benchmarks/gemv_formats.py             # 4096 x 4096, T = 1, 2
    PYTHONPATH=. python benchmarks/gemv_formats.py --quick     # 1024 x 1024
"""
from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ninfer_ir as I  # noqa: E402
from ninfer_ir.quant import PAIRS  # noqa: E402
from ninfer_ir.backends.llvm.runtime.launcher import compile_module  # noqa: E402

#: ggml type ids (ggml.h ``enum ggml_type``) of the weight formats
GGML_TYPES = {"q4_0": 2, "q5_0": 6, "q8_0": 8, "q2_k": 10, "q3_k": 11, "q4_k": 12,
              "q5_k": 13, "q6_k": 14, "iq4_nl": 20}
GGML_TYPE_F32 = 0

GEMV = """func @gemv(%w: tensor<u8[N,G,LR]>, %x: tensor<f32[G,E]>, %y: buffer<f32[N]>) {
  %xq = quantize(%x) {format = #RF} : tensor<u8[G,RR]>
  %c0 = constant() {value = 0} : index
  %c1 = constant() {value = 1} : index
  %n_rows = dim(%w) {axis = 0} : index
  for(%c0, %n_rows, %c1) ({
  ^(%n: index):
    %wn = subview(%w, %n) {axes = "i::"} : tensor<u8[G,LR]>
    %r = quantized_dot(%wn, %xq) {acc_dtype = f32, lhs_format = #LF, order = "seq", rhs_format = #RF} : tensor<f32[]>
    %s = load(%r) : f32
    store(%s, %y, %n)
    yield()
  })
  return()
}
"""


def gemv_module(pair):
    text = (GEMV.replace("LR", str(pair.lhs.record_bytes)).replace("LF", pair.lhs.name)
            .replace("RR", str(pair.rhs.record_bytes)).replace("RF", pair.rhs.name)
            .replace("E]", f"{pair.block_elems}]"))
    return I.parse(text)


def random_weights(rng, pair, n, g):
    """Random record bytes whose binary16 fields hold small finite scales."""
    w = rng.integers(0, 256, (n, g, pair.lhs.record_bytes), dtype=np.uint8)
    for f in pair.lhs.fields.values():
        if f.kind == "float" and f.bits == 16:
            d = (rng.standard_normal((n, g, 1)) * 1e-3).astype(np.float16)
            w[..., f.start:f.stop] = d.view(np.uint8)
    return w


def without_library(lowered):
    """The lowered module with every ``kernel_call`` replaced by its loop."""
    for op in list(lowered.walk()):
        if op.name == "kernel_call":
            loop = op.regions[0].block.ops[0]
            block = op.parent
            at = block.ops.index(op)
            op.regions[0].block.remove(loop)
            block.remove(op)
            block.insert(at, loop)
    return lowered


class GgmlGemv:
    """``ggml_mul_mat`` of one weight matrix of a ggml type and an f32 vector, or M f32
    rows when ``x`` is two-dimensional."""

    def __init__(self, g, ggml_type, w, x, threads):
        from gemv_q4k import _InitParams
        self.g = g
        n = w.shape[0]
        m, k = (1, x.size) if x.ndim == 1 else (x.shape[0], x[0].size)
        size = w.nbytes + 4 * m * (n + k) + 4 * g.tensor_overhead() + g.graph_overhead() \
            + (1 << 20)
        self.ctx = g.init(_InitParams(size, None, False))
        if not self.ctx:
            raise MemoryError("ggml_init failed")
        a = g.new_tensor_2d(self.ctx, ggml_type, k, n)
        ctypes.memmove(g.get_data(a), np.ascontiguousarray(w).ctypes.data, w.nbytes)
        b = g.new_tensor_2d(self.ctx, GGML_TYPE_F32, k, m)
        ctypes.memmove(g.get_data(b), np.ascontiguousarray(x).ctypes.data, 4 * m * k)
        self.c, self.n = g.mul_mat(self.ctx, a, b), n
        self.graph = g.new_graph(self.ctx)
        g.build_forward_expand(self.graph, self.c)
        params = (ctypes.c_uint8 * 4096)()
        g.params_init(params, threads)
        self.pool = g.threadpool_new(params)
        self.plan = g.graph_plan(self.graph, threads, self.pool)
        self.work = (ctypes.c_uint8 * max(1, self.plan.work_size))()
        self.plan.work_data = ctypes.addressof(self.work)

    def __call__(self):
        if self.g.graph_compute(self.graph, ctypes.byref(self.plan)) != 0:
            raise RuntimeError("ggml_graph_compute failed")

    def pause(self):
        """Put the pool's threads to sleep (untimed): after a call they poll for the next
        one, which would take a CPU from whatever runs next on a 2-CPU machine."""
        self.g.threadpool_pause(self.pool)

    def result(self):
        ptr = ctypes.cast(self.g.get_data(self.c), ctypes.POINTER(ctypes.c_float))
        return np.ctypeslib.as_array(ptr, shape=(self.n,)).copy()

    def close(self):
        self.g.threadpool_pause(self.pool)
        self.g.threadpool_free(self.pool)
        self.g.free(self.ctx)


def check(pair, rng):
    """Compiled = interpreter, bit for bit, on a small odd shape."""
    module = gemv_module(pair)
    w = random_weights(rng, pair, 37, 5)
    x = rng.standard_normal((5, pair.block_elems)).astype(np.float32)
    want, got = np.zeros(37, np.float32), np.zeros(37, np.float32)
    I.interpret(module, w, x, want)
    I.compile(module, target="cpu")(w, x, got)
    if want.tobytes() != got.tobytes():
        raise AssertionError(f"{pair}: compiled GEMV differs from the interpreter")


def timed_rounds(fns, reps):
    """{name: [seconds]}: ``reps`` rounds, each calling every fn once, in turn (a fn with
    a ``pause`` method has it called after its timed call)."""
    times = {name: [] for name in fns}
    for _ in range(reps):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
            if hasattr(fn, "pause"):
                fn.pause()
    return times


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1024 x 1024 instead")
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--no-ggml", action="store_true")
    parser.add_argument("--only", nargs="+", metavar="FORMAT",
                        help="only the pairs whose weight format is one of these (e.g. q6_k)")
    args = parser.parse_args(argv)
    n = k = 1024 if args.quick else 4096
    from gemv_q4k import load_ggml
    ggml, why = (None, "skipped") if args.no_ggml else load_ggml()
    print(f"GEMV {n} x {k}, weights hot; ggml: "
          + (f"llama-cpp-python {ggml.version}" if ggml else f"not available ({why})"))
    print(f"{'pair':14} {'T':>2} {'ours us':>16} {'loop us':>16} {'ggml us':>16} "
          f"{'loop/ours':>9} {'ours/ggml':>9} {'(best)':>7}")
    rng = np.random.default_rng(0)
    for pair in PAIRS.values():
        if args.only and pair.lhs.name not in args.only:
            continue
        check(pair, rng)
        g = k // pair.block_elems
        w = random_weights(rng, pair, n, g)
        x = rng.standard_normal((g, pair.block_elems)).astype(np.float32)
        module = gemv_module(pair)
        for threads in (1, 2):
            y = np.zeros(n, np.float32)
            ours = I.compile(module, target="cpu", threads=threads)
            loop = compile_module(without_library(I.lower(module)), threads=threads)
            fns = {"ours": lambda: ours(w, x, y), "loop": lambda: loop(w, x, y)}
            peer = None
            if ggml is not None and pair.lhs.name in GGML_TYPES:
                peer = GgmlGemv(ggml, GGML_TYPES[pair.lhs.name], w, x.reshape(-1), threads)
                fns["ggml"] = peer
            if peer is not None:
                got = np.zeros(n, np.float32)
                ours(w, x, got)
                peer()
                err = np.abs(got - peer.result()).max() / np.abs(got).max()
                if err > 1e-4:
                    raise AssertionError(f"{pair}: ours and ggml differ by {err:.2g} (relative)")
            timed_rounds(fns, 2)
            times = timed_rounds(fns, args.reps)
            if peer is not None:
                peer.close()
            med = {name: statistics.median(t) for name, t in times.items()}
            best = {name: min(t) for name, t in times.items()}

            def cell(name):
                if name not in med:
                    return f"{'-':>16}"
                return f"{med[name] * 1e6:8.0f}/{best[name] * 1e6:<7.0f}"
            ratio = (f"{med['ours'] / med['ggml']:9.2f} {best['ours'] / best['ggml']:7.2f}"
                     if "ggml" in med else f"{'-':>9} {'-':>7}")
            print(f"{str(pair):14} {threads:>2} {cell('ours')} {cell('loop')} {cell('ggml')} "
                  f"{med['loop'] / med['ours']:9.2f} {ratio}")
    print("times: median/best of the calls, microseconds; ratios of medians, and of the "
          "best calls")


if __name__ == "__main__":
    main()
