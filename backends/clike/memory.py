"""Views and memory for the C-like emitter: ``constant_tensor``, ``dim``, ``subview``,
``load``, ``store``, ``copy``, ``alloc``, ``dealloc``, ``decode``, and the host
expressions of view shapes.

A view is a byte pointer with sizes and byte strides (C expressions); an element's
address is ``ptr + sum(index * stride)``, so views at any offset and with any (even
negative) strides are addressed as they are. Indices and ranges are guarded exactly
as the interpreter checks them (``0 <= i < n``; ``0 <= start <= stop <= n`` and
``step >= 1``), in axis order. A result whose declared type names a static size or
a bound symbol is checked against its run-time size (the interpreter's
``VerifyError``), after which the declared size is used.

``decode`` gives a lazy row (``Decoded``): element ``k`` is computed where it is
read (``load``, ``dot``, ``reduce``, ``copy``) by a per-format helper. A grouped
format's helper is written here, exactly as ``ninfer_ir/numerics/decode.py``: the
``b``-bit little-endian word at stream bits ``[k*b, (k+1)*b)`` (a byte past the row
reads as 0), its signed code, and ``binary32(s32 * binary32(q))`` with ``s32`` the
group's binary16 scale. Every other format's helper is the body that
``ninfer_ir/mathlib/decoders.py``'s ``element`` emits in ``CContext`` (one ``const``
temporary per op, the constant tables as static arrays).
"""
from __future__ import annotations

from ninfer_ir import ops as O
from ninfer_ir.ir import BlockArgument, FuncOp
from ninfer_ir.types import ScalarType, ShapedType, index

from ninfer_ir.mathlib.core import Val
from ninfer_ir.mathlib.decoders import element as decoded_element
from ninfer_ir.numerics.decode import family, signature
from ninfer_ir.types import i64

from .scalars import c_type

__all__ = ["View", "Reg", "Decoded", "element", "host_shape", "host_value", "LOWERINGS"]


class View:
    """A memory view in emitted code: byte pointer, sizes and byte strides."""
    __slots__ = ("ptr", "sizes", "strides", "dtype")

    def __init__(self, ptr, sizes, strides, dtype):
        self.ptr, self.sizes, self.strides, self.dtype = ptr, list(sizes), list(strides), dtype


class Reg:
    """A rank-0 tensor held in a C scalar (the result of dot/reduce/quantized_dot)."""
    __slots__ = ("expr", "dtype")

    def __init__(self, expr, dtype):
        self.expr, self.dtype = expr, dtype


class Decoded:
    """A lazy decoded row: ``sizes`` like a view, elements computed when read by
    ``fn(*args, k)``."""
    __slots__ = ("args", "fn", "sizes", "dtype")

    def __init__(self, args, fn, k, dtype):
        self.args, self.fn, self.sizes, self.dtype = [str(a) for a in args], fn, [k], dtype


def element(e, x, idx) -> str:
    """A C expression for element ``idx`` of a view or decoded row (no bounds check)."""
    if isinstance(x, Decoded):
        return f"{x.fn}({', '.join(x.args)}, {idx[0]})"
    return f"{e.lib.load(x.dtype)}({address(x, idx)})"


def _mul(a: str, b: str) -> str:
    if a == "0" or b == "0":
        return "0"
    if a == "1":
        return b
    if b == "1":
        return a
    if a.isdigit() and b.isdigit():
        return str(int(a) * int(b))
    return f"{a} * {b}"


def address(view: View, idx) -> str:
    terms = [_mul(i, s) for i, s in zip(idx, view.strides)]
    terms = [t for t in terms if t != "0"]
    return " + ".join([view.ptr] + [f"({t})" if " " in t else t for t in terms])


# --- host expressions (sizes the launcher can compute before a launch) ----------------

#: integer ops the launcher evaluates on the host (for sizes)
_HOST_ARITH = (O.AddOp, O.SubOp, O.MulOp, O.DivOp, O.RemOp, O.MinOp, O.MaxOp)


