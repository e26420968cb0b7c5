"""A tiny Gemma-3-shaped GGUF file with random weights in the real model's formats
(Q8_0 embedding, Q5_0 / Q8_0 / Q4_K / Q6_K matrices, F32 norms), 2 blocks (one local,
one global), and a small SentencePiece vocabulary: bytes, letters, a few merges,
user-defined whitespace runs and the control tokens."""
import numpy as np

from ninfer_ir.q4k import encode_q4k

WIDTH, HEADS, KV_HEADS, HEAD_DIM, FFN, BLOCKS, WINDOW = 256, 2, 1, 128, 512, 2, 4
CONTROL = ["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>"]
USER = ["\n", "\n\n", "  ", "   "]
WORDS = ["▁t", "he", "▁the", "▁a", "in", "▁in", "er", "an", "on", "▁of", "▁and", "ing",
         "▁to", "is", "▁is", "at", "en", "ou", "▁w", "it"]


def vocabulary():
    tokens, scores, types = [], [], []
    for t in CONTROL:
        tokens.append(t), scores.append(-1000.0), types.append(3)
    for t in USER:
        tokens.append(t), scores.append(0.0), types.append(4)
    for b in range(256):
        tokens.append(f"<0x{b:02X}>"), scores.append(0.0), types.append(6)
    chars = list("▁abcdefghijklmnopqrstuvwxyzTHE.,!?0123456789")
    for i, t in enumerate(WORDS + chars):
        tokens.append(t), scores.append(-float(i)), types.append(1)
    return tokens, scores, types


def _q8_0(rng, n, k):
    import gguf
    return gguf.quants.quantize(rng.standard_normal((n, k)).astype(np.float32) * 0.1,
                                gguf.GGMLQuantizationType.Q8_0)


def _q5_0(rng, n, k):
    import gguf
    return gguf.quants.quantize(rng.standard_normal((n, k)).astype(np.float32) * 0.1,
                                gguf.GGMLQuantizationType.Q5_0)


def _q4_k(rng, n, k):
    return encode_q4k(rng.standard_normal((n, k)).astype(np.float32) * 0.1).reshape(n, -1)


def _q6_k(rng, n, k):
    """Random Q6_K blocks (no encoder at hand) with a small finite scale d."""
    b = rng.integers(0, 256, (n, k // 256, 210), dtype=np.uint8)
    b[:, :, 192:208] = rng.integers(-32, 32, (n, k // 256, 16)).astype(np.int8).view(np.uint8)
    b[:, :, 208:210] = np.array([2e-4], np.float16).view(np.uint8)
    return b.reshape(n, -1)


def write(path, seed=0):
    import gguf
    G = gguf.GGMLQuantizationType
    rng = np.random.default_rng(seed)
    tokens, scores, types = vocabulary()
    w = gguf.GGUFWriter(str(path), "gemma3")
    w.add_block_count(BLOCKS)
    w.add_context_length(64)
    w.add_embedding_length(WIDTH)
    w.add_feed_forward_length(FFN)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_key_length(HEAD_DIM)
    w.add_value_length(HEAD_DIM)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_rope_freq_base(1e6)
    w.add_sliding_window(WINDOW)
    w.add_uint32("gemma3.attention.sliding_window_pattern", 2)   # layer 0 local, 1 global
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_bos_token_id(2)
    w.add_eos_token_id(1)
    w.add_unk_token_id(3)
    w.add_pad_token_id(0)
    w.add_add_bos_token(True)
    w.add_add_space_prefix(False)

    def add(name, records, raw):
        w.add_tensor(name, records, raw_dtype=raw)

    def norm(name, n, base):
        w.add_tensor(name, (base + 0.1 * rng.standard_normal(n)).astype(np.float32))

    v = len(tokens)
    add("token_embd.weight", _q8_0(rng, v, WIDTH), G.Q8_0)
    norm("output_norm.weight", WIDTH, 1.0)
    q, kv = HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM
    for b in range(BLOCKS):
        p = f"blk.{b}."
        add(p + "attn_q.weight", _q5_0(rng, q, WIDTH), G.Q5_0)
        add(p + "attn_k.weight", _q5_0(rng, kv, WIDTH), G.Q5_0)
        if b % 2:
            add(p + "attn_v.weight", _q8_0(rng, kv, WIDTH), G.Q8_0)
            add(p + "ffn_down.weight", _q6_k(rng, WIDTH, FFN), G.Q6_K)
        else:
            add(p + "attn_v.weight", _q5_0(rng, kv, WIDTH), G.Q5_0)
            add(p + "ffn_down.weight", _q4_k(rng, WIDTH, FFN), G.Q4_K)
        add(p + "attn_output.weight", _q4_k(rng, WIDTH, q), G.Q4_K)
        add(p + "ffn_gate.weight", _q5_0(rng, FFN, WIDTH), G.Q5_0)
        add(p + "ffn_up.weight", _q5_0(rng, FFN, WIDTH), G.Q5_0)
        for name, n in (("attn_norm", WIDTH), ("post_attention_norm", WIDTH),
                        ("ffn_norm", WIDTH), ("post_ffw_norm", WIDTH),
                        ("attn_q_norm", HEAD_DIM), ("attn_k_norm", HEAD_DIM)):
            norm(p + name + ".weight", n, 1.0)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path
