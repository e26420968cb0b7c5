"""The conformance checklist in docs/formats.md names tests that exist."""
import ast
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_checklist_names_existing_tests():
    text = (ROOT / "docs" / "formats.md").read_text()
    checklist = text[text.index("## Conformance checklist"):]
    named, current = set(), None
    for token in re.findall(r"`([\w.]*::\w+)`", checklist):
        file, name = token.split("::")
        current = file or current
        named.add((current, name))
    assert len(named) > 60
    for file, name in sorted(named):
        tree = ast.parse((ROOT / "tests" / "formats" / file).read_text())
        functions = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
        assert name in functions, f"{file}::{name} named in docs/formats.md does not exist"
