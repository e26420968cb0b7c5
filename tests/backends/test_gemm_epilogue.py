"""GEMM nests whose inner loop has an epilogue or several dots (the gate and up of an
MLP): ``select`` gives them the pair's GEMM kernel, which computes every dot of the
nest into a staging block and then runs the epilogue (``gemm_nest.GemmEpilogue``).
Against the interpreter bit for bit at 1 and 2 threads, for every GEMM pair, both
activation forms, odd shapes and strided views; the nest falls back to the ordinary
loops, with the interpreter's bits and errors, where its output overlaps the rows it
quantizes or a quantize fails."""
import numpy as np
import pytest

import ninfer_ir as I
from ninfer_ir.numerics import quantized as oracle
from ninfer_ir.ops_select import GEMM_PAIRS, PAIRS_BY_STEM
from tests.backends.test_llvm_gemm_pairs import records, same_bits


def gated(pair, quantize):
    """f[m, n] = f[m, n] * 0.5 + gelu-like(g) * u + b[n], g and u two dots of row m."""
    lhs, rhs = getattr(I.quant, pair.lhs.name), getattr(I.quant, pair.rhs.name)
    rec, blk = pair.lhs.record_bytes, pair.block_elems
    if quantize:
        @I.kernel
        def gate_up_q(x: I.Tensor[I.f32, "M", "G", blk], wg: I.Tensor[I.u8, "N", "G", rec],
                      wu: I.Tensor[I.u8, "N", "G", rec], b: I.Tensor[I.f32, "N"],
                      f: I.Buffer[I.f32, "M", "N"]):
            for m in I.range(x.shape[0]):
                xq = I.quantize(x[m], format=rhs)
                for n in I.range(wg.shape[0]):
                    g = I.quantized_dot(wg[n], xq, lhs_format=lhs, rhs_format=rhs,
                                        acc_dtype=I.f32)
                    u = I.quantized_dot(wu[n], xq, lhs_format=lhs, rhs_format=rhs,
                                        acc_dtype=I.f32)
                    f[m, n] = f[m, n] * 0.5 + g * I.tanh(g) * u + b[n]
        return gate_up_q

    @I.kernel
    def gate_up_r(xq: I.Tensor[I.u8, "M", "G", pair.rhs.record_bytes],
                  wg: I.Tensor[I.u8, "N", "G", rec], wu: I.Tensor[I.u8, "N", "G", rec],
                  b: I.Tensor[I.f32, "N"], f: I.Buffer[I.f32, "M", "N"]):
        for m in I.range(xq.shape[0]):
            for n in I.range(wg.shape[0]):
                g = I.quantized_dot(wg[n], xq[m], lhs_format=lhs, rhs_format=rhs,
                                    acc_dtype=I.f32)
                u = I.quantized_dot(wu[n], xq[m], lhs_format=lhs, rhs_format=rhs,
                                    acc_dtype=I.f32)
                f[m, n] = f[m, n] * 0.5 + g * I.tanh(g) * u + b[n]
    return gate_up_r


def inputs(pair, quantize, m, n, g, seed, strided=False):
    rng = np.random.default_rng(seed)
    wg, wu = records(rng, pair.lhs, (n, g)), records(rng, pair.lhs, (n, g))
    x = (rng.standard_normal((m, g, pair.block_elems)) * 3).astype(np.float32)
    if not quantize:
        x = np.stack([oracle.quantize(row, pair.rhs) for row in x])
    if strided:
        x = np.repeat(x, 2, axis=0)[::2]
        wg = np.repeat(wg, 2, axis=0)[::2]
    b = rng.standard_normal(n).astype(np.float32)
    f = rng.standard_normal((m, n)).astype(np.float32)
    return [x, wg, wu, b, f]


def both(kernel, args, threads):
    want = [a.copy() for a in args]
    got = [a.copy() for a in args]
    I.interpret(kernel, *want)
    I.compile(kernel, target="cpu", threads=threads)(*got)
    return got[-1], want[-1]


