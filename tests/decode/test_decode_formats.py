"""``decode`` of every registered format in kernels: compiled (CPU at each ISA level, 1
and 2 threads; host C) = interpreter = eager ``I.decode`` = the registry's ``decode``,
bit for bit, on random records, special scale fields, odd lengths and viewed rows; bad
row geometry is refused at compile time or with the interpreter's error at run time."""
import numpy as np
import pytest

import ninfer_ir as I
from ninfer_ir.backends.clike.host import HostKernel
from ninfer_ir.backends.llvm.runtime.jit import ISA_LEVELS, TargetUnavailable, host_target
from ninfer_ir.backends.llvm.runtime.launcher import compile_module
from ninfer_ir.mathlib.decoders import numpy_decode
from ninfer_ir.numerics.decode import family

NAMES = [n for n in I.formats.names() if family(I.formats.get(n)) != "grouped"]
GGUF = [n for n in NAMES if n.startswith("gguf_")]
F16_SPECIALS = np.array([0x7C00, 0xFC00, 0x7E00, 0x7D01, 0x0001, 0x83FF, 0x0000, 0x8000,
                         0x7BFF], dtype=np.uint16)       # inf, -inf, NaNs, subnormals, zeros, max


def _isas():
    out = []
    for isa in ISA_LEVELS:
        try:
            host_target(isa)
        except TargetUnavailable:
            continue
        out.append(isa)
    return out


def _bits(a):
    a = np.ascontiguousarray(a)
    return a.dtype, a.shape, a.view(np.uint8).tobytes()


def _f16_fields(fmt):
    """Byte offsets of a gguf block's binary16 scale fields."""
    return {"gguf_q2_k": (80, 82), "gguf_q3_k": (108,), "gguf_q4_k": (0, 2),
            "gguf_q5_k": (0, 2), "gguf_q6_k": (208,), "gguf_iq1_m": ()}.get(fmt.name, (0,))


def gguf_rows(fmt, n, blocks, rng, specials=True):
    """Random blocks (every byte image is a valid block); some scale fields special."""
    b = rng.integers(0, 256, (n, blocks * fmt.block_bytes), dtype=np.uint8)
    tame = rng.integers(0x2000, 0x3C00, (n, blocks), dtype=np.uint16)     # finite, moderate
    for off in _f16_fields(fmt):
        words = tame.copy()
        if specials:
            pick = rng.random((n, blocks)) < 0.3
            words[pick] = rng.choice(F16_SPECIALS, int(pick.sum()))
        view = b.reshape(n, blocks, fmt.block_bytes)
        view[:, :, off] = words & 0xFF
        view[:, :, off + 1] = words >> 8
    return b


