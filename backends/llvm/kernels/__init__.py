"""Hand-written LLVM kernels: Q8_K quantization, the Q4_K x Q8_K dot and rows kernels
(``qkernels``, ``qdot*``, ``qquantize``, ``records``) and the decode + f32 dot rows
(``qdecode*``). Which loops they replace is IR: the ``select`` pass wraps a loop in a
``kernel_call`` naming an entry of the closed table ``ninfer_ir.ops_select.KERNELS``
(``ninfer_ir/library.py`` says what each computes); ``rows.selected`` reads it back and
``rows.RowsCall`` runs the kernels a block of rows at a time, then the loop's epilogue."""
