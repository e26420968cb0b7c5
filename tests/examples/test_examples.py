"""Every example runs as a user runs it (a subprocess), small, and exits 0 on bit-exact success."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "examples")


def example(name, *args):
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, os.path.join(EXAMPLES, name), *map(str, args)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_every_example_is_listed_here():
    found = {f for f in os.listdir(EXAMPLES) if f.endswith(".py")}
    assert found == set(ALL_EXAMPLES)


# t2_gemv.py and q2_gemv.py run in tests/decode/test_decode_examples.py
ALL_EXAMPLES = ["q4k_gemv.py", "q4k_gemm.py", "int4_decode_gemv.py", "gguf_gemv.py",
                "t2_gemv.py", "q2_gemv.py", "transformer_rows.py", "gemma3_generate.py"]


@pytest.mark.parametrize("name", ALL_EXAMPLES)
def test_help(name):
    r = example(name, "--help")
    assert r.returncode == 0 and r.stdout.startswith("usage:")


@pytest.mark.parametrize("target", ["cpu", "interp"])
def test_q4k_gemv(target):
    r = example("q4k_gemv.py", "--n", 64, "--k", 512, "--target", target, "--repeat", 2)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("func @q4k_gemv(")
    assert f"Q4_K GEMV 64x512 on {target}" in r.stdout
    assert "bit-exact against the interpreter: True" in r.stdout


def test_q4k_gemm():
    r = example("q4k_gemm.py", "--m", 3, "--n", 40, "--k", 512, "--quiet")
    assert r.returncode == 0, r.stderr
    assert "Q4_K GEMM 3x40x512 on cpu" in r.stdout
    assert "bit-exact against the interpreter: True" in r.stdout


def test_int4_decode_gemv():
    r = example("int4_decode_gemv.py", "--n", 24, "--k", 320)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("func @int4_gemv(")
    assert "decode equals ninfer_ir.formats bit for bit: True" in r.stdout
    assert "bit-exact against the interpreter: True" in r.stdout


def test_gguf_gemv_writes_its_own_file():
    pytest.importorskip("gguf")
    r = example("gguf_gemv.py", "--rows", 32)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("bit-exact: True") == 2
    assert "2 of 2 tensors bit-exact on cpu" in r.stdout


def test_gguf_gemv_on_a_given_file(tmp_path):
    gguf = pytest.importorskip("gguf")
    from ninfer_ir.q4k import encode_q4k

    path = str(tmp_path / "m.gguf")
    writer = gguf.GGUFWriter(path, "test")
    weights = np.random.default_rng(3).standard_normal((20, 256)).astype(np.float32)
    writer.add_tensor("w", encode_q4k(weights).reshape(20, -1),
                      raw_dtype=gguf.GGMLQuantizationType.Q4_K)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    r = example("gguf_gemv.py", path, "--tensor", "w")
    assert r.returncode == 0, r.stderr
    assert "w" in r.stdout and "20 x 256" in r.stdout and "bit-exact: True" in r.stdout
    r = example("gguf_gemv.py", path, "--tensor", "missing")
    assert r.returncode == 2


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="a GPU may be present")
def test_cuda_target_without_a_gpu_exits_3():
    r = example("q4k_gemm.py", "--m", 1, "--n", 4, "--k", 256, "--quiet", "--target", "cuda")
    assert r.returncode == 3 and "target unavailable" in r.stdout


@pytest.mark.parametrize("target", ["cpu", "interp"])
def test_transformer_rows(target):
    r = example("transformer_rows.py", "--rows", 2, "--dim", 16, "--hidden", 24,
                "--target", target)
    assert r.returncode == 0, r.stderr
    assert "bit-exact against the interpreter: True" in r.stdout


def test_gemma3_generate_on_a_tiny_file(tmp_path):
    pytest.importorskip("gguf", reason="writing the tiny GGUF file needs the gguf package")
    pytest.importorskip("sentencepiece", reason="the tokenizer needs sentencepiece")
    sys.path.insert(0, os.path.join(ROOT, "tests", "models"))
    import tiny_gemma3
    path = tiny_gemma3.write(tmp_path / "tiny.gguf")
    r = example("gemma3_generate.py", path, "--prompt", "the cat", "--max-tokens", 3)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("the cat") and "kernel forward pass (cpu)" in r.stdout
