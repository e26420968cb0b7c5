"""The hand-written LLVM kernels (``backends.llvm.kernels.qkernels``) against the numpy oracle.

Every ISA level this host can run (AVX-512 VNNI, AVX2, portable) is compiled
and compared bit for bit with ``ninfer_ir.numerics.quantized`` on random and
adversarial inputs, with record strides that differ from the record size and
buffers at odd byte offsets. Also: the status word of quantize, the
instruction selection in the assembly, and the JIT's object cache.
"""
from __future__ import annotations

import ctypes
import os
import struct
from pathlib import Path

import numpy as np
import pytest

from ninfer_ir.numerics import quantized as oracle
from ninfer_ir.backends.llvm.runtime import jit as J
from ninfer_ir.backends.llvm.runtime import objcache
from ninfer_ir.backends.llvm.kernels.qkernels import (DOT, DOT_ROWS, QUANTIZE, SIGNATURES, build_module,
                                    decode_status, load_kernels)
from ninfer_ir.errors import DomainError, TargetUnavailable

Q4, Q8 = 144, 292


ISAS = J.available_isas()
# The VNNI level with and without GF2P8AFFINEQB (when the host has GFNI).
VARIANTS = [(isa, None) for isa in ISAS]
if "avx512vnni" in ISAS and J.host_target("avx512vnni").has_feature("gfni"):
    VARIANTS.append(("avx512vnni", False))


@pytest.fixture(scope="module", params=VARIANTS,
                ids=[isa + ("" if gfni is None else "-nogfni") for isa, gfni in VARIANTS])
def kernels(request, tmp_path_factory):
    isa, gfni = request.param
    return load_kernels(isa, gfni=gfni, cache_dir=tmp_path_factory.mktemp(f"objs-{isa}"))


# --- buffers at chosen offsets and strides --------------------------------------------

class Placed:
    """Records copied into a fresh buffer at ``offset`` bytes with ``stride`` bytes apart.

    The gaps hold a canary pattern so that writes outside the records show.
    """

    def __init__(self, records: np.ndarray, stride: int, offset: int = 0, lead_stride=None):
        records = np.ascontiguousarray(records, dtype=np.uint8)
        size = records.shape[-1]
        lead = records.shape[:-2]
        g = records.shape[-2]
        per_lead = lead_stride if lead_stride is not None else max(g * stride, 1)
        count = int(np.prod(lead)) if lead else 1
        total = offset + count * per_lead + stride + 64
        self.raw = np.full(total + 64, 0xA5, dtype=np.uint8)
        self.base = (-self.raw.ctypes.data) % 64 + offset     # offset from a 64-byte boundary
        flat = records.reshape(count, g, size)
        for n in range(count):
            for k in range(g):
                start = self.base + n * per_lead + k * stride
                self.raw[start:start + size] = flat[n, k]
        self.stride, self.lead_stride = stride, per_lead
        self.snapshot = self.raw.copy()

    @property
    def address(self) -> int:
        return self.raw.ctypes.data + self.base

    def unchanged(self) -> bool:
        return np.array_equal(self.raw, self.snapshot)


def same_bits(got, want) -> bool:
    """Bit equality of f32 arrays; any NaN matches any NaN (payloads are not specified)."""
    got = np.asarray(got, dtype=np.float32).ravel()
    want = np.asarray(want, dtype=np.float32).ravel()
    both_nan = np.isnan(got) & np.isnan(want)
    return bool(np.all(both_nan | (got.view(np.uint32) == want.view(np.uint32))))


# --- record generators ----------------------------------------------------------------

def f16_bits(values) -> np.ndarray:
    return np.asarray(values, dtype=np.float16).view(np.uint16)


