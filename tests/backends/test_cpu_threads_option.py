"""``threads=``: a positive integer or None, anything else a typed ``OptionError``
(I.compile, the CPU launcher, ``ninfer run --threads``)."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import ninfer_ir as I
from ninfer_ir.backends.llvm.runtime.launcher import CompiledKernel

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BAD = [0, -1, True, False, "3", "x", 2.0, 1.5, [2]]


@I.kernel
def doubled(x: I.Tensor[I.i32, "N"], y: I.Buffer[I.i32, "N"]):
    for i in I.prange(x.shape[0]):
        y[i] = x[i] * 2


@pytest.mark.parametrize("threads", BAD, ids=repr)
def test_compile_refuses_a_bad_thread_count(threads):
    with pytest.raises(I.OptionError, match="threads must be a positive integer") as e:
        I.compile(doubled, "cpu", threads=threads)
    assert isinstance(e.value, ValueError) and repr(threads) in str(e.value)


@pytest.mark.parametrize("threads", BAD, ids=repr)
def test_the_launcher_refuses_a_bad_thread_count(threads):
    with pytest.raises(I.OptionError):
        CompiledKernel(I.lower(doubled, "cpu"), threads=threads)


@pytest.mark.parametrize("threads", [1, 2, np.int64(3), 200])
def test_good_thread_counts_run(threads):
    k = I.compile(doubled, "cpu", threads=threads)
    assert k.threads == int(threads) and type(k.threads) is int
    x = np.arange(1000, dtype=np.int32)
    y = np.zeros_like(x)
    k(x, y)
    assert np.array_equal(y, x * 2)


@pytest.mark.parametrize("value", ["0", "-4"])
def test_cli_threads_is_a_usage_error(tmp_path, value):
    source = tmp_path / "k.py"
    source.write_text("import ninfer_ir as I\n\n@I.kernel\n"
                      "def inc(x: I.Tensor[I.i32, 'N'], y: I.Buffer[I.i32, 'N']):\n"
                      "    for i in I.prange(x.shape[0]):\n"
                      "        y[i] = x[i] + 1\n")
    r = subprocess.run([sys.executable, "-m", "ninfer_ir", "run", str(source), "--threads", value],
                       env=dict(os.environ, PYTHONPATH=ROOT), cwd=ROOT, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 2
    (line,) = r.stderr.strip().splitlines()
    assert "--threads" in line and f"{value} is not a positive integer" in line
