"""Differential execution of one generated program on every variant, bit for bit.

Variants (``VARIANTS``): the interpreter on the kernel (the reference), the CPU backend at
1 and 2 threads, host C (the C-like emitter built by gcc), the lowered IR and the CUDA
pipeline's lowered IR re-interpreted, the printed IR parsed back and interpreted (the
print must also be a fixed point), and optionally the lower CPU ISA levels.

Results are compared bit for bit: every output buffer and returned value, except that a
NaN matches any NaN (the documented payload corner, docs/backends.md). A run that raises
must raise the same ``NinferError`` subclass with the same message everywhere (the
interpreter's: which check failed, at which index, on which record); any other
exception is a failure by itself.
"""
from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
import time
from dataclasses import dataclass

import numpy as np

VARIANTS = ("cpu1", "cpu2", "hostc", "lowered", "lowered-cuda", "roundtrip")
SLOW_BUILD = 60.0       # seconds: a variant that takes longer to build is a failure
ISA_VARIANTS = ("cpu-avx2", "cpu-portable")


@dataclass
class Result:
    status: str        # passed | failed | refused
    detail: str = ""   # what differed (failed), the generator's error (refused)
    category: str = "" # a short key for grouping failures


class Refused(Exception):
    """The program does not compile to IR (a generator defect, counted as refused)."""


def load_kernel(source: str, directory: str):
    """Write ``source`` to a real file and import it; the ``kern`` kernel."""
    from ninfer_ir.errors import DSLError, VerifyError
    fd, path = tempfile.mkstemp(suffix=".py", prefix="fuzzprog_", dir=directory)
    with os.fdopen(fd, "w") as f:
        f.write(source)
    name = os.path.basename(path)[:-3]
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(mod)
    except (DSLError, VerifyError) as e:
        raise Refused(f"{type(e).__name__}: {e}") from None
    finally:
        sys.modules.pop(name, None)
    return mod.kern


def _runners(kernel, variants, cache_dir):
    """name -> callable(*args) for each variant (building them may raise)."""
    import ninfer_ir as I
    from ninfer_ir.printer import print_module
    module = kernel.ir
    out = {"interp": lambda *a: I.interpret(module, *a)}
    lowered = None

    def low():
        nonlocal lowered
        if lowered is None:
            lowered = I.lower(module)
        return lowered

    for v in variants:
        t0 = time.monotonic()
        try:
            if v in ("cpu1", "cpu2"):
                out[v] = I.compile(module, "cpu", threads=int(v[-1]), cache_dir=cache_dir)
            elif v.startswith("cpu-"):
                from ninfer_ir.backends.llvm.runtime.launcher import compile_module
                out[v] = compile_module(low(), isa=v[4:], threads=1, cache_dir=cache_dir)
            elif v == "hostc":
                from ninfer_ir.backends.clike.host import HostKernel
                out[v] = HostKernel(low())
            elif v == "lowered":
                m = low()
                out[v] = lambda *a, m=m: I.interpret(m, *a)
            elif v == "lowered-cuda":
                m = I.lower(module, "cuda")
                out[v] = lambda *a, m=m: I.interpret(m, *a)
            elif v == "roundtrip":
                text = print_module(module)
                again = I.parse(text)
                if print_module(again) != text:
                    raise AssertionError("print(parse(print(m))) != print(m)")
                out[v] = lambda *a, m=again: I.interpret(m, *a)
        except Exception as e:          # a build failure is this variant's outcome
            out[v] = e
        took = time.monotonic() - t0
        if took > SLOW_BUILD:
            out[v] = SlowBuild(f"building took {took:.0f} s (limit {SLOW_BUILD:.0f} s)")
    return out


class SlowBuild(Exception):
    """A variant whose build (lowering, compiling) took longer than ``SLOW_BUILD``."""


