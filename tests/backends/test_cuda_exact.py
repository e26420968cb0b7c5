"""The CUDA kernels equal the interpreter bit for bit.

Two layers run the same cases:

* host emulation (always): the per-record functions of ``qkernels`` compiled
  as plain C by gcc with ``-ffp-contract=off -fno-fast-math`` -- the scalar
  record path, the 8-lane split of the GEMV kernel (both load paths), the
  GEMV schedule over lane groups, and the Q8_K block quantizer; plus the
  kernel's cross-record order emulated in numpy against ``SumOrder``;
* the GPU (``-m gpu``): ``runtime.quantize_q8k`` and ``runtime.gemv_q4k``.

NaN results compare as a class (IEEE leaves the payload open and GPUs return a
canonical NaN); every other bit must match.
"""
from __future__ import annotations

import ctypes
import shutil
import subprocess

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ninfer_ir.backends.cuda import qkernels
from ninfer_ir.numerics import quantized as quantops
from ninfer_ir.errors import DomainError
from ninfer_ir.sumorder import SumOrder

F16_SPECIAL = np.array([0.0, -0.0, 6.0e-8, -6.0e-8, 6.1e-5, 65504.0, -65504.0, np.inf,
                        -np.inf, np.nan, 1.0, -2.5e-3], dtype=np.float16)
F32_SPECIAL = np.array([0.0, -0.0, 1.0e-45, -1.0e-40, 1.2e-38, 3.0e38, -3.4e38, np.inf,
                        -np.inf, np.nan, 1.0, -7.5e-3], dtype=np.float32)


# --- data ----------------------------------------------------------------------

def q4k_records(rng, shape, special=0.25):
    """Random Q4_K records u8 ``shape + (144,)``; a fraction get adversarial fields."""
    rec = rng.integers(0, 256, size=shape + (144,), dtype=np.uint8)
    flat = rec.reshape(-1, 144)
    d = (rng.standard_normal((flat.shape[0], 2)) * 0.01).astype(np.float16)
    flat[:, 0:4] = d.view(np.uint8)
    pick = rng.random(flat.shape[0]) < special
    k = int(pick.sum())
    flat[pick, 0:4] = rng.choice(F16_SPECIAL, size=(k, 2)).view(np.uint8)
    maxed = rng.random(flat.shape[0]) < special
    flat[maxed, 4:144] = 0xFF                      # sc = m = 63, q = 15
    return rec


def q8k_records(rng, g, special=0.25, valid=True):
    """Random Q8_K records u8 ``[g,292]`` with extreme q and (in)valid bsums."""
    rec = np.zeros((g, 292), dtype=np.uint8)
    q = rng.integers(-128, 128, size=(g, 256)).astype(np.int8)
    ends = rng.random(g) < special
    q[ends] = rng.choice(np.array([-128, 127], dtype=np.int8), size=(int(ends.sum()), 256))
    rec[:, 4:260] = q.view(np.uint8)
    ds = (rng.standard_normal(g) * 0.02).astype(np.float32)
    pick = rng.random(g) < special
    ds[pick] = rng.choice(F32_SPECIAL, size=int(pick.sum()))
    rec[:, 0:4] = ds.view(np.uint8).reshape(g, 4)
    bsum = q.astype(np.int16).reshape(g, 16, 16).sum(axis=2, dtype=np.int16)
    if not valid:
        bsum = rng.integers(-32768, 32768, size=(g, 16)).astype(np.int16)
    rec[:, 260:292] = bsum.astype("<i2").view(np.uint8).reshape(g, 32)
    return rec


def big_s_pair():
    """One record pair with S_b = 63*127*(15*256 - 1), odd and > 2**24: f32(S) rounds."""
    a = np.full((1, 144), 0xFF, dtype=np.uint8)
    a[0, 16] = 0xFE                                  # one weight 14 instead of 15
    a[0, 0:4] = np.array([1.0, 0.5], dtype=np.float16).view(np.uint8)
    b = np.zeros((1, 292), dtype=np.uint8)
    b[0, 0:4] = np.array([0.001], dtype=np.float32).view(np.uint8)
    b[0, 4:260] = 127
    b[0, 260:292] = np.full(16, 127 * 16 - 1, dtype="<i2").view(np.uint8)   # odd T_b
    return a, b


