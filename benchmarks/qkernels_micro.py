"""Micro-benchmark of the hand-written Q4_K GEMV kernels (single thread).

For each matrix size N x K (Q4_K weights, G = K/256 records per row) one call
is: quantize x (f32[K] -> Q8_K) with ``ninfer_q8k_quantize``, then
``ninfer_q4k_q8k_dot_rows`` over all N rows. The weights are random valid
records, reused by every call (hot in the caches as far as they fit). The
baseline is numpy's f32 matvec ``W @ x`` of the same weights dequantized to
f32 beforehand, measured in the same run.

    PYTHONPATH=. python benchmarks/qkernels_micro.py [--isa avx2] [--reps 300]

Prints per size: best and median microseconds per call, GB/s of Q4_K weight
bytes at the median, the numpy time and the ratio numpy/ours, and the time a
plain streaming read of the same number of bytes takes on this core (a JIT'd
loop of 64-byte loads): the memory floor any GEMV over these weights meets
once they do not fit the private caches. Timings on a shared machine are
noisy; the best time is the most stable figure.
"""
from __future__ import annotations

import argparse
import os
import time

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")          # single-thread baseline; before numpy loads

import numpy as np  # noqa: E402

import ctypes  # noqa: E402

import llvmlite.ir as ir  # noqa: E402

from ninfer_ir.numerics.quantized import q4k_fields  # noqa: E402
from ninfer_ir.backends.llvm.runtime.jit import JITModule, host_target  # noqa: E402
from ninfer_ir.backends.llvm.kernels.qir import I8P, I64, for_range, i32, i64, load, vec, zero  # noqa: E402
from ninfer_ir.backends.llvm.kernels.qkernels import load_kernels  # noqa: E402

SIZES = ((4096, 4096), (11008, 4096))


def random_q4k(rng: np.random.Generator, n: int, g: int) -> np.ndarray:
    """u8[n, g, 144]: random nibbles and 6-bit scales, small finite d and dmin."""
    w = rng.integers(0, 256, size=(n, g, 144), dtype=np.uint8)
    halves = (rng.standard_normal((n, g, 2)) * 0.01).astype(np.float16)
    w[:, :, 0:4] = halves.view(np.uint8).reshape(n, g, 4)
    return w


def dequantize(w: np.ndarray) -> np.ndarray:
    """f32[n, 256*g]: d*sc*q - dmin*m per element (the baseline's matrix)."""
    n, g, _ = w.shape
    d, dmin, sc, m, q = q4k_fields(w.reshape(n * g, 144))
    scale = (d[:, None] * sc).astype(np.float32)          # [n*g, 8]
    offset = (dmin[:, None] * m).astype(np.float32)
    q = q.reshape(n * g, 8, 32).astype(np.float32)
    values = q * scale[:, :, None] - offset[:, :, None]
    return values.reshape(n, g * 256).astype(np.float32)


def timed(fn, reps: int) -> np.ndarray:
    for _ in range(max(3, reps // 20)):
        fn()
    out = np.empty(reps)
    for i in range(reps):
        t0 = time.perf_counter()
        fn()
        out[i] = time.perf_counter() - t0
    return out


def stream_reader():
    """A JIT'd ``u64 read(u8* p, i64 nbytes)``: XOR of every 64-byte block, 4 blocks a step."""
    module = ir.Module(name="stream_read")
    fn = ir.Function(module, ir.FunctionType(I64, [I8P, I64]), name="stream_read")
    base, nbytes = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    lanes = vec(I64, 8)
    acc = b.alloca(lanes)
    b.store(zero(lanes), acc)
    with for_range(b, 0, b.sdiv(nbytes, i64(256)), name="i") as i:
        offset = b.mul(i, i64(256))
        value = b.load(acc)
        for k in range(4):
            value = b.xor(value, load(b, b.gep(base, [offset]), 64 * k, lanes))
        b.store(value, acc)
    b.ret(b.extract_element(b.load(acc), i32(0)))
    jit = JITModule(module, use_cache=False)
    return jit.get("stream_read", ctypes.c_uint64, [ctypes.c_void_p, ctypes.c_int64])


def bench(kernels, n: int, k: int, reps: int, rng, reader) -> None:
    g = k // 256
    w = random_q4k(rng, n, g)
    x = rng.standard_normal(k).astype(np.float32)
    xq = np.zeros((g, 292), dtype=np.uint8)
    y = np.zeros(n, dtype=np.float32)
    quantize, rows = kernels.quantize, kernels.dot_rows
    wp, xp, xqp, yp = w.ctypes.data, x.ctypes.data, xq.ctypes.data, y.ctypes.data

    def gemv():
        status = quantize(xp, 256, g, xqp, 292)
        if status:
            raise RuntimeError(f"quantize failed: status {status}")
        rows(wp, g * 144, 144, xqp, 292, g, n, yp, 1)

    ours = timed(gemv, reps)
    quant_only = timed(lambda: quantize(xp, 256, g, xqp, 292), reps)
    dense = dequantize(w)
    ref = timed(lambda: dense @ x, max(10, reps // 10))
    floor = timed(lambda: reader(wp, w.nbytes), reps)
    best, med = ours.min(), np.median(ours)
    print(f"{n:6d} x {k:5d}  ours best {best * 1e6:8.1f} us  median {med * 1e6:8.1f} us  "
          f"{w.nbytes / med / 1e9:5.1f} GB/s (best {w.nbytes / best / 1e9:5.1f})  "
          f"quantize {np.median(quant_only) * 1e6:5.2f} us  "
          f"numpy f32 W@x {np.median(ref) * 1e6:8.1f} us  ratio {np.median(ref) / med:5.1f}x")
    print(f"{'':15s}  stream read of the {w.nbytes / 1e6:.2f} MB: "
          f"best {floor.min() * 1e6:8.1f} us  median {np.median(floor) * 1e6:8.1f} us  "
          f"({w.nbytes / floor.min() / 1e9:5.1f} GB/s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--isa", default=None, help="avx512vnni | avx2 | portable")
    parser.add_argument("--reps", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    target = host_target(args.isa)
    t0 = time.perf_counter()
    kernels = load_kernels(args.isa, use_cache=False)
    compile_s = time.perf_counter() - t0
    print(f"target {target.cpu} isa {target.isa}; cold compile {compile_s * 1e3:.0f} ms")
    rng = np.random.default_rng(args.seed)
    reader = stream_reader()
    for n, k in SIZES:
        bench(kernels, n, k, args.reps, rng, reader)


if __name__ == "__main__":
    main()
