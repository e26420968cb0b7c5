"""Parser for the textual IR (``ir.lark``): ``parse(text) -> Module``.

Every failure is an ``I.ParseError`` with line:col and the offending text (or an
``I.VerifyError`` from the verifier once the module is built).
"""
from __future__ import annotations

import os
from functools import lru_cache

from lark import Lark, Token, Tree
from lark.exceptions import LarkError, UnexpectedInput

from ninfer_ir.dense import Dense, DenseError
from ninfer_ir.errors import ParseError
from ninfer_ir.ir import Block, FuncOp, Module, Region
from ninfer_ir.ops import OPS
from ninfer_ir.quant import SCHEMAS
from ninfer_ir.types import SCALARS, BufferType, TensorType, index

# Deepest nesting of regions (ops inside regions inside ops) and of list attributes
# the parser accepts; deeper text is refused with a ParseError instead of exhausting
# the Python stack here or in the verifier and passes.
MAX_NESTING = 64
# Longest integer literal accepted (digits); larger values fit no IR type anyway.
MAX_INT_DIGITS = 40


@lru_cache(maxsize=1)
def _parser() -> Lark:
    path = os.path.join(os.path.dirname(__file__), "ir.lark")
    with open(path, encoding="utf-8") as f:
        return Lark(f.read(), parser="lalr", propagate_positions=True,
                    maybe_placeholders=False)


def parse(text: str, verify: bool = True) -> Module:
    if not isinstance(text, str):
        raise ParseError(f"expected IR text (str), got {type(text).__name__}")
    try:
        tree = _parser().parse(text)
    except UnexpectedInput as e:
        line, col = getattr(e, "line", 0) or 0, getattr(e, "column", 0) or 0
        tok = getattr(e, "token", None)
        shown = str(tok) if tok is not None else _snippet(text, e)
        raise ParseError(_describe_unexpected(e), line, col, shown) from None
    except LarkError as e:  # any other lark failure is still a parse error
        raise ParseError(f"cannot parse: {e}") from None
    except RecursionError:
        raise ParseError("IR nests too deeply") from None
    try:
        module = _Builder().module(tree)
    except RecursionError:
        raise ParseError("IR nests too deeply") from None
    if verify:
        module.verify()
    return module


def _snippet(text, e):
    pos = getattr(e, "pos_in_stream", None)
    if pos is None:
        return ""
    return text[pos:pos + 12]


def _describe_unexpected(e) -> str:
    tok = getattr(e, "token", None)
    if tok is not None and getattr(tok, "type", "") == "$END":
        return "unexpected end of input"
    exp = sorted(getattr(e, "expected", None) or getattr(e, "allowed", None) or [])
    if exp and len(exp) <= 6:
        return "unexpected input; expected one of " + ", ".join(exp)
    return "unexpected input"


def _err(node, message, text=""):
    meta = getattr(node, "meta", None)
    if isinstance(node, Token):
        return ParseError(message, node.line or 0, node.column or 0, text or str(node))
    line = getattr(meta, "line", 0) if meta is not None and not meta.empty else 0
    col = getattr(meta, "column", 0) if meta is not None and not meta.empty else 0
    return ParseError(message, line, col, text)


