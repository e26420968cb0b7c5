NQ_FN nq_i64 nq_mul_i64(nq_i64 a, nq_i64 b) { return (nq_i64)((nq_u64)a * (nq_u64)b); }
NQ_FN nq_i64 nq_trip(nq_i64 lb, nq_i64 ub, nq_i64 st) {
    if (st > 0) return ub > lb ? (nq_i64)(((nq_u64)ub - (nq_u64)lb - 1u) / (nq_u64)st + 1u) : 0;
    return lb > ub ? (nq_i64)(((nq_u64)lb - (nq_u64)ub - 1u) / (0u - (nq_u64)st) + 1u) : 0;
}
NQ_FN float nq_load_f32(const nq_u8* p) { return *(const float*)p; }
NQ_FN nq_u8 nq_load_u8(const nq_u8* p) { return *(const nq_u8*)p; }
NQ_FN nq_u8 nq_shr_u8(nq_u8 a, nq_u8 b) {
    return (nq_u64)b >= 8 ? (nq_u8)0 : (nq_u8)(a >> (nq_u64)b);
}
NQ_FN nq_i32 nq_sub_i32(nq_i32 a, nq_i32 b) { return (nq_i32)((nq_u32)a - (nq_u32)b); }
NQ_FN float nq_mul_f32(float a, float b) {
    const float r = __fmul_rn(a, b);
    return (r != r && a == a && b == b) ? nq_from_bits(0xffc00000u) : r;
}
NQ_FN nq_i64 nq_add_i64(nq_i64 a, nq_i64 b) { return (nq_i64)((nq_u64)a + (nq_u64)b); }
NQ_FN void nq_store_f32(nq_u8* p, float v) { *(float*)p = v; }
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
/* @int4_gemv: 2 launch(es)
 *   nk_int4_gemv_0: seq, one worker
 *   nk_int4_gemv_1: par, one thread per iteration
 */
extern "C" __global__ void nk_int4_gemv_0(const nq_u8* p, nq_i64 p_n0, nq_i64 p_n1, nq_i64 p_s0, nq_i64 p_s1, const nq_u8* x, nq_i64 x_n0, nq_i64 x_s0, const nq_u8* scale, nq_i64 scale_n0, nq_i64 scale_s0, nq_u8* y, nq_i64 y_n0, nq_i64 y_s0, nq_u8* nq_arena, nq_u64* nq_ctl) {
    if (nq_stopped(nq_ctl, 0)) return;
    const nq_i64 sym_N = p_n0;
    const nq_i64 sym_H = p_n1;
    const nq_i64 sym_K = x_n0;
    const nq_i64 nq_worker = 0, nq_workers = 1;
    const int nq_lane = (int)(threadIdx.x & 31u);
    const nq_i64 kk = nq_mul_i64(sym_H, 2);
    const nq_bool ok = (nq_bool)(kk == sym_K);
    if (!ok) { if (nq_lane == 0) nq_fail(nq_ctl, 0, 0, 5, 0, 0); return; }
}
extern "C" __global__ void nk_int4_gemv_1(const nq_u8* p, nq_i64 p_n0, nq_i64 p_n1, nq_i64 p_s0, nq_i64 p_s1, const nq_u8* x, nq_i64 x_n0, nq_i64 x_s0, const nq_u8* scale, nq_i64 scale_n0, nq_i64 scale_s0, nq_u8* y, nq_i64 y_n0, nq_i64 y_s0, nq_u8* nq_arena, nq_u64* nq_ctl) {
    if (nq_stopped(nq_ctl, 1)) return;
    const nq_i64 sym_N = p_n0;
    const nq_i64 sym_H = p_n1;
    const nq_i64 sym_K = x_n0;
    const nq_i64 nq_worker = (nq_i64)blockIdx.x * blockDim.x + threadIdx.x, nq_workers = (nq_i64)gridDim.x * blockDim.x;
    const nq_i64 nq_n = nq_trip(0, sym_N, 1);
    for (nq_i64 nq_k = nq_worker; nq_k < nq_n; nq_k += nq_workers) {
        const nq_i64 n = nq_k;
        nq_u8* const buf = nq_arena + nq_ctl[73] + nq_worker * nq_ctl[72];
        for (nq_i64 nq_z = 0; nq_z < 4 * sym_K; ++nq_z) buf[nq_z] = 0;
        const float sc = nq_load_f32(scale + (n * scale_s0));
        for (nq_i64 i = 0; i < sym_H; ++i) {
            const nq_u8 byte = nq_load_u8(p + (n * p_s0) + (i * p_s1));
            const nq_u8 lo = (nq_u8)(byte & (nq_u8)15);
            const nq_u8 hi = nq_shr_u8(byte, (nq_u8)4);
            const nq_i32 lo32 = (nq_i32)(lo);
            const nq_i32 lo_s = nq_sub_i32(lo32, 8);
            const float lof = (float)(nq_i32)(lo_s);
            const float w0 = nq_mul_f32(lof, sc);
            const nq_i32 hi32 = (nq_i32)(hi);
            const nq_i32 hi_s = nq_sub_i32(hi32, 8);
            const float hif = (float)(nq_i32)(hi_s);
            const float w1 = nq_mul_f32(hif, sc);
            const nq_i64 k0 = nq_mul_i64(i, 2);
            const nq_i64 k1 = nq_add_i64(k0, 1);
            if (!((nq_u64)(k0) < (nq_u64)(sym_K))) { nq_i64 nq_e[2] = {(nq_i64)(k0), (nq_i64)(sym_K)}; nq_fail(nq_ctl, 1, nq_k, 6, nq_e, 2); return; }
            nq_store_f32(buf + (k0 * 4), w0);
            if (!((nq_u64)(k1) < (nq_u64)(sym_K))) { nq_i64 nq_e[2] = {(nq_i64)(k1), (nq_i64)(sym_K)}; nq_fail(nq_ctl, 1, nq_k, 14, nq_e, 2); return; }
            nq_store_f32(buf + (k1 * 4), w1);
        }
        float d;
        {
            nq_fold_f32 nq_f;
            nq_fold_f32_start(&nq_f);
            for (nq_i64 nq_k_1 = 0; nq_k_1 < sym_K; ++nq_k_1) nq_fold_f32_add_push(&nq_f, nq_mul_f32(nq_load_f32(buf + (nq_k_1 * 4)), nq_load_f32(x + (nq_k_1 * x_s0))), 4, 1);
            d = nq_fold_f32_add_finish(&nq_f, 4, 1, 0x0p+0f);
        }
        nq_store_f32(y + (n * y_s0), d);
    }
}
