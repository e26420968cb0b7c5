"""A registry of DSL kernels with input generators and independent numpy references.

    from tests.kernels import KERNELS, outputs, assert_same_bits

    case = KERNELS["q4k_gemv"]
    inputs = case.make_inputs(np.random.default_rng(0), **case.default_dims)
    returned = I.interpret(case.kernel, *inputs)
    for got, want in zip(outputs(case, inputs, returned), case.reference(*inputs)):
        assert_same_bits(got, want)

``KernelCase.make_inputs(rng, **dims)`` returns fresh arrays (numpy scalars for scalar
parameters) for every parameter in order; buffers are zeroed unless the kernel also
reads them. ``KernelCase.reference(*inputs)`` never writes its inputs
and returns the expected contents of every ``Buffer`` parameter (in parameter
order) followed by the kernel's returned values; ``outputs`` collects the same
from a run. Comparisons are bit for bit.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

import ninfer_ir as I
from ninfer_ir.numerics.quantized import quantize_q8k, quantized_dot_q4k_q8k
from ninfer_ir.frontend.dsl import Kernel
from ninfer_ir.types import BufferType

F32 = np.float32
Q8 = I.quant.q8_k
Q4 = I.quant.q4_k


@dataclass(frozen=True)
class KernelCase:
    kernel: Kernel
    make_inputs: object        # (rng, **dims) -> tuple of arrays / scalars
    reference: object          # (*inputs) -> tuple of expected outputs
    default_dims: dict = field(default_factory=dict)


def outputs(case: KernelCase, inputs, returned) -> tuple:
    """The buffers' contents after a run, then the returned values."""
    bufs = tuple(a for a, t in zip(inputs, case.kernel.func.arg_types)
                 if isinstance(t, BufferType))
    if returned is None:
        rets = ()
    elif isinstance(returned, tuple):
        rets = returned
    else:
        rets = (returned,)
    return bufs + tuple(rets)


def assert_same_bits(got, want) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert np.array_equal(np.ascontiguousarray(got).view(np.uint8),
                          np.ascontiguousarray(want).view(np.uint8)), (got, want)


# -- reference helpers --------------------------------------------------------------

def seq_sum(v) -> np.float32:
    """Strict left-to-right f32 sum; no initial accumulator; empty gives +0.0."""
    v = np.asarray(v, dtype=F32).reshape(-1)
    if v.size == 0:
        return F32(0.0)
    return np.add.accumulate(v, dtype=F32)[-1]


def seq_dot(a, b) -> np.float32:
    return seq_sum(np.multiply(a, b, dtype=F32))


def q4k_records(rng, *lead_g) -> np.ndarray:
    """Valid Q4_K records u8[..., G, 144]: finite f16 d and dmin, random fields."""
    w = rng.integers(0, 256, size=(*lead_g, 144), dtype=np.uint8)
    d = rng.uniform(-0.02, 0.02, size=lead_g).astype(np.float16)
    dmin = rng.uniform(0.0, 0.02, size=lead_g).astype(np.float16)
    w[..., 0:2] = d.astype("<f2").view(np.uint8).reshape(*lead_g, 2)
    w[..., 2:4] = dmin.astype("<f2").view(np.uint8).reshape(*lead_g, 2)
    return w


def normal(rng, *shape) -> np.ndarray:
    return rng.standard_normal(shape).astype(F32)


# -- quantized kernels -----------------------------------------------------------------

@I.kernel
def q4k_gemv(w: I.Tensor[I.u8, "N", "G", 144], x: I.Tensor[I.f32, "G", 256],
             y: I.Buffer[I.f32, "N"]):
    xq = I.quantize(x, format=I.quant.q8_k)
    for n in I.range(w.shape[0]):
        y[n] = I.quantized_dot(w[n], xq, lhs_format=I.quant.q4_k,
                               rhs_format=I.quant.q8_k, acc_dtype=I.f32)


def _gemv_inputs(rng, N, G):
    return q4k_records(rng, N, G), normal(rng, G, 256), np.zeros(N, F32)


def _gemv_ref(w, x, y):
    xq = quantize_q8k(x)
    return (np.array([quantized_dot_q4k_q8k(w[n], xq) for n in range(w.shape[0])],
                     dtype=F32).reshape(y.shape),)


