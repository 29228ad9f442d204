"""Sorting, searching and scans: sort, argsort, lexsort, searchsorted, unique, cumsum, cumprod and
the accumulate of maximum and minimum. Each sorts or scans along
the last axis in the runtime's library (the axis is moved there by a view); the rest is broken
down into the compiled ops and the indexing primitives (_advanced)."""
import math

import numpy as np
from numpy._core.multiarray import _monotonicity as _numpy_monotonicity
from numpy.lib.array_utils import normalize_axis_index

from ._advanced import compress, count, getitem, setitem, ufunc_at
from ._creation import empty, zeros
from ._errors import unsupported, where as user_line
from ._indexing import assign
from ._reductions import _sum_dtype, _without_nan
from ._shapes import flat_if_none
from ._tracer import (Extent, RunInNumPy, Tracer, arange_at, as_tracer, check_writeable, concrete, current_trace, emit,
                      like_order, same_shape, weak_type)
from ._ufuncs import checked_equal, one_length

I64 = np.dtype(np.int64)
# NumPy 2.5 halves the whole range for each value searched, where earlier NumPys narrow the range
# from the last value's: the same places in a sorted array, not in an unsorted one, where a
# searchsorted gives the installed NumPy's (one search tells the two apart)
HALVING_SEARCH = int(np.searchsorted(np.array([0.0, 4.0, 2.0, 4.0, 3.0]), 3.5) == 3)


def _along_last(name, t, axis, dtype, order="K", ties=()):
    """name(t) along `axis`, computed along the last axis of a view that moves it there, into a
    result laid out as NumPy's: like t (`order` K: sort and the scans, which copy t first) or in
    C order (argsort); a sort's `ties`, its axes after [reversed, k]: none stable, else (1,),
    NumPy's kind whose order of ties it keeps (_ties), or (2, kth...), NumPy's partition."""
    t, axis = flat_if_none(t, axis)
    axis = normalize_axis_index(axis, t.ndim)
    perm = [d for d in range(t.ndim) if d != axis] + [axis]
    moved = t.transpose(perm)
    layout = like_order(t, order) or list(range(t.ndim))  # t's axes, outermost first
    r = emit(name, [moved], moved.shape, dtype, order=[perm.index(d) for d in layout], axes=(0, -1) + ties if ties else ())
    if t.ndim == 1 and name in ("sort", "argsort") and isinstance(t.shape[0], Extent):  # its heads: _advanced.top_k
        current_trace().sorted[current_trace().value_key(r)] = (name, moved, False, ties)
    return r.transpose(sorted(range(t.ndim), key=perm.__getitem__))


def _ties(kind, stable):
    """The order a sort of this kind gives equal keys: () stable ('stable', 'mergesort': NumPy's
    are stable), else (1,), NumPy's default kind's (which NumPy 2's 'heapsort' runs too), which
    only NumPy's own algorithm gives (the runtime calls it for a row that holds equal keys)."""
    if kind not in (None, "quicksort", "mergesort", "heapsort", "stable"):
        raise ValueError(f"sort kind must be one of 'quick', 'heap', or 'stable' (got {kind!r})")
    return () if stable or kind in ("mergesort", "stable") else (1,)


def argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    if order is not None:
        raise unsupported("argsort(order=...)", "strider has no structured dtypes")
    return _along_last("argsort", as_tracer(a), axis, I64, order="C", ties=_ties(kind, stable))


def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    if order is not None:
        raise unsupported("sort(order=...)", "strider has no structured dtypes")
    ties = _ties(kind, stable)
    t = as_tracer(a)
    return _along_last("sort", t, axis, t.dtype, ties=ties)


def sort_inplace(a, axis=-1, kind=None, order=None, *, stable=None):
    check_writeable(a)
    assign(a, sort(a, axis, kind, order))


