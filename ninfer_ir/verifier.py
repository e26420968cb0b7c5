"""Structural verification of a module: scoping (no use before definition),
terminators, function signatures, and every op's own ``verify_``."""
from __future__ import annotations

from .errors import VerifyError
from .ir import Block, FuncOp, Module, Operation
from .ops import ReturnOp, YieldOp
from .types import BufferType


def verify(module: Module) -> None:
    seen = set()
    for f in module.funcs:
        if not isinstance(f, FuncOp):
            raise VerifyError(f"module holds a non-function op '{f.name}'", f)
        if f.sym_name in seen:
            raise VerifyError(f"function @{f.sym_name} is defined twice", f)
        seen.add(f.sym_name)
        verify_func(f)


def verify_func(func: FuncOp) -> None:
    verify_returns_attr(func)
    scope = set(func.args)
    body = func.body
    term = body.terminator
    if not isinstance(term, ReturnOp):
        raise VerifyError(f"function @{func.sym_name} must end with return", func)
    got = [v.type for v in term.operands]
    if got != list(func.result_types):
        raise VerifyError(
            f"return gives ({', '.join(map(str, got))}) but @{func.sym_name} returns "
            f"({', '.join(map(str, func.result_types))})", term)
    _verify_block(body, scope, in_func_body=True)


def verify_returns_attr(func: FuncOp) -> None:
    """``returns = k`` (k >= 0) names the last k parameters, all buffers, as outputs
    that a call allocates and returns."""
    params = func.args
    n_out = func.attrs.get("returns", 0)
    if (isinstance(n_out, bool) or not isinstance(n_out, int) or not 0 <= n_out <= len(params)
            or not all(isinstance(p.type, BufferType) for p in params[len(params) - n_out:])):
        raise VerifyError(f"@{func.sym_name}: attribute 'returns' must count trailing buffer "
                          f"parameters, got {n_out!r}", func)


def _verify_block(block: Block, scope: set, in_func_body: bool) -> None:
    local = set(scope)
    for k, op in enumerate(block.ops):
        if op.parent is not block:
            raise VerifyError("op's parent link is broken", op)
        if isinstance(op, FuncOp):
            raise VerifyError("functions cannot be nested", op)
        for i, v in enumerate(op.operands):
            if v not in local:
                raise VerifyError(f"operand {i} is used before it is defined "
                                  f"(or outside the region that defines it)", op)
        if op.terminator and k != len(block.ops) - 1:
            raise VerifyError(f"'{op.name}' must be the last op of its block", op)
        if isinstance(op, ReturnOp) and not in_func_body:
            raise VerifyError("return is only allowed at the end of a function body", op)
        if isinstance(op, YieldOp) and in_func_body:
            raise VerifyError("yield is only allowed at the end of a for/if region", op)
        verify_op(op)
        for region in op.regions:
            for b in region.blocks:
                _verify_block(b, local | set(b.args), in_func_body=False)
        local.update(op.results)


def verify_op(op: Operation) -> None:
    try:
        op.verify_()
        inferred = op.infer_types()
    except VerifyError:
        raise
    except Exception as e:  # an op's checks must never surface as a crash
        raise VerifyError(f"malformed op ({type(e).__name__}: {e})", op) from None
    if inferred is not None and op.exact_inference:
        declared = [r.type for r in op.results]
        if list(inferred) != declared:
            raise VerifyError(
                f"result type(s) ({', '.join(map(str, declared))}) do not match the "
                f"inferred ({', '.join(map(str, inferred))})", op)
