"""Module-level numpy arrays in kernels become constant tensors.

What the frontend builds (one ``constant_tensor`` per array at the top of the function,
views and loads of it like any tensor), which copy of the array it holds (the one taken
when the kernel is decorated, also for the re-lowerings of later calls), and the
located refusals (unsupported dtypes, too large, stores into a constant).
"""
from __future__ import annotations

import numpy as np
import pytest

import ninfer_ir as I
from ninfer_ir import ops as O
from ninfer_ir.dense import MAX_BYTES
from tests.kernels import assert_same_bits

GRID = (np.arange(256, dtype=np.float32) - 127.5) * np.float32(0.0625)
WEIGHTS = np.float32([0.5, -1.25, 2.0, 3.5])
HALF = np.array(0.5, np.float32)


@I.kernel
def grid_decode(codes: I.Tensor[I.u8, "N"], out: I.Buffer[I.f32, "N"]):
    for i in I.range(codes.shape[0]):
        out[i] = GRID[I.cast(codes[i], I.index)]


@I.kernel
def weighted(x: I.Tensor[I.f32, 4]) -> I.Tensor[I.f32, 4]:
    return x * WEIGHTS * HALF


@I.func
def table_of(c: I.u8) -> I.f32:
    return GRID[I.cast(c, I.index)]


@I.kernel
def decode_via_helper(codes: I.Tensor[I.u8, "N"], out: I.Buffer[I.f32, "N"]):
    for i in I.range(codes.shape[0]):
        out[i] = table_of(codes[i]) + GRID[0]


def constants(kernel):
    return [op for op in kernel.func.walk() if isinstance(op, O.ConstantTensorOp)]


def test_an_array_becomes_one_constant_tensor_at_the_top_of_the_function():
    (op,) = constants(grid_decode)
    assert grid_decode.func.body.ops[0] is op
    assert str(op.result.type) == "tensor<f32[256]>"
    assert op.value.array.tobytes() == GRID.tobytes()
    assert not op.value.array.flags.writeable
    assert "%GRID = constant_tensor() {value = dense<f32[256] [-7.96875, " in str(grid_decode.ir)


def test_table_lookup_gives_the_table_entries_bit_for_bit():
    codes = np.random.default_rng(0).integers(0, 256, 1000).astype(np.uint8)
    out = np.zeros(1000, np.float32)
    I.interpret(grid_decode, codes, out)
    assert_same_bits(out, GRID[codes])


def test_elementwise_with_constant_vectors_and_a_rank0_constant():
    ops = {op.name for op in weighted.func.walk()}
    assert "constant_tensor" in ops
    x = np.float32([1, 2, 3, 4])
    assert_same_bits(I.interpret(weighted, x), x * WEIGHTS * HALF)
    (half,) = [op for op in constants(weighted) if op.result.type.rank == 0]
    assert str(half.result.type) == "tensor<f32[]>"


def test_a_helper_and_its_caller_share_one_constant():
    (op,) = constants(decode_via_helper)      # the same array: one op
    codes = np.uint8([0, 7, 255])
    out = np.zeros(3, np.float32)
    I.interpret(decode_via_helper, codes, out)
    assert_same_bits(out, GRID[codes] + GRID[0])


def test_closure_arrays_and_any_layout_are_copied_to_c_order():
    base = np.arange(48, dtype=np.float32).reshape(6, 8)
    strided = base[::2, 1::3]                       # not contiguous
    fortran = np.asfortranarray(base[:3, :4])
    big = np.arange(4, dtype=">i4")                # big-endian
    booleans = np.array([True, False, True])

    @I.kernel
    def gather(y: I.Buffer[I.f32, 4]):
        y[0] = strided[2, 1]
        y[1] = fortran[1, 3]
        y[2] = I.cast(big[3], I.f32)
        y[3] = I.select(booleans[2], I.cast(1, I.f32), I.cast(0, I.f32))

    y = np.zeros(4, np.float32)
    I.interpret(gather, y)
    assert y.tolist() == [strided[2, 1], fortran[1, 3], 3.0, 1.0]
    text = str(gather.ir)
    assert "dense<i32[4] [0, 1, 2, 3]>" in text and "dense<bool[3] [true, false, true]>" in text


