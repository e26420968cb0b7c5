"""What the CPU library kernels compute, as a match over a loop: ``match_loop(loop)``
gives a ``Match`` (the kernel, its parameters, the matched ops) or the reason the loop is
not one. The ``select`` pass (``passes/select.py``) decides with it and the CPU emitter
reads the matched ops of the loop a ``kernel_call`` names with it, so the two never
disagree about what a kernel computes.

* ``<stem>_dot_rows`` (one per pair of ``quant.PAIRS``: ``q4k_q8k_dot_rows``,
  ``q40_q80_dot_rows``, ...): ``for n { y[..., n] = quantized_dot(w[n], xq) }`` with order
  ``seq``, ``w``, ``xq``, ``y`` and the leading indices of ``y`` defined outside the
  loop, and nothing else in the body (no epilogue on the dot's value);
* ``decode_dot_rows``: ``for n { y[n] = dot(decode(p[n], s[n], k), x) }`` (or
  ``dot(x, ...)``) for the orders the kernel computes: ``seq``, and ``chunk<C>`` or
  ``chunk<C>/tree`` with ``C`` a multiple of the format's period (``lcm(bits, 32) /
  bits`` codes); ``k`` defined outside the loop or by ``dim``/``constant`` ops of the
  body.

Both need a loop with step 1 that carries no values. A nest of two such loops over
``m`` and ``n`` whose inner loop is the ``q4k_q8k_dot_rows`` loop of the ``m``-th
activation row is a GEMM (``_gemm``): ``q4k_q8k_gemm`` when the row is ``xq[m]`` of
Q8_K records ``[M, G, 292]`` defined outside the nest, ``q4k_q8k_gemm_quantize`` when
the body first quantizes ``x[m]`` of f32 ``[M, G, 256]`` into an ``alloc`` that nothing
else reads (allocated in the body, or before the nest and freed after it); in both the
output is ``y[..., m, n]``.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import lcm

from . import ops as O
from .sumorder import SumOrder

__all__ = ["Match", "match_loop", "decode_rows_takes", "GEMM_KERNELS"]


@dataclass
class Match:
    """A loop a kernel computes: the kernel's name, its parameters (values defined
    outside the loop) and the matched ops the emitter reads."""
    kernel: str
    params: list
    parts: tuple


def _outside(loop, v) -> bool:
    owner = v.op if hasattr(v, "op") else v.block.parent_op
    return owner is None or not loop.is_ancestor_of(owner)


def _only_use(v, op) -> bool:
    return len(v.uses) == 1 and v.uses[0].op is op


def _expr(v, loop, mark, name, depth=0) -> str:
    """A short spelling of how the loop body computes ``v`` (``mark`` names the dot)."""
    op = getattr(v, "op", None)
    if op is None or not loop.is_ancestor_of(op):
        return name(v)
    if isinstance(op, O.LoadOp) and op.operands[0] in mark:
        return mark[op.operands[0]]
    if isinstance(op, O.LoadOp):
        return f"load {name(op.operands[0])}[{', '.join(name(i) for i in op.operands[1:])}]"
    if depth >= 3:
        return f"{op.name}(...)"
    return f"{op.name}({', '.join(_expr(o, loop, mark, name, depth + 1) for o in op.operands)})"


def _stored(loop, result, what, kernel, name):
    """The store of ``load(result)`` into ``y[..., n]``, or a reason there is none."""
    iv = loop.body.args[0]
    loads = [u.op for u in result.uses]
    if len(loads) != 1 or not isinstance(loads[0], O.LoadOp):
        return None, f"the {what}'s value is used by more than one load"
    ld = loads[0]
    uses = ld.result.uses
    if len(uses) == 1 and isinstance(uses[0].op, O.StoreOp) and uses[0].index == 0:
        st = uses[0].op
        if st.operands[-1] is not iv:
            return None, f"the row loop stores into {name(st.operands[1])} at an index " \
                         f"other than the row {name(iv)} last"
        return st, None
    stores = [op for op in loop.body.ops if isinstance(op, O.StoreOp)]
    if len(stores) == 1:
        shown = _expr(stores[0].operands[0], loop, {result: what}, name)
        return None, (f"the row loop stores `{shown}`, an epilogue the {kernel} kernel "
                      f"does not take")
    return None, f"the {what}'s value is not stored as it is into one output row"


def _rows_quantized(loop, qd, name):
    ops = loop.body.ops
    iv = loop.body.args[0]
    sv = getattr(qd.operands[0], "op", None)
    if not (isinstance(sv, O.SubviewOp) and sv.attrs.get("axes") == "i::"
            and sv.operands[1] is iv and _outside(loop, sv.operands[0])):
        return "the quantized_dot's lhs is not the row w[n] of a weight tensor defined " \
               "outside the loop"
    if not _outside(loop, qd.operands[1]):
        return "the quantized_dot's rhs is computed inside the loop"
    order = qd.attrs.get("order", "seq")
    if order != "seq":
        return f"the quantized_dot sums in order {order}; the kernel computes order seq"
    kernel = qd.pair.rows_kernel
    st, why = _stored(loop, qd.result, "quantized_dot", kernel, name)
    if why:
        return why
    if not all(_outside(loop, v) for v in st.operands[1:-1]):
        return "the output or its leading indices change inside the loop"
    if len(ops) != 5 or ops.index(sv) != 0 or ops.index(qd) != 1 or ops[3] is not st:
        others = [op.name for op in ops if op not in (sv, qd, st) and op.name not in
                  ("load", "yield")]
        return f"the body holds other ops besides the row dot and its store " \
               f"({', '.join(others) or 'a different order'})"
    if not _only_use(sv.result, qd):
        return "the row view is used by other ops"
    return Match(kernel, [sv.operands[0], qd.operands[1], st.operands[1]],
                 (sv, qd, st))


def decode_rows_takes(fmt, order: SumOrder) -> bool:
    """Whether the decode rows kernel computes ``order`` for ``fmt``: seq, or chunks
    of whole periods (``lcm(bits, 32) / bits`` codes)."""
    if order.chunk is None:
        return not order.tree
    if not 1 <= fmt.bits <= 16:
        return False
    period = lcm(fmt.bits, 32) // fmt.bits
    return fmt.group % period == 0 and order.chunk % period == 0


def _row_view(sv, iv, loop) -> bool:
    return (isinstance(sv, O.SubviewOp) and sv.attrs.get("axes") == "i:"
            and sv.operands[0].type.rank == 2 and sv.operands[1] is iv
            and _outside(loop, sv.operands[0]))


def _rows_decode(loop, dec, name):
    if dec.count is None:
        return f"the rows kernel decodes grouped formats, not {dec.attrs['format'].name}"
    ops = loop.body.ops
    iv = loop.body.args[0]
    pre = [op for op in ops if isinstance(op, (O.DimOp, O.ConstantOp))
           and all(_outside(loop, v) for v in op.operands)]
    rest = [op for op in ops if op not in pre]
    dots = [u.op for u in dec.result.uses]
    if len(dots) != 1 or not isinstance(dots[0], O.DotOp):
        return "the decoded row is not read by exactly one dot"
    dot = dots[0]
    p_view, s_view = (getattr(v, "op", None) for v in dec.operands[:2])
    if not (_row_view(p_view, iv, loop) and _row_view(s_view, iv, loop)) or p_view is s_view:
        return "the decoded row is not row n of packed codes and scales defined outside " \
               "the loop"
    k = dec.operands[2]
    if not (_outside(loop, k) or getattr(k, "op", None) in pre):
        return "the row length is computed inside the loop"
    order = SumOrder.parse(dot.attrs.get("order", "seq"))
    if not decode_rows_takes(dec.attrs["format"], order):
        return f"the dot sums in order {order}, which the kernel does not compute for " \
               f"{dec.attrs['format'].name}"
    if dot.operands[0] is dec.result and dot.operands[1] is not dec.result:
        swapped, x = False, dot.operands[1]
    elif dot.operands[1] is dec.result and dot.operands[0] is not dec.result:
        swapped, x = True, dot.operands[0]
    else:
        return "the dot multiplies the decoded row by itself"
    if not _outside(loop, x) or x.type.rank != 1:
        return "the dot's other vector is not one vector defined outside the loop"
    st, why = _stored(loop, dot.result, "dot", "decode_dot_rows", name)
    if why:
        return why
    if len(st.operands) != 3 or not _outside(loop, st.operands[1]):
        return "the output is not one vector defined outside the loop"
    if len(rest) != 7 or set(rest[:2]) != {p_view, s_view} or rest[2:4] != [dec, dot] \
            or rest[5] is not st:
        others = [op.name for op in rest if op not in (p_view, s_view, dec, dot, st)
                  and op.name not in ("load", "yield")]
        return f"the body holds other ops besides the row dot and its store " \
               f"({', '.join(others) or 'a different order'})"
    if not (_only_use(p_view.result, dec) and _only_use(s_view.result, dec)):
        return "the row views are used by other ops"
    return Match("decode_dot_rows", [p_view.operands[0], s_view.operands[0], x, st.operands[1]],
                 (pre, p_view, s_view, dec, dot, st, swapped, order))


GEMM_KERNELS = ("q4k_q8k_gemm", "q4k_q8k_gemm_quantize")


def _row_of(v, iv, loop) -> bool:
    """``v`` is ``subview(t, iv) {axes = "i::"}`` of a rank-3 ``t`` defined outside ``loop``."""
    sv = getattr(v, "op", None)
    return (isinstance(sv, O.SubviewOp) and sv.attrs.get("axes") == "i::"
            and sv.operands[1] is iv and sv.operands[0].type.rank == 3
            and _outside(loop, sv.operands[0]))


def _gemm(loop, name):
    """A ``Match`` of the GEMM nest (see the module doc), or the reason it is not one."""
    ops = [op for op in loop.body.ops if not isinstance(op, O.YieldOp)]
    inner = [op for op in ops if isinstance(op, O.ForOp)]
    if len(inner) != 1:
        return "the quantized dot is in a nested loop or branch, not the row loop itself"
    inner = inner[0]
    found = match_loop(inner, name)
    if not isinstance(found, Match):
        return f"no GEMM: its inner loop is not a row loop of quantized dots ({found})"
    if found.kernel != "q4k_q8k_dot_rows":
        return f"no GEMM: the GEMM kernel takes Q4_K x Q8_K dots; the inner loop is a " \
               f"{found.kernel} loop"
    sv, qd, st = found.parts
    m = loop.body.args[0]
    if not all(_outside(loop, v) for v in (sv.operands[0], *inner.operands[:2])):
        return "no GEMM: the weights or the bounds of the inner loop change with the outer loop"
    idx = st.operands[2:]
    if len(idx) < 2 or idx[-2] is not m or not all(_outside(loop, v) for v in
                                                   (st.operands[1], *idx[:-2])):
        return f"no GEMM: the dots are not stored into y[..., {name(m)}, {name(idx[-1])}] " \
               f"of an output defined outside the nest"
    xq = qd.operands[1]
    if _row_of(xq, m, loop) and ops == [xq.op, inner] and _only_use(xq, qd):
        return Match("q4k_q8k_gemm", [sv.operands[0], xq.op.operands[0], st.operands[1]],
                     (inner, sv, qd, st, None))
    alloc = getattr(xq, "op", None)
    quant = ops[2 if alloc in ops else 1] if len(ops) > 2 else None
    frees = [u.op for u in xq.uses if isinstance(u.op, O.DeallocOp)]
    if (isinstance(alloc, O.AllocOp) and isinstance(quant, O.QuantizeIntoOp)
            and ops == ([ops[0], alloc, quant, inner] + frees if alloc in ops
                        else [ops[0], quant, inner])
            and len(frees) == 1 and (alloc in ops) == (frees[0] in ops)
            and len(quant.operands) == 2 and quant.operands[1] is xq
            and getattr(quant.operands[0], "op", None) is ops[0]
            and _row_of(quant.operands[0], m, loop) and _only_use(quant.operands[0], quant)
            and all(_outside(loop, v) for v in alloc.operands)
            and {u.op for u in xq.uses} == {quant, qd, frees[0]}):
        return Match("q4k_q8k_gemm_quantize",
                     [sv.operands[0], ops[0].operands[0], st.operands[1]],
                     (inner, sv, qd, st, quant))
    return f"no GEMM: the row {name(xq)} the dots read is neither a row {name(m)} of " \
           f"Q8_K records defined outside the nest nor x[{name(m)}] quantized by the " \
           f"body into a buffer that nothing else reads"


def match_loop(loop, name=None):
    """A ``Match`` for a loop a CPU library kernel computes, else the reason (a string);
    ``name`` spells a value in the reason (default: its name hint)."""
    name = name or (lambda v: "%" + (v.name_hint or "?"))
    body = loop.body.ops
    qdots = [op for op in body if isinstance(op, O.QuantizedDotOp)]
    decodes = [op for op in body if isinstance(op, O.DecodeOp)]
    if not qdots and not decodes:
        nested = any(isinstance(op, (O.QuantizedDotOp, O.DecodeOp))
                     for inner in body for op in inner.walk() if inner.regions)
        if not nested:
            return ("no library kernel computes it (its body holds no quantized_dot and "
                    "no dot of a decoded row)")
        step = loop.operands[2]
        if (isinstance(getattr(step, "op", None), O.ConstantOp)
                and step.op.attrs["value"] == 1 and not loop.results):
            return _gemm(loop, name)
        return "the quantized dot is in a nested loop or branch, not the row loop itself"
    if len(qdots) + len(decodes) != 1:
        return "its body holds more than one quantized_dot or decoded row"
    step = loop.operands[2]
    if not (isinstance(getattr(step, "op", None), O.ConstantOp) and step.op.attrs["value"] == 1):
        return "its step is not the constant 1"
    if loop.results:
        return "it carries values from one iteration to the next"
    return _rows_quantized(loop, qdots[0], name) if qdots else _rows_decode(loop, decodes[0], name)
