"""Ordered folds: one implementation of every ``SumOrder`` parenthesization,
parameterised by the combining step.

``fold_rows(x, order, combine)`` folds each row of a 2-D array in ``order`` (see
``ninfer_ir.sumorder`` for the forms): ``seq`` left to right, ``tree`` the
adjacent-pair tree (an odd last element passes up unchanged), ``chunk<K>`` each run
of ``K`` first, then the chunk results in the top-level order. There is no initial
accumulator: one element folds to itself; an empty row gives ``identity``.

``combine(a, b)`` is the exact scalar rule of the folding op (``semantics.binary``).
``accumulate``, when given, is a strictly left-to-right running fold equal to
repeated ``combine`` (``np.add.accumulate`` in f32 for an f32 sum), used as a faster
``seq``; it changes no bit.

On top: ``reduce_values`` / ``dot_values`` (what ``reduce`` and ``dot`` compute, for
the interpreter and the eager API) and ``fold_identity`` (the value of an empty fold,
which the emitters use too). Integer folds and ``min``/``max`` are associative, so
their order is immaterial.
"""
from __future__ import annotations

import numpy as np

from . import semantics

__all__ = ["fold_rows", "fold_identity", "reduce_values", "dot_values", "f32_sum_rows"]


def _seq(x: np.ndarray, combine, accumulate) -> np.ndarray:
    """Left-to-right fold over the last axis (length >= 1)."""
    if x.shape[-1] == 1:
        return x[..., 0].copy()
    if accumulate is not None:
        return accumulate(x, axis=-1)[..., -1].copy()
    acc = x[..., 0]
    for j in range(1, x.shape[-1]):
        acc = combine(acc, x[..., j])
    return np.asarray(acc)


def _tree(x: np.ndarray, combine) -> np.ndarray:
    """Adjacent-pair tree over the last axis of a 2-D array (length >= 1)."""
    cur = x
    while cur.shape[1] > 1:
        width = cur.shape[1]
        pairs = combine(cur[:, 0:width - 1:2], cur[:, 1:width:2])
        if width % 2:
            pairs = np.concatenate([pairs, cur[:, width - 1:]], axis=1)
        cur = pairs
    return cur[:, 0].copy()


def _chunks(x: np.ndarray, k: int, combine, accumulate) -> np.ndarray:
    """The fold of each contiguous run of ``k`` elements (the last may be shorter)."""
    n, length = x.shape
    full = length // k
    parts = []
    if full:
        parts.append(_seq(x[:, :full * k].reshape(n, full, k), combine, accumulate))
    if length % k:
        parts.append(_seq(x[:, full * k:], combine, accumulate)[:, np.newaxis])
    return np.concatenate(parts, axis=1) if len(parts) > 1 else parts[0]


def fold_rows(x: np.ndarray, order, combine, identity=0, accumulate=None) -> np.ndarray:
    """Fold each row of a 2-D ``[n, L]`` array in the parenthesization ``order`` (a
    ``SumOrder``); returns ``[n]`` of ``x``'s dtype."""
    n, length = x.shape
    if length == 0:
        return np.full(n, identity, dtype=x.dtype)
    with np.errstate(all="ignore"):
        if order.chunk is not None:
            x = _chunks(x, order.chunk, combine, accumulate)
        return _tree(x, combine) if order.tree else _seq(x, combine, accumulate)


def _f32_add(a, b):
    return np.add(a, b, dtype=np.float32)


def _f32_accumulate(x, axis):
    return np.add.accumulate(x, axis=axis, dtype=np.float32)


def f32_sum_rows(x: np.ndarray, order) -> np.ndarray:
    """The f32 sum of each row of an f32 ``[n, L]`` array in ``order`` (``+0.0`` if empty)."""
    return fold_rows(x, order, _f32_add, 0.0, _f32_accumulate)


def fold_identity(kind: str, t):
    """The value of an empty ``kind`` fold of dtype ``t`` (a Python number): ``+0`` for
    add, ``1`` for mul, ``+inf``/``-inf`` (floats) or the type's largest/smallest value
    (integers) for min/max."""
    if kind == "add":
        return 0
    if kind == "mul":
        return 1
    if t.is_float:
        return np.inf if kind == "min" else -np.inf
    lo, hi = semantics.int_range(t)
    return hi if kind == "min" else lo


def _rows(kind: str, x2d: np.ndarray, t, order) -> np.ndarray:
    """Reduce each row of a 2-D array of dtype ``t``; returns a 1-D array of ``t``."""
    if kind == "add" and x2d.dtype == np.float32:
        return f32_sum_rows(x2d, order)

    def combine(a, b):
        return semantics.binary(kind, a, b, t)

    if not (t.is_float and kind in ("add", "mul")):
        order = _ANY_ORDER          # associative: any order gives the same value
    return fold_rows(x2d, order, combine, fold_identity(kind, t))


def reduce_values(x: np.ndarray, kind: str, t, order) -> np.ndarray:
    """Reduce the last axis of ``x`` (dtype ``t``) with ``kind`` in ``order``."""
    lead = x.shape[:-1]
    x2d = x.reshape(int(np.prod(lead, dtype=np.int64)), x.shape[-1])
    out = _rows(kind, x2d, t, order)
    return np.array(out, dtype=t.np_dtype).reshape(lead)      # a new array, never a view


def dot_values(a: np.ndarray, b: np.ndarray, t, order) -> np.ndarray:
    """Sum of the rounded products ``a[i]*b[i]`` in ``order``; a rank-0 array of ``t``."""
    products = semantics.binary("mul", a, b, t)
    out = _rows("add", products.reshape(1, -1), t, order)
    return np.asarray(out[0], dtype=t.np_dtype).reshape(())


class _Tree:
    chunk = None
    tree = True


_ANY_ORDER = _Tree()
