"""Every DSL error is an I.DSLError at the exact file:line:col of the construct, with
the source line, a caret, a message naming the construct and the alternative, and
no internal file name.

Each failing line carries a marker comment ``# E<n>``; ``where`` finds that line in
this file and the column of a token on it, so no line number is written by hand.
"""
from pathlib import Path

import pytest

from ninfer_ir import frontend
import ninfer_ir as I
from ninfer_ir.errors import DSLError

THIS = Path(__file__).resolve()
LINES = THIS.read_text(encoding="utf-8").splitlines()
FRONTEND_DIR = str(Path(frontend.__file__).resolve().parent)

NOT_A_LIST = [1, 2, 3]
LIMIT = 4


@I.kernel
def helper_kernel(x: I.Tensor[I.f32, "N"], y: I.Buffer[I.f32, "N"]):
    y[:] = x


def where(tag: str, token: str) -> tuple[int, int]:
    hits = [k for k, text in enumerate(LINES, 1) if text.rstrip().endswith(f"# {tag}")]
    assert len(hits) == 1, f"marker {tag} found {len(hits)} times"
    line = hits[0]
    text = LINES[line - 1]
    assert text.count(token) >= 1, f"{token!r} not on line {line}"
    return line, text.index(token) + 1


def check(err: DSLError, tag: str, token: str, *fragments: str) -> None:
    line, col = where(tag, token)
    assert Path(err.filename).resolve() == THIS
    assert (err.line, err.col) == (line, col), (
        f"expected {line}:{col}, got {err.line}:{err.col}: {err}")
    for f in fragments:
        assert f in err.message, f"{f!r} not in {err.message!r}"
    text = str(err)
    head, src, caret = text.splitlines()[:3]
    assert head.endswith(f":{line}:{col}: {err.message.splitlines()[0]}")
    assert src[4:] == LINES[line - 1]
    assert caret.index("^") - 4 == col - 1
    assert src[4 + col - 1:].startswith(token)
    assert FRONTEND_DIR not in text
    for internal in ("frontend/", "dsl.py", "lowering", "control.py", "calls.py", "scope.py",
                     "Traceback", ".py"):
        assert internal not in err.message


def test_while_is_named_with_the_alternative():
    with pytest.raises(DSLError) as ei:
        @I.kernel
        def k(x: I.Tensor[I.f32, "N"], y: I.Buffer[I.f32, "N"]):
            i = 0
            while i < 3:  # E1
                i += 1
    check(ei.value, "E1", "while", "'while' loops are not supported", "I.range")


def test_break():
    with pytest.raises(DSLError) as ei:
        @I.kernel
        def k(x: I.Tensor[I.f32, "N"]):
            for i in I.range(x.shape[0]):
                break  # E2
    check(ei.value, "E2", "break", "'break' is not supported")


def test_continue():
    with pytest.raises(DSLError) as ei:
        @I.kernel
        def k(x: I.Tensor[I.f32, "N"]):
            for i in I.range(x.shape[0]):
                continue  # E3
    check(ei.value, "E3", "continue", "'continue' is not supported", "if")


def test_try():
    with pytest.raises(DSLError) as ei:
        @I.kernel
        def k(x: I.Tensor[I.f32, "N"]):
            try:  # E4
                pass
            finally:
                pass
    check(ei.value, "E4", "try", "'try' is not supported")


def test_with():
    with pytest.raises(DSLError) as ei:
        @I.kernel
        def k(x: I.Tensor[I.f32, "N"]):
            with x:  # E5
                pass
    check(ei.value, "E5", "with", "'with' is not supported")


def test_lambda():
    with pytest.raises(DSLError) as ei:
        @I.kernel
        def k(x: I.Tensor[I.f32, "N"]):
            f = lambda v: v  # E6
    check(ei.value, "E6", "lambda", "lambda is not supported")


def test_comprehension():
    with pytest.raises(DSLError) as ei:
        @I.kernel
        def k(x: I.Tensor[I.f32, "N"]):
            vals = [x[i] for i in range(4)]  # E7
    check(ei.value, "E7", "[x[i]", "comprehensions are not supported", "I.range")


