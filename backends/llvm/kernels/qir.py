"""Small ``llvmlite.ir`` building blocks shared by the quantized kernels.

Types, constants, intrinsic declarations, byte-addressed (``align 1``) vector
loads and stores, counted loops, entry-block allocas, the exact binary16 to
binary32 conversion, and the lane-bookkept transpose-reduction that turns
sixteen 16-lane i32 vectors into one vector of their sums.
"""
from __future__ import annotations

from contextlib import contextmanager
from functools import lru_cache

import llvmlite.ir as ir

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I16 = ir.IntType(16)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
F16 = ir.HalfType()
F32 = ir.FloatType()
I8P = I8.as_pointer()
F32P = F32.as_pointer()


def vec(elem: ir.Type, n: int) -> ir.VectorType:
    return ir.VectorType(elem, n)


def const(ty: ir.Type, value) -> ir.Constant:
    return ir.Constant(ty, value)


def i64(value: int) -> ir.Constant:
    return ir.Constant(I64, value)


def i32(value: int) -> ir.Constant:
    return ir.Constant(I32, value)


_ELEMENTS = {str(t): t for t in (I1, I8, I16, I32, I64, F16, F32)}


@lru_cache(maxsize=None)
def _constant_vector(elem_name: str, values: tuple) -> ir.Constant:
    # Constants carry no parent, so one object can serve every use.
    elem = _ELEMENTS[elem_name]
    return ir.Constant(vec(elem, len(values)), [ir.Constant(elem, v) for v in values])


def splat(elem: ir.Type, n: int, value) -> ir.Constant:
    return _constant_vector(str(elem), (value,) * n)


def const_vec(elem: ir.Type, values) -> ir.Constant:
    return _constant_vector(str(elem), tuple(values))


def zero(ty: ir.Type) -> ir.Constant:
    return ir.Constant(ty, None)


def intrinsic(module: ir.Module, name: str, ret: ir.Type, args) -> ir.Function:
    """Declare (once per module) and return the function ``name``."""
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ret, list(args)), name=name)
    return fn


def gather_i32(module: ir.Module, lanes: int) -> ir.Function:
    """``llvm.masked.gather`` of ``lanes`` i32 words through a vector of i32 pointers,
    called as ``(ptrs, mask, passthru)``: no alignment argument, so every address is
    byte-aligned (align 1). Every kernel of a module declares it through here, so two
    kernels in one module never disagree on its signature."""
    v = ir.VectorType(I32, lanes)
    return intrinsic(module, f"llvm.masked.gather.v{lanes}i32.v{lanes}p0", v,
                     [ir.VectorType(I32.as_pointer(), lanes), ir.VectorType(ir.IntType(1), lanes),
                      v])


def shuffle(b: ir.IRBuilder, v1, v2, mask) -> ir.Value:
    return b.shuffle_vector(v1, v2, const_vec(I32, mask))


# --- memory -------------------------------------------------------------------------

def byte_ptr(b: ir.IRBuilder, base, offset) -> ir.Value:
    """``base + offset`` bytes; ``offset`` is an int or an i64 value."""
    if isinstance(offset, int):
        if offset == 0:
            return base
        offset = i64(offset)
    return b.gep(base, [offset])


def load(b: ir.IRBuilder, base, offset, ty: ir.Type, align: int = 1) -> ir.Value:
    """Load a ``ty`` from ``base + offset`` bytes (``align 1`` unless told)."""
    ptr = b.bitcast(byte_ptr(b, base, offset), ty.as_pointer())
    return b.load(ptr, align=align)


def store(b: ir.IRBuilder, value, base, offset, align: int = 1) -> None:
    ptr = b.bitcast(byte_ptr(b, base, offset), value.type.as_pointer())
    b.store(value, ptr, align=align)


def entry_alloca(b: ir.IRBuilder, ty: ir.Type, name: str, align: int | None = None):
    """An alloca in the function's entry block (so mem2reg/SROA can promote it)."""
    fn = b.function
    entry = fn.entry_basic_block
    saved = b.block
    if entry.instructions:
        b.position_before(entry.instructions[0])
    else:
        b.position_at_end(entry)
    slot = b.alloca(ty, name=name)
    if align is not None:
        slot.align = align
    b.position_at_end(saved)
    return slot


# --- control flow -----------------------------------------------------------------

