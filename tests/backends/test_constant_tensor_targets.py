"""Constant tensors on every target: the interpreter, the CPU backend with 1 and 2
threads and host C give the same bits (table entries with NaN payloads, -0.0 and
subnormals; every dtype); the passes keep a constant as read-only memory (no buffer,
no copy); the compile cache tells apart kernels that differ only in a table; the CUDA
source holds the table as ``__device__`` data."""
from __future__ import annotations

import numpy as np
import pytest

import ninfer_ir as I
from ninfer_ir import ops as O
from ninfer_ir.backends.clike.host import HostKernel
from ninfer_ir.errors import TargetUnavailable
from ninfer_ir.passes import CSE, DCE, LICM, PassManager
from ninfer_ir.testing import compare_targets
from tests.kernels import assert_same_bits

RNG = np.random.default_rng(7)
SPECIAL = np.uint32([0x7FC00001, 0xFFBFFFFF, 0x80000000, 0x00000001, 0x807FFFFF,
                     0x7F800000, 0xFF800000, 0x7FC00000]).view(np.float32)
GRID = RNG.standard_normal(256).astype(np.float32)
GRID[:8] = SPECIAL
MAT = RNG.standard_normal((3, 8)).astype(np.float32)
F16 = RNG.standard_normal(8).astype(np.float16)
F64 = RNG.standard_normal(8)
I32 = RNG.integers(-1000, 1000, 8).astype(np.int32)
U64 = RNG.integers(0, 2**63, 8).astype(np.uint64)
MASK = RNG.random(8) < 0.5
SCALE = np.array(0.5, np.float32)
STEPS = np.arange(32, dtype=np.float32)[::4]


@I.kernel
def grid_rows(codes: I.Tensor[I.u8, "R", "K"], scales: I.Tensor[I.f16, "R"],
              out: I.Buffer[I.f32, "R", "K"]):
    """The shape of an in-kernel grid decode: a 256-entry f32 table indexed by u8 codes,
    times a per-row f16 scale, rows in parallel."""
    for r in I.prange(codes.shape[0]):
        s = I.cast(scales[r], I.f32)
        for k in I.range(codes.shape[1]):
            out[r, k] = GRID[I.cast(codes[r, k], I.index)] * s


@I.kernel
def mixed(x: I.Tensor[I.f32, 8], y: I.Buffer[I.f32, 3], z: I.Buffer[I.f32, 8]):
    for r in I.range(3):
        y[r] = I.dot(MAT[r], x) + I.sum(MAT[r, 2:6]) * SCALE
    z[:] = x * STEPS + MAT[1]
    for i in I.range(8):
        a = I.cast(F16[i], I.f32) + I.cast(F64[i], I.f32) + I.cast(I32[i], I.f32)
        b = I.cast(U64[i] >> 40, I.f32)
        z[i] = z[i] + I.select(MASK[i], a + b, a - b)


@I.kernel
def table_tensor(x: I.Tensor[I.f32, 3, 8]) -> I.Tensor[I.f32, 3, 8]:
    return I.maximum(x * MAT, MAT) - MAT


def runners(kernel):
    yield "cpu, 1 thread", I.compile(kernel, target="cpu", threads=1)
    yield "cpu, 2 threads", I.compile(kernel, target="cpu", threads=2)
    yield "host C", HostKernel(I.lower(kernel))


def all_agree(kernel, *args):
    """Every runner writes (and returns) the interpreter's bits."""
    want_args = [a.copy() for a in args]
    want = I.interpret(kernel, *want_args)
    for name, run in runners(kernel):
        got_args = [a.copy() for a in args]
        got = run(*got_args)
        for g, w in zip(got_args, want_args):
            assert g.tobytes() == w.tobytes(), name
        if want is not None:
            assert_same_bits(got, want)
    return want_args, want


