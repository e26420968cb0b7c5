"""Views and memory for the CPU emitter: ``constant_tensor``, ``dim``, ``subview``,
``load``, ``store``, ``copy``, ``alloc``, ``dealloc``.

A view is a byte address with sizes and byte strides; an element's address is
``ptr + sum(index * stride)``. Indices and ranges are guarded exactly as the
interpreter checks them (``0 <= i < n``; ``0 <= start <= stop <= n`` and
``step >= 1``), in axis order, so the first failing one is the one reported.
A result whose declared type names a static size or a bound symbol is checked
against its run-time size (the interpreter's ``VerifyError``), after which the
emitter uses the declared size.
"""
from __future__ import annotations

import llvmlite.ir as ir

from ninfer_ir.types import ShapedType

from ninfer_ir.backends.llvm.gen import scalars as S
from ninfer_ir.backends.llvm.gen.emitter import I8, I8P, I64, STACK_LIMIT, Reg, View, i64c
from ninfer_ir.backends.abi import REASON_NO_MEMORY, Guard

__all__ = ["lower_constant_tensor", "lower_dim", "lower_subview", "lower_load", "lower_store", "lower_copy",
           "lower_alloc", "lower_dealloc", "element_ptr", "load_element", "conform",
           "copy_grid", "extent", "disjoint", "constant_scope", "mark_constant_loads"]


