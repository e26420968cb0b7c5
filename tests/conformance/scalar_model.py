"""A deliberately simple scalar model of quantize / quantized_dot, and record encoders.

Written straight from spec/quantized-ops.md with Python ints, floats and
``fractions.Fraction``, one element at a time, sharing no code with the numpy
oracle. Binary32 rounding is done here by hand:

* ``r32(x)`` rounds a double that holds an *exact* result (a product of two
  binary32/binary16 values always fits a double exactly) to binary32.
* ``r32_exact(q)`` rounds an exact rational (sums, differences, quotients are
  formed exactly as ``Fraction`` first), so no double rounding is involved.

Both round to nearest, ties to even, with gradual underflow and overflow to inf.
"""
from __future__ import annotations

import math
import struct
from fractions import Fraction

FLT_MAX = float.fromhex("0x1.fffffep+127")
_FLT_MAX_Q = Fraction(FLT_MAX)
_MIN_EXP = -149          # exponent of the smallest binary32 subnormal
_PRECISION = 24          # significant bits of binary32


# --- binary32 rounding -------------------------------------------------------

def r32(x: float) -> float:
    """Round a double (holding an exact value) to the nearest binary32, as a double."""
    if x != x or math.isinf(x) or x == 0.0:
        return x
    _, e = math.frexp(abs(x))                    # 2**(e-1) <= |x| < 2**e
    ulp_exp = max(e - _PRECISION, _MIN_EXP)
    units = round(math.ldexp(abs(x), -ulp_exp))  # exact scaling; round() is half-even
    y = math.ldexp(units, ulp_exp)
    if y > FLT_MAX:
        y = math.inf
    return math.copysign(y, x)


def r32_exact(q: Fraction) -> float:
    """Round a nonzero exact rational to the nearest binary32, as a double."""
    a = abs(q)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if a < Fraction(2) ** e:
        e -= 1                                   # now 2**e <= a < 2**(e+1)
    ulp_exp = max(e + 1 - _PRECISION, _MIN_EXP)
    units = round(a / Fraction(2) ** ulp_exp)    # Fraction rounds half to even
    y = Fraction(units) * Fraction(2) ** ulp_exp
    out = math.inf if y > _FLT_MAX_Q else float(y)
    return -out if q < 0 else out


def f32_mul(a: float, b: float) -> float:
    return r32(a * b)                            # exact in double; IEEE specials by Python


def f32_add(a: float, b: float) -> float:
    if not (math.isfinite(a) and math.isfinite(b)):
        return a + b                             # inf/NaN cases are exact in double
    exact = Fraction(a) + Fraction(b)
    if exact == 0:
        both_negative = math.copysign(1.0, a) < 0 and math.copysign(1.0, b) < 0
        return -0.0 if both_negative else 0.0
    return r32_exact(exact)


def f32_sub(a: float, b: float) -> float:
    return f32_add(a, -b)


def f32_div(a: float, b: float) -> float:
    """a / b for finite a and finite nonzero b."""
    if a == 0:
        return math.copysign(0.0, a) * math.copysign(1.0, b)
    return r32_exact(Fraction(a) / Fraction(b))


def f16_value(bits: int) -> float:
    """The exact value of an IEEE binary16 bit pattern."""
    sign = -1.0 if bits >> 15 else 1.0
    exponent = (bits >> 10) & 31
    mantissa = bits & 1023
    if exponent == 31:
        return sign * math.inf if mantissa == 0 else math.nan
    if exponent == 0:
        return sign * math.ldexp(mantissa, -24)
    return sign * math.ldexp(1024 + mantissa, exponent - 25)


def f32_value(raw: bytes) -> float:
    return struct.unpack("<f", raw)[0]


def f32_bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


# --- sums in a declared order ------------------------------------------------

def sum_seq(vals: list[float]) -> float:
    if not vals:
        return 0.0
    acc = vals[0]
    for x in vals[1:]:
        acc = f32_add(acc, x)
    return acc


def sum_tree(vals: list[float]) -> float:
    """Pad with -0.0 to a power of two, then lane i += lane i+off, off = 1, 2, 4, ..."""
    if not vals:
        return 0.0
    width = 1
    while width < len(vals):
        width *= 2
    lanes = list(vals) + [-0.0] * (width - len(vals))
    off = 1
    while off < width:
        for i in range(0, width, 2 * off):
            lanes[i] = f32_add(lanes[i], lanes[i + off])
        off *= 2
    return lanes[0]


def sum_in_order(vals: list[float], text: str) -> float:
    if text == "seq":
        return sum_seq(vals)
    if text == "tree":
        return sum_tree(vals)
    assert text.startswith("chunk<")
    k = int(text[len("chunk<"):text.index(">")])
    partials = [sum_seq(vals[i:i + k]) for i in range(0, len(vals), k)]
    return sum_tree(partials) if text.endswith("/tree") else sum_seq(partials)


# --- quantize ---------------------------------------------------------------

class ModelDomainError(Exception):
    def __init__(self, record: int, reason: int):
        super().__init__(record, reason)
        self.record = record
        self.reason = reason


