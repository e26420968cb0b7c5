"""The typed errors of ninfer_ir, all in one place.

Every failure a user can provoke surfaces as one of these, never as a bare
``AssertionError``/``KeyError`` or a crash.
"""
from __future__ import annotations


class NinferError(Exception):
    """Base class of every error ninfer_ir raises on purpose."""


class DSLError(NinferError):
    """A kernel's Python source uses something the DSL does not accept.

    Printed as ``file:line:col: message``, then the source line and a caret.
    """

    def __init__(self, message: str, filename: str = "<unknown>", line: int = 0,
                 col: int = 0, source_line: str | None = None):
        self.message = message
        self.filename = filename
        self.line = line
        self.col = col
        self.source_line = source_line
        super().__init__(self._render())

    def _render(self) -> str:
        head = f"{self.filename}:{self.line}:{self.col}: {self.message}"
        if self.source_line is None:
            return head
        text = self.source_line.rstrip("\n")
        caret = " " * max(self.col - 1, 0) + "^"
        return f"{head}\n    {text}\n    {caret}"


class ParseError(NinferError):
    """The textual IR does not parse; carries ``line``/``col`` (1-based)."""

    def __init__(self, message: str, line: int = 0, col: int = 0, text: str = ""):
        self.message = message
        self.line = line
        self.col = col
        self.text = text
        where = f"{line}:{col}: " if line else ""
        near = f" (near {text!r})" if text else ""
        super().__init__(f"{where}{message}{near}")


class VerifyError(NinferError):
    """The IR breaks a rule of an op; names the op and prints it."""

    def __init__(self, message: str, op=None):
        self.message = message
        self.op = op
        if op is not None:
            try:
                from .printer import print_op
                shown = print_op(op)
            except Exception:  # printing must never hide the real error
                shown = f"<{getattr(op, 'name', '?')}>"
            super().__init__(f"'{op.name}': {message}\n  in: {shown}")
        else:
            super().__init__(message)


class DomainError(NinferError, ValueError):
    """Bad numeric input at run time (e.g. NaN into quantize); names the record."""

    def __init__(self, message: str, record: int | None = None):
        self.message = message
        self.record = record
        super().__init__(message)


class TargetUnavailable(NinferError):
    """The requested target cannot run here (e.g. ``cuda`` without a GPU)."""


class FormatError(NinferError, ValueError):
    """A request the formats registry cannot honour: an unknown format or method name,
    a wrong dtype or shape, or an implicit conversion between types. Bad numeric
    *content* (a NaN source value, an illegal code, an invalid scale) is a DomainError."""


class CompileError(NinferError):
    """Generated source does not compile (e.g. CUDA C under NVRTC); carries the log."""

    def __init__(self, message: str, log: str = ""):
        self.log = log
        super().__init__(f"{message}\n{log}" if log else message)


class OptionError(NinferError, ValueError):
    """An option of a call or an environment variable has a value it cannot take
    (``threads=0``, ``cache_dir=''``, a malformed ``NINFER_CACHE_MAX_BYTES``)."""
