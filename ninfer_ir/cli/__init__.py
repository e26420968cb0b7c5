"""The ``ninfer`` command line (also ``python -m ninfer_ir``).

    ninfer run  FILE.py[:kernel] [--target cpu|cuda|interp] [--dim N=4096 ...] [--seed S]
    ninfer ir   FILE.py[:kernel] [--print-after all|NAMES] [--lowered] [--remarks]
                [--target cpu|cuda]
    ninfer emit FILE.py[:kernel] --kind llvm|asm|cuda|ptx [-o OUT]
    ninfer bench [--quick] [--plot out.png] [--no-scripts]
    ninfer bench FILE.py[:kernel] [--baseline NAME] [--target cpu|cuda] [--dim N=64 ...]
    ninfer bisect FILE.py[:kernel] [--target cpu|cuda] [--dim N=64 ...] [--seed S]
    ninfer gguf FILE.gguf [--tensor NAME] [--rows R] [--target cpu|interp]
    ninfer cache info|clear [--dir DIR]
    ninfer generate MODEL.gguf --prompt TEXT [--max-tokens N] [--target cpu|interp|cuda]
                [--threads T] [--seed S --temperature X] [--reference]

Exit codes: 0 success; 1 a check failed (results differ from the interpreter, a
``DomainError``, a kernel the DSL refuses); 2 usage error (bad option, missing
file, unknown kernel or pass name); 3 unavailable (no GPU for ``--target cuda``,
a missing optional package). Errors are one line on stderr; ``--debug`` adds the
traceback.
"""
from __future__ import annotations

import argparse
import sys
import traceback

from ninfer_ir.targets import EMIT_KINDS, EMIT_TARGETS, TARGETS

from .common import EXIT_FAILED, EXIT_UNAVAILABLE, EXIT_USAGE, CliError

EPILOG = ("exit codes: 0 ok, 1 check failed (mismatch, DomainError, invalid kernel), "
          "2 usage error, 3 target or package unavailable")


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def _int_at_least(low: int, what: str):
    """An argparse type: an integer >= ``low`` (a usage error otherwise)."""
    def convert(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"{value} is not {what}")
        return value
    convert.__name__ = what
    return convert


COUNT = _int_at_least(1, "a positive integer")
NATURAL = _int_at_least(0, "a non-negative integer")


def _common() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                   help="print a traceback on errors")
    return p


def _kernel_arg(p) -> None:
    p.add_argument("file", metavar="FILE.py[:kernel]",
                   help="a Python file with @I.kernel functions; name one after ':' when "
                        "it defines several")