@I.kernel
def q4k_gemm(w: I.Tensor[I.u8, "N", "G", 144], x: I.Tensor[I.f32, "M", "G", 256],
             y: I.Buffer[I.f32, "M", "N"]):
    for m in I.range(x.shape[0]):
        xq = I.quantize(x[m], format=Q8)
        for n in I.range(w.shape[0]):
            y[m, n] = I.quantized_dot(w[n], xq, lhs_format=Q4, rhs_format=Q8,
                                      acc_dtype=I.f32)


def _gemm_inputs(rng, M, N, G):
    return q4k_records(rng, N, G), normal(rng, M, G, 256), np.zeros((M, N), F32)


def _gemm_ref(w, x, y):
    out = np.zeros(y.shape, F32)
    for m in range(x.shape[0]):
        xq = quantize_q8k(x[m])
        for n in range(w.shape[0]):
            out[m, n] = quantized_dot_q4k_q8k(w[n], xq)
    return (out,)


@I.kernel
def q4k_gate_up(wg: I.Tensor[I.u8, "N", "G", 144], wu: I.Tensor[I.u8, "N", "G", 144],
                x: I.Tensor[I.f32, "G", 256], g: I.Buffer[I.f32, "N"], u: I.Buffer[I.f32, "N"]):
    """Two projections of one activation share one quantize."""
    xq = I.quantize(x, format=Q8)
    for n in I.range(wg.shape[0]):
        g[n] = I.quantized_dot(wg[n], xq, lhs_format=Q4, rhs_format=Q8, acc_dtype=I.f32)
        u[n] = I.quantized_dot(wu[n], xq, lhs_format=Q4, rhs_format=Q8, acc_dtype=I.f32)


def _gate_up_inputs(rng, N, G):
    return (q4k_records(rng, N, G), q4k_records(rng, N, G), normal(rng, G, 256),
            np.zeros(N, F32), np.zeros(N, F32))


def _gate_up_ref(wg, wu, x, g, u):
    xq = quantize_q8k(x)
    return (np.array([quantized_dot_q4k_q8k(r, xq) for r in wg], dtype=F32),
            np.array([quantized_dot_q4k_q8k(r, xq) for r in wu], dtype=F32))


@I.kernel
def quantize_records(x: I.Tensor[I.f32, "G", 256], r: I.Buffer[I.u8, "G", 292]):
    r[:] = I.quantize(x, format=Q8)


# -- decode and ordinary f32 contraction --------------------------------------------------

@I.kernel
def int4_gemv(w: I.Tensor[I.u8, "N", "H"], s: I.Tensor[I.f32, "N"], x: I.Tensor[I.f32, 2, "H"],
              y: I.Buffer[I.f32, "N"]):
    """Low nibbles hold elements [0, H), high nibbles [H, 2H); zero point 8."""
    for n in I.range(w.shape[0]):
        lo = I.cast(w[n] & 15, I.f32) - 8.0
        hi = I.cast(w[n] >> 4, I.f32) - 8.0
        y[n] = (I.dot(lo, x[0]) + I.dot(hi, x[1])) * s[n]


def _int4_inputs(rng, N, H):
    return (rng.integers(0, 256, (N, H), dtype=np.uint8), rng.uniform(0.01, 0.1, N).astype(F32),
            normal(rng, 2, H), np.zeros(N, F32))


def _int4_ref(w, s, x, y):
    out = np.zeros(y.shape, F32)
    for n in range(w.shape[0]):
        lo = (w[n] & 15).astype(F32) - F32(8)
        hi = (w[n] >> 4).astype(F32) - F32(8)
        out[n] = F32(seq_dot(lo, x[0]) + seq_dot(hi, x[1])) * s[n]
    return (out,)


@I.kernel
def int4_dot_scalar(p: I.Tensor[I.u8, "H"], x: I.Tensor[I.f32, "K"], scale: I.f32) -> I.f32:
    """Element 2i is the low nibble of p[i], 2i+1 the high one (signed, zero point 8)."""
    acc = -0.0
    for i in range(p.shape[0]):
        b = p[i]
        lo = I.cast(b & 15, I.i32) - 8
        hi = I.cast(b >> 4, I.i32) - 8
        acc += I.cast(lo, I.f32) * scale * x[2 * i]
        acc += I.cast(hi, I.f32) * scale * x[2 * i + 1]
    return acc


