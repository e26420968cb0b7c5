"""Ordered float folds on vector lanes: ``tree``, ``chunk<K>`` and ``chunk<K>/tree``.

The declared order fixes the parenthesization; these forms compute exactly that one
with full-width vectors (``V`` lanes: 512, 256 or 128 bits by ISA level) where the
operands have unit stride, and the scalar fold of ``folds.py`` otherwise:

- ``tree``: an aligned block of ``2^m`` elements is a complete subtree of the
  adjacent-pair tree, and the tree of ``L`` elements is the tree of its level-``m``
  nodes (the full blocks, then the tree of the tail when ``L`` is not a multiple).
  A block of ``8 V`` elements is summed in registers: adjacent vectors are merged
  pairwise (``even lanes + odd lanes`` of the pair, earlier + later), down to one
  vector, whose lanes are merged the same way down to one value. The tail is the
  tree of its ``V``-blocks, then of its last ``< V`` elements (scalar).
- ``chunk<K>`` with ``K`` even: ``W`` lanes, the largest power of two up to ``V`` that
  divides ``K``; lane ``l`` of a group holds chunk ``g W + l``, summed ``seq`` (a
  ``W x W`` tile of ``W`` rows is transposed in
  registers, then its columns are added in order), from ``-0.0`` (``1.0`` for a
  product), which leaves the chunk's first element as it is. The chunk sums are then
  folded by the top-level order: ``seq`` lane by lane, ``tree`` with each group a
  complete subtree of ``W`` chunk sums. The whole chunks after the last full group
  take one more group (its unused lanes repeat its last chunk and are not read); a
  last partial chunk is scalar.

``seq`` is strictly sequential and stays scalar.
"""
from __future__ import annotations

import llvmlite.ir as ir

from ninfer_ir.sumorder import SumOrder
from ninfer_ir.types import f32, f64

from ninfer_ir.backends.llvm.gen import scalars as S
from ninfer_ir.backends.llvm.gen.emitter import I64, View, i64c

__all__ = ["lane_count", "unit_stride_loader", "vector_fold", "TREE_BLOCK"]

I32 = ir.IntType(32)
_VECTOR_BITS = {"avx512vnni": 512, "avx2": 256}
#: vectors summed in registers per tree block
TREE_BLOCK = 8


def lane_count(e, t) -> int:
    """Lanes of a full-width vector of ``t`` on the emitter's ISA level."""
    return _VECTOR_BITS.get(e.options["isa"], 128) // t.bits


def unit_stride_loader(e, views, make):
    """``(ok, load, lanes)``: ``ok`` (i1) holds when every 1-D view has unit stride;
    ``load(k, w)`` is the ``w``-lane vector ``make(v0[k:k+w], v1[k:k+w], ...)``. ``None`` when the
    element type has no vector form here (only f32 and f64 do)."""
    t = views[0].dtype
    if t not in (f32, f64) or any(not isinstance(v, View) or v.dtype is not t for v in views):
        return None
    b = e.b
    ok = None
    for v in views:
        one = b.icmp_signed("==", v.strides[0], i64c(1 if v.unit != 1 else v.itemsize))
        ok = one if ok is None else b.and_(ok, one)

    def load(k, width):
        vty = ir.VectorType(S.reg_type(t), width)
        vecs = []
        for v in views:
            off = k if v.unit != 1 else b.mul(k, i64c(v.itemsize))
            ptr = v.advance(b, off) if v.unit == 1 else \
                b.gep(b.bitcast(v.ptr, S.reg_type(t).as_pointer()), [off])
            vecs.append(b.load(b.bitcast(ptr, vty.as_pointer()), align=1))
        return make(*vecs)
    return ok, load, lane_count(e, t)


def _shuffle(b, x, y, mask):
    return b.shuffle_vector(x, y, ir.Constant(ir.VectorType(I32, len(mask)),
                                              [ir.Constant(I32, m) for m in mask]))


def _pair_merge(b, combine, x, y):
    """The adjacent pairs of ``x ++ y`` (``x`` earlier), each combined earlier + later."""
    n = x.type.count
    return combine(_shuffle(b, x, y, list(range(0, 2 * n, 2))),
                   _shuffle(b, x, y, list(range(1, 2 * n, 2))))


