"""``if`` marked ``likely``: both arms pure, so the CPU loop decides the condition for a
block of iterations at once and runs only the then arm where it holds on the whole
block (``backends/llvm/gen/unswitch.py``). The bits are the if's wherever the
blocks fall, a loop whose stores may feed its own condition keeps the plain form, and
the verifier refuses arms that could not run for an element that did not pick them."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import ninfer_ir as I
from ninfer_ir.backends.clike.host import HostKernel
from ninfer_ir.backends.llvm.gen.unswitch import BLOCK

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import check_math  # noqa: E402

# y[i] = x[i] * 3 where |x[i]| < 1, else x[i] * 5 + 1: the arms differ everywhere
_MAP = """func @pick(%x: tensor<f32[N]>, %y: buffer<f32[N]>) {
  %N = dim(%x) {axis = 0} : index
  %c0 = constant() {value = 0} : index
  %c1 = constant() {value = 1} : index
  %one = constant() {value = 1.0} : f32
  for(%c0, %N, %c1) ({
  ^(%i: index):
    %v = load(%x, %i) : f32
    %a = abs(%v) : f32
    %small = cmp(%a, %one) {pred = "lt"} : bool
    %r = if(%small) {likely = true} ({
    ^():
      %three = constant() {value = 3.0} : f32
      %t = mul(%v, %three) : f32
      yield(%t)
    }, {
    ^():
      %five = constant() {value = 5.0} : f32
      %u = mul(%v, %five) : f32
      %w = add(%u, %one) : f32
      yield(%w)
    }) : f32
    store(%r, %y, %i)
    yield()
  })
  return()
}
"""


def _want(x):
    return np.where(np.abs(x) < 1, x * np.float32(3), x * np.float32(5) + np.float32(1))


def _bits(a):
    return np.asarray(a).view(np.uint32)


@pytest.mark.parametrize("n", [0, 1, BLOCK - 1, BLOCK, BLOCK + 1, 3 * BLOCK + 17])
@pytest.mark.parametrize("big_at", [(), (0,), (-1,), (BLOCK - 1,), (BLOCK,), (5, 2 * BLOCK + 3)])
@pytest.mark.parametrize("threads", [1, 2])
def test_bits_wherever_the_blocks_fall(n, big_at, threads):
    m = I.parse(_MAP)
    x = np.random.default_rng(n).uniform(-0.99, 0.99, n).astype(np.float32)
    for k in big_at:
        if -n <= k < n:
            x[k] = 7.5
    want = np.empty_like(x)
    I.interpret(m, x, want)
    assert np.array_equal(_bits(want), _bits(_want(x)))
    k = I.compile(m, target="cpu", threads=threads)
    got = np.full_like(x, np.nan)
    k(x, got)
    assert np.array_equal(_bits(got), _bits(want))
    assert "likely.test" in k.llvm_ir()


def test_strided_views_and_host_c():
    m = I.parse(_MAP)
    base = np.random.default_rng(1).uniform(-3, 3, 2 * 500).astype(np.float32)
    x = base[::2]
    want = _want(x)
    got = np.empty_like(x)
    I.compile(m, target="cpu", threads=1)(x, got)
    assert np.array_equal(_bits(got), _bits(want))
    host = np.empty_like(x)
    HostKernel(I.lower(m, "cuda"))(np.ascontiguousarray(x), host)
    assert np.array_equal(_bits(host), _bits(want))


def test_every_loop_of_a_block_is_vectorized():
    k = I.compile(I.parse(_MAP), target="cpu", threads=1)
    opt = k.jit.optimized_ir()
    # the condition pass, the then-arm loop and the both-arms loop
    assert opt.count("vector.body") >= 3, opt.count("vector.body")


# the condition reads y[i], which iteration i - 1 has just written: deciding a block
# ahead would read stale values, so this loop keeps the plain form
_FEEDS_ITSELF = """func @chain(%y: buffer<f32[N]>, %z: buffer<f32[N]>) {
  %N = dim(%y) {axis = 0} : index
  %c0 = constant() {value = 0} : index
  %c1 = constant() {value = 1} : index
  %n1 = sub(%N, %c1) : index
  %one = constant() {value = 1.0} : f32
  %big = constant() {value = 9.0} : f32
  for(%c0, %n1, %c1) ({
  ^(%i: index):
    %v = load(%y, %i) : f32
    %small = cmp(%v, %one) {pred = "lt"} : bool
    %r = if(%small) {likely = true} ({
    ^():
      yield(%one)
    }, {
    ^():
      yield(%big)
    }) : f32
    store(%r, %z, %i)
    %j = add(%i, %c1) : index
    store(%big, %y, %j)
    yield()
  })
  return()
}
"""


def test_a_condition_fed_by_the_loop_keeps_the_plain_form():
    m = I.parse(_FEEDS_ITSELF)
    n = 3 * BLOCK
    y0 = np.zeros(n, np.float32)
    want_y, want_z = y0.copy(), np.zeros(n, np.float32)
    I.interpret(m, want_y, want_z)
    assert want_z[0] == 1.0 and np.all(want_z[1:-1] == 9.0)
    k = I.compile(m, target="cpu", threads=1)
    y, z = y0.copy(), np.zeros(n, np.float32)
    k(y, z)
    assert np.array_equal(_bits(z), _bits(want_z)) and np.array_equal(_bits(y), _bits(want_y))
    assert "likely.test" not in k.llvm_ir()


@pytest.mark.parametrize("fn", ["sin", "cos"])
@pytest.mark.parametrize("threads", [1, 2])
def test_sin_and_cos_take_the_short_reduction_by_blocks(fn, threads):
    """Mostly short arguments with long ones (and inf, NaN) in a few blocks: the same
    bits as the interpreter, which evaluates both reductions and selects."""
    rng = np.random.default_rng(7)
    x = rng.uniform(-1e4, 1e4, 40 * BLOCK).astype(np.float32)
    x[3 * BLOCK + 5] = 3.0e30
    x[9 * BLOCK] = np.float32(2.0 ** 24)                 # the first long argument
    x[9 * BLOCK + 1] = np.nextafter(np.float32(2.0 ** 24), np.float32(0))
    x[20 * BLOCK - 1] = np.inf
    x[33 * BLOCK + 2] = np.nan
    want = getattr(I, fn)(x)
    k = I.compile(check_math.kernel_module(fn), target="cpu", threads=threads)
    got = np.empty_like(x)
    k(x, got)
    assert np.array_equal(_bits(got), _bits(want))
    assert not check_math.mismatches(fn, x, got).size


_ARM = """func @f(%x: f32, %t: tensor<f32[4]>, %n: i32) -> (f32) {{
  %one = constant() {{value = 1.0}} : f32
  %c0 = constant() {{value = 0}} : index
  %small = cmp(%x, %one) {{pred = "lt"}} : bool
  %r = if(%small) {{likely = {likely}}} ({{
  ^():
    yield(%x)
  }}, {{
  ^():
    {arm}
    yield(%w)
  }}) : f32
  return(%r)
}}
"""


@pytest.mark.parametrize("arm, likely, why", [
    ("%w = load(%t, %c0) : f32", "true", "'load'"),
    ("%q = div(%n, %n) : i32\n    %w = cast(%q) {to = f32} : f32", "true", "'div' on i32"),
    ("%w = neg(%x) : f32", "1", "attribute 'likely' must be true or false"),
])
def test_arms_that_may_not_run_both_ways_are_refused(arm, likely, why):
    with pytest.raises(I.VerifyError, match=why) as err:
        I.parse(_ARM.format(arm=arm, likely=likely))
    assert "if" in str(err.value)


def test_a_plain_if_may_load_in_its_arms():
    m = I.parse(_ARM.format(arm="%w = load(%t, %c0) : f32", likely="false"))
    assert "likely = false" in str(m)


# a gathered condition: x[ix[i]] (an index no range proves), stored at y[oy[i]]
_GATHER = """func @gather(%x: tensor<f32[N]>, %ix: tensor<i64[M]>, %oy: tensor<i64[M]>,
                     %y: buffer<f32[K]>) {
  %M = dim(%ix) {axis = 0} : index
  %c0 = constant() {value = 0} : index
  %c1 = constant() {value = 1} : index
  %one = constant() {value = 1.0} : f32
  for(%c0, %M, %c1) ({
  ^(%i: index):
    %j64 = load(%ix, %i) : i64
    %j = cast(%j64) {to = index} : index
    %v = load(%x, %j) : f32
    %a = abs(%v) : f32
    %small = cmp(%a, %one) {pred = "lt"} : bool
    %r = if(%small) {likely = true} ({
    ^():
      %three = constant() {value = 3.0} : f32
      %t = mul(%v, %three) : f32
      yield(%t)
    }, {
    ^():
      %five = constant() {value = 5.0} : f32
      %u = mul(%v, %five) : f32
      yield(%u)
    }) : f32
    %k64 = load(%oy, %i) : i64
    %k = cast(%k64) {to = index} : index
    store(%r, %y, %k)
    yield()
  })
  return()
}
"""


def test_a_gathered_condition_in_range_and_out_of_range():
    """In range: the blocks' bits. Out of range: the error of the loop in order. Here
    iteration 2 stores out of range before iteration 5 loads out of range; a condition
    pass that guarded its loads would report iteration 5's load first."""
    m = I.parse(_GATHER)
    k = I.compile(m, target="cpu", threads=1)
    assert "likely.test" in k.llvm_ir()
    rng = np.random.default_rng(3)
    n, count = 50, 3 * BLOCK
    x = rng.uniform(-1.5, 1.5, n).astype(np.float32)
    ix = rng.integers(0, n, count).astype(np.int64)
    oy = rng.permutation(count).astype(np.int64)
    want, got = np.zeros(count, np.float32), np.zeros(count, np.float32)
    I.interpret(m, x, ix, oy, want)
    k(x, ix, oy, got)
    assert np.array_equal(_bits(got), _bits(want))
    ix[5], oy[2] = n, count + 7
    with pytest.raises(I.NinferError) as e_want:
        I.interpret(m, x, ix, oy, np.zeros(count, np.float32))
    with pytest.raises(type(e_want.value)) as e_got:
        k(x, ix, oy, np.zeros(count, np.float32))
    assert str(e_got.value) == str(e_want.value)
    assert "store" in str(e_want.value)


