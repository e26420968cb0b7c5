"""Every kernel of the shared registry through the pass pipeline and the CPU backend:
compiled == interpreter (on the same loop-level module, and on the source kernel)
bit for bit; plus the thread pools under repeated and concurrent use."""
import threading

import numpy as np
import pytest

import ninfer_ir as I
from ninfer_ir.backends.interp import interpret
from ninfer_ir.backends.llvm.runtime.launcher import compile_module
from tests.kernels import KERNELS, assert_same_bits, outputs


@pytest.mark.parametrize("name", sorted(KERNELS))
@pytest.mark.parametrize("threads", [1, 2])
def test_registry_kernel_compiled_equals_interpreted(name, threads):
    case = KERNELS[name]
    lowered = I.lower(case.kernel, "cpu")
    kernel = compile_module(lowered, threads=threads)
    runs = []
    for run in (lambda *a: I.interpret(case.kernel, *a), lambda *a: interpret(lowered, *a),
                kernel):
        inputs = case.make_inputs(np.random.default_rng(0), **case.default_dims)
        before = [a.copy() for a, t in zip(inputs, case.kernel.func.arg_types)
                  if isinstance(a, np.ndarray) and not isinstance(t, I.BufferType)]
        runs.append(outputs(case, inputs, run(*inputs)))
        after = [a for a, t in zip(inputs, case.kernel.func.arg_types)
                 if isinstance(a, np.ndarray) and not isinstance(t, I.BufferType)]
        for b, a in zip(before, after):
            assert_same_bits(a, b)
    source, loop_level, compiled = runs
    for got, want in zip(compiled, loop_level):
        assert_same_bits(got, want)
    for got, want in zip(compiled, source):
        assert_same_bits(got, want)


PAR = """func @scale(%x: tensor<f64[N]>, %k: f64, %y: buffer<f64[N]>) {
  %c0 = constant() {value = 0} : index
  %c1 = constant() {value = 1} : index
  %n = dim(%x) {axis = 0} : index
  for(%c0, %n, %c1) {parallel = true} ({
  ^(%i: index):
    %v = load(%x, %i) : f64
    %w = mul(%v, %k) : f64
    %ci = cast(%i) {to = f64} : f64
    %s = add(%w, %ci) : f64
    store(%s, %y, %i)
    yield()
  })
  return()
}"""


@pytest.mark.parametrize("native", [True, False])
def test_pools_under_repeated_and_concurrent_calls(native):
    kernel = compile_module(I.parse(PAR), threads=2, native_threads=native)
    failures = []

    def worker(seed):
        rng = np.random.default_rng(seed)
        for _ in range(150):
            n = int(rng.integers(0, 300))
            x = rng.standard_normal(n)
            k = float(rng.standard_normal())
            y = np.zeros(n)
            kernel(x, k, y)
            if not np.array_equal(y, x * k + np.arange(n)):
                failures.append(seed)
    threads = [threading.Thread(target=worker, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert not failures
