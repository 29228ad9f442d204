"""Elementwise NumPy on Tracers: ufuncs (promotion and loop selection from NumPy itself, via
ufunc.resolve_dtypes), casts and copies, where, clip, round, isclose; and the axis and out=
helpers the other families share."""
import builtins
import operator

import numpy as np
from numpy.lib.array_utils import normalize_axis_tuple

from . import _C
from ._errors import unsupported
from ._indexing import assign
from ._tracer import (IMPL, IR_DTYPES, Extent, Tracer, reshape_units, as_tracer, bound, cast_unsafe, check_dtype, check_fits,
                      current_trace, emit, holds_traced, keep_order, like_order, python_operator_call, weak_type,
                      RunInNumPy, same_shape)

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


_WEAK_OF_KIND = {"b": bool, "i": int, "f": float}


_COMPARISONS = {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"}


def _widen_for_python_ints(inputs, types):
    """NumPy 2 compares integers with out-of-range Python ints exactly instead of raising:
    compare in int64 when the value and the dtype fit there. A Python int known only when the
    function runs (an argument, a counter, x.item()) is an int64 that may lie outside a narrower
    dtype: compared in int64 with it (with uint64, exactly: _compare_signed_with_uint64)."""
    if any(isinstance(x, Tracer) and x._weak is int for x in inputs) and \
            any(isinstance(t, np.dtype) and t.kind in "iu" for t in types):
        return tuple(np.dtype(np.int64) if t is int or (isinstance(t, np.dtype) and t.kind in "iu" and t != np.uint64)
                     else t for t in types)
    for x in inputs:
        if type(x) is int:
            for t in types:
                if isinstance(t, np.dtype) and t.kind in "iu" and not np.can_cast(np.min_scalar_type(x), t) \
                        and -2**63 <= x < 2**63 and t != np.uint64:
                    return tuple(np.dtype(np.int64) if isinstance(t, np.dtype) and t.kind in "iu" else t
                                 for t in types)
    return types


def _python_int_beyond(name, inputs):
    """A comparison of an integer array with a Python int outside every value int64 holds, or a
    negative one with uint64 (NumPy 2 compares them exactly): every element compares alike, so
    the result is that constant (None where the comparison is an ordinary one)."""
    if len(inputs) != 2:
        return None
    for k, x in enumerate(inputs):
        other = inputs[1 - k]
        if type(x) is not int or not isinstance(other, (Tracer, np.ndarray, np.generic)) or other.dtype.kind not in "iu":
            continue
        info = np.iinfo(other.dtype)
        if info.min <= x <= info.max or (-2**63 <= x < 2**63 and other.dtype != np.uint64):
            return None
        left_less = (x > info.max) == (k == 1)  # whether inputs[0] < inputs[1] everywhere
        value = {"equal": False, "not_equal": True, "less": left_less, "less_equal": left_less,
                 "greater": not left_less, "greater_equal": not left_less}[name]
        if other.ndim:
            return np.full_like(other, value, dtype=np.bool_)
        return emit("copy", [current_trace().const(np.bool_(value))], (), np.bool_, scalar=True)  # NumPy's scalar
    return None


# with the signed operand on the left, the comparisons a negative one makes true
_TRUE_WHEN_SIGNED_LEFT_NEGATIVE = {"less", "less_equal", "not_equal"}
_MIRRORED = {"less": "greater", "less_equal": "greater_equal", "greater": "less", "greater_equal": "less_equal",
             "equal": "equal", "not_equal": "not_equal"}


def _compare_signed_with_uint64(name, ins):
    """NumPy 2's exact comparison of a signed integer with uint64 (its mixed loop, where
    promotion would give float64): a negative one orders below every uint64, the others compare
    as uint64."""
    if ins[0].dtype.kind != "i":
        name, ins = _MIRRORED[name], ins[::-1]
    signed, other = ins
    negative = signed < 0
    same = getattr(np, name)(signed.astype(np.uint64), other)
    if name in _TRUE_WHEN_SIGNED_LEFT_NEGATIVE:
        return negative | same
    return ~negative & same


def promo_arg(x):
    """What np.result_type should see for x: a Python value for weak scalars, else a dtype."""
    w = weak_type(x)
    return {int: 0, float: 0.0}.get(w, w) if isinstance(w, type) else w


def ir_dtype(dtype, what):
    dtype = np.dtype(dtype)
    if dtype not in IR_DTYPES:
        raise unsupported(f"{what} computing in {dtype}", "cast the operands to float32/float64 or "
                          "int32/int64 first")
    return dtype


def numpy_raises(fn, *args, **kwargs):
    """Raises what NumPy raises for the same call on stand-in values (exact error types)."""
    fn(*args, **kwargs)


def dummy(x):
    w = weak_type(x)
    if isinstance(w, type):
        return w(1)
    return np.ones((), w)


def shape_text(shape):
    """A shape as NumPy's messages write it: (3,4), (3,)."""
    return "(" + ",".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def broadcast_shape(*shapes, shown=None):
    """NumPy's broadcast of the shapes; its ValueError names `shown` (the operands' shapes, an
    out= array's after the inputs', as NumPy's does), else the shapes."""
    def incompatible():
        return ValueError("operands could not be broadcast together with shapes "
                          + "".join(shape_text(s) + " " for s in (shapes if shown is None else shown)))
    if not any(isinstance(d, Extent) for s in shapes for d in s):
        try:
            return np.broadcast_shapes(*shapes)
        except ValueError:
            raise incompatible() from None
    # a run-time length broadcasts with itself and with 1 (NumPy would decide the rest by the
    # values at run time)
    ndim = max(len(s) for s in shapes)
    out = []
    for i in range(ndim):
        dims = [s[len(s) - ndim + i] for s in shapes if len(s) - ndim + i >= 0]
        lengths = {d.storage: d for d in dims if isinstance(d, Extent)}
        fixed = {d for d in dims if not isinstance(d, Extent) and d != 1}
        if len(fixed) > 1:
            raise incompatible()
        if len(lengths) > 1 or (lengths and fixed):
            raise unsupported("broadcasting an array whose length is known only at run time (a boolean mask's "
                              "result, a slice whose bounds the data gives) against another length",
                              "select every operand with the same mask or slice")
        out.append(next(iter(lengths.values())) if lengths else fixed.pop() if fixed else 1)
    return tuple(out)


def _one_length_per_axis(ts):
    """Operands whose axis holds different lengths, one of them known only at run time (ends -
    starts of two masks' nonzero), read with one run-time length: the first, checked equal to
    the others when the function runs (NumPy's ValueError where they differ; where one is 1 at
    run time NumPy would broadcast it, strider raises that error too)."""
    if not any(t.is_dynamic for t in ts):
        return ts
    ndim = max((t.ndim for t in ts), default=0)
    for i in range(ndim):
        def axis_of(t, i=i):
            d = t.ndim - ndim + i
            return d if d >= 0 and (isinstance(t.shape[d], Extent) or t.shape[d] != 1) else None

        if _one_already([t.shape[d] for t in ts if (d := axis_of(t)) is not None]):
            continue  # (one_length's own test, without making its message)
        shapes = [t.shape for t in ts]

        def message(first, other):
            def shown(d):
                if not isinstance(d, Extent):
                    return str(d)
                return "\x01" if d.storage == first.storage else "\x02" if isinstance(
                    other, Extent) and d.storage == other.storage else str(bound(d))
            return "operands could not be broadcast together with shapes " + "".join(
                "(" + ",".join(shown(d) for d in shape) + ("," if len(shape) == 1 else "") + ") " for shape in shapes)
        ts = one_length(ts, axis_of, message)
    return ts


_INDEX_ERROR = 6  # graph.h's kIndexError


def checked_equal(length, other, message, index_error=False):
    """The traced length, checked equal to `other` (a length) when the function runs: NumPy's
    ValueError `message` where they differ (\x01 and \x02 stand for the two), the call run in
    NumPy where one is 1 (NumPy would broadcast it); with index_error, NumPy's IndexError where
    they differ at all (a boolean index's length against its axis's)."""
    text = current_trace().const(np.array([ord(c) for c in message], np.int32))
    value = other.value() if isinstance(other, Extent) else current_trace().const(np.int64(other))
    return emit("check_equal", [length, value, text], (), np.int64, axes=(_INDEX_ERROR,) if index_error else ())


def one_length(ts, axis_of, message):
    """The arrays ts read with one length along the axis axis_of(t) names (None: none of t's),
    where those lengths differ and one is known only at run time: the first run-time one,
    checked equal to each of the others when the function runs (check_equal raises NumPy's
    ValueError, message(first, other) with \x01 and \x02 standing for the two lengths)."""
    dims = [t.shape[axis_of(t)] for t in ts if axis_of(t) is not None]
    if _one_already(dims):
        return ts
    lengths = list({d.storage: d for d in dims if isinstance(d, Extent)}.values())
    fixed = sorted({d for d in dims if not isinstance(d, Extent)})
    length, first = lengths[0].value(), lengths[0]
    for other in lengths[1:] + fixed:
        length = checked_equal(length, other, message(first, other))
    unified = Extent(min(int(d) if not isinstance(d, Extent) else bound(d) for d in lengths + fixed),
                     length._view.storage)
    return [t if axis_of(t) is None else _with_length(t, axis_of(t), unified) for t in ts]


def _broadcast_all(ts, shape):
    """ts broadcast to shape, those of that shape as they are."""
    return [t if same_shape(t.shape, shape) else t.broadcast_to(shape) for t in ts]


def _one_already(dims):
    """Whether lengths `dims` of an axis need no unifying: one run-time length, or fixed ones
    alone (the caller decides), or several fixed ones (NumPy's error, the caller's)."""
    lengths = {d.storage for d in dims if isinstance(d, Extent)}
    fixed = {d for d in dims if not isinstance(d, Extent)}
    return not lengths or len(lengths) + len(fixed) < 2 or len(fixed) > 1


def _with_length(t, axis, length):
    """t read along `axis` with a run-time length checked equal to its own."""
    v = t._view
    shape, extents = list(v.shape), list(v.extents) if v.extents else [-1] * len(v.shape)
    shape[axis], extents[axis] = bound(length), length.storage
    return t.view_of(_C.View(v.storage, shape, list(v.strides), v.offset, extents), readonly=t._readonly)


def divmod_(x1, x2, out=(None, None), **kwargs):
    """np.divmod: NumPy's floor_divide and remainder are its two halves, bit for bit."""
    if out is not None and any(o is not None for o in (out if isinstance(out, tuple) else (out,))):
        raise unsupported("np.divmod(..., out=...)", "assign the two results")
    return np.floor_divide(x1, x2, **kwargs), np.remainder(x1, x2, **kwargs)


def modf(x, out=(None, None), **kwargs):
    """np.modf: x's fractional and integral parts in modf's loop (an integer's float), the
    fraction x - trunc(x) (exact) with x's sign, and +-0 for an infinity, as C's modf."""
    if out is not None and any(o is not None for o in (out if isinstance(out, tuple) else (out,))):
        raise unsupported("np.modf(..., out=...)", "assign the two results")
    if kwargs:
        raise unsupported(f"np.modf with {', '.join(kwargs)}=", "drop the argument")
    t = weak_type(x)
    loop = np.modf.resolve_dtypes((np.dtype(t) if isinstance(t, type) else t, None, None))[0]
    v = as_tracer(x).astype(loop, copy=False)
    whole = np.trunc(v)
    return np.copysign(np.where(np.isinf(v), loop.type(0), v - whole), v), whole


_ANGLES = {np.degrees: True, np.rad2deg: True, np.radians: False, np.deg2rad: False}


def _angle(uf, x, out, dtype, casting, where, kwargs):
    """np.degrees and np.radians (np.rad2deg, np.deg2rad): NumPy's loop multiplies by 180/pi or
    pi/180, computed in the loop's dtype (float16's in float32, its result rounded back)."""
    if where is not True or kwargs:
        raise unsupported(f"np.{uf.__name__} with {', '.join(['where'] * (where is not True) + list(kwargs))}=",
                          "drop the argument")
    t = weak_type(x)
    extra = {} if dtype is None else {"signature": (None, np.dtype(dtype))}
    loop, _ = uf.resolve_dtypes((np.dtype(t) if isinstance(t, type) else t, None), casting=casting, **extra)
    work = np.dtype(np.float32) if loop == np.float16 else loop
    ratio = work.type(180) / work.type(np.pi) if _ANGLES[uf] else work.type(np.pi) / work.type(180)
    scaled = ufunc_call(np.multiply, (x if type(x) in (bool, int, float) else as_tracer(x, loop).astype(work), ratio))
    return ufunc_call(np.positive, (scaled.astype(loop, copy=False),), out=out, casting=casting)


def ufunc_call(uf, inputs, out=None, dtype=None, casting="same_kind", where=True, **kwargs):
    python_op = python_operator_call()
    if uf in _ANGLES:
        return _angle(uf, *inputs, out, dtype, casting, where, kwargs)
    name = UFUNCS.get(uf)
    if name is None:
        if all("O" in t for t in uf.types):  # np.frompyfunc's: Python objects in, Python objects out
            fn = uf.__name__.removesuffix(" (vectorized)")
            raise unsupported(f"np.frompyfunc({fn}) (its results are object arrays, a dtype strider does not carry)",
                              "use np.vectorize(f, otypes=[np.float64]), which strider traces")
        raise unsupported(f"np.{uf.__name__}", "see the README for the supported NumPy functions")
    if where is not True and out is None:  # (NumPy leaves the other elements uninitialized)
        raise unsupported(f"np.{uf.__name__}(..., where=...) without out=", "pass out=, or select with np.where")
    if kwargs:
        raise unsupported(f"np.{uf.__name__} with {', '.join(kwargs)}=", "drop the argument")
    if isinstance(out, tuple):
        if len(out) != 1:
            raise ValueError("The 'out' tuple must have exactly one entry per ufunc output")
        out = out[0]
    # objects with __array__ become constants first (their conversion is user code: one place);
    # a run-time length (x.shape[0] of a mask's result) is its traced int; a list of traced
    # numbers np.array's (TF object detection's `boxes - [y_min, x_min, y_min, x_min]`)
    inputs = tuple(x.value() if isinstance(x, Extent) else IMPL["array"](x) if type(x) in (list, tuple) and holds_traced(x)
                   else as_tracer(x) if not isinstance(x, (Tracer, np.ndarray, np.generic, bool, int, float))
                   and hasattr(type(x), "__array__") else x for x in inputs)
    types = tuple(weak_type(x) for x in inputs)
    all_weak = all(type(x) in (bool, int, float) or (isinstance(x, Tracer) and x._weak) for x in inputs)
    if all_weak:
        # Python scalars only (runtime Python arguments among them): NumPy converts each to its
        # default dtype, where resolve_dtypes would pick the object loop for a comparison; a
        # Python operator's result is a Python scalar, an np.* ufunc's NumPy's scalar
        types = tuple(np.dtype(t) if isinstance(t, type) else t for t in types)
    elif name in _COMPARISONS:
        constant = _python_int_beyond(name, inputs)
        if constant is not None and out is None:
            return constant
        types = _widen_for_python_ints(inputs, types)
    extra = {} if dtype is None else {"signature": (None,) * uf.nin + (np.dtype(dtype),)}
    loop = uf.resolve_dtypes(types + (None,), casting=casting, **extra)
    in_dts, out_dt = loop[:uf.nin], ir_dtype(loop[uf.nin], f"np.{uf.__name__}")
    for dt in in_dts:
        ir_dtype(dt, f"np.{uf.__name__}")
    if not all_weak and name not in _COMPARISONS:
        for x, dt in zip(inputs, in_dts):
            check_fits(x, dt)
    ins = [as_tracer(x, dt) for x, dt in zip(inputs, in_dts)]
    given = out  # what NumPy returns: the out= array itself (`a &= b` is a, however long b is)
    if isinstance(out, Tracer):  # (its run-time lengths too: CenterNet's np.maximum(crop, g, out=crop))
        *ins, out = _one_length_per_axis(ins + [out])
    else:
        ins = _one_length_per_axis(ins)
    shape = broadcast_shape(*(t.shape for t in ins),
                            shown=[t.shape for t in ins] + ([out.shape] if isinstance(out, Tracer) else []))
    ins = _broadcast_all(ins, shape)
    weak = None
    if out is None and all_weak and python_op:
        weak = _WEAK_OF_KIND.get(out_dt.kind)
        ins = _python_number_checks(name, ins, all(dt.kind in "biu" for dt in in_dts))
    if name in _COMPARISONS and in_dts[0] != in_dts[1]:
        result = _compare_signed_with_uint64(name, ins)
    else:
        result = emit(name, ins, shape, out_dt, order=keep_order(ins, len(shape)), weak=weak, scalar=len(shape) == 0)
    if out is None:
        return result
    if not isinstance(out, Tracer):
        raise unsupported("out= naming an array created outside the compiled function",
                          "pass the output array as an argument")
    if broadcast_shape(shape, out.shape) != out.shape:
        raise ValueError(f"non-broadcastable output operand with shape {shape_text(out.shape)} doesn't match the "
                         f"broadcast shape {shape_text(shape)}")
    if not np.can_cast(out_dt, out.dtype, casting):
        numpy_raises(uf, *[dummy(x) for x in inputs], out=np.zeros((), out.dtype), casting=casting)
        raise TypeError(f"Cannot cast ufunc '{uf.__name__}' output from {out_dt!r} to {out.dtype!r} "
                        f"with casting rule {casting!r}")
    if where is not True:  # the safe division idiom: np.divide(a, b, out=np.zeros_like(a), where=b != 0)
        mask = as_tracer(where)
        if mask.dtype != np.bool_:
            raise TypeError(f"Cannot cast array data from {mask.dtype!r} to dtype('bool') according to the rule 'safe'")
        if broadcast_shape(mask.shape, out.shape) != out.shape:
            raise ValueError(f"operands could not be broadcast together with shapes {tuple(mask.shape)} "
                             f"{tuple(out.shape)}")
        result = np.where(mask, result.astype(out.dtype, copy=False), out)  # (NumPy dispatches: traced)
    assign(out, result)
    return given


def copy_(a, order="K", subok=False):
    t = as_tracer(a)
    return emit("copy", [t], t.shape, t.dtype, order=like_order(t, order))


def same_kind_copy(t):
    """A copy of t of its kind: a NumPy scalar stays one, a Python number one (copy.copy, a
    result the caller may keep)."""
    c = copy_(t)
    c._scalar, c._weak = t._scalar, t._weak
    return c


def astype(t, dtype, order="K", casting="unsafe", subok=True, copy=True):
    dtype = check_dtype(dtype, "astype")
    if dtype == t.dtype:
        return copy_(t) if copy else t
    if not np.can_cast(t.dtype, dtype, casting):
        raise TypeError(f"Cannot cast array data from {t.dtype!r} to {dtype!r} according to the rule {casting!r}")
    return emit("cast", [t], t.shape, dtype, order=like_order(t, order), scalar=t._scalar)  # a scalar's is one


def where(condition, x=_NoValue, y=_NoValue):
    if x is _NoValue and y is _NoValue:
        return IMPL["nonzero"](condition)
    if x is _NoValue or y is _NoValue:
        raise ValueError("either both or neither of x and y should be given")
    c = as_tracer(condition)
    if c.dtype != np.bool_:
        c = c.astype(np.bool_)
    dtype = ir_dtype(np.result_type(promo_arg(x), promo_arg(y)), "np.where")
    # A Python int the result's dtype cannot hold: NumPy 2.5 raises OverflowError, as its ufuncs
    # do; before, it cast it unsafely (-1 into uint8 is 255). The NumPy installed decides.
    numpy_raises(np.where, True, *(v if type(v) is int else dummy(v) for v in (x, y)))
    x, y = (cast_unsafe(v, dtype) if type(v) is int and dtype.kind in "iu" else v for v in (x, y))
    c, x, y = _one_length_per_axis([c, as_tracer(x, dtype), as_tracer(y, dtype)])
    shape = broadcast_shape(c.shape, x.shape, y.shape)
    ins = _broadcast_all([c, x, y], shape)
    return emit("where", ins, shape, dtype, order=keep_order(ins, len(shape)))


def select(condlist, choicelist, default=0):
    """np.select as NumPy writes it: the default where no condition holds, each choice where its
    condition is the first that holds, in the dtype of the choices and the default (Python
    numbers weak)."""
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    if len(condlist) == 0:
        raise ValueError("select with an empty condition list is not possible")
    values = list(choicelist) + [default]
    try:
        dtype = np.result_type(*[v if type(v) in (int, float, complex) else promo_arg(v) for v in values])
    except TypeError as e:
        raise TypeError(f"Choicelist and default value do not have a common dtype: {e}") from None
    dtype = ir_dtype(dtype, "np.select")
    conds = [as_tracer(c) for c in condlist]
    for i, c in enumerate(conds):
        if c.dtype != np.bool_:
            raise TypeError(f"invalid entry {i} in condlist: should be boolean ndarray")
    choices = [as_tracer(v, dtype) for v in values]
    shape = broadcast_shape(broadcast_shape(*[c.shape for c in conds]), broadcast_shape(*[v.shape for v in choices]))
    result = choices[-1].broadcast_to(shape)
    for choice, cond in zip(choices[-2::-1], conds[::-1]):
        result = where(cond, choice, result)
    return result if result.shape else result.reshape(())  # (a 0-d array, as np.full makes, not a scalar)


def clip(a, a_min=_NoValue, a_max=_NoValue, out=None, *, min=_NoValue, max=_NoValue, **kwargs):
    lo = min if a_min is _NoValue else a_min
    hi = max if a_max is _NoValue else a_max
    lo = None if lo is _NoValue else lo
    hi = None if hi is _NoValue else hi
    r = as_tracer(a)
    if r.dtype.kind in "iu" and "dtype" not in kwargs:
        # NumPy 2 drops a Python int bound past the dtype's own limit on its side (nothing to clip)
        info = np.iinfo(r.dtype)
        lo = None if type(lo) is int and lo < info.min else lo
        hi = None if type(hi) is int and hi > info.max else hi
        # a traced one (an int64) is moved to the limit there, where it clips nothing either
        lo = _weak_int_past(lo, np.maximum, int(info.min))
        hi = hi if r.dtype == np.uint64 else _weak_int_past(hi, np.minimum, int(info.max))
    types = [promo_arg(x) for x in (a, lo, hi) if x is not None]
    if lo is not None and hi is not None and "dtype" not in kwargs and any(isinstance(t, np.dtype) for t in types):
        # NumPy's clip is one ufunc of three inputs, promoted together: (bool, 0, int32) is int32,
        # where maximum then minimum would make it int64
        kwargs = dict(kwargs, dtype=np.result_type(*types))
    # where +0 and -0 tie, NumPy's clip between two single values keeps the element (elsewhere
    # it is maximum then minimum, which take the bound in float32 and float64)
    computed = np.dtype(kwargs["dtype"]) if "dtype" in kwargs else np.result_type(*types)
    keep = lo is not None and hi is not None and _single(lo) and _single(hi) and computed in (np.float32, np.float64)
    if lo is not None:
        r = np.maximum(lo, r, **kwargs) if keep else np.maximum(r, lo, **kwargs)
    if hi is not None:
        r = np.minimum(hi, r, **kwargs) if keep else np.minimum(r, hi, **kwargs)
    if lo is None and hi is None:
        r = copy_(r)
    if out is None:
        return r
    if not np.can_cast(r.dtype, out.dtype, kwargs.get("casting", "same_kind")):
        numpy_raises(np.clip, *[None if x is None else dummy(x) for x in (a, lo, hi)], out=np.zeros((), out.dtype),
                     **kwargs)
        raise TypeError(f"Cannot cast ufunc 'clip' output from {r.dtype!r} to {out.dtype!r} with casting rule "
                        "'same_kind'")
    assign(out, r)
    return out


def _single(x):
    """Whether x is one value, however broadcast: a number, a 0-d array or one of one element
    (whose shape is known when tracing)."""
    return all(not isinstance(d, Extent) and d == 1 for d in (x.shape if isinstance(x, Tracer) else np.shape(x)))


def _by_zero(op, a, b):
    try:
        op(a, b)
    except ZeroDivisionError as e:
        return str(e)


# Python's ZeroDivisionError messages (this Python's words), by op and whether both numbers are ints
_BY_ZERO = {(name, ints): _by_zero(op, *((1, 0) if ints else (1.0, 0.0)))
            for name, op in (("divide", operator.truediv), ("floor_divide", operator.floordiv),
                             ("remainder", operator.mod)) for ints in (True, False)}


def _python_number_checks(name, ins, ints):
    """The inputs of a Python operator on Python numbers, and checks made when the function runs
    where it parts from NumPy's ufunc: division by zero raises ZeroDivisionError (NumPy gives inf or NaN: `inter /
    union` of floats with union 0), and a power Python computes in another type (an int to a
    negative power is a float, a negative float to a fractional one complex) runs the call in
    NumPy, whose Python computes it."""
    trace = current_trace()
    if (name, ints) in _BY_ZERO:
        trace.check_assert(ins[1] != 0, _BY_ZERO[name, ints], ZeroDivisionError)
    elif name == "power" and ints:
        trace.check_assert(ins[1] >= 0, "a Python int to a negative power (a float in Python)", RunInNumPy)
        # (NumPy's loop would raise ValueError there, perhaps first: the stages' order is open)
        return [ins[0], np.maximum(ins[1], 0)]
    elif name == "power":
        base, exponent = ins
        trace.check_assert((base != 0) | (exponent >= 0), _by_zero(operator.pow, 0.0, -1.0), ZeroDivisionError)
        trace.check_assert((base >= 0) | (exponent == np.floor(exponent)) | np.isnan(exponent),
                           "a negative Python float to a fractional power (complex in Python)", RunInNumPy)
    return ins


def _weak_int_past(bound, toward, limit):
    if not (isinstance(bound, Tracer) and bound._weak is int):
        return bound
    moved = toward(bound, limit)
    moved._weak = int
    return moved


def python_round(t, ndigits):
    """Python's round(x, ndigits) of a traced Python number: for a float, the float nearest the
    decimal value of x rounded half to even at that digit, as CPython's correctly rounded round()
    gives it (np.round scales x first: round(2.675, 2) is 2.67 in Python, 2.68 in NumPy); for an
    int, the int rounded half to even at that power of ten."""
    if t._weak is int:
        if ndigits >= 0:
            r = copy_(t)
        else:
            m = 10 ** -ndigits
            q = np.floor_divide(t, m)
            twice = np.multiply(np.subtract(t, np.multiply(q, m)), 2)
            up = np.greater(twice, m) | (np.equal(twice, m) & np.equal(np.remainder(q, 2), 1))
            r = np.multiply(np.add(q, up.astype(np.int64)), m)
        r._weak, r._scalar = int, False
        return r
    if not 0 <= ndigits <= 22:  # 10**ndigits is exact up to 22
        raise unsupported(f"round() of a traced Python float to {ndigits} digits",
                          "round to 0 to 22 digits, or use np.round (NumPy's rounding)")
    p = 10.0 ** ndigits
    a = np.absolute(t)
    hi = np.multiply(a, p)
    lo = _product_error(a, p, hi)  # a * p is exactly hi + lo
    f = np.floor(hi)
    d = np.subtract(np.subtract(hi, f), 0.5)  # exact where the fraction is near a half
    whole = np.equal(hi, f)  # the exact value is f + lo, |lo| <= 0.5
    tie = np.where(whole, np.equal(np.absolute(lo), 0.5), np.equal(d, 0) & np.equal(lo, 0))
    up = np.where(whole, np.equal(lo, 0.5), np.greater(d, 0) | (np.equal(d, 0) & np.greater(lo, 0)))
    low = np.where(whole & np.less(lo, 0), np.subtract(f, 1), f)  # the integers either side of a tie
    k = np.where(tie, np.where(np.equal(np.remainder(low, 2), 0), low, np.add(low, 1)),
                 np.where(up, np.add(f, 1), f))
    exact = np.isfinite(hi) & np.less(hi, 2.0 ** 53)  # beyond, x has no digit past ndigits: x itself
    r = np.where(exact, np.copysign(np.true_divide(k, p), t), t)
    r._weak, r._scalar = float, False
    return r


def _product_error(a, b, hi):
    """a * b - hi exactly, for hi the rounded a * b (Dekker's product: each half of a split
    multiplies exactly)."""
    def split(x):
        c = np.multiply(x, 134217729.0)  # 2**27 + 1
        high = np.subtract(c, np.subtract(c, x))
        return high, np.subtract(x, high)

    ah, al = split(a)
    bh, bl = split(as_tracer(b, np.float64))
    err = np.add(np.add(np.subtract(np.multiply(ah, bh), hi), np.multiply(ah, bl)), np.multiply(al, bh))
    return np.add(err, np.multiply(al, bl))


def round_(a, decimals=0, out=None):
    t = as_tracer(a)
    if t.dtype == np.bool_:
        if decimals:
            numpy_raises(np.round, np.zeros(1, np.bool_), decimals)  # its scaling casts back to bool
        t = t.astype(np.float16)  # NumPy rounds bool in float16
    if t.dtype.kind in "iu":
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


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """np.allclose: a Python bool, known when the function runs."""
    return python_bool(IMPL["all"](isclose(a, b, rtol, atol, equal_nan)))


def array_equal(a1, a2, equal_nan=False):
    """np.array_equal: False where the shapes differ, else whether every element is equal (NaNs
    too where equal_nan); a Python bool."""
    x, y = as_tracer(a1), as_tracer(a2)
    if x.is_dynamic or y.is_dynamic:
        raise unsupported("np.array_equal of an array whose length is known only at run time",
                          "compare the lengths first, then (a == b).all()")
    if tuple(x.shape) != tuple(y.shape):
        return False
    same = np.equal(x, y)
    if equal_nan and np.result_type(promo_arg(x), promo_arg(y)).kind in "fc":
        same = np.logical_or(same, np.logical_and(np.isnan(x), np.isnan(y)))
    return python_bool(IMPL["all"](same))


def python_bool(t):
    """A 0-d bool array as Python's bool: known while tracing (or from the caller's numbers), else
    a traced one."""
    r = t.traced_number(bool)
    return bool(t) if r is None else r  # known while tracing (or from the caller's numbers)


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """np.nan_to_num: NaN and infinities of a float array replaced (by the dtype's largest and
    smallest finite values where not given); x itself written where copy=False."""
    t = as_tracer(x)
    if t.dtype.kind != "f":
        return copy_(t) if copy else t
    info = np.finfo(t.dtype)
    r = where(np.isnan(t), nan, t)
    r = where(isposinf(t), info.max if posinf is None else posinf, r)
    r = where(isneginf(t), info.min if neginf is None else neginf, r)
    r = astype(r, t.dtype, copy=False)
    if copy:
        return r
    assign(t, r)
    return t


def isposinf(x, out=None):
    return np.logical_and(np.isinf(x), np.logical_not(np.signbit(x)), out=out)


def isneginf(x, out=None):
    return np.logical_and(np.isinf(x), np.signbit(x), out=out)


def normalize_axes(t, axis):
    if axis is None:
        return tuple(range(t.ndim))
    return tuple(sorted(normalize_axis_tuple(axis, t.ndim)))


def finish(r, out, keep_shape):
    """keepdims and out= for reductions."""
    if keep_shape is not None:
        r = reshape_units(r, keep_shape)
    if out is None:
        return r
    if isinstance(out, tuple):
        out = out[0]
    if r.shape != out.shape:
        raise ValueError(f"output parameter for reduction operation has the wrong shape {out.shape}, "
                         f"expected {r.shape}")
    assign(out, r)
    return out
