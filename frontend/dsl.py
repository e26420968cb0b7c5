"""The Python-embedded DSL: ``@I.kernel`` turns a Python function into SSA IR.

    import ninfer_ir as I

    @I.kernel
    def q4k_gemv(w: I.Tensor[I.u8, "N", "G", 144], x: I.Tensor[I.f32, "G", 256],
                 y: I.Buffer[I.f32, "N"]):
        xq = I.quantize(x, format=I.quant.q8_k)
        for n in I.range(w.shape[0]):
            y[n] = I.quantized_dot(w[n], xq, lhs_format=I.quant.q4_k,
                                   rhs_format=I.quant.q8_k, acc_dtype=I.f32)

The source is read and compiled once, at decoration time; ``kernel.ir`` is the
verified ``Module`` (one function named after the Python function, values named
after the Python names). Anything the DSL does not accept raises ``I.DSLError``
at decoration, located at the offending construct in the real file.

Parameters
    ``I.Tensor[dtype, d0, d1, ...]`` is a read-only tensor, ``I.Buffer[...]`` writable
    memory; a dim is an int, a symbol name (the same name is the same size in every
    parameter) or ``None`` (unknown). A scalar dtype (``I.i32``, ``I.f32``, ``I.index``)
    is a scalar parameter. No defaults, ``*args`` or keyword-only parameters.

Values and typing
    * An expression whose operands are all Python constants is evaluated by Python
      (``K // 2`` folds with Python's semantics). Closure and global ints, floats and
      bools are such constants; ``x.shape[i]`` is one when the dim is static, else a
      ``dim`` op. A closure or global numpy array is a constant tensor
      (``constant_tensor``), copied at decoration. Any other outside object (a list, a
      function) is an error.
    * Binary operands must have the same dtype: there is no implicit promotion; use
      ``I.cast(v, dtype)``. A Python constant combined with an IR value of dtype T
      becomes a constant of T (an int may become any integer or float dtype, a float
      only a float dtype, a bool only ``bool``; it must fit). Constants used as
      indices, slice bounds or loop bounds are ``index``. A constant with no IR
      operand to take its type from gets one from an annotation
      (``acc: I.f32 = 0.0``), ``I.cast(0, I.i32)``, the buffer it is stored into, or,
      for a loop-carried or ``if``-merged name, from the value the other side gives.
    * A rank-0 tensor (``I.dot``, ``I.quantized_dot``, a 1-D reduction) is ``load``ed
      where a scalar is needed: in arithmetic, comparisons, stores, loop-carried and
      ``if``-merged names.
    * Operators: ``+ - * & | ^ << >>`` map to add/sub/mul/and/or/xor/shl/shr; ``/``
      is float division; ``//`` is integer division truncating toward zero and ``%``
      the remainder with the dividend's sign (both differ from Python for negative
      operands); comparisons give bool (chains are and-ed); ``-x`` neg, ``~x`` and
      ``not b`` not; ``and``/``or`` on bools evaluate both sides; ``a if c else b``
      with an IR condition is a ``select`` (both sides evaluated).
    * Indexing: ``w[n]`` is a view (``subview``, dropped axes ``i``), ``x[a:b:s]``
      a range view (``r``), ``m[:, j]`` keeps whole axes (``:``); missing trailing
      axes are whole. An index on every axis reads the element (``load``). Indices
      must be ``index`` (cast other integers); negative constants are refused. A
      slice has a static length when its bounds are constants or differ by a
      constant (``x[i:i + C]``, ``x[i + a:i + b]``); bounds are checked at run time.
    * Operations: ``I.quantize``, ``I.quantized_dot``, ``I.dot``, ``I.cast``,
      ``I.bitcast``, ``I.select``, ``I.minimum``/``I.maximum`` (elementwise),
      ``I.abs``; reductions over the last axis ``I.sum``/``I.prod``/``I.max``/
      ``I.min`` (one argument) and ``I.reduce(x, kind=...)``; ``I.dot``,
      ``I.quantized_dot`` and reductions take ``order=`` (default ``"seq"``).

Statements
    Assignment (also tuple unpacking and ``x: dtype = v``), augmented assignment,
    stores ``y[i] = v`` (``store``) and ``y[a:b] = t`` / ``y[:] = t`` (``copy``)
    into buffers only; ``for i in range(...)`` / ``I.range(lb, ub, step)`` (the
    step must be positive) and ``I.prange`` (a parallel loop); ``if`` on a bool IR
    value (an ``if`` op) or on a Python constant (only the taken branch is
    compiled); ``assert cond, "message"`` (a ``check`` op, or a compile-time check
    on a constant); ``return v`` / ``return a, b`` as the last statement (the
    function's results, typed as the values are: a rank-0 tensor stays a tensor
    unless the return is annotated with a dtype, ``-> I.f32``; Python constants
    need such an annotation or ``I.cast``; buffers cannot be returned).

Helpers
    ``@I.func`` functions are inlined at each call, their annotated parameters and
    result checked at the call; recursion is refused (``frontend/helpers.py``).

Scoping
    A name re-assigned inside a loop body is loop-carried (a ``for`` operand, block
    argument, ``yield`` and result); its type may not change, and a parallel loop
    cannot carry values. A name assigned in an ``if`` on an IR condition becomes a
    result of the ``if`` when it is defined on both sides afterwards (an unchanged
    side keeps the old value); a name first defined in only one branch, inside a
    loop, or the loop variable itself is not visible after the statement.
"""
from __future__ import annotations