def q4k_records(rng, shape, d_bits=None, dmin_bits=None) -> np.ndarray:
    """Random Q4_K records: random nibbles and scale bytes, finite f16 d/dmin unless given."""
    a = rng.integers(0, 256, size=tuple(shape) + (Q4,), dtype=np.uint8)
    if d_bits is None:
        d_bits = f16_bits(rng.standard_normal(shape) * 2.0 ** rng.integers(-14, 4, size=shape))
    if dmin_bits is None:
        dmin_bits = f16_bits(rng.standard_normal(shape) * 2.0 ** rng.integers(-14, 4, size=shape))
    a[..., 0:2] = np.asarray(d_bits, dtype="<u2").reshape(tuple(shape) + (1,)).view(np.uint8)
    a[..., 2:4] = np.asarray(dmin_bits, dtype="<u2").reshape(tuple(shape) + (1,)).view(np.uint8)
    return a


def q8k_records(rng, g, valid=True, ds=None) -> np.ndarray:
    """Q8_K records: quantized random rows (valid) or random bytes with a finite ds."""
    if valid:
        rows = rng.standard_normal((g, 256)).astype(np.float32) * np.float32(3.0)
        out = oracle.quantize_q8k(rows)
    else:
        out = rng.integers(0, 256, size=(g, Q8), dtype=np.uint8)
        out[:, 0:4] = np.float32(rng.standard_normal(g)).reshape(g, 1).view(np.uint8)
    if ds is not None:
        out[:, 0:4] = np.asarray(ds, dtype="<f4").reshape(g, 1).view(np.uint8)
    return out


def extreme_q4k(g, d=1.0, dmin=1.0) -> np.ndarray:
    """sc = m = 63 for every sub-block, every q = 15."""
    a = np.full((g, Q4), 0xFF, dtype=np.uint8)
    a[:, 0:2] = f16_bits([d] * g).reshape(g, 1).view(np.uint8)
    a[:, 2:4] = f16_bits([dmin] * g).reshape(g, 1).view(np.uint8)
    return a


def q8k_from(q: np.ndarray, ds, bsum=None) -> np.ndarray:
    """Q8_K records from i8 quants [g,256], ds and (default: exact) bsum."""
    g = q.shape[0]
    out = np.zeros((g, Q8), dtype=np.uint8)
    out[:, 0:4] = np.asarray(ds, dtype="<f4").reshape(g, 1).view(np.uint8)
    out[:, 4:260] = q.astype(np.int8).view(np.uint8)
    if bsum is None:
        bsum = q.astype(np.int64).reshape(g, 16, 16).sum(axis=2)
    out[:, 260:292] = np.asarray(bsum, dtype="<i2").view(np.uint8).reshape(g, 32)
    return out


# --- calling the kernels ------------------------------------------------------------------

def run_dot(k, w, x, w_stride=Q4, x_stride=Q8, w_off=0, x_off=0):
    pw, px = Placed(w, w_stride, w_off), Placed(x, x_stride, x_off)
    got = k.dot(pw.address, w_stride, px.address, x_stride, w.shape[0])
    assert pw.unchanged() and px.unchanged(), "inputs were written"
    return np.float32(got)


def run_rows(k, w, x, w_stride=Q4, row_pad=0, x_stride=Q8, w_off=0, x_off=0, y_stride=1):
    n, g = w.shape[0], w.shape[1]
    row_stride = g * w_stride + row_pad
    pw = Placed(w, w_stride, w_off, lead_stride=row_stride)
    px = Placed(x, x_stride, x_off)
    y = np.full(n * y_stride + 1, np.float32(7.25), dtype=np.float32)
    k.dot_rows(pw.address, row_stride, w_stride, px.address, x_stride, g, n, y.ctypes.data,
               y_stride)
    assert pw.unchanged() and px.unchanged(), "inputs were written"
    untouched = np.ones(y.shape, dtype=bool)
    untouched[0:n * y_stride:y_stride] = False
    assert np.all(y[untouched] == np.float32(7.25)), "y written outside its rows"
    return y[0:n * y_stride:y_stride]


