"""Q4_K / Q8_K field decoding, checked against gguf-py and the scalar model's decoder.

gguf-py's ``dequantize(data, Q4_K)`` computes, in float32,
``(d * sc[s]) * q[i] - dmin * m[s]`` with ``s = i // 32``. Three comparisons over
10,000 random records (random scale/min bytes and nibbles):

* with d = 1, dmin = 0 written into each record, gguf's value i is ``sc[s] * q[i]``
  exactly; it must equal the product of our decoded ``sc`` and ``q`` (integers);
* with d = 0, dmin = -1, gguf's value i is ``m[s]`` exactly; it must equal our ``m``;
* with random finite binary16 d and dmin, gguf's values must equal, bit for bit,
  the same float32 expression evaluated on our decoded d, dmin, sc, m, q.
"""
import gguf
import numpy as np
import pytest
from gguf.quants import dequantize

from ninfer_ir.numerics.quantized import q4k_fields, q8k_fields
from ninfer_ir.errors import VerifyError

from . import scalar_model as model

Q4_K = gguf.GGMLQuantizationType.Q4_K
N_RECORDS = 10_000


def _f16_bytes(value: float) -> np.ndarray:
    return np.frombuffer(np.float16(value).tobytes(), dtype=np.uint8)


@pytest.fixture(scope="module")
def records():
    rng = np.random.default_rng(2024)
    recs = rng.integers(0, 256, (N_RECORDS, 144), dtype=np.uint8)
    halves = rng.integers(0, 1 << 16, (N_RECORDS, 2), dtype=np.uint16)
    special = (halves >> 10 & 31) == 31
    halves[special] &= np.uint16(0xBFFF)            # exponent 31 -> 15: finite d and dmin
    assert ((halves >> 10 & 31) != 31).all() and ((halves >> 10 & 31) == 0).sum() > 100
    recs[:, 0:4] = halves.astype("<u2").view(np.uint8)
    recs[0, 4:16] = 0xFF                            # every 6-bit field 63
    recs[1, 4:16] = 0x00
    return recs


def _gguf(recs: np.ndarray) -> np.ndarray:
    return dequantize(recs.reshape(-1), Q4_K).reshape(len(recs), 256)


def test_sc_times_q_agrees_with_gguf(records):
    recs = records.copy()
    recs[:, 0:2] = _f16_bytes(1.0)
    recs[:, 2:4] = _f16_bytes(0.0)
    ref = _gguf(recs)
    _, _, sc, m, q = q4k_fields(recs)
    mine = np.repeat(sc.astype(np.int64), 32, axis=1) * q.astype(np.int64)
    assert np.array_equal(ref, mine.astype(np.float32))
    assert sc.max() == 63 and sc.min() == 0 and q.max() == 15 and q.min() == 0
    assert (sc[0] == 63).all() and (m[0] == 63).all() and (sc[1] == 0).all()


def test_m_agrees_with_gguf(records):
    recs = records.copy()
    recs[:, 0:2] = _f16_bytes(0.0)
    recs[:, 2:4] = _f16_bytes(-1.0)
    ref = _gguf(recs)
    _, _, _, m, _ = q4k_fields(recs)
    assert np.array_equal(ref, np.repeat(m.astype(np.float32), 32, axis=1))
    assert m.max() == 63 and m.min() == 0


def test_dequantized_values_agree_with_gguf_bit_for_bit(records):
    ref = _gguf(records)
    d, dmin, sc, m, q = q4k_fields(records)
    scale = d[:, np.newaxis] * sc.astype(np.float32)           # [G,8]
    offset = dmin[:, np.newaxis] * m.astype(np.float32)
    mine = np.repeat(scale, 32, axis=1) * q.astype(np.float32) - np.repeat(offset, 32, axis=1)
    assert np.array_equal(ref.view(np.uint32), mine.view(np.uint32))


def test_binary16_scales_decode_exactly(records):
    d, dmin, _, _, _ = q4k_fields(records)
    halves = records[:, 0:4].copy().view("<u2")
    d_bits, dmin_bits = d.view(np.uint32).tolist(), dmin.view(np.uint32).tolist()
    for g in range(N_RECORDS):
        assert model.f32_bits(model.f16_value(int(halves[g, 0]))) == d_bits[g]
        assert model.f32_bits(model.f16_value(int(halves[g, 1]))) == dmin_bits[g]


def test_fields_agree_with_scalar_decoder_and_encoder(records):
    d, dmin, sc, m, q = q4k_fields(records[:400])
    for g in range(400):
        _, _, msc, mm, mq = model.q4k_decode(bytes(records[g]))
        assert sc[g].tolist() == msc and m[g].tolist() == mm and q[g].tolist() == mq
        again = model.pack_q4k(float(d[g]), float(dmin[g]), msc, mm, mq)
        assert again == bytes(records[g])


def test_q8k_fields_decode():
    rng = np.random.default_rng(4)
    recs = []
    for _ in range(50):
        q = rng.integers(-128, 128, 256).tolist()
        bsum = rng.integers(-32768, 32768, 16).tolist()
        ds = float(np.float32(rng.standard_normal() * 2.0 ** rng.integers(-140, 120)))
        recs.append(model.pack_q8k(ds, q, bsum))
    arr = np.frombuffer(b"".join(recs), dtype=np.uint8).reshape(50, 292)
    ds, q, bsum = q8k_fields(arr)
    assert ds.dtype == np.float32 and q.dtype == np.int8 and bsum.dtype == np.int16
    for g in range(50):
        mds, mq, mbsum = model.q8k_decode(recs[g])
        assert model.f32_bits(mds) == int(ds[g:g + 1].view(np.uint32)[0])
        assert q[g].tolist() == mq and bsum[g].tolist() == mbsum


def test_strided_records_decode_the_same(records):
    wide = np.zeros((200, 300), dtype=np.uint8)
    wide[::2, 7:151] = records[:100]
    view = wide[::2, 7:151]
    for a, b in zip(q4k_fields(view), q4k_fields(records[:100])):
        assert np.array_equal(a.view(np.uint8), b.view(np.uint8))


@pytest.mark.parametrize("bad", [np.zeros((2, 143), np.uint8), np.zeros((2, 144), np.int8),
                                 np.zeros((1, 2, 144), np.uint8)])
def test_decoder_refuses_wrong_records(bad):
    with pytest.raises(VerifyError, match=r"lhs must be u8\[G,144\] \(q4_k records\)"):
        q4k_fields(bad)
