"""The closed quantization-schema registry (``I.quant.q4_k``, ``I.quant.q8_0``, ...),
the closed table of quantized dot PAIRS and the closed table of QUANTIZE targets.

A schema is a frozen record that holds the spec's record table as data
(record bytes, logical elements, every field's byte span, bit width and
signedness); the layouts are byte-identical to ggml's ``block_*`` structs. The
set is closed: there is no ``register()``, and constructing a new schema object
outside this module is refused. A schema is not a dtype.

Plug-in points (how a dot pair or a quantize target is added; everything else in
the compiler reads these two tables and needs no edit):

1. ``SCHEMAS``: the record layout (already here for q2_k, q3_k, q5_k, q6_k).
2. ``PAIRS``: one ``_pair(lhs, rhs, stem, spec, oracle_module, cpu_module)`` line.
   ``stem`` (e.g. ``"q6k_q8k"``) names everything per pair (``DotPair``'s
   properties): the oracle ``ninfer_ir.numerics.<oracle_module>.values_<stem>``,
   the CPU kernels ``ninfer_<stem>_dot`` / ``ninfer_<stem>_dot_rows`` built by
   ``ninfer_ir.backends.llvm.kernels.<cpu_module>.add_dot`` / ``add_rows``, the
   ``select`` library kernel ``<stem>_dot_rows`` (``ops_select.KERNELS`` and
   ``library.match_loop`` follow the table), and the C function
   ``nq_<stem>_record``.
3. The oracle ``values_<stem>(lhs[..., G, R], rhs[G, R']) -> f32[..., G]``: the
   per-record values v_b, vectorised, leading axes allowed (see
   ``numerics/quant_blocks.py``). The dot, its ``order`` fold, the rows form, the
   interpreter and the eager API are shared and need nothing more.
4. The CPU kernels: ``add_dot(module, isa, pair)`` and ``add_rows(module, isa,
   pair)`` returning ``llvmlite`` functions named ``pair.cpu_dot`` / ``pair.cpu_rows``
   with the signatures of ``backends/llvm/kernels/qdot.py`` (see ``qdot_blocks.py``).
5. ``float nq_<stem>_record(const nq_u8* a, const nq_u8* b)``: v_b of one record
   pair with byte loads, in ``backends/clike/library.py`` (``GGUF_BLOCK_FUNCTIONS``,
   which host C and CUDA both include); the one-thread dot (host C) and the warp
   dot (CUDA, one record per lane) are generated from it.
6. The written numerics (``spec`` field; docs/spec/quantized-gguf.md) and tests:
   ``tests/ir/test_quant_schema.py`` checks that every layer covers every entry;
   ``tests/backends/test_gguf_pairs.py`` and ``tests/conformance/
   test_quantized_gguf.py`` show the checks to repeat for a new pair;
   ``benchmarks/gemv_formats.py`` times every pair (its ggml type from
   ``GGML_TYPES``).

A quantize target is the same with ``QUANTIZE_TARGETS``: oracle function,
``<cpu_module>.add_quantize(module, isa)`` exporting ``ninfer_<stem>_quantize``
(status ``g*8 + reason``), and the C ``c_block`` function (0 or the reason).
"""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True)
class QuantField:
    """One field of a record: ``count`` elements of ``bits`` each in ``[start, stop)``."""
    name: str
    start: int          # first byte, relative to the record
    stop: int           # one past the last byte
    count: int          # number of logical elements in the field
    bits: int           # bit width of one element
    signed: bool
    kind: str           # "float" | "int"

    @property
    def nbytes(self) -> int:
        return self.stop - self.start


_TOKEN = object()


class QuantSchema:
    """A closed, typed record format. Only this module can make one."""

    __slots__ = ("name", "record_bytes", "block_elems", "fields", "__weakref__")

    def __init__(self, name, record_bytes, block_elems, fields, *, _token=None):
        if _token is not _TOKEN:
            raise TypeError("quant schemas form a closed set (I.quant.q4_k, I.quant.q8_0, ...); "
                            "new schemas cannot be constructed")
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "record_bytes", record_bytes)
        object.__setattr__(self, "block_elems", block_elems)
        object.__setattr__(self, "fields", MappingProxyType({f.name: f for f in fields}))

    def __setattr__(self, key, value):
        raise AttributeError("quant schemas are immutable")

    def __delattr__(self, key):
        raise AttributeError("quant schemas are immutable")

    def __reduce__(self):
        return (_lookup, (self.name,))

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __str__(self) -> str:
        return f"#{self.name}"

    def __repr__(self) -> str:
        return f"I.quant.{self.name}"

    def field(self, name: str) -> QuantField:
        return self.fields[name]


# --- the record tables (spec/quantized-ops.md §2, docs/spec/quantized-gguf.md §2) ---