def _lanes_tree(b, combine, v):
    """The adjacent-pair tree of the lanes of ``v`` (a power-of-two count)."""
    while v.type.count > 2:
        n = v.type.count
        v = combine(_shuffle(b, v, v, list(range(0, n, 2))), _shuffle(b, v, v, list(range(1, n, 2))))
    return combine(b.extract_element(v, i64c(0)), b.extract_element(v, i64c(1)))


def _vectors_tree(b, combine, vecs):
    """Lane-wise adjacent-pair tree of a power-of-two list of vectors, in registers."""
    while len(vecs) > 1:
        vecs = [_pair_merge(b, combine, vecs[i], vecs[i + 1]) for i in range(0, len(vecs), 2)]
    return vecs[0]


def _transpose(b, rows):
    """The ``W x W`` transpose of ``W`` vectors (``out[t]`` lane ``l`` = ``rows[l]`` lane
    ``t``) by ``log2 W`` rounds of interleaving."""
    n = len(rows)
    half = n // 2
    lo_mask = [m for i in range(half) for m in (i, n + i)]
    hi_mask = [m for i in range(half, n) for m in (i, n + i)]
    labels = [[(r, c) for c in range(n)] for r in range(n)]
    for _ in range(n.bit_length() - 1):
        nxt, nlab = [], []
        for i in range(half):
            x, y = rows[i], rows[i + half]
            lx, ly = labels[i], labels[i + half]
            both = lx + ly
            nxt += [_shuffle(b, x, y, lo_mask), _shuffle(b, x, y, hi_mask)]
            nlab += [[both[m] for m in lo_mask], [both[m] for m in hi_mask]]
        rows, labels = nxt, nlab
    assert labels == [[(r, c) for r in range(n)] for c in range(n)], "not a transpose"
    return rows


def _branch(e, cond, then, other):
    """``then()`` if ``cond`` else ``other()``, as blocks; returns the merged value."""
    b = e.b
    yes, no, end = e.new_block("vf.then"), e.new_block("vf.else"), e.new_block("vf.end")
    b.cbranch(cond, yes, no)
    outs = []
    for bb, fn in ((yes, then), (no, other)):
        b.position_at_end(bb)
        v = fn()
        outs.append((v, b.block))
        b.branch(end)
    b.position_at_end(end)
    phi = b.phi(outs[0][0].type)
    for v, blk in outs:
        phi.add_incoming(v, blk)
    return phi


