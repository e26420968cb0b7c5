"""The C-like emitter (``backends/clike``) and the CUDA emitter and launcher built on it.

Every loop-level test IR -- the hand-written ``snapshots_cuda/*.nir`` (GEMV in every
sum order, GEMM, GEMM with a shared buffer, shared quantize with a value crossing
launches, INT4 decode + f32 dot, grouped-format ``decode``, control flow, nested
parallel loops, views at offsets, errors) and
generated modules covering every scalar op and cast of every dtype and every
reduction order -- is

- emitted as CUDA and compiled by NVRTC for sm_90 and sm_80 with the exact options:
  the PTX holds no ``fma.rn.f32`` and no ``.ftz``;
- compared with its snapshot (``snapshots_cuda/<name>.cu``, the generated part);
- emitted as host C by the same emitter, compiled by gcc and run: every output
  equals the interpreter's bit for bit (NaN results of float arithmetic compare as
  a class: IEEE leaves the payload open), and every error is the interpreter's;
- with a GPU (``-m gpu``), run through the CUDA launcher and compared the same way.

Snapshots are rewritten by ``python tests/backends/test_cuda_emitter.py --update``.
"""
from __future__ import annotations

import functools
import re
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from ninfer_ir.backends.clike.emitter import LEGALIZED_AWAY, RULES  # noqa: E402
from ninfer_ir.backends.clike.host import HostKernel  # noqa: E402
from ninfer_ir.backends.cuda import nvrtc, runtime  # noqa: E402
from ninfer_ir.backends.cuda.emitter import emit, emit_module  # noqa: E402
from ninfer_ir.backends.cuda.launcher import CudaKernel, compile_module  # noqa: E402
from ninfer_ir.backends.interp.interpreter import interpret  # noqa: E402
from ninfer_ir.frontend.textual import parse  # noqa: E402
from ninfer_ir import ops as O  # noqa: E402
from ninfer_ir.numerics import semantics  # noqa: E402
from ninfer_ir.errors import DomainError, TargetUnavailable, VerifyError  # noqa: E402
from ninfer_ir.types import SCALARS  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_cuda_exact import q4k_records, q8k_records  # noqa: E402

SNAP = Path(__file__).resolve().parent / "snapshots_cuda"
ARCHS = ("sm_90", "sm_80")
NIR = sorted(p.stem for p in SNAP.glob("*.nir"))
DTYPES = ["bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "index",
          "f16", "f32", "f64"]
FLOATS = ("f16", "f32", "f64")
ORDERS = ("seq", "tree", "chunk<3>", "chunk<4>/tree", "chunk<1>")


# --- generated modules: every scalar op, cast and reduction --------------------------

def _ops_of(t):
    if t == "bool":
        return ["and", "or", "xor"], ["not"]
    if t in FLOATS:
        return ["add", "sub", "mul", "div", "rem", "min", "max"], ["neg", "abs", "sqrt"]
    return (["add", "sub", "mul", "div", "rem", "min", "max", "and", "or", "xor", "shl",
             "shr"], ["neg", "abs", "not"])


def ops_ir(t):
    binary, unary = _ops_of(t)
    n = len(binary) + len(unary) + 1
    body = [f"    %a = load(%x, %i) : {t}", f"    %b = load(%y, %i) : {t}"]
    for j, name in enumerate(binary + unary):
        args = "%a, %b" if name in binary else "%a"
        body += [f"    %v{j} = {name}({args}) : {t}", f"    store(%v{j}, %o, %r{j}, %i)"]
    body += ["    %lt = cmp(%a, %b) {pred = \"lt\"} : bool",
             f"    %sel = select(%lt, %a, %b) : {t}", f"    store(%sel, %o, %r{n - 1}, %i)"]
    for j, pred in enumerate(O.CMP_PREDICATES):
        body += [f"    %q{j} = cmp(%a, %b) {{pred = \"{pred}\"}} : bool",
                 f"    store(%q{j}, %c, %r{j}, %i)"]
    consts = [f"  %r{j} = constant() {{value = {j}}} : index" for j in range(max(n, 6))]
    return "\n".join([f"func @ops_{t}(%x: tensor<{t}[K]>, %y: tensor<{t}[K]>, "
                      f"%o: buffer<{t}[{n},K]>, %c: buffer<bool[6,K]>) {{", *consts,
                      "  %k = dim(%x) {axis = 0} : index",
                      "  for(%r0, %k, %r1) {parallel = true} ({", "  ^(%i: index):", *body,
                      "    yield()", "  })", "  return()", "}", ""])


