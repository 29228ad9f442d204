"""Reductions and contractions on Tracers: sum, prod, max, min, any, all, argmax, argmin, mean,
var, std, count_nonzero, the NaN-ignoring nanmax, nanmin, nanargmax, nanargmin, nansum, nanprod
and nanmean, linalg.norm, matmul, dot."""
import builtins
import math
import operator

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from ._errors import unsupported
from ._shapes import diagonal_view
from ._tracer import Extent, Tracer, as_tracer, bound, current_trace, emit, reshape_units, written
from ._ufuncs import _NoValue, _with_length, astype, finish, ir_dtype, normalize_axes, normalize_axis_tuple


# the reductions of no element NumPy refuses (in check_nonempty's order)
_NEED_ONE = ("max", "min", "argmax", "argmin")


# what NumPy folds in for an element `where=` leaves out: the ufunc's identity (max and min have
# none, so NumPy requires `initial=`, which then takes its place)
_IDENTITY = {"sum": 0, "prod": 1, "any": False, "all": True}


def _reduce(name, a, axis, keepdims, out, acc_dtype=None, result_dtype=None, initial=_NoValue,
            where=True):
    t = as_tracer(a)
    if where is not True:
        t = _masked(name, t, initial, where)
    if initial is not _NoValue:
        return _with_initial(name, t, axis, keepdims, out, acc_dtype, result_dtype, initial)
    axes = normalize_axes(t, axis)
    if acc_dtype is not None and acc_dtype != t.dtype:
        t = t.astype(acc_dtype)
    out_shape = tuple(d for i, d in enumerate(t.shape) if i not in axes)
    # NumPy refuses whenever a reduced axis is empty, even when the result is empty too ((0, 0) on
    # axis 0); a run-time length is checked when the function runs (check_nonempty)
    count = math.prod([t.shape[i] for i in axes if not isinstance(t.shape[i], Extent)])
    dynamic = [i for i in axes if isinstance(t.shape[i], Extent)]
    if name in _NEED_ONE and len(dynamic) == 1 and count:
        # the one run-time length, checked, is the length the reduction reads: its stage then
        # knows the fold has an element (compiled, not run by the reference executor)
        n = emit("check_nonempty", [t.shape[dynamic[0]].value()], (), np.int64, axes=(_NEED_ONE.index(name),))
        t = _with_length(t, dynamic[0], Extent(bound(t.shape[dynamic[0]]), n._view.storage))
    elif name in _NEED_ONE and dynamic:
        emit("check_nonempty", [as_tracer(_count(t, axes))], (), np.int64, axes=(_NEED_ONE.index(name),))
    if count == 0 and name in _NEED_ONE:
        if name.startswith("arg"):
            raise ValueError(f"attempt to get {name} of an empty sequence")
        raise ValueError(f"zero-size array to reduction operation {'maximum' if name == 'max' else 'minimum'} "
                         "which has no identity")
    dtype = result_dtype or t.dtype
    if name in ("sum", "prod") and t.dtype == np.float16:
        t = _float32_runs(name, t, axes)
    r = emit(name, [t], out_shape, dtype, axes, scalar=t.ndim == 0 or not out_shape and not keepdims)
    keep = tuple(1 if i in axes else d for i, d in enumerate(t.shape)) if keepdims is True else None
    return finish(r, out, keep)


def _no_identity(ufunc_name):
    return ValueError(f"reduction operation '{ufunc_name}' does not have an identity, so to use a where mask one "
                      "has to specify 'initial'")


def _static_where(where):
    """where= known while tracing: a Python or NumPy scalar (NumPy casts a number to bool: 2 is
    True) or a 0-d NumPy bool array, as a bool; None for an array."""
    if isinstance(where, Tracer):  # (a traced scalar passes for a NumPy one)
        return None
    if isinstance(where, (bool, int, float, np.bool_, np.integer, np.floating)):
        return bool(where)
    if isinstance(where, np.ndarray) and where.ndim == 0 and where.dtype == np.bool_:
        return bool(where)
    return None


