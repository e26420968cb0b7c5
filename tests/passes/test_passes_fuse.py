"""Fusion: what is fused, what is not, and that effects keep their order."""
import numpy as np
import pytest

import ninfer_ir as I
from tests.kernels import KERNELS as REGISTRY
from tests.passes.harness import make_args, run, stages
from tests.passes.ir_kernels import (AXPY, DECODE_DOT, DECODE_DOT_TREE, LOAD_AFTER_STORE,
                                     OVERLAP_UPDATE, SCALED_QUANTIZE, TWO_DOTS)
from ninfer_ir.passes import CSE, LICM, Fuse, Lower, Materialize, PassError, lower
from ninfer_ir.passes.manager import PassManager


def _stage(text, name):
    return dict(stages(I.parse(text)))[name]


def _ops(module, name):
    return [op for op in module.walk() if op.name == name]


def _by_hint(module, hint):
    (r,) = [r for op in module.walk() for r in op.results if r.name_hint == hint]
    return r.op


def test_decode_chain_is_fused_into_the_dot():
    fused = _stage(DECODE_DOT, "05-fuse")
    for hint in ("lo", "wf", "wc", "ws"):
        assert _by_hint(fused, hint).attrs.get("fused") is True
    lowered, report = lower(I.parse(DECODE_DOT))
    assert not _ops(lowered, "alloc") and str(report.peak_local_bytes["decode_dot"]) == "0"
    assert not _ops(lowered, "dot")
    stored = {str(op.operands[1].type) for op in _ops(lowered, "store")}
    assert stored == {"buffer<f32[N]>"}          # only y: decoded weights are never stored
    (loop,) = [op for op in _ops(lowered, "for") if op.results]
    assert {op.name for op in loop.walk()} >= {"and", "cast", "sub", "mul", "add", "load"}


def test_registry_int4_gemv_never_stores_decoded_weights():
    lowered, _ = lower(REGISTRY["int4_gemv"].kernel.ir)
    assert not _ops(lowered, "alloc")
    assert {str(op.operands[1].type) for op in _ops(lowered, "store")} == {"buffer<f32[N]>"}


def test_tree_order_dot_is_not_fused():
    fused = _stage(DECODE_DOT_TREE, "05-fuse")
    assert "fused" not in _by_hint(fused, "ws").attrs
    lowered, _ = lower(I.parse(DECODE_DOT_TREE))
    (a,) = _ops(lowered, "alloc")
    assert str(a.result.type) == "buffer<f32[K]>" and a.parent_op.name == "func"
    (d,) = _ops(lowered, "dot")
    assert d.attrs["order"] == "tree" and d.operands[0] is a.result


def test_chain_into_quantize_is_fused_into_its_input_reads():
    fused = _stage(SCALED_QUANTIZE, "05-fuse")
    assert fused and _by_hint(fused, "xs").attrs.get("fused") is True
    assert _by_hint(fused, "xn").attrs.get("fused") is True
    assert all("fused" not in op.attrs for op in _ops(fused, "quantize"))
    lowered, report = lower(I.parse(SCALED_QUANTIZE))
    (row,) = _ops(lowered, "alloc")    # one record's values, not G of them; the records
    assert str(row.result.type) == "buffer<f32[1,256]>"   # go to the caller's output
    (q,) = _ops(lowered, "quantize_into")
    assert q.operands[0] is row.result and len(q.operands) == 3
    g_loop = q.parent_op
    assert g_loop.name == "for" and q.operands[2] is g_loop.body.args[0]   # record base g
    writers = [op for op in _ops(lowered, "store") if op.operands[1] is row.result]
    assert len(writers) == 1
    assert str(report.peak_local_bytes["scaled_quantize"]) == "1024"


