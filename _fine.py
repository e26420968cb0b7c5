import time, sys, gc, numpy as np
from ninfer_ir.models.gguf import GGUFFile
from ninfer_ir.models.gemma3 import cached_gguf
from ninfer_ir.models.gemma3.forward import KernelForward
pc = time.perf_counter
spans = []
def wrap(run):
    def call(*a, **k):
        t0 = pc(); run(*a, **k); spans.append(pc() - t0)
    if hasattr(run, "bind"):
        call.bind = lambda *a, **k: wrap(run.bind(*a, **k))
    return call
plain = KernelForward.kernel
KernelForward.kernel = lambda self, k: wrap(plain(self, k))
f = KernelForward(GGUFFile(cached_gguf()), threads=1, max_context=512)
KernelForward.kernel = plain
f.forward(list(range(1000, 1008)), 0)
for r in range(6):
    spans.clear()
    t0 = pc(); c0 = time.process_time()
    for i in range(16): f.forward([100 + i], 8 + i)
    t = pc() - t0; c = time.process_time() - c0
    py = (t - sum(spans)) / 16 * 1e3
    print(f"token {t/16*1e3:.3f} ms wall {c/16*1e3:.3f} CPU, in calls {sum(spans)/16*1e3:.3f} ms, between {py:.3f} ms")
rows = f._w.rows
def trows(*a):
    t0 = pc(); r = rows(*a); spans2.append(pc() - t0); return r
spans2 = []
f._w.rows = trows
for r in range(4):
    spans.clear(); spans2.clear()
    t0 = pc()
    for i in range(16): f.forward([100 + i], 8 + i)
    t = pc() - t0
    print(f"token {t/16*1e3:.3f}, between {(t - sum(spans))/16*1e3:.3f} of which rows {sum(spans2)/16*1e3:.3f}")
