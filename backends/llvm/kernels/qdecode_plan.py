"""How the decode-GEMV rows kernel walks a packed row: chunks, periods, codes.

A row is read in *chunks*: 4 bytes per lane (64 bytes with 16 lanes) of each of a
vector's rows, transposed so that vector ``d`` holds the ``d``-th 32-bit little-endian
word of every row (a lane per row). A *period* is the shortest run of whole words that
holds whole codes, ``lcm(b, 32)`` bits: one word of 16 Q2/T2, 8 Q4 or 4 Q8 codes; five
words of 32 Q5 codes; three words of 16 Q6 codes. A chunk is the most whole periods
that fit. Code ``c`` of a period starts at bit ``c*b``: word ``c*b // 32``, offset
``c*b % 32``; a code that crosses into the next word (Q5, Q6) is read from the two
words funnel-shifted. Every group size is a multiple of the period's code count, so a
period never straddles two scales.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import lcm

__all__ = ["Plan", "plan_for", "CHUNK_BYTES"]

CHUNK_BYTES = 64


@dataclass(frozen=True)
class Plan:
    bits: int
    group: int
    period_words: int       # 32-bit words per period
    period_codes: int       # codes per period
    periods: int            # periods per chunk

    @property
    def chunk_codes(self) -> int:
        return self.periods * self.period_codes

    @property
    def chunk_bytes(self) -> int:
        return 4 * self.periods * self.period_words

    @property
    def chunk_groups(self) -> int:
        """Most groups one chunk's codes can touch."""
        return -(-(self.chunk_codes - 1) // self.group) + 1

    def slot(self, c: int) -> tuple[int, int, bool]:
        """Code ``c`` of a period: (word, bit offset, crosses into the next word)."""
        bit = c * self.bits
        word, offset = divmod(bit, 32)
        return word, offset, offset + self.bits > 32


def plan_for(fmt, chunk_bytes: int = CHUNK_BYTES) -> Plan:
    """The plan of ``fmt`` for chunks of at most ``chunk_bytes`` (4 bytes per lane)."""
    bits, group = fmt.bits, fmt.group
    if not 1 <= bits <= 16:
        raise ValueError(f"no decode plan for {bits}-bit codes")
    span = lcm(bits, 32)
    words, codes = span // 32, span // bits
    if group % codes:
        raise ValueError(f"a group of {group} is not a whole number of {codes}-code periods")
    periods = chunk_bytes // (4 * words)
    if periods < 1:
        raise ValueError(f"a {bits}-bit period does not fit in {chunk_bytes} bytes")
    return Plan(bits, group, words, codes, periods)
