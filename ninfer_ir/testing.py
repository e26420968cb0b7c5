"""Helpers for testing and timing kernels: the checks ninfer_ir's own suite and the
``ninfer`` command line use.

    from ninfer_ir.testing import assert_same_bits, random_inputs, compare_targets, bench

    args = random_inputs(q4k_gemv, dims={"N": 64, "G": 8}, seed=0)
    compare_targets(q4k_gemv, *args, targets=("interp", "cpu"))   # AssertionError if not
    print(bench(I.compile(q4k_gemv), *args))                       # median and spread

* ``assert_same_bits(actual, expected)``: same dtype, shape and bits; where
  ``expected`` holds a float NaN, ``actual`` must hold a NaN, of any sign and payload
  (the one corner the exactness contract leaves open, docs/backends.md).
* ``random_inputs(kernel, dims=None, seed=0)``: arguments made from the kernel's
  annotations (the rules are in ``inputs_with_notes``).
* ``compare_targets(kernel, *args, targets=...)``: runs the kernel on every target
  on its own copy of the arguments and asserts every written buffer and returned
  value has the first target's bits.
* ``bench(fn, *args)``: times ``fn(*args)`` in batches until the spread of the batch
  times settles, and returns a ``Timing`` (median and spread per call).
* ``bisect_passes(kernel, *args, passes=None)``: the first pass of the pipeline after
  which the interpreter computes other bits (``ninfer bisect`` prints it).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from .errors import DomainError, VerifyError
from .types import BufferType, ScalarType, ShapedType

__all__ = ["assert_same_bits", "random_inputs", "inputs_with_notes", "compare_targets",
           "bench", "Timing", "bisect_passes", "Bisection", "DEFAULT_DIM"]

#: the size of a symbol dim that ``dims`` does not give, and of an unknown (``None``) dim
DEFAULT_DIM = 16
_INT_RANGE = {8: None, 16: None, 32: (-(1 << 15), 1 << 15), 64: (-(1 << 15), 1 << 15)}


# --- comparing bits ---------------------------------------------------------------------

def _as_array(x) -> np.ndarray:
    from .backends.signature import host_array
    if hasattr(x, "get") and hasattr(x, "__cuda_array_interface__"):    # a cupy array
        x = x.get()
    x = host_array(x)
    return x if isinstance(x, np.ndarray) else np.asarray(x)


def _bits(a: np.ndarray) -> np.ndarray:
    """One row of bytes per element."""
    flat = np.ascontiguousarray(a).reshape(-1)
    return flat.view(np.uint8).reshape(flat.size, a.dtype.itemsize)


def differs(actual, expected) -> np.ndarray:
    """Per element (flattened), whether two arrays of one shape and dtype differ: bit for
    bit, except that a float NaN in ``expected`` matches any NaN in ``actual``."""
    got, want = _as_array(actual), _as_array(expected)
    differ = (_bits(got) != _bits(want)).any(axis=1)
    if want.dtype.kind == "f":
        nan = np.isnan(want.reshape(-1))
        differ[nan] = ~np.isnan(got.reshape(-1)[nan])
    return differ


def first_difference(actual, expected) -> str | None:
    """Where ``actual`` first differs from ``expected`` bit for bit (NaN-aware, see
    ``assert_same_bits``), in words; ``None`` when they agree."""
    got, want = _as_array(actual), _as_array(expected)
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"{got.dtype}{list(got.shape)} against {want.dtype}{list(want.shape)}"
    bad = np.flatnonzero(differs(got, want))
    if not bad.size:
        return None
    k = int(bad[0])
    where = [int(i) for i in np.unravel_index(k, got.shape)] if got.ndim else []
    g, w = got.reshape(-1)[k], want.reshape(-1)[k]
    return (f"{bad.size} of {got.size} values differ; first at {where}: {g!r} "
            f"(bits {_bits(got.reshape(-1)[k:k + 1]).tobytes().hex()}) against {w!r} "
            f"(bits {_bits(want.reshape(-1)[k:k + 1]).tobytes().hex()})")


def assert_same_bits(actual, expected, what: str = "") -> None:
    """Assert ``actual`` has ``expected``'s dtype, shape and bits.

    Arrays, numpy scalars and objects exporting ``__dlpack__`` or the array
    interface are accepted (cupy arrays are copied to the host). A float NaN in
    ``expected`` matches any NaN in ``actual`` (sign and payload are not pinned,
    docs/backends.md); every other element, -0.0 and +0.0 included, must have the
    same bits. bf16 values held as uint16 words are compared as words (exactly)."""
    problem = first_difference(actual, expected)
    if problem is not None:
        raise AssertionError(f"{what + ': ' if what else ''}{problem}")


# --- random inputs ------------------------------------------------------------------------

def _name(p, k: int) -> str:
    return p.name_hint or f"arg{k}"


def _func(kernel):
    """The FuncOp of an ``@I.kernel``, a Module (its first function) or a FuncOp."""
    from .api import module_of
    from .ir import FuncOp
    return kernel if isinstance(kernel, FuncOp) else module_of(kernel).funcs[0]


def symbol_sizes(func, dims: dict) -> dict:
    """Every symbol of the parameters -> its size (``dims`` or the default); a bad size or
    an unknown name raises ``VerifyError``."""
    sizes = {}
    for p in func.args:
        if isinstance(p.type, ShapedType):
            for d in p.type.shape:
                if isinstance(d, str):
                    sizes[d] = dims.get(d, DEFAULT_DIM)
    for name, size in sizes.items():
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 0:
            raise VerifyError(f"dim {name}={size!r}: a size must be a non-negative integer")
    scalars = {_name(p, k) for k, p in enumerate(func.args) if isinstance(p.type, ScalarType)}
    unknown = sorted(set(dims) - set(sizes) - scalars)
    if unknown:
        known = ", ".join(sorted(set(sizes) | scalars)) or "none"
        raise VerifyError(f"dim names {', '.join(unknown)}, which the kernel does not have "
                          f"(symbols and scalar parameters: {known})")
    return sizes


def _floats(rng, shape, dtype: ScalarType) -> np.ndarray:
    v = rng.standard_normal(shape).astype(np.float32)
    if dtype.name == "bf16":
        return (v.view(np.uint32) >> 16).astype(np.uint16)
    return v.astype(dtype.np_dtype)


def _ints(rng, shape, dtype: ScalarType) -> np.ndarray:
    info = np.iinfo(dtype.np_dtype)
    if dtype.kind == "index":
        lo, hi = 0, DEFAULT_DIM
    elif _INT_RANGE.get(dtype.bits) is None:
        lo, hi = int(info.min), int(info.max) + 1
    else:
        lo, hi = _INT_RANGE[dtype.bits]
        lo = max(lo, int(info.min))
    return rng.integers(lo, hi, size=shape, dtype=np.int64).astype(dtype.np_dtype)


def _array(rng, shape, dtype: ScalarType):
    """A random array of ``shape``/``dtype`` and a few words on how it was made."""
    if dtype.name == "u8" and shape and shape[-1] == 144:
        from .q4k import random_q4k
        return random_q4k(rng, *shape[:-1]), "Q4_K records"
    if dtype.name == "u8" and shape and shape[-1] == 292:
        from . import quant, quantize
        rows = int(np.prod(shape[:-1]))
        x = rng.standard_normal((rows, 256)).astype(np.float32)
        return np.asarray(quantize(x, format=quant.q8_k)).reshape(shape), "Q8_K records"
    if dtype.is_float:
        return _floats(rng, shape, dtype), "normal"
    if dtype.kind == "bool":
        return rng.integers(0, 2, size=shape).astype(bool), "random bools"
    return _ints(rng, shape, dtype), "random ints"


def _scalar(rng, dtype: ScalarType, value=None):
    if value is None:
        if dtype.is_float:
            return _floats(rng, (), dtype)[()], "random"
        if dtype.kind == "bool":
            return np.bool_(rng.integers(0, 2)), "random"
        return dtype.np_dtype.type(rng.integers(1, DEFAULT_DIM + 1)), "random"
    try:
        if dtype.name == "bf16":
            return np.uint16(np.float32(value).view(np.uint32) >> 16), "given"
        return np.asarray(value).astype(dtype.np_dtype)[()], "given"
    except (OverflowError, ValueError, TypeError) as e:
        raise VerifyError(f"{value!r} is not a {dtype}: {e}") from None


def inputs_with_notes(kernel, dims=None, seed=0):
    """``(arguments, {symbol: size}, one line per parameter)``: what ``random_inputs``
    makes, with the sizes used and how each argument was made.

    * a symbol dim takes its size from ``dims`` (default ``DEFAULT_DIM``), as does an
      unknown (``None``) dim;
    * ``u8[..., 144]`` tensors are valid Q4_K records, ``u8[..., 292]`` valid Q8_K
      records (quantized from standard normal values);
    * float tensors are standard normal (``bf16`` as the words of such values);
      integer tensors uniform over a moderate range; ``bool`` tensors random;
    * buffers are zero-filled;
    * a scalar parameter takes ``dims[name]`` when given, else a random value (floats
      standard normal, integers 1..16, bools random).

    ``seed`` is an int or a ``numpy.random.Generator``. A name in ``dims`` the kernel
    does not have, or a bad size, raises ``VerifyError``."""
    func = _func(kernel)
    dims = dict(dims or {})
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    sizes = symbol_sizes(func, dims)
    args, notes = [], []
    for k, p in enumerate(func.args):
        name, t = _name(p, k), p.type
        if isinstance(t, ScalarType):
            try:
                value, how = _scalar(rng, t, dims.get(name))
            except VerifyError as e:
                raise VerifyError(f"dim {name}: {e}") from None
            args.append(value)
            notes.append(f"{name}: {t} = {value} ({how})")
            continue
        shape = tuple(sizes[d] if isinstance(d, str) else DEFAULT_DIM if d is None else d
                      for d in t.shape)
        if isinstance(t, BufferType):
            arr, how = np.zeros(shape, t.dtype.np_dtype), "zeros"
        else:
            arr, how = _array(rng, shape, t.dtype)
        args.append(arr)
        notes.append(f"{name}: {t.dtype}[{','.join(map(str, shape))}] ({how})")
    return args, sizes, notes


def random_inputs(kernel, dims=None, seed=0) -> list:
    """Arguments for ``kernel`` in parameter order, made from its annotations
    (symbol sizes and scalar values from ``dims``; see ``inputs_with_notes``)."""
    return inputs_with_notes(kernel, dims, seed)[0]


# --- running on several targets -------------------------------------------------------------

def fresh_copy(args) -> list:
    """Independent copies of the array arguments (a kernel may write its buffers)."""
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def outputs_of(func, args, returned) -> list:
    """(name, array) for every buffer after a call, then every returned value."""
    out = [(_name(p, k), _as_array(a)) for k, (p, a) in enumerate(zip(func.args, args))
           if isinstance(p.type, BufferType) and a is not None]
    if returned is not None:
        rets = returned if isinstance(returned, tuple) else (returned,)
        out += [(f"result{k}", _as_array(r)) for k, r in enumerate(rets)]
    return out


def differences(got, want) -> list[str]:
    """One line per output of ``outputs_of`` pairs that differs (empty when all agree)."""
    problems = []
    for (name, g), (_, w) in zip(got, want):
        problem = first_difference(g, w)
        if problem is not None:
            problems.append(f"{name}: {problem}")
    if len(got) != len(want):
        problems.append(f"{len(got)} outputs against {len(want)}")
    return problems


def compare_targets(kernel, *args, targets=("interp", "cpu"), threads=None):
    """Run ``kernel`` on each target (each on its own copy of the arguments) and assert
    that every written buffer and returned value has the first target's bits.

    Returns the first target's outputs, ``[(name, array), ...]``. A target that
    cannot run here raises ``TargetUnavailable``. When every target raises the same
    ``DomainError`` it is raised; when they disagree on raising, ``AssertionError``."""
    from .api import compile as _compile
    if len(targets) < 2:
        raise ValueError(f"compare_targets needs at least two targets, got {targets!r}")
    func = _func(kernel)
    runs = []
    for target in targets:
        run = _compile(kernel, target=target, **({"threads": threads} if target == "cpu"
                                                 else {}))
        call_args = fresh_copy(args)
        try:
            returned, error = run(*call_args), None
        except DomainError as e:
            returned, error = None, e
        runs.append((target, error, None if error else outputs_of(func, call_args, returned)))
    (ref, ref_err, ref_out), rest = runs[0], runs[1:]
    for target, err, out in rest:
        if (err is None) != (ref_err is None) or (err and str(err) != str(ref_err)):
            raise AssertionError(f"@{func.sym_name}: {target} and {ref} disagree: "
                                 f"{target}: {err or 'no error'}; {ref}: {ref_err or 'no error'}")
        if err is None:
            problems = differences(out, ref_out)
            if problems:
                raise AssertionError(f"@{func.sym_name}: {target} against {ref}: "
                                     + "; ".join(problems))
    if ref_err is not None:
        raise ref_err
    return ref_out


# --- timing ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Timing:
    """Seconds per call: ``median`` and ``best`` over ``batches`` batches of ``number``
    calls; ``spread`` is the interquartile range of the batch times over their median
    (0.02 means 2 %); ``stable`` says whether it came under ``rel_spread``."""
    median: float
    best: float
    spread: float
    batches: int
    number: int
    stable: bool

    def __str__(self):
        from .cli.common import fmt_seconds
        return (f"{fmt_seconds(self.median)} median, +/- {100 * self.spread:.1f}% "
                f"({self.batches} batches of {self.number} call(s)"
                f"{'' if self.stable else ', not settled'})")


def best_seconds(fn, repeat: int) -> float:
    """The fastest of ``repeat`` calls of ``fn()``, in seconds."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def bench(fn, *args, min_batch: float = 0.01, rel_spread: float = 0.05,
          min_batches: int = 5, max_time: float = 2.0, warmup: int = 1) -> Timing:
    """Time ``fn(*args)`` until the timing is stable.

    After ``warmup`` calls (a first call may compile), the number of calls per batch
    grows (1, 2, 5, 10, 20, ...) until one batch takes ``min_batch`` seconds, as
    ``timeit``'s autorange does; then batches run until there are ``min_batches`` of
    them and the interquartile range of the last ones is within ``rel_spread`` of
    their median, or ``max_time`` seconds have passed (``stable`` is then false)."""
    for _ in range(warmup):
        fn(*args)
    clock = time.perf_counter

    def batch(n):
        t0 = clock()
        for _ in range(n):
            fn(*args)
        return clock() - t0

    number, start = 1, clock()
    while True:
        t = batch(number)
        if t >= min_batch or clock() - start > max_time / 4:
            break
        number *= 2.5 if str(number)[0] == "2" else 2
        number = int(number)
    times = [t / number]
    window = max(min_batches, 5)
    while True:
        times.append(batch(number) / number)
        recent = np.sort(times[-window:] if len(times) >= window else times)
        median = float(np.median(recent))
        q1, q3 = np.percentile(recent, [25, 75])
        spread = float((q3 - q1) / median) if median > 0 else 0.0
        stable = len(times) >= min_batches and spread <= rel_spread
        if stable or clock() - start > max_time:
            return Timing(median=median, best=float(min(times)), spread=spread,
                          batches=len(times), number=number, stable=stable)