def _where_mask(where, shape):
    """where= as NumPy's reduction reads it: True or False where known while tracing, else a
    boolean Tracer broadcast to the reduced array's `shape` (NumPy's TypeError for an array of
    another dtype, its ValueError for one it cannot broadcast)."""
    static = _static_where(where)
    if static is not None:
        return static
    if isinstance(where, (list, tuple)):  # (a list of Python numbers converts to bool as they do)
        where = np.asarray(where)
        if where.dtype.kind in "iuf":
            where = where.astype(np.bool_)
    w = as_tracer(where)
    if w._weak in (int, float):  # a traced Python number, as NumPy casts one
        w = np.not_equal(w, 0)
    if w.dtype != np.bool_:
        raise TypeError(f"Cannot cast {'scalar' if w.ndim == 0 else 'array data'} from {w.dtype!r} to dtype('bool') "
                        "according to the rule 'safe'")
    if w.ndim > len(shape):
        raise ValueError("input operand has more dimensions than allowed by the axis remapping")
    return np.broadcast_to(w, shape)


def _masked(name, t, initial, where):
    """t with the elements `where` leaves out replaced by what NumPy folds in for none: the
    identity, or `initial` for max and min (NumPy's ValueError without one, whatever `where`
    holds: only where=True itself needs none)."""
    if name in ("max", "min"):
        if initial is _NoValue:
            raise _no_identity("maximum" if name == "max" else "minimum")
        fill = initial
    else:
        fill = _IDENTITY[name]
    w = _where_mask(where, t.shape)
    if w is True:
        return t
    fill = written(fill, t.dtype)
    if w is False:
        return fill.reshape(()).broadcast_to(t.shape)
    return np.where(w, t, fill)


def _where_count(t, axes, keepdims, where):
    """The count NumPy's mean and var divide by (_count_reduce_items): the elements reduced, or
    the sum of `where` broadcast to t's shape, cast to intp (a True counts 1, where=2 counts each
    element twice, as NumPy's does)."""
    if _static_where(where) is not None:
        times = int(np.asarray(where).astype(np.intp))
        return _count(t, axes) if times == 1 else _count(t, axes) * times
    w = as_tracer(np.asarray(where) if isinstance(where, (list, tuple)) else where)
    return sum_(np.broadcast_to(w, t.shape), axes, np.intp, None, keepdims)


def _divide(s, count):
    """s over its count in s's dtype, as NumPy's _mean and _var divide: true_divide into s, cast
    unsafely (an intp count divides a float32 sum in float64)."""
    r = np.true_divide(s, count)
    if r.dtype != s.dtype:
        r = astype(r, s.dtype)
    r._scalar = s._scalar
    return r


def _with_initial(name, t, axis, keepdims, out, acc_dtype, result_dtype, initial):
    """A reduction from `initial` (NumPy folds it in first): sum and prod fold it into the
    reduction of the elements; max and min take it where the reduced axes hold no element
    (checked when the function runs where a length is known only then)."""
    if isinstance(initial, (Tracer, np.ndarray)) and np.ndim(initial):
        raise ValueError("Input object to initial= must be a scalar")  # NumPy's TypeError says so too
    combine = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}.get(name)
    if combine is None:
        raise unsupported(f"np.{name} with initial=", "reduce first, then combine")
    axes = normalize_axes(t, axis)
    if name in ("sum", "prod"):
        folded = _reduce(name, t, axes, keepdims, None, acc_dtype, result_dtype)
        r = combine(folded, written(initial, folded.dtype))
        r._scalar = folded._scalar
        return finish(r, out, None)
    n = _count(t, axes)
    # no element (a run-time length bounded by 0 never holds one): initial, in the reduction's shape
    if any(bound(t.shape[i]) == 0 for i in axes) or not isinstance(n, (Tracer, Extent)) and n == 0:
        shape = tuple(1 if i in axes else d for i, d in enumerate(t.shape)) if keepdims else tuple(
            d for i, d in enumerate(t.shape) if i not in axes)
        r = written(initial, t.dtype).reshape(()).broadcast_to(shape).copy()
        r._scalar = not shape
        return finish(r, out, None)
    dynamic = [i for i in axes if isinstance(t.shape[i], Extent)]
    for i in dynamic:  # at least one element read: the reduction of none is replaced below
        t = _with_length(t, i, Extent(max(1, bound(t.shape[i])), np.maximum(t.shape[i].value(), 1)._view.storage))
    folded = _reduce(name, t, axes, keepdims, None)
    r = combine(folded, written(initial, t.dtype))
    if dynamic:
        r = np.where(np.greater(n, 0), r, written(initial, t.dtype))
    r._scalar = folded._scalar  # (a NumPy scalar where the reduction's is)
    return finish(r, out, None)


