"""``ninfer bench FILE``, ``ninfer bisect`` and the ``gguf`` extra, driven from the shell."""
import os
import re
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

USER_FILE = textwrap.dedent("""
    import numpy as np
    import ninfer_ir as I

    @I.kernel
    def axpb(x: I.Tensor[I.f32, "N"], y: I.Buffer[I.f32, "N"]):
        for i in I.range(x.shape[0]):
            y[i] = x[i] * 2.0 + 0.5

    def numpy_baseline(x, y):
        np.add(x * np.float32(2.0), np.float32(0.5), out=y)

    def other_baseline(x, y):
        y[:] = x
""")


def ninfer(*args, env=None, cwd=ROOT):
    full = dict(os.environ, PYTHONPATH=os.pathsep.join([*(env or {}).pop("PREPEND", []), ROOT]))
    full.update(env or {})
    return subprocess.run([sys.executable, "-m", "ninfer_ir", *map(str, args)], cwd=cwd,
                          env=full, capture_output=True, text=True, timeout=300)


@pytest.fixture
def user_file(tmp_path):
    path = tmp_path / "user_kernels.py"
    path.write_text(USER_FILE)
    return path


def hide(tmp_path, package):
    """A folder that, first on PYTHONPATH, makes ``import package`` fail."""
    folder = tmp_path / f"no_{package}"
    (folder / package).mkdir(parents=True, exist_ok=True)
    (folder / package / "__init__.py").write_text(f"raise ImportError('no {package} here')\n")
    return str(folder)


def table(stdout):
    """row name -> (median text, ratio) of the bench table."""
    rows = {}
    for line in stdout.splitlines():
        m = re.match(r"(.+?)\s+(\d+\.\d+ [mu]?s)\s+\d+\.\d%\s+\d+\s+(\d+\.\d+)x", line)
        if m:
            rows[m.group(1).strip()] = (m.group(2), float(m.group(3)))
    return rows


def test_bench_a_user_kernel_against_the_interpreter_and_numpy(user_file):
    r = ninfer("bench", user_file, "--quick", "--dim", "N=256")
    assert r.returncode == 0, r.stderr
    assert "cpu against the interpreter: bit-exact" in r.stdout
    rows = table(r.stdout)
    assert set(rows) == {"cpu", "interp", "numpy (numpy_baseline)"}, r.stdout
    assert rows["cpu"][1] == 1.0
    assert rows["interp"][1] > 1.0                 # the oracle is slower than compiled code


def test_bench_baseline_by_name_and_errors(user_file):
    r = ninfer("bench", f"{user_file}:axpb", "--quick", "--baseline", "other_baseline")
    assert r.returncode == 0, r.stderr
    assert "numpy (other_baseline)" in table(r.stdout)
    r = ninfer("bench", user_file, "--baseline", "missing")
    assert r.returncode == 2 and "has no function named 'missing'" in r.stderr
    assert r.stdout == ""
    r = ninfer("bench", "--dim", "N=8")
    assert r.returncode == 2 and "need a FILE.py[:kernel]" in r.stderr and r.stdout == ""


def test_bench_plot_without_matplotlib_fails_before_measuring(user_file, tmp_path):
    for args in ([user_file], ["--quick"]):
        t0 = time.perf_counter()
        r = ninfer("bench", *args, "--plot", tmp_path / "out.png",
                   env={"PREPEND": [hide(tmp_path, "matplotlib")]})
        assert r.returncode == 3
        assert r.stdout == ""                      # nothing was measured
        assert r.stderr.strip().splitlines() == [
            f"ninfer: error: --plot {tmp_path / 'out.png'} needs matplotlib, which is not "
            f"installed (pip install matplotlib)"]
        assert time.perf_counter() - t0 < 60
    assert not (tmp_path / "out.png").exists()


def test_bisect_finds_nothing_in_a_correct_pipeline(user_file):
    r = ninfer("bisect", user_file, "--dim", "N=8")
    assert r.returncode == 0, r.stderr
    from ninfer_ir.passes import default_passes
    stages = len(default_passes("cpu")) + 1          # the input and one per pass
    assert f"no pass changed the bits ({stages} stages run in the interpreter)" in r.stdout


