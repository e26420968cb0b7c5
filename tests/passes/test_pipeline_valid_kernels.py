"""Valid kernels the interpreter runs compile on every target with the same bits:
static-length slices whose bounds fold to constants (``canonicalize``), and f16
elementwise temporaries read last by an op that has its own buffer (``materialize``
frees a buffer after the copy that computes its last reader)."""
import numpy as np
import pytest

import ninfer_ir as I
from ninfer_ir.backends.clike.host import HostKernel
from ninfer_ir.passes.canonicalize import Canonicalize
from ninfer_ir.passes.cse import CSE
from ninfer_ir.passes.dce import DCE
from ninfer_ir.passes.fuse import Fuse
from ninfer_ir.passes.licm import LICM
from ninfer_ir.passes.materialize import Materialize, needs_buffer
from ninfer_ir.passes.pipeline import lower


@I.kernel
def slice_in_one_trip_loop(a: I.Tensor[I.f32, 4], o: I.Buffer[I.f32, 1]):
    for i in range(1):
        o[i] = I.sum(a[i:3])


@I.kernel
def slice_start_times_zero(a: I.Tensor[I.f32, 4], s: I.index, o: I.Buffer[I.f32]):
    o[()] = I.sum(a[s * 0:2])


@I.kernel
def slice_start_minus_itself(a: I.Tensor[I.f32, 4], s: I.index, o: I.Buffer[I.f32]):
    o[()] = I.sum(a[s - s:2])


@I.kernel
def slice_of_length_zero(a: I.Tensor[I.f32, 4], s: I.index, o: I.Buffer[I.f32]):
    o[()] = I.sum(a[s:s + 0])


@I.kernel
def gemm_then_f16_tree_dot(a: I.Tensor[I.f32, "M", "K"], b: I.Tensor[I.f32, "K", "N"],
                           h: I.Tensor[I.f16, "N"], c: I.Buffer[I.f32, "M", "N"],
                           y: I.Buffer[I.f32, "M"]):
    for m in I.range(a.shape[0]):
        for n in I.range(b.shape[1]):
            c[m, n] = I.dot(a[m], b[:, n])
    t = h * h
    u = I.cast(t + t * h, I.f32)
    for m in I.range(a.shape[0]):
        y[m] = I.dot(c[m], u, order="chunk<32>/tree")


@I.kernel
def f16_temporaries_tree_dot(h: I.Tensor[I.f16, "N"], y: I.Buffer[I.f32, 1]):
    t = h * h
    u = t + h
    y[0] = I.dot(I.cast(u, I.f32), I.cast(t, I.f32), order="chunk<32>/tree")


def _slice_args(rng):
    return [rng.standard_normal(4).astype(np.float32), 2, np.zeros((), np.float32)]


CASES = {
    "slice_in_one_trip_loop": (slice_in_one_trip_loop,
                               lambda rng: [rng.standard_normal(4).astype(np.float32),
                                            np.zeros(1, np.float32)]),
    "slice_start_times_zero": (slice_start_times_zero, _slice_args),
    "slice_start_minus_itself": (slice_start_minus_itself, _slice_args),
    "slice_of_length_zero": (slice_of_length_zero, _slice_args),
    "gemm_then_f16_tree_dot": (gemm_then_f16_tree_dot,
                               lambda rng: [rng.standard_normal((5, 7)).astype(np.float32),
                                            rng.standard_normal((7, 70)).astype(np.float32),
                                            rng.standard_normal(70).astype(np.float16),
                                            np.zeros((5, 70), np.float32),
                                            np.zeros(5, np.float32)]),
    "f16_temporaries_tree_dot": (f16_temporaries_tree_dot,
                                 lambda rng: [rng.standard_normal(100).astype(np.float16),
                                              np.zeros(1, np.float32)]),
}


def _runners(kernel):
    yield "cpu-1", I.compile(kernel, "cpu", threads=1)
    yield "cpu-2", I.compile(kernel, "cpu", threads=2)
    yield "host-c", HostKernel(I.lower(kernel))


def _copies(args):
    return [x.copy() if isinstance(x, np.ndarray) else x for x in args]


def _same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("name", list(CASES))
def test_every_target_compiles_and_matches_the_interpreter(name):
    kernel, make = CASES[name]
    args = make(np.random.default_rng(5))
    want = _copies(args)
    I.interpret(kernel, *want)
    for target, run in _runners(kernel):
        got = _copies(args)
        run(*got)
        for g, w in zip(got, want):
            if isinstance(w, np.ndarray):
                assert _same(g, w), (name, target)
    assert "__global__" in I.emit(kernel, target="cuda", kind="cuda")


def test_static_slice_sums_are_the_expected_values():
    a = np.array([1.5, 2.25, 4.0, 8.0], np.float32)
    o = np.zeros(1, np.float32)
    I.compile(slice_in_one_trip_loop, "cpu")(a, o)
    assert o[0] == np.float32(1.5 + 2.25 + 4.0)
    s = np.zeros((), np.float32)
    I.compile(slice_start_minus_itself, "cpu")(a, 3, s)
    assert s == np.float32(3.75)


def test_a_buffer_is_freed_after_the_copy_that_computes_its_last_reader():
    passes = [Canonicalize(), CSE(), LICM(), DCE(), Fuse(), Materialize()]
    for kernel in (f16_temporaries_tree_dot, gemm_then_f16_tree_dot):
        module, _ = lower(kernel.ir, passes=passes)
        ops = list(module.funcs[0].body.ops)
        computed = [k for k, op in enumerate(ops) if needs_buffer(op)]
        assert computed
        for k in computed:
            nxt = ops[k + 1]
            assert nxt.name == "copy" and nxt.operands[0] is ops[k].result, str(module)
