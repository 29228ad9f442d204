"""NumPy's functions on Tracers: ufuncs, reductions, views, creation and joins.

Promotion, loop selection and most error messages come from NumPy itself (ufunc.resolve_dtypes,
np.result_type), so the traced program has NumPy's dtypes by construction.
"""
import builtins
import operator

import numpy as np
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from . import _C
from ._errors import unsupported
from ._indexing import assign
from ._tracer import IR_DTYPES, Tracer, as_tracer, check_dtype, check_writeable, current_trace, shape_of, weak_type

_NoValue = np._NoValue

UFUNCS = {
    np.negative: "negative", np.positive: "positive", np.absolute: "absolute", np.fabs: "absolute",
    np.sign: "sign", np.square: "square", np.reciprocal: "reciprocal", np.sqrt: "sqrt", np.cbrt: "cbrt",
    np.exp: "exp", np.exp2: "exp2", np.expm1: "expm1", np.log: "log", np.log2: "log2", np.log10: "log10",
    np.log1p: "log1p", np.sin: "sin", np.cos: "cos", np.tan: "tan", np.arcsin: "arcsin", np.arccos: "arccos",
    np.arctan: "arctan", np.sinh: "sinh", np.cosh: "cosh", np.tanh: "tanh", np.arcsinh: "arcsinh",
    np.arccosh: "arccosh", np.arctanh: "arctanh", np.floor: "floor", np.ceil: "ceil", np.trunc: "trunc",
    np.rint: "rint", np.logical_not: "logical_not", np.isfinite: "isfinite", np.isnan: "isnan",
    np.isinf: "isinf", np.signbit: "signbit", np.invert: "invert",
    np.add: "add", np.subtract: "subtract", np.multiply: "multiply", np.true_divide: "divide",
    np.floor_divide: "floor_divide", np.remainder: "remainder", np.fmod: "fmod", np.power: "power",
    np.float_power: "power", np.maximum: "maximum", np.minimum: "minimum", np.fmax: "fmax", np.fmin: "fmin",
    np.arctan2: "arctan2", np.hypot: "hypot", np.copysign: "copysign", np.logaddexp: "logaddexp",
    np.equal: "equal", np.not_equal: "not_equal", np.less: "less", np.less_equal: "less_equal",
    np.greater: "greater", np.greater_equal: "greater_equal", np.logical_and: "logical_and",
    np.logical_or: "logical_or", np.logical_xor: "logical_xor", np.bitwise_and: "bitwise_and",
    np.bitwise_or: "bitwise_or", np.bitwise_xor: "bitwise_xor", np.left_shift: "left_shift",
    np.right_shift: "right_shift",
}
_REDUCING_UFUNCS = {np.add: "sum", np.multiply: "prod", np.maximum: "max", np.minimum: "min",
                    np.logical_and: "all", np.logical_or: "any"}
