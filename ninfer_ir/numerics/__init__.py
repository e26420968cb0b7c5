"""The exact numerics of the IR, once: what every op computes, as numpy.

- ``semantics``: the scalar rules of the elementwise ops and casts (one table).
- ``folds``: every ``SumOrder`` fold, one implementation parameterised by the
  combining step; ``reduce`` and ``dot``.
- ``quantized``: ``quantize`` (Q8_K) and ``quantized_dot`` (Q4_K x Q8_K), with the
  domain errors every backend reports.
- ``decode``: one packed row of a grouped format.

The interpreter, the eager API, constant folding, the backends' error messages and
the tests import these modules; nothing re-derives them. The package imports
nothing of ``frontend``, ``passes`` or ``backends``. (The submodules are imported
by name; this file imports none of them, so ``sumorder`` can use ``folds``.)
"""
