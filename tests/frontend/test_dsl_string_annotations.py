"""Kernels in a module with postponed annotations (strings) compile the same way."""
from __future__ import annotations

import numpy as np

import ninfer_ir as I
from tests.kernels import assert_same_bits

WIDTH = 4


def test_string_annotations_are_evaluated():
    @I.kernel
    def k(x: I.Tensor[I.f32, "N", WIDTH], y: I.Buffer[I.f32, "N"], s: I.f32) -> I.f32:
        for i in I.range(x.shape[0]):
            y[i] = I.sum(x[i]) * s
        return s
    assert str(k.ir).startswith(
        "func @k(%x: tensor<f32[N,4]>, %y: buffer<f32[N]>, %s: f32) -> (f32) {")
    x = np.ones((2, 4), np.float32)
    y = np.zeros(2, np.float32)
    assert_same_bits(I.interpret(k, x, y, np.float32(2.0)), np.float32(2.0))
    assert_same_bits(y, np.full(2, 8.0, np.float32))


def test_annotation_naming_a_local_of_the_enclosing_function():
    rows = 3

    @I.kernel
    def k(x: I.Tensor[I.f32, rows], y: I.Buffer[I.f32, rows]):
        y[:] = x
    assert "tensor<f32[3]>" in str(k.ir)
