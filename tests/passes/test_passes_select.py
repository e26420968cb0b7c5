"""Kernel selection: the ``select`` pass puts the loops a library kernel computes in
``kernel_call`` (shown by ``--print-after``), gives every loop a remark (the kernel, or
why none), and the CPU emitter only translates what the IR says."""
import inspect

import numpy as np
import pytest

import ninfer_ir as I
from ninfer_ir.backends.llvm.runtime.launcher import compile_module
from ninfer_ir.passes import PassManager, SelectKernels, lower
from tests.decode.decode_kernels import Q4, packed_inputs
from tests.kernels import KERNELS as REGISTRY
from tests.kernels import normal, q4k_records

Q8, Q4K = I.quant.q8_k, I.quant.q4_k
ROWS_CALL = 'call void @"ninfer_q4k_q8k_dot_rows"('


@I.kernel
def gemv(w: I.Tensor[I.u8, "N", "G", 144], x: I.Tensor[I.f32, "G", 256],
         y: I.Buffer[I.f32, "N"]):
    xq = I.quantize(x, format=Q8)
    for n in I.range(w.shape[0]):
        y[n] = I.quantized_dot(w[n], xq, lhs_format=Q4K, rhs_format=Q8, acc_dtype=I.f32)


@I.kernel
def gemv_bias(w: I.Tensor[I.u8, "N", "G", 144], x: I.Tensor[I.f32, "G", 256],
              b: I.Tensor[I.f32, "N"], y: I.Buffer[I.f32, "N"]):
    xq = I.quantize(x, format=Q8)
    for n in I.range(w.shape[0]):
        y[n] = I.quantized_dot(w[n], xq, lhs_format=Q4K, rhs_format=Q8, acc_dtype=I.f32) + b[n]


@I.kernel
def gemv_relu(w: I.Tensor[I.u8, "N", "G", 144], x: I.Tensor[I.f32, "G", 256],
              y: I.Buffer[I.f32, "N"]):
    xq = I.quantize(x, format=Q8)
    for n in I.range(w.shape[0]):
        y[n] = I.maximum(I.quantized_dot(w[n], xq, lhs_format=Q4K, rhs_format=Q8,
                                         acc_dtype=I.f32), 0.0)


def _line(kernel, text):
    lines, first = inspect.getsourcelines(kernel.fn if hasattr(kernel, "fn") else kernel)
    return first + next(k for k, line in enumerate(lines) if text in line)


def _stages(kernel, target="cpu"):
    seen = {}
    _, report = lower(kernel.ir, target, print_after="all",
                      print_to=lambda stage, text: seen.__setitem__(stage, text))
    return seen, report


def _gemv_args(n=5, g=2, bias=False):
    rng = np.random.default_rng(3)
    w, x = q4k_records(rng, n, g), normal(rng, g, 256)
    b = (normal(rng, n),) if bias else ()
    return (w, x, *b, np.zeros(n, np.float32))


def _same_as_interpreter(kernel, args):
    want = [a.copy() for a in args]
    I.interpret(kernel, *want)
    got = [a.copy() for a in args]
    I.compile(kernel, "cpu")(*got)
    assert got[-1].view(np.uint32).tolist() == want[-1].view(np.uint32).tolist()


def test_plain_gemv_gets_the_rows_kernel_in_the_ir_and_the_remarks():
    stages, report = _stages(gemv)
    text = stages["13-select"]
    assert 'kernel_call(%w, %xq, %y) {kernel = "q4k_q8k_dot_rows"} ({' in text
    assert "kernel_call" not in stages["12-dce"]
    assert str(I.parse(text)) == text
    file = inspect.getsourcefile(gemv.fn)
    assert [str(r) for r in report.remarks] == [
        f"{file}:{_line(gemv, 'for n in')}: loop %n in @gemv: kernel q4k_q8k_dot_rows: the "
        f"loop computes what the kernel computes"]
    assert ROWS_CALL in I.emit(gemv, "cpu")
    _same_as_interpreter(gemv, _gemv_args())


