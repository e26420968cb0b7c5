"""The C library of the quantized ops shared by host C and CUDA C (spec/quantized-ops.md).

* :data:`PRELUDE` -- fixed-width types and the handful of exactly-rounded
  primitives (``nq_fmul``, ``nq_i2f``, ...). Under ``__CUDACC__`` they are CUDA
  intrinsics; otherwise they are plain C, so the per-record functions also
  compile with a host C compiler (``-ffp-contract=off``).
* :data:`RECORD_FUNCTIONS` -- host-or-device functions for one record: the
  Q4_K field decoding, ``v_b`` of one Q4_K x Q8_K record pair (a scalar path
  and the 8-lane split used on the GPU), a one-thread sequential dot (order
  ``seq``), and the Q8_K block quantizer.
* :data:`GGUF_BLOCK_FUNCTIONS` -- for every other pair of ``ninfer_ir.quant.PAIRS``
  its ``float nq_<stem>_record(a, b)`` (``v_b`` of one record pair, byte loads)
  and for every other quantize target its block quantizer
  (docs/spec/quantized-gguf.md: the 32-element GGUF schemas).

The CUDA backend adds its warp-cooperative functions and kernels on top
(``backends/cuda/qkernels.py``); the host C emitter includes just these.
"""
from __future__ import annotations

from ninfer_ir.quant import IQ4_NL_VALUES
from .library_kquants import SOURCE as KQUANT_FUNCTIONS

__all__ = ["PRELUDE", "RECORD_FUNCTIONS", "GGUF_BLOCK_FUNCTIONS", "host_source"]

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


GGUF_BLOCK_FUNCTIONS = r"""
/* ---- the 32-element GGUF schemas (docs/spec/quantized-gguf.md) ---- */

NQ_FN float nq_half_at(const nq_u8* p) { return nq_half_to_float(p[0] | ((nq_u32)p[1] << 8)); }

/* v_b of Q4_0 a[18] x Q8_0 b[34]: (f32(S) * d_w) * d_x. */
NQ_FN float nq_q40_q80_record(const nq_u8* a, const nq_u8* b) {
    nq_i32 s = 0;
    for (int k = 0; k < 16; ++k) {
        s += ((nq_i32)(a[2 + k] & 15u) - 8) * nq_sext8(b[2 + k]);
        s += ((nq_i32)(a[2 + k] >> 4) - 8) * nq_sext8(b[18 + k]);
    }
    return nq_fmul(nq_fmul(nq_i2f(s), nq_half_at(a)), nq_half_at(b));
}

/* v_b of Q5_0 a[22] x Q8_0 b[34]: (d_w * d_x) * f32(S). */
NQ_FN float nq_q50_q80_record(const nq_u8* a, const nq_u8* b) {
    nq_u32 qh = nq_ld_u32_any(a + 2);
    nq_i32 s = 0;
    for (int k = 0; k < 16; ++k) {
        nq_i32 lo = (nq_i32)((a[6 + k] & 15u) | (((qh >> k) & 1u) << 4)) - 16;
        nq_i32 hi = (nq_i32)((a[6 + k] >> 4) | (((qh >> (k + 16)) & 1u) << 4)) - 16;
        s += lo * nq_sext8(b[2 + k]) + hi * nq_sext8(b[18 + k]);
    }
    return nq_fmul(nq_fmul(nq_half_at(a), nq_half_at(b)), nq_i2f(s));
}

/* v_b of Q8_0 a[34] x Q8_0 b[34]: f32(S) * (d_w * d_x). */
NQ_FN float nq_q80_q80_record(const nq_u8* a, const nq_u8* b) {
    nq_i32 s = 0;
    for (int k = 0; k < 32; ++k) s += nq_sext8(a[2 + k]) * nq_sext8(b[2 + k]);
    return nq_fmul(nq_i2f(s), nq_fmul(nq_half_at(a), nq_half_at(b)));
}

/* v_b of IQ4_NL a[18] x Q8_0 b[34]: (d_w * d_x) * f32(S), w = the index's value. */
NQ_FN float nq_iq4nl_q80_record(const nq_u8* a, const nq_u8* b) {
    const nq_i32 values[16] = {$IQ4_NL_VALUES};
    nq_i32 s = 0;
    for (int k = 0; k < 16; ++k) {
        s += values[a[2 + k] & 15u] * nq_sext8(b[2 + k]);
        s += values[a[2 + k] >> 4] * nq_sext8(b[18 + k]);
    }
    return nq_fmul(nq_fmul(nq_half_at(a), nq_half_at(b)), nq_i2f(s));
}

/* binary16 bits of a positive finite f32, rounded to nearest even (0x7c00 or more:
   it does not fit). Below 2^-14: d * 2^24 is exact and rounds to the subnormal. */
NQ_FN nq_u32 nq_half_bits(float d) {
    nq_u32 bits = nq_bits(d);
    if (bits < 0x38800000u) return (nq_u32)nq_f2i_rn(nq_fmul(d, 16777216.0f));
    return ((bits + 0xfffu + ((bits >> 13) & 1u)) >> 13) - (112u << 10);
}

/* Quantize one block v[32] into out[34] (byte stores, any alignment): 0, or the
   reason code (1..3) without writing out. q = roundf(x * id), ties away from zero;
   |x * id| < 127.5 once id is finite (spec section 3). */
NQ_FN int nq_q80_quantize_block(const float* v, nq_u8* out) {
    float amax = 0.0f;
    nq_i32 q[32];
    nq_u32 h = 0u;
    for (int i = 0; i < 32; ++i) {
        if (!nq_isfinite(v[i])) return 1;
        amax = nq_fabs(v[i]) > amax ? nq_fabs(v[i]) : amax;
    }
    float d = nq_fdiv(amax, 127.0f);
    if (d == 0.0f) {
        for (int i = 0; i < 32; ++i) q[i] = 0;
    } else {
        float id = nq_fdiv(1.0f, d);
        if (!nq_isfinite(id)) return 2;
        h = nq_half_bits(d);
        if (h >= 0x7c00u) return 3;
        for (int i = 0; i < 32; ++i) {
            float x = nq_fmul(v[i], id);
            nq_i32 t = (nq_i32)x;
            float frac = nq_fabs(nq_fsub(x, nq_i2f(t)));
            q[i] = t + (frac >= 0.5f ? (x < 0.0f ? -1 : 1) : 0);
        }
    }
    out[0] = (nq_u8)h;
    out[1] = (nq_u8)(h >> 8);
    for (int i = 0; i < 32; ++i) out[2 + i] = (nq_u8)q[i];
    return 0;
}
"""

GGUF_BLOCK_FUNCTIONS = GGUF_BLOCK_FUNCTIONS.replace(
    "$IQ4_NL_VALUES", ", ".join(str(v) for v in IQ4_NL_VALUES))

# The K-quant x Q8_K record functions (docs/spec/quantized-kquants.md) are part of it.
GGUF_BLOCK_FUNCTIONS += KQUANT_FUNCTIONS


def host_source() -> str:
    """What a host C compiler sees: prelude and the record functions."""
    return PRELUDE + RECORD_FUNCTIONS + GGUF_BLOCK_FUNCTIONS
