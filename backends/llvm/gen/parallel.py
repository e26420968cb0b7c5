"""Parallel loops (``parallel = true``): the body is outlined into

    i64 @"nk.<f>.body<k>"(i8* env, i64 lo, i64 hi, i64* err)

which runs iterations ``[lo, hi)`` (``iv = lb + k*step``) in order and stops at the
first failing one, returning its status. ``env`` is an ``i64`` array holding, one
64-bit word each, every non-constant part of the values the body uses from outside
(scalars, view addresses, sizes and strides, rank-0 registers), the loop's ``lb``
and ``step``, and the function's symbol sizes. The kernel then calls
``par(body, env, n, err)`` (the launcher's thread pool) or, when ``par`` is null,
``body(env, 0, n, err)``. Loops nested in an outlined body run sequentially.
"""
from __future__ import annotations

import llvmlite.ir as ir

from ninfer_ir.backends.llvm.gen.decoded import Decoded
from ninfer_ir.backends.llvm.gen.emitter import BODY_TYPE, I8P, I64, PAR_TYPE, Emitter, Reg, View, i64c, to_word

__all__ = ["emit_parallel"]


def _captures(loop):
    """Values used inside ``loop`` and defined outside it, in first-use order."""
    inside, seen, out = set(), set(), []
    for op in loop.walk():
        for region in op.regions:
            for block in region.blocks:
                inside.update(block.args)
        if op is not loop:
            inside.update(op.results)
    for op in loop.walk():
        if op is loop:
            continue
        for v in op.operands:
            if v not in inside and v not in seen:
                seen.add(v)
                out.append(v)
    return out


def _parts(x):
    """The ``ir.Value``s a mapped value is made of (a decoded row: its inputs and k)."""
    if isinstance(x, View):
        return [x.ptr, *x.shape, *x.strides]
    if isinstance(x, Reg):
        return [x.value]
    if isinstance(x, Decoded):
        return [p for i in x.inputs for p in _parts(i)] + [x.shape[0]]
    return [x]


def _rebuild(x, parts):
    """A value like ``x`` made of ``parts`` (the inverse of ``_parts``)."""
    if isinstance(x, View):
        r = len(x.shape)
        return View(parts[0], parts[1:1 + r], parts[1 + r:], x.dtype, x.unit)
    if isinstance(x, Reg):
        return Reg(parts[0])
    if isinstance(x, Decoded):
        inputs, at = [], 0
        for i in x.inputs:
            n = len(_parts(i))
            inputs.append(_rebuild(i, parts[at:at + n]))
            at += n
        return Decoded(inputs, x.fmt, parts[-1], x.dtype)
    return parts[0]


def _from_word(b, word, like):
    ty = like.type
    if isinstance(ty, ir.PointerType):
        return b.inttoptr(word, ty)
    if isinstance(ty, ir.IntType):
        if ty.width == 1:
            return b.icmp_unsigned("!=", word, i64c(0))
        return word if ty.width == 64 else b.trunc(word, ty)
    bits = {ir.HalfType: 16, ir.FloatType: 32, ir.DoubleType: 64}[type(ty)]
    low = word if bits == 64 else b.trunc(word, ir.IntType(bits))
    return b.bitcast(low, ty)


def emit_parallel(e: Emitter, loop, lb, step, n, worth=None):
    """Outline ``loop``; run it through ``par`` (or alone when ``par`` is null or the
    i1 ``worth`` is false)."""
    kernel = e.kernel
    captured = _captures(loop)
    items = [lb, step] + [e.value(v) for v in captured] + list(e.symbols.values())
    words = [p for x in items for p in _parts(x) if not isinstance(p, ir.Constant)]

    fn = ir.Function(e.module, BODY_TYPE, name=f"{kernel.symbol}.body{kernel.bodies}")
    kernel.bodies += 1
    fn.linkage = "internal"
    env, lo, hi, err = fn.args
    body = Emitter(kernel, fn, err, e.options)
    body.can_outline = False
    bb = body.b
    slots = bb.bitcast(env, I64.as_pointer())
    taken = iter(range(len(words)))

    def unpack(x):
        parts = []
        for p in _parts(x):
            if isinstance(p, ir.Constant):
                parts.append(p)
            else:
                word = bb.load(bb.gep(slots, [i64c(next(taken))]))
                parts.append(_from_word(bb, word, p))
        return _rebuild(x, parts)
    lb2, step2 = unpack(lb), unpack(step)
    for v in captured:
        body.bind(v, unpack(e.value(v)))
    body.symbols = {name: unpack(val) for name, val in e.symbols.items()}
    body.iterate(loop, lb2, step2, lo, hi, [])
    body.finish()

    b = e.b
    block = e.entry_alloca(ir.ArrayType(I64, max(1, len(words))))
    for k, p in enumerate(words):
        b.store(to_word(b, p), b.gep(block, [i64c(0), i64c(k)]))
    env_ptr = b.bitcast(block, I8P)
    is_null = b.icmp_unsigned("==", e.par, ir.Constant(I8P, None))
    if worth is not None:
        is_null = b.or_(is_null, b.not_(worth))
    with b.if_else(is_null) as (alone, pooled):
        with alone:
            direct = b.call(fn, [env_ptr, i64c(0), n, e.err])
            alone_bb = b.block
        with pooled:
            par = b.bitcast(e.par, PAR_TYPE.as_pointer())
            shared = b.call(par, [b.bitcast(fn, I8P), env_ptr, n, e.err])
            pooled_bb = b.block
    status = b.phi(I64)
    status.add_incoming(direct, alone_bb)
    status.add_incoming(shared, pooled_bb)
    e.fail_if(b.icmp_signed("!=", status, i64c(0)), status)

