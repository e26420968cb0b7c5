"""Every backend against the interpreter, bit for bit, for the 32-element GGUF entries of
the closed tables (docs/spec/quantized-gguf.md): Q8_0 quantize and the Q4_0/Q5_0/Q8_0/IQ4_NL
x Q8_0 dots. Compiled CPU code at every ISA level the host runs, at 1 and 2 threads, and the
C-like emitter built as host C; odd shapes, views and staged records, G = 1 (-0.0 stays),
non-finite scales, and domain errors naming the interpreter's record."""
import numpy as np
import pytest

import ninfer_ir as I
from ninfer_ir.backends.clike.host import HostKernel
from ninfer_ir.backends.cuda.emitter import emit as emit_cuda
from ninfer_ir.backends.interp import interpret
from ninfer_ir.backends.llvm.runtime.jit import ISA_LEVELS, host_target
from ninfer_ir.backends.llvm.runtime.launcher import compile_module
from ninfer_ir.errors import TargetUnavailable
from ninfer_ir.quant import PAIRS

F32 = np.float32
Q80 = I.quant.q8_0
SMALL_PAIRS = [p for p in PAIRS.values() if p.rhs is Q80]

QUANTIZE = """func @q(%x: tensor<f32[G,32]>, %r: buffer<u8[G,34]>) {
  %q = quantize(%x) {format = #q8_0} : tensor<u8[G,34]>
  copy(%q, %r)
  return()
}"""

SCALED_QUANTIZE = """func @sq(%x: tensor<f32[G,32]>, %s: f32) -> (tensor<u8[G,34]>) {
  %xs = mul(%x, %s) : tensor<f32[G,32]>
  %q = quantize(%xs) {format = #q8_0} : tensor<u8[G,34]>
  return(%q)
}"""

DOT = """func @qd(%w: tensor<u8[G,LR]>, %x: tensor<u8[G,34]>) -> (tensor<f32[]>) {
  %r = quantized_dot(%w, %x) {acc_dtype = f32, lhs_format = #LF, order = "ORDER", rhs_format = #q8_0} : tensor<f32[]>
  return(%r)
}"""

GEMV = """func @gemv(%w: tensor<u8[N,G,LR]>, %x: tensor<f32[G,32]>, %y: buffer<f32[N]>) {
  %xq = quantize(%x) {format = #q8_0} : tensor<u8[G,34]>
  %N = dim(%w) {axis = 0} : index
  %c0 = constant() {value = 0} : index
  %c1 = constant() {value = 1} : index
  for(%c0, %N, %c1) ({
  ^(%n: index):
    %wn = subview(%w, %n) {axes = "i::"} : tensor<u8[G,LR]>
    %d = quantized_dot(%wn, %xq) {acc_dtype = f32, lhs_format = #LF, order = "seq", rhs_format = #q8_0} : tensor<f32[]>
    %s = load(%d) : f32
    store(%s, %y, %n)
    yield()
  })
  return()
}"""


def text(template, pair, order="seq"):
    return (template.replace("LR", str(pair.lhs.record_bytes)).replace("LF", pair.lhs.name)
            .replace("ORDER", order))


def isas():
    out = []
    for isa in ISA_LEVELS:
        try:
            host_target(isa)
        except TargetUnavailable:
            continue
        out.append(isa)
    return out


def same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.tobytes() == b.tobytes()


def weights(rng, pair, *lead, scale=0.02):
    w = rng.integers(0, 256, (*lead, pair.lhs.record_bytes), dtype=np.uint8)
    w[..., 0:2] = (rng.standard_normal((*lead, 1)) * scale).astype(np.float16).view(np.uint8)
    return w


def activations(rng, g):
    x = rng.standard_normal((g, 32)).astype(F32)
    if g > 3:
        x[1] = 0.0                                   # an all-zero block
        x[2] = 0.0
        x[2, :3] = [127.0, 2.5, -0.5]                # ties away from zero
        x[3] = x[3] / np.abs(x[3]).max() * F32(1e-36)   # d a binary32 subnormal, id finite
        x[3, 5] = 1e-40                              # a subnormal input
    return x