def _f(name, start, stop, count, bits, signed, kind="int"):
    return QuantField(name, start, stop, count, bits, signed, kind)


def _f16(name, at):
    return QuantField(name, at, at + 2, 1, 16, True, "float")


q4_k = QuantSchema("q4_k", 144, 256, (
    _f16("d", 0), _f16("dmin", 2),
    _f("sc", 4, 16, 8, 6, False),      # shares [4,16) with m
    _f("m", 4, 16, 8, 6, False),
    _f("q", 16, 144, 256, 4, False),
), _token=_TOKEN)

q8_k = QuantSchema("q8_k", 292, 256, (
    QuantField("ds", 0, 4, 1, 32, True, "float"),
    _f("q", 4, 260, 256, 8, True),
    _f("bsum", 260, 292, 16, 16, True),
), _token=_TOKEN)

q8_0 = QuantSchema("q8_0", 34, 32, (
    _f16("d", 0),
    _f("q", 2, 34, 32, 8, True),
), _token=_TOKEN)

q4_0 = QuantSchema("q4_0", 18, 32, (
    _f16("d", 0),
    _f("q", 2, 18, 32, 4, False),      # element j: low nibble of byte j%16 (j < 16) else high
), _token=_TOKEN)

q5_0 = QuantSchema("q5_0", 22, 32, (
    _f16("d", 0),
    _f("qh", 2, 6, 32, 1, False),      # bit j of the little-endian u32: element j's fifth bit
    _f("q", 6, 22, 32, 4, False),      # low four bits, packed as in q4_0
), _token=_TOKEN)

iq4_nl = QuantSchema("iq4_nl", 18, 32, (
    _f16("d", 0),
    _f("q", 2, 18, 32, 4, False),      # indices into IQ4_NL_VALUES, packed as in q4_0
), _token=_TOKEN)

#: the sixteen signed values an IQ4_NL index stands for (ggml's kvalues_iq4nl)
IQ4_NL_VALUES = (-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113)

q2_k = QuantSchema("q2_k", 84, 256, (
    _f("sc", 0, 16, 16, 4, False),     # low nibble of each byte; shares [0,16) with m
    _f("m", 0, 16, 16, 4, False),      # high nibble
    _f("q", 16, 80, 256, 2, False),
    _f16("d", 80), _f16("dmin", 82),
), _token=_TOKEN)

q3_k = QuantSchema("q3_k", 110, 256, (
    _f("hmask", 0, 32, 256, 1, False),
    _f("q", 32, 96, 256, 2, False),
    _f("sc", 96, 108, 16, 6, False),
    _f16("d", 108),
), _token=_TOKEN)

q5_k = QuantSchema("q5_k", 176, 256, (
    _f16("d", 0), _f16("dmin", 2),
    _f("sc", 4, 16, 8, 6, False),      # shares [4,16) with m, packed as in q4_k
    _f("m", 4, 16, 8, 6, False),
    _f("qh", 16, 48, 256, 1, False),
    _f("q", 48, 176, 256, 4, False),
), _token=_TOKEN)

q6_k = QuantSchema("q6_k", 210, 256, (
    _f("ql", 0, 128, 256, 4, False),
    _f("qh", 128, 192, 256, 2, False),
    _f("sc", 192, 208, 16, 8, True),
    _f16("d", 208),
), _token=_TOKEN)

SCHEMAS = MappingProxyType({s.name: s for s in (q4_k, q8_k, q8_0, q4_0, q5_0, iq4_nl,
                                                q2_k, q3_k, q5_k, q6_k)})


# --- the closed table of quantized dot pairs -------------------------------------------

@dataclass(frozen=True)
class DotPair:
    """``quantized_dot`` of ``lhs`` (weights) and ``rhs`` (activation) records, and where
    each layer finds its implementation (names derived from ``stem``)."""
    lhs: QuantSchema
    rhs: QuantSchema
    stem: str            # e.g. "q40_q80"
    spec: str            # the written numerics
    oracle_module: str   # ninfer_ir.numerics.<oracle_module>.values_<stem>
    cpu_module: str      # ninfer_ir.backends.llvm.kernels.<cpu_module>.add_dot / add_rows

    @property
    def oracle(self) -> str:
        return f"values_{self.stem}"

    @property
    def cpu_dot(self) -> str:
        return f"ninfer_{self.stem}_dot"

    @property
    def cpu_rows(self) -> str:
        return f"ninfer_{self.stem}_dot_rows"

    @property
    def rows_kernel(self) -> str:
        """The ``select`` library kernel of the GEMV row loop."""
        return f"{self.stem}_dot_rows"

    @property
    def c_record(self) -> str:
        return f"nq_{self.stem}_record"

    @property
    def block_elems(self) -> int:
        return self.lhs.block_elems

    def __str__(self) -> str:
        return f"{self.lhs.name} x {self.rhs.name}"


