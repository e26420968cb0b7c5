"""Storage layouts: the closed table, refused pairs, contiguous_le_v1 bytes and the
known block-scale swizzle offsets of block_scale_k16_m128x4_v1."""
import pickle
import struct

import numpy as np
import pytest

from ninfer_ir import formats
from ninfer_ir.errors import DomainError
from ninfer_ir.formats import FormatError

GROUPED = ["q2_g64_fp16", "q4_g64_fp16", "q5_g64_fp16", "q6_g64_fp16", "q8_g32_fp16",
           "t2_g128_fp16"]
# the layouts the reference registers, and the formats each serves
REGISTERED = {
    "contiguous_le_v1": ["bf16", "fp32", "int32"],
    "row_split_k128_v1": GROUPED,
    "block_scale_k16_m128x4_v1": ["nvfp4"],
    "row_scale_v1": ["fp8_e4m3fn_row_bf16"],
    "row_interleaved_v1": ["fp8_e4m3fn_row_fp16"],
}
UNDEFINED = ["row_split_k128_v1", "row_scale_v1", "row_interleaved_v1"]
NV = formats.get("nvfp4")
BLOCK = formats.layout("block_scale_k16_m128x4_v1")
CONTIGUOUS = formats.layout("contiguous_le_v1")


def test_the_table_is_closed():
    assert formats.layouts() == tuple(REGISTERED)
    for name, served in REGISTERED.items():
        lay = formats.layout(name)
        assert lay.format_names == tuple(served) and lay.defined == (name not in UNDEFINED)
        assert pickle.loads(pickle.dumps(lay)) is lay
    with pytest.raises(FormatError, match="unknown storage layout"):
        formats.layout("row_split_k64_v1")
    with pytest.raises(FormatError):
        formats.layout(None)
    with pytest.raises(TypeError, match="closed set"):
        formats.Layout("mine_v1", ("fp32",), "rule")
    with pytest.raises(AttributeError):
        CONTIGUOUS.defined = False


@pytest.mark.parametrize("name", formats.names())
@pytest.mark.parametrize("layout", list(REGISTERED))
def test_every_format_layout_pair_is_resolved_or_refused(name, layout):
    if name not in REGISTERED[layout]:
        with pytest.raises(FormatError, match="not a registered layout"):
            formats.layout(layout, name)
    elif layout in UNDEFINED:
        with pytest.raises(FormatError, match="not defined"):
            formats.layout(layout, name)
    else:
        assert formats.layout(layout, formats.get(name)).name == layout


def test_unknown_format_in_a_pair_is_refused():
    with pytest.raises(FormatError, match="unknown numeric format"):
        formats.layout("contiguous_le_v1", "fp64")


def test_contiguous_le_bytes_are_little_endian_row_major():
    words = np.array([[0x3F800000, 0x80000001], [0x7FC12345, 0x00000000]], np.uint32)
    data = CONTIGUOUS.to_bytes("fp32", words)
    want = b"".join(struct.pack("<I", int(w)) for w in words.reshape(-1))
    assert data.dtype == np.uint8 and data.tobytes() == want
    back = CONTIGUOUS.from_bytes("fp32", data, (2, 2))
    assert back.words.dtype == np.uint32 and np.array_equal(back.words, words)
    bf = CONTIGUOUS.to_bytes("bf16", formats.get("bf16").encode(np.uint16([0x7FA5, 0x8000]),
                                                                method="import_encoded"))
    assert bf.tobytes() == b"\xa5\x7f\x00\x80"
    i32 = CONTIGUOUS.to_bytes("int32", np.int32([-2]))
    assert i32.tobytes() == b"\xfe\xff\xff\xff"
    with pytest.raises(FormatError, match="needs 8 bytes"):
        CONTIGUOUS.from_bytes("fp32", data[:6], (2,))
    with pytest.raises(FormatError, match="not a registered layout"):
        CONTIGUOUS.to_bytes("q4_g64_fp16", words)
    with pytest.raises(FormatError, match="no implicit conversion"):
        CONTIGUOUS.to_bytes("bf16", words)