def test_bias_epilogue_keeps_the_kernel_and_shows_it():
    stages, report = _stages(gemv_bias)
    text = stages["13-select"]
    assert ('kernel_call(%w, %xq, %y) {epilogue = "%y[%n] = add(quantized_dot, load %b[%n])", '
            'kernel = "q4k_q8k_dot_rows"} ({') in text
    assert str(I.parse(text)) == text
    (remark,) = report.remarks
    assert remark.kernel == "q4k_q8k_dot_rows" and remark.loc[1] == _line(gemv_bias, "for n in")
    assert str(remark).endswith(
        "loop %n in @gemv_bias: kernel q4k_q8k_dot_rows: the kernel computes the row dot of "
        "each block of rows, then the loop's epilogue runs on the block (`%y[%n] = "
        "add(quantized_dot, load %b[%n])`)")
    assert ROWS_CALL in I.emit(gemv_bias, "cpu")
    _same_as_interpreter(gemv_bias, _gemv_args(bias=True))


def test_activation_epilogue_is_named_too():
    _, report = _stages(gemv_relu)
    assert report.remarks[0].kernel == "q4k_q8k_dot_rows"
    assert "(`%y[%n] = max(quantized_dot, " in str(report.remarks[0])


@I.kernel
def gemv_next(w: I.Tensor[I.u8, "N", "G", 144], x: I.Tensor[I.f32, "G", 256],
              b: I.Tensor[I.f32, "B"], y: I.Buffer[I.f32, "N"]):
    xq = I.quantize(x, format=Q8)
    for n in I.range(w.shape[0]):
        y[n] = I.quantized_dot(w[n], xq, lhs_format=Q4K, rhs_format=Q8, acc_dtype=I.f32) + \
            b[n + 1]


@I.kernel
def gemv_sum(w: I.Tensor[I.u8, "N", "G", 144], x: I.Tensor[I.f32, "G", 256],
             y: I.Buffer[I.f32, "N"]):
    xq = I.quantize(x, format=Q8)
    for n in I.range(w.shape[0]):
        v = I.quantized_dot(w[n], xq, lhs_format=Q4K, rhs_format=Q8, acc_dtype=I.f32)
        for k in I.range(2):
            y[n] = v + y[n]


@I.kernel
def gemv_first(w: I.Tensor[I.u8, "N", "G", 144], x: I.Tensor[I.f32, "G", 256],
               y: I.Buffer[I.f32, "N"]):
    xq = I.quantize(x, format=Q8)
    for n in I.range(w.shape[0]):
        y[0] = I.quantized_dot(w[n], xq, lhs_format=Q4K, rhs_format=Q8, acc_dtype=I.f32)


@pytest.mark.parametrize("kernel, why", [
    (gemv_next, "the epilogue loads %b at an index computed inside the loop (the row %n and "
                "loop-invariant indices only)"),
    (gemv_sum, "the body holds for, which is neither a row dot nor an elementwise epilogue "
               "(elementwise ops, checks, loads and stores at the row)"),
    (gemv_first, "the row loop stores into %y at indices without the row %n"),
])
def test_loops_that_do_not_match_say_why(kernel, why):
    _, report = _stages(kernel)
    remark = next(r for r in report.remarks if r.loop == "%n")
    assert remark.kernel is None and remark.reason == why
    assert ROWS_CALL not in I.emit(kernel, "cpu")


def test_gemm_nest_gets_the_gemm_kernel_and_the_inner_loop_says_it_is_part_of_it():
    _, report = lower(REGISTRY["q4k_gemm"].kernel.ir, "cpu")
    outer, inner = report.remarks
    assert outer.kernel == "q4k_q8k_gemm_quantize"
    assert inner.kernel == "q4k_q8k_gemm_quantize" and "inner loop of the nest of loop %m" \
        in inner.reason


def test_cuda_remarks_say_what_the_target_does():
    _, report = _stages(gemv, "cuda")
    (remark,) = report.remarks
    assert remark.kernel is None
    assert remark.reason == ("the cuda target has no library kernels: a parallel loop: its "
                             "iterations are spread over GPU threads; each quantized op is one "
                             "warp-cooperative op in its declared order")


ORDERED = """func @f(%w: tensor<u8[N,G,144]>, %xq: tensor<u8[G,292]>, %y: buffer<f32[N]>) {
  %c0 = constant() {value = 0} : index
  %c1 = constant() {value = 1} : index
  %n_rows = dim(%w) {axis = 0} : index
  for(%c0, %n_rows, %c1) ({
  ^(%n: index):
    %wn = subview(%w, %n) {axes = "i::"} : tensor<u8[G,144]>
    %r = quantized_dot(%wn, %xq) {acc_dtype = f32, lhs_format = #q4_k, order = "chunk<2>", rhs_format = #q8_k} : tensor<f32[]>
    %s = load(%r) : f32
    store(%s, %y, %n)
    yield()
  })
  return()
}
"""