def _float32_runs(name, t, axes):
    """NumPy's float16 sum and prod: its loop folds a run of elements along reduced axes that lie
    inside every kept axis in memory (the innermost axes of a row sum, all of a full sum) in
    float32, rounding once, and rounds to half after every other step. The runs' float32 folds
    (keepdims); the caller's fold of them into float16 then rounds each step (ops/reduce_spec.h).
    t itself where no reduced axis lies inside the kept ones."""
    strides = t._view.strides
    big = [i for i, d in enumerate(t.shape) if isinstance(d, Extent) or d > 1]
    inner = builtins.min((abs(strides[i]) for i in big if i not in axes), default=None)
    run = tuple(i for i in axes if i in big and (inner is None or abs(strides[i]) < inner))
    if not run:
        return t
    return _reduce(name, astype(t, np.float32), run, True, None)


def _count(t, axes):
    """The number of elements reduced: an int, or a traced int where a length is known only at
    run time."""
    n = math.prod([t.shape[i] for i in axes if not isinstance(t.shape[i], Extent)])
    for i in axes:
        if isinstance(t.shape[i], Extent):
            n = t.shape[i].value() * n
    return n


def _sum_dtype(dt, dtype):
    if dtype is not None:
        return ir_dtype(dtype, "a reduction")
    # NumPy's sum and prod widen bool and small integers to the platform's (u)int64
    if dt == np.bool_ or (dt.kind == "i" and dt.itemsize < 8):
        return np.dtype(np.int64)
    if dt.kind == "u" and dt.itemsize < 8:
        return np.dtype(np.uint64)
    return dt


def sum_(a, axis=None, dtype=None, out=None, keepdims=False, initial=_NoValue, where=True):
    acc = _sum_dtype(as_tracer(a).dtype, dtype)
    return _reduce("sum", a, axis, keepdims, out, acc, acc, initial, where)


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=_NoValue, where=True):
    acc = _sum_dtype(as_tracer(a).dtype, dtype)
    return _reduce("prod", a, axis, keepdims, out, acc, acc, initial, where)


def _one_axis_of_0d(a, axis):
    """NumPy's max, min, argmax and argmin take a 0-d array as one of a single element along an
    axis given as an int (0 or -1); a tuple of axes still counts the array's own."""
    if axis is None or isinstance(axis, tuple) or as_tracer(a).ndim:
        return axis
    normalize_axis_index(operator.index(axis), 1)
    return None


def max_(a, axis=None, out=None, keepdims=False, initial=_NoValue, where=True):
    return _reduce("max", a, _one_axis_of_0d(a, axis), keepdims, out, initial=initial, where=where)


def min_(a, axis=None, out=None, keepdims=False, initial=_NoValue, where=True):
    return _reduce("min", a, _one_axis_of_0d(a, axis), keepdims, out, initial=initial, where=where)


def any_(a, axis=None, out=None, keepdims=False, *, where=True):
    return _reduce("any", a, axis, keepdims, out, result_dtype=np.dtype(np.bool_), where=where)


def all_(a, axis=None, out=None, keepdims=False, *, where=True):
    return _reduce("all", a, axis, keepdims, out, result_dtype=np.dtype(np.bool_), where=where)


def _arg_reduce(name, a, axis, out, keepdims):
    t = as_tracer(a)
    axis = _one_axis_of_0d(t, axis)
    if axis is not None:
        axis = normalize_axis_index(operator.index(axis), t.ndim)
    r = _reduce(name, t, axis, False, None, result_dtype=np.dtype(np.int64))
    if keepdims:
        keep = tuple(1 if axis is None or i == axis else d for i, d in enumerate(t.shape))
        r = reshape_units(r, keep)
        r._scalar = t.ndim == 0
    return finish(r, out, None)


