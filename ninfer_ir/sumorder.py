"""The order of an f32 add-reduction: an order-preserving parenthesization.

The spec (quantized-ops §3) lets a backend add the per-record values ``v_b`` of
a quantized dot in any parenthesization that keeps the logical order, and
requires it to say which one it used so that the interpreter can evaluate the
same one. ``SumOrder`` is that statement: a frozen, hashable record whose
``str()`` is its textual IR syntax and whose ``parse()`` reads it back.

The forms, over a sequence ``x[0..L)`` of f32 values:

``seq``
    strict left to right, ``((x0 + x1) + x2) + ...``.
``tree``
    adjacent-pair tree: at the level with offset ``off`` (1, 2, 4, ...) each
    element ``i`` with ``i % (2*off) == 0`` becomes ``x[i] + x[i+off]`` when
    ``i + off < L`` and stays as it is otherwise. This is what padding with
    ``-0.0`` to a power of two and reducing with ``__shfl_down_sync`` offsets
    1, 2, 4, ... computes (``y + -0.0 == y``).
``chunk<K>``
    contiguous chunks of ``K`` elements (the last one may be shorter), each
    summed ``seq``; the chunk sums are then summed ``seq``.
``chunk<K>/tree``
    chunks summed ``seq``; the chunk sums are summed by ``tree``.

In every form a sequence of length 1 sums to exactly ``x0`` (there is no
initial accumulator, so ``-0.0`` stays ``-0.0``) and an empty one to ``+0.0``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .numerics.folds import f32_sum_rows

__all__ = ["SumOrder", "SEQ", "TREE"]

_CHUNK_RE = re.compile(r"chunk<([1-9][0-9]*)>(/tree)?")
_FORMS = "'seq', 'tree', 'chunk<K>' or 'chunk<K>/tree' (K a positive integer)"


@dataclass(frozen=True)
class SumOrder:
    """An order-preserving parenthesization of an f32 sum.

    ``chunk`` is the chunk length ``K`` (``None``: no chunking); ``tree`` says
    whether the top level (the elements, or the chunk sums) is reduced by the
    adjacent-pair tree instead of left to right.
    """

    chunk: int | None = None
    tree: bool = False

    def __post_init__(self):
        if self.chunk is not None:
            if isinstance(self.chunk, bool) or not isinstance(self.chunk, (int, np.integer)):
                raise ValueError(f"SumOrder chunk must be a positive int or None, "
                                 f"got {self.chunk!r}")
            if self.chunk < 1:
                raise ValueError(f"SumOrder chunk must be >= 1, got {self.chunk}")
            object.__setattr__(self, "chunk", int(self.chunk))
        if not isinstance(self.tree, (bool, np.bool_)):
            raise ValueError(f"SumOrder tree must be a bool, got {self.tree!r}")
        object.__setattr__(self, "tree", bool(self.tree))

    @property
    def is_seq(self) -> bool:
        """Strict left to right (the default order)."""
        return self.chunk is None and not self.tree

    # --- text ------------------------------------------------------------

    def __str__(self) -> str:
        top = "tree" if self.tree else "seq"
        if self.chunk is None:
            return top
        return f"chunk<{self.chunk}>/tree" if self.tree else f"chunk<{self.chunk}>"

    @classmethod
    def parse(cls, text: str) -> "SumOrder":
        """Read the textual syntax back; ``SumOrder.parse(str(o)) == o``."""
        if not isinstance(text, str):
            raise ValueError(f"sum order must be given as text, got {type(text).__name__}")
        if text == "seq":
            return cls()
        if text == "tree":
            return cls(tree=True)
        match = _CHUNK_RE.fullmatch(text)
        if match is None:
            raise ValueError(f"bad sum order {text!r}: expected {_FORMS}")
        return cls(chunk=int(match.group(1)), tree=match.group(2) is not None)

    @classmethod
    def coerce(cls, order: "SumOrder | str") -> "SumOrder":
        """Accept a ``SumOrder`` or its text."""
        if isinstance(order, SumOrder):
            return order
        if isinstance(order, str):
            return _parse_text(order)
        return cls.parse(order)

    # --- evaluation (the fold itself is ``numerics.folds``) -----------------

    def evaluate(self, v: np.ndarray) -> np.float32:
        """Sum a 1-D f32 array in this order; returns an ``np.float32``."""
        if not isinstance(v, np.ndarray) or v.dtype != np.float32 or v.ndim != 1:
            raise ValueError(f"SumOrder.evaluate takes a 1-D float32 array, got {_describe(v)}")
        return self.evaluate_rows(v[np.newaxis, :])[0]

    def evaluate_rows(self, v2d: np.ndarray) -> np.ndarray:
        """Sum each row of an f32 ``[N, L]`` array in this order; returns f32 ``[N]``."""
        if not isinstance(v2d, np.ndarray) or v2d.dtype != np.float32 or v2d.ndim != 2:
            raise ValueError(f"SumOrder.evaluate_rows takes a 2-D float32 array, "
                             f"got {_describe(v2d)}")
        return f32_sum_rows(v2d, self)


def _describe(obj) -> str:
    if isinstance(obj, np.ndarray):
        return f"{obj.dtype}{list(obj.shape)}"
    return type(obj).__name__


@lru_cache(maxsize=64)
def _parse_text(text: str) -> SumOrder:
    return SumOrder.parse(text)


SEQ = SumOrder()
TREE = SumOrder(tree=True)
