NQ_FN float nq_load_f32(const nq_u8* p) { return *(const float*)p; }
static __device__ __noinline__ int nq_quantize_record_warp(const nq_u8* v, nq_i64 v_es, nq_u8* out, nq_i64 o_bs) {
    __shared__ __align__(16) nq_u8 stage[4][292];
    __align__(16) float sv[256];
    const int lane = (int)(threadIdx.x & 31u);
    const float* pv = (const float*)v;
    nq_u8* po = o_bs == 1 ? out : stage[threadIdx.x >> 5];
    int reason;
    if (v_es != 4 || ((nq_u64)v & 3u) != 0u) {
        for (int i = 8 * lane; i < 8 * lane + 8; ++i) sv[i] = nq_load_f32(v + i * v_es);
        pv = sv;
    }
    reason = nq_q8k_quantize_warp(pv, ((nq_u64)pv & 15u) == 0u, po, ((nq_u64)po & 3u) == 0u);
    __syncwarp();
    if (reason == 0 && o_bs != 1)
        for (int k = lane; k < 292; k += 32) out[k * o_bs] = po[k];
    __syncwarp();
    return reason;
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
NQ_FN nq_i64 nq_trip(nq_i64 lb, nq_i64 ub, nq_i64 st) {
    if (st > 0) return ub > lb ? (nq_i64)(((nq_u64)ub - (nq_u64)lb - 1u) / (nq_u64)st + 1u) : 0;
    return lb > ub ? (nq_i64)(((nq_u64)lb - (nq_u64)ub - 1u) / (0u - (nq_u64)st) + 1u) : 0;
}
NQ_FN float nq_mul_f32(float a, float b) {
    const float r = __fmul_rn(a, b);
    return (r != r && a == a && b == b) ? nq_from_bits(0xffc00000u) : r;
}
/* @shared_quantize: 3 launch(es)
 *   nk_shared_quantize_1: quant, warp per record
 *   nk_shared_quantize_2: seq, one worker
 *   nk_shared_quantize_3: par, one thread per iteration
 *   quantized_dot %ra in nk_shared_quantize_2: one warp per dot, records summed in the declared order seq
 *   quantized_dot %rb in nk_shared_quantize_2: one warp per dot, records summed in the declared order tree
 */
extern "C" __global__ void nk_shared_quantize_1(const nq_u8* a, nq_i64 a_n0, nq_i64 a_n1, nq_i64 a_s0, nq_i64 a_s1, const nq_u8* b, nq_i64 b_n0, nq_i64 b_n1, nq_i64 b_s0, nq_i64 b_s1, const nq_u8* x, nq_i64 x_n0, nq_i64 x_n1, nq_i64 x_s0, nq_i64 x_s1, const nq_u8* v, nq_i64 v_n0, nq_i64 v_s0, nq_u8* y, nq_i64 y_n0, nq_i64 y_s0, nq_u8* sum, nq_u8* nq_arena, nq_u64* nq_ctl) {
    if (nq_stopped(nq_ctl, 1)) return;
    const nq_i64 sym_G = a_n0;
    const nq_i64 sym_K = v_n0;
    const nq_i64 nq_worker = ((nq_i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5, nq_workers = ((nq_i64)gridDim.x * blockDim.x) >> 5;
    const int nq_lane = (int)(threadIdx.x & 31u);
    nq_u8* const xq = nq_arena + nq_ctl[73];
    for (nq_i64 nq_r = nq_worker; nq_r < sym_G; nq_r += nq_workers) {
        const int nq_reason = nq_quantize_record_warp(x + (nq_r * x_s0), x_s1, xq + (nq_r * 292), 1);
        if (nq_reason != 0) { if (nq_lane == 0) nq_fail(nq_ctl, 1, nq_r, nq_r * 8 + nq_reason, 0, 0); return; }
    }
}
extern "C" __global__ void nk_shared_quantize_2(const nq_u8* a, nq_i64 a_n0, nq_i64 a_n1, nq_i64 a_s0, nq_i64 a_s1, const nq_u8* b, nq_i64 b_n0, nq_i64 b_n1, nq_i64 b_s0, nq_i64 b_s1, const nq_u8* x, nq_i64 x_n0, nq_i64 x_n1, nq_i64 x_s0, nq_i64 x_s1, const nq_u8* v, nq_i64 v_n0, nq_i64 v_s0, nq_u8* y, nq_i64 y_n0, nq_i64 y_s0, nq_u8* sum, nq_u8* nq_arena, nq_u64* nq_ctl) {
    if (nq_stopped(nq_ctl, 2)) return;
    const nq_i64 sym_G = a_n0;
    const nq_i64 sym_K = v_n0;
    const nq_i64 nq_worker = 0, nq_workers = 1;
    const int nq_lane = (int)(threadIdx.x & 31u);
    nq_u8* const xq = nq_arena + nq_ctl[73];
    const float ra = nq_qdot_warp(a, a_s0, a_s1, xq, 292, 1, sym_G, 0, 0);
    if (nq_lane == 0) memcpy(nq_ctl + 74, &ra, sizeof(ra));
    __syncwarp();
    const float rb = nq_qdot_warp(b, b_s0, b_s1, xq, 292, 1, sym_G, 0, 1);
    if (nq_lane == 0) memcpy(nq_ctl + 75, &rb, sizeof(rb));
    __syncwarp();
    const float s = nq_add_f32(ra, rb);
    if (nq_lane == 0) nq_store_f32(sum, s);
    __syncwarp();
}
extern "C" __global__ void nk_shared_quantize_3(const nq_u8* a, nq_i64 a_n0, nq_i64 a_n1, nq_i64 a_s0, nq_i64 a_s1, const nq_u8* b, nq_i64 b_n0, nq_i64 b_n1, nq_i64 b_s0, nq_i64 b_s1, const nq_u8* x, nq_i64 x_n0, nq_i64 x_n1, nq_i64 x_s0, nq_i64 x_s1, const nq_u8* v, nq_i64 v_n0, nq_i64 v_s0, nq_u8* y, nq_i64 y_n0, nq_i64 y_s0, nq_u8* sum, nq_u8* nq_arena, nq_u64* nq_ctl) {
    if (nq_stopped(nq_ctl, 3)) return;
    const nq_i64 sym_G = a_n0;
    const nq_i64 sym_K = v_n0;
    const nq_i64 nq_worker = (nq_i64)blockIdx.x * blockDim.x + threadIdx.x, nq_workers = (nq_i64)gridDim.x * blockDim.x;
    float sa;
    memcpy(&sa, nq_ctl + 74, sizeof(sa));
    float sb;
    memcpy(&sb, nq_ctl + 75, sizeof(sb));
    const float s = nq_add_f32(sa, sb);
    const nq_i64 nq_n = nq_trip(0, sym_K, 1);
    for (nq_i64 nq_k = nq_worker; nq_k < nq_n; nq_k += nq_workers) {
        const nq_i64 i = nq_k;
        const float vi = nq_load_f32(v + (i * v_s0));
        const float p = nq_mul_f32(vi, s);
        nq_store_f32(y + (i * y_s0), p);
    }
}
