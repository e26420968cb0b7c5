"""``decode`` on the CPU backend, bit for bit against the interpreter: the decode-GEMV rows
kernel (a row per SIMD lane) for every grouped format and ISA level, and the compiled
GEMV kernels with the fast path, its fallbacks (views, overlap, other orders) and errors."""
import ctypes

import llvmlite.ir as ir
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ninfer_ir as I
from ninfer_ir.numerics.decode import decode_row
from ninfer_ir.numerics.folds import dot_values
from ninfer_ir.backends.llvm.gen.builtins import add_half_builtins
from ninfer_ir.backends.llvm.runtime.jit import JITModule, available_isas, host_target
from ninfer_ir.backends.llvm.runtime.launcher import compile_module
from ninfer_ir.backends.llvm.kernels.qdecode_rows import add_decode_rows
from ninfer_ir.passes import PassManager, SelectKernels
from ninfer_ir.sumorder import SumOrder
from ninfer_ir.types import f32
from tests.decode.decode_kernels import (GEMV, Q4, compile_cpu, packed_inputs, q4_gemv,
                                         q4_gemv_pairs, q4_gemv_shift_mask, q4_gemv_tree,
                                         q4_gemv_xw, same_bits)

FORMATS = sorted(GEMV)
SHAPES = [(1, 1), (3, 7), (17, 63), (70, 64), (33, 130), (5, 257), (65, 1000), (129, 129)]


def _rows_kernel(fmt, isa, order="seq"):
    target = host_target(isa)
    module = ir.Module(name="decode_rows")
    module.triple = target.triple
    fn = add_decode_rows(module, fmt, target.isa, False, SumOrder.parse(order))
    fn.linkage = "external"
    add_half_builtins(module, target.isa)
    jit = JITModule(module, isa=isa)
    p, n = ctypes.c_void_p, ctypes.c_int64
    return jit.get(fn.name, None, (p, n, p, n, n, p, n, n, n, p, n)), jit


def _call_rows(fn, p, s, x, k):
    y = np.full(p.shape[0], np.nan, np.float32)
    fn(p.ctypes.data, p.strides[0], s.ctypes.data, s.strides[0], s.strides[1], x.ctypes.data,
       x.strides[0], k, p.shape[0], y.ctypes.data, y.strides[0])
    return y


def _oracle(fmt, p, s, x, k, order="seq"):
    return np.array([dot_values(decode_row(p[n], s[n], fmt, k), x, f32, SumOrder.parse(order))
                     for n in range(p.shape[0])], np.float32).reshape(p.shape[0])


def _interpret(kernel, p, s, x):
    y = np.zeros(p.shape[0], np.float32)
    I.interpret(kernel, p, s, x, y)
    return y


def _run(compiled, p, s, x, y=None):
    y = np.zeros(p.shape[0], np.float32) if y is None else y
    compiled(p, s, x, y)
    return y


def _format_isa_pairs():
    """Every format on the host's level; on lower levels one table format (q4), one whose
    words cross bytes (q5) and Q8 (the byte-shuffle path)."""
    host = host_target().isa
    return [(name, isa) for isa in available_isas() for name in FORMATS
            if isa == host or name in ("q4_g64_fp16", "q5_g64_fp16", "q8_g32_fp16")]


@pytest.mark.parametrize("name,isa", _format_isa_pairs())
def test_rows_kernel_equals_the_oracle(name, isa):
    fmt = I.formats.get(name)
    fn, _ = _rows_kernel(fmt, isa)
    rng = np.random.default_rng(7)
    for n, k in SHAPES:
        p, s, x = packed_inputs(fmt, n, k, rng, scale_kinds="all")
        got, want = _call_rows(fn, p, s, x, k), _oracle(fmt, p, s, x, k)
        assert same_bits(got, want), (name, isa, n, k)


