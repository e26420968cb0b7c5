"""The K-quant dots Q2_K/Q3_K/Q5_K/Q6_K x Q8_K through the whole compiler: eager
``I.quantized_dot``, the interpreter, the CPU backend (single dots in every order, staged
views, the GEMV rows fast path on 1 and 2 threads and on every ISA level) and host C,
all bit for bit; G = 1 keeps a lone -0.0; the CUDA source compiles to PTX without FMA
or flush-to-zero."""
import numpy as np
import pytest

import ninfer_ir as I
from ninfer_ir.backends.clike.host import HostKernel
from ninfer_ir.backends.cuda.emitter import emit as emit_cuda
from ninfer_ir.backends.interp import interpret
from ninfer_ir.backends.llvm.runtime.launcher import CompiledKernel, compile_module
from ninfer_ir.numerics import quantized_kquants as K
from ninfer_ir.numerics.quantized import quantize_q8k
from ninfer_ir.quant import PAIRS

NAMES = sorted(K.KQUANTS)

DOT = """func @qd(%w: tensor<u8[G,R]>, %x: tensor<u8[G,292]>, %out: buffer<f32[]>) {returns = 1} {
  %r = quantized_dot(%w, %x) {acc_dtype = f32, lhs_format = #FMT, order = "ORDER", rhs_format = #q8_k} : tensor<f32[]>
  %v = load(%r) : f32
  store(%v, %out)
  return()
}"""

GEMV = """func @gemv(%w: tensor<u8[N,G,R]>, %x: tensor<f32[G,256]>, %y: buffer<f32[N]>) {
  %xq = quantize(%x) {format = #q8_k} : tensor<u8[G,292]>
  %N = dim(%w) {axis = 0} : index
  %c0 = constant() {value = 0} : index
  %c1 = constant() {value = 1} : index
  for(%c0, %N, %c1) ({
  ^(%n: index):
    %wn = subview(%w, %n) {axes = "i::"} : tensor<u8[G,R]>
    %d = quantized_dot(%wn, %xq) {acc_dtype = f32, lhs_format = #FMT, order = "seq", rhs_format = #q8_k} : tensor<f32[]>
    %s = load(%d) : f32
    store(%s, %y, %n)
    yield()
  })
  return()
}"""


def text(template, name, order="seq"):
    kind = K.KQUANTS[name]
    return (template.replace("FMT", name).replace("ORDER", order)
            .replace(",R]", f",{kind.record_bytes}]"))


def records(rng, name, *lead, specials=False):
    kind = K.KQUANTS[name]
    w = rng.integers(0, 256, size=(*lead, kind.record_bytes), dtype=np.uint8)
    for off in [kind.d] + ([kind.dmin] if kind.has_mins else []):
        h = (rng.standard_normal(lead) * 1e-3).astype("<f2")
        if specials and h.size:
            h.reshape(-1)[::3] = np.array([np.inf, np.nan, -0.0, 6e-8])[
                np.arange(len(h.reshape(-1)[::3])) % 4]
        w[..., off:off + 2] = h[..., None].view(np.uint8)
    return w


def same(a, b):
    """Bit equality of f32 arrays; any NaN matches any NaN (payloads are not specified)."""
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    assert a.shape == b.shape
    both_nan = np.isnan(a) & np.isnan(b)
    assert np.all(both_nan | (a.view(np.uint32) == b.view(np.uint32))), (a, b)


def seq_fold(name, w, xq):
    v = K.record_values(K.KQUANTS[name], w, K.Q8Side(xq))
    out = np.zeros((), np.float32)
    if v.shape[-1]:
        out = v[..., 0].copy()
        with np.errstate(all="ignore"):
            for g in range(1, v.shape[-1]):
                out = np.add(out, v[..., g], dtype=np.float32)
    return out


@pytest.mark.parametrize("name", NAMES)
def test_eager_dot_is_the_fold_of_the_oracle_values(name):
    rng = np.random.default_rng(1)
    fmt = getattr(I.quant, name)
    for g in (1, 2, 7):
        w = records(rng, name, g, specials=(g == 7))
        xq = quantize_q8k(rng.standard_normal((g, 256)).astype(np.float32))
        got = I.quantized_dot(w, xq, lhs_format=fmt, rhs_format=I.quant.q8_k,
                              acc_dtype=I.f32)
        same(np.asarray(got, np.float32).reshape(()), seq_fold(name, w, xq).reshape(()))


@pytest.mark.parametrize("name", NAMES)
def test_wrong_record_width_is_a_verify_error(name):
    rng = np.random.default_rng(2)
    other = "q6_k" if name != "q6_k" else "q2_k"
    w = records(rng, other, 2)
    xq = quantize_q8k(rng.standard_normal((2, 256)).astype(np.float32))
    with pytest.raises(I.VerifyError):
        I.quantized_dot(w, xq, lhs_format=getattr(I.quant, name), rhs_format=I.quant.q8_k,
                        acc_dtype=I.f32)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("order", ["seq", "tree", "chunk<3>/tree"])
