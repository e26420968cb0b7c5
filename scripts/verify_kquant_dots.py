"""The K-quant dots Q2_K/Q3_K/Q5_K/Q6_K x Q8_K against ggml, on the same bytes.

For each weight type, ggml's own CPU dot (``ggml_get_type_traits_cpu(type)->vec_dot``,
from llama-cpp-python's libraries) and our oracle take the same weight records and the
same Q8_K records (ours, from ``quantize_q8k``), row by row. The spec
(docs/spec/quantized-kquants.md §5) bounds the difference of the two by

    |ours - ggml| <= (G + 8) * 2^-23 * sum_b A_b,
    A_b = |ds_b| * (|d_b| * sum_e |sc_b * w_b[e] * x_b[e]| + |dmin_b| * sum_j |m_b[j] * bsum_b[j]|)

and this script prints the largest ratio of difference to bound (it must stay <= 1) and
the largest difference relative to the largest |y|. It also compares the Q8_K bytes of
ggml's quantizer (``from_float`` of the Q8_K traits) with ours on the same rows.

Weights: the Q6_K tensors of a real GGUF file where one is given (``--gguf``; the default
is Gemma 3 270M's Q4_K_M file in ~/.cache/ninfer, whose ``ffn_down`` matrices are Q6_K),
and random records of every type (random bytes, small finite d and dmin).

    PYTHONPATH=. python scripts/verify_kquant_dots.py
"""
from __future__ import annotations

import argparse
import ctypes
import glob
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from ninfer_ir.numerics import quantized_kquants as K  # noqa: E402
from ninfer_ir.numerics.quantized import quantize_q8k  # noqa: E402

GGML_TYPES = {"q2_k": 10, "q3_k": 11, "q5_k": 13, "q6_k": 14}
GGML_Q8_K = 15
DEFAULT_GGUF = os.path.expanduser("~/.cache/ninfer/gemma-3-270m-q4_k_m.gguf")
F32 = np.float32


class _TraitsCpu(ctypes.Structure):
    # the leading fields of struct ggml_type_traits_cpu
    _fields_ = [("from_float", ctypes.c_void_p), ("vec_dot", ctypes.c_void_p),
                ("vec_dot_type", ctypes.c_int), ("nrows", ctypes.c_int64)]


_VEC_DOT = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.POINTER(ctypes.c_float), ctypes.c_size_t,
                            ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t,
                            ctypes.c_int)
_FROM_FLOAT = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)


class GgmlDots:
    """ggml's per-type CPU dot and its Q8_K quantizer."""

    def __init__(self):
        import llama_cpp
        lib_dir = os.path.join(os.path.dirname(llama_cpp.__file__), "lib")
        cpu = None
        for stem in ("libggml-base", "libggml-cpu"):
            path = sorted(glob.glob(os.path.join(lib_dir, stem + ".so*")))[0]
            cpu = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        getattr(cpu, "ggml_cpu_init", lambda: None)()
        cpu.ggml_get_type_traits_cpu.restype = ctypes.POINTER(_TraitsCpu)
        cpu.ggml_get_type_traits_cpu.argtypes = [ctypes.c_int]
        self._traits = cpu.ggml_get_type_traits_cpu
        self.version = getattr(llama_cpp, "__version__", "?")

    def dot(self, name: str, w: np.ndarray, xq: np.ndarray) -> float:
        t = self._traits(GGML_TYPES[name]).contents
        if t.vec_dot_type != GGML_Q8_K:
            raise RuntimeError(f"ggml pairs {name} with type {t.vec_dot_type}, not Q8_K")
        out = ctypes.c_float()
        w, xq = np.ascontiguousarray(w), np.ascontiguousarray(xq)
        _VEC_DOT(t.vec_dot)(256 * w.shape[0], ctypes.byref(out), 0, w.ctypes.data, 0,
                            xq.ctypes.data, 0, 1)
        return out.value

    def quantize_q8k(self, x: np.ndarray) -> np.ndarray:
        t = self._traits(GGML_Q8_K).contents
        x = np.ascontiguousarray(x, dtype=F32)
        out = np.zeros((x.shape[0], 292), np.uint8)
        _FROM_FLOAT(t.from_float)(x.ctypes.data, out.ctypes.data, x.size)
        return out


