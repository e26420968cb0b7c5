"""Q4_K GEMV on the CPU: time per call, weight bandwidth, and the machine's own limits.

One call is the whole DSL kernel ``q4k_gemv`` (quantize x to Q8_K, then one Q4_K x Q8_K
dot per row), compiled with ``I.compile(..., target="cpu", threads=T)``, called from
Python exactly as a user calls it. For each N x K and T in (1, 2) it prints:

* hot: the weights stay in the caches (back-to-back calls);
* cold: the weights come from DRAM. By default (``--cold-mode rotate``) the calls go
  round distinct copies of the matrix, 4x the last-level cache in all (at least
  256 MiB; 2 GiB when the cache size cannot be read), as a model's layers do: each
  call finds its copy evicted by the others, while the code and the interpreter's
  state stay warm. ``--cold-mode sweep`` instead reads a buffer of that size (one
  thread) before each call, which evicts everything (code, page tables, Python's
  own state; about 100 us more per call on a 32 MiB-L3 Zen 5). The run prints the
  cache size it read and the eviction it used;
* weights GB/s (N*K*144/256 bytes per call); for hot calls, "%read" is the time of a
  plain read of the same weight bytes (the compiled DSL kernel ``stream_read``, summing
  them as 32-bit words in an ``I.prange``, same threads, also hot) as a share of the
  GEMV's time: the floor any GEMV over these bytes meets where they live; for cold
  calls, "%DRAM" is the weights' rate as a share of the DRAM read bandwidth measured in
  the same run with the same thread count (``stream_read`` over the eviction buffer,
  4x the last-level cache, in 8 MiB pieces timed one by one), and
  the second "%read" is a cold read of the weight bytes alone as a share of the cold
  GEMV's time (what is left of DRAM bandwidth for a one-shot read of this size);
* numpy: ``W @ x`` on the matrix dequantized to f32 beforehand (OpenBLAS limited to T
  threads), and the ratio numpy / ours;
* ggml: where llama-cpp-python is installed, ggml's own ``ggml_mul_mat`` on the same
  Q4_K bytes (x quantized to Q8_K inside it too, on a persistent ggml thread pool of T
  threads), and the ratio ours / ggml (below 1: we are faster);
* compile time: cold (an empty cache directory) and a cache hit;
* the compute rate: time per record with the weights in the private L2 (a 512 x 4096
  GEMV minus a 16 x 4096 one), and the fixed cost of a call.

Two tables: the median and the best of all timed calls (the best is the steadier figure
on a shared machine: other work only ever adds time); calls are spread over
``--rounds`` rounds that visit every configuration in turn, so slow phases of a shared
machine hit all of them alike. %DRAM uses the DRAM figure of the same statistic. The
compiled result is checked bit for bit against the interpreter once per shape.

    PYTHONPATH=. python benchmarks/gemv_q4k.py            # full run, about 3 minutes
    PYTHONPATH=. python benchmarks/gemv_q4k.py --quick    # two small shapes, seconds
"""
from __future__ import annotations

import argparse
import ctypes
import glob
import os
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import ninfer_ir as I  # noqa: E402
from ninfer_ir.numerics.quantized import q4k_fields  # noqa: E402
from ninfer_ir.backends.llvm.runtime.jit import host_target  # noqa: E402

SHAPES = ((4096, 4096), (11008, 4096), (4096, 11008), (1024, 1024))
QUICK_SHAPES = ((1024, 1024), (4096, 4096))
THREADS = (1, 2)
EVICT_FALLBACK = 2 << 30            # the sweep when the last-level cache size is unknown
EVICT_MIN = 256 << 20


@I.kernel
def q4k_gemv(w: I.Tensor[I.u8, "N", "G", 144], x: I.Tensor[I.f32, "G", 256],
             y: I.Buffer[I.f32, "N"]):
    xq = I.quantize(x, format=I.quant.q8_k)
    for n in I.range(w.shape[0]):
        y[n] = I.quantized_dot(w[n], xq, lhs_format=I.quant.q4_k,
                               rhs_format=I.quant.q8_k, acc_dtype=I.f32)


@I.kernel
def stream_read(x: I.Tensor[I.i32, "C", "L"], out: I.Buffer[I.i32, "C"]):
    for c in I.prange(x.shape[0]):
        out[c] = I.sum(x[c])


