"""Software prefetch for the rows kernels' walks (blocks of 16 rows, one record of each
row per step).

A block's walk is 16 streams of records one row stride apart, each only as long as a
row; the hardware prefetchers keep few of them ahead, and with short rows (K = 640:
20 records) none long enough to train on, so with the weights in DRAM the loads stall.
Two hints, both issued with ``llvm.prefetch`` (read, into L1, as the loads do), which
never faults and changes no result (docs/cpu-performance-notes.md, "Weights from DRAM"
and "Short rows"):

* ``prefetch_ahead``: the 16 records ``STEPS`` steps further along the walk (into the
  next block past the end of this one);
* ``prefetch_next_block``: the next block's rows in address order, 1/G of their span
  per step, where they are one contiguous span of at most ``NEXT_BLOCK_MAX`` bytes: a
  single sequential stream a block ahead of the walk, or two blocks ahead where a block
  spans less than ``NEAR_SPAN`` bytes (Gemma 3's K = 640 Q5_0 matrices, 7 KB blocks:
  `gate_up` 1.98 -> 1.72 ms and `attn_in` 0.83 -> 0.73 ms per token, 1 thread, three
  alternating runs on a loaded machine; the 11 KB blocks of the Q8_0 output projection
  were no faster two ahead, 4 KB-page map).
"""
from __future__ import annotations

import llvmlite.ir as ir

from ninfer_ir.backends.llvm.kernels.qir import I8P, I32, for_range, i32, i64, intrinsic

LANES = 16                  # rows per block
STEPS = 4                   # steps of the walk that ``prefetch_ahead`` runs ahead
NEXT_BLOCK_MAX = 64 << 10   # blocks up to this span also prefetch the next one in order
NEAR_SPAN = 8 << 10         # blocks shorter than this prefetch the block after next
LINE = 64


def prefetch(b: ir.IRBuilder, module: ir.Module, ptr) -> None:
    """One read prefetch of the line holding ``ptr`` into L1 (a hint, never a fault)."""
    pf = intrinsic(module, "llvm.prefetch.p0", ir.VoidType(), [I8P, I32, I32, I32])
    b.call(pf, [ptr, i32(0), i32(3), i32(1)])


def prefetch_ahead(b, module, first_row, g, ng, w_row, w_rec, lines, steps: int = STEPS):
    """Prefetch the byte offsets ``lines`` of the 16 records ``steps`` steps ahead.

    Step ``g`` of a block reads record ``g`` of its 16 rows (``ng`` records each). The
    step ahead is record ``g + steps`` of the same rows or, past the block's end, record
    ``g + steps - ng`` of the next block's rows (``first_row`` + 16 row strides). Rows
    past the last one are prefetched as well: only a hint.
    """
    ahead = b.add(g, i64(steps))
    offset = b.select(b.icmp_signed("<", ahead, ng), b.mul(ahead, w_rec),
                      b.add(b.mul(w_row, i64(LANES)), b.mul(b.sub(ahead, ng), w_rec)))
    rec = b.gep(first_row, [offset])
    for _ in range(LANES):      # one running address: 16 live row pointers would spill
        for line in lines:
            prefetch(b, module, b.gep(rec, [i64(line)]))
        rec = b.gep(rec, [w_row])


def prefetch_first_steps(b, module, first_row, ng, w_row, w_rec, lines,
                         steps: int = STEPS):
    """The first ``steps`` steps of a call's first block, which no earlier step
    prefetched (``prefetch_ahead`` of steps ``-steps .. -1``)."""
    with for_range(b, 0, i64(steps), name="pf") as k:
        prefetch_ahead(b, module, first_row, b.sub(k, i64(steps)), ng, w_row, w_rec, lines,
                       steps)


def prefetch_next_block(b, module, first_row, g, ng, count, w_row,
                        max_span: int = NEXT_BLOCK_MAX):
    """Prefetch the next block's rows in address order, 1/ng of their span per step.

    A matrix's rows follow one another in memory, so the next block's 16 rows are one
    span of ``16 * w_row`` bytes: read in address order, a block ahead of the walk, it
    is a single sequential stream, which the memory system serves better than the 16
    short streams of the walk itself. Only where the walk covers the whole row
    (``ng == count``: the span is then exactly what the next block reads) and the span
    is at most ``max_span``; the compare is unsigned, so a reversed row axis
    (``w_row < 0``) or a huge stride issues nothing.
    """
    span = b.mul(w_row, i64(LANES))
    step_bytes = b.mul(ng, i64(LINE))
    per_step = b.udiv(b.add(span, b.sub(step_bytes, i64(1))), step_bytes)
    wanted = b.and_(b.icmp_signed("==", ng, count),
                    b.icmp_unsigned("<=", span, i64(max_span)))
    # the block after next where a block is short (K = 640 Q5_0: 7 KB), so the stream
    # stays at least NEAR_SPAN bytes ahead of the walk
    ahead = b.select(b.icmp_unsigned("<", span, i64(NEAR_SPAN)), b.add(span, span), span)
    start = b.gep(first_row, [b.add(ahead, b.mul(b.mul(g, per_step), i64(LINE)))])
    with for_range(b, 0, b.select(wanted, per_step, i64(0)), name="next") as k:
        prefetch(b, module, b.gep(start, [b.mul(k, i64(LINE))]))