_WEAK_OF_KIND = {"b": bool, "i": int, "f": float}
_COMPARISONS = {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"}


def _widen_for_python_ints(inputs, types):
    """NumPy 2 compares integers with out-of-range Python ints exactly instead of raising:
    compare in int64 when the value fits there."""
    for x in inputs:
        if type(x) is int:
            for t in types:
                if isinstance(t, np.dtype) and t.kind == "i" and not np.can_cast(np.min_scalar_type(x), t) \
                        and -2**63 <= x < 2**63:
                    return tuple(np.dtype(np.int64) if isinstance(t, np.dtype) and t.kind == "i" else t
                                 for t in types)
    return types


def _trace():
    return current_trace()


def promo_arg(x):
    """What np.result_type should see for x: a Python value for weak scalars, else a dtype."""
    w = weak_type(x)
    return {int: 0, float: 0.0}.get(w, w) if isinstance(w, type) else w


def _ir_dtype(dtype, what):
    dtype = np.dtype(dtype)
    if dtype not in IR_DTYPES:
        raise unsupported(f"{what} computing in {dtype}", "cast the operands to float32/float64 or "
                          "int32/int64 first")
    return dtype


def _fresh(shape, dtype):
    trace = _trace()
    return Tracer(trace, trace.temp(shape, dtype), dtype)


def keep_order(inputs, ndim):
    """NumPy's order='K' for a new elementwise result: the axes, outermost first, sorted the way
    the inputs (as broadcast) lay them out in memory; C order wins where they disagree
    (npyiter_find_best_axis_ordering)."""
    strides = [t._view.strides for t in inputs if t.ndim == ndim]
    perm = list(range(ndim - 1, -1, -1))  # innermost first, as NumPy's iterator keeps them
    for i0 in range(1, ndim):
        a0, pos = perm[i0], i0
        for i1 in range(i0 - 1, -1, -1):
            a1 = perm[i1]
            ambiguous, swap = True, False
            for st in strides:
                if st[a0] != 0 and st[a1] != 0:
                    if abs(st[a1]) <= abs(st[a0]):
                        swap = False
                    elif ambiguous:
                        swap = True
                    ambiguous = False
            if ambiguous:
                continue
            if not swap:
                break
            pos = i1
        if pos != i0:
            perm[pos + 1:i0 + 1] = perm[pos:i0]
            perm[pos] = a0
    return perm[::-1]


def _emit(name, inputs, shape, dtype, axes=(), order=None, **flags):
    """Records `name(inputs)` into a new temporary and returns its Tracer."""
    trace = _trace()
    view = trace.temp(shape, dtype, order)
    trace.op(name, inputs, view, axes)
    return Tracer(trace, view, dtype, **flags)


def _numpy_raises(fn, *args, **kwargs):
    """Raises what NumPy raises for the same call on stand-in values (exact error types)."""
    fn(*args, **kwargs)


def _dummy(x):
    w = weak_type(x)
    if isinstance(w, type):
        return w(1)
    return np.ones((), w)


def broadcast_shape(*shapes):
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError:
        raise ValueError("operands could not be broadcast together with shapes "
                         + " ".join(str(tuple(s)) for s in shapes)) from None


# -- ufuncs --

def ufunc_call(uf, inputs, out=None, dtype=None, casting="same_kind", where=True, **kwargs):
    name = UFUNCS.get(uf)
    if name is None:
        raise unsupported(f"np.{uf.__name__}", "see the README for the supported NumPy functions")
    if where is not True:
        raise unsupported(f"np.{uf.__name__}(..., where=...)", "compute the result and select with np.where")
    if kwargs:
        raise unsupported(f"np.{uf.__name__} with {', '.join(kwargs)}=", "drop the argument")
    if isinstance(out, tuple):
        if len(out) != 1:
            raise ValueError(f"The 'out' tuple must have exactly one entry per ufunc output")
        out = out[0]
    types = tuple(weak_type(x) for x in inputs)
    if name in _COMPARISONS:
        types = _widen_for_python_ints(inputs, types)
    extra = {} if dtype is None else {"signature": (None,) * uf.nin + (np.dtype(dtype),)}
    loop = uf.resolve_dtypes(types + (None,), casting=casting, **extra)
    in_dts, out_dt = loop[:uf.nin], _ir_dtype(loop[uf.nin], f"np.{uf.__name__}")
    for dt in in_dts:
        _ir_dtype(dt, f"np.{uf.__name__}")
    shape = broadcast_shape(*(shape_of(x) for x in inputs))
    ins = [as_tracer(x, dt).broadcast_to(shape) for x, dt in zip(inputs, in_dts)]
    weak = None
    if out is None and all(isinstance(w, type) or (isinstance(x, Tracer) and x._weak) for x, w in zip(inputs, types)):
        weak = _WEAK_OF_KIND.get(out_dt.kind)
    result = _emit(name, ins, shape, out_dt, order=keep_order(ins, len(shape)), weak=weak, scalar=len(shape) == 0)
    if out is None:
        return result
    if not isinstance(out, Tracer):
        raise unsupported("out= naming an array created outside the compiled function",
                          "pass the output array as an argument")
    if broadcast_shape(shape, out.shape) != out.shape:
        raise ValueError(f"non-broadcastable output operand with shape {out.shape} doesn't match the "
                         f"broadcast shape {shape}")
    if not np.can_cast(out_dt, out.dtype, casting):
        _numpy_raises(uf, *[_dummy(x) for x in inputs], out=np.zeros((), out.dtype), casting=casting)
        raise TypeError(f"Cannot cast ufunc '{uf.__name__}' output from {out_dt!r} to {out.dtype!r} "
                        f"with casting rule {casting!r}")
    assign(out, result)
    return out


def ufunc_method(uf, method, inputs, kwargs):
    if uf is np.matmul and method == "__call__":
        return matmul(*inputs, **kwargs)
    if method == "__call__":
        return ufunc_call(uf, inputs, **kwargs)
    if method == "reduce" and uf in _REDUCING_UFUNCS:
        kwargs.setdefault("axis", 0)
        return REDUCTIONS[_REDUCING_UFUNCS[uf]](*inputs, **kwargs)
    raise unsupported(f"np.{uf.__name__}.{method}", "use the plain ufunc or a reduction such as np.sum")


# -- reductions --

def _axes(t, axis):
    if axis is None:
        return tuple(range(t.ndim))
    return tuple(sorted(normalize_axis_tuple(axis, t.ndim)))


def _finish(r, out, keep_shape):
    """keepdims and out= for reductions."""
    if keep_shape is not None:
        r = r.view_of(r._view.reshape(list(keep_shape)), scalar=r._scalar)
    if out is None:
        return r
    if isinstance(out, tuple):
        out = out[0]
    if r.shape != out.shape:
        raise ValueError(f"output parameter for reduction operation has the wrong shape {out.shape}, "
                         f"expected {r.shape}")
    assign(out, r)
    return out


def _reduce(name, a, axis, keepdims, out, acc_dtype=None, result_dtype=None, initial=_NoValue,
            where=True):
    t = as_tracer(a)
    if initial is not _NoValue or where is not True:
        raise unsupported(f"np.{name} with initial= or where=", "reduce first, then combine with "
                          "np.maximum/np.where")
    axes = _axes(t, axis)
    if acc_dtype is not None and acc_dtype != t.dtype:
        t = t.astype(acc_dtype)
    out_shape = tuple(d for i, d in enumerate(t.shape) if i not in axes)
    count = int(np.prod([t.shape[i] for i in axes], dtype=np.int64))
    if count == 0 and name in ("max", "min", "argmax", "argmin") and int(np.prod(out_shape, dtype=np.int64)):
        if name.startswith("arg"):
            raise ValueError(f"attempt to get {name} of an empty sequence")
        raise ValueError(f"zero-size array to reduction operation {'maximum' if name == 'max' else 'minimum'} "
                         "which has no identity")
    dtype = result_dtype or t.dtype
    r = _emit(name, [t], out_shape, dtype, axes, scalar=t.ndim == 0 or not out_shape and not keepdims)
    keep = tuple(1 if i in axes else d for i, d in enumerate(t.shape)) if keepdims is True else None
    return _finish(r, out, keep)


def _sum_dtype(dt, dtype):
    if dtype is not None:
        return _ir_dtype(dtype, "a reduction")
    if dt == np.bool_ or (dt.kind == "i" and dt.itemsize < 8):
        return np.dtype(np.int64)
    return dt


def sum_(a, axis=None, dtype=None, out=None, keepdims=False, initial=_NoValue, where=True):
    acc = _sum_dtype(as_tracer(a).dtype, dtype)
    return _reduce("sum", a, axis, keepdims, out, acc, acc, initial, where)


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=_NoValue, where=True):
    acc = _sum_dtype(as_tracer(a).dtype, dtype)
    return _reduce("prod", a, axis, keepdims, out, acc, acc, initial, where)