def run_quantize(k, rows, src_stride=256, src_off=0, dst_stride=Q8, dst_off=0):
    """(status, records u8[G,292] or None, dst-canary-intact)."""
    rows = np.asarray(rows, dtype=np.float32)
    g = rows.shape[0]
    src = np.full((g * src_stride + src_off + 16,), np.float32(-3.5), dtype=np.float32)
    for i in range(g):
        src[src_off + i * src_stride:src_off + i * src_stride + 256] = rows[i]
    before = src.copy()
    dst = Placed(np.zeros((g, Q8), dtype=np.uint8), dst_stride, dst_off)
    status = k.quantize(src.ctypes.data + 4 * src_off, src_stride, g, dst.address, dst_stride)
    assert np.array_equal(src.view(np.uint32), before.view(np.uint32)), "input was written"
    got = np.stack([dst.raw[dst.base + i * dst_stride:dst.base + i * dst_stride + Q8]
                    for i in range(g)]) if g else np.zeros((0, Q8), np.uint8)
    gaps = dst.raw.copy()
    for i in range(g):
        gaps[dst.base + i * dst_stride:dst.base + i * dst_stride + Q8] = 0xA5
    return status, got, bool(np.all(gaps == 0xA5))


def expected_status(rows) -> int:
    try:
        oracle.quantize_q8k(np.asarray(rows, dtype=np.float32))
    except DomainError as err:
        return err.record * 8 + err.reason
    return 0


# --- dot ------------------------------------------------------------------------------------

@pytest.mark.parametrize("g", [1, 2, 3, 7, 16, 17, 257])
def test_dot_random(kernels, g):
    rng = np.random.default_rng(100 + g)
    for valid in (True, False):
        w, x = q4k_records(rng, (g,)), q8k_records(rng, g, valid=valid)
        assert same_bits(run_dot(kernels, w, x), oracle.quantized_dot_q4k_q8k(w, x))


def test_dot_empty_is_positive_zero(kernels):
    got = kernels.dot(0, Q4, 0, Q8, 0)
    assert np.float32(got).view(np.uint32) == 0


def test_dot_single_negative_zero(kernels):
    w = extreme_q4k(1, d=0.0, dmin=0.0)           # p = n = +0, p - n = +0
    x = q8k_records(np.random.default_rng(1), 1, ds=[-1.0])
    got = run_dot(kernels, w, x)
    assert got.view(np.uint32) == np.float32(-0.0).view(np.uint32)
    assert same_bits(got, oracle.quantized_dot_q4k_q8k(w, x))


def test_dot_sum_is_sequential(kernels):
    # v = 2**25, 1, 1, ..., -2**25: any other grouping of the ones keeps more of them.
    g = 9
    w = extreme_q4k(g, d=0.0, dmin=-1.0)            # v = ds * (0 - (-1)*T) = ds * T
    q = np.zeros((g, 256), dtype=np.int8)
    bsum = np.zeros((g, 16), dtype=np.int16)
    bsum[:, 0] = 1                                  # T = 63 * 1
    ds = np.full(g, 1.0 / 63.0, dtype=np.float32)
    ds[0], ds[-1] = np.float32(2.0 ** 25 / 63.0), np.float32(-(2.0 ** 25) / 63.0)
    x = q8k_from(q, ds, bsum)
    want = oracle.quantized_dot_q4k_q8k(w, x)
    values = oracle.record_values(w, x)
    seq = values[0]
    for v in values[1:]:
        seq = np.float32(seq + v)
    assert want.view(np.uint32) == seq.view(np.uint32)
    assert same_bits(run_dot(kernels, w, x), want)


def test_dot_extremes(kernels):
    g = 5
    for fill in (-128, 127):
        q = np.full((g, 256), fill, dtype=np.int8)
        x = q8k_from(q, np.linspace(0.5, 2.0, g).astype(np.float32))
        w = extreme_q4k(g)                              # |S| = 30,965,760 > 2**24
        assert same_bits(run_dot(kernels, w, x), oracle.quantized_dot_q4k_q8k(w, x))
    # bsum as stored (not the sum of q), at the i16 extremes: T is formed in i32.
    for b in (-32768, 32767):
        x = q8k_from(np.zeros((g, 256), np.int8), np.ones(g, np.float32),
                     np.full((g, 16), b, dtype=np.int16))
        assert same_bits(run_dot(kernels, extreme_q4k(g), x),
                         oracle.quantized_dot_q4k_q8k(extreme_q4k(g), x))


