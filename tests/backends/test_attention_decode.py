"""Decoding attention written in the DSL (benchmarks/attention.py: scores in ``tree``
order, softmax, values added in position order) gives the interpreter's bits on the CPU,
for an f32 and an f16 cache, at head sizes that take the vector fold's full blocks,
its vector tail and its scalar tail, and for strided views (the scalar fold)."""
import importlib.util
import os

import numpy as np
import pytest

import ninfer_ir as I

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_spec = importlib.util.spec_from_file_location(
    "attention_benchmark", os.path.join(ROOT, "benchmarks", "attention.py"))
A = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(A)

SHAPES = ((1, 1), (2, 7), (37, 20), (9, 128), (5, 256), (3, 300))    # (L, D)


def _both(kernel, args, length, dim):
    got, want = A.outputs(length, dim), A.outputs(length, dim)
    I.compile(kernel, "cpu")(*args, *got)
    I.interpret(kernel, *args, *want)
    return got, want


@pytest.mark.parametrize("cache", ["f32", "f16"])
@pytest.mark.parametrize("length,dim", SHAPES)
def test_decode_attention_matches_the_interpreter(cache, length, dim):
    kernel, dtype = A.KERNELS[cache]
    rng = np.random.default_rng(length * 1000 + dim)
    args = A.inputs(rng, length, dim, dtype)
    before = [np.copy(a) for a in args[:3]]
    (s, o), (ws, wo) = _both(kernel, args, length, dim)
    assert o.view(np.uint32).tolist() == wo.view(np.uint32).tolist()
    assert s.view(np.uint32).tolist() == ws.view(np.uint32).tolist()
    assert all(np.array_equal(a, b) for a, b in zip(args[:3], before))
    # against float64 numpy: only f32 rounding of the products, sums and exp differs
    q, k, v, c = (np.asarray(a, np.float64) for a in args)
    e = np.exp(k @ q * c - (k @ q * c).max())
    np.testing.assert_allclose(o, e @ v / e.sum(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("cache", ["f32", "f16"])
def test_decode_attention_on_strided_views(cache):
    """Every other column of a wider cache: non-unit strides take the scalar fold."""
    kernel, dtype = A.KERNELS[cache]
    rng = np.random.default_rng(7)
    q, k, v, c = A.inputs(rng, 11, 96, dtype)
    args = (q[::2], k[:, ::2], v[:, ::2], c)
    (s, o), (ws, wo) = _both(kernel, args, 11, 48)
    assert o.view(np.uint32).tolist() == wo.view(np.uint32).tolist()
    assert s.view(np.uint32).tolist() == ws.view(np.uint32).tolist()


def _tree(x):
    """The adjacent-pair tree of the float32 values ``x`` (an odd last one carried up)."""
    x = list(x)
    while len(x) > 1:
        x = [np.float32(x[j] + x[j + 1]) for j in range(0, len(x) - 1, 2)] + \
            ([x[-1]] if len(x) % 2 else [])
    return np.float32(x[0])


def _model(q, k, v, c, dot):
    """The kernel's declared orders in numpy float32, with ``dot`` for the scores."""
    s = np.array([np.float32(dot(q * k[t].astype(np.float32)) * c) for t in range(len(k))])
    e = I.exp(s - s.max())
    inv = np.float32(1) / _tree(e)
    o = np.zeros(k.shape[1], np.float32)
    for t in range(len(k)):
        o = o + e[t] * v[t].astype(np.float32)
    return o * inv


def test_the_declared_orders_are_the_ones_computed():
    """An independent model of the declared orders (numpy float32, ``I.exp`` eagerly)
    gives the compiled bits, and a sequential score would not: the bit equality checks
    the orders, not only the values."""
    rng = np.random.default_rng(3)
    for cache, dtype in (("f32", np.float32), ("f16", np.float16)):
        q, k, v, c = A.inputs(rng, 6, 200, dtype)
        s, o = A.outputs(6, 200)
        I.compile(A.KERNELS[cache][0], "cpu")(q, k, v, c, s, o)
        assert o.tobytes() == _model(q, k, v, c, _tree).tobytes()
        seq = _model(q, k, v, c, lambda p: np.add.accumulate(p, dtype=np.float32)[-1])
        assert o.tobytes() != seq.tobytes()
