"""Row loops with epilogues keep the rows kernels: the dots of a block of rows come from
the kernel, then the loop's own epilogue ops run on each row (``rows.RowsCall``). Every
output is compared bit for bit with the interpreter at 1 and 2 threads (the thread split
forced on small loops by lowering its thresholds), for each kind of epilogue, odd row
counts, views, an epilogue that reads the output, and overlapping outputs."""
import llvmlite.ir as ir
import numpy as np
import pytest

import ninfer_ir as I
from ninfer_ir.backends.abi import REASON_NO_MEMORY
from ninfer_ir.backends.llvm.kernels import qdecode, records, rows
from ninfer_ir.backends.llvm.runtime.launcher import CompiledKernel
from ninfer_ir.passes import lower
from ninfer_ir.quant import PAIRS
from tests.decode.decode_kernels import Q4, packed_inputs
from tests.kernels import normal, q4k_records

Q8K, Q4K = I.quant.q8_k, I.quant.q4_k
ROWS = "ninfer_q4k_q8k_dot_rows"
DECODE_ROWS = "ninfer_decode_rows"


@I.kernel
def bias(w: I.Tensor[I.u8, "N", "G", 144], x: I.Tensor[I.f32, "G", 256],
         b: I.Tensor[I.f32, "N"], y: I.Buffer[I.f32, "N"]):
    xq = I.quantize(x, format=Q8K)
    for n in I.range(w.shape[0]):
        y[n] = I.quantized_dot(w[n], xq, lhs_format=Q4K, rhs_format=Q8K, acc_dtype=I.f32) + b[n]


@I.kernel
def bias_any(w: I.Tensor[I.u8, "N", "G", 144], x: I.Tensor[I.f32, "G", 256],
             b: I.Tensor[I.f32, "B"], y: I.Buffer[I.f32, "Y"]):
    xq = I.quantize(x, format=Q8K)
    for n in I.range(w.shape[0]):
        y[n] = I.quantized_dot(w[n], xq, lhs_format=Q4K, rhs_format=Q8K, acc_dtype=I.f32) + b[n]


SCALES = np.linspace(-1.0, 1.0, 37).astype(np.float32)


@I.kernel
def constant_scale(w: I.Tensor[I.u8, 37, "G", 144], x: I.Tensor[I.f32, "G", 256],
                   y: I.Buffer[I.f32, 37]):
    xq = I.quantize(x, format=Q8K)
    for n in I.range(w.shape[0]):
        v = I.quantized_dot(w[n], xq, lhs_format=Q4K, rhs_format=Q8K, acc_dtype=I.f32)
        y[n] = v * SCALES[n]


@I.kernel
def silu(w: I.Tensor[I.u8, "N", "G", 144], x: I.Tensor[I.f32, "G", 256],
         y: I.Buffer[I.f32, "N"]):
    xq = I.quantize(x, format=Q8K)
    for n in I.range(w.shape[0]):
        g = I.quantized_dot(w[n], xq, lhs_format=Q4K, rhs_format=Q8K, acc_dtype=I.f32)
        y[n] = g * (1.0 / (1.0 + I.exp(-g)))


@I.kernel
def residual(w: I.Tensor[I.u8, "N", "G", 144], x: I.Tensor[I.f32, "G", 256],
             y: I.Buffer[I.f32, "N"]):
    xq = I.quantize(x, format=Q8K)
    for n in I.range(w.shape[0]):
        y[n] = y[n] + I.quantized_dot(w[n], xq, lhs_format=Q4K, rhs_format=Q8K, acc_dtype=I.f32)


@I.kernel
def scale_cast_select(w: I.Tensor[I.u8, "N", "G", 144], x: I.Tensor[I.f32, "G", 256],
                      s: I.f32, lo: I.Tensor[I.f32, "N"], y: I.Buffer[I.f16, "N"],
                      z: I.Buffer[I.i32, "N"]):
    xq = I.quantize(x, format=Q8K)
    for n in I.range(w.shape[0]):
        v = I.quantized_dot(w[n], xq, lhs_format=Q4K, rhs_format=Q8K, acc_dtype=I.f32) * s
        y[n] = I.cast(I.select(v > lo[n], v, lo[n] * 0.5), I.f16)
        z[n] = I.cast(v > 0.0, I.i32)


