"""Suite-wide hooks.

Every ``Module`` that any test builds is recorded; when the test ends, each one
that verifies must survive the textual round trip ``print(parse(print(m))) ==
print(m)``. This covers every module of every test, not a hand-picked list.
"""
import os
import sys
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from ninfer_ir import ir as _ir  # noqa: E402
from ninfer_ir.errors import NinferError  # noqa: E402

ROUND_TRIPS = {"modules": 0}


@pytest.fixture(autouse=True)
def _round_trip_every_module(monkeypatch, request):
    built = []
    original = _ir.Module.__init__

    def recording_init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        built.append(self)

    monkeypatch.setattr(_ir.Module, "__init__", recording_init)
    yield
    monkeypatch.setattr(_ir.Module, "__init__", original)
    if request.node.get_closest_marker("no_round_trip"):
        return
    from ninfer_ir.frontend.textual import parse
    for m in built:
        if not m.funcs:
            continue
        try:
            m.verify()
            text = str(m)
        except NinferError:
            continue        # deliberately invalid or half-built modules
        again = str(parse(text))
        assert again == text, f"textual round trip changed the module:\n{text}\n---\n{again}"
        ROUND_TRIPS["modules"] += 1


def pytest_configure(config):
    config.addinivalue_line("markers", "no_round_trip: skip the module round-trip hook")


def pytest_terminal_summary(terminalreporter):
    terminalreporter.write_line(f"round trip checked on {ROUND_TRIPS['modules']} modules")
