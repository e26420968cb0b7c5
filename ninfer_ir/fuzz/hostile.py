"""Hostile-input fuzzing: mutated IR text into ``I.parse``, random operands into ``I.formats``.

``fuzz_parse``: each case is a valid module's text (a generated program's IR) with one to
three random mutations (spans deleted, duplicated or moved, tokens replaced, hostile tokens
inserted). ``I.parse`` must return a module or raise ``ParseError``/``VerifyError``, within
``budget`` seconds per call.

``fuzz_formats``: each case calls ``decode``, ``validate``, ``encode(method=...)``, ``pack``
or ``unpack`` of a random registered format with random arrays (random dtypes, shapes
including empty and 0-d, random bytes), tuples of them, codes records built from them, or
other objects. It must succeed or raise ``FormatError``/``DomainError``, and never change
its inputs.
"""
from __future__ import annotations

import random
import re
import signal
import time
from contextlib import contextmanager

import numpy as np

TOKENS = ["{", "}", "(", ")", "[", "]", "<", ">", "%a", "%", ":", ",", "=", "\n", "^(",
          "tensor<f32[", "buffer<u8[N,", "]>", "?", "index", "f16", "bf16", "bool", "i64",
          "99999999999999999999999", "-1", "0", "1e999", "nan", "-inf", "\"", "\"x\"",
          "#q8_k", "#q4_k", "#bogus", "yield()", "return()", "for(", "if(", "func @g(",
          "constant() {value = 1} : index", "load(", "store(", "subview(", "axes = \"r\"",
          "\x00", "\u00e9", "\t", "//", "true", "->", "(tensor<f32[]>)", "@", "^"]

PARSE_OK = ("ParseError", "VerifyError")
FORMAT_OK = ("FormatError", "DomainError")


class _Hang(Exception):
    pass


@contextmanager
def _time_limit(seconds: float):
    """Raise _Hang after ``seconds`` (main thread with SIGALRM only; else no limit)."""
    try:
        old = signal.signal(signal.SIGALRM, _alarm)
    except (ValueError, AttributeError):
        yield
        return
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _alarm(signum, frame):
    raise _Hang()


def mutate(r: random.Random, text: str) -> str:
    spots = [m.end() for m in re.finditer(r"[{,] ?\w+ = ", text)]     # attribute values
    if spots and r.random() < 0.1:       # thousands of nested brackets, huge integers
        a = r.choice(spots)
        b = a + len(re.match(r"[^,}]*", text[a:]).group(0))       # the value replaced
        if r.random() < 0.5:
            return text[:a] + "9" * r.choice([4400, 10000]) + text[b:]
        depth = r.choice([2000, 5000])
        return text[:a] + "[" * depth + "1" + "]" * depth + text[b:]
    for _ in range(r.randint(1, 3)):
        n = len(text)
        a = r.randrange(n + 1)
        b = min(n, a + r.choice([1, 1, 2, 5, 20, 80]))
        k = r.random()
        if k < 0.25:
            text = text[:a] + text[b:]
        elif k < 0.4:
            c = r.randrange(n + 1)
            text = text[:c] + text[a:b] + text[c:]
        elif k < 0.55:
            text = text[:a] + r.choice(TOKENS) + text[b:]
        elif k < 0.8:
            text = text[:a] + r.choice(TOKENS) + text[a:]
        elif k < 0.9:
            text = text[:a]
        else:                                   # a line swapped with another
            lines = text.split("\n")
            i, j = r.randrange(len(lines)), r.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
            text = "\n".join(lines)
    return text


def seed_texts(seed: int, n: int = 20) -> list:
    """Printed IR of generated programs that compile (the mutation sources)."""
    import shutil
    import tempfile

    from ninfer_ir.printer import print_module

    from .diff import Refused, load_kernel
    from .gen import generate
    texts = []
    work = tempfile.mkdtemp(prefix="ninfer_fuzz_")
    try:
        k = 0
        while len(texts) < n and k < 4 * n:
            try:
                texts.append(print_module(load_kernel(generate(seed + k).source(), work).ir))
            except Refused:
                pass
            k += 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return texts


def fuzz_parse(seed: int = 0, count: int | None = 500, seconds: float | None = None,
               budget: float = 5.0, texts=None) -> dict:
    """{"cases", "parsed", "refused", "failures": [(kind, detail, text)]}."""
    import ninfer_ir as I
    r = random.Random(seed)
    texts = texts or seed_texts(seed)
    out = {"cases": 0, "parsed": 0, "refused": 0, "failures": []}
    start = time.monotonic()
    while (count is None or out["cases"] < count) and (seconds is None or
                                                       time.monotonic() - start < seconds):
        text = mutate(r, r.choice(texts))
        out["cases"] += 1
        t0 = time.monotonic()
        try:
            with _time_limit(budget):
                I.parse(text)
            out["parsed"] += 1
        except _Hang:
            out["failures"].append(("hang", f"no answer in {budget} s", text))
        except Exception as e:
            if type(e).__name__ in PARSE_OK:
                out["refused"] += 1
            else:
                out["failures"].append((type(e).__name__, str(e)[:300], text))
        if time.monotonic() - t0 > budget:
            out["failures"].append(("slow", f"{time.monotonic() - t0:.1f} s", text))
    return out


