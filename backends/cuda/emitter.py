"""CUDA C from loop-level IR: the C-like emitter with CUDA data and a few CUDA ops.

    emit(module, kind="cuda")   # CUDA C source text
    emit(module, kind="ptx")    # PTX for sm_90 through NVRTC/nvcc (no GPU needed)

What differs from host C (``backends.clike``):

- data: ``extern "C" __global__`` units, ``__fadd_rn``-style f32/f64 arithmetic
  (never contracted, and compiled with ``-fmad=false -ftz=false -prec-div=true``),
  typed element loads (the launcher guarantees element alignment), and a failure
  record taken under a spin lock so the lowest failing key of a unit wins;
- workers: a ``par`` unit is a grid-stride loop with one thread per iteration, or
  one warp per iteration when its body holds ``quantized_dot`` or
  ``quantize_into``; a ``quant`` unit has one warp per record; a ``seq`` unit runs
  on one warp (a block of 32 threads). In a warp every lane runs the code with the
  same values; effects (stores, copies, zeroing, frame words) are done by lane 0
  followed by ``__syncwarp()``, failures are reported by lane 0; so every
  quantized op on the GPU is a warp-cooperative one;
- ``quantized_dot``: records are taken four at a time, one per group of eight
  lanes (``qkernels.nq_q4k_q8k_lane``: exact integer partials), and every lane folds
  the four record values in record order with the op's declared ``order`` -- so
  the IR's order attribute is honoured for every G, ``seq`` included; when the
  order is ``chunk<ceil(G/4)>/tree`` it calls ``qkernels.nq_q4k_q8k_row_dot_warp``,
  whose schedule is that order. Records whose bytes are not contiguous are staged
  per lane;
- ``quantize_into``: ``qkernels.nq_q8k_quantize_warp`` per record; strided values
  are staged per lane and a strided destination through shared memory.
"""
from __future__ import annotations

from ninfer_ir import ops as O
from ninfer_ir.sumorder import SumOrder

from ninfer_ir.backends.clike import folds
from ninfer_ir.backends.clike.emitter import CLikeEmitter, Emitted
from ninfer_ir.backends.clike.library import GGUF_BLOCK_FUNCTIONS
from ninfer_ir.backends.clike.plan import CTL_LOCK, fail_helpers
from ninfer_ir.backends.clike.scalars import TYPEDEFS

__all__ = ["CudaEmitter", "emit", "emit_module", "BLOCK_THREADS", "ARCH"]

BLOCK_THREADS = 128
ARCH = "sm_90"

_LOCK = (f"    unsigned long long* lock = (unsigned long long*)(ctl + {CTL_LOCK});\n"
         "    while (atomicCAS(lock, 0ull, 1ull) != 0ull) { }\n    __threadfence();\n",
         "    __threadfence();\n    atomicExch(lock, 0ull);\n")


