"""The object cache against planted, foreign and hostile entries and directories.

The victim compiles a module whose function returns 1; the "attacker" plants the
object code of a module with the same function returning 666 under the victim's cache
key, with every header field an outsider can compute. The victim must get 1 (a miss,
recompiled) in every case: only the cache's own entries, authenticated with the
directory's secret key, are ever linked. With root, the attacker is a real second uid.
"""
from __future__ import annotations

import ctypes
import hashlib
import hmac
import os
import shutil
import stat
import struct
import subprocess
import sys
import tempfile
import threading

import pytest

import ninfer_ir as I
from ninfer_ir.backends.llvm.runtime import jit as J
from ninfer_ir.backends.llvm.runtime import objcache as C

VICTIM = "define i64 @answer() {\n  ret i64 1\n}\n"
EVIL = "define i64 @answer() {\n  ret i64 666\n}\n"
OTHER_UID = 4242
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="a second uid needs root")


def run_victim(cache_dir):
    """(what the victim's function returns, whether it came from the cache)."""
    jit = J.JITModule(VICTIM, isa="portable", cache_dir=cache_dir)
    return jit.get("answer", ctypes.c_int64, [])(), jit.cache_hit


@pytest.fixture(scope="module")
def evil_object():
    return J.JITModule(EVIL, isa="portable", use_cache=False).object_code


@pytest.fixture(scope="module")
def victim_key():
    return J.cache_key(VICTIM, J.host_target("portable"))


def unkeyed_entry(key, payload, version=C.CACHE_FORMAT_VERSION, digest=None):
    """An entry with everything an outsider can compute: magic, version, key, length and
    an unkeyed (or a wrong key's) digest."""
    return C._HEADER.pack(C._MAGIC, version, key, len(payload),
                          digest or hashlib.sha256(payload).digest()) + payload


@pytest.fixture
def own_cache(tmp_path):
    """A cache directory the victim has used (so it has its key and a genuine entry)."""
    cache = tmp_path / "cache"
    assert run_victim(cache) == (1, False)
    assert run_victim(cache) == (1, True)
    return cache


def plant(cache, key, blob):
    path = C.ObjectCache(cache).path_for(key)
    path.unlink(missing_ok=True)
    path.write_bytes(blob)
    path.chmod(0o600)
    return path


@pytest.mark.parametrize("forgery", ["old format, sha256", "sha256", "another key's HMAC"])
def test_a_planted_entry_without_the_key_is_never_run(own_cache, tmp_path, evil_object,
                                                      victim_key, forgery):
    if forgery == "another key's HMAC":
        attacker = C.ObjectCache(tmp_path / "attacker")
        attacker.store(victim_key, evil_object)     # a valid entry of the attacker's cache
        blob = attacker.path_for(victim_key).read_bytes()
    else:
        version = 1 if forgery.startswith("old") else C.CACHE_FORMAT_VERSION
        blob = unkeyed_entry(victim_key, evil_object, version)
    plant(own_cache, victim_key, blob)
    assert run_victim(own_cache) == (1, False)
    assert run_victim(own_cache) == (1, True)       # rebuilt by the victim


