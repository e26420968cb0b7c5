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

__all__ = ["PRELUDE", "RECORD_FUNCTIONS", "WARP_FUNCTIONS", "KERNELS", "GROUPS",
           "LANES_PER_RECORD", "QUANTIZE_WARPS_PER_BLOCK", "GEMV_WARPS_PER_BLOCK",
           "device_source", "host_source", "kernel_source", "gemv_sum_order",
           "gemv_chunk"]

GROUPS = 4                     # lane groups per warp in the row dot
LANES_PER_RECORD = 8           # lanes sharing one record pair
QUANTIZE_WARPS_PER_BLOCK = 8   # Q8_K blocks per thread block in q8k_quantize
GEMV_WARPS_PER_BLOCK = 4       # rows per thread block in q4k_gemv

PRELUDE = r"""
/* ---- ninfer_ir CUDA prelude: types and exactly-rounded primitives ---- */
typedef unsigned char nq_u8;
typedef unsigned short nq_u16;
typedef unsigned int nq_u32;
typedef int nq_i32;
typedef long long nq_i64;
typedef unsigned long long nq_u64;

#if defined(__CUDACC__)
#define NQ_FN static __device__ __forceinline__
#define NQ_FULL_MASK 0xffffffffu
#pragma nv_diag_suppress 177  /* library functions a unit does not use */
NQ_FN float nq_fmul(float a, float b) { return __fmul_rn(a, b); }
NQ_FN float nq_fadd(float a, float b) { return __fadd_rn(a, b); }
NQ_FN float nq_fsub(float a, float b) { return __fsub_rn(a, b); }
NQ_FN float nq_fdiv(float a, float b) { return __fdiv_rn(a, b); }
NQ_FN float nq_i2f(nq_i32 i) { return __int2float_rn(i); }
NQ_FN nq_i32 nq_f2i_rn(float x) { return __float2int_rn(x); }
NQ_FN nq_u32 nq_bits(float x) { return __float_as_uint(x); }
NQ_FN float nq_from_bits(nq_u32 u) { return __uint_as_float(u); }
NQ_FN nq_i32 nq_dp4a(nq_u32 a, nq_u32 b, nq_i32 c) { return __dp4a((int)a, (int)b, c); }
NQ_FN nq_u32 nq_ld_u32_a4(const nq_u8* p) { return *(const nq_u32*)p; }
#else
#include <math.h>
#include <string.h>
#define NQ_FN static inline
/* Host emulation: compile with -ffp-contract=off -fno-fast-math (SSE f32). */
NQ_FN float nq_fmul(float a, float b) { return a * b; }
NQ_FN float nq_fadd(float a, float b) { return a + b; }
NQ_FN float nq_fsub(float a, float b) { return a - b; }
NQ_FN float nq_fdiv(float a, float b) { return a / b; }
NQ_FN float nq_i2f(nq_i32 i) { return (float)i; }
NQ_FN nq_i32 nq_f2i_rn(float x) { return (nq_i32)rintf(x); }
NQ_FN nq_u32 nq_bits(float x) { nq_u32 u; memcpy(&u, &x, 4); return u; }
NQ_FN float nq_from_bits(nq_u32 u) { float x; memcpy(&x, &u, 4); return x; }
NQ_FN nq_i32 nq_dp4a(nq_u32 a, nq_u32 b, nq_i32 c) {
    for (int k = 0; k < 4; ++k)
        c += ((nq_i32)(((a >> (8 * k)) & 0xffu) ^ 0x80u) - 0x80)
           * ((nq_i32)(((b >> (8 * k)) & 0xffu) ^ 0x80u) - 0x80);
    return c;
}
NQ_FN nq_u32 nq_ld_u32_a4(const nq_u8* p) { nq_u32 u; memcpy(&u, p, 4); return u; }
#endif

NQ_FN nq_i32 nq_sext8(nq_u32 b) { return (nq_i32)((b & 0xffu) ^ 0x80u) - 0x80; }
NQ_FN nq_i32 nq_sext16(nq_u32 h) { return (nq_i32)((h & 0xffffu) ^ 0x8000u) - 0x8000; }

/* Little-endian 32-bit load from any address (byte loads). */
NQ_FN nq_u32 nq_ld_u32_any(const nq_u8* p) {
    return (nq_u32)p[0] | ((nq_u32)p[1] << 8) | ((nq_u32)p[2] << 16) | ((nq_u32)p[3] << 24);
}
NQ_FN nq_u32 nq_ld_u32(const nq_u8* p, int aligned4) {
    return aligned4 ? nq_ld_u32_a4(p) : nq_ld_u32_any(p);
}
NQ_FN void nq_st_u32_any(nq_u8* p, nq_u32 v) {
    p[0] = (nq_u8)v; p[1] = (nq_u8)(v >> 8); p[2] = (nq_u8)(v >> 16); p[3] = (nq_u8)(v >> 24);
}
NQ_FN int nq_isfinite(float x) { return (nq_bits(x) & 0x7f800000u) != 0x7f800000u; }
NQ_FN float nq_fabs(float x) { return nq_from_bits(nq_bits(x) & 0x7fffffffu); }
"""