# --- data ------------------------------------------------------------------------------

def random_q4k(rng, n, g):
    """u8[n, g, 144]: random nibbles and 6-bit fields, small finite d and dmin."""
    w = rng.integers(0, 256, size=(n, g, 144), dtype=np.uint8)
    halves = (rng.standard_normal((n, g, 2)) * 0.01).astype("<f2")
    w[:, :, 0:4] = halves.view(np.uint8).reshape(n, g, 4)
    return w


def dequantize(w):
    """f32[n, 256*g]: d*sc*q - dmin*m per element (the numpy baseline's matrix)."""
    n, g, _ = w.shape
    d, dmin, sc, m, q = q4k_fields(w.reshape(n * g, 144))
    scale = (d[:, None] * sc).astype(np.float32)
    offset = (dmin[:, None] * m).astype(np.float32)
    values = q.reshape(n * g, 8, 32).astype(np.float32) * scale[:, :, None] - offset[:, :, None]
    return values.reshape(n, g * 256).astype(np.float32)


# --- numpy's BLAS threads ----------------------------------------------------------------

def blas_thread_setter():
    """A function setting OpenBLAS's thread count, found in the loaded library, or None."""
    (np.ones((8, 8), np.float32) @ np.ones(8, np.float32))          # load the library
    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps if "openblas" in line.lower()}
    for path in sorted(paths):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for name in ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
                     "openblas_set_num_threads64_", "openblas_set_num_threads"):
            fn = getattr(lib, name, None)
            if fn is not None:
                fn.argtypes = [ctypes.c_int]
                return fn
    return None


# --- ggml through llama-cpp-python ---------------------------------------------------------

GGML_TYPE_F32, GGML_TYPE_Q4_K = 0, 12


class _InitParams(ctypes.Structure):
    _fields_ = [("mem_size", ctypes.c_size_t), ("mem_buffer", ctypes.c_void_p),
                ("no_alloc", ctypes.c_bool)]


class _CPlan(ctypes.Structure):
    # the leading fields of struct ggml_cplan; the tail leaves room for later additions
    _fields_ = [("work_size", ctypes.c_size_t), ("work_data", ctypes.c_void_p),
                ("n_threads", ctypes.c_int), ("threadpool", ctypes.c_void_p),
                ("abort_callback", ctypes.c_void_p), ("abort_callback_data", ctypes.c_void_p),
                ("tail", ctypes.c_uint8 * 64)]


class Ggml:
    """The few ggml functions a Q4_K x f32 ``ggml_mul_mat`` needs, from llama_cpp's libs."""

    def __init__(self):
        import llama_cpp
        lib_dir = os.path.join(os.path.dirname(llama_cpp.__file__), "lib")
        self.version = getattr(llama_cpp, "__version__", "?")
        libs = []
        for stem in ("libggml-base", "libggml-cpu", "libggml"):
            for path in sorted(glob.glob(os.path.join(lib_dir, stem + ".so*"))):
                libs.append(ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL))
                break
        if not libs:
            raise OSError(f"no ggml libraries in {lib_dir}")
        self._libs = libs

        def fn(name, restype, *argtypes):
            for lib in libs:
                f = getattr(lib, name, None)
                if f is not None:
                    f.restype, f.argtypes = restype, list(argtypes)
                    return f
            raise OSError(f"ggml function {name} not found")

        P, I64 = ctypes.c_void_p, ctypes.c_int64
        self.init = fn("ggml_init", P, _InitParams)
        self.free = fn("ggml_free", None, P)
        self.new_tensor_2d = fn("ggml_new_tensor_2d", P, P, ctypes.c_int, I64, I64)
        self.get_data = fn("ggml_get_data", P, P)
        self.mul_mat = fn("ggml_mul_mat", P, P, P, P)
        self.new_graph = fn("ggml_new_graph", P, P)
        self.build_forward_expand = fn("ggml_build_forward_expand", None, P, P)
        self.tensor_overhead = fn("ggml_tensor_overhead", ctypes.c_size_t)
        self.graph_overhead = fn("ggml_graph_overhead", ctypes.c_size_t)
        self.params_init = fn("ggml_threadpool_params_init", None, P, ctypes.c_int)
        self.threadpool_new = fn("ggml_threadpool_new", P, P)
        self.threadpool_free = fn("ggml_threadpool_free", None, P)
        self.threadpool_pause = fn("ggml_threadpool_pause", None, P)
        self.graph_plan = fn("ggml_graph_plan", _CPlan, P, ctypes.c_int, P)
        self.graph_compute = fn("ggml_graph_compute", ctypes.c_int, P, ctypes.POINTER(_CPlan))
        cpu_init = next((getattr(lib, "ggml_cpu_init") for lib in libs
                         if hasattr(lib, "ggml_cpu_init")), None)
        if cpu_init is not None:
            cpu_init.restype, cpu_init.argtypes = None, []
            cpu_init()

    def gemv(self, ws, x, threads):
        """y = W x for each copy W in ``ws``: graph i multiplies ``ws[i]``."""
        return GgmlGraphs(self, [[(w, x)] for w in ws], threads)


