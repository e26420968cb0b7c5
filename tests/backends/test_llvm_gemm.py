"""The Q4_K x Q8_K GEMM: the kernel ``ninfer_q4k_q8k_gemm`` at every ISA level the host
runs, against the numpy oracle bit for bit; and the m x n nest of quantized dots, which
the ``select`` pass gives to it, against the interpreter at 1 and 2 threads, for odd
shapes, strided views, non-finite scales and errors."""
import ctypes

import llvmlite.ir as ir
import numpy as np
import pytest

import ninfer_ir as I
from ninfer_ir.backends.llvm.kernels.qgemm import add_gemm, blocking, gemm_name
from ninfer_ir.quant import PAIRS, q4_k, q8_k
from ninfer_ir.backends.llvm.runtime.jit import JITModule, host_target
from ninfer_ir.numerics import quantized as oracle
from ninfer_ir.backends.llvm.kernels.qkernels import load_kernels
from tests.backends.test_llvm_qkernels import ISAS, extreme_q4k, f16_bits, q4k_records, q8k_from
from tests.backends.test_llvm_qkernels import q8k_records
from tests.backends.test_llvm_qkernels import same_bits as any_nan_same_bits
from tests.kernels import KERNELS

_P, _I = ctypes.c_void_p, ctypes.c_int64


@pytest.fixture(scope="module", params=ISAS)
def gemm(request):
    target = host_target(request.param)
    module = ir.Module(name="gemm")
    module.triple = target.triple
    add_gemm(module, request.param, PAIRS[q4_k, q8_k])
    jit = JITModule(module, target=target, use_cache=False)
    fn = jit.get(gemm_name(PAIRS[q4_k, q8_k]), None, (_P, _I, _I, _P, _I, _I, _I, _I, _I, _P, _I, _I))
    fn.jit = jit
    fn.isa = request.param
    return fn


def expected(w, xq):
    """y[m, n] = the oracle's dot of w[n] and xq[m]."""
    return np.stack([oracle.quantized_dot_rows(w, row) for row in xq]) if len(w) else \
        np.zeros((len(xq), 0), np.float32)


