"""The hand-written quantized kernels of the CPU backend: Q8_K quantize, Q4_K x Q8_K dot.

Three exported C-ABI functions, the same names and signatures on every ISA
level (``"avx512vnni"``, ``"avx2"``, ``"portable"``; see ``jit.host_target``),
all bit-exact to spec/quantized-ops.md and the numpy oracle
(``ninfer_ir.numerics.quantized``)::

    i64   ninfer_q8k_quantize(float* src, i64 src_row_stride_elems, i64 G,
                              i8* dst, i64 dst_row_stride_bytes)
    float ninfer_q4k_q8k_dot(i8* w, i64 w_rec_stride_bytes,
                             i8* x, i64 x_rec_stride_bytes, i64 G)
    void  ninfer_q4k_q8k_dot_rows(i8* w, i64 w_row_stride_bytes, i64 w_rec_stride_bytes,
                                  i8* x, i64 x_rec_stride_bytes, i64 G,
                                  i64 nrows, float* y, i64 y_stride_elems)

The quantize status word is 0 on success, else ``g*8 + reason`` for the
lowest failing block g (``decode_status``; reasons as in the oracle: 1
non-finite input, 2 inverse, 3 ds, 4 a scaled value); after a failure the
destination content is unspecified.

Records are read and written byte-aligned (any address, any stride); ``src``
needs only float alignment. Inputs are never written; ``dst`` and ``y`` must
not overlap the inputs. With G <= 0 nothing is read: quantize returns 0, the
dot gives +0.0 and every row of ``dot_rows`` gets +0.0. The kernels keep their
scratch on the stack (about 21 KB) and are safe to call from several threads.

Details: ``qquantize`` (quantize), ``qdot`` (dot numerics, AVX2 and portable
cores), ``qdot_vnni`` (AVX-512 VNNI).

``add_quant_kernels(module, isa)`` adds all three to an ``llvmlite.ir.Module``
(for the code generator to link with its own functions); ``build_module`` and
``load_kernels`` make a standalone module and compile it.
"""
from __future__ import annotations

import ctypes
import hashlib
import importlib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import llvmlite.ir as ir

from ninfer_ir.numerics import quantized_kquants
from ninfer_ir.quant import PAIRS, QUANTIZE_TARGETS, DotPair, q4_k, q8_k
from ninfer_ir.backends.llvm.runtime.jit import ISA_LEVELS, JITModule, host_target
from ninfer_ir.backends.llvm.kernels.qdot import DOT, DOT_ROWS, add_dot_simple, add_rows_simple
from ninfer_ir.backends.llvm.kernels.qdot_vnni import add_dot_vnni, add_rows_vnni
from ninfer_ir.backends.llvm.kernels.qquantize import NAME as QUANTIZE
from ninfer_ir.backends.llvm.kernels.qquantize import add_q8k_quantize

__all__ = [
    "QUANTIZE", "DOT", "DOT_ROWS", "SIGNATURES", "add_q8k_quantize", "add_q4k_q8k_dot_rows",
    "add_q4k_q8k_dot", "add_quant_kernels", "build_module", "decode_status", "QuantKernels",
    "load_kernels",
]

_P = ctypes.c_void_p
_I64 = ctypes.c_int64
SIGNATURES = {
    QUANTIZE: (ctypes.c_int64, (_P, _I64, _I64, _P, _I64)),
    DOT: (ctypes.c_float, (_P, _I64, _P, _I64, _I64)),
    DOT_ROWS: (None, (_P, _I64, _I64, _P, _I64, _I64, _I64, _P, _I64)),
}


def _check_isa(isa: str) -> None:
    if isa not in ISA_LEVELS:
        raise ValueError(f"unknown ISA level {isa!r}; expected one of {', '.join(ISA_LEVELS)}")


def _use_gfni(isa: str, gfni: bool | None) -> bool:
    """GF2P8AFFINEQB for the VNNI level: as asked, else when the target for ``isa`` has GFNI."""
    if isa != "avx512vnni":
        return False
    return host_target(isa).has_feature("gfni") if gfni is None else gfni


def add_q4k_q8k_dot_rows(module: ir.Module, isa: str, gfni: bool | None = None) -> ir.Function:
    """Add ``ninfer_q4k_q8k_dot_rows`` for ``isa`` to ``module``."""
    _check_isa(isa)
    if isa == "avx512vnni":
        return add_rows_vnni(module, _use_gfni(isa, gfni))
    return add_rows_simple(module, isa)


def add_q4k_q8k_dot(module: ir.Module, isa: str, gfni: bool | None = None) -> ir.Function:
    """Add ``ninfer_q4k_q8k_dot`` for ``isa``."""
    _check_isa(isa)
    if isa == "avx512vnni":
        return add_dot_vnni(module, _use_gfni(isa, gfni))
    return add_dot_simple(module, isa)


def add_rows(module: ir.Module, isa: str, pair: DotPair, gfni: bool | None = None):
    """The pair-table entry point for Q4_K x Q8_K (``ninfer_q4k_q8k_dot_rows``)."""
    assert pair is PAIRS[q4_k, q8_k]
    return add_q4k_q8k_dot_rows(module, isa, gfni)


def add_dot(module: ir.Module, isa: str, pair: DotPair, gfni: bool | None = None):
    """The pair-table entry point for Q4_K x Q8_K (``ninfer_q4k_q8k_dot``)."""
    assert pair is PAIRS[q4_k, q8_k]
    return add_q4k_q8k_dot(module, isa, gfni)


