"""INT4 GEMV with the decode written in the DSL: packed q4_g64_fp16 codes, f32 dots.

    python examples/int4_decode_gemv.py [--n 256] [--k 1024] [--target cpu] [--repeat 20]

The weights are encoded with ``ninfer_ir.formats`` (``q4_g64_fp16``: signed 4-bit
codes, one binary16 scale per 64 values) and packed two codes per byte, code ``2i``
in the low nibble of byte ``i``. The kernels unpack them with masks and shifts,
sign-extend, scale, and take ordinary f32 dots with x. ``int4_decode`` writes the
decoded weights, which must equal ``formats`` decode bit for bit; ``int4_gemv`` must
equal the interpreter bit for bit. ``int4_decode_gemv`` does the same decode as one
operation, ``I.decode``, and takes each row's dot in the ``seq`` order; on the CPU its row
loop runs 16 rows side by side, one per SIMD lane (docs/decode.md). It must equal the
interpreter bit for bit too. Exit status 0 means all three hold.
"""
import argparse
import time

import numpy as np

import ninfer_ir as I
from ninfer_ir import formats

Q4 = formats.get("q4_g64_fp16")


@I.kernel
def int4_gemv(p: I.Tensor[I.u8, "N", "H"], s: I.Tensor[I.f16, "N", "S"],
              x: I.Tensor[I.f32, "K"], y: I.Buffer[I.f32, "N"]):
    for n in I.prange(p.shape[0]):
        acc: I.f32 = 0.0
        for g in I.range(s.shape[1]):                  # one scale per 64 codes = 32 bytes
            o = g * 32
            b = p[n, o:o + 32]
            lo = I.cast((b & 15) ^ 8, I.i8) - 8       # even codes, sign-extended
            hi = I.cast((b >> 4) ^ 8, I.i8) - 8       # odd codes
            sc = I.cast(s[n, g], I.f32)
            k = g * 64
            xg = x[k:k + 64]
            acc += (I.dot(I.cast(lo, I.f32) * sc, xg[0:64:2])
                    + I.dot(I.cast(hi, I.f32) * sc, xg[1:64:2]))
        y[n] = acc


@I.kernel
def int4_decode(p: I.Tensor[I.u8, "N", "H"], s: I.Tensor[I.f16, "N", "S"],
                w: I.Buffer[I.f32, "N", "K"]):
    for n in I.prange(p.shape[0]):
        for h in I.range(p.shape[1]):
            b = p[n, h]
            sc = I.cast(s[n, h // 32], I.f32)
            w[n, 2 * h] = I.cast(I.cast((b & 15) ^ 8, I.i8) - 8, I.f32) * sc
            w[n, 2 * h + 1] = I.cast(I.cast((b >> 4) ^ 8, I.i8) - 8, I.f32) * sc


@I.kernel
def int4_decode_gemv(p: I.Tensor[I.u8, "N", "H"], s: I.Tensor[I.f16, "N", "S"],
                     x: I.Tensor[I.f32, "K"], y: I.Buffer[I.f32, "N"]):
    for n in I.range(p.shape[0]):
        y[n] = I.dot(I.decode(p[n], s[n], format=Q4, k=x.shape[0]), x)


def _timed(kernel, args, reps):
    kernel(*args)
    t0 = time.perf_counter()
    for _ in range(reps):
        kernel(*args)
    return (time.perf_counter() - t0) / reps


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=256, help="rows of W")
    ap.add_argument("--k", type=int, default=1024, help="columns of W (a multiple of 64)")
    ap.add_argument("--target", default="cpu", choices=["cpu", "cuda", "interp"])
    ap.add_argument("--repeat", type=int, default=None,
                    help="timed calls (default 20; 1 on the interpreter)")
    ap.add_argument("--quiet", action="store_true", help="do not print the IR")
    args = ap.parse_args(argv)
    if args.k % 64:
        ap.error("--k must be a multiple of 64")
    fmt = Q4
    rng = np.random.default_rng(0)
    weights = rng.standard_normal((args.n, args.k)).astype(np.float32)
    enc = fmt.encode(weights, method="grouped_absmax")
    packed, scales = fmt.pack(enc)                   # u8 [N, K/2], f16 [N, K/64]
    x = rng.standard_normal(args.k).astype(np.float32)
    if not args.quiet:
        print(int4_gemv.ir)
    try:
        gemv = I.compile(int4_gemv, target=args.target)
        decode = I.compile(int4_decode, target=args.target)
        fused = I.compile(int4_decode_gemv, target=args.target)
    except I.TargetUnavailable as e:
        print(f"target unavailable: {e}")
        return 3

    w = np.empty((args.n, args.k), np.float32)
    decode(packed, scales, w)
    decoded_ok = np.array_equal(w.view(np.uint32), fmt.decode(enc).view(np.uint32))

    reps = max(1, args.repeat if args.repeat is not None else
               1 if args.target == "interp" else 20)
    y = np.empty(args.n, np.float32)
    seconds = _timed(gemv, (packed, scales, x, y), reps)
    expect = np.empty_like(y)
    I.interpret(int4_gemv, packed, scales, x, expect)
    exact = np.array_equal(y.view(np.uint32), expect.view(np.uint32))
    y2 = np.empty(args.n, np.float32)
    seconds2 = _timed(fused, (packed, scales, x, y2), reps)
    I.interpret(int4_decode_gemv, packed, scales, x, expect)
    exact2 = np.array_equal(y2.view(np.uint32), expect.view(np.uint32))
    ref = w.astype(np.float64) @ x.astype(np.float64)
    rel = np.linalg.norm(y - ref) / np.linalg.norm(ref)

    print(f"INT4 GEMV {args.n}x{args.k} on {args.target}: {seconds * 1e6:.1f} us, "
          f"{(packed.nbytes + scales.nbytes) / seconds / 1e9:.2f} GB/s of packed weights")
    print(f"decode equals ninfer_ir.formats bit for bit: {decoded_ok}")
    print(f"bit-exact against the interpreter: {exact}; relative error against a float64 "
          f"product of the decoded weights: {rel:.1e}")
    print(f"I.decode GEMV {args.n}x{args.k} on {args.target}: {seconds2 * 1e6:.1f} us, "
          f"{(packed.nbytes + scales.nbytes) / seconds2 / 1e9:.2f} GB/s of packed weights")
    print(f"I.decode GEMV bit-exact against the interpreter: {exact2}")
    return 0 if exact and decoded_ok and exact2 else 1


if __name__ == "__main__":
    raise SystemExit(main())
