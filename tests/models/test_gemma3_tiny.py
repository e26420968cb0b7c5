"""Gemma 3 end to end on a tiny GGUF file written here (random weights in the real
model's formats): the reader, the tokenizer, the config, the kernel forward pass
(interpreter == CPU bit for bit at 1 and 2 threads, close to the numpy reference) and
``ninfer generate``."""
import struct
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("gguf", reason="writing the tiny GGUF file needs the gguf package")
pytest.importorskip("sentencepiece", reason="the tokenizer needs sentencepiece")

sys.path.insert(0, str(Path(__file__).parent))
import tiny_gemma3  # noqa: E402

from ninfer_ir.cli import main  # noqa: E402
from ninfer_ir.models.gemma3 import Gemma3, pick  # noqa: E402
from ninfer_ir.models.gemma3.config import Gemma3Config  # noqa: E402
from ninfer_ir.models.gemma3.forward import KernelForward  # noqa: E402
from ninfer_ir.models.gemma3.reference import ReferenceForward  # noqa: E402
from ninfer_ir.models.gguf import GGUFError, GGUFFile  # noqa: E402
from ninfer_ir.models.tokenizer import StreamDecoder, Tokenizer  # noqa: E402

TOKENS = [2, 306, 267, 286, 289, 281, 280]        # seven positions: past the window of 4


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    return tiny_gemma3.write(tmp_path_factory.mktemp("gemma3") / "tiny.gguf")


@pytest.fixture(scope="module")
def gguf_file(path):
    return GGUFFile(path)


def test_reader_metadata_and_views(gguf_file):
    import gguf
    f = gguf_file
    assert f.metadata["gemma3.block_count"] == 2
    assert f.metadata["tokenizer.ggml.bos_token_id"] == 2
    assert len(f.tensors) == 2 + 13 * 2
    t = f.tensors["blk.0.attn_q.weight"]
    assert (t.type_name, t.shape, t.format.name) == ("Q5_0", (256, 256), "gguf_q5_0")
    rec = t.records
    assert rec.shape == (256, 8, 22) and not rec.flags.writeable
    assert np.shares_memory(rec, f._buf)                      # a view, not a copy
    norm = f.tensors["output_norm.weight"].records
    assert norm.dtype == np.float32 and np.shares_memory(norm, f._buf)
    other = {t.name: t for t in gguf.GGUFReader(f.path).tensors}
    for name in ("token_embd.weight", "blk.0.attn_q.weight", "blk.0.ffn_down.weight",
                 "blk.1.ffn_down.weight", "blk.1.attn_v.weight"):
        theirs = gguf.quants.dequantize(other[name].data, other[name].tensor_type)
        ours = f.tensors[name].decode()
        assert np.array_equal(ours.view(np.uint32),
                              theirs.reshape(ours.shape).astype(np.float32).view(np.uint32)), name
    assert f.string_array("tokenizer.ggml.tokens")[:3] == ["<pad>", "<eos>", "<bos>"]


@pytest.mark.parametrize("cut", [3, 20, 200, -1000])
def test_truncated_or_damaged_files_are_one_line_errors(path, tmp_path, cut):
    data = Path(path).read_bytes()
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(data[:cut] if cut > 0 else data[:cut])
    with pytest.raises(GGUFError) as e:
        GGUFFile(bad)
    assert "\n" not in str(e.value) and str(bad) in str(e.value)


def test_bad_version_and_magic(path, tmp_path):
    data = bytearray(Path(path).read_bytes())
    data[4:8] = struct.pack("<I", 99)
    bad = tmp_path / "v99.gguf"
    bad.write_bytes(bytes(data))
    with pytest.raises(GGUFError, match="version 99"):
        GGUFFile(bad)
    bad.write_bytes(b"GGML" + bytes(data[4:]))
    with pytest.raises(GGUFError, match="not a GGUF file"):
        GGUFFile(bad)


def test_config_from_metadata(gguf_file):
    c = Gemma3Config.from_gguf(gguf_file)
    assert (c.blocks, c.width, c.heads, c.kv_heads, c.head_dim, c.ffn, c.vocab) == \
        (2, 256, 2, 1, 128, 512, len(tiny_gemma3.vocabulary()[0]))
    assert (c.sliding_window, c.sliding_pattern) == (4, 2)
    assert c.is_local(0) and not c.is_local(1)
    assert (c.rope_base_of(0), c.rope_base_of(1)) == (10000.0, 1e6)
    assert c.query_scale == 128 ** -0.5


