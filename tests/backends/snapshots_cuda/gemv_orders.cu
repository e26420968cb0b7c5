NQ_FN nq_i64 nq_trip(nq_i64 lb, nq_i64 ub, nq_i64 st) {
    if (st > 0) return ub > lb ? (nq_i64)(((nq_u64)ub - (nq_u64)lb - 1u) / (nq_u64)st + 1u) : 0;
    return lb > ub ? (nq_i64)(((nq_u64)lb - (nq_u64)ub - 1u) / (0u - (nq_u64)st) + 1u) : 0;
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
static __device__ __noinline__ float nq_qdot_warp(const nq_u8* a, nq_i64 a_rs, nq_i64 a_bs,
                            const nq_u8* b, nq_i64 b_rs, nq_i64 b_bs, nq_i64 g,
                            nq_i64 chunk, int tree) {
    const int lane = (int)(threadIdx.x & 31u), group = lane >> 3, j = lane & 7;
    const int stage = a_bs != 1 || b_bs != 1;
    const int al16 = stage || ((((nq_u64)a) | (nq_u64)a_rs) & 15u) == 0u;
    const int al4 = stage || ((((nq_u64)b) | (nq_u64)b_rs) & 3u) == 0u;
    __align__(16) nq_u8 sa[144];
    __align__(16) nq_u8 sb[292];
    nq_fold_f32 f;
    if (!stage && tree && chunk == (g + 3) / 4) return nq_q4k_q8k_row_dot_warp(a, a_rs, b, b_rs, g);
    nq_fold_f32_start(&f);
    for (nq_i64 base = 0; base < g; base += 4) {
        const nq_i64 rec = base + group;
        const nq_u8* pa = a + rec * a_rs;
        const nq_u8* pb = b + rec * b_rs;
        nq_i32 s = 0, t = 0;
        float v = 0.0f;
        if (rec < g) {
            if (stage) {
                for (int k = 0; k < 144; ++k) sa[k] = pa[k * a_bs];
                for (int k = 0; k < 292; ++k) sb[k] = pb[k * b_bs];
                pa = sa;
                pb = sb;
            }
            if (al16) nq_q4k_q8k_lane(pa, pb, j, 1, al4, &s, &t);
            else nq_q4k_q8k_lane(pa, pb, j, 0, al4, &s, &t);
        }
        for (int off = 4; off > 0; off >>= 1) {
            s += __shfl_xor_sync(NQ_FULL_MASK, s, off);
            t += __shfl_xor_sync(NQ_FULL_MASK, t, off);
        }
        if (rec < g)
            v = nq_q4k_record_value(nq_ld_u32(pa, al16), nq_from_bits(nq_ld_u32(pb, al4)), s, t);
        for (int q = 0; q < 4; ++q) {
            const float vq = __shfl_sync(NQ_FULL_MASK, v, 8 * q);
            if (base + q < g) nq_fold_f32_add_push(&f, vq, chunk, tree);
        }
    }
    return nq_fold_f32_add_finish(&f, chunk, tree, 0.0f);
}
NQ_FN void nq_store_f32(nq_u8* p, float v) { *(float*)p = v; }
/* @gemv_orders: 1 launch(es)
 *   nk_gemv_orders_1: par, one warp per iteration
 *   quantized_dot %r0 in nk_gemv_orders_1: one warp per dot, records summed in the declared order seq
 *   quantized_dot %r1 in nk_gemv_orders_1: one warp per dot, records summed in the declared order tree
 *   quantized_dot %r2 in nk_gemv_orders_1: one warp per dot, records summed in the declared order chunk<3>
 *   quantized_dot %r3 in nk_gemv_orders_1: one warp per dot, records summed in the declared order chunk<2>/tree
 *   quantized_dot %r4 in nk_gemv_orders_1: one warp per dot, records summed in the declared order chunk<5>/tree
 */
extern "C" __global__ void nk_gemv_orders_1(const nq_u8* w, nq_i64 w_n0, nq_i64 w_n1, nq_i64 w_n2, nq_i64 w_s0, nq_i64 w_s1, nq_i64 w_s2, const nq_u8* xq, nq_i64 xq_n0, nq_i64 xq_n1, nq_i64 xq_s0, nq_i64 xq_s1, nq_u8* y, nq_i64 y_n0, nq_i64 y_n1, nq_i64 y_s0, nq_i64 y_s1, nq_u8* nq_arena, nq_u64* nq_ctl) {
    if (nq_stopped(nq_ctl, 1)) return;
    const nq_i64 sym_N = w_n0;
    const nq_i64 sym_G = w_n1;
    const nq_i64 nq_worker = ((nq_i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5, nq_workers = ((nq_i64)gridDim.x * blockDim.x) >> 5;
    const int nq_lane = (int)(threadIdx.x & 31u);
    const nq_i64 nq_n = nq_trip(0, sym_N, 1);
    for (nq_i64 nq_k = nq_worker; nq_k < nq_n; nq_k += nq_workers) {
        const nq_i64 n = nq_k;
        const nq_u8* const wn = w + (n * w_s0);
        const float r0 = nq_qdot_warp(wn, w_s1, w_s2, xq, xq_s0, xq_s1, sym_G, 0, 0);
        const float r1 = nq_qdot_warp(wn, w_s1, w_s2, xq, xq_s0, xq_s1, sym_G, 0, 1);
        const float r2 = nq_qdot_warp(wn, w_s1, w_s2, xq, xq_s0, xq_s1, sym_G, 3, 0);
        const float r3 = nq_qdot_warp(wn, w_s1, w_s2, xq, xq_s0, xq_s1, sym_G, 2, 1);
        const float r4 = nq_qdot_warp(wn, w_s1, w_s2, xq, xq_s0, xq_s1, sym_G, 5, 1);
        if (nq_lane == 0) nq_store_f32(y + (n * y_s1), r0);
        __syncwarp();
        if (nq_lane == 0) nq_store_f32(y + y_s0 + (n * y_s1), r1);
        __syncwarp();
        if (nq_lane == 0) nq_store_f32(y + (2 * y_s0) + (n * y_s1), r2);
        __syncwarp();
        if (nq_lane == 0) nq_store_f32(y + (3 * y_s0) + (n * y_s1), r3);
        __syncwarp();
        if (nq_lane == 0) nq_store_f32(y + (4 * y_s0) + (n * y_s1), r4);
        __syncwarp();
    }
}