def x_views(x):
    g = x.shape[0]
    spread = np.zeros((g, 64), F32)
    spread[:, ::2] = x
    raw = bytearray(x.nbytes + 8)
    odd = np.ndarray(x.shape, F32, buffer=raw, offset=1)
    odd[...] = x
    return {"contiguous": x, "element stride 2": spread[:, ::2], "byte offset": odd,
            "reversed rows": x[::-1].copy()[::-1]}


@pytest.mark.parametrize("g", [0, 1, 7])
def test_quantize_into_matches_the_oracle_for_any_view(g):
    x = activations(np.random.default_rng(g), g)
    want = I.quantize(x, format=Q80)
    module = I.parse(QUANTIZE)
    for run in (I.compile(module, target="cpu"), HostKernel(I.lower(module))):
        for view in x_views(x).values():
            r = np.zeros((g, 34), np.uint8)
            run(view, r)
            same(r, want)
            big = np.zeros((g, 80), np.uint8)
            run(view, big[::-1, ::2][:, :34])          # staged output (record stride 2)
            same(big[::-1, ::2][:, :34], want)


@pytest.mark.parametrize("isa", isas())
def test_quantize_kernel_at_every_isa_level(isa):
    x = activations(np.random.default_rng(8), 9)
    r = np.zeros((9, 34), np.uint8)
    compile_module(I.lower(I.parse(QUANTIZE)), isa=isa, use_cache=False, threads=1)(x, r)
    same(r, I.quantize(x, format=Q80))


@pytest.mark.parametrize("poison,reason", [(np.nan, 1), (-np.inf, 1), (1e-40, 2), (1e7, 3)])
def test_quantize_domain_errors_name_the_interpreter_record(poison, reason):
    x = activations(np.random.default_rng(0), 7)
    x[5] = 0.0
    x[5, 3] = poison
    x[6, 0] = np.nan                                 # a later failing record never wins
    fused = I.parse(SCALED_QUANTIZE)                 # record by record with a base
    whole = I.parse(QUANTIZE)                        # one quantize_into of all records
    messages = set()
    for module in (fused, whole):
        runs = {"interp": lambda *a, m=module: interpret(m, *a),
                "cpu": I.compile(module, target="cpu"), "host-c": HostKernel(I.lower(module))}
        for name, run in runs.items():
            out = np.zeros((7, 34), np.uint8)
            with pytest.raises(I.DomainError) as e:
                run(x, F32(1.0)) if module is fused else run(x, out)
            assert (e.value.record, e.value.reason) == (5, reason), name
            messages.add(str(e.value))
            assert not out.any(), name              # a failure writes no record
    assert len(messages) == 1 and messages.pop().startswith("quantize q8_0: record 5: ")


def test_fused_quantize_gives_the_interpreters_records():
    module = I.parse(SCALED_QUANTIZE)
    x = activations(np.random.default_rng(9), 5)
    want = interpret(module, x, F32(-0.75))
    same(want, I.quantize(x * F32(-0.75), format=Q80))
    same(I.compile(module, target="cpu")(x, F32(-0.75)), want)
    same(HostKernel(I.lower(module))(x, F32(-0.75)), want)


@pytest.mark.parametrize("pair", SMALL_PAIRS, ids=str)
@pytest.mark.parametrize("order", ["seq", "tree", "chunk<3>/tree"])
def test_dot_in_every_order_and_view(pair, order):
    rng = np.random.default_rng(11)
    module = I.parse(text(DOT, pair, order))
    runs = [I.compile(module, target="cpu"), HostKernel(I.lower(module))]
    for g in (0, 1, 2, 9):
        w = weights(rng, pair, g)
        xq = I.quantize(activations(rng, g), format=Q80)
        if g == 9:
            w[4, 0:2] = np.array([np.inf], np.float16).view(np.uint8)     # inf * 0 -> NaN
            w[5, 0:2] = np.array([6e-8], np.float16).view(np.uint8)       # subnormal scale
        want = interpret(module, w, xq)
        wide = np.zeros((g, 2, pair.lhs.record_bytes), np.uint8)
        wide[:, 1] = w
        spread = np.zeros((g, 68), np.uint8)
        spread[:, ::2] = xq
        for run in runs:
            same(run(w, xq), want)
            same(run(wide[:, 1], spread[:, ::2]), want)                     # staged records


