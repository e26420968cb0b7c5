"""The ABI every compiled target shares: the status word of a kernel, its guard table and
the errors they stand for (the argument binding is ``backends/signature.py``).

A kernel returns an ``i64`` status: 0 on success, otherwise ``id * 8 + reason``:

=======  ==========================================================================
reason   meaning (``id``)
=======  ==========================================================================
1..4     ``quantize_into`` failed: ``id = record + (t << QUANT_TAG_SHIFT)``, ``t`` the
         index of its format in ``quant.QUANTIZE_TARGETS`` (0 for Q8_K), reasons
         of that target's oracle (``numerics.quantized.domain_error``)
5        the ``check`` op number ``id`` (walk order over the function) was false;
         it wrote the values its message formats into the error block
6        a run-time guard the emitter inserted failed; ``id`` indexes the kernel's
         guard table, and the guard wrote the numbers for its message into the
         kernel's error block (``i64[ERR_SLOTS]``)
7        out of memory (``id`` is 0)
=======  ==========================================================================

A negative status means the Python thread pool itself failed (``RuntimeError``).

Guards reproduce the interpreter's run-time errors with the same type and message:
an index or range out of bounds, a ``for`` step of 0, a negative ``alloc`` size,
run-time lengths that differ (``copy``, ``dot``, records of the quantized ops), a
``decode`` row geometry that does not fit, and a result whose run-time shape
contradicts its declared type (``VerifyError``).
"""
from __future__ import annotations

from dataclasses import dataclass

from ninfer_ir.errors import DomainError
from ninfer_ir.numerics import domain
from ninfer_ir.numerics.decode import geometry_problem

__all__ = ["REASON_CHECK", "REASON_GUARD", "REASON_NO_MEMORY", "ERR_SLOTS", "Guard",
           "error_for_status", "QUANT_TAG_SHIFT", "quantize_tag"]

QUANT_TAG_SHIFT = 40       # more records than any array holds
REASON_CHECK = 5
REASON_GUARD = 6
REASON_NO_MEMORY = 7
ERR_SLOTS = 64


@dataclass(frozen=True)
class Guard:
    """One emitted run-time guard: what it checks and the op it belongs to."""
    kind: str          # index range step alloc_size result_type copy dot records decode
    op: object
    axis: int = 0
    what: str = ""

    def error(self, nums):
        op = self.op
        if self.kind == "index":
            return domain.bad_index(op.name, nums[0], self.axis, nums[1])
        if self.kind == "range":
            return domain.bad_range(op.name, *nums[:3], self.axis, nums[3])
        if self.kind == "step":
            return domain.zero_step()
        if self.kind == "alloc_size":
            return domain.negative_alloc(nums[0], op.result.type)
        if self.kind == "copy":
            r = op.source.type.rank
            return domain.copy_shapes(nums[:r], nums[r:2 * r])
        if self.kind == "dot":
            return domain.dot_lengths(nums[0], nums[1])
        if self.kind == "records":
            return domain.record_counts(op.name, self.what, nums[0], nums[1])
        if self.kind == "decode":
            return domain.decode_row(geometry_problem(op.format, nums))
        if self.kind == "result_type":
            t = op.results[0].type
            return domain.result_type(t.dtype.np_dtype, nums[:t.rank], t, op)
        raise AssertionError(f"unknown guard kind {self.kind}")


def quantize_tag(target) -> int:
    """What a failing ``quantize_into`` to ``target`` adds to its record number in ``id``."""
    from ninfer_ir.quant import QUANTIZE_TARGETS
    return list(QUANTIZE_TARGETS.values()).index(target) << QUANT_TAG_SHIFT


def error_for_status(status: int, nums, checks, guards) -> Exception:
    """The exception for a non-zero status (``checks``: check ops by id; ``guards``:
    the kernel's guard table; ``nums``: the error block's numbers)."""
    from ninfer_ir.numerics.quantized import domain_error
    from ninfer_ir.quant import QUANTIZE_TARGETS
    if status < 0:
        return RuntimeError(f"the thread pool failed to run a parallel loop (status {status})")
    ident, reason = status >> 3, status & 7
    if 1 <= reason <= 4:
        targets = list(QUANTIZE_TARGETS.values())
        tag = ident >> QUANT_TAG_SHIFT
        if tag < len(targets):
            record = ident & ((1 << QUANT_TAG_SHIFT) - 1)
            return domain_error(record, reason, targets[tag].schema)
    if reason == REASON_CHECK and 0 <= ident < len(checks):
        return DomainError(checks[ident].format(nums))
    if reason == REASON_GUARD and 0 <= ident < len(guards):
        return guards[ident].error([int(x) for x in nums])
    if reason == REASON_NO_MEMORY:
        return MemoryError("a compiled kernel could not allocate its scratch memory")
    return RuntimeError(f"compiled kernel returned an unknown status {status}")
