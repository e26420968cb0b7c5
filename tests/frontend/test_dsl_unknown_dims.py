"""The quantized ops need a known record count G: a ``None`` (unknown) dim is refused
with a message that says so, at the call in the kernel's source."""
import pytest

import ninfer_ir as I


def quantize_to_buffer(x: I.Tensor[I.f32, None, 256], r: I.Buffer[I.u8, None, 292]):
    r[:] = I.quantize(x, format=I.quant.q8_k)


def quantize_returned(x: I.Tensor[I.f32, None, 256]) -> I.Tensor[I.u8, None, 292]:
    return I.quantize(x, format=I.quant.q8_k)


def quantized_dot_unknown(w: I.Tensor[I.u8, None, 144], x: I.Tensor[I.u8, None, 292],
                          y: I.Buffer[I.f32]):
    y[...] = I.quantized_dot(w, x, lhs_format=I.quant.q4_k, rhs_format=I.quant.q8_k,
                             acc_dtype=I.f32)


@pytest.mark.parametrize("fn, what, line_text", [
    (quantize_to_buffer, "values", "r[:] = I.quantize"),
    (quantize_returned, "values", "return I.quantize"),
    (quantized_dot_unknown, "lhs", "y[...] = I.quantized_dot"),
])
def test_unknown_record_count_is_refused_with_a_clear_message(fn, what, line_text):
    with pytest.raises(I.DSLError) as e:
        I.kernel(fn)
    msg = str(e.value)
    assert f"{what} has an unknown record count G (?), which is not allowed here" in msg
    assert "(None)" not in msg
    assert line_text in msg


def test_the_verifier_says_the_same_for_ir_text():
    text = ("func @f(%x: tensor<f32[?,256]>) {\n"
            "  %q = quantize(%x) {format = #q8_k} : tensor<u8[?,292]>\n  return()\n}\n")
    with pytest.raises(I.VerifyError, match=r"unknown record count G \(\?\)"):
        I.parse(text)
