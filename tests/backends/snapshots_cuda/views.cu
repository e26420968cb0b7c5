NQ_FN float nq_mul_f32(float a, float b) {
    const float r = __fmul_rn(a, b);
    return (r != r && a == a && b == b) ? nq_from_bits(0xffc00000u) : r;
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
NQ_FN float nq_max_f32(float a, float b) {
    if (a != a || b != b) return nq_from_bits(0x7fc00000u);
    return (a > b || (a == b && !(nq_bits(a) & 0x80000000u))) ? a : b;
}
NQ_FN nq_u32 nq_load_u32(const nq_u8* p) { return *(const nq_u32*)p; }
NQ_FN void nq_store_u32(nq_u8* p, nq_u32 v) { *(nq_u32*)p = v; }
NQ_FN void nq_mv4(nq_u8* d, const nq_u8* s) { nq_store_u32(d, nq_load_u32(s)); }
NQ_FN void nq_store_u8(nq_u8* p, nq_u8 v) { *(nq_u8*)p = v; }
NQ_FN nq_u8 nq_load_u8(const nq_u8* p) { return *(const nq_u8*)p; }
NQ_FN nq_u8 nq_add_u8(nq_u8 a, nq_u8 b) { return (nq_u8)((nq_u32)a + (nq_u32)b); }
/* @views: 1 launch(es)
 *   nk_views_0: seq, one worker
 */
extern "C" __global__ void nk_views_0(const nq_u8* m, nq_i64 m_n0, nq_i64 m_n1, nq_i64 m_s0, nq_i64 m_s1, nq_u8* b, nq_i64 b_n0, nq_i64 b_s0, nq_u8* y, nq_i64 y_n0, nq_i64 y_s0, nq_u8* z, nq_i64 z_n0, nq_i64 z_s0, nq_u8* nq_arena, nq_u64* nq_ctl) {
    if (nq_stopped(nq_ctl, 0)) return;
    const nq_i64 sym_R = m_n0;
    const nq_i64 sym_C = m_n1;
    const nq_i64 sym_B = b_n0;
    const nq_i64 nq_worker = 0, nq_workers = 1;
    const int nq_lane = (int)(threadIdx.x & 31u);
    if (!((nq_u64)(1) < (nq_u64)(sym_R))) { nq_i64 nq_e[2] = {(nq_i64)(1), (nq_i64)(sym_R)}; if (nq_lane == 0) nq_fail(nq_ctl, 0, 0, 6, nq_e, 2); return; }
    const nq_u8* const row = m + m_s0;
    if (!(2 > 0 && (nq_u64)(1) <= (nq_u64)(7) && (nq_u64)(7) <= (nq_u64)(sym_C))) { nq_i64 nq_e[4] = {(nq_i64)(1), (nq_i64)(7), (nq_i64)(2), (nq_i64)(sym_C)}; if (nq_lane == 0) nq_fail(nq_ctl, 0, 0, 14, nq_e, 4); return; }
    const nq_i64 part_n0 = (7 - 1 + 2 - 1) / 2;
    const nq_i64 part_s0 = m_s1 * 2;
    const nq_u8* const part = row + m_s1;
    if (!(part_n0 == 3)) { nq_i64 nq_e[1] = {(nq_i64)(part_n0)}; if (nq_lane == 0) nq_fail(nq_ctl, 0, 0, 22, nq_e, 1); return; }
    if (!((nq_u64)(2) < (nq_u64)(sym_C))) { nq_i64 nq_e[2] = {(nq_i64)(2), (nq_i64)(sym_C)}; if (nq_lane == 0) nq_fail(nq_ctl, 0, 0, 30, nq_e, 2); return; }
    const nq_u8* const col = m + (2 * m_s1);
    if (!(1 > 0 && (nq_u64)(0) <= (nq_u64)(3) && (nq_u64)(3) <= (nq_u64)(sym_R))) { nq_i64 nq_e[4] = {(nq_i64)(0), (nq_i64)(3), (nq_i64)(1), (nq_i64)(sym_R)}; if (nq_lane == 0) nq_fail(nq_ctl, 0, 0, 38, nq_e, 4); return; }
    const nq_i64 cpart_n0 = (3 - 0 + 1 - 1) / 1;
    const nq_u8* const cpart = col + 0;
    if (!(cpart_n0 == 3)) { nq_i64 nq_e[1] = {(nq_i64)(cpart_n0)}; if (nq_lane == 0) nq_fail(nq_ctl, 0, 0, 46, nq_e, 1); return; }
    float d;
    {
        nq_fold_f32 nq_f;
        nq_fold_f32_start(&nq_f);
        for (nq_i64 nq_k = 0; nq_k < 3; ++nq_k) nq_fold_f32_add_push(&nq_f, nq_mul_f32(nq_load_f32(part + (nq_k * part_s0)), nq_load_f32(cpart + (nq_k * m_s0))), 0, 1);
        d = nq_fold_f32_add_finish(&nq_f, 0, 1, 0x0p+0f);
    }
    if (nq_lane == 0) nq_store_f32(z, d);
    __syncwarp();
    float red;
    {
        nq_fold_f32 nq_f_1;
        nq_fold_f32_start(&nq_f_1);
        for (nq_i64 nq_k_1 = 0; nq_k_1 < sym_R; ++nq_k_1) nq_fold_f32_add_push(&nq_f_1, nq_load_f32(col + (nq_k_1 * m_s0)), 2, 0);
        red = nq_fold_f32_add_finish(&nq_f_1, 2, 0, 0x0p+0f);
    }
    if (nq_lane == 0) nq_store_f32(z + z_s0, red);
    __syncwarp();
    float mx;
    mx = sym_C > 0 ? nq_load_f32(row) : nq_from_bits(0xff800000u);
    for (nq_i64 nq_k_2 = 1; nq_k_2 < sym_C; ++nq_k_2) mx = nq_max_f32(mx, nq_load_f32(row + (nq_k_2 * m_s1)));
    if (nq_lane == 0) nq_store_f32(z + (2 * z_s0), mx);
    __syncwarp();
    if (!(1 > 0 && (nq_u64)(1) <= (nq_u64)(3) && (nq_u64)(3) <= (nq_u64)(sym_R))) { nq_i64 nq_e[4] = {(nq_i64)(1), (nq_i64)(3), (nq_i64)(1), (nq_i64)(sym_R)}; if (nq_lane == 0) nq_fail(nq_ctl, 0, 0, 54, nq_e, 4); return; }
    const nq_i64 block_n0 = (3 - 1 + 1 - 1) / 1;
    if (!(2 > 0 && (nq_u64)(2) <= (nq_u64)(7) && (nq_u64)(7) <= (nq_u64)(sym_C))) { nq_i64 nq_e[4] = {(nq_i64)(2), (nq_i64)(7), (nq_i64)(2), (nq_i64)(sym_C)}; if (nq_lane == 0) nq_fail(nq_ctl, 0, 0, 62, nq_e, 4); return; }
    const nq_i64 block_n1 = (7 - 2 + 2 - 1) / 2;
    const nq_i64 block_s1 = m_s1 * 2;
    const nq_u8* const block = m + m_s0 + (2 * m_s1);
    if (!(block_n0 == 2 && block_n1 == 3)) { nq_i64 nq_e[2] = {(nq_i64)(block_n0), (nq_i64)(block_n1)}; if (nq_lane == 0) nq_fail(nq_ctl, 0, 0, 70, nq_e, 2); return; }
    const float corner = nq_load_f32(block + m_s0 + (2 * block_s1));
    if (nq_lane == 0) nq_store_f32(z + (3 * z_s0), corner);
    __syncwarp();
    if (!(2 > 0 && (nq_u64)(2) <= (nq_u64)(8) && (nq_u64)(8) <= (nq_u64)(sym_C))) { nq_i64 nq_e[4] = {(nq_i64)(2), (nq_i64)(8), (nq_i64)(2), (nq_i64)(sym_C)}; if (nq_lane == 0) nq_fail(nq_ctl, 0, 0, 78, nq_e, 4); return; }
    const nq_i64 dst_n0 = (8 - 2 + 2 - 1) / 2;
    const nq_i64 dst_s0 = y_s0 * 2;
    nq_u8* const dst = y + (2 * y_s0);
    if (!(dst_n0 == 3)) { nq_i64 nq_e[1] = {(nq_i64)(dst_n0)}; if (nq_lane == 0) nq_fail(nq_ctl, 0, 0, 86, nq_e, 1); return; }
    if (nq_lane == 0) {
        for (nq_i64 nq_i0 = 0; nq_i0 < 3; ++nq_i0) {
            nq_mv4(dst + (nq_i0 * dst_s0), part + (nq_i0 * part_s0));
        }
    }
    __syncwarp();
    if (!(1 > 0 && (nq_u64)(3) <= (nq_u64)(8) && (nq_u64)(8) <= (nq_u64)(sym_B))) { nq_i64 nq_e[4] = {(nq_i64)(3), (nq_i64)(8), (nq_i64)(1), (nq_i64)(sym_B)}; if (nq_lane == 0) nq_fail(nq_ctl, 0, 0, 94, nq_e, 4); return; }
    const nq_i64 bytes_n0 = (8 - 3 + 1 - 1) / 1;
    nq_u8* const bytes = b + (3 * b_s0);
    if (!(bytes_n0 == 5)) { nq_i64 nq_e[1] = {(nq_i64)(bytes_n0)}; if (nq_lane == 0) nq_fail(nq_ctl, 0, 0, 102, nq_e, 1); return; }
    if (!(3 > 0 && (nq_u64)(1) <= (nq_u64)(5) && (nq_u64)(5) <= (nq_u64)(5))) { nq_i64 nq_e[4] = {(nq_i64)(1), (nq_i64)(5), (nq_i64)(3), (nq_i64)(5)}; if (nq_lane == 0) nq_fail(nq_ctl, 0, 0, 110, nq_e, 4); return; }
    const nq_i64 bstep_n0 = (5 - 1 + 3 - 1) / 3;
    const nq_i64 bstep_s0 = b_s0 * 3;
    nq_u8* const bstep = bytes + b_s0;
    if (!(bstep_n0 == 2)) { nq_i64 nq_e[1] = {(nq_i64)(bstep_n0)}; if (nq_lane == 0) nq_fail(nq_ctl, 0, 0, 118, nq_e, 1); return; }
    if (nq_lane == 0) nq_store_u8(bstep + bstep_s0, (nq_u8)171);
    __syncwarp();
    const nq_u8 w = nq_load_u8(bytes);
    const nq_u8 ww = nq_add_u8(w, (nq_u8)171);
    if (nq_lane == 0) nq_store_u8(bstep, ww);
    __syncwarp();
}