def max_(a, axis=None, out=None, keepdims=False, initial=_NoValue, where=True):
    return _reduce("max", a, axis, keepdims, out, initial=initial, where=where)


def min_(a, axis=None, out=None, keepdims=False, initial=_NoValue, where=True):
    return _reduce("min", a, axis, keepdims, out, initial=initial, where=where)


def any_(a, axis=None, out=None, keepdims=False, *, where=True):
    return _reduce("any", a, axis, keepdims, out, result_dtype=np.dtype(np.bool_), where=where)


def all_(a, axis=None, out=None, keepdims=False, *, where=True):
    return _reduce("all", a, axis, keepdims, out, result_dtype=np.dtype(np.bool_), where=where)


def _arg_reduce(name, a, axis, out, keepdims):
    t = as_tracer(a)
    if axis is not None:
        axis = normalize_axis_index(operator.index(axis), t.ndim)
    r = _reduce(name, t, axis, False, None, result_dtype=np.dtype(np.int64))
    if keepdims:
        keep = tuple(1 if axis is None or i == axis else d for i, d in enumerate(t.shape))
        r = r.view_of(r._view.reshape(list(keep)), scalar=t.ndim == 0)
    return _finish(r, out, None)


def argmax(a, axis=None, out=None, *, keepdims=False):
    return _arg_reduce("argmax", a, axis, out, keepdims)


def argmin(a, axis=None, out=None, *, keepdims=False):
    return _arg_reduce("argmin", a, axis, out, keepdims)


def _mean_dtype(t, dtype):
    if dtype is not None:
        return _ir_dtype(dtype, "np.mean")
    return np.dtype(np.float64) if t.dtype.kind in "biu" else t.dtype


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    t = as_tracer(a)
    axes = _axes(t, axis)
    count = int(np.prod([t.shape[i] for i in axes], dtype=np.int64))
    s = _reduce("sum", t, axis, keepdims, None, _mean_dtype(t, dtype), None, where=where)
    return _finish(np.true_divide(s, count), out, None)


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=_NoValue,
        correction=_NoValue):
    if mean is not _NoValue:
        raise unsupported("np.var(..., mean=)", "drop the argument")
    if correction is not _NoValue:
        ddof = correction
    t = as_tracer(a)
    axes = _axes(t, axis)
    count = int(np.prod([t.shape[i] for i in axes], dtype=np.int64))
    acc = _mean_dtype(t, dtype)
    centred = t - np.true_divide(_reduce("sum", t, axis, True, None, acc, None, where=where), count)
    ss = _reduce("sum", np.multiply(centred, centred), axis, keepdims, None, where=where)
    return _finish(np.true_divide(ss, builtins.max(count - ddof, 0)), out, None)


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=_NoValue,
        correction=_NoValue):
    v = var(a, axis, dtype, None, ddof, keepdims, where=where, mean=mean, correction=correction)
    return _finish(np.sqrt(v), out, None)


