"""Run the quantized-op kernels of :mod:`backends.cuda.qkernels` through CuPy.

``quantize_q8k(values)`` and ``gemv_q4k(w, x)`` take numpy or cupy arrays.
Shapes and dtypes are checked at the call boundary, before anything touches a
device, with the same ``VerifyError`` the interpreter raises; a missing GPU
then raises ``TargetUnavailable``. numpy inputs are copied to the device; the
result is numpy when every input was numpy, cupy otherwise. Inputs are only
read. Views that a kernel cannot address directly (bytes of a record not
contiguous, f32 elements not contiguous or not 4-byte aligned) are staged
into a contiguous device copy; every other stride and alignment is handled by
the kernels themselves. Domain errors of the quantizer come back through a
status word and are raised as the interpreter's ``DomainError``.
"""
from __future__ import annotations

import functools

import numpy as np

from ninfer_ir.errors import TargetUnavailable, VerifyError
from ninfer_ir.quant import q4_k, q8_k

from . import qkernels
from .nvrtc import EXACT_OPTIONS, CompileError, check_exact_ptx

__all__ = ["OPTIONS", "MIN_COMPUTE_CAPABILITY", "gpu_available", "quantize_q8k", "gemv_q4k",
           "GemvQ4K", "module"]

OPTIONS = EXACT_OPTIONS
MIN_COMPUTE_CAPABILITY = 61        # __dp4a
_STATUS_CLEAR = np.uint64(2**64 - 1)
_BLOCK = q8_k.block_elems


# --- availability --------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def _probe() -> tuple[bool, str]:
    try:
        import cupy
    except Exception as exc:    # ImportError, or a broken CUDA install
        return False, f"cupy is not importable ({exc})"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        return False, f"no usable CUDA device ({exc})"
    if count < 1:
        return False, "no CUDA device"
    try:
        dev = cupy.cuda.Device()
        cc = int(dev.compute_capability)
        name = cupy.cuda.runtime.getDeviceProperties(dev.id)["name"]
        name = name.decode() if isinstance(name, bytes) else str(name)
    except Exception as exc:
        return False, f"the CUDA device cannot be queried ({exc})"
    if cc < MIN_COMPUTE_CAPABILITY:
        return False, (f"{name} has compute capability {cc // 10}.{cc % 10}; "
                       f"the kernels need {MIN_COMPUTE_CAPABILITY // 10}."
                       f"{MIN_COMPUTE_CAPABILITY % 10} or newer")
    return True, f"{name} (compute capability {cc // 10}.{cc % 10})"


def gpu_available() -> tuple[bool, str]:
    """``(True, device description)`` or ``(False, why not)``."""
    return _probe()


def _require_gpu():
    ok, why = _probe()
    if not ok:
        raise TargetUnavailable(f"cuda: {why}")
    import cupy
    return cupy


def _cupy_nvrtc_compile(source: str, arch: int) -> tuple[str, bytes]:
    """PTX and cubin of ``source`` for ``sm_<arch>`` by CuPy's own NVRTC.

    ``cupy.RawModule(code=...)`` appends ``-ftz=true`` to every compile, which
    would flush subnormals; so the kernels are compiled here with exactly
    :data:`OPTIONS` and the binary is loaded as it is.
    """
    from cupy_backends.cuda.libs import nvrtc as cupy_nvrtc

    def run(target: str, want: str):
        prog = cupy_nvrtc.createProgram(source, "ninfer_ir.cu", (), ())
        try:
            try:
                cupy_nvrtc.compileProgram(prog, (f"--gpu-architecture={target}", *OPTIONS))
            except cupy_nvrtc.NVRTCError as exc:
                raise CompileError(f"NVRTC failed to compile for {target} ({exc})",
                                   cupy_nvrtc.getProgramLog(prog)) from None
            cubin = cupy_nvrtc.getCUBIN(prog) if want == "cubin" else b""
            try:
                ptx = cupy_nvrtc.getPTX(prog)
            except cupy_nvrtc.NVRTCError:   # an NVRTC that keeps no PTX for sm_ targets
                ptx = None
            return ptx, cubin
        finally:
            cupy_nvrtc.destroyProgram(prog)

    ptx, cubin = run(f"sm_{arch}", "cubin")
    if not ptx:
        ptx, _ = run(f"compute_{arch}", "ptx")
    ptx = ptx.decode() if isinstance(ptx, bytes) else ptx
    return ptx.rstrip("\0"), cubin


