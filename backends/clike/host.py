"""Host C: the C-like emitter's plain-C target, compiled by gcc and run through ctypes.

It emits the same launch units, helpers and control protocol as CUDA, with one
worker per unit, so the shared emitter is executed and compared bit for bit with
the interpreter on any machine. Compiled with ``gcc -O2 -ffp-contract=off
-fno-fast-math`` (SSE f32/f64: every operation rounds once, nothing is contracted).

    kernel = HostKernel(module)         # emits and compiles every function
    out = kernel(*args, func_name=None) # numpy arrays, like I.interpret
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile

import numpy as np

from ninfer_ir.errors import TargetUnavailable
from ninfer_ir.types import ScalarType, bf16, bool_, f16, f32, f64

from . import plan as P
from .emitter import CLikeEmitter
from .scalars import TYPEDEFS

__all__ = ["HostCEmitter", "HostKernel", "GCC_FLAGS", "compile_shared"]

GCC_FLAGS = ("-O2", "-ffp-contract=off", "-fno-fast-math", "-fno-math-errno", "-shared", "-fPIC", "-std=gnu11")


class HostCEmitter(CLikeEmitter):
    target = "c"
    KERNEL = ""
    PRIMS = {
        "fadd32": "$a + $b", "fsub32": "$a - $b", "fmul32": "$a * $b", "fdiv32": "$a / $b",
        "fadd64": "$a + $b", "fsub64": "$a - $b", "fmul64": "$a * $b", "fdiv64": "$a / $b",
        "fsqrt32": "__builtin_sqrtf($a)", "fsqrt64": "__builtin_sqrt($a)",
        "bits64": "nq_u64 u; memcpy(&u, &x, 8); return u;",
        "from_bits64": "double x; memcpy(&x, &u, 8); return x;",
        "f2d": "(double)($a)", "d2f": "(float)($a)", "i2f": "(float)$a", "i2d": "(double)$a",
        "load": "$T v; memcpy(&v, p, sizeof v); return v;",
        "store": "memcpy(p, &v, sizeof v);",
    }

    def library(self) -> str:
        from ninfer_ir.backends.clike import library
        parts = [library.PRELUDE]
        if self.quantized:
            parts += [library.RECORD_FUNCTIONS, library.GGUF_BLOCK_FUNCTIONS]
        parts += [TYPEDEFS, P.fail_helpers("static")]
        return "".join(parts)


# --- build ------------------------------------------------------------------------------

_BUILT: dict = {}


def compile_shared(source: str) -> ctypes.CDLL:
    """gcc ``source`` into a shared library (cached per process by content)."""
    key = hashlib.sha256(source.encode()).hexdigest()
    if key in _BUILT:
        return _BUILT[key]
    gcc = shutil.which("gcc") or shutil.which("cc")
    if gcc is None:
        raise TargetUnavailable("host C: no C compiler (gcc) on PATH")
    with tempfile.TemporaryDirectory(prefix="ninfer_hostc_") as tmp:
        src, lib = os.path.join(tmp, "k.c"), os.path.join(tmp, "k.so")
        with open(src, "w") as f:
            f.write(source)
        proc = subprocess.run([gcc, *GCC_FLAGS, "-o", lib, src], capture_output=True,
                              text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"gcc failed on the emitted host C:\n{proc.stderr[:4000]}")
        handle = ctypes.CDLL(lib)     # stays mapped after its file is removed
    _BUILT[key] = handle
    return handle


_CTYPES = {"f32": ctypes.c_float, "f64": ctypes.c_double, "f16": ctypes.c_uint16,
           "bf16": ctypes.c_uint16, "bool": ctypes.c_uint8, "i8": ctypes.c_int8,
           "i16": ctypes.c_int16, "i32": ctypes.c_int32, "i64": ctypes.c_int64,
           "u8": ctypes.c_uint8, "u16": ctypes.c_uint16, "u32": ctypes.c_uint32,
           "u64": ctypes.c_uint64, "index": ctypes.c_int64}


def _scalar_arg(t: ScalarType, value):
    arr = np.asarray(value, dtype=t.np_dtype)
    if t is f16 or t is bf16:
        return ctypes.c_uint16(int(arr.view(np.uint16)))
    if t is f32:
        return ctypes.c_float(float(arr))
    if t is f64:
        return ctypes.c_double(float(arr))
    if t is bool_:
        return ctypes.c_uint8(int(bool(arr)))
    return _CTYPES[t.name](int(arr))


class HostKernel:
    """Every function of a loop-level module, compiled as host C."""

    def __init__(self, module):
        self.emitted = HostCEmitter().emit_module(module)
        self.lib = compile_shared(self.emitted.source)
        self.module = module

    def __call__(self, *args, func_name=None, **kwargs):
        func = P.choose(self.module, func_name)
        plan = self.emitted.plans[func.sym_name]
        values, symbols, outputs = P.bind_call(
            func, args, kwargs, lambda a: isinstance(a, np.ndarray),
            lambda a: a.flags.writeable)
        P.snapshot_tensors(func, values, np.may_share_memory, np.copy)
        for k in outputs:
            values[k] = np.zeros(P.out_shape(func, k, symbols), func.args[k].type.dtype.np_dtype)
        shapes = {k: v.shape for k, v in enumerate(values) if isinstance(v, np.ndarray)
                  and not isinstance(func.args[k].type, ScalarType)}
        nbytes, ctl = P.layout(plan, shapes, P.index_scalars(func, values),
                               [1] * len(plan.units))
        arena = np.zeros(nbytes + P.ALIGN, dtype=np.uint8)
        start = (-arena.ctypes.data) % P.ALIGN
        arena_ptr = ctypes.c_void_p(arena.ctypes.data + start)
        cargs = []
        for p, v in zip(func.args, values):
            if isinstance(p.type, ScalarType):
                cargs.append(_scalar_arg(p.type, v))
                continue
            cargs.append(ctypes.c_void_p(v.ctypes.data))
            cargs += [ctypes.c_int64(n) for n in v.shape]
            cargs += [ctypes.c_int64(s) for s in v.strides]
        cargs += [arena_ptr, ctl.ctypes.data_as(ctypes.c_void_p)]
        for unit in plan.launches:
            getattr(self.lib, unit.name)(*cargs)
        err = P.error_for(plan, ctl)
        if err is not None:
            raise err
        if outputs:
            out = [values[k] for k in outputs]
            return out[0] if len(out) == 1 else tuple(out)
        return None

    @property
    def source(self) -> str:
        return self.emitted.source