def _bitcastable(s, d):
    a, b = SCALARS[s], SCALARS[d]
    return a.bits == b.bits and "bool" not in (s, d) and s != d


def casts_ir(s):
    outs = DTYPES + ["bf16"]
    bits = [d for d in outs if _bitcastable(s, d)]
    params = [f"%o_{d}: buffer<{d}[K]>" for d in outs] + [f"%b_{d}: buffer<{d}[K]>" for d in bits]
    body = [f"    %a = load(%x, %i) : {s}"]
    for d in outs:
        body += [f"    %c_{d} = cast(%a) {{to = {d}}} : {d}", f"    store(%c_{d}, %o_{d}, %i)"]
    for d in bits:
        body += [f"    %t_{d} = bitcast(%a) {{to = {d}}} : {d}", f"    store(%t_{d}, %b_{d}, %i)"]
    return "\n".join([f"func @casts_{s}(%x: tensor<{s}[K]>, {', '.join(params)}) {{",
                      "  %c0 = constant() {value = 0} : index",
                      "  %c1 = constant() {value = 1} : index",
                      "  %k = dim(%x) {axis = 0} : index",
                      "  for(%c0, %k, %c1) {parallel = true} ({", "  ^(%i: index):", *body,
                      "    yield()", "  })", "  return()", "}", ""])


def _reductions(t):
    if t in FLOATS:
        return [("add", o) for o in ORDERS] + [("mul", o) for o in ORDERS[:3]] + \
            [("min", "seq"), ("max", "tree")]
    return [("add", "seq"), ("mul", "tree"), ("min", "seq"), ("max", "chunk<2>")]


def reduce_ir(t):
    red = _reductions(t)
    body = ["    %row = subview(%m, %i) {axes = \"i:\"} : " f"tensor<{t}[C]>"]
    for j, (kind, order) in enumerate(red):
        body += [f"    %d{j} = reduce(%row) {{kind = \"{kind}\", order = \"{order}\"}} : "
                 f"tensor<{t}[]>", f"    %s{j} = load(%d{j}) : {t}",
                 f"    store(%s{j}, %o, %r{j}, %i)"]
    consts = [f"  %r{j} = constant() {{value = {j}}} : index" for j in range(max(2, len(red)))]
    return "\n".join([f"func @reduce_{t}(%m: tensor<{t}[R,C]>, %o: buffer<{t}[{len(red)},R]>) {{",
                      *consts, "  %n = dim(%m) {axis = 0} : index",
                      "  for(%r0, %n, %r1) {parallel = true} ({", "  ^(%i: index):", *body,
                      "    yield()", "  })", "  return()", "}", ""])


GENERATED = {"ops": "".join(ops_ir(t) for t in DTYPES),
             "casts": "".join(casts_ir(s) for s in DTYPES + ["bf16"]),
             "reduce": "".join(reduce_ir(t) for t in ("f32", "f16", "f64", "i32", "u8"))}


@functools.lru_cache(maxsize=None)
def module(name):
    return parse(GENERATED[name] if name in GENERATED else (SNAP / f"{name}.nir").read_text())


@functools.lru_cache(maxsize=None)
def host(name):
    return HostKernel(module(name))


# --- inputs ---------------------------------------------------------------------------

def _edge(t, rng):
    st = SCALARS[t]
    if t == "bool":
        return np.array([False, True])
    if t in FLOATS:
        fi = np.finfo(st.np_dtype)
        v = np.array([0.0, -0.0, 1.0, -1.0, 1.5, -2.5, 7.0, np.inf, -np.inf, np.nan,
                      fi.max, fi.smallest_subnormal, -fi.tiny, 3.0e-3], dtype=st.np_dtype)
        return v
    lo, hi = semantics.int_range(st)
    raw = [0, 1, -1, 2, -7, 7, lo, hi, lo + 1, st.bits - 1, st.bits, st.bits + 1, 100]
    return np.array([(x - lo) % (hi - lo + 1) + lo for x in raw], dtype=st.np_dtype)