# --- which pass changed the bits ------------------------------------------------------------

@dataclass
class Bisection:
    """What ``bisect_passes`` found: ``stage`` ("NN-name") and ``pass_name`` of the first
    pass that changed the outcome (``None`` when no pass did), ``before``/``after`` (the
    IR texts around it), ``problem`` (what differs, in words) and ``stages`` (how many
    stages ran in the interpreter, the kernel's own IR included)."""
    stage: str | None
    pass_name: str | None
    before: str
    after: str
    problem: str
    stages: int

    @property
    def found(self) -> bool:
        return self.stage is not None

    def diff(self) -> str:
        """A unified diff from ``before`` to ``after``."""
        import difflib
        return "".join(difflib.unified_diff(
            self.before.splitlines(keepends=True), self.after.splitlines(keepends=True),
            fromfile="before", tofile=f"after {self.stage}"))

    def __str__(self):
        if not self.found:
            return f"no pass changed the bits ({self.stages} stages run in the interpreter)"
        return f"first pass that changes the bits: {self.stage} ({self.problem})"


def _outcome(module, args):
    """(outputs, None) or (None, the DomainError in words) of interpreting ``module``."""
    from .api import interpret
    call_args = fresh_copy(args)
    try:
        returned = interpret(module, *call_args)
    except DomainError as e:
        return None, f"DomainError: {e}"
    return outputs_of(module.funcs[0], call_args, returned), None


