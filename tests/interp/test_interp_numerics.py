"""reduce, dot, quantize, quantized_dot and quantize_into, in every declared order."""
import numpy as np
import pytest

import ninfer_ir as I
from ninfer_ir.backends.interp import interpret
from ninfer_ir.numerics import quantized as quantops
from ninfer_ir.sumorder import SumOrder

ORDERS = ["seq", "tree", "chunk<3>", "chunk<4>/tree", "chunk<64>"]


def run(text, *args, **kwargs):
    return interpret(I.parse(text), *args, **kwargs)


def fold(values, order, f):
    """The parenthesization ``order`` of a list, written out in plain Python."""
    def seq(v):
        acc = v[0]
        for x in v[1:]:
            acc = f(acc, x)
        return acc

    def tree(v):
        while len(v) > 1:
            v = [f(v[i], v[i + 1]) if i + 1 < len(v) else v[i] for i in range(0, len(v), 2)]
        return v[0]

    top = tree if order.endswith("tree") else seq
    if order.startswith("chunk"):
        k = int(order[6:order.index(">")])
        values = [seq(values[i:i + k]) for i in range(0, len(values), k)]
    return top(list(values))


def same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()


def spread(n, dtype, seed):
    """Values of very different magnitudes, so that every order gives its own sum."""
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 6, n)).astype(dtype)


# --- reduce --------------------------------------------------------------------------------

def reduce_text(dtype, kind, order, lead="R,"):
    return (f"func @f(%x: tensor<{dtype}[{lead}C]>) -> (tensor<{dtype}[{lead[:-1]}]>) {{\n"
            f"  %r = reduce(%x) {{kind = \"{kind}\", order = \"{order}\"}} : "
            f"tensor<{dtype}[{lead[:-1]}]>\n  return(%r)\n}}\n")


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("dtype,np_dtype", [("f32", np.float32), ("f64", np.float64),
                                            ("f16", np.float16)])
def test_reduce_add_float_in_declared_order(order, dtype, np_dtype):
    if np_dtype is np.float16:
        x = (np.random.default_rng(0).standard_normal((3, 13)) * 100).astype(np_dtype)
    else:
        x = np.stack([spread(13, np_dtype, s) for s in range(3)])
    got = run(reduce_text(dtype, "add", order), x)
    want = np.array([fold(list(row), order, lambda a, b: a + b) for row in x], dtype=np_dtype)
    same(got, want)


def test_orders_really_differ():
    x = np.array([[1e8, 1.0, -1e8, 1.0]], np.float32)
    seq = run(reduce_text("f32", "add", "seq"), x)
    tree = run(reduce_text("f32", "add", "tree"), x)
    assert float(seq[0]) == 1.0 and float(tree[0]) == 0.0


@pytest.mark.parametrize("order", ["seq", "tree", "chunk<2>"])
def test_reduce_mul_float_in_declared_order(order):
    x = (1.0 + np.random.default_rng(3).standard_normal((2, 11)) * 0.3).astype(np.float32)
    got = run(reduce_text("f32", "mul", order), x)
    want = np.array([fold(list(row), order, lambda a, b: a * b) for row in x], np.float32)
    same(got, want)


def test_reduce_int_wraps():
    x = np.array([[100, 100, 100], [-128, -1, 0]], np.int8)
    got = run(reduce_text("i8", "add", "seq"), x)
    assert got.dtype == np.int8 and list(got) == [(300 + 128) % 256 - 128, 127]
    got = run(reduce_text("i8", "mul", "tree"), x)
    assert list(got) == [(10**6 + 128) % 256 - 128, 0]


