"""The rows kernels (GEMV) of the 32-element pairs Q4_0/Q5_0/Q8_0/IQ4_NL x Q8_0, called
directly at every ISA level the host runs (and, on a host with AVX512_VBMI, the VNNI
kernel without it), against the numpy oracle bit for bit (any NaN matching any NaN:
payloads are not specified): row counts around the 16-row blocks (a call under 16 rows
goes row by row; a last block overlaps the one before it), G = 1, 2, odd and long,
records and rows apart, odd base addresses, strided y, special binary16 scales, the
largest |S|, the last record ending at an unreadable page, G = 0 and no rows."""
import ctypes
import mmap

import llvmlite.ir as ir
import numpy as np
import pytest

from ninfer_ir.backends.llvm.kernels import qdot_blocks
from ninfer_ir.backends.llvm.runtime.jit import JITModule, host_target
from ninfer_ir.numerics import quantized as oracle
from ninfer_ir.quant import PAIRS, q8_0
from tests.backends.test_llvm_qkernels import ISAS, same_bits

_P, _I = ctypes.c_void_p, ctypes.c_int64
SMALL = [p for p in PAIRS.values() if p.cpu_module == "qdot_blocks"]
SPECIALS = np.array([np.inf, -np.inf, np.nan, 6e-8, -0.0, 0.0, 65504.0], np.float16)
X_RECORD = q8_0.record_bytes

VARIANTS = list(ISAS)
if "avx512vnni" in ISAS and host_target("avx512vnni").has_feature("avx512vbmi"):
    VARIANTS.append("avx512vnni-novbmi")


@pytest.fixture(scope="module", params=VARIANTS)
def rows(request):
    variant = request.param
    isa = variant.split("-")[0]

    def build():
        module = ir.Module(name=f"rows32_{variant}")
        for p in SMALL:
            qdot_blocks.add_rows(module, isa, p, vbmi=False if "novbmi" in variant else None)
        return module
    jit = JITModule(build, isa=isa, use_cache=False)
    return {p.stem: jit.get(p.cpu_rows, None, (_P, _I, _I, _P, _I, _I, _I, _P, _I))
            for p in SMALL}


def records(rng, schema, shape, specials=False, scale=0.05):
    """Random records; their binary16 ``d`` finite, or special in about a fifth of them."""
    a = rng.integers(0, 256, tuple(shape) + (schema.record_bytes,), dtype=np.uint8)
    d = (rng.standard_normal(shape) * scale).astype(np.float16)
    if specials:
        pick = rng.random(shape) < 0.2
        d[pick] = rng.choice(SPECIALS, size=int(pick.sum()))
    a[..., 0:2] = d[..., None].view(np.uint8)
    return a


