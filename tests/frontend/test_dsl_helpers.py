"""``@I.func`` helpers: inlined at each call, typed at the call, recursion refused with a
located error, errors inside a helper located in its own lines."""
from __future__ import annotations

import numpy as np
import pytest

import ninfer_ir as I


@I.func
def gelu_tanh(v: I.f32) -> I.f32:
    c = I.cast(0.7978845608028654, I.f32)
    return 0.5 * v * (1.0 + I.tanh(c * (v + 0.044715 * v * v * v)))


@I.func
def scale_row(x: I.Tensor[I.f32, 4], y: I.Buffer[I.f32, 4], s: I.f32):
    y[:] = x * s


@I.func
def untyped_square(v):
    return v * v


@I.kernel
def uses_helpers(x: I.Tensor[I.f32, "R", 4], y: I.Buffer[I.f32, "R", 4],
                 z: I.Buffer[I.f32, "R"]):
    for r in I.range(x.shape[0]):
        scale_row(x[r], y[r], 2.0)
        z[r] = gelu_tanh(untyped_square(x[r, 0]))


def test_helpers_are_inlined_and_exact():
    text = str(uses_helpers.ir)
    assert "call" not in text and text.count("math(") == 1
    x = np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)
    y, z = np.zeros_like(x), np.zeros(3, np.float32)
    I.interpret(uses_helpers, x, y, z)
    assert np.array_equal(y, x * np.float32(2))
    v = x[:, 0] * x[:, 0]
    c = np.float32(0.7978845608028654)
    want = np.float32(0.5) * v * (np.float32(1) + I.tanh(c * (v + np.float32(0.044715) * v * v * v)))
    assert want.tobytes() == z.tobytes()
    y2, z2 = np.zeros_like(x), np.zeros(3, np.float32)
    I.compile(uses_helpers, target="cpu")(x, y2, z2)
    assert y2.tobytes() == y.tobytes() and z2.tobytes() == z.tobytes()


@I.func
def ping(v):
    return pong(v)


@I.func
def pong(v):
    return ping(v)


@I.func
def itself(v):
    return itself(v) + 1.0


def test_recursion_is_refused_at_the_call():
    with pytest.raises(I.DSLError, match=r"recursion is not supported") as e:
        @I.kernel
        def k(x: I.f32) -> I.f32:
            return ping(x)
    assert "ping -> pong -> ping" in str(e.value) and "test_dsl_helpers.py" in str(e.value)
    with pytest.raises(I.DSLError, match="calls itself: recursion is not supported"):
        @I.kernel
        def k2(x: I.f32) -> I.f32:
            return itself(x)


def test_arguments_are_typed_at_the_call():
    with pytest.raises(I.DSLError, match=r"parameter 'v' of gelu_tanh\(\) must be f32, got f16"):
        @I.kernel
        def k(x: I.f16) -> I.f16:
            return gelu_tanh(x)
    with pytest.raises(I.DSLError, match=r"parameter 'y' of scale_row\(\) must be "
                                         r"I.Buffer\[I.f32, 4\]"):
        @I.kernel
        def k2(x: I.Tensor[I.f32, 4]):
            scale_row(x, x, 1.0)
    with pytest.raises(I.DSLError, match=r"scale_row\(\) needs the argument 's'"):
        @I.kernel
        def k3(x: I.Tensor[I.f32, 4], y: I.Buffer[I.f32, 4]):
            scale_row(x, y)
    with pytest.raises(I.DSLError, match="is called from inside a kernel"):
        gelu_tanh(1.0)


@I.func
def bad_body(v):
    return v + undefined_name     # noqa: F821


def test_an_error_inside_a_helper_points_into_the_helper():
    with pytest.raises(I.DSLError, match="name 'undefined_name' is not defined") as e:
        @I.kernel
        def k(x: I.f32) -> I.f32:
            return bad_body(x)
    assert "return v + undefined_name" in str(e.value)
