"""A lazy GGUF reader: the file is memory-mapped, the header, metadata and tensor
table are parsed with ``struct`` and numpy, and every tensor is a read-only numpy view
into the map (no copy, no repack).

    f = GGUFFile(path)
    f.metadata["gemma3.block_count"]      # scalars and short arrays: Python values
    f.string_array("tokenizer.ggml.tokens")   # long arrays are read only when asked
    t = f.tensors["blk.0.attn_q.weight"]  # GGUFTensor: name, ggml type, rows-first shape
    t.records                              # u8 [rows, blocks per row, block bytes], a view
    t.decode()                             # float32 values, ``ninfer_ir.formats`` decoders

Damaged or truncated files raise :class:`GGUFError` with one line that says where.
Only what opening needs is parsed: a string array (the 262144-token vocabulary) is
skipped by its length prefixes and read, vectorised, when asked for.
"""
from __future__ import annotations

import mmap
import os
import struct

import numpy as np

from ninfer_ir.errors import FormatError

MAGIC = b"GGUF"
DEFAULT_ALIGNMENT = 32

# GGUF metadata value types: id -> (name, numpy dtype or None for string/array)
_SCALARS = {0: np.uint8, 1: np.int8, 2: np.uint16, 3: np.int16, 4: np.uint32, 5: np.int32,
            6: np.float32, 7: np.bool_, 10: np.uint64, 11: np.int64, 12: np.float64}
_STRING, _ARRAY = 8, 9
# float types stored plainly: ggml type id -> numpy dtype
_PLAIN = {0: np.float32, 1: np.float16, 28: np.float64, 24: np.int8, 25: np.int16,
          26: np.int32, 27: np.int64}
_BF16 = 30
# arrays longer than this are read on request (string_array / array), not at open
_EAGER_ARRAY_LIMIT = 64
_HUGE_PAGE = 2 << 20           # load_tensors keeps tensor addresses modulo this
_LOAD_CHUNK = 32 << 20         # load_tensors copies (and releases) this much at a time


class GGUFError(FormatError):
    """A file that is not a readable GGUF file (bad magic, unsupported version,
    truncated or inconsistent tables); the message names the file and the place."""


def _quant_formats() -> dict:
    """ggml type id -> the ``ninfer_ir.formats`` record that decodes it."""
    from ninfer_ir import formats
    out = {}
    for name in formats.names():
        if name.startswith("gguf_"):
            fmt = formats.get(name)
            out[int(fmt.ggml_type)] = fmt
    return out


_GGML_NAMES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0",
               9: "Q8_1", 10: "Q2_K", 11: "Q3_K", 12: "Q4_K", 13: "Q5_K", 14: "Q6_K",
               15: "Q8_K", 16: "IQ2_XXS", 17: "IQ2_XS", 18: "IQ3_XXS", 19: "IQ1_S",
               20: "IQ4_NL", 21: "IQ3_S", 22: "IQ2_S", 23: "IQ4_XS", 24: "I8", 25: "I16",
               26: "I32", 27: "I64", 28: "F64", 29: "IQ1_M", 30: "BF16"}


