NQ_FN nq_i64 nq_trip(nq_i64 lb, nq_i64 ub, nq_i64 st) {
    if (st > 0) return ub > lb ? (nq_i64)(((nq_u64)ub - (nq_u64)lb - 1u) / (nq_u64)st + 1u) : 0;
    return lb > ub ? (nq_i64)(((nq_u64)lb - (nq_u64)ub - 1u) / (0u - (nq_u64)st) + 1u) : 0;
}
NQ_FN float nq_load_f32(const nq_u8* p) { return *(const float*)p; }
NQ_FN float nq_mul_f32(float a, float b) {
    const float r = __fmul_rn(a, b);
    return (r != r && a == a && b == b) ? nq_from_bits(0xffc00000u) : r;
}
NQ_FN void nq_store_f32(nq_u8* p, float v) { *(float*)p = v; }
/* @nest: 2 launch(es)
 *   nk_nest_1: par, one thread per iteration
 *   nk_nest_2: par, one thread per iteration
 */
extern "C" __global__ void nk_nest_1(const nq_u8* a, nq_i64 a_n0, nq_i64 a_n1, nq_i64 a_s0, nq_i64 a_s1, const nq_u8* b, nq_i64 b_n0, nq_i64 b_s0, nq_u8* y, nq_i64 y_n0, nq_i64 y_n1, nq_i64 y_s0, nq_i64 y_s1, nq_u8* z, nq_i64 z_n0, nq_i64 z_n1, nq_i64 z_s0, nq_i64 z_s1, nq_u8* nq_arena, nq_u64* nq_ctl) {
    if (nq_stopped(nq_ctl, 1)) return;
    const nq_i64 sym_R = a_n0;
    const nq_i64 sym_C = a_n1;
    const nq_i64 sym_S = z_n0;
    const nq_i64 nq_worker = (nq_i64)blockIdx.x * blockDim.x + threadIdx.x, nq_workers = (nq_i64)gridDim.x * blockDim.x;
    const nq_i64 nq_n = nq_trip(0, sym_R, 1);
    const nq_i64 nq_n_1 = nq_trip(0, sym_C, 1);
    const nq_i64 nq_n_2 = nq_n * nq_n_1;
    for (nq_i64 nq_k = nq_worker; nq_k < nq_n_2; nq_k += nq_workers) {
        const nq_i64 nq_k0 = nq_k / (nq_n_1);
        const nq_i64 i = nq_k0;
        const nq_u8* const row = a + (i * a_s0);
        const nq_i64 nq_k1 = nq_k % nq_n_1;
        const nq_i64 j = nq_k1;
        const float u = nq_load_f32(row + (j * a_s1));
        const float v = nq_load_f32(b + (j * b_s0));
        const float p = nq_mul_f32(u, v);
        nq_store_f32(y + (i * y_s0) + (j * y_s1), p);
    }
}
extern "C" __global__ void nk_nest_2(const nq_u8* a, nq_i64 a_n0, nq_i64 a_n1, nq_i64 a_s0, nq_i64 a_s1, const nq_u8* b, nq_i64 b_n0, nq_i64 b_s0, nq_u8* y, nq_i64 y_n0, nq_i64 y_n1, nq_i64 y_s0, nq_i64 y_s1, nq_u8* z, nq_i64 z_n0, nq_i64 z_n1, nq_i64 z_s0, nq_i64 z_s1, nq_u8* nq_arena, nq_u64* nq_ctl) {
    if (nq_stopped(nq_ctl, 2)) return;
    const nq_i64 sym_R = a_n0;
    const nq_i64 sym_C = a_n1;
    const nq_i64 sym_S = z_n0;
    const nq_i64 nq_worker = (nq_i64)blockIdx.x * blockDim.x + threadIdx.x, nq_workers = (nq_i64)gridDim.x * blockDim.x;
    const nq_i64 nq_n = nq_trip(0, sym_S, 1);
    for (nq_i64 nq_k = nq_worker; nq_k < nq_n; nq_k += nq_workers) {
        const nq_i64 i2 = nq_k;
        if (!((nq_u64)(i2) < (nq_u64)(sym_R))) { nq_i64 nq_e[2] = {(nq_i64)(i2), (nq_i64)(sym_R)}; nq_fail(nq_ctl, 2, nq_k, 6, nq_e, 2); return; }
        const nq_u8* const row2 = a + (i2 * a_s0);
        for (nq_i64 j2 = 0; j2 < sym_C; ++j2) {
            const float u2 = nq_load_f32(row2 + (j2 * a_s1));
            nq_store_f32(z + (i2 * z_s0) + (j2 * z_s1), u2);
        }
    }
}