@I.kernel
def nan_epilogue(w: I.Tensor[I.u8, "N", "G", 144], x: I.Tensor[I.f32, "G", 256],
                 b: I.Tensor[I.f32, "N"], y: I.Buffer[I.f32, "N"]):
    xq = I.quantize(x, format=Q8K)
    for n in I.range(w.shape[0]):
        v = I.quantized_dot(w[n], xq, lhs_format=Q4K, rhs_format=Q8K, acc_dtype=I.f32)
        y[n] = I.sqrt(v) + I.log(b[n]) / b[n]


@I.kernel
def gate_up(wg: I.Tensor[I.u8, "N", "G", 144], wu: I.Tensor[I.u8, "N", "G", 144],
            x: I.Tensor[I.f32, "G", 256], y: I.Buffer[I.f32, "N"]):
    xq = I.quantize(x, format=Q8K)
    for n in I.range(wg.shape[0]):
        g = I.quantized_dot(wg[n], xq, lhs_format=Q4K, rhs_format=Q8K, acc_dtype=I.f32)
        u = I.quantized_dot(wu[n], xq, lhs_format=Q4K, rhs_format=Q8K, acc_dtype=I.f32)
        y[n] = g * (1.0 / (1.0 + I.exp(-g))) * u


@I.kernel
def gemm_bias(w: I.Tensor[I.u8, "N", "G", 144], x: I.Tensor[I.f32, "M", "G", 256],
              b: I.Tensor[I.f32, "N"], y: I.Buffer[I.f32, "M", "N"]):
    for m in I.range(x.shape[0]):
        xq = I.quantize(x[m], format=Q8K)
        for n in I.range(w.shape[0]):
            v = I.quantized_dot(w[n], xq, lhs_format=Q4K, rhs_format=Q8K, acc_dtype=I.f32)
            y[m, n] = v + b[n]


@I.kernel
def shifted(w: I.Tensor[I.u8, "N", "G", 144], x: I.Tensor[I.f32, "G", 256],
            z: I.Buffer[I.f32, "N"], y: I.Buffer[I.f32, "N"]):
    xq = I.quantize(x, format=Q8K)
    for n in I.range(w.shape[0]):
        y[n] = I.quantized_dot(w[n], xq, lhs_format=Q4K, rhs_format=Q8K, acc_dtype=I.f32) + z[n]


@I.kernel
def weights_written(w: I.Buffer[I.u8, "N", "G", 144], x: I.Tensor[I.f32, "G", 256],
                    y: I.Buffer[I.f32, "M"]):
    xq = I.quantize(x, format=Q8K)
    for n in I.range(w.shape[0]):
        y[n] = I.quantized_dot(w[n], xq, lhs_format=Q4K, rhs_format=Q8K, acc_dtype=I.f32) * 2.0


@I.kernel
def decode_bias_silu(p: I.Tensor[I.u8, "N", "P"], s: I.Tensor[I.f16, "N", "S"],
                     x: I.Tensor[I.f32, "K"], b: I.Tensor[I.f32, "N"],
                     y: I.Buffer[I.f32, "N"]):
    for n in I.range(p.shape[0]):
        g = I.dot(I.decode(p[n], s[n], format=Q4, k=x.shape[0]), x) + b[n]
        y[n] = g * (1.0 / (1.0 + I.exp(-g)))


@I.kernel
def decode_gate_up(pg: I.Tensor[I.u8, "N", "P"], sg: I.Tensor[I.f16, "N", "S"],
                   pu: I.Tensor[I.u8, "N", "P"], su: I.Tensor[I.f16, "N", "S"],
                   x: I.Tensor[I.f32, "K"], y: I.Buffer[I.f32, "N"]):
    for n in I.range(pg.shape[0]):
        g = I.dot(I.decode(pg[n], sg[n], format=Q4, k=x.shape[0]), x)
        u = I.dot(x, I.decode(pu[n], su[n], format=Q4, k=x.shape[0]), order="chunk<64>")
        y[n] = y[n] + g * u


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("objects")


@pytest.fixture
def split(monkeypatch):
    """Any row loop of the tests is worth threads (its rows still must be independent)."""
    monkeypatch.setattr(records, "ROWS_PARALLEL_ELEMENTS", 1)
    monkeypatch.setattr(qdecode, "ROWS_PARALLEL_ELEMENTS", 1)


def _selected(kernel, dots=1):
    text, report = None, None
    seen = {}
    _, report = lower(kernel.ir, "cpu", print_after="select",
                      print_to=lambda stage, t: seen.__setitem__(stage, t))
    text = "".join(seen.values())
    picked = [r for r in report.remarks if r.kernel is not None]
    assert len(picked) == 1, report.remarks
    assert "epilogue = " in text and ("dots = 2" in text) == (dots == 2)
    return picked[0]


