"""Q4_K GEMV on the weights of a GGUF file, checked bit for bit against the interpreter.

    python examples/gguf_gemv.py [MODEL.gguf] [--tensor NAME] [--rows 256] [--target cpu]

Without a file it writes a small GGUF file of its own (two Q4_K matrices encoded
from random floats, and an F32 vector) to a temporary folder. For every Q4_K tensor
(or the one named) it runs y = W x on the compiled target and on the interpreter,
requires the same bits, and prints the relative error against a float64 product of
the decoded weights (``ninfer_ir.formats``) and the unquantized x.
Needs the ``gguf`` package (in the test extra).
"""
import argparse
import os
import sys
import tempfile

import numpy as np

import ninfer_ir as I
from ninfer_ir import formats
from ninfer_ir.q4k import encode_q4k


@I.kernel
def q4k_gemv(w: I.Tensor[I.u8, "N", "G", 144], x: I.Tensor[I.f32, "G", 256],
             y: I.Buffer[I.f32, "N"]):
    xq = I.quantize(x, format=I.quant.q8_k)
    for n in I.range(w.shape[0]):
        y[n] = I.quantized_dot(w[n], xq, lhs_format=I.quant.q4_k,
                               rhs_format=I.quant.q8_k, acc_dtype=I.f32)


def write_demo_gguf(path, seed=0):
    """A GGUF file with Q4_K tensors encoded from random floats (ggml's block layout)."""
    import gguf

    rng = np.random.default_rng(seed)
    writer = gguf.GGUFWriter(path, "demo")
    for name, (n, k) in {"blk.0.ffn_up.weight": (96, 512),
                         "blk.0.ffn_down.weight": (64, 768)}.items():
        records = encode_q4k(rng.standard_normal((n, k)).astype(np.float32) * 0.05)
        writer.add_tensor(name, records.reshape(n, -1),
                          raw_dtype=gguf.GGMLQuantizationType.Q4_K)
    writer.add_tensor("output_norm.weight", np.ones(512, np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def check_tensor(t, kernel, rows, rng):
    k = int(t.shape[0])                         # GGUF lists the contiguous axis first
    w = np.ascontiguousarray(t.data).reshape(-1, k // 256, 144)[:rows]
    x = rng.standard_normal((k // 256, 256)).astype(np.float32)
    y = np.empty(w.shape[0], np.float32)
    expect = np.empty_like(y)
    kernel(w, x, y)
    I.interpret(q4k_gemv, w, x, expect)
    exact = np.array_equal(y.view(np.uint32), expect.view(np.uint32))
    weights = formats.get("gguf_q4_k").decode(w.reshape(w.shape[0], -1))
    ref = weights.astype(np.float64) @ x.reshape(-1).astype(np.float64)
    rel = np.linalg.norm(y - ref) / np.linalg.norm(ref)
    print(f"{t.name:<28} {w.shape[0]:>5} x {k:<6} bit-exact: {exact}  "
          f"relative error vs float64: {rel:.2e}")
    return exact


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", nargs="?", help="a GGUF file (default: write a small one)")
    ap.add_argument("--tensor", help="only this tensor")
    ap.add_argument("--rows", type=int, default=256, help="rows of each matrix to use")
    ap.add_argument("--target", default="cpu", choices=["cpu", "cuda", "interp"])
    args = ap.parse_args(argv)
    try:
        import gguf
    except ImportError:
        print("this example needs the 'gguf' package: pip install gguf", file=sys.stderr)
        return 3
    with tempfile.TemporaryDirectory() as tmp:
        path = args.model
        if path is None:
            path = os.path.join(tmp, "demo.gguf")
            write_demo_gguf(path)
            print(f"wrote {path}")
        reader = gguf.GGUFReader(path)
        tensors = [t for t in reader.tensors if t.tensor_type == gguf.GGMLQuantizationType.Q4_K
                   and (args.tensor is None or t.name == args.tensor)]
        if not tensors:
            print("no matching Q4_K tensor", file=sys.stderr)
            return 2
        kernel = I.compile(q4k_gemv, target=args.target)
        rng = np.random.default_rng(0)
        ok = [check_tensor(t, kernel, args.rows, rng) for t in tensors]
        del reader                               # release the file before the folder goes
    print(f"{sum(ok)} of {len(ok)} tensors bit-exact on {args.target}")
    return 0 if all(ok) else 1


if __name__ == "__main__":
    raise SystemExit(main())
