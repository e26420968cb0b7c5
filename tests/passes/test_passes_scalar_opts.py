"""canonicalize, cse, dce and licm on small IR: (ir before, what must hold after)."""
import numpy as np
import pytest

import ninfer_ir as I
from ninfer_ir.numerics import semantics
from tests.passes.harness import make_args, run
from ninfer_ir.passes import CSE, DCE, LICM, Canonicalize
from ninfer_ir.passes.manager import PassManager


def _run(text, *passes):
    m = I.parse(text)
    PassManager(list(passes)).run(m)
    return m


def _ops(m, name):
    return [op for op in m.walk() if op.name == name]


def _ret(m):
    return m.funcs[0].body.terminator.operands


def _const(v):
    assert v.op.name == "constant", str(v.op)
    return v.op.attrs["value"]


@pytest.mark.parametrize("dtype, op, a, b", [
    ("i8", "add", 100, 100), ("i8", "mul", -128, -1), ("i32", "div", -7, 2),
    ("i32", "rem", -7, 2), ("i32", "div", 5, 0), ("u8", "sub", 3, 5), ("i16", "shl", 3, 17),
    ("i32", "shr", -16, 2), ("u32", "shr", 4294967295, 31), ("f32", "add", 1.0, 1e-8),
    ("f32", "div", 1.0, 3.0), ("f32", "min", -0.0, 0.0), ("f16", "mul", 3.0, 7.0),
    ("f64", "sub", 0.1, 0.3), ("f32", "div", 1.0, 0.0),
])
def test_folding_uses_the_semantics_table(dtype, op, a, b):
    text = f"""func @f() -> ({dtype}) {{
  %a = constant() {{value = {a}}} : {dtype}
  %b = constant() {{value = {b}}} : {dtype}
  %r = {op}(%a, %b) : {dtype}
  return(%r)
}}
"""
    m = _run(text, Canonicalize(), DCE())
    t = I.ScalarType._table[dtype]
    want = semantics.binary(op, np.asarray(a, t.np_dtype), np.asarray(b, t.np_dtype), t)
    got = np.asarray(_const(_ret(m)[0]), t.np_dtype)
    assert got.tobytes() == want.tobytes()
    assert len(m.funcs[0].body.ops) == 2


def test_casts_and_compares_fold():
    text = """func @f() -> (i8, bool, f32, u32) {
  %a = constant() {value = 300.7} : f32
  %i = cast(%a) {to = i8} : i8
  %c = cmp(%a, %a) {pred = "eq"} : bool
  %n = constant() {value = -3} : i32
  %f = cast(%n) {to = f32} : f32
  %b = bitcast(%f) {to = u32} : u32
  return(%i, %c, %f, %b)
}
"""
    m = _run(text, Canonicalize(), DCE())
    assert [_const(v) for v in _ret(m)] == [127, True, -3.0, 0xC0400000]


def test_nan_results_are_not_folded():
    text = """func @f() -> (f32) {
  %z = constant() {value = 0.0} : f32
  %i = constant() {value = inf} : f32
  %r = mul(%z, %i) : f32
  return(%r)
}
"""
    m = _run(text, Canonicalize())
    assert _ret(m)[0].op.name == "mul"


def test_integer_identities():
    text = """func @f(%x: i32, %t: tensor<u8[K]>) -> (i32, i32, i32, tensor<u8[K]>, bool) {
  %z = constant() {value = 0} : i32
  %o = constant() {value = 1} : i32
  %a = add(%x, %z) : i32
  %b = mul(%o, %a) : i32
  %c = sub(%b, %b) : i32
  %d = xor(%x, %x) : i32
  %ff = constant() {value = 255} : u8
  %e = and(%t, %ff) : tensor<u8[K]>
  %g = cmp(%x, %x) {pred = "le"} : bool
  return(%b, %c, %d, %e, %g)
}
"""
    m = _run(text, Canonicalize(), DCE())
    x, t = m.funcs[0].args
    r = _ret(m)
    assert r[0] is x and _const(r[1]) == 0 and _const(r[2]) == 0 and r[3] is t
    assert _const(r[4]) is True
    assert not [op for op in m.funcs[0].body.ops if op.name not in ("constant", "return")]


def test_float_arithmetic_is_never_simplified():
    text = """func @f(%x: f32, %t: tensor<f32[K]>) -> (f32, f32, f32, tensor<f32[K]>, bool) {
  %z = constant() {value = 0.0} : f32
  %o = constant() {value = 1.0} : f32
  %a = add(%x, %z) : f32
  %b = mul(%x, %o) : f32
  %c = sub(%x, %x) : f32
  %d = min(%t, %t) : tensor<f32[K]>
  %e = cmp(%x, %x) {pred = "eq"} : bool
  return(%a, %b, %c, %d, %e)
}
"""
    m = _run(text, Canonicalize(), CSE(), DCE())
    assert [v.op.name for v in _ret(m)] == ["add", "mul", "sub", "min", "cmp"]
    args = [np.float32(-0.0), np.array([np.nan, -0.0, 1.0], np.float32)]
    assert run(m, args) == run(I.parse(text), args)