class CudaEmitter(CLikeEmitter):
    target = "cuda"
    KERNEL = 'extern "C" __global__ '
    PRIMS = {
        "fadd32": "__fadd_rn($a, $b)", "fsub32": "__fsub_rn($a, $b)",
        "fmul32": "__fmul_rn($a, $b)", "fdiv32": "__fdiv_rn($a, $b)",
        "fadd64": "__dadd_rn($a, $b)", "fsub64": "__dsub_rn($a, $b)",
        "fmul64": "__dmul_rn($a, $b)", "fdiv64": "__ddiv_rn($a, $b)",
        "fsqrt32": "__fsqrt_rn($a)", "fsqrt64": "__dsqrt_rn($a)",
        "bits64": "return (nq_u64)__double_as_longlong(x);",
        "from_bits64": "return __longlong_as_double((long long)u);",
        "f2d": "(double)($a)", "d2f": "__double2float_rn($a)", "i2f": "(float)$a",
        "i2d": "(double)$a",
        "load": "return *(const $T*)p;", "store": "*($T*)p = v;",
    }
    WARP_OPS = (O.QuantizedDotOp, O.QuantizeIntoOp)
    FN_BIG = "static __device__ __noinline__"
    CONST_DATA = "static __device__ const"

    def library(self) -> str:
        from . import qkernels
        parts = [qkernels.PRELUDE]
        if self.quantized:
            parts += [qkernels.RECORD_FUNCTIONS, GGUF_BLOCK_FUNCTIONS, qkernels.WARP_FUNCTIONS]
        parts += [TYPEDEFS, "#pragma nv_diag_suppress 550\n",
                  fail_helpers("static __device__ __noinline__", _LOCK)]
        return "".join(parts)

    # -- workers and effects -------------------------------------------------------------

    def worker_decls(self, mapping) -> str:
        if mapping == "single":
            return ("const nq_i64 nq_worker = 0, nq_workers = 1;\n"
                    "    const int nq_lane = (int)(threadIdx.x & 31u);")
        if mapping == "warp":
            return ("const nq_i64 nq_worker = ((nq_i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5, "
                    "nq_workers = ((nq_i64)gridDim.x * blockDim.x) >> 5;\n"
                    "    const int nq_lane = (int)(threadIdx.x & 31u);")
        return ("const nq_i64 nq_worker = (nq_i64)blockIdx.x * blockDim.x + threadIdx.x, "
                "nq_workers = (nq_i64)gridDim.x * blockDim.x;")

    def effect(self, stmt: str):
        if self.mode == "thread":
            return super().effect(stmt)
        self.work += 1
        self.line(f"if (nq_lane == 0) {stmt}")
        self.line("__syncwarp();")

    def begin_effect(self):
        self.work += 1
        if self.mode != "thread":
            self.open("if (nq_lane == 0) {")

    def end_effect(self):
        if self.mode != "thread":
            self.close("}")
            self.line("__syncwarp();")

    def zero(self, ptr, nbytes):
        if self.mode == "thread":
            return super().zero(ptr, nbytes)
        z = self.fresh("nq_z")
        self.line(f"for (nq_i64 {z} = nq_lane; {z} < {nbytes}; {z} += 32) {ptr}[{z}] = 0;")
        self.line("__syncwarp();")

    def fail_call(self, call: str) -> str:
        return call if self.mode == "thread" else f"if (nq_lane == 0) {call}"

    # -- the quantized ops in a warp -----------------------------------------------------------

    def quantized_dot_fn(self, op) -> str:
        order = SumOrder.parse(op.attrs.get("order", "seq"))
        self.plan.notes.append(f"quantized_dot %{op.result.name_hint or ''} in {self.unit.name}: "
                               f"one warp per dot, records summed in the declared order {order}")
        if op.pair.stem == "q4k_q8k":
            return qdot_warp(self.lib)
        return qdot_warp_records(self.lib, op.pair)

    def quantize_record_fn(self, op) -> str:
        if op.target.stem == "q8k":
            return quantize_record_warp(self.lib)
        return quantize_record_lane0(self.lib, op.target)


def qdot_warp(lib) -> str:
    """``nq_qdot_warp``: one quantized dot by a whole warp, in any declared order."""
    state, f = folds.fold(lib, _f32(), "add")
    return lib.define("nq_qdot_warp", """$FN float $NAME(const nq_u8* a, nq_i64 a_rs, nq_i64 a_bs,
                            const nq_u8* b, nq_i64 b_rs, nq_i64 b_bs, nq_i64 g,
                            nq_i64 chunk, int tree) {
    const int lane = (int)(threadIdx.x & 31u), group = lane >> 3, j = lane & 7;
    const int stage = a_bs != 1 || b_bs != 1;
    const int al16 = stage || ((((nq_u64)a) | (nq_u64)a_rs) & 15u) == 0u;
    const int al4 = stage || ((((nq_u64)b) | (nq_u64)b_rs) & 3u) == 0u;
    __align__(16) nq_u8 sa[144];
    __align__(16) nq_u8 sb[292];
    $S f;
    if (!stage && tree && chunk == (g + 3) / 4) return nq_q4k_q8k_row_dot_warp(a, a_rs, b, b_rs, g);
    ${S}_start(&f);
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
            if (base + q < g) ${F}_push(&f, vq, chunk, tree);
        }
    }
    return ${F}_finish(&f, chunk, tree, 0.0f);
}
""", big=True, S=state, F=f)


