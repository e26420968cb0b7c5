"""The spec's sharing rule (quantized-ops §4, last paragraph): the quantized records
shared by several consumers are prepared once, in one buffer, outside the loop; never
repeated in every consumer. Checked on the lowered IR and with the interpreter's op
counters."""
import numpy as np
import pytest

import ninfer_ir as I
from ninfer_ir.backends.interp.interpreter import interpret
from tests.kernels import KERNELS as REGISTRY, normal, q4k_records
from tests.passes.harness import stages
from tests.passes.ir_kernels import (GEMM, GEMV, GEMV_INNER, GEMV_INNER_STATIC,
                                     NESTED_INVARIANT, TWO_DOTS)
from ninfer_ir.passes import lower


def _ops(module, name):
    return [op for op in module.walk() if op.name == name]


def _loops_around(op):
    out, p = [], op.parent_op
    while p is not None:
        if p.name == "for":
            out.append(p)
        p = p.parent_op
    return out


def _gemv_args(n, g, x=None):
    rng = np.random.default_rng(7)
    return [q4k_records(rng, n, g), normal(rng, g, 256) if x is None else x,
            np.zeros(n, np.float32)]


def _assert_prepared_once(lowered):
    assert not _ops(lowered, "quantize")
    (q,) = _ops(lowered, "quantize_into")
    assert _loops_around(q) == []
    dst = q.operands[1]
    assert dst.op.name == "alloc" and str(dst.type) == "buffer<u8[G,292]>"
    assert len([a for a in _ops(lowered, "alloc") if a.result.type == dst.type]) == 1
    for qd in _ops(lowered, "quantized_dot"):
        assert qd.operands[1] is dst
    return q


@pytest.mark.parametrize("source", ["ir", "dsl"])
def test_gemv_quantizes_once_outside_the_row_loop(source):
    module = I.parse(GEMV) if source == "ir" else REGISTRY["q4k_gemv"].kernel.ir
    lowered, _ = lower(module)
    _assert_prepared_once(lowered)
    counters = {}
    interpret(lowered, *_gemv_args(5, 2), counters=counters)
    assert counters["quantize_into"] == 1
    assert counters["quantized_dot"] == 5


@pytest.mark.parametrize("text", [TWO_DOTS, "gate_up"])
def test_two_dots_on_one_quantized_value_share_it(text):
    module = REGISTRY["q4k_gate_up"].kernel.ir if text == "gate_up" else I.parse(text)
    n_quantize = len(_ops(module, "quantize"))
    lowered, _ = lower(module)
    _assert_prepared_once(lowered)
    assert len(_ops(lowered, "quantized_dot")) == 2
    rng = np.random.default_rng(3)
    if text == "gate_up":
        args = REGISTRY["q4k_gate_up"].make_inputs(rng, N=4, G=2)
    else:
        args = [q4k_records(rng, 4, 2), q4k_records(rng, 4, 2), normal(rng, 2, 256),
                np.zeros(4, np.float32), np.zeros(4, np.float32)]
    before, after = {}, {}
    interpret(module, *[np.copy(a) for a in args], counters=before)
    interpret(lowered, *args, counters=after)
    assert before["quantize"] == n_quantize
    assert after["quantize_into"] == 1 and "quantize" not in after


def test_quantize_written_in_the_loop_is_hoisted_and_guarded():
    module = I.parse(GEMV_INNER)
    licm = dict(stages(module))["03-licm"]
    (q,) = _ops(licm, "quantize")
    assert _loops_around(q) == [] and q.parent_op.name == "if"
    lowered, _ = lower(module)
    q = _assert_prepared_once(lowered)
    assert q.parent_op.name == "if"
    counters = {}
    interpret(lowered, *_gemv_args(4, 1), counters=counters)
    assert counters["quantize_into"] == 1 and counters["quantized_dot"] == 4
    original = {}
    interpret(module, *_gemv_args(4, 1), counters=original)
    assert original["quantize"] == 4


