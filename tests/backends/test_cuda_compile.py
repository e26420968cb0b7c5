"""The CUDA kernels compile without a GPU, with exact f32 arithmetic in the PTX."""
from __future__ import annotations

import hashlib
import re

import pytest

from ninfer_ir.backends.cuda import nvrtc, qkernels
from ninfer_ir.errors import TargetUnavailable

ARCHS = ("sm_90", "sm_80")

# sha256 of qkernels.kernel_source(): a change to the emitted CUDA C shows here.
SOURCE_SHA256 = "74125cec125f3d12b8cc73d8cff2f0361369d83edf14df6c94ffd9b9072b5dc6"


def _compilers():
    return list(nvrtc.available_compilers())


def test_nvrtc_is_available():
    # CI installs the project's `cuda` extra (cuda-python + nvidia-cuda-nvrtc).
    found = nvrtc.available_compilers()
    assert "nvrtc" in found, nvrtc._nvrtc()[1]
    assert re.fullmatch(r"\d+\.\d+", found["nvrtc"])


def test_nvrtc_library_is_found_in_its_wheel():
    import importlib.util
    if importlib.util.find_spec("nvidia") is None:
        pytest.skip("the nvidia-cuda-nvrtc wheel is not installed")
    path = nvrtc._preload_wheel_nvrtc()
    assert path is not None and "libnvrtc.so" in path


@pytest.fixture(scope="module", params=_compilers() or ["none"])
def compiler(request):
    if request.param == "none":
        pytest.skip("no CUDA compiler here")
    return request.param


@pytest.mark.parametrize("arch", ARCHS)
def test_kernels_compile_to_exact_ptx(compiler, arch):
    ptx = nvrtc.compile_to_ptx(qkernels.kernel_source(), arch, compiler=compiler)
    assert f".target sm_{arch[3:]}" in ptx
    for entry in ("q8k_quantize", "q4k_gemv"):
        assert re.search(rf"\.entry\s+{entry}\s*\(", ptx), entry
    assert "fma.rn.f32" not in ptx
    assert ".ftz" not in ptx
    assert "div.approx" not in ptx and "div.full" not in ptx
    assert "div.rn.f32" in ptx                  # inverse and ds: IEEE division
    assert "cvt.rn.f32.s32" in ptx              # f32(S), f32(T): one rounding
    assert "cvt.rni.s32.f32" in ptx             # round to nearest even
    assert "sub.rn.f32" in ptx and "mul.rn.f32" in ptx and "add.rn.f32" in ptx
    assert "shfl.sync.down" in ptx              # the adjacent-pair tree
    assert "shfl.sync.bfly.b32" in ptx          # integer / max-min partials only


@pytest.mark.parametrize("arch", ARCHS)
def test_kernels_assemble(compiler, arch):
    cubin = nvrtc.compile_to_cubin(qkernels.kernel_source(), arch, compiler=compiler)
    assert cubin[:4] == b"\x7fELF"


@pytest.mark.parametrize("arch", ARCHS)
def test_device_library_compiles_alone(compiler, arch):
    # What the C-like emitter includes: no kernels, and no warnings about unused helpers.
    ptx = nvrtc.compile_to_ptx(qkernels.device_source(), arch, compiler=compiler)
    assert ".entry" not in ptx


EMITTED_STYLE = r"""
extern "C" __global__ void emitted(const nq_u8* w, nq_i64 w_row, nq_i64 w_rec, const nq_u8* xq,
                                   nq_i64 x_rec, nq_i64 g, nq_i64 n, float* y, float* z) {
    nq_i64 row = (nq_i64)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (row >= n) return;
    float r = nq_q4k_q8k_row_dot_warp(w + row * w_row, w_rec, xq, x_rec, g);
    if ((threadIdx.x & 31u) == 0) {
        y[row] = r;
        z[row] = nq_q4k_q8k_dot_seq(w + row * w_row, w_rec, xq, x_rec, g);
    }
}
"""


@pytest.mark.parametrize("arch", ARCHS)
def test_device_library_is_includable(compiler, arch):
    # How the C-like emitter uses it: its own kernel after device_source().
    ptx = nvrtc.compile_to_ptx(qkernels.device_source() + EMITTED_STYLE, arch,
                               compiler=compiler)
    assert re.search(r"\.entry\s+emitted\s*\(", ptx)
    assert "fma.rn.f32" not in ptx and ".ftz" not in ptx


def test_butterfly_never_touches_f32_sums():
    # An XOR butterfly permutes records: it may carry the integer partials of S_b
    # and T_b and the block max/min, never a partial f32 sum.
    shuffled = re.findall(r"__shfl_xor_sync\(NQ_FULL_MASK, (\w+),", qkernels.WARP_FUNCTIONS)
    assert set(shuffled) == {"s", "t", "mx", "mn"}
    assert "float acc = -0.0f;" in qkernels.WARP_FUNCTIONS


def test_source_snapshot():
    digest = hashlib.sha256(qkernels.kernel_source().encode()).hexdigest()
    assert digest == SOURCE_SHA256, (
        "the CUDA source changed; if intended, update SOURCE_SHA256 to " + digest)


def test_gemv_sum_order_text():
    assert qkernels.gemv_sum_order(0) == "chunk<1>/tree"
    assert qkernels.gemv_sum_order(1) == "chunk<1>/tree"
    assert qkernels.gemv_sum_order(4) == "chunk<1>/tree"
    assert qkernels.gemv_sum_order(5) == "chunk<2>/tree"
    assert qkernels.gemv_sum_order(16) == "chunk<4>/tree"
    assert qkernels.gemv_sum_order(43) == "chunk<11>/tree"
    with pytest.raises(ValueError):
        qkernels.gemv_sum_order(-1)


def test_compile_error_carries_the_log(compiler):
    bad = qkernels.PRELUDE + "extern \"C\" __global__ void k(float* y) { y[0] = nq_nope(1.0f); }\n"
    with pytest.raises(nvrtc.CompileError) as info:
        nvrtc.compile_to_ptx(bad, "sm_90", compiler=compiler)
    assert "nq_nope" in str(info.value) and "nq_nope" in info.value.log
    assert "/tmp" not in str(info.value)


@pytest.mark.parametrize("opt", ["--use_fast_math", "-fmad=true", "--ftz=true",
                                 "-prec-div=false"])
def test_inexact_options_are_refused(opt):
    with pytest.raises(ValueError, match="exact"):
        nvrtc.compile_to_ptx(qkernels.kernel_source(), "sm_90", extra_opts=(opt,))


def test_bad_arch_and_compiler_names():
    with pytest.raises(ValueError, match="architecture"):
        nvrtc.compile_to_ptx(qkernels.kernel_source(), "gfx90a")
    with pytest.raises(ValueError, match="compiler"):
        nvrtc.compile_to_ptx(qkernels.kernel_source(), "sm_90", compiler="clang")


def test_no_compiler_is_target_unavailable(monkeypatch):
    monkeypatch.setattr(nvrtc, "_nvrtc", lambda: (None, "cuda.bindings is not importable"))
    monkeypatch.setattr(nvrtc, "_nvcc", lambda: (None, "nvcc is not on PATH"))
    nvrtc._compile.cache_clear()
    try:
        with pytest.raises(TargetUnavailable, match="nvcc is not on PATH"):
            nvrtc.compile_to_ptx("extern \"C\" __global__ void k() {}\n", "sm_90")
        assert nvrtc.available_compilers() == {}
    finally:
        nvrtc._compile.cache_clear()
