"""Every module any pass produces prints and re-parses to the same text."""
import pytest

import ninfer_ir as I
from tests.kernels import KERNELS as REGISTRY
from tests.passes.ir_kernels import KERNELS
from ninfer_ir.passes import default_passes, lower

MODULES = [(f"ir:{k}", lambda t=t: I.parse(t)) for k, t in sorted(KERNELS.items())] + \
          [(f"dsl:{k}", lambda c=c: c.kernel.ir) for k, c in sorted(REGISTRY.items())]


@pytest.mark.parametrize("name, make", MODULES, ids=[m[0] for m in MODULES])
def test_every_stage_round_trips(name, make):
    seen = []
    lower(make(), print_after="all", print_to=lambda stage, text: seen.append((stage, text)))
    assert len(seen) == len(default_passes("cpu"))
    for stage, text in seen:
        assert str(I.parse(text)) == text, stage
