"""``I.config``: where calling an ``@I.kernel`` directly runs.

    import ninfer_ir as I
    I.config.target = "interp"     # every kernel call runs on the interpreter
    I.config.threads = 4           # parallel loops on cpu use 4 threads
    I.config.specialize = False    # one compilation per target for every shape

``target`` is ``"cpu"`` unless set here or by the environment variable
``NINFER_TARGET`` (``interp``, ``cpu`` or ``cuda``; read at each call, so
``NINFER_TARGET=interp python -m pytest`` sends a whole test run to the
interpreter); a value set here wins over the environment. ``threads`` is ``None``
(all CPUs) unless set here or by ``NINFER_THREADS``. ``specialize`` (default on)
compiles a kernel once per argument signature with the call's symbol sizes made
static; off, the symbol dims stay symbolic and one compilation serves every shape.
``I.compile`` ignores this object: it takes its target and threads as arguments.
"""
from __future__ import annotations

import os

from .errors import NinferError
from .targets import TARGETS


class Config:
    """Defaults for direct kernel calls (see the module docstring)."""

    def __init__(self):
        self._target = None
        self._threads = None
        self.specialize = True

    @property
    def target(self) -> str:
        if self._target is not None:
            return self._target
        value = os.environ.get("NINFER_TARGET", "").strip() or "cpu"
        if value not in TARGETS:
            raise NinferError(f"NINFER_TARGET={value!r}: use one of {', '.join(TARGETS)}")
        return value

    @target.setter
    def target(self, value) -> None:
        if value is not None and value not in TARGETS:
            raise NinferError(f"I.config.target: unknown target {value!r}; use one of "
                              f"{', '.join(TARGETS)} (or None for NINFER_TARGET / cpu)")
        self._target = value

    @property
    def threads(self):
        if self._threads is not None:
            return self._threads
        value = os.environ.get("NINFER_THREADS", "").strip()
        if not value:
            return None
        if not value.isdigit() or int(value) < 1:
            raise NinferError(f"NINFER_THREADS={value!r}: use a positive integer")
        return int(value)

    @threads.setter
    def threads(self, value) -> None:
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or value < 1):
            raise NinferError(f"I.config.threads must be a positive int or None, got {value!r}")
        self._threads = value

    def __repr__(self):
        return (f"I.config(target={self.target!r}, threads={self.threads!r}, "
                f"specialize={self.specialize!r})")


config = Config()
