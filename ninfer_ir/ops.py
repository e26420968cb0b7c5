"""The closed op set. One op, one small class, with its verifier beside it.

``OPS`` is the read-only name → class table that the parser, the interpreter,
the emitters and the coverage tests enumerate. Scalar semantics (what ``add``
or ``cast`` compute) live in ``numerics``; this file only says what is
well-typed, which family an op belongs to, and what its operands mean.

Families are base classes; every op set used elsewhere is derived from them
(``family(UnaryOp)``, ``ELEMENTWISE``, ...), so a new op joins the sets, the
interpreter's rules and the DSL by its class alone:

- ``ElementwiseOp``: ``UnaryOp``, ``BinaryOp``, ``CmpOp``, ``SelectOp``, ``CastOp``
  (and ``BitcastOp``); element ``i`` of the result depends on element ``i`` of the
  operands only.
- ``ContractionOp``: ``ReduceOp``, ``DotOp`` and ``QuantizedDotOp``: ordered folds
  (``order`` is a ``SumOrder``).
- memory: ``IndexedOp`` (``load``, ``store``, ``subview``: an index per axis),
  ``memory_reads()`` / ``memory_writes()`` on every op, ``AllocOp``, ``DeallocOp``.
- ``RegionOp`` (``for``, ``if``) and ``TerminatorOp`` (``yield``, ``return``).

Algebraic identities are class attributes of the binary ops (``identity``,
``commutative``, ``absorbing``, ``idempotent``, ``self_inverse``) and of the unary
ones (``involution``); canonicalization reads them.
"""
from __future__ import annotations

import re
from types import MappingProxyType

from .dense import Dense
from .ir import Operation
from .numerics.semantics import int_range
from .opbase import (ContractionOp, ReadsNothing, WritesDest, attr, attribute, describe,
                     index_operand, n_operands, n_results, no_bf16, operand_at, operands_from,
                     order_attr, scalar, shaped, shapes_compatible)
from .ops_decode import DecodeOp
from .ops_quant import QuantizedDotOp, QuantizeIntoOp, QuantizeOp
from .ops_select import KernelCallOp
from .types import (BufferType, ScalarType, ShapedType, TensorType, bool_, dims_equal, f16, f32,
                    index)

# -- family roots that are not elementwise ----------------------------------------

class TerminatorOp(ReadsNothing, Operation):
    """Ends a block; its operands are the values the block gives back."""
    pure = False
    terminator = True


class RegionOp(ReadsNothing, Operation):
    """Structured control flow: an op that owns regions (``for``, ``if``)."""
    pure = False


class IndexedOp(Operation):
    """An access with one index operand per indexed axis: ``load``, ``store``, ``subview``.
    ``source`` is the tensor or buffer indexed; ``index_pairs()`` gives
    ``[(axis, index value)]``."""

    source = operand_at(0)

    def index_pairs(self) -> list:
        return list(enumerate(self.indices))


# -- functions and constants ---------------------------------------------------

class ReturnOp(TerminatorOp):
    name = "return"

    def verify_(self):
        n_results(self, 0)


class ConstantOp(ReadsNothing, Operation):
    name = "constant"

    value = attribute("value")

    def verify_(self):
        n_operands(self, 0)
        n_results(self, 1)
        t = self.result.type
        if not isinstance(t, ScalarType):
            raise self.error(f"constants are scalars, got {t}")
        if "value" not in self.attrs:
            raise self.error("missing attribute 'value'")
        v = self.attrs["value"]
        if t is bool_:
            if not isinstance(v, bool):
                raise self.error(f"a bool constant needs true or false, got {v!r}")
        elif t.is_float:
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise self.error(f"a {t} constant needs a number, got {describe(v)}")
        elif t.is_int:
            if isinstance(v, bool) or not isinstance(v, int):
                raise self.error(f"a {t} constant needs an integer, got {describe(v)}")
            lo, hi = int_range(t)
            if not lo <= v <= hi:
                raise self.error(f"{v} does not fit {t}")


