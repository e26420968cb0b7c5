"""Agreement with ggml on real GGUF tensors (docs/spec/quantized-gguf.md §3, §4.4).

Needs llama-cpp-python (its ggml libraries) and a GGUF file; not part of the test suite.
For every weight tensor of a pair of the table with activation Q8_0 (Q4_0, Q5_0, Q8_0,
IQ4_NL) in the file; for Q4_0, which a Q4_K_M file does not hold, gguf-py's quantization of
one of its f32-decoded tensors; for IQ4_NL (which gguf-py cannot quantize) random records:

* activations: random f32 rows (and the model's own decoded embedding rows) quantized by
  ``I.quantize(x, format=I.quant.q8_0)`` and by ggml's ``quantize_row_q8_0_ref``: the
  bytes must be equal;
* dots, row by row: ours (``I.quantized_dot``, order seq) against ggml's
  ``ggml_vec_dot_<type>_q8_0`` (the SIMD form this CPU runs), which must lie within the
  bound ``2 * gamma_{G+8} * A`` of docs/spec/quantized-gguf.md §4.4 (A: the sum of the
  magnitudes of the exact products, from gguf-py's decoding); and, reported only, how many
  rows are bit-identical to ggml's exported ``ggml_vec_dot_<type>_q8_0_generic``. (In
  llama-cpp-python 0.3.36 the exported Q5_0 generic form disagrees with ggml's own
  ``dequantize_row_q5_0`` and SIMD dot, e.g. 30720 instead of -2048 for all-zero codes
  against x = (1, 127, 0, ...), so it is no reference there.)

    PYTHONPATH=. python scripts/verify_gguf_dots.py [model.gguf] [--rows 256]

Exit status 0 when every check holds.
"""
from __future__ import annotations

import argparse
import ctypes
import glob
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import ninfer_ir as I  # noqa: E402
from ninfer_ir.quant import PAIRS  # noqa: E402

DEFAULT_MODEL = os.path.expanduser("~/.cache/ninfer/gemma-3-270m-q4_k_m.gguf")
U = 2.0 ** -24


def ggml_libs():
    import llama_cpp
    lib_dir = os.path.join(os.path.dirname(llama_cpp.__file__), "lib")
    libs = [ctypes.CDLL(sorted(glob.glob(os.path.join(lib_dir, f"{stem}.so*")))[0],
                        mode=ctypes.RTLD_GLOBAL) for stem in ("libggml-base", "libggml-cpu")]
    cpu_init = getattr(libs[1], "ggml_cpu_init", None)
    if cpu_init is not None:
        cpu_init()
    return libs


def ggml_fn(libs, name, restype, *argtypes):
    for lib in libs:
        f = getattr(lib, name, None)
        if f is not None:
            f.restype, f.argtypes = restype, list(argtypes)
            return f
    raise OSError(f"ggml has no {name}")