def test_global_statement():
    with pytest.raises(DSLError) as ei:
        @I.kernel
        def k(x: I.Tensor[I.f32, "N"]):
            global LIMIT  # E8
            LIMIT = 3
    check(ei.value, "E8", "global", "'global' is not supported")


def test_recursion():
    with pytest.raises(DSLError) as ei:
        @I.kernel
        def rec(x: I.Tensor[I.f32, "N"]):
            rec(x)  # E9
    check(ei.value, "E9", "rec(x)", "recursion is not supported")


def test_mismatched_dtypes_suggest_cast():
    with pytest.raises(DSLError) as ei:
        @I.kernel
        def k(x: I.Tensor[I.f32, "N"], n: I.i32, y: I.Buffer[I.f32, "N"]):
            for i in I.range(x.shape[0]):
                y[i] = x[i] + n  # E10
    check(ei.value, "E10", "x[i] + n", "'+'", "f32 and i32", "no implicit promotion",
          "I.cast")


def test_store_into_tensor():
    with pytest.raises(DSLError) as ei:
        @I.kernel
        def k(x: I.Tensor[I.f32, "N"]):
            for i in I.range(x.shape[0]):
                x[i] = 1.0  # E11
    check(ei.value, "E11", "x[i] =", "cannot store into 'x'", "read-only", "I.Buffer")


def test_quantized_dot_on_a_batch_fails_at_the_call():
    with pytest.raises(DSLError) as ei:
        @I.kernel
        def k(w: I.Tensor[I.u8, "N", "G", 144], x: I.Tensor[I.f32, "G", 256],
              y: I.Buffer[I.f32, "N"]):
            xq = I.quantize(x, format=I.quant.q8_k)
            for n in I.range(w.shape[0]):
                y[n] = I.quantized_dot(w, xq, lhs_format=I.quant.q4_k,  # E12
                                       rhs_format=I.quant.q8_k, acc_dtype=I.f32)
    check(ei.value, "E12", "I.quantized_dot", "I.quantized_dot", "lhs must be rank 2",
          "tensor<u8[N,G,144]>")


def test_prange_cannot_carry():
    with pytest.raises(DSLError) as ei:
        @I.kernel
        def k(x: I.Tensor[I.f32, "N"]) -> I.f32:
            acc = 0.0
            for i in I.prange(x.shape[0]):
                acc = acc + x[i]  # E13
            return acc
    check(ei.value, "E13", "acc = acc", "'acc'", "parallel loop cannot carry", "I.range")


def test_carried_value_cannot_change_type():
    with pytest.raises(DSLError) as ei:
        @I.kernel
        def k(x: I.Tensor[I.f32, "N"]) -> I.f32:
            acc = x[0]
            for i in I.range(x.shape[0]):
                acc = I.cast(acc, I.f64)  # E14
            return I.cast(acc, I.f32)
    check(ei.value, "E14", "acc =", "loop-carried 'acc' changes type", "f32", "f64")


def test_name_defined_only_in_loop_is_not_visible_after():
    with pytest.raises(DSLError) as ei:
        @I.kernel
        def k(x: I.Tensor[I.f32, "N"], y: I.Buffer[I.f32, 1]):
            for i in I.range(x.shape[0]):
                last = x[i]
            y[0] = last  # E15
    check(ei.value, "E15", "last", "'last' is only defined inside the loop",
          "before the loop")


def test_name_defined_in_one_branch_is_not_visible_after():
    with pytest.raises(DSLError) as ei:
        @I.kernel
        def k(x: I.Tensor[I.f32, "N"], y: I.Buffer[I.f32, "N"]):
            for i in I.range(x.shape[0]):
                if x[i] > 0.0:
                    z = x[i]
                y[i] = z  # E16
    check(ei.value, "E16", "z", "'z' is only defined in one branch")