@pytest.mark.parametrize("pair", SMALL_PAIRS, ids=str)
def test_a_lone_negative_zero_stays(pair):
    module = I.parse(text(DOT, pair))
    w = weights(np.random.default_rng(1), pair, 1)
    w[0, 0:2] = np.array([-1.0], np.float16).view(np.uint8)
    xq = np.zeros((1, 34), np.uint8)
    xq[0, 0:2] = np.array([1.0], np.float16).view(np.uint8)
    for run in (lambda *a: interpret(module, *a), I.compile(module, target="cpu"),
                HostKernel(I.lower(module))):
        assert np.asarray(run(w, xq)).tobytes() == F32(-0.0).tobytes()


@pytest.mark.parametrize("pair", SMALL_PAIRS, ids=str)
def test_gemv_takes_the_rows_kernel_at_every_isa_level_and_thread_count(pair):
    module = I.parse(text(GEMV, pair))
    lowered = I.lower(module)
    kernels = [op.attrs["kernel"] for op in lowered.walk() if op.name == "kernel_call"]
    assert kernels == [pair.rows_kernel]
    rng = np.random.default_rng(len(pair.stem))
    host = HostKernel(lowered)
    for n, g in ((37, 7), (1, 1), (20, 300)):
        w = weights(rng, pair, n, g)
        x = activations(rng, g)
        want = np.zeros(n, F32)
        interpret(module, w, x, want)
        y = np.zeros(n, F32)
        host(w, x, y)
        same(y, want)
        for isa in isas():
            for threads in (1, 2):
                kernel = compile_module(lowered, isa=isa, threads=threads)
                y = np.zeros(n, F32)
                kernel(w, x, y)
                same(y, want)
                y = np.zeros(n, F32)
                kernel(w[::-1], x, y)                  # negative row stride
                same(y[::-1], want)


def test_cuda_source_of_every_pair_compiles_exactly():
    for module in [text(GEMV, p) for p in SMALL_PAIRS] + [SCALED_QUANTIZE]:
        ptx = emit_cuda(I.lower(I.parse(module)), kind="ptx")
        assert "fma.rn.f32" not in ptx and ".ftz" not in ptx


@pytest.mark.gpu
def test_cuda_gemv_and_quantize_equal_the_interpreter():
    from ninfer_ir.backends.cuda.runtime import gpu_available
    ok, why = gpu_available()
    if not ok:
        pytest.skip(f"no GPU: {why}")
    import cupy
    rng = np.random.default_rng(12)
    for pair in SMALL_PAIRS:
        module = I.parse(text(GEMV, pair))
        for n, g in ((37, 7), (1, 1), (20, 300)):
            w = weights(rng, pair, n, g)
            x = activations(rng, g)
            want = np.zeros(n, F32)
            interpret(module, w, x, want)
            y = cupy.zeros(n, dtype=cupy.float32)
            I.compile(module, target="cuda")(cupy.asarray(w), cupy.asarray(x), y)
            same(y.get(), want)
    module = I.parse(SCALED_QUANTIZE)
    x = activations(rng, 9)
    same(cupy.asnumpy(I.compile(module, target="cuda")(cupy.asarray(x), F32(0.5))),
         interpret(module, x, F32(0.5)))
    x[6, 2] = np.inf
    with pytest.raises(I.DomainError) as e:
        I.compile(module, target="cuda")(cupy.asarray(x), F32(0.5))
    assert str(e.value) == "quantize q8_0: record 6: input holds NaN or inf"
