"""C helpers for ordered folds, loop trip counts and the one-thread forms of the two
quantized ops, added to a ``scalars.Library`` on first use.

Ordered folds (``dot``, ``reduce``, the cross-record sum of ``quantized_dot``) follow
``ninfer_ir.sumorder`` exactly, streaming, for every ``SumOrder``:

- ``chunk<K>``: each run of K elements is folded left to right first, and the chunk
  results (the last chunk may be shorter) go on to the top level;
- top level ``seq``: left to right with no initial accumulator (one element is
  returned as it is; none gives the identity);
- top level ``tree``: the adjacent-pair tree in one pass with a stack of partial
  results. After element ``j`` the two top entries are merged ``trailing_ones(j)``
  times (earlier + later), which builds every complete power-of-two block; at the
  end the stack holds the blocks of the binary decomposition of the length, largest
  first, folded from the right, which is what carrying an odd last element up
  unchanged at every level gives.

The fold state is a ``nq_fold_<t>`` struct; ``chunk`` (0 for none) and ``tree`` are
arguments, constants at every call site.
"""
from __future__ import annotations

from ninfer_ir.types import ScalarType, f32

from .scalars import Library, c_name, c_type

__all__ = ["fold", "trip", "qdot_thread", "quantize_record", "order_args", "STACK_DEPTH"]

STACK_DEPTH = 64


def order_args(order) -> tuple[int, int]:
    """``(chunk, tree)`` of a ``SumOrder`` as the fold helpers take them."""
    return (order.chunk or 0, 1 if order.tree else 0)


def fold(lib: Library, t: ScalarType, kind: str) -> tuple[str, str]:
    """Define the ``kind`` (add/mul) fold of dtype ``t``.

    Returns ``(state, name)``: the state struct (``<state>_start(&f)`` resets it) and
    the prefix of ``<name>_push(&f, x, chunk, tree)`` and
    ``<name>_finish(&f, chunk, tree, identity)``.
    """
    combine = lib.binary(kind, t)
    T = c_type(t)
    state = f"nq_fold_{c_name(t)}"
    lib.define(state, """typedef struct { $T top, cur, stack[$DEPTH]; nq_i64 n, in_chunk; int sp; } $NAME;
$FN void ${NAME}_start($NAME* f) { f->n = 0; f->in_chunk = 0; f->sp = 0; }
""", T=T, DEPTH=STACK_DEPTH)
    name = f"{state}_{kind}"
    lib.define(name, """$FN void ${NAME}_top($S* f, $T x, int tree) {
    if (!tree) { f->top = f->n == 0 ? x : $C(f->top, x); f->n += 1; return; }
    for (nq_i64 k = f->n; k & 1; k >>= 1) x = $C(f->stack[--f->sp], x);
    f->stack[f->sp++] = x;
    f->n += 1;
}
$FN void ${NAME}_push($S* f, $T x, nq_i64 chunk, int tree) {
    if (chunk > 0) {
        f->cur = f->in_chunk == 0 ? x : $C(f->cur, x);
        if (++f->in_chunk < chunk) return;
        f->in_chunk = 0;
        x = f->cur;
    }
    ${NAME}_top(f, x, tree);
}
$FN $T ${NAME}_finish($S* f, nq_i64 chunk, int tree, $T identity) {
    $T x;
    if (chunk > 0 && f->in_chunk > 0) { f->in_chunk = 0; ${NAME}_top(f, f->cur, tree); }
    if (f->n == 0) return identity;
    if (!tree) return f->top;
    x = f->stack[--f->sp];
    while (f->sp > 0) x = $C(f->stack[--f->sp], x);
    return x;
}
""", S=state, T=T, C=combine)
    return state, name


def trip(lib: Library) -> str:
    """``nq_trip(lb, ub, step)``: the trip count of Python's ``range(lb, ub, step)``."""
    return lib.define("nq_trip", """$FN nq_i64 $NAME(nq_i64 lb, nq_i64 ub, nq_i64 st) {
    if (st > 0) return ub > lb ? (nq_i64)(((nq_u64)ub - (nq_u64)lb - 1u) / (nq_u64)st + 1u) : 0;
    return lb > ub ? (nq_i64)(((nq_u64)lb - (nq_u64)ub - 1u) / (0u - (nq_u64)st) + 1u) : 0;
}
""")


def pair_suffix(pair) -> str:
    """The name suffix of a pair's C helpers ("" for Q4_K x Q8_K, else ``_<stem>``)."""
    return "" if pair.stem == "q4k_q8k" else f"_{pair.stem}"


def qdot_thread(lib: Library, pair) -> str:
    """``nq_qdot_thread[_<stem>]``: the whole quantized dot of a pair of the table in one
    thread, in any order.

    Records whose bytes are not contiguous (byte stride != 1) are staged first.
    """
    state, f = fold(lib, f32, "add")
    return lib.define("nq_qdot_thread" + pair_suffix(pair), """$FN float $NAME(const nq_u8* a, nq_i64 a_rs, nq_i64 a_bs,
                              const nq_u8* b, nq_i64 b_rs, nq_i64 b_bs, nq_i64 g,
                              nq_i64 chunk, int tree) {
    $S f;
    nq_u8 sa[$LR], sb[$RR];
    ${S}_start(&f);
    for (nq_i64 r = 0; r < g; ++r) {
        const nq_u8* pa = a + r * a_rs;
        const nq_u8* pb = b + r * b_rs;
        if (a_bs != 1) { for (int k = 0; k < $LR; ++k) sa[k] = pa[k * a_bs]; pa = sa; }
        if (b_bs != 1) { for (int k = 0; k < $RR; ++k) sb[k] = pb[k * b_bs]; pb = sb; }
        ${F}_push(&f, $REC(pa, pb), chunk, tree);
    }
    return ${F}_finish(&f, chunk, tree, 0.0f);
}
""", big=True, S=state, F=f, LR=pair.lhs.record_bytes, RR=pair.rhs.record_bytes,
                      REC=pair.c_record)


def quantize_record(lib: Library, target) -> str:
    """``nq_quantize_record[_<stem>]``: one record of a quantize target in one thread; 0
    or the reason code.

    Values that are not unit-stride, 4-byte aligned f32 and a destination whose
    bytes are not contiguous are staged.
    """
    ld = lib.load(f32)
    suffix = "" if target.stem == "q8k" else f"_{target.stem}"
    return lib.define("nq_quantize_record" + suffix, """$FN int $NAME(const nq_u8* v, nq_i64 v_es, nq_u8* out, nq_i64 o_bs) {
    float sv[$N];
    nq_u8 so[$R];
    const float* pv = (const float*)v;
    nq_u8* po = o_bs == 1 ? out : so;
    int reason;
    if (v_es != 4 || ((nq_u64)v & 3u) != 0u) {
        for (int k = 0; k < $N; ++k) sv[k] = $LD(v + k * v_es);
        pv = sv;
    }
    reason = $BLOCK(pv, po);
    if (reason == 0 && o_bs != 1)
        for (int k = 0; k < $R; ++k) out[k * o_bs] = so[k];
    return reason;
}
""", big=True, LD=ld, N=target.block_elems, R=target.record_bytes, BLOCK=target.c_block)