REDUCTIONS = {"sum": sum_, "prod": prod, "max": max_, "min": min_, "any": any_, "all": all_}


# -- views --

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
    if any(isinstance(d, Tracer) for d in dims):
        raise unsupported(f"{what} with a size that is a traced value", "sizes must be known while tracing: "
                          "pass them as Python ints or static arguments (static_argnames)")
    return tuple(operator.index(d) for d in dims)


def _infer_shape(shape, size):
    shape = list(shape)
    unknown = [i for i, d in enumerate(shape) if d == -1]
    if len(unknown) > 1:
        raise ValueError("can only specify one unknown dimension")
    if any(d < -1 for d in shape):
        raise ValueError("negative dimensions not allowed")
    known = int(np.prod([d for d in shape if d != -1], dtype=np.int64))
    if unknown:
        if known == 0 or size % known:
            raise ValueError(f"cannot reshape array of size {size} into shape {tuple(shape)}")
        shape[unknown[0]] = size // known
    elif known != size:
        raise ValueError(f"cannot reshape array of size {size} into shape {tuple(shape)}")
    return shape


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
    if order in ("A", "K"):
        order = "F" if t.ndim > 1 and transpose(t)._view.is_c_contiguous and not t._view.is_c_contiguous else "C"
    if order == "F":
        return ravel(transpose(t), "C")
    if order != "C":
        raise ValueError(f"order must be one of 'C', 'F', 'A', or 'K' (got {order!r})")
    return reshape(t if t._view.is_c_contiguous else copy_(t, "C"), -1)


def squeeze(a, axis=None):
    t = as_tracer(a)
    if axis is None:
        axes = tuple(i for i, d in enumerate(t.shape) if d == 1)
    else:
        axes = normalize_axis_tuple(axis, t.ndim)
        if any(t.shape[i] != 1 for i in axes):
            raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
    if not axes:
        return t
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
    if any(d < 0 for d in shape):
        raise ValueError("all elements of broadcast shape must be non-negative")
    try:
        view = t._view.broadcast_to(list(shape))
    except ValueError:
        raise ValueError(f"operands could not be broadcast together with remapped shapes [original->remapped]: "
                         f"{t.shape} and requested shape {shape}") from None
    return t.view_of(view, readonly="broadcast")


def broadcast_arrays(*args, subok=False):
    ts = [as_tracer(a) for a in args]
    shape = broadcast_shape(*(t.shape for t in ts))
    return tuple(t if t.shape == shape else broadcast_to(t, shape) for t in ts)


def flip(m, axis=None):
    t = as_tracer(m)
    if t.ndim == 0:
        return t[()]
    axes = _axes(t, axis)
    return t.view_of(t._view.subscript([("s", d - 1, -1, d) if i in axes else ("s", 0, 1, d)
                                        for i, d in enumerate(t.shape)]))


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


def diff(a, n=1, axis=-1, prepend=_NoValue, append=_NoValue):
    if prepend is not _NoValue or append is not _NoValue:
        raise unsupported("np.diff with prepend= or append=", "concatenate first")
    t = as_tracer(a)
    axis = normalize_axis_index(axis, t.ndim)
    head = (slice(None),) * axis
    for _ in range(n):
        t = np.not_equal(t[head + (slice(1, None),)], t[head + (slice(None, -1),)]) if t.dtype == np.bool_ \
            else np.subtract(t[head + (slice(1, None),)], t[head + (slice(None, -1),)])
    return t


# -- copies, casts, writes --

def copy_(a, order="K", subok=False):
    t = as_tracer(a)
    return _emit("copy", [t], t.shape, t.dtype, order=keep_order([t], t.ndim) if order == "K" else None)


def astype(t, dtype, order="K", casting="unsafe", subok=True, copy=True):
    dtype = check_dtype(dtype, "astype")
    if dtype == t.dtype:
        return copy_(t) if copy else t
    if not np.can_cast(t.dtype, dtype, casting):
        raise TypeError(f"Cannot cast array data from {t.dtype!r} to {dtype!r} according to the rule {casting!r}")
    return _emit("cast", [t], t.shape, dtype, order=keep_order([t], t.ndim) if order == "K" else None)