class GGUFTensor:
    """One tensor of a GGUF file: its name, ggml type, rows-first shape and a
    read-only view of its bytes in the file's memory map."""

    __slots__ = ("name", "ggml_type", "shape", "offset", "nbytes", "format", "_file")

    def __init__(self, file, name, ggml_type, shape, offset, nbytes, fmt):
        self._file, self.name, self.ggml_type = file, name, ggml_type
        self.shape, self.offset, self.nbytes, self.format = shape, offset, nbytes, fmt

    @property
    def type_name(self) -> str:
        return _GGML_NAMES.get(self.ggml_type, f"type {self.ggml_type}")

    @property
    def data(self) -> np.ndarray:
        """The tensor's bytes, u8 ``[nbytes]``, a read-only view into the map (or into
        the file's tensor memory after ``GGUFFile.load_tensors``)."""
        f = self._file
        return f._tensor_buf[self.offset - f._tensor_base:
                             self.offset - f._tensor_base + self.nbytes]

    @property
    def records(self) -> np.ndarray:
        """A quantized tensor's blocks as u8 ``[rows, blocks per row, block bytes]``
        (a view); a plain tensor's values with its shape (a view)."""
        if self.format is None:
            dtype = np.uint16 if self.ggml_type == _BF16 else _PLAIN[self.ggml_type]
            return self.data.view(dtype).reshape(self.shape)
        rows = int(np.prod(self.shape[:-1], dtype=np.int64))
        return self.data.reshape(rows, self.shape[-1] // self.format.block_values,
                                 self.format.block_bytes)

    def decode(self, rows: slice | None = None) -> np.ndarray:
        """float32 values with the rows-first shape, decoded by the ``ninfer_ir.formats``
        record of the tensor's type; with ``rows``, only those rows of the tensor seen
        as ``[rows, last axis]``."""
        if self.format is None:
            v = self.records
            if self.ggml_type == _BF16:
                v = (v.astype(np.uint32) << 16).view(np.float32)
            v = v.reshape(-1, self.shape[-1]) if rows is not None else v
            return np.asarray(v[rows] if rows is not None else v, dtype=np.float32)
        rec = self.records
        if rows is not None:
            rec = rec[rows]
        flat = rec.reshape(rec.shape[0], rec.shape[1] * rec.shape[2])
        out = self.format.decode(flat)
        return out.reshape((rec.shape[0], self.shape[-1]) if rows is not None else self.shape)

    def __repr__(self) -> str:
        return (f"GGUFTensor({self.name!r}, {self.type_name}, "
                f"{'x'.join(map(str, self.shape))})")


