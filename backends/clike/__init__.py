"""The C-like emitter shared by host C and CUDA: loop-level IR -> C source.

- ``emitter``: ``CLikeEmitter``, the op table and structural cases; targets override
  data (``KERNEL``, ``PRIMS``, ``FN_BIG``, ``WARP_OPS``) and a few hooks (workers, effects, the two
  quantized ops);
- ``units`` / ``plan``: launch units, frame, arena, control block, call binding;
- ``scalars``: the scalar semantics of ``ninfer_ir.numerics.semantics`` as C helpers;
- ``folds``: ordered folds (every ``SumOrder``), trip counts, one-thread quantized ops;
- ``memory``: views, loads/stores, copies, allocs, ``decode``;
- ``contractions``: ``dot``, ``reduce``, ``quantized_dot``, ``quantize_into``;
- ``host``: the plain-C target, compiled by gcc and run through ctypes, which
  checks the shared emitter bit for bit against the interpreter on any machine.

``backends.cuda.emitter`` is the CUDA target.
"""