class ConstantTensorOp(ReadsNothing, Operation):
    """A constant tensor: ``%t = constant_tensor() {value = dense<f32[256] ...>} :
    tensor<f32[256]>``. ``value`` is a ``Dense`` (``ninfer_ir/dense.py``) of the result's
    dtype and static shape; the tensor is read-only memory of the compiled code."""
    name = "constant_tensor"

    value = attribute("value")

    def infer_types(self):
        v = self.attrs.get("value")
        return [TensorType(v.dtype, v.shape)] if isinstance(v, Dense) else None

    def verify_(self):
        n_operands(self, 0)
        n_results(self, 1)
        t = self.result.type
        if not isinstance(t, TensorType) or not all(isinstance(d, int) for d in t.shape):
            raise self.error(f"a constant tensor has a tensor type of static shape, got {t}")
        v = attr(self, "value", Dense, "dense data (dense<...>)")
        if v.dtype is not t.dtype or v.shape != t.shape:
            raise self.error(f"the data is {v.dtype}[{','.join(map(str, v.shape))}] but the "
                             f"result is {t}")


# -- shapes and views ---------------------------------------------------------

class DimOp(ReadsNothing, Operation):
    name = "dim"

    source = operand_at(0)
    axis = attribute("axis")

    def infer_types(self):
        return [index]

    def verify_(self):
        n_operands(self, 1)
        t = shaped(self, self.operands[0], "operand")
        axis = attr(self, "axis", int, "an integer")
        if not 0 <= axis < t.rank:
            raise self.error(f"axis {axis} out of range for rank {t.rank}")


class SubviewOp(ReadsNothing, IndexedOp):
    """A view: per source axis ``i`` (one index operand, axis dropped), ``r`` (start,
    stop, step operands, axis kept) or ``:`` (whole axis). Views of buffers are
    buffers (writable); views of tensors are tensors."""
    name = "subview"
    exact_inference = False    # a dynamic range's length is only known at run time

    def axes(self) -> str:
        return self.attrs.get("axes", "")

    def index_pairs(self) -> list:
        """``[(axis, index)]`` of the ``i`` axes (ranges are not listed)."""
        out, k = [], 1
        for axis, code in enumerate(self.axes()):
            if code == "i":
                out.append((axis, self.operands[k]))
                k += 1
            elif code == "r":
                k += 3
        return out

    @property
    def has_ranges(self) -> bool:
        return "r" in self.axes()

    def infer_types(self):
        src = self.operands[0].type if self.operands else None
        if not isinstance(src, ShapedType):
            return None
        shape = []
        k = 1
        for code, d in zip(self.axes(), src.shape):
            if code == "i":
                k += 1
            elif code == "r":
                shape.append(_static_range_len(self.operands[k:k + 3], d))
                k += 3
            else:
                shape.append(d)
        return [type(src)(src.dtype, shape)]

    def verify_(self):
        if not self.operands:
            raise self.error("expects a source operand")
        src = shaped(self, self.operands[0], "source")
        axes = attr(self, "axes", str, "a string of 'i', 'r' and ':'")
        if len(axes) != src.rank or any(c not in "ir:" for c in axes):
            raise self.error(f"axes {axes!r} must give one of 'i', 'r', ':' for each of "
                             f"the {src.rank} source axes")
        need = 1 + axes.count("i") + 3 * axes.count("r")
        n_operands(self, need)
        for k, v in enumerate(self.operands[1:], 1):
            index_operand(self, v, f"operand {k}")
        n_results(self, 1)
        res = self.result.type
        if type(res) is not type(src):
            raise self.error(f"a view of a {type(src).__name__} must be one too, got {res}")
        inferred = self.infer_types()[0]
        if res.dtype != src.dtype or res.rank != inferred.rank:
            raise self.error(f"result type {res} does not match the view {inferred}")
        for got, want in zip(res.shape, inferred.shape):
            # `?` is always allowed: folding a range to constants must not break the IR
            if want is not None and got is not None and got != want:
                raise self.error(f"result type {res} does not match the view {inferred}")


def _static_range_len(ops, dim):
    vals = []
    for v in ops:
        owner = getattr(v, "op", None)
        if not isinstance(owner, ConstantOp):
            return None
        vals.append(owner.attrs.get("value"))
    start, stop, step = vals
    if not isinstance(dim, int) or not all(isinstance(x, int) for x in vals) or step == 0:
        return None
    return len(range(*slice(start, stop, step).indices(dim)))


