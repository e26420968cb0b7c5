"""Ternary GEMV: t2_g128_fp16 weights decoded in the kernel with I.decode, f32 dots.

    python examples/t2_gemv.py [--n 256] [--k 1000] [--target cpu] [--repeat 20] [--quiet]

Ternary checkpoints are repacked, not rounded: the codes in {-1, 0, 1} and one binary16
scale per 128 weights are imported as they are (``import_encoded``), then packed into
the kernel carrier (2-bit two's complement words, four per byte). The kernel decodes a
row with ``I.decode`` and takes an ordinary f32 dot with x in the ``seq`` order; on the
CPU the row loop runs 16 rows side by side, one per SIMD lane. K need not be a multiple
of the group or of 4. Exit status 0 means the compiled kernel equals the interpreter bit
for bit.
"""
import argparse
import time

import numpy as np

import ninfer_ir as I

T2 = I.formats.get("t2_g128_fp16")


@I.kernel
def t2_gemv(p: I.Tensor[I.u8, "N", "P"], s: I.Tensor[I.f16, "N", "S"],
            x: I.Tensor[I.f32, "K"], y: I.Buffer[I.f32, "N"]):
    for n in I.range(p.shape[0]):
        w = I.decode(p[n], s[n], format=T2, k=x.shape[0])
        y[n] = I.dot(w, x)


def ternary_weights(rng, n, k):
    """Codes in {-1, 0, 1} (about a third zero) and positive binary16 group scales."""
    codes = rng.integers(-1, 2, size=(n, k)).astype(np.int8)
    groups = -(-k // T2.group)
    scales = (0.01 + 0.04 * rng.random((n, groups))).astype(np.float16)
    return T2.encode((codes, scales), method="import_encoded")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=256, help="rows of W")
    ap.add_argument("--k", type=int, default=1000, help="columns of W")
    ap.add_argument("--target", default="cpu", choices=["cpu", "cuda", "interp"])
    ap.add_argument("--repeat", type=int, default=None,
                    help="timed calls (default 20; 1 on the interpreter)")
    ap.add_argument("--quiet", action="store_true", help="do not print the IR")
    args = ap.parse_args(argv)
    if args.n < 1 or args.k < 1:
        ap.error("--n and --k must be positive")
    rng = np.random.default_rng(0)
    enc = ternary_weights(rng, args.n, args.k)
    packed, scales = T2.pack(enc)                  # u8 [N, ceil(K/4)], f16 [N, ceil(K/128)]
    x = rng.standard_normal(args.k).astype(np.float32)
    if not args.quiet:
        print(t2_gemv.ir)
    try:
        kernel = I.compile(t2_gemv, target=args.target)
    except I.TargetUnavailable as e:
        print(f"target unavailable: {e}")
        return 3

    y = np.empty(args.n, np.float32)
    kernel(packed, scales, x, y)
    reps = max(1, args.repeat if args.repeat is not None else
               1 if args.target == "interp" else 20)
    t0 = time.perf_counter()
    for _ in range(reps):
        kernel(packed, scales, x, y)
    seconds = (time.perf_counter() - t0) / reps
    expect = np.empty_like(y)
    I.interpret(t2_gemv, packed, scales, x, expect)
    exact = np.array_equal(y.view(np.uint32), expect.view(np.uint32))
    ref = T2.decode(enc).astype(np.float64) @ x.astype(np.float64)
    rel = np.linalg.norm(y - ref) / np.linalg.norm(ref)

    print(f"T2 GEMV {args.n}x{args.k} on {args.target}: {seconds * 1e6:.1f} us, "
          f"{(packed.nbytes + scales.nbytes) / seconds / 1e9:.2f} GB/s of packed weights")
    print(f"bit-exact against the interpreter: {exact}; relative error against a float64 "
          f"product of the decoded weights: {rel:.1e}")
    return 0 if exact else 1


if __name__ == "__main__":
    raise SystemExit(main())
