"""np.median, np.percentile and np.quantile: the sorted values (a partition at the places NumPy
picks where they are known while tracing) and NumPy's arithmetic on them, step for step, for
every method; NaN where a slice holds one."""
import numpy as np
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from ._advanced import getitem
from ._creation import zeros
from ._errors import unsupported, where as user_line
from ._indexing import assign
from ._reductions import mean
from ._sorting import partition, sort
from ._tracer import Extent, RunInNumPy, Tracer, as_tracer, concrete, current_trace, holds_traced, same_shape


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """np.median: the mean of the middle one or two of the sorted values (NumPy's mean, so its
    dtypes), NaN where a NaN is among them (NaNs sort last)."""
    t = as_tracer(a)
    if t.ndim == 1 and t.is_dynamic and (axis is None or normalize_axis_index(axis, 1) == 0):
        r = _median_of_run_time_length(t)
        r = np.expand_dims(r, 0) if keepdims else r
        if out is None:
            return r
        assign(out, r)
        return out
    if t.ndim == 0 or t.is_dynamic or (axis is not None and not isinstance(axis, (int, np.integer))):
        raise unsupported("np.median of a 0-d array, of an n-d array of a run-time length or over several axes",
                          "take the median of a 1-d array, or of an n-d one of known length over one axis")
    ax = 0 if axis is None else normalize_axis_index(axis, t.ndim)
    s = sort(t.ravel() if axis is None else t, axis=ax)
    n = s.shape[ax]
    half = n // 2
    middle = [slice(None)] * s.ndim
    middle[ax] = slice(half, half + 1) if n % 2 else slice(half - 1, half + 1)
    r = mean(s[tuple(middle)], axis=ax)
    if t.dtype.kind == "f" and n:
        last = [slice(None)] * s.ndim
        last[ax] = -1
        r = np.where(np.isnan(s[tuple(last)]), s[tuple(last)], r)
        r = r[()] if r.ndim == 0 else r
    if keepdims:
        r = np.expand_dims(r, tuple(range(t.ndim)) if axis is None else ax)
    if out is None:
        return r
    assign(out, r)
    return out