def ggml_quantize_q80(libs, x):
    f = ggml_fn(libs, "quantize_row_q8_0_ref", None, ctypes.c_void_p, ctypes.c_void_p,
                ctypes.c_int64)
    x = np.ascontiguousarray(x, np.float32)
    out = np.zeros((x.size // 32, 34), np.uint8)
    f(x.ctypes.data, out.ctypes.data, x.size)
    return out


def ggml_dot(fn, w_row, xq):
    s = ctypes.c_float()
    fn(32 * w_row.shape[0], ctypes.byref(s), 0, w_row.ctypes.data, 0, xq.ctypes.data, 0, 1)
    return np.float32(s.value)


def gamma(n):
    return n * U / (1 - n * U)


def bound(pair, w_row, xq):
    """2 * gamma_{G+8} * A, A the sum of |w_j x_j| over the decoded values (gguf-py's
    decoding; each product of two f32 is exact in f64, the f64 sum nearly so)."""
    from gguf import GGMLQuantizationType as T
    from gguf.quants import dequantize
    wd = dequantize(w_row.reshape(-1), getattr(T, pair.lhs.name.upper())).astype(np.float64)
    xd = dequantize(xq.reshape(-1), T.Q8_0).astype(np.float64)
    return 2 * gamma(w_row.shape[0] + 8) * np.abs(wd * xd).sum() * (1 + 1e-12)


def weight_tensors(path):
    from gguf import GGUFReader
    reader = GGUFReader(path)
    by_type = {}
    for t in reader.tensors:
        by_type.setdefault(t.tensor_type.name.lower(), []).append(t)
    return by_type


def stand_in(name, tensor, rng):
    """(label, records) for a format the file does not hold: gguf-py's quantization of a
    decoded f32 tensor of the file where gguf-py can quantize to it, else random records
    with small binary16 scales."""
    from gguf import GGMLQuantizationType as T
    from gguf.quants import dequantize, quantize
    rows = dequantize(tensor.data, tensor.tensor_type).astype(np.float32)
    try:
        return f"{tensor.name} requantized by gguf-py", quantize(rows, getattr(T, name.upper()))
    except NotImplementedError:
        schema = getattr(I.quant, name)
        g = rows.shape[1] // schema.block_elems
        w = rng.integers(0, 256, (rows.shape[0], g, schema.record_bytes), dtype=np.uint8)
        w[..., 0:2] = (rng.standard_normal((rows.shape[0], g, 1)) * 1e-2).astype(
            np.float16).view(np.uint8)
        return "random records", w.reshape(rows.shape[0], -1)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", nargs="?", default=DEFAULT_MODEL)
    parser.add_argument("--rows", type=int, default=256, help="rows checked per tensor")
    parser.add_argument("--tensors", type=int, default=4, help="tensors checked per type")
    args = parser.parse_args(argv)
    libs = ggml_libs()
    rng = np.random.default_rng(0)
    ok = True

    # activations: equal bytes to ggml's reference quantizer
    x = (rng.standard_normal((4096, 32)) * rng.choice([1e-3, 1.0, 30.0], (4096, 1)))
    x = x.astype(np.float32)
    x[0, :4] = [127.0, 2.5, -2.5, 0.5]                   # rounding ties
    x[1] = 0.0
    ours = I.quantize(x, format=I.quant.q8_0)
    same = ours.tobytes() == ggml_quantize_q80(libs, x).tobytes()
    ok &= same
    print(f"Q8_0 activations, {x.shape[0]} random blocks: bytes equal to "
          f"quantize_row_q8_0_ref: {same}")

    tensors = weight_tensors(args.model)
    embed = next(t for t in tensors.get("q8_0", []) if "token_embd" in t.name)
    from gguf.quants import dequantize
    rows = dequantize(embed.data[:64], embed.tensor_type).astype(np.float32)
    acts = rows.reshape(-1, 32)
    same = I.quantize(acts, format=I.quant.q8_0).tobytes() == ggml_quantize_q80(libs, acts).tobytes()
    ok &= same
    print(f"Q8_0 activations, {acts.shape[0]} blocks of decoded {embed.name} rows: bytes "
          f"equal: {same}")

    for pair in PAIRS.values():
        if pair.rhs is not I.quant.q8_0:
            continue
        name = pair.lhs.name
        found = tensors.get(name, [])[: args.tensors]
        sources = [(t.name, np.asarray(t.data)) for t in found]
        if not sources:
            sources = [stand_in(name, tensors["q5_0"][0], rng)]
        simd = ggml_fn(libs, f"ggml_vec_dot_{name}_q8_0", None, ctypes.c_int,
                       ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t,
                       ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
        generic = ggml_fn(libs, f"ggml_vec_dot_{name}_q8_0_generic", None, ctypes.c_int,
                          ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t,
                          ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
        for label, data in sources:
            n_rows, nbytes = data.shape
            g = nbytes // pair.lhs.record_bytes
            w = np.ascontiguousarray(data).reshape(n_rows, g, pair.lhs.record_bytes)
            xs = (rng.standard_normal((g, 32))).astype(np.float32)
            xq = ggml_quantize_q80(libs, xs)
            picked = rng.choice(n_rows, min(args.rows, n_rows), replace=False)
            identical, worst, simd_equal = 0, 0.0, 0
            for r in picked:
                row = np.ascontiguousarray(w[r])
                mine = I.quantized_dot(row, xq, lhs_format=pair.lhs, rhs_format=I.quant.q8_0,
                                       acc_dtype=I.f32)
                limit = bound(pair, row, xq)
                theirs = ggml_dot(simd, row, xq)
                err = abs(float(mine) - float(theirs))
                ok &= err <= limit
                worst = max(worst, err / limit) if limit > 0 else worst
                simd_equal += np.float32(mine).tobytes() == theirs.tobytes()
                identical += np.float32(mine).tobytes() == ggml_dot(generic, row, xq).tobytes()
            print(f"{str(pair):12} {label:38} G={g:3} rows={len(picked)}: SIMD form: worst "
                  f"|ours-ggml|/bound {worst:.3g}, bit-equal {simd_equal}; generic form: "
                  f"bit-equal {identical}")
    print("all checks hold" if ok else "SOME CHECK FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
