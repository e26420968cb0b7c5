"""``ninfer bench``: the Q4_K GEMV against a measured copy bandwidth, and benchmarks/*.py.

Every figure printed is measured by this run. The GEMV is timed per call
(quantizing x to Q8_K included); "weights GB/s" counts the Q4_K bytes read once,
"flop/byte" is 2*N*K over all bytes the call reads and writes. The copy bandwidth
is a numpy copy, counting the bytes read and written.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np

from .common import (EXIT_OK, EXIT_UNAVAILABLE, CliError, best_and_median, fmt_seconds,
                         progress, usage)
from ninfer_ir.q4k import random_q4k

SHAPES = {"quick": ((1024, 1024), (4096, 4096)),
          "full": ((4096, 4096), (11008, 4096), (4096, 11008), (14336, 4096))}
QUICK_ARGS = {"oracle.py": ["--records", "1024", "--repeat", "3", "--gemv", "1024x1024"],
              "formats.py": ["--rows", "64", "--cols", "1024", "--repeat", "2"],
              "gemv_q4k_cuda.py": ["--iters", "20", "--shapes", "4096x4096"],
              "qkernels_micro.py": ["--reps", "20"]}


def copy_bandwidth(nbytes: int, repeat: int) -> float:
    """Bytes per second of ``np.copyto`` (read + write) on ``nbytes`` of float32."""
    src = np.ones(nbytes // 4, np.float32)
    dst = np.empty_like(src)
    best, _ = best_and_median(lambda: np.copyto(dst, src), repeat)
    return 2 * src.nbytes / best


def targets(threads):
    """(name, callable) for every target that can run here."""
    import ninfer_ir as I
    from .kernels import q4k_gemv

    out = [("cpu", I.compile(q4k_gemv, target="cpu", threads=threads))]
    try:
        from ninfer_ir.backends.cuda.runtime import gpu_available
        ok, why = gpu_available()
        if ok:
            out.append(("cuda", I.compile(q4k_gemv, target="cuda")))
        else:
            print(f"cuda: not measured ({why})")
    except Exception as e:                              # noqa: BLE001 - reported, not fatal
        print(f"cuda: not measured ({type(e).__name__}: {e})")
    out.append(("interp", I.compile(q4k_gemv, target="interp")))
    return out


def measure_gemv(shapes, repeat: int, threads) -> list[dict]:
    rng = np.random.default_rng(0)
    runs = targets(threads)
    rows = []
    jobs = [(s, t) for s in shapes for t in runs]
    for (n, k), (name, kernel) in progress(jobs, len(jobs), "GEMV"):
        g = k // 256
        w = random_q4k(rng, n, g)
        x = rng.standard_normal((g, 256)).astype(np.float32)
        y = np.empty(n, np.float32)
        kernel(w, x, y)
        reps = repeat if name != "interp" else max(1, min(3, repeat))
        best, median = best_and_median(lambda: kernel(w, x, y), reps)
        moved = w.nbytes + x.nbytes + y.nbytes
        rows.append(dict(target=name, n=n, k=k, best=best, median=median,
                         weights_gbs=w.nbytes / best / 1e9, gflops=2 * n * k / best / 1e9,
                         intensity=2 * n * k / moved))
    return rows


def print_table(rows, bandwidth: float) -> None:
    print(f"{'target':<7} {'N x K':<12} {'best':>10} {'median':>10} {'weights GB/s':>13} "
          f"{'GFLOP/s':>8} {'flop/byte':>9} {'% of copy':>9}")
    for r in rows:
        share = 100 * r["weights_gbs"] * 1e9 / bandwidth
        print(f"{r['target']:<7} {r['n']}x{r['k']:<{11 - len(str(r['n']))}} "
              f"{fmt_seconds(r['best']):>10} {fmt_seconds(r['median']):>10} "
              f"{r['weights_gbs']:>13.2f} {r['gflops']:>8.2f} {r['intensity']:>9.2f} "
              f"{share:>8.1f}%")


def run_scripts(quick: bool) -> list[tuple]:
    """Run every script in the checkout's benchmarks/ folder; (name, status, seconds)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    folder = os.path.join(root, "benchmarks")
    if not os.path.isdir(folder):
        print("\nbenchmarks/ not found next to the package (scripts run from a checkout)")
        return []
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [root] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    results = []
    for name in sorted(f for f in os.listdir(folder) if f.endswith(".py")):
        path = os.path.join(folder, name)
        with open(path, encoding="utf-8") as f:
            source = f.read()
        argv = QUICK_ARGS.get(name, ["--quick"] if "--quick" in source else None)
        if quick and argv is None:
            results.append((name, "skipped (no quick mode)", 0.0))
            continue
        cmd = [sys.executable, path] + (argv if quick else [])
        print(f"\n$ python benchmarks/{name} {' '.join(argv if quick else [])}".rstrip())
        t0 = time.perf_counter()
        try:
            done = subprocess.run(cmd, env=env, cwd=root, capture_output=True, text=True,
                                  timeout=120 if quick else 1800)
            status = "ok" if done.returncode == 0 else f"exit {done.returncode}"
            text = done.stdout + (done.stderr if done.returncode else "")
        except subprocess.TimeoutExpired:
            status, text = "timed out", ""
        print(text.rstrip())
        results.append((name, status, time.perf_counter() - t0))
    return results