def test_grid_decode_is_bit_exact_everywhere():
    codes = RNG.integers(0, 256, (33, 64)).astype(np.uint8)
    codes[0, :8] = np.arange(8)                    # every special entry is read
    scales = RNG.standard_normal(33).astype(np.float16)
    scales[1] = -0.0
    (_, _, out), _ = all_agree(grid_rows, codes, scales, np.zeros((33, 64), np.float32))
    with np.errstate(invalid="ignore"):
        want = GRID[codes] * scales.astype(np.float32)[:, None]
    finite = ~np.isnan(want)
    assert_same_bits(out[finite], want[finite])
    assert out[0, :1].view(np.uint32)[0] == 0x7FC00001        # the payload survives
    # the two threads really split the rows: the row loop is parallel
    assert any(op.attrs.get("parallel") for op in grid_rows.func.walk()
               if isinstance(op, O.ForOp))


def test_views_dot_reduce_and_every_dtype_are_bit_exact():
    x = RNG.standard_normal(8).astype(np.float32)
    all_agree(mixed, x, np.zeros(3, np.float32), np.zeros(8, np.float32))


def test_tensor_arithmetic_with_constants_is_bit_exact():
    x = RNG.standard_normal((3, 8)).astype(np.float32)
    _, got = all_agree(table_tensor, x)
    assert_same_bits(got, np.maximum(x * MAT, MAT) - MAT)


@I.kernel
def returns_views(i: I.index):
    return MAT[1], MAT[2, i:i + 3], SCALE + I.sum(MAT[0])


def test_returned_constants_and_views_are_bit_exact():
    for name, run in [("interp", lambda i: I.interpret(returns_views, i)), *runners(returns_views)]:
        whole, part, total = run(np.int64(4))
        assert_same_bits(whole, MAT[1])
        assert_same_bits(part, MAT[2, 4:7])
        assert_same_bits(total, I.interpret(returns_views, np.int64(4))[2])


WQ = np.random.default_rng(3).integers(0, 256, (5, 2, 144)).astype(np.uint8)
WQ[:, :, 0:4] = (np.random.default_rng(4).standard_normal((5, 2, 2)) * 0.01) \
    .astype(np.float16).view(np.uint8)


@I.kernel
def constant_weights_gemv(x: I.Tensor[I.f32, 2, 256], y: I.Buffer[I.f32, 5]):
    xq = I.quantize(x, format=I.quant.q8_k)
    for n in I.range(5):
        y[n] = I.quantized_dot(WQ[n], xq, lhs_format=I.quant.q4_k, rhs_format=I.quant.q8_k,
                               acc_dtype=I.f32)


def test_quantized_rows_of_constant_weights_use_the_library_kernel_and_are_exact():
    lowered = I.lower(constant_weights_gemv, "cpu")
    assert any(isinstance(op, O.KernelCallOp) for op in lowered.walk())
    x = np.random.default_rng(5).standard_normal((2, 256)).astype(np.float32)
    all_agree(constant_weights_gemv, x, np.zeros(5, np.float32))


def test_the_passes_keep_a_constant_as_read_only_memory():
    lowered = I.lower(grid_rows)
    consts = [op for op in lowered.walk() if isinstance(op, O.ConstantTensorOp)]
    assert len(consts) == 1 and consts[0].parent is lowered.funcs[0].body
    assert not any(isinstance(op, (O.AllocOp, O.CopyOp)) for op in lowered.walk())
    lowered = I.lower(table_tensor)               # elementwise on tensors: loads in the loop
    assert not any(isinstance(op, O.AllocOp) for op in lowered.walk())
    assert any(isinstance(op, O.LoadOp) and isinstance(getattr(op.source, "op", None),
                                                       O.ConstantTensorOp)
               for op in lowered.walk())


LOOP = """func @f(%y: buffer<f32[4]>) {
  %c0 = constant() {value = 0} : index
  %c1 = constant() {value = 1} : index
  %c4 = constant() {value = 4} : index
  for(%c0, %c4, %c1) ({
  ^(%i: index):
    %t = constant_tensor() {value = dense<f32[4] [1.0, 2.0, 3.0, 4.0]>} : tensor<f32[4]>
    %u = constant_tensor() {value = dense<f32[4] [1.0, 2.0, 3.0, 4.0]>} : tensor<f32[4]>
    %unused = constant_tensor() {value = dense<f32[1] [9.0]>} : tensor<f32[1]>
    %a = load(%t, %i) : f32
    %b = load(%u, %i) : f32
    %s = add(%a, %b) : f32
    store(%s, %y, %i)
    yield()
  })
  return()
}
"""


