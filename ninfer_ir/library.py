"""What the CPU library kernels compute, as a match over a loop: ``match_loop(loop)``
gives a ``Match`` (the kernel, its parameters, the matched ``RowLoop``) or the reason the
loop is not one. The ``select`` pass (``passes/select.py``) decides with it and the CPU
emitter reads the matched ops of the loop a ``kernel_call`` names with it, so the two
never disagree about what a kernel computes.

A row loop ``for n`` (step 1, no carried values) is matched when its body is

* one or more **row dots**, all computed by one kernel:

  - ``<stem>_dot_rows`` (one per pair of ``quant.PAIRS``: ``q4k_q8k_dot_rows``,
    ``q40_q80_dot_rows``, ...): ``quantized_dot(w[n], xq)`` with order ``seq`` and
    ``w``, ``xq`` defined outside the loop (every pair gets epilogues alike);
  - ``decode_dot_rows``: ``dot(decode(p[n], s[n], k), x)`` (or ``dot(x, ...)``) for the
    orders the kernel computes: ``seq``, and ``chunk<C>`` or ``chunk<C>/tree`` with
    ``C`` a multiple of the format's period (``lcm(bits, 32) / bits`` codes); ``p``,
    ``s``, ``x`` defined outside the loop, ``k`` outside it or by a ``dim``/``constant``
    op of the body;

* then an **epilogue**, the rest of the body: elementwise ops (``ninfer_ir.ops``'s
  elementwise family: arithmetic, math, casts, selects), ``check`` ops (the bounds
  checks the passes place before a store), loads of the dots' values, loads
  of values defined outside the loop at indices that are the row ``n`` or loop-invariant
  (defined outside the loop or by a ``dim``/``constant`` op of the body), and at least
  one store into a buffer defined outside the loop at such indices with ``n`` among
  them. The epilogue may read and write anything, ``y`` itself included.

``dim``/``constant`` ops of the body whose operands come from outside the loop are its
*prologue*: they cannot fail and do not depend on the row, so they run once. Everything
else loop-invariant has been hoisted by ``licm`` before ``select`` runs; elementwise
work that does not depend on the dots (``b[n]`` loaded before the dot) is part of the
epilogue and keeps its place in it.

The kernel computes the dots of a block of rows, then the epilogue runs on each row of
the block in the loop's order. That is the loop's result exactly when no dot can fail
and no dot reads memory the epilogue writes: the CPU emitter checks both at run time and
runs the loop itself where they do not hold.

A nest of two row loops (step 1, no carried values) over
``m`` and ``n`` whose inner loop is a ``<stem>_dot_rows`` loop of the ``m``-th
activation row, for a pair of ``ops_select.GEMM_PAIRS`` (Q4_K, Q6_K x Q8_K; Q8_0, Q5_0,
Q4_0, IQ4_NL x Q8_0), is a GEMM (``_gemm``): ``<stem>_gemm`` when the row is ``xq[m]``
of activation records ``[M, G, record bytes]`` defined outside the nest,
``<stem>_gemm_quantize`` when the body first quantizes ``x[m]`` of f32 ``[M, G, block]``
into an ``alloc`` that nothing else reads (allocated in the body, or before the nest
and freed after it). With one dot stored as it is, the output is ``y[..., m, n]``; with
an epilogue or several dots of the same row (gate and up), the match has ``dots`` and
``epilogue`` attributes like a rows kernel's, and the CPU computes each dot of the
nest as one GEMM into a staging block, then the epilogue (``gemm_nest.GemmEpilogue``);
an epilogue with a ``check`` keeps the rows kernel (a check may fail mid-nest).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from math import lcm

from . import ops as O
from .alias import root
from .ops_select import GEMM_PAIRS
from .sumorder import SumOrder

__all__ = ["Match", "RowLoop", "QuantizedRow", "DecodedRow", "GemmEpilogueParts",
           "match_loop", "decode_rows_takes", "GEMM_KERNELS"]


@dataclass
class QuantizedRow:
    """``quantized_dot(w[n], xq)``: ``view`` is the subview ``w[n]``, ``op`` the dot,
    ``kernel`` the rows kernel of its pair of schemas (``op.pair.rows_kernel``)."""
    view: object
    op: object
    kernel: str
    what = "quantized_dot"

    @property
    def ops(self):
        return (self.view, self.op)

    @property
    def result(self):
        return self.op.result

    @property
    def params(self):
        """The values the dot reads, in the kernel's parameter order (``w``, ``xq``)."""
        return [self.view.operands[0], self.op.operands[1]]


