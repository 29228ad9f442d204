"""The registry of NumPy on Tracers: which function handles each NumPy function that dispatches
to a Tracer (__array_function__, __array_ufunc__), the creation functions that cannot dispatch,
and the ndarray methods of Tracer. The implementations live in _ufuncs, _reductions, _shapes
and _creation; promotion and loop selection come from NumPy itself, so the traced program has
NumPy's dtypes by construction."""
import operator

import numpy as np

from . import _advanced, _editing, _quantiles, _sorting
from ._creation import (arange, array, asarray, ascontiguousarray, diag, empty, empty_like, eye, full, full_like,
                        identity, linspace, ones, ones_like, outer, pad, polyval, zeros, zeros_like)
from ._errors import unsupported
from ._reductions import (REDUCTIONS, all_, any_, argmax, argmin, average, count_nonzero, dot, einsum, matmul, max_,
                          mean, min_, multi_dot, nanargmax, nanargmin, nanmax, nanmean, nanmin, nanprod, nansum, norm,
                          prod, ptp, std, sum_, var)
from ._shapes import (array_split, atleast_1d, atleast_2d, atleast_3d, broadcast_arrays, broadcast_to, column_stack,
                      concatenate, convolve, copyto, correlate, cross, diagonal, diff, dsplit, ediff1d, dstack, expand_dims, fill, flip, fliplr, flipud,
                      hsplit, hstack, meshgrid, moveaxis, ndim, ravel, repeat, reshape, resize, result_type, roll, rot90, shape, size,
                      split, squeeze, stack, swapaxes, tile, trace, transpose, trapezoid, tril, triu, vsplit, vstack)
from ._tracer import IMPL, Extent, as_tracer, check_int_of_float
from ._ufuncs import (allclose, array_equal, astype, clip, copy_, divmod_, fix, isclose, isneginf, isposinf, modf, nan_to_num,
                      python_round, round_, same_kind_copy, select, ufunc_call, where)

__all__ = ["HANDLED", "CREATION", "array_function", "ufunc_method"]


HANDLED = {
    np.sum: sum_, np.prod: prod, np.max: max_, np.amax: max_, np.min: min_, np.amin: min_, np.any: any_,
    np.all: all_, np.argmax: argmax, np.argmin: argmin, np.mean: mean, np.average: average, np.var: var, np.std: std,
    np.transpose: transpose, np.swapaxes: swapaxes, np.moveaxis: moveaxis, np.reshape: reshape,
    np.ravel: ravel, np.squeeze: squeeze, np.expand_dims: expand_dims, np.broadcast_to: broadcast_to,
    np.broadcast_arrays: broadcast_arrays, np.flip: flip, np.fliplr: fliplr, np.flipud: flipud,
    np.rot90: rot90, np.trace: trace, np.resize: resize, np.polyval: polyval,
    np.atleast_1d: atleast_1d, np.atleast_2d: atleast_2d, np.atleast_3d: atleast_3d, np.diff: diff, np.ediff1d: ediff1d, np.cross: cross, np.triu: triu, np.tril: tril,
    np.copy: copy_, np.copyto: copyto, np.where: where, np.clip: clip, np.round: round_, np.around: round_,
    np.fix: fix, np.zeros_like: zeros_like, np.ones_like: ones_like, np.empty_like: empty_like,
    np.full_like: full_like, np.array: array, np.asarray: asarray, np.ascontiguousarray: ascontiguousarray,
    np.concatenate: concatenate, np.stack: stack, np.hstack: hstack, np.vstack: vstack, np.dstack: dstack,
    np.column_stack: column_stack, np.meshgrid: meshgrid, np.tile: tile, np.repeat: repeat,
    np.shape: shape, np.ndim: ndim, np.size: size, np.result_type: result_type, np.split: split,
    np.array_split: array_split, np.hsplit: hsplit, np.vsplit: vsplit, np.dsplit: dsplit, np.dot: dot, np.einsum: einsum,
    np.isclose: isclose, np.allclose: allclose, np.array_equal: array_equal, np.nan_to_num: nan_to_num,
    np.isposinf: isposinf, np.isneginf: isneginf, np.ptp: ptp, np.diag: diag, np.diagonal: diagonal, np.outer: outer,
    np.count_nonzero: count_nonzero, np.pad: pad, np.linalg.norm: norm, np.linalg.multi_dot: multi_dot,
    np.nonzero: _advanced.nonzero, np.unravel_index: _advanced.unravel_index, np.argwhere: _advanced.argwhere,
    np.flatnonzero: _advanced.flatnonzero,
    np.sort: _sorting.sort, np.argsort: _sorting.argsort, np.partition: _sorting.partition, np.median: _quantiles.median,
    np.percentile: _quantiles.percentile, np.quantile: _quantiles.quantile,
    np.argpartition: _sorting.argpartition, np.lexsort: _sorting.lexsort,
    np.searchsorted: _sorting.searchsorted, np.interp: _sorting.interp, np.trapezoid: trapezoid, np.convolve: convolve, np.correlate: correlate, np.unique: _sorting.unique, np.isin: _sorting.isin,
    np.intersect1d: _sorting.intersect1d, np.union1d: _sorting.union1d, np.setdiff1d: _sorting.setdiff1d,
    np.ix_: _advanced.ix_, np.cumsum: _sorting.cumsum,
    np.cumprod: _sorting.cumprod, np.nancumsum: _sorting.nancumsum, np.nancumprod: _sorting.nancumprod,
    np.take: _advanced.take,
    np.take_along_axis: _advanced.take_along_axis, np.put_along_axis: _advanced.put_along_axis,
    np.put: _advanced.put, np.putmask: _editing.putmask, np.place: _editing.place, np.delete: _editing.delete, np.insert: _editing.insert, np.append: _editing.append, np.compress: _advanced.compress, np.extract: _advanced.extract,
    np.bincount: _advanced.bincount,
    np.nanmax: nanmax, np.nanmin: nanmin, np.nanargmax: nanargmax, np.nanargmin: nanargmin, np.nansum: nansum,
    np.nanprod: nanprod, np.nanmean: nanmean, np.roll: roll, np.select: select, np.digitize: _sorting.digitize,
}
if hasattr(np, "trapz"):  # (removed in NumPy 2.4)
    HANDLED[np.trapz] = trapezoid

