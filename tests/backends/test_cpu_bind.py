"""``CompiledKernel.bind``: a bound call gives the plain call's bits and errors, keeps
the copy-on-overlap rule, and runs on the views taken at binding whatever is done to
the caller's array objects afterwards (backends/llvm/runtime/bound.py)."""
import gc

import numpy as np
import pytest

import ninfer_ir as I


@I.kernel
def mix(x: I.Tensor[I.f32, "N"], w: I.Tensor[I.f32, "M", "N"], y: I.Buffer[I.f32, "M"],
        acc: I.Buffer[I.f32, "N"], s: I.f32, k: I.index):
    """y = w x * s + k (a parallel loop); acc[i] += x[i - 1], in order (a store into
    acc is seen through x if x shares acc's memory and is not copied)."""
    for m in I.prange(w.shape[0]):
        y[m] = I.dot(w[m], x, order="tree") * s + I.cast(k, I.f32)
    for i in I.range(1, x.shape[0]):
        acc[i] = acc[i] + x[i - 1]


@I.kernel
def scaled(x: I.Tensor[I.f32, "N"], s: I.f32, y: I.Buffer[I.f32, "N"]):
    for i in I.range(x.shape[0]):
        y[i] = x[i] * s


scaled.func.attrs["returns"] = 1

RNG = np.random.default_rng(3)
KERNELS = {t: I.compile(mix, target="cpu", threads=t) for t in (1, 2)}


def inputs(n=8, m=37):
    x = RNG.standard_normal(n).astype(np.float32)
    w = RNG.standard_normal((m, n)).astype(np.float32)
    return [x, w, np.zeros(m, np.float32), RNG.standard_normal(n).astype(np.float32),
            np.float32(0.75), 5]


