"""The registry kernels (tests/kernels.py): IR snapshot, textual round trip, and the
interpreter's output equal, bit for bit, to an independent numpy reference.

Snapshots live in tests/frontend/snapshots/<name>.nir; after an intended change to
the frontend's output, regenerate them with ``python tests/frontend/update_snapshots.py``
and review the diff.
"""
import zlib
from pathlib import Path

import numpy as np
import pytest

import ninfer_ir as I
from ninfer_ir.types import TensorType
from tests.kernels import KERNELS, assert_same_bits, outputs

SNAPSHOTS = Path(__file__).resolve().parent / "snapshots"
NAMES = sorted(KERNELS)


def test_registry_is_large_enough():
    assert len(KERNELS) >= 15
    for needed in ("q4k_gemv", "q4k_gemm", "q4k_gate_up", "int4_gemv", "leaky_relu",
                   "row_sum", "tile_bias", "window_accumulate"):
        assert needed in KERNELS


def test_every_snapshot_belongs_to_a_kernel():
    assert {p.stem for p in SNAPSHOTS.glob("*.nir")} == set(KERNELS)


@pytest.mark.parametrize("name", NAMES)
def test_snapshot(name):
    expected = (SNAPSHOTS / f"{name}.nir").read_text(encoding="utf-8")
    assert str(KERNELS[name].kernel.ir) == expected, (
        f"IR of {name} changed; if intended, run python tests/frontend/update_snapshots.py")


@pytest.mark.parametrize("name", NAMES)
def test_round_trip(name):
    text = str(KERNELS[name].kernel.ir)
    assert str(I.parse(text)) == text


def _dims(case, variant):
    if variant == "default":
        return dict(case.default_dims)
    return {k: v + 1 for k, v in case.default_dims.items()}


@pytest.mark.parametrize("variant", ["default", "larger"])
@pytest.mark.parametrize("name", NAMES)
def test_interpreter_matches_reference(name, variant):
    case = KERNELS[name]
    rng = np.random.default_rng(zlib.crc32(f"{name}/{variant}".encode()))
    inputs = case.make_inputs(rng, **_dims(case, variant))
    frozen = [np.copy(a) for a in inputs]
    want = case.reference(*frozen)
    returned = I.interpret(case.kernel, *inputs)
    got = outputs(case, inputs, returned)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert_same_bits(g, w)
    for a, before, t in zip(inputs, frozen, case.kernel.func.arg_types):
        if isinstance(t, TensorType):
            assert_same_bits(a, before)


def test_gemv_is_the_design_kernel():
    text = str(KERNELS["q4k_gemv"].kernel.ir)
    assert "%xq = quantize(%x) {format = #q8_k} : tensor<u8[G,292]>" in text
    assert "^(%n: index):" in text
    assert text.index("quantize(") < text.index("for(")


def test_shared_quantize_is_computed_once():
    text = str(KERNELS["q4k_gate_up"].kernel.ir)
    assert text.count("quantize(") == 1
    assert text.count("quantized_dot(") == 2