def qdot_warp_records(lib, pair) -> str:
    """``nq_qdot_warp_<stem>``: one quantized dot of any pair by a whole warp: lane l
    computes record ``base + l`` (``pair.c_record``), then the values are pushed into
    the declared order's fold in record order."""
    state, f = folds.fold(lib, _f32(), "add")
    return lib.define("nq_qdot_warp" + folds.pair_suffix(pair), """$FN float $NAME(const nq_u8* a, nq_i64 a_rs, nq_i64 a_bs,
                            const nq_u8* b, nq_i64 b_rs, nq_i64 b_bs, nq_i64 g,
                            nq_i64 chunk, int tree) {
    const int lane = (int)(threadIdx.x & 31u);
    nq_u8 sa[$LR], sb[$RR];
    $S f;
    ${S}_start(&f);
    for (nq_i64 base = 0; base < g; base += 32) {
        const nq_i64 rec = base + lane;
        float v = 0.0f;
        if (rec < g) {
            const nq_u8* pa = a + rec * a_rs;
            const nq_u8* pb = b + rec * b_rs;
            if (a_bs != 1) { for (int k = 0; k < $LR; ++k) sa[k] = pa[k * a_bs]; pa = sa; }
            if (b_bs != 1) { for (int k = 0; k < $RR; ++k) sb[k] = pb[k * b_bs]; pb = sb; }
            v = $REC(pa, pb);
        }
        for (int q = 0; q < 32; ++q) {
            const float vq = __shfl_sync(NQ_FULL_MASK, v, q);
            if (base + q < g) ${F}_push(&f, vq, chunk, tree);
        }
    }
    return ${F}_finish(&f, chunk, tree, 0.0f);
}
""", big=True, S=state, F=f, LR=pair.lhs.record_bytes, RR=pair.rhs.record_bytes,
                      REC=pair.c_record)


def quantize_record_lane0(lib, target) -> str:
    """``nq_quantize_record_warp_<stem>``: one record of a quantize target, computed by
    lane 0 of the warp (``target.c_block``); every lane returns the reason."""
    ld = lib.load(_f32())
    return lib.define(f"nq_quantize_record_warp_{target.stem}", """$FN int $NAME(const nq_u8* v, nq_i64 v_es, nq_u8* out, nq_i64 o_bs) {
    float sv[$N];
    nq_u8 so[$R];
    int reason = 0;
    if ((threadIdx.x & 31u) == 0u) {
        for (int k = 0; k < $N; ++k) sv[k] = $LD(v + k * v_es);
        reason = $BLOCK(sv, so);
        if (reason == 0)
            for (int k = 0; k < $R; ++k) out[k * o_bs] = so[k];
    }
    reason = __shfl_sync(NQ_FULL_MASK, reason, 0);
    __syncwarp();
    return reason;
}
""", big=True, LD=ld, N=target.block_elems, R=target.record_bytes, BLOCK=target.c_block)


def quantize_record_warp(lib) -> str:
    """``nq_quantize_record_warp``: one Q8_K record by a whole warp; 0 or the reason.

    Strided values are staged per lane, a strided destination through shared memory.
    """
    ld = lib.load(_f32())
    return lib.define("nq_quantize_record_warp", """$FN int $NAME(const nq_u8* v, nq_i64 v_es, nq_u8* out, nq_i64 o_bs) {
    __shared__ __align__(16) nq_u8 stage[$WARPS][292];
    __align__(16) float sv[256];
    const int lane = (int)(threadIdx.x & 31u);
    const float* pv = (const float*)v;
    nq_u8* po = o_bs == 1 ? out : stage[threadIdx.x >> 5];
    int reason;
    if (v_es != 4 || ((nq_u64)v & 3u) != 0u) {
        for (int i = 8 * lane; i < 8 * lane + 8; ++i) sv[i] = $LD(v + i * v_es);
        pv = sv;
    }
    reason = nq_q8k_quantize_warp(pv, ((nq_u64)pv & 15u) == 0u, po, ((nq_u64)po & 3u) == 0u);
    __syncwarp();
    if (reason == 0 && o_bs != 1)
        for (int k = lane; k < 292; k += 32) out[k * o_bs] = po[k];
    __syncwarp();
    return reason;
}
""", big=True, LD=ld, WARPS=BLOCK_THREADS // 32)


def _f32():
    from ninfer_ir.types import f32
    return f32


def emit_module(module) -> Emitted:
    """The emitted CUDA source and launch plans of a loop-level module."""
    return CudaEmitter().emit_module(module)


def emit(module, kind: str = "cuda", arch: str = ARCH) -> str:
    """CUDA C (``kind="cuda"``) or PTX (``kind="ptx"``, checked exact) of ``module``."""
    if kind not in ("cuda", "ptx"):
        raise ValueError(f"unknown kind {kind!r} for the cuda target; use 'cuda' or 'ptx'")
    source = emit_module(module).source
    if kind == "cuda":
        return source
    from .nvrtc import check_exact_ptx, compile_to_ptx
    ptx = compile_to_ptx(source, arch)
    check_exact_ptx(ptx)
    return ptx