def test_dot_large_s_rounds(kernels):
    # |S| > 2**24 with odd values: f32(S) must round to nearest even.
    rng = np.random.default_rng(7)
    g = 64
    w = extreme_q4k(g)
    w[:, 16:] = rng.integers(0xE0, 0x100, size=(g, 128), dtype=np.uint8)   # q in 14..15 and 0..15
    q = rng.integers(100, 128, size=(g, 256)).astype(np.int8)
    x = q8k_from(q, np.ones(g, np.float32))
    assert same_bits(run_dot(kernels, w, x), oracle.quantized_dot_q4k_q8k(w, x))
    values = oracle.record_values(w, x)
    assert np.any(np.abs(values) > 2 ** 24)


SPECIAL_F16 = [0x7C00, 0xFC00, 0x7E00, 0xFE01, 0x0001, 0x8001, 0x03FF, 0x0000, 0x8000, 0x7BFF]
SPECIAL_F32 = [np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1e-40, 0.0, -0.0, 3.4e38]


@pytest.mark.parametrize("field", ["d", "dmin", "ds"])
def test_dot_special_values(kernels, field):
    rng = np.random.default_rng(hash(field) % 1000)
    specials = SPECIAL_F16 if field != "ds" else SPECIAL_F32
    g = len(specials)
    w = q4k_records(rng, (g,))
    x = q8k_records(rng, g)
    if field == "d":
        w[:, 0:2] = np.array(specials, dtype="<u2").reshape(g, 1).view(np.uint8)
    elif field == "dmin":
        w[:, 2:4] = np.array(specials, dtype="<u2").reshape(g, 1).view(np.uint8)
    else:
        x[:, 0:4] = np.array(specials, dtype="<f4").reshape(g, 1).view(np.uint8)
    for k in range(g):                  # every special alone, then all of them together
        assert same_bits(run_dot(kernels, w[k:k + 1], x[k:k + 1]),
                         oracle.quantized_dot_q4k_q8k(w[k:k + 1], x[k:k + 1]))
    assert same_bits(oracle.record_values(w, x),
                     [run_dot(kernels, w[k:k + 1], x[k:k + 1]) for k in range(g)])
    assert same_bits(run_dot(kernels, w, x), oracle.quantized_dot_q4k_q8k(w, x))


def test_dot_subnormal_results(kernels):
    rng = np.random.default_rng(3)
    g = 33
    w = q4k_records(rng, (g,), d_bits=rng.integers(1, 0x400, g),
                    dmin_bits=rng.integers(1, 0x400, g))
    x = q8k_records(rng, g, ds=np.float32(1e-30) * rng.standard_normal(g).astype(np.float32))
    assert same_bits(run_dot(kernels, w, x), oracle.quantized_dot_q4k_q8k(w, x))


@pytest.mark.parametrize("w_stride,x_stride,w_off,x_off",
                         [(144, 292, 0, 0), (160, 297, 0, 1), (145, 293, 3, 2), (144, 300, 1, 3)])
def test_dot_strides_and_offsets(kernels, w_stride, x_stride, w_off, x_off):
    rng = np.random.default_rng(w_stride + x_stride + w_off)
    for g in (1, 7, 19):
        w, x = q4k_records(rng, (g,)), q8k_records(rng, g)
        got = run_dot(kernels, w, x, w_stride, x_stride, w_off, x_off)
        assert same_bits(got, oracle.quantized_dot_q4k_q8k(w, x))


# --- dot_rows -------------------------------------------------------------------------------

