"""The ``returns`` attribute of a function is checked by the verifier, so no target
can run a function whose outputs do not exist."""
import numpy as np
import pytest

import ninfer_ir as I

TEXT = """func @f(%x: tensor<f32[4]>, %y: buffer<f32[4]>) ATTRS {
  return()
}
"""


@pytest.mark.parametrize("value", ["5", "3", "-1", "true", "1.5", "\"1\"", "2"])
def test_bad_returns_is_a_verify_error_naming_the_function(value):
    with pytest.raises(I.VerifyError) as e:
        I.parse(TEXT.replace("ATTRS", "{returns = " + value + "}"))
    assert "'returns' must count trailing buffer parameters" in str(e.value)
    assert e.value.op is not None and e.value.op.name == "func"


def test_returns_counting_the_trailing_buffer_verifies():
    m = I.parse(TEXT.replace("ATTRS", "{returns = 1}"))
    assert m.funcs[0].attrs["returns"] == 1


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_no_target_runs_a_function_with_a_bad_returns(target):
    m = I.parse(TEXT.replace("ATTRS", "{returns = 5}").replace(", %y: buffer<f32[4]>", ""),
                verify=False)
    x = np.ones(4, np.float32)
    with pytest.raises(I.VerifyError, match="'returns'"):
        I.compile(m, target)(x)
    assert (x == 1).all()
