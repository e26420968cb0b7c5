"""ninfer_ir: a small, exact, fast compiler for quantized tensor programs.

    import ninfer_ir as I
"""
from .errors import (NinferError, DSLError, ParseError, VerifyError, DomainError,
                     TargetUnavailable)
from .quant import namespace as quant
from .types import (f16, bf16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64, bool_,
                    index, ScalarType, TensorType, BufferType)
from .ir import Module, FuncOp, Operation, Block, Region, Value
from .ops import OPS
from .builder import Builder
from .printer import print_module


def parse(text: str, verify: bool = True) -> Module:
    """Read textual IR back into a Module (the printer's exact inverse)."""
    from frontend.textual import parse as _parse
    return _parse(text, verify=verify)


def verify(module: Module) -> Module:
    return module.verify()