class GGUFFile:
    """A memory-mapped GGUF file (see the module docstring)."""

    def __init__(self, path: str | os.PathLike):
        self.path = os.fspath(path)
        try:
            with open(self.path, "rb") as fh:
                size = os.fstat(fh.fileno()).st_size
                if size < 24:
                    raise GGUFError(f"{self.path}: {size} bytes is too short for a GGUF "
                                    f"header (truncated?)")
                self._map = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        except OSError as e:
            raise GGUFError(f"{self.path}: cannot read: {e.strerror or e}") from None
        self._buf = np.frombuffer(self._map, dtype=np.uint8)
        self._tensor_buf, self._tensor_base = self._buf, 0    # tensor bytes: the map
        self.size = size
        self.metadata: dict = {}         # scalars, strings and arrays of <= 64 items
        self._lazy: dict = {}            # key -> (item type, count, offset or string spans)
        self.tensors: dict[str, GGUFTensor] = {}
        self._parse()

    # --- low-level reads with bounds checks -------------------------------------------
    def _need(self, off: int, n: int, what: str) -> None:
        if off + n > self.size:
            raise GGUFError(f"{self.path}: truncated: {what} at byte {off} needs {n} bytes, "
                            f"the file has {self.size}")

    def _unpack(self, fmt: str, off: int, what: str):
        n = struct.calcsize(fmt)
        self._need(off, n, what)
        return struct.unpack_from(fmt, self._map, off), off + n

    def _string(self, off: int, what: str) -> tuple[str, int]:
        (n,), off = self._unpack("<Q", off, what)
        self._need(off, n, what)
        raw = self._map[off:off + n]
        try:
            return raw.decode("utf-8"), off + n
        except UnicodeDecodeError:
            raise GGUFError(f"{self.path}: {what} at byte {off} is not UTF-8") from None

    # --- parsing ------------------------------------------------------------------------
    def _parse(self) -> None:
        if bytes(self._map[0:4]) != MAGIC:
            raise GGUFError(f"{self.path}: not a GGUF file (magic {bytes(self._map[0:4])!r}, "
                            f"expected b'GGUF')")
        (self.version,), off = self._unpack("<I", 4, "the version")
        if self.version not in (2, 3):
            raise GGUFError(f"{self.path}: GGUF version {self.version} is not supported "
                            f"(2 and 3 are)")
        (n_tensors, n_kv), off = self._unpack("<QQ", off, "the counts")
        self.kv_count = n_kv
        for i in range(n_kv):
            key, off = self._string(off, f"metadata key {i}")
            (vtype,), off = self._unpack("<I", off, f"the type of {key!r}")
            off = self._value(key, vtype, off)
        infos = []
        for i in range(n_tensors):
            name, off = self._string(off, f"tensor info {i}")
            (n_dims,), off = self._unpack("<I", off, f"the rank of tensor {name!r}")
            if n_dims > 8:
                raise GGUFError(f"{self.path}: tensor {name!r} has rank {n_dims}")
            dims, off = self._unpack(f"<{n_dims}Q", off, f"the shape of tensor {name!r}")
            (gtype, rel), off = self._unpack("<IQ", off, f"the type of tensor {name!r}")
            infos.append((name, dims, gtype, rel))
        align = self.metadata.get("general.alignment", DEFAULT_ALIGNMENT)
        if not isinstance(align, int) or align <= 0 or align & (align - 1):
            raise GGUFError(f"{self.path}: general.alignment {align} is not a power of two")
        self.data_offset = -(-off // align) * align
        quant = _quant_formats()
        for name, dims, gtype, rel in infos:
            self.tensors[name] = self._tensor(name, dims, gtype, rel, quant)

    def _value(self, key: str, vtype: int, off: int) -> int:
        if vtype in _SCALARS:
            dt = np.dtype(_SCALARS[vtype])
            self._need(off, dt.itemsize, f"the value of {key!r}")
            v = np.frombuffer(self._map, dt, 1, off)[0]
            self.metadata[key] = v.item()
            return off + dt.itemsize
        if vtype == _STRING:
            self.metadata[key], off = self._string(off, f"the value of {key!r}")
            return off
        if vtype != _ARRAY:
            raise GGUFError(f"{self.path}: metadata {key!r} has unknown value type {vtype}")
        (itype, count), off = self._unpack("<IQ", off, f"the array header of {key!r}")
        if itype in _SCALARS:
            n = np.dtype(_SCALARS[itype]).itemsize * count
            self._need(off, n, f"the array {key!r}")
            self._lazy[key] = (itype, count, off)
            off += n
        elif itype == _STRING:
            if count > (self.size - off) // 8:
                raise GGUFError(f"{self.path}: truncated: the array {key!r} of {count} "
                                f"strings does not fit in the file")
            starts, lengths, off = self._strings(off, count, key)
            self._lazy[key] = (itype, count, (starts, lengths))
        else:
            raise GGUFError(f"{self.path}: metadata {key!r} is an array of type {itype}, "
                            f"which is not supported")
        if count <= _EAGER_ARRAY_LIMIT:
            self.metadata[key] = (self.string_array(key) if itype == _STRING
                                  else self.array(key).tolist())
        return off

    def _strings(self, off: int, count: int, key: str):
        """(starts, lengths, end) of ``count`` length-prefixed strings at ``off``."""
        mm, size = self._map, self.size
        unpack = struct.Struct("<Q").unpack_from
        starts = np.empty(count, np.int64)
        lengths = np.empty(count, np.int64)
        for i in range(count):
            if off + 8 > size:
                raise GGUFError(f"{self.path}: truncated: string {i} of {key!r} at byte {off}")
            n = unpack(mm, off)[0]
            starts[i], lengths[i] = off + 8, n
            off += 8 + n
        if off > size:
            raise GGUFError(f"{self.path}: truncated: the strings of {key!r} run past the end")
        return starts, lengths, off

    def _tensor(self, name, dims, gtype, rel, quant) -> GGUFTensor:
        shape = tuple(int(d) for d in reversed(dims))        # rows first
        if not shape:
            raise GGUFError(f"{self.path}: tensor {name!r} has no dimensions")
        count = int(np.prod(shape, dtype=object)) if shape else 1
        fmt = quant.get(gtype)
        if fmt is not None:
            k = shape[-1] if shape else 1
            if k % fmt.block_values:
                raise GGUFError(f"{self.path}: tensor {name!r}: rows of {k} values are not "
                                f"whole {_GGML_NAMES.get(gtype, gtype)} blocks of "
                                f"{fmt.block_values}")
            nbytes = count // fmt.block_values * fmt.block_bytes
        elif gtype in _PLAIN or gtype == _BF16:
            nbytes = count * (2 if gtype == _BF16 else np.dtype(_PLAIN[gtype]).itemsize)
        else:
            raise GGUFError(f"{self.path}: tensor {name!r} has ggml type {gtype}, which no "
                            f"ninfer_ir.formats record decodes")
        off = self.data_offset + rel
        self._need(off, nbytes, f"the data of tensor {name!r}")
        return GGUFTensor(self, name, gtype, shape, off, nbytes, fmt)

    # --- long arrays, on request ----------------------------------------------------------
    def array(self, key: str) -> np.ndarray:
        """A numeric metadata array as a read-only numpy view (no copy)."""
        itype, count, off = self._entry(key)
        if itype == _STRING:
            raise GGUFError(f"{self.path}: metadata {key!r} is an array of strings; use "
                            f"string_array")
        return np.frombuffer(self._map, _SCALARS[itype], count, off)

    def string_bytes(self, key: str) -> tuple[np.ndarray, np.ndarray]:
        """A string array as (``raw``: the bytes of all its strings, concatenated, u8;
        ``bounds``: i64 ``[count + 1]``), string ``i`` being ``raw[bounds[i]:bounds[i+1]]``.
        One vectorised gather from the map."""
        itype, count, (starts, lengths) = self._entry(key)
        if itype != _STRING:
            raise GGUFError(f"{self.path}: metadata {key!r} is not an array of strings")
        bounds = np.zeros(count + 1, np.int64)
        np.cumsum(lengths, out=bounds[1:])
        idx = np.repeat(starts - bounds[:-1], lengths) + np.arange(bounds[-1])
        return self._buf[idx], bounds

    def string_array(self, key: str) -> list[str]:
        """A string array as Python strings."""
        raw, bounds = self.string_bytes(key)
        data = raw.tobytes()
        return [data[bounds[i]:bounds[i + 1]].decode("utf-8", "replace")
                for i in range(len(bounds) - 1)]

    def _entry(self, key: str):
        if key not in self._lazy:
            raise GGUFError(f"{self.path}: no metadata array {key!r}")
        return self._lazy[key]

    def load_tensors(self) -> None:
        """Copy the tensor data into memory of the process, as stored (the same bytes in
        the same layout, each tensor at the same offset modulo 2 MiB as in the file), and
        release the map's pages of it as the copy proceeds, so resident memory holds the
        bytes once. Tensor views taken afterwards read the copy; those taken before keep
        reading the map. The copy is read-only like the map.

        Why: the map is file cache in 4 KB pages, and streaming a matrix through it is
        slower than through anonymous memory, which the kernel backs with 2 MiB pages
        (fewer TLB misses; hardware prefetchers stop at page boundaries): the 262144x640
        Q8_0 output projection of Gemma 3 270M read 13% faster (1 thread, cold,
        docs/model.md)."""
        if self._tensor_buf is not self._buf or not self.tensors:
            return
        start = self.data_offset
        end = max(t.offset + t.nbytes for t in self.tensors.values())
        raw = np.empty(end - start + _HUGE_PAGE, np.uint8)
        shift = (start - raw.ctypes.data) % _HUGE_PAGE
        buf = raw[shift:shift + end - start]
        release = getattr(self._map, "madvise", None)
        for at in range(0, end - start, _LOAD_CHUNK):
            stop = min(at + _LOAD_CHUNK, end - start)
            buf[at:stop] = self._buf[start + at:start + stop]
            if release is not None:         # drop the map's pages just read
                first = (start + at) // mmap.PAGESIZE * mmap.PAGESIZE
                release(mmap.MADV_DONTNEED, first, start + stop - first)
        buf.flags.writeable = False
        self._tensor_buf, self._tensor_base = buf, start

    def close(self) -> None:
        """Release the map (views taken from it must not be used afterwards)."""
        self._buf = None
        try:
            self._map.close()
        except BufferError:          # views still alive: the map closes with them
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self) -> str:
        return (f"GGUFFile({self.path!r}: v{self.version}, {len(self.tensors)} tensors, "
                f"{len(self.metadata)} metadata keys)")