def bound_terms(kind, w: np.ndarray, xq: np.ndarray) -> np.ndarray:
    """sum_b A_b per row of ``w [N, G, R]`` (float64)."""
    d, dmin, levels, sc, m = K.fields(kind, w)
    side = K.Q8Side(xq)
    prod = np.abs(levels.astype(np.float64) * side.xq)
    prod = prod.reshape(prod.shape[:-1] + (kind.n_sub, kind.sub)).sum(-1) * np.abs(sc)
    a = np.abs(d.astype(np.float64)) * prod.sum(-1)
    if kind.has_mins:
        group = side.bsum.reshape(side.bsum.shape[:-1] + (m.shape[-1], -1))
        mins = (np.abs(group) * m[..., None].astype(np.float64)).sum((-1, -2))
        a = a + np.abs(dmin.astype(np.float64)) * mins
    return (np.abs(side.ds.astype(np.float64)) * a).sum(-1)


def ours(kind, w, xq) -> np.ndarray:
    v = K.record_values(kind, w, K.Q8Side(xq))
    out = v[:, 0].copy()
    for g in range(1, v.shape[1]):
        out = np.add(out, v[:, g], dtype=F32)
    return out


def random_records(rng, kind, n, g):
    w = rng.integers(0, 256, (n, g, kind.record_bytes), dtype=np.uint8)
    for off in [kind.d] + ([kind.dmin] if kind.has_mins else []):
        h = (rng.uniform(0.5, 1.0, (n, g)) * 0.01).astype("<f2")
        w[..., off:off + 2] = h[..., None].view(np.uint8)
    return w


def gguf_q6k(path):
    from gguf import GGUFReader
    reader = GGUFReader(path)
    for t in reader.tensors:
        if t.tensor_type.name == "Q6_K":
            data = np.asarray(t.data, np.uint8)
            yield t.name, data.reshape(data.shape[0], -1, 210)


def compare(gg, label, kind, w, x):
    xq = quantize_q8k(x)
    theirs_q = gg.quantize_q8k(x)
    same_q = int(np.sum(np.all(theirs_q == xq, axis=1)))
    mine = ours(kind, w, xq)
    theirs = np.array([gg.dot(kind.name, w[r], xq) for r in range(w.shape[0])], F32)
    g = w.shape[1]
    bound = (g + 8) * 2.0 ** -23 * bound_terms(kind, w, xq)
    diff = np.abs(mine.astype(np.float64) - theirs.astype(np.float64))
    ratio = float(np.max(diff / np.maximum(bound, 1e-300)))
    rel = float(np.max(diff) / max(np.max(np.abs(theirs)), 1e-300))
    print(f"{label:34s} {w.shape[0]:5d} x {256 * g:5d}  Q8_K bytes equal {same_q}/{g}  "
          f"max |diff|/bound {ratio:.3f}  max |diff|/max|y| {rel:.2e}  "
          f"{'ok' if ratio <= 1 else 'OVER THE BOUND'}")
    return ratio <= 1


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gguf", default=DEFAULT_GGUF, help="a GGUF file with Q6_K tensors")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        gg = GgmlDots()
    except Exception as err:                    # optional peer: any failure means absent
        print(f"ggml not available ({type(err).__name__}: {err})")
        return 0
    print(f"ggml from llama-cpp-python {gg.version}")
    rng = np.random.default_rng(args.seed)
    ok = True
    if os.path.exists(args.gguf):
        for name, w in gguf_q6k(args.gguf):
            x = rng.standard_normal((w.shape[1], 256)).astype(F32)
            ok &= compare(gg, f"q6_k {name}", K.Q6_K, w, x)
    else:
        print(f"no GGUF file at {args.gguf}: random records only")
    for kind in K.KQUANTS.values():
        w = random_records(rng, kind, 256, 16)
        x = rng.standard_normal((16, 256)).astype(F32)
        ok &= compare(gg, f"{kind.name} random records", kind, w, x)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