RECORD_FUNCTIONS = r"""
/* ---- one record (host or device) ---- */

/* binary16 bits -> f32, exact (subnormals, infinities and NaN payloads kept). */
NQ_FN float nq_half_to_float(nq_u32 h) {
    nq_u32 sign = (h & 0x8000u) << 16, e = (h >> 10) & 31u, m = h & 1023u;
    if (e == 31u) return nq_from_bits(sign | 0x7f800000u | (m << 13));
    if (e != 0u) return nq_from_bits(sign | ((e + 112u) << 23) | (m << 13));
    /* zero or subnormal: m * 2^-24, exact in f32 */
    return nq_from_bits(sign | nq_bits(nq_fmul(nq_i2f((nq_i32)m), 5.9604644775390625e-08f)));
}

/* Field r (0: sc, 1: m) element i of a Q4_K record, from its bytes [4,16) as
   three little-endian words w0 = a[4..8), w1 = a[8..12), w2 = a[12..16). */
NQ_FN nq_i32 nq_q4k_field(nq_u32 w0, nq_u32 w1, nq_u32 w2, int r, int i) {
    nq_u32 lo = r ? w1 : w0;
    if (i < 4) return (nq_i32)((lo >> (8 * i)) & 63u);
    int t = i - 4;
    return (nq_i32)(((w2 >> (8 * t + 4 * r)) & 15u) | (((lo >> (8 * t + 6)) & 3u) << 4));
}

/* v_b from the record's d|dmin<<16 bits, ds and its exact S_b, T_b. */
NQ_FN float nq_q4k_record_value(nq_u32 d_dmin, float ds, nq_i32 s, nq_i32 t) {
    float p = nq_fmul(nq_half_to_float(d_dmin & 0xffffu), nq_i2f(s));
    float n = nq_fmul(nq_half_to_float(d_dmin >> 16), nq_i2f(t));
    return nq_fmul(ds, nq_fsub(p, n));
}

/* v_b of one Q4_K record a[144] and one Q8_K record b[292]; byte loads only,
   so any alignment is fine. One thread does the whole record. */
NQ_FN float nq_q4k_q8k_record(const nq_u8* a, const nq_u8* b) {
    nq_i32 s = 0, t = 0;
    for (int sb = 0; sb < 8; ++sb) {
        int r4 = sb & 3;
        nq_i32 sc, m;
        if (sb < 4) {
            sc = a[4 + r4] & 63;
            m = a[8 + r4] & 63;
        } else {
            sc = (a[12 + r4] & 15) | ((a[4 + r4] >> 6) << 4);
            m = ((a[12 + r4] >> 4) & 15) | ((a[8 + r4] >> 6) << 4);
        }
        nq_i32 dot = 0;
        for (int k = 0; k < 32; ++k) {
            int i = 32 * sb + k;
            nq_u32 packed = a[16 + 32 * (i / 64) + (i % 32)];
            nq_i32 q = (nq_i32)((packed >> ((i % 64) < 32 ? 0 : 4)) & 15u);
            dot += q * nq_sext8(b[4 + i]);
        }
        s += sc * dot;
        nq_i32 pair = nq_sext16(b[260 + 4 * sb] | ((nq_u32)b[261 + 4 * sb] << 8))
                    + nq_sext16(b[262 + 4 * sb] | ((nq_u32)b[263 + 4 * sb] << 8));
        t += m * pair;
    }
    nq_u32 d_dmin = nq_ld_u32_any(a);
    return nq_q4k_record_value(d_dmin, nq_from_bits(nq_ld_u32_any(b)), s, t);
}

/* sum_b v_b over G record pairs, strictly left to right (order "seq"), one
   thread, byte loads; a + b*a_rec_stride, b + b*b_rec_stride. G = 0 gives +0.0. */
NQ_FN float nq_q4k_q8k_dot_seq(const nq_u8* a, nq_i64 a_rec_stride, const nq_u8* b,
                               nq_i64 b_rec_stride, nq_i64 g_count) {
    if (g_count <= 0) return 0.0f;
    float acc = -0.0f;    /* -0.0 + v == v for every v: no initial accumulator */
    for (nq_i64 rec = 0; rec < g_count; ++rec)
        acc = nq_fadd(acc, nq_q4k_q8k_record(a + rec * a_rec_stride, b + rec * b_rec_stride));
    return acc;
}

/* Lane j (0..7) of the eight lanes sharing one record pair: its exact share of
   S_b (q bytes [16j, 16j+16) of a: low nibbles are sub-block 2(j/2), high
   nibbles sub-block 2(j/2)+1) and of T_b (sub-block j's m times its bsum pair).
   a_al16: a is 16-byte aligned; b_al4: b is 4-byte aligned. */
NQ_FN void nq_q4k_q8k_lane(const nq_u8* a, const nq_u8* b, int j, int a_al16, int b_al4,
                           nq_i32* s_part, nq_i32* t_part) {
    nq_u32 w0 = nq_ld_u32(a + 4, a_al16), w1 = nq_ld_u32(a + 8, a_al16),
           w2 = nq_ld_u32(a + 12, a_al16);
    nq_u32 q[4];
#if defined(__CUDACC__)
    if (a_al16) {
        uint4 v = *(const uint4*)(a + 16 + 16 * j);
        q[0] = v.x; q[1] = v.y; q[2] = v.z; q[3] = v.w;
    } else
#endif
    {
        for (int k = 0; k < 4; ++k) q[k] = nq_ld_u32(a + 16 + 16 * j + 4 * k, a_al16);
    }
    const nq_u8* x = b + 4 + 64 * (j >> 1) + 16 * (j & 1);
    nq_i32 lo = 0, hi = 0;
    for (int k = 0; k < 4; ++k) {
        lo = nq_dp4a(q[k] & 0x0f0f0f0fu, nq_ld_u32(x + 4 * k, b_al4), lo);
        hi = nq_dp4a((q[k] >> 4) & 0x0f0f0f0fu, nq_ld_u32(x + 32 + 4 * k, b_al4), hi);
    }
    *s_part = nq_q4k_field(w0, w1, w2, 0, 2 * (j >> 1)) * lo
            + nq_q4k_field(w0, w1, w2, 0, 2 * (j >> 1) + 1) * hi;
    nq_u32 bs = nq_ld_u32(b + 260 + 4 * j, b_al4);
    *t_part = nq_q4k_field(w0, w1, w2, 1, j) * (nq_sext16(bs) + nq_sext16(bs >> 16));
}

/* ---- Q8_K quantization pieces (spec section 4) ---- */

/* The block's extreme: larger magnitude of max and min; the min on a tie. */
NQ_FN float nq_q8k_extreme(float mx, float mn) {
    return nq_fabs(mx) > nq_fabs(mn) ? mx : mn;
}

/* inverse and ds of a non-zero block; returns 0 or reason 2 / 3. */
NQ_FN int nq_q8k_scales(float extreme, float* inverse, float* ds) {
    *inverse = nq_fdiv(-127.0f, extreme);
    if (!nq_isfinite(*inverse)) return 2;
    *ds = nq_fdiv(1.0f, *inverse);
    if (!nq_isfinite(*ds)) return 3;
    return 0;
}

/* saturate_i8(round_nearest_even(scaled)); clamping first is the same since
   the bounds are integers. */
NQ_FN nq_i32 nq_q8k_level(float scaled) {
    float c = scaled > 127.0f ? 127.0f : (scaled < -128.0f ? -128.0f : scaled);
    return nq_f2i_rn(c);
}

/* Quantize one block v[256] into out[292] (byte stores, any alignment).
   Returns 0, or the reason code (1..4) without writing out. */
NQ_FN int nq_q8k_quantize_block(const float* v, nq_u8* out) {
    float mx = v[0], mn = v[0];
    for (int i = 0; i < 256; ++i) {
        if (!nq_isfinite(v[i])) return 1;
        mx = v[i] > mx ? v[i] : mx;
        mn = v[i] < mn ? v[i] : mn;
    }
    float extreme = nq_q8k_extreme(mx, mn), inverse = 0.0f, ds = 0.0f;
    nq_i32 q[256];
    if (extreme == 0.0f) {
        for (int i = 0; i < 256; ++i) q[i] = 0;
    } else {
        int reason = nq_q8k_scales(extreme, &inverse, &ds);
        if (reason) return reason;
        for (int i = 0; i < 256; ++i) {
            float scaled = nq_fmul(v[i], inverse);
            if (!nq_isfinite(scaled)) return 4;
            q[i] = nq_q8k_level(scaled);
        }
    }
    nq_st_u32_any(out, nq_bits(ds));
    for (int i = 0; i < 256; ++i) out[4 + i] = (nq_u8)q[i];
    for (int j = 0; j < 16; ++j) {
        nq_i32 sum = 0;
        for (int i = 0; i < 16; ++i) sum += q[16 * j + i];
        out[260 + 2 * j] = (nq_u8)sum;
        out[261 + 2 * j] = (nq_u8)((nq_u32)sum >> 8);
    }
    return 0;
}
"""

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


def host_source() -> str:
    """What a host C compiler sees: prelude and the record functions."""
    return PRELUDE + RECORD_FUNCTIONS


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
