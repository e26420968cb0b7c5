"""Element decoders of the registered formats that ``decode`` reads in kernels (all but
the grouped ones, whose bit-stream decoder each backend writes directly): the value of
element ``k`` of one row, written once against the ``Val`` vocabulary of ``core``.

``element(fmt, row, k)`` takes ``row``, the row's operands in some context
(``row.load(i, idx)``: element ``idx`` of row operand ``i``; ``row.scalar(i)``: scalar
operand ``i``; ``row.c``: the context, which also gives ``table(key, values, idx)``, a
constant table lookup), and ``k`` (an ``i64`` Val). The numpy context evaluates it on
whole index arrays (the tests check it against the registry's ``decode``); the CPU
emitter and the C emitter run the same code in contexts that emit LLVM IR and C, so
every backend computes the same binary32 operations in the same order as the
registry's decoders (``ninfer_ir/formats/_ggml_quants.py``, ``_ggml_iquants.py``,
``nvfp4.py``, ``fp8_row.py``, ``direct.py``): no fused multiply-add; where the
registry multiplies by a sign of +-1 the decoder negates, keeping a NaN as the
product keeps it.

Only whole-row geometry is assumed (checked before any element is read): every byte
offset below stays inside the row.
"""
from __future__ import annotations

import numpy as np

from ninfer_ir.formats._floats import E2M1_VALUES, E4M3FN_VALUES
from ninfer_ir.formats._ggml_grids import grid
from ninfer_ir.formats._ggml_iquants import IQ4_NL_VALUES, KSIGNS
from ninfer_ir.numerics.decode import family
from ninfer_ir.types import f16, f32, i32, i64, u16, u32

from .core import NumpyContext, Val, select

__all__ = ["element", "TableNumpyContext", "NumpyRow", "numpy_decode"]


def _table(name: str) -> np.ndarray:
    """The constant tables the decoders read, as integer arrays (floats by their bits)."""
    if name.startswith("grid_"):      # small integers, exact in a byte
        values = np.asarray(grid(name[5:])).reshape(-1)
        return values.astype(np.int8 if name == "grid_iq1s" else np.uint8)
    return {"ksigns": KSIGNS.astype(np.uint8),
            "iq4nl": IQ4_NL_VALUES.astype(np.int8),
            "e2m1": E2M1_VALUES.view(np.uint32),
            "e4m3fn": E4M3FN_VALUES.view(np.uint32)}[name]


def lookup(c, name: str, idx: Val) -> Val:
    return c.table(name, _table(name), idx)


def _f32_table(c, name, idx):
    return lookup(c, name, idx).bitcast(f32)


class _Block:
    """Element ``k`` of a row of whole ggml blocks: byte reads relative to its block."""

    def __init__(self, fmt, row, k: Val):
        self.row, self.c = row, k.c
        shift = fmt.block_values.bit_length() - 1
        self.base = (k >> shift) * fmt.block_bytes
        self.j = (k & (fmt.block_values - 1)).cast(i32)

    def byte(self, off) -> Val:
        """The byte at ``off`` (int or i32 Val) of the block, as i32."""
        o = off if isinstance(off, int) else off.cast(i64)
        return self.row.load(0, self.base + o).cast(i32)

    def u16(self, off) -> Val:
        return self.byte(off) | (self.byte(off + 1) << 8)

    def u32(self, off) -> Val:
        w = [self.byte(off + i).cast(u32) for i in range(4)]
        return w[0] | (w[1] << 8) | (w[2] << 16) | (w[3] << 24)

    def half(self, off) -> Val:
        """The binary16 field at ``off`` as binary32."""
        return half_of(self.u16(off))


def half_of(word: Val) -> Val:
    return word.cast(u16).bitcast(f16).cast(f32)


def _signed8(v: Val) -> Val:
    return (v ^ 128) - 128


def _f(v: Val) -> Val:
    return v.cast(f32)


def _nibble(blk, base, j):
    """ggml's 32-value nibble order: element j < 16 is the low nibble of byte j,
    element j >= 16 the high nibble of byte j - 16."""
    return (blk.byte(base + (j & 15)) >> ((j >> 4) * 4)) & 15