def test_a_damaged_payload_behind_a_valid_looking_header_is_a_miss(own_cache, evil_object,
                                                                    victim_key):
    """Formerly a crash (SIGSEGV/SIGABRT in the linker): run in a child process."""
    damaged = bytearray(evil_object)
    for i in range(64, len(damaged), 97):
        damaged[i] ^= 0x5A
    plant(own_cache, victim_key, unkeyed_entry(victim_key, bytes(damaged)))
    code = (f"import sys; sys.path.insert(0, {ROOT!r}); "
            f"from tests.backends.test_cpu_cache_safety import run_victim; "
            f"print(run_victim({str(own_cache)!r}))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "(1, False)"


def _valid_evil_entry(cache, key, evil_object):
    """The evil object stored by the cache itself under ``key`` (so it carries a valid
    HMAC): only the file checks stand between it and the victim."""
    C.ObjectCache(cache).store(key, evil_object)
    return C.ObjectCache(cache).path_for(key)


@as_root
def test_an_entry_owned_by_another_user_is_refused(own_cache, evil_object, victim_key):
    path = _valid_evil_entry(own_cache, victim_key, evil_object)
    os.chown(path, OTHER_UID, OTHER_UID)
    assert run_victim(own_cache) == (1, False)


def test_an_entry_writable_by_others_is_refused(own_cache, evil_object, victim_key):
    path = _valid_evil_entry(own_cache, victim_key, evil_object)
    path.chmod(0o666)
    assert run_victim(own_cache) == (1, False)


def test_an_entry_is_never_read_through_a_symlink(own_cache, evil_object, victim_key):
    path = _valid_evil_entry(own_cache, victim_key, evil_object)
    stash = own_cache / "stash"
    path.rename(stash)
    path.symlink_to(stash.name)
    assert run_victim(own_cache) == (1, False)
    assert not path.is_symlink()                    # replaced by the rebuilt entry


def _load_in_time(cache, key, seconds=20):
    """``ObjectCache.load`` in a thread; fails (instead of hanging) if it blocks."""
    out = []
    t = threading.Thread(target=lambda: out.append(C.ObjectCache(cache).load(key)),
                         daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), "the cache blocked reading an entry"
    return out[0]


@pytest.mark.parametrize("kind", ["fifo", "symlink to /dev/zero", "sparse 1 TiB", "directory"])
def test_hostile_files_are_misses_without_blocking_or_allocating(own_cache, victim_key, kind):
    path = C.ObjectCache(own_cache).path_for(victim_key)
    path.unlink()
    if kind == "fifo":
        os.mkfifo(path, 0o600)
    elif kind == "symlink to /dev/zero":
        path.symlink_to("/dev/zero")
    elif kind == "sparse 1 TiB":
        with open(path, "wb") as fh:
            fh.truncate(1 << 40)
        path.chmod(0o600)
    else:
        path.mkdir(mode=0o700)
    assert _load_in_time(own_cache, victim_key) is None
    assert run_victim(own_cache) == (1, False)


@as_root
def test_a_shared_directory_of_another_user_is_not_used(evil_object, victim_key):
    """A real second uid plants an entry, in the format the cache used to accept, in a
    world-writable directory it owns; root compiling there must not run it and must
    not write there."""
    base = tempfile.mkdtemp(prefix="ninfer-shared-")
    try:
        os.chmod(base, 0o1777)                      # like /tmp
        shared = os.path.join(base, "shared")
        entry = C.ObjectCache(shared).path_for(victim_key).name
        planted = subprocess.run(
            ["/bin/sh", "-c", 'mkdir -m 777 "$1" && cat > "$1/$2"', "sh", shared, entry],
            input=unkeyed_entry(victim_key, evil_object, version=1), user=OTHER_UID,
            capture_output=True, timeout=60)
        if planted.returncode != 0:
            pytest.fail(f"could not act as uid {OTHER_UID}: {planted.stderr!r}")
        assert os.stat(os.path.join(shared, entry)).st_uid == OTHER_UID
        assert run_victim(shared) == (1, False)
        assert run_victim(shared) == (1, False)      # nothing was stored there either
        assert sorted(os.listdir(shared)) == [entry]
        info = C.cache_info(shared)
        assert not info.usable and f"uid {OTHER_UID}" in info.reason
    finally:
        shutil.rmtree(base)


def test_a_directory_writable_by_others_is_not_used(tmp_path):
    cache = tmp_path / "open"
    cache.mkdir()
    cache.chmod(0o777)
    assert run_victim(cache) == (1, False)
    assert run_victim(cache) == (1, False)
    assert list(cache.iterdir()) == []
    assert "write" in C.cache_info(cache).reason


def test_a_key_others_may_read_disables_the_cache(own_cache):
    (own_cache / C.KEY_FILE).chmod(0o644)
    assert run_victim(own_cache) == (1, False)


def test_directories_and_files_are_private_whatever_the_umask(tmp_path):
    old = os.umask(0o002)
    try:
        cache = tmp_path / "new" / "cache"
        run_victim(cache)
    finally:
        os.umask(old)
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    modes = {p.name: stat.S_IMODE(p.lstat().st_mode) for p in cache.iterdir()}
    assert len(modes) == 2 and set(modes.values()) == {0o600}
    assert len((cache / C.KEY_FILE).read_bytes()) == 32


def test_concurrent_first_stores_agree_on_one_key(tmp_path, victim_key):
    cache = tmp_path / "race"
    caches = [C.ObjectCache(cache) for _ in range(8)]
    threads = [threading.Thread(target=c.store, args=(victim_key, b"x" * 100)) for c in caches]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert C.ObjectCache(cache).load(victim_key) == b"x" * 100
    assert sorted(p.name for p in cache.iterdir()) == sorted([C.KEY_FILE, f"{victim_key.hex()}.o"])


def test_an_empty_cache_dir_is_refused_and_the_current_directory_untouched(tmp_path,
                                                                         monkeypatch):
    monkeypatch.chdir(tmp_path)

    @I.kernel
    def inc(x: I.Tensor[I.i32, "N"], y: I.Buffer[I.i32, "N"]):
        for i in I.range(x.shape[0]):
            y[i] = x[i] + 1

    with pytest.raises(I.OptionError, match="cache_dir=''"):
        I.compile(inc, "cpu", cache_dir="")
    with pytest.raises(I.OptionError):
        J.JITModule(VICTIM, isa="portable", cache_dir="")
    assert list(tmp_path.iterdir()) == []


def test_the_mac_covers_header_and_payload(own_cache, victim_key):
    """The format as documented: HMAC-SHA256 under the key file over the header's other
    fields and the payload."""
    blob = C.ObjectCache(own_cache).path_for(victim_key).read_bytes()
    magic, version, key, length, mac = C._HEADER.unpack_from(blob)
    secret = (own_cache / C.KEY_FILE).read_bytes()
    fields = blob[:C._HEADER.size - 32]
    want = hmac.new(secret, fields + blob[C._HEADER.size:], hashlib.sha256).digest()
    assert (magic, version, key, length) == (C._MAGIC, 2, victim_key,
                                             len(blob) - C._HEADER.size)
    assert mac == want
    assert struct.calcsize("<16sI32sQ32s") == C._HEADER.size
