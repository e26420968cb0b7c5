"""CPU emitter, quantized ops: quantize_into and quantized_dot through the hand-written
kernels (any view, staged where needed), every summation order, the GEMV fast path
(sequential and on the thread pools), domain errors with the oracle's record, and
no FMA in the machine code."""
import numpy as np
import pytest

import ninfer_ir as I
from ninfer_ir.backends.interp import interpret
from ninfer_ir.numerics.quantized import quantize_q8k
from ninfer_ir.backends.llvm.runtime.launcher import CompiledKernel

QUANTIZE = """func @q(%x: tensor<f32[G,256]>, %r: buffer<u8[G,292]>) {
  quantize_into(%x, %r) {format = #q8_k}
  return()
}"""

DOT = """func @qd(%w: tensor<u8[G,144]>, %x: tensor<u8[G,292]>, %out: buffer<f32[]>) {returns = 1} {
  %r = quantized_dot(%w, %x) {acc_dtype = f32, lhs_format = #q4_k, order = "ORDER", rhs_format = #q8_k} : tensor<f32[]>
  %v = load(%r) : f32
  store(%v, %out)
  return()
}"""

GEMV = """func @gemv(%w: tensor<u8[N,G,144]>, %x: tensor<f32[G,256]>, %y: buffer<f32[N]>) {
  %G = dim(%w) {axis = 1} : index
  %xq = alloc(%G) : buffer<u8[G,292]>
  quantize_into(%x, %xq) {format = #q8_k}
  %N = dim(%w) {axis = 0} : index
  %c0 = constant() {value = 0} : index
  %c1 = constant() {value = 1} : index
  for(%c0, %N, %c1) PARALLEL({
  ^(%n: index):
    %wn = subview(%w, %n) {axes = "i::"} : tensor<u8[G,144]>
    %d = quantized_dot(%wn, %xq) {acc_dtype = f32, lhs_format = #q4_k, order = "seq", rhs_format = #q8_k} : tensor<f32[]>
    %s = load(%d) : f32
    store(%s, %y, %n)
    yield()
  })
  dealloc(%xq)
  return()
}"""

ROWS = """func @rows(%x: tensor<f32[N,G,256]>, %r: buffer<u8[N,G,292]>) {
  %c0 = constant() {value = 0} : index
  %c1 = constant() {value = 1} : index
  %N = dim(%x) {axis = 0} : index
  for(%c0, %N, %c1) {parallel = true} ({
  ^(%n: index):
    %xn = subview(%x, %n) {axes = "i::"} : tensor<f32[G,256]>
    %rn = subview(%r, %n) {axes = "i::"} : buffer<u8[G,292]>
    quantize_into(%xn, %rn) {format = #q8_k}
    yield()
  })
  return()
}"""


def random_q4k(rng, *lead):
    w = rng.integers(0, 256, size=(*lead, 144), dtype=np.uint8)
    d = (rng.standard_normal((*lead, 2)) * 1e-3).astype(np.float16)
    w[..., 0:4] = d.view(np.uint8).reshape(*lead, 4)
    return w


def activations(rng, g):
    x = rng.standard_normal((g, 256)).astype(np.float32)
    if g > 2:
        x[1] = 0.0                                   # an all-zero block
        x[2, 7], x[2, 9] = 5.0, -5.0                 # a tie of extremes
    return x


def same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.tobytes() == b.tobytes()


def views_of(x):
    g = x.shape[0]
    wide = np.zeros((g, 300), np.float32)
    wide[:, :256] = x
    spread = np.zeros((g, 512), np.float32)
    spread[:, ::2] = x
    raw = bytearray(x.nbytes + 8)
    odd = np.ndarray(x.shape, np.float32, buffer=raw, offset=1)
    odd[...] = x
    rev = x[::-1].copy()[::-1]
    return {"contiguous": x, "row stride": wide[:, :256], "element stride 2": spread[:, ::2],
            "byte offset": odd, "reversed rows": rev}


@pytest.mark.parametrize("g", [0, 1, 5])
def test_quantize_into_matches_the_oracle_for_any_view(g):
    rng = np.random.default_rng(g)
    x = activations(rng, g)
    want = quantize_q8k(x)
    kernel = CompiledKernel(I.parse(QUANTIZE))
    for name, view in views_of(x).items():
        r = np.zeros((g, 292), np.uint8)
        kernel(view, r)
        same(r, want)
        big = np.zeros((g, 600), np.uint8)
        kernel(view, big[::-1, ::2][:, :292])         # staged output (record stride 2)
        same(big[::-1, ::2][:, :292], want)


@pytest.mark.parametrize("poison,reason", [(np.nan, 1), (np.inf, 1), (-np.inf, 1),
                                           (1e-45, 2), (-2e-38, 2)])
def test_quantize_domain_errors_name_the_oracle_record(poison, reason):
    x = activations(np.random.default_rng(0), 6)
    x[4] = 0.0
    x[4, 3] = poison
    with pytest.raises(I.DomainError) as want:
        quantize_q8k(x)
    with pytest.raises(I.DomainError) as got:
        CompiledKernel(I.parse(QUANTIZE))(x, np.zeros((6, 292), np.uint8))
    assert str(got.value) == str(want.value)
    assert got.value.record == want.value.record == 4
    assert got.value.reason == want.value.reason == reason