def _rows(x):
    """Activation rows of a ggml operand: M of ``[M, G, 256]``, 1 of a vector ``[G, 256]``."""
    return x.shape[0] if x.ndim == 3 else 1


class GgmlGraphs:
    """Graphs of Q4_K x f32 ``ggml_mul_mat`` nodes on one persistent ggml thread pool:
    graph i computes W x for each pair (W, x) of ``graphs[i]``, in order (ggml quantizes
    x to Q8_K inside each node). ``x`` is one vector (``[G, 256]``) or a batch of M rows
    (``[M, G, 256]``, a GEMM: Y = X W^T). ``run(i)`` computes graph i, ``result(i, j)``
    is the output of its node j (``[N]``, or ``[M, N]`` for a batch); ``close()`` frees.
    ``ggml_type`` and ``block`` (elements per record) name another weight format."""

    def __init__(self, g, graphs, threads, ggml_type=GGML_TYPE_Q4_K, block=256):
        self.g = g
        pairs = [pair for graph in graphs for pair in graph]
        inputs = {id(x): x for _, x in pairs}
        size = (sum(w.nbytes + 4 * w.shape[0] * _rows(x) for w, x in pairs)
                + sum(4 * x.size for x in inputs.values())
                + (len(pairs) + len(inputs)) * g.tensor_overhead()
                + len(graphs) * g.graph_overhead() + (1 << 20))
        self.ctx = g.init(_InitParams(size, None, False))
        self.pool = None
        if not self.ctx:
            raise MemoryError("ggml_init failed")
        tensors = {}
        for key, x in inputs.items():
            tensors[key] = g.new_tensor_2d(self.ctx, GGML_TYPE_F32, x.size // _rows(x),
                                           _rows(x))
            ctypes.memmove(g.get_data(tensors[key]), np.ascontiguousarray(x).ctypes.data,
                           4 * x.size)
        self.outs, self.graphs = [], []
        for graph_pairs in graphs:
            graph, outs = g.new_graph(self.ctx), []
            for w, x in graph_pairs:
                n, groups, _ = w.shape
                a = g.new_tensor_2d(self.ctx, ggml_type, groups * block, n)
                ctypes.memmove(g.get_data(a), w.ctypes.data, w.nbytes)
                c = g.mul_mat(self.ctx, a, tensors[id(x)])
                g.build_forward_expand(graph, c)
                outs.append((c, (n,) if x.ndim < 3 else (x.shape[0], n)))
            self.outs.append(outs)
            self.graphs.append(graph)
        params = (ctypes.c_uint8 * 4096)()
        g.params_init(params, threads)
        self.pool = g.threadpool_new(params)
        self.plans = [g.graph_plan(graph, threads, self.pool) for graph in self.graphs]
        self.work = (ctypes.c_uint8 * max(1, max(p.work_size for p in self.plans)))()
        for plan in self.plans:
            plan.work_data = ctypes.addressof(self.work)
        self.refs = [ctypes.byref(plan) for plan in self.plans]

    def run(self, i=0):
        status = self.g.graph_compute(self.graphs[i], self.refs[i])
        if status != 0:
            raise RuntimeError(f"ggml_graph_compute returned {status}")

    def __call__(self):
        self.run(0)

    def pause(self):
        """Put ggml's pool threads to sleep now: after a call they poll for the next one
        for a long while (``poll`` 50: 6.5 M rounds), which would take a CPU from
        whatever runs next on a 2-CPU machine; the next ``run`` resumes them."""
        self.g.threadpool_pause(self.pool)

    def result(self, i=0, j=0):
        c, shape = self.outs[i][j]
        return np.ctypeslib.as_array(ctypes.cast(self.g.get_data(c),
                                                 ctypes.POINTER(ctypes.c_float)),
                                     shape=shape).copy()

    def close(self):
        if self.pool:
            self.g.threadpool_free(self.pool)
            self.pool = None
        if self.ctx:
            self.g.free(self.ctx)
            self.ctx = None