def _outputs_match(kernel, args, cache, threads=(1, 2)):
    want = [a.copy() for a in args]
    I.interpret(kernel, *want)
    for t in threads:
        got = [a.copy() for a in args]
        I.compile(kernel, "cpu", threads=t, cache_dir=cache)(*got)
        for g, w in zip(got, want):
            assert g.tobytes() == w.tobytes(), f"threads={t}"
    return want


def _q4k(rng, n, g=2):
    return q4k_records(rng, n, g), normal(rng, g, 256)


@pytest.mark.parametrize("n", [1, 63, 64, 65, 131])
def test_bias_is_exact_for_any_row_count(n, cache, split):
    rng = np.random.default_rng(n)
    w, x = _q4k(rng, n)
    _outputs_match(bias, [w, x, normal(rng, n), np.zeros(n, np.float32)], cache)


def test_each_kind_of_epilogue_keeps_the_kernel_and_the_bits(cache, split):
    rng = np.random.default_rng(1)
    n = 97
    w, x = _q4k(rng, n)
    x[0, :5] = [60.0, -60.0, 1e4, -1e4, 0.0]           # large dots: exp saturates
    for kernel in (silu, residual):
        assert _selected(kernel).kernel == "q4k_q8k_dot_rows"
        assert ROWS in I.emit(kernel, "cpu")
        _outputs_match(kernel, [w, x, normal(rng, n)], cache)
    _selected(scale_cast_select)
    lo = normal(rng, n)
    lo[::7] = np.nan
    want = _outputs_match(scale_cast_select, [w, x, np.float32(0.75), lo,
                                              np.zeros(n, np.float16), np.zeros(n, np.int32)],
                          cache)
    assert 0 < want[-1].sum() < n


def test_nan_producing_epilogue(cache, split):
    rng = np.random.default_rng(2)
    n = 70
    w, x = _q4k(rng, n)
    b = normal(rng, n)
    b[::5] = 0.0
    b[1::5] = -0.0
    want = _outputs_match(nan_epilogue, [w, x, b, np.zeros(n, np.float32)], cache)
    assert np.isnan(want[-1]).sum() > 10 and np.isinf(want[-1]).any()


def test_gate_up_pair_shares_the_row_loop(cache, split):
    rng = np.random.default_rng(3)
    n = 129
    (wg, x), wu = _q4k(rng, n), q4k_records(rng, n, 2)
    remark = _selected(gate_up, dots=2)
    assert "row dots" in remark.reason
    assert I.emit(gate_up, "cpu").count(f'call void @"{ROWS}"') == 2
    _outputs_match(gate_up, [wg, wu, x, np.zeros(n, np.float32)], cache)


def test_views_strided_and_reversed_and_a_gemm_row(cache, split):
    rng = np.random.default_rng(4)
    n = 67
    w, x = _q4k(rng, n)
    b = normal(rng, 2 * n)[::-2]
    y = np.zeros(3 * n, np.float32)[::3]
    _outputs_match(bias, [w[::-1], x, b, y], cache)
    xm = normal(rng, 3, 2, 256)
    for out in (np.zeros((3, n), np.float32), np.zeros((n, 3), np.float32).T):
        _outputs_match(gemm_bias, [w, xm, normal(rng, n), out], cache)


def test_an_output_overlapping_an_epilogue_input_runs_in_order(cache, split):
    """``z`` is ``y`` one element further: row n reads y[n+1] before row n+1 writes it.
    The blocks keep the loop's order; the rows are not independent, so no threads."""
    rng = np.random.default_rng(5)
    n = 90
    w, x = _q4k(rng, n)
    base = normal(rng, n + 1)
    want = _outputs_match(shifted, [w, x, base[1:], base[:-1]], cache)
    assert not np.array_equal(want[-1], base[:-1])
    # the same through the interpreter with the buffers sharing memory
    got_i, got_c = base.copy(), base.copy()
    I.interpret(shifted, w, x, got_i[1:], got_i[:-1])
    for t in (1, 2):
        got_c = base.copy()
        I.compile(shifted, "cpu", threads=t, cache_dir=cache)(w, x, got_c[1:], got_c[:-1])
        assert got_c.view(np.uint32).tolist() == got_i.view(np.uint32).tolist()