def quantize_inputs(rng, g):
    """f32 ``[g,256]`` blocks: random scales, ties, zeros, subnormals, huge values."""
    x = (rng.standard_normal((g, 256)) * rng.choice([1e-3, 1.0, 1e3, 1e30], size=(g, 1)))
    x = x.astype(np.float32)
    kinds = rng.integers(0, 8, size=g)
    for i, kind in enumerate(kinds):
        if kind == 1:                      # +a and -a both extreme: the minimum wins
            x[i, rng.integers(256)] = 5.0
            x[i, rng.integers(256)] = -5.0
            np.clip(x[i], -5.0, 5.0, out=x[i])
        elif kind == 2:
            x[i] = np.where(rng.random(256) < 0.5, 0.0, -0.0)
        elif kind == 3:                    # extreme -127: inverse 1, half-integers tie
            x[i] = rng.integers(-254, 255, size=256) / np.float32(2.0)
            x[i, 0] = -127.0
        elif kind == 4:
            x[i] = rng.standard_normal(256).astype(np.float32) * np.float32(1e-39)
            x[i, 7] = np.float32(4e-37)      # just above the inverse-overflow edge
        elif kind == 5:
            x[i, rng.integers(256)] = np.float32(3.4028235e38)
    return x


def quantizable(x):
    """The rows of ``x`` that the oracle quantizes without a domain error."""
    keep = []
    for i in range(x.shape[0]):
        try:
            quantops.quantize_q8k(x[i:i + 1])
        except DomainError:
            continue
        keep.append(i)
    return x[keep]


def same_bits(got, want):
    got = np.asarray(got, dtype=np.float32)
    want = np.asarray(want, dtype=np.float32)
    assert got.shape == want.shape
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    bad = np.flatnonzero(got.view(np.uint32)[~nan] != want.view(np.uint32)[~nan])
    assert bad.size == 0, (f"{bad.size} of {got.size} differ; first: got "
                           f"{got[~nan][bad[0]]!r} want {want[~nan][bad[0]]!r}")


# --- host emulation ------------------------------------------------------------