def test_compiled_dot_equals_the_interpreter(name, order):
    rng = np.random.default_rng(3)
    module = I.parse(text(DOT, name, order))
    kernel = CompiledKernel(module)
    host = HostKernel(module) if order == "seq" else None
    rec = K.KQUANTS[name].record_bytes
    for g in (0, 1, 2, 5):
        w = records(rng, name, g, specials=(g == 5))
        xq = quantize_q8k(rng.standard_normal((g, 256)).astype(np.float32))
        want = interpret(module, w, xq)
        same(kernel(w, xq), want)
        if host is not None:
            same(host(w, xq), want)
        wide = np.zeros((g, 2, rec), np.uint8)
        wide[:, 1] = w
        spread = np.zeros((g, 584), np.uint8)
        spread[:, ::2] = xq
        same(kernel(wide[:, 1], spread[:, ::2]), want)            # strided: staged


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("threads", [1, 2])
def test_gemv_fast_path_equals_the_interpreter(name, threads):
    rng = np.random.default_rng(4)
    n, g = 1025, 9             # > 8192 records: the pool is used; a block of 8 records + 1
    w = records(rng, name, n, g)
    x = rng.standard_normal((g, 256)).astype(np.float32)
    module = I.parse(text(GEMV, name))
    want = np.zeros(n, np.float32)
    interpret(module, w, x, want)
    kernel = compile_module(I.lower(module), threads=threads)
    assert f"ninfer_{name.replace('_', '')}_q8k_dot_rows" in kernel.asm()
    y = np.full(n, np.nan, np.float32)
    kernel(w, x, y)
    same(y, want)
    y = np.zeros(n, np.float32)
    kernel(w[::-1], x, y)                            # negative row stride
    same(y[::-1], want)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("isa", ["avx2", "portable"])
def test_gemv_on_lower_isa_levels(name, isa):
    rng = np.random.default_rng(5)
    w, x = records(rng, name, 9, 11, specials=True), rng.standard_normal((11, 256)).astype(
        np.float32)
    module = I.parse(text(GEMV, name))
    want = np.zeros(9, np.float32)
    interpret(module, w, x, want)
    try:
        kernel = compile_module(I.lower(module), isa=isa, threads=1)
    except I.TargetUnavailable:
        pytest.skip(f"the host cannot run {isa} code")
    y = np.zeros(9, np.float32)
    kernel(w, x, y)
    same(y, want)
    host = np.zeros(9, np.float32)
    HostKernel(I.lower(module))(w, x, host)
    same(host, want)


@pytest.mark.parametrize("name", NAMES)
def test_a_lone_negative_zero_stays(name):
    kind = K.KQUANTS[name]
    module = I.parse(text(DOT, name))
    w = records(np.random.default_rng(6), name, 1)
    w[0, kind.d:kind.d + 2] = np.array([-1.0], "<f2").view(np.uint8)
    if kind.has_mins:
        w[0, kind.dmin:kind.dmin + 2] = np.array([0.0], "<f2").view(np.uint8)
    xq = np.zeros((1, 292), np.uint8)                  # x = 0: S = T = 0; ds = 1
    xq[0, 0:4] = np.array([1.0], "<f4").view(np.uint8)
    for run in (lambda *a: interpret(module, *a), CompiledKernel(module), HostKernel(module)):
        assert np.asarray(run(w, xq), np.float32).tobytes() == np.float32(-0.0).tobytes()


@pytest.mark.parametrize("name", NAMES)
def test_gemv_row_loop_is_the_pairs_rows_kernel(name):
    pair = next(p for p in PAIRS.values() if p.lhs.name == name)
    lowered = I.lower(I.parse(text(GEMV, name)))
    kernels = [op.attrs["kernel"] for op in lowered.walk() if op.name == "kernel_call"]
    assert kernels == [pair.rows_kernel]


def test_cuda_source_of_every_kquant_pair_compiles_exactly():
    try:
        ptxs = [emit_cuda(I.lower(I.parse(text(GEMV, name))), kind="ptx") for name in NAMES]
    except I.TargetUnavailable:
        pytest.skip("no CUDA compiler on this machine")
    for ptx in ptxs:
        assert "fma.rn.f32" not in ptx and ".ftz" not in ptx


@pytest.mark.gpu
def test_cuda_gemv_equals_the_interpreter():
    from ninfer_ir.backends.cuda.runtime import gpu_available
    ok, why = gpu_available()
    if not ok:
        pytest.skip(f"no GPU: {why}")
    import cupy
    rng = np.random.default_rng(13)
    for name in NAMES:
        module = I.parse(text(GEMV, name))
        for n, g in ((37, 7), (1, 1), (20, 33)):
            w = records(rng, name, n, g, specials=(g == 7))
            x = rng.standard_normal((g, 256)).astype(np.float32)
            want = np.zeros(n, np.float32)
            interpret(module, w, x, want)
            y = cupy.zeros(n, dtype=cupy.float32)
            I.compile(module, target="cuda")(cupy.asarray(w), cupy.asarray(x), y)
            same(y.get(), want)