def copyto(dst, src, casting="same_kind", where=True):
    if not isinstance(dst, Tracer):
        raise unsupported("np.copyto into an array created outside the compiled function",
                          "pass it as an argument")
    check_writeable(dst)
    if isinstance(src, Tracer):
        if not np.can_cast(src.dtype, dst.dtype, casting):
            raise TypeError(f"Cannot cast array data from {src.dtype!r} to {dst.dtype!r} according to the "
                            f"rule {casting!r}")
    else:
        _numpy_raises(np.copyto, np.zeros((), dst.dtype), src, casting=casting)
    if where is not True:
        # elements where the mask is False keep their value: write them back unchanged
        src = globals()["where"](where, as_tracer(src, dst.dtype), dst)
    assign(dst, src)


def fill(t, value):
    assign(t, value)


def where(condition, x=_NoValue, y=_NoValue):
    if x is _NoValue or y is _NoValue:
        raise unsupported("np.where with one argument (np.nonzero)", "use the three-argument "
                          "np.where(cond, a, b)")
    c = as_tracer(condition)
    if c.dtype != np.bool_:
        c = c.astype(np.bool_)
    dtype = _ir_dtype(np.result_type(promo_arg(x), promo_arg(y)), "np.where")
    shape = broadcast_shape(c.shape, shape_of(x), shape_of(y))
    ins = [c.broadcast_to(shape), as_tracer(x, dtype).broadcast_to(shape), as_tracer(y, dtype).broadcast_to(shape)]
    return _emit("where", ins, shape, dtype, order=keep_order(ins, len(shape)))


def clip(a, a_min=_NoValue, a_max=_NoValue, out=None, *, min=_NoValue, max=_NoValue, **kwargs):
    lo = min if a_min is _NoValue else a_min
    hi = max if a_max is _NoValue else a_max
    lo = None if lo is _NoValue else lo
    hi = None if hi is _NoValue else hi
    r = as_tracer(a)
    if lo is not None:
        r = np.maximum(r, lo, **kwargs)
    if hi is not None:
        r = np.minimum(r, hi, **kwargs)
    if lo is None and hi is None:
        r = copy_(r)
    if out is None:
        return r
    if not np.can_cast(r.dtype, out.dtype, kwargs.get("casting", "same_kind")):
        raise TypeError(f"Cannot cast ufunc 'clip' output from {r.dtype!r} to {out.dtype!r} with casting rule "
                        "'same_kind'")
    assign(out, r)
    return out


def round_(a, decimals=0, out=None):
    t = as_tracer(a)
    if t.dtype == np.bool_:
        raise unsupported("np.round of a bool array (NumPy computes it in float16)", "cast to float32 first")
    if t.dtype.kind == "i":
        f = 10 ** builtins.abs(decimals)
        r = copy_(t) if decimals >= 0 else astype(np.multiply(np.rint(np.true_divide(t, f)), f), t.dtype)
    elif decimals == 0:
        r = np.rint(t)
    else:
        f = 10.0 ** builtins.abs(decimals)
        first, second = (np.multiply, np.true_divide) if decimals > 0 else (np.true_divide, np.multiply)
        r = second(np.rint(first(t, f)), f)
    if out is None:
        return r
    assign(out, r)
    return out


def fix(x, out=None):
    return np.trunc(x, out=out) if out is not None else np.trunc(x)


# -- creation --

def full(shape, fill_value, dtype=None, order="C", what="np.full", **kwargs):
    if dtype is None:
        dtype = fill_value.dtype if isinstance(fill_value, Tracer) else np.asarray(fill_value).dtype
    shape = _shape_arg(shape, what)
    if any(d < 0 for d in shape):
        raise ValueError("negative dimensions are not allowed")
    t = _fresh(shape, check_dtype(dtype, "an array"))
    if fill_value is not None:
        assign(t, fill_value)
    return t


def zeros(shape, dtype=float, order="C", **kwargs):
    return full(shape, 0, dtype if dtype is not None else float, what="np.zeros")


def ones(shape, dtype=None, order="C", **kwargs):
    return full(shape, 1, dtype if dtype is not None else float, what="np.ones")


def empty(shape, dtype=float, order="C", **kwargs):
    return full(shape, None, dtype if dtype is not None else float, what="np.empty")


def _like(a, dtype, shape):
    t = as_tracer(a)
    return (t.shape if shape is None else shape), (t.dtype if dtype is None else dtype)


def zeros_like(a, dtype=None, order="K", subok=True, shape=None, **kwargs):
    return full(*_like(a, dtype, shape)[:1], 0, _like(a, dtype, shape)[1])


def ones_like(a, dtype=None, order="K", subok=True, shape=None, **kwargs):
    return full(*_like(a, dtype, shape)[:1], 1, _like(a, dtype, shape)[1])


