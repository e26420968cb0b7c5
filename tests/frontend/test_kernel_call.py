"""Calling an ``@I.kernel`` directly: compiled on first use per argument signature,
sent to ``I.config.target`` / ``NINFER_TARGET``."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ninfer_ir as I
from ninfer_ir.testing import assert_same_bits

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@I.kernel
def axpy(a: I.f32, x: I.Tensor[I.f32, "N"], y: I.Buffer[I.f32, "N"]):
    for i in I.range(x.shape[0]):
        y[i] = a * x[i] + y[i]


@I.kernel
def row_sums(m: I.Tensor[I.f32, "R", "C"]) -> I.Tensor[I.f32, "R"]:
    return I.sum(m)


@I.kernel
def needs_even(x: I.Tensor[I.f32, "N"], y: I.Buffer[I.f32, "N"]):
    assert x.shape[0] % 2 == 0, "N must be even"
    for i in I.range(x.shape[0]):
        y[i] = x[i]


@pytest.fixture(autouse=True)
def default_config(monkeypatch):
    monkeypatch.delenv("NINFER_TARGET", raising=False)
    monkeypatch.delenv("NINFER_THREADS", raising=False)
    saved = (I.config._target, I.config._threads, I.config.specialize)
    yield
    I.config._target, I.config._threads, I.config.specialize = saved


def oracle(kernel, *args):
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    return I.interpret(kernel, *args), args


def test_a_call_compiles_for_cpu_and_gives_the_interpreters_bits():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(37).astype(np.float32)
    y = rng.standard_normal(37).astype(np.float32)
    _, (_, _, want) = oracle(axpy, np.float32(1.5), x, y)
    axpy.overloads.clear()
    assert axpy(np.float32(1.5), x, y) is None
    assert_same_bits(y, want)
    assert [k[0] for k in axpy.overloads] == ["cpu"]


def test_each_signature_compiles_once_and_is_reused():
    axpy.overloads.clear()
    x = np.ones(8, np.float32)
    y = np.zeros(8, np.float32)
    axpy(np.float32(2), x, y)
    first = dict(axpy.overloads)
    axpy(np.float32(3), x + 1, y)                    # same signature: no new entry
    assert axpy.overloads == first
    axpy(np.float32(3), np.ones(9, np.float32), np.zeros(9, np.float32))   # new shape
    axpy(np.float32(3), np.ones(16, np.float32)[::2], y)                    # strided
    keys = [k[2] for k in axpy.overloads]
    assert len(keys) == 3
    assert {k[1][1:] for k in keys} == {((8,), "contiguous"), ((9,), "contiguous"),
                                        ((8,), "strided")}
    assert all(k[0] == ("<f4",) for k in keys)       # the scalar's dtype
    # contiguous and strided calls of one shape share one compiled kernel
    by_key = {k[2][1]: v for k, v in axpy.overloads.items()}
    assert by_key[("<f4", (8,), "contiguous")] is by_key[("<f4", (8,), "strided")]


def test_the_compiled_kernel_is_specialized_to_the_call_sizes():
    axpy.overloads.clear()
    axpy(np.float32(1), np.ones(5, np.float32), np.zeros(5, np.float32))
    func = axpy.specialized({"N": 5}).funcs[0]
    assert [str(a.type) for a in func.args[1:]] == ["tensor<f32[5]>", "buffer<f32[5]>"]
    assert "f32[N]" in str(axpy.ir)                  # the kernel itself stays generic


def test_without_specialization_one_compilation_serves_every_shape():
    I.config.specialize = False
    axpy.overloads.clear()
    for n in (3, 4, 5):
        axpy(np.float32(1), np.ones(n, np.float32), np.zeros(n, np.float32))
    assert len(set(map(id, axpy.overloads.values()))) == 1


def test_a_specialization_the_frontend_refuses_fails_like_the_generic_kernel():
    x = np.ones(3, np.float32)
    with pytest.raises(I.DomainError) as want:
        I.interpret(needs_even, x, np.zeros(3, np.float32))
    with pytest.raises(I.DomainError) as got:
        needs_even(x, np.zeros(3, np.float32))
    assert str(got.value) == str(want.value)
    y = np.zeros(4, np.float32)
    needs_even(np.arange(4, dtype=np.float32), y)
    assert_same_bits(y, np.arange(4, dtype=np.float32))


def test_returned_values_and_keyword_arguments():
    m = np.random.default_rng(1).standard_normal((3, 7)).astype(np.float32)
    assert_same_bits(row_sums(m), I.interpret(row_sums, m))
    assert_same_bits(row_sums(m=m), I.interpret(row_sums, m))


def test_a_bad_call_gets_the_interpreters_error():
    x, y = np.ones(4, np.float32), np.zeros(5, np.float32)
    with pytest.raises(I.VerifyError) as want:
        I.interpret(axpy, np.float32(1), x, y)
    with pytest.raises(I.VerifyError) as got:
        axpy(np.float32(1), x, y)
    assert str(got.value) == str(want.value)
    with pytest.raises(I.VerifyError, match="float64"):
        axpy(np.float32(1), np.ones(4), np.zeros(4))


def test_config_target_interp_sends_calls_to_the_interpreter(monkeypatch):
    import ninfer_ir.api as api
    compiled = []
    original = api.compile
    monkeypatch.setattr(api, "compile", lambda k, target="cpu", **kw:
                        compiled.append(target) or original(k, target, **kw))
    I.config.target = "interp"
    axpy.overloads.clear()
    y = np.zeros(4, np.float32)
    axpy(np.float32(2), np.ones(4, np.float32), y)
    assert compiled == ["interp"] and list(axpy.overloads) == ["interp"]
    assert_same_bits(y, np.full(4, 2, np.float32))


def test_config_rejects_unknown_targets_and_threads(monkeypatch):
    with pytest.raises(I.NinferError, match="unknown target 'gpu'"):
        I.config.target = "gpu"
    with pytest.raises(I.NinferError, match="positive int"):
        I.config.threads = 0
    monkeypatch.setenv("NINFER_TARGET", "tpu")
    with pytest.raises(I.NinferError, match="NINFER_TARGET='tpu'"):
        axpy(np.float32(1), np.ones(2, np.float32), np.zeros(2, np.float32))
    monkeypatch.delenv("NINFER_TARGET")
    I.config.threads = 2
    assert I.config.threads == 2 and "threads=2" in repr(I.config)


SCRIPT = textwrap.dedent("""
    import numpy as np
    import ninfer_ir as I

    @I.kernel
    def double(x: I.Tensor[I.f32, "N"], y: I.Buffer[I.f32, "N"]):
        for i in I.range(x.shape[0]):
            y[i] = x[i] + x[i]

    y = np.zeros(3, np.float32)
    double(np.arange(3, dtype=np.float32), y)
    print(I.config.target, list(y), [k if isinstance(k, str) else k[0]
                                     for k in double.overloads])
""")


@pytest.mark.parametrize("env, want", [({}, "cpu"), ({"NINFER_TARGET": "interp"}, "interp")])
def test_ninfer_target_environment_variable(tmp_path, env, want):
    path = tmp_path / "user_script.py"
    path.write_text(SCRIPT)
    full = {k: v for k, v in os.environ.items() if k != "NINFER_TARGET"}
    full.update(env, PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, str(path)], env=full, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [want, "[np.float32(0.0),", "np.float32(2.0),",
                                "np.float32(4.0)]", f"['{want}']"]
