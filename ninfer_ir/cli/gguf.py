"""``ninfer gguf``: list a GGUF file, decode its tensors, check the Q4_K GEMV on them.
The file is read by ``ninfer_ir.models.gguf`` (memory-mapped, tensors used in place)."""
from __future__ import annotations

import sys
import time

import numpy as np

from ninfer_ir.testing import differs

from .common import EXIT_FAILED, EXIT_OK, CliError, check_input_file, fmt_seconds, progress, usage


def _reader(path: str):
    from ninfer_ir.models.gguf import GGUFError, GGUFFile
    import os
    check_input_file(path)
    size = f"{os.path.getsize(path) / 2**20:.1f} MiB"
    if sys.stderr.isatty():                 # scripts get one line, after a good read
        print(f"reading {path} ({size}) ...", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    try:
        reader = GGUFFile(path)
    except GGUFError as e:
        raise CliError(f"{path} is not a readable GGUF file (damaged or truncated; "
                       f"{str(e).removeprefix(path + ': ')})") from None
    print(f"read {path} ({size}): {len(reader.tensors)} tensor headers and "
          f"{reader.kv_count} metadata fields in {fmt_seconds(time.perf_counter() - t0)}; "
          f"tensor data is read as it is used", file=sys.stderr, flush=True)
    return reader


def decoder_name(t) -> str | None:
    """The ``ninfer_ir.formats`` record (or numpy conversion) that decodes ``t``."""
    if t.format is not None:
        return t.format.name
    if t.type_name in ("F32", "F16", "F64"):
        return f"numpy {t.type_name.lower()}"
    return "bf16 words" if t.type_name == "BF16" else None


def gguf_py_agrees(t, values: np.ndarray) -> str:
    """Whether gguf-py's own dequantization gives the same bits ('n/a' when it has none
    or gguf-py is not installed)."""
    try:
        from gguf import GGMLQuantizationType
        from gguf.quants import dequantize
        raw = np.ascontiguousarray(t.records)
        if t.format is not None:
            raw = raw.reshape(raw.shape[0], -1)
        other = dequantize(raw, GGMLQuantizationType(t.ggml_type))
    except Exception:                                 # noqa: BLE001 - unsupported type
        return "n/a"
    other = np.asarray(other, np.float32).reshape(values.shape)
    return "yes" if np.array_equal(other.view(np.uint32), values.view(np.uint32)) else "NO"


def gemv_check(t, compiled, rows: int, rng) -> dict:
    """Run the GEMV on the interpreter and ``compiled``; compare and measure the error."""
    import ninfer_ir as I
    from .kernels import q4k_gemv

    k = t.shape[-1]
    w = t.records
    if rows:
        w = w[:rows]
    n = w.shape[0]
    x = rng.standard_normal((k // 256, 256)).astype(np.float32)
    y_ref, y_got = np.empty(n, np.float32), np.empty(n, np.float32)
    t0 = time.perf_counter()
    I.interpret(q4k_gemv, w, x, y_ref)
    t_interp = time.perf_counter() - t0
    compiled(w, x, y_got)                                     # first call compiles variants
    t0 = time.perf_counter()
    compiled(w, x, y_got)
    t_target = time.perf_counter() - t0
    from ninfer_ir import formats
    wd = formats.get("gguf_q4_k").decode(w.reshape(n, w.shape[1] * 144)).astype(np.float64)
    exact = wd @ x.reshape(-1).astype(np.float64)
    denom = np.linalg.norm(exact)
    rel = float(np.linalg.norm(y_got.astype(np.float64) - exact) / denom) if denom else 0.0
    same = not differs(y_got, y_ref).any()          # bit for bit; a NaN matches any NaN
    return dict(rows=n, k=k, same=same, rel=rel, t_interp=t_interp, t_target=t_target)


def cmd_gguf(args) -> int:
    reader = _reader(args.path)
    tensors = list(reader.tensors.values())
    if args.tensor is not None:
        tensors = [t for t in tensors if t.name == args.tensor]
        if not tensors:
            raise usage(f"{args.path} has no tensor named {args.tensor!r}")
    print(f"{args.path}: {len(reader.tensors)} tensors")
    print(f"{'name':<32} {'type':<8} {'shape (rows first)':<20} {'bytes':>12}  decoder")
    for t in tensors:
        shape = "x".join(map(str, t.shape))
        print(f"{t.name:<32} {t.type_name:<8} {shape:<20} {t.nbytes:>12}  "
              f"{decoder_name(t) or '(none)'}")
    if args.tensor is not None and decoder_name(tensors[0]):
        if sys.stderr.isatty():
            print(f"decoding {tensors[0].name} ({tensors[0].nbytes} bytes) ...",
                  file=sys.stderr, flush=True)
        values = tensors[0].decode()
        finite = values[np.isfinite(values)]
        lo, hi = (f"{finite.min():.6g}", f"{finite.max():.6g}") if finite.size else ("-", "-")
        print(f"decoded {values.size} values: min {lo}, max {hi}, "
              f"{values.size - finite.size} non-finite; "
              f"same bits as gguf-py's dequantize: {gguf_py_agrees(tensors[0], values)}")

    q4k = [t for t in tensors if t.type_name == "Q4_K"]
    if not q4k:
        print("no Q4_K tensors: no GEMV to run")
        return EXIT_OK
    import ninfer_ir as I
    from .kernels import q4k_gemv
    compiled = I.compile(q4k_gemv, target=args.target)
    rng = np.random.default_rng(args.seed)
    print(f"\nQ4_K GEMV y = W x (x standard normal, quantized to Q8_K in the kernel), "
          f"interp against {args.target}")
    print(f"{'tensor':<32} {'N x K':<14} {'interp':>10} {args.target:>10}  {'bit-exact':<9}  "
          f"rel. error vs float64")
    failures = 0
    for t in progress(q4k, len(q4k), "reading Q4_K tensors and running the GEMV"):
        r = gemv_check(t, compiled, args.rows, rng)
        failures += not r["same"]
        print(f"{t.name:<32} {r['rows']}x{r['k']:<{13 - len(str(r['rows']))}} "
              f"{fmt_seconds(r['t_interp']):>10} {fmt_seconds(r['t_target']):>10}  "
              f"{'yes' if r['same'] else 'NO':<9}  {r['rel']:.3e}")
    print(f"{len(q4k) - failures} of {len(q4k)} Q4_K tensors bit-exact between interp and "
          f"{args.target}")
    return EXIT_FAILED if failures else EXIT_OK