def argmax(a, axis=None, out=None, *, keepdims=False):
    return _arg_reduce("argmax", a, axis, out, keepdims)


def argmin(a, axis=None, out=None, *, keepdims=False):
    return _arg_reduce("argmin", a, axis, out, keepdims)


def _mean_dtype(t, dtype):
    if dtype is not None:
        return ir_dtype(dtype, "np.mean")
    return np.dtype(np.float64) if t.dtype.kind in "biu" else t.dtype


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    t = as_tracer(a)
    # NumPy's mean of float16 sums and divides in float32, then rounds to half
    half = dtype is None and t.dtype == np.float16
    s = _reduce("sum", t, axis, keepdims, None, np.dtype(np.float32) if half else _mean_dtype(t, dtype), None,
                where=where)
    r = _divide(s, _where_count(t, normalize_axes(t, axis), keepdims, where))
    return finish(astype(r, np.float16) if half and out is None else r, out, None)


def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    """NumPy's np.average: the mean, or the weighted sum over the weights' sum, in the dtype NumPy
    promotes the two to (float64 at least for integers); weights that sum to zero raise
    ZeroDivisionError when the function runs."""
    t = as_tracer(a)
    if weights is None:
        avg = mean(t, axis, keepdims=keepdims)
        if any(isinstance(d, Extent) for d in t.shape):
            if returned:
                raise unsupported("np.average(..., returned=True) of an array whose length is known only at run "
                                  "time", "count the elements with np.count_nonzero")
            return avg
        scl = avg.dtype.type(math.prod(t.shape) // builtins.max(math.prod(avg.shape), 1))
    else:
        w = as_tracer(weights)
        result_dtype = np.result_type(t.dtype, w.dtype, *("f8",) * (t.dtype.kind in "biu"))
        if tuple(t.shape) != tuple(w.shape):
            if axis is None:
                raise TypeError("Axis must be specified when shapes of a and weights differ.")
            axes = normalize_axis_tuple(axis, t.ndim)
            if tuple(w.shape) != tuple(t.shape[ax] for ax in axes):
                raise ValueError("Shape of weights must be consistent with shape of a along specified axis.")
            # the weights' axes in a's order, then a's other axes as length 1
            w = w.transpose(sorted(range(len(axes)), key=lambda k: axes[k]))
            w = w.reshape(tuple(s if ax in axes else 1 for ax, s in enumerate(t.shape)))
        scl = w.sum(axis=axis, dtype=result_dtype, keepdims=keepdims)
        current_trace().check_assert(np.logical_not(np.any(scl == 0.0)), "Weights sum to zero, can't be normalized",
                                     ZeroDivisionError)
        avg = np.multiply(t, w, dtype=result_dtype).sum(axis, keepdims=keepdims) / scl
    if not returned:
        return avg
    if tuple(np.shape(scl)) != tuple(avg.shape):
        scl = np.broadcast_to(scl, avg.shape).copy()
    return avg, scl


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=_NoValue,
        correction=_NoValue):
    if mean is not _NoValue:
        raise unsupported("np.var(..., mean=)", "drop the argument")
    if correction is not _NoValue:
        ddof = correction
    t = as_tracer(a)
    axes = normalize_axes(t, axis)
    acc = _mean_dtype(t, dtype)
    total = _reduce("sum", t, axis, True, None, acc, None, where=where)
    count = _where_count(t, axes, True, where)  # (in the mean's shape, kept dims)
    centred = t - _divide(total, count)
    ss = _reduce("sum", np.multiply(centred, centred), axis, keepdims, None, acc, None, where=where)
    if _static_where(where) is None:  # where's count, an intp array: NumPy's maximum(rcount - ddof, 0)
        dof = np.maximum(count - ddof, 0).reshape(ss.shape)
    elif isinstance(count, Tracer):  # a run-time count: a Python int, as a static one (NEP 50: float16 stays float16)
        dof = np.maximum(count - ddof, 0)
        dof._weak = int
    else:
        dof = builtins.max(count - ddof, 0)
    return finish(_divide(ss, dof), out, None)


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=_NoValue,
        correction=_NoValue):
    v = var(a, axis, dtype, None, ddof, keepdims, where=where, mean=mean, correction=correction)
    return finish(np.sqrt(v), out, None)


