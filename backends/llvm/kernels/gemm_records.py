"""What differs per pair in the GEMM kernels (``qgemm``): how a step of a block of weight
rows is unpacked into the tile, and the float steps of a record's integers.

A *scheme* has ``kind`` (``"kquant"``: one 256-element record a step, integer scales per
group; ``"blocks"``: eight 32-element records a step, a group per record), ``records``
(weight records a step), ``groups`` and ``group_dwords`` (code dwords per group),
``codes`` (``qgemm.Codes``), ``x_quants`` (where an activation record's quants start),
``tables`` (name -> count of per-lane vectors in the tile), and

* ``unpack(b, ops, tile, tp, recs, r)``: ``recs[l][k]`` the i8* of record k of the step
  in the l-th row of vector column r; fills column r of the tile;
* ``values``: the f32 value vectors of a record from its integers (see each class).

The codes are the pair's own (``qdot_blocks`` and ``qdot_kquants`` read them from the
records the same way), brought into lanes by ``qgemm.transpose``.

* **Q4_K** (spec/quantized-ops.md §3): codes 0..15 (``UNSIGNED``), sc[s] and m[s] of the
  8 sub-blocks (m duplicated into both i16 halves), f32(d), f32(dmin); per record
  ``T = sum_s pairdot(m[s] m[s], bsum[2s] bsum[2s+1])`` of the stored bsum, then
  ``v = ds*(d*S - dmin*T)``.
* **Q6_K** (quantized-kquants.md §2.4): the levels c = u - 32 in 16 groups of 16
  (``FLIPPED`` on x86 levels: c in [-32, 31], so the ``vpmaddubsw`` pairs of (x + 128)*c
  stay below 2**15), the signed sc[t], f32(d) and ``W = 128 * sum_t sc[t] * sum(c of
  group t)``: ``S = sum_t sc[t]*sub[t] - W``, then ``v = ds*(d*S)``.
* **Q4_0, Q5_0, Q8_0, IQ4_NL x Q8_0** (quantized-gguf.md §4): the signed levels of each
  record, its ``128 * sum(c)`` (``FLIPPED``), f32(d_w); ``S = sub - corr`` and the pair's
  ``v`` (``qdot_blocks``: Q4_0 ``(S*d_w)*d_x``, the others ``(d_w*d_x)*S``). Q8_0 and
  IQ4_NL levels reach 128 in magnitude: on AVX2 they are ``SIGNED``.
"""
from __future__ import annotations

from ninfer_ir.numerics.quantized_kquants import KQUANTS
from ninfer_ir.quant import q8_0, q8_k
from ninfer_ir.backends.llvm.kernels.qdot_blocks import _PAIR_CODE
from ninfer_ir.backends.llvm.kernels.qdot_kquants import _codes
from ninfer_ir.backends.llvm.kernels.qgemm import Codes, bcast, transpose
from ninfer_ir.backends.llvm.kernels.qir import (F32, I8, I16, I32, load, shuffle, splat,
                                                 store, vec)

__all__ = ["scheme_of", "SCHEMES"]

Q8K_QS = q8_k.field("q").start
Q8K_BSUM = q8_k.field("bsum").start
Q4K_QS = 16              # the packed codes of a Q4_K record
BLOCK_STEP = 8           # 32-element records a step


def _signed_codes(isa, wide):
    """``FLIPPED`` on x86 levels unless the levels reach 128 on AVX2; else ``SIGNED``."""
    if isa == "portable" or (isa == "avx2" and wide):
        return Codes.SIGNED
    return Codes.FLIPPED


def _half_lanes(b, ops, recs, offset):
    """f32 of the binary16 at ``offset`` of each record, one per lane."""
    return ops.half_to_f32(b, ops.lanes_of(b, [load(b, rec, offset, I16) for rec in recs], I16))