# Functions that take no array argument, so NumPy cannot dispatch them to a Tracer: the traced
# function sees these through a stand-in for the numpy module (see _traced_numpy.py).
CREATION = {
    "zeros": zeros, "ones": ones, "empty": empty, "full": full, "arange": arange, "linspace": linspace,
    "eye": eye, "identity": identity, "array": array, "asarray": asarray, "asanyarray": asarray,
    "ascontiguousarray": ascontiguousarray,
}


def refuse_lengths(name, args, kwargs):
    """NumPy's `name` given a run-time length (an Extent, an int whose int value is its bound:
    `np.eye(len(keep))`) where strider's does not compute with one: refused, never computed
    with the bound."""
    if name not in TAKES_LENGTHS and holds_length((args, kwargs)):
        raise unsupported(f"np.{name} of a length known only when the function runs (a mask's count)",
                          "make the array with the lengths np.zeros, np.arange or a reshape take, or pass the "
                          "length as an argument")


def holds_length(value, depth=0):
    """Whether value, or a list, tuple or dict in it, holds a run-time length (not in a Tracer's
    shape: strider's own code reads those)."""
    if isinstance(value, Extent):
        return True
    if depth < 4 and type(value) in (list, tuple):
        return any(holds_length(v, depth + 1) for v in value)
    return depth < 4 and type(value) is dict and any(holds_length(v, depth + 1) for v in value.values())


# the NumPy functions strider computes with a run-time length among their arguments
TAKES_LENGTHS = frozenset({"zeros", "ones", "empty", "full", "arange", "array", "asarray", "reshape", "broadcast_to",
                           "eye", "identity"})


def array_function(func, args, kwargs):
    handler = HANDLED.get(func)
    refuse_lengths(func.__name__, args, kwargs)
    if handler is None:
        parts = (func.__module__ or "numpy").split(".")
        # NumPy's public path (np.linalg.inv), without its private modules
        prefix = ".".join(["np"] + [p for p in parts[1:] if not p.startswith("_")]) if parts[0] == "numpy" else ".".join(parts)
        raise unsupported(f"{prefix}.{func.__name__}", "see the README for the supported NumPy functions")
    # (values of several kinds a traced branch left among the arguments: a branch of calls)
    return IMPL["in_branches"](handler, args, kwargs, f"np.{func.__name__}()")