@pytest.mark.parametrize("n,g", [(1, 1), (5, 3), (16, 16), (17, 7), (33, 2), (3, 65), (20, 257)])
def test_rows_random(kernels, n, g):
    rng = np.random.default_rng(1000 * n + g)
    w, x = q4k_records(rng, (n, g)), q8k_records(rng, g, valid=bool(n % 2))
    got = run_rows(kernels, w, x)
    assert same_bits(got, oracle.quantized_dot_rows(w, x))
    for r in (0, n - 1):
        assert same_bits(got[r], run_dot(kernels, w[r], x))


@pytest.mark.parametrize("w_stride,row_pad,x_stride,w_off,x_off,y_stride",
                         [(144, 0, 292, 0, 1, 1), (150, 13, 295, 1, 2, 3), (144, 7, 293, 3, 3, 2)])
def test_rows_strides_and_offsets(kernels, w_stride, row_pad, x_stride, w_off, x_off, y_stride):
    rng = np.random.default_rng(w_stride + row_pad)
    n, g = 19, 5
    w, x = q4k_records(rng, (n, g)), q8k_records(rng, g)
    got = run_rows(kernels, w, x, w_stride, row_pad, x_stride, w_off, x_off, y_stride)
    assert same_bits(got, oracle.quantized_dot_rows(w, x))


def test_rows_special_values_and_empty(kernels):
    rng = np.random.default_rng(11)
    n, g = 18, len(SPECIAL_F16)
    d = np.array([SPECIAL_F16[(r + k) % g] for r in range(n) for k in range(g)])
    w = q4k_records(rng, (n, g), d_bits=d.reshape(n, g), dmin_bits=d[::-1].reshape(n, g))
    x = q8k_records(rng, g, valid=False)
    assert same_bits(run_rows(kernels, w, x), oracle.quantized_dot_rows(w, x))
    y = np.full(4, np.float32(5.0))
    kernels.dot_rows(0, 0, Q4, 0, Q8, 0, 4, y.ctypes.data, 1)        # G = 0
    assert np.all(y.view(np.uint32) == 0)
    kernels.dot_rows(0, 0, Q4, 0, Q8, 3, 0, 0, 1)                    # no rows: nothing


def test_rows_extremes(kernels):
    n, g = 17, 3
    w = np.broadcast_to(extreme_q4k(g), (n, g, Q4)).copy()
    x = q8k_from(np.full((g, 256), -128, np.int8), np.ones(g, np.float32),
                 np.full((g, 16), -32768, np.int16))
    assert same_bits(run_rows(kernels, w, x), oracle.quantized_dot_rows(w, x))


# --- quantize -------------------------------------------------------------------------------

def quantize_cases(rng):
    tie = rng.standard_normal(256).astype(np.float32)
    tie[3], tie[100] = 5.0, -5.0                      # |max| == |min|: the minimum wins
    tie_rev = tie.copy()
    tie_rev[3], tie_rev[100] = -5.0, 5.0
    zeros = np.zeros(256, np.float32)
    signed_zeros = np.where(np.arange(256) % 3 == 0, np.float32(-0.0), np.float32(0.0))
    sub = np.where(np.arange(256) % 5 == 0, np.float32(1e-40), np.float32(0.0))
    sub_with_normal = sub.copy()
    sub_with_normal[17] = np.float32(-2e-36)          # extreme normal, others subnormal
    huge = (rng.standard_normal(256) * 1e38).astype(np.float32)
    huge[0] = np.float32(3.4028235e38)
    tiny_ties = np.full(256, np.float32(0.5))         # scaled values at exact .5 ties
    tiny_ties[0] = np.float32(-127.0)
    halves = (np.arange(256, dtype=np.float32) - 128) * np.float32(0.5)
    return {"tie": tie, "tie_rev": tie_rev, "zeros": zeros, "signed_zeros": signed_zeros,
            "subnormal_ok": sub_with_normal, "huge": huge, "ties": tiny_ties, "halves": halves,
            "subnormal_only": sub}


