"""A native thread pool for parallel loops, emitted as LLVM IR (Linux on x86-64).

The runtime module exports::

    void ninfer_pool_start(i64 workers)                   start worker threads (once)
    void ninfer_pool_forget()                             zero the pool's state (fork child)
    i64  ninfer_par_<T>(i8* body, i8* env, i64 n, i64* err)   T = 2 .. MAX_THREADS

``ninfer_par_<T>`` has the kernels' ``par`` signature: it cuts ``[0, n)`` into
contiguous chunks (about ``CHUNKS_PER_THREAD`` per thread, a multiple of 16
iterations when at least 16, so the 16-row blocks of the GEMV rows kernel stay
whole), and the calling thread and up to ``T - 1`` workers take chunks in
increasing order from a shared atomic counter until none is left, so a thread
that is held up (another process on its CPU) leaves its share to the others.
A worker claims a posted loop (a compare-and-swap on its slot) before touching it; once
the calling thread finds no chunk left it withdraws, by the same compare-and-swap, every
post not claimed yet, so a worker that has not got a CPU yet does not hold the call up. A
thread stops at its first failing chunk; every chunk below the lowest failing one
has been taken and run, so the status returned is that of the lowest failing
chunk, which stops at its first failing iteration: the lowest failing iteration,
as in the interpreter. Its error block is copied to ``err``. If the pool is busy
(a kernel in another thread is using it) the loop runs whole in the calling thread.

Workers and waiters spin for ``SPIN`` rounds of ``pause`` on their generation word,
then sleep on it with ``futex``; a Dekker-style pair of sequentially consistent
flags (``asleep`` written before the last re-check, read after posting) guarantees
that a sleeper is always woken. Back-to-back kernel calls find the workers still
spinning, so a dispatch costs a few cache-line transfers instead of two thread
wake-ups.
"""
from __future__ import annotations

import llvmlite.ir as ir

__all__ = ["MAX_THREADS", "build_pool_module", "SPIN", "CHUNKS_PER_THREAD", "chunk_size"]

MAX_THREADS = 64
SPIN = 4000
SYS_FUTEX = 202
FUTEX_WAIT, FUTEX_WAKE = 128, 129          # the _PRIVATE forms
ERR_WORDS = 64
CHUNKS_PER_THREAD = 16
ROW_BLOCK = 16

I1, I8, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
I8P, I32P, I64P = I8.as_pointer(), I32.as_pointer(), I64.as_pointer()
BODY = ir.FunctionType(I64, [I8P, I64, I64, I64P])

# slot words (i64 each, one 64-byte line per worker); the dispatcher posts the chunk
# size in LO and the trip count in HI, and a worker that fails leaves the first
# iteration of its failing chunk in LO
START, DONE, FN, ENV, LO, HI, STATUS, FLAGS = range(8)


