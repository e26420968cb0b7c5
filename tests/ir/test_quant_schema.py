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
    assert {s.name for s in I.quant} == {"q4_k", "q8_k", "q8_0", "q4_0", "q5_0", "iq4_nl",
                                         "q2_k", "q3_k", "q5_k", "q6_k"}


def test_record_tables_are_the_spec():
    q4, q8 = I.quant.q4_k, I.quant.q8_k
    assert (q4.record_bytes, q4.block_elems, q8.record_bytes, q8.block_elems) == (144, 256, 292, 256)
    spans = {name: (f.start, f.stop, f.bits, f.signed) for name, f in q4.fields.items()}
    assert spans == {"d": (0, 2, 16, True), "dmin": (2, 4, 16, True), "sc": (4, 16, 6, False),
                     "m": (4, 16, 6, False), "q": (16, 144, 4, False)}
    spans = {name: (f.start, f.stop, f.bits, f.signed) for name, f in q8.fields.items()}
    assert spans == {"ds": (0, 4, 32, True), "q": (4, 260, 8, True), "bsum": (260, 292, 16, True)}
    for s in I.quant:       # the fields tile the record exactly
        covered = np.zeros(s.record_bytes, bool)
        for f in s.fields.values():
            covered[f.start:f.stop] = True
        assert covered.all()


# sizeof(block_*) of ggml-common.h, and the bits each field holds
GGML = {"q8_0": (34, 32), "q4_0": (18, 32), "q5_0": (22, 32), "iq4_nl": (18, 32), "q2_k": (84, 256),
        "q3_k": (110, 256), "q5_k": (176, 256), "q6_k": (210, 256)}


def test_gguf_block_sizes_and_field_bits():
    for name, (size, elems) in GGML.items():
        s = getattr(I.quant, name)
        assert (s.record_bytes, s.block_elems) == (size, elems)
        for f in s.fields.values():
            assert f.count * f.bits <= 8 * f.nbytes, (name, f.name)
    # every field but the shared-byte scale pairs uses its bytes fully
    for s in I.quant:
        for f in s.fields.values():
            if f.name not in ("sc", "m"):
                assert f.count * f.bits == 8 * f.nbytes, (s.name, f.name)


def test_pair_and_target_tables():
    pairs = {(p.lhs.name, p.rhs.name) for p in Q.PAIRS.values()}
    assert {("q4_k", "q8_k"), ("q4_0", "q8_0"), ("q5_0", "q8_0"), ("q8_0", "q8_0"),
            ("iq4_nl", "q8_0")} <= pairs
    assert {t.schema.name for t in Q.QUANTIZE_TARGETS.values()} == {"q8_k", "q8_0"}
    for p in Q.PAIRS.values():
        assert p.lhs.block_elems == p.rhs.block_elems
        assert len({p.stem for p in Q.PAIRS.values()}) == len(Q.PAIRS)
    assert Q.dot_pair(I.quant.q4_0, I.quant.q8_k) is None
    assert Q.dot_pair("q4_0", I.quant.q8_0) is None


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
        I.quant.q7_k


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


def test_every_layer_covers_every_pair_and_target():
    import re
    from ninfer_ir.numerics import quantized
    from ninfer_ir.ops_select import KERNELS
    from ninfer_ir.backends.clike.library import GGUF_BLOCK_FUNCTIONS, RECORD_FUNCTIONS
    c_source = RECORD_FUNCTIONS + GGUF_BLOCK_FUNCTIONS
    defined = set(re.findall(r"NQ_FN \w+ (\w+)\(", c_source))
    for p in Q.PAIRS.values():
        assert callable(quantized.pair_values(p)), p
        cpu = importlib.import_module(f"ninfer_ir.backends.llvm.kernels.{p.cpu_module}")
        assert callable(cpu.add_dot) and callable(cpu.add_rows), p
        assert p.rows_kernel in KERNELS and p.c_record in defined, p
    for t in Q.QUANTIZE_TARGETS.values():
        assert callable(quantized.oracle(t.oracle)), t
        cpu = importlib.import_module(f"ninfer_ir.backends.llvm.kernels.{t.cpu_module}")
        assert callable(cpu.add_quantize) and t.c_block in defined, t
        assert set(quantized.oracle(t.oracle).__globals__["REASON_TEXT"]) <= {1, 2, 3, 4}