def test_tokenizer_round_trips_and_splits_user_tokens(gguf_file):
    tok = Tokenizer(gguf_file)
    for text in ["the cat is in the hat", "  two\n\nlines\n", "ünï 日本 🙂", "", "a   b"]:
        ids = tok.encode(text)
        assert ids[0] == tok.bos_id and tok.decode(ids[1:]) == text
    ids = tok.encode("a\n\nb", add_bos=False)
    assert ids[1] == tiny_gemma3.vocabulary()[0].index("\n\n")
    # control-token text becomes the token only with special=True
    with_special = tok.encode("<start_of_turn>x", add_bos=False, special=True)
    assert with_special[0] == 4
    assert 4 not in tok.encode("<start_of_turn>x", add_bos=False)
    stream = StreamDecoder(tok)
    ids = tok.encode("ünï 🙂", add_bos=False)
    assert "".join(stream.push(i) for i in ids) + stream.flush() == "ünï 🙂"


@pytest.fixture(scope="module")
def interp_logits(gguf_file):
    f = KernelForward(gguf_file, target="interp")
    return [f.forward(TOKENS[:4], 0)] + [f.forward([t], 4 + i) for i, t in enumerate(TOKENS[4:])]


@pytest.mark.parametrize("threads", [1, 2])
def test_cpu_logits_equal_the_interpreter(gguf_file, interp_logits, threads):
    f = KernelForward(gguf_file, target="cpu", threads=threads)
    got = [f.forward(TOKENS[:4], 0)] + [f.forward([t], 4 + i) for i, t in enumerate(TOKENS[4:])]
    for a, b in zip(got, interp_logits):
        assert np.array_equal(a.view(np.uint32), b.view(np.uint32))


@pytest.mark.parametrize("target, threads", [("interp", None), ("cpu", 1), ("cpu", 2)])
def test_prompt_at_once_is_token_by_token_bit_for_bit(gguf_file, interp_logits, target, threads):
    """A prompt goes through the kernels as one batch (or batches of 3, the last one
    short): every row's arithmetic is a token's own, so the logits and the KV cache are
    the bits of reading it token by token (interp_logits read 4 tokens, then 1 by 1)."""
    tokens = TOKENS[:6]
    one = KernelForward(gguf_file, target=target, threads=threads, batch=1)
    for i, t in enumerate(tokens):
        want = one.forward([t], i)
    for batch in (64, 3):
        f = KernelForward(gguf_file, target=target, threads=threads, batch=batch)
        got = f.forward(tokens, 0)
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), batch
        n = len(tokens)
        assert np.array_equal(f.k_cache[:n].view(np.uint32), one.k_cache[:n].view(np.uint32))
        assert np.array_equal(f.v_cache[:n].view(np.uint32), one.v_cache[:n].view(np.uint32))
    assert np.array_equal(KernelForward(gguf_file, target=target, threads=threads, batch=1)
                          .forward(TOKENS[:4], 0).view(np.uint32),
                          interp_logits[0].view(np.uint32))


def test_quantized_weights_are_used_in_place(gguf_file):
    """Every matrix (Q4_K, Q6_K, Q5_0, Q8_0; the tied output projection too) is an
    argument of a kernel call as the records in the map: nothing is decoded to float32."""
    f = KernelForward(gguf_file, target="interp")
    args = [a for layer in f._layer_calls(1) for _, call, named in layer
            for a in (*call, *named.values())]
    args += list(f._logits.keywords.values())          # on interp a partial call
    mats = {n: t for n, t in gguf_file.tensors.items() if len(t.shape) == 2}
    assert {t.type_name for t in mats.values()} == {"Q4_K", "Q6_K", "Q5_0", "Q8_0"}
    for name, t in mats.items():
        w = t.records
        assert np.shares_memory(w, gguf_file._buf), name
        assert any(type(a) is np.ndarray and a.dtype == np.uint8 and a.shape == w.shape
                   and a.__array_interface__["data"][0] == w.__array_interface__["data"][0]
                   for a in args), name


def test_loaded_tensors_are_the_stored_bytes_in_process_memory(path, interp_logits):
    """``load_tensors`` copies every tensor as stored (same bytes, same alignment),
    read-only, out of the map; the model on loaded weights gives the same bits."""
    mapped, loaded = GGUFFile(path), GGUFFile(path)
    loaded.load_tensors()
    loaded.load_tensors()                                   # a second call changes nothing
    for name, t in mapped.tensors.items():
        a, b = t.records, loaded.tensors[name].records
        assert b.shape == a.shape and b.dtype == a.dtype and not b.flags.writeable, name
        assert np.array_equal(a.view(np.uint8), b.view(np.uint8)), name
        assert np.shares_memory(a, mapped._buf) and not np.shares_memory(b, loaded._buf), name
        assert (b.__array_interface__["data"][0] - t.offset) % 64 == 0, name
    assert loaded.string_array("tokenizer.ggml.tokens") == \
        mapped.string_array("tokenizer.ggml.tokens")          # metadata still read from the map
    got = KernelForward(loaded, target="cpu", threads=2).forward(TOKENS[:4], 0)
    assert np.array_equal(got.view(np.uint32), interp_logits[0].view(np.uint32))
    m = Gemma3(path, forward="reference")                    # in place by default
    assert np.shares_memory(m.gguf.tensors["token_embd.weight"].records, m.gguf._buf)
    m = Gemma3(path, forward="reference", weights="memory")
    assert not np.shares_memory(m.gguf.tensors["token_embd.weight"].records, m.gguf._buf)
    with pytest.raises(ValueError, match="weights"):
        Gemma3(path, weights="disk")


