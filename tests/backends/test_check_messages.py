"""Bounds checks: ``lower`` turns each run-time guard into a ``check`` op whose message
formats the run-time index and sizes, and every backend reports the interpreter's text.

Each case runs the input IR in the interpreter (the oracle), the lowered IR in the
interpreter, the CPU kernel and the host C kernel, and compares the exact message.
"""
from __future__ import annotations

import numpy as np
import pytest

import ninfer_ir as I
from ninfer_ir.backends.interp.interpreter import interpret
from ninfer_ir.passes import lower

LOAD = """func @f(%x: tensor<f32[K]>, %i: index, %y: buffer<f32[4]>) {
  %v = load(%x, %i) : f32
  %c0 = constant() {value = 0} : index
  store(%v, %y, %c0)
  return()
}
"""
STORE = """func @f(%x: tensor<f32[K]>, %i: index, %y: buffer<f32[4]>) {
  %c0 = constant() {value = 0} : index
  %v = load(%x, %c0) : f32
  store(%v, %y, %i)
  return()
}
"""
SUBVIEW_INDEX = """func @f(%x: tensor<f32[M,K]>, %i: index, %y: buffer<f32[4]>) {
  %r = subview(%x, %i) {axes = "i:"} : tensor<f32[K]>
  %s = reduce(%r) {kind = "add"} : tensor<f32[]>
  %v = load(%s) : f32
  %c0 = constant() {value = 0} : index
  store(%v, %y, %c0)
  return()
}
"""
SUBVIEW_RANGE = """func @f(%x: tensor<f32[K]>, %i: index, %y: buffer<f32[4]>) {
  %c1 = constant() {value = 1} : index
  %c3 = constant() {value = 3} : index
  %j = add(%i, %c3) : index
  %e = subview(%x, %i, %j, %c1) {axes = "r"} : tensor<f32[?]>
  %s = reduce(%e) {kind = "add"} : tensor<f32[]>
  %v = load(%s) : f32
  %c0 = constant() {value = 0} : index
  store(%v, %y, %c0)
  return()
}
"""
COPY = """func @f(%x: tensor<f32[M,K]>, %i: index, %y: buffer<f32[2,N]>) {
  copy(%x, %y)
  return()
}
"""

CASES = [
    ("load", LOAD, lambda i: (np.arange(5, dtype=np.float32), np.int64(i),
                              np.zeros(4, np.float32)), [7, -2, 5],
     "'load': index {i} is out of range for axis 0 of size 5"),
    ("store", STORE, lambda i: (np.arange(5, dtype=np.float32), np.int64(i),
                                np.zeros(4, np.float32)), [4, -1, 9],
     "'store': index {i} is out of range for axis 0 of size 4"),
    ("subview_index", SUBVIEW_INDEX,
     lambda i: (np.ones((3, 4), np.float32), np.int64(i), np.zeros(4, np.float32)), [3, -3],
     "'subview': index {i} is out of range for axis 0 of size 3"),
    ("subview_range", SUBVIEW_RANGE,
     lambda i: (np.arange(6, dtype=np.float32), np.int64(i), np.zeros(4, np.float32)), [4, -1],
     "'subview': range ({i}, {j}, 1) is out of bounds for axis 0 of size 6 (needs 0 <= start "
     "<= stop <= 6 and step >= 1)"),
    ("copy", COPY, lambda i: (np.ones((2, 3), np.float32), np.int64(0),
                              np.zeros((2, i), np.float32)), [4, 2],
     "'copy': cannot copy shape [2, 3] into [2, {i}]: sizes differ on axis 1"),
]


def _message(fn, args):
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    with pytest.raises(I.DomainError) as info:
        fn(*args)
    return str(info.value)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_check_messages_carry_the_interpreters_numbers(case):
    name, text, make, bad, want = case
    module = I.parse(text)
    lowered, _ = lower(module)
    checks = [op for op in lowered.walk() if op.name == "check"]
    assert checks and all(len(op.operands) > 1 for op in checks), str(lowered)
    assert I.parse(str(lowered)).funcs[0] is not None
    cpu = I.compile(module, "cpu")
    try:
        from ninfer_ir.backends.clike.host import HostKernel
        host = HostKernel(module)
    except I.TargetUnavailable:
        host = None
    for i in bad:
        expected = want.format(i=i, j=i + 3)
        assert _message(lambda *a: interpret(module, *a), make(i)) == expected
        assert _message(lambda *a: interpret(lowered, *a), make(i)) == expected
        assert _message(cpu, make(i)) == expected
        if host is not None:
            assert _message(host, make(i)) == expected


@pytest.mark.gpu
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_cuda_check_messages_are_the_interpreters(case):
    from ninfer_ir.backends.cuda.runtime import gpu_available
    if not gpu_available()[0]:
        pytest.skip("no CUDA GPU")
    name, text, make, bad, want = case
    kernel = I.compile(I.parse(text), "cuda")
    for i in bad:
        assert _message(kernel, make(i)) == want.format(i=i, j=i + 3)


def test_a_check_formats_only_its_own_values():
    bad = """func @f(%c: bool, %i: index) {
  check(%c, %i) {message = "index {0} of {1}"}
  return()
}
"""
    with pytest.raises(I.VerifyError, match="names value"):
        I.parse(bad).verify()
    plain = """func @f(%c: bool) {
  check(%c) {message = "user text {0} stays"}
  return()
}
"""
    m = I.parse(plain)
    with pytest.raises(I.DomainError, match=r"^user text \{0\} stays$"):
        interpret(m, False)
    with pytest.raises(I.DomainError, match=r"^user text \{0\} stays$"):
        I.compile(m, "cpu")(False)
