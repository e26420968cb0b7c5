"""``ninfer run``, ``ninfer ir`` and ``ninfer emit``."""
from __future__ import annotations

import sys
import time

import numpy as np

from ninfer_ir.targets import TARGETS
from ninfer_ir.types import BufferType

from .common import (EXIT_FAILED, EXIT_OK, CliError, best_and_median, fmt_seconds,
                         load_kernel, parse_assignments, usage)
from .inputs import fresh_copy, make_inputs, param_name


def outputs_of(func, args, returned) -> list:
    """(name, array) for every buffer after a call, then every returned value."""
    out = [(param_name(p, k), np.asarray(a)) for k, (p, a) in enumerate(zip(func.args, args))
           if isinstance(p.type, BufferType)]
    if returned is not None:
        rets = returned if isinstance(returned, tuple) else (returned,)
        out += [(f"result{k}", np.asarray(r)) for k, r in enumerate(rets)]
    return out


def first_difference(got: np.ndarray, want: np.ndarray) -> str:
    """Where two arrays first differ bit for bit, in words."""
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"{got.dtype}{list(got.shape)} against {want.dtype}{list(want.shape)}"
    g = np.ascontiguousarray(got).reshape(-1)
    w = np.ascontiguousarray(want).reshape(-1)
    gb, wb = g.view(np.uint8).reshape(g.size, -1), w.view(np.uint8).reshape(w.size, -1)
    bad = np.flatnonzero((gb != wb).any(axis=1))
    k = int(bad[0])
    where = np.unravel_index(k, got.shape) if got.ndim else ()
    return (f"{bad.size} of {g.size} values differ; first at {list(map(int, where))}: "
            f"{g[k]!r} against {w[k]!r}")


def compare(pairs_got, pairs_want) -> list[str]:
    """One line per output that differs (empty when all agree bit for bit)."""
    problems = []
    for (name, got), (_, want) in zip(pairs_got, pairs_want):
        same = (got.shape == want.shape and got.dtype == want.dtype and np.array_equal(
            np.ascontiguousarray(got).view(np.uint8), np.ascontiguousarray(want).view(np.uint8)))
        if not same:
            problems.append(f"{name}: {first_difference(got, want)}")
    return problems


def cmd_run(args) -> int:
    import ninfer_ir as I

    kernel = load_kernel(args.file)
    func = kernel.func
    rng = np.random.default_rng(args.seed)
    inputs, sizes, notes = make_inputs(func, rng, parse_assignments(args.dim))
    print(f"kernel {kernel.name} from {kernel.source_file}")
    if sizes:
        print("dims: " + " ".join(f"{k}={v}" for k, v in sizes.items()))
    for note in notes:
        print(f"  {note}")

    t0 = time.perf_counter()
    compiled = I.compile(kernel, target=args.target, threads=args.threads)
    t_compile = time.perf_counter() - t0

    got_args, want_args = fresh_copy(inputs), fresh_copy(inputs)
    got, got_err = _call(compiled, got_args)
    t0 = time.perf_counter()
    want, want_err = _call(lambda *a: I.interpret(kernel, *a), want_args)
    t_interp = time.perf_counter() - t0
    if got_err or want_err:
        return _errors(args.target, got_err, want_err)

    timing_args = fresh_copy(inputs)
    best, median = best_and_median(lambda: compiled(*timing_args), args.repeat)
    print(f"{args.target}: compile {fmt_seconds(t_compile)}, run {fmt_seconds(best)} best, "
          f"{fmt_seconds(median)} median of {max(1, args.repeat)}"
          + (" (numpy arguments: host-device copies included)" if args.target == "cuda" else ""))
    print(f"interp: run {fmt_seconds(t_interp)}")
    got, want = outputs_of(func, got_args, got), outputs_of(func, want_args, want)
    problems = compare(got, want)
    if problems:
        print(f"MISMATCH against the interpreter ({args.target} vs interp):")
        for line in problems:
            print(f"  {line}")
        return EXIT_FAILED
    values = sum(a.size for _, a in want)
    names = ", ".join(n for n, _ in want) or "no outputs"
    print(f"bit-exact against the interpreter: yes ({values} values in {names})")
    return EXIT_OK


def _call(fn, args):
    """(result, None) or (None, the DomainError's message)."""
    from ninfer_ir.errors import DomainError
    try:
        return fn(*args), None
    except DomainError as e:
        return None, str(e)


def _errors(target: str, got_err, want_err) -> int:
    """A run that raised ``DomainError`` on the target, the interpreter or both."""
    if got_err == want_err:
        raise CliError(f"DomainError: {got_err}")     # the same on both: the inputs are bad
    print(f"MISMATCH against the interpreter ({target} vs interp):")
    print(f"  {target}: {'DomainError: ' + got_err if got_err else 'no error'}")
    print(f"  interp: {'DomainError: ' + want_err if want_err else 'no error'}")
    return EXIT_FAILED


def _pass_names(target: str) -> list[str]:
    from ninfer_ir.passes.pipeline import default_passes
    return [p.name for p in default_passes(target)]


def cmd_ir(args) -> int:
    import ninfer_ir as I

    kernel = load_kernel(args.file)
    print_after = None
    if args.print_after:
        if args.print_after == "all":
            print_after = "all"
        else:
            print_after = {n.strip() for n in args.print_after.split(",") if n.strip()}
            known = _pass_names(args.target)
            unknown = sorted(print_after - set(known))
            if unknown:
                raise usage(f"--print-after: unknown pass {', '.join(unknown)}; the pipeline "
                            f"runs {', '.join(dict.fromkeys(known))}")
    if not print_after and not args.lowered and not args.dump_dir:
        _write(str(kernel.ir))
        return EXIT_OK
    lowered = I.lower(kernel, args.target, print_after=print_after, dump_dir=args.dump_dir)
    sys.stdout.flush()
    if args.lowered:
        _write(str(lowered))
    if args.dump_dir:
        print(f"stages written to {args.dump_dir}", file=sys.stderr)
    return EXIT_OK


def cmd_emit(args) -> int:
    import ninfer_ir as I

    kernel = load_kernel(args.file)
    target = next(t.name for t in TARGETS.values() if args.kind in t.emit_kinds)
    text = I.emit(kernel, target=target, kind=args.kind)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
        print(f"{args.kind} of {kernel.name} written to {args.output} ({len(text)} chars)",
              file=sys.stderr)
    else:
        _write(text)
    return EXIT_OK


def _write(text: str) -> None:
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