def test_kernels_follow_the_reference(gguf_file, interp_logits):
    """The kernel pass quantizes activations to Q8_K for the Q4_K GEMVs; the reference
    multiplies in float32: the logits agree to a few percent of their spread."""
    ref = ReferenceForward(gguf_file)
    want = [ref.forward(TOKENS[:4], 0)] + [ref.forward([t], 4 + i)
                                            for i, t in enumerate(TOKENS[4:])]
    for a, b in zip(interp_logits, want):
        spread = float(b.max() - b.min())
        assert spread > 0 and float(np.abs(a - b).max()) < 0.05 * spread


def test_reference_prompt_at_once_equals_token_by_token(gguf_file):
    a = ReferenceForward(gguf_file).forward(TOKENS, 0)
    r = ReferenceForward(gguf_file)
    r.forward(TOKENS[:3], 0)
    b = [r.forward([t], 3 + i) for i, t in enumerate(TOKENS[3:])][-1]
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_generate_greedy_and_sampled(path):
    m = Gemma3(path, forward="reference")
    greedy = list(m.generate("the cat", max_tokens=4))
    assert len(greedy) == 4 and m.stats["prompt_tokens"] == len(m.tokenizer.encode("the cat"))
    logits = ReferenceForward(m.gguf).forward(m.tokenizer.encode("the cat"), 0)
    assert greedy[0] == int(np.argmax(logits))
    a = list(m.generate("the cat", max_tokens=4, temperature=1.5, seed=3))
    b = list(m.generate("the cat", max_tokens=4, temperature=1.5, seed=3))
    assert a == b
    rng = np.random.default_rng(0)
    counts = np.bincount([pick(np.float32([0, 0, 50]), 1.0, rng) for _ in range(20)],
                         minlength=3)
    assert counts[2] == 20


def test_cli_generate_streams(path, capsys):
    assert main(["generate", str(path), "--prompt", "the cat", "--max-tokens", "3",
                 "--target", "interp"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("the cat") and "DSL kernels on interp" in err
    assert main(["generate", str(path), "--prompt", "the", "--max-tokens", "2",
                 "--reference"]) == 0
    assert "reference (numpy) forward pass" in capsys.readouterr().err


@pytest.mark.parametrize("argv, code, text", [
    (["generate", "missing.gguf", "--prompt", "x"], 2, "no such file"),
    (["generate", "{path}"], 2, "--prompt"),
    (["generate", "{path}", "--prompt", "x", "--max-tokens", "0"], 2, "positive"),
    (["generate", "{path}", "--prompt", "x", "--temperature", "-1"], 2, "--temperature"),
    (["generate", "{path}", "--prompt", "x", "--target", "nope"], 2, "invalid choice"),
    (["generate", "{path}", "--prompt", "x", "--reference", "--target", "interp"], 2,
     "--reference"),
    (["generate", "{bad}", "--prompt", "x"], 1, "not a GGUF file"),
    (["generate", "{path}", "--prompt", "the cat " * 10, "--context", "8"], 2, "--context"),
])
def test_cli_usage_errors(path, tmp_path, capsys, argv, code, text):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"nope" * 10)
    argv = [a.format(path=path, bad=bad) for a in argv]
    assert main(argv) == code
    err = capsys.readouterr().err.strip()
    assert text in err and len(err.splitlines()) == 1


@pytest.mark.gpu
def test_cuda_logits_equal_the_interpreter(gguf_file, interp_logits):
    from ninfer_ir.backends.cuda.runtime import gpu_available
    ok, why = gpu_available()
    if not ok:
        pytest.skip(f"no GPU: {why}")
    f = KernelForward(gguf_file, target="cuda")
    got = [f.forward(TOKENS[:4], 0)] + [f.forward([t], 4 + i) for i, t in enumerate(TOKENS[4:])]
    for a, b in zip(got, interp_logits):
        assert np.array_equal(a.view(np.uint32), b.view(np.uint32))