def empty_like(prototype, dtype=None, order="K", subok=True, shape=None, **kwargs):
    return full(*_like(prototype, dtype, shape)[:1], None, _like(prototype, dtype, shape)[1])


def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, **kwargs):
    s, d = _like(a, dtype, shape)
    return full(s, fill_value, d)


def arange(start, stop=None, step=None, dtype=None, **kwargs):
    for v in (start, stop, step):
        if isinstance(v, Tracer):
            raise unsupported("np.arange with a traced bound", "its length must be known while tracing: "
                              "pass the bounds as Python numbers or static arguments (static_argnames)")
    args = [v for v in (start, stop, step) if v is not None] if stop is not None or step is not None else [start]
    real = np.arange(*args, dtype=dtype)
    check_dtype(real.dtype, "np.arange")
    trace = _trace()
    if len(real) <= 2:
        return copy_(trace.const(real))
    # NumPy fills first + i * (second - first) from its first two values
    return _emit("arange", [trace.const(real[0]), trace.const(real[1])], real.shape, real.dtype)


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
    N = operator.index(N)
    M = N if M is None else operator.index(M)
    k = operator.index(k)
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
    if isinstance(obj, Tracer):
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
            return _trace().const(np.zeros((0,), dtype))
        return stack([_nested_stack(o, dtype) for o in obj])
    return as_tracer(obj, dtype)


def array(object, dtype=None, *, copy=True, order="K", subok=False, ndmin=0, **kwargs):
    if _contains_tracer(object):
        if isinstance(object, Tracer):
            t = astype(object, dtype if dtype is not None else object.dtype, copy=copy is not False and copy is not None)
        else:
            leaves = _nested_leaves(object, [])
            dt = np.dtype(dtype) if dtype is not None else np.result_type(
                *[x.dtype if isinstance(x, Tracer) else np.asarray(x).dtype for x in leaves])
            t = _nested_stack(object, check_dtype(dt, "np.array"))
    else:
        t = copy_(_trace().const(np.array(object, dtype=dtype)))
    if t.ndim < ndmin:
        t = t.reshape((1,) * (ndmin - t.ndim) + t.shape)
    return t


def asarray(a, dtype=None, order=None, **kwargs):
    if isinstance(a, Tracer):
        return a if dtype is None else astype(a, dtype, copy=False)
    return array(a, dtype=dtype)


def ascontiguousarray(a, dtype=None, **kwargs):
    t = asarray(a, dtype)
    if not t._view.is_c_contiguous:
        t = copy_(t)
    return t.reshape((1,)) if t.ndim == 0 else t


# -- joins --

