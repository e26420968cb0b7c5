"""I.quant is a closed table of frozen schemas, and a schema is never a dtype."""
import copy
import importlib
import pickle

import numpy as np
import pytest

import ninfer_ir as I
from ninfer_ir import types as T

Q = importlib.import_module("ninfer_ir.quant")


def test_members_and_printing():
    assert str(I.quant.q4_k) == "#q4_k" and str(I.quant.q8_k) == "#q8_k"
    assert set(iter(I.quant)) == {I.quant.q4_k, I.quant.q8_k}


def test_record_tables_are_the_spec():
    q4, q8 = I.quant.q4_k, I.quant.q8_k
    assert (q4.record_bytes, q4.block_elems, q8.record_bytes, q8.block_elems) == (144, 256, 292, 256)
    spans = {name: (f.start, f.stop, f.bits, f.signed) for name, f in q4.fields.items()}
    assert spans == {"d": (0, 2, 16, True), "dmin": (2, 4, 16, True), "sc": (4, 16, 6, False),
                     "m": (4, 16, 6, False), "q": (16, 144, 4, False)}
    spans = {name: (f.start, f.stop, f.bits, f.signed) for name, f in q8.fields.items()}
    assert spans == {"ds": (0, 4, 32, True), "q": (4, 260, 8, True), "bsum": (260, 292, 16, True)}
    for s in (q4, q8):       # the fields tile the record exactly
        covered = np.zeros(s.record_bytes, bool)
        for f in s.fields.values():
            covered[f.start:f.stop] = True
        assert covered.all()


def test_no_register_and_no_construction():
    assert not hasattr(Q, "register") and not hasattr(I.quant, "register")
    with pytest.raises(AttributeError):
        I.quant.register
    with pytest.raises(TypeError, match="closed set"):
        Q.QuantSchema("q5_k", 176, 256, ())
    with pytest.raises(AttributeError):
        I.quant.q5_k = I.quant.q4_k
    with pytest.raises(AttributeError):
        I.quant.q4_k.record_bytes = 100
    with pytest.raises(TypeError):
        Q.SCHEMAS["q5_k"] = I.quant.q4_k
    with pytest.raises(AttributeError, match="closed set"):
        I.quant.q2_k


def test_copies_are_the_same_object():
    s = I.quant.q8_k
    assert copy.copy(s) is s and copy.deepcopy(s) is s and pickle.loads(pickle.dumps(s)) is s


def test_a_format_is_not_a_dtype():
    for s in I.quant:
        assert not isinstance(s, T.ScalarType) and not isinstance(s, T.Type)
        with pytest.raises(TypeError):
            T.TensorType(s, (4,))
        assert s not in T.SCALARS.values()
    with pytest.raises(ValueError):
        T.scalar("q4_k")
    with pytest.raises(I.ParseError):
        I.parse("func @f(%x: tensor<q4_k[4]>) {\n  return()\n}\n")
    assert I.quant.q8_k not in [I.u8, I.f32]
