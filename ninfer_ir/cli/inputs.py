"""Random arguments for ``ninfer run``/``bench``/``bisect``: ``ninfer_ir.testing``'s
generator (the rules are in ``testing.inputs_with_notes``), with ``--dim`` errors
reported as usage errors, and sizes that cannot fit in memory refused before anything
is allocated."""
from __future__ import annotations

import os

from ninfer_ir.errors import VerifyError
from ninfer_ir.testing import DEFAULT_DIM, fresh_copy, inputs_with_notes, symbol_sizes  # noqa: F401
from ninfer_ir.types import ShapedType

from .common import usage

#: ``ninfer run`` holds about this many copies of the inputs at once
_COPIES = 4


def param_name(p, k: int) -> str:
    return p.name_hint or f"arg{k}"


def _memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


def _check_size(func, sizes: dict) -> None:
    """A usage error when the arrays for ``sizes`` cannot fit in this machine's memory."""
    total = 0
    for p in func.args:
        t = p.type
        if isinstance(t, ShapedType):
            n = 1
            for d in t.shape:
                n *= sizes[d] if isinstance(d, str) else DEFAULT_DIM if d is None else d
            total += n * t.dtype.np_dtype.itemsize
    memory = _memory_bytes()
    if memory is not None and total * _COPIES > memory:
        given = " ".join(f"{k}={v}" for k, v in sizes.items())
        raise usage(f"--dim {given}: the arguments take {total / 2**30:.3g} GiB, and a run "
                    f"holds {_COPIES} copies; this machine has {memory / 2**30:.3g} GiB")


def make_inputs(func, rng, given: dict):
    """(arguments in parameter order, {symbol: size}, one description per parameter)."""
    try:
        _check_size(func, symbol_sizes(func, given))
        return inputs_with_notes(func, given, rng)
    except VerifyError as e:
        raise usage(f"--{e}") from None        # the message starts with "dim"
