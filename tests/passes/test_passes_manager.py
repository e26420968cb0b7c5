"""The pass manager: printing, dumping, verification between passes, preconditions."""
import io
import os

import pytest

import ninfer_ir as I
from ninfer_ir.errors import TargetUnavailable
from tests.passes.ir_kernels import GEMV, GEMV_INNER
from ninfer_ir.passes import DCE, CSE, Canonicalize, Pass, PassError, default_passes, lower
from ninfer_ir.passes.manager import PassManager

NAMES = [p.name for p in default_passes()]


def test_default_pipeline_order():
    assert NAMES == ["canonicalize", "cse", "licm", "dce", "fuse", "materialize", "lower",
                     "expand", "canonicalize", "cse", "licm", "dce", "select"]
    assert [p.name for p in default_passes("cuda")] == NAMES[:-1] + ["parallelize", "select"]
    with pytest.raises(TargetUnavailable, match="unknown target 'tpu'"):
        default_passes("tpu")


def test_print_after_all_to_a_stream_parses_back():
    out = io.StringIO()
    lower(I.parse(GEMV), print_after="all", print_to=out)
    text = out.getvalue()
    stages = [line[len("// IR after "):] for line in text.splitlines()
              if line.startswith("// IR after ")]
    assert stages == [f"{k:02d}-{n}" for k, n in enumerate(NAMES, 1)]
    assert len(I.parse(text, verify=False).funcs) == len(NAMES)   # headers are IR comments


def test_print_after_a_set_of_names_to_a_callback():
    seen = []
    module, _ = lower(I.parse(GEMV_INNER), print_after={"licm", "lower"},
                      print_to=lambda stage, text: seen.append((stage, text)))
    assert [s for s, _ in seen] == ["03-licm", "07-lower", "11-licm"]
    assert "quantize(" in seen[0][1] and "quantize_into(" in seen[1][1]
    with pytest.raises(ValueError, match="unknown pass"):
        lower(I.parse(GEMV), print_after={"vectorize"})


def test_dump_dir_gets_every_stage(tmp_path):
    lower(I.parse(GEMV), dump_dir=str(tmp_path))
    files = sorted(os.listdir(tmp_path))
    assert files == ["00-input.nir"] + [f"{k:02d}-{n}.nir" for k, n in enumerate(NAMES, 1)]
    for f in files:
        text = (tmp_path / f).read_text()
        assert str(I.parse(text)) == text


def test_the_input_module_is_not_changed():
    module = I.parse(GEMV_INNER)
    before = str(module)
    lowered, _ = lower(module)
    assert str(module) == before and str(lowered) != before


def test_report_has_timings_and_stats():
    _, report = lower(I.parse(GEMV_INNER))
    assert [p.stage for p in report.passes][:3] == ["01-canonicalize", "02-cse", "03-licm"]
    assert all(p.seconds >= 0 for p in report.passes)
    assert report.total_seconds == pytest.approx(sum(report.timings().values()))
    licm = report.passes[2]
    assert licm.stats == {"hoisted": 1, "guarded": 1}
    d = report.to_dict()
    assert d["peak_local_bytes"] == {"gemv_inner": "292*G"} and len(d["passes"]) == 13
    assert d["remarks"] == ["loop %n in @gemv_inner: kernel q4k_q8k_dot_rows: the loop "
                            "computes what the kernel computes"]


class _Breaks(Pass):
    name = "breaks"

    def run(self, module):
        ret = module.funcs[0].body.terminator
        module.funcs[0].body.remove(ret)
        return {}


class _Picky(Pass):
    name = "picky"

    def check(self, module):
        raise self.error("needs something this module lacks")

    def run(self, module):
        raise AssertionError("run after a failed check")


def test_verification_between_passes_names_the_pass():
    with pytest.raises(PassError, match=r"^pass 'breaks': produced IR that does not verify"):
        PassManager([Canonicalize(), _Breaks(), DCE()]).run(I.parse(GEMV))


def test_preconditions_are_checked_before_a_pass_runs():
    with pytest.raises(PassError, match=r"^pass 'picky': needs something") as e:
        PassManager([CSE(), _Picky()]).run(I.parse(GEMV))
    assert isinstance(e.value, I.VerifyError) and e.value.pass_name == "picky"