def test_cse_merges_licm_hoists_and_dce_drops_constants():
    m = I.parse(LOOP)
    PassManager([CSE(), LICM(), DCE()]).run(m)
    consts = [op for op in m.walk() if isinstance(op, O.ConstantTensorOp)]
    assert len(consts) == 1                        # equal data merged, the unused one gone
    assert consts[0].parent is m.funcs[0].body     # out of the loop
    y = np.zeros(4, np.float32)
    I.compile(m, target="cpu")(y)
    assert y.tolist() == [2.0, 4.0, 6.0, 8.0]


def test_cpu_code_holds_a_private_constant_global():
    text = I.emit(grid_rows, target="cpu", kind="llvm")
    globals_ = [line for line in text.splitlines() if line.startswith('@"nq.const.')]
    assert len(globals_) == 1
    assert "private unnamed_addr constant [1024 x i8]" in globals_[0]
    assert 'c"\\01\\00\\c0\\7f' in globals_[0]          # 0x7FC00001, little-endian


def _kernel_reading(table):
    @I.kernel
    def lookup(codes: I.Tensor[I.u8, "N"], out: I.Buffer[I.f32, "N"]):
        for i in I.range(codes.shape[0]):
            out[i] = table[I.cast(codes[i], I.index)]
    return lookup


def test_kernels_differing_only_in_a_table_get_their_own_cache_entries(tmp_path):
    cache = tmp_path / "cache"
    one = np.arange(4, dtype=np.float32)
    other = one.copy()
    other.view(np.uint32)[3] ^= 1                  # one bit of one entry
    first = I.compile(_kernel_reading(one), target="cpu", cache_dir=cache)
    second = I.compile(_kernel_reading(other), target="cpu", cache_dir=cache)
    assert not first.jit.cache_hit and not second.jit.cache_hit
    assert first.jit.key != second.jit.key
    assert len([p for p in cache.iterdir() if p.suffix == ".o"]) == 2
    again = I.compile(_kernel_reading(one.copy()), target="cpu", cache_dir=cache)
    assert again.jit.cache_hit and again.jit.key == first.jit.key
    codes = np.uint8([3, 0])
    for run, table in ((first, one), (second, other), (again, one)):
        out = np.zeros(2, np.float32)
        run(codes, out)
        assert_same_bits(out, table[codes])


def test_cuda_source_holds_the_table_as_device_data():
    source = I.emit(grid_rows, target="cuda", kind="cuda")
    (decl,) = [line for line in source.splitlines() if line.startswith("static __device__ const")]
    assert "nq_u32 nq_const_" in decl and "[256] = {0x7fc00001u,0xffbfffffu,0x80000000u," in decl
    try:
        ptx = I.emit(grid_rows, target="cuda", kind="ptx")
    except TargetUnavailable as e:
        pytest.skip(f"no NVRTC: {e}")
    assert ".global .align 4 .b8 nq_const_" in ptx and "fma.rn.f32" not in ptx


@pytest.mark.gpu
def test_cuda_reads_the_table_bit_for_bit():
    from ninfer_ir.backends.cuda.runtime import gpu_available
    ok, why = gpu_available()
    if not ok:
        pytest.skip(f"no GPU: {why}")
    codes = RNG.integers(0, 256, (9, 40)).astype(np.uint8)
    scales = RNG.standard_normal(9).astype(np.float16)
    compare_targets(grid_rows, codes, scales, np.zeros((9, 40), np.float32),
                    targets=("interp", "cuda"))
    compare_targets(mixed, RNG.standard_normal(8).astype(np.float32), np.zeros(3, np.float32),
                    np.zeros(8, np.float32), targets=("interp", "cuda"))
