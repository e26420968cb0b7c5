"""Run CUDA C emitted from loop-level IR (``backends.cuda.emitter``) through CuPy.

    kernel = compile_module(lowered_module, report)   # TargetUnavailable without a GPU
    out = kernel(*args, func_name=None, **named)      # like I.interpret

A call checks the arguments the way the interpreter does (same ``VerifyError``
messages; cupy or numpy arrays, numpy scalars or Python numbers; any other object
exporting ``__dlpack__`` from CUDA memory or ``__cuda_array_interface__`` is viewed as
a cupy array over the same memory, one exporting host memory (DLPack or the array
interface) as a numpy array), then that element
pointers and strides are multiples of the element size (device loads are typed):
a misaligned cupy *tensor* is staged into a contiguous copy, a misaligned cupy
*buffer* is refused. Only then is the device touched. numpy arrays are copied to
the device; numpy buffers are copied back after a successful call (on an error they
are left unchanged; two numpy buffers may not overlap). A tensor argument is the
value it held at the call: a cupy tensor that may share memory with a buffer argument
is copied first (docs/ir.md, "Arguments"). Omitted
trailing output buffers (``returns``) are allocated and returned, as numpy when
every array argument was numpy, as cupy otherwise.

Launches follow ``FuncPlan.launches`` in order on the current stream, with no host
synchronisation between them; each unit returns at once if an earlier one failed.
Grids: one warp for a ``seq`` unit; for ``par``/``quant`` units one thread or one
warp per iteration up to a cap (a worker-stride loop covers the rest). The arena
and the control block are allocated per call (CuPy's pool), the arena zero-filled.
The control block is read once at the end; a failure becomes the interpreter's
exception (``DomainError`` with the same message, record and reason).

The source is compiled with NVRTC with ``nvrtc.EXACT_OPTIONS`` for the device's
architecture, its PTX checked for inexact instructions, and the cubin loaded
(CuPy's ``RawModule`` would add ``-ftz=true``).
"""
from __future__ import annotations

import numpy as np

from ninfer_ir.errors import VerifyError
from ninfer_ir.types import ScalarType, bf16, bool_, f16

from ninfer_ir.backends.clike import plan as P
from ninfer_ir.backends.signature import host_array

from .emitter import BLOCK_THREADS, CudaEmitter

__all__ = ["compile_module", "CudaKernel", "MAX_THREADS", "MAX_WARPS", "MAX_ARENA_BYTES"]

MAX_THREADS = 1 << 16           # workers of a thread-mapped unit when the trip count is larger
MAX_WARPS = 1 << 14
MAX_ARENA_BYTES = 1 << 30       # per-worker scratch is capped by shrinking the grid


def compile_module(lowered_module, report=None) -> "CudaKernel":
    """A callable running ``lowered_module`` on the GPU (compiled and loaded now)."""
    kernel = CudaKernel(lowered_module, report)
    kernel.load()
    return kernel


def _is_cupy(a) -> bool:
    return type(a).__module__.split(".")[0] == "cupy"


def _is_array(a) -> bool:
    return isinstance(a, np.ndarray) or (_is_cupy(a) and hasattr(a, "shape"))


_DL_CUDA_DEVICES = (2, 13)      # DLPack's kDLCUDA and kDLCUDAManaged


def _device_or_host_array(value):
    """A cupy view of a CUDA-memory export, else ``host_array(value)``: no copy."""
    if _is_cupy(value) or isinstance(value, np.ndarray):
        return value
    on_device = hasattr(value, "__cuda_array_interface__") or (
        hasattr(value, "__dlpack__") and hasattr(value, "__dlpack_device__")
        and int(value.__dlpack_device__()[0]) in _DL_CUDA_DEVICES)
    if not on_device:
        return host_array(value)
    from . import runtime
    cupy = runtime._require_gpu()
    if hasattr(value, "__cuda_array_interface__"):
        return cupy.asarray(value)
    return cupy.from_dlpack(value)


def _writable(a) -> bool:
    return _is_cupy(a) or a.flags.writeable


def _aligned(a) -> bool:
    size = a.dtype.itemsize
    ptr = a.data.ptr if _is_cupy(a) else a.ctypes.data
    return ptr % size == 0 and all(s % size == 0 for s in a.strides)


def _scalar(t: ScalarType, v):
    arr = np.asarray(v, dtype=t.np_dtype)
    if t is f16 or t is bf16:
        return np.uint16(arr.view(np.uint16))
    if t is bool_:
        return np.uint8(bool(arr))
    return arr.reshape(()).astype(t.np_dtype)[()]


