"""``ninfer run``, ``ninfer ir``, ``ninfer emit`` driven as a user would: in a subprocess."""
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GEMV = os.path.join(ROOT, "examples", "q4k_gemv.py")


def ninfer(*args, cwd=None):
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, "-m", "ninfer_ir", *map(str, args)], cwd=cwd or ROOT,
                          env=env, capture_output=True, text=True, timeout=300)


def write(tmp_path, name, source):
    path = tmp_path / name
    path.write_text("import ninfer_ir as I\n" + textwrap.dedent(source))
    return str(path)


TWO_KERNELS = """
@I.kernel
def scaled_sum(x: I.Tensor[I.f32, "N"], s: I.f32) -> I.f32:
    acc: I.f32 = 0.0
    for i in I.range(x.shape[0]):
        acc += x[i] * s
    return acc

@I.kernel
def bits(x: I.Tensor[I.i32, "N", 4], y: I.Buffer[I.i32, "N", 4], z: I.Buffer[I.u16, "N"]):
    for i in I.prange(x.shape[0]):
        for j in I.range(4):
            y[i, j] = (x[i, j] >> 2) ^ (x[i, j] // 3)
        z[i] = I.cast(x[i, 0] & 0xFFFF, I.u16)
"""


@pytest.mark.parametrize("command", [[], ["run"], ["ir"], ["emit"], ["bench"], ["gguf"]])
def test_help(command):
    r = ninfer(*command, "--help")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("usage: ninfer")
    assert "exit codes" in r.stdout


def test_no_command_prints_help_and_is_a_usage_error():
    r = ninfer()
    assert r.returncode == 2 and "usage: ninfer" in r.stdout


def test_run_gemv_on_cpu_is_bit_exact():
    r = ninfer("run", GEMV, "--dim", "N=24", "--dim", "G=3", "--seed", "5")
    assert r.returncode == 0, r.stderr
    assert "dims: N=24 G=3" in r.stdout
    assert "w: u8[24,3,144] (Q4_K records)" in r.stdout
    assert "cpu: compile" in r.stdout and "interp: run" in r.stdout
    assert "bit-exact against the interpreter: yes (24 values in y)" in r.stdout


def test_run_on_the_interpreter_target(tmp_path):
    path = write(tmp_path, "k.py", TWO_KERNELS)
    r = ninfer("run", f"{path}:bits", "--target", "interp", "--dim", "N=5")
    assert r.returncode == 0, r.stderr
    assert "bit-exact against the interpreter: yes (25 values in y, z)" in r.stdout


def test_run_picks_a_kernel_by_name_and_sets_scalars(tmp_path):
    path = write(tmp_path, "k.py", TWO_KERNELS)
    r = ninfer("run", f"{path}:scaled_sum", "--dim", "N=100", "--dim", "s=2.5")
    assert r.returncode == 0, r.stderr
    assert "s: f32 = 2.5 (given)" in r.stdout
    assert "yes (1 values in result0)" in r.stdout
    r = ninfer("run", f"{path}:bits", "--dim", "N=33")
    assert r.returncode == 0, r.stderr
    assert "yes (165 values in y, z)" in r.stdout


def test_run_needs_a_name_when_a_file_has_several_kernels(tmp_path):
    path = write(tmp_path, "k.py", TWO_KERNELS)
    r = ninfer("run", path)
    assert r.returncode == 2
    assert "defines 2 kernels (scaled_sum, bits)" in r.stderr
    assert r.stderr.count("\n") == 1                      # one line


@pytest.mark.parametrize("args, message", [
    (["run", "missing.py"], "no such file: missing.py"),
    (["run", f"{GEMV}:nope"], "has no kernel named 'nope' (kernels: q4k_gemv)"),
    (["run", GEMV, "--dim", "N"], "--dim expects NAME=VALUE"),
    (["run", GEMV, "--dim", "Q=4"], "--dim names Q, which the kernel does not have"),
    (["run", GEMV, "--target", "tpu"], "invalid choice: 'tpu'"),
    (["ir", GEMV, "--print-after", "cse,nosuchpass"], "unknown pass nosuchpass"),
    (["emit", GEMV, "--kind", "wasm"], "invalid choice: 'wasm'"),
])
def test_usage_errors_exit_2_with_one_line(args, message):
    r = ninfer(*args)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert message in r.stderr
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr


