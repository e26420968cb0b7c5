"""The pipeline's corners found by differential fuzzing: compile time of a static-length
float min/max over a buffer view inside a loop, ``quantize`` into a buffer whose record
count is static while the input's is symbolic, the same ``copy`` size error on every
target, and the NaN that ``rem`` and ``+ - * /`` produce from non-NaN operands on host C
(and in the CUDA C text, which shares its helpers)."""
import time

import numpy as np
import pytest

import ninfer_ir as I
from ninfer_ir.backends.clike.host import HostKernel
from ninfer_ir.backends.interp.interpreter import interpret
from ninfer_ir.backends.llvm.runtime.launcher import CompiledKernel
from ninfer_ir.errors import TargetUnavailable

GUARD_LEN = 39       # compiled in well under a second; minutes before the fold was linear


def bits(a):
    a = np.ascontiguousarray(a)
    return a.reshape(-1).view(f"u{a.dtype.itemsize}")


# --- compile time of a float min/max fold in a loop --------------------------------------

@I.kernel
def row_min(o: I.Buffer[I.f32, None], y: I.Buffer[I.f32, 64]):
    for i in I.range(o.shape[0]):
        o[i] = I.min(y[0:GUARD_LEN])


@I.kernel
def row_max64(o: I.Buffer[I.f64, None], y: I.Buffer[I.f64, 64]):
    for i in I.range(o.shape[0]):
        o[i] = I.max(y[3:3 + GUARD_LEN])


@pytest.mark.parametrize("kernel", [row_min, row_max64], ids=["min_f32", "max_f64"])
def test_static_float_minmax_fold_in_a_loop_compiles_fast(kernel, tmp_path):
    """A generous bound (the fixed code takes well under a second, the old one did not
    finish in minutes); a fresh cache directory so that the compile really happens."""
    start = time.perf_counter()
    compiled = I.compile(kernel, target="cpu", cache_dir=tmp_path)
    assert time.perf_counter() - start < 30.0
    dt = np.float32 if kernel is row_min else np.float64
    rng = np.random.default_rng(3)
    for fill in ("plain", "zeros", "nan"):
        y = rng.standard_normal(64).astype(dt)
        if fill == "zeros":
            y[:] = 0.0
            y[5] = -0.0
        elif fill == "nan":
            y[7] = np.nan
        got, want = np.zeros(5, dt), np.zeros(5, dt)
        compiled(got, y)
        I.interpret(kernel, want, y)
        assert np.array_equal(bits(got), bits(want)), fill


FOLD = """func @f(%x: tensor<{t}[N]>, %o: buffer<{t}[2]>) {{
  %c0 = constant() {{value = 0}} : index
  %c1 = constant() {{value = 1}} : index
  %lo = reduce(%x) {{kind = "min"}} : tensor<{t}[]>
  %l = load(%lo) : {t}
  store(%l, %o, %c0)
  %hi = reduce(%x) {{kind = "max"}} : tensor<{t}[]>
  %h = load(%hi) : {t}
  store(%h, %o, %c1)
  return()
}}"""

SIGNALLING = {"f16": 0x7D01, "f32": 0x7F800001, "f64": 0x7FF0000000000001}


@pytest.mark.parametrize("t", ["f16", "f32", "f64"])
def test_float_minmax_fold_keeps_the_interpreters_nan_and_zero_rules(t):
    """Every length from 0 to 9 on data with -0/+0, infinities and NaNs of odd payloads:
    one element is returned as it is (payload kept), a NaN among several gives the
    canonical NaN, -0 < +0."""
    module = I.parse(FOLD.format(t=t))
    kernel = CompiledKernel(module)
    dt = np.dtype({"f16": np.float16, "f32": np.float32, "f64": np.float64}[t])
    u = np.dtype(f"u{dt.itemsize}")
    odd_nan = np.asarray(SIGNALLING[t], u).view(dt)
    pools = [np.array([0.0, -0.0, 1.0, -1.0], dt), np.array([-0.0, 0.0], dt),
             np.array([np.inf, -np.inf, 2.0], dt), np.array([3.0, odd_nan, -2.0], dt),
             np.array([odd_nan, -np.nan], dt)]
    rng = np.random.default_rng(11)
    for pool in pools:
        for n in range(10):
            x = rng.choice(pool, n)
            got, want = np.zeros(2, dt), np.zeros(2, dt)
            kernel(x, got)
            interpret(module, x, want)
            assert np.array_equal(bits(got), bits(want)), (x.view(u), got.view(u), want.view(u))


# --- quantize into a buffer with a static record count ------------------------------------

@I.kernel
def quantize_static(x: I.Tensor[I.f32, "G", 256], r: I.Buffer[I.u8, 3, 292]):
    r[:] = I.quantize(x, format=I.quant.q8_k)


@I.kernel
def quantize_static_fused(x: I.Tensor[I.f32, "G", 256], r: I.Buffer[I.u8, 3, 292]):
    r[:] = I.quantize(x * 2.0, format=I.quant.q8_k)


@pytest.mark.parametrize("kernel", [quantize_static, quantize_static_fused],
                         ids=["input", "fused"])