@pytest.mark.parametrize("order", ["chunk<64>", "chunk<64>/tree", "chunk<32>/tree"])
@pytest.mark.parametrize("name", ["q4_g64_fp16", "q5_g64_fp16", "q8_g32_fp16"])
def test_rows_kernel_in_chunk_orders(name, order):
    fmt = I.formats.get(name)
    fn, _ = _rows_kernel(fmt, None, order)
    rng = np.random.default_rng(11)
    for n, k in SHAPES + [(20, 4100)]:
        p, s, x = packed_inputs(fmt, n, k, rng, scale_kinds="all")
        assert same_bits(_call_rows(fn, p, s, x, k), _oracle(fmt, p, s, x, k, order)), (n, k)


_KERNELS = {}


@settings(max_examples=40, deadline=None)
@given(name=st.sampled_from(FORMATS), order=st.sampled_from(["seq", "chunk<64>/tree"]),
       n=st.integers(1, 80), k=st.integers(1, 700), seed=st.integers(0, 2 ** 32 - 1))
def test_rows_kernel_any_shape(name, order, n, k, seed):
    fmt = I.formats.get(name)
    if (name, order) not in _KERNELS:
        _KERNELS[(name, order)] = _rows_kernel(fmt, None, order)
    fn, _ = _KERNELS[(name, order)]
    p, s, x = packed_inputs(fmt, n, k, np.random.default_rng(seed), scale_kinds="all")
    assert same_bits(_call_rows(fn, p, s, x, k), _oracle(fmt, p, s, x, k, order))


def test_rows_kernel_has_no_fused_multiply_add():
    _, jit = _rows_kernel(Q4, None)
    asm = jit.asm().lower()
    assert "vpermps" in asm or "vpermd" in asm or host_target().isa != "avx512vnni"
    assert not any(f in asm for f in ("vfmadd", "vfmsub", "vfnmadd", "vfnmsub"))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("name", FORMATS)
def test_gemv_compiled_equals_interpreter(name, threads):
    fmt, kernel = I.formats.get(name), GEMV[name]
    compiled = compile_cpu(kernel, threads=threads)
    assert "ninfer_decode_rows" in compiled.llvm_ir()
    rng = np.random.default_rng(3)
    for n, k in [(70, 300), (37, 129), (1, 64), (150, 2 * fmt.group + 3)]:
        p, s, x = packed_inputs(fmt, n, k, rng, scale_kinds="all")
        assert same_bits(_run(compiled, p, s, x), _interpret(kernel, p, s, x)), (n, k)


def test_gemv_large_enough_for_threads():
    compiled = compile_cpu(q4_gemv, threads=2)
    p, s, x = packed_inputs(Q4, 300, 2048, np.random.default_rng(1))
    assert same_bits(_run(compiled, p, s, x), _interpret(q4_gemv, p, s, x))


def test_views_reversed_strided_and_unaligned():
    rng = np.random.default_rng(5)
    n, k = 41, 200
    p, s, x = packed_inputs(Q4, 2 * n, k, rng, scale_kinds="all")
    xs = np.repeat(x, 2)
    y = np.zeros(3 * n, np.float32)[::3]
    compiled = compile_cpu(q4_gemv, threads=2)
    views = [(p[::2], s[::2], xs[::2]), (p[:n][::-1], s[:n][::-1], x[::-1]),
             (p[1::2, :], s[1::2], x)]
    raw = np.zeros(s.nbytes + 1, np.uint8)
    odd = raw[1:].view(np.float16).reshape(s.shape)    # scales at an odd address
    odd[...] = s
    views.append((p[:n], odd[:n], x))
    for pv, sv, xv in views:
        got = _run(compiled, pv, sv, xv, y)
        assert same_bits(got, _interpret(q4_gemv, pv, sv, xv))