def host_value(v):
    """The host expression of an index/integer scalar, or None."""
    if isinstance(v, BlockArgument):
        if isinstance(v.block.parent_op, FuncOp) and v.type is index:
            return ("arg", v.index)
        return None
    op = v.op
    if isinstance(op, O.ConstantOp) and isinstance(op.attrs.get("value"), int) \
            and op.result.type.is_int:
        return ("const", int(op.attrs["value"]))
    if isinstance(op, O.DimOp):
        shape = host_shape(op.source)
        return shape[op.axis] if shape is not None else None
    if isinstance(op, _HOST_ARITH) and isinstance(v.type, ScalarType) and v.type.is_int:
        a, b = (host_value(x) for x in (op.lhs, op.rhs))
        return None if a is None or b is None else ("bin", op.name, v.type, a, b)
    return None


def host_shape(v):
    """Host expressions of a view's sizes (None where one is not computable)."""
    t = v.type
    if isinstance(v, BlockArgument):
        if not isinstance(v.block.parent_op, FuncOp):
            return None
        return [("const", d) if isinstance(d, int) else ("dim", v.index, axis)
                for axis, d in enumerate(t.shape)]
    op = v.op
    if isinstance(op, O.ConstantTensorOp):
        return [("const", d) for d in t.shape]
    if isinstance(op, O.AllocOp):
        sizes = iter(op.operands)
        out = []
        for d in t.shape:
            out.append(("const", d) if isinstance(d, int) else host_value(next(sizes)))
        return out
    if isinstance(op, O.SubviewOp):
        src = host_shape(op.source)
        if src is None:
            return None
        out, k = [], 1
        for code, d in zip(op.attrs["axes"], src):
            if code == "i":
                k += 1
            elif code == "r":
                start, stop, step = (host_value(x) for x in op.operands[k:k + 3])
                k += 3
                out.append(None if None in (start, stop, step) else ("rlen", start, stop, step))
            else:
                out.append(d)
        return [("const", d) if isinstance(d, int) else h for d, h in zip(t.shape, out)]
    return None


# --- lowerings -----------------------------------------------------------------------

def lower_constant_tensor(e, op):
    """A view of the data as a file-scope array (``CONST_DATA``: ``static const`` in C,
    ``static __device__ const`` in CUDA) of the unsigned words of its dtype, written as
    hex literals, so the bits are exact; one array per distinct data, named by its
    digest."""
    data = op.value
    width = max(8, data.dtype.bits)
    name = f"nq_const_{data.digest()[:32]}"

    def define():
        words = data.array.reshape(-1).view(f"<u{width // 8}")
        suffix = {64: "ull", 32: "u"}.get(width, "")
        body = ",".join(f"0x{int(w):x}{suffix}" for w in words) or "0"
        return (f"{e.CONST_DATA} {_UWORD[width]} {name}[{max(1, words.size)}] = "
                f"{{{body}}};\n")
    e.lib.use(name, define)
    itemsize = width // 8
    strides, step = [], itemsize
    for n in reversed(data.shape):
        strides.insert(0, str(step))
        step *= n
    return View(f"((const nq_u8*){name})", [str(n) for n in data.shape], strides, data.dtype)


_UWORD = {8: "nq_u8", 16: "nq_u16", 32: "nq_u32", 64: "nq_u64"}


def lower_dim(e, op):
    return e.value(op.source).sizes[op.axis]


def _bounds(e, op, view, idx):
    for axis, (i, n) in enumerate(zip(idx, view.sizes)):
        if not e.in_range(i, n):
            e.guard(f"(nq_u64)({i}) < (nq_u64)({n})", ("index", op, axis), [i, n])


def lower_load(e, op):
    src = e.value(op.source)
    if isinstance(src, Reg):
        return src.expr
    idx = [e.value(v) for v in op.indices]
    _bounds(e, op, src, idx)
    return e.let(op.result, element(e, src, idx))


