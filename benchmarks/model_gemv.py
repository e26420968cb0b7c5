"""The Q4_K GEMVs of transformer blocks, one block after another, against ggml.

A decoder block's matrix-vector products for one token: q, k, v from the block input
x, o from the attention output a, gate and up from x again (the post-attention input
in a real model; any vector of that width here), down from the FFN hidden vector h.
Every matrix is Q4_K and every call multiplies different matrices, as a model does:
the benchmark makes as many blocks as it takes for their weights to exceed 4x the
last-level cache (at least 256 MiB; 2 GiB when the cache size is unknown) and times
them in turn, so each block's weights come from DRAM while the code stays warm.

* ours: one compiled DSL kernel per block (``block_gemvs``: x, a and h quantized to
  Q8_K once each, then seven row loops of ``quantized_dot``), one call per block,
  ``I.compile(..., threads=T)``;
* ggml (where llama-cpp-python is installed): one ggml graph per block holding the
  seven ``ggml_mul_mat`` nodes (ggml quantizes the vector inside each node), on a
  persistent ggml thread pool of T threads, one ``ggml_graph_compute`` per block.

Two models: ``270m`` (width 640, FFN 2048, 4 query heads and 1 key/value head of 256:
q 1024 x 640, k and v 256 x 640, o 640 x 1024, gate and up 2048 x 640, down 640 x
2048; 18 blocks per token) and ``7b`` (width 4096, FFN 11008, q k v o 4096 x 4096,
gate and up 11008 x 4096, down 4096 x 11008; 32 blocks per token). Q4_K records hold
256 elements, so a product over K = 640 is stored as K = 768 (3 records, the last
half padding) on both sides. It prints, per model and thread count, the median and
best time per block, the time per token (blocks per token x the median), the
weights' rate in GB/s and ours / ggml. Ours and ggml take turns, a few blocks each
(ggml's pool is put to sleep after its turn, so that its polling threads do not take
a CPU from ours), over ``--rounds`` rounds; ours is checked bit for bit against the ``q4k_gemv`` kernel of ``gemv_q4k.py``
(itself checked against the interpreter there) on one block.

    PYTHONPATH=. python benchmarks/model_gemv.py               # both models, ~2 minutes
    PYTHONPATH=. python benchmarks/model_gemv.py --model 270m  # one model
    PYTHONPATH=. python benchmarks/model_gemv.py --quick       # 270m, one round, seconds
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import ninfer_ir as I  # noqa: E402
from gemv_q4k import (THREADS, eviction_bytes, last_level_cache, load_ggml,  # noqa: E402
                      let_pool_sleep, machine_line, q4k_gemv, random_q4k,
                      time_interleaved, GgmlGraphs)

Q4K, Q8K = I.quant.q4_k, I.quant.q8_k


@I.kernel
def block_gemvs(wq: I.Tensor[I.u8, "NQ", "GX", 144], wk: I.Tensor[I.u8, "NKV", "GX", 144],
                wv: I.Tensor[I.u8, "NKV", "GX", 144], wo: I.Tensor[I.u8, "D", "GA", 144],
                wg: I.Tensor[I.u8, "F", "GX", 144], wu: I.Tensor[I.u8, "F", "GX", 144],
                wd: I.Tensor[I.u8, "D", "GH", 144],
                x: I.Tensor[I.f32, "GX", 256], a: I.Tensor[I.f32, "GA", 256],
                h: I.Tensor[I.f32, "GH", 256],
                yq: I.Buffer[I.f32, "NQ"], yk: I.Buffer[I.f32, "NKV"],
                yv: I.Buffer[I.f32, "NKV"], yo: I.Buffer[I.f32, "D"],
                yg: I.Buffer[I.f32, "F"], yu: I.Buffer[I.f32, "F"], yd: I.Buffer[I.f32, "D"]):
    xq = I.quantize(x, format=Q8K)
    aq = I.quantize(a, format=Q8K)
    hq = I.quantize(h, format=Q8K)
    for n in I.range(wq.shape[0]):
        yq[n] = I.quantized_dot(wq[n], xq, lhs_format=Q4K, rhs_format=Q8K, acc_dtype=I.f32)
    for n in I.range(wk.shape[0]):
        yk[n] = I.quantized_dot(wk[n], xq, lhs_format=Q4K, rhs_format=Q8K, acc_dtype=I.f32)
    for n in I.range(wv.shape[0]):
        yv[n] = I.quantized_dot(wv[n], xq, lhs_format=Q4K, rhs_format=Q8K, acc_dtype=I.f32)
    for n in I.range(wo.shape[0]):
        yo[n] = I.quantized_dot(wo[n], aq, lhs_format=Q4K, rhs_format=Q8K, acc_dtype=I.f32)
    for n in I.range(wg.shape[0]):
        yg[n] = I.quantized_dot(wg[n], xq, lhs_format=Q4K, rhs_format=Q8K, acc_dtype=I.f32)
    for n in I.range(wu.shape[0]):
        yu[n] = I.quantized_dot(wu[n], xq, lhs_format=Q4K, rhs_format=Q8K, acc_dtype=I.f32)
    for n in I.range(wd.shape[0]):
        yd[n] = I.quantized_dot(wd[n], hq, lhs_format=Q4K, rhs_format=Q8K, acc_dtype=I.f32)


# name: (width, FFN, query rows, key/value rows, blocks per token)
MODELS = {"270m": (640, 2048, 1024, 256, 18), "7b": (4096, 11008, 4096, 4096, 32)}
MATRICES = ("q", "k", "v", "o", "gate", "up", "down")


def records(k):
    """Q4_K records per row for a product over ``k`` elements (K rounded up to 256)."""
    return -(-k // 256)


def block_shapes(model):
    """``[(rows, records per row, input)]`` of the seven matrices; input is "x", "a" or "h"."""
    width, ffn, nq, nkv, _ = MODELS[model]
    gx, ga, gh = records(width), records(nq), records(ffn)
    return [(nq, gx, "x"), (nkv, gx, "x"), (nkv, gx, "x"), (width, ga, "a"),
            (ffn, gx, "x"), (ffn, gx, "x"), (width, gh, "h")]


def make_blocks(rng, model, working_set):
    """Distinct blocks' weights (lists of seven arrays), at least ``working_set`` bytes
    in all (at least two blocks), and the vectors x, a, h."""
    shapes = block_shapes(model)
    per_block = sum(n * g * 144 for n, g, _ in shapes)
    count = max(2, -(-working_set // per_block))
    width, ffn, nq, _, _ = MODELS[model]
    vectors = {name: rng.standard_normal((records(k), 256)).astype(np.float32)
               for name, k in (("x", width), ("a", nq), ("h", ffn))}
    first = [random_q4k(rng, n, g) for n, g, _ in shapes]
    # the other blocks: row-rotated copies (distinct bytes at every address, cheap to make)
    blocks = [first] + [[np.roll(w, 1 + b, axis=0) for w in first] for b in range(count - 1)]
    return blocks, vectors, per_block


def ours_calls(kernel, blocks, vectors, outs):
    x, a, h = vectors["x"], vectors["a"], vectors["h"]
    return [lambda ws=ws: kernel(*ws, x, a, h, *outs) for ws in blocks]


def check_block(kernel, blocks, vectors, shapes):
    """Ours on block 0 equals the single-GEMV kernel on each matrix, bit for bit."""
    outs = [np.zeros(n, np.float32) for n, _, _ in shapes]
    kernel(*blocks[0], vectors["x"], vectors["a"], vectors["h"], *outs)
    single = I.compile(q4k_gemv, target="cpu")
    for w, (n, _, which), got in zip(blocks[0], shapes, outs):
        want = np.zeros(n, np.float32)
        single(w, vectors[which], want)
        if got.tobytes() != want.tobytes():
            return False
    return True


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the 270m model, one round")
    parser.add_argument("--model", choices=("270m", "7b", "all"), default="all")
    parser.add_argument("--rounds", type=int, default=3, help="rounds over all configs")
    parser.add_argument("--calls", type=int, default=None,
                        help="timed block calls per config and round (default: 2 passes "
                             "over the blocks, at least 16)")
    parser.add_argument("--no-ggml", action="store_true", help="skip the ggml peer")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    models = list(MODELS) if args.model == "all" else [args.model]
    if args.quick:
        models, args.rounds = ["270m"], 1

    llc = last_level_cache()
    working_set = eviction_bytes(llc)
    print(machine_line())
    print(("last-level cache: L%d, %d MiB" % (llc[0], llc[1] >> 20) if llc
           else "last-level cache: size unknown")
          + f"; each model's blocks hold at least {working_set >> 20} MiB of weights, "
            "timed in turn (each block's weights come from DRAM)")
    ggml, why = (None, "skipped (--no-ggml)") if args.no_ggml else load_ggml()
    print("ggml peer: " + (f"llama-cpp-python {ggml.version}, one graph of 7 ggml_mul_mat "
                           "per block" if ggml else f"not available ({why})"))
    kernels = {t: I.compile(block_gemvs, target="cpu", threads=t) for t in THREADS}
    rng = np.random.default_rng(args.seed)
    samples = {}
    results = []
    for model in models:
        shapes = block_shapes(model)
        blocks, vectors, per_block = make_blocks(rng, model, working_set)
        exact = check_block(kernels[1], blocks, vectors, shapes)
        outs = [np.zeros(n, np.float32) for n, _, _ in shapes]
        calls = args.calls or max(16, 2 * len(blocks))
        peers = {}
        if ggml is not None:
            for t in THREADS:
                peers[t] = GgmlGraphs(ggml, [[(w, vectors[which]) for w, (_, _, which)
                                              in zip(ws, shapes)] for ws in blocks], t)
        try:
            for _ in range(args.rounds):
                for t in THREADS:
                    groups = {"ours": ours_calls(kernels[t], blocks, vectors, outs)}
                    settle = [let_pool_sleep]
                    if t in peers:
                        groups["ggml"] = [lambda i=i, p=peers[t]: p.run(i)
                                          for i in range(len(blocks))]
                        settle.append(peers[t].pause)
                    # the two take turns, a few blocks each (time_interleaved)
                    for name, times in zip(groups, time_interleaved(list(groups.values()),
                                                                    calls, settle)):
                        samples.setdefault((model, t, name), []).extend(times)
        finally:
            for peer in peers.values():
                peer.close()
        results.append((model, len(blocks), per_block, exact))
        del blocks

    print(f"\nper block: the seven GEMVs; per token: blocks per token x the median; "
          f"{args.rounds} round(s)")
    head = (f"{'model':>6} {'blocks':>6} {'MB/block':>8} {'T':>2} {'ours med':>9} "
            f"{'best':>8} {'GB/s':>6} {'us/token':>9} {'ggml med':>9} {'best':>8} "
            f"{'us/token':>9} {'ours/ggml':>9}  exact")
    print(head)
    print("-" * len(head))
    ratios = []
    for model, count, per_block, exact in results:
        per_token = MODELS[model][4]
        for t in THREADS:
            ours = samples[(model, t, "ours")]
            peer = samples.get((model, t, "ggml"))
            om = statistics.median(ours)
            cells = [f"{model:>6}", f"{count:>6}", f"{per_block / 1e6:8.2f}", f"{t:>2}",
                     f"{om * 1e6:9.1f}", f"{min(ours) * 1e6:8.1f}", f"{per_block / om / 1e9:6.1f}",
                     f"{om * per_token * 1e6:9.0f}"]
            if peer:
                gm = statistics.median(peer)
                ratios.append((model, t, om / gm))
                cells += [f"{gm * 1e6:9.1f}", f"{min(peer) * 1e6:8.1f}",
                          f"{gm * per_token * 1e6:9.0f}", f"{om / gm:9.2f}"]
            else:
                cells += [f"{'-':>9}", f"{'-':>8}", f"{'-':>9}", f"{'-':>9}"]
            cells.append(" yes" if exact else " NO")
            print(" ".join(cells))
    print("\ntargets (medians, ratios within this run):")
    if not ratios:
        print("  ours/ggml: no ggml in this run")
    for model, t, r in ratios:
        print(f"  {model}, {t} thread{'s' if t > 1 else ''}: ours/ggml per token {r:.2f} "
              f"(target <= 0.90) {'met' if r <= 0.9 else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
