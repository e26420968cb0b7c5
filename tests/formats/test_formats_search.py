"""grouped_search: valid words, never worse than grouped_absmax under the same
importance weights, negative scales only on request."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ninfer_ir import formats
from ninfer_ir.errors import DomainError
from ninfer_ir.formats import FormatError

NAMES = ["q4_g64_fp16", "q5_g64_fp16", "q6_g64_fp16", "q8_g32_fp16"]


def group_errors(fmt, x, enc, importance):
    """Importance-weighted squared error of every group, from the decoded values."""
    w = np.broadcast_to(importance, x.shape).astype(np.float64)
    residual = x.astype(np.float64) - fmt.decode(enc).astype(np.float64)
    per_value = w * residual * residual
    k, g = x.shape[-1], fmt.group
    return np.stack([per_value[..., i:i + g].sum(axis=-1) for i in range(0, k, g)], axis=-1)


@settings(max_examples=40, deadline=None)
@given(name=st.sampled_from(NAMES), rows=st.integers(1, 4), k=st.integers(1, 200),
       weighted=st.booleans(), negative=st.booleans(), seed=st.integers(0, 2 ** 32 - 1))
def test_never_worse_than_absmax(name, rows, k, weighted, negative, seed):
    rng = np.random.default_rng(seed)
    fmt = formats.get(name)
    x = (rng.standard_normal((rows, k)) * rng.choice([1e-3, 1.0, 30.0], (rows, 1)))
    x = x.astype(np.float32)
    importance = rng.uniform(0, 4, k) if weighted else None
    enc = fmt.encode(x, method="grouped_search", importance=importance, negative_scales=negative)
    fmt.validate(enc)
    if not negative:
        assert not np.signbit(enc.scales).any()
    base = fmt.encode(x, method="grouped_absmax")
    weights = np.ones(k) if importance is None else importance
    assert np.all(group_errors(fmt, x, enc, weights) <= group_errors(fmt, x, base, weights))
    zero_groups = base.scales == 0
    assert np.array_equal(enc.scales[zero_groups].view(np.uint16),
                          np.zeros(zero_groups.sum(), np.uint16))


def test_search_improves_typical_weights():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((32, 256)).astype(np.float32)
    q4 = formats.get("q4_g64_fp16")
    ones = np.ones(256)
    searched = group_errors(q4, x, q4.encode(x, method="grouped_search"), ones).sum()
    canonical = group_errors(q4, x, q4.encode(x, method="grouped_absmax"), ones).sum()
    assert searched < 0.95 * canonical


def test_negative_scales_reach_the_most_negative_code():
    # The largest magnitude (+8) sits on -8 only with a negative scale (-1.0); then the
    # whole group is exact. Positive scales cannot reach +8 with codes up to 7.
    x = np.zeros((1, 64), np.float32)
    x[0, :7] = [8, 6, 4, 2, -2, -4, -6]
    q4 = formats.get("q4_g64_fp16")
    positive = q4.encode(x, method="grouped_search")
    assert positive.scales[0, 0] > 0
    assert np.any(q4.decode(positive) != x)
    negative = q4.encode(x, method="grouped_search", negative_scales=True)
    assert negative.scales.tolist() == [[-1.0]]
    assert negative.codes[0, :7].tolist() == [-8, -6, -4, -2, 2, 4, 6]
    assert np.array_equal(q4.decode(negative), x)
    assert negative.provenance["parameters"]["negative_scales"] is True


def test_importance_steers_the_choice():
    # Two channels disagree on the best scale; the heavier one wins.
    q4 = formats.get("q4_g64_fp16")
    x = np.zeros((1, 64), np.float32)
    x[0, :2] = [7.0, 5.3]
    favour_second = np.zeros(64)
    favour_second[1] = 1.0
    enc = q4.encode(x, method="grouped_search", importance=favour_second)
    value = float(q4.decode(enc)[0, 1])
    base = float(q4.decode(q4.encode(x, method="grouped_absmax"))[0, 1])
    assert abs(value - 5.3) < abs(base - 5.3)


def test_importance_is_checked():
    q4 = formats.get("q4_g64_fp16")
    x = np.ones((2, 10), np.float32)
    with pytest.raises(FormatError, match="importance"):
        q4.encode(x, method="grouped_search", importance=np.ones(11))
    with pytest.raises(DomainError):
        q4.encode(x, method="grouped_search", importance=-np.ones(10))
    with pytest.raises(DomainError):
        q4.encode(x, method="grouped_search", importance=np.full(10, np.nan))
    with pytest.raises(DomainError):
        q4.encode(np.full((1, 3), np.inf, np.float32), method="grouped_search")
