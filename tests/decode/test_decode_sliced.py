"""A decoded row that is viewed (``w[a:b]``) is staged into one row buffer by the
pipeline; every backend then computes the interpreter's bits."""
import numpy as np

import ninfer_ir as I
from ninfer_ir.backends.clike.host import HostKernel

Q4 = I.formats.get("q4_g64_fp16")


@I.kernel
def part_dot(p: I.Tensor[I.u8, "N", "P"], s: I.Tensor[I.f16, "N", "S"],
             x: I.Tensor[I.f32, "K"], y: I.Buffer[I.f32, "N"]):
    for n in I.range(p.shape[0]):
        w = I.decode(p[n], s[n], format=Q4, k=x.shape[0])
        y[n] = I.dot(w[0:64], x[0:64]) + I.dot(w[64:128], x[64:128])


def test_viewed_decode_is_staged_in_one_row_buffer():
    lowered, report = I.lower(part_dot, report=True)
    (alloc,) = [op for op in lowered.walk() if op.name == "alloc"]
    assert str(alloc.result.type) == "buffer<f32[K]>"
    assert str(report.peak_local_bytes["part_dot"]) == "4*K"       # one row, any N


def test_viewed_decode_is_exact_on_every_backend():
    rng = np.random.default_rng(0)
    n, k = 5, 200
    enc = Q4.encode(rng.standard_normal((n, k)).astype(np.float32), method="grouped_absmax")
    p, s = Q4.pack(enc)
    x = rng.standard_normal(k).astype(np.float32)
    want = np.zeros(n, np.float32)
    I.interpret(part_dot, p, s, x, want)
    w = Q4.decode(enc)
    for r in range(n):                        # an independent reference of the two dots
        parts = []
        for lo in (0, 64):
            acc = np.float32(w[r, lo] * x[lo])
            for i in range(lo + 1, lo + 64):
                acc = np.float32(acc + np.float32(w[r, i] * x[i]))
            parts.append(acc)
        assert np.float32(parts[0] + parts[1]).view(np.uint32) == want[r].view(np.uint32)
    for run in (I.compile(part_dot, target="cpu"), HostKernel(I.lower(part_dot))):
        got = np.zeros(n, np.float32)
        run(p, s, x, got)
        assert got.tobytes() == want.tobytes()
    ptx = I.emit(part_dot, target="cuda", kind="ptx")
    assert "fma.rn.f32" not in ptx and ".ftz" not in ptx
