"""Shapes on Tracers: views (transpose, reshape, squeeze, flip, split, ...), joins (concatenate,
stack, meshgrid, tile, repeat), writes (copyto, fill) and static metadata."""
import builtins
import itertools
import math
import operator
import warnings

import numpy as np
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from . import _C, _ufuncs
from ._errors import UnsupportedError, trace_error, unsupported, user_location, where as user_line
from ._indexing import assign
from ._tracer import (IMPL, Extent, RunInNumPy, TracedRows, Tracer, arange_at, bound, reshape_units, as_tracer, check_dtype, check_writeable, contiguous, forgive,
                      current_trace, fresh, item_list, length_value, insertion_order, keep_order, known_by_static,
                      known_scalar, like_order, shape_of, check_fits)
from ._ufuncs import _NoValue, broadcast_shape, copy_, finish, normalize_axes, numpy_raises, promo_arg


def transpose(a, axes=None):
    t = as_tracer(a)
    if axes is None:
        perm = list(range(t.ndim))[::-1]
    else:
        if len(axes) != t.ndim:
            raise ValueError("axes don't match array")
        perm = [normalize_axis_index(operator.index(x), t.ndim) for x in axes]
        if len(set(perm)) != len(perm):
            raise ValueError("repeated axis in transpose")
    return t.view_of(t._view.transpose(perm))


def swapaxes(a, axis1, axis2):
    t = as_tracer(a)
    perm = list(range(t.ndim))
    i, j = normalize_axis_index(axis1, t.ndim), normalize_axis_index(axis2, t.ndim)
    perm[i], perm[j] = perm[j], perm[i]
    return t.view_of(t._view.transpose(perm))


