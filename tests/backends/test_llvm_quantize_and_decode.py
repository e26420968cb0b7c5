"""One module holding both the Q8_K quantize kernel and a grouped decode GEMV: the two
share LLVM intrinsic declarations (the masked gather), which must agree, at every ISA
level the host runs. An internal code generator failure is a typed CompileError."""
import numpy as np
import pytest

import ninfer_ir as I
from ninfer_ir.backends.llvm.runtime import launcher
from ninfer_ir.backends.llvm.runtime.jit import available_isas
from ninfer_ir.backends.llvm.runtime.launcher import compile_module
from tests.decode.decode_kernels import packed_inputs, same_bits

Q4 = I.formats.get("q4_g64_fp16")


@I.kernel
def quantize_then_gemv(x: I.Tensor[I.f32, "G", 256], r: I.Buffer[I.u8, "G", 292],
                       p: I.Tensor[I.u8, "N", "P"], s: I.Tensor[I.f16, "N", "S"],
                       v: I.Tensor[I.f32, "K"], y: I.Buffer[I.f32, "N"]):
    r[:] = I.quantize(x, format=I.quant.q8_k)
    for n in I.range(p.shape[0]):
        y[n] = I.dot(I.decode(p[n], s[n], format=Q4, k=v.shape[0]), v)


@pytest.mark.parametrize("isa", available_isas())
def test_quantize_and_decode_gemv_in_one_module(isa):
    kernel = compile_module(I.lower(quantize_then_gemv), isa=isa, use_cache=False, threads=1)
    assert kernel.isa == isa
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((3, 256)) * 4).astype(np.float32)
    p, s, v = packed_inputs(Q4, 9, 200, rng)
    got_r, got_y = np.zeros((3, 292), np.uint8), np.zeros(9, np.float32)
    want_r, want_y = np.zeros_like(got_r), np.zeros_like(got_y)
    kernel(x, got_r, p, s, v, got_y)
    I.interpret(quantize_then_gemv, x, want_r, p, s, v, want_y)
    assert same_bits(got_r, want_r) and same_bits(got_y, want_y)


def test_a_code_generator_failure_is_a_compile_error_naming_the_kernel(monkeypatch):
    def broken(self):
        raise TypeError("Type of #1 arg mismatch")
    monkeypatch.setattr(launcher._Lowering, "build_for_jit", broken)
    with pytest.raises(I.CompileError) as e:
        compile_module(I.lower(quantize_then_gemv), use_cache=False)
    msg = str(e.value)
    assert "@quantize_then_gemv" in msg and "TypeError: Type of #1 arg mismatch" in msg
    assert not isinstance(e.value, TypeError)
