"""LLVM optimisation and code generation in a helper process.

Every run of LLVM's O3 pipeline through llvmlite leaves about 70 KiB behind in the
process that runs it (see docs/backends.md, "Memory"), so a long-running program
that keeps compiling new kernels would grow without bound. ``JITModule`` therefore
sends the IR of a module that misses the object cache to a helper process, which
parses, optimises and compiles it and returns the object code; the JIT links that
object as it links a cache hit. The helper is replaced after
``COMPILES_PER_WORKER`` modules, which returns what it leaked to the system.

The helper is started on the first miss of a process (a forked child starts its
own). If it cannot be started, or ``NINFER_COMPILE_WORKER=0``, modules are compiled
in the calling process. A module the helper refuses (an LLVM error) is compiled in
the calling process, which raises the error; if the helper dies while compiling (an
LLVM crash), ``CompileError`` is raised and the calling process lives on.
"""
from __future__ import annotations

import json
import os
import select
import struct
import subprocess
import sys

from ninfer_ir.errors import CompileError

__all__ = ["CompileWorker", "worker_enabled", "serve", "COMPILES_PER_WORKER"]

COMPILES_PER_WORKER = 200
START_SECONDS = 60
_LEN = struct.Struct("<Q")
_READY = b"R"
_OK, _REFUSED = b"\x00", b"\x01"


def worker_enabled() -> bool:
    """False when ``NINFER_COMPILE_WORKER=0``: compile in the calling process."""
    return os.environ.get("NINFER_COMPILE_WORKER", "1").strip() != "0"


class WorkerUnavailable(Exception):
    """The helper could not be started or refused the module: compile in-process."""


def _read_exactly(stream, n: int) -> bytes:
    data = stream.read(n)
    if data is None or len(data) != n:
        raise EOFError
    return data


class CompileWorker:
    """One helper process, used by one process (a forked child gets its own)."""

    def __init__(self):
        paths = json.dumps([p for p in sys.path if isinstance(p, str)])
        code = ("import json, sys; sys.path[:] = json.loads(sys.argv[1]); "
                "from ninfer_ir.backends.llvm.runtime.compile_worker import serve; serve()")
        self.pid = os.getpid()
        self.compiles = 0
        try:
            self.proc = subprocess.Popen([sys.executable, "-I", "-c", code, paths],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.DEVNULL, close_fds=True)
            ready, _, _ = select.select([self.proc.stdout], [], [], START_SECONDS)
            if not ready or self.proc.stdout.read(1) != _READY:
                raise EOFError
        except (OSError, EOFError) as e:
            self.close()
            raise WorkerUnavailable(f"the compile helper did not start ({e!r})") from e

    def compile(self, ir_text: str, triple: str, cpu: str, features: str) -> bytes:
        """The object code of ``ir_text`` compiled at O3 for the target."""
        request = "\0".join((triple, cpu, features, ir_text)).encode()
        try:
            self.proc.stdin.write(_LEN.pack(len(request)) + request)
            self.proc.stdin.flush()
            status = _read_exactly(self.proc.stdout, 1)
            (size,) = _LEN.unpack(_read_exactly(self.proc.stdout, _LEN.size))
            data = _read_exactly(self.proc.stdout, size)
        except (OSError, EOFError, ValueError):
            code = self.close()
            raise CompileError(f"LLVM failed while compiling this module in the compile "
                               f"helper (exit status {code})") from None
        self.compiles += 1
        if status == _REFUSED:
            raise WorkerUnavailable(data.decode(errors="replace"))
        return data

    @property
    def worn_out(self) -> bool:
        return self.compiles >= COMPILES_PER_WORKER

    def alive(self) -> bool:
        return self.pid == os.getpid() and self.proc is not None and self.proc.poll() is None

    def abandon(self):
        """In a forked child: close the inherited pipes, leave the helper to its parent."""
        proc, self.proc = self.proc, None
        if proc is not None:
            for stream in (proc.stdin, proc.stdout):
                try:
                    stream.close()
                except OSError:
                    pass

    def close(self):
        """Stop the helper (it exits when its input closes); its exit status."""
        proc, self.proc = getattr(self, "proc", None), None
        if proc is None:
            return None
        if self.pid != os.getpid():
            return None                       # a forked child: the helper is the parent's
        for stream in (proc.stdin, proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
        try:
            return proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            return proc.wait()


def serve() -> None:
    """The helper's loop: requests on stdin, object code (or an error) on stdout."""
    from ninfer_ir.backends.llvm.runtime.jit import _ensure_llvm, _optimized_module
    from ninfer_ir.backends.llvm.runtime.jit import HostTarget

    _ensure_llvm()
    machines: dict = {}
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    out.write(_READY)
    out.flush()
    while True:
        try:
            (size,) = _LEN.unpack(_read_exactly(inp, _LEN.size))
            request = _read_exactly(inp, size).decode()
        except EOFError:
            return
        triple, cpu, features, ir_text = request.split("\0", 3)
        try:
            tm = machines.get((triple, cpu, features))
            if tm is None:
                tm = machines[(triple, cpu, features)] = HostTarget(
                    triple, cpu, features, "", cpu, False).create_target_machine()
            status, data = _OK, tm.emit_object(_optimized_module(ir_text, tm, triple))
        except Exception as e:                 # noqa: BLE001 - reported to the caller
            status, data = _REFUSED, f"{type(e).__name__}: {e}".encode()
        out.write(status + _LEN.pack(len(data)) + data)
        out.flush()
