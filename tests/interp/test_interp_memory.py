"""Views, loads, stores, copies, alloc/dealloc, control flow and check."""
import re

import numpy as np
import pytest

import ninfer_ir as I
from ninfer_ir.backends.interp import interpret


def run(text, *args, **kwargs):
    return interpret(I.parse(text), *args, **kwargs)


VIEWS = """func @views(%m: tensor<f32[4,8]>, %y: buffer<f32[8]>) {
  %c0 = constant() {value = 0} : index
  %c1 = constant() {value = 1} : index
  %c2 = constant() {value = 2} : index
  %c6 = constant() {value = 6} : index
  %row = subview(%m, %c1) {axes = "i:"} : tensor<f32[8]>
  %part = subview(%row, %c2, %c6, %c2) {axes = "r"} : tensor<f32[2]>
  %col = subview(%m, %c2) {axes = ":i"} : tensor<f32[4]>
  %dst = subview(%y, %c2, %c6, %c1) {axes = "r"} : buffer<f32[4]>
  copy(%col, %dst)
  %s = load(%part, %c1) : f32
  store(%s, %y, %c0)
  return()
}
"""


def test_views_alias_the_callers_buffer():
    m = np.arange(32, dtype=np.float32).reshape(4, 8)
    keep = m.copy()
    y = np.full(8, -1.0, np.float32)
    assert run(VIEWS, m, y) is None
    want = np.full(8, -1.0, np.float32)
    want[2:6] = m[:, 2]
    want[0] = m[1, 2:6:2][1]
    assert np.array_equal(y, want)
    assert np.array_equal(m, keep)


def test_all_index_subview_of_a_buffer_is_a_writable_0d_view():
    text = """func @f(%y: buffer<i32[3,2]>, %v: i32) {
  %c1 = constant() {value = 1} : index
  %c2 = constant() {value = 2} : index
  %cell = subview(%y, %c2, %c1) {axes = "ii"} : buffer<i32[]>
  store(%v, %cell)
  return()
}
"""
    y = np.zeros((3, 2), np.int32)
    run(text, y, np.int32(42))
    want = np.zeros((3, 2), np.int32)
    want[2, 1] = 42
    assert np.array_equal(y, want)


def test_strided_buffer_argument():
    text = """func @f(%y: buffer<f32[N]>) {
  %c0 = constant() {value = 0} : index
  %c1 = constant() {value = 1} : index
  %n = dim(%y) {axis = 0} : index
  for(%c0, %n, %c1) ({
  ^(%i: index):
    %f = cast(%i) {to = f32} : f32
    store(%f, %y, %i)
    yield()
  })
  return()
}
"""
    base = np.zeros(10, np.float32)
    run(text, base[::2])
    assert np.array_equal(base, np.array([0, 0, 1, 0, 2, 0, 3, 0, 4, 0], np.float32))


def test_load_of_rank0_tensor_is_a_copy():
    text = """func @f(%y: buffer<f32[]>) -> (f32) {
  %old = load(%y) : f32
  %one = constant() {value = 1.0} : f32
  store(%one, %y)
  return(%old)
}
"""
    y = np.array(5.0, np.float32)
    r = run(text, y)
    assert float(r) == 5.0 and float(y) == 1.0 and r.dtype == np.float32 and r.ndim == 0


@pytest.mark.parametrize("op_text", [
    "%v = load(%x, %i) : f32",
    "store(%s, %y, %i)",
    '%v = subview(%x, %i) {axes = "i"} : tensor<f32[]>',
])
@pytest.mark.parametrize("i", [4, -1, 100])
def test_index_out_of_range_is_a_domain_error(op_text, i):
    text = (f"func @f(%x: tensor<f32[4]>, %y: buffer<f32[4]>, %i: index, %s: f32) {{\n"
            f"  {op_text}\n  return()\n}}\n")
    name = re.search(r"(\w+)\(", op_text).group(1)
    y = np.zeros(4, np.float32)
    with pytest.raises(I.DomainError, match=f"'{name}': index {i} is out of range for axis 0 "
                                            f"of size 4"):
        run(text, np.zeros(4, np.float32), y, np.int64(i), np.float32(1))
    assert not y.any()


@pytest.mark.parametrize("start,stop,step", [(0, 5, 1), (-1, 2, 1), (3, 2, 1), (0, 4, 0),
                                             (0, 4, -1)])
def test_bad_subview_range(start, stop, step):
    text = """func @f(%x: tensor<f32[4]>, %a: index, %b: index, %c: index) {
  %v = subview(%x, %a, %b, %c) {axes = "r"} : tensor<f32[?]>
  return()
}
"""
    with pytest.raises(I.DomainError, match=r"'subview': range .* out of bounds"):
        run(text, np.zeros(4, np.float32), np.int64(start), np.int64(stop), np.int64(step))


def test_declared_result_type_is_checked():
    text = """func @f(%x: tensor<f32[4]>) {
  %c0 = constant() {value = 0} : index
  %c2 = constant() {value = 2} : index
  %c1 = constant() {value = 1} : index
  %n = dim(%x) {axis = 0} : index
  %v = subview(%x, %c0, %n, %c2) {axes = "r"} : tensor<f32[?]>
  %w = subview(%v, %c0, %c2, %c1) {axes = "r"} : tensor<f32[2]>
  return()
}
"""
    run(text, np.zeros(4, np.float32))
    bad = I.parse(text.replace("tensor<f32[2]>", "tensor<f32[3]>"), verify=False)
    with pytest.raises(I.VerifyError):
        interpret(bad, np.zeros(4, np.float32))


# --- control flow ------------------------------------------------------------------------

