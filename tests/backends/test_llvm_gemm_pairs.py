"""The GEMM kernels of the pairs beyond Q4_K x Q8_K (Q8_0, Q5_0, Q4_0, IQ4_NL x Q8_0 and
Q6_K x Q8_K): each kernel at every ISA level the host runs against the pair's rows kernel
(the GEMV) of the same level, bit for bit (any NaN matching any NaN where scales are
non-finite: payloads are not specified), and against the numpy
oracle; the nests in the DSL, which ``select`` gives to them, against the interpreter at
1 and 2 threads, with odd shapes, strided views and the quantize's domain error."""
import ctypes

import llvmlite.ir as ir
import numpy as np
import pytest

import ninfer_ir as I
from ninfer_ir.backends.llvm.kernels.qgemm import add_gemm, gemm_name
from ninfer_ir.backends.llvm.kernels.qkernels import add_kernels_for
from ninfer_ir.backends.llvm.runtime.jit import JITModule
from ninfer_ir.numerics import quantized as oracle
from ninfer_ir.ops_select import GEMM_PAIRS, PAIRS_BY_STEM
from tests.backends.test_llvm_qkernels import ISAS
from tests.backends.test_llvm_qkernels import same_bits as any_nan_same_bits

_P, _I = ctypes.c_void_p, ctypes.c_int64
NEW = [PAIRS_BY_STEM[s] for s in GEMM_PAIRS if s != "q4k_q8k"]
SPECIALS = np.array([np.inf, -np.inf, np.nan, 6e-8, -0.0, 65504.0], np.float16)


@pytest.fixture(scope="module", params=ISAS)
def kernels(request):
    isa = request.param

    def build():
        module = ir.Module(name=f"gemm_pairs_{isa}")
        for p in NEW:
            add_gemm(module, isa, p)
        add_kernels_for(module, isa, NEW)
        return module
    jit = JITModule(build, isa=isa)
    return {p.stem: (jit.get(gemm_name(p), None, (_P, _I, _I, _P, _I, _I, _I, _I, _I, _P, _I, _I)),
                     jit.get(p.cpu_rows, None, (_P, _I, _I, _P, _I, _I, _I, _P, _I)))
            for p in NEW}


def records(rng, schema, shape, specials=False, scale=0.05):
    """Random record bytes; the binary16/f32 scales finite, or some of them special."""
    a = rng.integers(0, 256, tuple(shape) + (schema.record_bytes,), dtype=np.uint8)
    for f in schema.fields.values():
        if f.kind == "float":
            dtype = np.float16 if f.bits == 16 else np.float32
            v = (rng.standard_normal(shape) * scale).astype(dtype)
            if specials:
                pick = rng.random(shape) < 0.2
                v[pick] = rng.choice(SPECIALS, size=int(pick.sum())).astype(dtype)
            a[..., f.start:f.stop] = v[..., None].view(np.uint8)
    return a


def same_bits(a, b):
    return a.shape == b.shape and np.array_equal(np.ascontiguousarray(a).view(np.uint32),
                                                 np.ascontiguousarray(b).view(np.uint32))