def _check_kth(t, kth, axis, name):
    """NumPy's checks of a partition's kth along `axis` (a run-time length is checked when the
    function runs), and the sort's axes that ask for NumPy's partition at them (_along_last)."""
    if any(isinstance(k, (Tracer, Extent)) for k in (kth if isinstance(kth, (list, tuple)) else [kth])):
        raise unsupported(f"np.{name} with a kth known only when the function runs (NumPy's order of the other "
                          "elements is its selection's at that kth)",
                          "sort instead: np.argsort(s)[n - k:] holds the k largest, in order")
    ks = np.asarray(kth)
    if ks.dtype == np.bool_:
        raise ValueError("Booleans unacceptable as partition index")
    if ks.dtype.kind not in "iu":
        raise TypeError("Partition index must be integer")
    n = t.shape[normalize_axis_index(axis, t.ndim)]
    empty = any(not isinstance(d, Extent) and d == 0 for d in t.shape)  # NumPy checks no kth then
    for k in ks.reshape(-1).tolist():
        if empty:
            break
        if isinstance(n, Extent):  # (a length of 0 passes, as above)
            length = n.value()
            length = length + np.equal(length, 0) * (abs(k) + 1)
            emit("check_index", [current_trace().const(np.int64(k)), length], (), I64, axes=(-1,))
        elif not -n <= k < n:
            raise ValueError(f"kth(={k + n if k < 0 else k}) out of bounds ({n})")
    return (2,) + tuple(ks.reshape(-1).tolist())


def partition(a, kth, axis=-1, kind="introselect", order=None):
    """NumPy's own partition of each row (the runtime calls it; the GPU's is a sort, one of the
    answers NumPy's contract allows)."""
    if kind != "introselect":
        raise ValueError(f"select kind must be 'introselect' (got {kind!r})")
    if order is not None:
        raise unsupported("partition(order=...)", "strider has no structured dtypes")
    t, axis = flat_if_none(as_tracer(a), axis)
    return _along_last("sort", t, axis, t.dtype, ties=_check_kth(t, kth, axis, "partition"))


def argpartition(a, kth, axis=-1, kind="introselect", order=None):
    """NumPy's own argpartition of each row: which of equal elements lands on which side of a kth,
    and the order on each side, are its introselect's (the GPU's is a stable argsort, one of the
    answers NumPy's contract allows); argpartition(s, k)[:k] reads its first k."""
    if kind != "introselect":
        raise ValueError(f"select kind must be 'introselect' (got {kind!r})")
    if order is not None:
        raise unsupported("argpartition(order=...)", "strider has no structured dtypes")
    t, axis = flat_if_none(as_tracer(a), axis)
    return _along_last("argsort", t, axis, I64, order="C", ties=_check_kth(t, kth, axis, "argpartition"))


def partition_inplace(a, kth, axis=-1, kind="introselect", order=None):
    check_writeable(a)
    assign(a, partition(a, kth, axis, kind, order))


def lexsort(keys, axis=-1):
    """The last key sorts first: stable sorts by each key in turn, from the first."""
    keys = [as_tracer(k) for k in keys] if not hasattr(keys, "ndim") or keys.ndim > 1 else [as_tracer(keys)]
    if not keys:
        raise TypeError("need sequence of keys with len > 0 in lexsort")
    if any(k.ndim != 1 for k in keys) or axis not in (-1, 0):
        raise unsupported("np.lexsort of keys with more than one axis", "lexsort 1-d keys")
    if not all(same_shape(k.shape, keys[0].shape) for k in keys):
        if not any(isinstance(k.shape[0], Extent) for k in keys):
            raise ValueError("all keys need to be the same shape")
        keys = one_length(keys, lambda k: 0, lambda first, other: "all keys need to be the same shape")
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
        order = as_tracer(sorter)
        if order.ndim != 1:
            raise TypeError("could not parse sorter argument")
        if order.dtype.kind not in "iu":
            raise TypeError("sorter must only contain integers")
        if not same_shape(order.shape, t.shape):
            if not any(isinstance(d, Extent) for d in (order.shape[0], t.shape[0])):
                raise ValueError("sorter.size must equal a.size")
            order = one_length([order, t], lambda v: 0, lambda first, other: "sorter.size must equal a.size")[0]
        # NumPy checks the entries its search visits; all are checked here, NumPy's error first
        n = t.shape[0].value() if isinstance(t.shape[0], Extent) else t.shape[0]
        current_trace().check_assert(np.all(np.logical_and(order >= 0, order < n)), "Sorter index out of range.",
                                     ValueError)
        t = getitem(t, order)
    dtype = np.result_type(t.dtype, weak_type(v))
    values = as_tracer(v, dtype)
    return emit("searchsorted", [t.astype(dtype, copy=False), values], values.shape, I64, axes=(int(side == "right"), HALVING_SEARCH),
                scalar=values.ndim == 0)


