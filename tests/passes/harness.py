"""Shared helpers of the pass tests: inputs made from a function's parameter types, every
stage of the pipeline as a parsed module, and a bit-exact run through the interpreter."""
from __future__ import annotations

import numpy as np

from ninfer_ir.backends.interp.interpreter import interpret
from ninfer_ir.frontend.textual import parse
from ninfer_ir.errors import DomainError
from ninfer_ir.types import ScalarType
from ninfer_ir.passes.pipeline import lower

SIZES = {"N": 3, "G": 1, "K": 5, "M": 2, "H": 4, "R": 2, "C": 3}


def stages(module, target="cpu"):
    """``[(stage, module)]``: the input and the IR after every pass of the pipeline, each
    read back from the printed text that ``print_after="all"`` produced."""
    out = [("00-input", module)]

    def keep(stage, text):
        again = parse(text)
        assert str(again) == text, f"{stage} does not survive print/parse"
        out.append((stage, again))

    lower(module, target=target, print_after="all", print_to=keep)
    return out


def _float_values(rng, dtype, shape, specials):
    x = (rng.standard_normal(shape) * 4).astype(dtype)
    if specials and x.size:
        flat = x.reshape(-1)
        with np.errstate(over="ignore"):
            picks = np.array([-0.0, 0.0, np.inf, -np.inf, np.nan, 1e-40, -3e38, 65504.0],
                             dtype=np.float64).astype(dtype)
        k = rng.integers(0, flat.size, size=min(3, flat.size))
        flat[k] = picks[rng.integers(0, len(picks), size=len(k))]
    return x


def make_args(func, rng, sizes=None, specials=False, index_hi=6):
    """Arguments for every parameter of ``func``: arrays of the parameter shapes (symbols
    from ``sizes``), random bits for integers, normal values (and, with ``specials``,
    signed zeros, infinities, NaN, subnormals) for floats."""
    sizes = dict(SIZES, **(sizes or {}))
    n_out = func.attrs.get("returns", 0)
    params = func.args[:len(func.args) - n_out]
    args = []
    for p in params:
        t = p.type
        if isinstance(t, ScalarType):
            if t.is_float:
                args.append(_float_values(rng, t.np_dtype, (), specials)[()])
            elif t.kind == "index":
                args.append(np.int64(rng.integers(0, index_hi)))
            elif t.kind == "bool":
                args.append(np.bool_(rng.integers(0, 2)))
            else:
                info = np.iinfo(t.np_dtype)
                args.append(t.np_dtype.type(rng.integers(info.min, info.max, endpoint=True)))
            continue
        shape = tuple(d if isinstance(d, int) else sizes.get(d, 4) for d in t.shape)
        dt = t.dtype.np_dtype
        if t.dtype.is_float:
            args.append(_float_values(rng, dt, shape, specials))
        elif dt == np.bool_:
            args.append(rng.integers(0, 2, size=shape).astype(np.bool_))
        else:
            info = np.iinfo(dt)
            args.append(rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dt))
    return args


def _bytes(x):
    a = np.asarray(x)
    return (str(a.dtype), a.shape, a.tobytes())


def run(module, args, counters=None):
    """``("ok", results and buffer arguments as bytes)`` or ``("DomainError", None)``."""
    copies = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
    try:
        res = interpret(module, *copies, counters=counters)
    except DomainError:
        return ("DomainError", None)
    if res is None:
        res = ()
    elif not isinstance(res, tuple):
        res = (res,)
    return ("ok", [_bytes(r) for r in res] + [_bytes(a) for a in copies
                                              if isinstance(a, np.ndarray)])


def assert_same_at_every_stage(module, args):
    want = run(module, args)
    for stage, m in stages(module)[1:]:
        got = run(m, args)
        assert got == want, f"{stage} changed the result:\n{m}"
    return want
