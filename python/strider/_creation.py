"""Creation inside traced code: zeros, ones, empty, full, the *_like family, arange, linspace,
eye, identity, array/asarray (of nested lists of traced values too), constant pad."""
import builtins
import functools
import operator

import numpy as np

from . import _C
from ._choice import Choice, as_one, number_sides, sides
from ._errors import trace_error, unsupported, where as user_line
from ._indexing import assign
from ._shapes import _as_array, _shape_arg, diagonal, diagonal_view, moveaxis, stack
from ._tracer import (Extent, RunInNumPy, TracedList, Tracer, arange_at, as_tracer, bound, cast_unsafe, check_dtype,
                      current_trace, emit, fresh, known_by_static, known_scalar, like_order, untraced, written)
from ._ufuncs import astype, copy_, promo_arg, where


def _filled(shape, fill_value, dtype, layout, what):
    """A new array of `shape` (axes in memory outermost first as `layout`; None: C order) holding
    `fill_value` (None: uninitialized)."""
    if dtype is None:
        dtype = fill_value.dtype if isinstance(fill_value, Tracer) else np.asarray(fill_value).dtype
    if any(not isinstance(d, Extent) and d < 0 for d in shape):
        raise ValueError("negative dimensions are not allowed")
    t = fresh(shape, check_dtype(dtype, "an array"), layout)
    if type(fill_value) is float and t.dtype.kind != "f":  # NumPy copies it from a float array: -1.0 into uint8 is 255
        fill_value = cast_unsafe(fill_value, t.dtype)
    if fill_value is not None:
        assign(t, fill_value)
    return t


def _c_or_f(order, ndim):
    return list(range(ndim - 1, -1, -1)) if order == "F" else None


def full(shape, fill_value, dtype=None, order="C", what="np.full", **kwargs):
    shape = _shape_arg(shape, what)
    return _filled(shape, fill_value, dtype, _c_or_f(order, len(shape)), what)


def zeros(shape, dtype=float, order="C", **kwargs):
    return full(shape, 0, dtype if dtype is not None else float, order, what="np.zeros")


def ones(shape, dtype=None, order="C", **kwargs):
    return full(shape, 1, dtype if dtype is not None else float, order, what="np.ones")


def empty(shape, dtype=float, order="C", **kwargs):
    return full(shape, None, dtype if dtype is not None else float, order, what="np.empty")


def _like(a, fill_value, dtype, order, shape, what):
    """A new array like `a`, laid out in memory as NumPy lays it out (the prototype's order,
    unless `shape` changes the number of dimensions)."""
    t = as_tracer(a)
    shape = t.shape if shape is None else _shape_arg(shape, what)
    layout = like_order(t, order) if len(shape) == t.ndim else _c_or_f(order, len(shape))
    return _filled(shape, fill_value, t.dtype if dtype is None else dtype, layout, what)


def diag(v, k=0):
    """np.diag: a 1-d array's values on the k-th diagonal of a square array of zeros; a 2-d
    array's k-th diagonal (a read-only view)."""
    t = as_tracer(v)
    if t.ndim == 2:
        return diagonal(t, k)
    if t.ndim != 1:
        raise ValueError("Input must be 1- or 2-d.")
    if t.is_dynamic:
        raise unsupported("np.diag of an array whose length is known only at run time", "slice it first")
    n = t.shape[0] + builtins.abs(k)
    out = zeros((n, n), t.dtype)
    assign(out.view_of(diagonal_view(out, k, 0, 1)), t)
    return out


def outer(a, b, out=None):
    """np.outer: every product of a's and b's elements (both flattened)."""
    r = np.multiply(np.ravel(as_tracer(a))[:, None], np.ravel(as_tracer(b))[None, :])
    if out is None:
        return r
    assign(out, r)
    return out


def zeros_like(a, dtype=None, order="K", subok=True, shape=None, **kwargs):
    return _like(a, 0, dtype, order, shape, "np.zeros_like")


def ones_like(a, dtype=None, order="K", subok=True, shape=None, **kwargs):
    return _like(a, 1, dtype, order, shape, "np.ones_like")


def empty_like(prototype, dtype=None, order="K", subok=True, shape=None, **kwargs):
    return _like(prototype, None, dtype, order, shape, "np.empty_like")


def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, **kwargs):
    return _like(a, fill_value, dtype, order, shape, "np.full_like")


def _known_number(v, what):
    """A traced 0-d value as the number tracing knows it is (Trace.fold); others as they are."""
    if not isinstance(v, Tracer):
        return v
    value = known_scalar(v)
    if value is None:
        raise known_by_static(v, what, "its length must be known while tracing")
    return value