def lower_store(e, op):
    value, dst = e.value(op.value), e.value(op.dest)
    idx = [e.value(v) for v in op.indices]
    _bounds(e, op, dst, idx)
    e.effect(f"{e.lib.store(dst.dtype)}({address(dst, idx)}, {value});")


def conform(e, op, view, t: ShapedType):
    """Guard the run-time sizes against the declared type; use the declared sizes."""
    sizes = []
    checks = []
    for d, have in zip(t.shape, view.sizes):
        want = str(d) if isinstance(d, int) else e.symbols.get(d) if isinstance(d, str) else None
        if want is not None and want != have:
            checks.append(f"{have} == {want}")
        sizes.append(want if want is not None else have)
    if checks:
        e.guard(" && ".join(checks), ("result_type", op, 0), list(view.sizes))
    view.sizes = sizes
    return view


def lower_subview(e, op):
    src = e.value(op.operands[0])
    vals = [e.value(v) for v in op.operands[1:]]
    offs, sizes, strides, k = [], [], [], 0
    for axis, code in enumerate(op.attrs["axes"]):
        n, s = src.sizes[axis], src.strides[axis]
        if code == ":":
            sizes.append(n)
            strides.append(s)
            continue
        if code == "i":
            start = vals[k]
            k += 1
            if not e.in_range(start, n):
                e.guard(f"(nq_u64)({start}) < (nq_u64)({n})", ("index", op, axis), [start, n])
        else:
            start, stop, step = vals[k:k + 3]
            k += 3
            e.guard(f"{step} > 0 && (nq_u64)({start}) <= (nq_u64)({stop}) && "
                    f"(nq_u64)({stop}) <= (nq_u64)({n})", ("range", op, axis),
                    [start, stop, step, n])
            sizes.append(e.temp("nq_i64", f"({stop} - {start} + {step} - 1) / {step}",
                                op.result, f"n{len(sizes)}"))
            strides.append(e.temp("nq_i64", _mul(s, step), op.result, f"s{len(strides)}"))
        offs.append(_mul(start, s))
    const = "const " if not op.result.type.writable else ""
    ptr = address(View(src.ptr, [], [], src.dtype), []) if not offs else \
        src.ptr + " + " + " + ".join(f"({o})" if " " in o else o for o in offs)
    ptr = e.temp(f"{const}nq_u8*", ptr, op.result)
    return conform(e, op, View(ptr, sizes, strides, src.dtype), op.result.type)


def _nested(e, sizes, body, name="nq_i"):
    """Loops over every index tuple of ``sizes`` (row-major) calling ``body(idx)``."""
    idx = []
    for d, n in enumerate(sizes):
        i = e.fresh(f"{name}{d}")
        e.open(f"for (nq_i64 {i} = 0; {i} < {n}; ++{i}) {{")
        idx.append(i)
    body(idx)
    for _ in sizes:
        e.close("}")


