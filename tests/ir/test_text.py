"""Textual IR: hand-written fixtures round-trip, and mangled text only ever raises
ParseError or VerifyError."""
import pathlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ninfer_ir as I

FIXTURES = sorted((pathlib.Path(__file__).parent / "fixtures").glob("*.nir"))


def test_enough_fixtures():
    assert len(FIXTURES) >= 10


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_fixture_round_trip(path):
    text = path.read_text()
    m = I.parse(text)
    printed = str(m)
    assert str(I.parse(printed)) == printed
    stripped = "\n".join(line for line in text.splitlines() if not line.startswith("//")) + "\n"
    assert printed == stripped, "fixtures are written in the printer's canonical form"


def test_names_follow_hints_and_are_uniqued():
    b = I.Builder()
    f = I.FuncOp("f", [I.f32], [I.f32], arg_names=["x"])
    b.at_end(f.body)
    a = b.value("neg", f.args[0], name="x")
    c = b.value("neg", a, name="x")
    d = b.value("neg", c)
    b.create("return", [d], result_types=[])
    text = str(I.Module([f]))
    assert "%x_1 = neg(%x)" in text and "%x_2 = neg(%x_1)" in text and "%0 = neg(%x_2)" in text


def test_float_attributes_round_trip_exactly():
    vals = [0.1, -0.0, 5e-324, 1e300, float("inf"), float("-inf"), 3.4028234663852886e38]
    body = "\n".join(f"  %c{i} = constant() {{value = {I.printer.format_attr(v)}}} : f64"
                     for i, v in enumerate(vals))
    m = I.parse(f"func @f() {{\n{body}\n  return()\n}}\n")
    got = [op.attrs["value"] for op in m.funcs[0].body.ops[:-1]]
    assert [repr(g) for g in got] == [repr(v) for v in vals]


def test_string_attribute_escapes():
    m = I.parse('func @f(%c: bool) {\n  check(%c) {message = "a \\"quoted\\" \\\\ line\\nnext"}\n  return()\n}\n')
    assert m.funcs[0].body.ops[0].attrs["message"] == 'a "quoted" \\ line\nnext'
    assert str(I.parse(str(m))) == str(m)


SEED = (FIXTURES[0].parent / "gemv.nir").read_text() if FIXTURES else ""
TOKENS = ["%", "(", ")", "{", "}", ",", ":", "=", "^", "#q8_k", "#q4_k", "f32", "u8", "index",
          "tensor<", "buffer<", "[", "]", ">", "func", "@", "yield()", "return()", "\n", " ",
          "-inf", "nan", "1e9", '"', "for", "if", "%x", "%n", "?", "0", "-1"]


@st.composite
def mutated(draw):
    text = draw(st.sampled_from([p.read_text() for p in FIXTURES]))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["delete", "insert", "replace", "swap", "truncate"]))
        if not text:
            break
        i = draw(st.integers(0, len(text) - 1))
        j = min(len(text), i + draw(st.integers(1, 12)))
        if kind == "delete":
            text = text[:i] + text[j:]
        elif kind == "insert":
            text = text[:i] + draw(st.sampled_from(TOKENS)) + text[i:]
        elif kind == "replace":
            text = text[:i] + draw(st.sampled_from(TOKENS)) + text[j:]
        elif kind == "swap":
            k = draw(st.integers(0, len(text) - 1))
            a, b = sorted((i, k))
            text = text[:a] + text[b:b + 5] + text[a + 5:b] + text[a:a + 5] + text[b + 5:]
        else:
            text = text[:i]
    return text


@settings(max_examples=400, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_mutated_text_raises_only_typed_errors(text):
    try:
        m = I.parse(text)
    except (I.ParseError, I.VerifyError):
        return
    printed = str(m)                      # what parses and verifies must print and re-parse
    assert str(I.parse(printed)) == printed


@settings(max_examples=200, deadline=2000)
@given(st.text(max_size=200))
def test_arbitrary_text_raises_only_typed_errors(text):
    try:
        I.parse(text)
    except (I.ParseError, I.VerifyError):
        pass


def test_non_string_input():
    with pytest.raises(I.ParseError):
        I.parse(b"func @f() {}")
