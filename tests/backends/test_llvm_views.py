"""CPU emitter, memory half: views at any byte offset and stride, loops, ifs, allocs,
ordered folds, decode, and every run-time error with the interpreter's type and
message; inputs are never written."""
import numpy as np
import pytest

import ninfer_ir as I
from ninfer_ir.backends.interp import interpret
from ninfer_ir.backends.llvm.runtime.launcher import CompiledKernel

HEAD = """  %c0 = constant() {value = 0} : index
  %c1 = constant() {value = 1} : index
"""


def bits(a):
    a = np.ascontiguousarray(a)
    return a.reshape(-1).view(np.uint8)


def run_both(text, args, buffers=(), **options):
    """Run interpreter and compiled code on their own copies of the buffer arguments
    ``buffers`` (indices); compare every buffer and every returned value bit for bit."""
    module = I.parse(text)
    mine = [a.copy() if k in buffers else a for k, a in enumerate(args)]
    theirs = [a.copy() if k in buffers else a for k, a in enumerate(args)]
    want = interpret(module, *theirs)
    got = CompiledKernel(module, **options)(*mine)
    for k in buffers:
        assert np.array_equal(bits(mine[k]), bits(theirs[k])), f"buffer {k} differs"
    for g, w in zip(got if isinstance(got, tuple) else (got,),
                    want if isinstance(want, tuple) else (want,)):
        if w is not None:
            assert np.array_equal(bits(g), bits(w))
    return mine


