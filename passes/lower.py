"""``lower``: materialized tensor IR to the loop-level IR of ``docs/ir.md``.

* A tensor op followed by ``copy(%t, %b)`` (placed by ``materialize``) becomes code that
  writes ``%b``: an elementwise op a loop nest of scalar ops with ``load``/``store``
  (its fused producers computed per element inside it), a ``reduce`` a loop nest around
  a 1-D ``reduce`` of a view (or around a scalar fold when its input is fused), a
  ``quantize`` a ``quantize_into``. Uses of ``%t`` then read ``%b``.
* ``dot``, ``quantized_dot`` and 1-D ``reduce`` stay ops with a ``load`` right after
  them; with a fused operand a ``dot``/``reduce`` becomes a scalar fold loop (``seq``
  order, first element first, so it equals the op bit for bit). Elementwise ops on
  rank-0 tensors become scalar ops.
* A user ``copy`` becomes a loop nest (through a temporary when source and
  destination may share memory, since ``copy`` reads all before it writes).
* Returned values become trailing output-buffer parameters; the function's
  ``returns`` attribute holds their count. A returned tensor is computed straight into
  its output buffer.
* ``check`` ops guard ``load``/``store``/``subview`` indices (and ``copy`` shapes, and
  the record count of a ``quantize`` destination) that are not provably in range. An
  index of a loop from 0 (step >= 1) to an upper bound that is a ``dim`` of an axis of
  the same size, or a constant below a static size, needs none.
"""
from __future__ import annotations

from ninfer_ir import ops as O
from ninfer_ir.builder import Builder
from ninfer_ir.numerics.decode import family
from ninfer_ir.types import BufferType, ScalarType, ShapedType, TensorType, f32, index

from .analysis import attached, is_fused, may_alias, next_op
from .emit import (Elements, check_index, check_range, check_records, check_same_shape,
                   fold_loop, loop_nest)
from .fuse import misplaced_fused_op
from .levels import loop_level_problems
from .manager import Pass
from .materialize import needs_buffer, returned
from .shapes import Dims

class Lower(Pass):
    name = "lower"

    def check(self, module):
        bad = misplaced_fused_op(module)
        if bad is not None:
            raise self.error("an op marked fused is not right before its only consumer", bad)
        for op in module.walk():
            if isinstance(op, O.RegionOp) and any(isinstance(r.type, ShapedType)
                                                for r in op.results):
                raise self.error(f"a tensor carried by '{op.name}' cannot be lowered", op)
            if needs_buffer(op) and not returned(op.result):
                nxt = next_op(op)
                if not isinstance(nxt, O.CopyOp) or nxt.source is not op.result:
                    raise self.error("this tensor has no buffer; run 'materialize' before "
                                     "'lower'", op)

    def run(self, module):
        stats = {"loops": 0, "checks": 0, "outputs": 0}
        for func in module.funcs:
            _FuncLowering(self, func, stats).run()
        problems = loop_level_problems(module)
        if problems:
            raise self.error("the result is not loop-level IR: " + "; ".join(problems))
        return stats


#: ops that read a lazy decoded row element by element (see docs/ir.md)
_LAZY_READERS = (O.LoadOp, O.DotOp, O.ReduceOp, O.CopyOp, O.ElementwiseOp)


def _decoded_length(b, op):
    """The element count of a decoded row, from its operands (a grouped row's count; a
    gguf row's bytes / block_bytes * block_values; else the first row's length)."""
    if op.count is not None:
        return op.count
    fmt = op.attrs["format"]
    n = b.value("dim", op.operands[0], axis=0)
    if family(fmt) != "gguf":
        return n
    blocks = b.value("div", n, b.constant(fmt.block_bytes, index))
    return b.value("mul", blocks, b.constant(fmt.block_values, index))

#: ops whose tensor results become loops (rank >= 1) or scalars (rank 0)
_COMPUTED = (O.ElementwiseOp, O.ContractionOp, O.QuantizeOp)