def test_exact_identities_for_every_dtype():
    text = """func @f(%x: f32, %c: bool, %y: f32) -> (f32, f32, f32, f32) {
  %n = neg(%x) : f32
  %nn = neg(%n) : f32
  %u = bitcast(%x) {to = u32} : u32
  %back = bitcast(%u) {to = f32} : f32
  %same = cast(%x) {to = f32} : f32
  %s = select(%c, %y, %y) : f32
  return(%nn, %back, %same, %s)
}
"""
    m = _run(text, Canonicalize(), DCE())
    x, _, y = m.funcs[0].args
    assert list(_ret(m)) == [x, x, x, y]


def test_control_flow_on_constants():
    text = """func @f(%x: tensor<f32[4]>, %y: buffer<f32[4]>) -> (f32, f32) {
  %c0 = constant() {value = 0} : index
  %c1 = constant() {value = 1} : index
  %t = constant() {value = true} : bool
  %init = constant() {value = -0.0} : f32
  %once = for(%c0, %c1, %c1, %init) ({
  ^(%i: index, %a: f32):
    %v = load(%x, %i) : f32
    %a2 = add(%a, %v) : f32
    yield(%a2)
  }) : f32
  %never = for(%c1, %c0, %c1, %once) ({
  ^(%i: index, %a: f32):
    store(%a, %y, %i)
    yield(%a)
  }) : f32
  %r = if(%t) ({
  ^():
    %n = neg(%once) : f32
    yield(%n)
  }, {
  ^():
    yield(%once)
  }) : f32
  check(%t) {message = "never"}
  return(%never, %r)
}
"""
    m = _run(text, Canonicalize(), DCE())
    assert not _ops(m, "for") and not _ops(m, "if") and not _ops(m, "check")
    args = make_args(m.funcs[0], np.random.default_rng(0), specials=True)
    assert run(m, args) == run(I.parse(text), args)


def test_cse_merges_pure_ops_and_repeated_checks_only():
    text = """func @f(%x: tensor<f32[G,256]>, %i: index, %n: index) -> (tensor<u8[G,292]>, tensor<u8[G,292]>) {
  %a = quantize(%x) {format = #q8_k} : tensor<u8[G,292]>
  %b = quantize(%x) {format = #q8_k} : tensor<u8[G,292]>
  %ok = cmp(%i, %n) {pred = "lt"} : bool
  check(%ok) {message = "first"}
  check(%ok) {message = "second"}
  return(%a, %b)
}
"""
    m = _run(text, CSE())
    assert len(_ops(m, "quantize")) == 1 and len(_ops(m, "check")) == 1
    a, b = _ret(m)
    assert a is b


def test_dce_keeps_effects_and_ops_that_may_fail():
    text = """func @f(%x: tensor<f32[G,256]>, %v: tensor<f32[K]>, %i: index, %y: buffer<f32[K]>) {
  %q = quantize(%x) {format = #q8_k} : tensor<u8[G,292]>
  %l = load(%v, %i) : f32
  %c0 = constant() {value = 0} : index
  %unused = mul(%v, %v) : tensor<f32[K]>
  %d = dim(%v) {axis = 0} : index
  %s = load(%y, %d) : f32
  %one = constant() {value = 1.0} : f32
  store(%one, %y, %c0)
  return()
}
"""
    m = _run(text, DCE())
    names = [op.name for op in m.funcs[0].body.ops]
    assert names.count("load") == 2 and "quantize" in names and "store" in names
    assert "mul" not in names


def test_licm_hoists_invariants_but_not_reads_of_written_memory():
    text = """func @f(%x: tensor<f32[K]>, %y: buffer<f32[4]>, %s: f32) {
  %c0 = constant() {value = 0} : index
  %c1 = constant() {value = 1} : index
  %c4 = constant() {value = 4} : index
  for(%c0, %c4, %c1) ({
  ^(%i: index):
    %k = dim(%x) {axis = 0} : index
    %two = mul(%s, %s) : f32
    %old = load(%y, %c0) : f32
    %v = add(%old, %two) : f32
    store(%v, %y, %i)
    yield()
  })
  return()
}
"""
    m = _run(text, LICM())
    top = [op.name for op in m.funcs[0].body.ops]
    assert "dim" in top and "mul" in top
    (loop,) = _ops(m, "for")
    assert [op.name for op in loop.regions[0].block.ops] == ["load", "add", "store", "yield"]


def test_licm_does_not_hoist_a_failing_op_past_another_one():
    text = """func @f(%x: tensor<f32[G,256]>, %v: tensor<f32[K]>, %j: index, %n: index, %y: buffer<f32[K]>) {
  %c0 = constant() {value = 0} : index
  %c1 = constant() {value = 1} : index
  for(%c0, %n, %c1) ({
  ^(%i: index):
    %l = load(%v, %i) : f32
    %q = quantize(%x) {format = #q8_k} : tensor<u8[G,292]>
    %g = dim(%q) {axis = 0} : index
    store(%l, %y, %g)
    yield()
  })
  return()
}
"""
    m = _run(text, LICM())
    (loop,) = _ops(m, "for")
    assert [op.name for op in loop.regions[0].block.ops][:2] == ["load", "quantize"]
