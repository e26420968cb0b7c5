"""Compiles that miss the object cache run LLVM in a helper process, so the memory
llvmlite leaks per O3 pipeline run does not accumulate in the caller."""
from __future__ import annotations

import ctypes
import os
import subprocess
import sys

import pytest

import ninfer_ir as I
from ninfer_ir.backends.llvm.runtime import compile_worker as W
from ninfer_ir.backends.llvm.runtime import jit as J

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "llvm_compile_memory.py")


def answer_ir(k: int) -> str:
    return f"define i64 @answer() {{\n  ret i64 {k}\n}}\n"


def answer(k: int) -> int:
    jit = J.JITModule(answer_ir(k), isa="portable", use_cache=False)
    return jit.get("answer", ctypes.c_int64, [])()


@pytest.fixture
def with_worker(monkeypatch):
    monkeypatch.setenv("NINFER_COMPILE_WORKER", "1")


def test_a_miss_is_compiled_in_the_helper(with_worker):
    assert answer(11) == 11
    helper = J._worker
    assert helper is not None and helper.alive() and helper.proc.pid != os.getpid()
    before = helper.compiles
    assert answer(12) == 12
    assert J._worker is helper and helper.compiles == before + 1


def test_the_helper_is_replaced_when_worn_out_or_gone(with_worker, monkeypatch):
    answer(21)
    first = J._worker
    monkeypatch.setattr(W, "COMPILES_PER_WORKER", first.compiles + 1)
    assert answer(22) == 22
    assert J._worker is first                   # that compile wore it out
    assert answer(23) == 23
    second = J._worker
    assert second is not first and first.proc is None      # stopped
    second.proc.kill()
    second.proc.wait()
    assert answer(24) == 24 and J._worker is not second


def test_llvm_errors_are_the_same_with_and_without_the_helper(monkeypatch):
    errors = []
    for flag in ("1", "0"):
        monkeypatch.setenv("NINFER_COMPILE_WORKER", flag)
        with pytest.raises(RuntimeError) as e:
            J.JITModule("define i64 @broken( {", isa="portable", use_cache=False)
        errors.append(str(e.value))
    assert errors[0] == errors[1] and "expected" in errors[0]


def test_compiling_here_when_asked(monkeypatch):
    monkeypatch.setenv("NINFER_COMPILE_WORKER", "0")
    obj, optimized = J._compile_object(answer_ir(5), J.host_target("portable")
                                       .create_target_machine(), J.host_target("portable"))
    assert optimized is not None and obj


def test_resident_memory_stays_flat_over_many_misses():
    """In-process, each miss leaves ~70 KiB (llvmlite); through the helper, ~0."""
    env = dict(os.environ, NINFER_COMPILE_WORKER="1", PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, SCRIPT, "--case", "miss", "--n", "60"], env=env,
                       capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert float(r.stdout) < 10.0, f"{r.stdout.strip()} KiB per compile"


DYING = ("import sys; sys.stdout.buffer.write(b'R'); sys.stdout.flush(); "
         "sys.stdin.buffer.read(8); sys.exit(70)")


class DyingWorker(W.CompileWorker):
    """A helper that dies on its first request, as one would on an LLVM crash."""

    def __init__(self):
        self.pid = os.getpid()
        self.compiles = 0
        self.proc = subprocess.Popen([sys.executable, "-c", DYING], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE)
        assert self.proc.stdout.read(1) == b"R"


def test_a_crash_in_the_helper_is_a_compile_error_not_a_dead_caller(with_worker, monkeypatch):
    monkeypatch.setattr(J, "_worker", None)
    monkeypatch.setattr(J, "CompileWorker", DyingWorker)
    with pytest.raises(I.CompileError, match="exit status 70"):
        answer(31)
    started = []
    monkeypatch.setattr(J, "CompileWorker",
                        lambda: started.append(1) or (DyingWorker() if len(started) == 1
                                                      else W.CompileWorker()))
    monkeypatch.setattr(J, "_worker", None)
    assert answer(32) == 32 and len(started) == 2     # died once: a new helper compiled it
    J._worker.close()
