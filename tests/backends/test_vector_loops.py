"""Vectorised CPU code gives the interpreter's bits: elementwise loops (odd lengths,
strided views, in-place updates, overlapping views) and ordered float folds, whose
``tree``, ``chunk<K>`` and ``chunk<K>/tree`` orders run on vector lanes
(backends/llvm/gen/vfolds.py), on 1 and 2 threads and on every ISA level the host runs;
float ``max``/``min`` folds (on integer keys) with zeros of both signs, infinities and
NaNs of any sign and payload."""
import numpy as np
import pytest

import ninfer_ir as I
from ninfer_ir.backends.llvm.runtime.jit import ISA_LEVELS
from ninfer_ir.backends.llvm.runtime.launcher import CompiledKernel
from ninfer_ir.numerics.folds import f32_sum_rows
from ninfer_ir.sumorder import SumOrder

# chunk lengths: odd (scalar), 2 and 4 (narrow lanes), multiples of 16 (full AVX-512 lanes)
ORDERS = ("tree", "chunk<2>", "chunk<4>/tree", "chunk<3>", "chunk<16>", "chunk<48>/tree",
          "chunk<64>", "chunk<32>/tree")      # the rows of ``folds``
LENGTHS = (0, 1, 2, 3, 7, 16, 17, 31, 255, 256, 257, 640, 1023, 1537, 2600, 4096)


@I.kernel
def folds(x: I.Tensor[I.f32, "N"], z: I.Tensor[I.f32, "N"], y: I.Buffer[I.f32, 8, 3]):
    y[0, 0] = I.sum(x, order="tree")
    y[0, 1] = I.dot(x, z, order="tree")
    y[0, 2] = I.prod(z, order="tree")
    y[1, 0] = I.sum(x, order="chunk<2>")
    y[1, 1] = I.dot(x, z, order="chunk<2>")
    y[1, 2] = I.prod(z, order="chunk<2>")
    y[2, 0] = I.sum(x, order="chunk<4>/tree")
    y[2, 1] = I.dot(x, z, order="chunk<4>/tree")
    y[2, 2] = I.prod(z, order="chunk<4>/tree")
    y[3, 0] = I.sum(x, order="chunk<3>")
    y[3, 1] = I.dot(x, z, order="chunk<3>")
    y[3, 2] = I.prod(z, order="chunk<3>")
    y[4, 0] = I.sum(x, order="chunk<16>")
    y[4, 1] = I.dot(x, z, order="chunk<16>")
    y[4, 2] = I.prod(z, order="chunk<16>")
    y[5, 0] = I.sum(x, order="chunk<48>/tree")
    y[5, 1] = I.dot(x, z, order="chunk<48>/tree")
    y[5, 2] = I.prod(z, order="chunk<48>/tree")
    y[6, 0] = I.sum(x, order="chunk<64>")
    y[6, 1] = I.dot(x, z, order="chunk<64>")
    y[6, 2] = I.prod(z, order="chunk<64>")
    y[7, 0] = I.sum(x, order="chunk<32>/tree")
    y[7, 1] = I.dot(x, z, order="chunk<32>/tree")
    y[7, 2] = I.prod(z, order="chunk<32>/tree")


MODULE = I.lower(folds, "cpu")


def _levels():
    out = []
    for isa in ISA_LEVELS:
        try:
            CompiledKernel(MODULE, threads=1, isa=isa)
        except I.TargetUnavailable:
            continue
        out.append(isa)
    return out


def _values(rng, n, step, specials=True):
    """Magnitudes from 1e-3 to 1e7 (so that the order changes the sum), specials in
    some draws; ``z`` near 1 so that long products stay finite."""
    x = (rng.standard_normal(n * step) * 10.0 ** rng.integers(-3, 8, n * step)).astype(np.float32)
    z = (1 + rng.standard_normal(n * step) * 1e-2).astype(np.float32)
    if specials and n > 40 and rng.random() < 0.5:
        x[rng.integers(0, n * step, 3)] = [np.inf, -0.0, np.float32(3e38)]
    return x[::step], z[::step]


def same_bits(got, want):
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), (got, want)


def test_ordered_folds_match_the_interpreter():
    """Unit-stride operands take the vector lanes, stride 2 the scalar fold; both give
    the interpreter's bits for every order on every level, 1 and 2 threads."""
    runners = [CompiledKernel(MODULE, threads=t, isa=isa) for isa in _levels() for t in (1, 2)]
    rng = np.random.default_rng(1)
    for n in LENGTHS:
        for step in (1, 2):
            x, z = _values(rng, n, step)
            want = np.zeros((8, 3), np.float32)
            I.interpret(folds, x, z, want)
            for run in runners:
                got = np.zeros((8, 3), np.float32)
                run(x, z, got)
                same_bits(got, want)