def _tree_blocks(e, lo, n, sizes, load, elem, combine, identity, lanes):
    """The tree of ``elem(lo..lo+n)``: level nodes of ``sizes[0]`` elements, then the
    tree of the tail by the next size (the last: scalar)."""
    from ninfer_ir.backends.llvm.gen.folds import tree_fold
    b = e.b
    if not sizes:
        return tree_fold(e, n, lambda j: elem(b.add(lo, j)), combine, identity)
    size = sizes[0]
    full = b.udiv(n, i64c(size))
    rest = b.sub(n, b.mul(full, i64c(size)))
    count = b.add(full, b.zext(b.icmp_signed(">", rest, i64c(0)), I64))

    def block(j):
        base = b.add(lo, b.mul(j, i64c(size)))
        vecs = [load(b.add(base, i64c(q * lanes)), lanes) for q in range(size // lanes)]
        return _lanes_tree(b, combine, _vectors_tree(b, combine, vecs))

    def node(j):
        tail_lo = b.add(lo, b.mul(full, i64c(size)))
        return _branch(e, b.icmp_signed("<", j, full), lambda: block(j),
                       lambda: _tree_blocks(e, tail_lo, rest, sizes[1:], load, elem,
                                            combine, identity, lanes))
    return tree_fold(e, count, node, combine, identity)


def _chunk_group(e, base, k, load, combine, neutral, lanes, last=None):
    """The ``seq`` sums of the ``W`` chunks of ``k`` elements from ``base``, one per lane;
    lanes past ``last`` (an i64: the last chunk that exists) repeat chunk ``last``."""
    from ninfer_ir.backends.llvm.gen.folds import fold_loop
    b = e.b
    start = ir.Constant(ir.VectorType(neutral.type, lanes), [neutral] * lanes)
    rows = [i64c(r) for r in range(lanes)]
    if last is not None:
        rows = [b.select(b.icmp_signed("<", r, last), r, last) for r in rows]
    offsets = [b.add(base, b.mul(r, i64c(k))) for r in rows]

    def tile(t, vals):
        col0 = b.mul(t, i64c(lanes))
        acc = vals[0]
        for col in _transpose(b, [load(b.add(off, col0), lanes) for off in offsets]):
            acc = combine(acc, col)
        return [acc]
    acc, = fold_loop(e, i64c(0), i64c(k // lanes), [start], tile)
    return acc


def _chunked(e, n, order, load, elem, combine, identity, neutral, lanes):
    """``chunk<K>`` and ``chunk<K>/tree``: full groups of ``W`` whole chunks, then one
    group of the remaining whole chunks (fewer lanes used), then a last partial chunk.
    Returns ``(emit, usable)``: ``usable`` (i1, or None: always) says whether ``emit()``
    may be used (``seq`` on top needs one whole chunk to start from)."""
    from ninfer_ir.backends.llvm.gen.folds import fold_loop, seq_fold, tree_fold
    b = e.b
    k = order.chunk
    whole = b.udiv(n, i64c(k))
    groups = b.udiv(whole, i64c(lanes))
    done = b.mul(groups, i64c(lanes))
    left = b.sub(whole, done)                        # whole chunks after the full groups
    partial = b.icmp_signed(">", b.sub(n, b.mul(whole, i64c(k))), i64c(0))

    def chunk_sum(j):
        lo = b.mul(j, i64c(k))
        hi = b.add(lo, i64c(k))
        hi = b.select(b.icmp_signed("<", n, hi), n, hi)
        return seq_fold(e, lo, hi, elem, combine, identity)

    def sums(g, last=None):
        return _chunk_group(e, b.mul(g, i64c(k * lanes)), k, load, combine, neutral, lanes, last)

    def left_sums():
        """The sums of the ``left`` whole chunks in the first lanes (``left > 0``)."""
        return sums(groups, b.sub(left, i64c(1)))

    if order.tree:
        rest = b.add(left, b.zext(partial, I64))
        count = b.add(groups, b.zext(b.icmp_signed(">", rest, i64c(0)), I64))

        def tail():
            zero = ir.Constant(ir.VectorType(neutral.type, lanes), None)
            v = _branch(e, b.icmp_signed(">", left, i64c(0)), left_sums, lambda: zero)

            def node(j):
                return _branch(e, b.icmp_signed("<", j, left),
                               lambda: b.extract_element(v, j),
                               lambda: chunk_sum(b.add(done, j)))
            return tree_fold(e, rest, node, combine, identity)

        def top(g):
            return _branch(e, b.icmp_signed("<", g, groups),
                           lambda: _lanes_tree(b, combine, sums(g)), tail)
        return (lambda: tree_fold(e, count, top, combine, identity)), None

    def vector_path():
        def add_group(g, vals):
            v, acc = sums(g), vals[0]
            for lane in range(lanes):
                acc = combine(acc, b.extract_element(v, i64c(lane)))
            return [acc]
        acc, = fold_loop(e, i64c(0), groups, [neutral], add_group)

        def add_left():
            v = left_sums()
            out, = fold_loop(e, i64c(0), left, [acc],
                             lambda j, vals: [combine(vals[0], b.extract_element(v, j))])
            return out
        acc = _branch(e, b.icmp_signed(">", left, i64c(0)), add_left, lambda: acc)
        return _branch(e, partial, lambda: combine(acc, chunk_sum(whole)), lambda: acc)
    return vector_path, b.icmp_signed(">", whole, i64c(0))


def vector_fold(e, n, loader, elem, combine, identity, neutral, order: SumOrder,
                scalar_fold):
    """Fold ``elem(0..n)`` in ``order`` (not ``seq``) on vector lanes when the loader's
    views have unit stride, else ``scalar_fold()``. ``neutral``: the value ``u`` with
    ``combine(u, x) == x`` exactly (``-0.0`` for add, ``1.0`` for mul). ``None`` when the
    order has no vector form (``chunk<K>`` with ``K`` odd)."""
    ok, load, lanes = loader
    if order.chunk is not None:
        lanes = min(lanes, order.chunk & -order.chunk)
        if lanes < 2:
            return None

    if order.chunk is not None:
        vector, usable = _chunked(e, n, order, load, elem, combine, identity, neutral, lanes)
        if usable is not None:
            ok = e.b.and_(ok, usable)
    else:
        def vector():
            return _tree_blocks(e, i64c(0), n, [TREE_BLOCK * lanes, lanes], load, elem,
                                combine, identity, lanes)
    return _branch(e, ok, vector, scalar_fold)