def _monotonicity(b):
    """NumPy's check of digitize's bins on a traced 1-d array (compiled_base.c's
    check_array_monotonic, in float64): increasing, decreasing, or neither, as 0-d bools of
    the run. The first value differing from the first (none: increasing) sets the direction;
    a step the other way then makes it neither (NaN compares as NumPy's loop does)."""
    b = b.astype(np.float64, copy=False)
    lo, hi = b[:-1], b[1:]
    differs = np.not_equal(b, b[0])
    uneven = np.any(differs)
    rising = np.less(b[0], getitem(b, np.argmax(differs)))
    increasing = np.logical_or(np.logical_not(uneven), np.logical_and(rising, np.logical_not(np.any(lo > hi))))
    decreasing = np.logical_and(uneven, np.logical_and(np.logical_not(rising), np.logical_not(np.any(lo < hi))))
    return increasing, decreasing


def digitize(x, bins, right=False):
    """np.digitize: searchsorted in the bins (reversed, from the end, where they decrease), with
    NumPy's ValueError for bins neither increasing nor decreasing (checked when the function
    runs where only the run knows them)."""
    x = as_tracer(x)
    if x.dtype.kind == "c":
        raise TypeError("x may not be complex")
    b = as_tracer(bins)
    if b.ndim != 1:
        raise ValueError("object too deep for desired array" if b.ndim else "object of too small depth for desired array")
    side = "left" if right else "right"
    n = b.shape[0]
    known = concrete(b)
    if known is not None or (not isinstance(n, Extent) and n <= 1):
        mono = 1 if known is None else _numpy_monotonicity(np.asarray(known, np.float64))
        if mono == 0:
            raise ValueError("bins must be monotonically increasing or decreasing")
        return searchsorted(b, x, side) if mono == 1 else np.subtract(n, searchsorted(b[::-1], x, side))
    if isinstance(n, Extent):
        raise unsupported("np.digitize of bins whose number is known only at run time", "give bins of known length")
    increasing, decreasing = _monotonicity(b)
    current_trace().check_assert(np.logical_or(increasing, decreasing),
                                 "bins must be monotonically increasing or decreasing", ValueError)
    r = np.where(decreasing, np.subtract(n, searchsorted(b[::-1], x, side)), searchsorted(b, x, side))
    return r[()] if r.ndim == 0 else r


def interp(x, xp, fp, left=None, right=None, period=None):
    """NumPy's np.interp of real values (compiled_base.c's arr_interp), in float64 and with xp
    increasing, as NumPy assumes (else the call runs in NumPy): x's place in xp by searchsorted, then NumPy's cases in its
    order (NaN, left of xp, right of it, xp's last point, a point of xp, the line between two,
    tried from the other end where it gives NaN); a single point compares only."""
    if period is not None:
        raise unsupported("np.interp(period=...)", "wrap x into one period first")
    scalar = np.ndim(x) == 0 if not isinstance(x, Tracer) else x.ndim == 0
    x, xp, fp = (as_tracer(v).astype(np.float64, copy=False) for v in (x, xp, fp))
    if xp.ndim != 1 or fp.ndim != 1:
        raise ValueError("object too deep for desired array")
    n, m = xp.shape[0], fp.shape[0]
    if isinstance(n, Extent) or isinstance(m, Extent):
        n = checked_equal(as_tracer(n.value() if isinstance(n, Extent) else n), m,
                          "fp and xp are not of the same length.")
        current_trace().check_assert(np.greater(n, 0), "array of sample points is empty", ValueError)
    elif n != m:
        raise ValueError("fp and xp are not of the same length.")
    elif n == 0:
        raise ValueError("array of sample points is empty")
    first, last = fp[0], fp[-1]
    lo = first if left is None else as_tracer(left).astype(np.float64, copy=False)
    hi = last if right is None else as_tracer(right).astype(np.float64, copy=False)
    one = np.where(x < xp[0], lo, np.where(x > xp[0], hi, fp[0]))  # (NaN: fp's point)
    if isinstance(n, int) and n == 1:
        r = one
    else:
        # NumPy's search of xp starts from the last x's place: where xp does not increase (or holds
        # a NaN) its answer depends on that walk, which no search here repeats
        current_trace().check_assert(np.all(xp[1:] >= xp[:-1]), (
            f"np.interp with sample points xp that do not increase (or hold a NaN), at {user_line()}: NumPy's "
            "answer then depends on the order it searches them in"), RunInNumPy)
        j = searchsorted(xp, x, side="right") - 1  # the last point of xp not after x
        j0 = np.clip(j, 0, np.maximum(n - 2, 0))
        j1 = np.minimum(j0 + 1, n - 1)
        xa, xb, fa, fb = xp[j0], xp[j1], fp[j0], fp[j1]
        slope = (fb - fa) / (xb - xa)
        line = slope * (x - xa) + fa
        back = slope * (x - xb) + fb
        line = np.where(np.isnan(line), np.where(np.isnan(back) & (fa == fb), fa, back), line)
        at = np.clip(j, 0, n - 1)
        r = np.where(j == n - 1, last, np.where(xp[at] == x, fp[at], line))
        r = np.where(x < xp[0], lo, np.where(x > xp[-1], hi, r))
        r = np.where(np.isnan(x), x, r)
        if not isinstance(n, int):
            r = np.where(n == 1, one, r)
    return r[()] if scalar else r


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


