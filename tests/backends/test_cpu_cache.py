"""The on-disk object cache behind ``I.compile(..., target="cpu", cache_dir=...)``.

Behaviour only, no timings: a second compile with the same directory loads the stored
object and skips LLVM optimisation and code generation (counted by wrapping the JIT's
optimiser), a damaged entry of any kind is ignored and rebuilt, ``cache_dir=`` picks
the directory (the default one stays untouched), a directory that cannot be written
never fails a compile, and a kernel loaded from the cache gives the interpreter's bits.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

import ninfer_ir as I
from ninfer_ir.backends.llvm.runtime import jit as jit_module
from ninfer_ir.backends.llvm.runtime import objcache
from ninfer_ir.backends.llvm.runtime.launcher import CompiledKernel
from tests.kernels import KERNELS, assert_same_bits

GEMV = KERNELS["q4k_gemv"]


@pytest.fixture
def optimizer_calls(monkeypatch):
    """How many times LLVM's optimisation pipeline ran (once per module built)."""
    calls = []
    original = jit_module._compile_object

    def counting(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(jit_module, "_compile_object", counting)
    return calls


@pytest.fixture(autouse=True)
def default_cache_elsewhere(monkeypatch, tmp_path):
    """Point the default cache at an empty folder of this test, to see what lands there."""
    home = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    monkeypatch.delenv("NINFER_CACHE_DIR", raising=False)
    monkeypatch.delenv("NINFER_CACHE_MAX_BYTES", raising=False)
    return home / "ninfer_ir" / "llvm"


def entries(directory):
    return sorted(p for p in directory.iterdir() if p.suffix == ".o") if directory.exists() else []


def gemv_agrees(kernel, seed=0):
    rng = np.random.default_rng(seed)
    w, x, y = GEMV.make_inputs(rng, N=7, G=3)
    want = y.copy()
    I.interpret(GEMV.kernel, w, x, want)
    kernel(w, x, y)
    assert_same_bits(y, want)


def test_second_compile_hits_and_skips_llvm(tmp_path, optimizer_calls):
    cache = tmp_path / "cache"
    first = I.compile(GEMV.kernel, target="cpu", cache_dir=cache)
    assert first.jit.cache_hit is False
    assert len(optimizer_calls) == 1
    assert len(entries(cache)) == 1
    second = I.compile(GEMV.kernel, target="cpu", cache_dir=cache)
    assert second.jit.cache_hit is True
    assert len(optimizer_calls) == 1                     # no optimisation, no codegen
    assert second.jit.key == first.jit.key
    assert second.jit.object_code == first.jit.object_code
    assert len(entries(cache)) == 1
    gemv_agrees(second)


def test_a_different_kernel_or_isa_gets_its_own_entry(tmp_path):
    cache = tmp_path / "cache"
    gemv = I.compile(GEMV.kernel, target="cpu", cache_dir=cache)
    gemm = I.compile(KERNELS["q4k_gemm"].kernel, target="cpu", cache_dir=cache)
    assert gemv.jit.key != gemm.jit.key and not gemm.jit.cache_hit
    assert len(entries(cache)) == 2
    if jit_module.host_target().isa == "portable":
        return
    lowered = I.lower(GEMV.kernel, "cpu")
    portable = CompiledKernel(lowered, isa="portable", cache_dir=cache)
    assert not portable.jit.cache_hit and portable.jit.key != gemv.jit.key
    assert len(entries(cache)) == 3
    assert CompiledKernel(lowered, isa="portable", cache_dir=cache).jit.cache_hit
    gemv_agrees(portable)


def _flip_payload_byte(blob: bytes) -> bytes:
    out = bytearray(blob)
    out[-1] ^= 0x01
    return bytes(out)


def _wrong_version(blob: bytes) -> bytes:
    out = bytearray(blob)
    out[16] ^= 0xFF                                      # the format version after the magic
    return bytes(out)


DAMAGE = {
    "payload byte flipped": _flip_payload_byte,
    "truncated": lambda blob: blob[:len(blob) // 2],
    "header only": lambda blob: blob[:objcache._HEADER.size],
    "empty": lambda blob: b"",
    "bad magic": lambda blob: b"X" + blob[1:],
    "wrong format version": _wrong_version,
    "garbage": lambda blob: os.urandom(len(blob)),
    "extra bytes": lambda blob: blob + b"\x00" * 16,
}


@pytest.fixture(scope="module")
def gemv_entry(tmp_path_factory):
    """(file name, bytes, the directory's secret key) of the GEMV's intact cache entry,
    built once."""
    cache = tmp_path_factory.mktemp("gemv-entry")
    I.compile(GEMV.kernel, target="cpu", cache_dir=cache)
    (entry,) = entries(cache)
    return entry.name, entry.read_bytes(), (cache / objcache.KEY_FILE).read_bytes()


def with_key(cache, key):
    """``cache`` created 0700 holding the secret ``key`` (0600), as the cache makes them."""
    cache.mkdir(mode=0o700)
    path = cache / objcache.KEY_FILE
    path.write_bytes(key)
    path.chmod(0o600)


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_entry_is_rebuilt(tmp_path, optimizer_calls, gemv_entry, damage):
    cache = tmp_path / "cache"
    name, good, key = gemv_entry
    with_key(cache, key)
    entry = cache / name
    entry.write_bytes(good)
    assert I.compile(GEMV.kernel, target="cpu", cache_dir=cache).jit.cache_hit
    entry.write_bytes(DAMAGE[damage](good))
    rebuilt = I.compile(GEMV.kernel, target="cpu", cache_dir=cache)
    assert rebuilt.jit.cache_hit is False
    assert len(optimizer_calls) == 1
    gemv_agrees(rebuilt, seed=1)
    assert entry.read_bytes() == good                    # rewritten whole
    again = I.compile(GEMV.kernel, target="cpu", cache_dir=cache)
    assert again.jit.cache_hit is True and len(optimizer_calls) == 1
    assert entries(cache) == [entry]


def test_an_entry_stored_under_another_key_is_not_used(tmp_path, optimizer_calls):
    cache = tmp_path / "cache"
    gemv = I.compile(GEMV.kernel, target="cpu", cache_dir=cache)
    gemm = I.compile(KERNELS["q4k_gemm"].kernel, target="cpu", cache_dir=cache)
    gemv_path = jit_module.ObjectCache(cache).path_for(gemv.jit.key)
    gemm_path = jit_module.ObjectCache(cache).path_for(gemm.jit.key)
    gemv_path.write_bytes(gemm_path.read_bytes())        # intact, but for the other kernel
    again = I.compile(GEMV.kernel, target="cpu", cache_dir=cache)
    assert again.jit.cache_hit is False and len(optimizer_calls) == 3
    gemv_agrees(again, seed=2)


def test_cache_dir_chooses_the_directory(tmp_path, default_cache_elsewhere, optimizer_calls):
    a, b = tmp_path / "a", tmp_path / "nested" / "b"
    I.compile(GEMV.kernel, target="cpu", cache_dir=a)
    assert I.compile(GEMV.kernel, target="cpu", cache_dir=str(a)).jit.cache_hit
    on_b = I.compile(GEMV.kernel, target="cpu", cache_dir=b)
    assert on_b.jit.cache_hit is False                   # b starts empty
    assert len(entries(a)) == len(entries(b)) == 1
    assert entries(default_cache_elsewhere) == []
    assert len(optimizer_calls) == 2
    default = I.compile(GEMV.kernel, target="cpu")
    assert default.jit.cache_hit is False
    assert len(entries(default_cache_elsewhere)) == 1
    assert I.compile(GEMV.kernel, target="cpu").jit.cache_hit


def test_the_byte_stride_variant_is_cached_as_well(tmp_path, optimizer_calls):
    cache = tmp_path / "cache"
    rng = np.random.default_rng(3)
    w, x, y = GEMV.make_inputs(rng, N=5, G=2)
    odd = np.ndarray((2, 256), np.float32, buffer=np.zeros(2 * 1025 + 8, np.uint8),
                     offset=1, strides=(1025, 4))
    odd[...] = x                                         # a row stride of 1025 bytes
    want = y.copy()
    I.interpret(GEMV.kernel, w, x, want)
    for expected_calls in (2, 2):
        kernel = I.compile(GEMV.kernel, target="cpu", cache_dir=cache)
        out = np.zeros_like(y)
        kernel(w, odd, out)                              # compiles or loads the byte variant
        assert_same_bits(out, want)
        assert len(optimizer_calls) == expected_calls
    assert len(entries(cache)) == 2


def test_an_unwritable_cache_never_fails_a_compile(tmp_path, optimizer_calls):
    blocker = tmp_path / "not-a-directory"
    blocker.write_bytes(b"a file where the cache folder should be")
    for calls in (1, 2):
        kernel = I.compile(GEMV.kernel, target="cpu", cache_dir=blocker)
        assert kernel.jit.cache_hit is False and len(optimizer_calls) == calls
        gemv_agrees(kernel)
    assert blocker.read_bytes() == b"a file where the cache folder should be"


def test_no_partial_entry_is_left_behind(tmp_path):
    cache = tmp_path / "cache"
    I.compile(GEMV.kernel, target="cpu", cache_dir=cache)
    I.compile(KERNELS["q4k_gemm"].kernel, target="cpu", cache_dir=cache)
    names = sorted(p.name for p in cache.iterdir() if p.name != objcache.KEY_FILE)
    assert len(names) == 2 and all(n.endswith(".o") and not n.startswith(".tmp") for n in names)
