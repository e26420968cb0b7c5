"""The oracle's own corners found by differential fuzzing: ``copy`` between overlapping
views of one buffer has value semantics whatever the strides, a NaN produced from
non-NaN operands is one defined NaN, and ``cast`` reads buffer views. Each case runs
on the interpreter and on the CPU and is compared bit for bit with a reference that
does not use the code under test."""
import numpy as np
import pytest

import ninfer_ir as I
from ninfer_ir.numerics import semantics
from ninfer_ir.types import f16, f32, f64


def run(kernel, target, *args):
    return I.compile(kernel, target=target)(*args)


# --- copy between overlapping views --------------------------------------------------

@I.kernel
def row_from_column(o: I.Buffer[I.i32, 3, 3]):
    o[1, :] = o[:, 2]


@I.kernel
def column_from_row(o: I.Buffer[I.i32, 4, 4]):
    o[:, 1] = o[2, :]


@I.kernel
def strided_from_tail(o: I.Buffer[I.i32, 5]):
    o[0:5:2] = o[2:5]


@I.kernel
def block_transposed(o: I.Buffer[I.f32, 4, 4]):
    o[0:3, 1:4] = o[1:4, 0:3]


def value_semantics(a, dst_key, src_key, transform=lambda v: v):
    """The reference: read the whole source first (an explicit copy), then write."""
    want = a.copy()
    want[dst_key] = transform(a[src_key].copy())
    return want


# (kernel, how the buffer is made, destination key, source key)
OVERLAPS = {
    "row_from_column": (row_from_column, lambda: np.arange(9, dtype=np.int32).reshape(3, 3),
                        (1, slice(None)), (slice(None), 2)),
    "column_from_row": (column_from_row, lambda: np.arange(16, dtype=np.int32).reshape(4, 4),
                        (slice(None), 1), (2, slice(None))),
    "strided_from_tail": (strided_from_tail, lambda: np.arange(5, dtype=np.int32),
                          slice(0, 5, 2), slice(2, 5)),
    # the same program on a buffer that is itself a negative-stride view
    "strided_from_tail_reversed": (strided_from_tail,
                                   lambda: np.arange(5, dtype=np.int32)[::-1].copy()[::-1],
                                   slice(0, 5, 2), slice(2, 5)),
    "block_transposed_view": (block_transposed,
                              lambda: np.arange(16, dtype=np.float32).reshape(4, 4).T,
                              (slice(0, 3), slice(1, 4)), (slice(1, 4), slice(0, 3))),
}


@pytest.mark.parametrize("target", ["interp", "cpu"])
@pytest.mark.parametrize("case", sorted(OVERLAPS))
def test_overlapping_copy_reads_the_whole_source_first(case, target):
    kernel, make, dst_key, src_key = OVERLAPS[case]
    a = make()
    want = value_semantics(a, dst_key, src_key)
    run(kernel, target, a)
    assert np.array_equal(a.view(np.uint32), want.view(np.uint32)), (a, want)


def test_the_reported_values():
    """The figures of the report: value semantics gives [[0,1,2],[2,5,8],[6,7,8]] and
    [2,1,3,3,4] for the negative-stride view."""
    a = np.arange(9, dtype=np.int32).reshape(3, 3)
    I.interpret(row_from_column, a)
    assert a.tolist() == [[0, 1, 2], [2, 5, 8], [6, 7, 8]]
    o = np.arange(5, dtype=np.int32)[::-1].copy()[::-1]
    assert o.strides[0] < 0
    I.interpret(strided_from_tail, o)
    assert o.tolist() == [2, 1, 3, 3, 4]


def test_disjoint_copy_is_unchanged():
    a = np.arange(16, dtype=np.int32).reshape(4, 4)
    want = value_semantics(a, (0, slice(None)), (3, slice(None)))
    I.interpret(I.parse("""func @f(%o: buffer<i32[4,4]>) {
  %c0 = constant() {value = 0} : index
  %c3 = constant() {value = 3} : index
  %src = subview(%o, %c3) {axes = "i:"} : buffer<i32[4]>
  %dst = subview(%o, %c0) {axes = "i:"} : buffer<i32[4]>
  copy(%src, %dst)
  return()
}"""), a)
    assert np.array_equal(a, want)


# --- the NaN produced from non-NaN operands -----------------------------------------------

PRODUCED = {f16: 0xFE00, f32: 0xFFC00000, f64: 0xFFF8000000000000}


@pytest.mark.parametrize("t", [f16, f32, f64], ids=str)
def test_produced_nan_is_defined(t):
    """``x % 0``, ``inf % y``, ``0/0``, ``inf - inf``, ``0 * inf`` give the negative quiet
    NaN with zero payload; a NaN operand still gives that NaN, quieted."""
    u = np.dtype(f"u{t.bits // 8}")
    cases = [("rem", 1.0, 0.0), ("rem", np.inf, 2.0), ("rem", -np.inf, -0.0),
             ("div", 0.0, 0.0), ("sub", np.inf, np.inf), ("add", -np.inf, np.inf),
             ("mul", 0.0, -np.inf)]
    for name, a, b in cases:
        got = semantics.binary(name, a, b, t)
        assert int(got.view(u)) == PRODUCED[t], (name, a, b)
    quiet_nan = np.asarray(np.nan, t.np_dtype)
    for name in ("rem", "add", "div"):
        got = semantics.binary(name, quiet_nan, 3.0, t)
        assert int(got.view(u)) == int(quiet_nan.view(u)), name
    assert int(semantics.binary("rem", 7.5, 2.0, t).view(u)) == \
        int(np.asarray(1.5, t.np_dtype).view(u))


# --- cast of a buffer view ------------------------------------------------------------------

@I.kernel
def cast_view(b: I.Buffer[I.f32, 6], o: I.Buffer[I.i32, 3]):
    o[:] = I.cast(b[1:6:2], I.i32)


@I.kernel
def cast_row_then_scale(b: I.Buffer[I.f16, 2, 4], o: I.Buffer[I.f32, 4]):
    o[:] = I.cast(b[1], I.f32) * 2.0


@I.kernel
def bitcast_view(b: I.Buffer[I.f32, 4], o: I.Buffer[I.u32, 2]):
    o[:] = I.bitcast(b[2:4], I.u32)


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_cast_reads_a_buffer_view(target):
    b = np.array([9.0, -1.5, 7.0, 2.99, 5.0, -3e9], np.float32)
    o = np.zeros(3, np.int32)
    run(cast_view, target, b.copy(), o)
    assert o.tolist() == [-1, 2, np.iinfo(np.int32).min]     # truncates and saturates
    h = np.array([[1, 2, 3, 4], [0.5, -0.0, np.inf, 65504]], np.float16)
    out = np.zeros(4, np.float32)
    run(cast_row_then_scale, target, h, out)
    want = h[1].astype(np.float32) * np.float32(2.0)
    assert np.array_equal(out.view(np.uint32), want.view(np.uint32))
    w = np.array([1.0, 2.0, -0.0, np.inf], np.float32)
    bits = np.zeros(2, np.uint32)
    run(bitcast_view, target, w, bits)
    assert bits.tolist() == [0x80000000, 0x7F800000]


def test_cast_result_is_never_a_buffer():
    with pytest.raises(I.VerifyError, match="the result of a cast is a value, not a buffer"):
        I.parse("""func @f(%b: buffer<f32[4]>) {
  %0 = cast(%b) {to = i32} : buffer<i32[4]>
  return()
}""")
