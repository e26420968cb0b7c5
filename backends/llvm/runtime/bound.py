"""Calls with arguments bound once: ``CompiledKernel.bind(*args, **kwargs)``.

``bind`` takes some of the parameters, positionally from the first or by name, and
checks them as a call would (``bind_call``: the same typed, located errors, raised by
``bind``). The parameters not given are left free: the ``BoundKernel`` it returns is
called with them, positionally in parameter order or by name, and runs the kernel on
the bound and the free arguments together.

What ``bind`` does once, a plain call does on every call: the argument checks, the
descriptor slots of the bound arguments, and the overlap tests between the bound
tensors and the bound buffers. A call checks only its free arguments (those tests
that involve a free array included); any free argument the short check does not take
(another type, a wrong dtype, rank or size, a read-only buffer, missing or extra
arguments) sends the call through the plain call of the kernel on the bound and free
arguments, which words the error or runs it as a plain call would.

The contract. A bound array is held through a view that ``bind`` makes of it and keeps
to itself: the array's memory stays alive while the bound kernel lives, and nothing
done to the caller's array object afterwards (``a.shape = ...``, ``a.strides``,
``a.dtype``, ``a.flags.writeable``) changes the view the kernel runs on: the call reads
and writes the bound memory with the layout it had at ``bind`` time. The memory itself
is shared, as with any numpy view: values written into a bound tensor between calls are
seen by the next call, and a bound buffer's contents are the kernel's output. The data
address cannot change under the view (numpy refuses to resize an array that a view
refers to; ``resize(refcheck=False)``, which numpy documents as unsafe for any view,
is the one way to free it). A bound tensor that may overlap a bound buffer is copied
on every call, as in a plain call, so it is read as its value when the call begins and
is never written.
"""
from __future__ import annotations

import ctypes

import numpy as np

from ninfer_ir.errors import VerifyError
from ninfer_ir.backends.abi import ERR_SLOTS, error_for_status
from ninfer_ir.backends.signature import bind_call, param_name, shares_elements

from ninfer_ir.backends.llvm.runtime.descriptors import (element_strides, int_range,
                                                          scalar_bits, write_arrays)

__all__ = ["BoundKernel"]

_ERR_BLOCK = ctypes.c_int64 * ERR_SLOTS


def _view(x, tensor: bool) -> np.ndarray:
    """A view of ``x`` that only the bound kernel holds (read-only for a tensor)."""
    v = x.view()
    if tensor:
        v.flags.writeable = False
    return v


