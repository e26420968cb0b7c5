"""The import layering of docs/architecture.md, checked on the source of every module.

    core      ninfer_ir/*.py (not the facade), ninfer_ir/formats   imports no package below
    frontend  Python AST -> IR, textual IR                          imports core
    passes    pipeline and passes                                   imports core
    backends  interp, llvm, clike, cuda                             imports core (and the
              textual IR reader for IR given as text); never the facade; clike no other backend
    facade    ninfer_ir/__init__.py, api.py, testing.py, cli/       imports everything
              and models/ (programs written in the language)
"""
from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {"ninfer_ir": "ninfer_ir", "frontend": "ninfer_ir.frontend",
            "passes": "ninfer_ir.passes", "backends": "ninfer_ir.backends"}
FACADE = {"ninfer_ir", "ninfer_ir.__main__", "ninfer_ir.api", "ninfer_ir.testing"}
LOWER = ("ninfer_ir.frontend", "ninfer_ir.passes", "ninfer_ir.backends")


def _modules() -> dict[str, Path]:
    """Every project module name -> its real file (links inside ninfer_ir/ are not walked)."""
    out = {}
    for folder, prefix in PACKAGES.items():
        for dirpath, dirnames, filenames in os.walk(ROOT / folder):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"
                           and not os.path.islink(os.path.join(dirpath, d))]
            rel = Path(dirpath).relative_to(ROOT / folder).parts
            for name in filenames:
                if not name.endswith(".py"):
                    continue
                parts = [prefix, *rel] + ([] if name == "__init__.py" else [name[:-3]])
                out[".".join(parts)] = Path(dirpath) / name
    return out


MODULES = _modules()


def _is_package(mod: str) -> bool:
    return MODULES[mod].name == "__init__.py"


def _imports(mod: str) -> list[tuple[str, bool, int]]:
    """(imported module, at module level, line) for every import in ``mod``."""
    tree = ast.parse(MODULES[mod].read_text(encoding="utf-8"))
    top = {id(node) for node in tree.body}
    base = mod if _is_package(mod) else mod.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        level = id(node) in top
        if isinstance(node, ast.Import):
            found += [(a.name, level, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = base.split(".")
                anchor = anchor[:len(anchor) - node.level + 1]
                target = ".".join(anchor + ([node.module] if node.module else []))
            else:
                target = node.module
            for a in node.names:
                sub = f"{target}.{a.name}"
                found.append((sub if sub in MODULES else target, level, node.lineno))
    return [(t, lvl, line) for t, lvl, line in found
            if t.split(".")[0] == "ninfer_ir" or t in MODULES]


def _layer(mod: str) -> str:
    if mod in FACADE or mod.startswith(("ninfer_ir.cli", "ninfer_ir.models")):
        return "facade"
    for lower in LOWER:
        if mod == lower or mod.startswith(lower + "."):
            return lower.split(".")[1]
    return "core"


def test_modules_found():
    assert {"ninfer_ir.ops", "ninfer_ir.frontend.dsl", "ninfer_ir.passes.pipeline",
            "ninfer_ir.backends.llvm.runtime.launcher", "ninfer_ir.backends.clike.emitter"} <= set(MODULES)


def _violations(rule) -> list[str]:
    bad = []
    for mod in sorted(MODULES):
        for target, level, line in _imports(mod):
            why = rule(mod, target, level)
            if why:
                bad.append(f"{MODULES[mod].relative_to(ROOT)}:{line}: {mod} imports {target}: {why}")
    return bad


def test_core_imports_no_lower_package_at_module_level():
    def rule(mod, target, level):
        if _layer(mod) == "core" and level and _layer(target) in ("frontend", "passes",
                                                                   "backends", "facade"):
            return "the core imports nothing above it at module level"
    assert _violations(rule) == []


def test_no_backend_or_pass_imports_the_facade():
    def rule(mod, target, level):
        if _layer(mod) in ("backends", "passes", "frontend") and _layer(target) == "facade" \
                and not mod.endswith("._docgen"):
            return "implementation packages never import the facade"
    assert _violations(rule) == []


def test_passes_and_frontend_do_not_import_backends():
    def rule(mod, target, level):
        if _layer(mod) in ("passes", "frontend") and _layer(target) == "backends":
            return "passes and the frontend do not depend on a backend"
    assert _violations(rule) == []


def test_backends_use_only_the_textual_reader_of_the_frontend():
    def rule(mod, target, level):
        if _layer(mod) == "backends" and _layer(target) == "frontend" \
                and target != "ninfer_ir.frontend.textual":
            return "a backend reads IR text, nothing else of the frontend"
    assert _violations(rule) == []


def test_clike_imports_no_other_backend():
    def rule(mod, target, level):
        if mod.startswith("ninfer_ir.backends.clike") and target.startswith(
                ("ninfer_ir.backends.llvm", "ninfer_ir.backends.cuda",
                 "ninfer_ir.backends.interp")):
            return "the shared C emitter stands below the llvm and cuda backends"
    assert _violations(rule) == []


def test_no_import_cycles_at_module_level():
    graph = {mod: {t for t, level, _ in _imports(mod) if level and t in MODULES and t != mod}
             for mod in MODULES}
    # importing a package's module runs the package first: not an edge of the module's own
    state, cycles = {}, []

    def visit(node, stack):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append(" -> ".join(stack[stack.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = 2

    for mod in sorted(graph):
        if mod not in state:
            visit(mod, [])
    assert cycles == []


@pytest.mark.parametrize("rule", ["core", "clike"])
def test_the_checker_sees_a_violation(rule, monkeypatch):
    """The rules fire on a planted import (so an empty list above means something)."""
    fake = {"core": ("ninfer_ir.ops", "from ninfer_ir.passes import pipeline\n"),
            "clike": ("ninfer_ir.backends.clike.emitter",
                      "def f():\n    from ninfer_ir.backends.llvm.gen import codegen\n")}[rule]
    mod, src = fake
    real = Path.read_text
    monkeypatch.setattr(Path, "read_text", lambda self, encoding=None:
                        src if self == MODULES[mod] else real(self, encoding=encoding))
    if rule == "core":
        with pytest.raises(AssertionError):
            test_core_imports_no_lower_package_at_module_level()
    else:
        with pytest.raises(AssertionError):
            test_clike_imports_no_other_backend()