def lower_copy(e, op):
    src, dst = e.value(op.source), e.value(op.dest)
    if isinstance(src, Reg):
        e.effect(f"{e.lib.store(dst.dtype)}({address(dst, [])}, {src.expr});")
        return
    same = " && ".join(f"{a} == {b}" for a, b in zip(src.sizes, dst.sizes) if a != b)
    if same:
        e.guard(same, ("copy", op, 0), list(src.sizes) + list(dst.sizes))
    e.begin_effect()
    if isinstance(src, Decoded):
        st = e.lib.store(dst.dtype)
        _nested(e, src.sizes,
                lambda idx: e.line(f"{st}({address(dst, idx)}, {element(e, src, idx)});"))
    else:
        mv = e.lib.bytes_copy(max(1, src.dtype.bits // 8))
        _nested(e, src.sizes,
                lambda idx: e.line(f"{mv}({address(dst, idx)}, {address(src, idx)});"))
    e.end_effect()


def lower_alloc(e, op):
    t = op.result.type
    slot = e.plan_alloc(op)
    sizes = []
    operands = iter(op.operands)
    for d in t.shape:
        if isinstance(d, int):
            sizes.append(str(d))
            continue
        v = next(operands)
        n = e.value(v)
        if not _nonnegative(v):
            e.guard(f"{n} >= 0", ("alloc_size", op, 0), [n])
        sizes.append(n)
    view = conform(e, op, View("", sizes, [], t.dtype), t)
    itemsize = max(1, t.dtype.bits // 8)
    strides, total = [], str(itemsize)
    for n in reversed(view.sizes):
        strides.insert(0, total)
        total = _mul(total, n if " " not in n else f"({n})")
    view.strides = [s if s.isdigit() else e.temp("nq_i64", s, op.result, f"s{k}")
                    for k, s in enumerate(strides)]
    view.ptr = e.temp("nq_u8*", e.arena_address(slot), op.result)
    if not slot.top_level and e.guards_on:
        e.zero(view.ptr, total)
    return view


def _nonnegative(v) -> bool:
    op = getattr(v, "op", None)
    if isinstance(op, O.DimOp):
        return True
    return isinstance(op, O.ConstantOp) and op.attrs.get("value", -1) >= 0


def lower_dealloc(e, op):
    return None


def lower_decode(e, op):
    fmt = op.attrs["format"]
    inputs = [e.value(v) for v in op.operands]
    if family(fmt) != "grouped":
        sizes = [x.sizes[0] for x, spec in zip(inputs, signature(fmt)) if spec.kind == "row"]
        e.guard(_geometry_ok(fmt, sizes), ("decode", op, 0), sizes)
        k = (f"({sizes[0]}) / {fmt.block_bytes} * {fmt.block_values}"
             if family(fmt) == "gguf" else sizes[0])
        fn = element_fn(e.lib, fmt, e.CONST_DATA)
        args = [a for x in inputs
                for a in ((x.ptr, x.strides[0], x.sizes[0]) if isinstance(x, View) else (x,))]
    else:
        (packed, scales, k), p, n = inputs, inputs[0].sizes[0], inputs[1].sizes[0]
        e.guard(f"{k} >= 1 && {k} < ((nq_i64)1 << 56) && {p} == ({k} * {fmt.bits} + 7) / 8 && "
                f"{n} == ({k} + {fmt.group - 1}) / {fmt.group}", ("decode", op, 0), [p, n, k])
        fn = decode_fn(e.lib, fmt)
        args = [packed.ptr, packed.strides[0], p, scales.ptr, scales.strides[0]]
    row = Decoded(args, fn, k, op.result.type.dtype)
    return conform(e, op, row, op.result.type)


def _geometry_ok(fmt, sizes) -> str:
    """``numerics.decode.row_problem(fmt, sizes) is None`` as a C condition."""
    n = sizes[0]
    fam = family(fmt)
    if fam == "gguf":
        return f"{n} >= 1 && {n} % {fmt.block_bytes} == 0"
    if fam == "nvfp4":
        return f"{n} >= 1 && {n} % 16 == 0 && {sizes[1]} == {n} / 16"
    return f"{n} >= 1"


def decode_fn(lib, fmt) -> str:
    from ninfer_ir.types import f16, f32
    offset = getattr(fmt.word_codec, "offset", None)
    sign = 1 << (fmt.bits - 1)
    code = (f"(nq_i32)word - {offset}" if offset is not None
            else f"(nq_i32)(word ^ {sign}u) - {sign}")
    return lib.define(f"nq_decode_{fmt.name}", """$FN float $NAME(const nq_u8* p, nq_i64 ps, nq_i64 pn,
                              const nq_u8* s, nq_i64 ss, nq_i64 k) {
    const nq_i64 pos = k * $BITS, byte = pos >> 3;
    const nq_u32 lo = p[byte * ps], hi = byte + 1 < pn ? p[(byte + 1) * ps] : 0u;
    const nq_u32 word = ((lo | (hi << 8)) >> (pos & 7)) & ${MASK}u;
    const nq_i32 q = $CODE;
    return $MUL($H2F($LDH(s + (k / $GROUP) * ss)), (float)q);
}
""", BITS=fmt.bits, MASK=(1 << fmt.bits) - 1, CODE=code, GROUP=fmt.group,
        MUL=lib.binary("mul", f32), H2F=lib.f16_to_f32(), LDH=lib.load(f16))


class CContext:
    """The math library's context that writes each op as one ``const`` C temporary,
    with the scalar expressions of the emitter (``Library.scalar_expr``); a table is a
    file-scope array qualified by ``const_data`` (the emitter's ``CONST_DATA``)."""

    def __init__(self, lib, const_data):
        self.lib, self.lines, self.const_data = lib, [], const_data

    def const(self, value, t):
        return Val(self, self.lib.constant(t, float(value) if t.is_float else value), t)

    def let(self, expr, t):
        name = f"t{len(self.lines)}"
        self.lines.append(f"    const {c_type(t)} {name} = {expr};")
        return Val(self, name, t)

    def op(self, name, args, attrs, t):
        return self.let(self.lib.scalar_expr(name, args[-1].t, [a.v for a in args], attrs), t)

    def table(self, key, values, idx):
        from ninfer_ir.types import from_numpy
        t = from_numpy(values.dtype)
        items = ", ".join(str(int(v)) + ("u" if t.kind == "uint" else "") for v in values)
        name = self.lib.define(f"nq_decode_table_{key}", "$Q $T $NAME[$N] = {$ITEMS};\n",
                               Q=self.const_data, T=c_type(t), N=len(values), ITEMS=items)
        return self.let(f"{name}[{idx.cast(i64).v}]", t)


class _CRow:
    """A row's operands as parameters of the element helper (``p<i>``, ``s<i>``: byte
    pointer and byte stride of a row; ``a<i>``: a scalar)."""

    def __init__(self, c, fmt):
        self.c, self.specs = c, signature(fmt)

    def load(self, i, idx):
        t = self.specs[i].dtype
        return self.c.let(f"{self.c.lib.load(t)}(p{i} + {idx.v} * s{i})", t)

    def scalar(self, i):
        return Val(self.c, f"a{i}", self.specs[i].dtype)


def element_fn(lib, fmt, const_data) -> str:
    """The C helper ``T nq_decode_<format>(<row parameters>, nq_i64 k)`` of a
    non-grouped format: ``decoders.element`` emitted in ``CContext``."""
    name = f"nq_decode_{fmt.name}"
    if name in lib.defs:
        return name
    c = CContext(lib, const_data)
    row = _CRow(c, fmt)
    value = decoded_element(fmt, row, Val(c, "k", i64))
    params = [f"const nq_u8* p{i}, nq_i64 s{i}, nq_i64 n{i}" if spec.kind == "row"
              else f"{c_type(spec.dtype)} a{i}" for i, spec in enumerate(row.specs)]
    unused = "".join(f"    (void)n{i};\n" for i, spec in enumerate(row.specs) if spec.kind == "row")
    return lib.define(name, "$FN $T $NAME($P, nq_i64 k) {\n$UNUSED$BODY\n    return $V;\n}\n",
                      T=c_type(value.t), P=", ".join(params), UNUSED=unused,
                      BODY="\n".join(c.lines), V=value.v)


def ctype_of(t) -> str:
    return c_type(t.dtype if isinstance(t, ShapedType) else t)


LOWERINGS = {
    O.ConstantTensorOp: lower_constant_tensor, O.DimOp: lower_dim, O.SubviewOp: lower_subview, O.LoadOp: lower_load,
    O.StoreOp: lower_store, O.CopyOp: lower_copy, O.AllocOp: lower_alloc,
    O.DeallocOp: lower_dealloc, O.DecodeOp: lower_decode,
}
