"""Compile CUDA C to PTX (or a cubin) on a machine that may have no GPU.

Two compilers are tried, in this order:

1. NVRTC through ``cuda.bindings.nvrtc`` (pip ``cuda-python``); its shared
   library comes from the ``nvidia-cuda-nvrtc`` wheel. ``cuda.bindings`` finds
   it itself (through ``cuda.pathfinder``); where that fails we look for
   ``libnvrtc.so*`` in the wheel's folders on ``sys.path`` and load it first.
2. ``nvcc`` on ``PATH``.

Neither needs a device. Every compile uses the exact-arithmetic options
(:data:`EXACT_OPTIONS`): no FMA contraction, no flush-to-zero, IEEE division
and square root. Options that would weaken them are refused.
"""
from __future__ import annotations

import ctypes
import functools
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

from ninfer_ir.errors import CompileError, NinferError, TargetUnavailable  # noqa: F401

__all__ = ["CompileError", "EXACT_OPTIONS", "available_compilers", "compile_to_ptx",
           "compile_to_cubin", "check_exact_ptx"]

# The options every compile carries (NVRTC, nvcc and cupy.RawModule accept them).
EXACT_OPTIONS = ("-fmad=false", "-ftz=false", "-prec-div=true", "-prec-sqrt=true",
                 "--std=c++17")

_FORBIDDEN = re.compile(r"(use_fast_math|fmad=true|ftz=true|prec-div=false|"
                        r"prec-sqrt=false|extra-device-vectorization)")

_ARCH = re.compile(r"^(?:sm|compute)_(\d+[a-z]?)$")


# PTX that would round differently from the spec: contraction, flush-to-zero,
# approximate division.
_INEXACT_PTX = re.compile(r"\bfma\.rn\.f32\b|\.ftz\b|\bdiv\.(?:approx|full)\b")


def check_exact_ptx(ptx: str) -> None:
    """Raise :class:`CompileError` if ``ptx`` holds an inexact f32 instruction."""
    bad = [line.strip() for line in ptx.splitlines() if _INEXACT_PTX.search(line)]
    if bad:
        shown = "\n".join(bad[:10])
        raise CompileError(f"the PTX holds {len(bad)} inexact f32 instruction(s) "
                           f"(FMA contraction, flush-to-zero or approximate division)", shown)


def _check_options(extra_opts) -> tuple[str, ...]:
    opts = tuple(str(o) for o in extra_opts)
    for o in opts:
        if _FORBIDDEN.search(o):
            raise ValueError(f"option {o!r} would break exact f32 arithmetic; "
                             f"CUDA code is always compiled with {' '.join(EXACT_OPTIONS)}")
    return opts


def _arch_number(arch: str) -> str:
    m = _ARCH.match(arch)
    if m is None:
        raise ValueError(f"unknown CUDA architecture {arch!r}; expected e.g. 'sm_90' or 'sm_80'")
    return m.group(1)


# --- NVRTC -----------------------------------------------------------------

def _preload_wheel_nvrtc() -> str | None:
    """Load libnvrtc from an ``nvidia-*`` wheel folder on sys.path; return its path."""
    patterns = ("nvidia/cu*/lib/libnvrtc.so*", "nvidia/cuda_nvrtc/lib/libnvrtc.so*")
    for base in sys.path:
        for pattern in patterns:
            for path in sorted(glob.glob(os.path.join(base, pattern))):
                if "builtins" in os.path.basename(path):
                    continue
                try:
                    ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
                except OSError:
                    continue
                return path
    return None


@functools.lru_cache(maxsize=1)
def _nvrtc():
    """Return ``(module, version string)`` or ``(None, reason)``."""
    try:
        from cuda.bindings import nvrtc
    except ImportError as exc:
        return None, f"cuda.bindings is not importable ({exc}); pip install cuda-python"
    try:
        err, major, minor = nvrtc.nvrtcVersion()
    except Exception as first:  # the library was not found by cuda.bindings itself
        if _preload_wheel_nvrtc() is None:
            return None, (f"the NVRTC library could not be loaded ({first}); "
                          f"pip install nvidia-cuda-nvrtc")
        try:
            err, major, minor = nvrtc.nvrtcVersion()
        except Exception as exc:
            return None, f"the NVRTC library could not be loaded ({exc})"
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        return None, f"nvrtcVersion failed: {err}"
    return nvrtc, f"{major}.{minor}"


