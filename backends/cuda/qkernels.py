"""CUDA C for the two quantized ops (spec/quantized-ops.md), as source text.

The source is layered so that the C-like emitter can include just what it needs:

* :data:`PRELUDE` -- fixed-width types and the handful of exactly-rounded
  primitives (``nq_fmul``, ``nq_i2f``, ...). Under ``__CUDACC__`` they are CUDA
  intrinsics; otherwise they are plain C, so the per-record functions also
  compile with a host C compiler (``-ffp-contract=off``) for emulation.
* :data:`RECORD_FUNCTIONS` -- host-or-device functions for one record: the
  Q4_K field decoding, ``v_b`` of one Q4_K x Q8_K record pair (a scalar path
  and the 8-lane split used on the GPU), a one-thread sequential dot (order
  ``seq``), and the Q8_K block quantizer.
* :data:`WARP_FUNCTIONS` -- device-only, warp-cooperative: a row dot over G
  record pairs and the quantizer of one 256-value block.
* :data:`KERNELS` -- the ``extern "C"`` entry points ``q8k_quantize`` and
  ``q4k_gemv``.

Row-dot schedule (one warp per row): the warp is four groups of eight lanes.
Group ``g`` takes the contiguous records ``[g*C, min(G, (g+1)*C))`` with
``C = ceil(G/4)`` and sums their ``v_b`` sequentially; each record is split
over the eight lanes, whose integer partials of ``S_b`` and ``T_b`` are exact
and may be combined in any order. The four group sums (``-0.0`` for an empty
group) are added by an adjacent-pair tree (``__shfl_down_sync`` by 8, then 16
lanes). That is the order ``chunk<C>/tree``; :func:`gemv_sum_order` names it.
G = 0 gives ``+0.0`` and reads nothing.

Quantize schedule: one warp per block of 256 values, lane ``l`` holding values
``[8l, 8l+8)``. Max/min are reduced across lanes (exact, order-free); each
``bsum[j]`` adds the integer sums of lanes ``2j`` and ``2j+1``. A failing
block reports ``g*8 + reason`` through ``atomicMin`` on a 64-bit status word
(initialised to all ones), so the lowest failing block wins; reasons are
1 non-finite input, 2 inverse not finite, 3 ds not finite, 4 scaled value not
finite. A failing block's record is not written.

Alignment is never assumed: kernels test the actual pointers and strides and
take 16-byte (Q4_K) / 4-byte (Q8_K, f32) loads only where they hold, byte
loads otherwise.
"""
from __future__ import annotations

from ninfer_ir.backends.clike.library import PRELUDE, RECORD_FUNCTIONS, host_source

__all__ = ["PRELUDE", "RECORD_FUNCTIONS", "WARP_FUNCTIONS", "KERNELS", "GROUPS",
           "LANES_PER_RECORD", "QUANTIZE_WARPS_PER_BLOCK", "GEMV_WARPS_PER_BLOCK",
           "device_source", "host_source", "kernel_source", "gemv_sum_order",
           "gemv_chunk"]

GROUPS = 4                     # lane groups per warp in the row dot
LANES_PER_RECORD = 8           # lanes sharing one record pair
QUANTIZE_WARPS_PER_BLOCK = 8   # Q8_K blocks per thread block in q8k_quantize
GEMV_WARPS_PER_BLOCK = 4       # rows per thread block in q4k_gemv

