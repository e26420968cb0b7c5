"""GGUF block formats: bit-identical to gguf-py's dequantize where gguf-py has the
type, to hand-written ggml references otherwise, plus geometry and row gathers."""
from importlib.metadata import version

import numpy as np
import pytest
from gguf import GGMLQuantizationType
from gguf import quants as gguf_quants

from ninfer_ir import formats
from ninfer_ir.formats import Category, FormatError

from formats_oracles import f16_value, f32, f32_bits, finite_f16_words

GGUF_NAMES = [n for n in formats.names() if formats.get(n).category is Category.GGUF_BLOCK]
# byte offsets of the binary16 fields of each block_* struct (ggml-common.h)
F16_FIELDS = {
    "gguf_q8_0": [0], "gguf_q4_0": [0], "gguf_q5_0": [0], "gguf_q2_0": [0],
    "gguf_q2_k": [80, 82], "gguf_q3_k": [108], "gguf_q4_k": [0, 2], "gguf_q5_k": [0, 2],
    "gguf_q6_k": [208], "gguf_iq2_xxs": [0], "gguf_iq2_xs": [0], "gguf_iq3_xxs": [0],
    "gguf_iq1_s": [0], "gguf_iq4_nl": [0], "gguf_iq3_s": [0], "gguf_iq2_s": [0],
    "gguf_iq4_xs": [0], "gguf_iq1_m": [],
}


def random_blocks(name: str, rows: int, blocks_per_row: int, seed: int) -> np.ndarray:
    """Random bytes with every binary16 scale field set to a finite value."""
    fmt = formats.get(name)
    rng = np.random.default_rng(seed)
    b = rng.integers(0, 256, (rows * blocks_per_row, fmt.block_bytes), dtype=np.uint8)
    for offset in F16_FIELDS[name]:
        words = finite_f16_words(rng, len(b))
        b[:, offset:offset + 2] = words.view(np.uint8).reshape(-1, 2)
    if name == "gguf_iq1_m":      # the scale is the top nibbles of the four u16 at byte 48
        words = finite_f16_words(rng, len(b))
        for i in range(4):
            nibble = ((words >> (4 * i)) & 0xF).astype(np.uint8)
            b[:, 49 + 2 * i] = (b[:, 49 + 2 * i] & 0x0F) | (nibble << 4)
    return b.reshape(rows, blocks_per_row * fmt.block_bytes)


def gguf_py_type(fmt):
    try:
        qtype = GGMLQuantizationType(fmt.ggml_type)
    except ValueError:
        return None
    return qtype if qtype in gguf_quants._type_traits else None


def test_which_types_gguf_py_lacks():
    lacking = [n for n in GGUF_NAMES if gguf_py_type(formats.get(n)) is None]
    print(f"gguf-py {version('gguf')} lacks {lacking}")
    assert set(lacking) <= set(HAND_REFERENCES), f"no reference for {lacking}"


@pytest.mark.parametrize("name", GGUF_NAMES)
def test_decode_is_bit_identical_to_gguf_py(name):
    fmt = formats.get(name)
    blocks = random_blocks(name, rows=64, blocks_per_row=4, seed=fmt.ggml_type)
    got = fmt.decode(blocks)
    assert got.dtype == np.float32 and got.shape == (64, 4 * fmt.block_values)
    qtype = gguf_py_type(fmt)
    if qtype is None:             # gguf-py lacks the type: ggml's definition, by hand
        per_block = blocks.reshape(-1, fmt.block_bytes)
        want = np.array([HAND_REFERENCES[name](b) for b in per_block], np.uint32)
        assert np.array_equal(got.view(np.uint32).reshape(want.shape), want)
    else:
        want = gguf_quants.dequantize(blocks, qtype)
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