def ptp(a, axis=None, out=None, keepdims=False):
    """np.ptp: the maximum less the minimum."""
    return np.subtract(max_(a, axis, keepdims=keepdims), min_(a, axis, keepdims=keepdims), out=out)


def _without_nan(t, val):
    """NumPy's _replace_nan: t with its NaNs replaced by `val`, and where they were (None for a
    dtype without NaN, which is t unchanged)."""
    if t.dtype.kind not in "fc":
        return t, None
    mask = np.isnan(t)
    return np.where(mask, val, t), mask


def _nan_extreme(name, a, axis, out, keepdims, initial, where):
    """np.nanmax / np.nanmin: NumPy's fmax / fmin reduce, NaN where every element of a slice is
    (and no `initial` says otherwise)."""
    if where is not True and initial is _NoValue:  # (NumPy's fmax and fmin reduce)
        raise _no_identity("fmax" if name == "max" else "fmin")
    t = as_tracer(a)
    fold = max_ if name == "max" else min_
    r, mask = _without_nan(t, -np.inf if name == "max" else np.inf)
    res = fold(r, axis, None, keepdims, initial, where)
    if mask is not None and initial is _NoValue:
        res = np.where(all_(mask, axis, keepdims=keepdims), np.nan, res)
        res = res[()] if res.ndim == 0 else res
    return finish(res, out, None)


def nanmax(a, axis=None, out=None, keepdims=False, initial=_NoValue, where=True):
    return _nan_extreme("max", a, axis, out, keepdims, initial, where)


def nanmin(a, axis=None, out=None, keepdims=False, initial=_NoValue, where=True):
    return _nan_extreme("min", a, axis, out, keepdims, initial, where)


def _nan_arg(name, a, axis, out, keepdims):
    """np.nanargmax / np.nanargmin: the position among the other elements; a slice of NaNs only
    raises NumPy's ValueError when the function runs."""
    t = as_tracer(a)
    r, mask = _without_nan(t, -np.inf if name == "argmax" else np.inf)
    if mask is not None and (t.is_dynamic or t.size):  # (NumPy skips the check of no element: argmax raises)
        bad = any_(all_(mask, axis))
        nonempty = np.greater(_count(t, tuple(range(t.ndim))), 0) if t.is_dynamic else True
        t._trace.check_assert(np.logical_not(np.logical_and(bad, nonempty)), "All-NaN slice encountered", ValueError)
    return _arg_reduce(name, r, axis, out, keepdims)


def nanargmax(a, axis=None, out=None, *, keepdims=False):
    return _nan_arg("argmax", a, axis, out, keepdims)


def nanargmin(a, axis=None, out=None, *, keepdims=False):
    return _nan_arg("argmin", a, axis, out, keepdims)


def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=_NoValue, where=True):
    r, _ = _without_nan(as_tracer(a), 0)
    return sum_(r, axis, dtype, out, keepdims, initial, where)


def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=_NoValue, where=True):
    r, _ = _without_nan(as_tracer(a), 1)
    return prod(r, axis, dtype, out, keepdims, initial, where)


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    """np.nanmean: the sum of the other elements over their count, divided in float64 and cast to
    the sum's dtype as NumPy's _divide_by_count does (NaN where a slice has none)."""
    t = as_tracer(a)
    r, mask = _without_nan(t, 0)
    if mask is None:
        return mean(t, axis, dtype, out, keepdims, where=where)
    if dtype is not None and not np.issubdtype(dtype, np.inexact):
        raise TypeError("If a is inexact, then dtype must be inexact")
    cnt = sum_(np.logical_not(mask), axis, np.intp, None, keepdims, where=where)
    tot = sum_(r, axis, dtype, None, keepdims, where=where)
    avg = astype(np.true_divide(tot, cnt), tot.dtype)
    avg._scalar = tot._scalar
    return finish(avg, out, None)


