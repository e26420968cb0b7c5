"""The CUDA launcher's call boundary: checks before any launch, typed errors."""
from __future__ import annotations

import numpy as np
import pytest

from ninfer_ir.backends.cuda import nvrtc, qkernels, runtime
from ninfer_ir.errors import DomainError, TargetUnavailable, VerifyError


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(runtime, "_probe", lambda: (False, "no CUDA device (test)"))


def test_gpu_available_answers_with_a_reason():
    ok, why = runtime.gpu_available()
    assert isinstance(ok, bool) and isinstance(why, str) and why


def test_without_gpu_the_target_is_unavailable(no_gpu):
    x = np.zeros((2, 256), dtype=np.float32)
    w = np.zeros((3, 2, 144), dtype=np.uint8)
    with pytest.raises(TargetUnavailable, match=r"cuda: no CUDA device \(test\)"):
        runtime.quantize_q8k(x)
    with pytest.raises(TargetUnavailable):
        runtime.gemv_q4k(w, x)
    with pytest.raises(TargetUnavailable):
        runtime.GemvQ4K(w)
    with pytest.raises(TargetUnavailable):
        runtime.module()


def test_this_machine_without_gpu_is_unavailable():
    ok, _ = runtime.gpu_available()
    if ok:
        pytest.skip("a GPU is present")
    with pytest.raises(TargetUnavailable):
        runtime.quantize_q8k(np.zeros((1, 256), dtype=np.float32))


@pytest.mark.parametrize("values", [
    np.zeros((2, 255), dtype=np.float32),
    np.zeros((2, 256), dtype=np.float64),
    np.zeros((2, 256), dtype=np.int32),
    np.zeros(256, dtype=np.float32),
    np.zeros((1, 2, 256), dtype=np.float32),
    [[0.0] * 256],
])
def test_quantize_argument_errors_come_first(no_gpu, values):
    with pytest.raises(VerifyError, match=r"quantize: values must be f32\[G,256\]"):
        runtime.quantize_q8k(values)


@pytest.mark.parametrize("w, x, match", [
    (np.zeros((3, 2, 145), np.uint8), np.zeros((2, 256), np.float32), r"w must be u8\[N,G,144\]"),
    (np.zeros((3, 288), np.uint8), np.zeros((2, 256), np.float32), r"w must be u8\[N,G,144\]"),
    (np.zeros((3, 2, 144), np.int8), np.zeros((2, 256), np.float32), r"w must be u8"),
    (np.zeros((3, 2, 144), np.uint8), np.zeros((2, 256), np.float16), r"values must be f32"),
    (np.zeros((3, 2, 144), np.uint8), np.zeros((3, 256), np.float32), r"same number of records"),
])
def test_gemv_argument_errors_come_first(no_gpu, w, x, match):
    with pytest.raises(VerifyError, match=match):
        runtime.gemv_q4k(w, x)


class _Word:
    def __init__(self, value):
        self.value = value

    def get(self):
        return np.array([self.value], dtype=np.uint64)


def test_status_word_becomes_the_oracles_domain_error():
    runtime._raise_status(_Word(2**64 - 1))            # clear: nothing raised
    with pytest.raises(DomainError) as info:
        runtime._raise_status(_Word(130 * 8 + 2))
    assert info.value.record == 130 and info.value.reason == 2
    assert "record 130" in str(info.value)


def test_options_are_exact():
    assert "-fmad=false" in runtime.OPTIONS
    assert "--std=c++17" in runtime.OPTIONS
    assert not any("fast" in o or "ftz=true" in o for o in runtime.OPTIONS)


def _cupy_nvrtc():
    try:
        from cupy_backends.cuda.libs import nvrtc as cupy_nvrtc
        cupy_nvrtc.getVersion()
    except Exception as exc:
        pytest.skip(f"CuPy's NVRTC is not usable here ({exc})")
    return cupy_nvrtc


@pytest.mark.parametrize("arch", [90, 80])
def test_runtime_compile_path_is_exact_without_a_gpu(arch):
    # The very compile the launcher does on a GPU machine, minus the load.
    _cupy_nvrtc()
    ptx, cubin = runtime._cupy_nvrtc_compile(qkernels.kernel_source(), arch)
    assert f".target sm_{arch}" in ptx
    nvrtc.check_exact_ptx(ptx)
    assert "div.rn.f32" in ptx and cubin[:4] == b"\x7fELF"


def test_cupy_rawmodule_flags_would_flush_subnormals():
    # Why the launcher does not use cupy.RawModule(code=...): CuPy appends
    # -ftz=true after the caller's options, and the last one wins.
    cupy_nvrtc = _cupy_nvrtc()
    prog = cupy_nvrtc.createProgram(qkernels.kernel_source(), "k.cu", (), ())
    try:
        cupy_nvrtc.compileProgram(prog, ("--gpu-architecture=compute_90", *runtime.OPTIONS,
                                         "-ftz=true"))
        ptx = cupy_nvrtc.getPTX(prog)
    finally:
        cupy_nvrtc.destroyProgram(prog)
    ptx = ptx.decode() if isinstance(ptx, bytes) else ptx
    with pytest.raises(nvrtc.CompileError, match="inexact"):
        nvrtc.check_exact_ptx(ptx)


def test_runtime_compile_errors_carry_the_log():
    _cupy_nvrtc()
    with pytest.raises(nvrtc.CompileError) as info:
        runtime._cupy_nvrtc_compile("extern \"C\" __global__ void k() { nq_nope(); }", 90)
    assert "nq_nope" in info.value.log


def test_check_exact_ptx():
    nvrtc.check_exact_ptx("\tmul.rn.f32 \t%f3, %f2, %f1;\n\tcvt.rn.f32.s32 %f1, %r1;")
    for line in ("\tfma.rn.f32 %f4, %f1, %f2, %f3;", "\tmul.ftz.f32 %f3, %f2, %f1;",
                 "\tsetp.gt.ftz.f32 %p1, %f1, %f2;", "\tdiv.approx.f32 %f3, %f1, %f2;",
                 "\tdiv.full.f32 %f3, %f1, %f2;"):
        with pytest.raises(nvrtc.CompileError):
            nvrtc.check_exact_ptx(line)


def test_target_arch_prefers_the_device_arch(monkeypatch):
    _cupy_nvrtc()
    from cupy_backends.cuda.libs import nvrtc as cupy_nvrtc
    monkeypatch.setattr(cupy_nvrtc, "getSupportedArchs", lambda: (75, 80, 86, 90, 100))
    assert runtime._target_arch(90) == 90
    assert runtime._target_arch(89) == 86
    assert runtime._target_arch(120) == 100
