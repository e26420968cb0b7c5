"""A short seeded run of the program fuzzer, and checks that the fuzzer itself can fail."""
import re

import numpy as np

from ninfer_ir import fuzz
from ninfer_ir.fuzz import diff, gen


def test_a_seeded_run_of_generated_programs_agrees_everywhere():
    s = fuzz.run_programs(seed=0, count=24)
    details = [(f.seed, f.category, f.detail, f.source) for f in s.failures]
    assert s.generated == 24 and s.refused == 0, s.refusals
    assert s.failed == 0, details
    assert s.passed == 24


def test_mutated_ir_text_gives_typed_parse_errors():
    out = fuzz.fuzz_parse(seed=0, count=300)
    assert out["failures"] == []
    assert out["cases"] == 300 and out["refused"] > 100      # the mutations reach the parser


def test_random_operands_give_typed_format_errors():
    out = fuzz.fuzz_formats(seed=0, count=1500)
    assert out["failures"] == []
    assert out["cases"] == 1500 and out["refused"] > 500 and out["accepted"] > 0


def test_the_generator_covers_the_language():
    text = "\n".join(gen.generate(s).source() for s in range(300))
    for dtype in gen.STORABLE:
        assert f"I.{gen.dt(dtype)}" in text, dtype
    for construct in ["I.prange(", "I.range(", "range(", "I.cast(", "I.bitcast(", "I.select(",
                      " if ", "else:", "I.minimum(", "I.maximum(", "I.abs(", "I.dot(",
                      "I.reduce(", "I.sum(", "I.prod(", "I.min(", "I.max(", "I.quantize(",
                      "I.quantized_dot(", "I.decode(", "assert ", "return ", "[:, 0]",
                      "[:] = ", " // ", " % ", " << ", " >> ", " ^ ", "(~", " and ", " or ",
                      "(not "]:
        assert construct in text, construct
    assert re.search(r"\[\d+:\d+:\d+\] = \w+\[\d+:\d+:\d+\]", text)   # strided on both sides
    for order in ["'seq'", "'tree'", "'chunk<", "/tree'"]:
        assert order in text, order
    for fmt in gen.GROUPED:
        assert repr(fmt) in text, fmt


def test_generation_is_deterministic():
    assert gen.generate(123).source() == gen.generate(123).source()
    assert gen.generate(123).source() != gen.generate(124).source()


def test_nan_matches_any_nan_and_nothing_else():
    a = np.float32([np.nan, 0.0, 1.0])
    b = np.array([0xFFC00001, 0, 0x3F800000], np.uint32).view(np.float32)
    assert diff.same_bits(a, b, "f32")
    assert not diff.same_bits(a, np.float32([np.nan, -0.0, 1.0]), "f32")     # -0 is not +0
    assert not diff.same_bits(a, np.float32([1.0, 0.0, 1.0]), "f32")
    words = np.uint16([0x7FC0, 0x8000])
    assert diff.same_bits(words, np.uint16([0xFFC1, 0x8000]), "bf16")
    assert not diff.same_bits(words, np.uint16([0x7FC0, 0x0000]), "bf16")


def _first_seed_with(predicate):
    return next(s for s in range(1000) if predicate(gen.generate(s)))


def test_a_wrong_backend_is_caught_and_reduced(monkeypatch):
    """A CPU kernel that flips the last bit of its first output buffer is a failure, and
    the reproducer keeps only a statement that writes that buffer."""
    seed = _first_seed_with(lambda p: len(p.stmts) >= 3 and p.param_list()[0].buffer
                            and p.sizes["N"] > 0)
    real = diff._runners

    def broken(kernel, variants, cache_dir):
        runners = real(kernel, variants, cache_dir)
        cpu = runners["cpu1"]
        buffers = [k for k, p in enumerate(kernel.ir.funcs[0].args)
                   if type(p.type).__name__ == "BufferType"]
        if not buffers:
            return runners
        first_buffer = buffers[0]

        def run(*args):
            out = cpu(*args)
            a = args[first_buffer]
            if a.size:
                a.reshape(-1).view(np.uint8)[0] ^= 1
            return out
        runners["cpu1"] = run
        return runners

    monkeypatch.setattr(diff, "_runners", broken)
    program = gen.generate(seed)
    res, failure = fuzz.check_program(program)
    assert res.status == "failed" and failure.category == "value:cpu1", res.detail
    assert len(failure.source) < len(program.source())
    assert failure.source.count("\n    ") < program.source().count("\n    ")


def test_an_untyped_error_is_a_failure(monkeypatch):
    real = diff._runners

    def broken(kernel, variants, cache_dir):
        runners = real(kernel, variants, cache_dir)
        runners["hostc"] = KeyError("boom")
        return runners

    monkeypatch.setattr(diff, "_runners", broken)
    res, _ = fuzz.check_program(gen.generate(3), reduce=False)
    assert res.status == "failed" and res.category == "untyped:hostc:KeyError"


def test_another_message_is_a_failure(monkeypatch):
    """Errors must match the interpreter's message too, not only its type."""
    from ninfer_ir.errors import DomainError
    real = diff._runners

    def broken(kernel, variants, cache_dir):
        runners = real(kernel, variants, cache_dir)
        runners["interp"] = DomainError("'load': index 3 is out of range for axis 0 of size 2")
        runners["cpu2"] = DomainError("'load': index 5 is out of range for axis 0 of size 2")
        for name in variants:
            if name != "cpu2":
                runners[name] = runners["interp"]
        return runners

    monkeypatch.setattr(diff, "_runners", broken)
    res, _ = fuzz.check_program(gen.generate(3), reduce=False)
    assert res.status == "failed" and res.category == "errmsg:cpu2", res.detail


def test_constructs_whose_defects_were_fixed_are_generated():
    """Whole-buffer augmented assignment, static slices in a loop, decode with quantize in
    one kernel and a whole-tensor cast used twice (all once excluded) are generated."""
    texts = [gen.generate(s).source() for s in range(300)]
    text = "\n".join(texts)
    assert re.search(r"^    o\d+ \+= ", text, re.M)
    assert re.search(r"in range\(1\):\n.*\[i\d+:3\]", text)
    assert any("I.decode(" in t and "I.quantize(" in t for t in texts)
    assert any(re.search(r"(I\.cast\(x\d+, I\.\w+\)).*\1", t) for t in texts)
    assert gen.EXCLUDED == {}                  # bounds messages: compared since


def test_copies_of_arguments_keep_their_sharing():
    x = np.arange(10, dtype=np.float32)
    other = np.ones(3)
    a, r, k, o = diff.copy_arguments([x, x[::-1], 3, other])
    assert np.shares_memory(a, r) and not np.shares_memory(a, x)
    assert not np.shares_memory(o, other) and k == 3
    a[0] = 100
    assert r[-1] == 100 and x[0] == 0


def test_some_programs_pass_a_buffer_as_a_tensor_too(tmp_path):
    from ninfer_ir.fuzz.inputs import make_arguments
    shared = 0
    for seed in range(60):
        program = gen.generate(seed)
        kernel = diff.load_kernel(program.source(), str(tmp_path))
        arrays = [a for a in make_arguments(program, kernel, seed).values()
                  if isinstance(a, np.ndarray)]
        shared += any(np.shares_memory(a, b) for i, a in enumerate(arrays)
                      for b in arrays[i + 1:])
    assert 0 < shared < 30
