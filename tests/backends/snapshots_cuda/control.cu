NQ_FN nq_i64 nq_trip(nq_i64 lb, nq_i64 ub, nq_i64 st) {
    if (st > 0) return ub > lb ? (nq_i64)(((nq_u64)ub - (nq_u64)lb - 1u) / (nq_u64)st + 1u) : 0;
    return lb > ub ? (nq_i64)(((nq_u64)lb - (nq_u64)ub - 1u) / (0u - (nq_u64)st) + 1u) : 0;
}
NQ_FN float nq_load_f32(const nq_u8* p) { return *(const float*)p; }
NQ_FN float nq_mul_f32(float a, float b) {
    const float r = __fmul_rn(a, b);
    return (r != r && a == a && b == b) ? nq_from_bits(0xffc00000u) : r;
}
NQ_FN float nq_sub_f32(float a, float b) {
    const float r = __fsub_rn(a, b);
    return (r != r && a == a && b == b) ? nq_from_bits(0xffc00000u) : r;
}
NQ_FN void nq_store_f32(nq_u8* p, float v) { *(float*)p = v; }
NQ_FN float nq_add_f32(float a, float b) {
    const float r = __fadd_rn(a, b);
    return (r != r && a == a && b == b) ? nq_from_bits(0xffc00000u) : r;
}
NQ_FN nq_i64 nq_sub_i64(nq_i64 a, nq_i64 b) { return (nq_i64)((nq_u64)a - (nq_u64)b); }
NQ_FN nq_i32 nq_add_i32(nq_i32 a, nq_i32 b) { return (nq_i32)((nq_u32)a + (nq_u32)b); }
NQ_FN void nq_store_i32(nq_u8* p, nq_i32 v) { *(nq_i32*)p = v; }
/* @control: 3 launch(es)
 *   nk_control_1: par, one thread per iteration
 *   nk_control_2: par, one thread per iteration
 *   nk_control_3: seq, one worker
 */