class LoadOp(IndexedOp):
    """One element of a tensor/buffer (all indices given); a rank-0 tensor loads its value."""
    name = "load"

    indices = operands_from(1)

    def infer_types(self):
        src = self.operands[0].type if self.operands else None
        return [src.dtype] if isinstance(src, ShapedType) else None

    def verify_(self):
        if not self.operands:
            raise self.error("expects a source operand")
        src = shaped(self, self.operands[0], "source")
        n_operands(self, 1 + src.rank)
        for k, v in enumerate(self.operands[1:], 1):
            index_operand(self, v, f"index {k - 1}")


class StoreOp(ReadsNothing, IndexedOp):
    """``store(value, buffer, indices…)``: writes one element of a buffer."""
    name = "store"
    pure = False

    value = operand_at(0)
    dest = operand_at(1)
    source = dest
    indices = operands_from(2)

    def memory_writes(self) -> list:
        return [self.dest]

    def verify_(self):
        n_results(self, 0)
        if len(self.operands) < 2:
            raise self.error("expects a value and a destination")
        val = scalar(self, self.operands[0], "stored value")
        dst = shaped(self, self.operands[1], "destination")
        if not isinstance(dst, BufferType):
            raise self.error(f"cannot store into the read-only {dst}; stores need a buffer")
        n_operands(self, 2 + dst.rank)
        if val != dst.dtype:
            raise self.error(f"stored value is {val} but the buffer holds {dst.dtype}")
        for k, v in enumerate(self.operands[2:]):
            index_operand(self, v, f"index {k}")


class CopyOp(WritesDest, Operation):
    """``copy(src, dst)``: writes a whole tensor into a buffer (view) of the same shape."""
    name = "copy"
    pure = False

    source = operand_at(0)

    def verify_(self):
        n_operands(self, 2)
        n_results(self, 0)
        src = shaped(self, self.operands[0], "source")
        dst = shaped(self, self.operands[1], "destination")
        if not isinstance(dst, BufferType):
            raise self.error(f"cannot store into the read-only {dst}; stores need a buffer")
        if src.dtype != dst.dtype or src.rank != dst.rank:
            raise self.error(f"cannot copy {src} into {dst}")
        for a, b in zip(src.shape, dst.shape):
            if a is not None and b is not None and not dims_equal(a, b) \
                    and isinstance(a, int) and isinstance(b, int):
                raise self.error(f"cannot copy {src} into {dst}: shapes differ")


# -- elementwise ------------------------------------------------------------------

def _elementwise_result(op, types):
    """Common rule: scalars of one dtype, or tensors of one shape, or a tensor and a
    scalar of its dtype (broadcast). Returns (dtype, shape or None for scalar)."""
    dtype, shape = None, None
    for k, t in enumerate(types):
        if isinstance(t, ShapedType):
            d = t.dtype
            if shape is not None and not shapes_compatible(shape, t.shape):
                raise op.error(f"operand shapes differ: {list(shape)} vs {list(t.shape)}")
            shape = t.shape
        elif isinstance(t, ScalarType):
            d = t
        else:
            raise op.error(f"operand {k} has unsupported type {t}")
        if dtype is not None and d != dtype:
            raise op.error(f"operand types differ: {dtype} vs {d}")
        dtype = d
    return dtype, shape


def _make(dtype, shape):
    return dtype if shape is None else TensorType(dtype, shape)