def _special_floats(t, rng, n):
    st = SCALARS[t]
    words = {16: np.uint16, 32: np.uint32, 64: np.uint64}[st.bits]
    bits = rng.integers(0, np.iinfo(words).max, size=n, dtype=words, endpoint=True)
    v = np.concatenate([_edge(t, rng), bits.view(st.np_dtype)])
    big = np.array([2.0 ** 31, -2.0 ** 31 - 1, 2.0 ** 63, -2.0 ** 63, 2.0 ** 64, 255.5, -0.5,
                    -128.5, 65519.99, 65520.0, 4294967295.5, 1e20], dtype=np.float64)
    with np.errstate(over="ignore"):
        return np.concatenate([v, big.astype(st.np_dtype)])


def cast_inputs(s, rng, n=40):
    st = SCALARS[s]
    if s == "bf16":
        return np.concatenate([np.array([0, 0x8000, 0x7f80, 0xff80, 0x7fc0, 0x7f81, 0x0001,
                                         0x3f80, 0x4f00, 0xdf00], np.uint16),
                               rng.integers(0, 65536, n, dtype=np.uint16)])
    if s in FLOATS:
        return _special_floats(s, rng, n)
    lo, hi = semantics.int_range(st)
    return np.concatenate([_edge(s, rng), rng.integers(lo, hi, n, dtype=st.np_dtype,
                                                       endpoint=True)])


def _cast_outputs(s, k):
    outs = DTYPES + ["bf16"]
    return [np.zeros(k, SCALARS[d].np_dtype) for d in outs] + \
        [np.zeros(k, SCALARS[d].np_dtype) for d in outs if _bitcastable(s, d)]