WARP_FUNCTIONS = r"""
#if defined(__CUDACC__)
/* ---- warp-cooperative (device only; every lane of the warp must call) ---- */

/* sum_b v_b over G record pairs: w[b*w_rec_stride], xq[b*x_rec_stride] (bytes).
   Order chunk<ceil(G/4)>/tree: see the module notes. Result in every lane. */
NQ_FN float nq_q4k_q8k_row_dot_warp(const nq_u8* w, nq_i64 w_rec_stride,
                                    const nq_u8* xq, nq_i64 x_rec_stride, nq_i64 g_count) {
    if (g_count <= 0) return 0.0f;
    const int lane = (int)(threadIdx.x & 31u), group = lane >> 3, j = lane & 7;
    const int a_al16 = ((((nq_u64)w) | (nq_u64)w_rec_stride) & 15u) == 0;
    const int b_al4 = ((((nq_u64)xq) | (nq_u64)x_rec_stride) & 3u) == 0;
    const nq_i64 chunk = (g_count + 3) / 4, first = group * chunk;
    float acc = -0.0f;
    for (nq_i64 it = 0; it < chunk; ++it) {
        const nq_i64 rec = first + it;
        const int active = rec < g_count;
        nq_i32 s = 0, t = 0;
        if (active) {
            const nq_u8* a = w + rec * w_rec_stride;
            if (a_al16) nq_q4k_q8k_lane(a, xq + rec * x_rec_stride, j, 1, b_al4, &s, &t);
            else nq_q4k_q8k_lane(a, xq + rec * x_rec_stride, j, 0, b_al4, &s, &t);
        }
        for (int off = 4; off > 0; off >>= 1) {   /* integers: any order is exact */
            s += __shfl_xor_sync(NQ_FULL_MASK, s, off);
            t += __shfl_xor_sync(NQ_FULL_MASK, t, off);
        }
        if (active) {
            const nq_u8* a = w + rec * w_rec_stride;
            const nq_u8* b = xq + rec * x_rec_stride;
            nq_u32 d_dmin = nq_ld_u32(a, a_al16);
            float ds = nq_from_bits(nq_ld_u32(b, b_al4));
            acc = nq_fadd(acc, nq_q4k_record_value(d_dmin, ds, s, t));
        }
    }
    /* adjacent-pair tree over the four group sums (lanes 0, 8, 16, 24) */
    acc = nq_fadd(acc, __shfl_down_sync(NQ_FULL_MASK, acc, 8));
    acc = nq_fadd(acc, __shfl_down_sync(NQ_FULL_MASK, acc, 16));
    return __shfl_sync(NQ_FULL_MASK, acc, 0);
}

/* Quantize one block v[256] into out[292]; lane l holds v[8l, 8l+8).
   v_al16: v is 16-byte aligned; out_al4: out is 4-byte aligned.
   Returns 0 or the reason code (the same in every lane); on failure nothing
   is written. */
NQ_FN int nq_q8k_quantize_warp(const float* v, int v_al16, nq_u8* out, int out_al4) {
    const int lane = (int)(threadIdx.x & 31u);
    float x[8];
    if (v_al16) {
        float4 p = ((const float4*)v)[2 * lane], r = ((const float4*)v)[2 * lane + 1];
        x[0] = p.x; x[1] = p.y; x[2] = p.z; x[3] = p.w;
        x[4] = r.x; x[5] = r.y; x[6] = r.z; x[7] = r.w;
    } else {
        for (int i = 0; i < 8; ++i) x[i] = v[8 * lane + i];
    }
    int bad = 0;
    float mx = x[0], mn = x[0];
    for (int i = 0; i < 8; ++i) {
        bad |= !nq_isfinite(x[i]);
        mx = x[i] > mx ? x[i] : mx;
        mn = x[i] < mn ? x[i] : mn;
    }
    if (__any_sync(NQ_FULL_MASK, bad)) return 1;
    for (int off = 16; off > 0; off >>= 1) {      /* max/min: exact in any order */
        float omx = __shfl_xor_sync(NQ_FULL_MASK, mx, off);
        float omn = __shfl_xor_sync(NQ_FULL_MASK, mn, off);
        mx = omx > mx ? omx : mx;
        mn = omn < mn ? omn : mn;
    }
    float extreme = nq_q8k_extreme(mx, mn), inverse = 0.0f, ds = 0.0f;
    nq_i32 q[8];
    if (extreme == 0.0f) {
        for (int i = 0; i < 8; ++i) q[i] = 0;
    } else {
        int reason = nq_q8k_scales(extreme, &inverse, &ds);
        if (reason) return reason;
        for (int i = 0; i < 8; ++i) {
            float scaled = nq_fmul(x[i], inverse);
            bad |= !nq_isfinite(scaled);
            q[i] = nq_q8k_level(scaled);
        }
        if (__any_sync(NQ_FULL_MASK, bad)) return 4;
    }
    nq_i32 sum = 0;
    for (int i = 0; i < 8; ++i) sum += q[i];
    sum += __shfl_down_sync(NQ_FULL_MASK, sum, 1);   /* even lane 2j: bsum[j] */
    nq_u32 lo = 0, hi = 0;
    for (int i = 0; i < 4; ++i) {
        lo |= ((nq_u32)q[i] & 0xffu) << (8 * i);
        hi |= ((nq_u32)q[4 + i] & 0xffu) << (8 * i);
    }
    nq_u8* dst = out + 4 + 8 * lane;
    if (out_al4) {
        ((nq_u32*)dst)[0] = lo;
        ((nq_u32*)dst)[1] = hi;
    } else {
        nq_st_u32_any(dst, lo);
        nq_st_u32_any(dst + 4, hi);
    }
    if ((lane & 1) == 0) {
        out[260 + lane] = (nq_u8)sum;
        out[261 + lane] = (nq_u8)((nq_u32)sum >> 8);
    }
    if (lane == 0) {
        if (out_al4) *(nq_u32*)out = nq_bits(ds);
        else nq_st_u32_any(out, nq_bits(ds));
    }
    return 0;
}
#endif
"""

