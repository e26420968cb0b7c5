"""The textual IR printer: the exact inverse of ``frontend/ir.lark``.

    func @name(%a: tensor<f32[G,256]>, %y: buffer<f32[N]>) -> (f32) {
      %r = op(%a, %b) {key = value} : type
      for(%lo, %hi, %step) ({
      ^(%i: index):
        ...
      })
      return(%r)
    }

One generic op rule: ``results = name(operands) {attrs} (regions) : result types``.
Names follow ``name_hint`` (uniqued within a function); attributes print sorted.
"""
from __future__ import annotations

import math
import re

from .ir import FuncOp, Module, Operation, Value
from .quant import QuantSchema
from .types import ScalarType, Type

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\Z")


def format_attr(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    if isinstance(v, (ScalarType, QuantSchema)):
        return str(v)
    if isinstance(v, Type):
        return str(v)
    from .dense import Dense
    if isinstance(v, Dense):
        return v.text()
    from .formats import Format
    if isinstance(v, Format):
        return f"#{v.name}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(format_attr(x) for x in v) + "]"
    raise TypeError(f"cannot print attribute value {v!r}")


class Namer:
    """Assigns printed names: the hint when free, else hint_1, hint_2…, else %0, %1…"""

    def __init__(self):
        self.names: dict[Value, str] = {}
        self.taken: set[str] = set()
        self.counter = 0

    def __call__(self, v: Value) -> str:
        name = self.names.get(v)
        if name is None:
            name = self._fresh(v.name_hint)
            self.names[v] = name
        return "%" + name

    def _fresh(self, hint):
        if hint and _IDENT.match(hint) and not hint[0].isdigit():
            cand, k = hint, 0
            while cand in self.taken:
                k += 1
                cand = f"{hint}_{k}"
        else:
            while str(self.counter) in self.taken:
                self.counter += 1
            cand = str(self.counter)
            self.counter += 1
        self.taken.add(cand)
        return cand

    def known(self, v: Value) -> str:
        if v in self.names:
            return "%" + self.names[v]
        return "%<undefined>"


def print_module(module: Module) -> str:
    return "".join(print_func(f) for f in module.funcs)


def print_func(func: FuncOp, namer: Namer | None = None) -> str:
    """The text of ``func``; ``namer`` (when given) keeps the printed names."""
    namer = namer if namer is not None else Namer()
    lines = []
    params = ", ".join(f"{namer(a)}: {a.type}" for a in func.args)
    res = ""
    if func.result_types:
        res = " -> (" + ", ".join(str(t) for t in func.result_types) + ")"
    attrs = _attrs(func.attrs)
    lines.append(f"func @{func.sym_name}({params}){res}{attrs} {{")
    for op in func.body.ops:
        _op_lines(op, namer, 1, lines)
    lines.append("}")
    return "\n".join(lines) + "\n"


def _attrs(attrs) -> str:
    if not attrs:
        return ""
    return " {" + ", ".join(f"{k} = {format_attr(attrs[k])}" for k in sorted(attrs)) + "}"


def _op_lines(op: Operation, namer: Namer, depth: int, out: list) -> None:
    pad = "  " * depth
    operands = ", ".join(namer.known(v) if v in namer.names else namer(v) for v in op.operands)
    head = ""
    if op.results:
        head = ", ".join(namer(r) for r in op.results) + " = "
    text = f"{pad}{head}{op.name}({operands}){_attrs(op.attrs)}"
    types = ""
    if op.results:
        rt = [str(r.type) for r in op.results]
        types = " : " + (rt[0] if len(rt) == 1 else "(" + ", ".join(rt) + ")")
    if not op.regions:
        out.append(text + types)
        return
    opener = text + " ({"
    for k, region in enumerate(op.regions):
        out.append(opener)
        block = region.block
        args = ", ".join(f"{namer(a)}: {a.type}" for a in block.args)
        out.append(f"{pad}^({args}):")
        for inner in block.ops:
            _op_lines(inner, namer, depth + 1, out)
        opener = f"{pad}}}, {{"
    out.append(f"{pad}}}){types}")


def print_op(op: Operation) -> str:
    """One op (and its regions) on its own, for error messages."""
    if isinstance(op, FuncOp):
        return f"func @{op.sym_name}"
    lines: list[str] = []
    _op_lines(op, Namer(), 0, lines)
    lines = [line if len(line) <= 400 else line[:396] + " ..." for line in lines]  # big tables
    return "\n".join(lines) if len(lines) < 12 else "\n".join(lines[:10] + ["  ..."])