class Guarded:
    """``nbytes`` of memory whose last byte is followed by an unreadable page: a kernel
    reading past the end of its operand faults."""

    _libc = ctypes.CDLL(None, use_errno=True)

    def __init__(self, nbytes):
        page = mmap.PAGESIZE
        body = -(-max(nbytes, 1) // page) * page
        self.map = mmap.mmap(-1, body + page)
        whole = np.frombuffer(self.map, np.uint8)
        start = whole.ctypes.data
        self._libc.mprotect.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
        assert self._libc.mprotect(start + body, page, 0) == 0           # PROT_NONE
        self.bytes = whole[body - nbytes:body]
        self.address = start + body - nbytes


def place(recs, rec_stride, row_stride, offset=0):
    """Records ``[N, G, R]`` at ``offset`` bytes into guarded memory, ``rec_stride`` and
    ``row_stride`` bytes apart (0xA5 between them), the last record's last byte the last
    readable one. Returns (memory, address of record 0 of row 0)."""
    n, g, size = recs.shape
    end = offset + (n - 1) * row_stride + (g - 1) * rec_stride + size
    mem = Guarded(end)
    mem.bytes[:] = 0xA5
    for i in range(n):
        for k in range(g):
            at = offset + i * row_stride + k * rec_stride
            mem.bytes[at:at + size] = recs[i, k]
    return mem, mem.address + offset


def run(fn, w, x, *, rec_pad=0, row_pad=0, offset=0, y_stride=1):
    """The kernel on ``w [N, G, R]`` and ``x [G, 34]`` laid out as asked; checks that the
    inputs are unchanged and y is written at its rows only, and returns those."""
    n, g, size = w.shape
    rec_stride = size + rec_pad
    row_stride = g * rec_stride + row_pad
    wmem, wp = place(w, rec_stride, row_stride, offset)
    xmem, xp = place(x[None], X_RECORD + rec_pad, 0, offset)
    w_before, x_before = wmem.bytes.copy(), xmem.bytes.copy()
    y = np.full(n * y_stride + 3, 7.25, np.float32)
    fn(wp, row_stride, rec_stride, xp, X_RECORD + rec_pad, g, n, y.ctypes.data, y_stride)
    assert np.array_equal(wmem.bytes, w_before) and np.array_equal(xmem.bytes, x_before)
    rest = np.ones(y.shape, bool)
    rest[0:n * y_stride:y_stride] = False
    assert np.all(y[rest] == np.float32(7.25)), "y written outside its rows"
    return y[0:n * y_stride:y_stride]


def want(pair, w, x):
    return oracle.quantized_dot_rows(w, x, pair=pair)


@pytest.mark.parametrize("pair", SMALL, ids=str)
@pytest.mark.parametrize("g", [1, 2, 3, 20])
def test_row_counts_around_blocks(rows, pair, g):
    """Every row count from 1 to 18 and some past whole blocks and 64-row calls; special
    scales in some weight and activation records."""
    rng = np.random.default_rng(100 * g + len(pair.stem))
    for n in list(range(1, 19)) + [31, 32, 33, 47, 64, 70]:
        w = records(rng, pair.lhs, (n, g), specials=n % 3 == 0)
        x = records(rng, q8_0, (g,), specials=n % 4 == 0, scale=1.0)
        assert same_bits(run(rows[pair.stem], w, x), want(pair, w, x)), n


@pytest.mark.parametrize("pair", SMALL, ids=str)
@pytest.mark.parametrize("n", [5, 16, 37])
def test_records_and_rows_apart_at_odd_addresses(rows, pair, n):
    rng = np.random.default_rng(n)
    g = 7
    w = records(rng, pair.lhs, (n, g))
    x = records(rng, q8_0, (g,), scale=1.0)
    expect = want(pair, w, x)
    for lay in (dict(offset=1), dict(rec_pad=5, offset=3), dict(row_pad=11, y_stride=3),
                dict(rec_pad=1, row_pad=64 * 3 + 1, offset=7, y_stride=2)):
        assert same_bits(run(rows[pair.stem], w, x, **lay), expect), lay


@pytest.mark.parametrize("pair", SMALL, ids=str)
def test_largest_sums(rows, pair):
    """Every weight byte but the scale 0x80 or 0x7F, every activation quant -128 or 127:
    |S| at its largest for each code table."""
    rng = np.random.default_rng(5)
    for byte in (0x80, 0x7F, 0x00, 0xFF):
        for quant in (0x80, 0x7F):
            w = records(rng, pair.lhs, (19, 3))
            w[..., 2:] = byte
            x = records(rng, q8_0, (3,), scale=1.0)
            x[:, 2:] = quant
            assert same_bits(run(rows[pair.stem], w, x), want(pair, w, x)), (byte, quant)


def test_no_records_and_no_rows(rows):
    for pair in SMALL:
        y = np.full(20, np.nan, np.float32)
        # G = 0: nothing is read (null operands), every row gets +0.0
        rows[pair.stem](None, 0, pair.lhs.record_bytes, None, X_RECORD, 0, 17,
                        y.ctypes.data, 1)
        assert y[:17].tobytes() == np.zeros(17, np.float32).tobytes()
        assert np.isnan(y[17:]).all()
        y = np.full(4, np.nan, np.float32)
        rows[pair.stem](None, 0, pair.lhs.record_bytes, None, X_RECORD, 3, 0,
                        y.ctypes.data, 1)
        assert np.isnan(y).all()
