"""How DSL constructs lower: the Kernel object, constants and their types, scoping of
loops and ifs, calls, views and returns (IR text pinned, results run on the oracle)."""
import textwrap

import numpy as np
import pytest

import ninfer_ir as I
import ninfer_ir as nir
from ninfer_ir import quantize as eager_quantize
from ninfer_ir.errors import DSLError
from tests.kernels import assert_same_bits, seq_sum

F32 = np.float32
HALF = np.float32(0.5)


def ir(k) -> str:
    return str(k.ir)


def same_ir(k, expected: str) -> None:
    assert ir(k) == textwrap.dedent(expected).lstrip("\n")


# -- the Kernel object -------------------------------------------------------------------

def test_kernel_object_and_call_forms():
    def scale(x: I.Tensor[I.f32, "N"], y: I.Buffer[I.f32, "N"]):
        y[:] = x * 2.0

    k1 = I.kernel(scale)
    k2 = I.kernel()(scale)
    assert k1.name == "scale" and k1.fn is scale
    assert k1.func is k1.ir.funcs[0] and k1.func.sym_name == "scale"
    assert k1.source_file == __file__
    assert ir(k1) == ir(k2)
    assert isinstance(k1.ir, I.Module)
    k1.ir.verify()


def test_range_and_prange_are_ranges_outside_kernels():
    assert list(I.range(2, 7, 2)) == [2, 4, 6]
    assert list(I.prange(3)) == [0, 1, 2]


# -- constants -----------------------------------------------------------------------

def test_constants_take_the_type_of_the_other_operand():
    @I.kernel
    def k(x: I.Tensor[I.f32, 8], n: I.i32, y: I.Buffer[I.f32, 8], z: I.Buffer[I.i32, 1]):
        y[3] = x[2 * 2] * 2 + 0.5
        z[0] = n << 2
    same_ir(k, """
        func @k(%x: tensor<f32[8]>, %n: i32, %y: buffer<f32[8]>, %z: buffer<i32[1]>) {
          %c4 = constant() {value = 4} : index
          %0 = load(%x, %c4) : f32
          %cst = constant() {value = 2.0} : f32
          %1 = mul(%0, %cst) : f32
          %cst_1 = constant() {value = 0.5} : f32
          %2 = add(%1, %cst_1) : f32
          %c3 = constant() {value = 3} : index
          store(%2, %y, %c3)
          %c2_i32 = constant() {value = 2} : i32
          %3 = shl(%n, %c2_i32) : i32
          %c0 = constant() {value = 0} : index
          store(%3, %z, %c0)
          return()
        }
        """)


def test_globals_closures_and_numpy_scalars_are_constants():
    scale = 3

    @I.kernel
    def k(x: I.Tensor[I.f32, "N"], y: I.Buffer[I.f32, "N"]):
        for i in range(x.shape[0]):
            y[i] = x[i] * scale + HALF
    text = ir(k)
    assert "{value = 3.0} : f32" in text and "{value = 0.5} : f32" in text
    x = np.arange(5, dtype=F32)
    y = np.zeros(5, F32)
    I.interpret(k, x, y)
    assert_same_bits(y, x * F32(3) + F32(0.5))


