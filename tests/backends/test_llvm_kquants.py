"""The K-quant dot kernels (``backends.llvm.kernels.qdot_kquants``) against the numpy oracle.

Every ISA level this host can run is compiled once (all four pairs in one module; the
VNNI level also without GF2P8AFFINEQB when the host has it) and compared bit for bit
with ``ninfer_ir.numerics.quantized_kquants`` on random-byte and valid records, odd
record counts, row counts around the VNNI rows kernel's blocks of 16, record strides
that differ from the record size, buffers at odd byte offsets, G = 0 and G = 1, special
scales, and records at the ends of every integer range.
"""
from __future__ import annotations

import ctypes

import llvmlite.ir as ir
import numpy as np
import pytest

from ninfer_ir.backends.llvm.kernels import qdot_kquants, qdot_kquants_vnni
from ninfer_ir.backends.llvm.runtime.jit import JITModule, host_target
from ninfer_ir.numerics import quantized_kquants as K
from ninfer_ir.numerics.quantized import quantize_q8k
from ninfer_ir.quant import PAIRS
from tests.backends.test_llvm_qkernels import ISAS, Placed, same_bits

F32 = np.float32
Q8 = 292
PAIRS_K = [p for p in PAIRS.values() if p.lhs.name in K.KQUANTS]
_P, _I64 = ctypes.c_void_p, ctypes.c_int64


def test_every_kquant_has_a_pair():
    assert sorted(p.lhs.name for p in PAIRS_K) == sorted(K.KQUANTS)
    for p in PAIRS_K:
        assert p.rhs.name == "q8_k"
        assert p.lhs.record_bytes == K.KQUANTS[p.lhs.name].record_bytes


# The VNNI level with and without GF2P8AFFINEQB (when the host has GFNI).
VARIANTS = list(ISAS)
if "avx512vnni" in ISAS and host_target("avx512vnni").has_feature("gfni"):
    VARIANTS.append("avx512vnni-nogfni")


@pytest.fixture(scope="module", params=VARIANTS)
def kernels(request):
    variant = request.param
    isa = variant.split("-")[0]

    def build():
        module = ir.Module(name=f"kquants_{variant}")
        for p in PAIRS_K:
            qdot_kquants.add_dot(module, isa, p)
            if variant.endswith("-nogfni"):
                qdot_kquants_vnni.add_rows_vnni(module, p, gfni=False)
            else:
                qdot_kquants.add_rows(module, isa, p)
        return module

    jit = JITModule(build, isa=isa, use_cache=False)
    return {p.lhs.name: (jit.get(p.cpu_dot, ctypes.c_float, (_P, _I64, _P, _I64, _I64)),
                         jit.get(p.cpu_rows, None, (_P, _I64, _I64, _P, _I64, _I64, _I64, _P,
                                                    _I64)))
            for p in PAIRS_K}


def _records(rng, kind, shape, specials=False):
    a = rng.integers(0, 256, tuple(shape) + (kind.record_bytes,), dtype=np.uint8)
    offsets = [kind.d] + ([kind.dmin] if kind.has_mins else [])
    for off in offsets:
        if specials:
            pool = np.array([0.0, -0.0, 6e-8, np.inf, -np.inf, np.nan, 1.0, -0.5, 65504.0],
                            dtype="<f2")
            h = rng.choice(pool, size=shape)
        else:
            h = (rng.standard_normal(shape) * 2.0 ** rng.integers(-14, 2, size=shape)).astype("<f2")
        a[..., off:off + 2] = np.asarray(h, "<f2")[..., None].view(np.uint8)
    return a


def _q8(rng, g, valid):
    if valid:
        return quantize_q8k(rng.standard_normal((g, 256)).astype(F32) * F32(2))
    out = rng.integers(0, 256, (g, Q8), dtype=np.uint8)
    out[:, 0:4] = rng.standard_normal(g).astype("<f4").reshape(g, 1).view(np.uint8)
    return out


def _fold_seq(v: np.ndarray) -> np.ndarray:
    """Rows of ``v [N, G]`` summed left to right; G = 1 gives v0, G = 0 gives +0.0."""
    out = np.zeros(v.shape[0], F32)
    if v.shape[1]:
        out = v[:, 0].copy()
        with np.errstate(all="ignore"):
            for g in range(1, v.shape[1]):
                out = np.add(out, v[:, g], dtype=F32)
    return out


def _expected(kind, w, x):
    return _fold_seq(K.record_values(kind, w, K.Q8Side(x)))


def _run_rows(fn, kind, w, x, w_stride, w_off, x_stride, x_off, row_pad=0, y_stride=1):
    n, g = w.shape[0], w.shape[1]
    row = g * w_stride + row_pad
    pw = Placed(w, w_stride, w_off, lead_stride=row)
    px = Placed(x, x_stride, x_off)
    y = np.full(n * y_stride + 1, F32(7.25), F32)
    fn(pw.address, row, w_stride, px.address, x_stride, g, n, y.ctypes.data, y_stride)
    assert pw.unchanged() and px.unchanged(), "inputs were written"
    rest = np.ones(y.shape, bool)
    rest[0:n * y_stride:y_stride] = False
    assert np.all(y[rest] == F32(7.25)), "y written outside its rows"
    return y[0:n * y_stride:y_stride]


