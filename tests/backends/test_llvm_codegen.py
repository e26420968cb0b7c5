"""CPU emitter, scalar half: every elementwise op, comparison, select, cast, bitcast and
constant, on adversarial values of every scalar type, compiled == interpreter bit
for bit; and the coverage of the op table."""
import itertools

import numpy as np
import pytest

import ninfer_ir as I
from ninfer_ir.backends.interp import interpret
from ninfer_ir.backends.llvm.gen.codegen import (LEGALIZED_AWAY, STRUCTURAL, emit, lower_module,
                                                lowerings)
from ninfer_ir.backends.llvm.runtime.launcher import CompiledKernel
from ninfer_ir.numerics.semantics import int_range
from ninfer_ir.types import SCALARS, bf16, bool_

FLOATS = ["f16", "f32", "f64"]
INTS = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "index"]
ALL = FLOATS + INTS + ["bool", "bf16"]
BINARY = ["add", "sub", "mul", "div", "rem", "min", "max", "and", "or", "xor", "shl", "shr"]
PREDS = ["eq", "ne", "lt", "le", "gt", "ge"]


def same_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    bad = np.flatnonzero(got.reshape(-1).view(np.uint8) != want.reshape(-1).view(np.uint8))
    assert bad.size == 0, f"first difference at byte {bad[0]}: {got.reshape(-1)[bad[0] // got.itemsize]!r} " \
                          f"vs {want.reshape(-1)[bad[0] // want.itemsize]!r}"


def run_both(text, *args, **options):
    module = I.parse(text)
    want = interpret(module, *args)
    got = CompiledKernel(module, **options)(*args)
    if not isinstance(want, tuple):
        want, got = (want,), (got,)
    for g, w in zip(got, want):
        same_bits(g, w)
    return got


def adversarial(name):
    t = SCALARS[name]
    if t is bool_:
        return np.array([False, True])
    if t.is_float and t is not bf16:
        info = np.finfo(t.np_dtype)
        vals = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.0, 7.0, -7.75, 127.5, 128.0,
                -128.5, 255.5, 256.0, 65504.0, 65520.0, 2.0 ** 31, -2.0 ** 31, 2.0 ** 63,
                -2.0 ** 63, 2.0 ** 64, 1e30, float(info.max), -float(info.max),
                float(info.tiny), float(info.smallest_subnormal), -float(info.smallest_subnormal),
                np.inf, -np.inf, np.nan, -np.nan, 1.0 / 3.0, 1e-5]
        with np.errstate(over="ignore"):
            return np.array(vals, dtype=np.float64).astype(t.np_dtype)
    lo, hi = int_range(t)
    vals = {0, 1, 2, 3, 7, t.bits - 1, t.bits, t.bits + 1, 63, 64, 100, hi, hi - 1, lo, lo + 1}
    if lo < 0:
        vals |= {-1, -2, -7, -(t.bits), -100}
    return np.array(sorted(v for v in vals if lo <= v <= hi), dtype=t.np_dtype)


def pairs(name):
    v = adversarial(name)
    a, b = zip(*itertools.product(v, v))
    return np.array(a, dtype=v.dtype), np.array(b, dtype=v.dtype)


def ops_for(t):
    if t is bool_:
        return ["and", "or", "xor"], ["not"]
    if t.is_float:
        return BINARY[:7], ["neg", "abs", "sqrt"]
    return BINARY, ["neg", "abs", "not"]


def elementwise_kernel(name):
    t = SCALARS[name]
    binary, unary = ops_for(t)
    k = len(binary) + len(unary) + 1
    lines = [f"func @ew(%a: tensor<{name}[N]>, %b: tensor<{name}[N]>, %out: buffer<{name}[{k},N]>, "
             f"%cmp: buffer<bool[6,N]>) {{returns = 2}} {{",
             "  %c0 = constant() {value = 0} : index",
             "  %c1 = constant() {value = 1} : index",
             "  %n = dim(%a) {axis = 0} : index"]
    lines += [f"  %row{j} = constant() {{value = {j}}} : index" for j in range(max(k, 6))]
    lines += ["  for(%c0, %n, %c1) ({", "  ^(%i: index):",
              f"    %x = load(%a, %i) : {name}", f"    %y = load(%b, %i) : {name}"]
    j = 0
    for op in binary:
        lines += [f"    %r{j} = {op}(%x, %y) : {name}", f"    store(%r{j}, %out, %row{j}, %i)"]
        j += 1
    for op in unary:
        lines += [f"    %r{j} = {op}(%x) : {name}", f"    store(%r{j}, %out, %row{j}, %i)"]
        j += 1
    for p, pred in enumerate(PREDS):
        lines += [f"    %p{p} = cmp(%x, %y) {{pred = \"{pred}\"}} : bool",
                  f"    store(%p{p}, %cmp, %row{p}, %i)"]
    lines += [f"    %s = select(%p2, %x, %y) : {name}", f"    store(%s, %out, %row{j}, %i)"]
    lines += ["    yield()", "  })", "  return()", "}"]
    return "\n".join(lines)


