"""np.delete, np.insert and np.append: new arrays assembled from pieces of old ones; np.putmask
and np.place: an array's masked elements written with values repeated as needed.

Where the positions are the caller's constants, NumPy's own function run on the positions of the
one axis decides the result (and raises NumPy's errors); the result is then a concatenation of
slices of the array and of the values (compiled copies), or one gather along the axis where the
pieces are many. Positions computed by the function (np.delete(order, np.where(ovr > t)[0]), as
NMS code writes it) become a mask over the axis, and the result has a run-time length."""
import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from ._advanced import _checked, _values, getitem, setitem
from ._creation import arange, ones
from ._errors import unsupported
from ._shapes import concatenate, copyto, flat_if_none
from ._tracer import IMPL, Extent, Tracer, TracedList, as_tracer, bound, check_writeable, concrete, holds_traced, written
from ._ufuncs import numpy_raises

# more pieces than this along the axis: one gather instead of a concatenation of slices
_MAX_PIECES = 8


def _constant(obj):
    """obj where tracing knows its value (the caller's constants, arrays made of literals); else
    None."""
    if isinstance(obj, Tracer):
        return concrete(obj)
    if isinstance(obj, (Extent, TracedList)) or isinstance(obj, (list, tuple)) and holds_traced(obj):
        return None
    return obj


def _single(obj, shown, n, axis, top):
    """NumPy's check of one int position in [-n, top] on `axis` (delete: top n-1, insert: n),
    the message showing `shown`."""
    if isinstance(obj, (bool, np.bool_)):
        return
    value = np.asarray(obj)
    if value.size == 1 and value.dtype.kind in "iu" and not -n <= int(value.reshape(-1)[0]) <= top:
        raise IndexError(f"index {shown} is out of bounds for axis {axis} with size {n}")


def _along(t, axis, key):
    return getitem(t, (slice(None),) * axis + (key,))


def _assemble(t, values, axis, positions):
    """The array whose slices along `axis` are t's (positions >= 0) and values' (-1 - j) in order."""
    from_values = positions < 0
    index = np.where(from_values, -1 - positions, positions)
    cuts = np.flatnonzero((np.diff(index) != 1) | (np.diff(from_values) != 0)) + 1
    starts, stops = [0, *cuts.tolist()], [*cuts.tolist(), len(positions)]
    if not len(positions):
        return concatenate([_along(t, axis, slice(0, 0))], axis=axis)
    if len(starts) > _MAX_PIECES:
        whole = t if values is None else concatenate([t, values], axis=axis)
        return _along(whole, axis, np.where(from_values, bound(t.shape[axis]) + index, index))
    return concatenate([_along(values if from_values[a] else t, axis, slice(index[a], index[b - 1] + 1))
                        for a, b in zip(starts, stops)], axis=axis)


def _flat_if_none(arr, axis):
    t, axis = flat_if_none(as_tracer(arr), axis)
    return t, normalize_axis_index(axis, t.ndim)


def delete(arr, obj, axis=None):
    t, axis = _flat_if_none(arr, axis)
    n = t.shape[axis]
    known = _constant(obj)
    if known is not None and not isinstance(n, Extent):
        obj = known
        if not isinstance(obj, slice) and np.size(obj) == 1:
            _single(obj, np.asarray(obj).reshape(-1)[0], n, axis, n - 1)
        return _assemble(t, None, axis, np.delete(np.arange(n), obj))
    # positions known when the function runs, or a run-time length: a mask over the axis
    if isinstance(obj, slice):
        raise unsupported("np.delete of a slice of an axis whose length is known only at run time",
                          "delete with an index array or a boolean mask")
    o = as_tracer(obj)
    if o.dtype == np.bool_:
        if o.ndim != 1 or (not isinstance(n, Extent) and o.shape[0] != n):
            raise ValueError("boolean array argument obj to delete must be one dimensional and match the axis "
                             f"length of {n}")
        keep = np.logical_not(o)
    else:
        if o.dtype.kind not in "iu":
            raise IndexError("arrays used as indices must be of integer (or boolean) type")
        if o.ndim == 0 and not isinstance(n, Extent):
            # one position: NumPy's result keeps a fixed length, n - 1
            at = np.arange(n - 1)
            return _along(t, axis, np.where(at >= _checked(o, n, axis), at + 1, at))
        keep = ones((n,), np.bool_)
        setitem(keep, o, False)
    return _along(t, axis, keep)


