"""The decode examples run as a user runs them (a subprocess), small, and exit 0 on
bit-exact success."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = ("int4_decode_gemv.py", "t2_gemv.py", "q2_gemv.py")


def example(name, *args):
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, os.path.join(ROOT, "examples", name),
                           *map(str, args)], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.parametrize("name", EXAMPLES)
def test_help(name):
    r = example(name, "--help")
    assert r.returncode == 0 and r.stdout.startswith("usage:")


def test_int4_decode_gemv():
    r = example("int4_decode_gemv.py", "--n", 40, "--k", 192, "--repeat", 2)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("func @int4_gemv(")
    assert "I.decode GEMV 40x192 on cpu" in r.stdout
    assert r.stdout.count("bit-exact against the interpreter: True") == 2


@pytest.mark.parametrize("target", ["cpu", "interp"])
def test_t2_gemv(target):
    r = example("t2_gemv.py", "--n", 37, "--k", 301, "--target", target, "--repeat", 2)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("func @t2_gemv(")
    assert f"T2 GEMV 37x301 on {target}" in r.stdout
    assert "bit-exact against the interpreter: True" in r.stdout


def test_q2_gemv():
    r = example("q2_gemv.py", "--n", 33, "--k", 192, "--repeat", 2, "--quiet")
    assert r.returncode == 0, r.stderr
    assert "Q2 GEMV 33x192 on cpu" in r.stdout
    assert "decoded weights equal ggml's Q2_0 decode bit for bit: True" in r.stdout
    assert "bit-exact against the interpreter: True" in r.stdout


def test_bad_sizes_are_refused():
    r = example("q2_gemv.py", "--k", 100)
    assert r.returncode == 2 and "multiple of 64" in r.stderr
