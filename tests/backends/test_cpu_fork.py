"""Compiled CPU kernels in a process forked while another thread was compiling.

Each child runs a parallel kernel compiled by the parent (its thread pool must be
started again: the parent's workers do not exist in the child) and compiles and
runs a new kernel (LLVM must be usable: the compiling thread held llvmlite's lock
when a fork without the at-fork handlers happened). A child that does not finish in
time is killed and the test fails: it never hangs.
"""
from __future__ import annotations

import os
import signal
import threading
import time

import numpy as np
import pytest

import ninfer_ir as I
from ninfer_ir.backends.llvm.runtime import jit as J

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")

CHILD_SECONDS = 60


@I.kernel
def twice(x: I.Tensor[I.f32, "N"], y: I.Buffer[I.f32, "N"]):
    for i in I.prange(x.shape[0]):
        y[i] = x[i] * 2.0


@I.kernel
def plus_one(x: I.Tensor[I.i32, "N"], y: I.Buffer[I.i32, "N"]):
    for i in I.prange(x.shape[0]):
        y[i] = x[i] + 1


def _child(kernel) -> int:
    """What a forked child checks; its exit status (0: all good)."""
    x = np.arange(4096, dtype=np.float32)
    y = np.zeros_like(x)
    kernel(x, y)                                   # the parent's parallel kernel
    if not np.array_equal(y.view(np.uint32), (x * np.float32(2)).view(np.uint32)):
        return 3
    fresh = I.compile(plus_one, "cpu", threads=2, cache_dir=None)   # LLVM in the child
    a = np.arange(1000, dtype=np.int32)
    b = np.zeros_like(a)
    fresh(a, b)
    return 0 if np.array_equal(b, a + 1) else 4


def _wait(pid: int) -> int | None:
    """The child's exit status, or None (after killing it) when it overran."""
    deadline = time.monotonic() + CHILD_SECONDS
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.02)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return None


def test_children_forked_during_a_compile_work(tmp_path, monkeypatch):
    monkeypatch.setenv("NINFER_CACHE_DIR", str(tmp_path / "cache"))
    kernel = I.compile(twice, "cpu", threads=2)
    x = np.ones(4096, np.float32)
    kernel(x, np.zeros_like(x))                    # the pool is running in the parent
    ir_text = kernel.jit.ir_text
    stop = threading.Event()

    def compile_forever():
        tm = J.host_target().create_target_machine()
        while not stop.is_set():
            J._optimized_module(ir_text, tm, J.host_target().triple)

    busy = threading.Thread(target=compile_forever, daemon=True)
    busy.start()
    results = []
    try:
        for _ in range(4):
            time.sleep(0.05)
            pid = os.fork()
            if pid == 0:                           # the child: never return into pytest
                code = 5
                try:
                    code = _child(kernel)
                finally:
                    os._exit(code)
            results.append(_wait(pid))
    finally:
        stop.set()
        busy.join()
    assert results == [0, 0, 0, 0], f"child exit codes (None: hung and killed): {results}"


def test_the_python_pool_works_in_a_forked_child():
    from ninfer_ir.backends.llvm.runtime.launcher import CompiledKernel

    kernel = CompiledKernel(I.lower(twice, "cpu"), threads=2, native_threads=False)
    x = np.arange(4096, dtype=np.float32)
    kernel(x, np.zeros_like(x))                    # the Python pool's workers are running
    pid = os.fork()
    if pid == 0:
        code = 5
        try:
            y = np.zeros_like(x)
            kernel(x, y)
            want = (x * np.float32(2)).view(np.uint32)
            code = 0 if np.array_equal(y.view(np.uint32), want) else 3
        finally:
            os._exit(code)
    assert _wait(pid) == 0