def insert(arr, obj, values, axis=None):
    t, axis = _flat_if_none(arr, axis)
    n = t.shape[axis]
    obj = _constant(obj)
    if obj is None:
        raise unsupported("np.insert at positions the function computes", "insert at constant positions")
    # into a run-time length, at its start alone (EasyOCR's np.insert(~(t[1:] == t[:-1]), 0, True)):
    # the values joined before it, a position that holds for every length
    if isinstance(n, Extent) and (isinstance(obj, slice) or np.size(obj) != 1 or np.asarray(obj).dtype == np.bool_
                                  or np.asarray(obj).reshape(-1)[0] != 0):
        raise unsupported("np.insert into an axis whose length is known only at run time, but at position 0",
                          "np.concatenate the pieces")
    v = written(values, t.dtype)
    indices = None if isinstance(obj, slice) else np.array(obj)
    if indices is not None and indices.dtype == np.bool_:
        if indices.ndim != 1:
            raise ValueError("boolean array argument obj to insert must be one dimensional")
        indices = np.flatnonzero(indices)
    elif indices is not None and indices.ndim > 1:
        raise ValueError("index array argument obj to insert must be one dimensional or scalar")
    shape = list(t.shape)
    if indices is not None and indices.size == 1:
        if not isinstance(n, Extent):
            _single(indices, obj, n, axis, n)
        v = v.reshape((1,) * (t.ndim - v.ndim) + v.shape) if v.ndim < t.ndim else v
        if indices.ndim == 0:  # NumPy moves a scalar position's values' first axis to `axis`
            v = np.moveaxis(v, 0, axis)
        shape[axis] = v.shape[axis]
    else:
        shape[axis] = len(np.arange(n)[obj]) if indices is None else indices.size
    v = _values(v, t.dtype, tuple(shape))
    if isinstance(n, Extent):
        return concatenate((v, t), axis=axis)
    positions = np.insert(np.arange(n), obj if indices is None else indices, -1 - np.arange(shape[axis]))
    return _assemble(t, v, axis, positions)


def append(arr, values, axis=None):
    t = as_tracer(arr)
    if axis is None:
        t, axis = flat_if_none(t, axis)
        values = as_tracer(values).reshape(-1)
    return concatenate((t, values), axis=axis)


def _masked_fill(fn, a, mask, values):
    """np.putmask's and np.place's arguments as NumPy takes them: the array (an ndarray, written
    in place), its mask converted to bools (nonzero is True) and taken in C order at its shape,
    and the values flattened in its dtype: an array must cast safely (TypeError otherwise), a
    number or a list converts as np.array(values, dtype) does (OverflowError for an int it
    cannot hold), a NumPy scalar unsafely."""
    name = fn.__name__
    if not isinstance(a, Tracer):
        raise TypeError(f"{name}() argument 1 must be numpy.ndarray, not {type(a).__name__}")
    check_writeable(a)
    m = as_tracer(mask)
    if a.is_dynamic or m.is_dynamic:
        raise unsupported(f"np.{name} of an array whose length is known only at run time",
                          "write through a mask with a[mask] = values")
    if m.size != a.size:
        raise ValueError(f"{name}: mask and data must be the same size")
    m = m.astype(np.bool_, copy=False).reshape(a.shape)
    if isinstance(values, Tracer):
        stand_in = values._weak(0) if values._weak else values.dtype.type(0) if values._scalar else np.zeros(
            (1,) * values.ndim, values.dtype)
        numpy_raises(fn, np.zeros(1, a.dtype), False, stand_in)
        v = written(values, a.dtype, "item") if values._weak else values.astype(a.dtype, copy=False)
    elif isinstance(values, (list, tuple)) and holds_traced(values):
        v = IMPL["array"](values, dtype=a.dtype)
    else:
        numpy_raises(fn, np.zeros(1, a.dtype), False, values)
        v = as_tracer(np.asarray(values, a.dtype))
    return a, m, v.reshape(-1)


def _write_cycled(a, m, v, k):
    """a's elements where m is True take v[k % len(v)], `k` making each element's flat k (an
    int64 array in a's C order) where v holds more than one value."""
    n = v.shape[0]
    if n > 1:
        v = getitem(v, k() % n).reshape(a.shape)
    copyto(a, v.reshape(()) if n == 1 else v, where=m)


def putmask(a, mask, values):
    """np.putmask: a's elements where mask is True take values[i % len(values)], i their C-order
    position in a; no values: nothing changes."""
    a, m, v = _masked_fill(np.putmask, a, mask, values)
    if v.shape[0]:
        _write_cycled(a, m, v, lambda: arange(a.size))


def place(arr, mask, vals):
    """np.place: the k-th element of arr where mask is True (in C order) takes vals[k % len(vals)];
    no vals where mask holds a True is NumPy's ValueError, raised before anything is written."""
    a, m, v = _masked_fill(np.place, arr, mask, vals)
    if not v.shape[0]:
        a._trace.check_assert(np.logical_not(np.any(m)), "Cannot insert from an empty array!", ValueError)
        return
    _write_cycled(a, m, v, lambda: np.cumsum(m.reshape(-1)) - 1)  # (the Trues before each)
