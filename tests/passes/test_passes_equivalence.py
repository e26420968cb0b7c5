"""The interpreter's results are bit-identical before and after every pass, on
hypothesis-generated inputs, for the registry's DSL kernels and the IR-text kernels.
Every stage is also read back from its printed text (print/parse round trip)."""
from functools import lru_cache

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ninfer_ir as I
from tests.kernels import KERNELS as REGISTRY
from tests.passes.harness import make_args, run, stages
from tests.passes.ir_kernels import KERNELS as IR_KERNELS

SETTINGS = settings(max_examples=10, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])


@lru_cache(maxsize=None)
def _ir_stages(name):
    return stages(I.parse(IR_KERNELS[name]))


@lru_cache(maxsize=None)
def _registry_stages(name):
    return stages(REGISTRY[name].kernel.ir)


def _same_everywhere(all_stages, args):
    want = run(all_stages[0][1], args)
    for stage, module in all_stages[1:]:
        assert run(module, args) == want, f"{stage} changed the result"


def test_at_least_twenty_kernels():
    assert len(IR_KERNELS) + len(REGISTRY) >= 20


def _perturb(args, rng):
    """Signed zeros, infinities, NaN and subnormals in the float inputs."""
    picks = np.array([-0.0, 0.0, np.inf, -np.inf, np.nan, 1e-40], dtype=np.float64)
    out = []
    for a in args:
        if isinstance(a, np.ndarray) and a.dtype.kind == "f" and a.size:
            a = a.copy()
            flat = a.reshape(-1)
            k = rng.integers(0, flat.size, size=min(2, flat.size))
            flat[k] = picks[rng.integers(0, len(picks), size=len(k))].astype(a.dtype)
        out.append(a)
    return out


@pytest.mark.parametrize("name", sorted(IR_KERNELS))
@SETTINGS
@given(seed=st.integers(0, 2**32 - 1),
       sizes=st.fixed_dictionaries({k: st.integers(0, 3) for k in "NGKMHRC"}),
       specials=st.booleans())
def test_ir_kernel_unchanged_by_every_pass(name, seed, sizes, specials):
    all_stages = _ir_stages(name)
    args = make_args(all_stages[0][1].funcs[0], np.random.default_rng(seed), sizes=sizes,
                     specials=specials)
    _same_everywhere(all_stages, args)


@pytest.mark.parametrize("name", sorted(REGISTRY))
@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), shrink=st.integers(0, 3), specials=st.booleans())
def test_registry_kernel_unchanged_by_every_pass(name, seed, shrink, specials):
    case = REGISTRY[name]
    dims = {k: max(1, v - shrink) for k, v in case.default_dims.items()}
    rng = np.random.default_rng(seed)
    args = list(case.make_inputs(rng, **dims))
    if specials:
        args = _perturb(args, rng)
    _same_everywhere(_registry_stages(name), args)