def test_domain_error_exits_1_and_debug_adds_the_traceback(tmp_path):
    nan = write(tmp_path, "q.py", """
        @I.kernel
        def quant(x: I.Tensor[I.f32, "G", 256], r: I.Buffer[I.u8, "G", 292], s: I.f32):
            r[:] = I.quantize(x * s, format=I.quant.q8_k)
        """)
    for target in ("interp", "cpu"):                   # cpu: raised by both, the same
        r = ninfer("run", nan, "--dim", "s=inf", "--target", target)
        assert r.returncode == 1
        assert r.stderr == ("ninfer: error: DomainError: quantize q8_k: record 0: input holds "
                            "NaN or inf\n")
    r = ninfer("run", nan, "--dim", "s=2", "--dim", "G=3")
    assert r.returncode == 0 and "bit-exact against the interpreter: yes" in r.stdout
    r = ninfer("run", nan, "--dim", "s=inf", "--target", "interp", "--debug")
    assert r.returncode == 1 and "Traceback" in r.stderr


def test_failed_assert_on_cpu_exits_1(tmp_path):
    path = write(tmp_path, "k.py", """
        @I.kernel
        def checked(x: I.Tensor[I.f32, "N"], y: I.Buffer[I.f32, "N"], limit: I.f32):
            for i in I.range(x.shape[0]):
                assert x[i] < limit, "input too large"
                y[i] = x[i]
        """)
    r = ninfer("run", path, "--dim", "limit=-100")
    assert r.returncode == 1
    assert "DomainError" in r.stderr and "input too large" in r.stderr


def test_dsl_error_is_located(tmp_path):
    path = write(tmp_path, "bad.py", """
        @I.kernel
        def bad(a: I.Tensor[I.f32, "N"], b: I.Tensor[I.i32, "N"], c: I.Buffer[I.f32, "N"]):
            for i in I.range(a.shape[0]):
                c[i] = a[i] + b[i]
        """)
    r = ninfer("run", path)
    assert r.returncode == 1
    assert f"{path}:6:" in r.stderr and "I.cast" in r.stderr


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="a GPU may be present")
def test_cuda_without_a_gpu_exits_3():
    r = ninfer("run", GEMV, "--target", "cuda")
    assert r.returncode == 3
    assert "target unavailable" in r.stderr


def test_ir_prints_the_kernel_and_it_parses_back():
    import ninfer_ir as I
    r = ninfer("ir", GEMV)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("func @q4k_gemv(%w: tensor<u8[N,G,144]>")
    assert str(I.parse(r.stdout)) == r.stdout


def test_ir_print_after_and_lowered(tmp_path):
    from ninfer_ir.passes.pipeline import default_passes
    r = ninfer("ir", GEMV, "--print-after", "all", "--lowered")
    assert r.returncode == 0, r.stderr
    for k, p in enumerate(default_passes("cpu"), 1):
        assert f"// IR after {k:02d}-{p.name}\n" in r.stdout
    assert "quantize_into(%x, %xq)" in r.stdout
    r = ninfer("ir", GEMV, "--print-after", "lower", "--dump-dir", tmp_path / "stages")
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("// IR after") == 1
    assert (tmp_path / "stages" / "00-input.nir").exists()


def test_emit_llvm_and_asm(tmp_path):
    r = ninfer("emit", GEMV, "--kind", "llvm")
    assert r.returncode == 0, r.stderr
    assert "define " in r.stdout
    out = tmp_path / "gemv.s"
    r = ninfer("emit", GEMV, "--kind", "asm", "-o", out)
    assert r.returncode == 0, r.stderr
    assert "written to" in r.stderr and "q4k_gemv" in out.read_text()