@I.kernel
def sin_in_place(x: I.Buffer[I.f32, "N"]):
    x[:] = I.sin(x)


@pytest.mark.parametrize("threads", [1, 2])
def test_in_place_sin_is_decided_by_blocks(threads):
    """x[i] = sin(x[i]): the condition pass reads x before the block writes it, which is
    right because each iteration stores only the element it loaded (and the buffer's
    elements are distinct: the call checks it)."""
    k = I.compile(sin_in_place, target="cpu", threads=threads)
    assert "likely.test" in k.llvm_ir()
    base = np.random.default_rng(4).uniform(-100, 100, 2 * (5 * BLOCK + 3)).astype(np.float32)
    base[2 * BLOCK + 7] = 3e29
    for view in (lambda a: a, lambda a: a[::-2]):
        want = view(base.copy()).copy()
        I.interpret(sin_in_place, want)
        got = view(base.copy())
        k(got)
        assert np.array_equal(_bits(got), _bits(want))


# the condition reads x[i] after the body stored into it: deciding the block first would
# read the value before that store, so this loop keeps the plain form
_STORE_FIRST = """func @store_first(%x: buffer<f32[N]>, %y: buffer<f32[N]>) {
  %N = dim(%x) {axis = 0} : index
  %c0 = constant() {value = 0} : index
  %c1 = constant() {value = 1} : index
  %one = constant() {value = 1.0} : f32
  %ten = constant() {value = 10.0} : f32
  for(%c0, %N, %c1) ({
  ^(%i: index):
    %v = load(%x, %i) : f32
    %w = mul(%v, %ten) : f32
    store(%w, %x, %i)
    %u = load(%x, %i) : f32
    %small = cmp(%u, %one) {pred = "lt"} : bool
    %r = if(%small) {likely = true} ({
    ^():
      yield(%one)
    }, {
    ^():
      yield(%ten)
    }) : f32
    store(%r, %y, %i)
    yield()
  })
  return()
}
"""


def test_a_condition_read_after_the_store_keeps_the_plain_form():
    m = I.parse(_STORE_FIRST)
    k = I.compile(m, target="cpu", threads=1)
    assert "likely.test" not in k.llvm_ir()
    x = np.linspace(-0.5, 0.5, 3 * BLOCK).astype(np.float32)
    want_x, want_y = x.copy(), np.zeros_like(x)
    I.interpret(m, want_x, want_y)
    got_x, got_y = x.copy(), np.zeros_like(x)
    k(got_x, got_y)
    assert np.array_equal(_bits(got_y), _bits(want_y)) and (want_y == 10.0).any()
