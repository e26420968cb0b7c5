"""The decode-GEMV fast path of the CPU emitter: a row loop of dots over decoded rows

    for %n = lb .. ub step 1 {
      %pn = subview(%p, %n) {axes = "i:"}        (the two subviews in either order)
      %sn = subview(%s, %n) {axes = "i:"}
      %w  = decode(%pn, %sn, %k) {format = #<grouped>}
      %r  = dot(%w, %x) {order = ...}            (or dot(%x, %w))
      %v  = load(%r)
      store(%v, %y, %n)
    }

with ``%p``, ``%s``, ``%x`` and ``%y`` defined outside the loop and ``%k`` outside it or by
``dim``/``constant`` ops of the body (before loop-invariant hoisting), put by the
``select`` pass in ``kernel_call {kernel = "decode_dot_rows"}``, becomes one call of the
rows kernel of ``qdecode_rows`` (a row per SIMD lane) over the loop's range, for the
orders it computes (``ninfer_ir.library.decode_rows_takes``: ``seq``, and ``chunk<C>`` or
``chunk<C>/tree`` with ``C`` a multiple of the format's period, e.g. ``chunk<64>``).

The call is made only when it computes what the loop computes: every row index in
range of ``p``, ``s`` and ``y``; the row geometry the ``decode`` checks (``k >= 1``,
``ceil(k*b/8)`` bytes, ``ceil(k/G)`` scales) and the length the ``dot`` checks
(``x`` holds ``k`` values) and the sizes the row views and the decoded row declare all
hold, so no iteration could fail; ``y`` shares no byte with ``p``, ``s`` or ``x``, so the rows are
independent; and the layout suits the kernel (bytes of a row contiguous; scales at
even addresses and strides, the scale row stride within ``qdecode_rows.STRIDE_LIMIT``).
Otherwise the ordinary loop runs, with its errors at the interpreter's iteration.
Such a loop is independent when those conditions hold, so a large one is split over
the thread pool like a parallel loop, even when not marked parallel.
"""
from __future__ import annotations

from ninfer_ir.backends.llvm.gen.emitter import I64, i64c
from ninfer_ir.backends.llvm.kernels.qdecode_rows import STRIDE_LIMIT, add_decode_rows

__all__ = ["DecodeRows", "ROWS_PARALLEL_ELEMENTS"]

ROWS_PARALLEL_ELEMENTS = 1 << 19     # decoded elements worth splitting over threads


def _declared(e, t):
    """The size a 1-D result type declares (a static size or a bound symbol), or None."""
    d = t.shape[0]
    if isinstance(d, int):
        return i64c(d)
    return e.symbols.get(d) if isinstance(d, str) else None


class DecodeRows:
    """A matched row loop: ``y[n] = dot(decode(p[n], s[n], k), x)``."""

    def __init__(self, loop, pre, p_view, s_view, decode, dot, store, swapped, order):
        self.loop, self.pre, self.p_view, self.s_view = loop, pre, p_view, s_view
        self.decode, self.dot, self.store, self.swapped = decode, dot, store, swapped
        self.order = order

    @property
    def fmt(self):
        return self.decode.attrs["format"]

    def operands(self, e):
        """The views ``p``, ``s``, ``x``, ``y`` and the element count ``k`` (the loop's
        invariant ``dim``/``constant`` ops, which cannot fail, are evaluated first)."""
        for op in self.pre:
            e.op(op)
        x = self.dot.operands[0 if self.swapped else 1]
        return (e.value(self.p_view.operands[0]), e.value(self.s_view.operands[0]),
                e.value(x), e.value(self.store.operands[1]), e.value(self.decode.operands[2]))

    def independent(self, e):
        """i1: ``y`` shares no byte with ``p``, ``s`` or ``x``."""
        from ninfer_ir.backends.llvm.kernels.records import _apart
        y = self.store.operands[1]
        x = self.dot.operands[0 if self.swapped else 1]
        b = e.b
        return b.and_(b.and_(_apart(e, y, self.p_view.operands[0]),
                             _apart(e, y, self.s_view.operands[0])), _apart(e, y, x))

    def worth_threads(self, e, n):
        """i1: independent and enough elements to gain from threads."""
        b = e.b
        k = self.operands(e)[4]
        big = b.icmp_signed(">=", b.mul(n, k), i64c(ROWS_PARALLEL_ELEMENTS))
        return b.and_(big, self.independent(e))

    def _geometry(self, e, p, s, x, k):
        """i1 conditions under which no iteration's decode or dot fails."""
        b, fmt = e.b, self.fmt
        want_p = b.udiv(b.add(b.mul(k, i64c(fmt.bits)), i64c(7)), i64c(8))
        want_s = b.udiv(b.add(k, i64c(fmt.group - 1)), i64c(fmt.group))
        conds = [b.icmp_signed(">=", k, i64c(1)), b.icmp_signed("<", k, i64c(1 << 56)),
                 b.icmp_signed("==", p.shape[1], want_p),
                 b.icmp_signed("==", s.shape[1], want_s)]
        for sv, src in ((self.p_view, p), (self.s_view, s)):
            declared = _declared(e, sv.result.type)
            if declared is not None:
                conds.append(b.icmp_signed("==", src.shape[1], declared))
        declared = _declared(e, self.decode.result.type)
        if declared is not None:
            conds.append(b.icmp_signed("==", k, declared))
            k = declared
        conds.append(b.icmp_signed("==", x.shape[0], k))
        return conds

    def _layout(self, e, p, s):
        b = e.b
        (_, pcs), (srs, scs) = p.byte_strides(b), s.byte_strides(b)

        def small(v):
            return b.icmp_unsigned("<=", b.add(v, i64c(STRIDE_LIMIT)), i64c(2 * STRIDE_LIMIT))
        odd = b.or_(b.or_(b.ptrtoint(s.ptr, I64), srs), scs)
        return [b.icmp_signed("==", pcs, i64c(1)), small(srs),
                b.icmp_signed("==", b.and_(odd, i64c(1)), i64c(0))]

    def emit(self, e, loop, lb, step, k0, k1):
        """Iterations ``[k0, k1)``: one rows call when it is safe, else the ordinary loop."""
        b = e.b
        p, s, x, y, k = self.operands(e)
        first, last = b.add(lb, k0), b.add(lb, k1)
        conds = [b.icmp_signed("<", k0, k1), b.icmp_signed(">=", first, i64c(0)),
                 b.icmp_signed("<=", last, p.shape[0]), b.icmp_signed("<=", last, s.shape[0]),
                 b.icmp_signed("<=", last, y.shape[0])]
        conds += self._geometry(e, p, s, x, k) + self._layout(e, p, s)
        conds.append(self.independent(e))
        fast = conds[0]
        for c in conds[1:]:
            fast = b.and_(fast, c)
        with b.if_else(fast) as (then, otherwise):
            with then:
                fn = add_decode_rows(e.module, self.fmt, e.options["isa"], self.swapped,
                                     self.order)
                (prs, _), (srs, scs) = p.byte_strides(b), s.byte_strides(b)
                xs, = x.byte_strides(b)
                ys, = y.byte_strides(b)
                b.call(fn, [b.gep(p.ptr, [b.mul(first, prs)]), prs,
                            b.gep(s.ptr, [b.mul(first, srs)]), srs, scs, x.ptr, xs, k,
                            b.sub(k1, k0), b.gep(y.ptr, [b.mul(first, ys)]), ys])
            with otherwise:
                e.loop(loop, lb, step, k0, k1, [])
