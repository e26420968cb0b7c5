"""``for`` and ``if``: Python-level SSA through the scoped name table.

A name re-assigned in a loop body becomes a loop-carried value (a ``for`` init
operand, a block argument, a ``yield`` operand and a result). When such a name
holds a Python constant before the loop, the body is first compiled once in a
scratch block to learn the IR type the body gives it; the scratch block is then
dropped. A name assigned in a branch of an ``if`` on an IR condition becomes a
result of the ``if`` when both sides define it afterwards.
"""
from __future__ import annotations

import ast

from ninfer_ir.ir import Value
from ninfer_ir.types import ShapedType, index

from .lowering_ast import assigned_names
from .scope import describe, is_static


def _scalarize(lw, v, node):
    return lw.as_scalar(v, node) if isinstance(v, Value) else v


def _type_of(v):
    t = v.type
    return t.dtype if isinstance(t, ShapedType) and t.rank == 0 else t


# -- for ----------------------------------------------------------------------------

def lower_for(lw, node):
    if node.orelse:
        raise lw.error(node, "'for ... else' is not supported inside a kernel")
    if not isinstance(node.target, ast.Name):
        raise lw.error(node.target, "the loop variable must be a single name")
    (lb, ub, step), parallel, spelling = lw.loop_range(node)
    iv = node.target.id
    written = assigned_names(node.body, in_place=lw.is_buffer_name)
    carried = [n for n in written if n in lw.env and n != iv]
    if parallel and carried:
        n = carried[0]
        raise lw.error(written[n], f"'{n}' is defined before this {spelling} loop and "
                                   f"re-assigned inside it: a parallel loop cannot carry "
                                   f"values between iterations (use I.range, or a new name)")
    types = {}
    statics = []
    for n in carried:
        v = lw.env.get(n).value
        if is_static(v):
            statics.append(n)
        else:
            types[n] = _type_of(v)
    if statics:
        ends = _body(lw, node, iv, carried, types, probe=True)
        for n in statics:
            _static_carried(lw, n, lw.env.get(n), ends[n], types)
        carried = [n for n in carried if n in types]
    inits = []
    for n in carried:
        b = lw.env.get(n)
        v = b.value
        inits.append(lw.const(v, types[n], node) if is_static(v) else lw.as_scalar(v, node))
    region, ends, body_env = _body(lw, node, iv, carried, types, probe=False)
    attrs = {"parallel": True} if parallel else {}
    op = lw.emit("for", [lb, ub, step] + inits, attrs, [types[n] for n in carried],
                 [region], hint=list(carried) or None, node=node)
    op.loc = (lw.src.filename, *lw.src.position(node))
    for n, r in zip(carried, op.results):
        lw.env.bind(n, r, ends[n].node)
    for n, b in body_env.names.items():
        if n not in lw.env.names or n == iv:
            if n == iv:
                lw.env.kill(n, f"the loop variable '{iv}' is not visible after its loop "
                               f"(line {lw.line_of(node)})")
            elif n not in carried:
                lw.env.kill(n, f"'{n}' is only defined inside the loop at line "
                               f"{lw.line_of(b.node)}; assign it before the loop to use it "
                               f"after")


def _static_carried(lw, n, before, end, types):
    init = before.value
    if is_static(end.value):
        same = type(end.value) is type(init) and end.value == init
        if same or end is before:
            return                      # unchanged constant: nothing is carried
        raise lw.error(end.node, f"'{n}' is a Python constant that changes inside the loop "
                                 f"({init!r} before it, {end.value!r} here): give it an IR "
                                 f"type before the loop to carry it, e.g. {n}: I.i32 = {init!r}")
    t = _type_of(end.value)
    if isinstance(t, ShapedType) or not isinstance(init, (bool, int, float)):
        raise lw.error(end.node, f"'{n}' is {describe(init)} before the loop and a {t} value "
                                 f"inside it: a loop-carried value keeps its type")
    types[n] = t


def _body(lw, node, iv, carried, types, probe):
    """Compile the loop body. ``probe``: in a scratch block, returning the end bindings."""
    names = [n for n in carried if n in types]
    region, block = lw.region_block([index] + [types[n] for n in names], [iv] + names)
    saved = lw.env
    lw.env = saved.copy()
    lw.env.bind(iv, block.args[0], node.target)
    for n, arg in zip(names, block.args[1:]):
        lw.env.bind(n, arg, saved.get(n).node)
    try:
        with lw.inside(block):
            for stmt in node.body:
                lw.visit(stmt)
            ends = {n: lw.env.get(n) for n in carried}
            if not probe:
                lw.emit("yield", [_carry(lw, n, ends[n], types[n]) for n in names],
                        node=node)
        body_env = lw.env
    finally:
        lw.env = saved
    if probe:
        for op in block.ops:
            op.drop_all_references()
        return ends
    return region, ends, body_env