def _signed(x: Val, bits: Val, c_bit: Val) -> Val:
    """The registry's ``x * (-1 if bit c_bit of bits else +1)``: ``-x``, or ``x`` itself
    when not negated or a NaN (the product keeps a NaN operand's sign). Written without
    the multiplication by -1, which an optimizer may turn into a sign flip of the NaN."""
    return select(((bits >> c_bit) & 1).ne(0) & x.eq(x), -x, x)


# -- scalar-grid blocks ---------------------------------------------------------------

def _q8_0(b):
    return _f(_signed8(b.byte(2 + b.j))) * b.half(0)


def _q4_0(b):
    return _f(_nibble(b, 2, b.j) - 8) * b.half(0)


def _q5_0(b):
    high = (b.byte(2 + (b.j >> 3)) >> (b.j & 7)) & 1
    return _f((_nibble(b, 6, b.j) | (high << 4)) - 16) * b.half(0)


def _q2_0(b):
    u = (b.byte(2 + (b.j >> 2)) >> ((b.j & 3) * 2)) & 3
    return _f(u - 1) * b.half(0)


def _hjm(j):
    """``o = 128h + 32jj + m``."""
    return j >> 7, (j >> 5) & 3, j & 31


def _q2_k(b):
    sc = b.byte(b.j >> 4)
    dl = b.half(80) * _f(sc & 15)
    ml = b.half(82) * _f(sc >> 4)
    h, jj, m = _hjm(b.j)
    q = (b.byte(16 + 32 * h + m) >> (2 * jj)) & 3
    return dl * _f(q) - ml


def _q3_k(b):
    sub = b.j >> 4
    low4 = (b.byte(96 + (sub & 7)) >> (4 * (sub >> 3))) & 15
    high2 = (b.byte(104 + (sub & 3)) >> (2 * (sub >> 2))) & 3
    dl = b.half(108) * _f((low4 | (high2 << 4)) - 32)
    h, jj, m = _hjm(b.j)
    low = (b.byte(32 + 32 * h + m) >> (2 * jj)) & 3
    hbit = (b.byte(m) >> (4 * h + jj)) & 1
    return dl * _f(low - 4 * (1 - hbit))


def _k4_apply(b, q):
    """Q4_K/Q5_K: ``d * sc * q - dmin * m`` with ggml's ``get_scale_min_k4`` fields."""
    sub = b.j >> 5
    i4 = sub & 3
    first, second, rest = b.byte(4 + i4), b.byte(8 + i4), b.byte(12 + i4)
    low = sub.lt(4)
    sc = select(low, first & 63, (rest & 15) | ((first >> 6) << 4))
    mn = select(low, second & 63, (rest >> 4) | ((second >> 6) << 4))
    d1 = b.half(0) * _f(sc)
    m1 = b.half(2) * _f(mn)
    return d1 * _f(q) - m1


def _q4_k(b):
    jj, t, lane = b.j >> 6, (b.j >> 5) & 1, b.j & 31
    return _k4_apply(b, (b.byte(16 + 32 * jj + lane) >> (4 * t)) & 15)


def _q5_k(b):
    jj, t, lane = b.j >> 6, (b.j >> 5) & 1, b.j & 31
    low = (b.byte(48 + 32 * jj + lane) >> (4 * t)) & 15
    high = (b.byte(16 + lane) >> (b.j >> 5)) & 1
    return _k4_apply(b, low | (high << 4))


def _q6_k(b):
    dsc = b.half(208) * _f(_signed8(b.byte(192 + (b.j >> 4))))
    h, t, lane = _hjm(b.j)
    low = (b.byte(64 * h + 32 * (t & 1) + lane) >> (4 * (t >> 1))) & 15
    high = (b.byte(128 + 32 * h + lane) >> (2 * t)) & 3
    return dsc * _f((low | (high << 4)) - 32)


# -- i-quant blocks -------------------------------------------------------------------

def _grid(b, name, index, width, coord):
    return _f(lookup(b.c, f"grid_{name}", index * width + coord))


def _ksigned(b, x, index7, c_bit):
    """``x`` with ggml's ``ksigns_iq2xs[index7]`` sign ``c_bit``."""
    return _signed(x, lookup(b.c, "ksigns", index7).cast(i32), c_bit)