def test_zero_rows_never_quantize_even_bad_input():
    """With N = 0 the loop never runs: neither version quantizes, so NaN input is fine."""
    x = np.full((1, 256), np.nan, np.float32)
    for m in (I.parse(GEMV_INNER), lower(I.parse(GEMV_INNER))[0]):
        counters = {}
        interpret(m, *_gemv_args(0, 1, x), counters=counters)
        assert counters.get("quantize", 0) + counters.get("quantize_into", 0) == 0
    with pytest.raises(I.DomainError) as a:
        interpret(I.parse(GEMV_INNER), *_gemv_args(2, 1, x))
    with pytest.raises(I.DomainError) as b:
        interpret(lower(I.parse(GEMV_INNER))[0], *_gemv_args(2, 1, x))
    assert str(a.value) == str(b.value)


def test_loop_that_surely_runs_needs_no_guard():
    lowered, _ = lower(I.parse(GEMV_INNER_STATIC))
    q = _assert_prepared_once(lowered)
    assert q.parent_op.name == "func" and not _ops(lowered, "if")


def test_gemm_quantizes_once_per_row_of_x():
    lowered, _ = lower(I.parse(GEMM))
    (q,) = _ops(lowered, "quantize_into")
    assert len(_loops_around(q)) == 1
    rng = np.random.default_rng(1)
    counters = {}
    interpret(lowered, q4k_records(rng, 3, 1), normal(rng, 2, 1, 256),
              np.zeros((2, 3), np.float32), counters=counters)
    assert counters["quantize_into"] == 2 and counters["quantized_dot"] == 6


def test_no_stage_duplicates_a_shared_quantize():
    for text in (GEMV, GEMV_INNER, TWO_DOTS):
        module = I.parse(text)
        n = len(_ops(module, "quantize"))
        for stage, m in stages(module)[1:]:
            assert len(_ops(m, "quantize")) + len(_ops(m, "quantize_into")) <= n, stage
            assert all("fused" not in op.attrs for op in _ops(m, "quantize")), stage


def test_quantize_invariant_in_a_nest_leaves_the_whole_nest():
    module = I.parse(NESTED_INVARIANT)
    lowered, _ = lower(module)
    q = _assert_prepared_once(lowered)
    assert q.parent_op.name == "if" and q.parent_op.parent_op.name == "func"
    rng = np.random.default_rng(2)
    w, x = q4k_records(rng, 3, 1), normal(rng, 1, 256)
    counters = {}
    got = interpret(lowered, w, x, np.zeros((2, 3), np.float32), counters=counters)
    want = interpret(module, w, x, np.zeros((2, 3), np.float32))
    assert counters["quantize_into"] == 1 and got.tobytes() == want.tobytes()
    bad = np.full((1, 256), np.nan, np.float32)
    for m_rows, n_rows in ((0, 3), (2, 0)):
        y = np.zeros((m_rows, 3 if n_rows else 0), np.float32)
        ws = q4k_records(rng, n_rows, 1)
        assert interpret(lowered, ws, bad, y).tobytes() == interpret(module, ws, bad, y).tobytes()


def test_a_nest_whose_outer_body_does_more_keeps_the_guard_inside():
    text = NESTED_INVARIANT.replace("    yield(%row)\n", "    %one = constant() {value = 1.0} : f32\n"
                                    "    %next = add(%row, %one) : f32\n    yield(%next)\n")
    module = I.parse(text)
    lowered, _ = lower(module)
    (q,) = _ops(lowered, "quantize_into")
    assert len(_loops_around(q)) == 1
    rng = np.random.default_rng(4)
    args = [q4k_records(rng, 0, 1), np.full((1, 256), np.nan, np.float32),
            np.zeros((2, 0), np.float32)]
    assert interpret(lowered, *args).tobytes() == interpret(module, *args).tobytes()