def arange(start, stop=None, step=None, dtype=None, **kwargs):
    if isinstance(stop if stop is not None else start, Extent):
        return _arange_to_length(*((0, start) if stop is None else (start, stop)), 1 if step is None else step, dtype)
    start, stop, step = (_known_number(v, "a bound of np.arange") for v in (start, stop, step))
    args = [v for v in (start, stop, step) if v is not None] if stop is not None or step is not None else [start]
    real = np.arange(*args, dtype=dtype)
    check_dtype(real.dtype, "np.arange")
    trace = current_trace()
    if len(real) <= 2:
        return copy_(trace.const(real))
    # NumPy fills first + i * (second - first) from its first two values
    return emit("arange", [trace.const(real[0]), trace.const(real[1])], real.shape, real.dtype)


def _arange_to_length(start, stop, step, dtype):
    """np.arange up to a run-time length (np.arange(len(keep))): a run-time length of its own."""
    if not all(type(v) is int for v in (start, step)) or step <= 0:
        raise unsupported("np.arange to a length known only at run time from a start or with a step other than "
                          "known positive ints", "use np.arange(n) * step + start")
    dtype = np.arange(start, start + step, step, dtype=dtype).dtype
    check_dtype(dtype, "np.arange")
    if (start, step) == (0, 1):  # np.arange(len(v)): v's own length, which broadcasts against v's
        out = arange_at(0, 1, stop)
    else:
        count = np.maximum(np.floor_divide(np.add(stop.value(), step - 1 - start), step), 0)
        out = arange_at(start, step, Extent(builtins.max(0, -(-(bound(stop) - start) // step)), count._view.storage))
    return out if dtype == out.dtype else astype(out, dtype)


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, **kwargs):
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    div = (num - 1) if endpoint else num
    st, sp = as_tracer(start), as_tracer(stop)
    dt = np.result_type(promo_arg(st), promo_arg(sp))
    if dt.kind not in "fc":
        dt = np.result_type(dt, 1.0)
    dt = check_dtype(dt, "np.linspace")
    integer_dtype = dtype is not None and np.issubdtype(dtype, np.integer)
    dtype = dt if dtype is None else dtype
    delta = np.subtract(sp, st, dtype=dt)
    y = arange(0, num, dtype=dt).reshape((-1,) + (1,) * delta.ndim)
    traced = isinstance(start, Tracer) or isinstance(stop, Tracer)
    if div > 0:
        step = np.true_divide(delta, div)
        if traced:
            y = where(np.equal(step, 0), np.multiply(np.true_divide(y, div), delta), np.multiply(y, step))
        else:
            real_step = (np.subtract(np.asarray(stop, dt), np.asarray(start, dt), dtype=dt)) / div
            zero = np.any(real_step == 0)
            y = np.multiply(np.true_divide(y, div), delta) if zero else np.multiply(y, step)
    else:
        step = np.nan
        y = np.multiply(y, delta)
    y = np.add(y, st)
    if endpoint and num > 1:
        y[-1, ...] = sp
    if axis != 0:
        y = moveaxis(y, 0, axis)
    if integer_dtype:
        y = np.floor(y)
    y = astype(y, dtype, copy=False)
    return (y, step) if retstep else y


def eye(N, M=None, k=0, dtype=float, order="C", **kwargs):
    M = N if M is None else M
    k = operator.index(k)
    if isinstance(N, Extent) or isinstance(M, Extent):  # (supervision's `ious - np.eye(rows)` after a filter)
        ones_at = np.equal(np.add(arange(N)[:, None], k), arange(M)[None, :])
        return astype(ones_at, np.dtype(dtype))
    N, M = operator.index(N), operator.index(M)
    out = zeros((N, M), dtype)
    if k >= M or -k >= N:
        return out
    start = k if k >= 0 else -k * M
    rows = builtins.min(N, M - k)
    length = len(range(start, rows * M, M + 1))
    diag = _C.View(out._view.storage, [length], [M + 1], start)
    assign(out.view_of(diag), 1)
    return out


def identity(n, dtype=None, **kwargs):
    return eye(n, dtype=float if dtype is None else dtype)


def _contains_tracer(obj):
    if isinstance(obj, (Tracer, Extent)) or type(obj) is Choice:
        return True
    return isinstance(obj, (list, tuple)) and builtins.any(_contains_tracer(o) for o in obj)


def _nested_leaves(obj, out):
    if isinstance(obj, (list, tuple)):
        for o in obj:
            _nested_leaves(o, out)
    else:
        out.append(obj)
    return out


def _nested_stack(obj, dtype):
    if isinstance(obj, (list, tuple)):
        if not obj:
            return current_trace().const(np.zeros((0,), dtype))
        return stack([_nested_stack(o, dtype) for o in obj])
    return as_one(obj, dtype) if type(obj) is Choice else written(obj, dtype, "item")


def _leaf_dtype(x):
    return x.dtype if isinstance(x, Tracer) else np.dtype(np.int64) if isinstance(x, Extent) else np.asarray(x).dtype


def items(value, dtype=None):
    """Nested lists of numbers as np.array(value, dtype) holds them, and False; where dtype is
    None and numbers of several kinds (Choices) make np.array's dtype one the run decides, in
    the widest of those (which holds each exactly, for a cast later), and True."""
    leaves = _nested_leaves(value, [])
    if not any(type(x) is Choice for x in leaves):
        return as_tracer(value) if dtype is None else written(value, dtype, "item"), False
    possible = _possible_dtypes(leaves) if dtype is None else {np.dtype(dtype)}
    return _nested_stack(value, check_dtype(np.result_type(*possible), "np.array")), len(possible) > 1


def array_dtype(leaves):
    """np.array's dtype for nested lists of these leaves; a number of several kinds (a Choice,
    `max(0, x)`) may make it one the run decides: then a TraceError (a graph break)."""
    possible = _possible_dtypes(leaves)
    if len(possible) > 1:
        raise trace_error("np.array of numbers whose kinds are known only when the function runs (" +
                          ", ".join(str(p) for p in sorted(possible, key=str)) + " by which they are)",
                          "give np.array a dtype")
    return possible.pop()


def _possible_dtypes(leaves):
    possible = {np.result_type(*[_leaf_dtype(x) for x in leaves if type(x) is not Choice] or [np.bool_])}
    for x in leaves:
        if type(x) is Choice:
            if not number_sides(x):
                x._fail()
            possible = {np.result_type(p, _leaf_dtype(v)) for p in possible for _, v in sides(x)}
    return possible


def _of_list(lst, dtype):
    """The items of a list a traced loop filled, as np.array(lst, dtype) holds them; where NumPy's
    array of the list empty (np.array([], dtype): float64 or dtype, of shape (0,)) is not that,
    a check that runs the call in NumPy when the list is empty."""
    if lst.kinds is not None:
        return _of_kinds(lst, dtype)
    if lst.mixed and dtype is None:
        raise trace_error("np.array of a list whose items hold numbers of kinds known only when the function runs "
                          "(`0` on one path and a float64 on another, for each item)", "give np.array a dtype")
    t = lst.array(raw=dtype is not None)
    empty = np.array([], dtype=dtype)
    if t.ndim > 1 or (np.dtype(dtype) if dtype is not None else t.dtype) != empty.dtype:
        compiled = [0] + list(t.shape[1:])
        current_trace().check_assert(np.greater(lst.size().value(), 0), (
            f"np.array of a list of a run-time length, empty when the function runs, at {user_line()}: NumPy's is "
            f"{empty.dtype}{list(empty.shape)}, the compiled program's {t.dtype}{compiled}"), RunInNumPy)
    return t


def _of_kinds(lst, dtype):
    """np.array(lst, dtype) of a list of numbers of several kinds, kept in the widest: dtype None
    is the kinds' a call appended (float64 where none), so a check runs the call in NumPy where
    those make another dtype than the compiled one."""
    t = lst.array(raw=True)
    if dtype is not None:
        if np.dtype(dtype) != t.dtype:  # (NumPy casts each number once, from its own kind)
            raise trace_error(f"np.array of a list of numbers of several kinds ({kind_names(lst)}) with dtype "
                              f"{np.dtype(dtype)}", f"give np.array their widest dtype, {t.dtype}, or none")
        return t
    trace = current_trace()
    present = [np.greater(Tracer(trace, _C.View(counter, [], [], 0), np.int64), 0) for _, counter in lst.kinds]
    other = None  # the kinds a call may append that make another dtype: which appeared, which did not
    for made in range(1 << len(present)):
        subset = [kind for k, (kind, _) in enumerate(lst.kinds) if made >> k & 1]
        if (np.result_type(*subset) if subset else np.dtype(np.float64)) != t.dtype:
            term = functools.reduce(np.logical_and, [p if made >> k & 1 else np.logical_not(p)
                                                     for k, p in enumerate(present)])
            other = term if other is None else np.logical_or(other, term)
    if other is not None:
        trace.check_assert(np.logical_not(other), (
            f"np.array of a list a loop filled with numbers of several kinds ({kind_names(lst)}) at {user_line()}: "
            f"NumPy's dtype is that of the kinds a call appends (float64 where none), the compiled program's "
            f"{t.dtype}"), RunInNumPy)
    return t


def _pad_gathered(t, widths, mode):
    """np.pad's edge, reflect, symmetric and wrap: each axis gathered at the positions NumPy's pad
    of its indices gives (a width past the axis's length reflects or wraps again, as NumPy's)."""
    out = t
    for axis, (lo, hi) in enumerate(widths):
        if lo or hi:
            if isinstance(t.shape[axis], Extent):
                raise unsupported(f"np.pad with mode={mode!r} along a length known only at run time",
                                  "pad with mode='constant'")
            out = np.take(out, np.pad(np.arange(t.shape[axis]), (int(lo), int(hi)), mode=mode), axis=axis)
    return copy_(out) if out is t else out  # (NumPy's pad is a new array)


def kind_names(lst):
    return ", ".join(str(kind) for kind, _ in lst.kinds)


def array(object, dtype=None, *, copy=True, order="K", subok=False, ndmin=0, **kwargs):
    if isinstance(object, Extent):  # (np.array(len(keep)): the length, not the int that is its bound)
        object = object.value()
    if isinstance(object, TracedList):
        object = _of_list(object, dtype)
    if _contains_tracer(object):
        if isinstance(object, Tracer):
            t = _as_array(astype(object, dtype if dtype is not None else object.dtype,
                                 copy=copy is not False and copy is not None))
        else:
            leaves = _nested_leaves(object, [])
            dt = np.dtype(dtype) if dtype is not None else array_dtype(leaves)
            t = _nested_stack(object, check_dtype(dt, "np.array"))
    else:
        with untraced():  # the object's __array__ is user code; it must make a real array
            concrete = np.array(object, dtype=dtype)
        t = copy_(current_trace().const(concrete))
    if t.ndim < ndmin:
        t = t.reshape((1,) * (ndmin - t.ndim) + t.shape)
    return t


def asarray(a, dtype=None, order=None, **kwargs):
    if isinstance(a, TracedList):
        a = _of_list(a, dtype)
    if isinstance(a, Tracer):
        return _as_array(a if dtype is None else astype(a, dtype, copy=False))
    return array(a, dtype=dtype)


def ascontiguousarray(a, dtype=None, **kwargs):
    t = asarray(a, dtype)
    if not t._view.is_c_contiguous:
        t = copy_(t, order="C")
    return t.reshape((1,)) if t.ndim == 0 else t


def pad(array, pad_width, mode="constant", **kwargs):
    t = as_tracer(array)
    widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (t.ndim, 2))
    if (widths < 0).any():
        raise ValueError("index can't contain negative values")
    if mode in ("edge", "reflect", "symmetric", "wrap") and kwargs.get("reflect_type", "even") == "even" and not (
            set(kwargs) - {"reflect_type"}):
        return _pad_gathered(t, widths, mode)
    if mode != "constant" or set(kwargs) - {"constant_values"}:
        raise unsupported(f"np.pad with mode={mode!r}" + (f" and {', '.join(kwargs)}=" if kwargs else ""),
                          "pad with mode 'constant' (constant_values=...), 'edge', 'reflect', 'symmetric' or 'wrap'")
    fill_value = kwargs.get("constant_values", 0)
    if np.ndim(fill_value) != 0:
        raise unsupported("np.pad with per-axis constant_values", "pass one scalar constant_values")
    if type(fill_value) in (bool, int, float):  # NumPy's pad casts it as an array: -1 into uint8 is 255
        fill_value = cast_unsafe(fill_value, t.dtype)
    result = full(tuple(int(d + lo + hi) for d, (lo, hi) in zip(t.shape, widths)), fill_value, t.dtype)
    # the trailing ... keeps a 0-d result's key a view (result[()] would be a scalar)
    assign(result[tuple(slice(int(lo), int(lo) + d) for d, (lo, _) in zip(t.shape, widths)) + (...,)], t)
    return result


def polyval(p, x):
    """np.polyval: Horner's rule from zeros like x, in NumPy's order (p an array: its elements are
    NumPy scalars, not weak Python numbers)."""
    p = asarray(p)
    x = asarray(x)
    y = zeros_like(x)
    for i in range(len(p)):
        y = y * x + p[i]
    return y