def test_reduce_min_max():
    x = np.array([[3.0, -0.0, 0.0, 7.0], [1.0, np.nan, 2.0, 0.5]], np.float32)
    lo = run(reduce_text("f32", "min", "seq"), x)
    hi = run(reduce_text("f32", "max", "seq"), x)
    assert np.signbit(lo[0]) and lo[0] == 0 and hi[0] == 7.0
    assert np.isnan(lo[1]) and np.isnan(hi[1])
    xi = np.array([[5, -3, 9], [0, 0, -7]], np.int32)
    assert list(run(reduce_text("i32", "min", "seq"), xi)) == [-3, -7]
    assert list(run(reduce_text("i32", "max", "tree"), xi)) == [9, 0]


def test_reduce_rank1_and_rank3_and_empty():
    x = spread(10, np.float32, 4)
    got = run(reduce_text("f32", "add", "tree", lead=""), x)
    assert got.shape == () and got.dtype == np.float32
    same(got, np.float32(fold(list(x), "tree", lambda a, b: a + b)))
    x3 = spread(24, np.float32, 5).reshape(2, 3, 4)
    text = ("func @f(%x: tensor<f32[2,3,4]>) -> (tensor<f32[2,3]>) {\n"
            "  %r = reduce(%x) {kind = \"add\", order = \"seq\"} : tensor<f32[2,3]>\n"
            "  return(%r)\n}\n")
    want = np.array([[fold(list(x3[i, j]), "seq", lambda a, b: a + b) for j in range(3)]
                     for i in range(2)], np.float32)
    same(run(text, x3), want)
    empty = np.zeros((2, 0), np.float32)
    same(run(reduce_text("f32", "add", "seq"), empty), np.zeros(2, np.float32))
    same(run(reduce_text("f32", "mul", "tree"), empty), np.ones(2, np.float32))
    same(run(reduce_text("f32", "min", "seq"), empty), np.full(2, np.inf, np.float32))
    same(run(reduce_text("i8", "max", "seq"), np.zeros((1, 0), np.int8)), np.array([-128], np.int8))


# --- dot -----------------------------------------------------------------------------------

@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("dtype,np_dtype", [("f32", np.float32), ("f64", np.float64)])
def test_dot_in_declared_order(order, dtype, np_dtype):
    text = (f"func @f(%a: tensor<{dtype}[K]>, %b: tensor<{dtype}[K]>) -> ({dtype}) {{\n"
            f"  %d = dot(%a, %b) {{order = \"{order}\"}} : tensor<{dtype}[]>\n"
            f"  %s = load(%d) : {dtype}\n  return(%s)\n}}\n")
    a, b = spread(37, np_dtype, 6), spread(37, np_dtype, 7)
    products = [a[i] * b[i] for i in range(37)]       # each one rounded product
    want = fold(products, order, lambda x, y: x + y)
    same(run(text, a, b), np.asarray(want, np_dtype))


def test_dot_single_element_keeps_negative_zero():
    text = ("func @f(%a: tensor<f32[1]>, %b: tensor<f32[1]>) -> (tensor<f32[]>) {\n"
            "  %d = dot(%a, %b) {order = \"seq\"} : tensor<f32[]>\n  return(%d)\n}\n")
    r = run(text, np.array([-0.0], np.float32), np.array([1.0], np.float32))
    assert r.shape == () and np.signbit(r)


# --- quantize, quantize_into, quantized_dot ---------------------------------------------

def q4k_records(shape, seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 256, (*shape, 144), dtype=np.uint8)
    scales = rng.uniform(1e-3, 2e-2, (*shape, 2)).astype("<f2")
    a[..., 0:4] = scales.view(np.uint8).reshape(*shape, 4)
    return a


QDOT = """func @f(%w: tensor<u8[G,144]>, %x: tensor<f32[G,256]>) -> (tensor<f32[]>) {{
  %xq = quantize(%x) {{format = #q8_k}} : tensor<u8[G,292]>
  %r = quantized_dot(%w, %xq) {{acc_dtype = f32, lhs_format = #q4_k, order = "{order}", rhs_format = #q8_k}} : tensor<f32[]>
  return(%r)
}}
"""