@pytest.mark.parametrize("name", FLOATS + INTS + ["bool"])
def test_elementwise_ops_match_the_interpreter(name):
    """Bit equality everywhere except one IEEE freedom: when both operands of float
    arithmetic are NaN, which payload the result carries is the hardware's choice."""
    check_elementwise(name)


def check_elementwise(name, **options):
    a, b = pairs(name)
    module = I.parse(elementwise_kernel(name))
    want_out, want_cmp = interpret(module, a, b)
    got_out, got_cmp = CompiledKernel(module, threads=1, **options)(a, b)
    same_bits(got_cmp, want_cmp)
    if SCALARS[name].is_float:
        both_nan = np.isnan(a) & np.isnan(b)
        arith = [k for k, op in enumerate(ops_for(SCALARS[name])[0]) if op not in ("min", "max")]
        for k in arith:
            assert np.isnan(got_out[k][both_nan]).all()
            got_out[k][both_nan] = want_out[k][both_nan]
    same_bits(got_out, want_out)


def cast_kernel(src):
    targets = [t for t in ALL]
    same_width = [t for t in ALL if t != "bool" and src != "bool"
                  and SCALARS[t].bits == SCALARS[src].bits]
    outs = [f"%o_{t}: buffer<{t}[N]>" for t in targets] + \
           [f"%b_{t}: buffer<{t}[N]>" for t in same_width]
    lines = [f"func @casts(%a: tensor<{src}[N]>, {', '.join(outs)}) "
             f"{{returns = {len(outs)}}} {{",
             "  %c0 = constant() {value = 0} : index", "  %c1 = constant() {value = 1} : index",
             "  %n = dim(%a) {axis = 0} : index", "  for(%c0, %n, %c1) ({", "  ^(%i: index):",
             f"    %x = load(%a, %i) : {src}"]
    for t in targets:
        lines += [f"    %c_{t} = cast(%x) {{to = {t}}} : {t}", f"    store(%c_{t}, %o_{t}, %i)"]
    for t in same_width:
        lines += [f"    %d_{t} = bitcast(%x) {{to = {t}}} : {t}", f"    store(%d_{t}, %b_{t}, %i)"]
    lines += ["    yield()", "  })", "  return()", "}"]
    return "\n".join(lines)


def cast_inputs(src, rng):
    t = SCALARS[src]
    if t is bf16:
        special = [0x0000, 0x8000, 0x0001, 0x8001, 0x007F, 0x0080, 0x3F80, 0xBF80, 0x7F7F,
                   0xFF7F, 0x7F80, 0xFF80, 0x7F81, 0xFFBF, 0x7FC0, 0xFFC0, 0x7FFF, 0xFFFF,
                   0x4B00, 0x4F00, 0x5F00, 0xDF00, 0x477F, 0x4780]
        return np.concatenate([np.array(special, np.uint16), np.arange(0, 1 << 16, 17,
                                                                       dtype=np.uint16)])
    base = adversarial(src)
    if t is bool_:
        return base
    extra = [np.array(adversarial(o)).astype(np.float64) for o in ALL if o not in ("bool", "bf16")]
    with np.errstate(all="ignore"):
        mixed = np.concatenate([base.astype(np.float64)] + extra)
        if t.is_float:
            conv = mixed.astype(t.np_dtype)
            bits = rng.integers(0, 1 << t.bits, size=512, dtype=np.uint64)
            rand = bits.astype(f"u{t.bits // 8}").view(t.np_dtype)
            return np.concatenate([base, conv, rand])
        lo, hi = int_range(t)
        ints = [int(v) for v in mixed if np.isfinite(v) and lo <= int(v) <= hi]
        rand = rng.integers(lo, hi, size=512, dtype=t.np_dtype, endpoint=True)
        return np.concatenate([base, np.array(ints, dtype=t.np_dtype), rand])


@pytest.mark.parametrize("src", ALL)
def test_casts_and_bitcasts_match_the_interpreter(src):
    x = cast_inputs(src, np.random.default_rng(SCALARS[src].bits))
    run_both(cast_kernel(src), x, threads=1)


def test_float_to_half_rounding_on_every_level():
    """f64 -> f16 narrows with one rounding (no libcall on any level); ``portable`` uses
    the emitter's own binary16 helpers."""
    rng = np.random.default_rng(5)
    x = np.concatenate([adversarial("f64"), rng.standard_normal(4000) * 1e3,
                        (1 + np.arange(2000) * 2.0 ** -12) * 2.0 ** -14,
                        rng.integers(0, 1 << 63, size=500, dtype=np.uint64).view(np.float64)])
    text = cast_kernel("f64")
    want = interpret(I.parse(text), x)
    for isa in ("avx2", "portable"):
        try:
            kernel = CompiledKernel(I.parse(text), threads=1, isa=isa)
        except I.TargetUnavailable:
            continue
        for g, w in zip(kernel(x), want):
            same_bits(g, w)


