"""Random arguments for a generated program, with special values.

The base arrays come from ``ninfer_ir.testing.random_inputs`` (Q4_K records, normal
floats, integers, bools); on top of it, some float arrays get NaN, signed
zeros, infinities, subnormals and extremes, some integer arrays their extremes, buffers get
random contents (so an element a kernel must not write is checked too), Q8_K sources
sometimes a non-finite value or a huge or tiny row, and grouped decode operands are packed
from random codes and scales.
"""
from __future__ import annotations

import numpy as np

F32_SPECIALS = [np.nan, -np.nan, 0.0, -0.0, np.inf, -np.inf, 1e-45, -1e-45, 1.17549435e-38,
                3.4028235e38, -3.4028235e38, 1.0, -1.0, 65504.0, 6e-8]
BF16_SPECIALS = [0x7FC0, 0xFFC0, 0x0000, 0x8000, 0x7F80, 0xFF80, 0x0001, 0x807F, 0x7F7F,
                 0x3F80, 0x7FA0]


def _specials(rng, a: np.ndarray, dtype: str) -> np.ndarray:
    """Put special values in a random part of ``a`` (in place; returns it)."""
    if a.size == 0:
        return a
    flat = a.reshape(-1)
    where = rng.random(flat.size) < rng.choice([0.1, 0.3, 0.7])
    if dtype == "bf16":
        pool = np.array(BF16_SPECIALS, np.uint16)
    elif dtype in ("f16", "f32", "f64"):
        with np.errstate(over="ignore"):
            pool = np.array(F32_SPECIALS, np.float64).astype(a.dtype)
        if dtype == "f64":
            pool = np.concatenate([pool, np.array([5e-324, 1.7976931348623157e308, -2.2e-308])])
    elif dtype == "bool":
        return a
    else:
        info = np.iinfo(a.dtype)
        pool = np.array([info.min, info.max, 0, 1, info.max - 1, info.min + 1]
                        + ([-1] if info.min < 0 else []), dtype=a.dtype)
    flat[where] = rng.choice(pool, size=int(where.sum()))
    return a


def _grouped(rng, fmt_name: str, rows: int, k: int):
    from ninfer_ir import formats
    fmt = formats.get(fmt_name)
    lo, hi = fmt.code_interval
    codes = rng.integers(lo, hi + 1, size=(rows, k)).astype(np.int8)
    scales = (rng.standard_normal(fmt.scale_shape((rows, k))) * 0.05).astype(np.float16)
    if rng.random() < 0.3:
        s = scales.reshape(-1)
        pick = rng.random(s.size) < 0.3
        s[pick] = rng.choice(np.array([0.0, -0.0, 6e-8, -6e-8, 65504.0, 1.0], np.float16),
                             size=int(pick.sum()))
    try:
        return fmt.pack(formats.GroupedCodes(fmt, codes, scales))
    except Exception:           # a format's scale rules refused the specials: plain scales
        scales = (np.abs(rng.standard_normal(scales.shape)) * 0.05 + 0.01).astype(np.float16)
        return fmt.pack(formats.GroupedCodes(fmt, codes, scales))


def program_sizes(program) -> dict:
    """The program's symbol sizes, with the packed-row and scale counts of each format."""
    from ninfer_ir import formats
    sizes = dict(program.sizes)
    for name, fmt_name in program.formats.items():
        fmt = formats.get(fmt_name)
        sizes["P" + name] = fmt.packed_row_bytes(sizes["K"])
        sizes["S" + name] = fmt.scale_shape((sizes["K"],))[0]
    return sizes


def make_arguments(program, kernel, seed: int) -> dict:
    """{parameter name: argument} for every parameter of ``kernel`` (the full program)."""
    from ninfer_ir.testing import random_inputs
    rng = np.random.default_rng(seed)
    params = program.param_list()
    sizes = program_sizes(program)
    used = {d for p in params for d in (p.shape or ())}
    args = random_inputs(kernel, {k: v for k, v in sizes.items() if k in used}, rng)
    out = {}
    packed = {}
    for p, a in zip(params, args):
        if p.fill.startswith(("packed:", "scales:")):
            fmt_name = p.fill.split(":", 1)[1]
            if fmt_name not in packed:
                packed[fmt_name] = _grouped(rng, fmt_name, sizes["R"], sizes["K"])
            a = packed[fmt_name][0 if p.fill.startswith("packed") else 1].copy()
        elif p.fill == "q8src":
            a = _q8_source(rng, a)
        elif p.fill == "random" and p.buffer:
            a = _array_like(rng, p, a)
            if rng.random() < 0.5:
                _specials(rng, a, p.dtype)
        elif p.fill == "random" and isinstance(a, np.ndarray) and rng.random() < 0.6:
            a = _specials(rng, np.array(a), p.dtype)
        elif p.fill == "random" and rng.random() < 0.4:          # a scalar
            a = _specials(rng, np.array([a]), p.dtype)[0]
        out[p.name] = a
    _alias(np.random.default_rng([seed, 1]), params, out)
    return out


ALIAS_RATE = 0.25       # programs whose arguments pass one buffer as a tensor as well


def _alias(rng, params, out) -> None:
    """Sometimes pass a buffer argument as a tensor argument of the same dtype and shape
    too (the same array, or its reverse when 1-D): a tensor that shares memory with a
    buffer is the call's snapshot of it on every backend (docs/backends.md), so the
    results must still be the interpreter's."""
    if rng.random() >= ALIAS_RATE:
        return
    pairs = [(t, b) for t in params for b in params
             if t.shape is not None and b.shape is not None and not t.buffer and b.buffer
             and t.dtype == b.dtype and t.fill == b.fill == "random"
             and isinstance(out[t.name], np.ndarray)
             and np.shape(out[t.name]) == np.shape(out[b.name])]
    if not pairs:
        return
    t, b = pairs[rng.integers(len(pairs))]
    a = out[b.name]
    out[t.name] = a[::-1] if a.ndim == 1 and rng.random() < 0.5 else a


def _array_like(rng, p, zeros: np.ndarray) -> np.ndarray:
    from ninfer_ir.testing import _array
    from ninfer_ir import types
    a, _ = _array(rng, zeros.shape, getattr(types, "bool_" if p.dtype == "bool" else p.dtype))
    return np.ascontiguousarray(a)


def _q8_source(rng, a: np.ndarray) -> np.ndarray:
    a = np.array(a, dtype=np.float32)
    k = rng.random()
    if a.size and k < 0.08:
        a.reshape(-1)[rng.integers(a.size)] = rng.choice([np.nan, np.inf, -np.inf])
    elif a.size and k < 0.3:
        g = rng.integers(a.shape[0])
        with np.errstate(over="ignore"):
            a[g] *= np.float32(rng.choice([1e30, 1e-40, 0.0, -1.0, 3e38]))
    return a
