"""Differential program fuzzer and hostile-input fuzzing (ninfer_ir.fuzz).

    python scripts/fuzz.py --seed 0 --count 200            # programs 0..199
    python scripts/fuzz.py --seed 1000 --time 1800 --out fuzz-out
    python scripts/fuzz.py --parse 2000 --formats 2000     # hostile inputs too
    python scripts/fuzz.py --seed 17 --count 1 --show      # print one program

Prints programs generated, refused, passed and failed; each failure is reduced to the
fewest statements that fail the same way, printed, and (with --out) saved as a
reproducer: ``<out>/seed<S>.py`` (the kernel) and ``<out>/seed<S>.npz`` (its arguments).
Exit status 1 when anything failed.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

from ninfer_ir import fuzz  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--count", type=int, default=None, help="programs (default: 50 "
                    "unless --time is given)")
    ap.add_argument("--time", type=float, default=None, help="seconds for the program run")
    ap.add_argument("--isa", action="store_true", help="also the AVX2 and portable ISA levels")
    ap.add_argument("--known", action="store_true", help="also the constructs of "
                    "ninfer_ir.fuzz.EXCLUDED (defects being fixed separately)")
    ap.add_argument("--no-reduce", action="store_true")
    ap.add_argument("--parse", type=int, default=0, help="mutated IR texts into I.parse")
    ap.add_argument("--formats", type=int, default=0, help="random calls into I.formats")
    ap.add_argument("--out", default=None, help="folder for reproducers")
    ap.add_argument("--show", action="store_true", help="print each program's source")
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--isolate", type=int, default=0, metavar="K",
                    help="run programs in child processes, K per child, so that a crash or "
                         "a hang is recorded instead of ending the run")
    ap.add_argument("--program-timeout", type=float, default=600.0,
                    help="with --isolate: seconds one program may take before it is "
                         "recorded as a hang")
    ap.add_argument("--json", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.count is not None and a.count < 0 or a.time is not None and a.time < 0:
        ap.error("--count and --time must be non-negative")
    count = a.count if a.count is not None or a.time is not None else 50
    variants = fuzz.VARIANTS + (fuzz.ISA_VARIANTS if a.isa else ())
    if a.out:
        os.makedirs(a.out, exist_ok=True)

    state = {"seed": a.seed, "since": time.monotonic(),
             "summary": {"generated": 0, "refused": 0, "passed": 0, "failed": 0,
                         "categories": [], "next": a.seed}}

    def progress(program, res, failure):
        if a.show:
            print(program.source())
        if a.verbose or res.status != "passed":
            print(f"seed {program.seed}: {res.status} {res.category}", flush=True)
        if res.status == "refused":
            print("  " + res.detail.replace("\n", "\n  "))
        if failure is not None:
            _report(failure, a.out)
        summary = state["summary"]
        summary["generated"] += 1
        summary[res.status] += 1
        if res.status == "failed":
            summary["categories"].append((res.category, program.seed))
        summary["next"] = program.seed + 1
        _write(a.json, summary)
        state["seed"], state["since"] = program.seed + 1, time.monotonic()

    if a.json:
        _watchdog(a, state)
    bad = 0
    if count != 0 and a.isolate:
        bad += _isolated(a, count)
    elif count != 0:
        s = fuzz.run_programs(a.seed, count, a.time, variants, not a.no_reduce, progress,
                              known=a.known)
        print(f"programs generated {s.generated}, refused {s.refused}, passed {s.passed}, "
              f"failed {s.failed} ({s.seconds:.0f} s)")
        cats = {}
        for f in s.failures:
            cats.setdefault(f.category, []).append(f.seed)
        for c, seeds in sorted(cats.items()):
            print(f"  {c}: {len(seeds)} (seeds {', '.join(map(str, seeds[:10]))})")
        bad += s.failed + s.refused
    if a.parse:
        p = fuzz.fuzz_parse(a.seed, a.parse)
        print(f"parse: cases {p['cases']}, parsed {p['parsed']}, refused (typed) "
              f"{p['refused']}, failed {len(p['failures'])}")
        for kind, detail, text in p["failures"][:20]:
            print(f"  {kind}: {detail}\n    text ({len(text)} characters): {text[:300]!r}")
        bad += len(p["failures"])
    if a.formats:
        f = fuzz.fuzz_formats(a.seed, a.formats)
        print(f"formats: cases {f['cases']}, accepted {f['accepted']}, refused (typed) "
              f"{f['refused']}, failed {len(f['failures'])}")
        for name, what, kind, detail in f["failures"][:20]:
            print(f"  {name}.{what}: {kind}: {detail}")
        bad += len(f["failures"])
    return 1 if bad else 0


def _child(a, seed: int, count: int, path: str):
    """Run programs ``seed .. seed + count - 1`` in a child process; (summary, output).

    The child rewrites the summary after every program (``next``: the first seed not
    finished) and ends itself when one program runs past ``--program-timeout``; a child
    that dies leaves the summary of the programs before the one that killed it."""
    cmd = [sys.executable, os.path.abspath(__file__), "--seed", str(seed), "--count",
           str(count), "--json", path, "--program-timeout", str(a.program_timeout)]
    cmd += (["--isa"] if a.isa else []) + (["--out", a.out] if a.out else [])
    cmd += (["--no-reduce"] if a.no_reduce else []) + (["--known"] if a.known else [])
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    res = {"generated": 0, "refused": 0, "passed": 0, "failed": 0, "categories": [],
           "next": seed}
    if os.path.exists(path):
        with open(path) as f:
            res = json.load(f)
        os.remove(path)
    if p.returncode not in (0, 1, 3):           # killed by a signal or an abort: a crash
        s1 = res["next"]
        res["generated"] += 1
        res["failed"] += 1
        res["categories"].append((f"crash:exit {p.returncode}", s1))
        res["next"] = s1 + 1
        print(f"seed {s1}: failed crash (exit {p.returncode})\n  {p.stdout[-1500:]}")
    return res, p.stdout


def _isolated(a, count) -> int:
    import tempfile
    total = {"generated": 0, "refused": 0, "passed": 0, "failed": 0}
    cats: dict = {}
    start, seed = time.monotonic(), a.seed
    path = os.path.join(tempfile.mkdtemp(prefix="ninfer_fuzz_"), "summary.json")
    while (count is None or seed < a.seed + count) and (
            a.time is None or time.monotonic() - start < a.time):
        k = a.isolate if count is None else min(a.isolate, a.seed + count - seed)
        res, out = _child(a, seed, k, path)
        print("".join(line + "\n" for line in out.splitlines()
                      if not line.startswith(("programs generated", "  outcome", "  value",
                                              "  untyped", "  errtype", "  count", "  slow",
                                              "  hang", "  crash"))), end="", flush=True)
        for key in total:
            total[key] += res[key]
        for c, s1 in res["categories"]:
            cats.setdefault(c, []).append(s1)
        seed = max(res["next"], seed + 1 if res["generated"] == 0 else res["next"])
    print(f"programs generated {total['generated']}, refused {total['refused']}, passed "
          f"{total['passed']}, failed {total['failed']} ({time.monotonic() - start:.0f} s)")
    for c, seeds in sorted(cats.items()):
        print(f"  {c}: {len(seeds)} (seeds {', '.join(map(str, seeds[:10]))})")
    return total["failed"] + total["refused"]


def _watchdog(a, state):
    """End the process when one program runs past ``--program-timeout`` (a hang)."""
    import threading

    def check():
        while True:
            time.sleep(1.0)
            if time.monotonic() - state["since"] > a.program_timeout:
                state["summary"]["generated"] += 1
                state["summary"]["failed"] += 1
                state["summary"]["categories"].append(("hang", state["seed"]))
                state["summary"]["next"] = state["seed"] + 1
                _write(a.json, state["summary"])
                print(f"seed {state['seed']}: failed hang (over {a.program_timeout:.0f} s)",
                      flush=True)
                os._exit(3)
    threading.Thread(target=check, daemon=True).start()


def _write(path, summary) -> None:
    if path:
        with open(path + ".tmp", "w") as f:
            json.dump(summary, f)
        os.replace(path + ".tmp", path)


def _report(failure, out) -> None:
    print(f"  {failure.detail}".replace("\n", "\n  "))
    print(f"  sizes {failure.sizes}; reduced program:")
    print("    " + failure.source.replace("\n", "\n    "))
    if out:
        base = os.path.join(out, f"seed{failure.seed}")
        with open(base + ".py", "w") as f:
            f.write(f"# {failure.category}: {failure.detail.splitlines()[0]}\n")
            f.write(f"# arguments: {base}.npz, in parameter order\n")
            f.write(failure.source)
        np.savez(base + ".npz", **failure.arguments)
        print(f"  saved {base}.py and {base}.npz")


if __name__ == "__main__":
    if "--json" in sys.argv:        # a child of --isolate: an internal error is a crash (4)
        try:
            sys.exit(main())
        except Exception:
            import traceback
            traceback.print_exc()
            sys.exit(4)
    sys.exit(main())