def _int4s_inputs(rng, H):
    return rng.integers(0, 256, H, dtype=np.uint8), normal(rng, 2 * H), F32(0.05)


def _int4s_ref(p, x, scale):
    acc = F32(-0.0)
    for i in range(p.shape[0]):
        lo = F32(int(p[i] & 15) - 8)
        hi = F32(int(p[i] >> 4) - 8)
        acc = F32(acc + F32(lo * scale) * x[2 * i])
        acc = F32(acc + F32(hi * scale) * x[2 * i + 1])
    return (acc,)


@I.kernel
def f32_gemv(w: I.Tensor[I.f32, "N", "K"], x: I.Tensor[I.f32, "K"], y: I.Buffer[I.f32, "N"]):
    for n in I.range(w.shape[0]):
        y[n] = I.dot(w[n], x)


def _f32_gemv_inputs(rng, N, K):
    return normal(rng, N, K), normal(rng, K), np.zeros(N, F32)


def _f32_gemv_ref(w, x, y):
    return (np.array([seq_dot(r, x) for r in w], dtype=F32),)


# -- control flow ---------------------------------------------------------------------------

@I.kernel
def leaky_relu(x: I.Tensor[I.f32, "N"], y: I.Buffer[I.f32, "N"], slope: I.f32):
    for i in I.range(x.shape[0]):
        v = x[i]
        if v > 0.0:
            r = v
        else:
            r = v * slope
        y[i] = r


def _leaky_inputs(rng, N):
    return normal(rng, N), np.zeros(N, F32), F32(0.125)


def _leaky_ref(x, y, slope):
    return (np.where(x > 0, x, x * slope).astype(F32),)


@I.kernel
def row_sum(x: I.Tensor[I.f32, "M", "K"], y: I.Buffer[I.f32, "M"]):
    for i in I.range(x.shape[0]):
        acc = 0.0
        for j in I.range(x.shape[1]):
            acc += x[i, j]
        y[i] = acc


def _row_sum_inputs(rng, M, K):
    return normal(rng, M, K), np.zeros(M, F32)


def _row_sum_ref(x, y):
    return (np.array([seq_sum(np.concatenate([[F32(0.0)], r])) for r in x], dtype=F32),)


@I.kernel
def count_positive(x: I.Tensor[I.f32, "N"]) -> I.i32:
    c: I.i32 = 0
    for i in I.range(x.shape[0]):
        if x[i] > 0.0:
            c += 1
    return c


def _count_inputs(rng, N):
    return (normal(rng, N),)


def _count_ref(x):
    return (np.int32(np.count_nonzero(x > 0)),)


@I.kernel
def clamp_i32(x: I.Tensor[I.i32, "N"], y: I.Buffer[I.i32, "N"], lo: I.i32, hi: I.i32):
    for i in I.range(x.shape[0]):
        v = I.minimum(I.maximum(x[i], lo), hi)
        y[i] = I.select(v == lo, 0, v) if lo < 0 else v


def _clamp_inputs(rng, N):
    return rng.integers(-100, 100, N, dtype=np.int32), np.zeros(N, np.int32), \
        np.int32(-20), np.int32(30)


def _clamp_ref(x, y, lo, hi):
    v = np.minimum(np.maximum(x, lo), hi)
    return (np.where((v == lo) & (lo < 0), 0, v).astype(np.int32),)


ALPHA = 0.75


@I.kernel
def prange_scale(x: I.Tensor[I.f32, "N"], y: I.Buffer[I.f32, "N"]):
    for i in I.prange(x.shape[0]):
        y[i] = x[i] * ALPHA + 1


def _scale_inputs(rng, N):
    return normal(rng, N), np.zeros(N, F32)


def _scale_ref(x, y):
    return ((x * F32(ALPHA) + F32(1)).astype(F32),)


def make_activation(relu: bool, cap: float):
    """A kernel specialised on closure constants: only the taken branch is compiled."""
    @I.kernel
    def activation(x: I.Tensor[I.f32, "N"], y: I.Buffer[I.f32, "N"]):
        for i in I.range(x.shape[0]):
            v = x[i]
            if relu:
                v = I.maximum(v, 0.0)
            else:
                v = I.abs(v)
            y[i] = I.minimum(v, cap)
    return activation


