"""LLVM JIT for the CPU backend: host target, O3 compilation, on-disk object cache.

``host_target(isa=None)`` describes the machine code we generate: the LLVM
triple, CPU name and feature string, and the *ISA level* the hand-written
quantized kernels select:

* ``"avx512vnni"`` -- AVX-512 F/BW/VL plus VNNI (``vpdpbusd``);
* ``"avx2"``       -- AVX2 and F16C, 256-bit vectors;
* ``"portable"``   -- target-independent vector IR only.

Passing ``isa`` forces a level at or below what the host supports, so the
lower paths can be tested on a bigger machine: ``"avx2"`` masks every AVX-512,
AVX10, AMX and VNNI feature off, and ``"portable"`` on x86-64 compiles for the
baseline ``x86-64`` CPU (SSE2).

``JITModule(module)`` compiles an ``llvmlite.ir.Module`` (or its text) at O3
for that target and keeps the execution engine alive; ``get(name, restype,
argtypes)`` hands out ``ctypes`` function pointers that hold a reference to
the module, so the code stays mapped while any of them is alive.

Compiled object code is cached on disk (``objcache.py``) under a key that
hashes the IR text, triple, CPU name, features, optimisation level,
llvmlite/LLVM versions and the cache's format version. A cache hit skips
parsing, optimisation and code generation and only links the stored object
into a fresh engine; an entry the cache does not trust is a miss and is
rebuilt. Cache I/O failures never fail a compilation. A miss is optimised and
compiled in a helper process (``compile_worker.py``), which keeps llvmlite's
per-pipeline leak out of this one.

Fork: a ``fork()`` waits until no thread is inside LLVM (llvmlite's lock is
taken around it), and the child starts with fresh locks, so it can compile and
run kernels whatever the parent's threads were doing.
"""
from __future__ import annotations

import atexit
import ctypes
import hashlib
import os
import threading
from dataclasses import dataclass
from functools import lru_cache

import llvmlite
import llvmlite.binding as llvm

from ninfer_ir.errors import CompileError, TargetUnavailable

from ninfer_ir.backends.llvm.runtime.compile_worker import CompileWorker, WorkerUnavailable, worker_enabled
from ninfer_ir.backends.llvm.runtime.objcache import CACHE_FORMAT_VERSION, ObjectCache, default_cache_dir

__all__ = [
    "ISA_LEVELS", "HostTarget", "host_target", "ObjectCache", "default_cache_dir",
    "JITModule", "CACHE_FORMAT_VERSION",
]

ISA_LEVELS = ("avx512vnni", "avx2", "portable")
OPT_LEVEL = 3

_init_lock = threading.Lock()
_initialized = False
_compile_lock = threading.Lock()       # LLVM parsing/optimisation/codegen, one at a time


# --- fork -------------------------------------------------------------------------------
# llvmlite serialises every call into LLVM with one lock. A child forked while another
# thread holds it (or LLVM's own locks, taken only under it) would hang in its first
# LLVM call, so fork() takes it first; the child also gets fresh locks of ours, whose
# holders may be threads that do not exist in it.
_llvm_lock = llvm.ffi.lib._lock


def _before_fork() -> None:
    _llvm_lock.__enter__()


def _after_fork_in_parent() -> None:
    _llvm_lock.__exit__(None, None, None)


def _after_fork_in_child() -> None:
    global _init_lock, _compile_lock, _worker
    _init_lock, _compile_lock = threading.Lock(), threading.Lock()
    _llvm_lock.__exit__(None, None, None)
    if _worker is not None:                   # the parent's helper: let go of its pipes
        _worker.abandon()
        _worker = None


os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent,
                    after_in_child=_after_fork_in_child)


def _ensure_llvm() -> None:
    global _initialized
    with _init_lock:
        if not _initialized:
            llvm.initialize_native_target()
            llvm.initialize_native_asmprinter()
            _initialized = True


# --- host target and ISA levels ---------------------------------------------

# Features a level needs from the host (LLVM feature names).
_REQUIRED = {
    "avx512vnni": ("avx512f", "avx512bw", "avx512vl", "avx512vnni", "avx2", "f16c"),
    "avx2": ("avx2", "f16c"),
    "portable": (),
}

# Feature-name prefixes switched off when AVX2 code is forced on a bigger x86.
_ABOVE_AVX2 = ("avx512", "avx10", "amx", "avxvnni", "avxifma", "avxneconvert", "evex512")


def _parse_features(text: str) -> dict[str, bool]:
    out: dict[str, bool] = {}
    for item in text.split(","):
        item = item.strip()
        if len(item) > 1 and item[0] in "+-":
            out[item[1:]] = item[0] == "+"
    return out


def _format_features(features: dict[str, bool]) -> str:
    return ",".join(("+" if on else "-") + name for name, on in sorted(features.items()))


