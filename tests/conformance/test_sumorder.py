"""SumOrder: text syntax, record semantics, and evaluation of every form."""
import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ninfer_ir.sumorder import SEQ, TREE, SumOrder

from . import scalar_model as model

F32 = np.float32


def bits(x) -> int:
    return int(np.asarray(x, dtype=F32).view(np.uint32))


# --- text ------------------------------------------------------------------

@pytest.mark.parametrize("text, chunk, tree", [
    ("seq", None, False),
    ("tree", None, True),
    ("chunk<1>", 1, False),
    ("chunk<8>", 8, False),
    ("chunk<37>/tree", 37, True),
    ("chunk<1024>/tree", 1024, True),
])
def test_parse_and_str_are_inverse(text, chunk, tree):
    order = SumOrder.parse(text)
    assert order.chunk == chunk and order.tree is tree
    assert str(order) == text
    assert SumOrder.parse(str(order)) == order
    assert hash(order) == hash(SumOrder(chunk=chunk, tree=tree))


def test_constants_and_coerce():
    assert str(SEQ) == "seq" and SEQ == SumOrder()
    assert str(TREE) == "tree"
    assert SumOrder.coerce("chunk<4>/tree") == SumOrder(chunk=4, tree=True)
    assert SumOrder.coerce(TREE) is TREE
    assert len({SumOrder.parse(t) for t in ("seq", "seq", "tree", "chunk<2>", "chunk<2>")}) == 3


def test_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        SEQ.tree = True


@pytest.mark.parametrize("text", [
    "", "Seq", "SEQ", " seq", "seq ", "sequential", "tree/tree", "seq/tree", "chunk",
    "chunk<>", "chunk<0>", "chunk<-1>", "chunk<04>", "chunk<1e3>", "chunk<4>/", "chunk<4>/seq",
    "chunk<4>tree", "chunk<4>/tree/tree", "chunk<4> /tree", "chunk(4)", "chunk<4.0>",
])
def test_bad_text_is_a_clear_value_error(text):
    with pytest.raises(ValueError) as info:
        SumOrder.parse(text)
    message = str(info.value)
    assert repr(text) in message
    assert "chunk<K>/tree" in message


def test_parse_refuses_non_text():
    with pytest.raises(ValueError, match="text"):
        SumOrder.parse(4)


@pytest.mark.parametrize("kwargs", [{"chunk": 0}, {"chunk": -3}, {"chunk": 2.0},
                                    {"chunk": True}, {"tree": "yes"}])
def test_bad_fields_refused(kwargs):
    with pytest.raises(ValueError):
        SumOrder(**kwargs)


# --- semantics on hand-made sequences ----------------------------------------

def test_which_parenthesization_each_form_uses():
    # 1 + 2**-24 rounds back to 1 (tie to even), 2**-24 + 2**-24 = 2**-23 is exact.
    h = 2.0 ** -24
    v = np.array([1.0, h, h, h], dtype=F32)
    one, one_up = bits(1.0), bits(1.0 + 2.0 ** -23)
    assert bits(SEQ.evaluate(v)) == one                 # ((1+h)+h)+h
    assert bits(TREE.evaluate(v)) == one_up             # (1+h)+(h+h)
    assert bits(SumOrder.parse("chunk<2>").evaluate(v)) == one_up
    assert bits(SumOrder.parse("chunk<3>").evaluate(v)) == one          # (1+h+h)+h
    assert bits(SumOrder.parse("chunk<1>").evaluate(v)) == one
    assert bits(SumOrder.parse("chunk<1>/tree").evaluate(v)) == one_up
    # one chunk holding everything is a plain left-to-right sum, tree or not
    assert bits(SumOrder.parse("chunk<4>/tree").evaluate(v)) == one
    assert bits(SumOrder.parse("chunk<9>/tree").evaluate(v)) == one


def test_tree_carries_an_odd_element_up_unchanged():
    # L = 5: ((x0+x1)+(x2+x3))+x4; with x = [h,h,h,h,1] that is 1 + 4h exactly.
    h = 2.0 ** -24
    v = np.array([h, h, h, h, 1.0], dtype=F32)
    assert bits(TREE.evaluate(v)) == bits(1.0 + 4 * h)
    assert bits(SEQ.evaluate(v)) == bits(1.0 + 4 * h)
    # L = 3: (x0+x1)+x2 — 1 + h is a tie to 1, then + 1 = 2.
    w = np.array([1.0, h, 1.0], dtype=F32)
    assert bits(TREE.evaluate(w)) == bits(2.0)


