"""The general decode path on the CPU: ``y[n] = dot(decode(w[n]), x)`` for formats
outside the grouped rows kernel (``gguf_*`` blocks, ``bf16`` words).

Such a loop is not a library call: each row's dot reads the decoded row element by
element, each element computed from the row's bytes by the format's element decoder
(``ninfer_ir/mathlib/decoders.py``), summed in the ``seq`` order. For each format, N x K
and thread count T it prints the median and best time per call, the time per decoded
element, and numpy's ``fmt.decode(w) @ x`` (decode the whole matrix, then the f32 GEMV)
in the same run, with ``numpy/ours``. Each kernel is checked bit for bit against the
interpreter on its first 32 rows before timing.

    PYTHONPATH=. python benchmarks/gemv_decode_formats.py            # 4096x4096
    PYTHONPATH=. python benchmarks/gemv_decode_formats.py --quick    # 1024x1024
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import ninfer_ir as I  # noqa: E402

DEFAULT = ("gguf_q5_0", "gguf_q8_0", "gguf_q4_k", "gguf_q6_k", "gguf_iq4_xs", "gguf_iq2_xxs",
           "bf16")


def gemv_kernel(fmt):
    word = I.u16 if fmt.name == "bf16" else I.u8

    @I.kernel
    def gemv(w: I.Tensor[word, "N", "R"], x: I.Tensor[I.f32, "K"], y: I.Buffer[I.f32, "N"]):
        for n in I.prange(w.shape[0]):
            y[n] = I.dot(I.decode(w[n], format=fmt, k=x.shape[0]), x)
    return gemv


def weights(fmt, n, k, rng):
    """Random rows with moderate finite scales (every gguf byte image is a valid block)."""
    if fmt.name == "bf16":
        return I.formats.get("bf16").encode(rng.standard_normal((n, k)).astype(np.float32),
                                            method="fp32_to_bf16_rne", nonfinite="refuse").words
    blocks = k // fmt.block_values
    w = rng.integers(0, 256, (n, blocks * fmt.block_bytes), dtype=np.uint8)
    view = w.reshape(n, blocks, fmt.block_bytes)
    offsets = {"gguf_q2_k": (80, 82), "gguf_q3_k": (108,), "gguf_q4_k": (0, 2),
               "gguf_q5_k": (0, 2), "gguf_q6_k": (208,)}.get(fmt.name, (0,))
    for off in offsets:
        words = rng.integers(0x2000, 0x2C00, (n, blocks), dtype=np.uint16)
        view[:, :, off], view[:, :, off + 1] = words & 0xFF, words >> 8
    return w


def timed(fn, rounds):
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), float(min(times))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--formats", nargs="*", default=list(DEFAULT))
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--k", type=int, default=4096)
    ap.add_argument("--threads", nargs="*", type=int, default=[1, 2])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args(argv)
    if a.quick:
        a.n = a.k = 1024
        a.rounds = 3
    rng = np.random.default_rng(0)
    x = rng.standard_normal(a.k).astype(np.float32)
    print(f"N x K = {a.n} x {a.k}, {a.rounds} calls each; machine shared, figures noisy")
    print("| format | T | ours ms (median/best) | ns per element | numpy decode+@ ms | numpy/ours |")
    print("|---|---|---|---|---|---|")
    for name in a.formats:
        fmt = I.formats.get(name)
        w = weights(fmt, a.n, a.k, rng)
        kernel = gemv_kernel(fmt)
        want = np.zeros(32, np.float32)
        I.interpret(kernel, w[:32], x, want)
        numpy_ms = timed(lambda: fmt.decode(w) @ x, a.rounds)[1] * 1e3
        for threads in a.threads:
            run = I.compile(kernel, target="cpu", threads=threads)
            got = np.zeros(32, np.float32)
            run(w[:32], x, got)
            if got.tobytes() != want.tobytes():
                print(f"{name}: compiled differs from the interpreter")
                return 1
            y = np.zeros(a.n, np.float32)
            run(w, x, y)
            med, best = timed(lambda: run(w, x, y), a.rounds)
            print(f"| {name} | {threads} | {med * 1e3:.1f} / {best * 1e3:.1f} | "
                  f"{best * 1e9 / (a.n * a.k):.2f} | {numpy_ms:.1f} | {numpy_ms / (best * 1e3):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
