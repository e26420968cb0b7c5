"""Each op on small hand-written IR, against expectations computed independently here."""
import numpy as np
import pytest

import ninfer_ir as I
from ninfer_ir.backends.interp import interpret


def run(text, *args, **kwargs):
    return interpret(I.parse(text), *args, **kwargs)


def bits(x):
    x = np.asarray(x)
    return x.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[x.dtype.itemsize])


def same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    if got.dtype.kind == "f":
        assert np.array_equal(bits(got), bits(want))
    else:
        assert np.array_equal(got, want)


def wrap(v, bits_, signed=True):
    v &= (1 << bits_) - 1
    return v - (1 << bits_) if signed and v >= 1 << (bits_ - 1) else v


# --- constants and scalars are 0-d arrays of the exact dtype -------------------------

@pytest.mark.parametrize("ty,value,want", [
    ("f32", "0.1", np.float32(0.1)),
    ("f32", "-0.0", np.float32(-0.0)),
    ("f32", "16777217", np.float32(16777216.0)),
    ("f64", "0.1", np.float64(0.1)),
    ("f16", "0.1", np.float16(0.1)),
    ("i8", "-128", np.int8(-128)),
    ("u64", "18446744073709551615", np.uint64(2**64 - 1)),
    ("index", "7", np.int64(7)),
    ("bool", "true", np.bool_(True)),
    ("bf16", "1.0", np.uint16(0x3F80)),
    ("bf16", "-2.0", np.uint16(0xC000)),
])
def test_constant(ty, value, want):
    r = run(f"func @f() -> ({ty}) {{\n  %c = constant() {{value = {value}}} : {ty}\n"
            f"  return(%c)\n}}\n")
    assert isinstance(r, np.ndarray) and r.ndim == 0
    same(r, np.asarray(want))


def test_constant_inf_nan():
    r = run("func @f() -> (f32, f32) {\n  %a = constant() {value = inf} : f32\n"
            "  %b = constant() {value = nan} : f32\n  return(%a, %b)\n}\n")
    assert r[0] == np.inf and np.isnan(r[1]) and r[1].dtype == np.float32


# --- integer semantics ---------------------------------------------------------------------

INT_TEXT = "func @f(%a: {t}, %b: {t}) -> ({t}) {{\n  %r = {op}(%a, %b) : {t}\n  return(%r)\n}}\n"


def _py_int(op, a, b, nbits, signed):
    if op == "add":
        return wrap(a + b, nbits, signed)
    if op == "sub":
        return wrap(a - b, nbits, signed)
    if op == "mul":
        return wrap(a * b, nbits, signed)
    if op in ("div", "rem"):
        if b == 0:
            return 0
        q = abs(a) // abs(b) * (-1 if (a < 0) != (b < 0) else 1)
        return wrap(q, nbits, signed) if op == "div" else a - q * b
    if op == "min":
        return min(a, b)
    if op == "max":
        return max(a, b)
    if op in ("and", "or", "xor"):
        ua, ub = a & ((1 << nbits) - 1), b & ((1 << nbits) - 1)
        r = {"and": ua & ub, "or": ua | ub, "xor": ua ^ ub}[op]
        return wrap(r, nbits, signed)
    amount = b & ((1 << nbits) - 1)
    if op == "shl":
        return 0 if amount >= nbits else wrap(a << amount, nbits, signed)
    if amount >= nbits:
        return -1 if a < 0 else 0
    return a >> amount          # Python >> is arithmetic; unsigned a is non-negative


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "rem", "min", "max", "and",
                                "or", "xor", "shl", "shr"])
@pytest.mark.parametrize("ty,nbits,signed", [("i8", 8, True), ("u8", 8, False),
                                             ("i32", 32, True), ("index", 64, True)])
def test_integer_binary(op, ty, nbits, signed):
    module = I.parse(INT_TEXT.format(t=ty, op=op))
    t = I.ScalarType._table[ty]
    lo, hi = (-(1 << (nbits - 1)), (1 << (nbits - 1)) - 1) if signed else (0, (1 << nbits) - 1)
    samples = sorted({lo, hi, 0, 1, 2, 3, 7, -7 if signed else 250, -1 if signed else 128, hi - 1})
    for a in samples:
        for b in samples:
            got = interpret(module, np.asarray(a, t.np_dtype), np.asarray(b, t.np_dtype))
            assert got.dtype == t.np_dtype and got.ndim == 0
            assert int(got) == _py_int(op, a, b, nbits, signed), (op, ty, a, b)


def test_unary_int():
    text = ("func @f(%a: i8) -> (i8, i8, i8) {\n  %n = neg(%a) : i8\n  %b = abs(%a) : i8\n"
            "  %c = not(%a) : i8\n  return(%n, %b, %c)\n}\n")
    for a in (-128, -5, 0, 5, 127):
        n, b, c = run(text, np.int8(a))
        assert (int(n), int(b), int(c)) == (wrap(-a, 8), wrap(abs(a), 8), ~a)


def test_not_bool_and_logic():
    text = ("func @f(%a: bool, %b: bool) -> (bool, bool) {\n  %n = not(%a) : bool\n"
            "  %x = xor(%a, %b) : bool\n  return(%n, %x)\n}\n")
    for a in (False, True):
        for b in (False, True):
            n, x = run(text, a, b)
            assert n.dtype == np.bool_ and bool(n) == (not a) and bool(x) == (a != b)