def _target_arch(cc: int) -> int:
    """The newest architecture CuPy's NVRTC knows that the device can run."""
    try:
        from cupy_backends.cuda.libs import nvrtc as cupy_nvrtc
        known = sorted(int(a) for a in cupy_nvrtc.getSupportedArchs())
    except Exception:           # an NVRTC too old to list them
        return cc
    usable = [a for a in known if a <= cc]
    if cc in known or not usable:
        return cc
    return usable[-1]


class _Kernels:
    """The loaded module of :func:`qkernels.kernel_source` on one device."""

    def __init__(self, cupy, cc: int):
        self.arch = _target_arch(cc)
        self.ptx, cubin = _cupy_nvrtc_compile(qkernels.kernel_source(), self.arch)
        check_exact_ptx(self.ptx)
        self.module = cupy.cuda.function.Module()
        if self.arch == cc:
            self.module.load(cubin)
        else:                   # an older target: let the driver finish the PTX
            self.module.load(self.ptx.encode() + b"\0")
        self.quantize = self.module.get_function("q8k_quantize")
        self.gemv = self.module.get_function("q4k_gemv")


@functools.lru_cache(maxsize=None)
def _kernels_for(device_id: int) -> _Kernels:
    import cupy
    with cupy.cuda.Device(device_id) as dev:
        return _Kernels(cupy, int(dev.compute_capability))


def module():
    """The loaded kernels on the current device (``.quantize``, ``.gemv``, ``.ptx``)."""
    cupy = _require_gpu()
    return _kernels_for(cupy.cuda.Device().id)


# --- argument checks ---------------------------------------------------------

def _is_cupy(arr) -> bool:
    return type(arr).__module__.split(".")[0] == "cupy"


def _describe(arr) -> str:
    shape = getattr(arr, "shape", None)
    dtype = getattr(arr, "dtype", None)
    if shape is None or dtype is None:
        return type(arr).__name__
    return f"{dtype}[{','.join(str(n) for n in shape)}]"


def _check(op: str, name: str, arr, kind: str, itemsize: int, shape_ok, expected: str):
    dtype = getattr(arr, "dtype", None)
    if not (isinstance(arr, np.ndarray) or _is_cupy(arr)) or dtype is None \
            or dtype.kind != kind or dtype.itemsize != itemsize or not shape_ok(arr.shape):
        raise VerifyError(f"{op}: {name} must be {expected}, got {_describe(arr)}")


def _check_values(op: str, values):
    _check(op, "values", values, "f", 4,
           lambda s: len(s) == 2 and s[1] == _BLOCK, f"f32[G,{_BLOCK}]")


def _check_weights(op: str, w):
    _check(op, "w", w, "u", 1,
           lambda s: len(s) == 3 and s[2] == q4_k.record_bytes,
           f"u8[N,G,{q4_k.record_bytes}] ({q4_k.name} records)")


# --- device views ------------------------------------------------------------

def _to_device(cupy, arr):
    """A device array with the values of ``arr`` (native byte order); cupy stays as is."""
    if _is_cupy(arr):
        return arr
    host = np.ascontiguousarray(arr)
    if not host.dtype.isnative:
        host = host.astype(host.dtype.newbyteorder("="))
    return cupy.asarray(host)


def _f32_rows(cupy, values):
    """``values`` as f32 rows the quantizer can address: unit element stride, 4-byte rows."""
    dev = _to_device(cupy, values)
    if dev.dtype != np.float32:
        dev = dev.astype(np.float32)
    if dev.shape[0] and (dev.strides[1] != 4 or dev.strides[0] % 4 or dev.data.ptr % 4):
        dev = cupy.ascontiguousarray(dev)
    return dev


def _q4k_rows(cupy, w):
    """``w`` with contiguous bytes inside each record (any row/record stride)."""
    dev = _to_device(cupy, w)
    if dev.size and dev.strides[2] != 1:
        dev = cupy.ascontiguousarray(dev)
    return dev


def _result(arr, inputs):
    return arr if any(_is_cupy(a) for a in inputs) else arr.get()


# --- launches ----------------------------------------------------------------

