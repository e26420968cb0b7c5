"""The decode-GEMV fast path of the CPU emitter: the row dot of a row loop

    for %n = lb .. ub step 1 {
      %pn = subview(%p, %n) {axes = "i:"}        (the two subviews in either order)
      %sn = subview(%s, %n) {axes = "i:"}
      %w  = decode(%pn, %sn, %k) {format = #<grouped>}
      %r  = dot(%w, %x) {order = ...}            (or dot(%x, %w))
      ... the epilogue: %v = load(%r); store(%v, %y, %n), or more ...
    }

with ``%p``, ``%s``, ``%x`` defined outside the loop and ``%k`` outside it or by
``dim``/``constant`` ops of the body (before loop-invariant hoisting), put by the
``select`` pass in ``kernel_call {kernel = "decode_dot_rows"}``, is computed by the
rows kernel of ``qdecode_rows`` (a row per SIMD lane) a block of rows at a time
(``rows.RowsCall`` drives it and runs the epilogue), for the orders it computes
(``ninfer_ir.library.decode_rows_takes``: ``seq``, and ``chunk<C>`` or ``chunk<C>/tree``
with ``C`` a multiple of the format's period, e.g. ``chunk<64>``).

The call is made only when it computes what the loop's dots compute: every row index
in range of ``p`` and ``s``; the row geometry the ``decode`` checks (``k >= 1``,
``ceil(k*b/8)`` bytes, ``ceil(k/G)`` scales) and the length the ``dot`` checks
(``x`` holds ``k`` values) and the sizes the row views and the decoded row declare all
hold, so no iteration's dot could fail; and the layout suits the kernel (bytes of a row
contiguous; scales at even addresses and strides, the scale row stride within
``qdecode_rows.STRIDE_LIMIT``). Otherwise the ordinary loop runs, with its errors at
the interpreter's iteration. ``ROWS_PARALLEL_ELEMENTS`` decoded elements make a loop
worth splitting over the thread pool when its rows are independent.
"""
from __future__ import annotations

from ninfer_ir.backends.llvm.gen.emitter import I64, I8P, i64c
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
    """The row dot ``dot(decode(p[n], s[n], k), x)`` of a matched row loop
    (``library.DecodedRow``) as calls of the rows kernel (``rows.RowsCall``)."""

    def __init__(self, part):
        self.part = part

    @property
    def fmt(self):
        return self.part.decode.attrs["format"]

    def operands(self, e):
        """The views ``p``, ``s``, ``x`` and the element count ``k`` (the loop's
        prologue, which defines ``k`` when the loop does, is emitted first)."""
        d = self.part
        return (e.value(d.p_view.operands[0]), e.value(d.s_view.operands[0]),
                e.value(d.x), e.value(d.decode.operands[2]))

    def big(self, e, n):
        """i1: ``n`` rows hold enough elements to gain from threads."""
        k = self.operands(e)[3]
        return e.b.icmp_signed(">=", e.b.mul(n, k), i64c(ROWS_PARALLEL_ELEMENTS))

    def _geometry(self, e, p, s, x, k):
        """i1 conditions under which no iteration's decode or dot fails."""
        b, fmt, d = e.b, self.fmt, self.part
        want_p = b.udiv(b.add(b.mul(k, i64c(fmt.bits)), i64c(7)), i64c(8))
        want_s = b.udiv(b.add(k, i64c(fmt.group - 1)), i64c(fmt.group))
        conds = [b.icmp_signed(">=", k, i64c(1)), b.icmp_signed("<", k, i64c(1 << 56)),
                 b.icmp_signed("==", p.shape[1], want_p),
                 b.icmp_signed("==", s.shape[1], want_s)]
        for sv, src in ((d.p_view, p), (d.s_view, s)):
            declared = _declared(e, sv.result.type)
            if declared is not None:
                conds.append(b.icmp_signed("==", src.shape[1], declared))
        declared = _declared(e, d.decode.result.type)
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

    def conditions(self, e, first, last):
        """i1s under which no row of ``[first, last)`` fails and the kernel reads the
        layout (``first >= 0`` is checked by the caller)."""
        b = e.b
        p, s, x, k = self.operands(e)
        return ([b.icmp_signed("<=", last, p.shape[0]), b.icmp_signed("<=", last, s.shape[0])]
                + self._geometry(e, p, s, x, k) + self._layout(e, p, s))

    def call(self, e, first, rows, out):
        """``out[0:rows]`` (an ``f32*``) = the dots of rows ``first ..``."""
        b = e.b
        p, s, x, k = self.operands(e)
        fn = add_decode_rows(e.module, self.fmt, e.options["isa"], self.part.swapped,
                             self.part.order)
        (prs, _), (srs, scs) = p.byte_strides(b), s.byte_strides(b)
        xs, = x.byte_strides(b)
        b.call(fn, [b.gep(p.ptr, [b.mul(first, prs)]), prs,
                    b.gep(s.ptr, [b.mul(first, srs)]), srs, scs, x.ptr, xs, k,
                    rows, b.bitcast(out, I8P), i64c(4)])