@contextmanager
def for_range(b: ir.IRBuilder, start, stop, step: int = 1, name: str = "i"):
    """``for i in range(start, stop, step)`` over i64 (``step`` > 0); yields ``i``."""
    start = i64(start) if isinstance(start, int) else start
    stop = i64(stop) if isinstance(stop, int) else stop
    pre = b.block
    head = b.append_basic_block(f"{name}.head")
    body = b.append_basic_block(f"{name}.body")
    done = b.append_basic_block(f"{name}.done")
    b.branch(head)
    b.position_at_end(head)
    index = b.phi(I64, name=name)
    index.add_incoming(start, pre)
    b.cbranch(b.icmp_signed("<", index, stop), body, done)
    b.position_at_end(body)
    yield index
    nxt = b.add(index, i64(step), name=f"{name}.next")
    index.add_incoming(nxt, b.block)
    b.branch(head)
    b.position_at_end(done)


def all_of(b: ir.IRBuilder, conds) -> ir.Value:
    """i1: every i1 of ``conds`` holds (true for none)."""
    out = ir.Constant(ir.IntType(1), 1)
    for c in conds:
        out = b.and_(out, c)
    return out


def any_lane(b: ir.IRBuilder, mask) -> ir.Value:
    """i1: some lane of the vector of i1 ``mask`` is set."""
    n = mask.type.count
    return b.icmp_unsigned("!=", b.bitcast(mask, ir.IntType(n)), ir.Constant(ir.IntType(n), 0))


def record_failer(fn: ir.Function, b: ir.IRBuilder, status, record, exit_block):
    """``fail(reason, cond, name)`` for a loop over records: where ``cond`` holds, store the
    status word ``record * 8 + reason`` and leave for ``exit_block``; else go on."""
    def fail(reason: int, cond, block_name: str) -> None:
        bad = fn.append_basic_block(f"{block_name}.fail")
        ok = fn.append_basic_block(f"{block_name}.ok")
        b.cbranch(cond, bad, ok)
        b.position_at_end(bad)
        b.store(b.add(b.mul(record, i64(8)), i64(reason)), status)
        b.branch(exit_block)
        b.position_at_end(ok)
    return fail


# --- numeric helpers ----------------------------------------------------------------

def half_bits_to_float(b: ir.IRBuilder, bits):
    """Exact binary16 -> binary32 from raw i16 bits (scalar or vector), integer ops only.

    Normal numbers re-bias the exponent (+112) and shift the mantissa; zero and
    subnormals are ``mantissa * 2**-24``, a product that is exact in binary32;
    inf/NaN keep the mantissa bits (shifted) under an all-ones exponent.
    """
    ity = I32 if not isinstance(bits.type, ir.VectorType) else vec(I32, bits.type.count)
    fty = F32 if ity is I32 else vec(F32, ity.count)

    def c(v):
        return const(ity, v) if ity is I32 else splat(I32, ity.count, v)

    def cf(v):
        return const(fty, v) if fty is F32 else splat(F32, fty.count, v)

    h = b.zext(bits, ity)
    sign = b.shl(b.and_(h, c(0x8000)), c(16))
    exponent = b.and_(b.lshr(h, c(10)), c(31))
    mantissa = b.and_(h, c(0x3FF))
    normal = b.or_(b.shl(b.add(exponent, c(112)), c(23)), b.shl(mantissa, c(13)))
    special = b.or_(c(0x7F800000), b.shl(mantissa, c(13)))
    tiny = b.bitcast(b.fmul(b.uitofp(mantissa, fty), cf(2.0 ** -24)), ity)
    body = b.select(b.icmp_unsigned("==", exponent, c(0)), tiny,
                    b.select(b.icmp_unsigned("==", exponent, c(31)), special, normal))
    return b.bitcast(b.or_(body, sign), fty)


# --- transpose-reduction ---------------------------------------------------------------
#
# Sixteen vectors of sixteen i32 lanes, vector r owned by "record" r, become one
# vector whose lane r is the sum of vector r's lanes. Each combining step
# takes two vectors A and B whose owners hold 2n lanes each and makes one
# vector whose owners hold n lanes:
#
#     out = blend(A, B) + permute(A, B)
#
# Every owner's lanes are split into pairs; of each pair one lane stays in
# place (the blend, a masked move that needs no shuffle unit) and the other
# is moved onto it (one two-source permute). The in-place lanes of A and of B
# must be complementary positions: each pair of A and each pair of B has
# exactly one lane in A's set, which is a 2-colouring of the union of two
# perfect matchings (even cycles), always possible. The owner of every lane
# is tracked here in Python and every add is checked to combine two lanes of
# one owner; the sums are integer and exact, so the grouping is free.