def load_ggml():
    try:
        return Ggml(), None
    except Exception as err:                     # optional peer: any failure means absent
        return None, f"{type(err).__name__}: {err}"


# --- the machine's caches -----------------------------------------------------------------

def _size_bytes(text):
    """Bytes of a sysfs cache size such as ``32768K`` or ``2M``; None when unreadable."""
    text = text.strip().upper()
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
    digits = text[:-1] if text[-1:] in "KMG" else text
    return int(digits) * scale if digits.isdigit() else None


def last_level_cache(root="/sys/devices/system/cpu/cpu0/cache"):
    """``(level, bytes)`` of the largest-level data or unified cache of CPU 0 from
    sysfs, or None where sysfs does not say."""
    best = None
    for entry in sorted(glob.glob(os.path.join(root, "index*"))):
        try:
            with open(os.path.join(entry, "type")) as f:
                kind = f.read().strip()
            with open(os.path.join(entry, "level")) as f:
                level = int(f.read())
            with open(os.path.join(entry, "size")) as f:
                size = _size_bytes(f.read())
        except (OSError, ValueError):
            continue
        if kind != "Instruction" and size and (best is None or level > best[0]):
            best = (level, size)
    return best


def eviction_bytes(llc):
    """The sweep that evicts every cache level: 4x the last-level cache, at least
    EVICT_MIN, or EVICT_FALLBACK when the cache size is unknown."""
    return EVICT_FALLBACK if llc is None else max(EVICT_MIN, 4 * llc[1])


# --- timing ------------------------------------------------------------------------------

