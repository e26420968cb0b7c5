"""An elementwise producer fused into quantize's input reads (record by record, with a
record base) gives the interpreter's records, results and DomainError record on every
backend: compiled CPU code, and the shared C-like emitter built as host C."""
import numpy as np
import pytest

import ninfer_ir as I
from ninfer_ir.backends.clike.host import HostKernel
from ninfer_ir.backends.cuda.emitter import emit as emit_cuda
from tests.passes.ir_kernels import SCALED_QUANTIZE


def _inputs(rng, n=5, g=3):
    w = rng.integers(0, 256, (n, g, 144), dtype=np.uint8)
    d = (rng.standard_normal((n, g, 2)) * 1e-2).astype(np.float16)
    w[:, :, 0:4] = d.view(np.uint8).reshape(n, g, 4)
    x = rng.standard_normal((g, 256)).astype(np.float32)
    return w, x, np.float32(-0.75)


def _runners(module):
    lowered = I.lower(module)
    return {"interp": lambda *a: I.interpret(module, *a),
            "cpu": I.compile(module, target="cpu"),
            "host-c": HostKernel(lowered)}


@pytest.mark.parametrize("g", [1, 3, 7])
def test_results_and_records_are_bit_identical(g):
    module = I.parse(SCALED_QUANTIZE)
    w, x, s = _inputs(np.random.default_rng(g), g=g)
    got = {}
    for name, run in _runners(module).items():
        y = np.zeros(w.shape[0], np.float32)
        records = run(w, x, s, y)
        got[name] = (y.view(np.uint32).tobytes(), np.asarray(records).tobytes())
    assert got["cpu"] == got["interp"] and got["host-c"] == got["interp"]
    expect = I.quantize(-(x * s), format=I.quant.q8_k)
    assert got["interp"][1] == expect.tobytes()


@pytest.mark.parametrize("bad", [0, 4, 6])
def test_domain_error_names_the_same_record(bad):
    module = I.parse(SCALED_QUANTIZE)
    w, x, s = _inputs(np.random.default_rng(bad), g=7)
    x[bad, 17] = np.inf
    x[6, 3] = np.nan                      # a later failing record never wins
    for name, run in _runners(module).items():
        with pytest.raises(I.DomainError) as info:
            run(w, x, s, np.zeros(w.shape[0], np.float32))
        assert info.value.record == bad, name
        assert str(info.value) == f"quantize q8_k: record {bad}: input holds NaN or inf"


def test_cuda_source_of_the_fused_quantize_compiles_exactly():
    ptx = emit_cuda(I.lower(I.parse(SCALED_QUANTIZE)), kind="ptx")
    assert "fma.rn.f32" not in ptx and ".ftz" not in ptx