@pytest.mark.parametrize("kind, marker", [("cuda", "__global__"), ("ptx", ".entry")])
def test_emit_cuda_without_a_gpu(kind, marker):
    r = ninfer("emit", GEMV, "--kind", kind)
    try:
        import ninfer_ir.backends.cuda.emitter  # noqa: F401
    except ImportError:
        assert r.returncode == 3 and "unavailable" in r.stderr
        return
    if kind == "ptx" and r.returncode == 3:
        pytest.skip(f"no CUDA compiler here: {r.stderr.strip()}")
    assert r.returncode == 0, r.stderr
    assert marker in r.stdout


def test_a_mismatch_exits_1_and_names_the_first_difference(monkeypatch, capsys):
    import ninfer_ir as I
    from ninfer_ir.cli import main

    original = I.compile

    def off_by_one_ulp(kernel, target="cpu", **options):
        real = original(kernel, target="interp")

        def call(w, x, y):
            real(w, x, y)
            y.view("u4")[3] ^= 1
        return call
    monkeypatch.setattr(I, "compile", off_by_one_ulp)
    assert main(["run", GEMV, "--dim", "N=6", "--dim", "G=1"]) == 1
    out = capsys.readouterr().out
    assert "MISMATCH against the interpreter" in out
    assert "y: 1 of 6 values differ; first at [3]" in out


@pytest.mark.skipif(shutil.which("ninfer") is None, reason="the console script is not installed")
def test_console_script():
    r = subprocess.run(["ninfer", "--version"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.startswith("ninfer_ir ")


def test_an_error_only_on_the_target_is_a_mismatch(monkeypatch, capsys):
    import ninfer_ir as I
    from ninfer_ir.cli import main

    def failing(*args):
        raise I.DomainError("made up")
    monkeypatch.setattr(I, "compile", lambda kernel, target="cpu", **options: failing)
    assert main(["run", GEMV, "--dim", "N=2", "--dim", "G=1"]) == 1
    out = capsys.readouterr().out
    assert "MISMATCH" in out and "cpu: DomainError: made up" in out
    assert "interp: no error" in out


BIAS_GEMV = """
@I.kernel
def gemv_bias(w: I.Tensor[I.u8, "N", "G", 144], x: I.Tensor[I.f32, "G", 256],
              b: I.Tensor[I.f32, "N"], y: I.Buffer[I.f32, "N"]):
    xq = I.quantize(x, format=I.quant.q8_k)
    for n in I.range(w.shape[0]):
        y[n] = I.quantized_dot(w[n], xq, lhs_format=I.quant.q4_k, rhs_format=I.quant.q8_k,
                               acc_dtype=I.f32) + b[n]
"""


def test_ir_remarks_name_each_loops_kernel_or_why_none(tmp_path):
    r = ninfer("ir", GEMV, "--remarks")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("// remark: " + GEMV + ":")
    assert r.stdout.rstrip().endswith("loop %n in @q4k_gemv: kernel q4k_q8k_dot_rows: the loop "
                                      "computes what the kernel computes")
    path = write(tmp_path, "bias.py", BIAS_GEMV)
    r = ninfer("ir", path, "--remarks", "--print-after", "select")
    assert r.returncode == 0, r.stderr
    assert "// IR after 13-select" in r.stdout
    assert ('kernel_call(%w, %xq, %y) {epilogue = "%y[%n] = add(quantized_dot, load %b[%n])", '
            'kernel = "q4k_q8k_dot_rows"}') in r.stdout
    assert (f"// remark: {path}:7: loop %n in @gemv_bias: kernel q4k_q8k_dot_rows: the kernel "
            f"computes the row dot of each block of rows, then the loop's epilogue runs on the "
            f"block (`%y[%n] = add(quantized_dot, load %b[%n])`)\n") in r.stdout
    path = write(tmp_path, "shifted.py", BIAS_GEMV.replace("b[n]", "b[n + 1]"))
    r = ninfer("ir", path, "--remarks")
    assert r.returncode == 0, r.stderr
    assert (f"// remark: {path}:7: loop %n in @gemv_bias: no kernel: the epilogue loads %b at "
            f"an index computed inside the loop (the row %n and loop-invariant indices "
            f"only)\n") in r.stdout