def nancumsum(a, axis=None, dtype=None, out=None):
    """np.nancumsum: cumsum with NaNs read as 0, as NumPy's _replace_nan (nuScenes' cummean)."""
    return cumsum(_without_nan(as_tracer(a), 0)[0], axis, dtype, out)


def nancumprod(a, axis=None, dtype=None, out=None):
    return cumprod(_without_nan(as_tracer(a), 1)[0], axis, dtype, out)


# whether this NumPy's add.accumulate of bools counts them (NumPy 2.4: int64) or ors them (bool)
_BOOL_ACCUMULATE_COUNTS = np.add.accumulate(np.array([True, True])).dtype != np.bool_


def accumulate(uf, a, axis=0, dtype=None, out=None):
    """ufunc.accumulate of add, multiply, maximum, minimum, logical_or and logical_and."""
    t = as_tracer(a)
    if uf in (np.logical_or, np.logical_and) or (
            uf in (np.add, np.multiply) and t.dtype == np.bool_ and dtype is None and not _BOOL_ACCUMULATE_COUNTS):
        if dtype is not None and np.dtype(dtype) != np.bool_:
            raise TypeError(f"No loop matching the specified signature and casting was found for ufunc {uf.__name__}")
        if out is not None:
            raise unsupported(f"np.{uf.__name__}.accumulate(out=...)", "assign the result")
        # an or (and) so far: a count so far of true (false) values, above zero (zero)
        either = uf in (np.logical_or, np.add)
        hits = _scan("cumsum", np.not_equal(t, 0) if either else np.equal(t, 0), axis, I64, None)
        return np.greater(hits, 0) if either else np.equal(hits, 0)
    name = next((n for n, f in _SCANS.items() if f is uf), None)
    if name is None:
        raise unsupported(f"np.{uf.__name__}.accumulate", "use np.cumsum, np.cumprod or np.maximum/minimum.accumulate")
    return _scan(name, t, axis, dtype, out)


