"""Every python block of docs/language.md and docs/backends.md runs as written; every
kernel a block defines also gives the interpreter's bits on the CPU backend, on inputs
made from its annotations."""
import os
import re
import runpy

import numpy as np
import pytest

import ninfer_ir as I
from ninfer_ir.frontend.dsl import Kernel
from ninfer_ir.cli.inputs import fresh_copy, make_inputs
from ninfer_ir.cli.run import compare, outputs_of

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HEADER = "import numpy as np\nimport ninfer_ir as I\n"


def blocks(doc):
    with open(os.path.join(ROOT, "docs", doc), encoding="utf-8") as f:
        text = f.read()
    assert HEADER.strip() in text          # each page states what its blocks assume
    return re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)


BLOCKS = [(doc, k, code) for doc in ("language.md", "backends.md")
          for k, code in enumerate(blocks(doc))]


def test_language_page_has_an_example_per_construct():
    assert sum(doc == "language.md" for doc, _, _ in BLOCKS) >= 20


def run_or_error(fn, args):
    try:
        return fn(*args), None
    except I.DomainError as e:
        return None, str(e)


def compile_cpu(kernel):
    return I.compile(kernel, target="cpu")


@pytest.mark.parametrize("doc, k, code", BLOCKS, ids=[f"{d}-{k}" for d, k, _ in BLOCKS])
def test_block(tmp_path, doc, k, code, capsys):
    path = tmp_path / f"{doc[:-3]}_block_{k}.py"     # the DSL reads kernels from real files
    path.write_text(HEADER + code)
    namespace = runpy.run_path(str(path), run_name="doc_example")
    for kernel in [v for v in namespace.values() if isinstance(v, Kernel)]:
        inputs, _, _ = make_inputs(kernel.func, np.random.default_rng(k), {})
        want_args, got_args = fresh_copy(inputs), fresh_copy(inputs)
        want, want_err = run_or_error(lambda *a: I.interpret(kernel, *a), want_args)
        got, got_err = run_or_error(compile_cpu(kernel), got_args)
        assert got_err == want_err, kernel.name
        if want_err is None:
            assert not compare(outputs_of(kernel.func, got_args, got),
                               outputs_of(kernel.func, want_args, want)), kernel.name