def test_dot_of_x_and_w_and_parallel_loop():
    compiled = compile_cpu(q4_gemv_xw, threads=2)
    assert "ninfer_decode_rows.q4_g64_fp16.seq.xw" in compiled.llvm_ir()
    p, s, x = packed_inputs(Q4, 90, 333, np.random.default_rng(2), scale_kinds="all")
    assert same_bits(_run(compiled, p, s, x), _interpret(q4_gemv_xw, p, s, x))


def test_chunk_order_runs_the_rows_kernel_and_others_decode_per_element():
    p, s, x = packed_inputs(Q4, 90, 300, np.random.default_rng(4))
    compiled = compile_cpu(q4_gemv_tree, threads=2)
    assert "ninfer_decode_rows.q4_g64_fp16.chunk64tree" in compiled.llvm_ir()
    assert same_bits(_run(compiled, p, s, x), _interpret(q4_gemv_tree, p, s, x))
    compiled = compile_cpu(q4_gemv_pairs)
    assert "ninfer_decode_rows" not in compiled.llvm_ir()
    assert same_bits(_run(compiled, p[:20], s[:20], x), _interpret(q4_gemv_pairs, p[:20],
                                                                   s[:20], x))


def test_shift_and_mask_decode_equals_the_decode_op():
    p, s, x = packed_inputs(Q4, 33, 301, np.random.default_rng(6), scale_kinds="all")
    written = _run(compile_cpu(q4_gemv_shift_mask), p, s, x)
    decoded = _run(compile_cpu(q4_gemv), p, s, x)
    assert same_bits(written, decoded)
    assert same_bits(written, _interpret(q4_gemv_shift_mask, p, s, x))
    assert same_bits(decoded, _interpret(q4_gemv, p, s, x))


OVERLAP = """func @gemv_in_place(%p: buffer<u8[N,P]>, %s: buffer<f16[N,S]>, %x: buffer<f32[K]>,
                         %y: buffer<f32[N]>) {
  %c0 = constant() {value = 0} : index
  %c1 = constant() {value = 1} : index
  %n_rows = dim(%p) {axis = 0} : index
  %k = dim(%x) {axis = 0} : index
  for(%c0, %n_rows, %c1) ({
  ^(%n: index):
    %pn = subview(%p, %n) {axes = "i:"} : buffer<u8[P]>
    %sn = subview(%s, %n) {axes = "i:"} : buffer<f16[S]>
    %w = decode(%pn, %sn, %k) {format = #q4_g64_fp16} : tensor<f32[K]>
    %r = dot(%w, %x) {order = "seq"} : tensor<f32[]>
    %v = load(%r) : f32
    store(%v, %y, %n)
    yield()
  })
  return()
}"""


def test_output_overlapping_an_input_runs_the_loop():
    module = I.parse(OVERLAP)
    PassManager([SelectKernels()]).run(module)
    assert [op.attrs["kernel"] for op in module.walk() if op.name == "kernel_call"] == \
        ["decode_dot_rows"]
    compiled = compile_module(module, threads=2)
    assert "ninfer_decode_rows" in compiled.llvm_ir()
    p, s, x = packed_inputs(Q4, 64, 64, np.random.default_rng(8))
    got, want = x.copy(), x.copy()
    compiled(p, s, got, got)                       # y is x: each row reads earlier rows
    I.interpret(module, p, s, want, want)
    assert same_bits(got, want)


@pytest.mark.parametrize("case", ["short_x", "packed", "scales"])
def test_errors_are_the_interpreters(case):
    p, s, x = packed_inputs(Q4, 10, 128, np.random.default_rng(9))
    if case == "short_x":
        x = x[:100]
    elif case == "packed":
        p = p[:, :63]
    else:
        s = s[:, :1]
    compiled = compile_cpu(q4_gemv, threads=1)
    with pytest.raises(I.DomainError) as interp:
        _interpret(q4_gemv, p, s, x)
    with pytest.raises(I.DomainError) as comp:
        _run(compiled, p, s, x)
    assert str(comp.value) == str(interp.value)
