"""The rows kernel's reading plan: chunks of whole periods, each code inside its words."""
import pytest

import ninfer_ir as I
from ninfer_ir.backends.llvm.kernels.qdecode_plan import plan_for

FORMATS = ["q2_g64_fp16", "q4_g64_fp16", "q5_g64_fp16", "q6_g64_fp16", "q8_g32_fp16",
           "t2_g128_fp16"]


@pytest.mark.parametrize("chunk", [32, 64])
@pytest.mark.parametrize("name", FORMATS)
def test_plan_covers_every_bit_once(name, chunk):
    fmt = I.formats.get(name)
    plan = plan_for(fmt, chunk)
    assert plan.chunk_bytes <= chunk and fmt.group % plan.period_codes == 0
    assert plan.period_codes * fmt.bits == 32 * plan.period_words
    seen = []
    for c in range(plan.period_codes):
        word, offset, crosses = plan.slot(c)
        assert 32 * word + offset == c * fmt.bits
        assert crosses == (offset + fmt.bits > 32) and word + crosses < plan.period_words
        seen += range(c * fmt.bits, (c + 1) * fmt.bits)
    assert seen == list(range(32 * plan.period_words))


def test_periods():
    got = {name: (plan_for(I.formats.get(name)).period_words,
                  plan_for(I.formats.get(name)).period_codes,
                  plan_for(I.formats.get(name)).periods) for name in FORMATS}
    assert got == {"q2_g64_fp16": (1, 16, 16), "q4_g64_fp16": (1, 8, 16),
                   "q5_g64_fp16": (5, 32, 3), "q6_g64_fp16": (3, 16, 5),
                   "q8_g32_fp16": (1, 4, 16), "t2_g128_fp16": (1, 16, 16)}