def test_quantize_into_static_records_from_symbolic_input(kernel):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 256)).astype(np.float32)
    want, got = np.zeros((3, 292), np.uint8), np.zeros((3, 292), np.uint8)
    I.interpret(kernel, x, want)
    I.compile(kernel, target="cpu")(x, got)
    assert np.array_equal(got, want)
    scale = np.float32(2.0) if kernel is quantize_static_fused else np.float32(1.0)
    assert np.array_equal(want, I.quantize(x * scale, format=I.quant.q8_k))
    for g in (2, 4):
        bad = rng.standard_normal((g, 256)).astype(np.float32)
        errors = []
        for target in ("interp", "cpu"):
            r = np.full((3, 292), 7, np.uint8)
            with pytest.raises(I.DomainError) as e:
                I.compile(kernel, target=target)(bad, r)
            errors.append(str(e.value))
            assert (r == 7).all(), target          # nothing written before the error
        assert errors[0] == errors[1]
        assert "axis 0" in errors[0]


@I.kernel
def copy_rows(x: I.Tensor[I.f32, "G", 4], r: I.Buffer[I.f32, 3, 4]):
    r[:] = x


def test_copy_size_error_is_the_same_on_every_target():
    msgs = []
    for target in ("interp", "cpu"):
        with pytest.raises(I.DomainError) as e:
            I.compile(copy_rows, target=target)(np.zeros((2, 4), np.float32),
                                                np.zeros((3, 4), np.float32))
        msgs.append(str(e.value))
    text = """func @f(%x: tensor<f32[N,4]>, %r: buffer<f32[3,4]>) {
  copy(%x, %r)
  return()
}"""
    with pytest.raises(I.DomainError) as e:
        CompiledKernel(I.parse(text))(np.zeros((2, 4), np.float32), np.zeros((3, 4), np.float32))
    msgs.append(str(e.value))
    assert len(set(msgs)) == 1 and "axis 0" in msgs[0], msgs


# --- the NaN produced from non-NaN operands ------------------------------------------------

ARITH = """func @f(%x: tensor<{t}[N]>, %y: tensor<{t}[N]>, %o: buffer<{t}[5,N]>) {{
  %c0 = constant() {{value = 0}} : index
  %c1 = constant() {{value = 1}} : index
  %c2 = constant() {{value = 2}} : index
  %c3 = constant() {{value = 3}} : index
  %c4 = constant() {{value = 4}} : index
  %n = dim(%x) {{axis = 0}} : index
  for(%c0, %n, %c1) ({{
  ^(%i: index):
    %a = load(%x, %i) : {t}
    %b = load(%y, %i) : {t}
    %r = rem(%a, %b) : {t}
    store(%r, %o, %c0, %i)
    %s = sub(%a, %b) : {t}
    store(%s, %o, %c1, %i)
    %m = mul(%a, %b) : {t}
    store(%m, %o, %c2, %i)
    %d = div(%a, %b) : {t}
    store(%d, %o, %c3, %i)
    %e = add(%a, %b) : {t}
    store(%e, %o, %c4, %i)
    yield()
  }})
  return()
}}"""

PRODUCED = {"f16": 0xFE00, "f32": 0xFFC00000, "f64": 0xFFF8000000000000}


def _arith_inputs(dt):
    x = np.array([1.0, np.inf, -np.inf, 0.0, 5.5, -7.25, 0.0, np.inf, 3.0], dt)
    y = np.array([0.0, 2.0, -0.0, 0.0, 2.0, 0.5, np.inf, -np.inf, -np.inf], dt)
    return x, y


def _host_kernel(module):
    try:
        return HostKernel(module)
    except TargetUnavailable as e:        # no C compiler on this machine
        pytest.skip(str(e))


@pytest.mark.parametrize("t", ["f16", "f32", "f64"])
def test_produced_nan_is_the_same_on_interpreter_cpu_and_host_c(t):
    module = I.parse(ARITH.format(t=t))
    dt = np.dtype({"f16": np.float16, "f32": np.float32, "f64": np.float64}[t])
    u = np.dtype(f"u{dt.itemsize}")
    x, y = _arith_inputs(dt)
    outs = {}
    for name, run in (("interp", lambda *a: interpret(module, *a)),
                      ("cpu", CompiledKernel(module)), ("host C", _host_kernel(module))):
        o = np.zeros((5, x.size), dt)
        run(x, y, o)
        outs[name] = o.view(u)
    o = outs["interp"]
    assert o[0][0] == o[0][1] == o[0][2] == o[0][3] == PRODUCED[t]     # x % 0, inf % y
    assert o[3][3] == o[2][6] == o[4][7] == PRODUCED[t]                 # 0/0, 0*inf, inf-inf
    for name in ("cpu", "host C"):
        assert np.array_equal(outs[name], outs["interp"]), (name, outs[name], outs["interp"])


def test_cuda_helpers_pin_the_produced_nan():
    """The CUDA C text (which cannot run here) holds the same helpers as host C: the
    produced NaN is selected after ``__fadd_rn``-style primitives and in ``rem``."""
    from ninfer_ir.backends.cuda.emitter import emit
    for t, word in (("f32", "0xffc00000u"), ("f64", "0xfff8000000000000ull")):
        source = emit(I.parse(ARITH.format(t=t)))
        for op in ("add", "sub", "mul", "div", "rem"):
            start = source.index(f" nq_{op}_{t}(")
            helper = source[start:source.index("\n}\n", start)]
            assert word in helper, helper
            if op != "rem":
                assert "_rn(a, b)" in helper, helper      # the CUDA primitive, then the pin