def both_raise(text, args, kind=I.DomainError, **options):
    module = I.parse(text)
    with pytest.raises(kind) as want:
        interpret(module, *[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    with pytest.raises(kind) as got:
        CompiledKernel(module, **options)(*args)
    assert str(got.value) == str(want.value)
    return got.value


VIEWS = """func @views(%x: tensor<f32[M,N]>, %y: buffer<f32[M,N]>, %s: buffer<f32[M]>) {
""" + HEAD + """  %m = dim(%x) {axis = 0} : index
  %two = constant() {value = -2.0} : f32
  for(%c0, %m, %c1) ({
  ^(%i: index):
    %row = subview(%x, %i) {axes = "i:"} : tensor<f32[N]>
    %out = subview(%y, %i) {axes = "i:"} : buffer<f32[N]>
    %n = dim(%row) {axis = 0} : index
    for(%c0, %n, %c1) ({
    ^(%j: index):
      %v = load(%row, %j) : f32
      %w = mul(%v, %two) : f32
      store(%w, %out, %j)
      yield()
    })
    %r = reduce(%row) {kind = "add", order = "tree"} : tensor<f32[]>
    %rv = load(%r) : f32
    store(%rv, %s, %i)
    yield()
  })
  return()
}"""


def odd_views(rng):
    base = rng.standard_normal(4096).astype(np.float32)
    finite = rng.integers(0, 64, 4096, dtype=np.uint8).tobytes()   # any 4 bytes: finite f32
    return [
        ("contiguous", base[:35].reshape(5, 7)),
        ("reversed", base[:70].reshape(7, 10)[::-1, ::-2][:5, :5]),
        ("byte offset 1", np.ndarray((5, 7), np.float32, buffer=finite, offset=1)),
        ("odd byte strides", np.ndarray((5, 7), np.float32, buffer=finite, offset=3,
                                        strides=(26, 6))),
        ("negative odd strides", np.ndarray((5, 7), np.float32, buffer=finite, offset=400,
                                            strides=(-50, -7))),
        ("zero stride", np.broadcast_to(base[:7], (5, 7))),
    ]


@pytest.mark.parametrize("case", range(6))
def test_views_at_any_offset_and_stride(case):
    name, x = odd_views(np.random.default_rng(case))[case]
    y = np.zeros(x.shape, np.float32)
    s = np.zeros(x.shape[0], np.float32)
    before = bits(x).copy()
    run_both(VIEWS, (x, y, s), buffers=(1, 2))
    assert np.array_equal(bits(x), before), name


def test_strided_buffers_are_written_through_their_views():
    x = np.random.default_rng(7).standard_normal((4, 6)).astype(np.float32)
    module, kernel = I.parse(VIEWS), CompiledKernel(I.parse(VIEWS))
    outs = []
    for run in (lambda *a: interpret(module, *a), kernel):
        big, s = np.zeros((8, 13), np.float32), np.zeros(9, np.float32)
        raw = bytearray(200)
        odd = np.ndarray((4, 6), np.float32, buffer=raw, offset=3, strides=(30, 5))
        run(x, big[::2, 12:0:-2], s[::-2][:4])
        run(x, odd, s[:4])
        outs.append((big, s, bytes(raw)))
    (b1, s1, r1), (b2, s2, r2) = outs
    assert np.array_equal(bits(b1), bits(b2)) and np.array_equal(bits(s1), bits(s2))
    assert r1 == r2


RANGES = """func @ranges(%x: tensor<i32[N]>, %a: index, %b: index, %st: index, %y: buffer<i32[N]>) {
""" + HEAD + """  %v = subview(%x, %a, %b, %st) {axes = "r"} : tensor<i32[?]>
  %n = dim(%v) {axis = 0} : index
  %acc = for(%c0, %n, %c1, %c0) ({
  ^(%i: index, %k: index):
    %e = load(%v, %i) : i32
    store(%e, %y, %k)
    %k2 = add(%k, %c1) : index
    yield(%k2)
  }) : index
  %last = sub(%acc, %c1) : index
  %neg = cmp(%acc, %c0) {pred = "gt"} : bool
  %z = if(%neg) ({
  ^():
    %e = load(%y, %last) : i32
    yield(%e)
  }, {
  ^():
    %m = constant() {value = -7} : i32
    yield(%m)
  }) : i32
  store(%z, %y, %c0)
  return()
}"""


@pytest.mark.parametrize("a,b,st", [(0, 10, 1), (2, 9, 3), (3, 3, 1), (1, 10, 4), (9, 10, 7),
                                    (0, 10, 100)])
def test_range_subviews_loops_and_ifs(a, b, st):
    x = np.arange(10, dtype=np.int32) * 7 - 20
    run_both(RANGES, (x, a, b, st, np.zeros(10, np.int32)), buffers=(4,))


@pytest.mark.parametrize("a,b,st", [(0, 11, 1), (5, 4, 1), (-1, 3, 1), (0, 3, 0), (2, 3, -1)])
def test_bad_ranges_raise_like_the_interpreter(a, b, st):
    x = np.arange(10, dtype=np.int32)
    err = both_raise(RANGES, (x, a, b, st, np.zeros(10, np.int32)))
    assert "'subview': range" in str(err)


LOOPS = """func @loops(%lb: index, %ub: index, %st: index, %out: buffer<i64[]>) {returns = 1} {
""" + HEAD + """  %z = constant() {value = 0} : i64
  %s = for(%lb, %ub, %st, %z) ({
  ^(%i: index, %a: i64):
    %c = cast(%i) {to = i64} : i64
    %t = mul(%a, %c) : i64
    %u = add(%t, %c) : i64
    yield(%u)
  }) : i64
  store(%s, %out)
  return()
}"""


@pytest.mark.parametrize("lb,ub,st", [(0, 10, 1), (10, 0, -1), (3, 40, 7), (40, 3, -7), (5, 5, 1),
                                      (-9223372036854775808, -9223372036854775800, 3),
                                      (9223372036854775800, 9223372036854775807, 2),
                                      (9223372036854775807, -9223372036854775808,
                                       -4611686018427387904)])
def test_for_trip_counts_match_python_range(lb, ub, st):
    run_both(LOOPS, (lb, ub, st))


def test_for_step_zero_raises():
    both_raise(LOOPS, (0, 4, 0))


FOLDS = """func @folds(%a: tensor<T[N]>, %b: tensor<T[N]>, %d: buffer<T[]>, %r: buffer<T[4]>)
    {returns = 2} {
  %p = dot(%a, %b) {order = "ORDER"} : tensor<T[]>
  %pv = load(%p) : T
  store(%pv, %d)
""" + "".join(f"""  %k{k} = constant() {{value = {k}}} : index
  %f{k} = reduce(%a) {{kind = "{kind}", order = "ORDER"}} : tensor<T[]>
  %v{k} = load(%f{k}) : T
  store(%v{k}, %r, %k{k})
""" for k, kind in enumerate(["add", "mul", "min", "max"])) + """  return()
}"""


@pytest.mark.parametrize("dtype", ["f16", "f32", "f64"])
@pytest.mark.parametrize("order", ["seq", "tree", "chunk<3>", "chunk<4>/tree", "chunk<1>"])
def test_dot_and_reduce_in_every_order(dtype, order):
    rng = np.random.default_rng(len(order))
    text = FOLDS.replace("ORDER", order).replace("T[", f"{dtype}[").replace(": T", f": {dtype}")
    kernel = CompiledKernel(I.parse(text))
    module = I.parse(text)
    for n in (0, 1, 2, 3, 5, 8, 13, 37):
        a = (rng.standard_normal(n) * 3).astype(dtype.replace("f", "float"))
        b = (rng.standard_normal(n) * 3).astype(a.dtype)
        if n > 4:
            a[1], a[3] = -0.0, 1e4
        want = interpret(module, a, b)
        got = kernel(a, b)
        for g, w in zip(got, want):
            assert np.array_equal(bits(g), bits(w)), (n, g, w)


@pytest.mark.parametrize("dtype", ["i32", "u8", "i64"])
def test_integer_reductions(dtype):
    text = FOLDS.replace("ORDER", "seq").replace("T[", f"{dtype}[").replace(": T", f": {dtype}")
    text = text[:text.index("  %p = dot")] + text[text.index("  %k0"):]
    text = text.replace("%d: buffer<{}[]>, ".format(dtype), "").replace("{returns = 2}",
                                                                         "{returns = 1}")
    text = text.replace(f", %b: tensor<{dtype}[N]>", "")
    np_dtype = {"i32": np.int32, "u8": np.uint8, "i64": np.int64}[dtype]
    rng = np.random.default_rng(3)
    for n in (0, 1, 7, 100):
        a = rng.integers(np.iinfo(np_dtype).min, np.iinfo(np_dtype).max, n, dtype=np_dtype)
        run_both(text, (a,))


ALLOC = """func @scratch(%x: tensor<f64[N]>, %k: index, %y: buffer<f64[N]>) {
""" + HEAD + """  %n = dim(%x) {axis = 0} : index
  %big = alloc(%n, %k) : buffer<f64[N,?]>
  %small = alloc() : buffer<f64[4]>
  for(%c0, %n, %c1) ({
  ^(%i: index):
    %v = load(%x, %i) : f64
    %c3 = constant() {value = 3} : index
    %w = load(%small, %c3) : f64
    %s = add(%v, %w) : f64
    store(%s, %big, %i, %c0)
    %t = load(%big, %i, %c0) : f64
    store(%t, %y, %i)
    store(%t, %small, %c3)
    yield()
  })
  dealloc(%small)
  dealloc(%big)
  return()
}"""


def test_alloc_dealloc_and_scratch_reuse():
    x = np.arange(6, dtype=np.float64) / 3
    run_both(ALLOC, (x, 5, np.zeros(6)), buffers=(2,))
    run_both(ALLOC, (x, 50000, np.zeros(6)), buffers=(2,))
    both_raise(ALLOC, (x, -3, np.zeros(6)))


ERRORS = [
    ("""func @f(%x: tensor<f32[N]>, %i: index, %y: buffer<f32[]>) {
  %v = load(%x, %i) : f32
  store(%v, %y)
  return()
}""", lambda: (np.zeros(4, np.float32), 4, np.zeros((), np.float32)), I.DomainError),
    ("""func @f(%x: tensor<f32[N,M]>, %i: index, %y: buffer<f32[M]>) {
  %r = subview(%x, %i) {axes = "i:"} : tensor<f32[M]>
  copy(%r, %y)
  return()
}""", lambda: (np.zeros((3, 2), np.float32), -1, np.zeros(2, np.float32)), I.DomainError),
    ("""func @f(%x: tensor<f32[N]>, %y: buffer<f32[?]>) {
  copy(%x, %y)
  return()
}""", lambda: (np.zeros(3, np.float32), np.zeros(4, np.float32)), I.DomainError),
    ("""func @f(%x: tensor<f32[N]>, %a: index, %y: buffer<f32[4]>) {
  %c1 = constant() {value = 1} : index
  %v = subview(%x, %c1, %a, %c1) {axes = "r"} : tensor<f32[4]>
  copy(%v, %y)
  return()
}""", lambda: (np.zeros(8, np.float32), 4, np.zeros(4, np.float32)), I.VerifyError),
    ("""func @f(%x: tensor<f32[N]>, %y: buffer<f32[N]>) {
  %c0 = constant() {value = 0} : index
  %v = load(%x, %c0) : f32
  %ok = cmp(%v, %v) {pred = "eq"} : bool
  check(%ok) {message = "x[0] must not be NaN"}
  store(%v, %y, %c0)
  return()
}""", lambda: (np.array([np.nan], np.float32), np.zeros(1, np.float32)), I.DomainError),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_runtime_errors_match_the_interpreter(case):
    text, make, kind = ERRORS[case]
    both_raise(text, make(), kind)


DECODE = """func @dec(%p: tensor<u8[P]>, %s: tensor<f16[S]>, %x: tensor<f32[K]>, %k: index,
    %d: buffer<f32[]>, %w: buffer<f32[K]>) {returns = 2} {
""" + HEAD + """  %row = decode(%p, %s, %k) {format = #FMT} : tensor<f32[K]>
  %r = dot(%row, %x) {order = "seq"} : tensor<f32[]>
  %v = load(%r) : f32
  store(%v, %d)
  copy(%row, %w)
  return()
}"""


@pytest.mark.parametrize("fmt", ["q4_g64_fp16", "q2_g64_fp16", "q5_g64_fp16", "q8_g32_fp16", "t2_g128_fp16"])
def test_decode_rows(fmt):
    f = I.formats.get(fmt)
    rng = np.random.default_rng(1)
    k = 150
    p = rng.integers(0, 256, -(-k * f.bits // 8), dtype=np.uint8)
    s = (rng.standard_normal(-(-k // f.group)) * 0.1).astype(np.float16)
    x = rng.standard_normal(k).astype(np.float32)
    text = DECODE.replace("FMT", fmt)
    run_both(text, (p, s, x, k))
    err = both_raise(text, (p, s, x, 100))
    assert "do not hold one" in str(err)


def test_inputs_are_never_written_even_when_aliased():
    text = """func @f(%x: tensor<f32[N]>, %y: buffer<f32[N]>) {
""" + HEAD + """  %n = dim(%x) {axis = 0} : index
  for(%c0, %n, %c1) ({
  ^(%i: index):
    %last = sub(%n, %c1) : index
    %j = sub(%last, %i) : index
    %v = load(%x, %j) : f32
    store(%v, %y, %i)
    yield()
  })
  return()
}"""
    a = np.arange(8, dtype=np.float32)
    CompiledKernel(I.parse(text))(a, a)
    assert np.array_equal(a, np.arange(8, dtype=np.float32)[::-1])
    x = np.arange(8, dtype=np.float32)
    x.flags.writeable = False
    with pytest.raises(I.VerifyError, match="read-only"):
        CompiledKernel(I.parse(text))(x, x)


def test_a_decoded_row_shared_by_a_parallel_loop():
    text = """func @f(%p: tensor<u8[P]>, %s: tensor<f16[S]>, %x: tensor<f32[R,K]>, %k: index,
    %y: buffer<f32[R]>) {
""" + HEAD + """  %row = decode(%p, %s, %k) {format = #q4_g64_fp16} : tensor<f32[K]>
  %r = dim(%x) {axis = 0} : index
  for(%c0, %r, %c1) {parallel = true} ({
  ^(%i: index):
    %xi = subview(%x, %i) {axes = "i:"} : tensor<f32[K]>
    %d = dot(%row, %xi) {order = "chunk<16>/tree"} : tensor<f32[]>
    %v = load(%d) : f32
    store(%v, %y, %i)
    yield()
  })
  return()
}"""
    rng = np.random.default_rng(2)
    k, rows = 200, 9
    p = rng.integers(0, 256, k // 2, dtype=np.uint8)
    s = (rng.standard_normal(-(-k // 64)) * 0.1).astype(np.float16)
    x = rng.standard_normal((rows, k)).astype(np.float32)
    for threads in (1, 2):
        run_both(text, (p, s, x, k, np.zeros(rows, np.float32)), buffers=(4,), threads=threads)
