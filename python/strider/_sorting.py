"""Sorting, searching and scans: sort, argsort, lexsort, searchsorted, unique, cumsum, cumprod and
the accumulate of maximum and minimum. Each sorts or scans along the last axis in the runtime's
library (the axis is moved there by a view); the rest is broken down into the compiled ops and
the indexing primitives (_advanced)."""
import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from ._advanced import add_at, compress, count, getitem, setitem
from ._creation import empty, ones, zeros
from ._errors import unsupported
from ._indexing import assign
from ._reductions import _sum_dtype
from ._tracer import as_tracer, check_writeable, current_trace, emit, weak_type

I64 = np.dtype(np.int64)


def _along_last(name, t, axis, dtype):
    """name(t) along `axis`, computed along the last axis of a view that moves it there."""
    if axis is None:
        t = t.reshape(-1) if t.ndim != 1 else t
        axis = 0
    axis = normalize_axis_index(axis, t.ndim)
    perm = [d for d in range(t.ndim) if d != axis] + [axis]
    moved = t.transpose(perm)
    r = emit(name, [moved], moved.shape, dtype)
    if t.ndim == 1 and name in ("sort", "argsort"):
        current_trace().sorted[current_trace().value_key(r)] = (name, moved, False)
    return r.transpose(sorted(range(t.ndim), key=perm.__getitem__))


def _check_kind(kind):
    if kind not in (None, "quicksort", "mergesort", "heapsort", "stable"):
        raise ValueError(f"sort kind must be one of 'quick', 'heap', or 'stable' (got {kind!r})")


def argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    """Stable for every kind: NumPy's default (unstable) kinds leave the order of ties open."""
    if order is not None:
        raise unsupported("argsort(order=...)", "strider has no structured dtypes")
    _check_kind(kind)
    return _along_last("argsort", as_tracer(a), axis, I64)


def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    if order is not None:
        raise unsupported("sort(order=...)", "strider has no structured dtypes")
    _check_kind(kind)
    t = as_tracer(a)
    return _along_last("sort", t, axis, t.dtype)


def sort_inplace(a, axis=-1, kind=None, order=None, *, stable=None):
    check_writeable(a)
    assign(a, sort(a, axis, kind, order))


def lexsort(keys, axis=-1):
    """The last key sorts first: stable sorts by each key in turn, from the first."""
    keys = [as_tracer(k) for k in keys] if not hasattr(keys, "ndim") or keys.ndim > 1 else [as_tracer(keys)]
    if not keys:
        raise TypeError("need sequence of keys with len > 0 in lexsort")
    if any(k.ndim != 1 for k in keys) or axis not in (-1, 0):
        raise unsupported("np.lexsort of keys with more than one axis", "lexsort 1-d keys")
    order = argsort(keys[0], kind="stable")
    for k in keys[1:]:
        order = getitem(order, argsort(getitem(k, order), kind="stable"))
    return order


def searchsorted(a, v, side="left", sorter=None):
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right' (got {side!r})")
    t = as_tracer(a)
    if t.ndim != 1:
        raise ValueError("object too deep for desired array")
    if sorter is not None:
        t = getitem(t, as_tracer(sorter))
    dtype = np.result_type(t.dtype, weak_type(v))
    values = as_tracer(v, dtype)
    return emit("searchsorted", [t.astype(dtype, copy=False), values], values.shape, I64, axes=(int(side == "right"),),
                scalar=values.ndim == 0)


_SCANS = {"cumsum": np.add, "cumprod": np.multiply, "cummax": np.maximum, "cummin": np.minimum}


def _scan(name, a, axis, dtype, out):
    if out is not None:
        raise unsupported(f"np.{name}(out=...)", "assign the result")
    t = as_tracer(a)
    if name in ("cumsum", "cumprod"):
        dtype = _sum_dtype(t.dtype, dtype)  # NumPy's add.accumulate widens as its sum does
    elif dtype is not None:
        dtype = np.dtype(dtype)
    dtype = t.dtype if dtype is None else dtype
    if t.ndim == 0:
        t = t.reshape(1)
    return _along_last(name, t.astype(dtype, copy=False), axis, dtype)


def cumsum(a, axis=None, dtype=None, out=None):
    return _scan("cumsum", a, axis, dtype, out)


def cumprod(a, axis=None, dtype=None, out=None):
    return _scan("cumprod", a, axis, dtype, out)


def accumulate(uf, a, axis=0, dtype=None, out=None):
    """ufunc.accumulate of add, multiply, maximum and minimum."""
    name = next((n for n, f in _SCANS.items() if f is uf), None)
    if name is None:
        raise unsupported(f"np.{uf.__name__}.accumulate", "use np.cumsum, np.cumprod or np.maximum/minimum.accumulate")
    if as_tracer(a).dtype == np.bool_ and name in ("cumsum", "cumprod"):
        raise unsupported(f"np.{uf.__name__}.accumulate of bool", "cast to an integer dtype first")
    return _scan(name, a, axis, dtype, out)


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *, equal_nan=True,
           sorted=True):
    if axis is not None:
        raise unsupported("np.unique(axis=...)", "np.unique of the flattened array")
    t = as_tracer(ar)
    if t.is_dynamic:
        raise unsupported("np.unique of an array whose length is known only at run time",
                          "np.unique of a fixed-length array")
    flat = t.reshape(-1) if t.ndim != 1 else t
    perm = argsort(flat, kind="stable")
    aux = getitem(flat, perm)
    # where a new value starts in the sorted values
    mask = ones(flat.shape, np.bool_)
    if flat.shape[0] > 1:
        later = np.not_equal(aux[1:], aux[:-1])
        if equal_nan and aux.dtype.kind == "f":  # NaNs sort last: all but the first are repeats
            later = np.logical_and(later, np.logical_not(np.isnan(aux[1:])) | np.logical_not(np.isnan(aux[:-1])))
        mask[1:] = later
    out = [compress(mask, aux)]
    if return_index:
        out.append(compress(mask, perm))
    if return_inverse or return_counts:
        group = np.subtract(cumsum(mask), 1)
    if return_inverse:
        inverse = empty(flat.shape, I64)
        setitem(inverse, perm, group)
        out.append(inverse.reshape(t.shape) if t.ndim != 1 else inverse)
    if return_counts:
        counts = zeros((count(mask),), I64)
        add_at(counts, group, 1)
        out.append(counts)
    return out[0] if len(out) == 1 else tuple(out)