def _root(a: np.ndarray) -> np.ndarray:
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def copy_arguments(args: list) -> list:
    """Fresh copies of the array arguments, sharing memory where the originals do: views
    of one array become the same views of one copy of it (a buffer passed as a tensor too
    stays one array); everything else is copied on its own."""
    roots, out = {}, []
    for a in args:
        if not isinstance(a, np.ndarray):
            out.append(a)
            continue
        shared = any(b is not a and isinstance(b, np.ndarray) and np.shares_memory(a, b)
                     for b in args)
        if not shared:
            out.append(a.copy())
            continue
        root = _root(a)
        if not (root.flags.c_contiguous or root.flags.f_contiguous):
            out.append(a.copy())            # not reproduced: no argument comes this way
            continue
        copy = roots.get(id(root))
        if copy is None:
            copy = roots[id(root)] = root.copy(order="A")
        offset = a.__array_interface__["data"][0] - root.__array_interface__["data"][0]
        out.append(np.ndarray(a.shape, a.dtype, buffer=copy, offset=offset,
                              strides=a.strides))
    return out


def _call(run, args):
    """(\"ok\", outputs) or (\"error\", exception)."""
    if isinstance(run, BaseException):
        return "error", run
    copies = copy_arguments(args)
    try:
        ret = run(*copies)
    except Exception as e:
        return "error", e
    if ret is None:
        ret = ()
    elif not isinstance(ret, tuple):
        ret = (ret,)
    outs = [c for c, a in zip(copies, args) if isinstance(a, np.ndarray)]
    outs += [np.asarray(r) for r in ret]
    return "ok", outs


def same_bits(a: np.ndarray, b: np.ndarray, dtype: str) -> bool:
    """Bit equality, except that a NaN matches any NaN (``ninfer_ir.testing.differs``;
    ``bf16`` words are NaN when their exponent is all ones and their fraction is not 0)."""
    from ninfer_ir.testing import differs
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if dtype == "bf16":
        def nan(w):
            return ((w & 0x7F80) == 0x7F80) & ((w & 0x7F) != 0)
        return bool(np.array_equal(nan(a), nan(b)) and np.array_equal(a[~nan(a)], b[~nan(b)]))
    return not differs(b, a).any()


def _typed(e) -> bool:
    from ninfer_ir.errors import NinferError
    return isinstance(e, (NinferError, MemoryError))


def _describe(e) -> str:
    return f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"


def compare(program, kernel, args: list, variants=VARIANTS, cache_dir=None,
            keep=None) -> Result:
    """Run every variant on ``args`` and compare with the interpreter."""
    dtypes = [p.dtype for p in program.param_list(keep) if p.shape is not None]
    runners = _runners(kernel, variants, cache_dir)
    ref_kind, ref = _call(runners["interp"], args)
    if ref_kind == "error" and not _typed(ref):
        return Result("failed", f"interp: untyped {_describe(ref)}", f"untyped:interp:{type(ref).__name__}")
    for name in variants:
        if isinstance(runners[name], SlowBuild):
            return Result("failed", f"{name}: {runners[name]}", f"slow:{name}")
        kind, got = _call(runners[name], args)
        if kind == "error" and not _typed(got):
            return Result("failed", f"{name}: untyped {_describe(got)}",
                          f"untyped:{name}:{type(got).__name__}")
        if kind != ref_kind:
            what = _describe(got) if kind == "error" else "ran"
            was = _describe(ref) if ref_kind == "error" else "ran"
            return Result("failed", f"{name}: {what}; interpreter: {was}",
                          f"outcome:{name}:{type(got).__name__ if kind == 'error' else 'ok'}")
        if kind == "error":
            if type(got) is not type(ref):
                return Result("failed", f"{name}: {_describe(got)}; interpreter: {_describe(ref)}",
                              f"errtype:{name}:{type(got).__name__}")
            if str(got) != str(ref):
                return Result("failed", f"{name}: {_describe(got)}; interpreter: {_describe(ref)}",
                              f"errmsg:{name}")
            continue
        rdt = dtypes + [None] * (len(ref) - len(dtypes))
        for k, (a, b) in enumerate(zip(ref, got)):
            if not same_bits(a, b, rdt[k] or ""):
                return Result("failed", f"{name}: output {k} differs\n  interp: {_show(a)}\n"
                                        f"  {name}: {_show(b)}", f"value:{name}")
        if len(ref) != len(got):
            return Result("failed", f"{name}: {len(got)} outputs, interpreter {len(ref)}",
                          f"count:{name}")
    return Result("passed")


def _show(a) -> str:
    a = np.asarray(a)
    s = np.array2string(a.reshape(-1)[:12], threshold=12)
    if a.dtype.kind == "f":
        s += " bits " + " ".join(f"{int(w):x}" for w in a.reshape(-1)[:6].view(
            {2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize]))
    return s
