"""Resident memory growth per CPU compile (the LLVM O3 pipeline's leak).

    python scripts/llvm_compile_memory.py [--n 300]

Each case runs 20 warm-up steps, then N steps, and prints the growth of the resident
set per step (after a garbage collection):

* ``miss``      -- JITModule of a new module each step (parse, O3 and codegen in the
                   compile helper process, link here);
* ``miss-here`` -- the same with ``NINFER_COMPILE_WORKER=0`` (O3 and codegen here);
* ``hit``       -- JITModule of one module from the object cache (link only);
* ``llvmlite``  -- llvmlite alone: parse, O3 pipeline through a fresh pass builder,
                   every object closed (the minimal reproducer in docs/backends.md);
* ``passbuilder`` -- llvmlite alone: create and close a pass builder and its pipeline,
                   nothing run.

Each case runs in a fresh process, so one does not inherit another's heap.
"""
from __future__ import annotations

import argparse
import gc
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

IR = """
define i64 @f{k}(i64* %p, i64 %n) {{
entry:
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%j, %loop]
  %s = phi i64 [{k}, %entry], [%t, %loop]
  %q = getelementptr i64, i64* %p, i64 %i
  %v = load i64, i64* %q
  %t = add i64 %s, %v
  %j = add i64 %i, 1
  %c = icmp slt i64 %j, %n
  br i1 %c, label %loop, label %out
out:
  ret i64 %t
}}
"""


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def run_case(case: str, n: int) -> float:
    sys.path.insert(0, ROOT)
    import llvmlite.binding as llvm

    from ninfer_ir.backends.llvm.runtime import jit as J

    target = J.host_target()
    tm = target.create_target_machine()
    cache = tempfile.mkdtemp()

    def step(k):
        if case in ("miss", "miss-here"):
            J.JITModule(IR.format(k=k), use_cache=False).address(f"f{k}")
        elif case == "hit":
            J.JITModule(IR.format(k=0), cache_dir=cache).address("f0")
        elif case == "llvmlite":
            mod = llvm.parse_assembly(IR.format(k=k))
            pto = llvm.create_pipeline_tuning_options(speed_level=3)
            pb = llvm.create_pass_builder(tm, pto)
            mpm = pb.getModulePassManager()
            mpm.run(mod, pb)
            mpm.close(), pb.close(), pto.close(), mod.close()
        elif case == "passbuilder":
            pto = llvm.create_pipeline_tuning_options(speed_level=3)
            pb = llvm.create_pass_builder(tm, pto)
            pb.getModulePassManager().close()
            pb.close(), pto.close()

    for k in range(20):
        step(k)
    gc.collect()
    before = rss()
    for k in range(20, 20 + n):
        step(k)
    gc.collect()
    return (rss() - before) / n / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--case", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:
        print(f"{run_case(args.case, args.n):.1f}")
        return
    print(f"{'case':<12} {'KiB/step':>9} {'MiB over ' + str(args.n):>14}")
    for case in ("miss", "miss-here", "hit", "llvmlite", "passbuilder"):
        env = dict(os.environ, NINFER_COMPILE_WORKER="0" if case == "miss-here" else "1")
        out = subprocess.run([sys.executable, __file__, "--case", case, "--n", str(args.n)],
                             capture_output=True, text=True, check=True, env=env).stdout
        per = float(out)
        print(f"{case:<12} {per:>9.1f} {per * args.n / 1024:>14.1f}")


if __name__ == "__main__":
    main()
