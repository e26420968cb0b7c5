"""Every python block of docs/language.md and docs/backends.md runs as written; every
kernel a block defines also gives the interpreter's bits on the CPU backend, on inputs
made from its annotations."""
import os
import re
import runpy

import pytest

import ninfer_ir as I
from ninfer_ir.frontend.dsl import Kernel
from ninfer_ir.testing import compare_targets, random_inputs

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HEADER = "import numpy as np\nimport ninfer_ir as I\n"


def blocks(doc):
    with open(os.path.join(ROOT, "docs", doc), encoding="utf-8") as f:
        text = f.read()
    assert HEADER.strip() in text          # each page states what its blocks assume
    return re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)


BLOCKS = [(doc, k, code) for doc in ("language.md", "backends.md", "testing.md")
          for k, code in enumerate(blocks(doc))]


def test_language_page_has_an_example_per_construct():
    assert sum(doc == "language.md" for doc, _, _ in BLOCKS) >= 20


@pytest.mark.parametrize("doc, k, code", BLOCKS, ids=[f"{d}-{k}" for d, k, _ in BLOCKS])
def test_block(tmp_path, doc, k, code, capsys):
    path = tmp_path / f"{doc[:-3]}_block_{k}.py"     # the DSL reads kernels from real files
    path.write_text(HEADER + code)
    namespace = runpy.run_path(str(path), run_name="doc_example")
    for kernel in [v for v in namespace.values() if isinstance(v, Kernel)]:
        inputs = random_inputs(kernel, seed=k)
        try:                  # AssertionError unless cpu gives the interpreter's bits
            compare_targets(kernel, *inputs, targets=("interp", "cpu"))
        except I.DomainError:
            pass              # raised alike by both: these random inputs are out of domain