def _quarter(d, field, last):
    """ggml's ``d * (0.5f + field) * last``."""
    return (d * (0.5 + _f(field))) * last


def _iq2_xxs(b):
    ib, e = b.j >> 5, b.j & 31
    aux = b.u32(2 + 8 * ib + 4)
    db = _quarter(b.half(0), (aux >> 28).cast(i32), 0.25)
    signs = ((aux >> (7 * (e >> 3)).cast(u32)) & 127).cast(i32)
    g = _grid(b, "iq2xxs", b.byte(2 + 8 * ib + (e >> 3)), 8, e & 7)
    return _ksigned(b, db * g, signs, e & 7)


def _half_nibble_scale(b, at, ib, entry):
    """IQ2_XS/IQ2_S: scale byte ``ib``, low nibble for entries 0, 1 and high for 2, 3."""
    field = (b.byte(at + ib) >> (4 * (entry >> 1))) & 15
    return _quarter(b.half(0), field, 0.25)


def _iq2_xs(b):
    g8, ib, entry, c_bit = b.j >> 3, b.j >> 5, (b.j >> 3) & 3, b.j & 7
    q16 = b.u16(2 + 2 * g8)
    db = _half_nibble_scale(b, 66, ib, entry)
    return _ksigned(b, db * _grid(b, "iq2xs", q16 & 511, 8, c_bit), q16 >> 9, c_bit)


def _iq2_s(b):
    g8, ib, entry, c_bit = b.j >> 3, b.j >> 5, (b.j >> 3) & 3, b.j & 7
    index = b.byte(2 + g8) | (((b.byte(66 + ib) >> (2 * entry)) & 3) << 8)
    db = _half_nibble_scale(b, 74, ib, entry)
    return _signed(db * _grid(b, "iq2s", index, 8, c_bit), b.byte(34 + g8), c_bit)


def _iq3_xxs(b):
    ib, e = b.j >> 5, b.j & 31
    aux = b.u32(66 + 4 * ib)
    db = _quarter(b.half(0), (aux >> 28).cast(i32), 0.5)
    signs = ((aux >> (7 * (e >> 3)).cast(u32)) & 127).cast(i32)
    lattice = _grid(b, "iq3xxs", b.byte(2 + 8 * ib + (e >> 2)), 4, e & 3)
    return _ksigned(b, db * lattice, signs, e & 7)


def _iq3_s(b):
    ib, e = b.j >> 5, b.j & 31
    w = e >> 2
    index = b.byte(2 + 8 * ib + w) | (((b.byte(66 + ib) >> w) & 1) << 8)
    lattice = _grid(b, "iq3s", index, 4, e & 3)
    odd_even = (b.byte(106 + (ib >> 1)) >> (4 * (ib & 1))) & 15
    db = b.half(0) * _f(1 + 2 * odd_even)
    return _signed(db * lattice, b.byte(74 + 4 * ib + (e >> 3)), e & 7)


def _iq1(dl, b, index, delta_bit):
    lattice = _f(lookup(b.c, "grid_iq1s", index * 8 + (b.j & 7)))
    delta = select(delta_bit.ne(0), b.c.const(-0.125, f32), 0.125)
    return dl * (lattice + delta)


def _iq1_s(b):
    ib, entry = b.j >> 5, (b.j >> 3) & 3
    qh = b.u16(34 + 2 * ib)
    dl = b.half(0) * _f(2 * ((qh >> 12) & 7) + 1)
    index = b.byte(2 + 4 * ib + entry) | (((qh >> (3 * entry)) & 7) << 8)
    return _iq1(dl, b, index, qh & 0x8000)


def _iq1_m(b):
    sc = [b.u16(48 + 2 * i) for i in range(4)]
    d = half_of((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) | ((sc[2] >> 4) & 0x0F00)
                | (sc[3] & 0xF000))
    ib, entry = b.j >> 5, (b.j >> 3) & 3
    word = b.u16(48 + 2 * (ib >> 1))
    field = (word >> (6 * (ib & 1) + 3 * (entry >> 1))) & 7
    dl = d * _f(2 * field + 1)
    qh = (b.byte(32 + 2 * ib + (entry >> 1)) >> (4 * (entry & 1))) & 15
    index = b.byte(4 * ib + entry) | ((qh & 7) << 8)
    return _iq1(dl, b, index, qh & 8)