def moveaxis(a, source, destination):
    t = as_tracer(a)
    src = normalize_axis_tuple(source, t.ndim, "source")
    dst = normalize_axis_tuple(destination, t.ndim, "destination")
    if len(src) != len(dst):
        raise ValueError("`source` and `destination` arguments must have the same number of elements")
    order = [n for n in range(t.ndim) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return t.view_of(t._view.transpose(order))


def _shape_arg(shape, what):
    dims = tuple(shape) if np.iterable(shape) and not isinstance(shape, Tracer) else (shape,)
    for d in dims:
        if isinstance(d, Tracer) and known_scalar(d) is None:
            raise known_by_static(d, f"a size of {what}", "sizes must be known while tracing")
    return tuple(d if isinstance(d, Extent) else operator.index(d) for d in dims)


def _infer_shape(shape, size):
    shape = list(shape)
    unknown = [i for i, d in enumerate(shape) if d == -1]
    if len(unknown) > 1:
        raise ValueError("can only specify one unknown dimension")
    if any(d < -1 for d in shape):
        raise ValueError("negative dimensions not allowed")
    known = math.prod([d for d in shape if d != -1])
    if unknown:
        if known == 0 or size % known:
            raise ValueError(f"cannot reshape array of size {size} into shape {tuple(shape)}")
        shape[unknown[0]] = size // known
    elif known != size:
        raise ValueError(f"cannot reshape array of size {size} into shape {tuple(shape)}")
    return shape


def _leading_view(t, dims):
    """The reshape as a view, as NumPy's, where t is C-contiguous and its run-time length is its
    first axis's, and so is the result's or its lengths are static: (n, 4) to (n * 2, 2) or
    (-1,), (n * 4, 2) to (n, 8), (n, 9) to (27,) (the caller checks the sizes agree); else None."""
    v = t._view
    if (t.ndim == 0 or any(isinstance(d, Extent) for d in t.shape[1:]) or not dims
            or any(isinstance(d, Extent) for d in dims[1:])):
        return None
    inner = math.prod(t.shape[1:])
    if list(v.strides) != [math.prod([bound(d) for d in t.shape[k + 1:]]) for k in range(t.ndim)]:
        return None
    tail = math.prod(dims[1:])
    if bound(dims[0]) * tail > bound(t.shape[0]) * inner:
        return None
    strides = [math.prod(dims[k + 1:]) for k in range(len(dims))]
    extents = [dims[0].storage] + [-1] * (len(dims) - 1) if isinstance(dims[0], Extent) else []
    return t.view_of(_C.View(v.storage, [bound(d) for d in dims], strides, v.offset, extents), scalar=t._scalar)


def _cancelled(have, want):
    """The -1 of `want` where its run-time lengths are those of `have` (matterport's masks of a
    run-time count, (h, w, n) to (-1, n)): the quotient of their static lengths, known while
    tracing; else None."""
    left = [d.storage for d in have if isinstance(d, Extent)]
    for d in want:
        if isinstance(d, Extent):
            if d.storage not in left:
                return None
            left.remove(d.storage)
    known = math.prod(d for d in have if not isinstance(d, Extent))
    given = math.prod(d for d in want if not isinstance(d, Extent) and d != -1)
    if left or not given or known % given:
        return None
    return known // given


def _reshape_at_run_time(t, shape):
    """A reshape of an array with run-time lengths that moves elements between axes ((n, 8) to
    (n * 4, 2), (4 * n,) to (4, n)): NumPy's C order keeps the flat sequence, so each element is
    gathered from the position its flat index has in t (a copy, where NumPy's may be a view: a
    result written through is refused by the checks on copies). A -1 is inferred when the
    function runs; the lengths are checked to hold t's elements then (NumPy's ValueError)."""
    if [d for d in shape if not isinstance(d, Extent) and d == -1][1:]:
        raise ValueError("can only specify one unknown dimension")
    if any(not isinstance(d, Extent) and d < -1 for d in shape):
        raise ValueError("negative dimensions not allowed")

    value = length_value
    size = math.prod([value(d) for d in t.shape])
    given = math.prod([value(d) for d in shape if isinstance(d, Extent) or d != -1])
    message = f"cannot reshape array of size (known at run time) into shape {tuple(shape)}"
    dims = list(shape)
    at = next((i for i, d in enumerate(shape) if not isinstance(d, Extent) and d == -1), None)
    if at is not None and (known := _cancelled(t.shape, shape)) is not None:
        dims[at] = known
        current_trace().check_assert(np.not_equal(given, 0), message, ValueError)  # (NumPy's -1 beside a 0)
    elif at is not None:
        given = np.maximum(given, 1)  # (0 elements into (-1, 0): NumPy's error, from the check below)
        dims[at] = Extent(math.prod([bound(d) for d in t.shape]) // max(1, math.prod(
            [d for d in shape if not isinstance(d, Extent) and d != -1])), (size // given).astype(np.int64)._view.storage)
        current_trace().check_assert(np.equal(size % given, 0), message, ValueError)
    else:
        current_trace().check_assert(np.equal(size, given), message, ValueError)
    view = _leading_view(t, dims)
    if view is not None:
        return view
    if not dims:  # a 0-d view of its one element (checked above), as NumPy's; t[0] is a scalar
        return t.view_of(_C.View(t._view.storage, [], [], t._view.offset, []))
    flat = 0
    for axis, d in enumerate(dims):  # each element's flat index, in dims' C order
        at = arange_at(0, 1, d).reshape((1,) * axis + (d,) + (1,) * (len(dims) - axis - 1))
        flat = np.add(flat, np.multiply(at, math.prod([value(e) for e in dims[axis + 1:]])))
    coords, inner = [], 1
    for d in reversed(t.shape):  # ... and its position in t
        coords.append(np.remainder(np.floor_divide(flat, inner), value(d)) if len(coords) < t.ndim - 1
                      else np.floor_divide(flat, inner))
        inner = np.multiply(inner, value(d))
    r = t[tuple(reversed(coords))]
    if t._view.is_c_contiguous:  # NumPy's is a view of it: neither is read after the other is written
        r._trace.copy_of_view(r, t)
    return r


def reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    t = as_tracer(a)
    if order == "A" or order == "K":
        order = "F" if t.ndim > 1 and transpose(t)._view.is_c_contiguous and not t._view.is_c_contiguous else "C"
    if order == "F":
        # Fortran order is C order on the reversed axes
        target = _infer_shape(_shape_arg(shape if shape is not None else newshape, "reshape"), t.size)
        return transpose(reshape(transpose(t), target[::-1], copy=copy))
    if order != "C":
        raise ValueError(f"order must be one of 'C', 'F', 'A', or 'K' (got {order!r})")
    if t.is_dynamic:
        target = _shape_arg(shape if shape is not None else newshape, "reshape")
        try:
            return reshape_units(t, target)
        except UnsupportedError as e:
            forgive(e)
            return _reshape_at_run_time(t, target)
    shape = _infer_shape(_shape_arg(shape if shape is not None else newshape, "reshape"), t.size)
    view = t._view.reshape(shape) if copy is not True else None
    if view is not None:
        return t.view_of(view)
    if copy is False:
        raise ValueError("Unable to avoid creating a copy while reshaping.")
    c = copy_(t, "C")
    return c.view_of(c._view.reshape(shape))


def ravel(a, order="C"):
    # NumPy's ravel is a view only of a C-contiguous array (F-contiguous for order F); else a copy
    t = as_tracer(a)
    if order == "K":
        # memory order: a view when the array is dense in some axis order with positive strides,
        # else a copy in the order NumPy's iterator walks it
        perm = sorted(range(t.ndim), key=lambda d: -abs(t._view.strides[d]))
        if not contiguous(t.shape, t._view.strides, perm):
            perm = keep_order([t], t.ndim)
        return ravel(transpose(t, perm), "C")
    if order == "A":
        order = "F" if t.ndim > 1 and transpose(t)._view.is_c_contiguous and not t._view.is_c_contiguous else "C"
    if order == "F":
        return ravel(transpose(t), "C")
    if order != "C":
        raise ValueError(f"order must be one of 'C', 'F', 'A', or 'K' (got {order!r})")
    return reshape(t if t._view.is_c_contiguous else copy_(t, "C"), -1)


def squeeze(a, axis=None):
    """np.squeeze. A run-time length NumPy may squeeze is kept: named by `axis`, it is checked to
    be 1 when the function runs (NumPy's ValueError); left to axis=None, the call runs in NumPy
    where it is 1 (NumPy's result has fewer axes there)."""
    t = as_tracer(a)
    trace = current_trace()
    if axis is None:
        axes = tuple(i for i, d in enumerate(t.shape) if not isinstance(d, Extent) and d == 1)
        for d in t.shape:
            if isinstance(d, Extent):
                trace.check_assert(np.not_equal(d.value(), 1), (
                    f"np.squeeze at {user_line()} of a length known only at run time, 1 when the function runs: "
                    "NumPy's result drops that axis, the compiled program's keeps it"), RunInNumPy)
        if not axes:
            return t
    else:
        axes = normalize_axis_tuple(axis, t.ndim)
        message = "cannot select an axis to squeeze out which has size not equal to one"
        if any(not isinstance(t.shape[i], Extent) and t.shape[i] != 1 for i in axes):
            raise ValueError(message)
        for i in axes:
            if isinstance(t.shape[i], Extent):
                trace.check_assert(np.equal(t.shape[i].value(), 1), message, ValueError)
        t = t[tuple(slice(None, 1) if i in axes and isinstance(d, Extent) else slice(None)
                    for i, d in enumerate(t.shape))]  # each such axis of 1 static length: a view
    return t.view_of(t._view.subscript([("i", 0, 0, 0) if i in axes else ("s", 0, 1, d)
                                        for i, d in enumerate(t.shape)]))


def expand_dims(a, axis):
    t = as_tracer(a)
    axes = normalize_axis_tuple(axis, t.ndim + (len(axis) if isinstance(axis, (tuple, list)) else 1))
    dims = iter(t.shape)
    items = [("n", 0, 0, 0) if i in axes else ("s", 0, 1, next(dims)) for i in range(t.ndim + len(axes))]
    return t.view_of(t._view.subscript(items))


def broadcast_to(array, shape, subok=False):
    t = as_tracer(array)
    shape = _shape_arg(shape, "np.broadcast_to")
    if any(not isinstance(d, Extent) and d < 0 for d in shape):
        raise ValueError("all elements of broadcast shape must be non-negative")
    if len(shape) >= t.ndim:
        t = _run_time_lengths_as(t, shape[len(shape) - t.ndim:])
    try:
        view = t._view.broadcast_to([bound(d) for d in shape], [d.storage if isinstance(d, Extent) else -1 for d in shape])
    except ValueError:
        raise ValueError(f"operands could not be broadcast together with remapped shapes [original->remapped]: "
                         f"{t.shape} and requested shape {shape}") from None
    return t.view_of(view, readonly="broadcast")


def as_strided(t, shape=None, strides=None, writeable=True):
    """numpy.lib.stride_tricks.as_strided of a traced array: a view of its memory with the shape
    and byte strides given (CenterNet's windows of a padded heatmap for its max pooling). One
    whose elements overlap is read-only (a write's order would be NumPy's loop's); one past the
    array's memory, where NumPy reads what lies there, is refused."""
    if t.is_dynamic:
        raise unsupported("as_strided of an array whose length is known only at run time", "slice it first")
    shape = t.shape if shape is None else tuple(operator.index(d) for d in shape)
    strides = t.strides if strides is None else tuple(operator.index(s) for s in strides)
    item = t.dtype.itemsize
    if len(strides) != len(shape) or any(s % item for s in strides) or any(d < 0 for d in shape):
        raise unsupported("as_strided with strides that are not multiples of the item size (or not one per axis)",
                          "give whole-element strides")
    steps = [s // item for s in strides]
    v = t._view
    if 0 not in shape:
        lo = v.offset + sum(s * (d - 1) for s, d in zip(steps, shape) if s < 0)
        hi = v.offset + sum(s * (d - 1) for s, d in zip(steps, shape) if s > 0)
        if lo < 0 or hi >= t._trace.graph.storage_size(v.storage):
            raise unsupported("as_strided reaching past the memory of the array it views (NumPy reads whatever "
                              "lies there)", "keep the view inside the array")
    reach, overlap = 1, False  # (sufficient: each axis, by |stride|, steps past all the ones inside it)
    for s, d in sorted(((abs(s), d) for s, d in zip(steps, shape) if d > 1)):
        overlap = overlap or s < reach
        reach += s * (d - 1)
    readonly = "as_strided" if not writeable else "overlap" if overlap else None  # (NumPy's error first)
    return t.view_of(_C.View(v.storage, list(shape), steps, v.offset), readonly=readonly or t._readonly)


def _run_time_lengths_as(t, lengths):
    """t read with the static lengths that its run-time ones must be, checked when the function
    runs (NumPy's ValueError where one differs; where t's is 1, NumPy broadcasts it: the call
    runs in NumPy)."""
    v = t._view
    if not t.is_dynamic:
        return t
    shape, extents = list(v.shape), list(v.extents)
    for i, (d, want) in enumerate(zip(t.shape, lengths)):
        if not isinstance(d, Extent) or isinstance(want, Extent):
            continue
        if bound(d) < want:
            raise unsupported(f"broadcasting an array of at most {bound(d)} rows (a run-time length) to {want}",
                              "broadcast it to a run-time length")
        _ufuncs.checked_equal(d.value(), want, "operands could not be broadcast together with remapped shapes "
                              f"[original->remapped]: (\x01) and requested shape ({want})")
        shape[i], extents[i] = want, -1
    return t.view_of(_C.View(v.storage, shape, list(v.strides), v.offset, extents), readonly=t._readonly)


def broadcast_arrays(*args, subok=False):
    ts = [as_tracer(a) for a in args]
    shape = broadcast_shape(*(t.shape for t in ts))
    return tuple(t if t.shape == shape else broadcast_to(t, shape) for t in ts)


def flip(m, axis=None):
    t = as_tracer(m)
    if t.ndim == 0:
        return t[()]
    axes = normalize_axes(t, axis)
    if any(isinstance(t.shape[i], Extent) for i in axes):  # reversed at a run-time length: the slice's copy
        return t[tuple(slice(None, None, -1) if i in axes else slice(None) for i in range(t.ndim))]
    return t.view_of(t._view.subscript([("s", d - 1, -1, d) if i in axes else ("s", 0, 1, d)
                                        for i, d in enumerate(t.shape)]))


def rot90(m, k=1, axes=(0, 1)):
    """np.rot90: a view, flips and a transpose in NumPy's order, with its errors."""
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    t = as_tracer(m)
    if axes[0] == axes[1] or abs(axes[0] - axes[1]) == t.ndim:
        raise ValueError("Axes must be different.")
    if builtins.any(a >= t.ndim or a < -t.ndim for a in axes):
        raise ValueError(f"Axes={axes} out of range for array of ndim={t.ndim}.")
    k = operator.index(k) % 4
    if k == 0:
        return t[:]
    if k == 2:
        return flip(flip(t, axes[0]), axes[1])
    order = list(range(t.ndim))
    order[axes[0]], order[axes[1]] = order[axes[1]], order[axes[0]]
    return transpose(flip(t, axes[1]), order) if k == 1 else flip(transpose(t, order), axes[1])


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """np.trace: the sum of the diagonal's elements, NumPy's add.reduce over its last axis."""
    return diagonal(a, offset, axis1, axis2).sum(-1, dtype=dtype, out=out)


def resize(a, new_shape):
    """np.resize: a's elements in C order repeated to fill new_shape (zeros where either is empty)."""
    shape = (new_shape,) if isinstance(new_shape, (int, np.integer)) else tuple(new_shape)
    t = ravel(as_tracer(a))
    if t.is_dynamic:
        raise unsupported("np.resize of an array whose length is known only at run time", "np.tile it")
    if builtins.any(operator.index(d) < 0 for d in shape):
        raise ValueError("all elements of `new_shape` must be non-negative")
    size = math.prod(shape)
    if t.size == 0 or size == 0:
        return copy_(broadcast_to(as_tracer(np.zeros((), t.dtype)), shape))
    return reshape(copy_(t[:size]) if size <= t.size else t[arange_at(0, 1, size) % t.size], shape)


def diagonal(a, offset=0, axis1=0, axis2=1):
    """np.diagonal (np.diag of a 2-d array): a read-only view, as NumPy's, its diagonal axis
    last."""
    t = as_tracer(a)
    if t.ndim < 2:
        raise ValueError("diag requires an array of at least two dimensions")
    a1, a2 = normalize_axis_index(axis1, t.ndim), normalize_axis_index(axis2, t.ndim)
    if a1 == a2:
        raise ValueError("axis1 and axis2 cannot be the same")
    if t.is_dynamic:
        raise unsupported("np.diagonal of an array whose length is known only at run time", "slice it first")
    return t.view_of(diagonal_view(t, offset, a1, a2), readonly="diagonal")


def diagonal_view(t, offset, a1, a2):
    """The View of t's diagonal at `offset` over axes a1 and a2 (static lengths)."""
    v = t._view
    n1, n2 = t.shape[a1], t.shape[a2]
    first, second = (0, offset) if offset >= 0 else (-offset, 0)
    n = builtins.max(0, builtins.min(n1 - first, n2 - second))
    start = v.offset + (first * v.strides[a1] + second * v.strides[a2] if n else 0)
    rest = [d for d in range(t.ndim) if d not in (a1, a2)]
    return _C.View(v.storage, [t.shape[d] for d in rest] + [n], [v.strides[d] for d in rest]
                   + [v.strides[a1] + v.strides[a2]], start)


def fliplr(m):
    t = as_tracer(m)
    if t.ndim < 2:
        raise ValueError("Input must be >= 2-d.")
    return flip(t, 1)


def flipud(m):
    t = as_tracer(m)
    if t.ndim < 1:
        raise ValueError("Input must be >= 1-d.")
    return flip(t, 0)


def _atleast(nd, arys):
    out = []
    for a in arys:
        t = as_tracer(a)
        if t.ndim < nd:
            if nd == 3 and t.ndim == 1:
                t = t[None, :, None]
            elif nd == 3 and t.ndim == 2:
                t = t[:, :, None]
            else:
                t = t.reshape((1,) * (nd - t.ndim) + t.shape)
        out.append(t)
    return out[0] if len(out) == 1 else tuple(out)


def atleast_1d(*arys):
    return _atleast(1, arys)


def atleast_2d(*arys):
    return _atleast(2, arys)


def atleast_3d(*arys):
    return _atleast(3, arys)


def _as_array(t):
    """t, where it is a traced NumPy scalar or Python number, as the 0-d array np.array, np.asarray
    and np.cross make of one."""
    return t.view_of(t._view) if t._scalar or t._weak is not None else t


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """np.cross as numpy/_core/numeric.py computes it: in the promoted dtype, each component the
    difference of its two products (a component of a 2-vector is 0: one product, negated where
    NumPy negates it); two 2-vectors give the 0-d or n-d array of the third component."""
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = as_tracer(a), as_tracer(b)
    if a.ndim < 1 or b.ndim < 1:
        raise ValueError("At least one array has zero dimension")
    a = moveaxis(a, normalize_axis_index(axisa, a.ndim, msg_prefix="axisa"), -1)
    b = moveaxis(b, normalize_axis_index(axisb, b.ndim, msg_prefix="axisb"), -1)
    na, nb = a.shape[-1], b.shape[-1]
    if isinstance(na, Extent) or isinstance(nb, Extent):
        raise unsupported("np.cross of vectors of a run-time length", "give the vectors 2 or 3 components known while tracing")
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError("incompatible dimensions for cross product\n(dimension must be 2 or 3)")
    if 2 in (na, nb):
        # NumPy 2.5 refuses 2-vectors (ValueError): the installed NumPy's error, or its warning
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            np.cross(np.ones(na), np.ones(nb))
        warnings.warn_explicit("Arrays of 2-dimensional vectors are deprecated. Use arrays of 3-dimensional vectors "
                               "instead. (deprecated in NumPy 2.0)", DeprecationWarning, *user_location())
    rows = broadcast_shape(a.shape[:-1], b.shape[:-1])
    dtype = np.promote_types(a.dtype, b.dtype)
    a, b = a.astype(dtype), b.astype(dtype)
    (a0, a1, a2), (b0, b1, b2) = ([t[..., k] if k < n else None for k in range(3)] for t, n in ((a, na), (b, nb)))
    z = a0 * b1 - a1 * b0
    if na == nb == 2:
        return _as_array(z)
    axisc = normalize_axis_index(axisc, len(rows) + 1, msg_prefix="axisc")
    if na == 2:
        x, y = a1 * b2, -(a0 * b2)
    elif nb == 2:
        x, y = -(a2 * b1), a2 * b0
    else:
        x, y = a1 * b2 - a2 * b1, a2 * b0 - a0 * b2
    return moveaxis(stack([broadcast_to(c, rows) for c in (x, y, z)], axis=-1), -1, axisc)


def diff(a, n=1, axis=-1, prepend=_NoValue, append=_NoValue):
    if n == 0:
        return a
    if n < 0:
        raise ValueError("order must be non-negative but got " + repr(n))
    t = as_tracer(a)
    if t.ndim == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    axis = normalize_axis_index(axis, t.ndim)
    ends = []
    for end in (prepend, append):  # NumPy's: a 0-d end is a slab of length 1 along axis
        if end is not _NoValue:
            e = as_tracer(end)
            ends.append(broadcast_to(e, t.shape[:axis] + (1,) + t.shape[axis + 1:]) if e.ndim == 0 else e)
    if ends:
        t = concatenate(ends[:1] + [t] + ends[1:] if prepend is not _NoValue else [t] + ends, axis)
    head = (slice(None),) * axis
    for _ in range(n):
        t = np.not_equal(t[head + (slice(1, None),)], t[head + (slice(None, -1),)]) if t.dtype == np.bool_ \
            else np.subtract(t[head + (slice(1, None),)], t[head + (slice(None, -1),)])
    return t


def ediff1d(ary, to_end=None, to_begin=None):
    """np.ediff1d: the flattened array's differences in its dtype (bools raise subtract's
    TypeError), between to_begin and to_end flattened, which must cast to that dtype same_kind."""
    t = as_tracer(ary).reshape(-1)
    ends = {}
    for name, end in (("to_begin", to_begin), ("to_end", to_end)):
        if end is None:
            continue
        e = as_tracer(end)
        if not np.can_cast(e.dtype, t.dtype, casting="same_kind"):
            raise TypeError(f"dtype of `{name}` must be compatible with input `ary` under the `same_kind` rule.")
        ends[name] = e.astype(t.dtype).reshape(-1)
    parts = [ends["to_begin"]] if "to_begin" in ends else []
    parts.append(np.subtract(t[1:], t[:-1]))
    if "to_end" in ends:
        parts.append(ends["to_end"])
    return concatenate(parts) if len(parts) > 1 else parts[0]


def roll(a, shift, axis=None):
    """np.roll as NumPy writes it: each axis's two pieces written into a new array of a's layout."""
    t = as_tracer(a)
    if axis is None:
        if t.is_dynamic:
            raise unsupported("np.roll of a flattened array whose length is known only at run time",
                              "roll along an axis (axis=0)")
        return roll(t.ravel(), shift, 0).reshape(t.shape)
    axes = normalize_axis_tuple(axis, t.ndim, allow_duplicate=True)
    pairs = np.broadcast(shift, axes)
    if pairs.ndim > 1:
        raise ValueError("'shift' and 'axis' should be scalars or 1D sequences")
    shifts = dict.fromkeys(range(t.ndim), 0)
    for sh, ax in pairs:
        shifts[ax] += operator.index(sh)
    rolls = [((slice(None), slice(None)),)] * t.ndim
    order = like_order(t)
    for ax, offset in shifts.items():
        n = t.shape[ax]
        if isinstance(n, Extent):
            if offset:  # a length only the run knows: element i reads element (i - offset) mod n
                at = np.mod(np.subtract(arange_at(0, 1, n), offset), np.maximum(n.value(), 1))
                t = IMPL["take"](t, at, axis=ax)
            continue
        offset %= n or 1  # (nothing moves in an empty array)
        if offset:
            rolls[ax] = ((slice(None, -offset), slice(offset, None)), (slice(-offset, None), slice(None, offset)))
    result = fresh(t.shape, t.dtype, order)
    for indices in itertools.product(*rolls):
        src, dst = zip(*indices)
        assign(result[dst], t[src])
    return result


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """NumPy's trapezoid as numpy/lib/_function_base_impl.py writes it: the sum along axis of
    the spacing times the mean of neighbouring values (YOLOv5's compute_ap)."""
    y = as_tracer(y)
    if x is None:
        d = dx
    else:
        x = as_tracer(x)
        if x.ndim == 1:
            d = diff(x)
            shape = [1] * y.ndim
            shape[axis] = d.shape[0]
            d = d.reshape(shape)
        else:
            d = diff(x, axis=axis)
    after, before = [slice(None)] * y.ndim, [slice(None)] * y.ndim
    after[axis], before[axis] = slice(1, None), slice(None, -1)
    return (d * (y[tuple(after)] + y[tuple(before)]) / 2.0).sum(axis)

def convolve(a, v, mode="full"):
    """np.convolve as numpy/_core/numeric.py writes it: the longer operand correlated with the
    shorter one reversed."""
    a, v = _operands_1d(a, v, "np.convolve")
    if v.shape[0] > a.shape[0]:
        a, v = v, a
    return _correlate(a, v[::-1], mode)


def correlate(a, v, mode="valid"):
    """np.correlate: where v is the longer, NumPy correlates it with a and reverses the result."""
    a, v = _operands_1d(a, v, "np.correlate")
    return _correlate(v, a, mode)[::-1] if v.shape[0] > a.shape[0] else _correlate(a, v, mode)


def _operands_1d(a, v, what):
    a, v = as_tracer(a), as_tracer(v)
    if a.ndim > 1 or v.ndim > 1:
        raise ValueError("object too deep for desired array")
    a, v = a.reshape(-1) if not a.ndim else a, v.reshape(-1) if not v.ndim else v
    if a.is_dynamic or v.is_dynamic:
        raise unsupported(f"{what} of an array whose length is known only at run time", "pad it to a length known "
                          "while tracing")
    if a.shape[0] == 0:
        raise ValueError("a cannot be empty" if what == "np.convolve" else "first array argument cannot be empty")
    if v.shape[0] == 0:
        raise ValueError("v cannot be empty" if what == "np.convolve" else "second array argument cannot be empty")
    return a, v


def _correlate(a, v, mode):
    """out[k] = sum_j a[k + j - left] * v[j] over len(a) >= len(v), a padded with zeros by
    `left` and `right` as NumPy's _pyarray_correlate pads it, the products added in j order (NumPy
    adds them with its dtype's dot loop, BLAS for floats: within a few ulps)."""
    n, m = a.shape[0], v.shape[0]
    # the modes this NumPy accepts, and its errors for the others, are its own: the length of its
    # result on two small arrays says which mode it is
    mode = {2: 0, 3: 1, 4: 2}[len(np.correlate(np.zeros(3), np.zeros(2), mode))]
    left = (0, m // 2, m - 1)[mode]
    right = (0, m - m // 2 - 1, m - 1)[mode]
    dtype = result_type(a, v)
    if left or right:
        zeros = np.zeros(1, dtype=a.dtype)
        a = concatenate([broadcast_to(zeros, (left,)), a, broadcast_to(zeros, (right,))])
    count = n + left + right - m + 1
    out = None
    for j in range(m):
        term = np.multiply(a[j:j + count], v[j], dtype=dtype)
        out = term if out is None else np.add(out, term, dtype=dtype)
    return out


def triu(m, k=0):
    """NumPy's triu: zero below the k-th diagonal of the last two axes (a 1-d m is the row of
    each of len(m) rows), as np.where with np.tri's mask, in m's dtype."""
    return _triangle(m, k, upper=True)


def tril(m, k=0):
    return _triangle(m, k, upper=False)


def _triangle(m, k, upper):
    t = as_tracer(m)
    rows_cols = t.shape[-2:]
    if builtins.any(isinstance(d, Extent) for d in rows_cols):
        raise unsupported(f"np.{'triu' if upper else 'tril'} of an array whose length is known only at run time",
                          "select with np.where and a mask of np.arange's")
    k = operator.index(k)
    mask = np.tri(*rows_cols, k=k - 1 if upper else k, dtype=np.bool_)
    zero = np.zeros(1, t.dtype)
    return _ufuncs.where(mask, zero, t) if upper else _ufuncs.where(mask, t, zero)


def copyto(dst, src, casting="same_kind", where=True):
    if not isinstance(dst, Tracer):
        raise unsupported("np.copyto into an array created outside the compiled function",
                          "pass it as an argument")
    check_writeable(dst)
    if isinstance(src, Tracer) and src._weak:  # a traced Python number: NumPy's rule for one of its type
        numpy_raises(np.copyto, np.zeros((), dst.dtype), src._weak(0), casting=casting)
        check_fits(src, dst.dtype)
    elif isinstance(src, Tracer):
        if not np.can_cast(src.dtype, dst.dtype, casting):
            raise TypeError(f"Cannot cast array data from {src.dtype!r} to {dst.dtype!r} according to the "
                            f"rule {casting!r}")
    else:
        numpy_raises(np.copyto, np.zeros((), dst.dtype), src, casting=casting)
    if where is not True:
        # elements where the mask is False keep their value: write them back unchanged
        src = _ufuncs.where(where, as_tracer(src, dst.dtype), dst)
    assign(dst, src)


def fill(t, value):
    assign(t, value, "item")


def flat_if_none(t, axis):
    """t and axis, or t flattened and 0 where axis is None (NumPy's axis=None)."""
    return (t.reshape(-1) if t.ndim != 1 else t, 0) if axis is None else (t, axis)


def _sorted_stride_perm(ts, nd):
    """The axes of a join's result, outermost first, laid out as its inputs are: NumPy's
    PyArray_CreateMultiSortedStridePerm, from C order by |stride|, axes of length 1 saying
    nothing, C order where inputs disagree."""
    def unit(t, a):
        return not isinstance(t.shape[a], Extent) and t.shape[a] == 1

    return insertion_order(list(range(nd)), lambda a0, a1: [
        None if unit(t, a0) or unit(t, a1) else abs(t._view.strides[a0]) > abs(t._view.strides[a1]) for t in ts])


def _holding(ts, axis, length):
    """The index of the first array whose axis has the length (an Extent's storage, or an int)."""
    def holds(d):
        if isinstance(length, Extent):
            return isinstance(d, Extent) and d.storage == length.storage
        return not isinstance(d, Extent) and d == length
    return next(i for i, t in enumerate(ts) if holds(t.shape[axis]))


def _filled_items(lst, empty):
    """The items of a list a loop filled with arrays of one shape (a TracedList), as one array
    of run-time length, checked to hold one at least when the function runs (NumPy's `empty`
    ValueError otherwise)."""
    t = lst.array()
    t._trace.check_assert(np.greater(t.shape[0].value(), 0), empty, ValueError)
    return t


def _at_least(t, ndim):
    """A TracedList's items as np.atleast_1d/2d makes each: unit axes in front of them."""
    return t[(slice(None),) + (None,) * builtins.max(0, ndim - (t.ndim - 1))]


def _items_along(t, axis, dtype, casting):
    """np.concatenate of a TracedList's items `t` (the list's array) along `axis` of an item: the
    items' axis moved there and merged with it (a copy in C order, then a view whose run-time
    length is the product)."""
    if t.ndim == 1:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    dt = check_dtype(dtype if dtype is not None else t.dtype, "np.concatenate")
    if not np.can_cast(t.dtype, dt, casting):
        raise TypeError(f"Cannot cast array data from {t.dtype!r} to {dt!r} according to the rule {casting!r}")
    moved = moveaxis(t, 0, 0 if axis is None else normalize_axis_index(axis, t.ndim - 1))
    c = fresh(moved.shape, dt)
    assign(c, moved)
    v = c._view
    if axis is None:  # every item flattened: the copy's C order read as (length, item size)
        v = _C.View(v.storage, [v.shape[0], math.prod(v.shape[1:])], [v.strides[0], 1], v.offset, [v.extents[0], -1])
        axis = 0
    axis = normalize_axis_index(axis, len(v.shape) - 1)
    total = np.multiply(c.shape[axis].value(), np.int64(v.shape[axis + 1]))
    return c.view_of(_C.View(v.storage, v.shape[:axis] + [v.shape[axis] * v.shape[axis + 1]] + v.shape[axis + 2:],
                             v.strides[:axis] + [v.strides[axis + 1]] + v.strides[axis + 2:], v.offset,
                             v.extents[:axis] + [total._view.storage] + v.extents[axis + 2:]))


def concatenate(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    if item_list(arrays):  # arrays of one shape, as many as the run appended
        items = _filled_items(arrays, "need at least one array to concatenate")
        return finish(_items_along(items, axis, dtype, casting), out, None)
    if isinstance(arrays, TracedRows):  # its arrays' rows, one after another; none raises when the function runs
        if axis not in (0, None) and axis != -arrays.data.ndim:
            raise trace_error(f"np.concatenate along axis {axis} of a list of arrays of run-time lengths",
                              "concatenate along axis 0, the axis the lengths run along")
        arrays.data._trace.check_assert(np.greater(arrays.size().value(), 0), "need at least one array to concatenate",
                                        ValueError)
        arrays = [arrays.joined()]
    ts = [as_tracer(a) for a in arrays]
    if not ts:
        raise ValueError("need at least one array to concatenate")
    if axis is None:
        ts = [t.reshape(-1) for t in ts]
        axis = 0
    if builtins.any(t.ndim == 0 for t in ts):
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    nd = ts[0].ndim
    axis = normalize_axis_index(axis, nd)
    for i, t in enumerate(ts[1:], 1):
        if t.ndim != nd:
            raise ValueError("all the input array dimensions except for the concatenation axis must match "
                             f"exactly, but the array at index 0 has {nd} dimension(s) and the array at index "
                             f"{i} has {t.ndim} dimension(s)")
    for d in range(nd):
        if d != axis:
            ts = _ufuncs.one_length(ts, lambda t: d, lambda first, other: (
                "all the input array dimensions except for the concatenation axis must match exactly, but along "
                f"dimension {d}, the array at index {_holding(ts, d, first)} has size \x01 and the array at index "
                f"{_holding(ts, d, other)} has size \x02"))
    for i, t in enumerate(ts[1:], 1):
        for d in range(nd):
            if d != axis and t.shape[d] != ts[0].shape[d]:
                raise ValueError("all the input array dimensions except for the concatenation axis must match "
                                 f"exactly, but along dimension {d}, the array at index 0 has size "
                                 f"{ts[0].shape[d]} and the array at index {i} has size {t.shape[d]}")
    dt = check_dtype(dtype if dtype is not None else np.result_type(*[t.dtype for t in ts]), "np.concatenate")
    for t in ts:
        if not np.can_cast(t.dtype, dt, casting):
            raise TypeError(f"Cannot cast array data from {t.dtype!r} to {dt!r} according to the rule {casting!r}")
    shape = list(ts[0].shape)
    if builtins.any(isinstance(t.shape[axis], Extent) for t in ts):
        return finish(_join_at_run_time(ts, axis, dt, shape), out, None)
    shape[axis] = builtins.sum(t.shape[axis] for t in ts)
    result = fresh(shape, dt, _sorted_stride_perm(ts, nd))
    off = 0
    for t in ts:
        n = t.shape[axis]
        assign(result[(slice(None),) * axis + (slice(off, off + n),)], t)
        off += n
    trace = current_trace()
    spans = [trace.ranges.get(t._view.storage) for t in ts]
    if dt.kind in "iu" and builtins.all(r is not None for r in spans):  # np.argwhere's columns: bincount can bound them
        trace.ranges[result._view.storage] = (builtins.min(r[0] for r in spans), builtins.max(r[1] for r in spans))
    return finish(result, out, None)


def _join_at_run_time(ts, axis, dt, shape):
    """np.concatenate along an axis whose length is known only at run time: each piece's rows
    written (put) at its run-time offset, the lengths summed into the result's Extent."""
    trace = current_trace()
    lengths = [t.shape[axis].value() if isinstance(t.shape[axis], Extent) else trace.const(np.int64(t.shape[axis]))
               for t in ts]
    total = lengths[0]
    for n in lengths[1:]:
        total = np.add(total, n)
    shape[axis] = Extent(builtins.sum(bound(t.shape[axis]) for t in ts), total._view.storage)
    front = [axis] + [d for d in range(len(shape)) if d != axis]
    dest = fresh(shape, dt)
    rows = dest.transpose(front)
    offset = trace.const(np.int64(0))
    for t, n in zip(ts, lengths):
        at = arange_at(offset, 1, t.shape[axis])
        trace.op("put", [at, t.astype(dt, copy=False).transpose(front)], rows._view)
        offset = np.add(offset, n)
    return dest


def stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    if item_list(arrays) and out is None and dtype is None:
        arrays = arrays.array()  # (stacked below as an array of a run-time length)
    if isinstance(arrays, Tracer) and arrays.ndim and isinstance(arrays.shape[0], Extent) and out is None and dtype is None:
        # NumPy stacks an array's rows (ipazc's MTCNN: np.stack of a mask's rows): the array
        # with its first axis moved to `axis`, a copy; none to stack raises when the function runs
        arrays._trace.check_assert(np.greater(arrays.shape[0].value(), 0), "need at least one array to stack",
                                   ValueError)
        return copy_(moveaxis(arrays, 0, normalize_axis_index(axis, arrays.ndim)))
    ts = [as_tracer(a) for a in arrays]
    if not ts:
        raise ValueError("need at least one array to stack")
    if builtins.any(t.ndim != ts[0].ndim for t in ts):
        raise ValueError("all input arrays must have the same shape")
    for d in range(ts[0].ndim):
        ts = _ufuncs.one_length(ts, lambda t: d, lambda first, other: "all input arrays must have the same shape")
    if builtins.any(t.shape != ts[0].shape for t in ts):
        raise ValueError("all input arrays must have the same shape")
    axis = normalize_axis_index(axis, ts[0].ndim + 1)
    expanded = [t[(slice(None),) * axis + (None,)] for t in ts]
    return concatenate(expanded, axis, out, dtype=dtype, casting=casting)


def hstack(tup, *, dtype=None, casting="same_kind"):
    if item_list(tup):
        items = _at_least(_filled_items(tup, "need at least one array to concatenate"), 1)
        return _items_along(items, 0 if items.ndim == 2 else 1, dtype, casting)
    if isinstance(tup, TracedRows) and tup.data.ndim == 1:  # 1-d arrays: one after another
        return concatenate(tup, 0, dtype=dtype, casting=casting)
    arrs = [atleast_1d(a) for a in tup]
    return concatenate(arrs, 0 if arrs and arrs[0].ndim == 1 else 1, dtype=dtype, casting=casting)


def vstack(tup, *, dtype=None, casting="same_kind"):
    if item_list(tup):
        return _items_along(_at_least(_filled_items(tup, "need at least one array to concatenate"), 2), 0, dtype,
                            casting)
    if isinstance(tup, TracedRows) and tup.data.ndim > 1:  # arrays of rows: one after another
        return concatenate(tup, 0, dtype=dtype, casting=casting)
    return concatenate([atleast_2d(a) for a in tup], 0, dtype=dtype, casting=casting)


def dstack(tup):
    return concatenate([atleast_3d(a) for a in tup], 2)


def column_stack(tup):
    arrs = []
    for a in tup:
        t = as_tracer(a)
        arrs.append(t[:, None] if t.ndim < 2 else t)
    return concatenate(arrs, 1)


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    ndim = len(xi)
    s0 = (1,) * ndim
    output = [as_tracer(x).reshape(s0[:i] + (-1,) + s0[i + 1:]) for i, x in enumerate(xi)]
    if indexing == "xy" and ndim > 1:
        output[0] = output[0].reshape((1, -1) + s0[2:])
        output[1] = output[1].reshape((-1, 1) + s0[2:])
    if not sparse:
        output = list(broadcast_arrays(*output))
    if copy:
        output = [copy_(x) for x in output]
    return tuple(output)


def tile(A, reps):
    t = as_tracer(A)
    tup = tuple(operator.index(r) for r in reps) if np.iterable(reps) else (operator.index(reps),)
    if builtins.any(r < 0 for r in tup):
        raise ValueError("negative dimensions are not allowed")
    if t.is_dynamic:
        return _tiled_at_run_time(t, tup)
    c = t.reshape((1,) * (len(tup) - t.ndim) + t.shape) if len(tup) > t.ndim else t
    tup = (1,) * (c.ndim - len(tup)) + tup
    shape, strides = [], []
    for r, d, s in zip(tup, c.shape, c._view.strides):
        shape += [r, d]
        strides += [0, s]
    result = fresh(tuple(r * d for r, d in zip(tup, c.shape)), t.dtype)
    assign(result.view_of(result._view.reshape(shape)), c.view_of(_C.View(c._view.storage, shape, strides, c._view.offset)))
    return result


def _tiled_at_run_time(t, tup):
    """np.tile of an array with a run-time length (MTCNN's np.tile(scores[keep], (5, 1))): axes of
    length 1 broadcast to their count, others join that many copies (none: an empty slice), then
    a copy in C order."""
    c = t[(None,) * builtins.max(0, len(tup) - t.ndim)]
    tup = (1,) * (c.ndim - len(tup)) + tup
    for a, r in enumerate(tup):
        if r == 0:
            c = c[(slice(None),) * a + (slice(0, 0),)]
        elif r > 1 and not isinstance(c.shape[a], Extent) and c.shape[a] == 1:
            c = broadcast_to(c, c.shape[:a] + (r,) + c.shape[a + 1:])
        elif r > 1:
            c = concatenate([c] * r, axis=a)
    result = fresh(c.shape, t.dtype)
    assign(result, c)
    return result


def repeat(a, repeats, axis=None):
    t = as_tracer(a)
    if axis is None:
        t = t.reshape(-1)
        axis = 0
    axis = normalize_axis_index(axis, t.ndim)
    n = t.shape[axis]
    if isinstance(repeats, Extent) or (isinstance(repeats, Tracer) and repeats.ndim == 0):
        (repeats,) = _shape_arg(repeats, "np.repeat's count")
        if isinstance(repeats, Extent):
            return _repeated_by_run_time_count(t, repeats, axis)
    if np.ndim(repeats) == 0:
        reps = [operator.index(repeats)] * n
    else:
        reps = [operator.index(r) for r in repeats]
        if len(reps) == 1:
            reps = reps * n
        elif len(reps) != n:
            raise ValueError(f"operands could not be broadcast together with shape ({n},) ({len(reps)},)")
    if builtins.any(r < 0 for r in reps):
        raise ValueError("repeats may not contain negative values.")
    shape = list(t.shape)
    shape[axis] = builtins.sum(reps)
    result = fresh(shape, t.dtype)
    head = (slice(None),) * axis
    if len(set(reps)) == 1 and n:
        r = reps[0]
        expanded = t[head + (slice(None), None)]
        wide = expanded.shape[:axis + 1] + (r,) + expanded.shape[axis + 2:]
        assign(result.reshape(wide), expanded.broadcast_to(wide))
        return result
    off = 0
    for i, r in enumerate(reps):
        if r:
            assign(result[head + (slice(off, off + r),)], t[head + (slice(i, i + 1),)])
        off += r
    return result


def _repeated_by_run_time_count(t, count, axis):
    """np.repeat(t, count, axis) with a count known only at run time (EfficientDet's
    np.repeat(image_id, len(keep))): each element `count` times, gathered, a run-time length."""
    n = t.shape[axis]
    if isinstance(n, Extent):
        raise unsupported("np.repeat by a count known only when the function runs of an array whose length along "
                          "the axis is known only then too", "np.repeat(x[:, None], ...) of a fixed length")
    at = np.floor_divide(arange_at(0, 1, count * n), count.value())  # (a length times an int: a length)
    return t[(slice(None),) * axis + (at,)]


def array_split(ary, indices_or_sections, axis=0):
    t = as_tracer(ary)
    n = t.shape[axis]
    if np.ndim(indices_or_sections) == 0:
        sections = operator.index(indices_or_sections)
        if sections <= 0:
            raise ValueError("number sections must be larger than 0.")
        each, extras = divmod(n, sections)
        sizes = [0] + extras * [each + 1] + (sections - extras) * [each]
        points = list(np.cumsum(sizes))
    else:
        points = [0] + [operator.index(i) for i in indices_or_sections] + [n]
    moved = swapaxes(t, axis, 0)
    return [swapaxes(moved[points[i]:points[i + 1]], axis, 0) for i in range(len(points) - 1)]


def split(ary, indices_or_sections, axis=0):
    if np.ndim(indices_or_sections) == 0 and as_tracer(ary).shape[axis] % operator.index(indices_or_sections):
        raise ValueError("array split does not result in an equal division")
    return array_split(ary, indices_or_sections, axis)


def hsplit(ary, indices_or_sections):
    t = as_tracer(ary)
    if t.ndim == 0:
        raise ValueError("hsplit only works on arrays of 1 or more dimensions")
    return split(t, indices_or_sections, 1 if t.ndim > 1 else 0)


def vsplit(ary, indices_or_sections):
    t = as_tracer(ary)
    if t.ndim < 2:
        raise ValueError("vsplit only works on arrays of 2 or more dimensions")
    return split(t, indices_or_sections, 0)


def dsplit(ary, indices_or_sections):
    t = as_tracer(ary)
    if t.ndim < 3:
        raise ValueError("dsplit only works on arrays of 3 or more dimensions")
    return split(t, indices_or_sections, 2)


def shape(a):
    return shape_of(a)


def ndim(a):
    return len(shape_of(a))


def size(a, axis=None):
    s = shape_of(a)
    return math.prod(s) if axis is None else s[axis]


def result_type(*arrays_and_dtypes):
    return np.result_type(*[promo_arg(x) if isinstance(x, Tracer) else x for x in arrays_and_dtypes])