@pytest.mark.parametrize("isa", ["avx2", "portable"])
@pytest.mark.parametrize("src", ["f16", "f32", "u64", "bf16"])
def test_casts_on_lower_isa_levels(src, isa):
    """Without AVX-512 FP16 (or F16C) half conversions take other paths; no libcall
    the JIT cannot resolve is emitted."""
    x = cast_inputs(src, np.random.default_rng(SCALARS[src].bits))
    module = I.parse(cast_kernel(src))
    want = interpret(module, x)
    try:
        kernel = CompiledKernel(module, threads=1, isa=isa)
    except I.TargetUnavailable:
        pytest.skip(f"the host cannot run {isa} code")
    for g, w in zip(kernel(x), want):
        same_bits(g, w)


def test_half_arithmetic_on_the_portable_level():
    check_elementwise("f16", isa="portable")


CONSTANTS = [("f32", "nan"), ("f32", "-inf"), ("f32", "0.1"), ("f32", "-0.0"),
             ("f32", "16777217"), ("f64", "0.1"), ("f16", "65519.0"), ("f16", "1e-08"),
             ("bf16", "1.1"), ("bf16", "3"), ("bf16", "nan"), ("u64", "18446744073709551615"),
             ("i64", "-9223372036854775808"), ("i8", "-128"), ("u8", "255"), ("bool", "true"),
             ("index", "-1"), ("f64", "18446744073709551615")]


def test_constants_match_the_interpreter():
    outs = ", ".join(f"%o{k}: buffer<{t}[]>" for k, (t, _) in enumerate(CONSTANTS))
    lines = [f"func @consts({outs}) {{returns = {len(CONSTANTS)}}} {{"]
    for k, (t, v) in enumerate(CONSTANTS):
        lines += [f"  %v{k} = constant() {{value = {v}}} : {t}", f"  store(%v{k}, %o{k})"]
    lines += ["  return()", "}"]
    run_both("\n".join(lines))


# --- coverage ----------------------------------------------------------------------------

def test_every_op_is_lowered_or_legalized_away():
    lowered_names = {cls.name for cls in lowerings()}
    for name in I.OPS:
        assert (name in lowered_names) + (name in LEGALIZED_AWAY) + (name in STRUCTURAL) == 1, name


@pytest.mark.parametrize("text,match", [
    ("""func @f(%x: tensor<f32[4,256]>, %y: buffer<u8[4,292]>) {
  %q = quantize(%x) {format = #q8_k} : tensor<u8[4,292]>
  copy(%q, %y)
  return()
}""", "no cpu lowering for quantize"),
    ("""func @f(%x: tensor<f32[4]>, %y: buffer<f32[4]>) {
  %z = add(%x, %x) : tensor<f32[4]>
  copy(%z, %y)
  return()
}""", "no cpu lowering for add on tensor"),
    ("""func @f(%x: tensor<f32[4,4]>, %y: buffer<f32[4]>) {
  %z = reduce(%x) {kind = "add"} : tensor<f32[4]>
  copy(%z, %y)
  return()
}""", "no cpu lowering for reduce on anything but 1-D views"),
])
def test_tensor_level_ops_are_refused(text, match):
    with pytest.raises(I.VerifyError, match=match):
        lower_module(I.parse(text))


def test_emit_gives_llvm_and_asm_without_fma():
    text = """func @fma(%a: tensor<f32[N]>, %b: tensor<f32[N]>, %y: buffer<f32[N]>) {
  %c0 = constant() {value = 0} : index
  %c1 = constant() {value = 1} : index
  %n = dim(%a) {axis = 0} : index
  for(%c0, %n, %c1) ({
  ^(%i: index):
    %x = load(%a, %i) : f32
    %z = load(%b, %i) : f32
    %p = mul(%x, %z) : f32
    %s = add(%p, %x) : f32
    store(%s, %y, %i)
    yield()
  })
  return()
}"""
    module = I.parse(text)
    llvm = emit(module, kind="llvm")
    assert 'define i64 @"nk.fma"' in llvm and "fmul float" in llvm
    assert "fast" not in llvm and "contract" not in llvm
    asm = emit(module, kind="asm")
    assert "vmulps" in asm or "vmulss" in asm or "mulss" in asm
    assert "vfmadd" not in asm and "vfnmadd" not in asm
    with pytest.raises(ValueError, match="unknown kind"):
        emit(module, kind="ptx")