def plot(rows, bandwidth: float, path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ai = np.logspace(-1, 2, 50)
    ax.loglog(ai, bandwidth * ai / 1e9, "k--", label=f"copy bandwidth {bandwidth / 1e9:.1f} GB/s")
    for name in dict.fromkeys(r["target"] for r in rows):
        pts = [r for r in rows if r["target"] == name]
        ax.loglog([r["intensity"] for r in pts], [r["gflops"] for r in pts], "o", label=name)
        for r in pts:
            ax.annotate(f"{r['n']}x{r['k']}", (r["intensity"], r["gflops"]), fontsize=7)
    ax.set_xlabel("arithmetic intensity (flop / byte)")
    ax.set_ylabel("GFLOP/s")
    ax.set_title("Q4_K GEMV (quantize included) against the measured copy bandwidth")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"plot written to {path}")


def require_matplotlib(path: str) -> None:
    """Fail before any measurement when ``--plot`` cannot be drawn."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise CliError(f"--plot {path} needs matplotlib, which is not installed "
                       f"(pip install matplotlib)", EXIT_UNAVAILABLE) from None


def cmd_bench(args) -> int:
    if not args.file and (args.baseline or args.dim):
        raise usage("--baseline and --dim need a FILE.py[:kernel] to time")
    if args.plot:
        require_matplotlib(args.plot)
    if args.file:
        from .bench_kernel import cmd_bench_kernel
        return cmd_bench_kernel(args)
    mode = "quick" if args.quick else "full"
    repeat = 5 if args.quick else 20
    mib = 64 if args.quick else 256
    bandwidth = copy_bandwidth(mib << 20, repeat)
    load = " ".join(f"{v:.2f}" for v in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    print(f"{os.cpu_count()} CPUs (load average {load}); numpy copy bandwidth "
          f"{bandwidth / 1e9:.1f} GB/s (read + write, {mib} MiB)")
    rows = measure_gemv(SHAPES[mode], repeat, args.threads)
    print(f"\nQ4_K GEMV, best and median of {repeat} calls (interp: of up to 3)")
    print_table(rows, bandwidth)
    if not args.no_scripts:
        results = run_scripts(args.quick)
        if results:
            print(f"\n{'script':<24} {'status':<26} {'seconds':>8}")
            for name, status, seconds in results:
                print(f"{name:<24} {status:<26} {seconds:>8.1f}")
    if args.plot:
        plot(rows, bandwidth, args.plot)
    return EXIT_OK