class CudaKernel:
    """Every function of a loop-level module as CUDA; emission happens here (no GPU
    needed), compilation and loading in ``load()`` (first call)."""

    def __init__(self, module, report=None):
        self.module, self.report = module, report
        self.emitted = CudaEmitter().emit_module(module)
        self._loaded = {}

    @property
    def source(self) -> str:
        return self.emitted.source

    def load(self):
        from . import runtime
        cupy = runtime._require_gpu()         # TargetUnavailable before any device call
        dev = cupy.cuda.Device()
        hit = self._loaded.get(dev.id)
        if hit is None:
            from .nvrtc import check_exact_ptx
            cc = int(dev.compute_capability)
            arch = runtime._target_arch(cc)
            ptx, cubin = runtime._cupy_nvrtc_compile(self.source, arch)
            check_exact_ptx(ptx)
            mod = cupy.cuda.function.Module()
            mod.load(cubin if arch == cc else ptx.encode() + b"\0")
            fns = {u.name: mod.get_function(u.name)
                   for plan in self.emitted.plans.values() for u in plan.launches}
            hit = self._loaded[dev.id] = (mod, fns)
        return cupy, hit[1]

    def __call__(self, *args, func_name=None, **kwargs):
        func = P.choose(self.module, func_name)
        plan = self.emitted.plans[func.sym_name]
        values, symbols, outputs = P.bind_call(func, args, kwargs, _is_array, _writable,
                                               _device_or_host_array)
        self._check_memory(func, values)
        cupy, fns = self.load()
        return self._run(cupy, fns, func, plan, values, symbols, outputs)

    def _check_memory(self, func, values):
        host = [(k, v) for k, v in enumerate(values) if isinstance(v, np.ndarray)]
        for k, v in enumerate(values):
            if v is None or isinstance(func.args[k].type, ScalarType) or _aligned(v):
                continue
            if _is_cupy(v) and func.args[k].type.writable:
                raise VerifyError(f"@{func.sym_name}: argument {k} is a cupy buffer whose "
                                  f"pointer or strides are not multiples of its element size")
        # a numpy tensor overlapping a numpy buffer is fine: each gets its own device
        # copy, so the tensor is the snapshot the IR's semantics ask for
        for i, (k, a) in enumerate(host):
            for j, b in host[i + 1:]:
                if (func.args[k].type.writable and func.args[j].type.writable) \
                        and np.shares_memory(a, b):
                    raise VerifyError(f"@{func.sym_name}: numpy arguments {k} and {j} overlap "
                                      f"and both are written; pass cupy arrays to alias them")

    def _device(self, cupy, func, values, outputs, symbols):
        dev = list(values)
        for k, v in enumerate(values):
            t = func.args[k].type
            if k in outputs:
                dev[k] = cupy.zeros(P.out_shape(func, k, symbols), dtype=t.dtype.np_dtype)
            elif isinstance(t, ScalarType):
                dev[k] = _scalar(t, v)
            elif isinstance(v, np.ndarray):
                host = np.ascontiguousarray(v)
                dev[k] = cupy.asarray(host if host.dtype.isnative
                                      else host.astype(host.dtype.newbyteorder("=")))
            elif not _aligned(v):
                dev[k] = cupy.ascontiguousarray(v)
        P.snapshot_tensors(func, dev, cupy.may_share_memory, cupy.copy)
        return dev

    def _workers(self, plan, shapes, scalars):
        """``[(grid, block, workers)]`` per unit."""
        out = []
        for u in plan.units:
            if u.kind == "seq":
                out.append((1, 32, 1))
                continue
            cap = MAX_WARPS if u.mapping == "warp" else MAX_THREADS
            n = P.evaluate(u.trip, shapes, scalars) if u.trip is not None else cap
            per_block = BLOCK_THREADS // 32 if u.mapping == "warp" else BLOCK_THREADS
            grid = max(1, -(-min(max(n, 1), cap) // per_block))
            out.append((grid, BLOCK_THREADS, grid * per_block))
        return out

    def _run(self, cupy, fns, func, plan, values, symbols, outputs):
        dev = self._device(cupy, func, values, outputs, symbols)
        shapes = {k: tuple(v.shape) for k, v in enumerate(dev)
                  if not isinstance(func.args[k].type, ScalarType)}
        scalars = P.index_scalars(func, [v if isinstance(func.args[k].type, ScalarType) else None
                                         for k, v in enumerate(dev)])
        grids = self._workers(plan, shapes, scalars)
        nbytes, ctl = P.layout(plan, shapes, scalars, [g[2] for g in grids])
        if nbytes > MAX_ARENA_BYTES:
            grids = [(max(1, g // 8), b, max(1, g // 8) * (w // g)) for g, b, w in grids]
            nbytes, ctl = P.layout(plan, shapes, scalars, [g[2] for g in grids])
        arena = cupy.zeros(nbytes + P.ALIGN, dtype=cupy.uint8)
        arena_ptr = arena.data.ptr + (-arena.data.ptr) % P.ALIGN
        ctl_dev = cupy.asarray(ctl)
        cargs = []
        for p, v in zip(func.args, dev):
            if isinstance(p.type, ScalarType):
                cargs.append(v)
                continue
            cargs.append(np.uint64(v.data.ptr))
            cargs += [np.int64(n) for n in v.shape] + [np.int64(s) for s in v.strides]
        cargs += [np.uint64(arena_ptr), np.uint64(ctl_dev.data.ptr)]
        for k, u in enumerate(plan.units):
            if not u.free:
                grid, block, _ = grids[k]
                fns[u.name]((grid,), (block,), tuple(cargs))
        err = P.error_for(plan, ctl_dev.get())
        if err is not None:
            raise err
        for k, v in enumerate(values):
            if isinstance(v, np.ndarray) and func.args[k].type.writable:
                np.copyto(v, dev[k].get())
        if not outputs:
            return None
        as_numpy = not any(_is_cupy(v) for v in values if v is not None)
        out = [dev[k].get() if as_numpy else dev[k] for k in outputs]
        return out[0] if len(out) == 1 else tuple(out)
