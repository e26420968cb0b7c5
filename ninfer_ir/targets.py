"""The target table: every target is one row, read by ``I.compile``/``I.emit``/``I.lower``,
the pass pipeline and the command line.

    from ninfer_ir.targets import TARGETS, get
    get("cpu").emit_kinds            # ('llvm', 'asm')

A row names its implementation by ``"module:function"`` references that are imported
only when used, so this table (part of the core) imports no backend and no pass.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import MappingProxyType
from typing import Callable

from .errors import NinferError


@dataclass(frozen=True)
class Target:
    name: str
    description: str
    pipeline: str | None            # the pass pipeline that lowers for it (None: runs any IR level)
    emit_kinds: tuple[str, ...]     # what ``I.emit`` can produce; the first is the default
    compile: str                    # "module:function": (lowered Module, **options) -> callable
    emit: str | None = None         # "module:function": (lowered Module, kind) -> str
    available: str | None = None    # "module:function": () -> (ok, why not); None: always
    options: tuple[str, ...] = ()   # the keyword options of ``I.compile`` its compile takes


_B = "ninfer_ir.backends"

TARGETS = MappingProxyType({t.name: t for t in (
    Target("interp", "the numpy interpreter: the reference semantics, every IR level",
           pipeline=None, emit_kinds=(),
           compile=f"{_B}.interp.interpreter:InterpretedKernel"),
    Target("cpu", "LLVM machine code for the host CPU (llvmlite)",
           pipeline="cpu", emit_kinds=("llvm", "asm"),
           compile=f"{_B}.llvm.runtime.launcher:compile_module", emit=f"{_B}.llvm.gen.codegen:emit",
           options=("threads", "cache_dir")),
    Target("cuda", "CUDA C compiled by NVRTC, launched through CuPy",
           pipeline="cuda", emit_kinds=("cuda", "ptx"),
           compile=f"{_B}.cuda.launcher:compile_module", emit=f"{_B}.cuda.emitter:emit",
           available=f"{_B}.cuda.runtime:gpu_available"),
)})

EMIT_TARGETS = tuple(name for name, t in TARGETS.items() if t.emit_kinds)
EMIT_KINDS = tuple(k for t in TARGETS.values() for k in t.emit_kinds)


def get(name) -> Target:
    """The row of ``name``, or a NinferError that lists the targets."""
    target = TARGETS.get(name) if isinstance(name, str) else None
    if target is None:
        raise NinferError(f"unknown target {name!r}; use one of {', '.join(TARGETS)}")
    return target


def resolve(ref: str) -> Callable:
    """Import a ``"module:function"`` reference of the table."""
    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module), attr)