def run(fn, w, x, y):
    fn(w.ctypes.data, w.strides[0], w.strides[1], x.ctypes.data, x.strides[0], x.strides[1],
       w.shape[1], x.shape[0], w.shape[0], y.ctypes.data, y.strides[0] // 4, y.strides[1] // 4)


def gemv(rows, w, x):
    """y[m] = the rows kernel on x[m]."""
    y = np.zeros((x.shape[0], w.shape[0]), np.float32)
    for m in range(x.shape[0]):
        rows(w.ctypes.data, w.strides[0], w.strides[1], x[m].ctypes.data, x.strides[1],
             w.shape[1], w.shape[0], y[m].ctypes.data, 1)
    return y


@pytest.mark.parametrize("pair", NEW, ids=str)
@pytest.mark.parametrize("m,n,g", [(1, 1, 1), (5, 37, 9), (8, 33, 8), (13, 70, 17)])
def test_kernel_is_the_gemv(kernels, pair, m, n, g):
    """G from 1 to 17 (short last steps of eight records), N and M past whole blocks and
    microtiles; special scales in some records."""
    gemm, rows = kernels[pair.stem]
    rng = np.random.default_rng(m * 100 + n + g)
    w = records(rng, pair.lhs, (n, g), specials=m > 5)
    x = records(rng, pair.rhs, (m, g), scale=1.0)
    y = np.full((m, n), np.nan, np.float32)
    run(gemm, w, x, y)
    got_gemv = gemv(rows, w, x)
    # NaN payloads are not specified (LLVM may commute an fmul); every other bit is
    assert same_bits(y, got_gemv) if m <= 5 else any_nan_same_bits(y, got_gemv)
    want = np.stack([oracle.quantized_dot_rows(w, row, pair=pair) for row in x])
    assert any_nan_same_bits(y, want)


@pytest.mark.parametrize("pair", NEW, ids=str)
def test_kernel_strided_views_and_extreme_codes(kernels, pair):
    """Records apart and padded, y transposed and strided (the bytes around it kept);
    every weight byte 0x80 or 0x7F and every activation quant -128: the largest |S|."""
    gemm, rows = kernels[pair.stem]
    rng = np.random.default_rng(3)
    m, n, g = 7, 41, 11
    w_big = records(rng, pair.lhs, (2 * n, g + 1))
    w = w_big[::2, 1:]
    x_big = np.zeros((m, 2 * g, pair.rhs.record_bytes + 5), np.uint8)
    x_big[:, ::2, 3:3 + pair.rhs.record_bytes] = records(rng, pair.rhs, (m, g), scale=1.0)
    x = x_big[:, ::2, 3:3 + pair.rhs.record_bytes]
    y_big = np.full((2 * n, m), np.nan, np.float32)
    y = y_big[::2].T
    run(gemm, w, x, y)
    assert same_bits(y, gemv(rows, np.ascontiguousarray(w), np.ascontiguousarray(x)))
    assert np.isnan(y_big[1::2]).all()
    for byte in (0x80, 0x7F):
        we = records(rng, pair.lhs, (20, 3))
        xe = records(rng, pair.rhs, (3, 3), scale=1.0)
        quant = pair.rhs.field("q")
        xe[..., quant.start:quant.stop] = 0x80
        floats = [f for f in pair.lhs.fields.values() if f.kind == "float"]
        keep = [we[..., f.start:f.stop].copy() for f in floats]
        we[...] = byte
        for f, k in zip(floats, keep):
            we[..., f.start:f.stop] = k
        ye = np.zeros((3, 20), np.float32)
        run(gemm, we, xe, ye)
        assert same_bits(ye, gemv(rows, we, xe))


def test_kernel_no_records_and_no_rows(kernels):
    for pair in NEW:
        gemm, _ = kernels[pair.stem]
        rng = np.random.default_rng(4)
        y = np.full((3, 5), np.nan, np.float32)
        run(gemm, records(rng, pair.lhs, (5, 0)), records(rng, pair.rhs, (3, 0)), y)
        assert same_bits(y, np.zeros((3, 5), np.float32))      # G = 0: +0.0 everywhere
        y = np.full((3, 5), np.nan, np.float32)
        run(gemm, records(rng, pair.lhs, (0, 2)), records(rng, pair.rhs, (3, 2)), y[:, :0])
        assert np.isnan(y).all()


# --- the nests in the DSL ---------------------------------------------------------------------

def nest(pair, quantize):
    lhs, rhs = getattr(I.quant, pair.lhs.name), getattr(I.quant, pair.rhs.name)
    if quantize:
        @I.kernel
        def gemm_q(w: I.Tensor[I.u8, "N", "G", pair.lhs.record_bytes],
                   x: I.Tensor[I.f32, "M", "G", pair.block_elems], y: I.Buffer[I.f32, "M", "N"]):
            for m in I.range(x.shape[0]):
                xq = I.quantize(x[m], format=rhs)
                for n in I.range(w.shape[0]):
                    y[m, n] = I.quantized_dot(w[n], xq, lhs_format=lhs, rhs_format=rhs,
                                              acc_dtype=I.f32)
        return gemm_q

    @I.kernel
    def gemm_r(w: I.Tensor[I.u8, "N", "G", pair.lhs.record_bytes],
               xq: I.Tensor[I.u8, "M", "G", pair.rhs.record_bytes], y: I.Buffer[I.f32, "M", "N"]):
        for m in I.range(xq.shape[0]):
            for n in I.range(w.shape[0]):
                y[m, n] = I.quantized_dot(w[n], xq[m], lhs_format=lhs, rhs_format=rhs,
                                          acc_dtype=I.f32)
    return gemm_r


CASES = [("q80_q80", True), ("q50_q80", True), ("q6k_q8k", True), ("q40_q80", True),
         ("q80_q80", False), ("q6k_q8k", False)]


@pytest.mark.parametrize("stem,quantize", CASES)
def test_nest_is_exact_and_selected(stem, quantize):
    pair = PAIRS_BY_STEM[stem]
    kernel = nest(pair, quantize)
    want_kernel = f"{stem}_gemm_quantize" if quantize else f"{stem}_gemm"
    outer, inner = I.lower(kernel, report=True)[1].remarks
    assert outer.kernel == want_kernel and inner.kernel == want_kernel
    compiled = {t: I.compile(kernel, target="cpu", threads=t) for t in (1, 2)}
    for m, n, g, strided in [(3, 37, 9, False), (17, 300, 3, True)]:
        rng = np.random.default_rng(m + n + g)
        w = records(rng, pair.lhs, (n, g))
        x = (rng.standard_normal((m, g, pair.block_elems)) * 3).astype(np.float32)
        if not quantize:
            x = np.stack([oracle.quantize(row, pair.rhs) for row in x])
        y = np.zeros((m, n), np.float32)
        if strided:
            w = np.concatenate([w, w], axis=1)[:, ::2]
            x = np.stack([x, x], axis=1)[:, 1]
            y = np.zeros((n, 2 * m), np.float32)[:, ::2].T
        want = np.zeros(y.shape, np.float32)
        I.interpret(kernel, w, x, want)
        for t, fn in compiled.items():
            y[...] = 0
            fn(w, x, y)
            assert same_bits(y, want), (m, n, g, t)


def test_nest_quantize_error_is_the_interpreters():
    """A non-finite activation: the same DomainError, and the rows before it stored as the
    interpreter stores them."""
    pair = PAIRS_BY_STEM["q80_q80"]
    kernel = nest(pair, True)
    rng = np.random.default_rng(10)
    w = records(rng, pair.lhs, (30, 4))
    x = rng.standard_normal((4, 4, 32)).astype(np.float32)
    x[2, 1, 7] = np.nan
    want, got = np.full((4, 30), 5.0, np.float32), np.full((4, 30), 5.0, np.float32)
    with pytest.raises(I.DomainError) as e_want:
        I.interpret(kernel, w, x, want)
    with pytest.raises(I.DomainError) as e_got:
        I.compile(kernel, target="cpu", threads=2)(w, x, got)
    assert str(e_got.value) == str(e_want.value)
    assert same_bits(got, want) and not (want == 5.0).all()


def test_a_pair_without_a_gemm_says_why():
    pair = PAIRS_BY_STEM["q2k_q8k"]
    outer = I.lower(nest(pair, False), report=True)[1].remarks[0]
    assert outer.kernel is None
    assert outer.reason.startswith("no GEMM: no GEMM kernel takes the dots of a "
                                   "q2k_q8k_dot_rows loop")

