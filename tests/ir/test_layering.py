"""The core package imports nothing of the layers above it at module level.

Core: every module of ``ninfer_ir`` (subpackages included) except the facade
(``__init__.py``), ``__main__.py``, ``api.py`` and the CLI (``cli/``), which are the
only places that import everything. A module-level import is one that runs when the
module is imported: a top-level statement, or one nested in a top-level ``if``/``try``.
"""
from __future__ import annotations

import ast
from pathlib import Path

import ninfer_ir

CORE = Path(ninfer_ir.__file__).resolve().parent
UPPER = ("frontend", "passes", "backends")
FACADE = {"__init__.py", "__main__.py", "api.py"}


def core_files():
    for path in sorted(CORE.rglob("*.py")):
        rel = path.relative_to(CORE)
        if rel.parts[0] in UPPER or rel.parts[0] == "cli":
            continue
        if len(rel.parts) == 1 and rel.name in FACADE:
            continue
        yield rel, path


def module_level_imports(tree):
    todo = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, (ast.If, ast.Try)):
            for field in ("body", "orelse", "finalbody", "handlers"):
                todo.extend(getattr(node, field, []))
        elif isinstance(node, ast.ExceptHandler):
            todo.extend(node.body)


def imported_packages(rel, node):
    """The package paths (``ninfer_ir.x.y``) that an import statement names."""
    here = ["ninfer_ir", *rel.parts[:-1]]
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = here[:len(here) - node.level + 1] if node.level else []
    mod = ".".join(base + ([node.module] if node.module else []))
    return [mod] + [f"{mod}.{a.name}" for a in node.names]


def violation(name):
    parts = name.split(".")
    if parts[0] in UPPER:
        return True
    return len(parts) > 1 and parts[0] == "ninfer_ir" and parts[1] in UPPER


def test_core_never_imports_the_upper_layers_at_module_level():
    files = list(core_files())
    assert any(rel.as_posix() == "ops.py" for rel, _ in files)
    assert any(rel.as_posix() == "numerics/folds.py" for rel, _ in files)
    bad = []
    for rel, path in files:
        tree = ast.parse(path.read_text(), str(path))
        for node in module_level_imports(tree):
            for name in imported_packages(rel, node):
                if violation(name):
                    bad.append(f"{rel}:{node.lineno} imports {name}")
    assert not bad, "core modules import upper layers:\n" + "\n".join(bad)


def test_the_check_sees_a_violation():
    """The detector itself: relative and absolute imports of an upper layer are found."""
    rel = Path("numerics/x.py")
    for src in ("from ..backends.interp import eager", "import ninfer_ir.passes.cse",
                "from ninfer_ir.frontend import dsl", "try:\n    from ..passes import cse\n"
                "except ImportError:\n    pass"):
        nodes = list(module_level_imports(ast.parse(src)))
        assert any(violation(n) for node in nodes for n in imported_packages(rel, node)), src
    inner = "def f():\n    from ..backends import interp\n"
    assert not list(module_level_imports(ast.parse(inner)))