# Offsets derived by hand from the documented rule: padded scale columns C = ceil(G/4)*4;
# tile = (r // 128) * (C / 4) + c // 4; offset = 512 * tile + (r % 32) * 16
# + ((r % 128) // 32) * 4 + c % 4.  For N = 256, K = 128 (G = 8 scales a row, C = 8):
KNOWN_OFFSETS_256x128 = {
    (0, 0): 0, (0, 1): 1, (0, 3): 3,
    (1, 0): 16,            # next row of a 32-row group: 16 bytes on
    (31, 0): 496,
    (32, 0): 4,            # row 32 is row 0 of the second 32-row group: 4 bytes on
    (64, 0): 8, (96, 3): 15,
    (5, 2): 82,            # 5 * 16 + 2
    (33, 2): 22,           # 1 * 16 + 1 * 4 + 2
    (127, 3): 511,         # the last byte of the first tile
    (0, 4): 512,           # the second column tile of row tile 0
    (128, 0): 1024,        # row tile 1 starts after two tiles
    (130, 5): 1569,        # tile 3: 1536 + 2 * 16 + 1
    (200, 7): 1675,        # tile 3: 1536 + 8 * 16 + 2 * 4 + 3
}


@pytest.mark.parametrize("at, offset", list(KNOWN_OFFSETS_256x128.items()))
def test_known_block_scale_swizzle_offsets(at, offset):
    assert BLOCK.scale_offset(*at, 256, 128) == offset


def random_nvfp4(rng, n, k):
    return NV.encode((rng.integers(0, 16, (n, k), dtype=np.uint8),
                      rng.integers(1, 0x7F, (n, k // 16), dtype=np.uint8),
                      np.float32([1.0])), method="import_encoded")


def test_block_scale_plane_puts_each_scale_at_its_known_offset():
    enc = random_nvfp4(np.random.default_rng(1), 256, 128)
    plane = BLOCK.scale_plane(NV, enc)
    assert plane.shape == (2048,) and plane.dtype == np.uint8      # 2 x 2 tiles of 512
    for (r, c), offset in KNOWN_OFFSETS_256x128.items():
        assert plane[offset] == enc.scales[r, c]


@pytest.mark.parametrize("n, k", [(1, 16), (3, 96), (130, 80), (256, 128)])
def test_block_scale_plane_round_trip_and_zero_padding(n, k):
    enc = random_nvfp4(np.random.default_rng(n), n, k)
    plane = BLOCK.scale_plane(NV, enc)
    rows, cols = -(-n // 128) * 128, -(-(k // 16) // 4) * 4
    assert plane.size == rows * cols
    assert np.count_nonzero(plane) == np.count_nonzero(enc.scales)   # padding is 0x00
    assert np.array_equal(BLOCK.scales_from_plane(NV, plane, n, k), enc.scales)
    if plane.size > enc.scales.size:
        dirty = plane.copy()
        dirty[np.flatnonzero(plane == 0)[-1]] = 1
        with pytest.raises(DomainError, match="padding"):
            BLOCK.scales_from_plane(NV, dirty, n, k)


def test_block_scale_refusals():
    with pytest.raises(FormatError, match="multiple of 16"):
        BLOCK.scale_offset(0, 0, 128, 40)
    with pytest.raises(FormatError, match="outside"):
        BLOCK.scale_offset(128, 0, 128, 64)
    with pytest.raises(FormatError):
        BLOCK.scale_offset("0", 0, 128, 64)
    with pytest.raises(FormatError, match="needs a scale plane of 512"):
        BLOCK.scales_from_plane(NV, np.zeros(100, np.uint8), 2, 32)
    with pytest.raises(FormatError, match="not a registered layout"):
        BLOCK.scale_plane("fp8_e4m3fn_row_bf16", None)