class ElementwiseOp(Operation):
    """Family root: element ``i`` of the result depends on element ``i`` of the operands."""
    arity = 2
    #: which dtypes the op accepts: "any", "int" (integers and bool), "shift" (integers),
    #: "num" (no bool) or "float"
    accepts = "any"
    #: the ``I.<name>`` call of the DSL and the eager API that makes this op, if any
    dsl_call: str | None = None
    #: False for the ops that also take bf16 words (select, cast, bitcast)
    computes = True

    def infer_types(self):
        if len(self.operands) != self.arity:
            return None
        dtype, shape = _elementwise_result(self, [v.type for v in self.operands])
        return [_make(self._result_dtype(dtype), shape)]

    def _result_dtype(self, dtype):
        return dtype

    def verify_(self):
        n_operands(self, self.arity)
        n_results(self, 1)
        dtype, _ = _elementwise_result(self, [v.type for v in self.operands])
        no_bf16(self, dtype)
        if self.accepts == "int" and not (dtype.is_int or dtype is bool_):
            raise self.error(f"needs integer or bool operands, got {dtype}")
        if self.accepts == "shift" and not dtype.is_int:
            raise self.error(f"needs integer operands, got {dtype}")
        if self.accepts == "num" and dtype is bool_:
            raise self.error("needs numeric operands, got bool")
        if self.accepts == "float" and not dtype.is_float:
            raise self.error(f"needs float operands, got {dtype}")


#: ``BinaryOp.identity`` / ``absorbing`` value meaning "all bits set" (-1, or true)
ONES = "ones"


class BinaryOp(ElementwiseOp):
    """Family: ``lhs op rhs`` on one dtype. The identities hold on integers and bool
    (not on floats): ``x op identity == x``; ``commutative``: also ``identity op x``;
    ``x op absorbing == absorbing``; ``idempotent``: ``x op x == x``;
    ``self_inverse``: ``x op x == 0``."""
    arity = 2
    accepts = "num"
    identity = None
    commutative = False
    absorbing = None
    idempotent = False
    self_inverse = False

    lhs = operand_at(0)
    rhs = operand_at(1)


def _binary(opname, accepts="num", doc="", **hooks):
    return type(opname.capitalize() + "Op", (BinaryOp,),
                {"name": opname, "accepts": accepts, "__doc__": doc, **hooks})


AddOp = _binary("add", doc="x + y (integers wrap; floats round to nearest even)",
                identity=0, commutative=True)
SubOp = _binary("sub", doc="x - y", identity=0, self_inverse=True)
MulOp = _binary("mul", doc="x * y", identity=1, commutative=True, absorbing=0)
DivOp = _binary("div", doc="x / y (integers: truncating; divisor 0 gives 0)", identity=1)
RemOp = _binary("rem", doc="remainder with the sign of x (divisor 0 gives 0)")
MinOp = _binary("min", doc="minimum (floats: NaN if either is NaN)", idempotent=True,
                dsl_call="minimum")
MaxOp = _binary("max", doc="maximum (floats: NaN if either is NaN)", idempotent=True,
                dsl_call="maximum")
AndOp = _binary("and", "int", "bitwise and", identity=ONES, commutative=True, absorbing=0,
                idempotent=True)
OrOp = _binary("or", "int", "bitwise or", identity=0, commutative=True, idempotent=True)
XorOp = _binary("xor", "int", "bitwise xor", identity=0, commutative=True, self_inverse=True)
ShlOp = _binary("shl", "shift", "shift left (amount >= width gives 0)", identity=0)
ShrOp = _binary("shr", "shift", "shift right: arithmetic for signed, logical for unsigned",
                identity=0)


class UnaryOp(ElementwiseOp):
    """Family: ``op x``. ``involution``: ``op (op x) == x``."""
    arity = 1
    accepts = "num"
    involution = False

    operand = operand_at(0)


class NegOp(UnaryOp):
    name = "neg"
    involution = True


class AbsOp(UnaryOp):
    name = "abs"
    dsl_call = "abs"


class SqrtOp(UnaryOp):
    """The IEEE square root of a float, correctly rounded like ``+ - * /`` (f16: the f32
    root rounded once, exact). -0 gives -0, a negative number the produced NaN, a NaN
    itself quieted. A basic operation the math library builds on: the DSL's ``I.sqrt``
    is the ``math`` function, which also gives the canonical NaN."""
    name = "sqrt"
    accepts = "float"


class NotOp(UnaryOp):
    """Bitwise not on integers, logical not on bool."""
    name = "not"
    accepts = "int"
    involution = True


CMP_PREDICATES = ("eq", "ne", "lt", "le", "gt", "ge")