REDUCTIONS = {"sum": sum_, "prod": prod, "max": max_, "min": min_, "any": any_, "all": all_}


def _contract(a, b, dtype):
    """sum over the second-to-last axis of a[..., :, :, None] * b[..., None, :, :]-shaped products."""
    prod_ = np.multiply(a, b)
    if dtype == np.bool_:
        return any_(prod_, axis=-2)
    return _reduce("sum", astype(prod_, dtype, copy=False), -2, False, None, dtype, dtype)


def matmul(x1, x2, out=None, **kwargs):
    if kwargs:
        raise unsupported(f"np.matmul with {', '.join(kwargs)}=", "drop the argument")
    a, b = as_tracer(x1), as_tracer(x2)
    for i, t in enumerate((a, b)):
        if t.ndim == 0:
            raise ValueError(f"matmul: Input operand {i} does not have enough dimensions (has 0, gufunc core "
                             "with signature (n?,k),(k,m?)->(n?,m?) requires 1)")
    dtype = ir_dtype(np.result_type(a.dtype, b.dtype), "np.matmul")
    a2 = a[None, :] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    if a2.shape[-1] != b2.shape[-2]:
        raise ValueError(f"matmul: Input operand 1 has a mismatch in its core dimension 0, with gufunc signature "
                         f"(n?,k),(k,m?)->(n?,m?) (size {b2.shape[-2]} is different from {a2.shape[-1]})")
    r = _contract(a2[..., :, :, None], b2[..., None, :, :], dtype)
    if a.ndim == 1:
        r = r[..., 0, :]
    if b.ndim == 1:
        r = r[..., 0]
    if r.ndim == 0:
        r = r[()]
    return finish(r, out, None)


def dot(a, b, out=None):
    x, y = as_tracer(a), as_tracer(b)
    if x.ndim == 0 or y.ndim == 0:
        return np.multiply(x, y) if out is None else np.multiply(x, y, out=out)
    if (x.ndim <= 2 and y.ndim <= 2 and all(not isinstance(d, Extent) and d == 1 for d in x.shape + y.shape)
            and np.result_type(x.dtype, y.dtype) != np.float16):
        # NumPy's dot of two arrays of one element, of at most 2 dimensions each, is their product
        # (BLAS takes both as scalars: a -0.0 stays), not a sum from 0; float16's loop sums (in
        # float32) from +0 all the same
        shape = x.shape[:-1] + y.shape[:-2] + y.shape[-1:] if y.ndim == 2 else x.shape[:-1]
        r = np.multiply(x.reshape(()), y.reshape(()))
        return finish(r.reshape(shape) if shape else r[()], out, None)
    if y.ndim == 1:
        if x.shape[-1] != y.shape[0]:
            raise ValueError(f"shapes {x.shape} and {y.shape} not aligned: {x.shape[-1]} (dim {x.ndim - 1}) != "
                             f"{y.shape[0]} (dim 0)")
        r = _contract(x[..., :, None], y[:, None], ir_dtype(np.result_type(x.dtype, y.dtype), "np.dot"))[..., 0]
        return finish(r[()] if r.ndim == 0 else r, out, None)
    if x.shape[-1] != y.shape[-2]:
        raise ValueError(f"shapes {x.shape} and {y.shape} not aligned: {x.shape[-1]} (dim {x.ndim - 1}) != "
                         f"{y.shape[-2]} (dim {y.ndim - 2})")
    # out[I, J, m] = sum_k x[I, k] * y[J, k, m]
    xs = x.reshape(x.shape[:-1] + (1,) * (y.ndim - 2) + (x.shape[-1], 1))
    return finish(_contract(xs, y, ir_dtype(np.result_type(x.dtype, y.dtype), "np.dot")), out, None)