def test_other_globals_are_rejected():
    with pytest.raises(DSLError) as ei:
        @I.kernel
        def k(y: I.Buffer[I.f32, 3]):
            y[0] = NOT_A_LIST[0]  # E17
    check(ei.value, "E17", "NOT_A_LIST", "'NOT_A_LIST' (a Python list) cannot be used")


def test_unknown_ninfer_op():
    with pytest.raises(DSLError) as ei:
        @I.kernel
        def k(x: I.Tensor[I.f32, "N"]):
            s = I.softmax(x)  # E18
    check(ei.value, "E18", "I.softmax", "ninfer_ir has no attribute 'softmax'")


def test_parameter_needs_annotation():
    with pytest.raises(DSLError) as ei:
        @I.kernel
        def k(x: I.Tensor[I.f32, "N"],
              y):  # E19
            pass
    check(ei.value, "E19", "y", "parameter 'y' needs a type annotation", "I.Buffer")


def test_return_inside_loop():
    with pytest.raises(DSLError) as ei:
        @I.kernel
        def k(x: I.Tensor[I.f32, "N"]) -> I.f32:
            for i in I.range(x.shape[0]):
                return x[i]  # E20
    check(ei.value, "E20", "return", "return is only allowed as the last statement")


def test_float_constant_with_integer_value():
    with pytest.raises(DSLError) as ei:
        @I.kernel
        def k(x: I.Tensor[I.i32, "N"], y: I.Buffer[I.i32, "N"]):
            for i in I.range(x.shape[0]):
                y[i] = x[i] * 0.5  # E21
    check(ei.value, "E21", "x[i] * 0.5", "the float constant 0.5 cannot be a i32 value")


def test_true_division_of_integers():
    with pytest.raises(DSLError) as ei:
        @I.kernel
        def k(x: I.Tensor[I.i32, "N"], y: I.Buffer[I.i32, "N"]):
            for i in I.range(x.shape[0]):
                y[i] = x[i] / 2  # E22
    check(ei.value, "E22", "x[i] / 2", "'/' needs float operands", "use //")


def test_power_operator():
    with pytest.raises(DSLError) as ei:
        @I.kernel
        def k(x: I.Tensor[I.f32, "N"], y: I.Buffer[I.f32, "N"]):
            for i in I.range(x.shape[0]):
                y[i] = x[i] ** 2  # E23
    check(ei.value, "E23", "x[i] ** 2", "'**' is not supported", "multiply")


def test_if_needs_a_bool():
    with pytest.raises(DSLError) as ei:
        @I.kernel
        def k(x: I.Tensor[I.i32, "N"], y: I.Buffer[I.i32, "N"]):
            for i in I.range(x.shape[0]):
                if x[i]:  # E24
                    y[i] = 1
    check(ei.value, "E24", "x[i]:", "the if condition must be bool, got i32", "x != 0")


def test_index_must_be_index_typed():
    with pytest.raises(DSLError) as ei:
        @I.kernel
        def k(x: I.Tensor[I.f32, "N"], j: I.i32, y: I.Buffer[I.f32, 1]):
            y[0] = x[j]  # E25
    check(ei.value, "E25", "j]", "index has type i32", "I.cast(..., I.index)")


def test_bad_dimension_in_annotation():
    with pytest.raises(DSLError) as ei:
        @I.kernel
        def k(x: I.Tensor[I.f32, "N", -2]):  # E26
            pass
    check(ei.value, "E26", "I.Tensor[", "bad dimension -2")


def test_range_outside_for():
    with pytest.raises(DSLError) as ei:
        @I.kernel
        def k(x: I.Tensor[I.f32, "N"]):
            r = I.range(4)  # E27
    check(ei.value, "E27", "I.range(4)", "can only be the iterable of a for loop")


def test_iterating_a_tensor():
    with pytest.raises(DSLError) as ei:
        @I.kernel
        def k(x: I.Tensor[I.f32, "N"], y: I.Buffer[I.f32, 1]):
            for v in x:  # E28
                y[0] = v
    check(ei.value, "E28", "x:", "a kernel loop iterates over range(...)", "indices")


