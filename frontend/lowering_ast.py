"""Statements of the DSL: the kernel's signature, assignments, stores, loops,
``if``, ``assert`` and ``return``, lowered through the scoped name table
(``scope.py``) into structured SSA IR."""
from __future__ import annotations

import ast
import re
from contextlib import contextmanager

from ninfer_ir.builder import Builder
from ninfer_ir.errors import VerifyError
from ninfer_ir.ir import Block, FuncOp, Module, Region, Value
from ninfer_ir.types import BufferType, ScalarType, ShapedType, TensorType

from .dsl import ShapedSpec, _SpecFactory
from .lowering_expr import ExprLowering
from .scope import describe, is_static
from .operators import OPERATORS, UNSUPPORTED_OPERATORS
from .scope import RangeFn, Scope, ShapeProxy, resolve_global

_SYMBOL = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def lower_function(fn, src, kernel_types=(), outer_names=None, sizes=None,
                   constants=None) -> Module:
    """The verified Module of ``fn``; ``sizes`` (symbol -> int) makes those symbol dims
    of the parameters static (a specialization for one call's shapes). ``constants``
    (``(function, name) -> Dense``) receives the data of the arrays the kernel and its
    helpers use, and supplies it to a later lowering, so every lowering of a kernel
    sees the arrays as they were at the first."""
    return Lowering(fn, src, kernel_types, outer_names, sizes, constants).run()


def assigned_names(stmts, in_place=lambda name: False) -> dict:
    """Names a statement list (re)binds, with the first statement binding each;
    loop variables of nested loops are not included (they are loop-local), nor are
    names for which ``in_place(name)`` holds (buffers) that only an augmented
    assignment writes: ``b += v`` stores into a buffer without rebinding ``b``."""
    out: dict = {}

    def target(t, stmt):
        if isinstance(t, ast.Name):
            out.setdefault(t.id, stmt)
        elif isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts:
                target(e, stmt)
        elif isinstance(t, ast.Starred):
            target(t.value, stmt)

    def walk(ss):
        for s in ss:
            if isinstance(s, ast.Assign):
                for t in s.targets:
                    target(t, s)
            elif isinstance(s, ast.AugAssign):
                if not (isinstance(s.target, ast.Name) and in_place(s.target.id)):
                    target(s.target, s)
            elif isinstance(s, ast.AnnAssign):
                target(s.target, s)
            elif isinstance(s, (ast.For, ast.While, ast.If)):
                walk(s.body)
                walk(s.orelse)
    walk(stmts)
    return out