def _builtin_round(self, ndigits=None):
    # (NumPy's scalars but its bool, and Python's numbers, have one)
    if self._weak is None and (not self._scalar or self.dtype == np.bool_):
        raise TypeError(f"type numpy.{'bool' if self._scalar else 'ndarray'} doesn't define __round__ method")
    if ndigits is not None:
        if self._weak in (int, float):  # a Python number's round, not NumPy's
            return python_round(self, operator.index(ndigits))
        r = round_(self, ndigits)
        r._scalar = True  # (a NumPy scalar's round is one)
        return r
    # Python's round(x) gives an int (half to even)
    r = np.rint(self)
    if self.dtype.kind == "f":
        check_int_of_float(r, "round()")
    r = astype(r, np.int64)
    r._weak, r._scalar = int, True
    return r


def ufunc_method(uf, method, inputs, kwargs):
    if uf is np.matmul and method == "__call__":
        return matmul(*inputs, **kwargs)
    if uf is np.divmod and method == "__call__":
        return divmod_(*inputs, **kwargs)
    if uf is np.modf and method == "__call__":
        return modf(*inputs, **kwargs)
    if method == "__call__":
        return ufunc_call(uf, inputs, **kwargs)
    if method == "reduce" and uf in _REDUCING_UFUNCS:
        kwargs.setdefault("axis", 0)
        return REDUCTIONS[_REDUCING_UFUNCS[uf]](*inputs, **kwargs)
    if method == "accumulate":
        return _sorting.accumulate(uf, *inputs, **kwargs)
    if method == "outer":
        return ufunc_outer(uf, inputs, kwargs)
    if method == "at" and uf in _advanced.AT_OPS:
        return _advanced.ufunc_at(uf, *inputs)
    if method == "at" and uf is np.subtract and len(inputs) == 3:
        return _advanced.subtract_at(*inputs)
    raise unsupported(f"np.{uf.__name__}.{method}", "use the plain ufunc or a reduction such as np.sum")


def ufunc_outer(uf, inputs, kwargs):
    """ufunc.outer(a, b): the ufunc of a with b.ndim unit axes after its own, and b, as NumPy's
    ufunc_outer computes it; both are arrays first (a Python float is float64 there, not a weak
    scalar)."""
    if uf.nin != 2:
        raise ValueError("outer product only supported for binary functions")
    if len(inputs) != 2:
        raise TypeError(f"{uf.__name__}.outer() takes exactly two positional arguments")
    a, b = (as_tracer(x) for x in inputs)
    a, b = reshape(a, a.shape), reshape(b, b.shape)  # (a reshape's view is never weak)
    return ufunc_method(uf, "__call__", (reshape(a, a.shape + (1,) * b.ndim), b), kwargs)


_REDUCING_UFUNCS = {np.add: "sum", np.multiply: "prod", np.maximum: "max", np.minimum: "min",
                    np.logical_and: "all", np.logical_or: "any"}

IMPL.update({
    "array": array, "ufunc_method": ufunc_method, "array_function": array_function,
    "__getitem__": _advanced.getitem, "__setitem__": _advanced.setitem,
    "nonzero": _advanced.nonzero, "argsort": _sorting.argsort, "sort": _sorting.sort_inplace,
    "argpartition": _sorting.argpartition, "partition": _sorting.partition_inplace,
    "cumsum": _sorting.cumsum, "cumprod": _sorting.cumprod,
    "searchsorted": lambda self, v, side="left", sorter=None: _sorting.searchsorted(self, v, side, sorter),
    "take": _advanced.take, "put": _advanced.put, "compress": lambda self, condition, axis=None, out=None: _advanced.compress(
        condition, self, axis, out),
    "sum": sum_, "prod": prod, "max": max_, "min": min_, "any": any_, "all": all_, "argmax": argmax,
    "argmin": argmin, "mean": mean, "var": var, "std": std, "swapaxes": swapaxes, "squeeze": squeeze,
    "clip": clip, "round": round_, "repeat": repeat, "astype": astype, "fill": fill, "ravel": ravel,
    "broadcast_to": broadcast_to, "dot": dot, "trace": trace, "diagonal": diagonal,
    "copy": lambda self, order="C": same_kind_copy(self) if self._scalar else copy_(self, order),  # (a scalar's is one)
    "flatten": lambda self, order="C": copy_(self.ravel(order)),
    "reshape": lambda self, *shape, order="C", copy=None: reshape(
        self, shape[0] if len(shape) == 1 else shape, order, copy=copy),
    "transpose": lambda self, *axes: transpose(
        self, None if not axes else (axes[0] if len(axes) == 1 and np.iterable(axes[0]) else axes)),
    "__round__": _builtin_round,
    "__copy__": lambda self: same_kind_copy(self),
    "__deepcopy__": lambda self, memo: same_kind_copy(self),  # (an array's items are numbers)
})
