"""Random arguments for ``ninfer run``/``bench``/``bisect``: ``ninfer_ir.testing``'s
generator (the rules are in ``testing.inputs_with_notes``), with ``--dim`` errors
reported as usage errors."""
from __future__ import annotations

from ninfer_ir.errors import VerifyError
from ninfer_ir.testing import fresh_copy, inputs_with_notes  # noqa: F401 - used by commands

from .common import usage


def param_name(p, k: int) -> str:
    return p.name_hint or f"arg{k}"


def make_inputs(func, rng, given: dict):
    """(arguments in parameter order, {symbol: size}, one description per parameter)."""
    try:
        return inputs_with_notes(func, given, rng)
    except VerifyError as e:
        raise usage(f"--{e}") from None        # the message starts with "dim"