def _pair(lhs, rhs, stem, spec, oracle_module, cpu_module):
    if lhs.block_elems != rhs.block_elems:
        raise AssertionError(f"{lhs} and {rhs} cover different element counts")
    return DotPair(lhs, rhs, stem, spec, oracle_module, cpu_module)


_GGUF = "docs/spec/quantized-gguf.md"
_KQ = "docs/spec/quantized-kquants.md"
PAIRS = MappingProxyType({(p.lhs, p.rhs): p for p in (
    _pair(q4_k, q8_k, "q4k_q8k", "spec/quantized-ops.md §3", "quantized", "qkernels"),
    _pair(q4_0, q8_0, "q40_q80", f"{_GGUF} §4.1", "quant_blocks", "qdot_blocks"),
    _pair(q5_0, q8_0, "q50_q80", f"{_GGUF} §4.2", "quant_blocks", "qdot_blocks"),
    _pair(q8_0, q8_0, "q80_q80", f"{_GGUF} §4.3", "quant_blocks", "qdot_blocks"),
    _pair(iq4_nl, q8_0, "iq4nl_q80", f"{_GGUF} §4.4", "quant_blocks", "qdot_blocks"),
    _pair(q2_k, q8_k, "q2k_q8k", f"{_KQ} §2.1", "quantized_kquants", "qdot_kquants"),
    _pair(q3_k, q8_k, "q3k_q8k", f"{_KQ} §2.2", "quantized_kquants", "qdot_kquants"),
    _pair(q5_k, q8_k, "q5k_q8k", f"{_KQ} §2.3", "quantized_kquants", "qdot_kquants"),
    _pair(q6_k, q8_k, "q6k_q8k", f"{_KQ} §2.4", "quantized_kquants", "qdot_kquants"),
)})


def dot_pair(lhs, rhs) -> DotPair | None:
    """The pair of the table for these formats, or None."""
    return PAIRS.get((lhs, rhs)) if isinstance(lhs, QuantSchema) and isinstance(rhs, QuantSchema) \
        else None


def pairs_text() -> str:
    return ", ".join(str(p) for p in PAIRS.values())


# --- the closed table of quantize targets ------------------------------------------------

@dataclass(frozen=True)
class QuantizeTarget:
    """``quantize(values, format=schema)``: f32 ``[G, block_elems]`` -> u8 ``[G, record_bytes]``."""
    schema: QuantSchema
    stem: str            # e.g. "q80"
    spec: str
    oracle: str          # ninfer_ir.numerics.<module>.<function>
    cpu_module: str      # ninfer_ir.backends.llvm.kernels.<cpu_module>.add_quantize
    c_block: str         # C: int <c_block>(const float* v, nq_u8* out) -> 0 or the reason

    @property
    def cpu(self) -> str:
        return f"ninfer_{self.stem}_quantize"

    @property
    def block_elems(self) -> int:
        return self.schema.block_elems

    @property
    def record_bytes(self) -> int:
        return self.schema.record_bytes


QUANTIZE_TARGETS = MappingProxyType({t.schema: t for t in (
    QuantizeTarget(q8_k, "q8k", "spec/quantized-ops.md §4", "quantized.quantize_q8k",
                   "qquantize", "nq_q8k_quantize_block"),
    QuantizeTarget(q8_0, "q80", f"{_GGUF} §3", "quant_blocks.quantize_q80",
                   "qquantize_q80", "nq_q80_quantize_block"),
)})


def quantize_target(schema) -> QuantizeTarget | None:
    return QUANTIZE_TARGETS.get(schema) if isinstance(schema, QuantSchema) else None


def _lookup(name: str) -> QuantSchema:
    return SCHEMAS[name]


class _QuantNamespace:
    """``I.quant``: read-only attribute access to the closed schema table."""

    __slots__ = ()

    def __getattr__(self, name):
        try:
            return SCHEMAS[name]
        except KeyError:
            raise AttributeError(f"I.quant has no schema {name!r}; the closed set is "
                                 f"{', '.join(SCHEMAS)}") from None

    def __setattr__(self, key, value):
        raise AttributeError("I.quant is closed: schemas cannot be added or replaced")

    def __delattr__(self, key):
        raise AttributeError("I.quant is closed")

    def __dir__(self):
        return list(SCHEMAS)

    def __iter__(self):
        return iter(SCHEMAS.values())

    def __contains__(self, item):
        return any(item is s for s in SCHEMAS.values())

    def __repr__(self):
        return f"I.quant({', '.join(SCHEMAS)})"


namespace = _QuantNamespace()