def _nvrtc_compile(source: str, arch: str, opts: tuple[str, ...], want: str) -> bytes:
    nvrtc, _ = _nvrtc()
    ok = nvrtc.nvrtcResult.NVRTC_SUCCESS
    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), b"ninfer_ir.cu", 0, [], [])
    if err != ok:
        raise CompileError(f"nvrtcCreateProgram failed: {err}")
    try:
        kind = "compute" if want == "ptx" else "sm"
        args = [f"--gpu-architecture={kind}_{_arch_number(arch)}", *EXACT_OPTIONS, *opts]
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(args), [a.encode() for a in args])
        log = _nvrtc_log(nvrtc, prog)
        if err != ok:
            raise CompileError(f"NVRTC failed to compile for {arch} ({err.name})", log)
        if want == "ptx":
            size_fn, get_fn = nvrtc.nvrtcGetPTXSize, nvrtc.nvrtcGetPTX
        else:
            size_fn, get_fn = nvrtc.nvrtcGetCUBINSize, nvrtc.nvrtcGetCUBIN
        err, size = size_fn(prog)
        if err != ok:
            raise CompileError(f"NVRTC could not size its {want} output: {err}", log)
        buf = b"\0" * size
        (err,) = get_fn(prog, buf)
        if err != ok:
            raise CompileError(f"NVRTC could not return its {want} output: {err}", log)
        return buf.rstrip(b"\0") if want == "ptx" else buf
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def _nvrtc_log(nvrtc, prog) -> str:
    err, size = nvrtc.nvrtcGetProgramLogSize(prog)
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS or size <= 1:
        return ""
    buf = b"\0" * size
    nvrtc.nvrtcGetProgramLog(prog, buf)
    return buf.rstrip(b"\0").decode(errors="replace")


# --- nvcc ------------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def _nvcc():
    """Return ``(path, version string)`` or ``(None, reason)``."""
    path = shutil.which("nvcc")
    if path is None:
        return None, "nvcc is not on PATH"
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True,
                             timeout=60).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"nvcc does not run ({exc})"
    m = re.search(r"release (\d+\.\d+)", out)
    return path, (m.group(1) if m else "unknown")


def _nvcc_compile(source: str, arch: str, opts: tuple[str, ...], want: str) -> bytes:
    path, _ = _nvcc()
    num = _arch_number(arch)
    target = ["-ptx", f"-arch=compute_{num}"] if want == "ptx" else \
        ["-cubin", f"-arch=sm_{num}"]
    with tempfile.TemporaryDirectory(prefix="ninfer_nvcc_") as tmp:
        src = os.path.join(tmp, "ninfer_ir.cu")
        out = os.path.join(tmp, f"ninfer_ir.{want}")
        with open(src, "w") as f:
            f.write(source)
        cmd = [path, *target, *EXACT_OPTIONS, *opts, "-o", out, src]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        except (OSError, subprocess.SubprocessError) as exc:
            raise CompileError(f"nvcc could not be run: {exc}") from None
        if proc.returncode != 0:
            raise CompileError(f"nvcc failed to compile for {arch} (exit {proc.returncode})",
                               (proc.stdout + proc.stderr).replace(src, "ninfer_ir.cu"))
        with open(out, "rb") as f:
            return f.read()


# --- public ----------------------------------------------------------------

def available_compilers() -> dict[str, str]:
    """The compilers usable here, in order of preference: name -> version."""
    found = {}
    for name, probe in (("nvrtc", _nvrtc), ("nvcc", _nvcc)):
        handle, version = probe()
        if handle is not None:
            found[name] = version
    return found


def _pick(compiler: str | None) -> str:
    if compiler not in (None, "nvrtc", "nvcc"):
        raise ValueError(f"unknown CUDA compiler {compiler!r}; expected 'nvrtc' or 'nvcc'")
    reasons = []
    for name, probe in (("nvrtc", _nvrtc), ("nvcc", _nvcc)):
        if compiler not in (None, name):
            continue
        handle, why = probe()
        if handle is not None:
            return name
        reasons.append(f"{name}: {why}")
    raise TargetUnavailable("no CUDA compiler is available: " + "; ".join(reasons))


@functools.lru_cache(maxsize=64)
def _compile(source: str, arch: str, opts: tuple[str, ...], want: str,
             compiler: str | None) -> bytes:
    name = _pick(compiler)
    if name == "nvrtc":
        return _nvrtc_compile(source, arch, opts, want)
    return _nvcc_compile(source, arch, opts, want)


def compile_to_ptx(source: str, arch: str = "sm_90", extra_opts=(), *,
                   compiler: str | None = None) -> str:
    """PTX text for ``source`` targeting ``arch`` (e.g. ``"sm_90"``, ``"sm_80"``).

    Uses NVRTC when importable, else ``nvcc -ptx``; ``compiler`` forces one.
    Raises :class:`TargetUnavailable` when neither can run and
    :class:`CompileError` (with the compiler's log) when the source is wrong.
    """
    _arch_number(arch)
    opts = _check_options(extra_opts)
    return _compile(source, arch, opts, "ptx", compiler).decode()


def compile_to_cubin(source: str, arch: str = "sm_90", extra_opts=(), *,
                     compiler: str | None = None) -> bytes:
    """A cubin (machine code, assembled by ptxas) for ``source``; same rules as PTX."""
    _arch_number(arch)
    opts = _check_options(extra_opts)
    return _compile(source, arch, opts, "cubin", compiler)
