"""The on-disk cache of compiled object code, safe to point at any directory.

An entry is ``<key hex>.o``: a header (magic, format version, key, payload length,
HMAC-SHA256) followed by the object code. The HMAC covers the header fields and the
payload under a secret key of 32 random bytes kept in the directory, in a file only
its owner may read (created once, atomically). Whoever cannot read that key cannot
make an entry the cache accepts, so a planted or damaged entry is a miss and is
rebuilt, never linked into the process.

The directory is used only when it is a directory owned by the effective user and
not writable by group or others; one we create is created ``0700``. Everything in
it is reached through one descriptor of that directory, so a path swapped after
the check is not followed. An entry is read only when it is a regular file (opened
with ``O_NOFOLLOW | O_NONBLOCK``, so never through a symlink and never blocking on
a FIFO), owned by the user, not writable by group or others, and at most
``MAX_ENTRY_BYTES`` long. Entries are written to a temporary ``0600`` file and
renamed into place. Any entry that fails a check is a miss; a directory that fails
one disables the cache (no reads, no writes); cache I/O never fails a compilation.

The cache holds at most ``max_bytes`` (``NINFER_CACHE_MAX_BYTES``, default 512 MiB;
0 disables the cache): after each store the least recently used entries (by
modification time, which a hit refreshes) are removed until it fits.

Location: ``cache_dir=`` of ``I.compile``, else ``$NINFER_CACHE_DIR``, else
``$XDG_CACHE_HOME/ninfer_ir/llvm``, else ``~/.cache/ninfer_ir/llvm``. ``cache_info``
and ``clear_cache`` back ``ninfer cache info|clear``.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
import stat
import struct
from dataclasses import dataclass
from pathlib import Path

from ninfer_ir.errors import OptionError

__all__ = ["ObjectCache", "CacheInfo", "default_cache_dir", "default_max_bytes",
           "cache_info", "clear_cache", "CACHE_FORMAT_VERSION", "MAX_ENTRY_BYTES",
           "DEFAULT_MAX_BYTES"]

CACHE_FORMAT_VERSION = 2
MAX_ENTRY_BYTES = 256 << 20
DEFAULT_MAX_BYTES = 512 << 20
KEY_FILE = ".ninfer-cache-key"
_KEY_BYTES = 32

_MAGIC = b"NINFER-LLVM-OBJ\x00"
_HEADER = struct.Struct("<16sI32sQ32s")   # magic, format version, key, length, HMAC-SHA256
_ENTRY = re.compile(r"[0-9a-f]{64}\.o")
_TEMP_PREFIX = ".tmp-"

_O_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_O_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def default_cache_dir() -> Path:
    """``$NINFER_CACHE_DIR``, else ``$XDG_CACHE_HOME/ninfer_ir/llvm``, else
    ``~/.cache/ninfer_ir/llvm`` (an empty variable counts as unset)."""
    chosen = os.environ.get("NINFER_CACHE_DIR")
    if chosen:
        return Path(chosen)
    base = os.environ.get("XDG_CACHE_HOME")
    root = Path(base) if base else Path.home() / ".cache"
    return root / "ninfer_ir" / "llvm"


def default_max_bytes() -> int:
    """``$NINFER_CACHE_MAX_BYTES`` (a byte count; 0 disables the cache), else 512 MiB."""
    text = os.environ.get("NINFER_CACHE_MAX_BYTES", "").strip()
    if not text:
        return DEFAULT_MAX_BYTES
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise OptionError(f"NINFER_CACHE_MAX_BYTES must be a byte count (an integer >= 0), "
                          f"got {text!r}")
    return value


def _why_untrusted(st: os.stat_result, private: bool = False) -> str | None:
    """Why a file or directory of the cache may not be trusted, or None."""
    if st.st_uid != os.geteuid():
        return f"owned by uid {st.st_uid}, not by this user (uid {os.geteuid()})"
    if st.st_mode & (0o077 if private else 0o022):
        may = "read or write" if private else "write"
        return f"mode {stat.S_IMODE(st.st_mode):o} lets group or others {may} it"
    return None


def _read_all(fd: int, size: int) -> bytes:
    chunks, left = [], size
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


@dataclass(frozen=True)
class CacheInfo:
    """What ``ninfer cache info`` prints."""
    directory: Path
    usable: bool
    reason: str          # why the directory is not used ("" when usable or absent)
    exists: bool
    entries: int
    total_bytes: int
    max_bytes: int


class _Dir:
    """An open descriptor of a checked cache directory (a context manager)."""

    def __init__(self, fd: int):
        self.fd = fd

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        os.close(self.fd)

    def entries(self):
        """(name, size, mtime) of the entries (regular files with an entry's name)."""
        out = []
        for name in os.listdir(self.fd):
            if not _ENTRY.fullmatch(name):
                continue
            try:
                st = os.stat(name, dir_fd=self.fd, follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                out.append((name, st.st_size, st.st_mtime_ns))
        return out

    def unlink(self, name: str) -> bool:
        try:
            os.unlink(name, dir_fd=self.fd)
            return True
        except OSError:
            return False

    def write_new(self, data: bytes) -> str:
        """A new ``0600`` temporary file holding ``data``; returns its name."""
        name = f"{_TEMP_PREFIX}{secrets.token_hex(8)}"
        fd = os.open(name, _O_CREATE, 0o600, dir_fd=self.fd)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        except BaseException:
            os.close(fd)
            self.unlink(name)
            raise
        os.close(fd)
        return name

    def read_key(self) -> bytes | None:
        try:
            fd = os.open(KEY_FILE, _O_READ, dir_fd=self.fd)
        except OSError:
            return None
        try:
            st = os.fstat(fd)
            if (not stat.S_ISREG(st.st_mode) or _why_untrusted(st, private=True)
                    or st.st_size != _KEY_BYTES):
                return None
            key = _read_all(fd, _KEY_BYTES)
            return key if len(key) == _KEY_BYTES else None
        finally:
            os.close(fd)

    def key(self) -> bytes | None:
        """The directory's secret key, created (atomically, ``0600``) when missing."""
        key = self.read_key()
        if key is not None:
            return key
        try:
            os.stat(KEY_FILE, dir_fd=self.fd, follow_symlinks=False)
            return None                       # there but unusable: leave it alone
        except FileNotFoundError:
            pass
        tmp = self.write_new(secrets.token_bytes(_KEY_BYTES))
        try:
            os.link(tmp, KEY_FILE, src_dir_fd=self.fd, dst_dir_fd=self.fd)
        except FileExistsError:               # another process made one first: use it
            pass
        finally:
            self.unlink(tmp)
        return self.read_key()


class ObjectCache:
    """Compiled object files on disk, one file per key (``<sha256 hex>.o``).

    ``directory`` defaults to ``default_cache_dir()`` and ``max_bytes`` to
    ``default_max_bytes()``; ``directory=""`` is refused (it would mean the current
    directory)."""

    def __init__(self, directory: str | os.PathLike | None = None,
                 max_bytes: int | None = None):
        if directory is not None and os.fspath(directory) == "":
            raise OptionError("cache_dir='' names no directory; pass a path, or None for "
                              "the default cache")
        self.directory = Path(directory) if directory is not None else default_cache_dir()
        self.max_bytes = default_max_bytes() if max_bytes is None else int(max_bytes)

    def path_for(self, key: bytes) -> Path:
        return self.directory / f"{key.hex()}.o"

    # --- the directory --------------------------------------------------------------
    def _open(self, create: bool) -> tuple[_Dir | None, str]:
        """The checked directory (None when absent or untrusted) and why not."""
        if create:
            try:
                self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            except OSError as e:
                return None, f"cannot create it ({e.strerror or e})"
        try:
            fd = os.open(self.directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except FileNotFoundError:
            return None, ""
        except OSError as e:
            return None, f"cannot open it ({e.strerror or e})"
        why = _why_untrusted(os.fstat(fd))
        if why is not None:
            os.close(fd)
            return None, why
        return _Dir(fd), ""

    # --- entries ----------------------------------------------------------------------
    @staticmethod
    def _mac(secret: bytes, header_fields: bytes, payload: bytes) -> bytes:
        mac = hmac.new(secret, header_fields, hashlib.sha256)
        mac.update(payload)
        return mac.digest()

    def load(self, key: bytes) -> bytes | None:
        """The stored object for ``key``, or None when absent or not to be trusted."""
        if self.max_bytes == 0:
            return None
        try:
            d, _ = self._open(create=False)
            if d is None:
                return None
            with d:
                secret = d.read_key()
                if secret is None:
                    return None
                fd = os.open(self.path_for(key).name, _O_READ, dir_fd=d.fd)
                try:
                    st = os.fstat(fd)
                    if (not stat.S_ISREG(st.st_mode) or _why_untrusted(st)
                            or not _HEADER.size <= st.st_size <= MAX_ENTRY_BYTES):
                        return None
                    blob = _read_all(fd, st.st_size)
                    payload = self._check(secret, key, blob)
                    if payload is not None:
                        os.utime(fd)          # most recently used
                    return payload
                finally:
                    os.close(fd)
        except OSError:
            return None

    def _check(self, secret: bytes, key: bytes, blob: bytes) -> bytes | None:
        if len(blob) < _HEADER.size:
            return None
        magic, version, stored_key, length, mac = _HEADER.unpack_from(blob)
        payload = blob[_HEADER.size:]
        if (magic != _MAGIC or version != CACHE_FORMAT_VERSION or stored_key != key
                or length != len(payload)):
            return None
        fields = _HEADER.pack(magic, version, stored_key, length, b"")[:-32]
        if not hmac.compare_digest(mac, self._mac(secret, fields, payload)):
            return None
        return payload

    def store(self, key: bytes, payload: bytes) -> bool:
        """Write atomically (temporary ``0600`` file + rename), then evict down to
        ``max_bytes``; False if nothing was stored."""
        if self.max_bytes == 0 or _HEADER.size + len(payload) > min(MAX_ENTRY_BYTES,
                                                                    self.max_bytes):
            return False
        try:
            d, _ = self._open(create=True)
            if d is None:
                return False
            with d:
                secret = d.key()
                if secret is None:
                    return False
                fields = _HEADER.pack(_MAGIC, CACHE_FORMAT_VERSION, key, len(payload),
                                      b"")[:-32]
                tmp = d.write_new(fields + self._mac(secret, fields, payload) + payload)
                try:
                    os.replace(tmp, self.path_for(key).name, src_dir_fd=d.fd,
                               dst_dir_fd=d.fd)
                except OSError:
                    d.unlink(tmp)
                    return False
                self._evict(d, keep=self.path_for(key).name)
                return True
        except OSError:
            return False

    def _evict(self, d: _Dir, keep: str) -> None:
        """Remove the least recently used entries until the rest fit ``max_bytes``."""
        entries = d.entries()
        total = sum(size for _, size, _ in entries)
        for name, size, _ in sorted(entries, key=lambda e: e[2]):
            if total <= self.max_bytes:
                break
            if name != keep and d.unlink(name):
                total -= size

    # --- control -------------------------------------------------------------------
    def info(self) -> CacheInfo:
        d, why = self._open(create=False)
        if d is None:
            return CacheInfo(self.directory, False, why, bool(why), 0, 0, self.max_bytes)
        with d:
            entries = d.entries()
        return CacheInfo(self.directory, True, "", True, len(entries),
                         sum(size for _, size, _ in entries), self.max_bytes)

    def clear(self) -> int:
        """Remove every entry and leftover temporary file; returns the entries removed.
        Raises ``OptionError`` for a directory the cache does not trust."""
        d, why = self._open(create=False)
        if d is None:
            if why:
                raise OptionError(f"the cache directory {self.directory} is not used: {why}")
            return 0
        with d:
            removed = sum(d.unlink(name) for name, _, _ in d.entries())
            for name in os.listdir(d.fd):
                if name.startswith(_TEMP_PREFIX):
                    d.unlink(name)
        return removed


def cache_info(directory: str | os.PathLike | None = None) -> CacheInfo:
    """The cache's directory, whether it is used, its entries and size, and its limit."""
    return ObjectCache(directory).info()


def clear_cache(directory: str | os.PathLike | None = None) -> int:
    """Empty the cache; returns how many entries were removed."""
    return ObjectCache(directory).clear()
