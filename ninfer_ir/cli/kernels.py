"""The kernels the command line runs on data it does not define itself."""
import ninfer_ir as I


@I.kernel
def q4k_gemv(w: I.Tensor[I.u8, "N", "G", 144], x: I.Tensor[I.f32, "G", 256],
             y: I.Buffer[I.f32, "N"]):
    xq = I.quantize(x, format=I.quant.q8_k)
    for n in I.range(w.shape[0]):
        y[n] = I.quantized_dot(w[n], xq, lhs_format=I.quant.q4_k,
                               rhs_format=I.quant.q8_k, acc_dtype=I.f32)
