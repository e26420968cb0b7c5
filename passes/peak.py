"""Peak invocation-local bytes: the most bytes of ``alloc``ed buffers live at once.

Sizes are polynomials in the dimension symbols (``292*G + 1024``); a dimension that is
unknown until run time (``?``) becomes a symbol named after the value that gives it.
When two program points cannot be ordered for every size (``4*N`` against ``1024``),
the peak is their ``max(...)``. ``PeakBytes.evaluate(G=4, N=8)`` gives a number.
"""
from __future__ import annotations

from ninfer_ir import ops as O
from ninfer_ir.ir import FuncOp
from ninfer_ir.types import BufferType


class Poly:
    """A polynomial with non-negative integer coefficients over size symbols."""
    __slots__ = ("terms",)

    def __init__(self, terms=None):
        self.terms = {k: v for k, v in (terms or {}).items() if v}

    @staticmethod
    def of_type(t: BufferType, unknown_names) -> "Poly":
        coeff, syms, names = t.dtype.np_dtype.itemsize, [], iter(unknown_names)
        for d in t.shape:
            if isinstance(d, int):
                coeff *= d
            elif isinstance(d, str):
                syms.append(d)
            else:
                syms.append(next(names))
        return Poly({tuple(sorted(syms)): coeff})

    def __add__(self, other):
        out = dict(self.terms)
        for k, v in other.terms.items():
            out[k] = out.get(k, 0) + v
        return Poly(out)

    def __sub__(self, other):
        out = dict(self.terms)
        for k, v in other.terms.items():
            out[k] = out.get(k, 0) - v
        return Poly(out)

    def dominates(self, other) -> bool:
        """``self >= other`` for every non-negative value of the symbols."""
        return all(v >= 0 for v in (self - other).terms.values())

    def evaluate(self, sizes) -> int:
        total = 0
        for mono, c in self.terms.items():
            for s in mono:
                if s not in sizes:
                    raise KeyError(f"no size given for {s}")
                c *= int(sizes[s])
            total += c
        return total

    def __str__(self):
        if not self.terms:
            return "0"
        parts = []
        for mono in sorted(self.terms, key=lambda m: (len(m), m)):
            c = self.terms[mono]
            if not mono:
                parts.append(str(c))
            else:
                parts.append("*".join(([str(c)] if c != 1 else []) + list(mono)))
        return " + ".join(parts)


class PeakBytes:
    """The peak of a function: the candidates no other one dominates."""

    def __init__(self, candidates):
        self.candidates = list(candidates) or [Poly()]

    def evaluate(self, **sizes) -> int:
        return max(p.evaluate(sizes) for p in self.candidates)

    @property
    def static(self) -> int | None:
        """The number of bytes when it does not depend on any size, else None."""
        if len(self.candidates) == 1 and set(self.candidates[0].terms) <= {()}:
            return self.candidates[0].terms.get((), 0)
        return None

    def __str__(self):
        if len(self.candidates) == 1:
            return str(self.candidates[0])
        return "max(" + ", ".join(str(p) for p in self.candidates) + ")"

    def __repr__(self):
        return f"<PeakBytes {self}>"


def _add_candidate(cands, p):
    if any(c.dominates(p) for c in cands):
        return cands
    return [c for c in cands if not p.dominates(c)] + [p]


def peak_bytes(func: FuncOp) -> PeakBytes:
    """Walk ``func`` in program order adding each ``alloc`` and removing each ``dealloc``."""
    sizes, live = {}, Poly()
    cands = [Poly()]
    unknown = [0]

    def name_for(v):
        unknown[0] += 1
        return f"{v.name_hint or 'dyn'}?{unknown[0]}"

    for op in func.walk():
        if isinstance(op, O.AllocOp):
            size = Poly.of_type(op.result.type, _unknown_names(op, name_for))
            sizes[op.result] = size
            live = live + size
            cands = _add_candidate(cands, live)
        elif isinstance(op, O.DeallocOp):
            size = sizes.get(op.buffer)
            if size is not None:
                live = live - size
    return PeakBytes(cands)


def _unknown_names(op, name_for):
    """Names for the ``?`` dims of an alloc's type, taken from their size operands."""
    t = op.result.type
    out, k = [], 0
    for d in t.shape:
        if isinstance(d, int):
            continue
        if d is None:
            out.append(name_for(op.operands[k]))
        k += 1
    return out