# -- formats -------------------------------------------------------------------------------

_DTYPES = [np.uint8, np.int8, np.uint16, np.int16, np.float16, np.uint32, np.int32,
           np.float32, np.float64, np.int64, np.bool_]


def _random_array(r: random.Random, rng: np.random.Generator, fmt=None):
    rank = r.choice([0, 1, 1, 2, 2, 3])
    dims = [r.choice([0, 1, 2, 3, 16, 17, 32, 64, 144, 256, 292]) for _ in range(rank)]
    if fmt is not None and rank and r.random() < 0.5:     # a plausible last axis
        for a in ("block_bytes", "block_values", "group"):
            v = getattr(fmt, a, None)
            if isinstance(v, int) and v > 0:
                dims[-1] = v * r.choice([1, 2])
                break
    dtype = r.choice(_DTYPES)
    size = int(np.prod(dims)) if dims else 1
    raw = rng.integers(0, 256, size=size * np.dtype(dtype).itemsize, dtype=np.uint8)
    a = raw.view(dtype).reshape(dims)
    if r.random() < 0.1:
        a = a[..., ::2] if rank else a
    return a


def _operand(r, rng, fmt):
    from ninfer_ir import formats
    k = r.random()
    if k < 0.45:
        return _random_array(r, rng, fmt)
    if k < 0.7:
        return tuple(_random_array(r, rng, fmt) for _ in range(r.choice([2, 2, 3])))
    if k < 0.9:
        cls = {"GroupedFormat": formats.GroupedCodes, "Nvfp4Format": formats.Nvfp4Codes,
               "Fp8RowFormat": formats.RowScaledCodes}.get(type(fmt).__name__)
        if cls is not None:
            parts = [_random_array(r, rng, fmt) for _ in range(3 if cls is formats.Nvfp4Codes
                                                               else 2)]
            try:
                return cls(fmt, *parts)
            except Exception as e:
                return e
        return _random_array(r, rng, fmt)
    return r.choice([None, 3, "x", [1, 2], 1.5, np.float32(2.0)])


def _call_format(r, rng, fmt):
    """(description, callable, inputs to watch)."""
    op = r.choice(["decode", "decode", "validate", "encode", "encode", "pack", "unpack"])
    x = _operand(r, rng, fmt)
    if isinstance(x, Exception):
        return "construct", x, []
    watch = list(x) if isinstance(x, tuple) else [x]
    if op == "decode":
        import inspect
        if "check" not in inspect.signature(fmt.decode).parameters:
            return "decode", lambda: fmt.decode(x), watch
        check = r.choice([True, False])
        return f"decode(check={check})", lambda: fmt.decode(x, check=check), watch
    if op == "validate":
        return "validate", lambda: fmt.validate(x), watch
    if op == "encode":
        method = r.choice(list(fmt.methods) + ["bogus"])
        return f"encode({method})", lambda: fmt.encode(x, method=method), watch
    if not hasattr(fmt, "pack"):
        return "decode", lambda: fmt.decode(x), watch
    if op == "pack":
        return "pack", lambda: fmt.pack(x), watch
    s = _random_array(r, rng, fmt)
    k = r.choice([0, 1, 63, 64, 65, 128, -1, 10 ** 6])
    return f"unpack(k={k})", lambda: fmt.unpack(x, s, k), watch + [s]


def fuzz_formats(seed: int = 0, count: int | None = 500, seconds: float | None = None) -> dict:
    """{"cases", "accepted", "refused", "failures": [(format, call, kind, detail)]}."""
    from ninfer_ir import formats
    r = random.Random(seed)
    rng = np.random.default_rng(seed)
    names = formats.names()
    out = {"cases": 0, "accepted": 0, "refused": 0, "failures": []}
    start = time.monotonic()
    while (count is None or out["cases"] < count) and (seconds is None or
                                                       time.monotonic() - start < seconds):
        fmt = formats.get(r.choice(names))
        what, call, watch = _call_format(r, rng, fmt)
        before = [a.copy() for a in watch if isinstance(a, np.ndarray)]
        out["cases"] += 1
        if isinstance(call, Exception):
            kind, e = type(call).__name__, call
            if kind in FORMAT_OK:
                out["refused"] += 1
            else:
                out["failures"].append((fmt.name, what, kind, str(e)[:300]))
            continue
        try:
            call()
            out["accepted"] += 1
        except Exception as e:
            if type(e).__name__ in FORMAT_OK:
                out["refused"] += 1
            else:
                out["failures"].append((fmt.name, what, type(e).__name__, str(e)[:300]))
        after = [a for a in watch if isinstance(a, np.ndarray)]
        if any(b.tobytes() != a.tobytes() for b, a in zip(before, after)):
            out["failures"].append((fmt.name, what, "changed input", ""))
    return out