@dataclass
class DecodedRow:
    """``dot(decode(p[n], s[n], k), x)`` (``swapped``: ``dot(x, ...)``) in ``order``."""
    p_view: object
    s_view: object
    decode: object
    dot: object
    swapped: bool
    order: SumOrder
    kernel = "decode_dot_rows"
    what = "dot"

    @property
    def ops(self):
        return (self.p_view, self.s_view, self.decode, self.dot)

    @property
    def result(self):
        return self.dot.result

    @property
    def x(self):
        return self.dot.operands[0 if self.swapped else 1]

    @property
    def params(self):
        """The values the dot reads, in the kernel's parameter order (``p``, ``s``, ``x``)."""
        return [self.p_view.operands[0], self.s_view.operands[0], self.x]


@dataclass
class RowLoop:
    """A matched row loop: its prologue, its row dots, and its epilogue (every other op
    of the body in order, without the ``yield``), with the epilogue's loads of memory
    (not of a dot's value), its stores and its ``check`` ops."""
    loop: object
    prologue: list
    dots: list
    epilogue: list
    loads: list = field(default_factory=list)
    stores: list = field(default_factory=list)
    checks: list = field(default_factory=list)

    @property
    def outputs(self) -> list:
        """The buffers the epilogue stores into, each once, in order."""
        out = []
        for st in self.stores:
            if not any(st.dest is v for v in out):
                out.append(st.dest)
        return out

    @property
    def plain(self) -> bool:
        """One dot whose value is stored as it is (no epilogue)."""
        ep = self.epilogue
        return (len(self.dots) == 1 and len(ep) == 2 and isinstance(ep[0], O.LoadOp)
                and ep[0].source is self.dots[0].result and isinstance(ep[1], O.StoreOp)
                and ep[1].value is ep[0].result)


@dataclass
class GemmEpilogueParts:
    """A GEMM nest with an epilogue or several dots: its inner loop, that loop's
    ``RowLoop`` and the body's ``quantize_into`` of the activation row (None when the
    rows are records defined outside the nest)."""
    inner: object
    rows: RowLoop
    quant: object


@dataclass
class Match:
    """A loop a kernel computes: the kernel's name, its parameters (the dots' inputs,
    then the outputs), its attributes and the matched ``RowLoop``."""
    kernel: str
    params: list
    parts: RowLoop
    attrs: dict = field(default_factory=dict)


def _outside(loop, v) -> bool:
    owner = v.op if hasattr(v, "op") else v.block.parent_op
    return owner is None or not loop.is_ancestor_of(owner)


def _only_use(v, op) -> bool:
    return len(v.uses) == 1 and v.uses[0].op is op


def _expr(v, loop, mark, name, depth=0) -> str:
    """A short spelling of how the loop body computes ``v`` (``mark`` names the dots)."""
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


def _quantized_row(loop, qd, name):
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
    if not _only_use(sv.result, qd):
        return "the row view is used by other ops"
    return QuantizedRow(sv, qd, qd.pair.rows_kernel)


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


def _decoded_row(loop, dec, invariant):
    if dec.count is None:
        return f"the rows kernel decodes grouped formats, not {dec.attrs['format'].name}"
    iv = loop.body.args[0]
    dots = [u.op for u in dec.result.uses]
    if len(dots) != 1 or not isinstance(dots[0], O.DotOp):
        return "the decoded row is not read by exactly one dot"
    dot = dots[0]
    p_view, s_view = (getattr(v, "op", None) for v in dec.operands[:2])
    if not (_row_view(p_view, iv, loop) and _row_view(s_view, iv, loop)) or p_view is s_view:
        return "the decoded row is not row n of packed codes and scales defined outside " \
               "the loop"
    if not invariant(dec.operands[2]):
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
    if isinstance(getattr(root(x), "op", None), O.DecodeOp):
        return "the dot's other vector is a decoded row (not memory)"
    if not (_only_use(p_view.result, dec) and _only_use(s_view.result, dec)):
        return "the row views are used by other ops"
    return DecodedRow(p_view, s_view, dec, dot, swapped, order)


