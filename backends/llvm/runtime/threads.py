"""The thread pools that run the outlined bodies of parallel loops.

``par_entry(threads)`` gives the address of the ``par`` function a kernel calls
when it reaches a parallel loop (None for one thread): on Linux x86-64 the native
pool of ``pool.py`` (pthreads that spin, then sleep on a futex), elsewhere, or with
``native=False``, the Python pool below. The native pool hands out contiguous
chunks of ``[0, n)`` from an atomic counter to the calling thread and its workers
(see ``pool.py``); the Python pool splits ``[0, n)`` into at most ``threads``
contiguous ranges of near-equal length and runs the first in the calling thread
and the others in persistent workers. Both wait for all and return the status of
the lowest failing chunk or range, with its error block in ``err``. Each chunk or
range stops at its first failing iteration, so that is the lowest failing
iteration, as in the interpreter (which runs parallel loops in order); higher
iterations may have run. If a pool is busy (a kernel in another thread is using
it), the loop runs whole in the calling thread.

Fork: both pools survive ``fork()``. The child's first parallel loop finds that
the pool's workers belong to another process and starts its own; the native
pool's code stays mapped in the child and is reset through a function pointer
taken in the parent (``ninfer_pool_forget``), so the child needs no LLVM for it.

Measured on the 2-core development machine (a parallel loop of 2 trivial
iterations, launcher overhead excluded): the native pool adds about 1 us per loop
when its workers are still spinning from the previous call; the Python pool, whose
workers are Python threads woken through locks, each a ctypes call of the body
(ctypes releases the GIL), adds 20 to 90 us (two thread wake-ups plus the GIL
hand-offs). The native pool is the default.
"""
from __future__ import annotations

import ctypes
import numbers
import os
import platform
import sys
import threading

from ninfer_ir.backends.abi import ERR_SLOTS
from ninfer_ir.errors import OptionError

__all__ = ["PAR", "BODY", "Pool", "shared_pool", "split", "par_entry", "native_pool",
           "check_threads"]

PAR = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                       ctypes.c_void_p)
BODY = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64,
                        ctypes.c_void_p)
_ERR_BYTES = 8 * ERR_SLOTS
_INTERNAL_ERROR = -1


def check_threads(threads):
    """``threads`` as an int >= 1, or None (all CPUs); anything else is an OptionError."""
    if threads is None:
        return None
    if isinstance(threads, bool) or not isinstance(threads, numbers.Integral) or threads < 1:
        raise OptionError(f"threads must be a positive integer (or None for all CPUs), "
                          f"got {threads!r}")
    return int(threads)


