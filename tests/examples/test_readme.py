"""The README is true: its quick start works on a fresh machine, its example prints the IR
it shows, and its links (and those of the user docs) lead somewhere."""
import os
import re
import runpy
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
QUICK_START = ["pip install -e . && python examples/q4k_gemv.py", "bash scripts/test.sh"]


def read(*parts):
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as f:
        return f.read()


def fenced(text, lang):
    return re.findall(rf"^```{lang}\n(.*?)^```", text, re.S | re.M)


def quick_start_commands():
    section = read("README.md").split("## Quick start", 1)[1].split("\n## ", 1)[0]
    (block,) = fenced(section, "bash")
    return [line for line in block.splitlines() if line.strip()]


def test_quick_start_is_exactly_two_commands():
    assert quick_start_commands() == QUICK_START


def test_ci_runs_the_readme_test_command():
    ci = [ln.strip() for ln in read(".ci", "run").splitlines()
          if ln.strip() and not ln.startswith("#")]
    assert ci[-1] == "exec bash scripts/test.sh"
    script = read("scripts", "test.sh")
    assert 'pip install' in script and '-e ".[test,cuda]"' in script
    assert re.search(r"^python -m pytest\b", script, re.M)


def test_readme_example_prints_the_ir_it_shows(tmp_path, capsys):
    readme = read("README.md")
    code = fenced(readme, "python")[0]
    shown = readme.split(code, 1)[1]
    expected = fenced(shown, "text")[0]
    path = tmp_path / "readme_example.py"
    path.write_text(code)
    runpy.run_path(str(path), run_name="readme")
    assert capsys.readouterr().out.rstrip("\n") == expected.rstrip("\n")


def test_every_other_readme_python_block_runs(tmp_path, capsys):
    blocks = fenced(read("README.md"), "python")[1:]
    assert blocks
    for k, code in enumerate(blocks):
        path = tmp_path / f"readme_block_{k}.py"      # the DSL reads kernels from real files
        path.write_text(code)
        runpy.run_path(str(path), run_name="readme")
    assert "True True" in capsys.readouterr().out


@pytest.mark.parametrize("doc", ["README.md", "docs/index.md", "docs/language.md",
                                 "docs/backends.md", "docs/performance.md",
                                 "docs/testing.md"])
def test_relative_links_exist(doc):
    text = read(doc)
    folder = os.path.dirname(os.path.join(ROOT, doc))
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    targets = [t for t in links if not re.match(r"[a-z]+://", t)]
    assert targets
    missing = [t for t in targets if not os.path.exists(os.path.join(folder, t))]
    assert not missing, f"{doc} links to missing files: {missing}"


def _copy_checkout(dest):
    ignore = shutil.ignore_patterns(".git", "__pycache__", "*.egg-info", ".venv", "build",
                                    ".pytest_cache", ".hypothesis", ".whl")
    shutil.copytree(ROOT, dest, ignore=ignore)


@pytest.mark.slow
def test_quick_start_in_a_fresh_virtual_environment(tmp_path):
    """The first quick-start command, verbatim, in a new venv on a copy of the checkout.
    (The second is the suite itself; CI runs it through .ci/run, checked above.)"""
    checkout, venv = tmp_path / "checkout", tmp_path / "venv"
    _copy_checkout(checkout)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    bindir = venv / ("Scripts" if os.name == "nt" else "bin")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["PATH"] = f"{bindir}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(venv)
    r = subprocess.run(["bash", "-c", QUICK_START[0]], cwd=checkout, env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "func @q4k_gemv(" in r.stdout
    assert "Q4_K GEMV 4096x4096 on cpu" in r.stdout
    assert "bit-exact against the interpreter: True" in r.stdout
    r = subprocess.run(["ninfer", "run", "examples/q4k_gemv.py", "--dim", "N=8"], cwd=checkout,
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert shutil.which("ninfer", path=env["PATH"]).startswith(str(bindir))