def test_chunk_sums_then_tree_of_partials():
    # chunk<2>/tree on 6 elements: ((c0 + c1) + c2) with c_i = x[2i] + x[2i+1]
    h = 2.0 ** -24
    v = np.array([1.0, h, h, 0.0, h, 0.0], dtype=F32)
    # c0 = 1 (tie), c1 = h, c2 = h; tree: (c0 + c1) + c2 = 1 + h -> 1, then + h -> 1
    assert bits(SumOrder.parse("chunk<2>/tree").evaluate(v)) == bits(1.0)
    # chunk<4>/tree: c0 = ((1+h)+h)+0 = 1, c1 = h + 0 = h; c0 + c1 = 1
    assert bits(SumOrder.parse("chunk<4>/tree").evaluate(v)) == bits(1.0)
    # w = [1, h, h, h, h, 0]
    w = np.array([1.0, h, h, h, h, 0.0], dtype=F32)
    # seq: every 1 + h is a tie back to 1
    assert bits(SEQ.evaluate(w)) == bits(1.0)
    # chunk<3>: c0 = (1+h)+h = 1, c1 = (h+h)+0 = 2h; 1 + 2h is exact
    assert bits(SumOrder.parse("chunk<3>").evaluate(w)) == bits(1.0 + 2 * h)
    assert bits(SumOrder.parse("chunk<3>/tree").evaluate(w)) == bits(1.0 + 2 * h)
    # tree: [1, 2h, h] -> [1 + 2h, h] -> (1 + 2h) + h, a tie to the even 1 + 4h
    assert bits(TREE.evaluate(w)) == bits(1.0 + 4 * h)
    # chunk<2>/tree: partials [1, 2h, h], then the same tree
    assert bits(SumOrder.parse("chunk<2>/tree").evaluate(w)) == bits(1.0 + 4 * h)


@pytest.mark.parametrize("text", ["seq", "tree", "chunk<1>", "chunk<3>", "chunk<3>/tree"])
def test_empty_and_single(text):
    order = SumOrder.parse(text)
    assert bits(order.evaluate(np.zeros(0, dtype=F32))) == 0
    for x in (-0.0, 0.0, 1.5, -np.inf, 1e-45):
        assert bits(order.evaluate(np.array([x], dtype=F32))) == bits(x)
    assert bits(order.evaluate(np.array([-0.0, -0.0, -0.0], dtype=F32))) == bits(-0.0)
    assert np.isnan(order.evaluate(np.array([1.0, np.nan, 2.0], dtype=F32)))


def test_evaluate_rows_matches_evaluate_per_row():
    rng = np.random.default_rng(5)
    v = (rng.standard_normal((7, 29)) * 2.0 ** rng.integers(-20, 20, (7, 29))).astype(F32)
    for text in ("seq", "tree", "chunk<4>", "chunk<4>/tree", "chunk<29>", "chunk<64>/tree"):
        order = SumOrder.parse(text)
        rows = order.evaluate_rows(v)
        assert rows.dtype == F32 and rows.shape == (7,)
        for i in range(7):
            assert bits(rows[i]) == bits(order.evaluate(v[i]))
    assert SEQ.evaluate_rows(np.zeros((0, 5), dtype=F32)).shape == (0,)
    assert (SEQ.evaluate_rows(np.zeros((3, 0), dtype=F32)).view(np.uint32) == 0).all()


def test_long_sequences_and_any_layout():
    rng = np.random.default_rng(9)
    v = (rng.standard_normal(20_000) * 2.0 ** rng.integers(-30, 30, 20_000)).astype(F32)
    acc = v[0]
    for x in v[1:]:
        acc = F32(acc + x)                 # numpy scalar f32 add: one rounding per step
    assert bits(SEQ.evaluate(v)) == bits(acc)
    assert bits(SEQ.evaluate(v)) != bits(v.sum(dtype=F32))   # numpy's own sum is pairwise
    rows = v.reshape(8, 2500)
    for text in ("seq", "tree", "chunk<7>", "chunk<64>/tree"):
        order = SumOrder.parse(text)
        want = order.evaluate_rows(np.ascontiguousarray(rows))
        assert np.array_equal(order.evaluate_rows(np.asfortranarray(rows)).view(np.uint32),
                              want.view(np.uint32))
        assert np.array_equal(order.evaluate_rows(np.repeat(rows, 2, axis=1)[:, ::2])
                              .view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("bad", [np.zeros(3, dtype=np.float64), np.zeros((2, 2), dtype=F32),
                                 [1.0, 2.0]])
def test_evaluate_refuses_other_input(bad):
    with pytest.raises(ValueError):
        SEQ.evaluate(bad)


# --- against the scalar model -----------------------------------------------

ORDERS = st.one_of(
    st.sampled_from(["seq", "tree"]),
    st.builds(lambda k, t: f"chunk<{k}>" + ("/tree" if t else ""),
              st.integers(1, 12), st.booleans()))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(length=st.integers(0, 70), spread=st.integers(0, 60), seed=st.integers(0, 2**32 - 1),
       order=ORDERS)
def test_evaluate_agrees_with_scalar_model(length, spread, seed, order):
    rng = np.random.default_rng(seed)
    v = (rng.standard_normal(length) * 2.0 ** rng.integers(-spread, spread + 1, length))
    v = v.astype(F32)
    got = SumOrder.parse(order).evaluate(v)
    want = model.sum_in_order([float(x) for x in v], order)
    assert bits(got) == model.f32_bits(want)