@pytest.mark.parametrize("g", [0, 1, 2, 3, 7, 16, 257])
def test_quantize_random(kernels, g):
    rng = np.random.default_rng(g)
    rows = (rng.standard_normal((g, 256)) * 10.0 ** rng.integers(-30, 30, size=(g, 1)))
    rows = rows.astype(np.float32)
    status, got, gaps_ok = run_quantize(kernels, rows)
    assert status == 0 and gaps_ok
    assert np.array_equal(got, oracle.quantize_q8k(rows))


def test_quantize_corner_cases(kernels):
    rng = np.random.default_rng(5)
    cases = quantize_cases(rng)
    ok = ["tie", "tie_rev", "zeros", "signed_zeros", "subnormal_ok", "huge", "ties", "halves"]
    rows = np.stack([cases[name] for name in ok])
    status, got, gaps_ok = run_quantize(kernels, rows)
    assert status == 0 and gaps_ok
    assert np.array_equal(got, oracle.quantize_q8k(rows))
    zero_rec = got[ok.index("signed_zeros")]
    assert not zero_rec.any()                         # ds = +0.0 bits, q = 0, bsum = 0
    tie = got[ok.index("tie")]
    assert struct.unpack("<f", tie[0:4].tobytes())[0] > 0   # extreme -5 -> positive ds


@pytest.mark.parametrize("src_stride,src_off,dst_stride,dst_off",
                         [(256, 0, 292, 1), (260, 3, 293, 2), (300, 1, 300, 3), (256, 0, 296, 0)])
def test_quantize_strides_and_offsets(kernels, src_stride, src_off, dst_stride, dst_off):
    rng = np.random.default_rng(src_stride + dst_stride)
    rows = rng.standard_normal((9, 256)).astype(np.float32)
    status, got, gaps_ok = run_quantize(kernels, rows, src_stride, src_off, dst_stride, dst_off)
    assert status == 0 and gaps_ok
    assert np.array_equal(got, oracle.quantize_q8k(rows))


def test_quantize_domain_errors(kernels):
    rng = np.random.default_rng(9)
    good = rng.standard_normal((4, 256)).astype(np.float32)
    cases = quantize_cases(rng)
    bad_rows = {
        "nan": np.where(np.arange(256) == 77, np.float32(np.nan), good[0]),
        "inf": np.where(np.arange(256) == 255, np.float32(np.inf), good[1]),
        "-inf": np.where(np.arange(256) == 0, np.float32(-np.inf), good[1]),
        "subnormal_only": cases["subnormal_only"],            # inverse overflows
    }
    for name, bad in bad_rows.items():
        for at in (0, 2, 3):
            rows = good.copy()
            rows[at] = bad
            status, _, _ = run_quantize(kernels, rows)
            assert status == expected_status(rows) != 0, name
            block, reason = decode_status(status)
            with pytest.raises(DomainError) as err:
                oracle.quantize_q8k(rows)
            assert (block, reason) == (err.value.record, err.value.reason) == (at, reason)
    # The lowest failing block wins, whatever its reason.
    rows = np.stack([good[0], cases["subnormal_only"], bad_rows["nan"], good[1]])
    status, _, _ = run_quantize(kernels, rows)
    assert decode_status(status) == (1, oracle.REASON_INVERSE_NOT_FINITE)
    rows[1] = bad_rows["inf"]
    status, _, _ = run_quantize(kernels, rows)
    assert decode_status(status) == (1, oracle.REASON_NONFINITE_INPUT)
    assert decode_status(0) is None


def test_quantize_then_dot_matches_oracle(kernels):
    rng = np.random.default_rng(21)
    n, g = 9, 6
    values = rng.standard_normal((g, 256)).astype(np.float32)
    status, xq, _ = run_quantize(kernels, values)
    assert status == 0
    w = q4k_records(rng, (n, g))
    assert same_bits(run_rows(kernels, w, xq),
                     oracle.quantized_dot_rows(w, oracle.quantize_q8k(values)))