def _act_ref(x, y):
    return (np.minimum(np.maximum(x, F32(0)), F32(1.5)).astype(F32),)


# -- views, reductions, whole-tensor values -----------------------------------------------

@I.kernel
def tile_bias(x: I.Tensor[I.f32, "N"], b: I.Tensor[I.f32, 16], y: I.Buffer[I.f32, "N"]):
    for t in I.range(x.shape[0] // 16):
        base = t * 16
        y[base:base + 16] = x[base:base + 16] + b


def _tile_inputs(rng, T):
    return normal(rng, 16 * T), normal(rng, 16), np.zeros(16 * T, F32)


def _tile_ref(x, b, y):
    return ((x.reshape(-1, 16) + b).reshape(-1).astype(F32),)


@I.kernel
def window_accumulate(x: I.Tensor[I.f32, "N"], y: I.Buffer[I.f32, 8], off: I.index):
    y[0:4] += x[off:off + 4]
    y[4:8] = x[off + 4:off + 8] * 2.0


def _window_inputs(rng, N):
    return normal(rng, N), normal(rng, 8), np.int64(3)


def _window_ref(x, y, off):
    out = y.copy()
    out[0:4] = out[0:4] + x[off:off + 4]
    out[4:8] = x[off + 4:off + 8] * F32(2)
    return (out,)


@I.kernel
def column_sums(m: I.Tensor[I.f32, "R", "C"], y: I.Buffer[I.f32, "C"]):
    for j in I.range(m.shape[1]):
        y[j] = I.sum(m[:, j])


def _colsum_inputs(rng, R, C):
    return normal(rng, R, C), np.zeros(C, F32)


def _colsum_ref(m, y):
    return (np.array([seq_sum(m[:, j]) for j in range(m.shape[1])], dtype=F32),)


@I.kernel
def row_extremes(x: I.Tensor[I.f32, "M", "K"], hi: I.Buffer[I.f32, "M"], lo: I.Buffer[I.f32, "M"]):
    hi[:] = I.max(x)
    for i in I.range(x.shape[0]):
        lo[i] = I.min(x[i])


def _extremes_inputs(rng, M, K):
    return normal(rng, M, K), np.zeros(M, F32), np.zeros(M, F32)


def _extremes_ref(x, hi, lo):
    return x.max(axis=1).astype(F32), x.min(axis=1).astype(F32)


@I.kernel
def scaled_relu_2d(x: I.Tensor[I.f32, "M", "K"], y: I.Buffer[I.f32, "M", "K"], s: I.f32):
    y[:, :] = I.maximum(x * s, 0.0)


def _relu2d_inputs(rng, M, K):
    return normal(rng, M, K), np.zeros((M, K), F32), F32(1.25)


def _relu2d_ref(x, y, s):
    return (np.maximum(x * s, F32(0)).astype(F32),)


# -- integer and bit manipulation ----------------------------------------------------------

@I.kernel
def negate_bits(x: I.Tensor[I.f32, "N"], y: I.Buffer[I.f32, "N"], mag: I.Buffer[I.u32, "N"]):
    for i in I.range(x.shape[0]):
        bits = I.bitcast(x[i], I.u32)
        y[i] = I.bitcast(bits ^ 0x80000000, I.f32)
        mag[i] = bits & 0x7FFFFFFF


def _bits_inputs(rng, N):
    return normal(rng, N), np.zeros(N, F32), np.zeros(N, np.uint32)


def _bits_ref(x, y, mag):
    b = x.view(np.uint32)
    return (b ^ np.uint32(0x80000000)).view(F32), b & np.uint32(0x7FFFFFFF)


@I.kernel
def int_divmod(a: I.Tensor[I.i32, "N"], b: I.Tensor[I.i32, "N"], q: I.Buffer[I.i32, "N"],
               r: I.Buffer[I.i32, "N"], sh: I.Buffer[I.i32, "N"]):
    for i in I.range(a.shape[0]):
        q[i] = a[i] // b[i]
        r[i] = a[i] % b[i]
        sh[i] = (a[i] >> 3) ^ (a[i] << 2) | ~b[i]


def _divmod_inputs(rng, N):
    a = rng.integers(-1000, 1000, N, dtype=np.int32)
    b = rng.integers(-9, 10, N, dtype=np.int32)
    a[0], b[0] = np.iinfo(np.int32).min, -1
    b[1] = 0
    z = np.zeros(N, np.int32)
    return a, b, z, z.copy(), z.copy()


def _divmod_ref(a, b, q, r, sh):
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    safe = np.where(b64 == 0, 1, b64)
    quo = np.sign(a64) * np.sign(safe) * (np.abs(a64) // np.abs(safe))
    quo = np.where(b64 == 0, 0, quo)
    rem = np.where(b64 == 0, 0, a64 - quo * safe)
    shl = (a.astype(np.uint32) << np.uint32(2)).view(np.int32)
    return (quo.astype(np.int32), rem.astype(np.int32),
            ((a >> 3) ^ shl) | ~b)


@I.kernel
def guarded_gather(x: I.Tensor[I.f32, "N"], idx: I.Tensor[I.i32, "M"], y: I.Buffer[I.f32, "M"]):
    for j in I.range(idx.shape[0]):
        k = I.cast(idx[j], I.index)
        assert k < x.shape[0], "gather index out of range"
        y[j] = -x[k] if idx[j] % 2 == 1 else x[k]


def _gather_inputs(rng, N, M):
    return normal(rng, N), rng.integers(0, N, M, dtype=np.int32), np.zeros(M, F32)


def _gather_ref(x, idx, y):
    return (np.where(idx % 2 == 1, -x[idx], x[idx]).astype(F32),)


KERNELS: dict[str, KernelCase] = {
    "q4k_gemv": KernelCase(q4k_gemv, _gemv_inputs, _gemv_ref, {"N": 4, "G": 2}),
    "q4k_gemm": KernelCase(q4k_gemm, _gemm_inputs, _gemm_ref, {"M": 2, "N": 3, "G": 2}),
    "q4k_gate_up": KernelCase(q4k_gate_up, _gate_up_inputs, _gate_up_ref, {"N": 3, "G": 2}),
    "quantize_records": KernelCase(quantize_records, lambda rng, G: (normal(rng, G, 256),
                                   np.zeros((G, 292), np.uint8)),
                                   lambda x, r: (quantize_q8k(x),), {"G": 3}),
    "int4_gemv": KernelCase(int4_gemv, _int4_inputs, _int4_ref, {"N": 3, "H": 32}),
    "int4_dot_scalar": KernelCase(int4_dot_scalar, _int4s_inputs, _int4s_ref, {"H": 16}),
    "f32_gemv": KernelCase(f32_gemv, _f32_gemv_inputs, _f32_gemv_ref, {"N": 4, "K": 48}),
    "leaky_relu": KernelCase(leaky_relu, _leaky_inputs, _leaky_ref, {"N": 24}),
    "row_sum": KernelCase(row_sum, _row_sum_inputs, _row_sum_ref, {"M": 3, "K": 10}),
    "count_positive": KernelCase(count_positive, _count_inputs, _count_ref, {"N": 30}),
    "clamp_i32": KernelCase(clamp_i32, _clamp_inputs, _clamp_ref, {"N": 30}),
    "prange_scale": KernelCase(prange_scale, _scale_inputs, _scale_ref, {"N": 20}),
    "activation": KernelCase(make_activation(True, 1.5), _scale_inputs, _act_ref, {"N": 20}),
    "tile_bias": KernelCase(tile_bias, _tile_inputs, _tile_ref, {"T": 3}),
    "window_accumulate": KernelCase(window_accumulate, _window_inputs, _window_ref, {"N": 16}),
    "column_sums": KernelCase(column_sums, _colsum_inputs, _colsum_ref, {"R": 5, "C": 4}),
    "row_extremes": KernelCase(row_extremes, _extremes_inputs, _extremes_ref, {"M": 4, "K": 9}),
    "scaled_relu_2d": KernelCase(scaled_relu_2d, _relu2d_inputs, _relu2d_ref, {"M": 3, "K": 5}),
    "negate_bits": KernelCase(negate_bits, _bits_inputs, _bits_ref, {"N": 12}),
    "int_divmod": KernelCase(int_divmod, _divmod_inputs, _divmod_ref, {"N": 24}),
    "guarded_gather": KernelCase(guarded_gather, _gather_inputs, _gather_ref, {"N": 10, "M": 12}),
}