def chunk_size(n: int, parts: int) -> int:
    """The chunk length ``ninfer_par_<T>`` uses for ``n`` iterations on ``parts`` threads."""
    c = -(-n // (parts * CHUNKS_PER_THREAD))
    return c if c < ROW_BLOCK else -(-c // ROW_BLOCK) * ROW_BLOCK


def _c(v, ty=I64):
    return ir.Constant(ty, v)


class _Pool:
    def __init__(self, module):
        self.m = module
        self.slots = self._global("ninfer_pool_slots", ir.ArrayType(I64, 8 * MAX_THREADS))
        self.errs = self._global("ninfer_pool_errs", ir.ArrayType(I64, ERR_WORDS * MAX_THREADS))
        self.count = self._global("ninfer_pool_workers", I64)
        self.busy = self._global("ninfer_pool_busy", I32)
        self.next = self._global("ninfer_pool_next", ir.ArrayType(I64, 8))
        self.syscall = ir.Function(module, ir.FunctionType(I64, [I64], var_arg=True), "syscall")
        self.create = ir.Function(module, ir.FunctionType(I32, [I64P, I8P, I8P, I8P]),
                                  "pthread_create")

    def _global(self, name, ty):
        g = ir.GlobalVariable(self.m, ty, name)
        g.initializer = ir.Constant(ty, None)
        g.align = 64
        g.linkage = "internal"
        return g

    # helpers
    def word(self, b, w, k):
        return b.gep(self.slots, [_c(0), b.add(b.mul(w, _c(8)), _c(k))])

    def half(self, b, w, k, which=0):
        """The i32 at the low (0) or high (1) half of slot word k (futex words)."""
        return b.gep(b.bitcast(self.word(b, w, k), I32P), [_c(which, I32)])

    def pause(self, b):
        fn = self.m.globals.get("llvm.x86.sse2.pause") or ir.Function(
            self.m, ir.FunctionType(ir.VoidType(), []), "llvm.x86.sse2.pause")
        b.call(fn, [])

    def futex(self, b, addr, op, val):
        b.call(self.syscall, [_c(SYS_FUTEX), addr, _c(op), b.zext(val, I64),
                              ir.Constant(I8P, None)])

    def wait_until(self, b, word, sleeper_flag, differs_from=None, equals=None):
        """Spin, then sleep, until the i32 at ``word`` differs from / equals a value;
        returns the value seen. ``sleeper_flag`` is set while sleeping."""
        fn = b.function
        head, spin, sleep, out = (fn.append_basic_block(n) for n in
                                  ("wait.head", "wait.spin", "wait.sleep", "wait.out"))
        pre = b.block
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(I64)
        i.add_incoming(_c(0), pre)
        seen = b.load_atomic(word, "acquire", 4)
        ready = b.icmp_unsigned("!=", seen, differs_from) if differs_from is not None \
            else b.icmp_unsigned("==", seen, equals)
        b.cbranch(ready, out, spin)
        b.position_at_end(spin)
        self.pause(b)
        nxt = b.add(i, _c(1))
        b.cbranch(b.icmp_unsigned("<", nxt, _c(SPIN)), head, sleep)
        i.add_incoming(nxt, spin)
        b.position_at_end(sleep)
        b.store_atomic(ir.Constant(I32, 1), sleeper_flag, "seq_cst", 4)
        again = b.load_atomic(word, "seq_cst", 4)
        still = b.icmp_unsigned("==", again, differs_from) if differs_from is not None \
            else b.icmp_unsigned("!=", again, equals)
        with b.if_then(still):
            self.futex(b, word, FUTEX_WAIT, again)
        b.store_atomic(ir.Constant(I32, 0), sleeper_flag, "seq_cst", 4)
        i.add_incoming(_c(0), b.block)
        b.branch(head)
        b.position_at_end(out)
        return seen

    def wake_if_asleep(self, b, flag, word):
        asleep = b.load_atomic(flag, "seq_cst", 4)
        with b.if_then(b.icmp_unsigned("!=", asleep, ir.Constant(I32, 0))):
            self.futex(b, word, FUTEX_WAKE, ir.Constant(I32, 1))

    # functions
    def chunk_runner(self):
        """``i64 chunks(body, env, n, chunk, err, i64* failed_lo)``: run chunks taken from
        the shared counter until none is left (0) or one fails (its status, with its
        first iteration in ``failed_lo``)."""
        fn = ir.Function(self.m, ir.FunctionType(I64, [BODY.as_pointer(), I8P, I64, I64,
                                                       I64P, I64P]), "ninfer_pool_chunks")
        fn.linkage = "internal"
        body, env, n, chunk, err, failed_lo = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        loop, work, failed, finished = (fn.append_basic_block(x) for x in
                                        ("take", "work", "failed", "finished"))
        counter = b.gep(self.next, [_c(0), _c(0)])
        b.branch(loop)
        b.position_at_end(loop)
        k = b.atomic_rmw("add", counter, _c(1), "monotonic")
        lo = b.mul(k, chunk)
        b.cbranch(b.icmp_signed(">=", lo, n), finished, work)
        b.position_at_end(work)
        left = b.sub(n, lo)
        hi = b.add(lo, b.select(b.icmp_signed("<", left, chunk), left, chunk))
        status = b.call(body, [env, lo, hi, err])
        b.cbranch(b.icmp_signed("!=", status, _c(0)), failed, loop)
        b.position_at_end(failed)
        b.store(lo, failed_lo)
        b.ret(status)
        b.position_at_end(finished)
        b.ret(_c(0))
        self.chunks = fn
        return fn

    def worker(self):
        fn = ir.Function(self.m, ir.FunctionType(I8P, [I8P]), "ninfer_pool_worker")
        fn.linkage = "internal"
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        w = b.ptrtoint(fn.args[0], I64)
        start, done = self.half(b, w, START), self.half(b, w, DONE)
        asleep = self.half(b, w, FLAGS, 0)
        main_waits = self.half(b, w, FLAGS, 1)
        loop = fn.append_basic_block("loop")
        entry = b.block
        b.branch(loop)
        b.position_at_end(loop)
        last = b.phi(I32)
        last.add_incoming(ir.Constant(I32, 0), entry)
        gen = self.wait_until(b, start, asleep, differs_from=last)
        # claim the work posted as generation gen, unless the dispatcher has already
        # withdrawn it (it ran every chunk itself and did not wait for this thread)
        claim = b.cmpxchg(self.half(b, w, DONE, 1), b.sub(gen, ir.Constant(I32, 1)), gen,
                          "seq_cst", "seq_cst")
        run = fn.append_basic_block("run")
        skipped = b.block
        b.cbranch(b.extract_value(claim, 1), run, loop)
        last.add_incoming(gen, skipped)
        b.position_at_end(run)
        body = b.bitcast(b.inttoptr(b.load(self.word(b, w, FN)), I8P), BODY.as_pointer())
        err = b.gep(self.errs, [_c(0), b.mul(w, _c(ERR_WORDS))])
        status = b.call(self.chunks, [body, b.inttoptr(b.load(self.word(b, w, ENV)), I8P),
                                      b.load(self.word(b, w, HI)), b.load(self.word(b, w, LO)),
                                      err, self.word(b, w, LO)])
        b.store(status, self.word(b, w, STATUS))
        b.store_atomic(gen, done, "seq_cst", 4)
        self.wake_if_asleep(b, main_waits, done)
        last.add_incoming(gen, b.block)
        b.branch(loop)
        return fn

    def start(self, worker):
        fn = ir.Function(self.m, ir.FunctionType(ir.VoidType(), [I64]), "ninfer_pool_start")
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        want = b.select(b.icmp_signed(">", fn.args[0], _c(MAX_THREADS - 1)),
                        _c(MAX_THREADS - 1), fn.args[0])
        tid = b.alloca(I64)
        have = b.load(self.count)
        with b.if_then(b.icmp_signed("<", have, want)):
            pre = b.block
            head = fn.append_basic_block("spawn")
            done = fn.append_basic_block("spawned")
            b.branch(head)
            b.position_at_end(head)
            w = b.phi(I64)
            w.add_incoming(have, pre)
            b.call(self.create, [tid, ir.Constant(I8P, None), b.bitcast(worker, I8P),
                                 b.inttoptr(w, I8P)])
            nxt = b.add(w, _c(1))
            w.add_incoming(nxt, head)
            b.cbranch(b.icmp_signed("<", nxt, want), head, done)
            b.position_at_end(done)
            b.store(want, self.count)
        b.ret_void()

    def dispatch(self):
        fn = ir.Function(self.m, ir.FunctionType(I64, [I8P, I8P, I64, I64P, I64]),
                         "ninfer_pool_run")
        fn.linkage = "internal"
        body_p, env, n, err, limit = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        main_err = b.alloca(ir.ArrayType(I64, ERR_WORDS))
        main_lo = b.alloca(I64)
        result = b.alloca(I64)
        result_lo = b.alloca(I64)
        source = b.alloca(I64P)
        body = b.bitcast(body_p, BODY.as_pointer())
        parts = b.select(b.icmp_signed("<", limit, n), limit, n)
        avail = b.add(b.load(self.count), _c(1))
        parts = b.select(b.icmp_signed("<", avail, parts), avail, parts)
        alone = b.icmp_signed("<", parts, _c(2))
        with b.if_then(alone):
            b.ret(b.call(body, [env, _c(0), n, err]))
        pair = b.cmpxchg(self.busy, ir.Constant(I32, 0), ir.Constant(I32, 1), "acquire", "monotonic")
        with b.if_then(b.not_(b.extract_value(pair, 1))):
            b.ret(b.call(body, [env, _c(0), n, err]))

        # chunk = ceil(n / (parts * CHUNKS_PER_THREAD)), rounded up to a multiple of
        # ROW_BLOCK when at least ROW_BLOCK (chunk_size in Python)
        per = b.mul(parts, _c(CHUNKS_PER_THREAD))
        chunk = b.sdiv(b.add(n, b.sub(per, _c(1))), per)
        rounded = b.mul(b.sdiv(b.add(chunk, _c(ROW_BLOCK - 1)), _c(ROW_BLOCK)), _c(ROW_BLOCK))
        chunk = b.select(b.icmp_signed("<", chunk, _c(ROW_BLOCK)), chunk, rounded)
        # the posts below (sequentially consistent) publish the reset counter
        b.store_atomic(_c(0), b.gep(self.next, [_c(0), _c(0)]), "monotonic", 8)

        def each_worker(emit):
            pre = b.block
            head, loop, out = (fn.append_basic_block(x) for x in ("w.head", "w.body", "w.out"))
            b.branch(head)
            b.position_at_end(head)
            w = b.phi(I64)
            w.add_incoming(_c(0), pre)
            b.cbranch(b.icmp_signed("<", w, b.sub(parts, _c(1))), loop, out)
            b.position_at_end(loop)
            emit(w)
            w.add_incoming(b.add(w, _c(1)), b.block)
            b.branch(head)
            b.position_at_end(out)

        def post(w):
            b.store(b.ptrtoint(body_p, I64), self.word(b, w, FN))
            b.store(b.ptrtoint(env, I64), self.word(b, w, ENV))
            b.store(chunk, self.word(b, w, LO))
            b.store(n, self.word(b, w, HI))
            gen = b.add(b.load(self.half(b, w, START)), ir.Constant(I32, 1))
            b.store_atomic(gen, self.half(b, w, START), "seq_cst", 4)
            self.wake_if_asleep(b, self.half(b, w, FLAGS, 0), self.half(b, w, START))
        each_worker(post)
        main_errp = b.gep(main_err, [_c(0), _c(0)])
        b.store(n, main_lo)
        first = b.call(self.chunks, [body, env, n, chunk, main_errp, main_lo])
        b.store(first, result)
        b.store(b.load(main_lo), result_lo)
        b.store(main_errp, source)

        def collect(w):
            gen = b.load(self.half(b, w, START))
            # withdraw the post if the worker has not claimed it yet (its CPU busy
            # elsewhere): every chunk is taken, so there is nothing to wait for
            withdraw = b.cmpxchg(self.half(b, w, DONE, 1), b.sub(gen, ir.Constant(I32, 1)),
                                 gen, "seq_cst", "seq_cst")
            with b.if_then(b.not_(b.extract_value(withdraw, 1))):
                self.wait_until(b, self.half(b, w, DONE), self.half(b, w, FLAGS, 1), equals=gen)
                status = b.load(self.word(b, w, STATUS))
                lo = b.load(self.word(b, w, LO))
                so_far = b.load(result)
                lower = b.or_(b.icmp_signed("==", so_far, _c(0)),
                              b.icmp_signed("<", lo, b.load(result_lo)))
                take = b.and_(b.icmp_signed("!=", status, _c(0)), lower)
                with b.if_then(take):
                    b.store(status, result)
                    b.store(lo, result_lo)
                    b.store(b.gep(self.errs, [_c(0), b.mul(w, _c(ERR_WORDS))]), source)
        each_worker(collect)
        status = b.load(result)
        with b.if_then(b.icmp_signed("!=", status, _c(0))):
            memcpy = self.m.globals.get("llvm.memcpy.p0i8.p0i8.i64") or ir.Function(
                self.m, ir.FunctionType(ir.VoidType(), [I8P, I8P, I64, I1]),
                "llvm.memcpy.p0i8.p0i8.i64")
            b.call(memcpy, [b.bitcast(err, I8P), b.bitcast(b.load(source), I8P),
                            _c(8 * ERR_WORDS), ir.Constant(I1, 0)])
        b.store_atomic(ir.Constant(I32, 0), self.busy, "release", 4)
        b.ret(status)
        return fn

    def forget(self):
        """``ninfer_pool_forget()``: zero every word of the pool (worker count, busy
        flag, slots, error blocks, counter). A forked child calls it before starting
        its own workers: its parent's workers do not exist in it, and a parent thread
        may have been dispatching when it forked."""
        fn = ir.Function(self.m, ir.FunctionType(ir.VoidType(), []), "ninfer_pool_forget")
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        for g in (self.slots, self.errs, self.count, self.busy, self.next):
            b.store(ir.Constant(g.value_type, None), g)
        b.ret_void()

    def entry(self, run, threads):
        fn = ir.Function(self.m, ir.FunctionType(I64, [I8P, I8P, I64, I64P]),
                         f"ninfer_par_{threads}")
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        b.ret(b.call(run, [*fn.args, _c(threads)]))


def build_pool_module() -> ir.Module:
    module = ir.Module(name="ninfer_pool")
    pool = _Pool(module)
    pool.chunk_runner()
    pool.start(pool.worker())
    pool.forget()
    run = pool.dispatch()
    for t in range(2, MAX_THREADS + 1):
        pool.entry(run, t)
    return module