# --- float semantics ------------------------------------------------------------------------

def test_float_binary_matches_single_numpy_ops():
    text = ("func @f(%a: f32, %b: f32) -> (f32, f32, f32, f32, f32) {\n"
            "  %s = add(%a, %b) : f32\n  %d = sub(%a, %b) : f32\n  %m = mul(%a, %b) : f32\n"
            "  %q = div(%a, %b) : f32\n  %r = rem(%a, %b) : f32\n  return(%s, %d, %m, %q, %r)\n}\n")
    rng = np.random.default_rng(1)
    with np.errstate(all="ignore"):
        for a, b in rng.standard_normal((50, 2)).astype(np.float32) * 1e3:
            got = run(text, a, b)
            for g, w in zip(got, (a + b, a - b, a * b, a / b, np.fmod(a, b))):
                same(g, np.float32(w))


def test_float_min_max_nan_and_signed_zero():
    text = ("func @f(%a: f32, %b: f32) -> (f32, f32) {\n  %lo = min(%a, %b) : f32\n"
            "  %hi = max(%a, %b) : f32\n  return(%lo, %hi)\n}\n")
    lo, hi = run(text, np.float32(0.0), np.float32(-0.0))
    assert np.signbit(lo) and not np.signbit(hi)
    lo, hi = run(text, np.float32(np.nan), np.float32(1.0))
    assert np.isnan(lo) and np.isnan(hi)
    lo, hi = run(text, np.float32(2.0), np.float32(1.0))
    assert (float(lo), float(hi)) == (1.0, 2.0)


def test_cmp_predicates_nan_ordered():
    nan, one = np.float32(np.nan), np.float32(1.0)
    for pred, want in [("eq", False), ("ne", True), ("lt", False), ("le", False),
                       ("gt", False), ("ge", False)]:
        r = run(f"func @f(%a: f32, %b: f32) -> (bool) {{\n  %c = cmp(%a, %b) {{pred = \"{pred}\"}}"
                f" : bool\n  return(%c)\n}}\n", nan, one)
        assert r.dtype == np.bool_ and bool(r) == want, pred


def test_casts():
    text = ("func @f(%x: f32) -> (i32, u8, bf16, f16, bool) {\n  %i = cast(%x) {to = i32} : i32\n"
            "  %u = cast(%x) {to = u8} : u8\n  %b = cast(%x) {to = bf16} : bf16\n"
            "  %h = cast(%x) {to = f16} : f16\n  %z = cast(%x) {to = bool} : bool\n"
            "  return(%i, %u, %b, %h, %z)\n}\n")
    i, u, b, h, z = run(text, np.float32(-3.75))
    assert (int(i), int(u), bool(z)) == (-3, 0, True)
    assert int(b) == 0xC070 and b.dtype == np.uint16            # -3.75 is exact in bf16
    same(h, np.float16(-3.75))
    i, u, b, h, z = run(text, np.float32(np.nan))
    assert (int(i), int(u), bool(z)) == (0, 0, True)
    i, u, _, h, _ = run(text, np.float32(1e10))
    assert (int(i), int(u)) == (2**31 - 1, 255) and h == np.inf


def test_bitcast():
    text = ("func @f(%x: f32, %w: u16) -> (u32, f32) {\n  %u = bitcast(%x) {to = u32} : u32\n"
            "  %b = bitcast(%w) {to = bf16} : bf16\n  %f = cast(%b) {to = f32} : f32\n"
            "  return(%u, %f)\n}\n")
    u, f = run(text, np.float32(1.5), np.uint16(0x4040))
    assert u.dtype == np.uint32 and int(u) == 0x3FC00000
    same(f, np.float32(3.0))


def test_bf16_arithmetic_is_refused():
    text = "func @f(%a: bf16) -> (bf16) {\n  %r = add(%a, %a) : bf16\n  return(%r)\n}\n"
    with pytest.raises(I.VerifyError, match="bf16 values are only cast or bitcast"):
        run(text, np.uint16(0x3F80))


# --- tensors: elementwise with scalar broadcast, select --------------------------------------

def test_tensor_elementwise_and_select():
    text = ("func @f(%a: f32, %x: tensor<f32[K]>, %b: tensor<f32[K]>) -> (tensor<f32[K]>) {\n"
            "  %ax = mul(%x, %a) : tensor<f32[K]>\n  %r = add(%ax, %b) : tensor<f32[K]>\n"
            "  %c = cmp(%r, %b) {pred = \"gt\"} : tensor<bool[K]>\n"
            "  %s = select(%c, %r, %b) : tensor<f32[K]>\n  return(%s)\n}\n")
    rng = np.random.default_rng(2)
    x, b = rng.standard_normal((2, 9)).astype(np.float32)
    a = np.float32(1.7)
    r = (x * a) + b
    same(run(text, a, x, b), np.where(r > b, r, b).astype(np.float32))


def test_copy_runtime_shape_mismatch():
    text = ("func @f(%x: tensor<f32[?]>, %y: buffer<f32[?]>) {\n"
            "  copy(%x, %y)\n  return()\n}\n")
    y = np.zeros(3, np.float32)
    with pytest.raises(I.DomainError, match="'copy': cannot copy shape"):
        run(text, np.ones(4, np.float32), y)
    x = np.arange(3, dtype=np.float32)
    run(text, x, y)
    same(y, x)
