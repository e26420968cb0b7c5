"""The numpy oracle: the IR interpreter and the eager forms of the DSL calls, both on
the one numerics layer (``ninfer_ir.numerics``)."""
from .eager import bind_arguments, bitcast, cast, dot, quantize, quantized_dot, reduce
from .interpreter import RULES, InterpretedKernel, interpret

__all__ = ["interpret", "InterpretedKernel", "RULES", "bind_arguments", "quantize",
           "quantized_dot", "dot", "reduce", "cast", "bitcast"]