class Evictor:
    """Reads a large buffer with the compiled streaming kernel. Evicting uses one thread,
    so that no pool thread of ours is still spinning when a peer's timed call starts."""

    PIECE_ROWS = 2                 # rows of 4 MiB per timed piece of the DRAM read

    def __init__(self, nbytes):
        rows = max(2 * self.PIECE_ROWS, nbytes // (4 << 20))
        self.buf = np.ones((rows, 1 << 20), np.int32)
        self.out = np.zeros(rows, np.int32)
        self.kernels = {t: I.compile(stream_read, target="cpu", threads=t) for t in THREADS}
        self.piece_bytes = self.PIECE_ROWS * self.buf[0].nbytes

    def __call__(self):
        self.kernels[1](self.buf, self.out)

    def read_times(self, threads):
        """Seconds per 8 MiB piece of one pass over the buffer, each piece read and timed
        in turn with ``threads`` threads: every piece comes from DRAM (the rest of the
        buffer evicted it), and a piece is short enough (a few hundred us) that a busy
        machine's scheduler seldom cuts into it, as it does into one long read."""
        kernel, rows = self.kernels[threads], self.PIECE_ROWS
        pieces = [(self.buf[i:i + rows], self.out[i:i + rows])
                  for i in range(0, self.buf.shape[0] - rows + 1, rows)]
        return time_rotating([lambda p=p: kernel(*p) for p in pieces], len(pieces))


def time_hot(fn, reps):
    for _ in range(3):
        fn()
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def time_cold(fn, reps, evict):
    out = []
    for _ in range(reps):
        evict()
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def time_rotating(fns, reps):
    """Seconds per call of ``fns[i % len(fns)]``: each function reads its own copy of
    the data, and the copies together exceed the caches, so every call finds its copy
    evicted by the calls since its last turn (after one untimed pass over all)."""
    return time_interleaved([fns], reps)[0]


RUN = 4        # consecutive cold calls of one group before the next group's turn


def let_pool_sleep():
    """Wait until our pool's workers have stopped spinning (``pool.SPIN`` rounds of
    ``pause``, well under 1 ms) and sleep, leaving the CPUs to whatever runs next."""
    time.sleep(0.002)


def time_interleaved(groups, reps, settle=None, clock=time.perf_counter):
    """``time_rotating`` for several groups of functions at once, taking turns in runs
    of ``RUN`` calls, so that the phases of a shared machine fall on every group alike;
    after each run, ``settle[g]()`` (untimed, where given) lets group g's threads go
    idle before the next group runs. A list of seconds (of ``clock``) per group."""
    settle = settle or [None] * len(groups)
    for fns, after in zip(groups, settle):
        for fn in fns:
            fn()
        if after:
            after()
    out = [[] for _ in groups]
    for start in range(0, reps, RUN):
        for fns, times, after in zip(groups, out, settle):
            for i in range(start, min(reps, start + RUN)):
                fn = fns[i % len(fns)]
                t0 = clock()
                fn()
                times.append(clock() - t0)
            if after:
                after()
    return out


class Cold:
    """How a cold call is made. ``rotate`` (the default, what a model does): calls go
    round a working set of distinct copies of the operands, at least ``nbytes`` in all,
    so only the data is cold; ``sweep``: before each call one thread reads ``nbytes``,
    which also evicts the code, the page tables and the interpreter's own state."""

    def __init__(self, mode, nbytes, evictor):
        self.mode, self.nbytes, self.evictor = mode, nbytes, evictor

    def describe(self):
        if self.mode == "sweep":
            return f"each cold call follows a {self.nbytes >> 20} MiB read sweep (one thread)"
        return (f"cold calls rotate over distinct copies of the operands, at least "
                f"{self.nbytes >> 20} MiB in all")

    def copies(self, a):
        """``a`` and enough distinct copies of it for a cold working set (``[a]`` alone
        for ``sweep``)."""
        if self.mode == "sweep":
            return [a]
        return [a] + [a.copy() for _ in range(max(2, -(-self.nbytes // a.nbytes)) - 1)]

    def times(self, groups, reps, settle=None):
        """Seconds per cold call for each group of functions (one per copy), the groups
        taking turns (see ``time_interleaved``)."""
        if self.mode == "sweep":
            settle = settle or [None] * len(groups)
            out = [[] for _ in groups]
            for _ in range(reps):
                for fns, times, after in zip(groups, out, settle):
                    times += time_cold(fns[0], 1, self.evictor)
                    if after:
                        after()
            return out
        return time_interleaved(groups, reps, settle)


def compute_rate(kernel, rng, reps):
    """Seconds per record of the GEMV with its weights in the private L2 (1.2 MB), and
    the fixed cost of a call, from the medians of a 512-row and a 16-row GEMV."""
    times = {}
    for n in (16, 512):
        w, x, y = random_q4k(rng, n, 16), rng.standard_normal((16, 256)).astype(np.float32), \
            np.zeros(n, np.float32)
        times[n] = statistics.median(time_hot(lambda: kernel(w, x, y), reps))
    per_record = (times[512] - times[16]) / ((512 - 16) * 16)
    return per_record, times[16] - 16 * 16 * per_record


def compile_times(trials_cold, trials_hit):
    cold, hit = [], []
    for _ in range(trials_cold):
        with tempfile.TemporaryDirectory() as cache:
            t0 = time.perf_counter()
            kernel = I.compile(q4k_gemv, target="cpu", cache_dir=cache)
            cold.append(time.perf_counter() - t0)
            assert not kernel.jit.cache_hit
            for _ in range(max(1, trials_hit // trials_cold)):
                t0 = time.perf_counter()
                kernel = I.compile(q4k_gemv, target="cpu", cache_dir=cache)
                hit.append(time.perf_counter() - t0)
                assert kernel.jit.cache_hit
    return cold, hit


# --- the run -----------------------------------------------------------------------------

def fmt_us(seconds):
    return f"{seconds * 1e6:9.1f}"


def machine_line():
    model = "?"
    try:
        with open("/proc/cpuinfo") as info:
            model = next(line.split(":", 1)[1].strip() for line in info
                         if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    target = host_target()
    load = " ".join(f"{v:.2f}" for v in os.getloadavg())
    return (f"{os.cpu_count()} CPUs, {model}; LLVM CPU {target.cpu}, ISA level {target.isa}; "
            f"load average {load} (the machine may be shared)")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small shapes, few calls")
    parser.add_argument("--rounds", type=int, default=None, help="rounds over all configs")
    parser.add_argument("--hot", type=int, default=None, help="hot calls per config and round")
    parser.add_argument("--cold", type=int, default=None, help="cold calls per config and round")
    parser.add_argument("--no-ggml", action="store_true", help="skip the ggml peer")
    parser.add_argument("--no-check", action="store_true", help="skip the interpreter check")
    parser.add_argument("--cold-mode", choices=("rotate", "sweep"), default="rotate",
                        help="cold calls: rotate over distinct copies of the weights (as a "
                             "model does) or read a sweep buffer before each call")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    quick = args.quick
    shapes = QUICK_SHAPES if quick else SHAPES
    rounds = args.rounds or (1 if quick else 3)
    hot_reps = args.hot or (20 if quick else 100)
    cold_reps = args.cold or (4 if quick else 16)
    llc = last_level_cache()
    evict_bytes = eviction_bytes(llc)

    print(machine_line())
    evictor = Evictor(evict_bytes)
    evictor()
    cold = Cold(args.cold_mode, evict_bytes, evictor)
    print(("last-level cache: L%d, %d MiB" % (llc[0], llc[1] >> 20) if llc
           else "last-level cache: size unknown") + "; " + cold.describe())
    cold_c, hit_c = compile_times(2 if quick else 5, 10 if quick else 50)
    print(f"compile q4k_gemv: cold (empty cache dir) median "
          f"{statistics.median(cold_c) * 1e3:.1f} ms"
          f" (best {min(cold_c) * 1e3:.1f}); cache hit median "
          f"{statistics.median(hit_c) * 1e3:.1f} ms (best {min(hit_c) * 1e3:.1f})"
          f"   [targets: < 1000 ms, < 20 ms]")

    set_blas = blas_thread_setter()
    ggml, why = (None, "skipped (--no-ggml)") if args.no_ggml else load_ggml()
    print("numpy baseline: W @ x, f32, " + ("OpenBLAS threads set per row" if set_blas
                                             else "BLAS thread count not settable here"))
    print("ggml peer: " + (f"llama-cpp-python {ggml.version}, ggml_mul_mat Q4_K x f32"
                           if ggml else f"not available ({why})"))

    rng = np.random.default_rng(args.seed)
    cases = []
    for n, k in shapes:
        g = k // 256
        w = random_q4k(rng, n, g)
        x = rng.standard_normal((g, 256)).astype(np.float32)
        case = {"n": n, "k": k, "w": w, "x": x, "dense": dequantize(w),
                "xf": x.reshape(-1).copy(), "exact": None, "ggml_err": None}
        if not args.no_check:
            want = np.zeros(n, np.float32)
            I.interpret(q4k_gemv, w, x, want)
            case["want"] = want
        cases.append(case)

    samples = {}
    kernels = {t: I.compile(q4k_gemv, target="cpu", threads=t) for t in THREADS}
    per_record, overhead = compute_rate(kernels[1], rng, 30 if quick else 300)
    print(f"compute rate, 1 thread, weights in L2 (512 x 4096 minus 16 x 4096): "
          f"{per_record * 1e9:.2f} ns per Q4_K record; fixed cost per call (Python call, "
          f"argument checks, quantize of 4096 floats) {overhead * 1e6:.1f} us")

    def add(key, values):
        samples.setdefault(key, []).extend(values)

    for _ in range(rounds):
        for t in THREADS:
            add(("dram", t), evictor.read_times(t))
        for case in cases:
            w, x, n = case["w"], case["x"], case["n"]
            ws = cold.copies(w)
            for t in THREADS:
                y = np.zeros(n, np.float32)
                kernel = kernels[t]
                ours = [lambda wi=wi: kernel(wi, x, y) for wi in ws]
                if ggml is not None:
                    try:
                        peer = ggml.gemv(ws, x, t)
                    except Exception as err:          # optional peer: drop it, keep going
                        print(f"ggml peer dropped: {type(err).__name__}: {err}")
                        ggml = None
                words = [wi.reshape(-1).view(np.int32).reshape(16, -1) for wi in ws]
                sums = np.zeros(16, np.int32)
                reader = evictor.kernels[t]
                # the read goes round the same copies as ours, half the set apart, so
                # that it never reads a copy ours has just brought into the caches
                half = len(words) // 2
                groups = {"ours": ours, "read": [lambda wd=wd: reader(wd, sums)
                                                 for wd in words[half:] + words[:half]]}
                try:
                    if ggml is not None:
                        groups["ggml"] = [lambda i=i: peer.run(i) for i in range(len(ws))]
                        add((n, case["k"], t, "ggml", "hot"), time_hot(peer, hot_reps))
                        peer.pause()
                    add((n, case["k"], t, "ours", "hot"), time_hot(ours[0], hot_reps))
                    add((n, case["k"], t, "read", "hot"),
                        time_hot(lambda: reader(words[0], sums), hot_reps))
                    # cold calls of ours, the plain read and ggml taken in turn
                    settle = [peer.pause if name == "ggml" else let_pool_sleep
                              for name in groups]
                    for name, times in zip(groups, cold.times(list(groups.values()),
                                                               cold_reps, settle)):
                        add((n, case["k"], t, name, "cold"), times)
                    if ggml is not None:
                        ours[0]()
                        err = np.abs(peer.result() - y).max() / np.abs(y).max()
                        case["ggml_err"] = max(case["ggml_err"] or 0.0, float(err))
                finally:
                    if ggml is not None:
                        peer.close()
                ours[0]()
                if "want" in case:
                    same = y.tobytes() == case["want"].tobytes()
                    case["exact"] = same if case["exact"] is None else case["exact"] and same
                if set_blas is not None or t == 1:
                    if set_blas is not None:
                        set_blas(t)
                    dense, xf = case["dense"], case["xf"]
                    denses = cold.copies(dense)
                    add((n, case["k"], t, "numpy", "hot"),
                        time_hot(lambda: dense @ xf, max(5, hot_reps // 10)))
                    add((n, case["k"], t, "numpy", "cold"),
                        cold.times([[lambda d=d: d @ xf for d in denses]],
                                   max(2, cold_reps // 2))[0])
                    del denses
                    if set_blas is not None:
                        set_blas(1)
                    time.sleep(0.3)           # let OpenBLAS's spinning threads go to sleep
            del ws

    stats = {"median": {key: statistics.median(v) for key, v in samples.items()},
             "best": {key: min(v) for key, v in samples.items()}}
    piece = evictor.piece_bytes
    dram = {t: (piece / stats["median"][("dram", t)] / 1e9,
                piece / stats["best"][("dram", t)] / 1e9) for t in THREADS}
    print(f"\nDRAM read bandwidth (compiled stream_read over {evictor.buf.nbytes >> 20} MiB "
          f"in {piece >> 20} MiB pieces, {len(samples[('dram', 1)])} pieces spread over the "
          f"rounds): "
          + "; ".join(f"{t} thread{'s' if t > 1 else ''} median {m:.1f} GB/s (best {b:.1f})"
                      for t, (m, b) in dram.items()))
    for label, table in stats.items():
        print()
        print(f"Q4_K GEMV, x quantized inside each call: {label} of {rounds} round(s) x "
              f"{hot_reps} hot / {cold_reps} cold calls per config; us per call")
        print_table(table, cases, dram, label)
    if ggml is not None:
        worst = max(c["ggml_err"] or 0.0 for c in cases)
        print(f"\nggml's y differs from ours by at most {worst:.1e} of max|y| (its Q4_K x Q8_K "
              f"numerics differ from the spec; ours equal the interpreter bit for bit)")
    print_targets(stats["median"], cases, dram, ggml is not None, cold_c, hit_c)
    return 0


def print_table(table, cases, dram, label):
    head = (f"{'N x K':>12} {'T':>2} {'hot us':>9} {'GB/s':>6} {'%read':>6} {'cold us':>9} "
            f"{'GB/s':>6} {'%DRAM':>6} {'%read':>6} {'numpy hot':>9} {'np/ours':>7} "
            f"{'ggml hot':>9} {'ours/ggml':>9} {'ggml cold':>9} {'ours/ggml':>9}  exact")
    print(head)
    print("-" * len(head))
    which = 0 if label == "median" else 1
    for case in cases:
        n, k = case["n"], case["k"]
        wbytes = case["w"].nbytes
        for t in THREADS:
            hot, cold = table[(n, k, t, "ours", "hot")], table[(n, k, t, "ours", "cold")]
            read, read_cold = table[(n, k, t, "read", "hot")], table[(n, k, t, "read", "cold")]
            np_hot = table.get((n, k, t, "numpy", "hot"))
            g_hot = table.get((n, k, t, "ggml", "hot"))
            g_cold = table.get((n, k, t, "ggml", "cold"))
            cold_gbs = wbytes / cold / 1e9
            cells = [f"{n:>5}x{k:<6}", f"{t:>2}", fmt_us(hot), f"{wbytes / hot / 1e9:6.1f}",
                     f"{100 * read / hot:5.0f}%", fmt_us(cold), f"{cold_gbs:6.1f}",
                     f"{100 * cold_gbs / dram[t][which]:5.0f}%", f"{100 * read_cold / cold:5.0f}%",
                     fmt_us(np_hot) if np_hot else f"{'-':>9}",
                     f"{np_hot / hot:6.1f}x" if np_hot else f"{'-':>7}",
                     fmt_us(g_hot) if g_hot else f"{'-':>9}",
                     f"{hot / g_hot:9.2f}" if g_hot else f"{'-':>9}",
                     fmt_us(g_cold) if g_cold else f"{'-':>9}",
                     f"{cold / g_cold:9.2f}" if g_cold else f"{'-':>9}",
                     {True: " yes", False: " NO", None: " -"}[case["exact"]]]
            print(" ".join(cells))


def print_targets(med, cases, dram, have_ggml, cold_c, hit_c):
    print("\ntargets (medians, ratios within this run):")
    shapes = {(c["n"], c["k"]) for c in cases}
    if (4096, 4096) in shapes and have_ggml:
        for t in THREADS:
            r = med[(4096, 4096, t, "ours", "hot")] / med[(4096, 4096, t, "ggml", "hot")]
            print(f"  4096x4096 hot, {t} thread{'s' if t > 1 else ''}: ours/ggml {r:.2f} "
                  f"(target <= 0.80) {'met' if r <= 0.8 else 'MISSED'}")
    elif not have_ggml:
        print("  ours/ggml: no ggml in this run")
    for case in cases:
        n, k = case["n"], case["k"]
        if n * k < 4096 * 4096:
            continue
        for t in THREADS:
            # the floor of any GEMV over these weights: a plain cold read of their bytes
            read = med[(n, k, t, "read", "cold")]
            share = case["w"].nbytes / med[(n, k, t, "ours", "cold")] / 1e9 / dram[t][0]
            floor = case["w"].nbytes / read / 1e9 / dram[t][0]
            print(f"  {n}x{k} cold, {t} thread{'s' if t > 1 else ''}: {100 * share:.0f}% of "
                  f"DRAM read bandwidth (target >= 85%) {'met' if share >= 0.85 else 'MISSED'}"
                  f"; a plain read of the weights alone: {100 * floor:.0f}%")
            if have_ggml:
                g = med[(n, k, t, "ggml", "cold")]
                r = med[(n, k, t, "ours", "cold")] / g
                print(f"  {n}x{k} cold, {t} thread{'s' if t > 1 else ''}: ours/ggml {r:.2f} "
                      f"(target <= 0.90) {'met' if r <= 0.9 else 'MISSED'}"
                      f"; a plain read of the weights alone: {read / g:.2f} of ggml's time")
    cold, hit = statistics.median(cold_c), statistics.median(hit_c)
    print(f"  compile: cold {cold * 1e3:.0f} ms (target < 1000) {'met' if cold < 1 else 'MISSED'}; "
          f"cache hit {hit * 1e3:.1f} ms (target < 20) {'met' if hit < 0.02 else 'MISSED'}")


if __name__ == "__main__":
    sys.exit(main())