def _access(op, iv, invariant, name, verb):
    """Why the load/store ``op`` of memory is not one the epilogue may hold, or None."""
    where = name(op.source)
    if not invariant(op.source):
        return f"the epilogue {verb} {where}, a view computed inside the loop"
    if isinstance(getattr(root(op.source), "op", None), O.DecodeOp):
        return f"the epilogue {verb} {where}, a decoded row (not memory)"
    if not all(i is iv or invariant(i) for i in op.indices):
        return f"the epilogue {verb} {where} at an index computed inside the loop (the " \
               f"row {name(iv)} and loop-invariant indices only)"
    if isinstance(op, O.StoreOp) and sum(i is iv for i in op.indices) != 1:
        return f"the row loop stores into {where} at indices without the row {name(iv)}"
    return None


def _epilogue(rows, invariant, name):
    """Fill ``rows.loads``/``rows.stores`` from ``rows.epilogue``; the reason it is not an
    epilogue the kernels take, or None."""
    loop = rows.loop
    iv = loop.body.args[0]
    results = {d.result for d in rows.dots}
    for d in rows.dots:
        for u in d.result.uses:
            if not (isinstance(u.op, O.LoadOp) and u.op in rows.epilogue):
                return f"the {d.what}'s value is used by {u.op.name}, not only loaded"
    for op in rows.epilogue:
        if isinstance(op, O.LoadOp) and op.source in results:
            continue
        if isinstance(op, (O.LoadOp, O.StoreOp)):
            why = _access(op, iv, invariant, name,
                          "loads" if isinstance(op, O.LoadOp) else "stores into")
            if why:
                return why
            (rows.loads if isinstance(op, O.LoadOp) else rows.stores).append(op)
        elif isinstance(op, O.CheckOp):
            rows.checks.append(op)
        elif type(op) not in O.ELEMENTWISE:
            return f"the body holds {op.name}, which is neither a row dot nor an " \
                   f"elementwise epilogue (elementwise ops, checks, loads and stores at the row)"
    if not rows.stores:
        return "the row loop stores nothing"
    return None


def _epilogue_text(rows, name) -> str:
    if len(rows.dots) == 1:
        mark = {rows.dots[0].result: rows.dots[0].what}
    else:
        mark = {d.result: name(d.result) for d in rows.dots}
    return "; ".join(
        f"{name(st.dest)}[{', '.join(name(i) for i in st.indices)}] = "
        f"{_expr(st.value, rows.loop, mark, name)}" for st in rows.stores)


GEMM_KERNELS = tuple(f"{stem}_gemm{tail}" for tail in ("", "_quantize") for stem in GEMM_PAIRS)


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
    rows = found.parts
    if not all(isinstance(d, QuantizedRow) for d in rows.dots):
        return "no GEMM: its inner loop takes dots of decoded rows (their rows kernel takes it)"
    pair = rows.dots[0].op.pair
    if pair.stem not in GEMM_PAIRS:
        return f"no GEMM: no GEMM kernel takes the dots of a {found.kernel} loop (GEMM " \
               f"kernels: {', '.join(f'{s}_gemm' for s in GEMM_PAIRS)})"
    m = loop.body.args[0]
    xq = rows.dots[0].op.operands[1]
    if any(d.op.operands[1] is not xq for d in rows.dots):
        return "no GEMM: the dots of the inner loop read different activation rows"
    if not all(_outside(loop, v) for v in (*[d.view.operands[0] for d in rows.dots],
                                           *inner.operands[:2])):
        return "no GEMM: the weights or the bounds of the inner loop change with the outer loop"
    if rows.checks:
        return "no GEMM: the inner loop's epilogue holds a check, which may fail mid-nest " \
               "(its rows kernel takes it)"
    if not all(_outside(loop, v) for op in rows.prologue for v in op.operands):
        return "no GEMM: the inner loop's prologue reads values of the outer loop's body"
    act = _activation(loop, ops, inner, xq, {d.op for d in rows.dots}, pair, name)
    if isinstance(act, str):
        return act
    tail, src, quant = act
    kernel = f"{pair.stem}_gemm{tail}"
    if rows.plain and not rows.prologue:
        sv, qd, st = rows.dots[0].view, rows.dots[0].op, rows.stores[0]
        idx = st.operands[2:]
        if len(idx) < 2 or idx[-2] is not m or not all(_outside(loop, v) for v in
                                                       (st.operands[1], *idx[:-2])):
            return f"no GEMM: the dots are not stored into y[..., {name(m)}, " \
                   f"{name(idx[-1])}] of an output defined outside the nest"
        return Match(kernel, [sv.operands[0], src, st.operands[1]], (inner, sv, qd, st, quant))
    # an epilogue, or several dots (gate and up): each dot a GEMM into a staging block,
    # then the epilogue over the nest (``gemm_nest.GemmEpilogue``)
    return Match(kernel, [p for d in rows.dots for p in (d.view.operands[0], src)] +
                 rows.outputs, GemmEpilogueParts(inner, rows, quant),
                 {"dots": len(rows.dots), "epilogue": found.attrs["epilogue"]})


