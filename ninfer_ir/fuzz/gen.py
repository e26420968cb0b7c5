"""A seeded generator of random valid kernels, written as DSL source.

``generate(seed)`` gives a :class:`Program`: a list of independent top-level statements,
each with the parameters it uses, so a failure can be reduced by dropping statements
(``Program.source(keep)``). The source is loaded from a real file, so ``@I.kernel`` reads
it as it reads a user's module: the frontend, the verifier, the printer and the parser
(round trip) and every backend see the program.

Covered: every dtype (f16, bf16 through casts, f32, f64, signed and unsigned ints, bool,
index arithmetic), casts and bitcasts, select, minimum, maximum, abs, every operator,
sequential and parallel loops with start and step, loop-carried values, ``if`` with merged
names, ``assert``, views with offsets, strides, rows and columns, whole-tensor elementwise
expressions and copies, reductions of every kind in every order (seq, tree, chunk<K>,
chunk<K>/tree), ``I.dot``, ``I.quantize`` (q8_k) and ``I.quantized_dot`` (q4_k x q8_k), and
``I.decode`` of every grouped format; returned values. Special values (NaN, signed zeros,
infinities, subnormals, integer extremes) come from the inputs (``ninfer_ir.fuzz.inputs``).

``EXCLUDED`` names the constructs the generator leaves out and why.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

# Constructs the generator leaves out by default, each with the reason: a defect in it is
# being fixed separately. ``generate(seed, known=True)`` (``scripts/fuzz.py --known``)
# emits them too, to show the fuzzer still finds those defects.
EXCLUDED = {
    "alias": "a tensor argument aliasing a buffer argument: the CPU launcher snapshots "
             "tensor arguments, the interpreter does not (the generator always passes "
             "distinct arrays, even with known=True)",
    "aug_buffer": "augmented assignment to a whole buffer (buf += t) rebinds the name and "
                  "stores nothing",
    "decode_and_quantize": "a Q8_K quantize (into a value or a buffer) and a grouped decode "
                           "in one kernel: the AVX-512 decode code generator crashes",
    "static_slice_loop": "static-length slices whose bounds canonicalize to constants "
                         "inside a loop: canonicalize builds IR that does not verify",
    "tensor_cast_twice": "one whole-tensor cast used twice (t = I.cast(x, ...) + "
                         "I.cast(x, ...), the same value after CSE) in a temporary read element "
                         "by element: lower says 'this tensor has no buffer'",
    "bounds_messages": "CPU bounds-check messages differ from the interpreter's: errors are "
                       "compared by type only, never by message",
}

FLOATS = ("f16", "f32", "f64")
SINTS = ("i8", "i16", "i32", "i64")
UINTS = ("u8", "u16", "u32", "u64")
INTS = SINTS + UINTS
NUMERIC = FLOATS + INTS
STORABLE = NUMERIC + ("bool", "bf16")
WIDTH = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64, "i8": 8, "i16": 16, "i32": 32,
         "i64": 64, "u8": 8, "u16": 16, "u32": 32, "u64": 64}
GROUPED = ("q2_g64_fp16", "q4_g64_fp16", "q5_g64_fp16", "q6_g64_fp16", "q8_g32_fp16",
           "t2_g128_fp16")
ORDERS_BASE = ("seq", "tree")
CHUNKS = (1, 2, 3, 4, 8, 16, 32)


def random_order(r: random.Random) -> str:
    k = r.choice(CHUNKS)
    return r.choice(ORDERS_BASE + (f"chunk<{k}>", f"chunk<{k}>/tree"))


@dataclass
class Param:
    name: str
    dtype: str                 # scalar dtype name
    shape: tuple | None        # None: a scalar parameter; dims are ints or symbol names
    buffer: bool = False
    fill: str = "random"       # random | q4k | q8src | packed:FMT | scales:FMT

    def annotation(self) -> str:
        dt = "I.bool_" if self.dtype == "bool" else f"I.{self.dtype}"
        if self.shape is None:
            return dt
        dims = ", ".join(repr(d) for d in self.shape)
        return f"I.{'Buffer' if self.buffer else 'Tensor'}[{dt}, {dims}]"


@dataclass
class Stmt:
    kind: str
    params: list               # Param names this statement uses
    lines: list                # source lines at kernel-body level (no indent)
    returns: list = field(default_factory=list)   # (name, dtype)


@dataclass
class Program:
    seed: int
    sizes: dict                # symbol -> size
    params: dict               # name -> Param (every parameter any statement uses)
    stmts: list
    formats: dict              # module-level name -> grouped format name

    def kept(self, keep=None) -> list:
        return [s for k, s in enumerate(self.stmts) if keep is None or k in keep]

    def param_list(self, keep=None) -> list:
        seen = []
        for s in self.kept(keep):
            for p in s.params:
                if p not in seen:
                    seen.append(p)
        return [self.params[p] for p in seen]

    def source(self, keep=None) -> str:
        stmts = self.kept(keep)
        used = "\n".join(line for s in stmts for line in s.lines)
        out = ["import ninfer_ir as I", ""]
        out += [f"{n} = I.formats.get({f!r})" for n, f in self.formats.items()
                if n in used]
        sig = ",\n        ".join(f"{p.name}: {p.annotation()}" for p in self.param_list(keep))
        out += ["", "", "@I.kernel", f"def kern({sig}):"]
        body = [line for s in stmts for line in s.lines]
        rets = [name for s in stmts for name, _ in s.returns]
        if rets:
            body.append("return " + ", ".join(rets))
        if not body:
            body = ["pass"]
        out += ["    " + line for line in body]
        return "\n".join(out) + "\n"


class _Gen:
    def __init__(self, seed: int, known: bool = False):
        self.known = known
        self.r = random.Random(seed)
        self.seed = seed
        self.params: dict = {}
        self.formats: dict = {}
        self.counter = 0
        self.casts: set = set()         # (tensor, dtype) of the whole-tensor casts made
        r = self.r
        big = r.random() < 0.25          # sizes that reach the vector and row-block paths
        self.sizes = {"N": r.choice([0, 1, 1, 2, 3, 5, 7, 8, 9, 13, 17, 33]
                                    + ([64, 100, 257] if big else [])),
                      "M": r.choice([1, 2, 3, 4] + ([16, 17] if big else [])),
                      "G": r.choice([1, 2, 3]),
                      "R": r.choice([1, 2, 3, 5] + ([16, 33] if big else [])),
                      "K": r.choice([1, 7, 64, 65, 127, 128, 130, 200, 256, 300]
                                    + ([512, 1000] if big else []))}

    def ok(self, construct: str) -> bool:
        return self.known or construct not in EXCLUDED

    # -- names and parameters ----------------------------------------------------------
    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def tensor(self, dtype: str, shape: tuple, uses: list, reuse: float = 0.7,
               buffers: bool = True) -> str:
        """Something to read of ``dtype``/``shape``: a buffer an earlier statement wrote
        (``buffers``), an existing input tensor or a new one."""
        written = [p.name for p in self.params.values() if p.buffer and p.shape == shape
                   and p.dtype == dtype and p.name not in uses]
        if buffers and written and self.r.random() < 0.3:
            name = self.r.choice(written)
            uses.append(name)
            return name
        same = [p.name for p in self.params.values() if not p.buffer and p.shape == shape
                and p.dtype == dtype and p.fill == "random"]
        if same and self.r.random() < reuse:
            name = self.r.choice(same)
        else:
            name = self.fresh("x")
            self.params[name] = Param(name, dtype, shape)
        if name not in uses:
            uses.append(name)
        return name

    def buffer(self, dtype: str, shape: tuple, uses: list) -> str:
        name = self.fresh("o")
        self.params[name] = Param(name, dtype, shape, buffer=True)
        uses.append(name)
        return name

    def scalar_param(self, dtype: str, uses: list) -> str:
        name = self.fresh("s")
        self.params[name] = Param(name, dtype, None)
        uses.append(name)
        return name

    # -- expressions -------------------------------------------------------------------
    def const(self, t: str) -> str:
        r = self.r
        if t in FLOATS:
            return r.choice(["0.5", "-2.0", "3.0", "0.0", "-0.0", "1.5", "0.125", "-1.0",
                             "7.0", "0.1"])
        if t == "bool":
            return r.choice(["True", "False"])
        if t in UINTS:
            return str(r.choice([0, 1, 2, 3, 5, 7, 8, 15]))
        return str(r.choice([0, 1, 2, 3, -1, -3, 7, -8]))

    def expr(self, t: str, env, depth: int) -> str:
        """A scalar expression of dtype ``t`` (never a bare Python constant)."""
        r = self.r
        if t == "bf16":
            k = r.random()
            if k < 0.4:
                return env.load("bf16")
            if k < 0.8:
                return f"I.cast({self.expr(r.choice(FLOATS + ('i32',)), env, depth - 1)}, I.bf16)"
            return f"I.bitcast({self.expr(r.choice(['u16', 'i16']), env, depth - 1)}, I.bf16)"
        if depth <= 0 or r.random() < 0.25:
            return self.leaf(t, env)
        k = r.random()
        if k < 0.12:                                            # cast from any dtype
            src = r.choice(STORABLE + ("index",))
            if src == "index":
                return f"I.cast({env.index_expr()}, I.{dt(t)})"
            return f"I.cast({self.expr(src, env, depth - 1)}, I.{dt(t)})"
        if k < 0.18 and t != "bool":                            # bitcast from the same width
            partners = [s for s, w in WIDTH.items() if w == WIDTH[t] and s != t]
            if partners:
                return f"I.bitcast({self.expr(r.choice(partners), env, depth - 1)}, I.{t})"
        if k < 0.28:                                            # select
            c = self.expr("bool", env, depth - 1)
            a, b = self.expr(t, env, depth - 1), self.expr(t, env, depth - 1)
            if r.random() < 0.5:
                return f"I.select({c}, {a}, {b})"
            return f"({a} if {c} else {b})"
        if t == "bool":
            return self.bool_expr(env, depth)
        a = self.expr(t, env, depth - 1)
        b = self.operand(t, env, depth - 1)
        if k < 0.36:
            fn = r.choice(["I.minimum", "I.maximum"])
            return f"{fn}({a}, {self.expr(t, env, depth - 1)})"
        if k < 0.42:
            return f"I.abs({a})"
        if k < 0.46:
            return f"(-{a})"
        ops = ["+", "-", "*"]
        if t in FLOATS:
            ops += ["/", "+", "*", "%"]
        else:
            ops += ["//", "%", "&", "|", "^", "<<", ">>"]
            if r.random() < 0.1:
                return f"(~{a})"
        return f"({a} {r.choice(ops)} {b})"

    def operand(self, t: str, env, depth: int) -> str:
        if self.r.random() < 0.3:
            return self.const(t)
        return self.expr(t, env, depth)

    def bool_expr(self, env, depth: int) -> str:
        r = self.r
        k = r.random()
        if k < 0.6:
            s = r.choice(NUMERIC)
            pred = r.choice(["==", "!=", "<", "<=", ">", ">="])
            return f"({self.expr(s, env, depth - 1)} {pred} {self.operand(s, env, depth - 1)})"
        if k < 0.85:
            op = r.choice(["and", "or"])
            return f"({self.expr('bool', env, depth - 1)} {op} {self.expr('bool', env, depth - 1)})"
        return f"(not {self.expr('bool', env, depth - 1)})"

    def leaf(self, t: str, env) -> str:
        r = self.r
        k = r.random()
        if k < 0.1 and env.carried.get(t):
            return r.choice(env.carried[t])
        if k < 0.15 and t != "bool":
            return f"I.cast({env.index_expr()}, I.{dt(t)})"
        if k < 0.2:
            return self.scalar_param(t, env.uses)
        return env.load(t)

    # -- statements --------------------------------------------------------------------
    def statement(self) -> Stmt:
        kinds = [("elementwise", 5), ("nested", 2), ("carried", 4), ("branchy", 3),
                 ("reduce", 5), ("dot", 3), ("rows", 2), ("whole", 4), ("copy", 2),
                 ("quantized", 1), ("decode", 2), ("assert", 1), ("static", 3),
                 ("temp", 3), ("gemm", 2), ("window", 2), ("gather", 1), ("rows2d", 1)]
        kinds += [(k, 1) for k in KNOWN_STATEMENTS if self.ok(k)]
        kind = self.r.choices([k for k, _ in kinds], [w for _, w in kinds])[0]
        return getattr(self, "st_" + kind)()

    def loop_header(self, var: str, bound: str) -> str:
        r = self.r
        kw = "I.prange" if r.random() < 0.2 else r.choice(["I.range", "range"])
        start, step = r.choice([(None, None), (None, None), ("1", None), ("0", "2"),
                                ("2", "3")])
        args = bound if start is None else f"{start}, {bound}" + (f", {step}" if step else "")
        return f"for {var} in {kw}({args}):", kw == "I.prange"

    def st_elementwise(self) -> Stmt:
        uses, r = [], self.r
        t = r.choice(STORABLE)
        o = self.buffer(t, ("N",), uses)
        i = self.fresh("i")
        env = Env(self, uses, {("N",): i})
        head, _ = self.loop_header(i, f"{o}.shape[0]")
        lines = [head]
        if r.random() < 0.4:                                     # a local name first
            u = r.choice(NUMERIC)
            v = self.fresh("v")
            lines.append(f"    {v} = {self.expr(u, env, 2)}")
            env.carried.setdefault(u, []).append(v)
        lines.append(f"    {o}[{i}] = {self.expr(t, env, r.randint(1, 4))}")
        return Stmt("elementwise", uses, lines)

    def st_nested(self) -> Stmt:
        uses, r = [], self.r
        t = r.choice(STORABLE)
        o = self.buffer(t, ("M", "N"), uses)
        i, j = self.fresh("i"), self.fresh("j")
        env = Env(self, uses, {("N",): j, ("M",): i, ("M", "N"): f"{i}, {j}"})
        h1, _ = self.loop_header(i, f"{o}.shape[0]")
        h2, _ = self.loop_header(j, f"{o}.shape[1]")
        return Stmt("nested", uses, [h1, "    " + h2,
                                     f"        {o}[{i}, {j}] = {self.expr(t, env, r.randint(1, 4))}"])

    def st_carried(self) -> Stmt:
        uses, r = [], self.r
        t = r.choice(NUMERIC)
        acc, i = self.fresh("acc"), self.fresh("i")
        env = Env(self, uses, {("N",): i})
        env.carried[t] = [acc]
        bound = self.tensor(r.choice(NUMERIC), ("N",), uses)
        head, _ = self.loop_header(i, f"{bound}.shape[0]")
        head = head.replace("I.prange", "I.range")               # a parallel loop cannot carry
        lines = [f"{acc}: I.{t} = {self.const(t)}", head,
                 f"    {acc} = {self.expr(t, env, r.randint(1, 3))}"]
        if r.random() < 0.5:
            lines.append(f"    if {self.expr('bool', env, 2)}:")
            lines.append(f"        {acc} = {self.expr(t, env, 2)}")
        return self.result(Stmt("carried", uses, lines), acc, t)

    def result(self, st: Stmt, name: str, t: str) -> Stmt:
        if self.r.random() < 0.5:
            st.returns.append((name, t))
        else:
            o = self.buffer(t, (1,), st.params)
            st.lines.append(f"{o}[0] = {name}")
        return st

    def st_branchy(self) -> Stmt:
        uses, r = [], self.r
        t = r.choice(NUMERIC)
        o = self.buffer(t, ("N",), uses)
        i, v = self.fresh("i"), self.fresh("v")
        env = Env(self, uses, {("N",): i})
        head, _ = self.loop_header(i, f"{o}.shape[0]")
        lines = [head, f"    {v} = {self.expr(t, env, 2)}",
                 f"    if {self.expr('bool', env, 2)}:",
                 f"        {v} = {self.expr(t, env, 2)}"]
        if r.random() < 0.6:
            lines += ["    else:", f"        {v} = {self.expr(t, env, 2)}"]
            if r.random() < 0.5:
                lines += [f"        if {self.expr('bool', env, 1)}:",
                          f"            {v} = {self.expr(t, env, 1)}"]
        lines.append(f"    {o}[{i}] = {v}")
        return Stmt("branchy", uses, lines)

    def view1d(self, t: str, uses: list) -> tuple:
        """(1-D view expression of dtype t, its length as a source expression)."""
        r = self.r
        k = r.random()
        if k < 0.3:
            x = self.tensor(t, ("N",), uses)
            choice = r.choice(["whole", "from", "step"])
            if choice == "whole":
                return x, f"{x}.shape[0]"
            if choice == "from":
                return f"{x}[1:{x}.shape[0]]", None
            return f"{x}[0:{x}.shape[0]:2]", None
        if k < 0.6:
            s = r.choice([1, 3, 4, 7, 8, 16, 33])
            x = self.tensor(t, (s,), uses)
            a = r.randint(0, s - 1)
            step = r.choice([1, 1, 2, 3])
            b = r.randint(a + 1, s)
            return f"{x}[{a}:{b}:{step}]" if step > 1 else f"{x}[{a}:{b}]", None
        m = self.tensor(t, ("M", "N"), uses)
        return (f"{m}[0]", None) if r.random() < 0.5 else (f"{m}[:, 0]", None)

    def st_reduce(self) -> Stmt:
        uses, r = [], self.r
        t = r.choice(FLOATS + INTS)
        if r.random() < 0.3:
            view = self.tensor_expr(t, ("N",), uses, 2)
        else:
            view, _ = self.view1d(t, uses)
        kind = r.choice(["add", "mul", "min", "max"])
        order = random_order(r) if t in FLOATS else "seq"
        if r.random() < 0.4:
            fn = {"add": "I.sum", "mul": "I.prod", "min": "I.min", "max": "I.max"}[kind]
            call = f"{fn}({view}, order={order!r})" if kind in ("add", "mul") else f"{fn}({view})"
        else:
            call = f"I.reduce({view}, kind={kind!r}, order={order!r})"
        name = self.fresh("red")
        lines = [f"{name} = {call}"]
        if r.random() < 0.3:                                   # use it in arithmetic
            name2 = self.fresh("red")
            lines.append(f"{name2} = {name} + {name}")
            name = name2
        return self.result(Stmt("reduce", uses, lines), name, t)

    def st_dot(self) -> Stmt:
        uses, r = [], self.r
        t = r.choice(FLOATS)
        order = random_order(r)
        k = r.random()
        if k < 0.4:
            va = self.tensor_expr(t, ("N",), uses, r.choice([0, 0, 1, 2]))
            vb = self.tensor_expr(t, ("N",), uses, r.choice([0, 0, 1]))
        elif k < 0.7:
            s = r.choice([4, 8, 16, 33])
            a = self.tensor(t, (s,), uses)
            n = r.randint(1, s)
            o1, o2 = r.randint(0, s - n), r.randint(0, s - n)
            va, vb = f"{a}[{o1}:{o1 + n}]", f"{a}[{o2}:{o2 + n}]"
        else:
            m = self.tensor(t, ("M", "N"), uses)
            v = self.tensor(t, ("N",), uses)
            o = self.buffer(t, ("M",), uses)
            i = self.fresh("i")
            head, _ = self.loop_header(i, f"{m}.shape[0]")
            return Stmt("dot", uses, [head, f"    {o}[{i}] = I.dot({m}[{i}], {v}, order={order!r})"])
        name = self.fresh("d")
        return self.result(Stmt("dot", uses, [f"{name} = I.dot({va}, {vb}, order={order!r})"]),
                           name, t)

    def st_rows(self) -> Stmt:
        uses, r = [], self.r
        t = r.choice(FLOATS + INTS)
        m = self.tensor(t, ("M", "N"), uses)
        o = self.buffer(t, ("M",), uses)
        kind = r.choice(["add", "mul", "min", "max"])
        order = random_order(r) if t in FLOATS else "seq"
        return Stmt("rows", uses, [f"{o}[:] = I.reduce({m}, kind={kind!r}, order={order!r})"])

    def tensor_expr(self, t: str, shape: tuple, uses: list, depth: int) -> str:
        r = self.r
        if depth <= 0 or r.random() < 0.3:
            if r.random() < 0.3 and t in FLOATS + INTS:
                src = r.choice(FLOATS + INTS)
                x = self.tensor(src, shape, uses, buffers=self.ok('cast_buffer'))
                if (x, t) not in self.casts or self.ok("tensor_cast_twice"):
                    self.casts.add((x, t))
                    return f"I.cast({x}, I.{t})"
            return self.tensor(t, shape, uses)
        a = self.tensor_expr(t, shape, uses, depth - 1)
        k = r.random()
        if k < 0.15:
            return f"I.abs({a})"
        if k < 0.3:
            return f"{r.choice(['I.minimum', 'I.maximum'])}({a}, {self.tensor_expr(t, shape, uses, depth - 1)})"
        if k < 0.4:
            return f"(-{a})"
        ops = ["+", "-", "*", "%"] + (["/"] if t in FLOATS else ["&", "|", "^", "//"])
        b = self.const(t) if r.random() < 0.4 else self.tensor_expr(t, shape, uses, depth - 1)
        return f"({a} {r.choice(ops)} {b})"

    def st_whole(self) -> Stmt:
        uses, r = [], self.r
        t = r.choice(FLOATS + INTS)
        if r.random() < 0.7:
            o = self.buffer(t, ("N",), uses)
            return Stmt("whole", uses, [f"{o}[:] = {self.tensor_expr(t, ('N',), uses, 3)}"])
        o = self.buffer(t, ("M", "N"), uses)
        tgt = r.choice(["[:]", "[:, :]"])
        return Stmt("whole", uses, [f"{o}{tgt} = {self.tensor_expr(t, ('M', 'N'), uses, 2)}"])

    def st_copy(self) -> Stmt:
        """Views with offsets and strides on both sides (input into a buffer)."""
        uses, r = [], self.r
        t = r.choice(STORABLE)
        s = r.choice([4, 6, 8, 9, 16])
        x = self.tensor(t, (s,), uses)
        n = r.randint(1, s // 2)
        o = self.buffer(t, (2 * s,), uses)
        step_src, step_dst = r.choice([1, 2]), r.choice([1, 2, 3])
        a = r.randint(0, s - 1 - (n - 1) * step_src) if (n - 1) * step_src < s else 0
        n = min(n, (s - a - 1) // step_src + 1)
        b = r.randint(0, 2 * s - 1 - (n - 1) * step_dst)
        src = f"{x}[{a}:{a + (n - 1) * step_src + 1}:{step_src}]"
        dst = f"{o}[{b}:{b + (n - 1) * step_dst + 1}:{step_dst}]"
        lines = [f"{dst} = {src}"]
        if r.random() < 0.5:                                   # 2-D: rows and columns
            m = self.tensor(t, ("M", "N"), uses)
            o2 = self.buffer(t, ("N", "M"), uses)
            lines.append(f"{o2}[0] = {m}[:, 0]" if r.random() < 0.5 else f"{o2}[:, 0] = {m}[0]")
        return Stmt("copy", uses, lines)

    def st_temp(self) -> Stmt:
        """A whole-tensor temporary read element-wise, through views, and reduced."""
        uses, r = [], self.r
        t = r.choice(FLOATS + INTS)
        tmp, i = self.fresh("t"), self.fresh("i")
        o = self.buffer(t, ("N",), uses)
        lines = [f"{tmp} = {self.tensor_expr(t, ('N',), uses, 2)}"]
        env = Env(self, uses, {("N",): i})
        head, _ = self.loop_header(i, f"{tmp}.shape[0]")
        lines += [head, f"    {o}[{i}] = {tmp}[{i}] {r.choice(['+', '*', '-'])} "
                        f"{self.expr(t, env, 1)}"]
        if r.random() < 0.5:
            red = self.fresh("red")
            order = random_order(r) if t in FLOATS else "seq"
            view = r.choice([tmp, f"{tmp}[1:{tmp}.shape[0]]", f"{tmp}[0:{tmp}.shape[0]:2]"])
            lines.append(f"{red} = I.reduce({view}, kind={r.choice(['add', 'max', 'min', 'mul'])!r}, "
                         f"order={order!r})")
            return self.result(Stmt("temp", uses, lines), red, t)
        return Stmt("temp", uses, lines)

    def st_gemm(self) -> Stmt:
        """Rows times rows, operands possibly computed (casts, scaling) inside the loops."""
        uses, r = [], self.r
        t = r.choice(FLOATS)
        a = self.tensor(r.choice(FLOATS), ("M", "N"), uses)
        b = self.tensor(r.choice(FLOATS), ("R", "N"), uses)
        y = self.buffer(t, ("M", "R"), uses)
        m, n = self.fresh("m"), self.fresh("n")

        def operand(x, i):
            dtype = self.params[x].dtype
            v = f"{x}[{i}]" if dtype == t else f"I.cast({x}[{i}], I.{t})"
            return v if r.random() < 0.6 else f"({v} * {self.const(t)})"
        h1, _ = self.loop_header(m, f"{a}.shape[0]")
        h2, _ = self.loop_header(n, f"{b}.shape[0]")
        return Stmt("gemm", uses, [h1, "    " + h2, f"        {y}[{m}, {n}] = I.dot("
                                   f"{operand(a, m)}, {operand(b, n)}, order={random_order(r)!r})"])

    def st_window(self) -> Stmt:
        """Static-length windows x[j:j + C] at a moving offset."""
        uses, r = [], self.r
        t = r.choice(FLOATS + INTS)
        c = r.choice([1, 2, 3, 4, 8])
        x = self.tensor(t, ("N",), uses)
        o = self.buffer(t, ("N",), uses)
        i = self.fresh("i")
        kind = r.choice(["add", "mul", "min", "max"])
        order = random_order(r) if t in FLOATS else "seq"
        return Stmt("window", uses, [f"for {i} in I.range({x}.shape[0] - {c - 1}):",
                                     f"    {o}[{i}] = I.reduce({x}[{i}:{i} + {c}], kind={kind!r}, "
                                     f"order={order!r})"])

    def st_quantized(self) -> Stmt:
        uses, r = [], self.r
        if self.formats and not self.ok("decode_and_quantize"):
            return self.st_dot()
        x = self.fresh("xq")
        self.params[x] = Param(x, "f32", ("G", 256), fill="q8src")
        w = self.fresh("w")
        self.params[w] = Param(w, "u8", ("R", "G", 144), fill="q4k")
        uses += [x, w]
        y = self.buffer("f32", ("R",), uses)
        q, n = self.fresh("q"), self.fresh("n")
        order = random_order(r)
        lines = []
        if r.random() < 0.3:
            g = self.sizes["G"] if self.ok("quantize_static_count") and r.random() < 0.5 else "G"
            qb = self.buffer("u8", (g, 292), uses)
            lines += [f"{qb}[:] = I.quantize({x}, format=I.quant.q8_k)",
                      f"{q} = {qb}" if g == "G" else f"{q} = I.quantize({x}, format=I.quant.q8_k)"]
        else:
            lines.append(f"{q} = I.quantize({x}, format=I.quant.q8_k)")
        head, _ = self.loop_header(n, f"{w}.shape[0]")
        lines += [head, f"    {y}[{n}] = I.quantized_dot({w}[{n}], {q}, lhs_format=I.quant.q4_k, "
                  f"rhs_format=I.quant.q8_k, acc_dtype=I.f32, order={order!r})"]
        return Stmt("quantized", uses, lines)

    def st_decode(self) -> Stmt:
        uses, r = [], self.r
        if any(p.fill == "q8src" for p in self.params.values()) and \
                not self.ok("decode_and_quantize"):
            return self.st_dot()
        fmt = r.choice(GROUPED)
        fname = "F_" + fmt.split("_")[0].upper()
        self.formats[fname] = fmt
        p, s = self.fresh("p"), self.fresh("sc")
        self.params[p] = Param(p, "u8", ("R", "P" + fname), fill=f"packed:{fmt}")
        self.params[s] = Param(s, "f16", ("R", "S" + fname), fill=f"scales:{fmt}")
        uses += [p, s]
        v = self.tensor("f32", ("K",), uses)
        n = self.fresh("n")
        dec = f"I.decode({p}[{n}], {s}[{n}], format={fname}, k={v}.shape[0])"
        head, _ = self.loop_header(n, f"{p}.shape[0]")
        k = r.random()
        if k < 0.5:
            y = self.buffer("f32", ("R",), uses)
            body = f"{y}[{n}] = I.dot({dec}, {v}, order={random_order(r)!r})"
        elif k < 0.75:
            y = self.buffer("f32", ("R",), uses)
            body = f"{y}[{n}] = I.sum({dec}, order={random_order(r)!r})"
        elif k < 0.85:
            y = self.buffer("f32", ("R",), uses)
            a = r.randint(0, 3)
            body = (f"{y}[{n}] = I.reduce({dec}[{a}:{v}.shape[0]:{r.choice([1, 2, 3])}], "
                    f"kind={r.choice(['add', 'max', 'min'])!r}, order={random_order(r)!r})")
        elif k < 0.92:
            y = self.buffer("f32", ("R", "K"), uses)
            body = f"{y}[{n}, :] = {dec} * {v}"
        else:
            y = self.buffer("f32", ("R", "K"), uses)
            body = f"{y}[{n}, :] = {dec}"
        return Stmt("decode", uses, [head, "    " + body])

    def st_gather(self) -> Stmt:
        """Reads at indices from the data: out-of-range ones are typed errors everywhere."""
        uses, r = [], self.r
        t = r.choice(STORABLE)
        x = self.tensor(t, ("N",), uses)
        idx = self.tensor(r.choice(["i32", "i64", "u8"]), ("M",), uses)
        o = self.buffer(t, ("M",), uses)
        i, k = self.fresh("i"), self.fresh("k")
        clamp = r.random() < 0.7
        lines = [f"for {i} in I.range({idx}.shape[0]):",
                 f"    {k} = I.cast({idx}[{i}], I.index)"]
        if clamp:       # in range unless the data says otherwise: % of the size
            lines.append(f"    {k} = I.select({k} < 0, 0, {k}) % I.select({x}.shape[0] > 0, "
                         f"{x}.shape[0], 1)")
        lines.append(f"    {o}[{i}] = {x}[{k}]")
        return Stmt("gather", uses, lines)

    def st_rows2d(self) -> Stmt:
        """Row reductions of strided 2-D views."""
        uses, r = [], self.r
        t = r.choice(FLOATS + INTS)
        m = self.tensor(t, ("M", "N"), uses)
        o = self.buffer(t, ("M",), uses)
        view = r.choice([f"{m}[:, 1:{m}.shape[1]]", f"{m}[:, 0:{m}.shape[1]:2]",
                         f"{m}[0:{m}.shape[0]]"])
        order = random_order(r) if t in FLOATS else "seq"
        return Stmt("rows2d", uses, [f"{o}[:] = I.reduce({view}, kind="
                                     f"{r.choice(['add', 'mul', 'min', 'max'])!r}, order={order!r})"])

    # -- the statements that only reach defects being fixed separately (EXCLUDED) -------
    def st_aug_buffer(self) -> Stmt:
        uses, r = [], self.r
        t = r.choice(FLOATS + INTS)
        o = self.buffer(t, ("N",), uses)
        return Stmt("aug_buffer", uses, [f"{o} += {self.tensor_expr(t, ('N',), uses, 1)}"])

    def st_overlap_copy(self) -> Stmt:
        uses, r = [], self.r
        t = r.choice(NUMERIC)
        if r.random() < 0.5:
            o = self.buffer(t, (3, 3), uses)
            return Stmt("overlap_copy", uses, [r.choice([f"{o}[1, :] = {o}[:, 2]",
                                                         f"{o}[:, 0] = {o}[2]"])])
        o = self.buffer(t, (8,), uses)
        n, a = r.randint(1, 3), r.randint(1, 2)
        return Stmt("overlap_copy", uses, [f"{o}[0:{2 * n - 1}:2] = {o}[{a}:{a + n}]"])

    def st_static_slice_loop(self) -> Stmt:
        uses, r = [], self.r
        a = self.tensor("f32", (4,), uses)
        o = self.buffer("f32", (1,), uses)
        i = self.fresh("i")
        return Stmt("static_slice_loop", uses, [f"for {i} in range(1):",
                                                f"    {o}[{i}] = I.sum({a}[{i}:3])"])

    def st_minmax_static_loop(self) -> Stmt:
        uses, r = [], self.r
        y = self.buffer("f32", (64,), uses)
        o = self.buffer("f32", ("N",), uses)
        i = self.fresh("i")
        return Stmt("minmax_static_loop", uses, [
            f"for {i} in I.range({o}.shape[0]):",
            f"    {o}[{i}] = {r.choice(['I.min', 'I.max'])}({y}[0:{r.randint(22, 27)}])"])

    def st_assert(self) -> Stmt:
        uses = []
        i = self.fresh("i")
        env = Env(self, uses, {("N",): i})
        x = self.tensor(self.r.choice(NUMERIC), ("N",), uses)
        head, _ = self.loop_header(i, f"{x}.shape[0]")
        cond = f"{self.expr('bool', env, 2)} or ({i} + 1 < {x}.shape[0])"  # only the last i
        return Stmt("assert", uses, [head, f"    assert {cond}, \"generated assert {self.counter}\""])

    def st_static(self) -> Stmt:
        """A loop over a static-size tensor reading with index arithmetic."""
        uses, r = [], self.r
        t = r.choice(STORABLE)
        s = r.choice([1, 2, 4, 5, 8])
        o = self.buffer(t, (s,), uses)
        i = self.fresh("i")
        env = Env(self, uses, {(s,): i, ("N",): None}, static=s)
        lines = [f"for {i} in I.range({s}):",
                 f"    {o}[{s - 1} - {i}] = {self.expr(t, env, r.randint(1, 3))}"]
        return Stmt("static", uses, lines)


KNOWN_STATEMENTS = ("aug_buffer", "overlap_copy", "static_slice_loop", "minmax_static_loop")


def dt(t: str) -> str:
    return "bool_" if t == "bool" else t


class Env:
    """What an expression can read: loads at the current loop indices."""

    def __init__(self, gen: _Gen, uses: list, index: dict, static: int | None = None):
        self.gen, self.uses, self.index, self.static = gen, uses, index, static
        self.carried: dict = {}

    def shapes(self) -> list:
        return [s for s, e in self.index.items() if e is not None]

    def load(self, t: str) -> str:
        r = self.gen.r
        shape = r.choice(self.shapes())
        x = self.gen.tensor(t, shape, self.uses)
        if self.static is not None and r.random() < 0.5:
            i = self.index[shape]
            return f"{x}[({i} * 3 + 1) % {self.static}]"
        return f"{x}[{self.index[shape]}]"

    def index_expr(self) -> str:
        r = self.gen.r
        i = r.choice([e for e in self.index.values() if e is not None]).split(", ")[0]
        return r.choice([i, f"({i} + 1)", f"({i} * 2)", f"({i} // 2)"])


def generate(seed: int, n_stmts: int | None = None, known: bool = False) -> Program:
    """A random valid kernel (deterministic in ``seed``); ``known``: also the constructs
    of ``EXCLUDED``."""
    g = _Gen(seed, known)
    n = n_stmts if n_stmts is not None else g.r.randint(1, 4)
    stmts = [g.statement() for _ in range(n)]
    return Program(seed, g.sizes, g.params, stmts, g.formats)
