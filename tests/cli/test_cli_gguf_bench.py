"""``ninfer gguf`` on a GGUF file with ggml-compatible Q4_K blocks, and ``ninfer bench``."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
gguf = pytest.importorskip("gguf")


def ninfer(*args):
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, "-m", "ninfer_ir", *map(str, args)], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """Two Q4_K matrices (encoded from floats), an F16 and an F32 tensor."""
    from ninfer_ir.q4k import encode_q4k

    path = str(tmp_path_factory.mktemp("gguf") / "model.gguf")
    rng = np.random.default_rng(7)
    writer = gguf.GGUFWriter(path, "test")
    matrices = {"blk.0.attn_q.weight": (48, 512), "blk.0.ffn_down.weight": (40, 1024)}
    for name, (n, k) in matrices.items():
        records = encode_q4k(rng.standard_normal((n, k)).astype(np.float32) * 0.02)
        blocks = records.reshape(n, -1)
        # the blocks are ggml's: gguf-py decodes them to the values ninfer_ir.formats gives
        from ninfer_ir import formats
        assert np.array_equal(gguf.quants.dequantize(blocks, gguf.GGMLQuantizationType.Q4_K),
                              formats.get("gguf_q4_k").decode(blocks))
        writer.add_tensor(name, blocks, raw_dtype=gguf.GGMLQuantizationType.Q4_K)
    writer.add_tensor("token_embd.weight", rng.standard_normal((3, 64)).astype(np.float16))
    writer.add_tensor("output_norm.weight", np.ones(512, np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def gemv_rows(stdout):
    """tensor name -> (N x K, bit-exact, relative error) from the GEMV table."""
    rows = {}
    for line in stdout.splitlines():
        m = re.match(r"(\S+)\s+(\d+x\d+)\s+\S+ \S+\s+\S+ \S+\s+(yes|NO)\s+(\S+)$", line)
        if m:
            rows[m.group(1)] = (m.group(2), m.group(3), float(m.group(4)))
    return rows


def test_gguf_lists_and_checks_every_q4k_tensor(model):
    r = ninfer("gguf", model)
    assert r.returncode == 0, r.stderr
    assert f"{model}: 4 tensors" in r.stdout
    assert re.search(r"blk\.0\.attn_q\.weight\s+Q4_K\s+48x512\s+13824\s+gguf_q4_k", r.stdout)
    assert re.search(r"token_embd\.weight\s+F16\s+3x64\s+384\s+numpy f16", r.stdout)
    rows = gemv_rows(r.stdout)
    assert set(rows) == {"blk.0.attn_q.weight", "blk.0.ffn_down.weight"}
    assert rows["blk.0.attn_q.weight"][0] == "48x512"
    assert rows["blk.0.ffn_down.weight"][0] == "40x1024"
    for shape, exact, rel in rows.values():
        assert exact == "yes"
        assert 1e-5 < rel < 2e-2          # what quantizing x to Q8_K costs, nothing more
    assert "2 of 2 Q4_K tensors bit-exact between interp and cpu" in r.stdout


def test_gguf_one_tensor_decodes_like_gguf_py(model):
    r = ninfer("gguf", model, "--tensor", "blk.0.ffn_down.weight", "--rows", "8")
    assert r.returncode == 0, r.stderr
    assert "decoded 40960 values" in r.stdout
    assert "same bits as gguf-py's dequantize: yes" in r.stdout
    assert gemv_rows(r.stdout)["blk.0.ffn_down.weight"][:2] == ("8x1024", "yes")
    r = ninfer("gguf", model, "--tensor", "token_embd.weight")
    assert r.returncode == 0, r.stderr
    assert "same bits as gguf-py's dequantize: yes" in r.stdout
    assert "no Q4_K tensors: no GEMV to run" in r.stdout


def test_gguf_errors(model, tmp_path):
    r = ninfer("gguf", model, "--tensor", "nope")
    assert r.returncode == 2 and "has no tensor named 'nope'" in r.stderr
    r = ninfer("gguf", tmp_path / "missing.gguf")
    assert r.returncode == 2 and "no such file" in r.stderr
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"not a gguf file at all")
    r = ninfer("gguf", junk)
    assert r.returncode == 1 and "is not a readable GGUF file" in r.stderr
    assert r.stderr.count("\n") == 1


def test_bench_quick(tmp_path):
    """(Without matplotlib, --plot fails before measuring: test_cli_bench_bisect.py.)"""
    png = tmp_path / "roofline.png"
    try:
        import matplotlib  # noqa: F401
        plot = ["--plot", png]
    except ImportError:
        plot = []
    r = ninfer("bench", "--quick", *plot)
    assert r.returncode == 0, r.stderr
    assert "numpy copy bandwidth" in r.stdout
    assert re.search(r"^cpu\s+4096x4096\s+", r.stdout, re.M)
    assert re.search(r"^interp\s+1024x1024\s+", r.stdout, re.M)
    assert re.search(r"^oracle\.py\s+ok\s", r.stdout, re.M)
    if plot:
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