def test_the_orders_differ_on_these_inputs():
    """The inputs above tell the orders apart (so the bit checks can fail)."""
    rng = np.random.default_rng(7)
    x, _ = _values(rng, 4096, 1, specials=False)
    sums = {o: f32_sum_rows(x[None, :], SumOrder.parse(o))[0] for o in ORDERS + ("seq",)}
    assert len({s.tobytes() for s in sums.values()}) >= 4


@I.kernel
def folds64(x: I.Tensor[I.f64, "N"], y: I.Buffer[I.f64, 3]):
    y[0] = I.sum(x, order="tree")
    y[1] = I.dot(x, x, order="chunk<8>")
    y[2] = I.sum(x, order="chunk<12>/tree")


def test_f64_folds_on_every_level():
    module = I.lower(folds64, "cpu")
    runners = [CompiledKernel(module, threads=1, isa=isa) for isa in _levels()]
    rng = np.random.default_rng(2)
    for n in (0, 1, 9, 64, 127, 128, 129, 1000, 3001):
        x = rng.standard_normal(n) * 10.0 ** rng.integers(-5, 12, n)
        want = np.zeros(3)
        I.interpret(folds64, x, want)
        for run in runners:
            got = np.zeros(3)
            run(x, got)
            assert np.array_equal(got.view(np.uint64), want.view(np.uint64)), (n, got, want)


@I.kernel
def rows_folds(x: I.Tensor[I.f32, "R", "N"], y: I.Buffer[I.f32, "R"], t: I.Buffer[I.f32, "R"]):
    for r in I.prange(x.shape[0]):
        y[r] = I.sum(x[r], order="chunk<16>/tree")
        t[r] = I.dot(x[r], x[r], order="tree")


def test_folds_over_rows_of_a_matrix_and_its_transpose():
    rng = np.random.default_rng(3)
    m = (rng.standard_normal((37, 1029)) * 100).astype(np.float32)
    for x in (m, m.T[:, :37 * 3], m[:, ::3]):
        want = [np.zeros(x.shape[0], np.float32) for _ in range(2)]
        I.interpret(rows_folds, x, *want)
        for threads in (1, 2):
            got = [np.zeros(x.shape[0], np.float32) for _ in range(2)]
            I.compile(rows_folds, "cpu", threads=threads)(x, *got)
            for g, w in zip(got, want):
                same_bits(g, w)


# --- elementwise loops ------------------------------------------------------------------

@I.kernel
def silu_mul(a: I.Tensor[I.f32, "N"], b: I.Tensor[I.f32, "N"], y: I.Buffer[I.f32, "N"]):
    for i in I.prange(a.shape[0]):
        v = a[i]
        y[i] = v / (I.exp(-v) + 1.0) * b[i] + I.rsqrt(I.abs(v) + 1.0)


@I.kernel
def twice(y: I.Buffer[I.f32, "N"]):
    for i in I.range(y.shape[0]):
        y[i] = y[i] * 2.0


@I.kernel
def running(x: I.Tensor[I.f32, "N"], y: I.Buffer[I.f32, "N"]):
    for i in I.range(1, x.shape[0]):
        y[i] = y[i - 1] * 0.5 + x[i]


@I.kernel
def halves(x: I.Tensor[I.f16, "N"], k: I.Tensor[I.i32, "N"], y: I.Buffer[I.f16, "N"],
           j: I.Buffer[I.i32, "N"]):
    for i in I.range(x.shape[0]):
        y[i] = x[i] * x[i] - 1.0
        j[i] = k[i] * 3 + (k[i] >> 2)


def test_elementwise_math_loop_odd_lengths_and_strides():
    rng = np.random.default_rng(11)
    for n in (1, 15, 17, 1001):
        for step in (1, 3, -1):
            a = (rng.standard_normal(n * 3) * 8).astype(np.float32)[::step][:n]
            b = rng.standard_normal(n * 3).astype(np.float32)[::step][:n]
            want = np.zeros(n, np.float32)
            I.interpret(silu_mul, a, b, want)
            for threads in (1, 2):
                out = np.zeros(2 * n, np.float32)[::2]          # a strided output view
                I.compile(silu_mul, "cpu", threads=threads)(a, b, out)
                same_bits(out, want)


def test_in_place_update_and_a_loop_carried_store():
    rng = np.random.default_rng(12)
    y = rng.standard_normal(1003).astype(np.float32)
    want = y.copy()
    I.interpret(twice, want)
    I.compile(twice, "cpu", threads=1)(y)
    same_bits(y, want)
    base = rng.standard_normal(1030).astype(np.float32)
    x = rng.standard_normal(1025).astype(np.float32)
    for lo in (0, 1, 5):
        want, got = base.copy(), base.copy()
        I.interpret(running, x, want[lo:lo + 1025])
        I.compile(running, "cpu", threads=1)(x, got[lo:lo + 1025])
        same_bits(got, want)