def split(n: int, parts: int):
    """``parts`` contiguous ranges covering ``[0, n)``, lengths differing by at most 1."""
    return [(k * n // parts, (k + 1) * n // parts) for k in range(parts)]


class _Worker:
    def __init__(self):
        self.start = threading.Lock()
        self.start.acquire()
        self.done = threading.Lock()
        self.done.acquire()
        self.task = None
        self.status = 0
        self.err = (ctypes.c_int64 * ERR_SLOTS)()
        self.thread = threading.Thread(target=self._loop, daemon=True,
                                       name="ninfer-llvm-worker")
        self.thread.start()

    def _loop(self):
        while True:
            self.start.acquire()
            body, env, lo, hi = self.task
            try:
                self.status = body(env, lo, hi, ctypes.addressof(self.err))
            except BaseException:       # never leave the dispatcher waiting
                self.status = _INTERNAL_ERROR
            self.done.release()


class Pool:
    """Persistent workers for parallel loops (``threads - 1`` of them)."""

    def __init__(self, threads: int):
        self.threads = max(1, int(threads))
        self.bodies: dict = {}
        self.main_err = (ctypes.c_int64 * ERR_SLOTS)()
        self._start_workers()

    def _start_workers(self):
        self.pid = os.getpid()
        self.workers = [_Worker() for _ in range(self.threads - 1)]
        self.busy = threading.Lock()

    def body(self, addr: int):
        fn = self.bodies.get(addr)
        if fn is None:
            fn = self.bodies[addr] = BODY(addr)
        return fn

    def run(self, body_addr: int, env: int, n: int, err: int, threads: int) -> int:
        if self.pid != os.getpid():           # a forked child: the workers stayed behind
            with _shared_lock:
                if self.pid != os.getpid():
                    self._start_workers()
        body = self.body(body_addr)
        parts = max(1, min(threads, self.threads, n))
        if parts == 1 or not self.busy.acquire(blocking=False):
            return body(env, 0, n, err)
        try:
            ranges = split(n, parts)
            used = self.workers[:parts - 1]
            for w, (lo, hi) in zip(used, ranges[1:]):
                w.task = (body, env, lo, hi)
                w.start.release()
            lo, hi = ranges[0]
            status = body(env, lo, hi, ctypes.addressof(self.main_err))
            source = self.main_err
            for w in used:
                w.done.acquire()
            if status == 0:
                for w in used:
                    if w.status != 0:
                        status, source = w.status, w.err
                        break
            if status != 0:
                ctypes.memmove(err, ctypes.addressof(source), _ERR_BYTES)
            return status
        finally:
            self.busy.release()

    def callback(self, threads: int):
        """A ``PAR`` callback running loops on at most ``threads`` threads (keep it alive
        as long as code may call it)."""
        def par(body, env, n, err):
            try:
                return self.run(body, env, n, err, threads)
            except BaseException:
                return _INTERNAL_ERROR
        return PAR(par)


_shared: Pool | None = None
_shared_lock = threading.Lock()


def _after_fork_in_child() -> None:
    global _shared_lock
    _shared_lock = threading.Lock()           # its holder may not exist in the child


os.register_at_fork(after_in_child=_after_fork_in_child)


def shared_pool(threads: int) -> Pool:
    """The process-wide pool, grown to at least ``threads`` threads."""
    global _shared
    with _shared_lock:
        if _shared is None or _shared.threads < threads:
            _shared = Pool(threads)
        return _shared


class NativePool:
    """The compiled pool of ``pool.py``: compiled once, its workers started once per
    process (again in a forked child, without LLVM)."""

    def __init__(self, workers: int, cache_dir=None, use_cache: bool = True):
        from ninfer_ir.backends.llvm.runtime.jit import JITModule
        from ninfer_ir.backends.llvm.runtime.pool import MAX_THREADS, build_pool_module
        self.jit = JITModule(build_pool_module(), cache_dir=cache_dir, use_cache=use_cache)
        self.max_threads = MAX_THREADS
        self.workers = max(0, min(workers, MAX_THREADS - 1))
        self._start = self.jit.get("ninfer_pool_start", None, [ctypes.c_int64])
        self._forget = self.jit.get("ninfer_pool_forget", None, [])
        self.entries = {t: self.jit.address(f"ninfer_par_{t}")
                        for t in range(2, MAX_THREADS + 1)}
        self.pid = os.getpid()
        self._start(self.workers)

    def ensure_started(self) -> None:
        """Start this process's workers if they were started by a parent before fork."""
        if self.pid != os.getpid():
            self._forget()
            self._start(self.workers)
            self.pid = os.getpid()

    def entry(self, threads: int) -> int:
        return self.entries[min(threads, self.max_threads)]


_native: NativePool | None = None
_callbacks: dict = {}


def native_pool(cache_dir=None, use_cache: bool = True) -> NativePool | None:
    """This process's native pool (None where it is not supported). The first call
    compiles it, with the object cache options given."""
    global _native
    if sys.platform != "linux" or platform.machine() not in ("x86_64", "AMD64"):
        return None
    with _shared_lock:
        if _native is None:
            _native = NativePool((os.cpu_count() or 1) - 1, cache_dir, use_cache)
        _native.ensure_started()
        return _native


def par_entry(threads: int, native: bool = True, cache_dir=None,
              use_cache: bool = True) -> int | None:
    """The address of a ``par`` function running loops on ``threads`` threads
    (``cache_dir``/``use_cache``: the object cache options for compiling the native pool)."""
    if threads <= 1:
        return None
    pool = native_pool(cache_dir, use_cache) if native else None
    if pool is not None:
        return pool.entry(threads)
    key = (os.getpid(), threads)
    cb = _callbacks.get(key)
    if cb is None:
        cb = _callbacks[key] = shared_pool(threads).callback(threads)
    return ctypes.cast(cb, ctypes.c_void_p).value
