"""``ninfer_ir.testing``: the helpers a user's own test suite calls."""
import time

import numpy as np
import pytest

import ninfer_ir as I
from ninfer_ir.passes import default_passes
from ninfer_ir.passes.manager import Pass
from ninfer_ir.q4k import RECORD_BYTES
from ninfer_ir.testing import (DEFAULT_DIM, assert_same_bits, bench, bisect_passes,
                               compare_targets, random_inputs)


@I.kernel
def gemv(w: I.Tensor[I.u8, "N", "G", 144], x: I.Tensor[I.f32, "G", 256],
         y: I.Buffer[I.f32, "N"]):
    xq = I.quantize(x, format=I.quant.q8_k)
    for n in I.range(w.shape[0]):
        y[n] = I.quantized_dot(w[n], xq, lhs_format=I.quant.q4_k,
                               rhs_format=I.quant.q8_k, acc_dtype=I.f32)


@I.kernel
def shifted(x: I.Tensor[I.f32, "N"], bias: I.f32, y: I.Buffer[I.f32, "N"]):
    for i in I.range(x.shape[0]):
        y[i] = x[i] + bias + 0.5


# --- assert_same_bits ------------------------------------------------------------------

def test_same_bits_passes_on_equal_arrays_and_any_nan_for_a_nan():
    a = np.array([1.0, -0.0, np.nan, np.inf], np.float32)
    b = a.copy()
    b.view(np.uint32)[2] = 0xFFC00001              # another NaN: sign and payload free
    assert_same_bits(b, a)
    assert_same_bits(np.int8(3), np.int8(3))


@pytest.mark.parametrize("actual, expected, words", [
    (np.float32([0.0]), np.float32([-0.0]), "first at [0]"),
    (np.float32([1.0, 2.0]), np.float32([1.0, np.float32(2.0) + np.float32(2 ** -22)]),
     "1 of 2 values differ; first at [1]"),
    (np.float32([1.0]), np.float32([np.nan]), "first at [0]"),        # a NaN must stay NaN
    (np.float32([np.nan]), np.float32([1.0]), "first at [0]"),
    (np.float32([1.0]), np.float64([1.0]), "float32[1] against float64[1]"),
    (np.zeros((2, 3), np.int32), np.zeros((3, 2), np.int32), "int32[2, 3] against int32[3, 2]"),
    (np.uint16([0x7FC1]), np.uint16([0x7FC0]), "first at [0]"),       # bf16 words: exact
])
def test_same_bits_names_the_first_difference(actual, expected, words):
    with pytest.raises(AssertionError, match=words.replace("[", r"\[").replace("]", r"\]")):
        assert_same_bits(actual, expected)


def test_same_bits_takes_array_protocol_objects():
    class Exported:
        def __init__(self, a):
            self._a = a

        @property
        def __array_interface__(self):
            return self._a.__array_interface__
    assert_same_bits(Exported(np.arange(3, dtype=np.int16)), np.arange(3, dtype=np.int16))
    with pytest.raises(AssertionError):
        assert_same_bits(Exported(np.arange(3, dtype=np.int16)), np.ones(3, np.int16))


# --- random_inputs ---------------------------------------------------------------------

def test_random_inputs_follow_the_annotations():
    w, x, y = random_inputs(gemv, dims={"N": 5, "G": 2}, seed=3)
    assert w.shape == (5, 2, RECORD_BYTES) and w.dtype == np.uint8
    assert x.shape == (2, 256) and x.dtype == np.float32
    assert y.shape == (5,) and not y.any()
    # valid Q4_K records: finite f16 scales in the first four bytes
    assert np.isfinite(w[..., :4].copy().view(np.float16)).all()
    again = random_inputs(gemv, dims={"N": 5, "G": 2}, seed=3)
    assert all(np.array_equal(a, b) for a, b in zip((w, x, y), again))
    other = random_inputs(gemv, dims={"N": 5, "G": 2}, seed=4)
    assert not np.array_equal(x, other[1])


def test_random_inputs_defaults_and_scalars():
    x, bias, y = random_inputs(shifted, dims={"bias": 2.0})
    assert x.shape == (DEFAULT_DIM,) and bias == np.float32(2.0) and bias.dtype == np.float32
    with pytest.raises(I.VerifyError, match="dim names M, which the kernel does not have"):
        random_inputs(shifted, dims={"M": 3})
    with pytest.raises(I.VerifyError, match="a size must be a non-negative integer"):
        random_inputs(shifted, dims={"N": -1})


# --- compare_targets ---------------------------------------------------------------------

def test_compare_targets_returns_the_outputs_and_leaves_the_arguments():
    args = random_inputs(gemv, dims={"N": 6, "G": 1}, seed=0)
    keep = [a.copy() for a in args]
    out = compare_targets(gemv, *args, targets=("interp", "cpu"))
    assert [name for name, _ in out] == ["y"]
    want = np.zeros(6, np.float32)
    I.interpret(gemv, args[0], args[1], want)
    assert_same_bits(out[0][1], want)
    for a, b in zip(args, keep):
        assert_same_bits(a, b)