@pytest.mark.parametrize("name", sorted(K.KQUANTS))
@pytest.mark.parametrize("g", [0, 1, 3, 16, 17])
def test_dot_random_bytes(kernels, name, g):
    kind = K.KQUANTS[name]
    rng = np.random.default_rng(100 + g)
    w = _records(rng, kind, (g,))
    x = _q8(rng, g, valid=False)
    pw, px = Placed(w, kind.record_bytes + 3, 5), Placed(x, Q8 + 1, 3)
    got = kernels[name][0](pw.address, kind.record_bytes + 3, px.address, Q8 + 1, g)
    assert pw.unchanged() and px.unchanged()
    assert same_bits(F32(got), _expected(kind, w[None], x))


@pytest.mark.parametrize("name", sorted(K.KQUANTS))
@pytest.mark.parametrize("n,g,valid", [(1, 1, True), (4, 16, True), (7, 5, False),
                                       (9, 3, True), (13, 2, False), (16, 3, True),
                                       (37, 5, False), (50, 17, True)])
def test_rows_equal_oracle(kernels, name, n, g, valid):
    kind = K.KQUANTS[name]
    rng = np.random.default_rng(n * 31 + g)
    w = _records(rng, kind, (n, g))
    x = _q8(rng, g, valid)
    want = _expected(kind, w, x)
    got = _run_rows(kernels[name][1], kind, w, x, kind.record_bytes, 0, Q8, 0)
    assert same_bits(got, want)
    # Strided records, a padded row stride, odd offsets, a y stride of 3: same bits.
    got = _run_rows(kernels[name][1], kind, w, x, kind.record_bytes + 5, 7, Q8 + 4, 1,
                    row_pad=9, y_stride=3)
    assert same_bits(got, want)
    # Each row as the single dot.
    for r in range(n):
        pw, px = Placed(w[r], kind.record_bytes, 1), Placed(x, Q8, 2)
        assert same_bits(F32(kernels[name][0](pw.address, kind.record_bytes, px.address, Q8, g)),
                         want[r])


@pytest.mark.parametrize("name", sorted(K.KQUANTS))
def test_special_scales(kernels, name):
    kind = K.KQUANTS[name]
    rng = np.random.default_rng(7)
    w = _records(rng, kind, (6, 5), specials=True)
    x = _q8(rng, 5, valid=True)
    x[:, 0:4] = np.array([np.inf, 1e-45, -0.0, np.nan, 3e38], "<f4").reshape(5, 1).view(np.uint8)
    got = _run_rows(kernels[name][1], kind, w, x, kind.record_bytes, 0, Q8, 0)
    assert same_bits(got, _expected(kind, w, x))


@pytest.mark.parametrize("name", sorted(K.KQUANTS))
def test_records_at_the_ends_of_the_integer_ranges(kernels, name):
    """Records of one repeated byte (every code, scale and min at an end of its range, or a
    mixed bit pattern) against quants all -128 or all 127: the largest |S| and |T| of the
    spec's bounds, and the largest partial sums of each kernel's integer lanes."""
    kind = K.KQUANTS[name]
    fills = [0x00, 0xFF, 0x80, 0x7F, 0x55, 0xAA]
    w = np.repeat(np.array(fills, np.uint8)[:, None, None], kind.record_bytes, axis=2)
    w = np.repeat(w, 2, axis=1)
    w = np.concatenate([w] * 3)                                     # 18 rows: one block + 2
    for off in [kind.d] + ([kind.dmin] if kind.has_mins else []):
        w[..., off:off + 2] = np.array([1.0], "<f2").view(np.uint8)
    x = np.zeros((2, Q8), np.uint8)
    x[0, 4:260], x[1, 4:260] = np.uint8(0x80), np.uint8(0x7F)
    x[:, 260:292] = np.array([-32768, 32767] * 8, "<i2").view(np.uint8)
    x[:, 0:4] = np.array([1.0], "<f4").view(np.uint8)
    got = _run_rows(kernels[name][1], kind, w, x, kind.record_bytes, 0, Q8, 0)
    assert same_bits(got, _expected(kind, w, x))


@pytest.mark.parametrize("name", sorted(K.KQUANTS))
def test_rows_with_no_records_are_zero(kernels, name):
    kind = K.KQUANTS[name]
    w = np.zeros((5, 0, kind.record_bytes), np.uint8)
    x = np.zeros((0, Q8), np.uint8)
    y = np.full(5, F32(3.0), F32)
    kernels[name][1](w.ctypes.data, 0, kind.record_bytes, x.ctypes.data, Q8, 0, 5,
                     y.ctypes.data, 1)
    assert np.array_equal(y.view(np.uint32), np.zeros(5, F32).view(np.uint32))