def test_static_shapes_fold_and_symbolic_ones_are_dims():
    @I.kernel
    def k(x: I.Tensor[I.f32, "M", 4], y: I.Buffer[I.f32, "M"]):
        K = x.shape[1] * 2
        M, C = x.shape
        for i in I.range(M):
            y[i] = x[i, K // 2 - 1] + x[i, C - 4]
    same_ir(k, """
        func @k(%x: tensor<f32[M,4]>, %y: buffer<f32[M]>) {
          %M = dim(%x) {axis = 0} : index
          %c0 = constant() {value = 0} : index
          %c1 = constant() {value = 1} : index
          for(%c0, %M, %c1) ({
          ^(%i: index):
            %c3 = constant() {value = 3} : index
            %0 = load(%x, %i, %c3) : f32
            %1 = load(%x, %i, %c0) : f32
            %2 = add(%0, %1) : f32
            store(%2, %y, %i)
            yield()
          })
          return()
        }
        """)


def test_cast_of_python_constants_follows_ir_cast_rules():
    @I.kernel
    def k(y: I.Buffer[I.i32, 2], z: I.Buffer[I.u8, 1]):
        y[0] = I.cast(-1.7, I.i32)
        y[1] = I.cast(1e20, I.i32)
        z[0] = I.cast(300, I.u8)
    text = ir(k)
    assert "{value = -1} : i32" in text
    assert "{value = 2147483647} : i32" in text
    assert "{value = 44} : u8" in text


def test_annotated_assignment_types_a_constant():
    @I.kernel
    def k(x: I.Tensor[I.f32, "N"]) -> I.f64:
        acc: I.f64 = 0
        for i in I.range(x.shape[0]):
            acc += I.cast(x[i], I.f64)
        return acc
    assert "%acc = constant() {value = 0.0} : f64" in ir(k)
    x = np.array([1.5, 2.25, -1.0], F32)
    assert I.interpret(k, x) == np.float64(2.75)


# -- loops ---------------------------------------------------------------------------

def test_nested_carried_values_and_constant_initial_value():
    @I.kernel
    def k(x: I.Tensor[I.f32, "M", "K"]) -> I.f32:
        total = 0.0
        for i in I.range(x.shape[0]):
            row = -0.0
            for j in I.range(x.shape[1]):
                row = row + x[i, j]
            total += row
        return total
    same_ir(k, """
        func @k(%x: tensor<f32[M,K]>) -> (f32) {
          %M = dim(%x) {axis = 0} : index
          %c0 = constant() {value = 0} : index
          %c1 = constant() {value = 1} : index
          %cst = constant() {value = 0.0} : f32
          %total = for(%c0, %M, %c1, %cst) ({
          ^(%i: index, %total_1: f32):
            %K = dim(%x) {axis = 1} : index
            %cst_1 = constant() {value = -0.0} : f32
            %row = for(%c0, %K, %c1, %cst_1) ({
            ^(%j: index, %row_1: f32):
              %0 = load(%x, %i, %j) : f32
              %row_2 = add(%row_1, %0) : f32
              yield(%row_2)
            }) : f32
            %total_2 = add(%total_1, %row) : f32
            yield(%total_2)
          }) : f32
          return(%total)
        }
        """)
    x = np.random.default_rng(3).standard_normal((3, 5)).astype(F32)
    want = F32(0.0)
    for r in x:
        want = F32(want + seq_sum(r))
    assert_same_bits(I.interpret(k, x), want)


def test_unchanged_constant_in_loop_is_not_carried():
    @I.kernel
    def k(x: I.Tensor[I.f32, "N"], y: I.Buffer[I.f32, "N"]):
        s = 2.0
        for i in I.range(x.shape[0]):
            s = 2.0
            y[i] = x[i] * s
    assert "yield()" in ir(k) and "for(%c0, %N, %c1) (" in ir(k)


def test_prange_is_a_parallel_loop_with_bounds_and_step():
    @I.kernel
    def k(x: I.Tensor[I.f32, "N"], y: I.Buffer[I.f32, "N"], lo: I.index):
        for i in I.prange(lo, x.shape[0], 3):
            y[i] = x[i]
    assert "for(%lo, %N, %c3) {parallel = true} ({" in ir(k)
    x = np.arange(10, dtype=F32)
    y = np.zeros(10, F32)
    I.interpret(k, x, y, np.int64(1))
    want = np.zeros(10, F32)
    want[1:10:3] = x[1:10:3]
    assert_same_bits(y, want)


# -- if ------------------------------------------------------------------------------------

def test_if_elif_else_merges_names_and_keeps_unchanged_ones():
    @I.kernel
    def k(x: I.Tensor[I.f32, "N"], y: I.Buffer[I.f32, "N"], z: I.Buffer[I.i32, "N"]):
        for i in I.range(x.shape[0]):
            v = x[i]
            tag: I.i32 = 0
            if v > 1.0:
                v = v * 0.5
                tag = 1
            elif v < -1.0:
                tag = 2
            else:
                only_here = v
            y[i] = v
            z[i] = tag
    x = np.array([3.0, -2.0, 0.25, 1.0, -1.5], F32)
    y, z = np.zeros(5, F32), np.zeros(5, np.int32)
    I.interpret(k, x, y, z)
    assert_same_bits(y, np.where(x > 1, x * F32(0.5), x).astype(F32))
    assert_same_bits(z, np.select([x > 1, x < -1], [1, 2], 0).astype(np.int32))
    assert ir(k).count("if(") == 2


def test_if_on_a_python_constant_compiles_only_the_taken_branch():
    debug = False

    @I.kernel
    def k(x: I.Tensor[I.f32, "N"], y: I.Buffer[I.f32, "N"]):
        for i in I.range(x.shape[0]):
            if debug:
                undefined_function(x)  # noqa: F821
            else:
                y[i] = x[i]
    assert "if(" not in ir(k)


def test_if_on_a_rank0_dot_loads_it():
    @I.kernel
    def k(a: I.Tensor[I.f32, "K"], b: I.Tensor[I.f32, "K"]) -> I.f32:
        d = I.dot(a, b)
        r = 0.0
        if d > 0.0:
            r = d
        return r
    text = ir(k)
    assert "%d = dot(%a, %b) {order = \"seq\"} : tensor<f32[]>" in text
    assert "%0 = load(%d) : f32" in text
    a = np.array([1.0, 2.0], F32)
    assert_same_bits(I.interpret(k, a, a), F32(5.0))
    assert_same_bits(I.interpret(k, a, -a), F32(0.0))


def test_conditional_expression_and_chained_comparison():
    @I.kernel
    def k(x: I.Tensor[I.f32, "N"], y: I.Buffer[I.f32, "N"]):
        for i in I.range(x.shape[0]):
            v = x[i]
            y[i] = v if 0.0 < v < 1.0 else -v
    x = np.array([0.5, 2.0, -0.25], F32)
    y = np.zeros(3, F32)
    I.interpret(k, x, y)
    assert_same_bits(y, np.array([0.5, -2.0, 0.25], F32))
    assert ir(k).count("cmp(") == 2 and "and(" in ir(k) and "select(" in ir(k)


# -- calls, views, returns -------------------------------------------------------------------

def test_module_aliases_and_imported_functions_are_recognised():
    @I.kernel
    def k(x: nir.Tensor[nir.f32, "G", 256], r: nir.Buffer[nir.u8, "G", 292]):
        r[:] = eager_quantize(x, format=nir.quant.q8_k)
    assert "quantize(%x) {format = #q8_k}" in ir(k)


def test_reductions_take_an_order_and_reduce_the_last_axis():
    @I.kernel
    def k(x: I.Tensor[I.f32, "M", "K"], s: I.Buffer[I.f32, "M"], p: I.Buffer[I.f32, "M"]):
        s[:] = I.sum(x, order="tree")
        p[:] = I.reduce(x, kind="mul")
    text = ir(k)
    assert 'reduce(%x) {kind = "add", order = "tree"} : tensor<f32[M]>' in text
    assert 'reduce(%x) {kind = "mul", order = "seq"} : tensor<f32[M]>' in text


def test_views_at_offsets_column_and_range_axes():
    @I.kernel
    def k(m: I.Tensor[I.f32, 4, 8], y: I.Buffer[I.f32, 8]):
        part = m[1][2:6]
        col = m[:, 2]
        y[0] = I.dot(part, col)
        y[2:6] = part
    text = ir(k)
    assert 'subview(%m, %c1) {axes = "i:"} : tensor<f32[8]>' in text
    assert 'subview(%0, %c2, %c6, %c1) {axes = "r"} : tensor<f32[4]>' in text
    assert '%col = subview(%m, %c2) {axes = ":i"} : tensor<f32[4]>' in text
    m = np.arange(32, dtype=F32).reshape(4, 8)
    y = np.zeros(8, F32)
    I.interpret(k, m, y)
    want = np.zeros(8, F32)
    want[2:6] = m[1, 2:6]
    want[0] = F32(np.float32(np.add.accumulate(m[1, 2:6] * m[:, 2], dtype=F32)[-1]))
    assert_same_bits(y, want)


def test_augmented_store_into_a_buffer_element():
    @I.kernel
    def k(x: I.Tensor[I.i32, "N"], y: I.Buffer[I.i32, "N"]):
        for i in I.range(x.shape[0]):
            y[i] += x[i]
            y[i] -= 1
    x = np.array([5, -3, 7], np.int32)
    y = np.array([1, 1, 1], np.int32)
    I.interpret(k, x, y)
    assert_same_bits(y, np.array([5, -3, 7], np.int32))


def test_several_return_values_and_return_annotation():
    @I.kernel
    def k(x: I.Tensor[I.f32, "N"]) -> (I.f32, I.f32, I.i32):
        return I.max(x), 1.0, I.cast(x.shape[0], I.i32)
    assert "func @k(%x: tensor<f32[N]>) -> (f32, f32, i32) {" in ir(k)
    x = np.array([1.0, 4.0, -2.0], F32)
    hi, one, n = I.interpret(k, x)
    assert_same_bits(hi, F32(4.0))
    assert_same_bits(one, F32(1.0))
    assert_same_bits(n, np.int32(3))


def test_returned_rank0_tensor_keeps_its_type():
    @I.kernel
    def k(a: I.Tensor[I.f32, "K"], b: I.Tensor[I.f32, "K"]):
        return I.dot(a, b)
    assert "-> (tensor<f32[]>)" in ir(k)


def test_assert_becomes_a_check_op():
    @I.kernel
    def k(x: I.Tensor[I.f32, "N"], j: I.index, y: I.Buffer[I.f32, 1]):
        assert j < x.shape[0]
        y[0] = x[j]
    assert 'check(%0) {message = "assertion failed: j < x.shape[0]"}' in ir(k)
    y = np.zeros(1, F32)
    with pytest.raises(I.DomainError, match="assertion failed"):
        I.interpret(k, np.zeros(3, F32), np.int64(5), y)


def test_builtins_on_constants():
    K = 12

    @I.kernel
    def k(x: I.Tensor[I.f32, "M", "N"], y: I.Buffer[I.f32, 8]):
        y[min(K, 7)] = x[len(x.shape) - 2, abs(-3)]
    text = ir(k)
    assert "{value = 7} : index" in text and "{value = 3} : index" in text


def test_floor_division_needs_integers():
    with pytest.raises(DSLError) as ei:
        @I.kernel
        def k(x: I.Tensor[I.f32, "N"], y: I.Buffer[I.f32, "N"]):
            y[0] = x[0] // 0.5
    assert "'//' needs integer operands, got f32; use / for float division" in ei.value.message


def test_an_internal_failure_is_a_located_dsl_error():
    from ninfer_ir.frontend.diagnostics import capture
    from ninfer_ir.frontend.lowering_ast import Lowering
    from ninfer_ir.ir import Block, Value

    def k(x: I.Tensor[I.f32, "N"]):
        x + 1

    src = capture(k)
    lw = Lowering(k, src)
    lw.env.bind("x", Value(None), src.func_def)        # a value without a type
    stmt = src.func_def.body[0]
    with pytest.raises(DSLError) as ei:
        with lw.inside(Block()):
            lw.visit(stmt)
    err = ei.value
    assert err.message.startswith("cannot compile this binop: AttributeError")
    assert (err.line, err.col) == (k.__code__.co_firstlineno + 1, 9)
    assert isinstance(err.internal, AttributeError)
    assert "frontend" not in str(err).replace(__file__, "")