class _FuncLowering:
    def __init__(self, pass_, func, stats):
        self.pass_ = pass_
        self.func = func
        self.stats = stats
        self.dims = Dims(func)
        self.scalars = {}
        self.el = Elements(self.scalars)
        self.dead = []
        self.dead_set = set()
        self.dest = {}

    def run(self):
        func = self.func
        self._stage_sliced_decodes()
        user_index_ops = [op for op in func.walk() if isinstance(op, O.IndexedOp)]
        ret = func.body.terminator
        outs = []
        for k, v in enumerate(ret.operands):
            t = v.type
            shape = t.shape if isinstance(t, ShapedType) else ()
            dtype = t.dtype if isinstance(t, ShapedType) else t
            if any(d is None for d in shape):
                raise self.pass_.error(f"returned value {k} has a dimension unknown before the "
                                       f"call ({t}); the caller could not allocate it", ret)
            out = func.body.add_arg(BufferType(dtype, shape), v.name_hint or f"ret{k}")
            outs.append(out)
            op = _op_of(v)
            if op is not None and needs_buffer(op) and v not in self.dest:
                self.dest[v] = out
        self._block(func.body)
        b = Builder().before(ret)
        for cur, out in zip(list(ret.operands), outs):
            if cur is not out:
                self._copy_into(b, cur, out)
        ret.set_operands([])
        func.result_types = []
        if outs:
            func.attrs["returns"] = len(outs)
        self.stats["outputs"] += len(outs)
        for op in reversed(self.dead):
            for r in op.results:
                if r.uses:
                    raise self.pass_.error("a lowered value is still used", r.uses[0].op)
            op.erase()
        for op in user_index_ops:
            if op.parent is not None and attached(op, func):
                self._checks(op)
        self.dims.finish()

    def _stage_sliced_decodes(self):
        """A decoded row is lazy (read where used, its length taken by ``dim``); one that
        is viewed (``w[a:b]``) is first copied into a row buffer of its own, freed at the
        end of its block."""
        for op in list(self.func.walk()):
            if not isinstance(op, O.DecodeOp) \
                    or all(isinstance(u.op, _LAZY_READERS + (O.DimOp,)) for u in op.result.uses):
                continue
            t = op.result.type
            b = Builder().after(op)
            sizes = [] if isinstance(t.shape[0], int) else [_decoded_length(b, op)]
            row = b.create("alloc", sizes, result_types=[BufferType(t.dtype, t.shape)],
                           names=[(op.result.name_hint or "w") + "_row"]).result
            for use in list(op.result.uses):
                if not isinstance(use.op, _LAZY_READERS + (O.DimOp,)):
                    use.op.set_operand(use.index, row)
            b.create("copy", [op.result, row], result_types=[])
            Builder().before(op.parent.terminator).create("dealloc", [row], result_types=[])
            self.stats["staged_decodes"] = self.stats.get("staged_decodes", 0) + 1

    # -- walking --------------------------------------------------------------------
    def _block(self, block):
        for op in list(block.ops):
            if op in self.dead_set:
                continue
            if op.regions:
                for r in op.regions:
                    self._block(r.block)
            else:
                self._op(op)

    def _kill(self, op):
        self.dead.append(op)
        self.dead_set.add(op)

    def _op(self, op):
        if isinstance(op, _COMPUTED):
            t = op.results[0].type
            if isinstance(t, TensorType) and t.rank >= 1:
                self._tensor(op)
                return
            if isinstance(t, TensorType):
                self._rank0(op)
                return
        if isinstance(op, O.LoadOp) and isinstance(op.source.type, TensorType):
            src = op.source
            if src in self.scalars or _fused_value(src):
                b = Builder().before(op)
                if _fused_value(src):
                    for axis, i in enumerate(op.indices):
                        check_index(b, self.dims, "load", src, axis, i)
                v = self.el.elem(b, src, list(op.indices), {})
                op.result.replace_all_uses_with(v)
                self._kill(op)
            return
        if isinstance(op, O.SubviewOp):
            src = op.source.type
            if isinstance(src, BufferType) and isinstance(op.result.type, TensorType):
                op.result.type = BufferType(op.result.type.dtype, op.result.type.shape)
            return
        if isinstance(op, O.CopyOp):
            b = Builder().before(op)
            self._copy_into(b, op.source, op.dest)
            self._kill(op)

    # -- tensors of rank >= 1 ------------------------------------------------------------
    def _tensor(self, op):
        if is_fused(op):
            self._kill(op)
            return
        v = op.result
        dest = self.dest.get(v)
        if dest is None:
            copy = next_op(op)
            dest = copy.dest
            self._kill(copy)
        b = Builder().before(op)
        self._compute_into(b, op, dest)
        v.replace_all_uses_with(dest)
        self._kill(op)

    def _compute_into(self, b, op, dest):
        if isinstance(op, O.QuantizeOp):
            check_records(b, self.dims, op.values, dest)
            if _fused_value(op.values):
                self._quantize_per_record(b, op, dest)
            else:
                b.create("quantize_into", [op.values, dest], dict(op.attrs),
                         result_types=[])
            return
        bounds = [self.dims.value(b, dest, a) for a in range(dest.type.rank)]
        inner, ivs = loop_nest(b, bounds)
        self.stats["loops"] += len(bounds)
        if isinstance(op, O.ReduceOp):
            val = self._reduce_elem(inner, op, ivs)
        else:
            val = self.el.expr(inner, op, ivs, {})
        inner.create("store", [val, dest, *ivs], result_types=[])

    def _quantize_per_record(self, b, op, dest):
        """A fused input is computed one record (the schema's block of values) at a time
        into a fixed staging row, which is quantized into record g of ``dest`` with base g."""
        src = op.values
        target = op.target
        block = target.block_elems
        row = b.create("alloc", [], result_types=[BufferType(f32, (1, block))],
                       names=["qrow"]).result
        count = self.dims.value(b, dest, 0)
        body, (g,) = loop_nest(b, [count], names=["g"])
        self.stats["loops"] += 2
        c0 = body.constant(0, index, name="c0")
        c1 = body.constant(1, index, name="c1")
        inner, (i,) = loop_nest(body, [body.constant(block, index, name=f"c{block}")],
                                names=["i"])
        inner.create("store", [self.el.elem(inner, src, [g, i], {}), row, c0, i],
                     result_types=[])
        g1 = body.value("add", g, c1, name="g1")
        rec = body.create("subview", [dest, g, g1, c1], {"axes": "r:"},
                          result_types=[BufferType(dest.type.dtype, (1, target.record_bytes))],
                          names=["rec"]).result
        body.create("quantize_into", [row, rec, g], dict(op.attrs), result_types=[])
        b.create("dealloc", [row], result_types=[])

    def _reduce_elem(self, b, op, ivs):
        src = op.source
        kind, t = op.kind, src.type.dtype
        if _fused_value(src):
            k = self.dims.value(b, src, src.type.rank - 1)
            self.stats["loops"] += 1
            return fold_loop(b, kind, t, k,
                             lambda bb, i: self.el.elem(bb, src, [*ivs, i], {}),
                             name=op.result.name_hint)
        view = src
        if ivs:
            view = b.value("subview", src, *ivs, axes="i" * len(ivs) + ":")
        red = b.create("reduce", [view], dict(op.attrs)).result
        return b.value("load", red, name=op.result.name_hint)

    # -- rank-0 values --------------------------------------------------------------------
    def _rank0(self, op):
        b = Builder().before(op)
        v = op.results[0]
        fused_in = any(_fused_value(o) for o in op.operands)
        if isinstance(op, O.ElementwiseOp):
            self.scalars[v] = self.el.expr(b, op, [], {})
        elif isinstance(op, (O.DotOp, O.ReduceOp)) and fused_in:
            self.stats["loops"] += 1
            src = op.operands[0]
            k = self.dims.value(b, src, 0)
            t = src.type.dtype
            if isinstance(op, O.DotOp):
                a, c = op.lhs, op.rhs

                def prod(bb, i):
                    memo = {}
                    x = self.el.elem(bb, a, [i], memo)
                    y = self.el.elem(bb, c, [i], memo)
                    return bb.value("mul", x, y)

                self.scalars[v] = fold_loop(b, "add", t, k, prod, name=v.name_hint)
            else:
                self.scalars[v] = fold_loop(b, op.kind, t, k,
                                            lambda bb, i: self.el.elem(bb, src, [i], {}),
                                            name=v.name_hint)
        else:
            after = Builder().after(op)
            self.scalars[v] = after.value("load", v, name=v.name_hint)
            return
        self._kill(op)

    # -- copies and outputs -------------------------------------------------------------
    def _copy_into(self, b, src, dst):
        """Code at ``b`` that writes the value ``src`` into the buffer ``dst``."""
        if isinstance(src.type, ScalarType):
            b.create("store", [src, dst], result_types=[])
            return
        if src.type.rank == 0:
            val = self.el.elem(b, src, [], {})
            b.create("store", [val, dst], result_types=[])
            return
        check_same_shape(b, self.dims, src, dst)
        from_ = src
        tmp = None
        if isinstance(src.type, BufferType) and may_alias(src, dst):
            sizes = [self.dims.value(b, dst, a) for a, d in enumerate(dst.type.shape)
                     if not isinstance(d, int)]
            tmp = b.create("alloc", sizes, {}, result_types=[dst.type],
                           names=["staging"]).result
            self._copy_loop(b, src, tmp)
            from_ = tmp
        self._copy_loop(b, from_, dst)
        if tmp is not None:
            b.create("dealloc", [tmp], result_types=[])

    def _copy_loop(self, b, src, dst):
        bounds = [self.dims.value(b, dst, a) for a in range(dst.type.rank)]
        inner, ivs = loop_nest(b, bounds)
        self.stats["loops"] += len(bounds)
        val = self.el.elem(inner, src, ivs, {})
        inner.create("store", [val, dst, *ivs], result_types=[])

    # -- bounds checks ----------------------------------------------------------------------
    def _checks(self, op):
        b = Builder().before(op)
        before = len(op.parent.ops)
        if isinstance(op, O.SubviewOp):
            src, k = op.source, 1
            for axis, code in enumerate(op.axes()):
                if code == "i":
                    check_index(b, self.dims, "subview", src, axis, op.operands[k])
                    k += 1
                elif code == "r":
                    check_range(b, self.dims, src, axis, *op.operands[k:k + 3])
                    k += 3
        else:
            for axis, i in op.index_pairs():
                check_index(b, self.dims, op.name, op.source, axis, i)
        if len(op.parent.ops) != before:
            self.stats["checks"] += 1


def _fused_value(v) -> bool:
    op = _op_of(v)
    return op is not None and is_fused(op)


def _op_of(v):
    return v.op if hasattr(v, "op") else None