def test_portable_ir_on_the_host_cpu(tmp_path):
    """The portable IR is target-independent: compiled with every host feature it agrees too."""
    host = J.host_target()
    target = J.HostTarget(triple=host.triple, cpu=host.cpu, features=host.features,
                          isa="portable", host_cpu=host.host_cpu, forced=True)
    jit = J.JITModule(build_module("portable"), target=target, cache_dir=tmp_path)
    fns = {name: jit.get(name, *SIGNATURES[name]) for name in SIGNATURES}

    class Kernels:
        quantize, dot, dot_rows = fns[QUANTIZE], fns[DOT], fns[DOT_ROWS]

    rng = np.random.default_rng(12)
    w, x = q4k_records(rng, (7, 17)), q8k_records(rng, 17, valid=False)
    assert same_bits(run_rows(Kernels, w, x, x_off=3), oracle.quantized_dot_rows(w, x))
    assert same_bits(run_dot(Kernels, w[2], x, w_off=1), oracle.quantized_dot_q4k_q8k(w[2], x))
    rows = quantize_cases(rng)["halves"][None, :].repeat(3, axis=0)
    status, got, _ = run_quantize(Kernels, rows, dst_off=1)
    assert status == 0 and np.array_equal(got, oracle.quantize_q8k(rows))


# --- instruction selection -------------------------------------------------------------------

FUSED = ("vfmadd", "vfnmadd", "vfmsub", "vfnmsub", "vfmaddsub", "vfmsubadd")


def test_assembly(kernels):
    asm = kernels.jit.asm()
    lowered = asm.lower()
    for mnemonic in FUSED:
        assert mnemonic not in lowered, f"{kernels.isa}: {mnemonic} in the kernels"
    for name in (QUANTIZE, DOT, DOT_ROWS):
        assert f"{name}:" in asm
    if kernels.isa == "avx512vnni":
        assert "vpdpbusd" in lowered and "zmm" in lowered
        assert ("vgf2p8affineqb" in lowered) == kernels.gfni
        assert "prefetcht0" in lowered        # the 16-row walk prefetches ahead of itself
    elif kernels.isa == "avx2":
        assert "zmm" not in lowered and "vpmaddubsw" in lowered and "ymm" in lowered
    else:
        assert "zmm" not in lowered and "vpdpbusd" not in lowered


def test_ir_has_no_fast_math(kernels):
    text = kernels.jit.ir_text
    for flag in ("fast", "contract", "reassoc", "nnan", "ninf", "afn", "arcp"):
        assert f" {flag} " not in text
    assert "llvm.fma" not in text and "fmuladd" not in text


def test_forced_isa_above_host_is_refused():
    best = J.host_target().isa
    above = J.ISA_LEVELS[:J.ISA_LEVELS.index(best)]
    for isa in above:
        with pytest.raises(TargetUnavailable):
            J.host_target(isa)
    with pytest.raises(ValueError):
        J.host_target("sse9")


# --- object cache ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def small_ir():
    return str(build_module("portable"))


def _check_quantize(jit):
    fn = jit.get(QUANTIZE, *SIGNATURES[QUANTIZE])
    rows = np.random.default_rng(0).standard_normal((2, 256)).astype(np.float32)
    out = np.zeros((2, Q8), np.uint8)
    assert fn(rows.ctypes.data, 256, 2, out.ctypes.data, Q8) == 0
    assert np.array_equal(out, oracle.quantize_q8k(rows))


def test_cache_miss_then_hit(tmp_path, small_ir):
    first = J.JITModule(small_ir, isa="portable", cache_dir=tmp_path)
    assert not first.cache_hit
    entries = [p for p in tmp_path.iterdir() if p.name != objcache.KEY_FILE]
    assert len(entries) == 1 and entries[0].name == f"{first.key.hex()}.o"
    second = J.JITModule(small_ir, isa="portable", cache_dir=tmp_path)
    assert second.cache_hit and second.object_code == first.object_code
    _check_quantize(second)
    assert "ninfer_q8k_quantize" in second.asm()     # recompiled on demand


