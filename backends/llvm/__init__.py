"""The CPU backend: ``gen`` (LLVM IR from loop-level IR), ``kernels`` (hand-written
kernels the ``select`` pass names) and ``runtime`` (JIT, object cache, thread pool,
launcher)."""
