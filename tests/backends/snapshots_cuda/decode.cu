NQ_FN nq_i64 nq_trip(nq_i64 lb, nq_i64 ub, nq_i64 st) {
    if (st > 0) return ub > lb ? (nq_i64)(((nq_u64)ub - (nq_u64)lb - 1u) / (nq_u64)st + 1u) : 0;
    return lb > ub ? (nq_i64)(((nq_u64)lb - (nq_u64)ub - 1u) / (0u - (nq_u64)st) + 1u) : 0;
}
NQ_FN float nq_mul_f32(float a, float b) {
    const float r = __fmul_rn(a, b);
    return (r != r && a == a && b == b) ? nq_from_bits(0xffc00000u) : r;
}
NQ_FN float nq_f16_to_f32(nq_f16 w) {
    nq_u32 h = w, sign = (h & 0x8000u) << 16, e = (h >> 10) & 31u, m = h & 1023u;
    if (e == 31u) return nq_from_bits(sign | 0x7f800000u | (m << 13));
    if (e != 0u) return nq_from_bits(sign | ((e + 112u) << 23) | (m << 13));
    if (m == 0u) return nq_from_bits(sign);
    e = 113u;
    while ((m & 1024u) == 0u) { m <<= 1; e -= 1u; }
    return nq_from_bits(sign | (e << 23) | ((m & 1023u) << 13));
}
NQ_FN nq_f16 nq_load_f16(const nq_u8* p) { return *(const nq_f16*)p; }
NQ_FN float nq_decode_q5_g64_fp16(const nq_u8* p, nq_i64 ps, nq_i64 pn,
                              const nq_u8* s, nq_i64 ss, nq_i64 k) {
    const nq_i64 pos = k * 5, byte = pos >> 3;
    const nq_u32 lo = p[byte * ps], hi = byte + 1 < pn ? p[(byte + 1) * ps] : 0u;
    const nq_u32 word = ((lo | (hi << 8)) >> (pos & 7)) & 31u;
    const nq_i32 q = (nq_i32)(word ^ 16u) - 16;
    return nq_mul_f32(nq_f16_to_f32(nq_load_f16(s + (k / 64) * ss)), (float)q);
}
NQ_FN float nq_add_f32(float a, float b) {
    const float r = __fadd_rn(a, b);
    return (r != r && a == a && b == b) ? nq_from_bits(0xffc00000u) : r;
}
typedef struct { float top, cur, stack[64]; nq_i64 n, in_chunk; int sp; } nq_fold_f32;
NQ_FN void nq_fold_f32_start(nq_fold_f32* f) { f->n = 0; f->in_chunk = 0; f->sp = 0; }
NQ_FN void nq_fold_f32_add_top(nq_fold_f32* f, float x, int tree) {
    if (!tree) { f->top = f->n == 0 ? x : nq_add_f32(f->top, x); f->n += 1; return; }
    for (nq_i64 k = f->n; k & 1; k >>= 1) x = nq_add_f32(f->stack[--f->sp], x);
    f->stack[f->sp++] = x;
    f->n += 1;
}
NQ_FN void nq_fold_f32_add_push(nq_fold_f32* f, float x, nq_i64 chunk, int tree) {
    if (chunk > 0) {
        f->cur = f->in_chunk == 0 ? x : nq_add_f32(f->cur, x);
        if (++f->in_chunk < chunk) return;
        f->in_chunk = 0;
        x = f->cur;
    }
    nq_fold_f32_add_top(f, x, tree);
}
NQ_FN float nq_fold_f32_add_finish(nq_fold_f32* f, nq_i64 chunk, int tree, float identity) {
    float x;
    if (chunk > 0 && f->in_chunk > 0) { f->in_chunk = 0; nq_fold_f32_add_top(f, f->cur, tree); }
    if (f->n == 0) return identity;
    if (!tree) return f->top;
    x = f->stack[--f->sp];
    while (f->sp > 0) x = nq_add_f32(f->stack[--f->sp], x);
    return x;
}
NQ_FN float nq_load_f32(const nq_u8* p) { return *(const float*)p; }
NQ_FN void nq_store_f32(nq_u8* p, float v) { *(float*)p = v; }
NQ_FN float nq_decode_q2_g64_fp16(const nq_u8* p, nq_i64 ps, nq_i64 pn,
                              const nq_u8* s, nq_i64 ss, nq_i64 k) {
    const nq_i64 pos = k * 2, byte = pos >> 3;
    const nq_u32 lo = p[byte * ps], hi = byte + 1 < pn ? p[(byte + 1) * ps] : 0u;
    const nq_u32 word = ((lo | (hi << 8)) >> (pos & 7)) & 3u;
    const nq_i32 q = (nq_i32)word - 1;
    return nq_mul_f32(nq_f16_to_f32(nq_load_f16(s + (k / 64) * ss)), (float)q);
}
/* @decode: 2 launch(es)
 *   nk_decode_1: par, one thread per iteration
 *   nk_decode_2: seq, one worker
 */