# -- hand references from ggml's dequantize_row_* ------------------------------------
def ref_q2_0(block: np.ndarray) -> list[int]:
    d = f16_value(int(block[0]) | int(block[1]) << 8)
    out = []
    for j in range(64):
        q = (int(block[2 + j // 4]) >> ((j % 4) * 2)) & 3
        out.append(f32_bits(f32((q - 1) * d)))
    return out


def ref_q4_0(block: np.ndarray) -> list[int]:
    d = f16_value(int(block[0]) | int(block[1]) << 8)
    low = [f32_bits(f32(((int(block[2 + j]) & 15) - 8) * d)) for j in range(16)]
    high = [f32_bits(f32(((int(block[2 + j]) >> 4) - 8) * d)) for j in range(16)]
    return low + high


def ref_q8_0(block: np.ndarray) -> list[int]:
    d = f16_value(int(block[0]) | int(block[1]) << 8)
    return [f32_bits(f32(int(np.int8(block[2 + j])) * d)) for j in range(32)]


HAND_REFERENCES = {"gguf_q2_0": ref_q2_0, "gguf_q4_0": ref_q4_0, "gguf_q8_0": ref_q8_0}


@pytest.mark.parametrize("name", list(HAND_REFERENCES))
def test_decode_matches_hand_reference(name):
    fmt = formats.get(name)
    blocks = random_blocks(name, rows=5, blocks_per_row=2, seed=1)
    got = fmt.decode(blocks).view(np.uint32)
    per_block = blocks.reshape(-1, fmt.block_bytes)
    want = np.array([HAND_REFERENCES[name](b) for b in per_block], np.uint32)
    assert np.array_equal(got.reshape(want.shape), want)


@pytest.mark.parametrize("grid_name, cls", [
    ("iq2xxs", gguf_quants.IQ2_XXS), ("iq2xs", gguf_quants.IQ2_XS), ("iq2s", gguf_quants.IQ2_S),
    ("iq3xxs", gguf_quants.IQ3_XXS), ("iq3s", gguf_quants.IQ3_S), ("iq1s", gguf_quants.IQ1_S),
])
def test_grids_equal_gguf_py_tables(grid_name, cls):
    from ninfer_ir.formats._ggml_grids import grid
    cls.init_grid()
    assert np.array_equal(grid(grid_name), cls.grid.reshape(grid(grid_name).shape))


def test_geometry_and_row_gathers():
    fmt = formats.get("gguf_q4_k")
    blocks = random_blocks("gguf_q4_k", rows=6, blocks_per_row=2, seed=3)
    full = fmt.decode(blocks)
    assert full.shape == (6, 512) and fmt.row_bytes(512) == 288
    for index in (slice(2, 5), [5, 1, 1]):
        assert np.array_equal(fmt.decode(blocks[index]).view(np.uint32),
                              full[index].view(np.uint32))
    assert fmt.decode(blocks[0]).shape == (512,)
    assert fmt.decode(blocks.reshape(2, 3, 288)).shape == (2, 3, 512)
    with pytest.raises(FormatError, match="whole 144-byte blocks"):
        fmt.decode(blocks[:, :200])
    with pytest.raises(FormatError, match="dtype"):
        fmt.decode(blocks.view(np.int8))
    with pytest.raises(FormatError):
        fmt.row_bytes(100)
    stored = fmt.encode(blocks, method="import_encoded")
    assert np.array_equal(stored.blocks, blocks) and not stored.blocks.flags.writeable
    assert np.array_equal(fmt.decode(stored).view(np.uint32), full.view(np.uint32))


def test_q2_import_from_gguf_q2_0_preserves_words():
    blocks = random_blocks("gguf_q2_0", rows=3, blocks_per_row=2, seed=9)
    q2 = formats.get("q2_g64_fp16")
    enc = q2.encode(blocks, method="import_encoded", source_format="gguf_q2_0")
    assert enc.codes.shape == (3, 128) and enc.scales.shape == (3, 2)
    per_block = blocks.reshape(6, 18)
    assert np.array_equal(enc.scales.view(np.uint16).reshape(-1),
                          per_block[:, 0].astype(np.uint16) | per_block[:, 1].astype(np.uint16) << 8)
    assert np.array_equal(q2.decode(enc).view(np.uint32),
                          formats.get("gguf_q2_0").decode(blocks).view(np.uint32))
    with pytest.raises(FormatError):
        formats.get("q4_g64_fp16").encode(blocks, method="import_encoded",
                                          source_format="gguf_q2_0")