class Lowering(ExprLowering):
    def __init__(self, fn, src, kernel_types=(), outer_names=None, sizes=None,
                 constants=None):
        self.fn = fn
        self.constants = constants if constants is not None else {}
        self.sizes = dict(sizes or {})
        self.outer_names = dict(outer_names or {})
        self.src = src
        self.kernel_types = tuple(kernel_types)
        self.env = Scope()
        self.builder = Builder()
        self.blocks: list = []
        self.op_nodes: dict = {}
        self.current = src.func_def

    @contextmanager
    def inside(self, block: Block):
        saved = (self.builder.block, self.builder.index)
        self.builder.at_end(block)
        self.blocks.append((block, {}))
        try:
            yield
        finally:
            self.blocks.pop()
            self.builder.block, self.builder.index = saved

    def line_of(self, node) -> int:
        return self.src.position(node)[0]

    # -- the function -------------------------------------------------------------
    def run(self) -> Module:
        fdef = self.src.func_def
        params = self.parameters(fdef)
        func = FuncOp(self.fn.__name__, [t for _, t, _ in params], [],
                      arg_names=[n for n, _, _ in params])
        for (name, _, node), arg in zip(params, func.args):
            self.env.bind(name, arg, node)
        module = Module([func])
        body = fdef.body
        results: list = []
        last = fdef
        with self.inside(func.body):
            for k, stmt in enumerate(body):
                last = stmt
                if isinstance(stmt, ast.Return):
                    if k != len(body) - 1:
                        raise self.error(stmt, "return must be the last statement of the kernel")
                    results = self.return_values(stmt, fdef)
                else:
                    self.visit(stmt)
            func.result_types = [v.type for v in results]
            self.emit("return", results, node=last)
        try:
            module.verify()
        except VerifyError as e:
            node = self.op_nodes.get(e.op, fdef)
            name = e.op.name if e.op is not None else "op"
            raise self.error(node, f"invalid '{name}': {e.message}") from None
        return module

    def parameters(self, fdef):
        a = fdef.args
        extra = a.posonlyargs + a.kwonlyargs + [x for x in (a.vararg, a.kwarg) if x]
        if extra:
            raise self.error(extra[0], "kernel parameters must be plain positional parameters "
                                       "(no *args, **kwargs, keyword-only or positional-only)")
        if a.defaults:
            raise self.error(a.defaults[0], "default values are not supported for kernel "
                                            "parameters")
        out = []
        for arg in a.args:
            if arg.annotation is None:
                raise self.error(arg, f"parameter '{arg.arg}' needs a type annotation: "
                                      f"I.Tensor[dtype, dims...], I.Buffer[dtype, dims...] or "
                                      f"a scalar dtype such as I.f32")
            ann = self.annotation(arg.arg, arg.annotation)
            out.append((arg.arg, self.param_type(ann, arg.annotation, arg.arg), arg))
        return out

    def annotation(self, key, node):
        ann = getattr(self.fn, "__annotations__", {}).get(key, None)
        if ann is None or isinstance(ann, str):
            scope = dict(self.fn.__globals__)
            scope.update(self.outer_names)
            code = self.fn.__code__
            for name in code.co_freevars:
                found, v = resolve_global(name, self.fn)
                if found:
                    scope[name] = v
            try:
                ann = eval(compile(ast.Expression(node), self.src.filename, "eval"), scope)
            except Exception as e:
                raise self.error(node, f"cannot evaluate this annotation: "
                                       f"{type(e).__name__}: {e}") from None
        return ann

    def param_type(self, ann, node, name):
        if isinstance(ann, ScalarType):
            return ann
        if isinstance(ann, _SpecFactory):
            raise self.error(node, f"{ann!r} needs a dtype and dims: {ann!r}[I.f32, \"N\"]")
        if not isinstance(ann, ShapedSpec):
            raise self.error(node, f"the annotation of '{name}' must be I.Tensor[...], "
                                   f"I.Buffer[...] or a scalar dtype, got {ann!r}")
        if not ann.items or not isinstance(ann.items[0], ScalarType):
            raise self.error(node, f"{ann!r}: the first item must be a dtype such as I.f32")
        dims = []
        for d in ann.items[1:]:
            ok = (d is None or isinstance(d, int) and not isinstance(d, bool) and d >= 0
                  or isinstance(d, str) and _SYMBOL.match(d))
            if not ok:
                raise self.error(node, f"{ann!r}: bad dimension {d!r}; a dim is an int >= 0, "
                                       f"a symbol name such as \"N\", or None")
            dims.append(self.sizes.get(d, d) if isinstance(d, str) else d)
        cls = TensorType if ann.kind == "tensor" else BufferType
        return cls(ann.items[0], dims)

    def return_values(self, stmt, fdef):
        if stmt.value is None:
            return []
        v = self.expr(stmt.value)
        many = isinstance(stmt.value, ast.Tuple)
        vals = list(v) if many else [v]
        wheres = stmt.value.elts if many else [stmt.value]
        want = self.return_types(fdef, len(vals), stmt)
        out = []
        for k, (x, where) in enumerate(zip(vals, wheres)):
            w = want[k] if want else None
            if is_static(x):
                if isinstance(w, ScalarType):
                    out.append(self.const(x, w, where, fresh=True))
                    continue
                raise self.error(where, f"cannot return {describe(x)}: a Python constant has "
                                        f"no IR type (annotate the return, e.g. -> I.f32, or "
                                        f"use I.cast)")
            if isinstance(x.type, BufferType):
                raise self.error(where, "a kernel returns values, not buffers: a buffer is "
                                        "written in place (return a tensor or a scalar)")
            if isinstance(w, ScalarType):
                x = self.as_scalar(x, where)
            if w is not None and x.type != w:
                raise self.error(where, f"the kernel is annotated to return {w} here, but the "
                                        f"value is {x.type}")
            out.append(x)
        return out

    def return_types(self, fdef, n, stmt):
        if fdef.returns is None:
            return None
        ann = self.annotation("return", fdef.returns)
        if ann is None:
            raise self.error(stmt, "the kernel is annotated -> None but returns a value")
        anns = list(ann) if isinstance(ann, tuple) else [ann]
        if len(anns) != n:
            raise self.error(stmt, f"the kernel is annotated to return {len(anns)} value(s) "
                                   f"but returns {n}")
        return [self.param_type(a, fdef.returns, "return") for a in anns]

    # -- simple statements ----------------------------------------------------------
    def visit_Expr(self, node):
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # a docstring
        self.expr(node.value)

    def visit_Pass(self, node):
        return

    def visit_Return(self, node):
        raise self.error(node, "return is only allowed as the last statement of the kernel, "
                               "not inside a loop or an if")

    def visit_Assign(self, node):
        value = self.expr(node.value)
        for t in node.targets:
            self.assign(t, value, node)

    def assign(self, target, value, stmt):
        if isinstance(target, ast.Name):
            self.env.bind(target.id, value, stmt)
        elif isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, ShapeProxy):
                value = tuple(self.dim(value.value, k, stmt)
                              for k in range(value.value.type.rank))
            if not isinstance(value, tuple):
                raise self.error(target, f"cannot unpack {describe(value)}; only tuples and "
                                         f".shape can be unpacked")
            if len(value) != len(target.elts):
                raise self.error(target, f"cannot unpack {len(value)} values into "
                                         f"{len(target.elts)} names")
            for t, v in zip(target.elts, value):
                self.assign(t, v, stmt)
        elif isinstance(target, ast.Subscript):
            self.store(target, value, stmt.value)
        elif isinstance(target, ast.Attribute):
            raise self.error(target, "assigning to an attribute is not supported inside a "
                                     "kernel")
        else:
            raise self.error(target, f"cannot assign to this {type(target).__name__.lower()}")

    def visit_AnnAssign(self, node):
        if not isinstance(node.target, ast.Name):
            raise self.error(node.target, "an annotated assignment needs a plain name")
        if node.value is None:
            raise self.error(node, f"'{node.target.id}' is declared without a value; "
                                   f"write {node.target.id}: dtype = value")
        t = self.expr(node.annotation)
        if not isinstance(t, ScalarType):
            raise self.error(node.annotation, f"the annotation must be a scalar dtype such "
                                              f"as I.f32, got {describe(t)}")
        v = self.expr(node.value)
        if is_static(v):
            v = self.const(v, t, node.value, fresh=True)
        else:
            v = self.typed(v, t, node.value, f"the value of '{node.target.id}'")
        self.env.bind(node.target.id, v, node)

    def is_buffer_name(self, name: str) -> bool:
        """Whether ``name`` is bound to a buffer (so ``name += v`` stores in place)."""
        b = self.env.get(name)
        return b is not None and isinstance(b.value, Value) and isinstance(b.value.type,
                                                                          BufferType)

    def visit_AugAssign(self, node):
        rule = OPERATORS.get(type(node.op))
        if rule is None:
            raise self.error(node, UNSUPPORTED_OPERATORS[type(node.op)])
        target = node.target
        if isinstance(target, ast.Name):
            name = ast.copy_location(ast.Name(target.id, ast.Load()), target)
            if not self.is_buffer_name(target.id):
                cur = self.expr(name)
                value = self.expr(node.value)
                self.env.bind(target.id, self.binary(rule, cur, value, node), node)
                return
            # a buffer is memory: `b += v` updates it in place, as `b[:, :] = b + v`
            rank = self.env.get(target.id).value.type.rank
            whole = [ast.copy_location(ast.Slice(), target) for _ in range(rank)]
            target = ast.copy_location(ast.Subscript(
                name, ast.copy_location(ast.Tuple(whole, ast.Load()), target), ast.Store()),
                target)
        if not isinstance(target, ast.Subscript):
            raise self.error(node.target, "augmented assignment needs a name or an "
                                          "indexed buffer")
        base, axes = self.store_target(target)
        value = self.expr(node.value)
        if all(a[0] == "i" for a in axes):
            cur = self.view(base, axes, target)
            self.write(base, axes, self.binary(rule, cur, value, node), target, node)
        else:
            dst = self.view(base, axes, target, force_view=True)
            self.copy_into(dst, self.binary(rule, dst, value, node), node)

    # -- stores ----------------------------------------------------------------------------
    def store_target(self, target):
        base = self.expr(target.value)
        if not isinstance(base, Value) or not isinstance(base.type, ShapedType):
            raise self.error(target, f"cannot store into {describe(base)}")
        if not isinstance(base.type, BufferType):
            name = target.value.id if isinstance(target.value, ast.Name) else "this value"
            raise self.error(target, f"cannot store into '{name}': it is a read-only "
                                     f"{base.type}; declare it I.Buffer[...] to write it")
        return base, self.index_axes(base, target.slice, target)

    def store(self, target, value, value_node):
        base, axes = self.store_target(target)
        self.write(base, axes, value, target, value_node)

    def write(self, base, axes, value, target, value_node):
        if all(a[0] == "i" for a in axes):
            v = self.typed(value, base.type.dtype, value_node, "the stored value")
            self.emit("store", [v, base] + [a[1] for a in axes], what="store", node=target)
            return
        dst = self.view(base, axes, target, force_view=True)
        self.copy_into(dst, value, value_node)

    def copy_into(self, dst, value, value_node):
        if is_static(value) or not isinstance(value.type, ShapedType):
            raise self.error(value_node, f"cannot store {describe(value)} into the slice "
                                         f"{dst.type}: store a tensor of that shape, or store "
                                         f"element by element in a loop")
        self.emit("copy", [value, dst], what="store into a slice", node=value_node)

    def visit_Assert(self, node):
        msg = self.expr(node.msg) if node.msg is not None else None
        if msg is not None and not isinstance(msg, str):
            raise self.error(node.msg, "the assert message must be a string constant")
        c = self.expr(node.test)
        text = msg or f"assertion failed: {ast.unparse(node.test)}"
        if is_static(c):
            if not c:
                raise self.error(node, f"assertion failed at compile time: {text}")
            return
        c = self.as_bool(c, node.test, "the assert condition")
        self.emit("check", [c], {"message": text}, node=node)

    # -- loops --------------------------------------------------------------------------
    def visit_For(self, node):
        from .control import lower_for
        lower_for(self, node)

    def visit_If(self, node):
        from .control import lower_if
        lower_if(self, node)

    def loop_range(self, node):
        it = node.iter
        f = self.expr(it.func) if isinstance(it, ast.Call) else None
        if not isinstance(f, RangeFn):
            raise self.error(it, "a kernel loop iterates over range(...), I.range(...) or "
                                 "I.prange(...); to walk a tensor, loop over its indices")
        if it.keywords or not 1 <= len(it.args) <= 3:
            raise self.error(it, f"{f.spelling} takes 1 to 3 positional arguments "
                                 f"(stop | start, stop | start, stop, step)")
        vals = [self.expr(a) for a in it.args]
        if len(vals) == 1:
            vals, wheres = [0, vals[0], 1], [it, it.args[0], it]
        elif len(vals) == 2:
            vals, wheres = vals + [1], list(it.args) + [it]
        else:
            wheres = list(it.args)
        step = vals[2]
        if is_static(step) and (isinstance(step, bool) or not isinstance(step, int) or step <= 0):
            raise self.error(wheres[2], f"the loop step must be a positive integer, got "
                                        f"{describe(step)}")
        for v, w in zip(vals, wheres):
            if is_static(v) and (isinstance(v, bool) or not isinstance(v, int)):
                raise self.error(w, f"a loop bound must be an integer, got {describe(v)}")
        bounds = [self.as_index(v, w, "loop bound") for v, w in zip(vals, wheres)]
        return bounds, f.parallel, f.spelling

    def region_block(self, arg_types=(), arg_names=None) -> tuple[Region, Block]:
        block = Block(arg_types, arg_names)
        return Region([block]), block