class _Builder:
    def __init__(self):
        self.scopes: list[dict] = []
        self.depth = 0

    def enter(self, node, what):
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise _err(node, f"{what} nested more than {MAX_NESTING} levels deep")

    def leave(self):
        self.depth -= 1

    # -- scoping ------------------------------------------------------------------
    def lookup(self, tok: Token):
        name = str(tok)
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        raise _err(tok, f"use of undefined value {name} (use before definition?)")

    def define(self, tok: Token, value):
        name = str(tok)
        for scope in self.scopes:
            if name in scope:
                raise _err(tok, f"redefinition of {name}")
        self.scopes[-1][name] = value
        value.name_hint = _hint(name)

    # -- structure ----------------------------------------------------------------
    def module(self, tree: Tree) -> Module:
        m = Module()
        for f in tree.children:
            m.add(self.func(f))
        return m

    def func(self, t: Tree) -> FuncOp:
        name_tok = t.children[0]
        params, rets, attrs, ops = [], [], {}, []
        for c in t.children[1:]:
            if isinstance(c, Tree) and c.data == "params":
                params = self.params(c)
            elif isinstance(c, Tree) and c.data == "ret_types":
                rets = [self.type(x) for x in c.children if x is not None]
            elif isinstance(c, Tree) and c.data == "attrdict":
                attrs = self.attrdict(c)
            else:
                ops.append(c)
        func = FuncOp(str(name_tok), [ty for _, ty in params], rets, attrs=attrs)
        self.scopes = [{}]
        for (tok, _), arg in zip(params, func.args):
            self.define(tok, arg)
        for o in ops:
            func.body.append(self.op(o))
        self.scopes = []
        return func

    def params(self, t: Tree):
        return [(p.children[0], self.type(p.children[1])) for p in t.children]

    def op(self, t: Tree):
        results, name_tok, operands, attrs, regions, rtypes = [], None, [], {}, [], []
        for c in t.children:
            if isinstance(c, Token) and c.type == "IDENT":
                name_tok = c
            elif c.data == "values":
                if name_tok is None:
                    results = list(c.children)
                else:
                    operands = [self.lookup(v) for v in c.children]
            elif c.data == "attrdict":
                attrs = self.attrdict(c)
            elif c.data == "regions":
                regions = c.children
            elif c.data == "result_types":
                rtypes = [self.type(x) for x in c.children]
        cls = OPS.get(str(name_tok))
        if cls is None or cls is FuncOp:
            raise _err(name_tok, f"unknown op '{name_tok}'")
        if len(results) != len(rtypes):
            raise _err(name_tok, f"'{name_tok}' names {len(results)} result(s) but gives "
                                 f"{len(rtypes)} result type(s)")
        op = object.__new__(cls)
        from ninfer_ir.ir import Operation
        Operation.__init__(op, operands, rtypes, attrs)
        for rt in regions:
            op.add_region(self.region(rt))
        for tok, r in zip(results, op.results):
            self.define(tok, r)
        return op

    def region(self, t: Tree) -> Region:
        self.enter(t, "region")
        params = []
        ops = []
        for c in t.children:
            if isinstance(c, Tree) and c.data == "params":
                params = self.params(c)
            else:
                ops.append(c)
        block = Block([ty for _, ty in params])
        self.scopes.append({})
        for (tok, _), arg in zip(params, block.args):
            self.define(tok, arg)
        for o in ops:
            block.append(self.op(o))
        self.scopes.pop()
        self.leave()
        return Region([block])

    # -- attributes and types ------------------------------------------------
    def attrdict(self, t: Tree) -> dict:
        out = {}
        for a in t.children:
            key = str(a.children[0])
            if key in out:
                raise _err(a.children[0], f"duplicate attribute '{key}'")
            out[key] = self.attrval(a.children[1])
        return out

    def attrval(self, t: Tree):
        kind = t.data
        if kind == "int_attr":
            return _int(t.children[0])
        if kind == "float_attr":
            return float(t.children[0])
        if kind == "neginf_attr":
            return float("-inf")
        if kind == "str_attr":
            return _unescape(str(t.children[0])[1:-1])
        if kind == "schema_attr":
            tok = t.children[0]
            schema = SCHEMAS.get(str(tok))
            if schema is None:
                from ninfer_ir import formats
                if str(tok) in formats.names():
                    return formats.get(str(tok))
                raise _err(tok, f"unknown quant schema or format #{tok}; the quant schemas "
                                f"are {', '.join('#' + n for n in SCHEMAS)}")
            return schema
        if kind == "dense_attr":
            return self.dense(t)
        if kind == "list_attr":
            self.enter(t, "list attribute")
            out = [self.attrval(c) for c in t.children]
            self.leave()
            return out
        ty = t.children[0]
        # a bare identifier: a keyword constant or a scalar dtype
        if len(ty.children) == 1:
            word = str(ty.children[0])
            if word in ("true", "false"):
                return word == "true"
            if word == "inf":
                return float("inf")
            if word == "nan":
                return float("nan")
        return self.type(ty)

    def dense(self, t: Tree) -> Dense:
        """``dense<f32[2,3] [[...], [...]]>`` or ``dense<f32[2,3] "hex bytes">``."""
        tag, dtype_tok, *dims, body = t.children
        if str(tag) != "dense":
            raise _err(tag, f"unknown attribute '{tag}<...>'; the tagged attribute is dense<...>")
        dtype = SCALARS.get(str(dtype_tok))
        if dtype is None or dtype is index:
            raise _err(dtype_tok, f"'{dtype_tok}' is not an element type of dense data")
        shape = []
        for d in dims:
            tok = d.children[0]
            if tok.type != "INT" or _int(tok) < 0:
                raise _err(tok, "dense data has a static shape (non-negative integers)")
            shape.append(_int(tok))
        value = self.attrval(body)
        try:
            if isinstance(value, str):
                return Dense.from_hex(dtype, shape, value)
            return Dense.from_values(dtype, shape, value)
        except DenseError as e:
            raise _err(tag, f"bad dense data: {e}") from None

    def type(self, t: Tree):
        head = t.children[0]
        word = str(head)
        if len(t.children) == 1:
            if word in SCALARS:
                return SCALARS[word]
            raise _err(head, f"unknown type '{word}'")
        kinds = {"tensor": TensorType, "buffer": BufferType}
        if word not in kinds:
            raise _err(head, f"unknown shaped type '{word}'; use tensor<…> or buffer<…>")
        dtype_tok = t.children[1]
        if str(dtype_tok) not in SCALARS:
            raise _err(dtype_tok, f"unknown element type '{dtype_tok}'")
        dims = []
        for d in t.children[2:]:
            tok = d.children[0]
            if tok.type == "INT":
                if _int(tok) < 0:
                    raise _err(tok, "dimensions cannot be negative")
                dims.append(_int(tok))
            elif tok.type == "QMARK":
                dims.append(None)
            else:
                dims.append(str(tok))
        return kinds[word](SCALARS[str(dtype_tok)], dims)


def _int(tok: Token) -> int:
    digits = str(tok).lstrip("-")
    if len(digits) > MAX_INT_DIGITS:
        raise _err(tok, f"integer literal of {len(digits)} digits is too long "
                        f"(at most {MAX_INT_DIGITS})", str(tok)[:16] + "...")
    return int(str(tok))


def _hint(name: str):
    h = name[1:]
    return None if h[:1].isdigit() else h


def _unescape(s: str) -> str:
    if "\\" not in s:
        return s
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            nxt = s[i + 1]
            out.append({"n": "\n", "t": "\t"}.get(nxt, nxt))
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)
