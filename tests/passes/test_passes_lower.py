"""Lowering to loop-level IR: the contract of docs/ir.md, output parameters, checks."""
import numpy as np
import pytest

import ninfer_ir as I
from ninfer_ir.backends.interp.interpreter import interpret
from tests.kernels import KERNELS as REGISTRY
from tests.passes.harness import make_args, run
from tests.passes.ir_kernels import (AXPY, GEMV, KERNELS, ROW_SUMS, SHIFT_COPY,
                                     UNPROVEN_INDEX)
from ninfer_ir.passes import Lower, PassError, lower
from ninfer_ir.passes.levels import loop_level_problems
from ninfer_ir.passes.manager import PassManager


def _ops(m, name):
    return [op for op in m.walk() if op.name == name]


def _all_modules():
    for text in KERNELS.values():
        yield I.parse(text)
    for case in REGISTRY.values():
        yield case.kernel.ir


def test_every_kernel_lowers_to_loop_level_ir():
    for module in _all_modules():
        lowered, _ = lower(module)
        assert loop_level_problems(lowered) == [], str(lowered)


def test_tensor_level_ir_is_not_loop_level():
    problems = loop_level_problems(I.parse(ROW_SUMS))
    assert any("computes a whole tensor" in p for p in problems)
    assert any("still returns values" in p for p in problems)


def test_returned_values_become_trailing_output_buffers():
    lowered, _ = lower(I.parse(ROW_SUMS))
    f = lowered.funcs[0]
    assert f.attrs["returns"] == 2 and f.result_types == []
    assert [str(a.type) for a in f.args] == ["tensor<f32[M,K]>", "buffer<f32[M]>",
                                             "buffer<f32[M]>"]
    assert f.body.terminator.operands == []
    m = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    a = interpret(I.parse(ROW_SUMS), m)
    b = interpret(lowered, m)
    assert [x.tobytes() for x in a] == [x.tobytes() for x in b]


def test_returned_elementwise_result_is_computed_into_the_output():
    lowered, _ = lower(I.parse(AXPY))
    out = lowered.funcs[0].args[-1]
    writers = [op for op in _ops(lowered, "store") if op.operands[1] is out]
    assert len(writers) == 1 and writers[0].operands[0].op.name == "select"


def test_scalar_results_become_rank0_outputs():
    lowered, _ = lower(REGISTRY["count_positive"].kernel.ir)
    f = lowered.funcs[0]
    assert f.attrs["returns"] == 1 and str(f.args[-1].type) == "buffer<i32[]>"


def test_indices_in_range_by_construction_need_no_check():
    lowered, _ = lower(I.parse(GEMV))
    assert not _ops(lowered, "check")
    for name in ("q4k_gemv", "q4k_gemm", "f32_gemv", "row_sum", "int4_gemv"):
        lowered, _ = lower(REGISTRY[name].kernel.ir)
        assert not _ops(lowered, "check"), name


def test_unproven_indices_get_checks_that_fail_like_the_interpreter():
    module = I.parse(UNPROVEN_INDEX)
    lowered, _ = lower(module)
    messages = [op.attrs["message"] for op in _ops(lowered, "check")]
    assert "'load': index {0} is out of range for axis 0 of size {1}" in messages
    assert "'store': index {0} is out of range for axis 0 of size {1}" in messages
    assert any(m.startswith("'subview': range ({0}, {1}, {2}) is out of bounds") for m in messages)
    x = np.arange(5, dtype=np.float32)
    for i in (0, 1, 2, 4, 5, 9):
        args = [x, np.int64(i), np.zeros(4, np.float32)]
        assert run(lowered, args) == run(module, args)
    with pytest.raises(I.DomainError, match="^'load': index 7 is out of range for axis 0 of size 5$"):
        interpret(lowered, x, np.int64(7), np.zeros(4, np.float32))


def test_user_asserts_stay():
    lowered, _ = lower(REGISTRY["guarded_gather"].kernel.ir)
    messages = [op.attrs["message"] for op in _ops(lowered, "check")]
    assert messages[0] == "gather index out of range"


def test_overlapping_copy_goes_through_a_staging_buffer():
    module = I.parse(SHIFT_COPY)
    lowered, _ = lower(module)
    (a,) = _ops(lowered, "alloc")
    assert str(a.result.type) == "buffer<i32[7]>"
    y = np.arange(8, dtype=np.int32)
    assert run(lowered, [y]) == run(module, [y])
    out = y.copy()
    interpret(lowered, out)
    assert out.tolist() == [0, 0, 1, 2, 3, 4, 5, 6]


def test_lower_needs_materialize():
    with pytest.raises(PassError, match=r"^pass 'lower': this tensor has no buffer; run "
                                        r"'materialize' before 'lower'"):
        PassManager([Lower()]).run(I.parse(AXPY))


def test_a_returned_tensor_of_unknown_size_is_refused():
    text = """func @f(%x: tensor<f32[K]>, %a: index, %b: index) -> (tensor<f32[?]>) {
  %c1 = constant() {value = 1} : index
  %v = subview(%x, %a, %b, %c1) {axes = "r"} : tensor<f32[?]>
  return(%v)
}
"""
    with pytest.raises(PassError, match="unknown before the call"):
        lower(I.parse(text))


def test_lowered_kernels_run_with_outputs_allocated_by_the_interpreter():
    module = I.parse(KERNELS["int_identities"])
    lowered, _ = lower(module)
    args = make_args(module.funcs[0], np.random.default_rng(5))
    a = interpret(module, *args)
    b = interpret(lowered, *args)
    assert [np.asarray(x).tobytes() for x in a] == [np.asarray(x).tobytes() for x in b]
