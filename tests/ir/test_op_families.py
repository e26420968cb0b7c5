"""Op families, the sets derived from them, named accessors and the one fold."""
from __future__ import annotations

import numpy as np
import pytest

import ninfer_ir as I
from ninfer_ir import ops as O
from ninfer_ir.backends.clike.emitter import RULES as CLIKE_RULES
from ninfer_ir.backends.interp.interpreter import RULES as INTERP_RULES
from ninfer_ir.backends.llvm.gen import scalars as llvm_scalars
from ninfer_ir.frontend.calls import CALLS
from ninfer_ir.frontend.scope import OP_CALLS
from ninfer_ir.numerics import semantics
from ninfer_ir.numerics.folds import fold_identity, fold_rows
from ninfer_ir.sumorder import SumOrder


def test_every_unary_and_binary_op_has_one_rule_per_layer():
    for cls in O.UNARY | O.BINARY:
        table = semantics.UNARY if cls in O.UNARY else semantics.BINARY
        assert cls.name in table, cls.name
        assert cls.name in llvm_scalars.SCALAR_RULES, cls.name
    assert set(semantics.UNARY) == {c.name for c in O.UNARY}
    assert set(semantics.BINARY) == {c.name for c in O.BINARY}
    for cls in O.ELEMENTWISE:
        assert cls in INTERP_RULES and cls in CLIKE_RULES, cls.name


def test_families_partition_the_elementwise_ops():
    groups = [O.UNARY, O.BINARY, O.family(O.CmpOp), O.family(O.SelectOp), O.family(O.CastOp),
              O.family(O.MathOp)]
    assert sum(len(g) for g in groups) == len(O.ELEMENTWISE)
    assert frozenset().union(*groups) == O.ELEMENTWISE
    assert O.CONTRACTIONS == {O.ReduceOp, O.DotOp, O.QuantizedDotOp}
    assert not O.ELEMENTWISE & O.CONTRACTIONS


def test_dsl_calls_are_derived_from_the_op_classes():
    for call, cls in O.DSL_CALLS.items():
        assert call in OP_CALLS and call in CALLS
        assert callable(getattr(I, call))
        assert getattr(I, call).__name__ == call
    assert set(OP_CALLS) == set(CALLS)
    x = np.array([-2.5, 0.0, 3.0], np.float32)
    assert I.abs(x).tobytes() == np.abs(x).tobytes()
    assert I.minimum(x, np.float32(1)).tobytes() == np.minimum(x, np.float32(1)).tobytes()


LOOP = """func @f(%b: buffer<f32[4, 8]>, %t: tensor<f32[8]>) {
  %c0 = constant() {value = 0} : index
  %c4 = constant() {value = 4} : index
  %c1 = constant() {value = 1} : index
  %z = constant() {value = 0.0} : f32
  %s = for(%c0, %c4, %c1, %z) ({
  ^(%i: index, %acc: f32):
    %v = load(%t, %i) : f32
    store(%v, %b, %i, %c1)
    %r = reduce(%t) {kind = "add", order = "chunk<2>/tree"} : tensor<f32[]>
    %w = subview(%b, %i) {axes = "i:"} : buffer<f32[8]>
    copy(%t, %w)
    %n = add(%acc, %v) : f32
    yield(%n)
  }) : f32
  return()
}
"""


def test_named_accessors():
    func = I.parse(LOOP).funcs[0]
    loop = next(op for op in func.walk() if isinstance(op, O.ForOp))
    assert loop.lower.name_hint == "c0" and loop.upper.name_hint == "c4"
    assert loop.step.name_hint == "c1" and [v.name_hint for v in loop.inits] == ["z"]
    assert loop.iv is loop.body.args[0] and loop.iv.name_hint == "i"
    load, store, red, view, copy, add = loop.body.ops[:6]
    assert load.source.name_hint == "t" and list(load.indices) == [loop.iv]
    assert store.value is load.result and store.dest.name_hint == "b"
    assert list(store.indices)[0] is loop.iv and store.index_pairs()[1][0] == 1
    assert red.order == SumOrder(chunk=2, tree=True) and red.kind == "add"
    assert view.source.name_hint == "b" and view.index_pairs() == [(0, loop.iv)]
    assert copy.source.name_hint == "t" and copy.dest is view.result
    assert add.lhs.name_hint == "acc" and add.rhs is load.result
    assert store.memory_reads() == [] and store.memory_writes() == [store.dest]
    assert copy.memory_reads() == [copy.source] and copy.memory_writes() == [copy.dest]
    assert view.memory_reads() == [] and load.memory_writes() == []


def _names(n):
    return np.array([[f"x{k}" for k in range(n)]], dtype=object)


def _paren(a, b):
    return "(" + a + "+" + b + ")"


@pytest.mark.parametrize("order, n, want", [
    ("seq", 4, "(((x0+x1)+x2)+x3)"),
    ("tree", 5, "(((x0+x1)+(x2+x3))+x4)"),
    ("tree", 6, "(((x0+x1)+(x2+x3))+(x4+x5))"),
    ("chunk<3>", 7, "((((x0+x1)+x2)+((x3+x4)+x5))+x6)"),
    ("chunk<2>/tree", 7, "(((x0+x1)+(x2+x3))+((x4+x5)+x6))"),
    ("tree", 1, "x0"),
])
def test_the_fold_parenthesizes_as_sumorder_says(order, n, want):
    """With a combining step that writes its operands, the fold shows its tree."""
    got = fold_rows(_names(n), SumOrder.parse(order), _paren)
    assert got.tolist() == [want]


def test_empty_fold_gives_the_identity():
    assert fold_rows(np.zeros((2, 0), np.float32), SumOrder(), _paren, 1).tolist() == [1, 1]
    assert fold_identity("min", I.i8) == 127 and fold_identity("max", I.u16) == 0
    assert fold_identity("min", I.f32) == np.inf and fold_identity("mul", I.f64) == 1
