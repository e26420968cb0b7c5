"""Throughput of the numeric formats registry (numpy, single process).

    python benchmarks/formats.py [--rows N] [--cols K] [--repeat R]

Decode throughput is GB/s of *encoded* bytes (packed codes + scales + divisors,
or the GGUF blocks); encode throughput is GB/s of float32 source. Each figure is
the best of ``--repeat`` runs.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from ninfer_ir import formats                                     # noqa: E402
from ninfer_ir.formats import Category                            # noqa: E402
from ninfer_ir.testing import best_seconds                        # noqa: E402



def direct_case(fmt, rng, rows, cols):
    words = rng.integers(0, 1 << (8 * fmt.word_dtype.itemsize), (rows, cols),
                         dtype=np.uint64).astype(fmt.word_dtype)
    return lambda: fmt.decode(words), words.nbytes


def grouped_case(fmt, rng, rows, cols):
    lo, hi = fmt.code_interval
    codes = rng.integers(lo, hi + 1, (rows, cols)).astype(np.int8)
    scales = rng.uniform(0.5, 2.0, fmt.scale_shape((rows, cols))).astype(np.float16)
    enc = fmt.encode((codes, scales), method="import_encoded")
    nbytes = rows * fmt.packed_row_bytes(cols) + scales.nbytes
    return lambda: fmt.decode(enc), nbytes


def nvfp4_case(fmt, rng, rows, cols):
    enc = fmt.encode((rng.integers(0, 16, (rows, cols), dtype=np.uint8),
                      rng.integers(0, 0x7F, (rows, cols // 16), dtype=np.uint8),
                      np.array([1.5, 3.0], np.float32)), method="import_encoded")
    nbytes = rows * cols // 2 + enc.scales.nbytes + enc.divisors.nbytes
    return lambda: fmt.decode(enc), nbytes


def fp8_case(fmt, rng, rows, cols):
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    enc = fmt.encode(x, method="fp8_row_maxabs")
    return lambda: fmt.decode(enc), enc.codes.nbytes + enc.scales.nbytes


def gguf_case(fmt, rng, rows, cols):
    k = cols // fmt.block_values * fmt.block_values
    blocks = rng.integers(0, 256, (rows, fmt.row_bytes(k)), dtype=np.uint8)
    flat = blocks.reshape(-1, fmt.block_bytes)
    scale_offsets = {"gguf_q2_k": (80, 82), "gguf_q3_k": (108,), "gguf_q4_k": (0, 2),
                     "gguf_q5_k": (0, 2), "gguf_q6_k": (208,), "gguf_iq1_m": ()}
    for offset in scale_offsets.get(fmt.name, (0,)):
        flat[:, offset:offset + 2] = np.frombuffer(np.float16(0.01).tobytes(), np.uint8)
    return lambda: fmt.decode(blocks), blocks.nbytes


CASES = {Category.DIRECT: direct_case, Category.GROUPED: grouped_case,
         Category.BLOCK_SCALED: nvfp4_case, Category.ROW_SCALED: fp8_case,
         Category.GGUF_BLOCK: gguf_case}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1024)
    parser.add_argument("--cols", type=int, default=4096)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    rows, cols = args.rows, args.cols

    print(f"decode, [{rows} x {cols}] weights, GB/s of encoded bytes (best of {args.repeat})")
    print(f"{'format':<22}{'category':<28}{'MB':>8}{'ms':>10}{'GB/s':>8}{'Mw/s':>9}")
    for name in formats.names():
        fmt = formats.get(name)
        run, nbytes = CASES[fmt.category](fmt, rng, rows, cols)
        seconds = best_seconds(run, args.repeat)
        print(f"{name:<22}{str(fmt.category):<28}{nbytes / 1e6:>8.2f}{seconds * 1e3:>10.2f}"
              f"{nbytes / seconds / 1e9:>8.2f}{rows * cols / seconds / 1e6:>9.0f}")

    x = rng.standard_normal((rows, cols)).astype(np.float32)
    print(f"\nencode, [{rows} x {cols}] float32 source, GB/s of source bytes")
    print(f"{'format':<22}{'method':<28}{'MB':>8}{'ms':>10}{'GB/s':>8}{'Mw/s':>9}")
    jobs = [(n, "grouped_absmax", x) for n in ("q4_g64_fp16", "q5_g64_fp16", "q6_g64_fp16",
                                             "q8_g32_fp16")]
    jobs += [(n, "fp8_row_maxabs", x) for n in ("fp8_e4m3fn_row_bf16", "fp8_e4m3fn_row_fp16")]
    jobs += [("q4_g64_fp16", "grouped_search", x[: max(1, rows // 16)])]
    for name, method, source in jobs:
        fmt = formats.get(name)
        seconds = best_seconds(lambda: fmt.encode(source, method=method),
                               1 if method == "grouped_search" else args.repeat)
        print(f"{name:<22}{method:<28}{source.nbytes / 1e6:>8.2f}{seconds * 1e3:>10.2f}"
              f"{source.nbytes / seconds / 1e9:>8.2f}{source.size / seconds / 1e6:>9.0f}")

    print("\npacked carrier, GB/s of packed bytes")
    for name in ("q2_g64_fp16", "q4_g64_fp16", "q5_g64_fp16", "q6_g64_fp16", "q8_g32_fp16"):
        fmt = formats.get(name)
        lo, hi = fmt.code_interval
        enc = fmt.encode((rng.integers(lo, hi + 1, (rows, cols)).astype(np.int8),
                          np.ones(fmt.scale_shape((rows, cols)), np.float16)),
                         method="import_encoded")
        packed, scales = fmt.pack(enc)
        pack_s = best_seconds(lambda: fmt.pack(enc), args.repeat)
        unpack_s = best_seconds(lambda: fmt.unpack(packed, scales, cols), args.repeat)
        print(f"{name:<22}pack {packed.nbytes / pack_s / 1e9:6.2f}   "
              f"unpack {packed.nbytes / unpack_s / 1e9:6.2f}")


if __name__ == "__main__":
    main()