def concatenate(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
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
            if d != axis and t.shape[d] != ts[0].shape[d]:
                raise ValueError("all the input array dimensions except for the concatenation axis must match "
                                 f"exactly, but along dimension {d}, the array at index 0 has size "
                                 f"{ts[0].shape[d]} and the array at index {i} has size {t.shape[d]}")
    dt = check_dtype(dtype if dtype is not None else np.result_type(*[t.dtype for t in ts]), "np.concatenate")
    for t in ts:
        if not np.can_cast(t.dtype, dt, casting):
            raise TypeError(f"Cannot cast array data from {t.dtype!r} to {dt!r} according to the rule {casting!r}")
    shape = list(ts[0].shape)
    shape[axis] = builtins.sum(t.shape[axis] for t in ts)
    result = _fresh(shape, dt)
    off = 0
    for t in ts:
        n = t.shape[axis]
        assign(result[(slice(None),) * axis + (slice(off, off + n),)], t)
        off += n
    return _finish(result, out, None)


def stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    ts = [as_tracer(a) for a in arrays]
    if not ts:
        raise ValueError("need at least one array to stack")
    if builtins.any(t.shape != ts[0].shape for t in ts):
        raise ValueError("all input arrays must have the same shape")
    axis = normalize_axis_index(axis, ts[0].ndim + 1)
    expanded = [t[(slice(None),) * axis + (None,)] for t in ts]
    return concatenate(expanded, axis, out, dtype=dtype, casting=casting)


def hstack(tup, *, dtype=None, casting="same_kind"):
    arrs = [atleast_1d(a) for a in tup]
    return concatenate(arrs, 0 if arrs and arrs[0].ndim == 1 else 1, dtype=dtype, casting=casting)


def vstack(tup, *, dtype=None, casting="same_kind"):
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
    c = t.reshape((1,) * (len(tup) - t.ndim) + t.shape) if len(tup) > t.ndim else t
    tup = (1,) * (c.ndim - len(tup)) + tup
    shape, strides = [], []
    for r, d, s in zip(tup, c.shape, c._view.strides):
        shape += [r, d]
        strides += [0, s]
    result = _fresh(tuple(r * d for r, d in zip(tup, c.shape)), t.dtype)
    assign(result.view_of(result._view.reshape(shape)), c.view_of(_C.View(c._view.storage, shape, strides, c._view.offset)))
    return result


def repeat(a, repeats, axis=None):
    t = as_tracer(a)
    if axis is None:
        t = t.reshape(-1)
        axis = 0
    axis = normalize_axis_index(axis, t.ndim)
    n = t.shape[axis]
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
    result = _fresh(shape, t.dtype)
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
    dtype = _ir_dtype(np.result_type(a.dtype, b.dtype), "np.matmul")
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
    return _finish(r, out, None)


def dot(a, b, out=None):
    x, y = as_tracer(a), as_tracer(b)
    if x.ndim == 0 or y.ndim == 0:
        return np.multiply(x, y) if out is None else np.multiply(x, y, out=out)
    if y.ndim == 1:
        if x.shape[-1] != y.shape[0]:
            raise ValueError(f"shapes {x.shape} and {y.shape} not aligned: {x.shape[-1]} (dim {x.ndim - 1}) != "
                             f"{y.shape[0]} (dim 0)")
        r = _contract(x[..., :, None], y[:, None], _ir_dtype(np.result_type(x.dtype, y.dtype), "np.dot"))[..., 0]
        return _finish(r[()] if r.ndim == 0 else r, out, None)
    if x.shape[-1] != y.shape[-2]:
        raise ValueError(f"shapes {x.shape} and {y.shape} not aligned: {x.shape[-1]} (dim {x.ndim - 1}) != "
                         f"{y.shape[-2]} (dim {y.ndim - 2})")
    # out[I, J, m] = sum_k x[I, k] * y[J, k, m]
    xs = x.reshape(x.shape[:-1] + (1,) * (y.ndim - 2) + (x.shape[-1], 1))
    return _finish(_contract(xs, y, _ir_dtype(np.result_type(x.dtype, y.dtype), "np.dot")), out, None)


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    # NumPy's formula, with y made inexact first
    x = a if type(a) in (int, float) else as_tracer(a)
    y = b if type(b) in (int, float) else as_tracer(b)
    if isinstance(y, Tracer):
        y = astype(y, np.result_type(promo_arg(y), 1.0), copy=False)
    elif isinstance(y, int):
        y = float(y)
    result = np.logical_or(np.logical_and(np.less_equal(np.absolute(np.subtract(x, y)),
                                                        np.add(atol, np.multiply(rtol, np.absolute(y)))),
                                          np.isfinite(y)),
                           np.equal(x, y))
    if equal_nan:
        result = np.logical_or(result, np.logical_and(np.isnan(x), np.isnan(y)))
    return result[()] if result.ndim == 0 else result


def count_nonzero(a, axis=None, *, keepdims=False):
    t = as_tracer(a)
    nonzero = t if t.dtype == np.bool_ else np.not_equal(t, 0)
    return sum_(nonzero, axis=axis, dtype=np.int64, keepdims=keepdims)


def pad(array, pad_width, mode="constant", **kwargs):
    t = as_tracer(array)
    if mode != "constant" or set(kwargs) - {"constant_values"}:
        raise unsupported(f"np.pad with mode={mode!r}", "pad with mode='constant' (constant_values=...)")
    widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (t.ndim, 2))
    if (widths < 0).any():
        raise ValueError("index can't contain negative values")
    fill_value = kwargs.get("constant_values", 0)
    if np.ndim(fill_value) != 0:
        raise unsupported("np.pad with per-axis constant_values", "pass one scalar constant_values")
    result = full(tuple(int(d + lo + hi) for d, (lo, hi) in zip(t.shape, widths)), fill_value, t.dtype)
    assign(result[tuple(slice(int(lo), int(lo) + d) for d, (lo, _) in zip(t.shape, widths))], t)
    return result


def norm(x, ord=None, axis=None, keepdims=False):
    t = as_tracer(x)
    if t.dtype.kind != "f":
        t = astype(t, np.float64)
    if ord is not None and not (ord == 2 and axis is not None and np.ndim(axis) == 0):
        raise unsupported(f"np.linalg.norm with ord={ord!r}", "use the default (2-norm / Frobenius) norm")
    return np.sqrt(sum_(np.multiply(t, t), axis=axis, keepdims=keepdims))


# -- metadata --

def shape(a):
    return shape_of(a)


def ndim(a):
    return len(shape_of(a))


def size(a, axis=None):
    s = shape_of(a)
    return int(np.prod(s, dtype=np.int64)) if axis is None else s[axis]


def result_type(*arrays_and_dtypes):
    return np.result_type(*[promo_arg(x) if isinstance(x, Tracer) else x for x in arrays_and_dtypes])