def lower_constant_tensor(e, op):
    """A view of the data as a private read-only global (one per distinct data, named
    by its digest); its address is a constant expression, so a parallel body uses the
    global directly and nothing of it travels in the environment."""
    data = op.value
    name = f"nq.const.{data.digest()[:32]}"
    gv = e.module.globals.get(name)
    if gv is None:
        raw = data.tobytes()
        ty = ir.ArrayType(I8, max(1, len(raw)))
        gv = ir.GlobalVariable(e.module, ty, name=name)
        gv.linkage = "private"
        gv.global_constant = True
        gv.unnamed_addr = True
        gv.align = 64
        gv.initializer = ir.Constant(ty, bytearray(raw or b"\0"))
    itemsize = max(1, data.dtype.bits // 8)
    unit = 1 if e.options["strides"] == "byte" else itemsize
    strides, step = [], itemsize if unit == 1 else 1
    for n in reversed(data.shape):
        strides.insert(0, i64c(step))
        step *= n
    return View(gv.bitcast(I8P), [i64c(n) for n in data.shape], strides, data.dtype, unit)


def lower_dim(e, op):
    return e.value(op.source).shape[op.axis]


def _bounds(e, op, view, idx):
    if not e.options["bounds_checks"]:
        return
    for axis, (v, i, n) in enumerate(zip(op.indices, idx, view.shape)):
        if not e.below(v, n):
            e.guard(e.b.icmp_unsigned("<", i, n), Guard("index", op, axis), [i, n])


def offset(b, idx, strides):
    off = None
    for i, s in zip(idx, strides):
        term = b.mul(i, s)
        off = term if off is None else b.add(off, term)
    return off


def element_ptr(b, view, idx):
    """Typed pointer to ``view[idx]`` (no checks)."""
    ty = S.mem_type(view.dtype).as_pointer()
    off = offset(b, idx, view.strides)
    if off is None:
        return b.bitcast(view.ptr, ty)
    if view.unit == 1:
        return b.bitcast(b.gep(view.ptr, [off]), ty)
    return b.gep(b.bitcast(view.ptr, ty), [off])


def load_element(b, view, idx):
    if not isinstance(view, View):
        return view.element(b, idx[0])
    return S.to_register(b, b.load(element_ptr(b, view, idx), align=1), view.dtype)


def lower_load(e, op):
    src = e.value(op.source)
    if isinstance(src, Reg):
        return src.value
    idx = [e.value(v) for v in op.indices]
    _bounds(e, op, src, idx)
    if getattr(op.source, "op", None) is None or op.source.op.name != "constant_tensor":
        return load_element(e.b, src, idx)
    ins = e.b.load(element_ptr(e.b, src, idx), align=1)
    ins.set_metadata("alias.scope", constant_scope(e.module))
    return S.to_register(e.b, ins, src.dtype)


_SCOPE = "nq.constant"


def constant_scope(module):
    """The alias scope list of the loads from constant tensors (one per LLVM module)."""
    md = getattr(module, "_nq_constant_scope", None)
    if md is None:
        domain = module.add_metadata([ir.MetaDataString(module, _SCOPE + "s")])
        scope = module.add_metadata([ir.MetaDataString(module, _SCOPE), domain])
        md = module._nq_constant_scope = module.add_metadata([scope])
    return md


def mark_constant_loads(module):
    """Every other load and store of ``module`` is ``!noalias`` with the constant
    tensors' loads (no store writes constant memory; two loads never conflict), so that
    a loop reading a table at computed indices needs no run-time alias check against it
    and can be vectorized."""
    md = getattr(module, "_nq_constant_scope", None)
    if md is None:
        return
    for fn in module.functions:
        for block in fn.blocks:
            for ins in block.instructions:
                if (isinstance(ins, (ir.LoadInstr, ir.StoreInstr))
                        and "alias.scope" not in ins.metadata):
                    ins.set_metadata("noalias", md)


def lower_store(e, op):
    value, dst = e.value(op.value), e.value(op.dest)
    idx = [e.value(v) for v in op.indices]
    _bounds(e, op, dst, idx)
    b = e.b
    b.store(S.to_memory(b, value, dst.dtype), element_ptr(b, dst, idx), align=1)


def conform(e, op, view, t: ShapedType):
    """Check the run-time sizes of a result against its declared type."""
    want = []
    for d, have in zip(t.shape, view.shape):
        if isinstance(d, int):
            want.append(i64c(d))
        elif isinstance(d, str) and d in e.symbols:
            want.append(e.symbols[d])
        else:
            want.append(None)
    ok = None
    for w, have in zip(want, view.shape):
        if w is None or w is have or (isinstance(w, ir.Constant) and isinstance(have, ir.Constant)
                                      and w.constant == have.constant):
            continue
        same = e.b.icmp_signed("==", w, have)
        ok = same if ok is None else e.b.and_(ok, same)
    if ok is not None:
        e.guard(ok, Guard("result_type", op), list(view.shape))
    view.shape = [h if w is None else w for w, h in zip(want, view.shape)]
    return view


def lower_subview(e, op):
    b = e.b
    src = e.value(op.operands[0])
    vals = [e.value(v) for v in op.operands[1:]]
    off, shape, strides, k = None, [], [], 0
    for axis, code in enumerate(op.attrs["axes"]):
        n, s = src.shape[axis], src.strides[axis]
        if code == ":":
            shape.append(n)
            strides.append(s)
            continue
        if code == "i":
            i = vals[k]
            if not e.below(op.operands[1 + k], n):
                e.guard(b.icmp_unsigned("<", i, n), Guard("index", op, axis), [i, n])
            k += 1
            start = i
        else:
            start, stop, step = vals[k:k + 3]
            k += 3
            ok = b.and_(b.and_(b.icmp_signed(">", step, i64c(0)),
                               b.icmp_unsigned("<=", start, stop)),
                        b.icmp_unsigned("<=", stop, n))
            e.guard(ok, Guard("range", op, axis), [start, stop, step, n])
            span = b.sub(stop, start)
            shape.append(b.udiv(b.add(span, b.sub(step, i64c(1))), step))
            strides.append(b.mul(s, step))
        term = b.mul(start, s)
        off = term if off is None else b.add(off, term)
    ptr = src.ptr if off is None else src.advance(b, off)
    return conform(e, op, View(ptr, shape, strides, src.dtype, src.unit), op.result.type)


def _nested(e, sizes, body):
    """Loops over every index tuple of ``sizes`` (row-major) calling ``body(idx)``."""
    from ninfer_ir.backends.llvm.gen.folds import counted_loop
    if not sizes:
        body([])
        return

    def level(depth, idx):
        def inner(k):
            if depth + 1 == len(sizes):
                body(idx + [k])
            else:
                level(depth + 1, idx + [k])
        counted_loop(e, i64c(0), sizes[depth], inner)
    level(0, [])


def lower_copy(e, op):
    b = e.b
    src, dst = e.value(op.source), e.value(op.dest)
    same = None
    for x, y in zip(src.shape, dst.shape):
        eq = b.icmp_signed("==", x, y)
        same = eq if same is None else b.and_(same, eq)
    if same is not None:
        e.guard(same, Guard("copy", op), list(src.shape) + list(dst.shape))
    if isinstance(src, Reg):
        b.store(S.to_memory(b, src.value, dst.dtype), element_ptr(b, dst, []), align=1)
        return

    def body(idx):
        if isinstance(src, View):
            raw = b.load(element_ptr(b, src, idx), align=1)
        else:
            raw = S.to_memory(b, load_element(b, src, idx), src.dtype)
        b.store(raw, element_ptr(b, dst, idx), align=1)
    _nested(e, src.shape, body)


def lower_alloc(e, op):
    b = e.b
    t = op.result.type
    sizes = iter(e.value(v) for v in op.operands)
    shape = []
    for d in t.shape:
        if isinstance(d, int):
            shape.append(i64c(d))
        else:
            n = next(sizes)
            e.guard(b.icmp_signed(">=", n, i64c(0)), Guard("alloc_size", op), [n])
            shape.append(n)
    itemsize = max(1, t.dtype.bits // 8)
    unit = 1 if e.options["strides"] == "byte" else itemsize
    view = conform(e, op, View(None, shape, [], t.dtype, unit), t)
    strides, count = [], i64c(1)
    static, overflow = 1, None
    for n in reversed(view.shape):
        strides.insert(0, count if unit != 1 else b.mul(count, i64c(itemsize)))
        static = static * n.constant if isinstance(n, ir.Constant) and static is not None \
            else None
        prod = b.umul_with_overflow(count, n)
        count = b.extract_value(prod, 0)
        ovf = b.extract_value(prod, 1)
        overflow = ovf if overflow is None else b.or_(overflow, ovf)
    view.strides = strides
    if static is not None:
        static *= itemsize
    total = b.mul(count, i64c(itemsize))
    if overflow is not None:
        big = b.icmp_unsigned(">", count, i64c((1 << 62) // itemsize))
        overflow = b.or_(overflow, big)
    if static is not None and static <= STACK_LIMIT:
        buf = e.entry_alloca(ir.ArrayType(I8, max(static, 1)), align=64)
        view.ptr = b.bitcast(buf, I8P)
        memset = e.runtime("llvm.memset.p0i8.i64", ir.VoidType(),
                           [I8P, I8, I64, ir.IntType(1)])
        b.call(memset, [view.ptr, ir.Constant(I8, 0), i64c(static), ir.Constant(ir.IntType(1), 0)])
        return view
    if overflow is not None:
        e.fail_if(overflow, REASON_NO_MEMORY)
    view.ptr, slot = e.heap(total)
    e.slot_of[id(view)] = slot
    return view


def lower_dealloc(e, op):
    view = e.value(op.buffer)
    slot = e.slot_of.pop(id(view), None) if isinstance(view, View) else None
    if slot is not None:
        e.free_slot(slot)


def extent(b, view):
    """``(first byte, last byte, empty)`` of the memory a view can touch (i64 values)."""
    lo = hi = b.ptrtoint(view.ptr, I64)
    empty = ir.Constant(ir.IntType(1), 0)
    for n, s in zip(view.shape, view.byte_strides(b)):
        span = b.mul(b.sub(n, i64c(1)), s)
        neg = b.icmp_signed("<", span, i64c(0))
        lo = b.add(lo, b.select(neg, span, i64c(0)))
        hi = b.add(hi, b.select(neg, i64c(0), span))
        empty = b.or_(empty, b.icmp_signed("<=", n, i64c(0)))
    return lo, b.add(hi, i64c(view.itemsize - 1)), empty


def disjoint(b, x, y):
    """i1: the views ``x`` and ``y`` share no byte."""
    xlo, xhi, xe = extent(b, x)
    ylo, yhi, ye = extent(b, y)
    apart = b.or_(b.icmp_unsigned("<", xhi, ylo), b.icmp_unsigned("<", yhi, xlo))
    return b.or_(apart, b.or_(xe, ye))


def copy_grid(e, src, ss0, ss1, dst, ds0, ds1, n0, n1, esize):
    """``dst[i, j] = src[i, j]`` for an ``n0 x n1`` grid of ``esize``-byte elements."""
    from ninfer_ir.backends.llvm.gen.folds import counted_loop
    b = e.b
    ty = ir.IntType(8 * esize).as_pointer()
    n1 = i64c(n1) if isinstance(n1, int) else n1

    def row(i):
        def col(j):
            s = b.gep(src, [b.add(b.mul(i, ss0), b.mul(j, ss1))])
            d = b.gep(dst, [b.add(b.mul(i, ds0), b.mul(j, ds1))])
            b.store(b.load(b.bitcast(s, ty), align=1), b.bitcast(d, ty), align=1)
        counted_loop(e, i64c(0), n1, col)
    counted_loop(e, i64c(0), n0, row)