def test_compare_targets_catches_a_target_that_differs(monkeypatch):
    import ninfer_ir.api as api
    original = api.compile

    def off_by_one_ulp(kernel, target="cpu", **options):
        run = original(kernel, target=target, **options)
        if target != "cpu":
            return run

        def call(*args):
            run(*args)
            args[-1].view(np.uint32)[2] ^= 1
        return call
    monkeypatch.setattr(api, "compile", off_by_one_ulp)
    args = random_inputs(shifted, dims={"N": 4})
    with pytest.raises(AssertionError, match=r"cpu against interp: y: 1 of 4 values differ; "
                                             r"first at \[2\]"):
        compare_targets(shifted, *args)


def test_compare_targets_raises_a_shared_domain_error():
    args = random_inputs(gemv, dims={"N": 2, "G": 1}, seed=0)
    args[1][0, 5] = np.nan                         # quantize refuses NaN on every target
    with pytest.raises(I.DomainError, match="NaN"):
        compare_targets(gemv, *args)


# --- bench -------------------------------------------------------------------------------------

class FakeClock:
    """``time.perf_counter`` for ``bench``: a call of ``work(seconds)`` takes exactly that
    long (so the tests do not depend on the machine's load)."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def work(self, seconds):
        self.now += seconds


@pytest.fixture
def clock(monkeypatch):
    fake = FakeClock()
    monkeypatch.setattr(time, "perf_counter", fake)
    return fake


def test_bench_grows_the_batch_then_stops_once_stable(clock):
    t = bench(clock.work, 0.002, min_batch=0.005, min_batches=5)
    assert t.number == 5                            # 1 and 2 calls are under 5 ms
    assert t.batches == 5 and t.stable              # identical batches: stable at once
    assert t.median == pytest.approx(0.002) and t.best == pytest.approx(0.002)
    assert t.spread == pytest.approx(0.0, abs=1e-9)
    assert "2.00 ms median" in str(t) and "5 batches of 5 call(s)" in str(t)


def test_bench_reports_the_spread_and_runs_until_it_settles(clock):
    costs = iter([0.001] * 3 + [0.004, 0.001] * 3 + [0.001] * 100)

    def jittery():
        clock.work(next(costs))
    t = bench(jittery, min_batch=0.0, rel_spread=0.05, min_batches=5)
    # the 4 ms calls keep the spread of the last five batches high; it settles after them
    assert t.stable and t.batches > 5 and t.median == pytest.approx(0.001)
    assert t.best == pytest.approx(0.001)


def test_bench_stops_at_max_time_when_the_timing_does_not_settle(clock):
    state = {"k": 0}

    def slower_each_time():
        state["k"] += 1
        clock.work(0.0005 * state["k"])
    t = bench(slower_each_time, min_batch=0.0, rel_spread=0.01, max_time=0.3)
    assert not t.stable and t.spread > 0.01
    assert 0.3 < clock.now < 0.3 + 0.0005 * (state["k"] + 1) * 2   # stopped at max_time


# --- bisect_passes ---------------------------------------------------------------------------

class ChangeAConstant(Pass):
    """A deliberately wrong pass: 0.5 becomes 0.25."""
    name = "change-constant"

    def run(self, module):
        for op in module.walk():
            if op.name == "constant" and op.attrs.get("value") == 0.5:
                op.attrs["value"] = 0.25
        return {}


def test_bisect_names_the_pass_that_changes_the_bits():
    passes = default_passes("cpu")
    passes.insert(5, ChangeAConstant())            # after dce, before materialize
    result = bisect_passes(shifted, passes=passes, dims={"N": 8})
    assert result.found
    assert (result.stage, result.pass_name) == ("06-change-constant", "change-constant")
    assert "value = 0.5" in result.before and "value = 0.5" not in result.after
    assert "value = 0.25" in result.after
    assert "-" in result.diff() and "+" in result.diff()
    assert "y: 8 of 8 values differ" in result.problem


def test_bisect_finds_nothing_in_the_real_pipeline():
    result = bisect_passes(gemv, dims={"N": 3, "G": 2})
    assert not result.found and result.stages == len(default_passes("cpu")) + 1
    assert "no pass changed the bits" in str(result)


def test_bisect_reports_a_pass_whose_output_does_not_verify():
    class Break(Pass):
        name = "break"

        def run(self, module):
            op = next(o for o in module.walk() if o.name == "constant"
                      and o.attrs.get("value") == 0.5)
            op.attrs["value"] = "half"              # a f32 constant must hold a number
            return {}
    result = bisect_passes(shifted, passes=[Break()])
    assert result.found and result.pass_name == "break"
    assert result.problem.startswith("PassError")
