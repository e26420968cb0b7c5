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
NQ_FN nq_i64 nq_trip(nq_i64 lb, nq_i64 ub, nq_i64 st) {
    if (st > 0) return ub > lb ? (nq_i64)(((nq_u64)ub - (nq_u64)lb - 1u) / (nq_u64)st + 1u) : 0;
    return lb > ub ? (nq_i64)(((nq_u64)lb - (nq_u64)ub - 1u) / (0u - (nq_u64)st) + 1u) : 0;
}
NQ_FN nq_i64 nq_add_i64(nq_i64 a, nq_i64 b) { return (nq_i64)((nq_u64)a + (nq_u64)b); }
NQ_FN float nq_add_f32(float a, float b) {
    const float r = __fadd_rn(a, b);
    return (r != r && a == a && b == b) ? nq_from_bits(0xffc00000u) : r;
}
NQ_FN void nq_store_f32(nq_u8* p, float v) { *(float*)p = v; }
/* @errors: 4 launch(es)
 *   nk_errors_0: seq, one worker
 *   nk_errors_1: quant, warp per record
 *   nk_errors_2: quant, warp per record
 *   nk_errors_4: par, one thread per iteration
 */
extern "C" __global__ void nk_errors_0(const nq_u8* x, nq_i64 x_n0, nq_i64 x_n1, nq_i64 x_s0, nq_i64 x_s1, nq_i64 idx, nq_bool flag, nq_u8* y, nq_i64 y_n0, nq_i64 y_s0, nq_u8* xq, nq_i64 xq_n0, nq_i64 xq_n1, nq_i64 xq_s0, nq_i64 xq_s1, nq_u8* nq_arena, nq_u64* nq_ctl) {
    if (nq_stopped(nq_ctl, 0)) return;
    const nq_i64 sym_G = x_n0;
    const nq_i64 sym_N = y_n0;
    const nq_i64 nq_worker = 0, nq_workers = 1;
    const int nq_lane = (int)(threadIdx.x & 31u);
    if (!flag) { if (nq_lane == 0) nq_fail(nq_ctl, 0, 0, 5, 0, 0); return; }
}
extern "C" __global__ void nk_errors_1(const nq_u8* x, nq_i64 x_n0, nq_i64 x_n1, nq_i64 x_s0, nq_i64 x_s1, nq_i64 idx, nq_bool flag, nq_u8* y, nq_i64 y_n0, nq_i64 y_s0, nq_u8* xq, nq_i64 xq_n0, nq_i64 xq_n1, nq_i64 xq_s0, nq_i64 xq_s1, nq_u8* nq_arena, nq_u64* nq_ctl) {
    if (nq_stopped(nq_ctl, 1)) return;
    const nq_i64 sym_G = x_n0;
    const nq_i64 sym_N = y_n0;
    const nq_i64 nq_worker = ((nq_i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5, nq_workers = ((nq_i64)gridDim.x * blockDim.x) >> 5;
    const int nq_lane = (int)(threadIdx.x & 31u);
    for (nq_i64 nq_r = nq_worker; nq_r < sym_G; nq_r += nq_workers) {
        nq_u8 nq_scratch[292];
        const int nq_reason = nq_quantize_record_warp(x + (nq_r * x_s0), x_s1, nq_scratch, 1);
        if (nq_reason != 0) { if (nq_lane == 0) nq_fail(nq_ctl, 1, nq_r, nq_r * 8 + nq_reason, 0, 0); return; }
    }
}
extern "C" __global__ void nk_errors_2(const nq_u8* x, nq_i64 x_n0, nq_i64 x_n1, nq_i64 x_s0, nq_i64 x_s1, nq_i64 idx, nq_bool flag, nq_u8* y, nq_i64 y_n0, nq_i64 y_s0, nq_u8* xq, nq_i64 xq_n0, nq_i64 xq_n1, nq_i64 xq_s0, nq_i64 xq_s1, nq_u8* nq_arena, nq_u64* nq_ctl) {
    if (nq_stopped(nq_ctl, 2)) return;
    const nq_i64 sym_G = x_n0;
    const nq_i64 sym_N = y_n0;
    const nq_i64 nq_worker = ((nq_i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5, nq_workers = ((nq_i64)gridDim.x * blockDim.x) >> 5;
    const int nq_lane = (int)(threadIdx.x & 31u);
    for (nq_i64 nq_r = nq_worker; nq_r < sym_G; nq_r += nq_workers) {
        const int nq_reason = nq_quantize_record_warp(x + (nq_r * x_s0), x_s1, xq + (nq_r * xq_s0), xq_s1);
        if (nq_reason != 0) { if (nq_lane == 0) nq_fail(nq_ctl, 2, nq_r, nq_r * 8 + nq_reason, 0, 0); return; }
    }
}
extern "C" __global__ void nk_errors_4(const nq_u8* x, nq_i64 x_n0, nq_i64 x_n1, nq_i64 x_s0, nq_i64 x_s1, nq_i64 idx, nq_bool flag, nq_u8* y, nq_i64 y_n0, nq_i64 y_s0, nq_u8* xq, nq_i64 xq_n0, nq_i64 xq_n1, nq_i64 xq_s0, nq_i64 xq_s1, nq_u8* nq_arena, nq_u64* nq_ctl) {
    if (nq_stopped(nq_ctl, 4)) return;
    const nq_i64 sym_G = x_n0;
    const nq_i64 sym_N = y_n0;
    const nq_i64 nq_worker = (nq_i64)blockIdx.x * blockDim.x + threadIdx.x, nq_workers = (nq_i64)gridDim.x * blockDim.x;
    const nq_i64 nq_n = nq_trip(0, sym_N, 1);
    for (nq_i64 nq_k = nq_worker; nq_k < nq_n; nq_k += nq_workers) {
        const nq_i64 i = nq_k;
        const nq_i64 j = nq_add_i64(i, idx);
        if (!((nq_u64)(j) < (nq_u64)(sym_N))) { nq_i64 nq_e[2] = {(nq_i64)(j), (nq_i64)(sym_N)}; nq_fail(nq_ctl, 4, nq_k, 6, nq_e, 2); return; }
        const float v = nq_load_f32(y + (j * y_s0));
        const float w = nq_add_f32(v, v);
        nq_store_f32(y + (i * y_s0), w);
    }
}
