"""RMSNorm, a SiLU-gated MLP and softmax over rows, written with ``@I.func`` helpers.

    python examples/transformer_rows.py [--rows 4] [--dim 64] [--hidden 128] [--target cpu]

Each row of ``x`` is normalised (``rmsnorm_row``), sent through a SiLU-gated MLP
(``gated_mlp_row``: ``down(silu(gate x) * (up x))``) and turned into probabilities
(``softmax_row``). The helpers are inlined into the one kernel; ``I.exp`` and
``I.rsqrt`` are the correctly rounded functions of docs/math.md. The target's results
must equal the interpreter's bit for bit, and the probabilities must agree with a
float64 numpy model to 1e-4 (float32 rounding of the sums and dots is the only
difference). Exit status 0 means both hold.
"""
import argparse

import numpy as np

import ninfer_ir as I


@I.func
def silu(v: I.f32) -> I.f32:
    return v / (I.exp(-v) + 1.0)


@I.func
def rmsnorm_row(x: I.Tensor[I.f32, "D"], g: I.Tensor[I.f32, "D"], y: I.Buffer[I.f32, "D"],
                eps: I.f32):
    ms = I.sum(x * x) / I.cast(x.shape[0], I.f32)
    y[:] = x * I.rsqrt(ms + eps) * g


@I.func
def softmax_row(x: I.Tensor[I.f32, "D"], y: I.Buffer[I.f32, "D"]):
    e = I.exp(x - I.max(x))
    y[:] = e / I.sum(e)


@I.func
def gated_mlp_row(x, wg, wu, wd, h, y):
    for j in I.range(wg.shape[0]):
        h[j] = silu(I.dot(wg[j], x)) * I.dot(wu[j], x)
    for i in I.range(wd.shape[0]):
        y[i] = I.dot(wd[i], h)


@I.kernel
def transformer_rows(x: I.Tensor[I.f32, "R", "D"], g: I.Tensor[I.f32, "D"],
                     wg: I.Tensor[I.f32, "H", "D"], wu: I.Tensor[I.f32, "H", "D"],
                     wd: I.Tensor[I.f32, "D", "H"], xn: I.Buffer[I.f32, "R", "D"],
                     h: I.Buffer[I.f32, "H"], y: I.Buffer[I.f32, "R", "D"],
                     p: I.Buffer[I.f32, "R", "D"]):
    for r in I.range(x.shape[0]):
        rmsnorm_row(x[r], g, xn[r], 1e-6)
        gated_mlp_row(xn[r], wg, wu, wd, h, y[r])
        softmax_row(y[r], p[r])


def model(x, g, wg, wu, wd):
    x, g, wg, wu, wd = (a.astype(np.float64) for a in (x, g, wg, wu, wd))
    xn = x / np.sqrt((x * x).mean(axis=1, keepdims=True) + 1e-6) * g
    a, b = xn @ wg.T, xn @ wu.T
    y = (a / (1 + np.exp(-a)) * b) @ wd.T
    e = np.exp(y - y.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=4)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--target", default="cpu", choices=["cpu", "interp"])
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    r, d, hd = args.rows, args.dim, args.hidden
    ins = [rng.normal(size=(r, d)), rng.uniform(0.5, 1.5, d), rng.normal(size=(hd, d)) / 8,
           rng.normal(size=(hd, d)) / 8, rng.normal(size=(d, hd)) / 8]
    ins = [a.astype(np.float32) for a in ins]

    def outputs():
        return [np.zeros((r, d), np.float32), np.zeros(hd, np.float32),
                np.zeros((r, d), np.float32), np.zeros((r, d), np.float32)]

    want = outputs()
    I.interpret(transformer_rows, *ins, *want)
    got = outputs()
    I.compile(transformer_rows, target=args.target)(*ins, *got)
    exact = all(a.tobytes() == b.tobytes() for a, b in zip(got, want))
    err = float(np.abs(got[3] - model(*ins)).max())
    print(f"bit-exact against the interpreter: {exact}; max |p - float64 model| = {err:.2e}")
    return 0 if exact and err < 1e-4 else 1


if __name__ == "__main__":
    raise SystemExit(main())