@pytest.mark.parametrize("stem", GEMM_PAIRS)
@pytest.mark.parametrize("quantize", [True, False])
def test_every_pair_with_an_epilogue(stem, quantize):
    pair = PAIRS_BY_STEM[stem]
    kernel = gated(pair, quantize)
    want_kernel = f"{stem}_gemm_quantize" if quantize else f"{stem}_gemm"
    outer, inner = I.lower(kernel, report=True)[1].remarks
    assert outer.kernel == want_kernel and inner.kernel == want_kernel
    assert "staging block, then the loop's epilogue runs" in outer.reason
    assert "gemm.epilogue" in I.compile(kernel, target="cpu", threads=1).llvm_ir()
    for m, n, g, strided in [(1, 37, 3, False), (3, 70, 2, True), (17, 33, 1, False)]:
        args = inputs(pair, quantize, m, n, g, m + n + g + len(stem), strided)
        for threads in (1, 2):
            got, want = both(kernel, args, threads)
            assert same_bits(got, want), (m, n, g, strided, threads)


def test_a_large_nest_on_the_pool():
    """Enough work for the GEMMs to be split over the pool; the epilogue after them."""
    pair = PAIRS_BY_STEM["q4k_q8k"]
    kernel = gated(pair, True)
    args = inputs(pair, True, 8, 600, 2, 3)       # 2.5M products: above ROWS_PARALLEL_ELEMENTS
    for threads in (1, 2):
        got, want = both(kernel, args, threads)
        assert same_bits(got, want), threads


def test_an_output_over_the_activation_rows_runs_the_nest_in_order():
    """f[m] overlaps the records of rows 2m + 2 and 2m + 3 of xq: the epilogue of row m
    writes 1.0 or 2.0 (bytes 00 00 80 3f / 00 00 00 40, so a zero scale) where the dots
    of a later row read, so computing every dot first would read stale records; the run-time overlap
    test sends the call to the ordinary loops, which give the interpreter's bits."""
    pair = PAIRS_BY_STEM["q80_q80"]
    q8 = I.quant.q8_0

    @I.kernel
    def feeds(xq: I.Buffer[I.u8, "M", "G", 34], w: I.Tensor[I.u8, "N", "G", 34],
              f: I.Buffer[I.f32, "M", "N"]):
        for m in I.range(f.shape[0]):
            for n in I.range(w.shape[0]):
                d = I.quantized_dot(w[n], xq[m], lhs_format=q8, rhs_format=q8,
                                    acc_dtype=I.f32)
                f[m, n] = I.select(d > 0.0, I.cast(1.0, I.f32), 2.0)

    outer = I.lower(feeds, report=True)[1].remarks[0]
    assert outer.kernel == "q80_q80_gemm" and "epilogue" in outer.reason
    rng = np.random.default_rng(5)
    m, g = 8, 1
    n = 34 * g * 2 // 4                       # f[m] spans two rows of records
    w = records(rng, pair.lhs, (n, g))
    x = np.stack([oracle.quantize(row, pair.rhs)
                  for row in rng.standard_normal((2 * m + 2, g, 32)).astype(np.float32)])
    results = []
    for run in (lambda *a: I.interpret(feeds, *a), I.compile(feeds, target="cpu", threads=1)):
        mem = x.copy()
        f = mem.reshape(-1)[34 * g * 2:].view(np.float32)[:m * n].reshape(m, n)
        run(mem[:m], w, f)
        results.append(mem)
    assert np.array_equal(results[1], results[0])          # every byte
    first = np.empty((m, n), np.float32)     # the overlap matters: dots of the original rows
    I.interpret(feeds, x[:m].copy(), w, first)
    assert not np.array_equal(first, results[0].reshape(-1)[34 * g * 2:].view(np.float32)
                              [:m * n].reshape(m, n))


def test_a_failing_quantize_is_the_interpreters_error():
    pair = PAIRS_BY_STEM["q4k_q8k"]
    kernel = gated(pair, True)
    args = inputs(pair, True, 4, 30, 2, 9)
    args[0][2, 1, 7] = np.nan
    want = [a.copy() for a in args]
    got = [a.copy() for a in args]
    with pytest.raises(I.DomainError) as e_want:
        I.interpret(kernel, *want)
    with pytest.raises(I.DomainError) as e_got:
        I.compile(kernel, target="cpu")(*got)
    assert str(e_got.value) == str(e_want.value)
    assert same_bits(got[-1], want[-1])       # rows 0 and 1 stored, as in order