class CmpOp(ElementwiseOp):
    """Comparison; floats compare ordered (any NaN gives false, except ``ne``)."""
    name = "cmp"

    lhs = operand_at(0)
    rhs = operand_at(1)
    pred = attribute("pred")

    def _result_dtype(self, dtype):
        return bool_

    def verify_(self):
        super().verify_()
        pred = attr(self, "pred", str, "a predicate string")
        if pred not in CMP_PREDICATES:
            raise self.error(f"unknown predicate {pred!r}; use one of {', '.join(CMP_PREDICATES)}")


class SelectOp(ElementwiseOp):
    """``select(c, a, b)``: a where c else b (elementwise for tensors)."""
    name = "select"
    arity = 3
    computes = False

    cond = operand_at(0)
    true_value = operand_at(1)
    false_value = operand_at(2)

    def infer_types(self):
        if len(self.operands) != 3:
            return None
        dtype, shape = _elementwise_result(self, [v.type for v in self.operands[1:]])
        return [_make(dtype, shape)]

    def verify_(self):
        n_operands(self, 3)
        c = self.operands[0].type
        cd = c.dtype if isinstance(c, ShapedType) else c
        if cd is not bool_:
            raise self.error(f"condition must be bool, got {c}")
        _, shape = _elementwise_result(self, [v.type for v in self.operands[1:]])
        if isinstance(c, ShapedType) and (shape is None or not shapes_compatible(c.shape, shape)):
            raise self.error("condition shape does not match the values")


class CastOp(ElementwiseOp):
    """Value conversion to ``to``: see numerics/scalar.py for the exact rules."""
    name = "cast"
    arity = 1
    computes = False

    source = operand_at(0)
    to = attribute("to")

    def infer_types(self):
        if len(self.operands) != 1 or not isinstance(self.attrs.get("to"), ScalarType):
            return None
        t = self.operands[0].type
        to = self.attrs["to"]
        return [TensorType(to, t.shape) if isinstance(t, ShapedType) else to]

    def verify_(self):
        n_operands(self, 1)
        n_results(self, 1)
        attr(self, "to", ScalarType, "a dtype")
        t = self.operands[0].type
        if not isinstance(t, (ScalarType, ShapedType)):
            raise self.error(f"cannot cast {t}")
        if isinstance(self.result.type, BufferType):
            raise self.error(f"the result of a cast is a value, not a buffer: "
                             f"{self.result.type}")


class BitcastOp(CastOp):
    """Reinterpret the bits as ``to`` (same width)."""
    name = "bitcast"

    def verify_(self):
        super().verify_()
        t = self.operands[0].type
        src = t.dtype if isinstance(t, ShapedType) else t
        to = self.attrs["to"]
        if src.bits != to.bits or src is bool_ or to is bool_:
            raise self.error(f"bitcast needs equal widths, got {src} to {to}")


# -- reductions and the ordinary f32 contraction ------------------------------

REDUCE_KINDS = ("add", "mul", "min", "max")


class ReduceOp(ContractionOp):
    """Reduce the last axis (``kind`` add/mul/min/max; floats in the declared ``order``)."""
    name = "reduce"

    source = operand_at(0)
    kind = attribute("kind")

    def infer_types(self):
        if len(self.operands) != 1 or not isinstance(self.operands[0].type, ShapedType):
            return None
        t = self.operands[0].type
        return [TensorType(t.dtype, t.shape[:-1])] if t.rank else None

    def verify_(self):
        n_operands(self, 1)
        t = shaped(self, self.operands[0], "operand")
        if t.rank < 1:
            raise self.error("needs rank >= 1")
        kind = attr(self, "kind", str, "a reduction kind")
        if kind not in REDUCE_KINDS:
            raise self.error(f"unknown reduction {kind!r}; use one of {', '.join(REDUCE_KINDS)}")
        if t.dtype is bool_:
            raise self.error("cannot reduce bool values")
        no_bf16(self, t.dtype)
        order_attr(self)