def test_bisect_names_a_broken_pass_and_prints_the_ir_around_it(user_file, monkeypatch,
                                                                 capsys):
    from ninfer_ir.cli import main
    from ninfer_ir.passes import pipeline
    from ninfer_ir.passes.manager import Pass

    class Halve(Pass):
        name = "halve"

        def run(self, module):
            for op in module.walk():
                if op.name == "constant" and op.attrs.get("value") == 0.5:
                    op.attrs["value"] = 0.25
            return {}
    real = pipeline.default_passes
    monkeypatch.setattr(pipeline, "default_passes", lambda target="cpu": real(target)[:8]
                        + [Halve()] + real(target)[8:])
    assert main(["bisect", str(user_file), "--dim", "N=4"]) == 1
    out = capsys.readouterr().out
    assert "first pass that changes the bits: 09-halve (y: 4 of 4 values differ" in out
    before = out.index("// IR before 09-halve")
    after = out.index("// IR after 09-halve")
    changed = out.index("// what halve changed")
    assert before < after < changed
    assert "value = 0.5" in out[before:after] and "value = 0.25" in out[after:changed]
    assert "-" in out[changed:] and "+" in out[changed:]


def test_bisect_usage_errors(user_file):
    r = ninfer("bisect", f"{user_file}:nope")
    assert r.returncode == 2 and "no kernel named 'nope'" in r.stderr
    r = ninfer("bisect", user_file, "--dim", "M=3")
    assert r.returncode == 2 and "--dim names M, which the kernel does not have" in r.stderr


# --- packaging: the gguf extra --------------------------------------------------------------

def test_the_gguf_extra_installs_what_ninfer_gguf_imports():
    import tomllib
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        extras = tomllib.load(f)["project"]["optional-dependencies"]
    names = {re.split(r"[<>=\[ ]", r)[0] for r in extras["gguf"]}
    assert {"gguf", "tqdm"} <= names


def test_ninfer_gguf_reads_files_without_gguf_py(tmp_path):
    """The reader is ninfer_ir's own: without gguf-py a bad file is still a clear error
    (gguf-py is only needed to compare a decoded tensor with its dequantize)."""
    (tmp_path / "m.gguf").write_bytes(b"GGUF")
    r = ninfer("gguf", tmp_path / "m.gguf", env={"PREPEND": [hide(tmp_path, "gguf")]})
    assert r.returncode == 1
    assert "is not a readable GGUF file" in r.stderr and "too short" in r.stderr


@pytest.fixture
def small_gguf(tmp_path):
    gguf = pytest.importorskip("gguf")
    from ninfer_ir.q4k import encode_q4k
    path = str(tmp_path / "small.gguf")
    writer = gguf.GGUFWriter(path, "test")
    rows = encode_q4k(np.random.default_rng(0).standard_normal((4, 256)).astype(np.float32))
    writer.add_tensor("w", rows.reshape(4, -1), raw_dtype=gguf.GGMLQuantizationType.Q4_K)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_ninfer_gguf_reports_the_read_in_one_line_to_a_script(small_gguf):
    r = ninfer("gguf", small_gguf, "--tensor", "w")
    assert r.returncode == 0, r.stderr
    (line,) = r.stderr.splitlines()
    assert re.match(rf"read {re.escape(small_gguf)} \(0\.0 MiB\): 1 tensor headers and \d+ "
                    rf"metadata fields in [\d.]+ [mu]?s; tensor data is read as it is used$",
                    line), line


def test_ninfer_gguf_shows_progress_on_a_terminal(small_gguf, monkeypatch, capsys):
    import io

    from ninfer_ir.cli import main

    class Terminal(io.StringIO):
        def isatty(self):
            return True
    term = Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    assert main(["gguf", small_gguf, "--tensor", "w"]) == 0
    shown = term.getvalue()
    assert shown.startswith(f"reading {small_gguf} (0.0 MiB) ...\n")
    assert "decoding w (576 bytes) ..." in shown
    assert "reading Q4_K tensors and running the GEMV" in shown      # the bar over tensors
    assert "1 of 1 Q4_K tensors bit-exact" in capsys.readouterr().out
