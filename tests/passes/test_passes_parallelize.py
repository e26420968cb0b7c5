"""parallelize (cuda pipeline): independent loops are marked parallel, nothing else is,
and the marked IR computes the same bits."""
import numpy as np

import ninfer_ir as I
from ninfer_ir.backends.clike.host import HostKernel
from ninfer_ir.passes import lower
from tests.kernels import KERNELS as REGISTRY
from tests.passes.harness import make_args
from tests.passes.ir_kernels import GEMV


def _loops(module):
    return [op for op in module.walk() if op.name == "for"]


def test_gemv_row_loop_becomes_parallel_for_cuda_only():
    cuda, rep = lower(I.parse(GEMV), target="cuda")
    (loop,) = _loops(cuda)
    assert loop.attrs.get("parallel") is True
    assert [r.stats for r in rep.passes if r.name == "parallelize"] == [{"parallel": 1}]
    cpu, _ = lower(I.parse(GEMV), target="cpu")
    assert all(not op.attrs.get("parallel") for op in _loops(cpu))


GEMM_LIKE = """func @rows(%a: tensor<f32[M,K]>, %y: buffer<f32[M,K]>) {
  %c0 = constant() {value = 0} : index
  %c1 = constant() {value = 1} : index
  %m = dim(%a) {axis = 0} : index
  %k = dim(%a) {axis = 1} : index
  for(%c0, %m, %c1) ({
  ^(%i: index):
    for(%c0, %k, %c1) ({
    ^(%j: index):
      %v = load(%a, %i, %j) : f32
      %w = mul(%v, %v) : f32
      store(%w, %y, %i, %j)
      yield()
    })
    yield()
  })
  return()
}
"""

PREFIX_SUM = """func @prefix(%a: tensor<f32[K]>, %y: buffer<f32[K]>) {
  %c0 = constant() {value = 0} : index
  %c1 = constant() {value = 1} : index
  %k = dim(%a) {axis = 0} : index
  %v0 = load(%a, %c0) : f32
  store(%v0, %y, %c0)
  for(%c1, %k, %c1) ({
  ^(%i: index):
    %p = sub(%i, %c1) : index
    %prev = load(%y, %p) : f32
    %v = load(%a, %i) : f32
    %s = add(%prev, %v) : f32
    store(%s, %y, %i)
    yield()
  })
  return()
}
"""

SAME_CELL = """func @same(%a: tensor<f32[K]>, %y: buffer<f32[1]>) {
  %c0 = constant() {value = 0} : index
  %c1 = constant() {value = 1} : index
  %k = dim(%a) {axis = 0} : index
  for(%c0, %k, %c1) ({
  ^(%i: index):
    %v = load(%a, %i) : f32
    store(%v, %y, %c0)
    yield()
  })
  return()
}
"""


def test_only_the_outer_loop_of_a_nest_is_marked():
    m, _ = lower(I.parse(GEMM_LIKE), target="cuda")
    outer, inner = _loops(m)
    assert outer.attrs.get("parallel") is True and not inner.attrs.get("parallel")


def test_dependent_loops_stay_sequential():
    for text in (PREFIX_SUM, SAME_CELL):
        m, _ = lower(I.parse(text), target="cuda")
        assert all(not op.attrs.get("parallel") for op in _loops(m)), text


def test_registry_kernels_compute_the_same_bits_when_parallelized():
    rng = np.random.default_rng(5)
    marked = 0
    for name in ("q4k_gemv", "q4k_gemm", "int4_gemv", "f32_gemv"):
        case = REGISTRY[name]
        module = case.kernel.ir
        lowered, _ = lower(module, target="cuda")
        marked += sum(bool(op.attrs.get("parallel")) for op in _loops(lowered))
        inputs = case.make_inputs(rng, **case.default_dims)
        a = [np.copy(x) if isinstance(x, np.ndarray) else x for x in inputs]
        b = [np.copy(x) if isinstance(x, np.ndarray) else x for x in inputs]
        I.interpret(module, *a)
        HostKernel(lowered)(*b)
        for x, y in zip(a, b):
            if isinstance(x, np.ndarray):
                assert x.tobytes() == y.tobytes(), name
    assert marked >= 3