def test_fused_quantize_names_the_same_record_as_the_oracle():
    module = I.parse(SCALED_QUANTIZE)
    lowered, _ = lower(module)
    f = module.funcs[0]
    rng = np.random.default_rng(3)
    args = make_args(f, rng, {"G": 5, "N": 3})
    x = next(a for a, p in zip(args, f.args) if p.name_hint == "x")
    x[3, 100] = np.inf
    errors = []
    for m in (module, lowered):
        with pytest.raises(I.DomainError) as info:
            I.interpret(m, *[a.copy() if hasattr(a, "copy") else a for a in args])
        errors.append((info.value.record, str(info.value)))
    assert errors[0] == errors[1] and errors[0][0] == 3


def test_multi_consumer_values_are_not_fused():
    fused = _stage(AXPY, "05-fuse")
    assert "fused" not in _by_hint(fused, "r").attrs      # read by max, cmp and select
    assert _by_hint(fused, "ax").attrs.get("fused") is True
    q = _stage(TWO_DOTS, "05-fuse")
    assert all("fused" not in op.attrs for op in _ops(q, "quantize"))


def test_a_read_before_a_store_to_the_same_buffer_stays_before_it():
    fused = _stage(LOAD_AFTER_STORE, "05-fuse")
    ops = fused.funcs[0].body.ops
    t = _by_hint(fused, "t")
    store = _ops(fused, "store")[0]
    assert "fused" not in t.attrs and ops.index(t) < ops.index(store)
    assert _by_hint(fused, "u").attrs.get("fused") is True
    lowered, _ = lower(I.parse(LOAD_AFTER_STORE))
    body = lowered.funcs[0].body.ops
    first_loop = next(op for op in body if op.name == "for")
    assert any(o.name == "load" and o.operands[0] is lowered.funcs[0].args[0]
               for o in first_loop.walk())
    assert body.index(first_loop) < body.index(next(op for op in body if op.name == "store"))


def test_overlapping_views_are_not_updated_in_place():
    fused = _stage(OVERLAP_UPDATE, "05-fuse")
    assert "fused" not in _by_hint(fused, "t").attrs     # reads y[0:4], writes y[1:5]
    assert _by_hint(fused, "u").attrs.get("fused") is True  # z = z*z: same view, in place
    m = I.parse(OVERLAP_UPDATE)
    args = make_args(m.funcs[0], np.random.default_rng(0))
    assert run(lower(m)[0], args) == run(m, args)


def test_scalar_loads_do_not_cross_stores():
    text = """func @f(%y: buffer<f32[4]>, %v: f32) -> (f32, f32) {
  %c0 = constant() {value = 0} : index
  %c1 = constant() {value = 1} : index
  %c4 = constant() {value = 4} : index
  %a = load(%y, %c0) : f32
  store(%v, %y, %c0)
  %b = load(%y, %c0) : f32
  %s = for(%c0, %c4, %c1, %a) ({
  ^(%i: index, %acc: f32):
    %l = load(%y, %c0) : f32
    %n = add(%acc, %l) : f32
    store(%n, %y, %c0)
    yield(%n)
  }) : f32
  return(%b, %s)
}
"""
    m = I.parse(text)
    PassManager([CSE(), LICM()]).run(m)
    assert len(_ops(m, "load")) == 3
    (loop,) = _ops(m, "for")
    assert any(o.name == "load" for o in loop.walk())
    y = np.arange(4, dtype=np.float32)
    args = [y, np.float32(2.5)]
    assert run(m, args) == run(I.parse(text), args)


def test_fuse_refuses_materialized_ir():
    lowered, _ = lower(I.parse(DECODE_DOT_TREE))
    with pytest.raises(PassError, match=r"^pass 'fuse': runs on tensor-level IR"):
        PassManager([Fuse()]).run(lowered)


def test_a_misplaced_fused_mark_is_refused():
    text = """func @f(%x: tensor<f32[K]>, %y: buffer<f32[K]>) {
  %one = constant() {value = 1.0} : f32
  %t = add(%x, %one) {fused = true} : tensor<f32[K]>
  %u = mul(%t, %t) : tensor<f32[K]>
  copy(%u, %y)
  return()
}
"""
    for p in (Materialize(), Lower()):
        with pytest.raises(PassError, match="marked fused is not right before"):
            PassManager([p]).run(I.parse(text))