class BoundKernel:
    """A compiled kernel with some of its arguments bound (``CompiledKernel.bind``);
    calling it with the free ones runs the kernel. ``free`` names the free parameters
    in the order a call takes them."""

    def __init__(self, kernel, args, kwargs):
        func = kernel.func
        values, symbols, free = bind_call(func, args, kwargs,
                                          lambda v: isinstance(v, np.ndarray),
                                          lambda v: v.flags.writeable, partial=True)
        self.kernel = kernel
        self.free = tuple(func.args[k].name_hint or f"argument {k}" for k in free)
        self._free_index = {func.args[k].name_hint: i for i, k in enumerate(free)
                            if func.args[k].name_hint}
        plan = kernel._plan                # (k, shaped, buffer, dtype, rank, dims, slot)
        free_set = set(free)
        for k, shaped, buffer, *_ in plan:
            if k not in free_set and shaped:
                values[k] = _view(values[k], not buffer)
        self._values = values
        self._free = free
        sizes = {name: n for name, (n, _) in symbols.items()}

        bound = [(values[k], (off, rank)) for k, shaped, _, _, rank, _, off in plan
                 if shaped and k not in free_set]
        buffers = [values[k] for k, shaped, buffer, *_ in plan
                   if shaped and buffer and k not in free_set]
        # bound tensors that may overlap a bound buffer: copied on every call
        self._copied = [(values[k], (off, rank)) for k, shaped, buffer, _, rank, _, off in plan
                        if shaped and not buffer and k not in free_set
                        and any(np.may_share_memory(values[k], b) for b in buffers)]
        copied = {id(x) for x, _ in self._copied}
        self._element = element_strides([x for x, _ in bound if id(x) not in copied])
        self._templates = {}
        for unit in (("element", "byte") if self._element else ("byte",)):
            slots = kernel._slot_type()
            write_arrays(slots, bound, unit == "element")
            for k, shaped, _, dtype, *_, off in plan:
                if not shaped and k not in free_set:
                    slots[off] = scalar_bits(dtype)(values[k])
            self._templates[unit] = slots

        # per free parameter, what a call checks: (position in the call, ...)
        self._free_scalars, self._free_arrays = [], []
        for i, k in enumerate(free):
            _, shaped, buffer, dtype, rank, dims, off = plan[k]
            if shaped:
                want = tuple((axis, sizes.get(d, d)) for axis, d in dims)
                self._free_arrays.append((i, dtype, rank, want, buffer, (off, rank)))
            else:                          # a Python int is its own slot for int64
                direct = dtype.kind == "i" and dtype.itemsize == 8
                self._free_scalars.append((i, dtype, int_range(dtype), off, scalar_bits(dtype),
                                           direct))
        # tensor/buffer pairs with a free side, tested on every call: the free tensors
        # (position in the call) against every buffer, bound tensors against free buffers
        self._free_tensors = [a[0] for a in self._free_arrays if not a[4]]
        self._free_buffers = [a[0] for a in self._free_arrays if a[4]]
        self._bound_buffers = buffers
        self._bound_tensors = [(values[k], (off, rank))
                               for k, shaped, buffer, _, rank, _, off in plan
                               if shaped and not buffer and k not in free_set
                               and id(values[k]) not in copied]
        # no free array and no copy: the descriptor is the template and the free scalars
        self._simple = not self._free_arrays and not self._copied
        if self._simple:
            self._unit = "element" if self._element else "byte"
            kernel._variant(self._unit)

    def __repr__(self):
        return f"<bound @{self.kernel.func.sym_name}, free: {', '.join(self.free) or 'none'}>"

    def _full(self, args):
        """The argument list of the plain call: bound values and ``args`` in the free
        places."""
        values = list(self._values)
        for k, x in zip(self._free, args):
            values[k] = x
        return values

    def _named(self, args, kwargs):
        """A call that is not the short one (names, a count other than the free
        parameters'): as the plain call with the same arguments."""
        func, n = self.kernel.func, len(self._free)
        if len(args) > n:
            raise VerifyError(f"@{func.sym_name} bound takes {n} free argument(s) "
                              f"({', '.join(self.free) or 'none'}), got {len(args)}")
        given = list(args) + [None] * (n - len(args))
        have = [True] * len(args) + [False] * (n - len(args))
        for key, x in kwargs.items():
            i = self._free_index.get(key)
            if i is None:
                raise VerifyError(f"@{func.sym_name} bound has no free parameter %{key} "
                                  f"(free: {', '.join(self.free) or 'none'})")
            if have[i]:
                raise VerifyError(f"@{func.sym_name}: {param_name(func, self._free[i])} "
                                  f"is given twice")
            given[i], have[i] = x, True
        if all(have):
            return self(*given)
        missing = [k for k, h in zip(self._free, have) if not h]
        total = len(func.args)
        outputs = list(range(total - self.kernel.n_outputs, total))
        if self.kernel.n_outputs and missing == outputs:      # allocated and returned
            return self.kernel(*self._full(given)[:total - len(outputs)])
        raise VerifyError(f"@{func.sym_name}: missing "
                          + ", ".join(param_name(func, k) for k in missing))

    def __call__(self, *args, **kwargs):
        if kwargs or len(args) != len(self._free):
            return self._named(args, kwargs)
        if self._simple:                   # the kernel only reads its descriptor: with
            unit, entries = self._unit, None   # nothing free, every call may share it
            slots = self._templates[unit]
            if self._free:
                slots = self.kernel._slot_type.from_buffer_copy(slots)
        else:
            prepared = self._arrays(args)
            if prepared is None:
                return self.kernel(*self._full(args))
            slots, unit, entries = prepared
        for i, dtype, bounds, off, bits, direct in self._free_scalars:
            x = args[i]
            if type(x) is int:
                if bounds is None or not bounds[0] <= x <= bounds[1]:
                    return self.kernel(*self._full(args))
                slots[off] = x if direct else bits(x)
            elif (isinstance(x, np.generic) or (type(x) is np.ndarray and x.ndim == 0)) \
                    and x.dtype == dtype:
                slots[off] = bits(x)
            else:
                return self.kernel(*self._full(args))
        kernel = self.kernel
        lowered, _, fn = kernel._variants.get(unit) or kernel._variant(unit)
        err = _ERR_BLOCK()
        status = fn(slots, kernel._parallel(), err)
        del entries                        # the free arrays and copies, alive until here
        if status != 0:
            info = lowered.kernels[kernel.func.sym_name]
            raise error_for_status(status, list(err), info.checks, info.guards)
        return None

    def _arrays(self, args):
        """(descriptor, stride unit, arrays to keep alive) with the free arrays written
        and the tensors copied that must be, or None when a free array is not one the
        short check takes."""
        entries = []
        local = None                       # sizes of symbols first seen in a free array
        for i, dtype, rank, want, buffer, slot in self._free_arrays:
            x = args[i]
            if type(x) is not np.ndarray or x.dtype != dtype or x.ndim != rank \
                    or (buffer and not (x.flags.writeable and (x.flags.c_contiguous
                                                               or not shares_elements(x)))):
                return None
            shape = x.shape
            for axis, d in want:
                if d.__class__ is str:
                    if local is None:
                        local = {}
                    d = local.setdefault(d, shape[axis])
                if d != shape[axis]:
                    return None
            entries.append((x, slot))
        if self._free_arrays:
            entries = self._snapshot(args, entries)
        for x, slot in self._copied:
            entries.append((x.copy(), slot))
        by_element = self._element and element_strides([x for x, _ in entries])
        unit = "element" if by_element else "byte"
        slots = self.kernel._slot_type.from_buffer_copy(self._templates[unit])
        write_arrays(slots, entries, by_element)
        return slots, unit, entries

    def _snapshot(self, args, entries):
        """``entries`` with each tensor that may overlap a buffer, where one of the two
        is free, replaced by a copy (so inputs are values and never written)."""
        share = np.may_share_memory
        free_buffers = [args[i] for i in self._free_buffers]
        buffers = self._bound_buffers + free_buffers
        tensors = set(self._free_tensors)
        out = []
        for (x, slot), (i, *_rest) in zip(entries, self._free_arrays):
            if i in tensors and any(share(x, b) for b in buffers):
                x = x.copy()
            out.append((x, slot))
        if free_buffers:
            for x, slot in self._bound_tensors:
                if any(share(x, b) for b in free_buffers):
                    out.append((x.copy(), slot))
        return out