def _supports(features: dict[str, bool], isa: str) -> bool:
    return all(features.get(name, False) for name in _REQUIRED[isa])


@dataclass(frozen=True)
class HostTarget:
    """What code is generated for: triple, CPU, feature string and ISA level."""
    triple: str
    cpu: str
    features: str
    isa: str
    host_cpu: str           # what the machine itself reports
    forced: bool            # the ISA level was chosen by the caller

    def create_target_machine(self) -> "llvm.TargetMachine":
        _ensure_llvm()
        target = llvm.Target.from_triple(self.triple)
        return target.create_target_machine(cpu=self.cpu, features=self.features,
                                            opt=OPT_LEVEL, jit=True)

    def has_feature(self, name: str) -> bool:
        """Whether the generated code may use the LLVM feature ``name`` (e.g. ``"gfni"``)."""
        return f"+{name}" in self.features.split(",")

    def key_text(self) -> str:
        return f"{self.triple}|{self.cpu}|{self.features}|{self.isa}"


def _is_x86_64(triple: str) -> bool:
    return triple.split("-", 1)[0] in ("x86_64", "amd64")


def host_target(isa: str | None = None) -> HostTarget:
    """The host's target description; ``isa`` forces a (supported) lower level."""
    if isa is not None and isa not in ISA_LEVELS:
        raise ValueError(f"unknown ISA level {isa!r}; expected one of {', '.join(ISA_LEVELS)}")
    return _host_target(isa)


def available_isas() -> tuple[str, ...]:
    """The ISA levels this host can run, best first (``portable`` always)."""
    out = []
    for isa in ISA_LEVELS:
        try:
            host_target(isa)
        except TargetUnavailable:
            continue
        out.append(isa)
    return tuple(out)


@lru_cache(maxsize=None)
def _host_target(isa: str | None) -> HostTarget:
    _ensure_llvm()
    triple = llvm.get_process_triple()
    host_cpu = llvm.get_host_cpu_name()
    try:
        features = _parse_features(llvm.get_host_cpu_features().flatten())
    except RuntimeError:            # some hosts cannot report features
        features = {}
    x86 = _is_x86_64(triple)
    best = next(level for level in ISA_LEVELS
                if level == "portable" or (x86 and _supports(features, level)))
    chosen = best if isa is None else isa
    if chosen != "portable" and not (x86 and _supports(features, chosen)):
        raise TargetUnavailable(f"ISA level {chosen!r} is not supported by this host "
                                f"({host_cpu}, {triple}); the best available is {best!r}")
    cpu = host_cpu
    if chosen == "avx512vnni":
        # Tuning only: the kernels are written with 512-bit vectors, so let LLVM keep
        # them whole; and keep vpdpwssd chains instead of splitting each link into
        # vpmaddwd + vpaddd (more uops and registers for a latency the kernels hide).
        features = dict(features, **{"prefer-256-bit": False, "fast-dpwssd": True})
    elif chosen == "avx2":
        features = {name: (on and not name.startswith(_ABOVE_AVX2))
                    for name, on in features.items()}
    elif chosen == "portable" and x86 and chosen != best:
        cpu, features = "x86-64", {}
    return HostTarget(triple=triple, cpu=cpu, features=_format_features(features),
                      isa=chosen, host_cpu=host_cpu, forced=isa is not None)


# --- object cache key -------------------------------------------------------------

def cache_key(content: str, target: HostTarget, kind: str = "ir") -> bytes:
    """sha256 of the content (IR text, or a caller's ``kind="source"`` name for it), the
    target (triple, CPU, features, ISA level), the optimisation level, the llvmlite and
    LLVM versions and this cache's format version."""
    h = hashlib.sha256()
    for part in (f"format={CACHE_FORMAT_VERSION}", f"llvmlite={llvmlite.__version__}",
                 f"llvm={'.'.join(map(str, llvm.llvm_version_info))}", f"opt={OPT_LEVEL}",
                 target.key_text(), f"kind={kind}"):
        h.update(part.encode())
        h.update(b"\x00")
    h.update(content.encode())
    return h.digest()


# --- compilation ----------------------------------------------------------------

def _optimized_module(ir_text: str, tm, triple: str) -> "llvm.ModuleRef":
    """The module parsed and run through LLVM's O3 pipeline.

    The pass objects are disposed of here, but each pipeline run still leaves about
    70 KiB behind inside llvmlite (see docs/backends.md, "Memory"); a pass builder
    must not be reused, as each run registers callbacks into it that outlive the run."""
    mod = llvm.parse_assembly(ir_text)
    mod.triple = triple
    mod.data_layout = str(tm.target_data)
    mod.verify()
    pto = llvm.create_pipeline_tuning_options(speed_level=OPT_LEVEL)
    pb = llvm.create_pass_builder(tm, pto)
    mpm = pb.getModulePassManager()
    try:
        mpm.run(mod, pb)
    finally:
        mpm.close()
        pb.close()
        pto.close()
    return mod