def _kernels_module(name: str):
    return importlib.import_module(f"{__package__}.{name}")


def add_kernels_for(module: ir.Module, isa: str, pairs=(), targets=()) -> dict[str, ir.Function]:
    """Add the kernels of the given dot pairs (dot and rows) and quantize targets of the
    closed tables, each from the module the table names; returns them by name. A kernel
    already in ``module`` is returned as it is."""
    _check_isa(isa)
    out = {}

    def add(name, build):
        out[name] = module.globals[name] if name in module.globals else build()

    for target in targets:
        add(target.cpu, lambda: _kernels_module(target.cpu_module).add_quantize(module, isa))
    for pair in pairs:
        kernels = _kernels_module(pair.cpu_module)
        add(pair.cpu_rows, lambda: kernels.add_rows(module, isa, pair))
        add(pair.cpu_dot, lambda: kernels.add_dot(module, isa, pair))
    return out


def table_signatures(pairs=(), targets=()) -> dict:
    """ctypes signatures of the kernels ``add_kernels_for`` adds."""
    sig = {t.cpu: SIGNATURES[QUANTIZE] for t in targets}
    for p in pairs:
        sig[p.cpu_rows], sig[p.cpu_dot] = SIGNATURES[DOT_ROWS], SIGNATURES[DOT]
    return sig


def add_quant_kernels(module: ir.Module, isa: str,
                      gfni: bool | None = None) -> dict[str, ir.Function]:
    """Add all three exported kernels for ``isa``; returns them by name.

    ``gfni`` (VNNI level only): extract the high nibbles with GF2P8AFFINEQB;
    by default exactly when ``host_target(isa)`` has GFNI, i.e. when the
    module will be compiled for a CPU that has it.
    """
    _check_isa(isa)
    quantize = add_q8k_quantize(module, isa)
    rows = add_q4k_q8k_dot_rows(module, isa, gfni)
    dot = add_q4k_q8k_dot(module, isa, gfni)
    return {QUANTIZE: quantize, DOT: dot, DOT_ROWS: rows}


def build_module(isa: str, gfni: bool | None = None) -> ir.Module:
    module = ir.Module(name=f"ninfer_qkernels_{isa}")
    add_quant_kernels(module, isa, gfni)
    return module


def decode_status(status: int) -> tuple[int, int] | None:
    """``(block, reason)`` of a nonzero quantize status word, None for success."""
    if status == 0:
        return None
    return status >> 3, status & 7


@dataclass
class QuantKernels:
    """The three kernels of one compiled module, as ctypes functions."""
    jit: JITModule
    quantize: ctypes._CFuncPtr
    dot: ctypes._CFuncPtr
    dot_rows: ctypes._CFuncPtr
    gfni: bool = False

    @property
    def isa(self) -> str:
        return self.jit.isa


@lru_cache(maxsize=None)
def generator_digest() -> str:
    """sha256 over the source of the modules that generate the kernels' IR."""
    h = hashlib.sha256()
    here = Path(__file__).resolve().parent
    for name in ("qkernels.py", "qir.py", "qquantize.py", "qdot.py", "qdot_vnni.py",
                 "qdot_blocks.py", "qquantize_q80.py", "qdot_kquants.py",
                 "qdot_kquants_vnni.py", "prefetch.py"):
        h.update(name.encode())
        h.update((here / name).read_bytes())
    h.update(Path(quantized_kquants.__file__).read_bytes())    # the K-quant layouts
    return h.hexdigest()


def load_kernels(isa: str | None = None, *, gfni: bool | None = None, cache_dir=None,
                 use_cache: bool = True) -> QuantKernels:
    """Compile (or fetch from the object cache) the kernels for ``isa`` (default: host best).

    The cache key names the IR by the generator's source digest, so a cache
    hit does not build the IR at all.
    """
    target = host_target(isa)
    use_gfni = _use_gfni(target.isa, gfni)
    jit = JITModule(lambda: build_module(target.isa, use_gfni), target=target,
                    cache_dir=cache_dir, use_cache=use_cache,
                    key_source=f"ninfer_qkernels/{target.isa}/gfni={use_gfni}/"
                               f"{generator_digest()}")
    fns = {name: jit.get(name, *SIGNATURES[name]) for name in SIGNATURES}
    return QuantKernels(jit, fns[QUANTIZE], fns[DOT], fns[DOT_ROWS], use_gfni)


def load_table_kernels(isa: str | None = None, pairs=None, targets=None, *, cache_dir=None,
                       use_cache: bool = True) -> dict:
    """Compile the kernels of ``pairs`` and ``targets`` (default: every entry of the
    tables) for ``isa``; returns ctypes functions by exported name."""
    pairs = tuple(PAIRS.values() if pairs is None else pairs)
    targets = tuple(QUANTIZE_TARGETS.values() if targets is None else targets)
    target = host_target(isa)

    def build():
        module = ir.Module(name=f"ninfer_table_kernels_{target.isa}")
        add_kernels_for(module, target.isa, pairs, targets)
        return module
    names = "/".join([t.stem for t in targets] + [p.stem for p in pairs])
    jit = JITModule(build, target=target, cache_dir=cache_dir, use_cache=use_cache,
                    key_source=f"ninfer_table_kernels/{target.isa}/{names}/{generator_digest()}")
    return {name: jit.get(name, *sig) for name, sig in table_signatures(pairs, targets).items()}
