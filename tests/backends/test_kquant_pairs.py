"""The K-quant dots Q2_K/Q3_K/Q5_K/Q6_K x Q8_K through the whole compiler: eager
``I.quantized_dot``, the interpreter, the CPU backend (single dots in every order, staged
views, the GEMV rows fast path on 1 and 2 threads and on every ISA level) and host C,
all bit for bit."""
import numpy as np
import pytest

import ninfer_ir as I
from ninfer_ir.backends.clike.host import HostKernel
from ninfer_ir.backends.interp import interpret
from ninfer_ir.backends.llvm.runtime.launcher import CompiledKernel
from ninfer_ir.numerics import quantized_kquants as K
from ninfer_ir.numerics.quantized import quantize_q8k

NAMES = sorted(K.KQUANTS)

DOT = """func @qd(%w: tensor<u8[G,R]>, %x: tensor<u8[G,292]>, %out: buffer<f32[]>) {returns = 1} {
  %r = quantized_dot(%w, %x) {acc_dtype = f32, lhs_format = #FMT, order = "ORDER", rhs_format = #q8_k} : tensor<f32[]>
  %v = load(%r) : f32
  store(%v, %out)
  return()
}"""

GEMV = """func @gemv(%w: tensor<u8[N,G,R]>, %x: tensor<f32[G,256]>, %y: buffer<f32[N]>) {
  %G = dim(%w) {axis = 1} : index
  %xq = alloc(%G) : buffer<u8[G,292]>
  quantize_into(%x, %xq) {format = #q8_k}
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
  dealloc(%xq)
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
    n, g = 2049, 4                                   # > 8192 records: the pool is used
    w = records(rng, name, n, g)
    x = rng.standard_normal((g, 256)).astype(np.float32)
    module = I.parse(text(GEMV, name))
    want = np.zeros(n, np.float32)
    interpret(module, w, x, want)
    kernel = CompiledKernel(module, threads=threads)
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
    w, x = records(rng, name, 9, 3, specials=True), rng.standard_normal((3, 256)).astype(
        np.float32)
    module = I.parse(text(GEMV, name))
    want = np.zeros(9, np.float32)
    interpret(module, w, x, want)
    try:
        kernel = CompiledKernel(module, isa=isa, threads=1)
    except I.TargetUnavailable:
        pytest.skip(f"the host cannot run {isa} code")
    y = np.zeros(9, np.float32)
    kernel(w, x, y)
    same(y, want)
    host = np.zeros(9, np.float32)
    HostKernel(module)(w, x, host)
    same(host, want)