KERNELS = r"""
#if defined(__CUDACC__)
/* x: f32 rows of 256 values, row g at x + g*x_row_stride (elements);
   out: Q8_K records, record g at out + g*out_rec_stride (bytes);
   status: min over failing blocks of g*8 + reason (left alone when all pass). */
extern "C" __global__ void q8k_quantize(const float* __restrict__ x, nq_i64 x_row_stride,
                                        nq_i64 g_count, nq_u8* __restrict__ out,
                                        nq_i64 out_rec_stride, nq_u64* status) {
    const nq_i64 g = (nq_i64)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (g >= g_count) return;
    const float* v = x + g * x_row_stride;
    const int v_al16 = ((((nq_u64)x) | ((nq_u64)x_row_stride * 4u)) & 15u) == 0;
    const int out_al4 = ((((nq_u64)out) | (nq_u64)out_rec_stride) & 3u) == 0;
    int reason = nq_q8k_quantize_warp(v, v_al16, out + g * out_rec_stride, out_al4);
    if (reason != 0 && (threadIdx.x & 31u) == 0)
        atomicMin(status, (nq_u64)g * 8u + (nq_u64)reason);
}

/* y[n] = sum_b v_b(w[n, b], xq[b]) for n < N: one warp per row.
   w: row n, record b at w + n*w_row_stride + b*w_rec_stride (bytes);
   xq: record b at xq + b*x_rec_stride (bytes). */
extern "C" __global__ void q4k_gemv(const nq_u8* __restrict__ w, nq_i64 w_row_stride,
                                    nq_i64 w_rec_stride, const nq_u8* __restrict__ xq,
                                    nq_i64 x_rec_stride, nq_i64 g_count, nq_i64 n_rows,
                                    float* __restrict__ y) {
    const nq_i64 n = (nq_i64)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (n >= n_rows) return;
    float r = nq_q4k_q8k_row_dot_warp(w + n * w_row_stride, w_rec_stride, xq, x_rec_stride,
                                      g_count);
    if ((threadIdx.x & 31u) == 0) y[n] = r;
}
#endif
"""


def device_source() -> str:
    """The includable device library: prelude, record and warp functions."""
    return PRELUDE + RECORD_FUNCTIONS + WARP_FUNCTIONS


def kernel_source() -> str:
    """The complete translation unit with the ``q8k_quantize``/``q4k_gemv`` kernels."""
    return device_source() + KERNELS


def gemv_chunk(g_count: int) -> int:
    """Records per lane group in ``q4k_gemv`` for a row of ``g_count`` records."""
    if g_count < 0:
        raise ValueError(f"record count must be >= 0, got {g_count}")
    return max(1, -(-g_count // GROUPS))


def gemv_sum_order(g_count: int) -> str:
    """The SumOrder text of ``q4k_gemv``'s cross-record sum for G = ``g_count``."""
    return f"chunk<{gemv_chunk(g_count)}>/tree"