def test_static_index_out_of_bounds():
    with pytest.raises(DSLError) as ei:
        @I.kernel
        def k(x: I.Tensor[I.f32, 4], y: I.Buffer[I.f32, 1]):
            y[0] = x[LIMIT]  # E29
    check(ei.value, "E29", "LIMIT]", "index 4 is out of bounds for axis 0 of size 4")


def test_format_must_be_a_schema():
    with pytest.raises(DSLError) as ei:
        @I.kernel
        def k(x: I.Tensor[I.f32, "G", 256]):
            xq = I.quantize(x, format=I.f32)  # E30
    check(ei.value, "E30", "format=", "I.quantize: format must be a quant schema",
          "the dtype f32")


def test_unknown_keyword():
    with pytest.raises(DSLError) as ei:
        @I.kernel
        def k(a: I.Tensor[I.f32, "K"], b: I.Tensor[I.f32, "K"]) -> I.f32:
            return I.dot(a, b, acc=I.f32)  # E31
    check(ei.value, "E31", "acc=", "I.dot has no argument 'acc'", "lhs, rhs, order")


def test_two_argument_max_points_to_maximum():
    with pytest.raises(DSLError) as ei:
        @I.kernel
        def k(a: I.Tensor[I.f32, "K"], b: I.Tensor[I.f32, "K"], y: I.Buffer[I.f32, "K"]):
            y[:] = I.max(a, b)  # E32
    check(ei.value, "E32", "I.max(a, b)", "I.maximum(a, b)")


def test_constant_does_not_fit():
    with pytest.raises(DSLError) as ei:
        @I.kernel
        def k(x: I.Tensor[I.u8, "N"], y: I.Buffer[I.u8, "N"]):
            for i in I.range(x.shape[0]):
                y[i] = x[i] + 300  # E33
    check(ei.value, "E33", "x[i] + 300", "300 does not fit u8")


def test_attribute_assignment():
    with pytest.raises(DSLError) as ei:
        @I.kernel
        def k(x: I.Tensor[I.f32, "N"]):
            x.shape = 3  # E34
    check(ei.value, "E34", "x.shape", "assigning to an attribute is not supported")


def test_print_is_rejected():
    with pytest.raises(DSLError) as ei:
        @I.kernel
        def k(x: I.Tensor[I.f32, "N"]):
            print(x)  # E35
    check(ei.value, "E35", "print", "the builtin print() is not supported")


def test_default_parameter_value():
    with pytest.raises(DSLError) as ei:
        @I.kernel
        def k(x: I.Tensor[I.f32, "N"], s: I.f32 = 1.0):  # E36
            pass
    check(ei.value, "E36", "1.0", "default values are not supported")


def test_if_branches_must_agree_on_type():
    with pytest.raises(DSLError) as ei:
        @I.kernel
        def k(x: I.Tensor[I.f32, "N"], c: I.bool_) -> I.f32:
            v = x[0]
            if c:
                v = I.cast(v, I.f64)  # E37
            return I.cast(v, I.f32)
    check(ei.value, "E37", "v =", "'v' is f64 on one side of the if and f32 on the other")


def test_python_int_changing_in_loop():
    with pytest.raises(DSLError) as ei:
        @I.kernel
        def k(x: I.Tensor[I.f32, "N"]):
            count = 0
            for i in I.range(x.shape[0]):
                count = count + 1  # E38
    check(ei.value, "E38", "count =", "'count' is a Python constant that changes inside "
          "the loop", "count: I.i32 = 0")


def test_too_many_indices():
    with pytest.raises(DSLError) as ei:
        @I.kernel
        def k(x: I.Tensor[I.f32, "N"], y: I.Buffer[I.f32, 1]):
            y[0] = x[0, 0]  # E39
    check(ei.value, "E39", "x[0, 0]", "too many indices (2)", "rank 1")


