"""The scoped name table of the DSL and the compile-time (static) values.

A kernel name is bound either to an SSA ``Value`` or to a static Python value
(an int, a float, a dtype, a quant schema, ``I`` itself, ...). The table is a
plain dict copied at every branch point: a loop body or an ``if`` branch works
on a copy, and the lowering merges the copies back (loop-carried values, ``if``
results). Names that stop being visible (defined only inside a loop or in one
branch) are remembered with the reason, so that a later use gets a precise error.
"""
from __future__ import annotations

import builtins
import sys
import types
from dataclasses import dataclass

from ninfer_ir.ir import Value
from ninfer_ir.formats import Format
from ninfer_ir.quant import QuantSchema, _QuantNamespace
from ninfer_ir.types import ScalarType, ShapedType

from .calls import CALLS

#: ``I.<name>(...)`` calls the DSL compiles into IR ops (one handler each in ``calls``)
OP_CALLS = tuple(CALLS)

#: Python builtins a kernel may call on compile-time constants
STATIC_BUILTINS = ("abs", "min", "max", "int", "float", "bool", "len")


@dataclass(frozen=True)
class OpCall:
    """Marker for ``I.<name>`` where name is in ``OP_CALLS``."""
    name: str


@dataclass(frozen=True)
class RangeFn:
    """Marker for ``range``, ``I.range`` (sequential) and ``I.prange`` (parallel)."""
    spelling: str
    parallel: bool


@dataclass(frozen=True)
class Builtin:
    """Marker for an allowed Python builtin (evaluated on constants only)."""
    name: str


@dataclass(frozen=True)
class ShapeProxy:
    """``x.shape``: subscripting it gives a dim (an int when static)."""
    value: Value


@dataclass
class Binding:
    value: object          # a Value or a static Python value
    node: object           # the AST node that bound it (for error locations)


def is_ninfer_module(obj) -> bool:
    return isinstance(obj, types.ModuleType) and obj.__name__ == "ninfer_ir"


def ninfer_module():
    return sys.modules.get("ninfer_ir")


def describe(v) -> str:
    if isinstance(v, Value):
        return f"a {v.type} value"
    if isinstance(v, ScalarType):
        return f"the dtype {v}"
    if isinstance(v, QuantSchema):
        return f"the quant schema {v!r}"
    if isinstance(v, _QuantNamespace):
        return "I.quant"
    if isinstance(v, Format):
        return f"the format {v.name}"
    if isinstance(v, types.ModuleType):
        return "the ninfer_ir module"
    if isinstance(v, OpCall):
        return f"I.{v.name}"
    if isinstance(v, RangeFn):
        return v.spelling
    if isinstance(v, Builtin):
        return f"the builtin {v.name}()"
    if isinstance(v, ShapeProxy):
        return "a .shape"
    if isinstance(v, tuple):
        return "a tuple"
    if isinstance(v, (bool, int, float)):
        return f"the constant {v!r}"
    return f"the Python value {v!r}"


def dtype_of(v: Value) -> ScalarType:
    t = v.type
    return t.dtype if isinstance(t, ShapedType) else t


def is_static(v) -> bool:
    return not isinstance(v, Value)


class Scope:
    """name -> Binding, plus the names that went out of scope and why."""

    def __init__(self, names=None, dead=None):
        self.names: dict[str, Binding] = dict(names or {})
        self.dead: dict[str, str] = dict(dead or {})

    def copy(self) -> "Scope":
        return Scope(self.names, self.dead)

    def bind(self, name: str, value, node) -> Binding:
        if isinstance(value, Value) and value.name_hint is None:
            value.name_hint = name
        b = Binding(value, node)
        self.names[name] = b
        self.dead.pop(name, None)
        return b

    def get(self, name: str) -> Binding | None:
        return self.names.get(name)

    def __contains__(self, name: str) -> bool:
        return name in self.names

    def kill(self, name: str, reason: str) -> None:
        self.names.pop(name, None)
        self.dead[name] = reason


def resolve_global(name: str, fn) -> tuple[bool, object]:
    """Look ``name`` up as the function's closure variable, global or builtin.

    Returns ``(found, value)``; the value is not yet classified."""
    code = fn.__code__
    if name in code.co_freevars and fn.__closure__ is not None:
        cell = fn.__closure__[code.co_freevars.index(name)]
        try:
            return True, cell.cell_contents
        except ValueError:
            return False, None
    g = fn.__globals__
    if name in g:
        return True, g[name]
    if hasattr(builtins, name):
        return True, getattr(builtins, name)
    return False, None


def classify(obj, name: str, kernel_types=()):
    """A static value for an outside object, or an error message (str) for one
    a kernel cannot use. Returns ``(ok, value_or_message)``."""
    from . import dsl
    import numpy as np

    if isinstance(obj, bool):
        return True, obj
    if isinstance(obj, (int, float)):
        return True, obj
    if isinstance(obj, (np.integer, np.floating, np.bool_)):
        return True, obj.item()
    if isinstance(obj, (ScalarType, QuantSchema, _QuantNamespace)) or is_ninfer_module(obj):
        return True, obj
    if isinstance(obj, Format):
        return True, obj
    if obj is builtins.range:
        return True, RangeFn("range", False)
    if obj is dsl.range:
        return True, RangeFn("I.range", False)
    if obj is dsl.prange:
        return True, RangeFn("I.prange", True)
    for bname in STATIC_BUILTINS:
        if obj is getattr(builtins, bname):
            return True, Builtin(bname)
    mod = ninfer_module()
    if mod is not None:
        for op in OP_CALLS:
            if getattr(mod, op, None) is obj and callable(obj):
                return True, OpCall(op)
    from .helpers import Func
    if isinstance(obj, Func):
        return True, obj
    if isinstance(obj, kernel_types):
        return False, (f"'{name}' is another kernel; calling a kernel from a kernel is not "
                       f"supported (write the shared code in one kernel)")
    if callable(obj) and getattr(obj, "__module__", None) == "builtins":
        return False, f"the builtin {name}() is not supported inside a kernel"
    what = type(obj).__name__
    return False, (f"'{name}' (a Python {what}) cannot be used inside a kernel: only Python "
                   f"ints, floats and bools, dtypes, I.quant schemas and I.* operations are")
