"""Q2 GEMV: q2_g64_fp16 weights imported from ggml Q2_0 blocks, decoded with I.decode.

    python examples/q2_gemv.py [--n 256] [--k 1024] [--target cpu] [--repeat 20] [--quiet]

Floating point to Q2 is outside the conversion contract: Q2 weights come encoded. Here
they come as ggml Q2_0 blocks (18 bytes per 64 weights: a binary16 scale and 64 2-bit
offset words ``u = q + 1``), imported word for word with ``import_encoded`` and packed
into the kernel carrier (four words per byte, scales apart). The kernel decodes a row
with ``I.decode`` and takes an ordinary f32 dot with x in the ``seq`` order. Exit status
0 means the decoded weights equal ggml's Q2_0 decode and the compiled kernel equals the
interpreter, both bit for bit.
"""
import argparse
import time

import numpy as np

import ninfer_ir as I

Q2 = I.formats.get("q2_g64_fp16")
Q2_0 = I.formats.get("gguf_q2_0")


@I.kernel
def q2_gemv(p: I.Tensor[I.u8, "N", "P"], s: I.Tensor[I.f16, "N", "S"],
            x: I.Tensor[I.f32, "K"], y: I.Buffer[I.f32, "N"]):
    for n in I.range(p.shape[0]):
        w = I.decode(p[n], s[n], format=Q2, k=x.shape[0])
        y[n] = I.dot(w, x)


def q2_0_blocks(rng, n, k):
    """Random ggml Q2_0 blocks ``uint8 [n, k/64*18]``: value e of a block is bits
    ``2*(e%4)`` of byte ``2 + e//4``; bytes 0-1 hold the binary16 scale."""
    groups = k // 64
    words = rng.integers(0, 4, size=(n, groups, 16, 4)).astype(np.uint8)
    qs = words[..., 0] | (words[..., 1] << 2) | (words[..., 2] << 4) | (words[..., 3] << 6)
    d = (0.01 + 0.04 * rng.random((n, groups))).astype(np.float16)
    blocks = np.concatenate([d.view(np.uint8).reshape(n, groups, 2), qs], axis=2)
    return blocks.reshape(n, groups * 18)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=256, help="rows of W")
    ap.add_argument("--k", type=int, default=1024, help="columns of W (a multiple of 64)")
    ap.add_argument("--target", default="cpu", choices=["cpu", "cuda", "interp"])
    ap.add_argument("--repeat", type=int, default=None,
                    help="timed calls (default 20; 1 on the interpreter)")
    ap.add_argument("--quiet", action="store_true", help="do not print the IR")
    args = ap.parse_args(argv)
    if args.n < 1 or args.k < 64 or args.k % 64:
        ap.error("--n must be positive and --k a positive multiple of 64 (one Q2_0 block)")
    rng = np.random.default_rng(0)
    blocks = q2_0_blocks(rng, args.n, args.k)
    enc = Q2.encode(blocks, method="import_encoded", source_format="gguf_q2_0")
    packed, scales = Q2.pack(enc)                  # u8 [N, K/4], f16 [N, K/64]
    x = rng.standard_normal(args.k).astype(np.float32)
    same_weights = np.array_equal(Q2.decode(enc).view(np.uint32),
                                  Q2_0.decode(blocks).reshape(args.n, args.k).view(np.uint32))
    if not args.quiet:
        print(q2_gemv.ir)
    try:
        kernel = I.compile(q2_gemv, target=args.target)
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
    I.interpret(q2_gemv, packed, scales, x, expect)
    exact = np.array_equal(y.view(np.uint32), expect.view(np.uint32))

    print(f"Q2 GEMV {args.n}x{args.k} on {args.target}: {seconds * 1e6:.1f} us, "
          f"{(packed.nbytes + scales.nbytes) / seconds / 1e9:.2f} GB/s of packed weights")
    print(f"decoded weights equal ggml's Q2_0 decode bit for bit: {same_weights}")
    print(f"bit-exact against the interpreter: {exact}")
    return 0 if exact and same_weights else 1


if __name__ == "__main__":
    raise SystemExit(main())