def _grid(count: int, per_block: int) -> int:
    return max(1, -(-count // per_block))


def _launch_quantize(cupy, values_dev, out_dev, status_dev):
    g = values_dev.shape[0]
    if g == 0:
        return
    warps = qkernels.QUANTIZE_WARPS_PER_BLOCK
    kernel = _kernels_for(cupy.cuda.Device().id).quantize
    kernel((_grid(g, warps),), (32 * warps,),
           (values_dev, np.int64(values_dev.strides[0] // 4), np.int64(g),
            out_dev, np.int64(out_dev.strides[0]), status_dev))


def _launch_gemv(cupy, w_dev, xq_dev, y_dev):
    n, g = w_dev.shape[0], w_dev.shape[1]
    if n == 0:
        return
    warps = qkernels.GEMV_WARPS_PER_BLOCK
    kernel = _kernels_for(cupy.cuda.Device().id).gemv
    kernel((_grid(n, warps),), (32 * warps,),
           (w_dev, np.int64(w_dev.strides[0]), np.int64(w_dev.strides[1]),
            xq_dev, np.int64(xq_dev.strides[0]), np.int64(g), np.int64(n), y_dev))


def _raise_status(status_dev):
    word = np.uint64(status_dev.get()[0])
    if word != _STATUS_CLEAR:
        from ninfer_ir.numerics.quantized import domain_error
        raise domain_error(int(word // np.uint64(8)), int(word % np.uint64(8)))


def quantize_q8k(values):
    """Q8_K records u8 ``[G,292]`` of f32 ``[G,256]`` ``values`` (spec §4), on the GPU.

    Raises ``DomainError`` naming the lowest failing block, like the interpreter.
    """
    _check_values("quantize", values)
    cupy = _require_gpu()
    src = _f32_rows(cupy, values)
    out = cupy.zeros((src.shape[0], q8_k.record_bytes), dtype=cupy.uint8)
    status = cupy.full(1, _STATUS_CLEAR, dtype=cupy.uint64)
    _launch_quantize(cupy, src, out, status)
    _raise_status(status)
    return _result(out, (values,))


class GemvQ4K:
    """``y = W x`` for fixed Q4_K weights ``w`` u8 ``[N,G,144]``, without host syncs.

    ``launch(x)`` quantizes ``x`` (a device f32 ``[G,256]`` with unit element
    stride and 4-byte aligned rows) into an owned Q8_K buffer and runs
    ``q4k_gemv``, both on the current stream; ``check()`` synchronises and
    raises the lowest failing block's ``DomainError`` since the last check, if
    any; ``y`` holds the result. ``sum_order`` is the cross-record order the kernel uses.
    """

    def __init__(self, w):
        _check_weights("q4k_gemv", w)
        self._cupy = cupy = _require_gpu()
        self.w = _q4k_rows(cupy, w)
        n, g = self.w.shape[0], self.w.shape[1]
        self.sum_order = qkernels.gemv_sum_order(g)
        self.xq = cupy.zeros((g, q8_k.record_bytes), dtype=cupy.uint8)
        self.y = cupy.zeros(n, dtype=cupy.float32)
        self.status = cupy.full(1, _STATUS_CLEAR, dtype=cupy.uint64)
        _kernels_for(cupy.cuda.Device().id)

    def launch(self, x):
        cupy = self._cupy
        _launch_quantize(cupy, x, self.xq, self.status)
        _launch_gemv(cupy, self.w, self.xq, self.y)

    def check(self):
        try:
            _raise_status(self.status)
        except Exception:
            self.status.fill(_STATUS_CLEAR)     # the next launch starts clean
            raise


def gemv_q4k(w, x):
    """``y[n] = quantized_dot(w[n], quantize(x))`` for every row n, on the GPU.

    ``w``: u8 ``[N,G,144]`` Q4_K records; ``x``: f32 ``[G,256]``; returns f32
    ``[N]``. The cross-record sum of every row uses
    ``qkernels.gemv_sum_order(G)``.
    """
    _check_weights("q4k_gemv", w)
    _check_values("q4k_gemv", x)
    if w.shape[1] != x.shape[0]:
        raise VerifyError(f"q4k_gemv: w and x must hold the same number of records G, "
                          f"got {w.shape[1]} and {x.shape[0]}")
    cupy = _require_gpu()
    plan = GemvQ4K(w)
    src = _f32_rows(cupy, x)
    _launch_quantize(cupy, src, plan.xq, plan.status)
    plan.check()                       # no dot on a failed quantization
    _launch_gemv(cupy, plan.w, plan.xq, plan.y)
    return _result(plan.y, (w, x))
