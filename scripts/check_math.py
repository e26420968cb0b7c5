"""Check the f32 math functions against an outside reference.

    python scripts/check_math.py                 # a sample: specials, random bit patterns
    python scripts/check_math.py --exhaustive    # all 2^32 inputs of every function
    python scripts/check_math.py --exhaustive --functions exp,log

The results are those of the compiled CPU kernel ``y[i] = I.<fn>(x[i])`` (the suite
shows it equals the interpreter bit for bit). The reference is numpy's float64 function
rounded to f32, which is the correctly rounded f32 whenever the float64 value is not
within ``MARGIN`` float64 ulps of an f32 rounding boundary (numpy's float64 functions
are accurate to a few float64 ulps); the inputs where it is that close are decided with
mpmath at 200 bits. A NaN result must be the canonical quiet NaN 0x7FC00000.
Prints, per function, the number of incorrectly rounded results (expected 0) and the
time taken; ``--exhaustive`` also lists the failing inputs.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ninfer_ir as I  # noqa: E402
from ninfer_ir.mathlib import FUNCTIONS  # noqa: E402
from ninfer_ir.mathlib import functions as mathfns  # noqa: E402

MARGIN = 16                      # float64 ulps around an f32 rounding boundary
QNAN = 0x7FC00000

_NP = {"sqrt": np.sqrt, "rsqrt": lambda x: 1.0 / np.sqrt(x), "exp": np.exp,
       "exp2": np.exp2, "log": np.log, "log2": np.log2, "tanh": np.tanh,
       "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "rint": np.rint,
       "erf": lambda x: __import__("scipy.special").special.erf(x), "sin": np.sin,
       "cos": np.cos, "expm1": np.expm1, "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x))}


def _side(fn, x, lo, hi) -> int:
    """-1, 0 or 1: |fn(x)| below ``lo``, between, or above ``hi`` (mpmath, 200 bits; the
    comparisons are exact, and nothing is rounded to the working precision before them)."""
    import mpmath as mp
    f = {"sqrt": mp.sqrt, "rsqrt": lambda v: 1 / mp.sqrt(v), "exp": mp.exp,
         "exp2": lambda v: mp.mpf(2) ** v, "log": mp.log, "log2": lambda v: mp.log(v, 2),
         "tanh": mp.tanh, "erf": mp.erf, "sin": mp.sin, "cos": mp.cos, "expm1": mp.expm1,
         "sigmoid": lambda v: 1 / (1 + mp.exp(-v))}[fn]
    with mp.workprec(200):
        v = abs(f(mp.mpf(float(x))))
        return 1 if v > mp.mpf(float(hi)) else -1 if v < mp.mpf(float(lo)) else 0


def _f32_of(bits):
    return np.asarray(bits, dtype=np.uint32).view(np.float32).astype(np.float64)


def _boundaries(a32):
    """The f32 rounding boundaries (f64, exact) below and above |f32| values ``a32``."""
    b = a32.view(np.uint32).astype(np.int64)
    up = np.where(b + 1 >= 0x7F800000, 2.0 ** 128, _f32_of(np.minimum(b + 1, 0x7F7FFFFF)))
    up = np.where(b >= 0x7F800000, np.inf, up)
    dn = np.where(b == 0, -1.0, _f32_of(np.maximum(b - 1, 0)))
    dn = np.where(b == 0x7F800000, float(np.finfo(np.float32).max), dn)
    a = a32.astype(np.float64)
    return (a + dn) * 0.5, np.where(np.isinf(up), np.inf, (a + up) * 0.5)


#: numpy's f32 functions that are exact IEEE operations: their result is the reference
_EXACT32 = {"sqrt": np.sqrt, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc,
            "rint": np.rint}


def reference(fn: str, x: np.ndarray, hard: list | None = None) -> np.ndarray:
    """The correctly rounded f32 ``fn(x)`` for an f32 array (NaN: the canonical NaN).
    The bit patterns of the inputs decided by mpmath are appended to ``hard``."""
    if fn in _EXACT32:
        with np.errstate(all="ignore"):
            out = _EXACT32[fn](x)
        out[np.isnan(out)] = np.uint32(QNAN).view(np.float32)
        return out
    with np.errstate(all="ignore"):
        y = _NP[fn](x.astype(np.float64))
        out = y.astype(np.float32)
    a = np.abs(y)
    normal = (a >= 2.0 ** -126) & (a < 2.0 ** 128)
    # an f32-normal result: the 29 bits the rounding drops, against the halfway pattern
    low = (y.view(np.uint64) & np.uint64(0x1FFFFFFF)).astype(np.int64)
    amb = normal & (np.abs(low - 0x10000000) <= MARGIN)
    with np.errstate(all="ignore"):
        rest = np.flatnonzero(~normal & np.isfinite(a) & (a != 0.0))
    if rest.size:
        lo, hi = _boundaries(np.abs(out[rest]))
        ar = a[rest]
        d = np.minimum(np.abs(ar - lo), np.abs(ar - hi))
        amb[rest[d <= MARGIN * np.spacing(ar)]] = True
    if hard is not None:
        hard += x[amb].view(np.uint32).tolist()
    for k in np.flatnonzero(amb):
        r32 = np.abs(out[k:k + 1])
        lo, hi = _boundaries(r32)
        b = int(r32.view(np.uint32)[0]) + _side(fn, x[k], lo[0], hi[0])
        out[k] = np.copysign(np.uint32(b).view(np.float32), y[k])
    out[np.isnan(out)] = np.uint32(QNAN).view(np.float32)
    return out


_IR = """func @{fn}_all(%x: tensor<f32[N]>, %y: buffer<f32[N]>) {{
  %r = math(%x) {{fn = "{fn}"}} : tensor<f32[N]>
  copy(%r, %y)
  return()
}}
"""


def kernel_module(fn: str):
    """``y[i] = fn(x[i])`` over a 1-D f32 tensor, as IR."""
    return I.parse(_IR.format(fn=fn))


def mismatches(fn: str, x: np.ndarray, got: np.ndarray, hard=None) -> np.ndarray:
    """Indices where ``got`` is not the correctly rounded ``fn(x)`` (bit for bit)."""
    want = reference(fn, x, hard)
    return np.flatnonzero(got.view(np.uint32) != want.view(np.uint32))


def sample(seed: int = 0, n: int = 1 << 14) -> np.ndarray:
    """Specials, signed zeros, subnormals, extremes and random bit patterns."""
    fi = np.finfo(np.float32)
    special = np.array([0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 4.0, 0.25, np.inf, -np.inf, np.nan,
                        fi.max, -fi.max, fi.tiny, -fi.tiny, fi.smallest_subnormal,
                        -fi.smallest_subnormal, 88.72283935546875, 88.72284, -103.97208,
                        -87.33655, 0.5 - 2 ** -25, 2.5, -2.5, 3.5, 8388607.5, 8388608.0,
                        1e-8, -1e-8, 9.01, 0.25, -0.25, 0.24999999, 127.99999, -149.0,
                        -150.0, 128.0, 3.0e-39], dtype=np.float32)
    rng = np.random.default_rng(seed)
    rand = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32).view(np.float32)
    near = rng.uniform(-20.0, 20.0, n).astype(np.float32)
    return np.concatenate([special, rand, near])


def run(fn, exhaustive, threads, lo=0, hi=1 << 32, chunk=1 << 22):
    k = I.compile(kernel_module(fn), target="cpu", threads=threads)
    t0 = time.time()
    bad, hard = [], []
    if exhaustive:
        for start in range(lo, hi, chunk):
            chunk = min(chunk, hi - start)
            x = np.arange(start, start + chunk, dtype=np.uint64).astype(np.uint32).view(np.float32)
            y = np.empty_like(x)
            k(x, y)
            bad += [int(x[i:i + 1].view(np.uint32)[0]) for i in mismatches(fn, x, y, hard)]
    else:
        x = sample()
        y = np.empty_like(x)
        k(x, y)
        bad = [int(x[i:i + 1].view(np.uint32)[0]) for i in mismatches(fn, x, y, hard)]
    return bad, hard, time.time() - t0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--exhaustive", action="store_true", help="all 2^32 inputs")
    ap.add_argument("--functions", default=",".join(FUNCTIONS))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--no-exceptions", action="store_true",
                    help="empty each function's table of exceptional inputs first, so that "
                         "the run lists every input the plain evaluation rounds wrongly")
    ap.add_argument("--bits", default="0:100000000",
                    help="with --exhaustive: the input bit patterns lo:hi (hex, hi excluded)")
    args = ap.parse_args(argv)
    lo, hi = (int(v, 16) for v in args.bits.split(":"))
    total = 0
    for fn in args.functions.split(","):
        if args.no_exceptions and fn in mathfns.EXCEPTIONS:
            setattr(mathfns, mathfns.EXCEPTIONS[fn], ())
        bad, hard, secs = run(fn, args.exhaustive, args.threads, lo, hi)
        total += len(bad)
        shown = ", ".join(f"0x{b:08x}" for b in bad[:20])
        span = f"inputs 0x{lo:08x}..0x{hi - 1:08x}" if args.exhaustive else "sample"
        print(f"{fn:6s} {span}: incorrectly rounded {len(bad)}  ({secs:.0f} s)"
              f"{'  ' + shown if bad else ''}", flush=True)
        if hard:
            print(f"{'':6s} {len(hard)} inputs within {MARGIN} float64 ulps of a rounding "
                  f"boundary (decided by mpmath): "
                  f"{', '.join(f'0x{b:08x}' for b in hard[:12])}", flush=True)
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