DECODE = """func @f(%p: tensor<u8[N,P]>, %s: tensor<f16[N,S]>, %x: tensor<f32[K]>, %y: buffer<f32[N]>) {
  %c0 = constant() {value = 0} : index
  %c1 = constant() {value = 1} : index
  %n_rows = dim(%p) {axis = 0} : index
  %k = dim(%x) {axis = 0} : index
  for(%c0, %n_rows, %c1) ({
  ^(%n: index):
    %pn = subview(%p, %n) {axes = "i:"} : tensor<u8[P]>
    %sn = subview(%s, %n) {axes = "i:"} : tensor<f16[S]>
    %w = decode(%pn, %sn, %k) {format = #q4_g64_fp16} : tensor<f32[K]>
    %r = dot(%w, %x) {order = "ORDER"} : tensor<f32[]>
    %v = load(%r) : f32
    store(%v, %y, %n)
    yield()
  })
  return()
}
"""


def _select(text):
    module = I.parse(text)
    sel = SelectKernels()
    PassManager([sel]).run(module)
    return module, sel.remarks


def test_a_declared_order_the_kernel_does_not_compute_is_named():
    _, (remark,) = _select(ORDERED)
    assert remark.reason == ("the quantized_dot sums in order chunk<2>; the kernel computes "
                             "order seq")


@pytest.mark.parametrize("order, kernel", [("seq", "decode_dot_rows"),
                                           ("chunk<64>/tree", "decode_dot_rows"),
                                           ("chunk<4>", None)])
def test_decode_rows_orders(order, kernel):
    module, (remark,) = _select(DECODE.replace("ORDER", order))
    assert remark.kernel == kernel
    calls = [op for op in module.walk() if op.name == "kernel_call"]
    assert len(calls) == (kernel is not None)
    if kernel is None:
        assert f"order {order}, which the kernel does not compute" in remark.reason
    p, s, x = packed_inputs(Q4, 6, 128, np.random.default_rng(1))
    want, got = np.zeros(6, np.float32), np.zeros(6, np.float32)
    I.interpret(I.parse(DECODE.replace("ORDER", order)), p, s, x, want)
    I.interpret(module, p, s, x, np.zeros(6, np.float32))
    compiled = compile_module(module)
    assert ("ninfer_decode_rows" in compiled.llvm_ir()) == (kernel is not None)
    compiled(p, s, x, got)
    assert got.view(np.uint32).tolist() == want.view(np.uint32).tolist()


def test_kernel_call_verifies_its_shape():
    module, _ = _select(ORDERED.replace('"chunk<2>"', '"seq"'))
    text = str(module)
    assert 'kernel = "q4k_q8k_dot_rows"' in text
    with pytest.raises(I.VerifyError, match="unknown library kernel 'nope'"):
        I.parse(text.replace('"q4k_q8k_dot_rows"', '"nope"'))
    with pytest.raises(I.VerifyError, match=r"takes 2 parameter\(s\) \(w, xq\) for each of 1 "
                                            r"dot\(s\), then the output\(s\), got 2"):
        I.parse(text.replace("kernel_call(%w, %xq, %y)", "kernel_call(%w, %xq)"))
    with pytest.raises(I.VerifyError, match="'dots' must be a positive integer, got 0"):
        I.parse(text.replace('{kernel = "q4k', '{dots = 0, kernel = "q4k'))
    with pytest.raises(I.VerifyError, match="the parameters of kernel_call q4k_q8k_dot_rows "
                                            "are not those of its loop"):
        compile_module(I.parse(text.replace('{kernel = "q4k', '{dots = 2, kernel = "q4k')
                               .replace("kernel_call(%w, %xq, %y)",
                                        "kernel_call(%w, %xq, %w, %xq, %y)")))


def test_the_emitter_refuses_a_kernel_call_whose_loop_the_kernel_does_not_compute():
    module, _ = _select(ORDERED.replace('"chunk<2>"', '"seq"'))
    text = str(module).replace("store(%s, %y, %n)", "store(%s, %y, %c0)")
    with pytest.raises(I.VerifyError, match="kernel_call names q4k_q8k_dot_rows but its loop "
                                            "is not one: the row loop stores into %y at "
                                            "indices without the row %n"):
        compile_module(I.parse(text))