def _carry(lw, n, end, t):
    v = end.value
    if is_static(v):
        return lw.const(v, t, end.node)
    v = _scalarize(lw, v, end.node)
    if v.type != t:
        raise lw.error(end.node, f"loop-carried '{n}' changes type inside the loop: {t} "
                                 f"before the loop, {v.type} here (use I.cast)")
    return v


# -- if -------------------------------------------------------------------------------

def lower_if(lw, node):
    c = lw.expr(node.test)
    if is_static(c):
        for stmt in (node.body if c else node.orelse):
            lw.visit(stmt)
        return
    c = lw.as_bool(c, node.test, "the if condition")
    before = lw.env
    t_region, t_block = lw.region_block()
    e_region, e_block = lw.region_block()
    t_env = _branch(lw, node.body, t_block, before)
    e_env = _branch(lw, node.orelse, e_block, before)

    merged, statics, killed = [], {}, {}
    order = list(t_env.names) + [n for n in e_env.names if n not in t_env.names]
    for n in order:
        tb, eb = t_env.get(n), e_env.get(n)
        if tb is None or eb is None:
            b = tb or eb
            if n in before.names:
                killed[n] = (t_env.dead.get(n) or e_env.dead.get(n)
                             or f"'{n}' is not visible after the if")
            else:
                killed[n] = (f"'{n}' is only defined in one branch of the if at line "
                             f"{lw.line_of(b.node)}; assign it before the if or in both "
                             f"branches")
            continue
        if tb is eb:
            continue
        tv, ev = tb.value, eb.value
        if is_static(tv) and is_static(ev):
            if type(tv) is type(ev) and tv == ev:
                statics[n] = tb
                continue
            where = tb.node if tb is not before.get(n) else eb.node
            raise lw.error(where, f"'{n}' is a different Python constant on each side of "
                                  f"the if ({tv!r} and {ev!r}): give it an IR type before "
                                  f"the if, e.g. {n}: I.i32 = ...")
        merged.append(n)

    t_vals, e_vals, types = [], [], []
    for n in merged:
        tb, eb = t_env.get(n), e_env.get(n)
        with lw.inside(t_block):
            tv = _scalarize(lw, tb.value, tb.node)
        with lw.inside(e_block):
            ev = _scalarize(lw, eb.value, eb.node)
        if is_static(tv) != is_static(ev):
            ir = ev if is_static(tv) else tv
            if isinstance(ir.type, ShapedType):
                raise lw.error(tb.node if is_static(tv) else eb.node,
                               f"'{n}' is a Python constant on one side of the if and a "
                               f"{ir.type} value on the other")
        if is_static(tv):
            with lw.inside(t_block):
                tv = lw.const(tv, ev.type, tb.node)
        if is_static(ev):
            with lw.inside(e_block):
                ev = lw.const(ev, tv.type, eb.node)
        if tv.type != ev.type:
            where = tb.node if tb is not before.get(n) else eb.node
            raise lw.error(where, f"'{n}' is {tv.type} on one side of the if and {ev.type} "
                                  f"on the other: both sides must give it the same type "
                                  f"(use I.cast)")
        t_vals.append(tv)
        e_vals.append(ev)
        types.append(tv.type)
    with lw.inside(t_block):
        lw.emit("yield", t_vals, node=node)
    with lw.inside(e_block):
        lw.emit("yield", e_vals, node=node)
    op = lw.emit("if", [c], {}, types, [t_region, e_region], hint=list(merged) or None,
                 node=node)
    lw.env = before
    for n, r in zip(merged, op.results):
        b = t_env.get(n) if t_env.get(n) is not before.get(n) else e_env.get(n)
        lw.env.bind(n, r, b.node)
    for n, b in statics.items():
        lw.env.bind(n, b.value, b.node)
    for n, reason in killed.items():
        lw.env.kill(n, reason)


def _branch(lw, stmts, block, before):
    lw.env = before.copy()
    try:
        with lw.inside(block):
            for stmt in stmts:
                lw.visit(stmt)
        return lw.env
    finally:
        lw.env = before