def test_an_output_overlapping_the_weights_falls_back_to_the_loop(cache, split):
    """y writes into the bytes of later rows of w: the kernel may not compute those
    rows ahead, so the ordinary loop runs and gives the interpreter's bits."""
    rng = np.random.default_rng(6)
    n, g = 24, 1
    w = q4k_records(rng, n, g)
    x = normal(rng, g, 256)
    for t in (1, 2):
        runs = []
        for run in (I.interpret, lambda *a: I.compile(weights_written, "cpu", threads=t,
                                                      cache_dir=cache)(*a)):
            mem = w.copy()
            # y[k] is float k of the weights' bytes from row 1 on
            y = mem.reshape(-1)[144:144 + 4 * n].view(np.float32)
            run(weights_written, mem, x, y) if run is I.interpret else run(mem, x, y)
            runs.append(mem.copy())
        assert runs[0].tobytes() == runs[1].tobytes()
        assert runs[0].tobytes() != w.tobytes()


def test_an_epilogue_index_out_of_range_fails_at_the_interpreters_row(cache, split):
    """The bounds checks of the epilogue keep the loop's order: rows before the failing
    one are stored, as in the interpreter."""
    rng = np.random.default_rng(7)
    w, x = _q4k(rng, 80)
    _selected(bias_any)
    for nb, ny in ((70, 80), (80, 75), (80, 80)):
        args = [w, x, normal(rng, nb), np.zeros(ny, np.float32)]
        want = [a.copy() for a in args]
        try:
            I.interpret(bias_any, *want)
            failed = None
        except I.NinferError as err:
            failed = err
        for t in (1, 2):
            got = [a.copy() for a in args]
            if failed is None:
                I.compile(bias_any, "cpu", threads=t, cache_dir=cache)(*got)
            else:
                with pytest.raises(type(failed)) as err:
                    I.compile(bias_any, "cpu", threads=t, cache_dir=cache)(*got)
                assert str(err.value) == str(failed)
            assert got[-1].tobytes() == want[-1].tobytes()
        assert (failed is None) == (nb == ny == 80)


@pytest.mark.parametrize("n", [5, 64, 133])
def test_decode_epilogues(n, cache, split):
    rng = np.random.default_rng(n)
    p, s, x = packed_inputs(Q4, n, 256, rng)
    _selected(decode_bias_silu)
    assert DECODE_ROWS in I.emit(decode_bias_silu, "cpu")
    _outputs_match(decode_bias_silu, [p, s, x, normal(rng, n), np.zeros(n, np.float32)], cache)
    pu, su, _ = packed_inputs(Q4, n, 256, rng)
    _selected(decode_gate_up, dots=2)
    _outputs_match(decode_gate_up, [p, s, pu, su, x, normal(rng, n)], cache)


@pytest.fixture
def trap(monkeypatch, split, tmp_path):
    """The ordinary loop, which runs where the blocks would not compute the loop's
    result, fails as out of memory instead: a run that succeeds ran the kernels."""
    def fail(self, e, loop, lb, step, k0, k1):
        e.fail_if(ir.Constant(ir.IntType(1), 1), REASON_NO_MEMORY)
    monkeypatch.setattr(rows.RowsCall, "fallback", fail)
    return tmp_path


def _cases(rng):
    n = 131
    w, x = _q4k(rng, n)
    p, s, xd = packed_inputs(Q4, n, 256, rng)
    pu, su, _ = packed_inputs(Q4, n, 256, rng)
    return [
        (bias, [w[::-1], x, normal(rng, 2 * n)[::-2], np.zeros(3 * n, np.float32)[::3]]),
        (silu, [w, x, np.zeros(n, np.float32)]),
        (constant_scale, [w[:37], x, np.zeros(37, np.float32)]),
        (bias_any, [w, x, normal(rng, n), np.zeros(n, np.float32)]),
        (residual, [w, x, normal(rng, n)]),
        (gate_up, [w, w[::-1], x, np.zeros(n, np.float32)]),
        (gemm_bias, [w, normal(rng, 3, 2, 256), normal(rng, n), np.zeros((n, 3), np.float32).T]),
        (shifted, [w, x, normal(rng, n), np.zeros(n, np.float32)]),
        (decode_bias_silu, [p, s, xd, normal(rng, n), np.zeros(n, np.float32)]),
        (decode_gate_up, [p, s, pu, su, xd, normal(rng, n)]),
    ]