def call(fn, w, xq, y):
    """The kernel on numpy views (strides in bytes for w and xq, in floats for y)."""
    m, g = xq.shape[0], w.shape[1]
    fn(w.ctypes.data, w.strides[0], w.strides[1], xq.ctypes.data, xq.strides[0],
       xq.strides[1], g, m, w.shape[0], y.ctypes.data, y.strides[0] // 4, y.strides[1] // 4)


def same_bits(a, b):
    return a.shape == b.shape and np.array_equal(np.ascontiguousarray(a).view(np.uint32),
                                                 np.ascontiguousarray(b).view(np.uint32))


@pytest.mark.parametrize("m", [1, 2, 3, 7, 17])
@pytest.mark.parametrize("n,g", [(1, 1), (37, 1), (33, 3), (70, 2)])
def test_kernel_random(gemm, m, n, g):
    rng = np.random.default_rng(100 * m + n + g)
    w = q4k_records(rng, (n, g))
    xq = np.stack([q8k_records(rng, g, valid=bool(i % 2)) for i in range(m)])
    y = np.full((m, n), np.nan, np.float32)
    call(gemm, w, xq, y)
    assert same_bits(y, expected(w, xq))


def test_kernel_strided_views(gemm):
    """Records apart from their rows and padded; y transposed and every other column;
    the bytes outside the views are left alone."""
    rng = np.random.default_rng(5)
    m, n, g = 5, 41, 3
    w_big = q4k_records(rng, (2 * n, g + 1))
    w = w_big[::2, 1:]                                   # row and record strides padded
    x_big = np.zeros((m, 2 * g, 300), np.uint8)
    for i in range(m):
        x_big[i, ::2, 3:3 + 292] = q8k_records(rng, g)
    xq = x_big[:, ::2, 3:3 + 292]
    y_big = np.full((2 * n, m), np.nan, np.float32)
    y = y_big[::2].T                                     # y[m, n] at n*2*m + m floats
    call(gemm, w, xq, y)
    assert same_bits(y, expected(np.ascontiguousarray(w), np.ascontiguousarray(xq)))
    assert np.isnan(y_big[1::2]).all()


def test_kernel_empty_and_zero_records(gemm):
    rng = np.random.default_rng(6)
    w, xq = q4k_records(rng, (5, 0)), np.zeros((3, 0, 292), np.uint8)
    y = np.full((3, 5), np.nan, np.float32)
    call(gemm, w, xq, y)
    assert same_bits(y, np.zeros((3, 5), np.float32))     # G = 0 gives +0.0 everywhere
    y = np.full((3, 5), np.nan, np.float32)
    call(gemm, q4k_records(rng, (0, 2)), q8k_records(rng, 2)[None].repeat(3, 0), y[:, :0])
    assert np.isnan(y).all()


def test_kernel_extremes_and_special_values(gemm):
    """Largest |S| and |T| (every code 15, sc = m = 63, quants -128, any bsum), and
    inf/NaN/subnormal d, dmin and ds: ordinary IEEE results, the oracle's bits."""
    g = 2
    q = np.full((g, 256), -128, np.int64)
    rows = [q8k_from(q, [1.0, -2.0]), q8k_from(q, [1.0, 3.0], bsum=np.full((g, 16), -32768)),
            q8k_from(q, [np.inf, 1e-45]), q8k_from(-q - 1, [np.nan, 0.5])]
    xq = np.stack(rows)
    specials = [1.0, np.inf, -np.inf, np.nan, 6e-8, -0.0, 65504.0]
    w = np.concatenate([extreme_q4k(g, d, dmin) for d in specials for dmin in specials[:3]])
    w = w.reshape(-1, g, 144)
    y = np.full((len(xq), len(w)), 7.0, np.float32)
    call(gemm, w, xq, y)
    assert any_nan_same_bits(y, expected(w, xq))       # NaN payloads are not specified
    rows = load_kernels(gemm.isa).dot_rows             # ... but they are the GEMV's
    for m in range(len(xq)):
        row = np.zeros(len(w), np.float32)
        rows(w.ctypes.data, w.strides[0], w.strides[1], xq[m].ctypes.data, xq.strides[1], g,
             len(w), row.ctypes.data, 1)
        assert same_bits(y[m], row)


def test_kernel_first_record_is_the_start_of_the_sum(gemm):
    """G = 1 gives v_0 itself: a -0.0 stays -0.0."""
    w = extreme_q4k(1, d=0.0, dmin=1.0)[None]
    xq = q8k_from(np.zeros((1, 256), np.int64), [1.0])[None]     # T = 0: v = 1*(0 - 0)...
    w[0, 0, 0:2] = f16_bits([-0.0]).view(np.uint8)
    xq[0, 0, 4] = 1                                              # S > 0: p = -0.0*S = -0.0
    y = np.full((1, 1), 1.0, np.float32)
    call(gemm, w, xq, y)
    assert same_bits(y, expected(w, xq)) and np.signbit(y[0, 0])


# --- the nest in the DSL ------------------------------------------------------------------

@I.kernel
def gemm_quantize(w: I.Tensor[I.u8, "N", "G", 144], x: I.Tensor[I.f32, "M", "G", 256],
                  y: I.Buffer[I.f32, "M", "N"]):
    for m in I.prange(x.shape[0]):
        xq = I.quantize(x[m], format=I.quant.q8_k)
        for n in I.range(w.shape[0]):
            y[m, n] = I.quantized_dot(w[n], xq, lhs_format=I.quant.q4_k,
                                      rhs_format=I.quant.q8_k, acc_dtype=I.f32)


@I.kernel
def gemm_records(w: I.Tensor[I.u8, "N", "G", 144], xq: I.Tensor[I.u8, "M", "G", 292],
                 y: I.Buffer[I.f32, "M", "N"]):
    for m in I.range(xq.shape[0]):
        for n in I.range(w.shape[0]):
            y[m, n] = I.quantized_dot(w[n], xq[m], lhs_format=I.quant.q4_k,
                                      rhs_format=I.quant.q8_k, acc_dtype=I.f32)


NESTS = {"quantize_in_body": gemm_quantize, "quantize_hoisted": KERNELS["q4k_gemm"].kernel,
         "records": gemm_records}


def _inputs(rng, kind, m, n, g, strided):
    w = q4k_records(rng, (n, g))
    x = (rng.standard_normal((m, g, 256)) * 3).astype(np.float32)
    if kind == "records":
        x = np.stack([oracle.quantize_q8k(row) for row in x])
    y = np.zeros((m, n), np.float32)
    if strided:
        w = np.concatenate([w, w], axis=1)[:, ::2]                # records 2*144 bytes apart
        x = np.stack([x, x], axis=1)[:, 1]                        # rows twice as far apart
        y = np.zeros((n, 2 * m), np.float32)[:, ::2].T            # y transposed, strided
    return w, x, y


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("kind", list(NESTS))
@pytest.mark.parametrize("m,n,g,strided", [(1, 45, 1, False), (2, 33, 2, True),
                                           (3, 300, 1, False), (7, 1, 3, True),
                                           (17, 301, 2, False), (17, 300, 3, True)])
def test_nest_is_exact(kind, threads, m, n, g, strided):
    kernel = NESTS[kind]
    rng = np.random.default_rng(m * 1000 + n + g)
    w, x, y = _inputs(rng, kind, m, n, g, strided)
    want = np.zeros(y.shape, np.float32)
    I.interpret(kernel, w, x, want)
    I.compile(kernel, target="cpu", threads=threads)(w, x, y)
    assert same_bits(y, want)


def test_the_nest_is_a_body_of_the_pool():
    """The launcher hands the pool (``par``) only to kernels with bodies it runs."""
    for kernel in NESTS.values():
        assert I.compile(kernel, target="cpu", threads=2).info.bodies == 1


def test_nest_non_finite_scales():
    rng = np.random.default_rng(9)
    w = q4k_records(rng, (40, 2))
    w[::3, 1, 0:2] = f16_bits([np.inf]).view(np.uint8)
    w[1::3, 0, 2:4] = f16_bits([np.nan]).view(np.uint8)
    x = rng.standard_normal((5, 2, 256)).astype(np.float32)
    want, got = np.zeros((5, 40), np.float32), np.zeros((5, 40), np.float32)
    I.interpret(gemm_quantize, w, x, want)
    I.compile(gemm_quantize, target="cpu", threads=2)(w, x, got)
    assert np.isnan(want).any() and any_nan_same_bits(got, want)


def test_nest_quantize_error_is_the_interpreters():
    """A non-finite activation: the same DomainError, and (the loop over m being
    sequential) the rows before it stored as the interpreter stores them."""
    kernel = KERNELS["q4k_gemm"].kernel
    rng = np.random.default_rng(10)
    w = q4k_records(rng, (30, 2))
    x = rng.standard_normal((4, 2, 256)).astype(np.float32)
    x[2, 1, 7] = np.inf
    want, got = np.full((4, 30), 5.0, np.float32), np.full((4, 30), 5.0, np.float32)
    with pytest.raises(I.DomainError) as e_want:
        I.interpret(kernel, w, x, want)
    with pytest.raises(I.DomainError) as e_got:
        I.compile(kernel, target="cpu")(w, x, got)
    assert str(e_got.value) == str(e_want.value)
    assert same_bits(got, want) and not (want == 5.0).all()


def test_a_checked_nest_is_not_a_gemm_and_reports_the_interpreters_error():
    @I.kernel
    def too_far(w: I.Tensor[I.u8, "N", "G", 144], xq: I.Tensor[I.u8, "M", "G", 292],
                y: I.Buffer[I.f32, "R", "N"]):
        for m in I.range(y.shape[0]):
            for n in I.range(w.shape[0]):
                y[m, n] = I.quantized_dot(w[n], xq[m], lhs_format=I.quant.q4_k,
                                          rhs_format=I.quant.q8_k, acc_dtype=I.f32)
    rng = np.random.default_rng(11)
    w, xq = q4k_records(rng, (20, 1)), np.stack([q8k_records(rng, 1)] * 2)
    # the bounds check on xq[m] stays in the body: the rows kernel, not the GEMM
    outer, inner = I.lower(too_far, report=True)[1].remarks
    assert outer.kernel is None and inner.kernel == "q4k_q8k_dot_rows"
    with pytest.raises(I.NinferError) as e_want:
        I.interpret(too_far, w, xq, np.zeros((3, 20), np.float32))
    with pytest.raises(type(e_want.value)) as e_got:
        I.compile(too_far, target="cpu")(w, xq, np.zeros((3, 20), np.float32))
    assert str(e_got.value) == str(e_want.value)


def test_selection_shows_in_the_ir_and_the_remarks(capsys):
    from ninfer_ir.cli import main
    import inspect
    path = inspect.getsourcefile(test_selection_shows_in_the_ir_and_the_remarks)
    assert main(["ir", "--print-after", "select", "--remarks", f"{path}:gemm_records"]) == 0
    out = capsys.readouterr().out
    assert 'kernel_call(%w, %xq, %y) {kernel = "q4k_q8k_gemm"}' in out
    assert "loop %m in @gemm_records: kernel q4k_q8k_gemm: the loop computes what" in out
    assert "loop %n in @gemm_records: kernel q4k_q8k_gemm: the inner loop of the nest" in out
    text = I.emit(gemm_quantize, target="cpu", kind="llvm")
    assert "ninfer_q4k_q8k_gemm" in text


def test_a_nest_that_is_not_a_gemm_says_why():
    @I.kernel
    def chunked(w: I.Tensor[I.u8, "N", "G", 144], xq: I.Tensor[I.u8, "M", "G", 292],
                y: I.Buffer[I.f32, "M", "N"]):
        for m in I.range(xq.shape[0]):
            for n in I.range(w.shape[0]):
                y[m, n] = I.quantized_dot(w[n], xq[m], lhs_format=I.quant.q4_k,
                                          rhs_format=I.quant.q8_k, acc_dtype=I.f32,
                                          order="chunk<2>")
    outer = I.lower(chunked, report=True)[1].remarks[0]
    assert outer.kernel is None
    assert outer.reason.startswith("no GEMM: its inner loop is not a row loop of quantized "
                                   "dots (the quantized_dot sums in order chunk<2>")


def test_blocking_fits_the_registers():
    for isa in ISAS:
        blk = blocking(isa)
        assert 2 * blk.rows * blk.cols + 2 * blk.rows <= (32 if isa == "avx512vnni" else 16)


@I.kernel
def gemm_batched(w: I.Tensor[I.u8, "N", "G", 144], xq: I.Tensor[I.u8, "M", "G", 292],
                 y: I.Buffer[I.f32, 2, "M", "N"]):
    for m in I.range(xq.shape[0]):
        for n in I.range(w.shape[0]):
            y[1, m, n] = I.quantized_dot(w[n], xq[m], lhs_format=I.quant.q4_k,
                                         rhs_format=I.quant.q8_k, acc_dtype=I.f32)


@pytest.mark.parametrize("threads", [1, 2])
def test_nest_with_a_leading_index_and_an_unaligned_output(threads):
    """y[1, m, n] of a [2, M, N] output; then y at an odd byte address, which the kernel does
    not take (the loop nest runs): the interpreter's bits either way."""
    assert I.lower(gemm_batched, report=True)[1].remarks[0].kernel == "q4k_q8k_gemm"
    rng = np.random.default_rng(12)
    w = q4k_records(rng, (70, 2))
    xq = np.stack([q8k_records(rng, 2) for _ in range(3)])
    kernel = I.compile(gemm_batched, target="cpu", threads=threads)
    want, got = np.zeros((2, 3, 70), np.float32), np.zeros((2, 3, 70), np.float32)
    I.interpret(gemm_batched, w, xq, want)
    kernel(w, xq, got)
    assert same_bits(got, want) and want[1].all() and not want[0].any()
    raw = np.zeros(2 * 3 * 70 * 4 + 1, np.uint8)
    odd = np.ndarray((2, 3, 70), np.float32, buffer=raw, offset=1)
    kernel(w, xq, odd)
    assert same_bits(odd, want)