HANDLED = {
    np.sum: sum_, np.prod: prod, np.max: max_, np.amax: max_, np.min: min_, np.amin: min_, np.any: any_,
    np.all: all_, np.argmax: argmax, np.argmin: argmin, np.mean: mean, np.var: var, np.std: std,
    np.transpose: transpose, np.swapaxes: swapaxes, np.moveaxis: moveaxis, np.reshape: reshape,
    np.ravel: ravel, np.squeeze: squeeze, np.expand_dims: expand_dims, np.broadcast_to: broadcast_to,
    np.broadcast_arrays: broadcast_arrays, np.flip: flip, np.fliplr: fliplr, np.flipud: flipud,
    np.atleast_1d: atleast_1d, np.atleast_2d: atleast_2d, np.atleast_3d: atleast_3d, np.diff: diff,
    np.copy: copy_, np.copyto: copyto, np.where: where, np.clip: clip, np.round: round_, np.around: round_,
    np.fix: fix, np.zeros_like: zeros_like, np.ones_like: ones_like, np.empty_like: empty_like,
    np.full_like: full_like, np.array: array, np.asarray: asarray, np.ascontiguousarray: ascontiguousarray,
    np.concatenate: concatenate, np.stack: stack, np.hstack: hstack, np.vstack: vstack, np.dstack: dstack,
    np.column_stack: column_stack, np.meshgrid: meshgrid, np.tile: tile, np.repeat: repeat,
    np.shape: shape, np.ndim: ndim, np.size: size, np.result_type: result_type, np.split: split,
    np.array_split: array_split, np.hsplit: hsplit, np.vsplit: vsplit, np.dsplit: dsplit, np.dot: dot,
    np.isclose: isclose, np.count_nonzero: count_nonzero, np.pad: pad, np.linalg.norm: norm,
}

# Functions that take no array argument, so NumPy cannot dispatch them to a Tracer: the traced
# function sees these through a stand-in for the numpy module (see _api.py).
CREATION = {
    "zeros": zeros, "ones": ones, "empty": empty, "full": full, "arange": arange, "linspace": linspace,
    "eye": eye, "identity": identity, "array": array, "asarray": asarray, "asanyarray": asarray,
    "ascontiguousarray": ascontiguousarray,
}


def array_function(func, args, kwargs):
    handler = HANDLED.get(func)
    if handler is None:
        mod = func.__module__ or "numpy"
        prefix = "np." if mod.startswith("numpy") and mod.count(".") <= 1 else mod + "."
        raise unsupported(f"{prefix}{func.__name__}", "see the README for the supported NumPy functions")
    return handler(*args, **kwargs)


def _builtin_round(self, ndigits=None):
    if ndigits is not None:
        return round_(self, ndigits)
    # Python's round(x) gives an int
    r = astype(np.rint(self), np.int64)
    r._weak, r._scalar = int, True
    return r


def _view_method(self, dtype=None, type=None):
    if type is not None or (dtype is not None and np.dtype(dtype) != self.dtype):
        raise unsupported(".view() with another dtype or type", "reinterpreting memory is not supported; use .astype")
    return self.view_of(self._view)


def _install_methods():
    def method(fn):
        return lambda self, *a, **k: fn(self, *a, **k)

    for name, fn in {"sum": sum_, "prod": prod, "max": max_, "min": min_, "any": any_, "all": all_,
                     "argmax": argmax, "argmin": argmin, "mean": mean, "var": var, "std": std,
                     "swapaxes": swapaxes, "squeeze": squeeze, "clip": clip, "round": round_,
                     "repeat": repeat, "astype": astype, "fill": fill, "ravel": ravel,
                     "broadcast_to": broadcast_to, "dot": dot}.items():
        setattr(Tracer, name, method(fn))
    Tracer.copy = lambda self, order="C": copy_(self)
    Tracer.flatten = lambda self, order="C": copy_(self).reshape(-1)
    Tracer.reshape = lambda self, *shape, order="C", copy=None: reshape(
        self, shape[0] if len(shape) == 1 else shape, order, copy=copy)
    Tracer.transpose = lambda self, *axes: transpose(
        self, None if not axes else (axes[0] if len(axes) == 1 and np.iterable(axes[0]) else axes))
    Tracer.T = property(lambda self: transpose(self))
    Tracer.real = property(lambda self: self)
    Tracer.__round__ = _builtin_round
    Tracer.__copy__ = lambda self: copy_(self)

    def _no(name, instead):
        def raiser(self, *a, **k):
            raise unsupported(f"{name}", instead)
        return raiser

    Tracer.nonzero = _no(".nonzero()", "boolean masks and nonzero are not supported yet; use np.where(cond, a, b)")
    Tracer.sort = _no(".sort()", "sorting is not supported yet")
    Tracer.argsort = _no(".argsort()", "sorting is not supported yet")
    Tracer.view = _view_method


_install_methods()