def test_the_kernels_run_and_the_loop_does_not(trap):
    for kernel, args in _cases(np.random.default_rng(8)):
        _outputs_match(kernel, args, trap)


def test_the_loop_runs_where_the_output_overlaps_the_weights(trap):
    rng = np.random.default_rng(6)
    mem = q4k_records(rng, 24, 1)
    y = mem.reshape(-1)[144:144 + 4 * 24].view(np.float32)
    with pytest.raises(MemoryError):
        I.compile(weights_written, "cpu", cache_dir=trap)(mem, normal(rng, 1, 256), y)


def test_the_thread_split_is_taken_only_for_independent_rows(split, tmp_path, monkeypatch):
    """The loop goes to the pool (the Python one here, to see it) when its rows are
    independent: not when an output overlaps what another row reads, nor when a check
    may stop the loop midway."""
    from ninfer_ir.backends.llvm.runtime.threads import Pool
    pooled = []
    run = Pool.run

    def counting(self, body, env, n, err, threads):
        pooled.append(n)
        return run(self, body, env, n, err, threads)
    monkeypatch.setattr(Pool, "run", counting)
    rng = np.random.default_rng(9)
    n = 100
    w, x = _q4k(rng, n)
    base = normal(rng, n + 1)
    for kernel, args, split_expected in (
            (bias, [w, x, normal(rng, n), np.zeros(n, np.float32)], True),
            (shifted, [w, x, normal(rng, n), np.zeros(n, np.float32)], True),
            (shifted, [w, x, base[1:], base[:-1]], False),
            (bias_any, [w, x, normal(rng, n), np.zeros(n, np.float32)], False)):
        pooled.clear()
        compiled = CompiledKernel(I.lower(kernel, "cpu"), threads=2, native_threads=False,
                                  cache_dir=tmp_path)
        want = [a.copy() for a in args]
        I.interpret(kernel, *want)
        compiled(*args)
        assert args[-1].tobytes() == want[-1].tobytes()
        assert pooled == ([n] if split_expected else []), kernel


PAIR_GEMV = """func @f(%w: tensor<u8[N,G,LR]>, %x: tensor<f32[G,B]>, %b: tensor<f32[N]>, %y: buffer<f32[N]>) {
  %xq = quantize(%x) {format = #RHS} : tensor<u8[G,RR]>
  %N = dim(%w) {axis = 0} : index
  %c0 = constant() {value = 0} : index
  %c1 = constant() {value = 1} : index
  %half = constant() {value = 0.5} : f32
  for(%c0, %N, %c1) ({
  ^(%n: index):
    %wn = subview(%w, %n) {axes = "i::"} : tensor<u8[G,LR]>
    %d = quantized_dot(%wn, %xq) {acc_dtype = f32, lhs_format = #LHS, order = "seq", rhs_format = #RHS} : tensor<f32[]>
    %s = load(%d) : f32
    %bn = load(%b, %n) : f32
    %t = mul(%s, %half) : f32
    %u = add(%t, %bn) : f32
    store(%u, %y, %n)
    yield()
  })
  return()
}"""


@pytest.mark.parametrize("pair", list(PAIRS.values()), ids=str)
def test_every_pair_keeps_its_rows_kernel_with_an_epilogue(pair, trap):
    from tests.backends.test_gguf_pairs import weights
    from tests.backends.test_kquant_pairs import records
    text = (PAIR_GEMV.replace("LHS", pair.lhs.name).replace("RHS", pair.rhs.name)
            .replace("LR", str(pair.lhs.record_bytes)).replace("RR", str(pair.rhs.record_bytes))
            .replace(",B]", f",{pair.block_elems}]"))
    module = I.lower(I.parse(text), "cpu")
    assert f'kernel = "{pair.rows_kernel}"' in str(module) and "epilogue = " in str(module)
    rng = np.random.default_rng(10)
    n, g = 67, 2
    w = (q4k_records(rng, n, g) if pair.lhs is I.quant.q4_k else
         records(rng, pair.lhs.name, n, g) if pair.rhs is Q8K else weights(rng, pair, n, g))
    args = [w, normal(rng, g, pair.block_elems), normal(rng, n), np.zeros(n, np.float32)]
    want = [a.copy() for a in args]
    I.interpret(I.parse(text), *want)
    for t in (1, 2):
        got = [a.copy() for a in args]
        CompiledKernel(module, threads=t, cache_dir=trap)(*got)
        assert got[-1].tobytes() == want[-1].tobytes()
