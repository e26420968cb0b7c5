"""Decoded f32 weights are never stored: after the pass pipeline a GEMV over ``I.decode``
is one row loop whose ``decode`` feeds its ``dot`` directly (computed where the dot reads
it), no ``alloc`` appears and the peak local bytes are 0 for every shape; the compiled
plan calls the rows kernel and allocates nothing. A hand-written decode fused into a
``seq`` dot stores nothing either; one that cannot be fused (a ``tree`` dot) stores one
row at a time, never a buffer that grows with the number of rows."""
import numpy as np
import pytest

import ninfer_ir as I
from tests.decode.decode_kernels import (GEMV, q4_gemv, q4_gemv_pairs, q4_gemv_shift_mask,
                                         q4_gemv_tree, q4_gemv_xw)
from tests.passes.ir_kernels import DECODE_DOT_TREE

KERNELS = [q4_gemv, q4_gemv_xw, q4_gemv_tree, q4_gemv_pairs, q4_gemv_shift_mask,
           *GEMV.values()]
SIZES = [dict(N=1, K=64, P=32, S=1), dict(N=1 << 20, K=1 << 14, P=1 << 13, S=256)]


def _name(kernel):
    return kernel.ir.funcs[0].sym_name


@pytest.mark.parametrize("kernel", KERNELS, ids=_name)
def test_no_buffer_at_all(kernel):
    lowered, report = I.lower(kernel, "cpu", report=True)
    assert not [op for op in lowered.walk() if op.name in ("alloc", "copy")]
    peak = report.peak_local_bytes[_name(kernel)]
    assert peak.static == 0 and [peak.evaluate(**s) for s in SIZES] == [0, 0]


def test_q4_gemv_is_one_row_loop_of_decode_and_dot():
    lowered = I.lower(q4_gemv, "cpu")
    loops = [op for op in lowered.walk() if op.name == "for"]
    assert len(loops) == 1
    body = [op.name for op in loops[0].body.ops]
    assert body == ["subview", "subview", "decode", "dot", "load", "store", "yield"]
    decode, dot = loops[0].body.ops[2], loops[0].body.ops[3]
    assert dot.operands[0] is decode.result and dot.attrs["order"] == "seq"
    assert [u.op for u in decode.result.uses] == [dot]


def test_compiled_plan_calls_the_rows_kernel_and_allocates_nothing():
    llvm = I.compile(q4_gemv, "cpu").llvm_ir()
    assert "ninfer_decode_rows.q4_g64_fp16" in llvm
    assert "calloc" not in llvm


def test_an_unfused_decode_stores_one_row_not_the_matrix():
    lowered, report = I.lower(I.parse(DECODE_DOT_TREE), "cpu", report=True)
    allocs = [op for op in lowered.walk() if op.name == "alloc"]
    assert allocs and all("N" not in op.result.type.shape for op in allocs)
    peak = report.peak_local_bytes["decode_dot_tree"]
    small, big = (peak.evaluate(N=n, K=256) for n in (1, 1 << 20))
    assert small == big == 4 * 256


def test_fused_and_unfused_kernels_agree_with_the_interpreter():
    rng = np.random.default_rng(0)
    p = rng.integers(0, 256, size=(9, 256), dtype=np.uint8)
    x = rng.standard_normal(256).astype(np.float32)
    module = I.parse(DECODE_DOT_TREE)
    got, want = np.zeros(9, np.float32), np.zeros(9, np.float32)
    I.compile(module, "cpu")(p, x, np.float32(0.5), got)
    I.interpret(module, p, x, np.float32(0.5), want)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
