"""Bad command lines and bad files: usage errors exit 2, data errors exit 1, each with
one clear line on stderr and never a raw Python exception."""
import os
import random

import numpy as np
import pytest

from ninfer_ir.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GEMV = os.path.join(ROOT, "examples", "q4k_gemv.py")
RAW = "rerun with --debug"


def run(capsys, *args):
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def one_clear_line(err):
    return err.count("\n") == 1 and RAW not in err and "Traceback" not in err


@pytest.mark.parametrize("args, fragment", [
    (["run", GEMV, "--threads", "-4"], "--threads: -4 is not a positive integer"),
    (["run", GEMV, "--threads", "0"], "--threads: 0 is not a positive integer"),
    (["run", GEMV, "--repeat", "-3"], "--repeat: -3 is not a positive integer"),
    (["run", GEMV, "--seed", "-1"], "--seed: -1 is not a non-negative integer"),
    (["run", GEMV, "--threads", "x"], "--threads: 'x' is not an integer"),
    (["gguf", "model.gguf", "--rows", "-5"], "--rows: -5 is not a non-negative integer"),
    (["gguf", "model.gguf", "--seed", "-2"], "--seed: -2 is not a non-negative integer"),
    (["bench", "--threads", "-1"], "--threads: -1 is not a positive integer"),
])
def test_bad_numbers_are_usage_errors(capsys, args, fragment):
    code, out, err = run(capsys, *args)
    assert code == 2 and fragment in err and err.count("\n") == 1


def test_huge_dim_is_a_usage_error(capsys):
    code, out, err = run(capsys, "run", GEMV, "--dim", "N=100000000000", "--dim", "G=16")
    assert code == 2 and one_clear_line(err)
    assert "--dim N=100000000000 G=16: the arguments take" in err and "GiB" in err


def test_emit_into_a_missing_folder_is_a_usage_error(capsys, tmp_path):
    out_path = tmp_path / "missing" / "k.ll"
    code, out, err = run(capsys, "emit", GEMV, "-o", out_path)
    assert code == 2 and one_clear_line(err) and "does not exist" in err
    assert not out_path.exists()
    code, out, err = run(capsys, "emit", GEMV, "-o", tmp_path)
    assert code == 2 and one_clear_line(err) and "is a directory" in err


def test_ir_dump_dir_on_a_file_is_a_usage_error(capsys, tmp_path):
    f = tmp_path / "a_file"
    f.write_text("x")
    code, out, err = run(capsys, "ir", GEMV, "--dump-dir", f)
    assert code == 2 and one_clear_line(err) and "exists and is not a directory" in err
    assert f.read_text() == "x"


@pytest.mark.parametrize("command", ["run", "ir", "emit", "gguf"])
def test_a_directory_or_a_device_is_not_called_missing(capsys, tmp_path, command):
    code, out, err = run(capsys, command, tmp_path)
    assert code == 2 and one_clear_line(err) and "is a directory, not a file" in err
    if os.path.exists("/dev/zero"):
        code, out, err = run(capsys, command, "/dev/zero")
        assert code == 2 and one_clear_line(err) and "is not a regular file" in err
    code, out, err = run(capsys, command, tmp_path / "nope.py")
    assert code == 2 and "no such file" in err


# --- GGUF files ------------------------------------------------------------------

gguf = pytest.importorskip("gguf")


def _write_gguf(path, tensors):
    writer = gguf.GGUFWriter(str(path), "test")
    for name, (array, raw) in tensors.items():
        writer.add_tensor(name, array, raw_dtype=raw)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return str(path)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    from ninfer_ir.q4k import encode_q4k
    rng = np.random.default_rng(2)
    q4k = gguf.GGMLQuantizationType.Q4_K
    rec = encode_q4k(rng.standard_normal((4, 512)).astype(np.float32) * 0.02).reshape(4, -1)
    return _write_gguf(tmp_path_factory.mktemp("gguf") / "model.gguf", {
        "a.weight": (rec, q4k),
        "empty.weight": (np.zeros((0, 288), np.uint8), q4k),
        "norm.weight": (np.ones(8, np.float32), None),
    })


def test_header_only_file_is_one_clear_line(capsys, model, tmp_path):
    head = tmp_path / "head.gguf"
    head.write_bytes(open(model, "rb").read()[:24])
    code, out, err = run(capsys, "gguf", head)
    assert code == 1 and one_clear_line(err) and "is not a readable GGUF file" in err


def test_zero_row_tensors_run(capsys, model):
    code, out, err = run(capsys, "gguf", model)
    assert code == 0, err
    assert "2 of 2 Q4_K tensors bit-exact" in out
    code, out, err = run(capsys, "gguf", model, "--tensor", "empty.weight")
    assert code == 0, err
    assert "decoded 0 values" in out


def test_bit_flipped_files_never_give_a_raw_exception(capsys, model, tmp_path):
    data = open(model, "rb").read()
    rnd = random.Random(20)
    flipped = tmp_path / "flip.gguf"
    codes = set()
    for trial in range(60):
        d = bytearray(data)
        pos = rnd.randrange(0, 700) if trial % 3 else rnd.randrange(len(d))
        d[pos] ^= 1 << rnd.randrange(8)
        flipped.write_bytes(bytes(d))
        code, out, err = run(capsys, "gguf", flipped, "--rows", "2")
        codes.add(code)
        assert code in (0, 1), (pos, err)
        assert code == 0 or one_clear_line(err), (pos, err)
    assert codes == {0, 1}


def test_nan_rows_with_different_payloads_are_bit_exact(monkeypatch, tmp_path):
    """A Q4_K row whose scale d is a NaN gives a NaN; a target that returns a NaN with
    another payload still agrees (docs/backends.md compares NaNs as NaN)."""
    import ninfer_ir as I
    from ninfer_ir.cli import gguf as cli_gguf
    from ninfer_ir.cli.kernels import q4k_gemv
    from ninfer_ir.q4k import encode_q4k

    rng = np.random.default_rng(4)
    rec = encode_q4k(rng.standard_normal((3, 256)).astype(np.float32)).reshape(3, -1).copy()
    rec[1, 0:2] = np.array([0x7E01], np.uint16).view(np.uint8)      # d = NaN in row 1
    path = _write_gguf(tmp_path / "nan.gguf", {"w": (rec, gguf.GGMLQuantizationType.Q4_K)})
    from ninfer_ir.models.gguf import GGUFFile
    t = GGUFFile(path).tensors["w"]

    def other_payload(w, x, y):
        I.interpret(q4k_gemv, w, x, y)
        assert np.isnan(y[1]) and not np.isnan(y[0]) and not np.isnan(y[2])
        bits = y.view(np.uint32)
        bits[1] = 0xFFC00123 if bits[1] != 0xFFC00123 else 0x7FC00001
    r = cli_gguf.gemv_check(t, other_payload, 0, np.random.default_rng(0))
    assert r["same"]

    def off_by_one(w, x, y):
        I.interpret(q4k_gemv, w, x, y)
        y.view(np.uint32)[0] ^= 1
    assert not cli_gguf.gemv_check(t, off_by_one, 0, np.random.default_rng(0))["same"]
