"""``ninfer run``, ``ninfer ir`` and ``ninfer emit``."""
from __future__ import annotations

import sys
import time

import numpy as np

from ninfer_ir.targets import TARGETS
from ninfer_ir.testing import differences, outputs_of

from .common import (EXIT_FAILED, EXIT_OK, CliError, best_and_median, check_output_dir,
                     check_output_file, fmt_seconds, load_kernel, parse_assignments, usage)
from .inputs import fresh_copy, make_inputs


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
    problems = differences(got, want)
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

    if args.dump_dir:
        check_output_dir(args.dump_dir, "--dump-dir")
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
    if not print_after and not args.lowered and not args.dump_dir and not args.remarks:
        _write(str(kernel.ir))
        return EXIT_OK
    try:
        lowered, report = I.lower(kernel, args.target, print_after=print_after,
                                  dump_dir=args.dump_dir, report=True)
    except OSError as e:                  # only the stage files are written here
        raise CliError(f"--dump-dir {args.dump_dir}: cannot write the stages: "
                       f"{e.strerror or e}") from None
    sys.stdout.flush()
    if args.lowered:
        _write(str(lowered))
    if args.remarks:
        _write("".join(f"// remark: {r}\n" for r in report.remarks) or "// remark: no loops")
    if args.dump_dir:
        print(f"stages written to {args.dump_dir}", file=sys.stderr)
    return EXIT_OK


def cmd_emit(args) -> int:
    import ninfer_ir as I

    if args.output:
        check_output_file(args.output, "-o")
    kernel = load_kernel(args.file)
    target = next(t.name for t in TARGETS.values() if args.kind in t.emit_kinds)
    text = I.emit(kernel, target=target, kind=args.kind)
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as e:
            raise CliError(f"cannot write {args.output}: {e.strerror or e}") from None
        print(f"{args.kind} of {kernel.name} written to {args.output} ({len(text)} chars)",
              file=sys.stderr)
    else:
        _write(text)
    return EXIT_OK


def _write(text: str) -> None:
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
