"""Conversion methods as recipe callables, and the provenance every result records."""
import hashlib

import numpy as np
import pytest

from ninfer_ir import formats
from ninfer_ir.errors import DomainError
from ninfer_ir.formats import FormatError

Q4 = formats.get("q4_g64_fp16")


def halve_absmax(fmt, source, *, shrink=0.5):
    """A recipe's own Q4 method: the canonical codes of the source times ``shrink``."""
    enc = fmt.encode(np.asarray(source, np.float32) * np.float32(shrink), method="grouped_absmax")
    return (enc.codes, enc.scales)


def test_callable_method_encodes_and_records_identity_and_parameters():
    x = np.linspace(-3, 3, 128, dtype=np.float32).reshape(2, 64)
    enc = Q4.encode(x, method=halve_absmax, shrink=0.25)
    want = Q4.encode(x * np.float32(0.25), method="grouped_absmax")
    assert np.array_equal(enc.codes, want.codes)
    assert np.array_equal(enc.scales.view(np.uint16), want.scales.view(np.uint16))
    assert enc.provenance["method"] == f"{__name__}.halve_absmax"
    assert dict(enc.provenance["parameters"]) == {"shrink": 0.25}
    default = Q4.encode(x, method=halve_absmax)          # defaults are recorded too
    assert dict(default.provenance["parameters"]) == {"shrink": 0.5}


def test_callable_result_is_validated_and_copied():
    def illegal(fmt, source):
        return (np.full((1, 64), 8, np.int8), np.ones((1, 1), np.float16))   # Q4 code 8
    with pytest.raises(DomainError, match="outside"):
        Q4.encode(np.zeros((1, 64), np.float32), method=illegal)

    def wrong_type(fmt, source):
        return "codes"
    with pytest.raises(FormatError):
        Q4.encode(np.zeros((1, 64), np.float32), method=wrong_type)

    codes = np.ones((1, 64), np.int8)
    enc = Q4.encode(None, method=lambda fmt, source: (codes, np.ones((1, 1), np.float16)))
    codes[0, 0] = 5
    assert enc.codes[0, 0] == 1 and not enc.codes.flags.writeable
    assert enc.provenance["method"].endswith("<lambda>")


def test_callable_options_are_checked():
    x = np.zeros((1, 64), np.float32)
    with pytest.raises(FormatError, match="options"):
        Q4.encode(x, method=halve_absmax, unknown=1)
    with pytest.raises(FormatError, match="cannot be recorded"):
        Q4.encode(x, method=halve_absmax, shrink=object())


@pytest.mark.parametrize("name, source", [
    ("fp32", np.float32([1.5, -0.0])),
    ("nvfp4", (np.zeros((1, 16), np.uint8), np.zeros((1, 1), np.uint8), np.float32([1.0]))),
    ("fp8_e4m3fn_row_bf16", (np.full((1, 2), 0x38, np.uint8), np.uint16([0x3F80]))),
    ("gguf_q8_0", np.zeros((1, 34), np.uint8)),
])
def test_callables_work_for_every_category(name, source):
    fmt = formats.get(name)

    def passthrough(fmt, source):
        return source
    enc = fmt.encode(source, method=passthrough)
    assert enc.format is fmt
    assert enc.provenance["method"].endswith("passthrough")


@pytest.mark.parametrize("name, source, record", [
    ("bf16", np.uint16([0x3F80, 0x7FA5]), "words"),
    ("fp32", np.float32([1.0]), "words"),
    ("int32", np.int32([-1]), "words"),
    ("gguf_q4_0", np.zeros((2, 18), np.uint8), "blocks"),
])
def test_direct_and_gguf_imports_carry_provenance(name, source, record):
    fmt = formats.get(name)
    enc = fmt.encode(source, method="import_encoded")
    assert enc.format is fmt and enc.provenance["method"] == "import_encoded"
    assert dict(enc.provenance["parameters"]) == {}
    assert getattr(enc, record).shape == np.asarray(source).shape
    assert np.array_equal(fmt.decode(enc).view(np.uint8), fmt.decode(source).view(np.uint8))


def test_grouped_search_records_which_importance_vector():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 64)).astype(np.float32)
    imp = rng.uniform(0.5, 2.0, 64)
    enc = Q4.encode(x, method="grouped_search", importance=imp, negative_scales=False)
    recorded = enc.provenance["parameters"]["importance"]
    assert recorded["sha256"] == hashlib.sha256(imp.astype("<f8").tobytes()).hexdigest()
    assert recorded["dtype"] == "float64" and recorded["shape"] == (64,)
    other = imp.copy()
    other[7] += 1.0
    again = Q4.encode(x, method="grouped_search", importance=other)
    assert again.provenance["parameters"]["importance"]["sha256"] != recorded["sha256"]
    plain = Q4.encode(x, method="grouped_search")
    assert dict(plain.provenance["parameters"]) == {"importance": None,
                                                    "negative_scales": False}


def test_provenance_is_read_only():
    enc = Q4.encode(np.ones((1, 64), np.float32), method="grouped_absmax")
    assert dict(enc.provenance) == {"method": "grouped_absmax", "parameters": {}}
    with pytest.raises(TypeError):
        enc.provenance["method"] = "other"
    with pytest.raises(TypeError):
        enc.provenance["parameters"]["x"] = 1