def copies(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def same_bits(a, b):
    return np.array_equal(np.asarray(a).view(np.uint32), np.asarray(b).view(np.uint32))


def plain_error(kernel, args):
    with pytest.raises(I.VerifyError) as e:
        kernel(*args)
    return str(e.value)


# which parameters a call leaves free (the others are bound), positions and names
FREE = {"nothing": (), "the scalar k": (5,), "the scalars": (4, 5), "x": (0,),
        "the buffers": (2, 3), "w and k": (1, 5), "everything": (0, 1, 2, 3, 4, 5)}
NAMES = ("x", "w", "y", "acc", "s", "k")


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("free", list(FREE))
def test_bound_calls_give_the_plain_calls_bits(threads, free):
    kernel, positions = KERNELS[threads], FREE[free]
    args = inputs()
    want = copies(args)
    for _ in range(2):                     # acc accumulates: the second call reads the first's
        kernel(*want)
    got = copies(args)
    bound = kernel.bind(**{NAMES[k]: got[k] for k in range(6) if k not in positions})
    assert bound.free == tuple(NAMES[k] for k in positions)
    for _ in range(2):
        assert bound(*[got[k] for k in positions]) is None
    assert same_bits(got[2], want[2]) and same_bits(got[3], want[3])
    assert same_bits(got[0], args[0]) and same_bits(got[1], args[1])  # inputs unchanged


@pytest.mark.parametrize("threads", [1, 2])
def test_free_arguments_change_per_call(threads):
    kernel = KERNELS[threads]
    args = inputs()
    y, acc = args[2], args[3].copy()
    bound = kernel.bind(args[0], args[1], y, acc)            # s and k free
    for s, k in ((np.float32(2.0), 0), (np.float32(-0.5), 9), (np.float32(3.0), -4)):
        want = [args[0], args[1], np.zeros_like(y), acc.copy(), s, k]
        kernel(*want)
        bound(s, k)
        assert same_bits(y, want[2]) and same_bits(acc, want[3])
    bound(k=1, s=np.float32(1.0))                           # by name
    want = [args[0], args[1], np.zeros_like(y), acc.copy(), np.float32(1.0), 1]
    kernel(*want)
    bound(np.float32(1.0), 1)
    assert same_bits(y, want[2])


def test_a_bound_tensor_is_read_at_each_call():
    """The memory is shared: a value written into a bound tensor between calls is read
    by the next call."""
    kernel = KERNELS[1]
    x, w, y, acc, s, _ = inputs()
    bound = kernel.bind(x, w, y, acc, s)
    bound(0)
    x[:] = 2.0
    bound(0)
    want = np.zeros_like(y)
    kernel(x, w, want, acc.copy(), s, 0)
    assert same_bits(y, want)


def test_byte_strides_and_views():
    """Views at an odd byte offset (the byte-stride variant) and negative strides."""
    kernel = KERNELS[2]
    x, w, y, acc, s, k = inputs()
    raw = np.zeros(4 * x.size + 1, np.uint8)
    odd = raw[1:].view(np.float32)                    # strides of 4 at address + 1
    odd[:] = x
    wr = w[::-1]
    want = [x, wr, np.zeros_like(y), acc.copy(), s, k]
    kernel(*want)
    got = [odd, wr, np.zeros_like(y), acc.copy(), s, k]
    kernel.bind(*got[:5])(k)
    assert same_bits(got[2], want[2]) and same_bits(got[3], want[3])
    got = [odd, wr, np.zeros_like(y), acc.copy(), s, k]
    kernel.bind(w=wr, y=got[2], acc=got[3], s=s, k=k)(odd)  # the odd view free
    assert same_bits(got[2], want[2]) and same_bits(got[3], want[3])


# -- errors ---------------------------------------------------------------------------

def bad_args():
    """(what, position, bad value) for each check of the binder."""
    x, w, y, acc, s, k = inputs()
    ro = y.copy()
    ro.flags.writeable = False
    return [("dtype", 0, x.astype(np.float64)), ("rank", 1, w.reshape(-1)),
            ("symbol", 3, np.zeros(9, np.float32)), ("read-only buffer", 2, ro),
            ("not an array", 0, [1.0] * 8), ("float not exactly f32", 4, 0.1),
            ("int out of range", 5, 2 ** 70), ("float for index", 5, 1.5),
            ("numpy scalar of another dtype", 4, np.float64(1.0))]


@pytest.mark.parametrize("what, k, bad", bad_args(), ids=[b[0] for b in bad_args()])
def test_bind_raises_the_plain_calls_error(what, k, bad):
    kernel = KERNELS[1]
    args = inputs()
    args[k] = bad
    want = plain_error(kernel, args)
    with pytest.raises(I.VerifyError) as e:
        kernel.bind(*args)
    assert str(e.value) == want
    with pytest.raises(I.VerifyError) as e:                  # bound by name, others free
        kernel.bind(**{NAMES[k]: bad, **({"x": args[0]} if k == 3 else {})})
    assert str(e.value) == want


@pytest.mark.parametrize("what, k, bad", bad_args(), ids=[b[0] for b in bad_args()])
def test_a_bad_free_argument_raises_the_plain_calls_error(what, k, bad):
    kernel = KERNELS[1]
    args = inputs()
    good = copies(args)
    bound = kernel.bind(**{NAMES[j]: good[j] for j in range(6) if j != k})
    before = copies(good)
    args[k] = bad
    want = plain_error(kernel, args)
    with pytest.raises(I.VerifyError) as e:
        bound(bad)
    assert str(e.value) == want
    assert all(same_bits(a, b) for a, b in zip(good[:4], before[:4]))  # nothing written
    bound(good[k])                                           # still runs with a good one


def test_call_count_and_names():
    kernel = KERNELS[1]
    x, w, y, acc, s, k = inputs()
    bound = kernel.bind(x, w, y, acc)
    for call, message in ((lambda: bound(s), "missing argument 5 (%k)"),
                          (lambda: bound(s, k, 1), "takes 2 free argument(s) (s, k), got 3"),
                          (lambda: bound(s, k=k, s=s), "argument 4 (%s) is given twice"),
                          (lambda: bound(s, y=y), "no free parameter %y")):
        with pytest.raises(I.VerifyError, match=message.replace("(", r"\(").replace(")", r"\)")):
            call()
    for call in (lambda: kernel.bind(x, w, y, acc, s, k, 1), lambda: kernel.bind(x, x=x),
                 lambda: kernel.bind(z=x)):
        with pytest.raises(I.VerifyError) as e:
            call()
        assert "@mix" in str(e.value)


def test_bad_argument_after_a_guard_fails_as_the_plain_call():
    """A failing check inside the kernel (an index out of range) is the plain call's
    error, from the bound call too."""
    kernel = I.compile(shifted, target="cpu", threads=1)
    x, y = np.ones(4, np.float32), np.zeros(4, np.float32)
    with pytest.raises(I.NinferError) as plain:
        kernel(x, y, 3)
    with pytest.raises(type(plain.value)) as bound:
        kernel.bind(x, y)(3)
    assert str(bound.value) == str(plain.value)


@I.kernel
def shifted(x: I.Tensor[I.f32, "N"], y: I.Buffer[I.f32, "N"], d: I.index):
    for i in I.range(x.shape[0]):
        y[i] = x[i + d]


def test_outputs_left_out_are_allocated():
    kernel = I.compile(scaled, target="cpu", threads=1)
    x = np.arange(5, dtype=np.float32)
    got = kernel.bind(x)(np.float32(3))
    assert same_bits(got, kernel(x, np.float32(3)))
    y = np.zeros(5, np.float32)
    assert kernel.bind(x, np.float32(3))(y) is None and same_bits(y, got)


# -- overlap ---------------------------------------------------------------------------

@pytest.mark.parametrize("bound_free", ["both bound", "tensor free", "buffer free"])
def test_a_tensor_overlapping_a_buffer_is_copied(bound_free):
    """x and acc are the same memory: as in a plain call (and the interpreter), x is its
    value when the call begins, at every call."""
    kernel = KERNELS[1]
    _, w, y, acc, s, k = inputs()
    mem = acc.copy()
    want = mem.copy()
    for _ in range(3):
        I.interpret(mix, want, w, np.zeros_like(y), want, s, k)
    if bound_free == "both bound":
        run = kernel.bind(mem, w, y, mem, s, k)
        calls = [() for _ in range(3)]
    elif bound_free == "tensor free":
        run = kernel.bind(w=w, y=y, acc=mem, s=s, k=k)
        calls = [(mem,) for _ in range(3)]
    else:
        run = kernel.bind(x=mem, w=w, y=y, s=s, k=k)
        calls = [(mem,) for _ in range(3)]
    for c in calls:
        run(*c)
    assert same_bits(mem, want)


def test_inputs_that_do_not_overlap_are_not_written():
    kernel = KERNELS[2]
    x, w, y, acc, s, k = inputs()
    xs, ws = x.copy(), w.copy()
    other = np.zeros_like(acc)
    kernel.bind(x=x, w=w, y=y, s=s, k=k)(other)            # a free buffer apart from x
    assert same_bits(x, xs) and same_bits(w, ws)


# -- the caller's array objects after binding ---------------------------------------

def test_changing_an_arrays_shape_after_binding_does_not_change_the_bound_call():
    """``a.shape = ...`` (and ``strides``, ``dtype``, ``flags.writeable``) changes the
    caller's array object in place; the bound call runs on its own views, taken at
    binding: the same memory with the layout checked then. The plain call checks the
    changed object."""
    kernel = KERNELS[1]
    x, w, y, acc, s, k = inputs(n=8, m=36)
    want = copies([x, w, y, acc, s, k])
    kernel(*want)
    bound = kernel.bind(x, w, y, acc, s, k)
    w.shape = (72, 4)
    y.shape = (6, 6)
    acc.dtype = np.int32
    x.flags.writeable = False
    with pytest.raises(I.VerifyError, match="argument 1 .* axis 1 is 4"):
        kernel(x, w, y, acc, s, k)
    bound()
    assert same_bits(y.reshape(-1), want[2]) and same_bits(acc, want[3])


def test_reshaping_an_overlapping_tensor_after_binding():
    """The tensor copied on every call is copied from the view taken at binding."""
    kernel = KERNELS[1]
    _, w, y, acc, s, k = inputs()
    mem, want = acc.copy(), acc.copy()
    I.interpret(mix, want, w, np.zeros_like(y), want, s, k)
    bound = kernel.bind(mem, w, y, mem, s, k)
    mem.shape = (2, 4)
    bound()
    assert same_bits(mem.reshape(-1), want)


def test_bound_memory_stays_alive():
    kernel = KERNELS[1]
    x, w, y, acc, s, k = inputs()
    want = copies([x, w, y, acc, s, k])
    kernel(*want)
    bound = kernel.bind(x.copy(), w.copy(), y, acc, s, k)   # the only references
    gc.collect()
    bound()
    assert same_bits(y, want[2])


def test_repr():
    x, w, y, acc, s, k = inputs()
    assert repr(KERNELS[1].bind(x, w, y, acc)) == "<bound @mix, free: s, k>"