def _f32(rng, *shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def nir_calls(name, rng):
    """``(func_name, args)`` calls of a hand-written case."""
    if name in ("gemv", "gemm", "gemm_seq"):
        calls = []
        for n, g, m in ((5, 3, 2), (9, 8, 3), (0, 2, 1), (4, 13, 1)):
            w = q4k_records(rng, (n, g))
            if name == "gemv":
                calls.append((name, (w, _f32(rng, g, 256), np.zeros(n, np.float32))))
            else:
                calls.append((name, (w, _f32(rng, m, g, 256), np.zeros((m, n), np.float32))))
        return calls
    if name == "gemv_orders":
        return [(name, (q4k_records(rng, (6, g)), q8k_records(rng, g, valid=False),
                        np.zeros((5, 6), np.float32))) for g in (1, 4, 5, 8, 13)]
    if name == "shared_quantize":
        return [(name, (q4k_records(rng, (g,)), q4k_records(rng, (g,)), _f32(rng, g, 256),
                        _f32(rng, 7), np.zeros(7, np.float32))) for g in (1, 5)]
    if name == "int4_gemv":
        return [(name, (rng.integers(0, 256, (n, h), dtype=np.uint8), _f32(rng, 2 * h),
                        _f32(rng, n), np.zeros(n, np.float32))) for n, h in ((5, 6), (3, 37))]
    if name == "control":
        x = np.array([0.5, -3.0, 2.0, np.nan, -0.0, 9.0, 1.25, -7.5, 3.0], np.float32)
        return [(name, (x[:k], np.float32(t), np.zeros(k, np.float32), np.zeros(2, np.float32),
                        np.zeros(2, np.int32))) for k, t in ((9, 1.0), (1, 0.0), (0, 2.0))]
    if name == "views":
        big = _f32(rng, 10, 21)
        return [(name, (m, rng.integers(0, 256, 12, dtype=np.uint8), np.zeros(9, np.float32),
                        np.zeros(4, np.float32)))
                for m in (big[1:9:2, 2:20:2], big[:4, :9], big[8:0:-2, 18:0:-2])]
    if name == "decode":
        calls = []
        for n, k in ((4, 100), (2, 64), (3, 1)):
            p5, s5 = -(-k * 5 // 8), -(-k // 64)
            p2 = -(-k * 2 // 8)
            calls.append((name, (rng.integers(0, 256, (n, p5), dtype=np.uint8),
                                 rng.standard_normal((n, s5)).astype(np.float16), _f32(rng, k),
                                 rng.integers(0, 256, p2, dtype=np.uint8),
                                 rng.standard_normal(s5).astype(np.float16),
                                 np.zeros(n, np.float32), np.zeros(k, np.float32),
                                 np.zeros(2, np.float32))))
        return calls[:2]
    if name == "nest":
        return [(name, (_f32(rng, r, c), _f32(rng, c), np.zeros((r, c), np.float32),
                        np.zeros((s, c), np.float32))) for r, c, s in ((3, 4, 2), (3, 4, 5),
                                                                        (3, 0, 4), (0, 5, 0))]
    if name == "errors":
        return [(name, (_f32(rng, 4, 256), 0, True, _f32(rng, 6), np.zeros((4, 292), np.uint8)))]
    raise KeyError(name)


# --- comparison ---------------------------------------------------------------------------

def same(got, want, nan_class=True, what=""):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, what
    if want.dtype.kind == "f" and nan_class:
        nan = np.isnan(want)
        assert np.array_equal(np.isnan(got), nan), f"{what}: NaN positions differ"
        got, want = got[~nan], want[~nan]
    g = got.view(f"u{got.dtype.itemsize}") if got.dtype.kind == "f" else got
    w = want.view(f"u{want.dtype.itemsize}") if want.dtype.kind == "f" else want
    bad = np.flatnonzero(g.reshape(-1) != w.reshape(-1))
    assert not bad.size, (f"{what}: {bad.size} element(s) differ, first at {bad[0]}: got "
                          f"{got.reshape(-1)[bad[0]]!r} want {want.reshape(-1)[bad[0]]!r}")


def _copy(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def check_against_interpreter(run, mod, func_name, args, nan_class=True):
    """``run(func_name, *args)`` must leave the same buffers and results (or error)."""
    want_args, got_args = _copy(args), _copy(args)
    try:
        want = interpret(mod, *want_args, func_name=func_name)
    except DomainError as e:
        with pytest.raises(DomainError) as got:
            run(func_name, *got_args)
        assert str(got.value) == str(e)
        return
    got = run(func_name, *got_args)
    for k, (g, w) in enumerate(zip(got_args, want_args)):
        if isinstance(w, np.ndarray):
            same(g, w, nan_class, f"@{func_name} argument {k}")
    if want is not None:
        same(got, want, nan_class, f"@{func_name} result")


def all_calls(rng):
    for name in NIR:
        for func_name, args in nir_calls(name, rng):
            yield name, func_name, args, True
    for t in DTYPES:
        v = _edge(t, rng)
        x, y = np.repeat(v, v.size), np.tile(v, v.size)
        n = len(sum(_ops_of(t), [])) + 1
        yield "ops", f"ops_{t}", (x, y, np.zeros((n, x.size), x.dtype),
                                  np.zeros((6, x.size), bool)), True
    for s in DTYPES + ["bf16"]:
        x = cast_inputs(s, rng)
        yield "casts", f"casts_{s}", (x, *_cast_outputs(s, x.size)), False
    for t in ("f32", "f16", "f64", "i32", "u8"):
        st = SCALARS[t]
        for c in (0, 1, 2, 5, 13, 33):
            m = (_f32(rng, 3, c, scale=2.0).astype(st.np_dtype) if t in FLOATS else
                 rng.integers(0, 9, (3, c)).astype(st.np_dtype))
            yield "reduce", f"reduce_{t}", (m, np.zeros((len(_reductions(t)), 3), st.np_dtype)), True


CALLS = list(all_calls(np.random.default_rng(2024)))


def _ids():
    return [f"{n}-{f}-{k}" for k, (n, f, _, _) in enumerate(CALLS)]


# --- CUDA source and PTX -----------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def combined_ptx(arch):
    text = "".join((SNAP / f"{n}.nir").read_text() for n in NIR) + "".join(GENERATED.values())
    emitted = emit_module(parse(text))
    return emitted, nvrtc.compile_to_ptx(emitted.source, arch)


@pytest.mark.parametrize("arch", ARCHS)
def test_every_test_ir_compiles_to_exact_ptx(arch):
    emitted, ptx = combined_ptx(arch)
    assert f".target sm_{arch[3:]}" in ptx
    assert "fma.rn.f32" not in ptx and "fma.rn.f64" not in ptx and ".ftz" not in ptx
    nvrtc.check_exact_ptx(ptx)
    units = [u.name for plan in emitted.plans.values() for u in plan.launches]
    assert len(units) > 40
    for name in units:
        assert re.search(rf"\.entry\s+{name}\s*\(", ptx), name
    assert "add.rn.f32" in ptx and "mul.rn.f64" in ptx and "shfl.sync.idx" in ptx


@pytest.mark.parametrize("name", NIR)
def test_cuda_source_matches_snapshot(name):
    got = emit_module(module(name)).generated
    assert got == (SNAP / f"{name}.cu").read_text(), f"regenerate {name}.cu (see module doc)"


def test_emit_api():
    m = module("gemv")
    src = emit(m, "cuda")
    assert 'extern "C" __global__ void nk_gemv_' in src and "__fadd_rn" in src
    assert ".entry nk_gemv_" in emit(m, "ptx")
    with pytest.raises(ValueError, match="'cuda' or 'ptx'"):
        emit(m, "llvm")


def test_every_op_has_a_lowering_or_is_legalized_away():
    for name, cls in O.OPS.items():
        assert cls in RULES or name in LEGALIZED_AWAY or name in ("func", "return", "yield"), name


@pytest.mark.parametrize("text, match", [
    ("func @f(%x: tensor<f32[1,256]>) {\n"
     "  %q = quantize(%x) {format = #q8_k} : tensor<u8[1,292]>\n  return()\n}\n",
     "no cuda lowering for quantize \\(removed by the materialize pass"),
    ("func @f(%x: f32) -> (f32) {\n  return(%x)\n}\n", "no cuda lowering for return with values"),
    ("func @f(%x: tensor<f32[4]>, %y: buffer<f32[4]>) {\n  %z = add(%x, %x) : tensor<f32[4]>\n"
     "  copy(%z, %y)\n  return()\n}\n", "no cuda lowering for add on tensor"),
])
def test_unsupported_ir_is_refused_by_name(text, match):
    with pytest.raises(VerifyError, match=match):
        emit(parse(text))


# --- host C: bit for bit against the interpreter --------------------------------------------

@pytest.mark.parametrize("case", range(len(CALLS)), ids=_ids())
def test_host_c_equals_interpreter(case):
    name, func_name, args, nan_class = CALLS[case]
    kernel = host(name)
    check_against_interpreter(lambda f, *a: kernel(*a, func_name=f), module(name),
                              func_name, args, nan_class)


ERRORS = [
    ("errors", lambda a: a[:2] + (False,) + a[3:], "flag must be set"),
    ("errors", lambda a: (np.where(np.arange(4)[:, None] % 2 == 1, np.nan, a[0]),) + a[1:],
     "quantize q8_k: record 1: input holds NaN or inf"),
    ("errors", lambda a: a[:1] + (3,) + a[2:], "'load': index 6 is out of range for axis 0"),
    ("int4_gemv", lambda a: (a[0], a[1][:-1], *a[2:]), "K must be twice the packed width"),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_host_c_errors_are_the_interpreters(case):
    name, change, match = ERRORS[case]
    args = change(nir_calls(name, np.random.default_rng(5))[0][1])
    with pytest.raises(DomainError, match=re.escape(match)):
        interpret(module(name), *_copy(args))
    check_against_interpreter(lambda f, *a: host(name)(*a, func_name=f), module(name), name,
                              args)


def test_host_c_argument_errors_are_the_interpreters():
    args = nir_calls("gemv", np.random.default_rng(1))[0][1]
    bad = (args[0], args[1].astype(np.float64), args[2])
    with pytest.raises(VerifyError) as want:
        interpret(module("gemv"), *bad)
    with pytest.raises(VerifyError) as got:
        host("gemv")(*bad)
    assert str(got.value) == str(want.value)


def test_host_c_wide_numerics_against_the_semantics_table():
    """Large random inputs (all f16/bf16 words) against ``ninfer_ir.numerics.semantics`` itself."""
    rng = np.random.default_rng(7)
    for s in ("f16", "bf16", "f32", "f64"):
        st = SCALARS[s]
        x = (np.arange(65536, dtype=np.uint16) if st.bits == 16 else
             _special_floats(s, rng, 200_000)).view(st.np_dtype if s != "bf16" else np.uint16)
        outs = _cast_outputs(s, x.size)
        host("casts")(x, *outs, func_name=f"casts_{s}")
        for d, got in zip(DTYPES + ["bf16"], outs):
            same(got, semantics.cast(x, st, SCALARS[d]), False, f"cast {s} -> {d}")
    for t in ("f32", "f64", "f16", "i32", "u64", "i8"):
        st = SCALARS[t]
        x = cast_inputs(t, rng, 50_000)
        y = rng.permutation(x)
        binary, unary = _ops_of(t)
        o = np.zeros((len(binary) + len(unary) + 1, x.size), st.np_dtype)
        host("ops")(x, y, o, np.zeros((6, x.size), bool), func_name=f"ops_{t}")
        for j, name in enumerate(binary):
            same(o[j], semantics.binary(name, x, y, st), True, f"{name} {t}")


# --- the CUDA launcher ---------------------------------------------------------------------

def test_arena_gives_every_worker_its_own_slots():
    from ninfer_ir.backends.clike.plan import ALIGN, CTL_LAYOUT, layout
    plan = emit_module(module("int4_gemv")).plans["int4_gemv"]
    (slot,) = plan.allocs
    unit = plan.units[slot.unit]
    assert unit.kind == "par" and not slot.top_level
    nbytes, ctl = layout(plan, {0: (5, 6), 1: (12,), 2: (5,), 3: (5,)}, {}, [1, 7])
    base, stride = int(ctl[CTL_LAYOUT + slot.word]), int(ctl[CTL_LAYOUT + unit.stride_word])
    assert stride == ALIGN and base % ALIGN == 0 and base + 7 * stride <= nbytes
    plan = emit_module(module("gemm")).plans["gemm"]
    nbytes, ctl = layout(plan, {0: (4, 3, 144), 1: (2, 3, 256), 2: (2, 4)}, {}, [1] * 4)
    assert nbytes == -(-2 * 3 * 292 // ALIGN) * ALIGN and ctl[CTL_LAYOUT + plan.allocs[0].word] == 0


def test_launcher_refuses_without_a_gpu_before_any_device_call(monkeypatch):
    monkeypatch.setattr(runtime, "_probe", lambda: (False, "no CUDA device (test)"))
    args = nir_calls("gemv", np.random.default_rng(1))[0][1]
    with pytest.raises(TargetUnavailable, match="no CUDA device"):
        compile_module(module("gemv"))
    kernel = CudaKernel(module("gemv"))
    with pytest.raises(VerifyError, match="must have numpy dtype float32"):
        kernel(args[0], args[1].astype(np.float64), args[2])
    with pytest.raises(TargetUnavailable):
        kernel(*args)


gpu = pytest.mark.skipif(not runtime.gpu_available()[0], reason="no CUDA GPU")


@functools.lru_cache(maxsize=None)
def device(name):
    return compile_module(module(name))


@pytest.mark.gpu
@gpu
@pytest.mark.parametrize("case", range(len(CALLS)), ids=_ids())
def test_gpu_equals_interpreter(case):
    name, func_name, args, nan_class = CALLS[case]
    check_against_interpreter(lambda f, *a: device(name)(*a, func_name=f), module(name),
                              func_name, args, nan_class)


@pytest.mark.gpu
@gpu
@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_gpu_errors_are_the_interpreters(case):
    name, change, _ = ERRORS[case]
    args = change(nir_calls(name, np.random.default_rng(5))[0][1])
    check_against_interpreter(lambda f, *a: device(name)(*a, func_name=f), module(name), name,
                              args)


@pytest.mark.gpu
@gpu
def test_gpu_takes_cupy_views_and_returns_cupy():
    import cupy
    rng = np.random.default_rng(3)
    name, args = nir_calls("shared_quantize", rng)[1]
    want = interpret(module(name), *_copy(args))
    dev = [cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
    got = device(name)(*dev)
    assert isinstance(got, cupy.ndarray)
    same(got.get(), want)


def update_snapshots():
    for name in NIR:
        (SNAP / f"{name}.cu").write_text(emit_module(module(name)).generated)


if __name__ == "__main__":
    if sys.argv[1:] == ["--update"]:
        update_snapshots()
