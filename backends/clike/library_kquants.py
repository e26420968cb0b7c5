"""C record functions of the K-quant dots Q2_K/Q3_K/Q5_K/Q6_K x Q8_K, for host C and
CUDA (docs/spec/quantized-kquants.md).

``float nq_<stem>_record(const nq_u8* a, const nq_u8* b)`` is ``v_b`` of one weight
record ``a`` and one Q8_K record ``b``: byte loads only (any alignment), exact
integer sums in ``nq_i32`` (bounds in the spec), then the spec's float steps with
the prelude's exactly-rounded primitives. It builds on ``library.PRELUDE`` and the
Q4_K helpers of ``library.RECORD_FUNCTIONS`` (``nq_half_to_float``,
``nq_q4k_field``, ``nq_q4k_record_value``).
"""
from __future__ import annotations

__all__ = ["SOURCE"]

SOURCE = r"""
/* ---- K-quant x Q8_K records ---- */

/* Weight level of element i (spec section 2 of each format). */
NQ_FN nq_i32 nq_q2k_level(const nq_u8* a, int i) {
    return (a[16 + 32 * (i / 128) + i % 32] >> (2 * ((i / 32) % 4))) & 3;
}
NQ_FN nq_i32 nq_q3k_level(const nq_u8* a, int i) {
    nq_i32 low = (a[32 + 32 * (i / 128) + i % 32] >> (2 * ((i / 32) % 4))) & 3;
    nq_i32 high = (a[i % 32] >> (i / 32)) & 1;
    return (low | (high << 2)) - 4;
}
NQ_FN nq_i32 nq_q5k_level(const nq_u8* a, int i) {
    nq_i32 low = (a[48 + 32 * (i / 64) + i % 32] >> (4 * ((i / 32) % 2))) & 15;
    nq_i32 high = (a[16 + i % 32] >> (i / 32)) & 1;
    return low | (high << 4);
}
NQ_FN nq_i32 nq_q6k_level(const nq_u8* a, int i) {
    int h = i / 128, c = (i / 32) % 4, l = i % 32;
    nq_i32 low = (a[64 * h + 32 * (c % 2) + l] >> (4 * (c / 2))) & 15;
    nq_i32 high = (a[128 + 32 * h + l] >> (2 * c)) & 3;
    return (low | (high << 4)) - 32;
}

/* Scale j of a Q3_K record: six bits, minus 32. */
NQ_FN nq_i32 nq_q3k_scale(const nq_u8* a, int j) {
    const nq_u8* s = a + 96;
    return (((s[j % 8] >> (4 * (j / 8))) & 15) | (((s[8 + j % 4] >> (2 * (j / 4))) & 3) << 4))
         - 32;
}

/* bsum[j] of a Q8_K record. */
NQ_FN nq_i32 nq_q8k_bsum(const nq_u8* b, int j) {
    return nq_sext16(b[260 + 2 * j] | ((nq_u32)b[261 + 2 * j] << 8));
}

/* sum of level * xq over the 16 elements of sub-block j (|.| <= 16*32*128). */
#define NQ_KQ_SUB16(LEVEL, a, b, j, out) do { \
    nq_i32 dot_ = 0; \
    for (int k_ = 0; k_ < 16; ++k_) \
        dot_ += LEVEL(a, 16 * (j) + k_) * nq_sext8((b)[4 + 16 * (j) + k_]); \
    (out) = dot_; } while (0)

/* v = ds * R32(d * f32(S)): the formats without mins. */
NQ_FN float nq_kq_value(nq_u32 d_bits, float ds, nq_i32 s) {
    return nq_fmul(ds, nq_fmul(nq_half_to_float(d_bits), nq_i2f(s)));
}

NQ_FN float nq_q2k_q8k_record(const nq_u8* a, const nq_u8* b) {
    nq_i32 s = 0, t = 0;
    for (int j = 0; j < 16; ++j) {
        nq_i32 dot;
        NQ_KQ_SUB16(nq_q2k_level, a, b, j, dot);
        s += (a[j] & 15) * dot;
        t += (a[j] >> 4) * nq_q8k_bsum(b, j);
    }
    return nq_q4k_record_value(nq_ld_u32_any(a + 80), nq_from_bits(nq_ld_u32_any(b)), s, t);
}

NQ_FN float nq_q3k_q8k_record(const nq_u8* a, const nq_u8* b) {
    nq_i32 s = 0;
    for (int j = 0; j < 16; ++j) {
        nq_i32 dot;
        NQ_KQ_SUB16(nq_q3k_level, a, b, j, dot);
        s += nq_q3k_scale(a, j) * dot;
    }
    return nq_kq_value(a[108] | ((nq_u32)a[109] << 8), nq_from_bits(nq_ld_u32_any(b)), s);
}

NQ_FN float nq_q5k_q8k_record(const nq_u8* a, const nq_u8* b) {
    nq_u32 w0 = nq_ld_u32_any(a + 4), w1 = nq_ld_u32_any(a + 8), w2 = nq_ld_u32_any(a + 12);
    nq_i32 s = 0, t = 0;
    for (int j = 0; j < 8; ++j) {
        nq_i32 lo, hi;
        NQ_KQ_SUB16(nq_q5k_level, a, b, 2 * j, lo);
        NQ_KQ_SUB16(nq_q5k_level, a, b, 2 * j + 1, hi);
        s += nq_q4k_field(w0, w1, w2, 0, j) * (lo + hi);
        t += nq_q4k_field(w0, w1, w2, 1, j) * (nq_q8k_bsum(b, 2 * j) + nq_q8k_bsum(b, 2 * j + 1));
    }
    return nq_q4k_record_value(nq_ld_u32_any(a), nq_from_bits(nq_ld_u32_any(b)), s, t);
}

NQ_FN float nq_q6k_q8k_record(const nq_u8* a, const nq_u8* b) {
    nq_i32 s = 0;
    for (int j = 0; j < 16; ++j) {
        nq_i32 dot;
        NQ_KQ_SUB16(nq_q6k_level, a, b, j, dot);
        s += nq_sext8(a[192 + j]) * dot;
    }
    return nq_kq_value(a[208] | ((nq_u32)a[209] << 8), nq_from_bits(nq_ld_u32_any(b)), s);
}
#undef NQ_KQ_SUB16
"""