extern "C" __global__ void nk_control_1(const nq_u8* x, nq_i64 x_n0, nq_i64 x_s0, float t, nq_u8* out, nq_i64 out_n0, nq_i64 out_s0, nq_u8* acc, nq_i64 acc_n0, nq_i64 acc_s0, nq_u8* cnt, nq_i64 cnt_n0, nq_i64 cnt_s0, nq_u8* nq_arena, nq_u64* nq_ctl) {
    if (nq_stopped(nq_ctl, 1)) return;
    const nq_i64 sym_K = x_n0;
    const nq_i64 nq_worker = (nq_i64)blockIdx.x * blockDim.x + threadIdx.x, nq_workers = (nq_i64)gridDim.x * blockDim.x;
    const nq_i64 nq_n = nq_trip(0, sym_K, 1);
    for (nq_i64 nq_k = nq_worker; nq_k < nq_n; nq_k += nq_workers) {
        const nq_i64 i = nq_k;
        const float v = nq_load_f32(x + (i * x_s0));
        const nq_bool lt = (nq_bool)(v < t);
        float r;
        if (lt) {
            const float n = nq_from_bits(nq_bits(v) ^ 0x80000000u);
            r = n;
        } else {
            const float sq = nq_mul_f32(v, v);
            const nq_bool big = (nq_bool)(sq > t);
            float q;
            if (big) {
                const float h = nq_sub_f32(sq, t);
                q = h;
            } else {
                q = sq;
            }
            r = q;
        }
        nq_store_f32(out + (i * out_s0), r);
    }
}
extern "C" __global__ void nk_control_2(const nq_u8* x, nq_i64 x_n0, nq_i64 x_s0, float t, nq_u8* out, nq_i64 out_n0, nq_i64 out_s0, nq_u8* acc, nq_i64 acc_n0, nq_i64 acc_s0, nq_u8* cnt, nq_i64 cnt_n0, nq_i64 cnt_s0, nq_u8* nq_arena, nq_u64* nq_ctl) {
    if (nq_stopped(nq_ctl, 2)) return;
    const nq_i64 sym_K = x_n0;
    const nq_i64 nq_worker = (nq_i64)blockIdx.x * blockDim.x + threadIdx.x, nq_workers = (nq_i64)gridDim.x * blockDim.x;
    if (!(sym_K != 0)) { nq_fail(nq_ctl, 2, 0, 6, 0, 0); return; }
    const nq_i64 nq_n = nq_trip(1, sym_K, sym_K);
    for (nq_i64 nq_k = nq_worker; nq_k < nq_n; nq_k += nq_workers) {
        const nq_i64 i5 = (nq_i64)((nq_u64)(1) + (nq_u64)nq_k * (nq_u64)(sym_K));
        if (!((nq_u64)(i5) < (nq_u64)(sym_K))) { nq_i64 nq_e[2] = {(nq_i64)(i5), (nq_i64)(sym_K)}; nq_fail(nq_ctl, 2, nq_k, 14, nq_e, 2); return; }
        nq_store_f32(out + (i5 * out_s0), t);
    }
}
extern "C" __global__ void nk_control_3(const nq_u8* x, nq_i64 x_n0, nq_i64 x_s0, float t, nq_u8* out, nq_i64 out_n0, nq_i64 out_s0, nq_u8* acc, nq_i64 acc_n0, nq_i64 acc_s0, nq_u8* cnt, nq_i64 cnt_n0, nq_i64 cnt_s0, nq_u8* nq_arena, nq_u64* nq_ctl) {
    if (nq_stopped(nq_ctl, 3)) return;
    const nq_i64 sym_K = x_n0;
    const nq_i64 nq_worker = 0, nq_workers = 1;
    const int nq_lane = (int)(threadIdx.x & 31u);
    float pa = -0x0p+0f;
    float pb = 0x1.0000000000000p+0f;
    for (nq_i64 j = 0; j < sym_K; ++j) {
        const float xj = nq_load_f32(x + (j * x_s0));
        const float nb = nq_add_f32(pa, xj);
        const float nq_t = pb;
        const float nq_t_1 = nb;
        pa = nq_t;
        pb = nq_t_1;
    }
    if (nq_lane == 0) nq_store_f32(acc, pa);
    __syncwarp();
    if (nq_lane == 0) nq_store_f32(acc + acc_s0, pb);
    __syncwarp();
    const nq_i64 top = nq_sub_i64(sym_K, 1);
    nq_i32 cc = 0;
    if (!((-1ll) != 0)) { if (nq_lane == 0) nq_fail(nq_ctl, 3, 0, 22, 0, 0); return; }
    for (nq_i64 nq_k = 0, nq_n = nq_trip(top, (-1ll), (-1ll)); nq_k < nq_n; ++nq_k) {
        const nq_i64 j2 = (nq_i64)((nq_u64)(top) + (nq_u64)nq_k * (nq_u64)((-1ll)));
        if (!((nq_u64)(j2) < (nq_u64)(sym_K))) { nq_i64 nq_e[2] = {(nq_i64)(j2), (nq_i64)(sym_K)}; if (nq_lane == 0) nq_fail(nq_ctl, 3, 0, 30, nq_e, 2); return; }
        const float xv = nq_load_f32(x + (j2 * x_s0));
        const nq_bool above = (nq_bool)(xv >= t);
        nq_i32 cn;
        if (above) {
            const nq_i32 c_1 = nq_add_i32(cc, 1);
            cn = c_1;
        } else {
            cn = cc;
        }
        cc = cn;
    }
    if (nq_lane == 0) nq_store_i32(cnt, cc);
    __syncwarp();
    nq_i32 co = 0;
    for (nq_i64 nq_k_1 = 0, nq_n_1 = nq_trip(1, sym_K, 2); nq_k_1 < nq_n_1; ++nq_k_1) {
        const nq_i64 j3 = (nq_i64)((nq_u64)(1) + (nq_u64)nq_k_1 * (nq_u64)(2));
        const nq_i32 c_2 = nq_add_i32(co, 1);
        co = c_2;
    }
    if (nq_lane == 0) nq_store_i32(cnt + cnt_s0, co);
    __syncwarp();
    for (nq_i64 j4 = sym_K; j4 < sym_K; ++j4) {
        if (nq_lane == 0) nq_store_f32(acc, 0x1.0000000000000p+0f);
        __syncwarp();
    }
}
