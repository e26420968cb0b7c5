"""GGUF block formats: ggml's quantized blocks kept byte for byte.

A ``gguf_*`` weight is a row-major matrix whose rows are ``K / block_values``
consecutive byte images of ggml's ``block_*`` struct. :meth:`GgufFormat.decode`
takes ``uint8 [..., K / block_values * block_bytes]`` and returns
``float32 [..., K]``, equal bit for bit to ggml's ``dequantize_row_*``. A row
slice or gather copies whole rows; nothing in a block is renormalized.
``import_encoded`` keeps the blocks unchanged (a private read-only copy in a
:class:`GgufBlocks` record, with its provenance).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Callable, Mapping

import numpy as np

from ._base import (Category, Format, FormatError, array_arg, frozen, int_arg, owned, record_of,
                    require_dtype)


@dataclass(frozen=True, eq=False)
class GgufBlocks:
    """The ggml blocks of one GGUF tensor (read-only), with their provenance."""
    format: "GgufFormat"
    blocks: np.ndarray
    provenance: Mapping = field(default_factory=dict)

    def __post_init__(self):
        if not isinstance(self.format, GgufFormat):
            raise FormatError(f"GgufBlocks needs a gguf_* format, got {self.format!r}")
        object.__setattr__(self, "blocks", frozen(self.format.blocks(self.blocks)))
        object.__setattr__(self, "provenance", MappingProxyType(dict(self.provenance)))

    @property
    def shape(self) -> tuple[int, ...]:
        return self.blocks.shape


class GgufFormat(Format):
    """One GGUF block format (closed record)."""

    __slots__ = ("ggml_type", "block_values", "block_bytes", "_decode_blocks")

    def __init__(self, name: str, *, ggml_type: int, block_values: int, block_bytes: int,
                 decode_blocks: Callable[[np.ndarray], np.ndarray], methods=(), refusals=(),
                 _token=None):
        super().__init__(_token=_token, methods=methods, refusals=refusals, name=name,
                         category=Category.GGUF_BLOCK,
                         bits_per_weight=8 * block_bytes / block_values,
                         code=f"ggml type {ggml_type}: {block_values} values in a "
                              f"{block_bytes}-byte block",
                         scale="the block's own ggml scale fields",
                         code_interval=None, ggml_type=ggml_type, block_values=block_values,
                         block_bytes=block_bytes, _decode_blocks=decode_blocks)

    def row_bytes(self, k: int) -> int:
        """Bytes of one row of ``k`` values (``k`` a multiple of ``block_values``)."""
        k = int_arg(self.name, "K", k)
        if k % self.block_values:
            raise FormatError(f"{self.name}: K = {k} is not a positive multiple of "
                              f"{self.block_values}")
        return k // self.block_values * self.block_bytes

    def blocks(self, blocks) -> np.ndarray:
        """Check ``uint8 [..., whole blocks]`` geometry and return the array
        (``blocks`` may be a :class:`GgufBlocks` of this format)."""
        if isinstance(blocks, GgufBlocks):
            return record_of(self, "blocks", blocks, GgufBlocks).blocks
        blocks = array_arg(self.name, "blocks", blocks)
        require_dtype(self.name, "blocks", blocks, np.uint8)
        if blocks.ndim < 1 or blocks.shape[-1] < 1 or blocks.shape[-1] % self.block_bytes:
            raise FormatError(f"{self.name}: rows must hold whole {self.block_bytes}-byte "
                              f"blocks, got shape {blocks.shape}")
        return blocks

    def validate(self, blocks) -> None:
        """Check the geometry; every byte image of the block struct is a valid block."""
        self.blocks(blocks)

    def decode(self, blocks) -> np.ndarray:
        """``float32 [..., K]``: what ggml's ``dequantize_row_*`` computes."""
        blocks = self.blocks(blocks)
        flat = np.ascontiguousarray(blocks).reshape(-1, self.block_bytes)
        with np.errstate(all="ignore"):     # non-finite scale fields decode as ggml's do
            values = self._decode_blocks(flat)
        k = blocks.shape[-1] // self.block_bytes * self.block_values
        return np.ascontiguousarray(values, dtype=np.float32).reshape(*blocks.shape[:-1], k)


def import_encoded(fmt: GgufFormat, blocks) -> GgufBlocks:
    """Keep the blocks exactly: a private read-only copy after the geometry check."""
    return GgufBlocks(fmt, owned(fmt.blocks(blocks), np.uint8))
