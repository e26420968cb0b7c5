"""ninfer_ir: a small, exact, fast compiler for quantized tensor programs.

    import ninfer_ir as I

    @I.kernel
    def q4k_gemv(w: I.Tensor[I.u8, "N", "G", 144], x: I.Tensor[I.f32, "G", 256],
                 y: I.Buffer[I.f32, "N"]):
        xq = I.quantize(x, format=I.quant.q8_k)
        for n in I.range(w.shape[0]):
            y[n] = I.quantized_dot(w[n], xq, lhs_format=I.quant.q4_k,
                                   rhs_format=I.quant.q8_k, acc_dtype=I.f32)

    print(q4k_gemv.ir)                       # textual SSA IR
    I.interpret(q4k_gemv, w, x, y)           # the oracle
    I.compile(q4k_gemv, target="cpu")(w, x, y)
    q4k_gemv(w, x, y)                        # compiled on first call for I.config.target
"""
from .errors import (NinferError, DSLError, ParseError, VerifyError, DomainError,
                     TargetUnavailable, FormatError, CompileError)
from .errors import OptionError
from .quant import namespace as quant
from .types import (f16, bf16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64, bool_,
                    index, ScalarType, TensorType, BufferType)
from .ir import Module, FuncOp, Operation, Block, Region, Value
from .ops import OPS
from .builder import Builder
from .printer import print_module
from .api import interpret, lower, compile, emit
from .config import config
from . import formats

__version__ = "0.1.0"


def parse(text: str, verify: bool = True) -> Module:
    """Read textual IR back into a Module (the printer's exact inverse)."""
    from ninfer_ir.frontend.textual import parse as _parse
    return _parse(text, verify=verify)


def verify(module: Module) -> Module:
    return module.verify()


# -- eager forms of the DSL's calls (inside a kernel the frontend reads the same names) --

def quantize(values, format=None):
    """Quantize f32 rows into records: ``I.quant.q8_k`` ``[G,256]`` -> u8 ``[G,292]`` (spec §4),
    ``I.quant.q8_0`` ``[G,32]`` -> u8 ``[G,34]`` (docs/spec/quantized-gguf.md §3)."""
    from ninfer_ir.backends.interp.eager import quantize as _f
    return _f(values, format=format)


def quantized_dot(lhs, rhs, lhs_format=None, rhs_format=None, acc_dtype=None, order="seq"):
    """Records of a pair of ``ninfer_ir.quant.PAIRS`` (Q4_K ``[G,144]`` x Q8_K ``[G,292]``,
    Q4_0/Q5_0/Q8_0 x Q8_0, ...) -> rank-0 f32 (spec §3, quantized-gguf §4)."""
    from ninfer_ir.backends.interp.eager import quantized_dot as _f
    return _f(lhs, rhs, lhs_format=lhs_format, rhs_format=rhs_format, acc_dtype=acc_dtype,
              order=order)


def dot(lhs, rhs, order="seq"):
    """The ordinary contraction of two float vectors, summed in ``order``."""
    from ninfer_ir.backends.interp.eager import dot as _f
    return _f(lhs, rhs, order=order)


def reduce(x, kind, order="seq"):
    """Reduce the last axis with ``kind`` add/mul/min/max (floats summed in ``order``)."""
    from ninfer_ir.backends.interp.eager import reduce as _f
    return _f(x, kind=kind, order=order)


def sum(x, order="seq"):
    return reduce(x, "add", order)


def prod(x, order="seq"):
    return reduce(x, "mul", order)


def max(x):
    return reduce(x, "max")


def min(x):
    return reduce(x, "min")


def decode(*rows, format=None, k=None, **named):
    """One row of a registered format -> f32[K], exactly the registry's ``decode``:
    ``decode(packed, scales, format=GROUPED, k=K)``, ``decode(blocks, format=GGUF)``,
    ``decode(words, format=BF16)``, ``decode(codes, scale, format=FP8_ROW)``,
    ``decode(codes, scales, divisor, format=NVFP4)`` (docs/decode.md)."""
    from ninfer_ir.backends.interp.eager import decode as _f
    return _f(*rows, format=format, k=k, **named)


def select(c, a, b):
    from ninfer_ir.backends.interp.eager import select as _f
    return _f(c, a, b)


def cast(x, dtype):
    from ninfer_ir.backends.interp.eager import cast as _f
    return _f(x, dtype)


def bitcast(x, dtype):
    from ninfer_ir.backends.interp.eager import bitcast as _f
    return _f(x, dtype)


# -- the elementwise calls (I.abs, I.minimum, ...), one per op class with a ``dsl_call`` --
def _elementwise_calls():
    from .backends.interp.eager import elementwise_function
    from .ops import DSL_CALLS
    return {name: elementwise_function(cls) for name, cls in DSL_CALLS.items()}


globals().update(_elementwise_calls())


# -- the DSL (frontend) ----------------------------------------------------------------
from ninfer_ir.frontend.dsl import kernel, Kernel, Tensor, Buffer, range, prange  # noqa: E402,F401
from .api import call as _call  # noqa: E402
Kernel.dispatch = staticmethod(_call)          # calling an @I.kernel runs it on I.config.target
from ninfer_ir.frontend.helpers import func, Func  # noqa: E402,F401


# -- math: correctly rounded f32 functions (docs/math.md), eager on arrays ----------------

def _expanded_function(cls, fn):
    def f(x):
        from ninfer_ir.backends.interp.eager import expanded
        return expanded(cls, fn, x)
    f.__name__ = f.__qualname__ = fn
    f.__doc__ = (f"{fn} of a {' or '.join(map(str, cls.dtypes))} array or scalar, elementwise "
                 f"({cls.__name__}: {(cls.__doc__ or '').strip().splitlines()[0]})")
    return f


from .ops import EXPANDED as _EXPANDED  # noqa: E402
globals().update({_fn: _expanded_function(_cls, _fn)         # I.sqrt, I.exp, ...
                  for _cls in _EXPANDED for _fn in _cls.functions()})