@pytest.mark.parametrize("damage", ["garbage", "truncated", "payload", "foreign", "empty"])
def test_cache_damaged_entry_is_rebuilt(tmp_path, small_ir, damage):
    good = J.JITModule(small_ir, isa="portable", cache_dir=tmp_path)
    path = J.ObjectCache(tmp_path).path_for(good.key)
    blob = path.read_bytes()
    if damage == "garbage":
        path.write_bytes(os.urandom(len(blob)))
    elif damage == "truncated":
        path.write_bytes(blob[:len(blob) // 2])
    elif damage == "payload":
        flipped = bytearray(blob)
        flipped[-10] ^= 0xFF
        path.write_bytes(bytes(flipped))
    elif damage == "foreign":
        other = J.JITModule(small_ir + "\n; another module\n", isa="portable", cache_dir=tmp_path)
        path.write_bytes(J.ObjectCache(tmp_path).path_for(other.key).read_bytes())
    else:
        path.write_bytes(b"")
    again = J.JITModule(small_ir, isa="portable", cache_dir=tmp_path)
    assert not again.cache_hit
    _check_quantize(again)
    assert path.read_bytes() == blob                  # rewritten, intact
    assert J.JITModule(small_ir, isa="portable", cache_dir=tmp_path).cache_hit
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]


def test_load_kernels_hit_skips_building_ir(tmp_path):
    first = load_kernels("portable", cache_dir=tmp_path)
    second = load_kernels("portable", cache_dir=tmp_path)
    assert not first.jit.cache_hit and second.jit.cache_hit
    assert second.jit._ir_text is None                  # named by the generator's digest
    rows = np.random.default_rng(4).standard_normal((3, 256)).astype(np.float32)
    status, got, _ = run_quantize(second, rows)
    assert status == 0 and np.array_equal(got, oracle.quantize_q8k(rows))
    assert "ninfer_q4k_q8k_dot_rows" in second.jit.ir_text    # built on demand


def test_cache_key_separates_targets_and_text(small_ir):
    portable = J.host_target("portable")
    key = J.cache_key(small_ir, portable)
    assert key != J.cache_key(small_ir + " ", portable)
    for isa in ISAS:
        if isa != "portable":
            assert J.cache_key(small_ir, J.host_target(isa)) != key


def test_cache_location(tmp_path, monkeypatch, small_ir):
    monkeypatch.delenv("NINFER_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert J.default_cache_dir() == tmp_path / "xdg" / "ninfer_ir" / "llvm"
    jit = J.JITModule(small_ir, isa="portable")
    assert (tmp_path / "xdg" / "ninfer_ir" / "llvm" / f"{jit.key.hex()}.o").exists()
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert J.default_cache_dir() == Path.home() / ".cache" / "ninfer_ir" / "llvm"
    off = J.JITModule(small_ir, isa="portable", cache_dir=tmp_path / "unused", use_cache=False)
    assert not off.cache_hit and not (tmp_path / "unused").exists()
    _check_quantize(off)


def test_cache_unwritable_dir_still_compiles(tmp_path, small_ir):
    blocker = tmp_path / "file"
    blocker.write_bytes(b"not a directory")
    jit = J.JITModule(small_ir, isa="portable", cache_dir=blocker / "sub")
    assert not jit.cache_hit
    _check_quantize(jit)


def test_functions_keep_module_alive(tmp_path, small_ir):
    fn = J.JITModule(small_ir, isa="portable", cache_dir=tmp_path).get(QUANTIZE,
                                                                       *SIGNATURES[QUANTIZE])
    rows = np.ones((1, 256), np.float32)
    out = np.zeros((1, Q8), np.uint8)
    assert fn(rows.ctypes.data, 256, 1, out.ctypes.data, Q8) == 0
    assert np.array_equal(out, oracle.quantize_q8k(rows))
    with pytest.raises(LookupError):
        J.JITModule(small_ir, isa="portable", cache_dir=tmp_path).address("no_such_function")
    assert ctypes.sizeof(ctypes.c_void_p) == 8
