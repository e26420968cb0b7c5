"""Every op of the closed table has an interpreter rule; the fixtures of tests/ir all run."""
import pathlib

import numpy as np
import pytest

import ninfer_ir as I
from ninfer_ir.backends.interp.interpreter import RULES, interpret
from ninfer_ir.ir import FuncOp, Operation


def test_every_op_has_a_rule():
    missing = [name for name, cls in I.OPS.items() if cls is not FuncOp and cls not in RULES]
    assert missing == []
    assert FuncOp not in RULES


def test_rules_only_for_ops_of_the_table():
    assert set(RULES) <= set(I.OPS.values())


@pytest.mark.no_round_trip
def test_op_without_rule_is_refused():
    class Mystery(Operation):
        name = "mystery"

    m = I.parse("func @f(%x: f32) -> (f32) {\n  return(%x)\n}\n")
    f = m.funcs[0]
    f.body.insert(0, Mystery())
    with pytest.raises(I.VerifyError, match="no rule for 'mystery'"):
        interpret(f, np.float32(1.0))


FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "ir" / "fixtures"


def _arg(t, rng, symbols):
    if isinstance(t, I.ScalarType):
        return np.asarray(rng.integers(0, 4), dtype=t.np_dtype)
    shape = []
    for d in t.shape:
        if isinstance(d, str):
            d = symbols.setdefault(d, int(rng.integers(1, 4)))
        shape.append(d)
    if t.dtype is I.f32:
        return rng.standard_normal(shape).astype(np.float32)
    if t.dtype is I.u8 and shape and shape[-1] == 144:
        a = rng.integers(0, 256, shape, dtype=np.uint8)
        a[..., 0:4] = np.frombuffer(np.tile(np.array([0.01, 0.002], "<f2"),
                                            int(np.prod(shape[:-1]))).tobytes(),
                                    np.uint8).reshape(*shape[:-1], 4)
        return a
    return rng.integers(0, 16, shape).astype(t.dtype.np_dtype)


@pytest.mark.skipif(not FIXTURES.is_dir(), reason="tests/ir fixtures are absent")
def test_fixtures_run():
    """Smoke: every function of every shared fixture runs on small random arguments."""
    rng = np.random.default_rng(7)
    count = 0
    for path in sorted(FIXTURES.glob("*.nir")):
        module = I.parse(path.read_text())
        for f in module.funcs:
            symbols = {"H": 2, "K": 4, "P": 2, "S": 1}   # int4_decode reads x[2*i + 1];
            # decode_dot: 4 four-bit codes pack into 2 bytes with 1 scale
            args = [_arg(a.type, rng, symbols) for a in f.args]
            if f.sym_name == "rowmax":
                args[1] = np.asarray(0, dtype=np.int64)
            if f.sym_name == "second":
                args[1] = np.asarray(3, dtype=np.int8)
            interpret(f, *args)
            count += 1
    assert count >= 10