def _pairs(labels: list) -> list[tuple[int, int]]:
    """Pair each owner's lanes: its (2k)-th lane with its (2k+1)-th."""
    lanes: dict = {}
    for i, owner in enumerate(labels):
        lanes.setdefault(owner, []).append(i)
    pairs = []
    for owned in lanes.values():
        half = len(owned) // 2
        if len(owned) != 2 * half:
            raise AssertionError("an owner holds an odd number of lanes")
        pairs += [(owned[2 * k], owned[2 * k + 1]) for k in range(half)]
    return pairs


def _two_colour(n: int, pairs_a, pairs_b) -> list[int]:
    """colour[i] in {0, 1} so that every pair of A and of B has one lane of each colour."""
    partner_a = {}
    partner_b = {}
    for i, j in pairs_a:
        partner_a[i], partner_a[j] = j, i
    for i, j in pairs_b:
        partner_b[i], partner_b[j] = j, i
    colour = [-1] * n
    for start in range(n):
        if colour[start] >= 0:
            continue
        colour[start] = 0
        lane, use_a = start, True
        while True:
            nxt = partner_a[lane] if use_a else partner_b[lane]
            if colour[nxt] >= 0:
                break
            colour[nxt] = 1 - colour[lane]
            lane, use_a = nxt, not use_a
    return colour


def _combine(b, a, b_vec):
    (va, la), (vb, lb) = a, b_vec
    n = len(la)
    pairs_a, pairs_b = _pairs(la), _pairs(lb)
    colour = _two_colour(n, pairs_a, pairs_b)
    blend = [0] * n
    move = [0] * n
    labels = [None] * n
    for i, j in pairs_a:
        keep, other = (i, j) if colour[i] == 0 else (j, i)
        blend[keep], move[keep], labels[keep] = keep, other, la[keep]
    for i, j in pairs_b:
        keep, other = (i, j) if colour[i] == 1 else (j, i)
        blend[keep], move[keep], labels[keep] = n + keep, n + other, lb[keep]
    src = (la, lb)
    for i in range(n):
        if src[blend[i] // n][blend[i] % n] != src[move[i] // n][move[i] % n]:
            raise AssertionError("transpose-reduction would mix two owners")
    value = b.add(shuffle(b, va, vb, blend), shuffle(b, va, vb, move))
    return value, labels


class TransposeReducer:
    """Feed vectors one by one; combines eagerly (binary-counter order) to keep few live.

    ``push(v, owners)`` takes a ``<n x i32>`` whose lane i belongs to record
    ``owners[i]`` (each vector holds the same number of records, each record
    an even number of lanes, and records are pushed in order); ``result()``
    is the ``<n x i32>`` whose lane r sums record r's lanes.
    """

    def __init__(self, b: ir.IRBuilder, n: int):
        self.b = b
        self.n = n
        self.owners: set = set()
        self.stack: list[tuple[int, tuple]] = []      # (level, item)

    def push(self, value, owners: list) -> None:
        assert value.type.count == self.n == len(owners)
        self.owners.update(owners)
        self.stack.append((0, (value, list(owners))))
        while len(self.stack) >= 2 and self.stack[-1][0] == self.stack[-2][0]:
            (level, right), (_, left) = self.stack.pop(), self.stack.pop()
            self.stack.append((level + 1, _combine(self.b, left, right)))

    def result(self):
        assert len(self.stack) == 1 and self.owners == set(range(self.n))
        return _reduce_all(self.b, [self.stack[0][1]])


def _reduce_all(b, items):
    while len(items) > 1:
        items = [_combine(b, items[k], items[k + 1]) for k in range(0, len(items), 2)]
    (value, labels), = items
    order = [labels.index(r) for r in range(len(labels))]
    if order != list(range(len(labels))):
        value = shuffle(b, value, value, order)
    return value


def transpose_reduce(b: ir.IRBuilder, vectors) -> ir.Value:
    """n vectors ``<n x i32>`` (n a power of two) -> ``<n x i32>`` whose lane r sums vector r."""
    n = len(vectors)
    assert all(v.type.count == n for v in vectors)
    return _reduce_all(b, [(v, [r] * n) for r, v in enumerate(vectors)])
