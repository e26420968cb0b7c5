"""Cache control as a user drives it: ``NINFER_CACHE_DIR``, ``NINFER_CACHE_MAX_BYTES``,
``ninfer cache info|clear`` (all in subprocesses), least-recently-used eviction, and the
thread pool's object code following ``cache_dir``."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ninfer_ir.backends.llvm.runtime import objcache as C

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

KERNEL = """
import numpy as np
import ninfer_ir as I

@I.kernel
def twice(x: I.Tensor[I.i32, "N"], y: I.Buffer[I.i32, "N"]):
    for i in I.prange(x.shape[0]):
        y[i] = x[i] * 2

k = I.compile(twice, "cpu", threads=2, **OPTIONS)
x = np.arange(1000, dtype=np.int32)
y = np.zeros_like(x)
k(x, y)
assert np.array_equal(y, x * 2)
print("hit" if k.jit.cache_hit else "miss")
"""


def env_with(**values):
    env = {k: v for k, v in os.environ.items()
           if k not in ("NINFER_CACHE_DIR", "NINFER_CACHE_MAX_BYTES", "XDG_CACHE_HOME")}
    env["PYTHONPATH"] = ROOT
    env.update({k: str(v) for k, v in values.items()})
    return env


def compile_twice(folder, options="{}", **env):
    """Run a user script (in ``folder``) that compiles and checks a parallel kernel."""
    script = folder / "user_script.py"
    script.write_text(KERNEL.replace("**OPTIONS", f"**{options}"))
    return subprocess.run([sys.executable, str(script)], env=env_with(**env), cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


def ninfer(*args, **env):
    return subprocess.run([sys.executable, "-m", "ninfer_ir", *map(str, args)],
                          env=env_with(**env), cwd=ROOT, capture_output=True, text=True,
                          timeout=300)


def entries(directory):
    return sorted(p.name for p in directory.iterdir() if p.suffix == ".o") \
        if directory.exists() else []


def test_ninfer_cache_dir_chooses_the_directory(tmp_path):
    cache, xdg = tmp_path / "chosen", tmp_path / "xdg"
    first = compile_twice(tmp_path, NINFER_CACHE_DIR=cache, XDG_CACHE_HOME=xdg)
    assert first.returncode == 0, first.stderr
    assert first.stdout.split() == ["miss"]
    # the kernel and the thread pool's object code
    assert len(entries(cache)) == 2
    assert not xdg.exists()
    second = compile_twice(tmp_path, NINFER_CACHE_DIR=cache, XDG_CACHE_HOME=xdg)
    assert second.stdout.split() == ["hit"], second.stderr


def test_the_thread_pool_follows_cache_dir(tmp_path):
    cache, default = tmp_path / "given", tmp_path / "default"
    r = compile_twice(tmp_path, f"dict(cache_dir={str(cache)!r})", NINFER_CACHE_DIR=default)
    assert r.returncode == 0, r.stderr
    assert len(entries(cache)) == 2 and not default.exists()


def test_max_bytes_zero_disables_the_cache(tmp_path):
    cache = tmp_path / "off"
    for _ in range(2):
        r = compile_twice(tmp_path, NINFER_CACHE_DIR=cache, NINFER_CACHE_MAX_BYTES=0)
        assert r.stdout.split() == ["miss"], r.stderr
    assert not cache.exists()


def test_a_malformed_max_bytes_is_a_typed_error(tmp_path):
    r = compile_twice(tmp_path, NINFER_CACHE_DIR=tmp_path, NINFER_CACHE_MAX_BYTES="lots")
    assert r.returncode != 0 and "OptionError: NINFER_CACHE_MAX_BYTES" in r.stderr
    r = ninfer("cache", "info", NINFER_CACHE_MAX_BYTES="-1")
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "ninfer: error: NINFER_CACHE_MAX_BYTES must be a byte count (an integer >= 0), "
        "got '-1'"]


def test_ninfer_cache_info_and_clear(tmp_path):
    cache = tmp_path / "c"
    r = ninfer("cache", "info", NINFER_CACHE_DIR=cache, NINFER_CACHE_MAX_BYTES=1 << 20)
    assert r.returncode == 0, r.stderr
    assert f"directory: {cache}" in r.stdout and "not created yet" in r.stdout
    assert compile_twice(tmp_path, NINFER_CACHE_DIR=cache).returncode == 0
    size = sum((cache / n).stat().st_size for n in entries(cache))
    r = ninfer("cache", "info", NINFER_CACHE_DIR=cache, NINFER_CACHE_MAX_BYTES=1 << 20)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "state:     used" in lines and "entries:   2" in lines
    assert f"size:      {size / (1 << 20):.1f} MiB ({size} bytes)" in lines
    assert "limit:     1.0 MiB (1048576 bytes)" in lines
    r = ninfer("cache", "clear", NINFER_CACHE_DIR=cache)
    assert r.returncode == 0 and r.stdout.strip() == f"removed 2 entries from {cache}"
    assert entries(cache) == []
    r = ninfer("cache", "info", "--dir", cache)
    assert "entries:   0" in r.stdout.splitlines()


def test_ninfer_cache_on_an_untrusted_directory(tmp_path):
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    open_dir.chmod(0o777)
    r = ninfer("cache", "info", "--dir", open_dir)
    assert r.returncode == 1 and "NOT USED: mode 777 lets group or others write it" in r.stdout
    r = ninfer("cache", "clear", "--dir", open_dir)
    assert r.returncode == 2 and "is not used" in r.stderr


def test_ninfer_cache_usage():
    assert ninfer("cache").returncode == 2
    assert ninfer("cache", "drop").returncode == 2
    r = ninfer("cache", "--help")
    assert r.returncode == 0 and "NINFER_CACHE_DIR" in r.stdout


def _store(cache, name_byte, size, mtime):
    key = bytes([name_byte]) * 32
    assert cache.store(key, b"\x00" * size)
    os.utime(cache.path_for(key), ns=(mtime, mtime))
    return key


def test_least_recently_used_entries_are_evicted(tmp_path):
    entry = C._HEADER.size + 1000
    cache = C.ObjectCache(tmp_path / "lru", max_bytes=3 * entry)
    a = _store(cache, 1, 1000, 10**18)
    b = _store(cache, 2, 1000, 10**18 + 1)
    c = _store(cache, 3, 1000, 10**18 + 2)
    assert cache.load(a) is not None               # a hit makes `a` the most recent
    d = _store(cache, 4, 1000, 2 * 10**18)         # one entry over: `b` goes
    assert [cache.load(k) is not None for k in (a, b, c, d)] == [True, False, True, True]
    assert cache.info().total_bytes == 3 * entry and cache.info().entries == 3


def test_an_entry_larger_than_the_cap_is_not_stored(tmp_path):
    cache = C.ObjectCache(tmp_path / "small", max_bytes=500)
    assert not cache.store(b"\x07" * 32, b"\x00" * 1000)
    assert cache.info().entries == 0


@pytest.mark.parametrize("value, limit", [("", C.DEFAULT_MAX_BYTES), ("123", 123), ("0", 0)])
def test_max_bytes_from_the_environment(monkeypatch, value, limit):
    monkeypatch.setenv("NINFER_CACHE_MAX_BYTES", value)
    assert C.default_max_bytes() == limit