def quantize_block(row: list[float], index: int) -> bytes:
    """One Q8_K record (292 bytes) from 256 floats (binary32 values held as doubles)."""
    if any(not math.isfinite(x) for x in row):
        raise ModelDomainError(index, 1)
    largest = max(row)
    smallest = min(row)
    extreme = largest if abs(largest) > abs(smallest) else smallest
    if extreme == 0:
        return bytes(292)
    inverse = f32_div(-127.0, extreme)
    if not math.isfinite(inverse):
        raise ModelDomainError(index, 2)
    ds = f32_div(1.0, inverse)
    if not math.isfinite(ds):
        raise ModelDomainError(index, 3)
    q = []
    for x in row:
        scaled = f32_mul(x, inverse)
        if not math.isfinite(scaled):
            raise ModelDomainError(index, 4)
        q.append(min(127, max(-128, round(scaled))))
    bsum = [sum(q[16 * j:16 * j + 16]) for j in range(16)]
    return (struct.pack("<f", ds) + bytes(v & 0xFF for v in q)
            + struct.pack("<16h", *bsum))


def quantize(rows: list[list[float]]) -> bytes:
    """All records, or ``ModelDomainError`` for the first failing block."""
    return b"".join(quantize_block(row, g) for g, row in enumerate(rows))


# --- dot --------------------------------------------------------------------

def q4k_decode(a: bytes):
    """(d, dmin, sc[8], m[8], q[256]) of one 144-byte Q4_K record, per spec §2."""
    d = f16_value(a[0] | a[1] << 8)
    dmin = f16_value(a[2] | a[3] << 8)
    fields = []
    for r in (0, 1):
        field = [a[4 + 4 * r + i] & 63 for i in range(4)]
        for t in range(4):
            field.append(((a[12 + t] >> (4 * r)) & 15) | ((a[4 + 4 * r + t] >> 6) << 4))
        fields.append(field)
    q = []
    for i in range(256):
        packed = a[16 + 32 * (i // 64) + (i % 32)]
        q.append((packed >> (0 if i % 64 < 32 else 4)) & 15)
    return d, dmin, fields[0], fields[1], q


def q8k_decode(b: bytes):
    """(ds, q[256], bsum[16]) of one 292-byte Q8_K record."""
    ds = f32_value(b[0:4])
    q = [v - 256 if v >= 128 else v for v in b[4:260]]
    bsum = [int.from_bytes(b[260 + 2 * j:262 + 2 * j], "little", signed=True)
            for j in range(16)]
    return ds, q, bsum


def record_stats(a: bytes, b: bytes) -> tuple[int, int]:
    """The exact integers S_b and T_b of one record pair."""
    _, _, sc, m, wq = q4k_decode(a)
    _, xq, bsum = q8k_decode(b)
    s = 0
    for sub in range(8):
        inner = 0
        for i in range(32):
            inner += wq[32 * sub + i] * xq[32 * sub + i]
        s += sc[sub] * inner
    t = 0
    for sub in range(8):
        t += m[sub] * (bsum[2 * sub] + bsum[2 * sub + 1])
    return s, t


def record_value(a: bytes, b: bytes) -> float:
    d, dmin, _, _, _ = q4k_decode(a)
    ds, _, _ = q8k_decode(b)
    s, t = record_stats(a, b)
    p = f32_mul(d, r32(float(s)))       # |S|, |T| < 2**53: float() is exact
    n = f32_mul(dmin, r32(float(t)))
    return f32_mul(ds, f32_sub(p, n))


def dot(lhs: list[bytes], rhs: list[bytes], order: str = "seq") -> float:
    return sum_in_order([record_value(a, b) for a, b in zip(lhs, rhs)], order)


# --- encoders (the inverse of spec §2, for building test records) ------------

def pack_q4k(d: float, dmin: float, sc: list[int], m: list[int], q: list[int]) -> bytes:
    """A 144-byte Q4_K record; d and dmin must be exact binary16 values (or inf/NaN)."""
    a = bytearray(144)
    a[0:2] = struct.pack("<e", d)
    a[2:4] = struct.pack("<e", dmin)
    for r, field in enumerate((sc, m)):
        assert len(field) == 8 and all(0 <= v < 64 for v in field)
        for i in range(4):
            a[4 + 4 * r + i] = (field[i] & 63) | ((field[4 + i] >> 4) << 6)
        for t in range(4):
            a[12 + t] |= (field[4 + t] & 15) << (4 * r)
    assert len(q) == 256 and all(0 <= v < 16 for v in q)
    for i, v in enumerate(q):
        a[16 + 32 * (i // 64) + (i % 32)] |= v << (0 if i % 64 < 32 else 4)
    return bytes(a)


def pack_q8k(ds: float, q: list[int], bsum: list[int] | None = None) -> bytes:
    """A 292-byte Q8_K record; bsum defaults to the exact sums of q (a valid record)."""
    assert len(q) == 256 and all(-128 <= v < 128 for v in q)
    if bsum is None:
        bsum = [sum(q[16 * j:16 * j + 16]) for j in range(16)]
    return struct.pack("<f", ds) + bytes(v & 0xFF for v in q) + struct.pack("<16h", *bsum)