def _changed(ref, got) -> str | None:
    (ref_out, ref_err), (out, err) = ref, got
    if ref_err or err:
        return None if ref_err == err else f"{err or 'no error'}, before: {ref_err or 'no error'}"
    problems = differences(out, ref_out)
    return "; ".join(problems) if problems else None


def bisect_passes(kernel, *args, target: str = "cpu", passes=None, dims=None, seed=0):
    """The first pass after which the interpreter computes other bits.

    The pipeline (``default_passes(target)``, or ``passes``: a list of
    ``ninfer_ir.passes.Pass``) runs on a copy of the kernel's Module; the IR after every
    pass is read back from its text and interpreted on its own copy of the arguments
    (``args``, or ``random_inputs(kernel, dims, seed)``). Every written buffer and
    returned value is compared with the kernel's own IR's, as ``assert_same_bits`` does
    (a result that lowering turned into an output buffer comes back as a returned value,
    so the stages compare alike); a ``DomainError`` is an outcome too. A pass whose
    output does not verify is the culprit, with its ``PassError``. Returns a
    ``Bisection``."""
    from . import parse
    from .api import module_of
    from .passes.manager import PassError, PassManager
    from .passes.pipeline import default_passes
    module = module_of(kernel)
    args = list(args) if args else random_inputs(kernel, dims, seed)
    stages = []
    pm = PassManager(passes if passes is not None else default_passes(target),
                     print_after="all", print_to=lambda stage, text: stages.append((stage, text)))
    work = module.clone()
    ref = _outcome(module, args)
    try:
        pm.run(work)
        failure = None
    except PassError as e:
        failure = e
    before = str(module)
    for stage, text in stages:
        problem = _changed(ref, _outcome(parse(text), args))
        if problem is not None:
            return Bisection(stage, stage.split("-", 1)[1], before, text, problem,
                             len(stages) + 1)
        before = text
    if failure is not None:
        k = len(stages) + 1
        return Bisection(f"{k:02d}-{failure.pass_name}", failure.pass_name, before, str(work),
                         f"PassError: {failure}", k + 1)
    return Bisection(None, None, before, before, "", len(stages) + 1)
