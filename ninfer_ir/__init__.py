"""ninfer_ir: a small, exact, fast compiler for quantized tensor programs."""
from .errors import (NinferError, DSLError, ParseError, VerifyError, DomainError,
                     TargetUnavailable)
from .quant import namespace as quant