@pytest.mark.parametrize("order", ["seq", "tree", "chunk<3>", "chunk<2>/tree"])
def test_quantized_dot_in_every_order(order):
    rng = np.random.default_rng(11)
    module = I.parse(DOT.replace("ORDER", order))
    kernel = CompiledKernel(module)
    for g in (0, 1, 2, 5, 9):
        w = random_q4k(rng, g)
        xq = quantize_q8k(activations(rng, g))
        same(kernel(w, xq), interpret(module, w, xq))
        wide = np.zeros((g, 2, 144), np.uint8)
        wide[:, 1] = w
        spread = np.zeros((g, 584), np.uint8)
        spread[:, ::2] = xq
        same(kernel(wide[:, 1], spread[:, ::2]), interpret(module, w, xq))   # staged


@pytest.mark.parametrize("parallel", ["", "{parallel = true} "])
@pytest.mark.parametrize("threads,native", [(1, True), (2, True), (2, False)])
def test_gemv_matches_the_interpreter(parallel, threads, native):
    rng = np.random.default_rng(3)
    n, g = 2048, 4                                   # 8192 records: the pool is used
    w = random_q4k(rng, n, g)
    x = activations(rng, g)
    module = I.parse(GEMV.replace("PARALLEL", parallel))
    want = np.zeros(n, np.float32)
    interpret(module, w, x, want)
    kernel = CompiledKernel(module, threads=threads, native_threads=native)
    for _ in range(3):
        y = np.full(n, np.nan, np.float32)
        kernel(w, x, y)
        same(y, want)
    y = np.zeros(n, np.float32)
    kernel(w[::-1], x, y)                            # negative row stride: still the fast path
    same(y[::-1], want)
    odd = np.ndarray(n, np.float32, buffer=bytearray(4 * n + 4), offset=1)
    kernel(w, x, odd)                                # misaligned y: the ordinary loop
    same(odd, want)
    wide = np.zeros((n, g, 2, 144), np.uint8)
    wide[:, :, 0] = w
    spread = wide.reshape(n, g, 288)[:, :, :144]
    y = np.zeros(n, np.float32)
    kernel(spread, x, y)
    same(y, want)


def test_parallel_errors_report_the_lowest_failing_iteration():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((64, 2, 256)).astype(np.float32)
    x[41, 0, 9] = np.nan                             # later row, record 0
    x[17, 1, 3] = np.inf                             # earliest failing row, record 1
    module = I.parse(ROWS)
    with pytest.raises(I.DomainError) as want:
        interpret(module, x, np.zeros((64, 2, 292), np.uint8))
    for threads, native in ((1, True), (2, True), (2, False)):
        kernel = CompiledKernel(module, threads=threads, native_threads=native)
        for _ in range(20):
            with pytest.raises(I.DomainError) as got:
                kernel(x, np.zeros((64, 2, 292), np.uint8))
            assert str(got.value) == str(want.value)
            assert got.value.record == 1
        good = x.copy()
        good[np.isnan(good) | np.isinf(good)] = 1.0
        r = np.zeros((64, 2, 292), np.uint8)
        kernel(good, r)
        same(r, quantize_q8k(good.reshape(128, 256)).reshape(64, 2, 292))


def test_quantized_kernel_asm_has_no_fma():
    asm = CompiledKernel(I.parse(GEMV.replace("PARALLEL", ""))).asm()
    assert "ninfer_q4k_q8k_dot_rows" in asm
    assert "vfmadd" not in asm and "vfnmadd" not in asm and "vfmsub" not in asm


def test_quantize_into_an_overlapping_buffer_reads_the_values_first():
    text = QUANTIZE.replace("%x: tensor<f32[G,256]>", "%x: buffer<f32[G,256]>")
    rng = np.random.default_rng(8)
    g = 3
    results = []
    for run in (lambda *a: interpret(I.parse(text), *a), CompiledKernel(I.parse(text))):
        raw = np.zeros(g * 1024 + 64, np.uint8)
        raw[:g * 1024] = rng.standard_normal(g * 256).astype(np.float32).view(np.uint8) \
            if not results else results[0][1][:g * 1024]
        start = raw.copy()
        x = raw[:g * 1024].view(np.float32).reshape(g, 256)
        run(x, raw[40:40 + g * 292].reshape(g, 292))
        results.append((raw, start))
    (a, a0), (b, b0) = results
    same(a0, b0)
    same(a, b)


@pytest.mark.parametrize("isa", ["avx2", "portable"])
def test_gemv_on_lower_isa_levels(isa):
    rng = np.random.default_rng(4)
    w, x = random_q4k(rng, 40, 3), activations(rng, 3)
    module = I.parse(GEMV.replace("PARALLEL", ""))
    want = np.zeros(40, np.float32)
    interpret(module, w, x, want)
    try:
        kernel = CompiledKernel(module, isa=isa, threads=1)
    except I.TargetUnavailable:
        pytest.skip(f"the host cannot run {isa} code")
    y = np.zeros(40, np.float32)
    kernel(w, x, y)
    same(y, want)


def test_a_failing_quantize_leaves_the_destination_untouched():
    x = activations(np.random.default_rng(1), 5)
    x[3, 100] = np.nan
    r = np.full((5, 292), 7, np.uint8)
    with pytest.raises(I.DomainError):
        CompiledKernel(I.parse(QUANTIZE))(x, r)
    assert (r == 7).all()
