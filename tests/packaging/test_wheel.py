"""The built wheel installs one top-level package, ``ninfer_ir``, with its implementation
packages and data inside it."""
from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_wheel_top_level_is_only_ninfer_ir(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                    "-q", "-w", str(tmp_path), str(ROOT)], check=True, capture_output=True)
    (wheel,) = tmp_path.glob("ninfer_ir-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names}
    assert {t for t in top if not t.endswith(".dist-info")} == {"ninfer_ir"}
    for needed in ("ninfer_ir/frontend/dsl.py", "ninfer_ir/frontend/ir.lark",
                   "ninfer_ir/passes/pipeline.py", "ninfer_ir/backends/llvm/runtime/launcher.py",
                   "ninfer_ir/backends/abi.py", "ninfer_ir/cli/__init__.py"):
        assert needed in names, needed
    assert not any(n.startswith(("tests/", "benchmarks/", "examples/")) for n in names)
