"""The math library: one algorithm per function (``functions``), written once against
``core.Val`` and run either on numpy arrays (the interpreter, the eager ``I.exp`` …)
or emitted as ordinary IR ops (the ``expand`` pass). See ``docs/math.md``.
"""
from __future__ import annotations

import numpy as np

from ninfer_ir.types import f16, f32

from .core import IRContext, NumpyContext, bits_const, select
from .functions import FUNCTIONS, HANDLES_NAN, QNAN

__all__ = ["FUNCTIONS", "apply", "evaluate", "expand"]


def apply(fn: str, x):
    """``fn`` of the ``Val`` ``x`` (f32 or f16): NaN gives the quiet NaN 0x7FC00000 (f32)
    / 0x7E00 (f16); an f16 argument is computed in f32 and rounded once to f16."""
    t = x.t
    x32 = x.cast(f32)
    r = FUNCTIONS[fn](x32)
    if fn not in HANDLES_NAN:
        r = select(x32.ne(x32), bits_const(x.c, QNAN, f32), r)
    return r.cast(t) if t is f16 else r


def evaluate(fn: str, values, dtype) -> np.ndarray:
    """``fn`` on a numpy array of ``dtype`` (I.f32 or I.f16), as the interpreter runs it."""
    c = NumpyContext()
    return apply(fn, c.wrap(values, dtype)).v


def expand(builder, fn: str, x, dtype):
    """Emit ``fn(x)`` with ``builder`` as ordinary ops; returns the result value."""
    c = IRContext(builder)
    return apply(fn, c.wrap(x, dtype)).v