def test_scalar_into_slice():
    with pytest.raises(DSLError) as ei:
        @I.kernel
        def k(y: I.Buffer[I.f32, 8]):
            y[0:4] = 1.0  # E40
    check(ei.value, "E40", "1.0", "cannot store the constant 1.0 into the slice",
          "buffer<f32[4]>")


def test_compile_time_assert():
    with pytest.raises(DSLError) as ei:
        @I.kernel
        def k(x: I.Tensor[I.f32, 4]):
            assert x.shape[0] == 8, "needs 8 elements"  # E41
    check(ei.value, "E41", "assert", "assertion failed at compile time: needs 8 elements")


def test_calling_another_kernel():
    with pytest.raises(DSLError) as ei:
        @I.kernel
        def k(x: I.Tensor[I.f32, "N"], y: I.Buffer[I.f32, "N"]):
            helper_kernel(x, y)  # E42
    check(ei.value, "E42", "helper_kernel", "'helper_kernel' is another kernel")


def test_lambda_cannot_be_a_kernel():
    with pytest.raises(DSLError) as ei:
        k = I.kernel(lambda x: x)  # E43
    check(ei.value, "E43", "k = I.kernel", "I.kernel decorates a function defined with def")


def test_odd_indentation_and_decorators_keep_real_positions():
    def outer(f):
        return f
    with pytest.raises(DSLError) as ei:
        @outer
        @I.kernel
        def k(x: I.Tensor[I.f32, "N"],
  y: I.Buffer[I.f32, "N"]):
            μ = 2.0
            for i in I.range(x.shape[0]):
                y[i] = μ * x[i] + I.cast(i, I.f64)  # E44
    check(ei.value, "E44", "μ * x[i] + I.cast", "different types, f32 and f64")


def test_closure_list_is_rejected_in_nested_function():
    def make(table):
        @I.kernel
        def k(y: I.Buffer[I.f32, 3]):
            y[0] = table  # E45
        return k
    with pytest.raises(DSLError) as ei:
        make({"a": 1})
    check(ei.value, "E45", "table", "'table' (a Python dict) cannot be used")


def test_unpacking_mismatch():
    with pytest.raises(DSLError) as ei:
        @I.kernel
        def k(x: I.Tensor[I.f32, "M", "K"]):
            m, k, z = x.shape  # E46
    check(ei.value, "E46", "m, k, z", "cannot unpack 2 values into 3 names")


def test_loop_variable_not_visible_after_loop():
    with pytest.raises(DSLError) as ei:
        @I.kernel
        def k(x: I.Tensor[I.f32, "N"], y: I.Buffer[I.f32, "N"]):
            for i in I.range(x.shape[0]):
                y[i] = x[i]
            y[i] = 0.0  # E47
    check(ei.value, "E47", "i]", "the loop variable 'i' is not visible after its loop")


def test_loop_step_must_be_positive():
    with pytest.raises(DSLError) as ei:
        @I.kernel
        def k(x: I.Tensor[I.f32, "N"], y: I.Buffer[I.f32, "N"]):
            for i in I.range(4, 0, -1):  # E48
                y[i] = x[i]
    check(ei.value, "E48", "-1", "the loop step must be a positive integer")


def test_returning_a_buffer():
    with pytest.raises(DSLError) as ei:
        @I.kernel
        def k(y: I.Buffer[I.f32, "N"]):
            return y  # E49
    check(ei.value, "E49", "y  #", "a kernel returns values, not buffers")


def test_not_on_a_number():
    with pytest.raises(DSLError) as ei:
        @I.kernel
        def k(x: I.Tensor[I.i32, "N"], y: I.Buffer[I.bool_, "N"]):
            for i in I.range(x.shape[0]):
                y[i] = not x[i]  # E50
    check(ei.value, "E50", "not x[i]", "'not' needs a bool value, got i32", "x == 0")


def test_error_tests_cover_enough_constructs():
    markers = [t for t in LINES if t.rstrip().split("# ")[-1].startswith("E")
               and t.rstrip().split("# ")[-1][1:].isdigit()]
    assert len(markers) >= 25
