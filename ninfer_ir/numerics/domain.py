"""The run-time errors of the IR's ops, worded once: the interpreter raises them and
the compiled backends rebuild them from their status word, with the same type and
message (``DomainError`` for what is found while running, ``VerifyError`` for a result
that contradicts its declared type)."""
from __future__ import annotations

from ..errors import DomainError, VerifyError

__all__ = ["bad_index", "bad_range", "zero_step", "negative_alloc", "copy_size_message",
           "copy_shapes",
           "dot_lengths", "record_counts", "decode_row", "result_type"]


def bad_index(op_name: str, i, axis: int, n) -> DomainError:
    return DomainError(f"'{op_name}': index {i} is out of range for axis {axis} of size {n}")


def bad_range(op_name: str, start, stop, step, axis: int, n) -> DomainError:
    return DomainError(f"'{op_name}': range ({start}, {stop}, {step}) is out of bounds for "
                       f"axis {axis} of size {n} (needs 0 <= start <= stop <= {n} and "
                       f"step >= 1)")


def zero_step() -> DomainError:
    return DomainError("'for': step is 0")


def negative_alloc(size, t) -> DomainError:
    return DomainError(f"'alloc': negative size {size} for {t}")


def copy_size_message(src, dst, axis: int) -> str:
    """The run-time error of a ``copy`` of shape ``src`` into shape ``dst`` whose sizes
    differ, first on ``axis``: the interpreter, the checks ``lower`` places (with ``{k}``
    placeholders for the sizes) and the backends say this."""
    return (f"'copy': cannot copy shape [{', '.join(map(str, src))}] into "
            f"[{', '.join(map(str, dst))}]: sizes differ on axis {axis}")


def copy_shapes(src_shape, dst_shape) -> DomainError:
    axis = next((a for a, (m, n) in enumerate(zip(src_shape, dst_shape)) if m != n), 0)
    return DomainError(copy_size_message(src_shape, dst_shape, axis))


def dot_lengths(a, b) -> DomainError:
    return DomainError(f"'dot': vector lengths {a} and {b} differ")


def record_counts(op_name: str, what: str, a, b) -> DomainError:
    return DomainError(f"'{op_name}': {what} hold {a} and {b} records")


def decode_row(problem: str) -> DomainError:
    """``problem``: ``numerics.decode.check_row``'s reason."""
    return DomainError(f"'decode': {problem}")


def result_type(dtype, shape, t, op) -> VerifyError:
    """A result of numpy dtype ``dtype`` and shape ``shape`` where ``t`` was declared."""
    return VerifyError(f"a result is {dtype}[{','.join(map(str, shape))}] at run time, which "
                       f"contradicts its declared type {t}", op)