def _median_of_run_time_length(t):
    """np.median of a 1-d array whose length n only the run knows (TF OD API's median rank of
    the positives found): the mean of the middle one (n odd) or two of the sorted values, NaN
    where the last of them is NaN, and NumPy's NaN (of the mean's dtype) where n is 0. The
    sorted values get one more at their end, so that n = 0 gathers within them."""
    n = t.shape[0].value()
    s = np.concatenate([sort(t), zeros(1, t.dtype)])
    lo, hi = getitem(s, np.maximum(n - 1, 0) // 2), getitem(s, n // 2)
    one, two = mean(np.expand_dims(lo, 0)), mean(np.stack([lo, hi]))
    r = np.where(np.equal(n % 2, 1), one, two)
    if t.dtype.kind == "f":
        last = getitem(s, np.maximum(n - 1, 0))
        r = np.where(np.isnan(last), last.astype(r.dtype), r)
    return np.where(np.equal(n, 0), np.array(np.nan, r.dtype), r)[()]


# np.quantile's methods, as NumPy's _QuantileMethods names them (Hyndman and Fan's nine, then
# NumPy's own four); those that interpolate at n * q + alpha + q * (1 - alpha - beta) - 1 by
# their (alpha, beta)
QUANTILE_METHODS = ("inverted_cdf", "averaged_inverted_cdf", "closest_observation", "interpolated_inverted_cdf",
                    "hazen", "weibull", "linear", "median_unbiased", "normal_unbiased", "lower", "higher", "midpoint",
                    "nearest")
_ALPHA_BETA = {"interpolated_inverted_cdf": (0, 1), "hazen": (0.5, 0.5), "weibull": (0, 0),
               "median_unbiased": (1 / 3.0, 1 / 3.0), "normal_unbiased": (3 / 8.0, 3 / 8.0)}


# The index arithmetic below is NumPy's, op for op, on n (a Python int, or the traced run-time
# length: a weak int as well) and q (a NumPy array, or traced): NumPy's arrays in, NumPy's arrays
# out, traced ones where n or q is traced


def _boundary(index, chosen):
    """NumPy's _discrete_interpolation_to_boundaries: floor(index) where chosen(gamma, index),
    else the next place, and at least 0."""
    previous = np.floor(index)
    return np.maximum(np.where(chosen(index - previous, index), previous, previous + 1).astype(np.intp), 0)


def _virtual_index(method, n, q):
    """Where q falls among n sorted values (NumPy's get_virtual_index): a float to interpolate
    at, or, for the methods that take one of the values, an int."""
    if method == "linear":
        return (n - 1) * q
    if method in _ALPHA_BETA:
        alpha, beta = _ALPHA_BETA[method]
        return n * q + (alpha + q * (1 - alpha - beta)) - 1
    if method in ("lower", "higher", "nearest"):
        rounding = {"lower": np.floor, "higher": np.ceil, "nearest": np.rint}[method]  # (np.around: rint)
        return rounding((n - 1) * q).astype(np.intp)
    if method == "midpoint":
        return 0.5 * (np.floor((n - 1) * q) + np.ceil((n - 1) * q))
    if method == "averaged_inverted_cdf":
        return (n * q) - 1
    if method == "inverted_cdf":
        return _boundary((n * q) - 1, lambda gamma, index: gamma == 0)
    # closest_observation: the nearest even order statistic (1-based) where q falls on one
    return _boundary((n * q) - 1 - 0.5, lambda gamma, index: (gamma == 0) & (np.floor(index) % 2 == 1))


def _neighbours(index, n):
    """NumPy's _get_indexes: the places of the values either side of index, both -1 (the last)
    at or past the last place, both 0 before the first (index is never NaN: q is checked)."""
    previous = np.floor(index)
    following = previous + 1
    above = index >= n - 1
    previous, following = np.where(above, -1, previous), np.where(above, -1, following)
    below = index < 0
    return np.where(below, 0, previous).astype(np.intp), np.where(below, 0, following).astype(np.intp)


def _gamma(method, index, previous):
    """NumPy's _get_gamma: the weight of the following value, in the index's dtype."""
    gamma = index - previous
    if method == "averaged_inverted_cdf":
        gamma = np.where(gamma == 0, 0.5, 1.0)
    elif method == "midpoint":
        gamma = np.where(index % 1 == 0, 0.0, 0.5)
    return gamma.astype(index.dtype)


def _lerp(a, b, t):
    """NumPy's _lerp: a + (b - a) * t, or, where t >= 0.5, b - (b - a) * (1 - t) in the first's
    dtype (t: a Python float, a NumPy array or traced)."""
    diff = b - a
    low = a + diff * t
    high = np.subtract(b.astype(low.dtype, copy=False), (diff * (1 - t)).astype(low.dtype, copy=False))
    at_least_half = t >= 0.5
    if type(at_least_half) in (bool, np.bool_):
        return high if at_least_half else low
    return np.where(at_least_half, high, low)


def _q_array(name, q):
    """q as NumPy computes with it (percentile's divided by 100): a NumPy array where tracing
    knows it, else traced (an argument: the run checks its range)."""
    message = ("Percentiles must be in the range [0, 100]" if name == "percentile" else
               "Quantiles must be in the range [0, 1]")
    if isinstance(q, Tracer) or holds_traced([q]):
        traced = as_tracer(q)
        known = concrete(traced)
        if known is None:
            # (NumPy's array of q: a Python number's dtype, no more weak)
            traced = np.true_divide(traced, 100) if name == "percentile" else traced.astype(traced.dtype)
            current_trace().check_assert(np.all(np.logical_and(traced >= 0, traced <= 1)), message, ValueError)
            return traced
        q = known
    q = np.true_divide(q, 100, out=...) if name == "percentile" else np.asanyarray(q)
    if q.ndim == 1 and q.size < 10:  # (NumPy's _quantile_is_valid)
        valid = all(0.0 <= v <= 1.0 for v in q)
    else:
        valid = q.min() >= 0 and q.max() <= 1
    if not valid:
        raise ValueError(message)
    return q


def _takes(method, index):
    """Whether the method takes one of the values (NumPy's methods without a fix_gamma, and
    'linear' at an integer index, of an integer q), rather than interpolating two."""
    return method in ("inverted_cdf", "closest_observation", "lower", "higher", "nearest") or (
        method == "linear" and index.dtype.kind in "iu")


def _quantile(name, a, q, axis, out, overwrite_input, method, keepdims, weights):
    """np.quantile (and np.percentile, of q / 100), as NumPy's _quantile: q's places among the
    sorted values of each slice, the values there, interpolated by NumPy's arithmetic in its
    dtypes; the last value where it is NaN (NaNs sort last). The dimensions of q come first."""
    t = as_tracer(a)
    weak_q = type(q) in (int, float) or (isinstance(q, Tracer) and q._weak in (int, float))
    q = _q_array(name, q)
    if weights is not None:
        if method != "inverted_cdf":
            raise ValueError(f"Only method 'inverted_cdf' supports weights. Got: {method}.")
        raise unsupported(f"np.{name}(weights=...)", f"np.{name} without weights")
    nd = t.ndim
    reduced = tuple(range(nd)) if axis is None else normalize_axis_tuple(axis, nd)
    if axis is None:
        arr, ax = (t.ravel() if overwrite_input else t.reshape(-1)), 0
    elif len(reduced) == 1:
        arr, ax = t, reduced[0]
    else:  # (NumPy's _ureduce: the kept axes first, the reduced ones merged last)
        keep = [d for d in range(nd) if d not in reduced]
        moved = np.moveaxis(t, keep, range(len(keep)))
        arr, ax = moved.reshape(tuple(moved.shape[:len(keep)]) + (-1,)), len(keep)
    if q.ndim > 2:
        raise ValueError("q must be a scalar or 1d")
    if method not in QUANTILE_METHODS:
        raise ValueError(f"{method!r} is not a valid method. Use one of: {dict.fromkeys(QUANTILE_METHODS).keys()}")
    if isinstance(arr.shape[ax], Extent) and arr.ndim != 1:
        raise unsupported(f"np.{name} over an axis whose length is known only at run time, of an n-d array",
                          f"np.{name} of a 1-d array of a run-time length, or of an n-d one over axes of known length")
    if not isinstance(arr.shape[ax], Extent) and arr.shape[ax] == 0 and (q.size or arr.dtype.kind == "f"):
        # (NumPy's take, or its read of the last value)
        raise IndexError("index -1 is out of bounds for axis 0 with size 0")
    if isinstance(arr.shape[ax], Extent) or isinstance(q, Tracer):
        if overwrite_input:
            raise unsupported(f"np.{name}(overwrite_input=True) of a q or a length known only at run time (NumPy "
                              "partitions the input at places only the run knows)", "overwrite_input=False")
        r, last = _quantile_by_sort(arr, ax, q, method, weak_q, name)
    else:
        r, last = _quantile_by_partition(arr, ax, q, method, weak_q, overwrite_input)
    if last is not None:
        nans = np.isnan(last)
        if r.ndim == 0 and out is None and r.dtype != last.dtype:
            # NumPy answers with the last value itself, in the values' dtype (float32 where a q
            # of NumPy's float64 type makes the answer float64 elsewhere)
            current_trace().check_assert(np.logical_not(nans), (
                f"np.{name} of {last.dtype} values that hold a NaN with a q of NumPy's float64 type, at "
                f"{user_line()}: NumPy answers NaN in {last.dtype} there, the compiled program in {r.dtype}"),
                RunInNumPy)
        else:
            r = np.where(nans, last.astype(r.dtype, copy=False), r)
    r = r[()] if r.ndim == 0 else r
    if keepdims:
        r = np.expand_dims(r, tuple(q.ndim + d for d in reduced))
    if out is None:
        return r
    out = as_tracer(out)
    if out.dtype != r.dtype or not same_shape(out.shape, r.shape):
        raise unsupported(f"np.{name}(out=...) of another dtype or shape than the result's {r.dtype}{list(r.shape)}",
                          "assign the result")
    assign(out, r)
    return out


def _quantile_by_partition(arr, ax, q, method, weak_q, overwrite_input):
    """The quantiles of each slice of arr along `ax`, of a length tracing knows, at a q it knows,
    and the last sorted values (None where no NaN can be among them): the places and weights are
    NumPy's arrays, computed as it traces, and the values are NumPy's own partition at those
    places (so that equal values, -0.0 and 0.0, land where NumPy's do)."""
    n = arr.shape[ax]
    index = np.asarray(_virtual_index(method, n, q))
    nans = arr.dtype.kind == "f"
    if _takes(method, index):
        places = np.concatenate((index.ravel(), [-1])) if nans else index.ravel()
    else:
        previous, following = (np.asarray(i) for i in _neighbours(index, n))
        places = np.unique(np.concatenate(([0, -1], previous.ravel(), following.ravel())))
    s = partition(arr, places, axis=ax) if n else arr
    if overwrite_input:  # NumPy partitions the input in place (where arr is a view of it)
        assign(arr, s)
    s = np.moveaxis(s, ax, 0) if ax else s
    last = s[-1] if nans and n else None

    def at(places):  # (the last is -1 in NumPy's places)
        return getitem(s, np.where(places < 0, places + n, places))

    if _takes(method, index):
        return at(index), last
    gamma = np.asarray(_gamma(method, index, previous))
    gamma = float(gamma) if weak_q else gamma.reshape(index.shape + (1,) * (s.ndim - 1))
    return _lerp(at(previous), at(following), gamma), last


def _quantile_by_sort(arr, ax, q, method, weak_q, name):
    """The quantiles of each slice of arr along `ax` where the run knows q (traced) or the
    length n (arr 1-d): NumPy's index arithmetic, traced, and the values gathered at those
    places from the sorted ones (with one more at their end where n is traced, so that places
    stay within them where n is 0, which NumPy refuses with an IndexError)."""
    n = arr.shape[ax]
    s = np.moveaxis(sort(arr, axis=ax), ax, 0) if ax else sort(arr, axis=0)
    if isinstance(n, Extent):
        n = n.value()
        current_trace().check_assert(np.greater(n, 0), (
            f"np.{name} of an empty array, at {user_line()}: NumPy raises IndexError"), RunInNumPy)
        s = np.concatenate([s, zeros(1, arr.dtype)])
    last = getitem(s, np.maximum(n - 1, 0)) if arr.dtype.kind == "f" else None

    def at(places):  # (the last is -1 in NumPy's places)
        return getitem(s, np.maximum(np.where(places < 0, places + n, places), 0))

    index = _virtual_index(method, n, q)
    if _takes(method, index):
        return at(index), last
    previous, following = _neighbours(index, n)
    gamma = _gamma(method, index, previous)
    if weak_q:  # NumPy's float(gamma): a Python float
        gamma = as_tracer(gamma).astype(np.float64)
        gamma._weak = float
    else:
        gamma = gamma.reshape(tuple(index.shape) + (1,) * (s.ndim - 1))
    return _lerp(at(previous), at(following), gamma), last


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *, weights=None):
    return _quantile("quantile", a, q, axis, out, overwrite_input, method, keepdims, weights)


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *, weights=None):
    return _quantile("percentile", a, q, axis, out, overwrite_input, method, keepdims, weights)