def test_the_kernel_keeps_the_array_as_it_was_at_decoration():
    table = np.float32([1.0, 2.0, 3.0])

    @I.kernel
    def pick(k: I.Tensor[I.i32, "N"], y: I.Buffer[I.f32, "N"]):
        for i in I.range(k.shape[0]):
            y[i] = table[I.cast(k[i], I.index)]

    table[:] = [10.0, 20.0, 30.0]                  # changed after decoration: not seen
    k = np.int32([2, 0, 1])
    for run in (lambda *a: I.interpret(pick, *a), I.compile(pick, target="cpu"), pick):
        y = np.zeros(3, np.float32)                 # pick(...) re-lowers for the call's N
        run(k, y)
        assert y.tolist() == [3.0, 1.0, 2.0]


def test_a_later_lowering_uses_the_decoration_copy():
    table = np.int32([5, 6])

    @I.kernel
    def first(n: I.Tensor[I.i32, "N"]) -> I.i32:
        return table[1] + n[0]

    table[1] = 60
    specialized = first.specialized({"N": 1})     # lowered again, from the source
    assert specialized is not first.ir
    assert "dense<i32[2] [5, 6]>" in str(specialized)


def test_eager_call_of_the_python_function_agrees():
    codes = np.random.default_rng(1).integers(0, 256, 64).astype(np.uint8)
    eager, interp = np.zeros(64, np.float32), np.zeros(64, np.float32)
    grid_decode.fn(codes, eager)                    # plain Python on numpy arrays
    I.interpret(grid_decode, codes, interp)
    assert_same_bits(eager, interp)


def test_an_empty_array_is_a_constant_too():
    empty = np.zeros((0,), np.float32)

    @I.kernel
    def size_of() -> I.index:
        return empty.shape[0] + 1

    assert I.interpret(size_of) == 1


# --- refusals ----------------------------------------------------------------------------

def line_number(needle):
    """The 1-based line of this file that holds ``needle`` (once)."""
    with open(__file__, encoding="utf-8") as f:
        lines = [k + 1 for k, line in enumerate(f) if needle in line]
    assert len(lines) == 1, lines
    return lines[0]


@pytest.mark.parametrize("array, word", [
    (np.zeros(3, np.complex64), "complex64"),
    (np.array([object(), 1], dtype=object), "object"),
    (np.zeros(2, "datetime64[s]"), "datetime64"),
    (np.zeros(2, [("a", np.int32), ("b", np.float32)]), "cannot be a constant tensor"),
    (np.array(["ab", "c"]), "<U2"),
])
def test_unsupported_dtypes_are_refused_at_the_use(array, word):
    with pytest.raises(I.DSLError) as info:
        @I.kernel
        def uses(y: I.Buffer[I.f32, 1]):
            y[0] = 1.0
            y[0] = array[0]
    err = info.value
    assert word in str(err) and "'array' cannot be a constant tensor" in str(err)
    assert err.filename == __file__
    assert err.line == line_number("y[0] = array" + "[0]")
    assert err.source_line.strip() == "y[0] = array" + "[0]"


def test_more_than_one_mib_is_refused_with_the_limit_named():
    big = np.zeros(MAX_BYTES // 4 + 1, np.float32)
    with pytest.raises(I.DSLError, match=r"more than a constant tensor holds \(1048576 bytes"):
        @I.kernel
        def huge(y: I.Buffer[I.f32, 1]):
            y[0] = big[0]
    exactly = np.zeros(MAX_BYTES // 4, np.float32)

    @I.kernel
    def fits(y: I.Buffer[I.f32, 1]):
        y[0] = exactly[5]
    assert constants(fits)[0].value.nbytes == MAX_BYTES


def test_storing_into_a_constant_is_refused():
    table = np.zeros(4, np.float32)
    with pytest.raises(I.DSLError, match="cannot store into 'table': it is a read-only"):
        @I.kernel
        def writes(x: I.f32):
            table[0] = x


def test_an_error_inside_a_helper_points_into_the_helper():
    bad = np.zeros(2, np.complex128)

    @I.func
    def read_bad(i: I.index) -> I.f32:
        return bad[i]

    with pytest.raises(I.DSLError) as info:
        @I.kernel
        def calls(y: I.Buffer[I.f32, 1]):
            y[0] = read_bad(0)
    assert info.value.source_line.strip() == "return bad[i]"
    assert info.value.line == read_bad.fn.__code__.co_firstlineno + 2