def build_parser() -> argparse.ArgumentParser:
    from ninfer_ir import __version__

    parser = _Parser(prog="ninfer", epilog=EPILOG,
                     description="Compile, check, inspect and benchmark ninfer_ir kernels.")
    parser.add_argument("--version", action="version", version=f"ninfer_ir {__version__}")
    parser.add_argument("--debug", action="store_true", help="print a traceback on errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    common = [_common()]

    run = sub.add_parser("run", parents=common, epilog=EPILOG,
                         help="run a kernel on random inputs and check it bit for bit "
                              "against the interpreter",
                         description="Make random inputs from the kernel's annotations, "
                                     "run it on the target and on the interpreter, compare "
                                     "every output bit for bit and print timings.")
    _kernel_arg(run)
    run.add_argument("--target", default="cpu", choices=list(TARGETS),
                     help="where to run (default: cpu)")
    run.add_argument("--dim", action="append", metavar="NAME=VALUE",
                     help="size of a symbol dim or value of a scalar parameter "
                          "(repeatable; symbols default to 16)")
    run.add_argument("--seed", type=NATURAL, default=0, help="random seed of the inputs")
    run.add_argument("--repeat", type=COUNT, default=10, help="timed calls on the target")
    run.add_argument("--threads", type=COUNT, default=None,
                     help="threads for parallel loops on cpu (default: all CPUs)")
    run.set_defaults(handler="run:cmd_run")

    ir = sub.add_parser("ir", parents=common, epilog=EPILOG,
                        help="print a kernel's IR, before or after the pass pipeline",
                        description="Print the kernel's IR; --lowered prints it after the "
                                    "pass pipeline, --print-after prints intermediate stages.")
    _kernel_arg(ir)
    ir.add_argument("--print-after", metavar="all|NAMES",
                    help="'all' or comma-separated pass names (canonicalize, cse, licm, dce, "
                         "fuse, materialize, lower, parallelize, select)")
    ir.add_argument("--lowered", action="store_true", help="print the lowered (loop-level) IR")
    ir.add_argument("--remarks", action="store_true",
                    help="say for every loop which library kernel it runs as, or why none "
                         "(lines '// remark: ...' after any IR printed)")
    ir.add_argument("--target", default="cpu", choices=list(EMIT_TARGETS),
                    help="the pipeline's target")
    ir.add_argument("--dump-dir", metavar="DIR", help="write every stage as DIR/NN-pass.nir")
    ir.set_defaults(handler="run:cmd_ir")

    emit = sub.add_parser("emit", parents=common, epilog=EPILOG,
                          help="print generated LLVM IR, assembly, CUDA C++ or PTX",
                          description="Print the code generated for a kernel. CUDA source and "
                                      "PTX are produced without a GPU.")
    _kernel_arg(emit)
    emit.add_argument("--kind", default="llvm", choices=list(EMIT_KINDS))
    emit.add_argument("-o", "--output", metavar="OUT", help="write to OUT instead of stdout")
    emit.set_defaults(handler="run:cmd_emit")

    bench = sub.add_parser("bench", parents=common, epilog=EPILOG,
                           help="time a kernel (or the Q4_K GEMV) against the interpreter "
                                "and numpy",
                           description="With FILE.py[:kernel]: time the kernel on random "
                                       "inputs on the target, on the interpreter and against "
                                       "a numpy baseline (a function numpy_baseline in the "
                                       "file, or --baseline NAME, called with the same "
                                       "arguments), each until the timing is stable. "
                                       "Without: time the Q4_K GEMV on every available "
                                       "target against a measured memory-copy bandwidth, "
                                       "print a table, run the scripts in benchmarks/. "
                                       "--plot draws a chart (needs matplotlib, checked "
                                       "before anything runs).")
    bench.add_argument("file", nargs="?", metavar="FILE.py[:kernel]",
                       help="a Python file with @I.kernel functions (default: the Q4_K GEMV "
                            "table)")
    bench.add_argument("--baseline", metavar="NAME",
                       help="the numpy function in FILE timed against the kernel (default: "
                            "numpy_baseline when the file defines it)")
    bench.add_argument("--target", default="cpu", choices=list(EMIT_TARGETS),
                       help="the compiled target timed with FILE (default: cpu)")
    bench.add_argument("--dim", action="append", metavar="NAME=VALUE",
                       help="size of a symbol dim or value of a scalar parameter (FILE)")
    bench.add_argument("--seed", type=int, default=0, help="random seed of the inputs (FILE)")
    bench.add_argument("--quick", action="store_true", help="small sizes, few repetitions")
    bench.add_argument("--plot", metavar="OUT.png", help="draw a roofline-style PNG")
    bench.add_argument("--no-scripts", action="store_true",
                       help="skip the scripts in benchmarks/")
    bench.add_argument("--threads", type=COUNT, default=None, help="threads on cpu")
    bench.set_defaults(handler="bench:cmd_bench")

    bisect = sub.add_parser("bisect", parents=common, epilog=EPILOG,
                            help="find the first pass after which the kernel computes other "
                                 "bits",
                            description="Run the pass pipeline on the kernel and, after every "
                                        "pass, the resulting IR in the interpreter on random "
                                        "inputs; name the first pass whose output differs "
                                        "bit for bit from the kernel's own IR (exit 1) and "
                                        "print the IR before and after it.")
    _kernel_arg(bisect)
    bisect.add_argument("--target", default="cpu", choices=list(EMIT_TARGETS),
                        help="the pipeline's target")
    bisect.add_argument("--dim", action="append", metavar="NAME=VALUE",
                        help="size of a symbol dim or value of a scalar parameter "
                             "(repeatable; symbols default to 16)")
    bisect.add_argument("--seed", type=int, default=0, help="random seed of the inputs")
    bisect.set_defaults(handler="bisect:cmd_bisect")

    gguf = sub.add_parser("gguf", parents=common, epilog=EPILOG,
                          help="list a GGUF file's tensors and check the Q4_K GEMV on them",
                          description="List the tensors of a GGUF file with their "
                                      "ninfer_ir.formats decoder (--tensor decodes one and "
                                      "compares it with gguf-py), and run the Q4_K GEMV on each "
                                      "Q4_K tensor on the interpreter and a compiled target: "
                                      "prints bit-exact agreement and the relative error "
                                      "against a float64 product of the decoded weights and "
                                      "the unquantized x.")
    gguf.add_argument("path", metavar="FILE.gguf")
    gguf.add_argument("--tensor", metavar="NAME", help="only this tensor")
    gguf.add_argument("--rows", type=NATURAL, default=0,
                      help="GEMV on the first ROWS rows of each tensor (default: all)")
    gguf.add_argument("--target", default="cpu", choices=list(EMIT_TARGETS),
                      help="the compiled target compared with the interpreter")
    gguf.add_argument("--seed", type=NATURAL, default=0, help="random seed of x")
    gguf.set_defaults(handler="gguf:cmd_gguf")

    gen = sub.add_parser("generate", parents=common, epilog=EPILOG,
                         help="generate text with Gemma 3 from its GGUF file",
                         description="Read a Gemma 3 GGUF file (memory-mapped), encode the "
                                     "prompt with its SentencePiece vocabulary and stream "
                                     "the continuation. The forward pass is the model's DSL "
                                     "kernels on --target (every weight matrix consumed "
                                     "as stored: Q4_K, Q6_K, Q5_0, Q8_0), "
                                     "or with --reference the reference (numpy) forward "
                                     "pass. Control-token text in the prompt (such as "
                                     "<start_of_turn>) becomes that token.")
    gen.add_argument("path", metavar="MODEL.gguf")
    gen.add_argument("--prompt", required=True, help="the text to continue")
    gen.add_argument("--max-tokens", type=COUNT, default=32, help="tokens to generate")
    gen.add_argument("--target", default="cpu", choices=list(TARGETS),
                     help="where the kernels run (default: cpu)")
    gen.add_argument("--threads", type=COUNT, default=None, help="threads on cpu")
    gen.add_argument("--seed", type=NATURAL, default=None, help="seed of the sampling")
    gen.add_argument("--temperature", type=float, default=0.0,
                     help="0 (default) picks the most likely token; above, samples")
    gen.add_argument("--context", type=COUNT, default=2048,
                     help="positions in the KV cache (default 2048)")
    gen.add_argument("--reference", action="store_true",
                     help="run the reference (numpy) forward pass instead of the kernels")
    gen.set_defaults(handler="generate:cmd_generate")

    cache = sub.add_parser("cache", parents=common, epilog=EPILOG,
                           help="show or empty the CPU object cache",
                           description="'info' prints the cache directory, whether it is "
                                       "used, its entries, size and limit; 'clear' removes "
                                       "every entry. The directory is --dir, else "
                                       "$NINFER_CACHE_DIR, else $XDG_CACHE_HOME/ninfer_ir/llvm "
                                       "(~/.cache/ninfer_ir/llvm); the limit is "
                                       "$NINFER_CACHE_MAX_BYTES (default 512 MiB).")
    cache.add_argument("action", choices=["info", "clear"])
    cache.add_argument("--dir", metavar="DIR", help="the cache directory")
    cache.set_defaults(handler="cache:cmd_cache")
    return parser


def _dispatch(args) -> int:
    import importlib

    module, _, name = args.handler.partition(":")
    return getattr(importlib.import_module(f"ninfer_ir.cli.{module}"), name)(args)


def _report(e: BaseException, debug: bool) -> int:
    from ninfer_ir.errors import DomainError, DSLError, NinferError, TargetUnavailable
    from ninfer_ir.errors import OptionError

    if isinstance(e, CliError):
        code, line = e.code, str(e)
    elif isinstance(e, OptionError):
        code, line = EXIT_USAGE, str(e)
    elif isinstance(e, TargetUnavailable):
        code, line = EXIT_UNAVAILABLE, f"target unavailable: {e}"
    elif isinstance(e, DSLError):
        code, line = EXIT_FAILED, str(e)          # the location, then the source line
    elif isinstance(e, DomainError):
        code, line = EXIT_FAILED, f"DomainError: {e}"
    elif isinstance(e, NinferError):
        code, line = EXIT_FAILED, f"{type(e).__name__}: {e}"
    elif isinstance(e, ImportError):
        code, line = EXIT_UNAVAILABLE, f"unavailable: {e}"
    else:
        code, line = EXIT_FAILED, f"{type(e).__name__}: {e}"
        if not debug:
            line += " (rerun with --debug for a traceback)"
    if debug:
        traceback.print_exception(type(e), e, e.__traceback__, file=sys.stderr)
    print(f"ninfer: error: {line}", file=sys.stderr)
    return code


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:                       # --help, --version, usage errors
        return e.code if isinstance(e.code, int) else EXIT_USAGE
    if not args.command:
        parser.print_help()
        return EXIT_USAGE
    debug = bool(getattr(args, "debug", False))
    try:
        return _dispatch(args)
    except KeyboardInterrupt:
        print("ninfer: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:                        # the reader (``| head``) went away
        import os
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as e:                         # noqa: BLE001 - reported as one line
        return _report(e, debug)


if __name__ == "__main__":
    raise SystemExit(main())