def einsum(*operands, out=None, optimize=False, dtype=None, order="K", casting="safe"):
    """np.einsum of a subscripts string: each operand's repeated labels its diagonal, its axes
    laid out in the output's labels then the summed ones (first seen first), the product of all
    in the operands' common dtype, summed over the labels the output lacks (as np.matmul sums;
    see the README's Accuracy). One operand that sums nothing is a view of it, as NumPy's."""
    if not operands or not isinstance(operands[0], str):
        raise unsupported("np.einsum with subscripts as lists of axes", "give them as a string ('ij,jk->ik')")
    if order not in ("K", "A", "C", "F"):
        raise ValueError(f"order must be one of 'C', 'F', 'A', or 'K' (got {order!r})")
    spec = operands[0].replace(" ", "")
    ts = [as_tracer(a) for a in operands[1:]]
    terms, arrow, output = spec.partition("->")
    terms = terms.split(",")
    if len(terms) != len(ts):
        raise ValueError(f"{'more' if len(ts) > len(terms) else 'fewer'} operands provided to einstein sum function "
                         "than specified in the subscripts string")
    letters = [c for c in spec if c not in ",->."]
    if any(not c.isalpha() for c in letters):
        raise ValueError(f"invalid subscript '{next(c for c in letters if not c.isalpha())}' in einstein sum subscripts "
                         "string, subscripts must be letters")
    labelled, ell = [], 0
    for i, (term, t) in enumerate(zip(terms, ts)):
        named = len(term.replace("...", ""))
        if "..." not in term and named != t.ndim or named > t.ndim:
            raise ValueError(f"operand has more dimensions than subscripts given in einstein sum, but no '...' "
                             f"ellipsis provided to broadcast the extra dimensions." if named < t.ndim else
                             f"einstein sum subscripts string contains too many subscripts for operand {i}")
        k = t.ndim - named
        ell = builtins.max(ell, k)
        head, _, tail = term.partition("...")
        labelled.append(list(head) + [("...", k - j) for j in range(k)] + list(tail))
    dots = [("...", ell - j) for j in range(ell)]  # (broadcast dimensions, aligned from the right)
    if arrow:
        head, _, tail = output.partition("...")
        out_labels = list(head) + (dots if "..." in output else []) + list(tail)
        for c in set(head + tail):
            if (head + tail).count(c) > 1:
                raise ValueError(f"einstein sum subscripts string includes output subscript '{c}' multiple times")
            if not any(c in term for term in terms):
                raise ValueError(f"einstein sum subscripts string included output subscript '{c}' which never "
                                 "appeared in an input")
    else:
        once = [c for c in set(letters) if letters.count(c) == 1]
        out_labels = dots + sorted(once)
    ts = [_einsum_diagonals(t, labels) for t, labels in zip(ts, labelled)]
    summed = [label for labels in labelled for label in labels if label not in out_labels]
    full = out_labels + list(dict.fromkeys(summed))
    dt = np.result_type(*ts) if dtype is None else np.dtype(dtype)
    for t in ts:
        if not np.can_cast(t.dtype, dt, casting):
            raise TypeError(f"Cannot cast array data from {t.dtype!r} to {dt!r} according to the rule {casting!r}")
    laid = [_einsum_laid_out(t, labels, full) for t, labels in zip(ts, labelled)]
    if len(laid) == 1 and len(full) == len(out_labels) and dt == ts[0].dtype and out is None:
        return laid[0][()] if laid[0].ndim == 0 else laid[0].view_of(laid[0]._view)  # a view, as NumPy's
    r = astype(laid[0], dt, copy=len(laid) == 1)
    for t in laid[1:]:
        r = np.multiply(r, astype(t, dt, copy=False))
    axes = tuple(range(len(out_labels), len(full)))
    if axes:
        r = any_(r, axis=axes) if dt == np.bool_ else _reduce("sum", r, axes, False, None, dt, dt)
    return finish(r[()] if r.ndim == 0 else r, out, None)


def _einsum_diagonals(t, labels):
    """t with each label its subscripts repeat read along their diagonal (moved last, a writeable
    view as NumPy's); `labels` is changed to match."""
    while (c := next((c for c in labels if labels.count(c) > 1), None)) is not None:
        a1 = labels.index(c)
        a2 = labels.index(c, a1 + 1)
        if t.shape[a1] != t.shape[a2]:
            raise ValueError(f"dimensions in operand for collapsing index '{c}' don't match ({t.shape[a1]} != "
                             f"{t.shape[a2]})")
        t = t.view_of(diagonal_view(t, 0, a1, a2))
        labels[:] = [x for d, x in enumerate(labels) if d not in (a1, a2)] + [c]
    return t