def rows_of(fmt, n, k, rng, specials=True):
    """``(operand arrays with a leading row axis, the registry's decode [n, k])``."""
    fam = family(fmt)
    if fam == "gguf":
        b = gguf_rows(fmt, n, k // fmt.block_values, rng, specials)
        return (b,), fmt.decode(b)
    if fam == "direct":
        top = (1 << fmt.width) if specials else (0x7F000000 >> (32 - fmt.width))  # finite
        wide = rng.integers(0, top, (n, k), dtype=np.uint64)
        words = wide.astype(np.uint16 if fmt.width == 16 else np.uint32)
        return (words,), fmt.decode(words)
    if fam == "fp8_row":
        codes = rng.integers(0, 256, (n, k), dtype=np.uint8)
        codes[(codes & 0x7F) == 0x7F] = 0x42
        if fmt.row_scale.name == "bf16":
            scales = rng.integers(0, 0x7F80, n, dtype=np.uint16)
            scales[:2] = [0x0001, 0x7F7F]           # subnormal, largest finite
        else:
            scales = np.abs(rng.standard_normal(n).astype(np.float16))
            scales[:2] = [np.float16(6e-8), np.float16(65504)]
        scales[2:3] = 0
        codes[2:3] &= 0x80                          # a +0 row holds only signed zeros
        enc = fmt.encode((codes, scales), method="import_encoded")
        return (codes, scales), fmt.decode(enc)
    codes = rng.integers(0, 16, (n, k), dtype=np.uint8)
    scales = rng.integers(0, 0x7F, (n, k // 16), dtype=np.uint8)
    divisors = (np.abs(rng.standard_normal(n)) + 1e-3).astype(np.float32)
    divisors[:1] = np.float32(1e-40)                # a subnormal divisor: products overflow
    enc = fmt.encode((codes, scales, divisors), method="import_encoded")
    return (codes, scales, divisors), fmt.decode(enc)


def row_length(fmt, rng, odd):
    fam = family(fmt)
    if fam == "gguf":
        return fmt.block_values * (3 if odd else 2)
    if fam == "nvfp4":
        return 16 * (5 if odd else 2)
    return 37 if odd else 8


def copy_kernel(fmt):
    """``y[n] = decode(row n)`` for a format of any family (scalars are per-row)."""
    fam = family(fmt)
    if fam in ("gguf", "direct"):
        dt = I.u8 if fam == "gguf" else (I.u16 if fmt.width == 16 else I.u32)
        out = I.i32 if fmt.name == "int32" else I.f32

        @I.kernel
        def copy_rows(b: I.Tensor[dt, "N", "R"], y: I.Buffer[out, "N", "K"]):
            for n in I.range(b.shape[0]):
                y[n] = I.decode(b[n], format=fmt, k=y.shape[1])
        return copy_rows
    if fam == "fp8_row":
        st = I.u16 if fmt.row_scale.name == "bf16" else I.f16

        @I.kernel
        def copy_fp8(c: I.Tensor[I.u8, "N", "K"], s: I.Tensor[st, "N"], y: I.Buffer[I.f32, "N", "K"]):
            for n in I.range(c.shape[0]):
                y[n] = I.decode(c[n], s[n], format=fmt)
        return copy_fp8

    @I.kernel
    def copy_nvfp4(c: I.Tensor[I.u8, "N", "K"], s: I.Tensor[I.u8, "N", "S"],
                   d: I.Tensor[I.f32, "N"], y: I.Buffer[I.f32, "N", "K"]):
        for n in I.range(c.shape[0]):
            y[n] = I.decode(c[n], s[n], d[n], format=fmt)
    return copy_nvfp4


def dot_kernel(fmt):
    """``y[n] = dot(decode(row n), x)`` (gguf and direct floats): the general path."""
    dt = I.u8 if family(fmt) == "gguf" else (I.u16 if fmt.width == 16 else I.u32)

    @I.kernel
    def gemv(b: I.Tensor[dt, "N", "R"], x: I.Tensor[I.f32, "K"], y: I.Buffer[I.f32, "N"]):
        for n in I.prange(b.shape[0]):
            y[n] = I.dot(I.decode(b[n], format=fmt, k=x.shape[0]), x)
    return gemv


def _eager(fmt, args, r):
    row = [a[r] for a in args]
    return I.decode(*row, format=fmt)


def _run(kernel, args, out, run):
    y = np.zeros_like(out)
    run(*args, y)
    return y


@pytest.mark.parametrize("name", NAMES)
def test_compiled_decode_equals_the_registry(name):
    fmt = I.formats.get(name)
    rng = np.random.default_rng(sum(map(ord, name)))
    k = row_length(fmt, rng, odd=True)
    args, want = rows_of(fmt, 5, k, rng)
    with np.errstate(all="ignore"):
        assert _bits(numpy_decode(fmt, [a[1] for a in args])) == _bits(want[1])
        for r in range(len(want)):
            assert _bits(_eager(fmt, args, r)) == _bits(want[r])
    kernel = copy_kernel(fmt)
    lowered = I.lower(kernel)
    runs = {"interp": lambda *a: I.interpret(kernel, *a), "host C": HostKernel(lowered)}
    for isa in _isas():
        runs[f"cpu {isa} T1"] = compile_module(lowered, isa=isa, threads=1)
    runs["cpu T2"] = compile_module(lowered, threads=2)
    for what, run in runs.items():
        got = _run(kernel, args, np.zeros_like(want), run)
        assert _bits(got) == _bits(want), what


@pytest.mark.parametrize("name", GGUF + ["bf16", "fp32"])
def test_decode_inside_a_dot_loop_is_the_general_path(name):
    fmt = I.formats.get(name)
    rng = np.random.default_rng(7)
    k = row_length(fmt, rng, odd=False)
    (b,), w = rows_of(fmt, 37, k, rng, specials=False)     # finite: a NaN-free reference
    x = rng.standard_normal(k).astype(np.float32)
    kernel = dot_kernel(fmt)
    want = np.zeros(37, np.float32)
    I.interpret(kernel, b, x, want)
    ref = np.zeros(37, np.float32)                  # the seq dot of the registry's rows
    with np.errstate(all="ignore"):
        for r in range(37):
            acc = np.float32(-0.0)
            for i in range(k):
                acc = np.float32(acc + np.float32(w[r, i] * x[i]))
            ref[r] = acc
    assert _bits(want) == _bits(ref)
    lowered = I.lower(kernel)
    assert not any(op.name == "kernel_call" for op in lowered.walk())
    for run in (compile_module(lowered, threads=1), compile_module(lowered, threads=2),
                HostKernel(lowered)):
        assert _bits(_run(kernel, (b, x), want, run)) == _bits(want)


@pytest.mark.parametrize("name", ["gguf_q4_k", "gguf_iq3_s", "nvfp4", "fp8_e4m3fn_row_bf16",
                                  "bf16"])
def test_strided_and_viewed_rows(name):
    fmt = I.formats.get(name)
    rng = np.random.default_rng(3)
    args, want = rows_of(fmt, 6, row_length(fmt, rng, odd=True), rng)
    views = []
    for a in args:                                     # every other element: strided rows,
        wide = np.zeros((a.shape[0], 2 * a.shape[1]) if a.ndim == 2 else 2 * a.shape[0],
                        a.dtype)
        if a.ndim == 2:
            wide[:, ::2] = a
            views.append(wide[::-1, ::2][::2])         # rows reversed, then every other one
        else:
            wide[::2] = a
            views.append(wide[::2][::-1][::2])
    want = want[::-1][::2]
    kernel = copy_kernel(fmt)
    for run in (lambda *a: I.interpret(kernel, *a), I.compile(kernel, target="cpu"),
                HostKernel(I.lower(kernel))):
        assert _bits(_run(kernel, tuple(views), want, run)) == _bits(want)


Q4K = I.formats.get("gguf_q4_k")


@I.kernel
def q4k_part(b: I.Tensor[I.u8, "N", "R"], x: I.Tensor[I.f32, "K"], y: I.Buffer[I.f32, "N"]):
    for n in I.range(b.shape[0]):
        w = I.decode(b[n], format=Q4K)
        y[n] = I.dot(w[0:64], x[0:64]) + I.reduce(w[256:512], "add")


def test_viewed_decoded_row_is_staged_and_exact():
    rng = np.random.default_rng(4)
    b = gguf_rows(Q4K, 3, 2, rng, specials=False)
    x = rng.standard_normal(512).astype(np.float32)
    want = np.zeros(3, np.float32)
    I.interpret(q4k_part, b, x, want)
    for run in (I.compile(q4k_part, target="cpu"), HostKernel(I.lower(q4k_part))):
        assert _bits(_run(q4k_part, (b, x), want, run)) == _bits(want)


def test_bad_geometry_is_the_interpreters_error():
    fmt = I.formats.get("gguf_q5_0")
    kernel = copy_kernel(fmt)
    b = np.zeros((2, 21), np.uint8)                    # not whole 22-byte blocks
    y = np.zeros((2, 32), np.float32)
    with pytest.raises(I.DomainError) as want:
        I.interpret(kernel, b, y)
    assert "21 bytes do not hold one gguf_q5_0 row" in str(want.value)
    for run in (I.compile(kernel, target="cpu"), HostKernel(I.lower(kernel))):
        with pytest.raises(I.DomainError) as got:
            run(b, np.zeros((2, 32), np.float32))
        assert str(got.value) == str(want.value)
    nv = I.formats.get("nvfp4")
    kernel = copy_kernel(nv)
    args = (np.zeros((2, 32), np.uint8), np.zeros((2, 3), np.uint8), np.ones(2, np.float32))
    with pytest.raises(I.DomainError) as want:
        I.interpret(kernel, *args, np.zeros((2, 32), np.float32))
    for run in (I.compile(kernel, target="cpu"), HostKernel(I.lower(kernel))):
        with pytest.raises(I.DomainError) as got:
            run(*args, np.zeros((2, 32), np.float32))
        assert str(got.value) == str(want.value)


def test_static_geometry_and_signatures_are_verified():
    fmt = I.formats.get("gguf_q8_0")
    with pytest.raises(I.DSLError, match="33 bytes do not hold one gguf_q8_0 row"):
        @I.kernel
        def bad(b: I.Tensor[I.u8, 33], y: I.Buffer[I.f32, 32]):
            y[0] = I.decode(b, format=fmt)[0]
    with pytest.raises(I.DSLError, match="scale must be one u16 scalar"):
        f8 = I.formats.get("fp8_e4m3fn_row_bf16")

        @I.kernel
        def bad_scale(c: I.Tensor[I.u8, "K"], s: I.Tensor[I.f16, "N"], y: I.Buffer[I.f32, "K"]):
            y[0] = I.decode(c, s[0], format=f8)[0]
    with pytest.raises(I.DSLError, match=r"takes codes, scale, format\[, k\]; got argument 'scales'"):
        @I.kernel
        def bad_name(c: I.Tensor[I.u8, "K"], s: I.Tensor[I.u16, "N"], y: I.Buffer[I.f32, "K"]):
            y[0] = I.decode(c, s[0], format=f8, scales=s)[0]
    text = ("func @f(%b: tensor<u8[68]>) {\n"
            "  %w = decode(%b) {format = #gguf_q8_0} : tensor<f32[32]>\n  return()\n}\n")
    with pytest.raises(I.VerifyError, match="the row holds 64 elements"):
        I.parse(text)


def test_eager_decode_refuses_bad_operands():
    nv = I.formats.get("nvfp4")
    with pytest.raises(I.VerifyError, match="nvfp4 decode takes codes"):
        I.decode(np.zeros(16, np.uint8), format=nv)
    with pytest.raises(I.VerifyError, match="divisor must be one f32 scalar"):
        I.decode(np.zeros(16, np.uint8), np.zeros(1, np.uint8), np.float64(1), format=nv)
    f8 = I.formats.get("fp8_e4m3fn_row_fp16")
    codes = np.array([0x38, 0xB8, 0x7F], np.uint8)           # 1.0, -1.0, NaN (not validated)
    got = I.decode(codes=codes, scale=np.float16(2), format=f8)
    assert _bits(got) == _bits(np.array([2.0, -2.0, np.nan], np.float32) * np.float32(1))
    with pytest.raises(I.VerifyError, match="has no argument 'scale'"):
        I.decode(codes, np.float16(2), scale=np.float16(2), format=f8)
    with pytest.raises(I.VerifyError, match="not k = 5"):
        I.decode(np.zeros(18, np.uint8), format=I.formats.get("gguf_q4_0"), k=5)


def test_formats_doc_lists_every_decode_signature():
    from pathlib import Path
    from ninfer_ir.numerics.decode import signature
    text = (Path(__file__).resolve().parents[2] / "docs" / "formats.md").read_text()
    for name in I.formats.names():
        (line,) = [ln for ln in text.splitlines() if ln.startswith(f"| `{name}` | yes | `decode(")]
        call = line.split("`decode(")[1].split(")`")[0]
        assert [part.split()[0].rstrip(":") for part in call.split(", ")] == \
            [op.name for op in signature(I.formats.get(name))]
        assert all(str(op.dtype) in call for op in signature(I.formats.get(name)) if op.dtype)


def test_cuda_emission_of_every_family_compiles_to_exact_ptx():
    from ninfer_ir.backends.cuda import nvrtc
    for name in ("gguf_iq2_xxs", "gguf_q4_k", "nvfp4", "fp8_e4m3fn_row_fp16", "bf16"):
        fmt = I.formats.get(name)
        source = I.emit(copy_kernel(fmt), target="cuda", kind="cuda")
        assert f"nq_decode_{name}(" in source
        ptx = I.emit(copy_kernel(fmt), target="cuda", kind="ptx")
        nvrtc.check_exact_ptx(ptx)
        assert "fma.rn.f32" not in ptx and ".ftz" not in ptx


NV = I.formats.get("nvfp4")


@I.kernel
def nvfp4_scaled(c: I.Tensor[I.u8, "K"], s: I.Tensor[I.u8, "S"], d: I.Tensor[I.f32, "D"],
                 y: I.Buffer[I.f32, "K"]):
    w = I.decode(c, s, d[0], format=NV)
    for i in I.prange(c.shape[0]):
        y[i] = w[i] * 2.0


def test_decoded_row_read_by_a_parallel_loop():
    """A decoded row (two row views and a scalar) defined outside a parallel loop of
    2**19 + 48 elements travels into the outlined body on each thread."""
    rng = np.random.default_rng(5)
    k = (1 << 19) + 48
    c = rng.integers(0, 16, k, dtype=np.uint8)
    s = rng.integers(0, 0x7F, k // 16, dtype=np.uint8)
    d = np.array([0.75, 2.0], np.float32)
    want = NV.decode(NV.encode((c[None], s[None], d[:1]), method="import_encoded"))[0] * 2
    small = np.zeros(4096, np.float32)              # the interpreter, on a short row
    I.interpret(nvfp4_scaled, c[:4096], s[:256], d, small)
    assert _bits(small) == _bits(want[:4096])
    for threads in (1, 2):
        got = np.zeros(k, np.float32)
        I.compile(nvfp4_scaled, target="cpu", threads=threads)(c, s, d, got)
        assert _bits(got) == _bits(want)


Q5 = I.formats.get("gguf_q5_0")


@I.kernel
def q5_row_sums(b: I.Tensor[I.u8, "N", "R"], y: I.Buffer[I.f32, "N"]):
    for n in I.range(b.shape[0]):
        w = I.decode(b[n], format=Q5)                  # f32[?]: its length read by dim
        acc: I.f32 = 0.0
        for i in I.range(w.shape[0]):
            acc = acc + w[i]
        y[n] = acc


def test_length_of_a_lazy_row_needs_no_buffer():
    assert not any(op.name == "alloc" for op in I.lower(q5_row_sums).walk())
    rng = np.random.default_rng(6)
    b = gguf_rows(Q5, 3, 3, rng, specials=False)
    want = np.zeros(3, np.float32)
    I.interpret(q5_row_sums, b, want)
    ref = np.zeros(3, np.float32)
    for r, row in enumerate(Q5.decode(b)):
        for v in row:
            ref[r] = np.float32(ref[r] + v)
    assert _bits(want) == _bits(ref)
    for run in (I.compile(q5_row_sums, target="cpu"), HostKernel(I.lower(q5_row_sums))):
        assert _bits(_run(q5_row_sums, (b,), want, run)) == _bits(want)


BF16 = I.formats.get("bf16")


@I.kernel
def bf16_gemv_xw(w: I.Tensor[I.u16, "N", "K"], x: I.Tensor[I.f32, "K"], y: I.Buffer[I.f32, "N"]):
    for n in I.range(w.shape[0]):
        y[n] = I.dot(x, I.decode(w[n], format=BF16))


def test_staged_dot_keeps_the_order_operands_and_nans():
    """The CPU backend decodes a chunk of 64 elements before summing its products (the
    general path); lengths around the chunk, the decoded row second, and NaN, infinite
    and signed-zero words give the interpreter's bits."""
    rng = np.random.default_rng(8)
    for k in (1, 63, 64, 65, 200):
        w = rng.integers(0, 1 << 16, (9, k), dtype=np.uint64).astype(np.uint16)
        w[0, :] = 0x8000                                # a row of -0.0
        w[1, k // 2] = 0x7F81                           # a signalling NaN word
        w[2, 0] = 0xFF80                                # -inf first
        x = rng.standard_normal(k).astype(np.float32)
        want = np.zeros(9, np.float32)
        I.interpret(bf16_gemv_xw, w, x, want)
        for run in (I.compile(bf16_gemv_xw, target="cpu"), HostKernel(I.lower(bf16_gemv_xw))):
            assert _bits(_run(bf16_gemv_xw, (w, x), want, run)) == _bits(want), k