class DotOp(ContractionOp):
    """The ordinary contraction: sum of R(a[i]*b[i]) over two 1-D float vectors, in ``order``."""
    name = "dot"

    lhs = operand_at(0)
    rhs = operand_at(1)

    def infer_types(self):
        if len(self.operands) != 2 or not isinstance(self.operands[0].type, ShapedType):
            return None
        return [TensorType(self.operands[0].type.dtype, ())]

    def verify_(self):
        n_operands(self, 2)
        a = shaped(self, self.operands[0], "lhs")
        b = shaped(self, self.operands[1], "rhs")
        if a.rank != 1 or b.rank != 1:
            raise self.error(f"dot takes two rank-1 vectors, got {a} and {b}")
        if a.dtype != b.dtype or not a.dtype.is_float:
            raise self.error(f"dot takes two float vectors of one dtype, got {a} and {b}")
        no_bf16(self, a.dtype)
        if not dims_equal(a.shape[0], b.shape[0]):
            raise self.error(f"vector lengths {a.shape[0]} and {b.shape[0]} are not provably equal")
        order_attr(self)


# -- structured control flow -------------------------------------------------------

class YieldOp(TerminatorOp):
    name = "yield"

    def verify_(self):
        n_results(self, 0)


class ForOp(RegionOp):
    """``for(lb, ub, step, inits…)`` with one region ``^(iv, carried…)`` ending in
    ``yield(next…)``; results are the final carried values. ``parallel = true`` marks a
    loop whose iterations are independent (no carried values)."""
    name = "for"

    lower = operand_at(0)
    upper = operand_at(1)
    step = operand_at(2)
    inits = operands_from(3)

    @property
    def iv(self):
        return self.body.args[0]

    def infer_types(self):
        return [v.type for v in self.operands[3:]]

    def verify_(self):
        if len(self.operands) < 3:
            raise self.error("expects lower bound, upper bound and step")
        for k, what in enumerate(("lower bound", "upper bound", "step")):
            index_operand(self, self.operands[k], what)
        if len(self.regions) != 1 or len(self.regions[0].blocks) != 1:
            raise self.error("expects one region with one block")
        body = self.regions[0].block
        inits = self.operands[3:]
        if len(body.args) != 1 + len(inits):
            raise self.error(f"body takes the induction variable and {len(inits)} carried "
                             f"value(s), got {len(body.args)} argument(s)")
        if body.args[0].type is not index:
            raise self.error("the induction variable must be of type index")
        for a, v in zip(body.args[1:], inits):
            if a.type != v.type:
                raise self.error(f"carried value has type {v.type} but the body argument is {a.type}")
        parallel = self.attrs.get("parallel", False)
        if not isinstance(parallel, bool):
            raise self.error("attribute 'parallel' must be true or false")
        if parallel and inits:
            raise self.error("a parallel loop (I.prange) cannot carry values between iterations")
        _check_yield(self, body, [v.type for v in inits])

    @property
    def body(self):
        return self.regions[0].block

    @property
    def parallel(self) -> bool:
        return bool(self.attrs.get("parallel", False))


class IfOp(RegionOp):
    """``if(cond)`` with a then and an else region, each ending in ``yield``.

    ``likely = true`` says that the condition holds for almost every element of a loop
    and that both arms are pure scalar arithmetic (checked: constants and elementwise
    ops, no loads, no integer division), so a backend may run both arms and select, or
    decide the condition for a whole block of iterations at once and run only the then
    arm there (docs/backends.md). The result is the same either way."""
    name = "if"

    cond = operand_at(0)

    @property
    def likely(self) -> bool:
        return self.attrs.get("likely", False) is True

    @property
    def then_block(self):
        return self.regions[0].block

    @property
    def else_block(self):
        return self.regions[1].block

    def verify_(self):
        n_operands(self, 1)
        if self.operands[0].type is not bool_:
            raise self.error(f"condition must be a bool scalar, got {self.operands[0].type}")
        if len(self.regions) != 2 or any(len(r.blocks) != 1 for r in self.regions):
            raise self.error("expects a then region and an else region, one block each")
        for r in self.regions:
            if r.block.args:
                raise self.error("if regions take no arguments")
            _check_yield(self, r.block, [v.type for v in self.results])
        if "likely" in self.attrs:
            attr(self, "likely", bool, "true or false")
        if self.likely:
            for r in self.regions:
                for op in r.block.ops:
                    why = _not_speculatable(op)
                    if why:
                        raise self.error(f"a likely if may run both arms, so they must be "
                                         f"pure scalar arithmetic: {why}")