_worker: CompileWorker | None = None
_no_worker_in: int | None = None       # the pid of a process where the helper would not start


def _compile_object(ir_text: str, tm, target: HostTarget):
    """(object code, the optimized module or None): compiled in the compile helper
    (``compile_worker.py``) when it runs, else here. Call with ``_compile_lock`` held."""
    global _worker, _no_worker_in
    for attempt in (1, 2):                    # a helper that died before the request: again
        if not worker_enabled() or _no_worker_in == os.getpid():
            break
        try:
            if _worker is None or not _worker.alive() or _worker.worn_out:
                if _worker is not None:
                    _worker.close()
                _worker = None
                _worker = CompileWorker()
            return _worker.compile(ir_text, target.triple, target.cpu, target.features), None
        except WorkerUnavailable:
            if _worker is None:
                _no_worker_in = os.getpid()
            break                             # else LLVM refused it: here, it raises why
        except CompileError:
            if attempt == 2:
                raise
    optimized = _optimized_module(ir_text, tm, target.triple)
    return tm.emit_object(optimized), optimized


@atexit.register
def _stop_worker() -> None:
    if _worker is not None:
        _worker.close()


class JITModule:
    """One compiled module: an execution engine kept alive with its code.

    ``module`` is an ``llvmlite.ir.Module``, LLVM IR text, or a callable that
    returns either (built only when needed). ``isa`` forces an ISA level (see
    ``host_target``); ``cache_dir`` picks the object cache directory (default
    ``default_cache_dir()``) and ``use_cache=False`` compiles without reading
    or writing it. ``key_source``, when given, replaces the IR text in the
    cache key: a caller that can name its module's content more cheaply than
    by building it (e.g. the hash of the generator's source) then skips
    building the IR on a cache hit.
    """

    def __init__(self, module, *, isa: str | None = None, target: HostTarget | None = None,
                 cache_dir: str | os.PathLike | None = None, use_cache: bool = True,
                 key_source: str | None = None):
        _ensure_llvm()
        self._module = module
        self._ir_text = None
        self.target = target if target is not None else host_target(isa)
        self.cache = ObjectCache(cache_dir) if use_cache else None
        self.key = cache_key(self.ir_text if key_source is None else key_source, self.target,
                             "ir" if key_source is None else "source")
        self._tm = self.target.create_target_machine()
        self._optimized = None
        self._asm = None
        obj = self.cache.load(self.key) if self.cache is not None else None
        self.cache_hit = obj is not None
        if obj is None:
            with _compile_lock:
                obj, self._optimized = _compile_object(self.ir_text, self._tm, self.target)
            if self.cache is not None:
                self.cache.store(self.key, obj)
        self.object_code = obj
        holder = llvm.parse_assembly("")
        holder.triple = self.target.triple
        self._engine = llvm.create_mcjit_compiler(holder, self._tm)
        self._engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
        self._engine.finalize_object()

    @property
    def ir_text(self) -> str:
        """The module's LLVM IR as given (built on first use if a callable was given)."""
        if self._ir_text is None:
            module = self._module() if callable(self._module) else self._module
            self._ir_text = module if isinstance(module, str) else str(module)
            self._module = None
        return self._ir_text

    @property
    def isa(self) -> str:
        return self.target.isa

    def address(self, name: str) -> int:
        """The entry address of the exported function ``name``."""
        addr = self._engine.get_function_address(name)
        if not addr:
            raise LookupError(f"no function {name!r} in this JIT module")
        return addr

    def global_address(self, name: str) -> int:
        """The address of the exported global ``name``, or 0 when there is none."""
        return self._engine.get_global_value_address(name)

    def get(self, name: str, restype, argtypes):
        """A ctypes function for ``name``; it keeps this module (and its code) alive."""
        fn = ctypes.CFUNCTYPE(restype, *argtypes)(self.address(name))
        fn._jit_module = self
        return fn

    def optimized_ir(self) -> str:
        """The module's LLVM IR after the O3 pipeline (recompiled on a cache hit)."""
        return str(self._optimized_ref())

    def asm(self) -> str:
        """Assembly text of the module as compiled (recompiled on a cache hit)."""
        if self._asm is None:
            optimized = self._optimized_ref()
            with _compile_lock:
                self._asm = self._tm.emit_assembly(optimized)
        return self._asm

    def _optimized_ref(self):
        if self._optimized is None:
            with _compile_lock:
                self._optimized = _optimized_module(self.ir_text, self._tm, self.target.triple)
        return self._optimized

    def __repr__(self) -> str:
        state = "cache hit" if self.cache_hit else "compiled"
        return f"<JITModule {self.target.isa} {self.target.cpu} ({state})>"