extern "C" __global__ void nk_decode_1(const nq_u8* p, nq_i64 p_n0, nq_i64 p_n1, nq_i64 p_s0, nq_i64 p_s1, const nq_u8* s, nq_i64 s_n0, nq_i64 s_n1, nq_i64 s_s0, nq_i64 s_s1, const nq_u8* x, nq_i64 x_n0, nq_i64 x_s0, const nq_u8* p2, nq_i64 p2_n0, nq_i64 p2_s0, const nq_u8* s2, nq_i64 s2_n0, nq_i64 s2_s0, nq_u8* y, nq_i64 y_n0, nq_i64 y_s0, nq_u8* row, nq_i64 row_n0, nq_i64 row_s0, nq_u8* z, nq_i64 z_n0, nq_i64 z_s0, nq_u8* nq_arena, nq_u64* nq_ctl) {
    if (nq_stopped(nq_ctl, 1)) return;
    const nq_i64 sym_N = p_n0;
    const nq_i64 sym_P = p_n1;
    const nq_i64 sym_S = s_n1;
    const nq_i64 sym_K = x_n0;
    const nq_i64 sym_Q = p2_n0;
    const nq_i64 sym_T = s2_n0;
    const nq_i64 nq_worker = (nq_i64)blockIdx.x * blockDim.x + threadIdx.x, nq_workers = (nq_i64)gridDim.x * blockDim.x;
    const nq_i64 nq_n = nq_trip(0, sym_N, 1);
    for (nq_i64 nq_k = nq_worker; nq_k < nq_n; nq_k += nq_workers) {
        const nq_i64 n = nq_k;
        const nq_u8* const pn = p + (n * p_s0);
        const nq_u8* const sn = s + (n * s_s0);
        if (!(sym_K >= 1 && sym_K < ((nq_i64)1 << 56) && sym_P == (sym_K * 5 + 7) / 8 && sym_S == (sym_K + 63) / 64)) { nq_i64 nq_e[3] = {(nq_i64)(sym_P), (nq_i64)(sym_S), (nq_i64)(sym_K)}; nq_fail(nq_ctl, 1, nq_k, 6, nq_e, 3); return; }
        float d;
        {
            nq_fold_f32 nq_f;
            nq_fold_f32_start(&nq_f);
            for (nq_i64 nq_k_1 = 0; nq_k_1 < sym_K; ++nq_k_1) nq_fold_f32_add_push(&nq_f, nq_mul_f32(nq_decode_q5_g64_fp16(pn, p_s1, sym_P, sn, s_s1, nq_k_1), nq_load_f32(x + (nq_k_1 * x_s0))), 0, 1);
            d = nq_fold_f32_add_finish(&nq_f, 0, 1, 0x0p+0f);
        }
        nq_store_f32(y + (n * y_s0), d);
    }
}
extern "C" __global__ void nk_decode_2(const nq_u8* p, nq_i64 p_n0, nq_i64 p_n1, nq_i64 p_s0, nq_i64 p_s1, const nq_u8* s, nq_i64 s_n0, nq_i64 s_n1, nq_i64 s_s0, nq_i64 s_s1, const nq_u8* x, nq_i64 x_n0, nq_i64 x_s0, const nq_u8* p2, nq_i64 p2_n0, nq_i64 p2_s0, const nq_u8* s2, nq_i64 s2_n0, nq_i64 s2_s0, nq_u8* y, nq_i64 y_n0, nq_i64 y_s0, nq_u8* row, nq_i64 row_n0, nq_i64 row_s0, nq_u8* z, nq_i64 z_n0, nq_i64 z_s0, nq_u8* nq_arena, nq_u64* nq_ctl) {
    if (nq_stopped(nq_ctl, 2)) return;
    const nq_i64 sym_N = p_n0;
    const nq_i64 sym_P = p_n1;
    const nq_i64 sym_S = s_n1;
    const nq_i64 sym_K = x_n0;
    const nq_i64 sym_Q = p2_n0;
    const nq_i64 sym_T = s2_n0;
    const nq_i64 nq_worker = 0, nq_workers = 1;
    const int nq_lane = (int)(threadIdx.x & 31u);
    if (!(sym_K >= 1 && sym_K < ((nq_i64)1 << 56) && sym_Q == (sym_K * 2 + 7) / 8 && sym_T == (sym_K + 63) / 64)) { nq_i64 nq_e[3] = {(nq_i64)(sym_Q), (nq_i64)(sym_T), (nq_i64)(sym_K)}; if (nq_lane == 0) nq_fail(nq_ctl, 2, 0, 14, nq_e, 3); return; }
    if (nq_lane == 0) {
        for (nq_i64 nq_i0 = 0; nq_i0 < sym_K; ++nq_i0) {
            nq_store_f32(row + (nq_i0 * row_s0), nq_decode_q2_g64_fp16(p2, p2_s0, sym_Q, s2, s2_s0, nq_i0));
        }
    }
    __syncwarp();
    float r;
    {
        nq_fold_f32 nq_f;
        nq_fold_f32_start(&nq_f);
        for (nq_i64 nq_k = 0; nq_k < sym_K; ++nq_k) nq_fold_f32_add_push(&nq_f, nq_decode_q2_g64_fp16(p2, p2_s0, sym_Q, s2, s2_s0, nq_k), 4, 0);
        r = nq_fold_f32_add_finish(&nq_f, 4, 0, 0x0p+0f);
    }
    if (nq_lane == 0) nq_store_f32(z, r);
    __syncwarp();
    if (!((nq_u64)(3) < (nq_u64)(sym_K))) { nq_i64 nq_e[2] = {(nq_i64)(3), (nq_i64)(sym_K)}; if (nq_lane == 0) nq_fail(nq_ctl, 2, 0, 22, nq_e, 2); return; }
    const float e3 = nq_decode_q2_g64_fp16(p2, p2_s0, sym_Q, s2, s2_s0, 3);
    if (nq_lane == 0) nq_store_f32(z + z_s0, e3);
    __syncwarp();
}