HARNESS = r"""
float nqh_record(const nq_u8* a, const nq_u8* b) { return nq_q4k_q8k_record(a, b); }

float nqh_record_lanes(const nq_u8* a, const nq_u8* b, int a_al16, int b_al4) {
    nq_i32 s = 0, t = 0;
    for (int j = 0; j < 8; ++j) {
        nq_i32 sp, tp;
        nq_q4k_q8k_lane(a, b, j, a_al16, b_al4, &sp, &tp);
        s += sp; t += tp;
    }
    return nq_q4k_record_value(nq_ld_u32_any(a), nq_from_bits(nq_ld_u32_any(b)), s, t);
}

/* The q4k_gemv row schedule: 4 groups of contiguous records, each summed
   sequentially from -0.0; group sums by the adjacent-pair tree. */
float nqh_row_dot(const nq_u8* w, long long w_rec_stride, const nq_u8* xq,
                  long long x_rec_stride, long long g_count) {
    if (g_count <= 0) return 0.0f;
    long long chunk = (g_count + 3) / 4;
    float part[4];
    for (int grp = 0; grp < 4; ++grp) {
        float acc = -0.0f;
        for (long long rec = grp * chunk; rec < (grp + 1) * chunk && rec < g_count; ++rec)
            acc = nq_fadd(acc, nqh_record_lanes(w + rec * w_rec_stride, xq + rec * x_rec_stride,
                                                0, 0));
        part[grp] = acc;
    }
    return nq_fadd(nq_fadd(part[0], part[1]), nq_fadd(part[2], part[3]));
}

float nqh_dot_seq(const nq_u8* a, long long a_rec_stride, const nq_u8* b,
                  long long b_rec_stride, long long g_count) {
    return nq_q4k_q8k_dot_seq(a, a_rec_stride, b, b_rec_stride, g_count);
}

/* Quantize g blocks; returns 8*block + reason of the first failure, or -1. */
long long nqh_quantize(const float* x, long long g_count, nq_u8* out) {
    for (long long g = 0; g < g_count; ++g) {
        int reason = nq_q8k_quantize_block(x + 256 * g, out + 292 * g);
        if (reason) return 8 * g + reason;
    }
    return -1;
}
"""


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    gcc = shutil.which("gcc") or shutil.which("cc")
    if gcc is None:
        pytest.skip("no host C compiler")
    folder = tmp_path_factory.mktemp("cuda_host")
    src = folder / "nq_host.c"
    lib = folder / "nq_host.so"
    src.write_text(qkernels.host_source() + HARNESS)
    proc = subprocess.run([gcc, "-std=c11", "-O2", "-ffp-contract=off", "-fno-fast-math",
                           "-Wall", "-Wno-unused-function", "-Werror", "-shared", "-fPIC",
                           "-o", str(lib), str(src), "-lm"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    dll = ctypes.CDLL(str(lib))
    u8p, f32p = ctypes.POINTER(ctypes.c_uint8), ctypes.POINTER(ctypes.c_float)
    i64 = ctypes.c_longlong
    dll.nqh_record.argtypes = [u8p, u8p]
    dll.nqh_record.restype = ctypes.c_float
    dll.nqh_record_lanes.argtypes = [u8p, u8p, ctypes.c_int, ctypes.c_int]
    dll.nqh_record_lanes.restype = ctypes.c_float
    dll.nqh_row_dot.argtypes = [u8p, i64, u8p, i64, i64]
    dll.nqh_row_dot.restype = ctypes.c_float
    dll.nqh_dot_seq.argtypes = [u8p, i64, u8p, i64, i64]
    dll.nqh_dot_seq.restype = ctypes.c_float
    dll.nqh_quantize.argtypes = [f32p, i64, u8p]
    dll.nqh_quantize.restype = i64
    return dll


def _ptr(arr, ctype=ctypes.c_uint8):
    return arr.ctypes.data_as(ctypes.POINTER(ctype))


def _per_record(host, fn, a, b, *extra):
    return np.array([fn(_ptr(a[i]), _ptr(b[i]), *extra) for i in range(a.shape[0])],
                    dtype=np.float32)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("valid_bsum", [True, False])
def test_host_record_value_equals_oracle(host, seed, valid_bsum):
    rng = np.random.default_rng(seed)
    a = q4k_records(rng, (300,))
    b = q8k_records(rng, 300, valid=valid_bsum)
    want = quantops.record_values(a, b)
    same_bits(_per_record(host, host.nqh_record, a, b), want)
    for a_al16, b_al4 in ((1, 1), (0, 0), (0, 1), (1, 0)):
        same_bits(_per_record(host, host.nqh_record_lanes, a, b, a_al16, b_al4), want)


@settings(max_examples=300, deadline=None)
@given(a=st.binary(min_size=144, max_size=144), b=st.binary(min_size=292, max_size=292))
def test_host_record_any_bytes(host, a, b):
    # any bytes at all: NaN/inf/subnormal scales, invalid bsums, extreme fields
    a = np.frombuffer(a, dtype=np.uint8).reshape(1, 144).copy()
    b = np.frombuffer(b, dtype=np.uint8).reshape(1, 292).copy()
    want = quantops.record_values(a, b)
    same_bits(_per_record(host, host.nqh_record, a, b), want)
    same_bits(_per_record(host, host.nqh_record_lanes, a, b, 1, 1), want)


def test_host_record_with_s_beyond_2_24(host):
    a, b = big_s_pair()
    want = quantops.record_values(a, b)
    same_bits(_per_record(host, host.nqh_record, a, b), want)
    same_bits(_per_record(host, host.nqh_record_lanes, a, b, 1, 1), want)
    s = 63 * 127 * (15 * 256 - 1)
    assert s > 2**24 and float(np.float32(s)) != s     # the conversion really rounds


def test_host_record_every_f16_scale(host):
    # all 65536 binary16 patterns as d (and as dmin): the exact f16 -> f32 path.
    rng = np.random.default_rng(7)
    bits = np.arange(65536, dtype=np.uint16)
    a = q4k_records(rng, (65536,), special=0.0)
    b = q8k_records(rng, 65536, special=0.0)
    b[:, 0:4] = np.array([1.0], dtype=np.float32).view(np.uint8)
    a[:, 0:2] = bits.view(np.uint8).reshape(-1, 2)
    a[:, 2:4] = bits[::-1].copy().view(np.uint8).reshape(-1, 2)
    same_bits(_per_record(host, host.nqh_record, a, b), quantops.record_values(a, b))


@pytest.mark.parametrize("g", [0, 1, 2, 3, 4, 5, 7, 9, 16, 33, 257])
def test_host_row_schedule_equals_declared_order(host, g):
    rng = np.random.default_rng(g)
    a = q4k_records(rng, (g,), special=0.05)
    b = q8k_records(rng, g, special=0.05)
    got = np.float32(host.nqh_row_dot(_ptr(a), 144, _ptr(b), 292, g))
    want = quantops.quantized_dot_q4k_q8k(a, b, order=qkernels.gemv_sum_order(g))
    same_bits(got, want)


@pytest.mark.parametrize("g", [0, 1, 2, 3, 7, 16, 257])
def test_host_sequential_dot_on_strided_views(host, g):
    rng = np.random.default_rng(50 + g)
    a = q4k_records(rng, (g,), special=0.05)
    b = q8k_records(rng, g, special=0.05)
    wide_a = np.zeros((g, 151), dtype=np.uint8)          # 151 B apart, offset 3
    wide_a[:, 3:147] = a
    wide_b = np.zeros((g, 297), dtype=np.uint8)          # 297 B apart, offset 1
    wide_b[:, 1:293] = b
    got = np.float32(host.nqh_dot_seq(_ptr(wide_a[:, 3:]), 151, _ptr(wide_b[:, 1:]), 297, g))
    same_bits(got, quantops.quantized_dot_q4k_q8k(a, b, order="seq"))


def emulate_gemv_order(v: np.ndarray) -> np.float32:
    """q4k_gemv's cross-record sum, lane by lane, in numpy f32."""
    g = v.shape[0]
    if g == 0:
        return np.float32(0.0)
    chunk = -(-g // qkernels.GROUPS)
    lanes = np.full(32, np.float32(-0.0), dtype=np.float32)
    with np.errstate(all="ignore"):
        for lane in range(32):
            group = lane // qkernels.LANES_PER_RECORD
            for rec in range(group * chunk, min(g, (group + 1) * chunk)):
                lanes[lane] = np.float32(lanes[lane] + v[rec])
        for off in (8, 16):      # __shfl_down_sync: lanes past 31 read their own value
            lanes = np.array([np.float32(lanes[i] + lanes[i + off if i + off < 32 else i])
                              for i in range(32)], dtype=np.float32)
    return lanes[0]


@pytest.mark.parametrize("g", list(range(0, 40)) + [63, 64, 65, 127, 257, 1000])
def test_warp_order_emulation_matches_sum_order(g):
    rng = np.random.default_rng(1000 + g)
    scale = rng.choice(np.array([1e-8, 1.0, 1e8, 3e38], dtype=np.float32), size=g)
    with np.errstate(over="ignore"):
        v = (rng.standard_normal(g).astype(np.float32) * scale).astype(np.float32)
    v[rng.random(g) < 0.1] = np.float32(-0.0)
    order = SumOrder.parse(qkernels.gemv_sum_order(g))
    same_bits(emulate_gemv_order(v), order.evaluate(v))


def test_warp_order_keeps_a_lone_negative_zero():
    v = np.array([-0.0], dtype=np.float32)
    assert emulate_gemv_order(v).view(np.uint32) == np.float32(-0.0).view(np.uint32)
    assert emulate_gemv_order(v[:0]).view(np.uint32) == 0


@pytest.mark.parametrize("seed", range(3))
def test_host_quantize_equals_oracle(host, seed):
    rng = np.random.default_rng(seed)
    x = quantizable(quantize_inputs(rng, 200))
    out = np.full((x.shape[0], 292), 0xAB, dtype=np.uint8)
    assert host.nqh_quantize(_ptr(x, ctypes.c_float), x.shape[0], _ptr(out)) == -1
    assert np.array_equal(out, quantops.quantize_q8k(x))


@pytest.mark.parametrize("poison, reason", [(np.nan, 1), (np.inf, 1), (-np.inf, 1),
                                            (np.float32(1e-37), 2), (np.float32(1e-45), 2)])
def test_host_quantize_domain_errors(host, poison, reason):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 256)).astype(np.float32)
    if reason == 2:
        x[2] = np.float32(poison) * np.sign(x[2])
        x[4] = np.float32(poison)
    else:
        x[2, 17] = poison
        x[4, 0] = poison
    with pytest.raises(DomainError) as info:
        quantops.quantize_q8k(x)
    out = np.zeros((6, 292), dtype=np.uint8)
    assert host.nqh_quantize(_ptr(x, ctypes.c_float), 6, _ptr(out)) == 2 * 8 + reason
    assert info.value.record == 2 and info.value.reason == reason


# --- GPU -------------------------------------------------------------------------

def _gpu():
    from ninfer_ir.backends.cuda import runtime
    ok, why = runtime.gpu_available()
    if not ok:
        pytest.skip(f"no GPU: {why}")
    import cupy
    return runtime, cupy


@pytest.mark.gpu
@pytest.mark.parametrize("g", [0, 1, 2, 3, 7, 16, 257])
def test_gpu_quantize_equals_oracle(g):
    runtime, cupy = _gpu()
    rng = np.random.default_rng(g)
    x = quantizable(quantize_inputs(rng, g))
    keep = x.copy()
    assert np.array_equal(runtime.quantize_q8k(x), quantops.quantize_q8k(x))
    dev = cupy.asarray(x)
    got = runtime.quantize_q8k(dev)
    assert isinstance(got, cupy.ndarray)
    assert np.array_equal(got.get(), quantops.quantize_q8k(x))
    assert np.array_equal(dev.get(), keep) and np.array_equal(x, keep)


@pytest.mark.gpu
def test_gpu_quantize_views():
    runtime, cupy = _gpu()
    rng = np.random.default_rng(11)
    x = quantizable(quantize_inputs(rng, 40))
    want = quantops.quantize_q8k(x)
    wide = cupy.zeros((x.shape[0], 300), dtype=cupy.float32)
    wide[:, 3:259] = cupy.asarray(x)                      # rows 1200 B apart, 12 B offset
    assert np.array_equal(runtime.quantize_q8k(wide[:, 3:259]).get(), want)
    rev = cupy.asarray(np.ascontiguousarray(x[::-1]))[::-1]   # negative row stride
    assert np.array_equal(runtime.quantize_q8k(rev).get(), want)
    big_endian = x.astype(">f4")
    assert np.array_equal(runtime.quantize_q8k(big_endian), want)
    step = cupy.zeros((x.shape[0], 512), dtype=cupy.float32)
    step[:, ::2] = cupy.asarray(x)                        # element stride 8 B: staged
    assert np.array_equal(runtime.quantize_q8k(step[:, ::2]).get(), want)


@pytest.mark.gpu
@pytest.mark.parametrize("poison, reason", [(np.nan, 1), (np.inf, 1),
                                            (np.float32(1e-37), 2)])
def test_gpu_quantize_domain_errors(poison, reason):
    runtime, cupy = _gpu()
    rng = np.random.default_rng(5)
    x = rng.standard_normal((300, 256)).astype(np.float32)
    for row in (299, 130, 257):
        if reason == 2:
            x[row] = np.float32(poison)
        else:
            x[row, row % 256] = poison
    with pytest.raises(DomainError) as want:
        quantops.quantize_q8k(x)
    with pytest.raises(DomainError) as got:
        runtime.quantize_q8k(x)
    assert str(got.value) == str(want.value)
    assert got.value.record == 130 and got.value.reason == reason
    with pytest.raises(DomainError):
        runtime.gemv_q4k(q4k_records(rng, (2, 300)), x)


def _gemv_want(w, x):
    xq = quantops.quantize_q8k(np.ascontiguousarray(x))
    return quantops.quantized_dot_rows(np.ascontiguousarray(w), xq,
                                       order=qkernels.gemv_sum_order(w.shape[1]))


@pytest.mark.gpu
@pytest.mark.parametrize("g", [0, 1, 2, 3, 7, 16, 257])
@pytest.mark.parametrize("n", [1, 2, 5, 31, 33])
def test_gpu_gemv_equals_oracle(g, n):
    runtime, cupy = _gpu()
    rng = np.random.default_rng(100 * g + n)
    w = q4k_records(rng, (n, g))
    x = (rng.standard_normal((g, 256)) * 3).astype(np.float32)
    keep_w, keep_x = w.copy(), x.copy()
    got = runtime.gemv_q4k(w, x)
    assert isinstance(got, np.ndarray) and got.dtype == np.float32 and got.shape == (n,)
    same_bits(got, _gemv_want(w, x))
    assert np.array_equal(w, keep_w) and np.array_equal(x, keep_x)


@pytest.mark.gpu
@pytest.mark.parametrize("g", [1, 3, 16, 257])
def test_gpu_gemv_views(g):
    runtime, cupy = _gpu()
    rng = np.random.default_rng(g)
    n = 9
    w = q4k_records(rng, (n, g))
    x = (rng.standard_normal((g, 256)) * 3).astype(np.float32)
    want = _gemv_want(w, x)
    # records 147 B apart at a 1-byte offset: every load takes the byte path
    pad = cupy.zeros((n, g, 147), dtype=cupy.uint8)
    pad[:, :, 1:145] = cupy.asarray(w)
    same_bits(runtime.gemv_q4k(pad[:, :, 1:145], cupy.asarray(x)).get(), want)
    # every other row, reversed: negative row stride
    two = cupy.zeros((2 * n, g, 144), dtype=cupy.uint8)
    two[::2] = cupy.asarray(w)
    rev = two[::2][::-1]
    same_bits(runtime.gemv_q4k(rev, x).get(), want[::-1])
    # transposed storage: a row's records n*144 B apart
    tr = cupy.asarray(np.ascontiguousarray(np.swapaxes(w, 0, 1)))
    same_bits(runtime.gemv_q4k(cupy.swapaxes(tr, 0, 1), x).get(), want)
    # bytes of a record 2 B apart: staged into a contiguous copy
    spread = cupy.zeros((n, g, 288), dtype=cupy.uint8)
    spread[:, :, ::2] = cupy.asarray(w)
    same_bits(runtime.gemv_q4k(spread[:, :, ::2], x).get(), want)


@pytest.mark.gpu
def test_gpu_gemv_adversarial_records():
    runtime, cupy = _gpu()
    rng = np.random.default_rng(99)
    a, b = big_s_pair()
    w = np.concatenate([q4k_records(rng, (4, 7), special=0.5),
                        np.broadcast_to(a, (1, 7, 144))], axis=0)
    x = np.zeros((7, 256), dtype=np.float32)
    x[:, :] = 127.0
    x[:, 0] = -128.0
    same_bits(runtime.gemv_q4k(w, x), _gemv_want(w, x))
    # G = 1 and v_0 = -0.0 (d = -0.0, dmin = 0): no accumulator may turn it into +0.0
    lone = q4k_records(rng, (3, 1), special=0.0)
    lone[:, 0, 0:4] = np.array([-0.0, 0.0], dtype=np.float16).view(np.uint8)
    lone[:, 0, 4:16] = 0x3F
    xs = np.abs(rng.standard_normal((1, 256))).astype(np.float32) + np.float32(1.0)
    want = _gemv_want(lone, xs)
    assert np.all(want.view(np.uint32) == 0x80000000)
    assert np.array_equal(runtime.gemv_q4k(lone, xs).view(np.uint32), want.view(np.uint32))