def _not_speculatable(op) -> str | None:
    """Why ``op`` may not run for an element whose branch did not pick it (None if it
    may): only constants, elementwise ops other than integer division, nested likely
    ifs and the closing yield are allowed."""
    if isinstance(op, (ConstantOp, YieldOp)):
        return None
    if isinstance(op, IfOp) and op.likely:
        return None
    if isinstance(op, ElementwiseOp) and not isinstance(op, ExpandedOp):
        if op.name in ("div", "rem") and not op.operands[-1].type.is_float:
            return f"'{op.name}' on {op.operands[-1].type} (division by zero)"
        return None
    return f"'{op.name}'"


def _check_yield(op, block, types):
    term = block.terminator
    if not isinstance(term, YieldOp):
        raise op.error("region must end with yield")
    got = [v.type for v in term.operands]
    if len(got) != len(types):
        raise op.error(f"yield gives {len(got)} value(s), expected {len(types)}")
    for g, t in zip(got, types):
        if g != t:
            raise op.error(f"yield gives {g}, expected {t}")


# -- memory (after materialization) ---------------------------------------------

class AllocOp(ReadsNothing, Operation):
    """An invocation-local buffer; one index operand per non-static dim."""
    name = "alloc"
    pure = False

    sizes = operands_from(0)

    def verify_(self):
        n_results(self, 1)
        t = self.result.type
        if not isinstance(t, BufferType):
            raise self.error(f"alloc makes a buffer, got {t}")
        dyn = sum(1 for d in t.shape if not isinstance(d, int))
        n_operands(self, dyn)
        for k, v in enumerate(self.operands):
            index_operand(self, v, f"size {k}")


class DeallocOp(ReadsNothing, Operation):
    name = "dealloc"
    pure = False

    buffer = operand_at(0)

    def memory_writes(self) -> list:
        return [self.buffer]

    def verify_(self):
        n_operands(self, 1)
        n_results(self, 0)
        if not isinstance(self.operands[0].type, BufferType):
            raise self.error("dealloc takes a buffer")


class CheckOp(ReadsNothing, Operation):
    """``check(cond, nums...) {message = "..."}``: if cond is false the kernel stops and
    the launcher raises ``I.DomainError`` with the message. A check with index
    operands after the condition formats them into its message at run time: ``{k}``
    stands for the k-th of them (``'load': index {0} is out of range for axis 0 of size
    {1}``); a check without them keeps its message verbatim."""
    name = "check"
    pure = False

    cond = operand_at(0)
    message = attribute("message")
    nums = operands_from(1)          # the values the message formats

    def verify_(self):
        if not self.operands:
            raise self.error("expects a condition")
        n_results(self, 0)
        if self.operands[0].type is not bool_:
            raise self.error(f"condition must be a bool scalar, got {self.operands[0].type}")
        if len(self.operands) > 65:
            raise self.error("a check formats at most 64 values")
        for k, v in enumerate(self.operands[1:]):
            if v.type is not index:
                raise self.error(f"message value {k} must be an index, got {v.type}")
        msg = attr(self, "message", str, "a string")
        for k in _PLACEHOLDER.findall(msg) if len(self.operands) > 1 else ():
            if int(k) >= len(self.operands) - 1:
                raise self.error(f"the message names value {{{k}}} but the check has "
                                 f"{len(self.operands) - 1}")

    def format(self, nums) -> str:
        """The message with the run-time values ``nums`` in place of ``{k}``."""
        msg = self.attrs["message"]
        if len(self.operands) == 1:
            return msg
        return _PLACEHOLDER.sub(lambda m: str(int(nums[int(m.group(1))])), msg)


_PLACEHOLDER = re.compile(r"\{(\d+)\}")


from .ir import FuncOp  # noqa: E402  (func is an op like the others)