import builtins
import sys

from ninfer_ir.errors import DSLError
from ninfer_ir.ir import FuncOp, Module

__all__ = ["kernel", "Kernel", "Tensor", "Buffer", "ShapedSpec", "range", "prange"]


class ShapedSpec:
    """An annotation ``I.Tensor[dtype, dims...]`` or ``I.Buffer[dtype, dims...]``.

    The items are kept as given; the frontend checks them and reports a bad one
    at the annotation."""

    __slots__ = ("kind", "items")

    def __init__(self, kind: str, items: tuple):
        self.kind = kind
        self.items = items

    def __repr__(self):
        inner = ", ".join(repr(x) for x in self.items)
        return f"I.{self.kind.capitalize()}[{inner}]"


class _SpecFactory:
    __slots__ = ("kind",)

    def __init__(self, kind: str):
        self.kind = kind

    def __getitem__(self, items) -> ShapedSpec:
        if not isinstance(items, tuple):
            items = (items,)
        return ShapedSpec(self.kind, items)

    def __repr__(self):
        return f"I.{self.kind.capitalize()}"


#: ``I.Tensor[dtype, dims...]``: a read-only tensor parameter
Tensor = _SpecFactory("tensor")
#: ``I.Buffer[dtype, dims...]``: a writable buffer parameter
Buffer = _SpecFactory("buffer")


def range(*args):
    """``for i in I.range(stop)`` / ``(start, stop[, step])``: a sequential loop.
    Outside a kernel it is Python's ``range``."""
    return builtins.range(*args)


def prange(*args):
    """``for i in I.prange(...)``: a loop whose iterations are independent
    (``parallel = true``; it cannot carry values). Outside a kernel, ``range``."""
    return builtins.range(*args)


class Kernel:
    """A compiled kernel: ``.ir`` (the verified Module), ``.func`` (its FuncOp),
    ``.name``, ``.fn`` (the Python function) and ``.source_file``.

    Calling it runs it on ``I.config.target`` (``cpu`` unless ``NINFER_TARGET`` or
    ``I.config`` says otherwise) with the arguments ``I.interpret`` takes. The first
    call with a new argument signature (per parameter: dtype, shape and layout class,
    contiguous or strided) compiles the kernel with the call's symbol sizes made
    static (``I.config.specialize``) and caches it in ``.overloads``; later calls
    with that signature reuse it. ``I.compile`` stays the explicit form."""

    def __init__(self, fn, module: Module, source_file: str, src=None, names=None,
                 constants=None):
        self.fn = fn
        self.name = fn.__name__
        self.ir = module
        self.source_file = source_file
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn
        self._src, self._names = src, names
        #: the data of the module-level arrays the kernel reads, copied at decoration
        self._constants = constants if constants is not None else {}
        #: ``(target, threads, signature) -> compiled kernel`` (``"interp"`` for the
        #: interpreter), filled by calls
        self.overloads: dict = {}
        self._compiled: dict = {}
        self._specialized: dict = {}

    #: ``(kernel, args, kwargs) -> result``: set by ``ninfer_ir`` to ``api.call`` (the
    #: compile driver lives above the frontend)
    dispatch = None

    def __call__(self, *args, **kwargs):
        return Kernel.dispatch(self, args, kwargs)

    def specialized(self, sizes: dict) -> Module:
        """The kernel's Module with the symbol dims in ``sizes`` static (``.ir`` when
        ``sizes`` is empty, or when the specialized kernel is refused at compile time,
        so that such a call fails the way the generic kernel does, at run time)."""
        key = tuple(sorted(sizes.items()))
        hit = self._specialized.get(key)
        if hit is None:
            hit = self.ir
            if sizes and self._src is not None:
                from .lowering_ast import lower_function
                try:
                    hit = lower_function(self.fn, self._src, kernel_types=(Kernel,),
                                         outer_names=self._names, sizes=sizes,
                                         constants=self._constants)
                except DSLError:
                    hit = self.ir
            self._specialized[key] = hit
        return hit

    @property
    def func(self) -> FuncOp:
        return self.ir.funcs[0]

    def __repr__(self):
        return f"<I.kernel {self.name} from {self.source_file}>"


def kernel(fn=None):
    """Compile a Python function into IR at decoration: ``@I.kernel`` or ``kernel(fn)``."""
    if fn is None:
        return kernel
    from .diagnostics import capture
    from .lowering_ast import lower_function

    if not callable(fn) or not hasattr(fn, "__code__"):
        raise DSLError(f"I.kernel decorates a Python function, got {type(fn).__name__}")
    caller = sys._getframe(1)
    # postponed (string) annotations may name locals of the defining scope
    names = dict(caller.f_locals) if caller.f_code.co_name != "<module>" else {}
    del caller
    try:
        src = capture(fn)
        constants: dict = {}
        module = lower_function(fn, src, kernel_types=(Kernel,), outer_names=names,
                                constants=constants)
    except DSLError as e:
        raise e.with_traceback(None) from None
    return Kernel(fn, module, src.filename, src, names, constants)