@pytest.mark.parametrize("order", ORDERS)
def test_quantized_dot_evaluates_the_declared_order(order):
    g = 13
    w = q4k_records((g,), 8)
    x = np.random.default_rng(9).standard_normal((g, 256)).astype(np.float32) * 3
    got = run(QDOT.format(order=order), w, x)
    v = quantops.record_values(w, quantops.quantize_q8k(x))
    same(got, np.asarray(SumOrder.parse(order).evaluate(v), np.float32).reshape(()))
    same(got, np.asarray(fold(list(v), order, lambda a, b: a + b), np.float32))


def test_quantized_dot_zero_records():
    got = run(QDOT.format(order="seq"), np.zeros((0, 144), np.uint8),
              np.zeros((0, 256), np.float32))
    assert got.shape == () and got.dtype == np.float32 and got == 0 and not np.signbit(got)


def test_quantize_matches_oracle_and_reports_domain_errors():
    text = ("func @f(%x: tensor<f32[G,256]>) -> (tensor<u8[G,292]>) {\n"
            "  %q = quantize(%x) {format = #q8_k} : tensor<u8[G,292]>\n  return(%q)\n}\n")
    x = np.random.default_rng(10).standard_normal((3, 256)).astype(np.float32)
    same(run(text, x), quantops.quantize_q8k(x))
    x[2, 5] = np.nan
    with pytest.raises(I.DomainError, match="record 2") as e:
        run(text, x)
    assert e.value.record == 2 and e.value.reason == quantops.REASON_NONFINITE_INPUT


QINTO = """func @f(%x: tensor<f32[G,256]>, %d: buffer<u8[G,292]>) {
  quantize_into(%x, %d) {format = #q8_k}
  return()
}
"""


def test_quantize_into_writes_the_buffer_or_nothing():
    x = np.random.default_rng(11).standard_normal((4, 256)).astype(np.float32)
    dst = np.zeros((4, 292), np.uint8)
    run(QINTO, x, dst)
    same(dst, quantops.quantize_q8k(x))
    x[1, 0] = np.inf
    before = dst.copy()
    with pytest.raises(I.DomainError, match="record 1"):
        run(QINTO, x, dst)
    same(dst, before)


def test_quantize_into_a_strided_view():
    x = np.random.default_rng(12).standard_normal((2, 256)).astype(np.float32)
    base = np.zeros((4, 292), np.uint8)
    run(QINTO, x, base[::2])
    same(base[::2], quantops.quantize_q8k(x))
    assert not base[1::2].any()


def test_reduce_result_never_aliases_a_buffer():
    text = """func @f(%b: buffer<f32[2,1]>) -> (f32) {
  %r = reduce(%b) {kind = "add", order = "seq"} : tensor<f32[2]>
  %c0 = constant() {value = 0} : index
  %nine = constant() {value = 9.0} : f32
  store(%nine, %b, %c0, %c0)
  %v = load(%r, %c0) : f32
  return(%v)
}
"""
    b = np.array([[1.5], [2.5]], np.float32)
    assert float(run(text, b)) == 1.5 and b[0, 0] == 9.0


@pytest.mark.parametrize("order", ORDERS + ["chunk<1>", "chunk<5>/tree"])
def test_generic_fold_agrees_with_sumorder_on_f32(order):
    """The fold with the combining step alone (as for f16/f64/mul) equals SumOrder's f32
    sum, which takes numpy's running sum as its faster ``seq``."""
    from ninfer_ir.numerics import semantics
    from ninfer_ir.numerics.folds import fold_rows
    for length in (1, 2, 3, 7, 16, 33):
        x = np.stack([spread(length, np.float32, 100 + length + s) for s in range(4)])
        got = fold_rows(x, SumOrder.parse(order),
                        lambda a, b: semantics.binary("add", a, b, I.f32))
        same(got, SumOrder.parse(order).evaluate_rows(x))