def _iq4_nl(b):
    return b.half(0) * _f(lookup(b.c, "iq4nl", _nibble(b, 2, b.j)))


def _iq4_xs(b):
    ib, e = b.j >> 5, b.j & 31
    low = (b.byte(4 + (ib >> 1)) >> (4 * (ib & 1))) & 15
    high = (b.u16(2) >> (2 * ib)) & 3
    dl = b.half(0) * _f((low | (high << 4)) - 32)
    return dl * _f(lookup(b.c, "iq4nl", _nibble(b, 8 + 16 * ib, e)))


GGUF = {
    "gguf_q8_0": _q8_0, "gguf_q4_0": _q4_0, "gguf_q5_0": _q5_0, "gguf_q2_0": _q2_0,
    "gguf_q2_k": _q2_k, "gguf_q3_k": _q3_k, "gguf_q4_k": _q4_k, "gguf_q5_k": _q5_k,
    "gguf_q6_k": _q6_k, "gguf_iq2_xxs": _iq2_xxs, "gguf_iq2_xs": _iq2_xs,
    "gguf_iq2_s": _iq2_s, "gguf_iq3_xxs": _iq3_xxs, "gguf_iq3_s": _iq3_s,
    "gguf_iq1_s": _iq1_s, "gguf_iq1_m": _iq1_m, "gguf_iq4_nl": _iq4_nl,
    "gguf_iq4_xs": _iq4_xs,
}


# -- rows with scales beside them, and direct words --------------------------------------

def _e4m3fn(c, code):
    return _f32_table(c, "e4m3fn", code)


def element(fmt, row, k: Val) -> Val:
    """The value of element ``k`` of one row of ``fmt`` (any registered format but the
    grouped ones), as the registry's ``decode`` computes it."""
    fam = family(fmt)
    c = row.c
    if fam == "gguf":
        return GGUF[fmt.name](_Block(fmt, row, k))
    if fam == "direct":
        word = row.load(0, k)
        if fmt.name == "bf16":
            return (word.cast(u32) << 16).bitcast(f32)
        return word.bitcast(i32 if fmt.name == "int32" else f32)
    if fam == "fp8_row":
        s = row.scalar(1)
        s32 = (s.cast(u32) << 16).bitcast(f32) if s.t is u16 else s.cast(f32)
        return _e4m3fn(c, row.load(0, k).cast(i32)) * s32
    code = row.load(0, k).cast(i32) & 15
    product = _f32_table(c, "e2m1", code) * _e4m3fn(c, row.load(1, k >> 4).cast(i32))
    return product / row.scalar(2)


# -- the numpy context: whole index arrays at once (the tests' reference) -----------------

class TableNumpyContext(NumpyContext):
    def table(self, key, values, idx):
        from ninfer_ir.types import from_numpy
        return self.wrap(values[np.asarray(idx.v, dtype=np.int64)], from_numpy(values.dtype))


class NumpyRow:
    """A row's operands as numpy arrays (rows) and 0-d arrays (scalars)."""

    def __init__(self, fmt, values):
        from ninfer_ir.numerics.decode import signature
        self.c = TableNumpyContext()
        self.values = [np.asarray(v) for v in values]
        self.types = [op.dtype for op in signature(fmt)]

    def load(self, i, idx):
        return self.c.wrap(self.values[i][np.asarray(idx.v, dtype=np.int64)], self.types[i])

    def scalar(self, i):
        return self.c.wrap(self.values[i], self.types[i])


def numpy_decode(fmt, values) -> np.ndarray:
    """Every element of one row by ``element`` in the numpy context."""
    from ninfer_ir.numerics.decode import row_length
    row = NumpyRow(fmt, values)
    sizes = [v.shape[0] for v, op in zip(row.values, row.types) if v.ndim == 1]
    k = row.c.wrap(np.arange(row_length(fmt, sizes), dtype=np.int64), i64)
    with np.errstate(all="ignore"):
        return np.asarray(element(fmt, row, k).v)