class _Q4K:
    kind, records, groups, group_dwords, groups_per_iter = "kquant", 1, 8, 8, 1
    codes = Codes.UNSIGNED
    x_quants = Q8K_QS
    tables = {"sc": 8, "mn": 8, "d": 1, "dmin": 1}

    def __init__(self, pair, isa):
        pass

    def unpack(self, b, ops, tile, tp, recs, r):
        L, vi = ops.lanes, ops.vi
        recs = [rr[0] for rr in recs]
        nib = splat(I32, L, 0x0F0F0F0F)
        for q in range(32 // L):
            cols = transpose(b, [load(b, rec, Q4K_QS + 4 * q * L, vi) for rec in recs],
                             range(L))
            for k, v in cols.items():
                c, j = divmod(q * L + k, 8)
                store(b, b.and_(v, nib), tp, tile.codes(2 * c, j, r), align=64)
                store(b, b.and_(b.lshr(v, splat(I32, L, 4)), nib), tp,
                      tile.codes(2 * c + 1, j, r), align=64)
        head = transpose(b, [load(b, rec, 0, vi) for rec in recs], range(4))

        def byte_bits(v, shift, mask):
            return b.and_(b.lshr(v, splat(I32, L, shift)) if shift else v, splat(I32, L, mask))
        h1, h2, h3 = head[1], head[2], head[3]
        for field, low, name in ((0, h1, "sc"), (1, h2, "mn")):
            for s in range(8):
                if s < 4:
                    value = byte_bits(low, 8 * s, 63)
                else:
                    t = s - 4
                    value = b.or_(byte_bits(h3, 8 * t + 4 * field, 15),
                                  b.shl(byte_bits(low, 8 * t + 6, 3), splat(I32, L, 4)))
                if field:
                    value = b.or_(value, b.shl(value, splat(I32, L, 16)))
                store(b, value, tp, tile.table(name, s, r), align=64)
        d_bits = b.trunc(head[0], vec(I16, L))
        dmin_bits = b.trunc(b.lshr(head[0], splat(I32, L, 16)), vec(I16, L))
        store(b, ops.half_to_f32(b, d_bits), tp, tile.table("d", 0, r), align=64)
        store(b, ops.half_to_f32(b, dmin_bits), tp, tile.table("dmin", 0, r), align=64)

    def values(self, b, ops, tile, tp, xrow, sums):
        """The v of one activation row ``xrow`` for each vector column (``sums[r]``)."""
        R, vi, vf = len(sums), ops.vi, ops.vf
        ds = bcast(b, ops, xrow, 0, F32)
        t = [vi(None)] * R
        for s in range(8):
            bs = bcast(b, ops, xrow, Q8K_BSUM + 4 * s)
            for r in range(R):
                t[r] = ops.pairdot(b, t[r], load(b, tp, tile.table("mn", s, r), vi, align=64),
                                   bs)
        out = []
        for r in range(R):
            d = load(b, tp, tile.table("d", 0, r), vf, align=64)
            dmin = load(b, tp, tile.table("dmin", 0, r), vf, align=64)
            p = b.fmul(d, b.sitofp(sums[r], vf))
            n = b.fmul(dmin, b.sitofp(t[r], vf))
            out.append(b.fmul(ds, b.fsub(p, n)))
        return out


class _Q6K:
    kind, records, groups, group_dwords, groups_per_iter = "kquant", 1, 16, 4, 2
    x_quants = Q8K_QS

    def __init__(self, pair, isa):
        self.kq = KQUANTS[pair.lhs.name]
        self.codes = _signed_codes(isa, wide=False)
        self.flipped = self.codes == Codes.FLIPPED
        self.tables = {"sc": 16, "d": 1, **({"w": 1} if self.flipped else {})}

    def unpack(self, b, ops, tile, tp, recs, r):
        L, vi, kq = ops.lanes, ops.vi, self.kq
        recs = [rr[0] for rr in recs]
        per = L // 8                         # chunks of 32 elements per row vector
        groups = [[] for _ in range(self.groups)]
        for q in range(8 // per):
            chunks = [q * per + t for t in range(per)]
            cols = transpose(b, [b.bitcast(_codes(b, kq, rec, chunks), vi) for rec in recs],
                             range(L))
            for k, v in cols.items():
                t, j = divmod(q * L + k, self.group_dwords)
                c = b.sub(b.bitcast(v, vec(I8, 4 * L)), splat(I8, 4 * L, kq.bias))
                store(b, c, tp, tile.codes(t, j, r), align=64)
                groups[t].append(c)
        pad = list(range(4)) + [0] * (L - 4)      # columns 4.. are not used
        raw = [load(b, rec, kq.at("sc"), vec(I32, 4)) for rec in recs]
        sc = transpose(b, [shuffle(b, v, v, pad) for v in raw], range(4))
        w = vi(None)
        for t in range(self.groups):
            scale = b.ashr(b.shl(sc[t // 4], splat(I32, L, 24 - 8 * (t % 4))),
                           splat(I32, L, 24))
            store(b, scale, tp, tile.table("sc", t, r), align=64)
            if self.flipped:       # four bytes of [-32, 31] add up within an i8
                c = groups[t]
                csum = ops.byte_sums(b, b.add(b.add(c[0], c[1]), b.add(c[2], c[3])))
                w = b.add(w, b.mul(scale, csum))
        if self.flipped:
            store(b, b.mul(w, splat(I32, L, 128)), tp, tile.table("w", 0, r), align=64)
        store(b, _half_lanes(b, ops, recs, kq.d), tp, tile.table("d", 0, r), align=64)

    def values(self, b, ops, tile, tp, xrow, sums):
        vi, vf = ops.vi, ops.vf
        ds = bcast(b, ops, xrow, 0, F32)
        out = []
        for r, s in enumerate(sums):
            if self.flipped:
                s = b.sub(s, load(b, tp, tile.table("w", 0, r), vi, align=64))
            d = load(b, tp, tile.table("d", 0, r), vf, align=64)
            out.append(b.fmul(ds, b.fmul(d, b.sitofp(s, vf))))
        return out


class _Blocks:
    kind, records, groups, group_dwords = "blocks", BLOCK_STEP, BLOCK_STEP, 8
    x_quants = q8_0.field("q").start

    def __init__(self, pair, isa):
        self.isa = isa
        self.unsigned_of, self.bias, self.value_of = _PAIR_CODE[pair.stem]
        self.codes = _signed_codes(isa, wide=self.bias >= 64)
        self.flipped = self.codes == Codes.FLIPPED
        self.tables = {"d": BLOCK_STEP, **({"corr": BLOCK_STEP} if self.flipped else {})}

    def unpack(self, b, ops, tile, tp, recs, r):
        L, vi = ops.lanes, ops.vi
        per = L // 8                         # records per row vector
        csum = [vi(None)] * self.records
        for q in range(self.records // per):
            rows = []
            for rr in recs:
                parts = [self.unsigned_of(b, rr[q * per + t], self.isa) for t in range(per)]
                v = parts[0] if per == 1 else shuffle(b, parts[0], parts[1], range(64))
                rows.append(b.bitcast(b.sub(v, splat(I8, 32 * per, self.bias)), vi))
            for k, v in transpose(b, rows, range(L)).items():
                rec, j = divmod(q * L + k, self.group_dwords)
                store(b, v, tp, tile.codes(rec, j, r), align=64)
                if self.flipped:
                    csum[rec] = b.add(csum[rec], ops.byte_sums(b, v))
        for k in range(self.records):
            if self.flipped:
                store(b, b.mul(csum[k], splat(I32, L, 128)), tp, tile.table("corr", k, r),
                      align=64)
            store(b, _half_lanes(b, ops, [rr[k] for rr in recs], 0), tp,
                  tile.table("d", k, r), align=64)

    def values(self, b, ops, tile, tp, xrecs, subs):
        """The v of one record (tables at ``tp``) for every (r, i), ``subs[r*cols + i]``."""
        vi, vf = ops.vi, ops.vf
        cols = len(xrecs)
        R = len(subs) // cols
        dx = []
        for xr in xrecs:
            one = b.insert_element(vf(None), ops.half_to_f32(b, load(b, xr, 0, I16)),
                                   I32(0))
            dx.append(shuffle(b, one, vf(None), [0] * ops.lanes))
        out = []
        for r in range(R):
            d = load(b, tp, tile.table("d", 0, r), vf, align=64)
            corr = load(b, tp, tile.table("corr", 0, r), vi, align=64) if self.flipped \
                else None
            for i in range(cols):
                s = subs[r * cols + i]
                if corr is not None:
                    s = b.sub(s, corr)
                out.append(self.value_of(b, b.sitofp(s, vf), d, dx[i]))
        return out


SCHEMES = {"q4k_q8k": _Q4K, "q6k_q8k": _Q6K, "q40_q80": _Blocks, "q50_q80": _Blocks,
           "q80_q80": _Blocks, "iq4nl_q80": _Blocks}


def scheme_of(pair, isa):
    """The scheme of ``pair`` at ``isa`` (a fresh object)."""
    return SCHEMES[pair.stem](pair, isa)