def _activation(loop, ops, inner, xq, dots, pair, name):
    """How the dots of the nest get their activation row ``xq``: ``("", xq_rows, None)``
    for ``xq[m]`` of records defined outside the nest, ``("_quantize", x, quant)`` for
    ``x[m]`` quantized by the body into a buffer that nothing but the dots reads; else
    the reason."""
    m = loop.body.args[0]
    uses = {u.op for u in xq.uses}
    if _row_of(xq, m, loop) and ops == [xq.op, inner] and uses == dots:
        return "", xq.op.operands[0], None
    alloc = getattr(xq, "op", None)
    quant = ops[2 if alloc in ops else 1] if len(ops) > 2 else None
    frees = [u.op for u in xq.uses if isinstance(u.op, O.DeallocOp)]
    if (isinstance(alloc, O.AllocOp) and isinstance(quant, O.QuantizeIntoOp)
            and ops == ([ops[0], alloc, quant, inner] + frees if alloc in ops
                        else [ops[0], quant, inner])
            and len(frees) == 1 and (alloc in ops) == (frees[0] in ops)
            and len(quant.operands) == 2 and quant.operands[1] is xq
            and quant.target.schema is pair.rhs
            and getattr(quant.operands[0], "op", None) is ops[0]
            and _row_of(quant.operands[0], m, loop) and _only_use(quant.operands[0], quant)
            and all(_outside(loop, v) for v in alloc.operands)
            and uses == {quant, frees[0], *dots}):
        return "_quantize", ops[0].operands[0], quant
    return f"no GEMM: the row {name(xq)} the dots read is neither a row {name(m)} of " \
           f"{pair.rhs.name} records defined outside the nest nor x[{name(m)}] quantized by " \
           f"the body (to {pair.rhs.name}) into a buffer that nothing else reads"


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
    if qdots and decodes:
        return "its body holds both quantized_dots and dots of decoded rows; a row loop " \
               "takes one kind"
    step = loop.operands[2]
    if not (isinstance(getattr(step, "op", None), O.ConstantOp) and step.op.attrs["value"] == 1):
        return "its step is not the constant 1"
    if loop.results:
        return "it carries values from one iteration to the next"
    prologue = [op for op in body if isinstance(op, (O.DimOp, O.ConstantOp))
                and all(_outside(loop, v) for v in op.operands)]
    made = {r for op in prologue for r in op.results}

    def invariant(v):
        return v in made or _outside(loop, v)
    dots = [_quantized_row(loop, op, name) for op in qdots] + \
           [_decoded_row(loop, op, invariant) for op in decodes]
    for d in dots:
        if isinstance(d, str):
            return d
    kernels = sorted({d.kernel for d in dots})
    if len(kernels) > 1:
        return f"its row dots need different kernels ({', '.join(kernels)})"
    taken = set(prologue) | {op for d in dots for op in d.ops}
    rows = RowLoop(loop, prologue, dots,
                   [op for op in body if op not in taken and not op.terminator])
    why = _epilogue(rows, invariant, name)
    if why:
        return why
    attrs = {}
    if len(dots) > 1:
        attrs["dots"] = len(dots)
    if not rows.plain:
        attrs["epilogue"] = _epilogue_text(rows, name)
    return Match(dots[0].kernel, [p for d in dots for p in d.params] + rows.outputs,
                 rows, attrs)
