"""Hostile IR text: deep nesting and huge literals are refused with a located ParseError."""
import pytest

import ninfer_ir as I
from ninfer_ir.frontend.textual import MAX_NESTING


def _nested_ifs(n):
    opens = "".join("  if(%c) ({\n  ^():\n" for _ in range(n))
    closes = "".join("  yield()\n  }, {\n  ^():\n  yield()\n  })\n" for _ in range(n))
    return "func @f(%c: bool) {\n" + opens + closes + "  return()\n}\n"


def _constant(value_text, ty="index"):
    return "func @f() {\n  %a = constant() {value = " + value_text + "} : " + ty + \
        "\n  return()\n}\n"


def test_1000_nested_regions_is_a_located_parse_error():
    with pytest.raises(I.ParseError) as e:
        I.parse(_nested_ifs(1000))
    assert "nested more than" in str(e.value)
    assert e.value.line > 1


def test_nesting_up_to_the_limit_parses_and_round_trips():
    m = I.parse(_nested_ifs(MAX_NESTING))
    assert str(I.parse(str(m))) == str(m)


def test_5000_deep_list_attribute_is_a_located_parse_error():
    with pytest.raises(I.ParseError) as e:
        I.parse(_constant("[" * 5000 + "]" * 5000))
    assert "list attribute nested" in str(e.value)
    assert e.value.line == 2


@pytest.mark.parametrize("text", [
    _constant("9" * 5000),
    _constant("-" + "9" * 5000),
    "func @f(%a: tensor<f32[" + "9" * 5000 + "]>) {\n  return()\n}\n",
])
def test_5000_digit_integer_is_a_located_parse_error(text):
    with pytest.raises(I.ParseError) as e:
        I.parse(text)
    assert "too long" in str(e.value)
    assert e.value.line >= 1 and e.value.col > 1