def _einsum_laid_out(t, labels, full):
    """t's axes in the order of `full`, with unit axes for the labels it lacks."""
    order = sorted(range(len(labels)), key=lambda d: full.index(labels[d]))
    t = t.transpose(order) if order != list(range(len(labels))) else t
    have = set(labels)
    return t[tuple(slice(None) if label in have else None for label in full)] if len(full) > t.ndim else t


def count_nonzero(a, axis=None, *, keepdims=False):
    t = as_tracer(a)
    nonzero = t if t.dtype == np.bool_ else np.not_equal(t, 0)
    return sum_(nonzero, axis=axis, dtype=np.int64, keepdims=keepdims)


def multi_dot(arrays, *, out=None):
    """np.linalg.multi_dot of two or three arrays, multiplied in the order NumPy picks (the
    cheaper of (AB)C and A(BC)); a 1-d first array is a row, a 1-d last one a column."""
    ts = [as_tracer(a) for a in arrays]
    if len(ts) < 2:
        raise ValueError("Expecting at least two arrays.")
    if len(ts) > 3:
        raise unsupported("np.linalg.multi_dot of more than three arrays", "multiply them with @ in your order")
    if len(ts) == 2:
        r = dot(ts[0], ts[1])
    else:
        first, last = ts[0].ndim == 1, ts[-1].ndim == 1
        a = ts[0].reshape((1, -1)) if first else ts[0]
        c = ts[-1].reshape((-1, 1)) if last else ts[-1]
        b = ts[1]
        (a0, a1b0), (b1c0, c1) = a.shape, c.shape
        r = dot(dot(a, b), c) if a0 * b1c0 * (a1b0 + c1) < a1b0 * c1 * (a0 + b1c0) else dot(a, dot(b, c))
        r = r[0, 0] if first and last else r[0] if first else r[:, 0] if last else r
    if out is None:
        return r
    np.copyto(out, r)
    return out


def norm(x, ord=None, axis=None, keepdims=False):
    """np.linalg.norm as NumPy computes it: the vector norms of any order, and the matrix norms
    but those an SVD gives (2, -2, 'nuc')."""
    t = as_tracer(x)
    if t.dtype.kind != "f":
        t = astype(t, np.float64)
    axes = tuple(range(t.ndim)) if axis is None else normalize_axis_tuple(axis, t.ndim)
    if ord is None or (ord == 2 and axis is not None and np.ndim(axis) == 0) or (ord == "fro" and len(axes) == 2):
        return np.sqrt(sum_(np.multiply(t, t), axis=axis, keepdims=keepdims))
    if len(axes) == 1 and not isinstance(ord, str):
        a = np.abs(t)
        if ord == np.inf:
            return a.max(axis=axes, keepdims=keepdims)
        if ord == -np.inf:
            return a.min(axis=axes, keepdims=keepdims)
        if ord == 0:
            return sum_(np.not_equal(t, 0).astype(t.dtype), axis=axes, keepdims=keepdims)
        if ord == 1:
            return sum_(a, axis=axes, keepdims=keepdims)
        ret = sum_(a ** ord, axis=axes, keepdims=keepdims)
        return ret ** np.reciprocal(ord, dtype=ret.dtype)
    if len(axes) == 2 and ord in (1, -1, np.inf, -np.inf):
        row, col = axes
        a = np.abs(t)
        if ord in (1, -1):  # the largest (smallest) column sum
            sums, at = sum_(a, axis=row), col - (row < col)
        else:  # of the rows
            sums, at = sum_(a, axis=col), row - (col < row)
        ret = sums.max(axis=at) if ord > 0 else sums.min(axis=at)
        if keepdims:
            ret = ret.reshape(tuple(1 if d in axes else n for d, n in enumerate(t.shape)))
        return ret
    raise unsupported(f"np.linalg.norm with ord={ord!r} over {len(axes)} axes",
                      "a vector norm, or a matrix norm of order 1, -1, inf, -inf or 'fro'")
