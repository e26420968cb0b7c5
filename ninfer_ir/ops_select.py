"""Kernel selection in the IR: ``kernel_call``, a loop that a target may run as one call
of a hand-written library kernel.

    kernel_call(%w, %xq, %y) {kernel = "q4k_q8k_dot_rows"} ({
      for(%c0, %N, %c1) ({ ... })
      yield()
    })

The region is the meaning: the interpreter runs it, and a target runs it wherever the
kernel's run-time conditions (in range, layout, no overlap) do not hold. The operands
are the kernel's parameters: those of ``KERNELS[kernel]`` for each of the loop's row
dots (``dots``, default 1), then the buffers the loop stores into. A loop that does
more with the dots' values than store them has ``epilogue``, a short spelling of what
it stores (the region is what it computes):

    kernel_call(%wg, %xq, %wu, %xq, %y) {dots = 2, epilogue = "%y[%n] = mul(...)",
                                         kernel = "q4k_q8k_dot_rows"} ({ ... })

The ``select`` pass
(``passes/select.py``) places these ops; an emitter translates one to a guard, the
call and the region as the fallback.
"""
from __future__ import annotations

from types import MappingProxyType

from .ir import Operation
from .opbase import attr
from .quant import PAIRS

#: the pairs (their stems) whose m x n nests of dots have a GEMM kernel
GEMM_PAIRS = ("q4k_q8k", "q80_q80", "q50_q80", "q6k_q8k", "q40_q80", "iq4nl_q80")
PAIRS_BY_STEM = MappingProxyType({p.stem: p for p in PAIRS.values()})

#: library kernel -> (its parameters per row dot, what it computes); the outputs follow
KERNELS = MappingProxyType({
    **{p.rows_kernel: (("w", "xq"),
                       f"quantized_dot(w[n], xq) ({p}) for every row n of the loop (order "
                       f"seq)") for p in PAIRS.values()},
    "decode_dot_rows": (("p", "s", "x"),
                        "dot(decode(p[n], s[n], k), x) (or dot(x, ...)) for every row n of "
                        "the loop"),
    **{f"{stem}_gemm": (("w", "xq"),
                        f"y[..., m, n] = quantized_dot(w[n], xq[m]) ({PAIRS_BY_STEM[stem]}) "
                        f"for every m of the loop and n of its inner loop (order seq)")
       for stem in GEMM_PAIRS},
    **{f"{stem}_gemm_quantize": (("w", "x"),
                                 f"y[..., m, n] = quantized_dot(w[n], quantize(x[m])) "
                                 f"({PAIRS_BY_STEM[stem]}) for every m of the loop and n of "
                                 f"its inner loop (order seq)")
       for stem in GEMM_PAIRS},
})


class KernelCallOp(Operation):
    """``kernel_call(params...) {kernel = "..."}`` around one ``for`` loop (see above)."""
    name = "kernel_call"
    pure = False

    def verify_(self):
        name = attr(self, "kernel", str, "a string")
        if name not in KERNELS:
            raise self.error(f"unknown library kernel {name!r}; known: {', '.join(KERNELS)}")
        params = KERNELS[name][0]
        dots = attr(self, "dots", int, "a positive integer") if "dots" in self.attrs else 1
        if dots < 1:
            raise self.error(f"attribute 'dots' must be a positive integer, got {dots}")
        if "epilogue" in self.attrs:
            attr(self, "epilogue", str, "a string")
        if len(self.operands) <= dots * len(params):
            raise self.error(f"kernel {name!r} takes {len(params)} parameter(s) "
                             f"({', '.join(params)}) for each of {dots} dot(s), then the "
                             f"output(s), got {len(self.operands)}")
        if self.results:
            raise self.error("kernel_call has no results")
        if len(self.regions) != 1 or len(self.regions[0].blocks) != 1:
            raise self.error("expects one region with one block")
        body = self.regions[0].block
        if body.args:
            raise self.error("the region takes no arguments")
        ops = body.ops
        if (len(ops) != 2 or ops[0].name != "for" or ops[1].name != "yield"
                or ops[1].operands or ops[0].results):
            raise self.error("the region holds one 'for' without results, then 'yield()'")

    @property
    def kernel(self) -> str:
        return self.attrs["kernel"]

    @property
    def dots(self) -> int:
        return self.attrs.get("dots", 1)

    @property
    def loop(self):
        """The ``for`` loop the call stands for."""
        return self.regions[0].block.ops[0]