def test_overlapping_buffer_views_keep_the_order_of_the_loop():
    """``y[i] = y[i - 1] * 0.5 + x[i]`` where ``x`` and ``y`` view one array shifted by
    one or more elements: a tensor argument is its value at the call."""
    rng = np.random.default_rng(13)
    for shift in (1, 2, 16, 17):
        base = rng.standard_normal(600).astype(np.float32)
        want, got = base.copy(), base.copy()
        I.interpret(running, want[:500], want[shift:shift + 500])
        I.compile(running, "cpu", threads=1)(got[:500], got[shift:shift + 500])
        same_bits(got, want)


def test_half_and_integer_loops():
    rng = np.random.default_rng(14)
    for n in (5, 33, 1000):
        x = (rng.standard_normal(n) * 30).astype(np.float16)
        k = rng.integers(-2 ** 31, 2 ** 31 - 1, n, dtype=np.int64).astype(np.int32)
        want = [np.zeros(n, np.float16), np.zeros(n, np.int32)]
        I.interpret(halves, x, k, *want)
        got = [np.zeros(n, np.float16), np.zeros(n, np.int32)]
        I.compile(halves, "cpu", threads=1)(x, k, *got)
        assert got[0].tobytes() == want[0].tobytes() and got[1].tobytes() == want[1].tobytes()


@I.kernel
def extremes32(x: I.Tensor[I.f32, "N"], y: I.Buffer[I.f32, 2]):
    y[0] = I.max(x)
    y[1] = I.min(x)


@I.kernel
def extremes16(x: I.Tensor[I.f16, "N"], y: I.Buffer[I.f16, 2]):
    y[0] = I.max(x)
    y[1] = I.min(x)


@I.kernel
def extremes64(x: I.Tensor[I.f64, "N"], y: I.Buffer[I.f64, 2]):
    y[0] = I.max(x)
    y[1] = I.min(x)


def _extremes(kernel, x):
    got, want = np.zeros(2, x.dtype), np.zeros(2, x.dtype)
    I.compile(kernel, "cpu", threads=1)(x, got)
    I.interpret(kernel, x, want)
    return got, want


@pytest.mark.parametrize("kernel,dtype,word", [(extremes16, np.float16, np.uint16),
                                               (extremes32, np.float32, np.uint32),
                                               (extremes64, np.float64, np.uint64)])
def test_float_max_min_folds_match_the_interpreter(kernel, dtype, word):
    rng = np.random.default_rng(21)
    top = 1 << (8 * np.dtype(dtype).itemsize - 1)
    nan = np.array([np.nan], dtype).view(word)
    pool = np.concatenate([np.array([0.0, -0.0, np.inf, -np.inf, 3.0, -3.0], dtype),
                           np.array([np.finfo(dtype).smallest_subnormal], dtype),
                           np.array([-np.finfo(dtype).smallest_subnormal], dtype),
                           nan.view(dtype), (nan | top).view(dtype), (nan + 5).view(dtype)])
    for n in (0, 1, 2, 3, 7, 15, 16, 17, 33, 64, 65, 257):
        for trial in range(12):
            x = rng.choice(pool, size=n) if trial % 2 else rng.standard_normal(n).astype(dtype)
            if trial % 4 == 1:                   # mostly ordinary values, some specials
                x = np.where(rng.random(n) < 0.9, rng.standard_normal(n), x).astype(dtype)
            got, want = _extremes(kernel, x)
            assert got.view(word).tolist() == want.view(word).tolist(), (n, x.view(word))


def test_float_max_min_fold_cases():
    """Hand-checked: -0 < +0; a NaN among two or more elements gives the canonical NaN;
    one element comes back as it is; an empty fold gives -inf / +inf."""
    nan = np.array([np.nan], np.float32).view(np.uint32)[0]
    payload = np.array([nan + 5, 0], np.uint32).view(np.float32)[:1]
    cases = [(np.array([-0.0, 0.0], np.float32), [0x00000000, 0x80000000]),
             (np.array([0.0, -0.0], np.float32), [0x00000000, 0x80000000]),
             (np.array([1.0, np.nan, 2.0], np.float32), [nan, nan]),
             (np.concatenate([np.ones(40, np.float32), -payload]), [nan, nan]),
             (-payload, [(nan + 5) | 0x80000000] * 2),
             (np.zeros(0, np.float32), [0xff800000, 0x7f800000])]
    for x, bits in cases:
        got, want = _extremes(extremes32, x)
        assert got.view(np.uint32).tolist() == want.view(np.uint32).tolist() == bits, x