class ExpandedOp(ElementwiseOp):
    """A family of elementwise functions that no backend computes: ``%y = <name>(%x) {fn =
    "exp"}`` means the algorithm ``fn`` of the family's ``library`` module, written once
    against ``ninfer_ir.mathlib.core.Val``. The library gives ``FUNCTIONS`` (name ->
    algorithm), ``evaluate(fn, values, dtype)`` (what the interpreter and the eager API run)
    and ``expand(builder, fn, x, dtype)`` (what the ``expand`` pass emits as ordinary ops).
    Everything else is derived from the class: the DSL calls and the ``I.<fn>`` functions
    (one per name of ``FUNCTIONS``), the interpreter rule, and the emitters' note that the
    op never reaches them. A new family is this class's subclass plus its library."""
    arity = 1
    accepts = "float"
    legalized_by = "expand"
    #: import path of the family's library module
    library = ""
    #: dtypes a function takes (its result has the same dtype)
    dtypes: tuple = ()

    @classmethod
    def lib(cls):
        import importlib
        return importlib.import_module(cls.library)

    @classmethod
    def functions(cls) -> tuple:
        return tuple(cls.lib().FUNCTIONS)

    def infer_types(self):
        if len(self.operands) != 1:
            return None
        t = self.operands[0].type
        if isinstance(t, ShapedType):
            return [TensorType(t.dtype, t.shape)]
        return [t] if isinstance(t, ScalarType) else None

    def verify_(self):
        n_operands(self, 1)
        n_results(self, 1)
        fn = attr(self, "fn", str, "a function name")
        if fn not in self.functions():
            raise self.error(f"unknown {self.name} function {fn!r}; use one of "
                             f"{', '.join(sorted(self.functions()))}")
        t = self.operands[0].type
        if not isinstance(t, (ScalarType, ShapedType)):
            raise self.error(f"operand has unsupported type {t}")
        dtype = t.dtype if isinstance(t, ShapedType) else t
        if dtype not in self.dtypes:
            raise self.error(f"{fn} takes {' or '.join(map(str, self.dtypes))} values, "
                             f"got {dtype}")
        if self.result.type != self.infer_types()[0]:
            raise self.error(f"result type {self.result.type} must be "
                             f"{self.infer_types()[0]}")


class MathOp(ExpandedOp):
    """The math family: ``%y = math(%x) {fn = "exp"}``, one elementwise op for every function
    of ``ninfer_ir.mathlib`` (``sqrt rsqrt exp exp2 expm1 log log2 tanh sigmoid erf sin cos
    floor ceil trunc rint``).

    f32 results are correctly rounded (round-to-nearest-even of the exact value, C99 Annex F
    special cases, one canonical quiet NaN ``0x7FC00000``); an f16 argument is widened to
    f32, the f32 result is computed and rounded to f16."""
    name = "math"
    library = "ninfer_ir.mathlib"
    dtypes = (f32, f16)


OPS = MappingProxyType({cls.name: cls for cls in (
    FuncOp, ReturnOp, ConstantOp, ConstantTensorOp, DimOp, SubviewOp, LoadOp, StoreOp, CopyOp,
    AddOp, SubOp, MulOp, DivOp, RemOp, MinOp, MaxOp, AndOp, OrOp, XorOp, ShlOp, ShrOp,
    NegOp, AbsOp, SqrtOp, NotOp, CmpOp, SelectOp, CastOp, BitcastOp, ReduceOp, DotOp,
    QuantizeOp, QuantizedDotOp, YieldOp, ForOp, IfOp, AllocOp, DeallocOp, QuantizeIntoOp,
    CheckOp, DecodeOp, KernelCallOp, MathOp,
)})


def family(base) -> frozenset:
    """The op classes of ``OPS`` that belong to the family (base class) ``base``."""
    return frozenset(cls for cls in OPS.values() if issubclass(cls, base))


ELEMENTWISE = family(ElementwiseOp)
UNARY = family(UnaryOp)
BINARY = family(BinaryOp)
CONTRACTIONS = family(ContractionOp)
EXPANDED = family(ExpandedOp)

#: ``I.<name>`` -> op class, for the elementwise ops the DSL and the eager API call by name
DSL_CALLS = MappingProxyType({cls.dsl_call: cls for cls in sorted(ELEMENTWISE, key=lambda c: c.name)
                              if cls.dsl_call})