def test_for_carried_values_sequential_sum():
    text = """func @sum(%x: tensor<f32[K]>) -> (f32, index) {
  %c0 = constant() {value = 0} : index
  %c1 = constant() {value = 1} : index
  %k = dim(%x) {axis = 0} : index
  %zero = constant() {value = -0.0} : f32
  %acc, %cnt = for(%c0, %k, %c1, %zero, %c0) ({
  ^(%i: index, %a: f32, %n: index):
    %v = load(%x, %i) : f32
    %a2 = add(%a, %v) : f32
    %n2 = add(%n, %c1) : index
    yield(%a2, %n2)
  }) : (f32, index)
  return(%acc, %cnt)
}
"""
    x = np.array([1e8, 1.0, -1e8, 1.0, 0.5], np.float32)
    acc, cnt = run(text, x)
    want = np.float32(-0.0)
    for v in x:
        want = np.float32(want + v)
    assert acc.dtype == np.float32 and acc.tobytes() == want.tobytes() and int(cnt) == 5
    acc, cnt = run(text, np.zeros(0, np.float32))
    assert np.signbit(acc) and int(cnt) == 0          # no iteration: the init, -0.0


@pytest.mark.parametrize("lb,ub,step", [(0, 10, 3), (9, -1, -2), (5, 5, 1), (5, 2, 1)])
def test_for_iterates_like_range(lb, ub, step):
    text = """func @f(%lb: index, %ub: index, %st: index, %y: buffer<index[16]>) {
  %c1 = constant() {value = 1} : index
  %c0 = constant() {value = 0} : index
  %n = for(%lb, %ub, %st, %c0) ({
  ^(%i: index, %k: index):
    store(%i, %y, %k)
    %k2 = add(%k, %c1) : index
    yield(%k2)
  }) : index
  return()
}
"""
    y = np.full(16, -99, np.int64)
    run(text, lb, ub, step, y)
    want = list(range(lb, ub, step))
    assert list(y[:len(want)]) == want and (y[len(want):] == -99).all()


def test_for_step_zero():
    text = """func @f(%st: index) {
  %c0 = constant() {value = 0} : index
  for(%c0, %c0, %st) ({
  ^(%i: index):
    yield()
  })
  return()
}
"""
    with pytest.raises(I.DomainError, match="'for': step is 0"):
        run(text, 0)


def test_parallel_loop_runs_every_iteration():
    text = """func @f(%y: buffer<i32[N]>) {
  %c0 = constant() {value = 0} : index
  %c1 = constant() {value = 1} : index
  %n = dim(%y) {axis = 0} : index
  for(%c0, %n, %c1) {parallel = true} ({
  ^(%i: index):
    %v = cast(%i) {to = i32} : i32
    %sq = mul(%v, %v) : i32
    store(%sq, %y, %i)
    yield()
  })
  return()
}
"""
    y = np.zeros(7, np.int32)
    counters = {}
    run(text, y, counters=counters)
    assert list(y) == [i * i for i in range(7)]
    assert counters["store"] == 7 and counters["for"] == 1 and counters["yield"] == 7


def test_if_else():
    text = """func @clamp(%x: f32, %lo: f32) -> (f32) {
  %lt = cmp(%x, %lo) {pred = "lt"} : bool
  %r = if(%lt) ({
  ^():
    yield(%lo)
  }, {
  ^():
    %n = neg(%x) : f32
    yield(%n)
  }) : f32
  return(%r)
}
"""
    assert float(run(text, np.float32(-3), np.float32(0))) == 0.0
    assert float(run(text, np.float32(3), np.float32(0))) == -3.0


# --- alloc, dealloc, check ---------------------------------------------------------------

def test_alloc_dealloc_dynamic_sizes():
    text = """func @f(%x: tensor<f32[N,3]>) -> (f32) {
  %c0 = constant() {value = 0} : index
  %c1 = constant() {value = 1} : index
  %n = dim(%x) {axis = 0} : index
  %b = alloc(%n) : buffer<f32[N,3]>
  %u = alloc() : buffer<i8[2]>
  copy(%x, %b)
  %v = load(%b, %c1, %c1) : f32
  %z = load(%u, %c0) : i8
  %zf = cast(%z) {to = f32} : f32
  %s = add(%v, %zf) : f32
  dealloc(%b)
  dealloc(%u)
  return(%s)
}
"""
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    counters = {}
    assert float(run(text, x, counters=counters)) == 4.0
    assert counters["alloc"] == 2 and counters["dealloc"] == 2


def test_alloc_negative_size():
    text = """func @f(%n: index) {
  %b = alloc(%n) : buffer<f32[?]>
  return()
}
"""
    with pytest.raises(I.DomainError, match="'alloc': negative size -1"):
        run(text, -1)


def test_check():
    text = """func @f(%i: index) -> (index) {
  %c4 = constant() {value = 4} : index
  %ok = cmp(%i, %c4) {pred = "lt"} : bool
  check(%ok) {message = "row index out of range"}
  return(%i)
}
"""
    assert int(run(text, 3)) == 3
    with pytest.raises(I.DomainError) as e:
        run(text, 4)
    assert str(e.value) == "row index out of range"


def test_elementwise_result_never_aliases_a_buffer():
    text = """func @f(%b: buffer<u8[2]>) -> (u8) {
  %r = abs(%b) : tensor<u8[2]>
  %c0 = constant() {value = 0} : index
  %nine = constant() {value = 9} : u8
  store(%nine, %b, %c0)
  %v = load(%r, %c0) : u8
  return(%v)
}
"""
    b = np.array([200, 3], np.uint8)
    assert int(run(text, b)) == 200 and b[0] == 9