def _starts(aux, equal_nan):
    """Where a new value (a new row, for aux of more than one axis) starts in the sorted aux."""
    n = aux.shape[0]
    if isinstance(n, Extent):  # each row's previous one (the first: itself), gathered
        at = arange_at(0, 1, n)
        prev, first = getitem(aux, np.maximum(np.subtract(at, 1), 0)), np.equal(at, 0)
    else:
        prev, first = (np.concatenate([aux[:1], aux[:-1]]) if n else aux), as_tracer(np.arange(n) == 0)
    differ = np.not_equal(aux, prev)
    if equal_nan and aux.dtype.kind == "f":  # NaNs sort last: all but the first are repeats
        differ = np.logical_and(differ, np.logical_not(np.logical_and(np.isnan(aux), np.isnan(prev))))
    if aux.ndim > 1:
        differ = np.any(differ, axis=tuple(range(1, aux.ndim)))
    return np.logical_or(first, differ)


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *, equal_nan=True,
           sorted=True):
    t = as_tracer(ar)
    if axis is not None and t.ndim == 1:  # as NumPy: the values' unique (NaNs equal where equal_nan)
        normalize_axis_index(axis, 1)
        axis = None
    if axis is None:
        if t.is_dynamic and t.ndim != 1:
            raise unsupported("np.unique of an array of several axes whose length is known only at run time",
                              "np.unique of a 1-d array")
        flat = t.reshape(-1) if t.ndim != 1 else t
        # as NumPy: without indices to return, its default sort of the values, whose order of
        # equal ones (0.0 and -0.0) is the one NumPy's sort gives on this CPU (sort calls it)
        perm = argsort(flat, kind="stable" if return_index else None) if return_index or return_inverse else None
    else:
        # rows along `axis`, in lexicographic order (NumPy compares them as records: no NaN is
        # equal to another)
        axis = normalize_axis_index(axis, t.ndim)
        flat = np.moveaxis(t, axis, 0)
        if flat.is_dynamic and flat.ndim > 2:
            raise unsupported("np.unique(axis=...) of rows of several axes whose number is known only at run "
                              "time", "np.unique of a 2-d array's rows")
        columns = flat.reshape(flat.shape[0], math.prod(flat.shape[1:])) if flat.ndim > 2 else flat
        if not isinstance(columns.shape[1], Extent) and columns.shape[1] == 0:
            perm = arange_at(0, 1, columns.shape[0])  # rows of no element are all equal
        else:
            keys = []
            for j in reversed(range(columns.shape[1])):
                keys.append(columns[:, j])
                if columns.dtype == np.float16:  # NumPy's compare of float16 records puts NaN first
                    keys.append(np.logical_not(np.isnan(columns[:, j])))
            perm = lexsort(keys)
        equal_nan = False
    aux = sort(flat) if perm is None else getitem(flat, perm)
    mask = _starts(aux, equal_nan)
    out = [compress(mask, aux, axis=0)]
    if axis is not None:
        out[0] = np.moveaxis(out[0], 0, axis)
    if return_index:
        out.append(compress(mask, perm))
    if return_inverse or return_counts:
        group = np.subtract(cumsum(mask), 1)
    if return_inverse:
        inverse = empty(flat.shape[:1], I64)
        setitem(inverse, perm, group)
        out.append(inverse.reshape(t.shape) if axis is None and t.ndim != 1 else inverse)
    if return_counts:
        counts = zeros((count(mask),), I64)
        ufunc_at(np.add, counts, group, 1)
        out.append(counts)
    return out[0] if len(out) == 1 else tuple(out)


def isin(element, test_elements, assume_unique=False, invert=False, *, kind=None):
    """Whether each element equals one of test_elements (==: NaN never does): a binary search of
    each in the sorted test elements."""
    e, test = as_tracer(element), as_tracer(test_elements)
    dtype = np.result_type(e.dtype, test.dtype)
    e, test = e.astype(dtype, copy=False), test.astype(dtype, copy=False)
    s = sort(test, axis=None)
    # one element past the end, so that every place found names one (a value there never counts)
    at = searchsorted(s, e)
    padded = np.concatenate([s, zeros((1,), dtype)])
    found = np.logical_and(np.less(at, s.shape[0]), np.equal(getitem(padded, at), e))
    return np.logical_not(found) if invert else found


def intersect1d(ar1, ar2, assume_unique=False, return_indices=False):
    if return_indices:
        raise unsupported("np.intersect1d(return_indices=True)", "np.intersect1d of the values")
    a, b = (as_tracer(x).reshape(-1) for x in (ar1, ar2))
    if not assume_unique:
        a, b = unique(a), unique(b)
    aux = sort(np.concatenate([a, b]))
    # a value in both appears twice in a row: its second (NaN never equals itself: never in both)
    return compress(np.logical_not(_starts(aux, equal_nan=False)), aux)


def union1d(ar1, ar2):
    return unique(np.concatenate([as_tracer(ar1).reshape(-1), as_tracer(ar2).reshape(-1)]))


def setdiff1d(ar1, ar2, assume_unique=False):
    a = as_tracer(ar1).reshape(-1) if assume_unique else unique(ar1)
    return compress(isin(a, ar2, assume_unique=True, invert=True), a)
