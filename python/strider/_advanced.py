"""Data-dependent indexing: boolean masks, nonzero, integer-array and list indexing (reads,
writes, np.add.at). Their results may have a length known only when the function runs (an Extent
in the shape, a run-time extent in the IR), which flows on through views, elementwise ops,
reductions and returns.

Indexing is broken down once into primitives. Selecting along the first axis (x[m], x[idx],
x[idx, :]) moves whole rows: compress copies the rows a 1-d mask keeps, take the rows an index
array names (put writes them). Any other key is flattened: each index is checked and made
non-negative (check_index, NumPy's IndexError; indices a mask made need no check), the storage
offsets of the selected elements are computed elementwise (compiled, fused), and take reads them
(put writes them) as rows of one element of the whole storage."""
import math
import operator

import numpy as np

from . import _C, _creation
from numpy.lib.array_utils import normalize_axis_index

from ._choice import Choice, as_one, number_sides, sides
from ._errors import unsupported
from ._indexing import assign
from ._indexing import getitem as basic_getitem
from ._indexing import setitem as basic_setitem
from ._reductions import count_nonzero
from ._shapes import broadcast_to
from ._tracer import (IMPL, Extent, TracedList, Tracer, arange_at, as_tracer, concrete, bound, check_writeable,
                      current_trace, emit, holds_traced, known_scalar, same_shape, written)
from ._ufuncs import _with_length, broadcast_shape, checked_equal, one_length, where

I64 = np.dtype(np.int64)


def _length(n):
    """A dimension's length as a 0-d int64 Tracer (a constant, or the run-time length)."""
    return n.value() if isinstance(n, Extent) else current_trace().const(np.int64(n))


def count(mask):
    """The number of nonzero elements of `mask` as an Extent (bound: its size), one per mask view
    and contents: x[m] and y[m] get the same run-time length, so they broadcast together; so do
    views of the same elements in another axis order (mmpose's `d[mask.T] = x[mask]`)."""
    trace = current_trace()
    key = _count_key(mask)
    found = trace.counts.get(key)
    if found is None:
        c = count_nonzero(mask)
        found = trace.counts[key] = Extent(math.prod([bound(d) for d in mask.shape]),
                                           c._view.storage)
    return found


def _count_key(mask):
    number, offset, shape, strides, extents = current_trace().value_key(mask)
    return number, offset, tuple(sorted(zip(shape, strides, extents)))


def flatnonzero(a):
    """The flat C-order indices of a's nonzero elements (int64, run-time length)."""
    t = as_tracer(a)
    n = count(t)
    return emit("nonzero", [t], (n,), I64)


def nonzero(a):
    t = as_tracer(a)
    if t.ndim == 0:
        raise ValueError("Calling nonzero on 0d arrays is not allowed. Use np.atleast_1d(scalar).nonzero() instead.")
    return _unravel(flatnonzero(t), t.shape)


def _unravel(flat, shape):
    """Flat C-order indices of an array of `shape` as one index array per axis."""
    out, inner = [], 1
    for d in reversed(shape):
        out.append(flat if len(shape) == 1 else np.remainder(np.floor_divide(flat, inner), _length(d)))
        inner = np.multiply(inner, _length(d)) if isinstance(d, Extent) or isinstance(inner, Tracer) else inner * d
    return tuple(reversed(out))


def unravel_index(indices, shape, order="C"):
    """np.unravel_index: flat indices into an array of `shape` as one index array per axis;
    NumPy's ValueError when the function runs where one is out of bounds."""
    if order not in ("C", "F"):
        raise ValueError("only 'C' or 'F' order is permitted")
    t = as_tracer(indices)
    if t.dtype.kind not in "iub":
        raise TypeError("only int indices permitted")
    shape = (shape,) if isinstance(shape, (int, np.integer, Extent)) else tuple(shape)
    if any(isinstance(d, Extent) for d in shape):
        raise unsupported("np.unravel_index into a shape known only at run time", "unravel into a known shape")
    size = math.prod(int(d) for d in shape)
    flat = t.astype(I64)
    current_trace().check_assert(np.all((flat >= 0) & (flat < size)),
                                 f"an index is out of bounds for array with size {size}", ValueError)
    out, inner = [], 1
    for d in (reversed(shape) if order == "C" else shape):
        out.append(np.remainder(np.floor_divide(flat, inner), d))
        inner *= d
    return tuple(reversed(out)) if order == "C" else tuple(out)


def argwhere(a):
    t = as_tracer(a)
    if t.ndim == 0:
        raise unsupported("np.argwhere of a 0-d array", "use np.argwhere(np.atleast_1d(a))")
    return np.stack(nonzero(t), axis=1)


def _dynamic_slice(n, s):
    """A slice of a run-time length n: the positions it selects (a Tracer of run-time length),
    as slice.indices would resolve it once n is known."""
    start, step, length = _slice_extent(n, s)
    return arange_at(start.astype(I64), step, length)


def _slice_extent(n, s):
    """A slice of a run-time length n resolved as slice.indices would once n is known: its first
    position (a 0-d Tracer), its step and the Extent of its length. The same slice of the same
    length again is the same (`sel[::3] += 1` writes through the view it read)."""
    trace = current_trace()
    s = _int_slice(s)
    key = (n.storage, s.start, s.stop, s.step)
    if key not in trace.sliced:
        trace.sliced[key] = _resolve_slice(n, s)
    return trace.sliced[key]


def _resolve_slice(n, s):
    step = 1 if s.step is None else int(s.step)
    if step == 0:
        raise ValueError("slice step cannot be zero")
    length = n.value()

    def resolve(v, default, lo, hi):
        if v is None:
            return default
        v = int(v)
        return np.clip(length + v, lo, hi) if v < 0 else np.minimum(current_trace().const(np.int64(v)), hi)

    zero, minus_one = current_trace().const(np.int64(0)), current_trace().const(np.int64(-1))
    if step > 0:
        start = resolve(s.start, zero, zero, length)
        count_ = np.maximum(np.subtract(resolve(s.stop, length, zero, length), start), 0)
        if step > 1:  # (x[1:] needs no rounding up, nor a division)
            count_ = np.floor_divide(count_ + (step - 1), step)
    else:
        last = np.subtract(length, 1)
        start = resolve(s.start, last, minus_one, last)
        stop = resolve(s.stop, minus_one, minus_one, last)
        count_ = np.floor_divide(np.maximum(np.subtract(start, stop), 0) + (-step - 1), -step)
    hi = len(range(*slice(s.start, s.stop, step).indices(bound(n))))
    hi = bound(n) if s.start is not None and int(s.start) < 0 or s.stop is not None and int(s.stop) < 0 else hi
    count_ = np.minimum(count_, hi).astype(I64, copy=False)
    if step > 0 and (s.start is None or int(s.start) >= 0):  # for below_length: x[v:] is at most len(x) - v long
        trace = current_trace()
        sid = count_._view.storage
        trace.bounded[sid] = (n.storage, -int(s.start or 0), trace.versions.get(n.storage, 0), trace.versions.get(sid, 0))
    return start, step, Extent(hi, count_._view.storage)


def _int_slice(s):
    """s with Python ints for bounds (a bound the caller passed specializes, as an index does)."""
    return slice(*(None if p is None else int(p) for p in (s.start, s.stop, s.step)))


def _runtime_slice_view(t, key):
    """t[key] as NumPy's view where the key slices a run-time dimension with a positive step from
    a start known while tracing (`sel[:k]`, `sel[1::2]`): the view's offset and strides stay
    static, its length is a run-time one; None for any other key (a negative start or step puts
    the first element where only the run-time length says: those are gathered)."""
    if not t.is_dynamic:
        return None
    items = _index_items(t, key)
    cut = {}  # input dim: its slice
    for it in items:
        if it[0] == "adv" or (it[0] == "int" and isinstance(t.shape[it[2]], Extent)):
            return None
        if it[0] == "slice" and isinstance(t.shape[it[2]], Extent) and not _whole(it[1]):
            sl = _int_slice(it[1])
            if any(p is not None and p < 0 for p in (sl.start, sl.stop, sl.step)):
                return None
            cut[it[2]] = sl
    if not cut:
        return None
    rest, out_dims, o = [], {}, 0  # the key with the cut dims whole; where they land in the result
    for it in items:
        if it[0] == "new":
            rest.append(None)
            o += 1
        elif it[0] == "int":
            rest.append(it[1])
        else:
            rest.append(slice(None) if it[2] in cut else it[1])
            if it[2] in cut:
                out_dims[o] = cut[it[2]]
            o += 1
    r = basic_getitem(t, tuple(rest))
    v = r._view
    shape, strides, extents = list(v.shape), list(v.strides), list(v.extents)
    offset = v.offset
    for d, sl in out_dims.items():
        start, step, length = _slice_extent(r.shape[d], sl)
        offset += int(sl.start or 0) * strides[d]
        strides[d] *= step
        shape[d], extents[d] = bound(length), length.storage
    return r.view_of(_C.View(v.storage, shape, strides, offset, extents), readonly=r._readonly)


def _whole(s):
    """Whether a slice is `:` (compared part by part: a bound may be a Tracer)."""
    return s.start is None and s.stop is None and s.step is None


def _key_array(k):
    """A list or NumPy array in a key as an index array: a list of traced numbers too (Soft-NMS's
    dets[[i, maxpos]]); an empty list indexes nothing (intp)."""
    if isinstance(k, list) and holds_traced(k):
        return as_tracer(k)
    return as_tracer(np.asarray(k) if not isinstance(k, list) or len(k) else np.asarray(k, dtype=np.intp))


def _index_items(t, key):
    """key as items over t's dimensions: ('adv', Tracer, dim, in range) for index arrays (masks
    become their nonzero indices, in range; ints count as 0-d arrays when an array is present, as
    in NumPy's placement rule), ('int', int, dim), ('slice', slice, dim), ('new',)."""
    if not isinstance(key, tuple):
        key = (key,)
    arrays = any(isinstance(k, (Tracer, list, np.ndarray)) for k in key)
    expanded = []
    for k in key:
        if not isinstance(k, Tracer) and isinstance(k, (list, np.ndarray)):
            k = _key_array(k)
        if isinstance(k, (bool, np.bool_)):
            raise unsupported("indexing with a boolean scalar", "use a boolean array of the indexed shape")
        expanded.append(k)
    consumed = sum(k.ndim if isinstance(k, Tracer) and k.dtype == np.bool_ else 0 if k is None or k is Ellipsis else 1
                   for k in expanded)
    if consumed > t.ndim:
        raise IndexError(f"too many indices for array: array is {t.ndim}-dimensional, but {consumed} were indexed")
    items, dim = [], 0
    for k in expanded:
        if k is None:
            items.append(("new",))
        elif k is Ellipsis:
            for _ in range(t.ndim - consumed):
                items.append(("slice", slice(None), dim))
                dim += 1
        elif isinstance(k, slice):
            items.append(("slice", k, dim))
            dim += 1
        elif isinstance(k, Tracer) and k.dtype == np.bool_:
            for i, d in enumerate(k.shape):
                n = t.shape[dim + i]
                if not isinstance(d, Extent) and not isinstance(n, Extent) and d != n:
                    raise IndexError(f"boolean index did not match indexed array along axis {dim + i}; size of axis "
                                     f"is {n} but size of corresponding boolean axis is {d}")
                if (isinstance(d, Extent) or isinstance(n, Extent)) and getattr(d, "storage", -1) != getattr(n, "storage", -2):
                    k = _mask_length_checked(k, i, n, dim + i)
            for i, idx in enumerate(nonzero(k) if k.ndim else ()):
                items.append(("adv", idx, dim + i, True))
            dim += k.ndim
        elif isinstance(k, Tracer) or (arrays and isinstance(k, (int, np.integer))):
            k = as_tracer(k)
            if k.dtype.kind not in "iu":
                raise IndexError("arrays used as indices must be of integer (or boolean) type")
            items.append(("adv", k, dim, False))
            dim += 1
        elif isinstance(k, (int, np.integer)):
            items.append(("int", int(k), dim))
            dim += 1
        else:
            raise IndexError("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and "
                             "integer or boolean arrays are valid indices")
    for _ in range(t.ndim - dim):
        items.append(("slice", slice(None), dim))
        dim += 1
    return items


def _array_index(k):
    """Whether an index item is an array or list (advanced indexing's), not a slice or an int."""
    return isinstance(k, (list, np.ndarray)) or (isinstance(k, Tracer) and k.ndim)


def needs_advanced(t, key):
    """Whether indexing t with key takes this module (index arrays, masks, lists, or a slice or
    an int on a run-time dimension)."""
    keys = key if isinstance(key, tuple) else (key,)
    for k in keys:
        if _array_index(k):
            return True
        # an index computed from the data (not from the caller's numbers, which specialize)
        if isinstance(k, Tracer) and known_scalar(k) is None and not k._trace.from_arguments(k):
            return True
    return t.is_dynamic


def _offsets(t, key):
    """Where the elements t[key] selects are in t's storage: (a 1-d view of the storage, their
    positions in it as an int64 Tracer of the result's shape); None for basic indexing. Where
    every traced part of a position is non-negative, the view starts at the static part, so that
    the positions of dets[i, 0] and dets[i, 3] are one computation, i * 5 (_index_math)."""
    v = t._view
    # ints and slices of run-time dimensions become index arrays too
    items = []
    for it in _index_items(t, key):
        if it[0] == "int" and not isinstance(t.shape[it[2]], Extent):  # a static axis: NumPy's check, made non-negative
            d = t.shape[it[2]]
            if not -d <= it[1] < d:
                raise IndexError(f"index {it[1]} is out of bounds for axis {it[2]} with size {d}")
            it = ("int", it[1] % d, it[2])
        elif (it[0] == "int" and isinstance(t.shape[it[2]], Extent) and type(it[1]) is int
                and 0 <= it[1] < bound(t.shape[it[2]])):
            _checked(as_tracer(it[1]), t.shape[it[2]], it[2])  # a view at a static offset, checked in range
        elif it[0] == "int" and isinstance(t.shape[it[2]], Extent):
            it = ("adv", as_tracer(it[1]), it[2], False)
        elif it[0] == "slice" and isinstance(t.shape[it[2]], Extent) and not _whole(it[1]):
            it = ("range", _dynamic_slice(t.shape[it[2]], it[1]), it[2])
        items.append(it)
    adv = [it for it in items if it[0] == "adv"]
    if not adv and not any(it[0] == "range" for it in items):
        return None  # basic indexing after all
    # check each index against its dimension and make it non-negative
    checked = {(id(idx), d): idx if trusted else _checked(idx, t.shape[d], d) for _, idx, d, trusted in adv}
    try:
        bshape = broadcast_shape(*(idx.shape for _, idx, _, _ in adv)) if adv else ()
    except ValueError:
        raise IndexError("shape mismatch: indexing arrays could not be broadcast together with shapes "
                         + " ".join(str(idx.shape) for _, idx, _, _ in adv)) from None
    positions = [i for i, it in enumerate(items) if it[0] == "adv"]
    adjacent = not positions or positions[-1] - positions[0] + 1 == len(positions)
    # the result's dimensions: (kind, payload) in order
    dims = []
    for i, it in enumerate(items):
        if it[0] == "adv":
            if not dims or dims[-1][0] != "adv-block":
                if adjacent or not any(x[0] == "adv-block" for x in dims):
                    dims.append(("adv-block", None))
        elif it[0] == "slice":
            dims.append(("slice", it))
        elif it[0] == "range":
            dims.append(("range", it))
        elif it[0] == "new":
            dims.append(("new", None))
    if not adjacent and adv:
        dims = [("adv-block", None)] + [x for x in dims if x[0] != "adv-block"]
    out_shape = []
    for kind, it in dims:
        if kind == "adv-block":
            out_shape.extend(bshape)
        elif kind == "slice":  # (`:` of a run-time length keeps it: other slices of one are ranges)
            d = t.shape[it[2]]
            out_shape.append(d if isinstance(d, Extent) else len(range(*it[1].indices(d))))
        elif kind == "range":
            out_shape.append(it[1].shape[0])
        else:
            out_shape.append(1)
    nd = len(out_shape)
    # an int beside index arrays (dets[i + 1:, 2]) is an index array of one known element: part
    # of the constant offset, so that a stage sees the columns it reads a fixed distance apart
    fixed = {}
    for _, idx, d, _ in adv:
        known = concrete(checked[id(idx), d]) if idx.ndim == 0 else None
        if known is not None:
            fixed[id(idx), d] = int(known) * v.strides[d]
    base = v.offset + sum(it[1] * v.strides[it[2]] for it in items if it[0] == "int") + sum(fixed.values())
    terms, strides = [], []  # the traced parts of the positions, each shaped for the result
    at = 0
    for kind, it in dims:
        if kind == "adv-block":
            trail = nd - at - len(bshape)
            for _, idx, d, _ in adv:
                if (id(idx), d) in fixed:
                    continue
                term = _index_math(np.multiply, checked[id(idx), d], v.strides[d])
                terms.append(term.reshape(term.shape + (1,) * trail) if trail else term)
                strides.append(v.strides[d])
            at += len(bshape)
            continue
        if kind == "slice":
            d = t.shape[it[2]]
            start, stop, step = (0, d, 1) if isinstance(d, Extent) else it[1].indices(d)
            n = d if isinstance(d, Extent) else len(range(start, stop, step))
            pos = _index_math(np.multiply, arange_at(start, step, n), v.strides[it[2]])
        elif kind == "range":
            pos = _index_math(np.multiply, it[1], v.strides[it[2]])
        else:
            at += 1
            continue
        terms.append(pos.reshape(pos.shape + (1,) * (nd - at - 1)))
        strides.append(v.strides[it[2]])
        at += 1
    whole = _storage_view(t)
    # (every index is non-negative: with non-negative strides, so is every traced part)
    if all(s >= 0 for s in strides) and 0 <= base < whole.shape[0]:
        whole, total = _C.View(whole.storage, [whole.shape[0] - base], [1], base), None
    else:
        total = current_trace().const(np.int64(base))
    for term in terms:
        total = term if total is None else _index_math(np.add, total, term)
    if total is None:
        total = current_trace().const(np.int64(0))
    total = total if total.ndim == nd else total.reshape((1,) * (nd - total.ndim) + total.shape)
    return whole, broadcast_to(total, tuple(out_shape))


def _index_math(ufunc, a, b):
    """ufunc(a, b) where _offsets computes positions, once for each computation however many
    indexings ask for it (the value_key of its inputs): the result is strider's, never the
    user's, so no one writes it."""
    trace = current_trace()
    key = (ufunc.__name__,) + tuple(trace.value_key(x) if isinstance(x, Tracer) else (type(x), x) for x in (a, b))
    found = trace.index_math.get(key)
    if found is None:
        found = trace.index_math[key] = ufunc(a, b)
    return found


def _checked(idx, n, axis):
    """idx (any integer dtype) as in-range non-negative int64 indices of a dimension of length n;
    NumPy's IndexError where one is out of range. The same indices checked again (b[order],
    s[order]) reuse the check: its result is only ever read."""
    trace = current_trace()
    span = trace.ranges.get(idx._view.storage)
    if span is None and (known := concrete(idx)) is not None and known.size:
        span = int(known.min()), int(known.max()) + 1
        if not trace.loops and not isinstance(n, Extent) and not -int(n) <= known.min() <= known.max() < int(n):
            # known now: raised while tracing, where a `try` around it catches it as NumPy's run
            # does (ipazc's MTCNN: `try: b[:, [6, 7]] -= 1 except IndexError`); in a loop or
            # branch on a traced condition, only where the run takes that path (a check)
            bad = known.reshape(-1)[(known.reshape(-1) < -int(n)) | (known.reshape(-1) >= int(n))][0]
            raise IndexError(f"index {bad} is out of bounds for axis {axis} with size {n}")
    if span is not None and 0 <= span[0] and (trace.below_length(idx, n.storage) if isinstance(n, Extent)
                                              else span[1] <= int(n)):
        # in range by construction: x1[order], order[np.where(ovr <= t)[0] + 1] with ovr from order[1:]
        return idx.astype(I64) if idx.dtype != I64 else idx
    key = (trace.value_key(idx), n.storage if isinstance(n, Extent) else int(n), axis)
    found = trace.checked.get(key)
    if found is None:
        found = emit("check_index", [idx.astype(I64) if idx.dtype != I64 else idx, _length(n)], idx.shape, I64,
                     axes=(axis,))
        trace.checked[key] = found
    return found


def _mask_length_checked(k, i, n, axis):
    """The mask k read with its axis i checked equal, when the function runs, to the length n of
    the axis it indexes (one of the two known only at run time): NumPy's IndexError where they
    differ, a mask of one element included (it does not broadcast)."""
    d = k.shape[i]
    mine = d.value() if isinstance(d, Extent) else current_trace().const(np.int64(d))
    checked = checked_equal(mine, n, f"boolean index did not match indexed array along axis {axis}; size of axis is "
                            "\x02 but size of corresponding boolean axis is \x01", index_error=True)
    return _with_length(k, i, Extent(min(bound(d), bound(n)), checked._view.storage))


def _rows_key(t, key):
    """For a key that selects along the first axis only (x[m], x[idx], x[idx, :], x[m, ...]):
    ('mask', m) or ('index', idx); else None."""
    keys = list(key) if isinstance(key, tuple) else [key]
    slices = 0  # the trailing `:`s dropped: they count against t.ndim (NumPy's "too many indices")
    while len(keys) > 1 and (keys[-1] is Ellipsis or (isinstance(keys[-1], slice) and _whole(keys[-1]))):
        slices += keys.pop() is not Ellipsis
    if len(keys) != 1 or t.ndim == 0:
        return None
    k = keys[0]
    if not isinstance(k, Tracer):
        if not isinstance(k, (list, np.ndarray)) or (isinstance(k, list) and not k):
            return None
        k = _key_array(k)
        if k.dtype.kind not in "biu":
            return None
    if k.ndim == 0 or (k.ndim if k.dtype == np.bool_ else 1) + slices > t.ndim:
        return None
    if k.dtype == np.bool_:
        if k.ndim > t.ndim:
            return None
        for d, (a, b) in enumerate(zip(k.shape, t.shape)):
            if not isinstance(a, Extent) and not isinstance(b, Extent) and a != b:
                raise IndexError(f"boolean index did not match indexed array along axis {d}; size of axis is {b} "
                                 f"but size of corresponding boolean axis is {a}")
            if isinstance(a, Extent) != isinstance(b, Extent) or isinstance(a, Extent) and a.storage != b.storage:
                return None
        return "mask", k
    return ("index", k) if k.dtype.kind in "iu" else None


def _mask_rows(t, m):
    """t with its first m.ndim axes made one (a view where NumPy's reshape makes one), and m as
    a 1-d mask over it."""
    if m.ndim == 1:
        return t, m
    flat = m.reshape(-1)  # (a copy where m is a transpose: its count is m's)
    counts, key = current_trace().counts, _count_key(flat)
    if key not in counts:
        counts[key] = count(m)
    return t.reshape((-1,) + t.shape[m.ndim:]), flat


def _storage_view(t):
    """t's whole storage as a 1-d view (what take reads and put writes)."""
    size = current_trace().graph.storage_size(t._view.storage)
    return _C.View(t._view.storage, [size], [1], 0)


def top_k(t, key):
    """A 1-d sort's result (or its reverse) of a run-time length sliced to its first k, computed as
    a top-k selection (the op with axes [reversed, k], and the sort's order of ties where not
    stable); None for any other indexing. Of a length
    fixed while tracing the slice is NumPy's view, and select_sort_heads (csrc/transforms) selects
    what the sort's readers read."""
    trace = current_trace()
    found = trace.sorted.get(trace.value_key(t)) if t.ndim == 1 else None
    s = key[0] if isinstance(key, tuple) and len(key) == 1 else key
    if found is None or not isinstance(s, slice):
        return None
    name, src, reverse, ties = found
    if s.start is None and s.stop is None and isinstance(s.step, int) and s.step == -1:
        # the reverse: a copy anyway, so the sort's reversed order itself (no gather). A top-k
        # from its end next.
        r = emit(name, [src], t.shape, t.dtype, axes=(int(not reverse), -1) + ties, readonly="copy")
        trace.sorted[trace.value_key(r)] = (name, src, not reverse, ties)
        return r
    if s.start not in (None, 0) or s.step not in (None, 1) or not isinstance(s.stop, (int, np.integer)) or s.stop < 0:
        return None
    n, k = t.shape[0], int(s.stop)
    if k >= bound(n):
        return None  # the whole sort: a view of it
    # a selection of its own, not a view of the sorted array: writes through it are refused
    return emit(name, [src], (Extent(k, np.minimum(n.value(), k)._view.storage),), t.dtype,
                axes=(int(reverse), k) + ties, readonly="top_k")


def _lists_as_arrays(key):
    """A key with the lists a loop filled (TracedList) as the arrays of their items, a tuple
    inside it as a list (NumPy reads it as a sequence: SSD's `image[:, :, (2, 1, 0)]`), and an
    integer a branch or loop leaves of one of two kinds (a Choice of -1 and a NumPy int64 after
    `best = -1`, then `best = i` in a loop) as one: an index's kind does not change the result."""
    if isinstance(key, tuple):
        return tuple(list(k) if type(k) is tuple else _key_item(k) for k in key)
    return _key_item(key)


def _key_item(k):
    if isinstance(k, TracedList):
        return k.array()
    if type(k) is Choice and all(_one_integer(v) for _, v in sides(k)):
        return as_one(k, I64)
    return k


def _one_integer(v):
    """Whether v is one integer (Python's, NumPy's, traced) that int64 holds."""
    if type(v) is int:
        return True
    dtype = v.dtype if isinstance(v, (Tracer, np.generic)) else None
    return dtype is not None and np.ndim(v) == 0 and dtype.kind in "iu" and dtype != np.uint64


def _run_time(v):
    """Whether a slice bound is known only when the function runs (a loop's counter, i + 1)."""
    if isinstance(v, Extent):
        return True
    return isinstance(v, Tracer) and concrete(v) is None and not v._trace.from_arguments(v)


def _traced_slices(t, key):
    """A key whose slices have bounds known only at run time (dets[i + 1:, 4] in a loop, a crop
    mask[y1:y2, x1:x2]) with each such slice as the index array of its positions, shaped to
    broadcast as an outer product, which NumPy's advanced indexing reads and writes as the slices
    would (ints beside them move nothing); None where the key has none."""
    keys = list(key) if isinstance(key, tuple) else [key]
    at = [j for j, k in enumerate(keys) if isinstance(k, slice) and any(_run_time(p) for p in (k.start, k.stop, k.step))]
    if not at:
        return None
    if sum(k is Ellipsis for k in keys) == 1 and not any(k is None for k in keys):
        # (Mask R-CNN's masks[..., :boxes.shape[0]]): the full slices it stands for
        at_ellipsis = keys.index(Ellipsis)
        keys[at_ellipsis:at_ellipsis + 1] = [slice(None)] * (t.ndim - len(keys) + 1)
        return _traced_slices(t, tuple(keys))
    simple = all(isinstance(k, (slice, int, np.integer)) or (isinstance(k, Tracer) and k.ndim == 0 and k.dtype.kind in "iu")
                 for j, k in enumerate(keys) if j not in at)
    ints = [j for j, k in enumerate(keys) if not isinstance(k, slice)] + at
    if not simple or len(keys) > t.ndim or max(ints) - min(ints) + 1 != len(ints):
        raise unsupported("a slice whose bound is known only when the function runs beside index arrays, None or "
                          "..., or apart from the integer indices and other such slices",
                          "index with such slices next to each other and the integer indices (x[i + 1:, 4])")
    for m, j in enumerate(at):
        idx = _slice_positions(keys[j], t.shape[j])
        keys[j] = idx[(slice(None),) + (None,) * (len(at) - 1 - m)]  # (the m-th of an outer product)
    return tuple(keys)


def _slice_positions(s, n):
    """The positions a slice with a bound known only at run time takes of a dimension of length n,
    an index array of a run-time length; one array per slice (x[i + 1:, 2] - x[i + 1:, 0] has one
    run-time length)."""
    if s.step is not None and (_run_time(s.step) or int(s.step) != 1):
        raise unsupported("a slice with a step and a bound known only when the function runs", "slice with step 1")
    trace = current_trace()

    def key_of(v):
        if isinstance(v, Extent):
            v = v.value()
        return None if v is None else trace.value_key(v) if isinstance(v, Tracer) else ("int", int(v))

    cache = ("traced slice", key_of(s.start), key_of(s.stop), n.storage if isinstance(n, Extent) else int(n))
    if (idx := trace.sliced.get(cache)) is not None:
        return idx
    if (s.start is None or (not _run_time(s.start) and int(s.start) == 0)) and isinstance(s.stop, Extent) and (
            s.stop.storage == getattr(n, "storage", None) or (not isinstance(n, Extent) and bound(s.stop) <= n)):
        # a run-time length no longer than the axis (SSD's out[:len(keep)] = keep): its positions
        # have that very length, so that what has it broadcasts with them
        idx = trace.sliced[cache] = arange_at(0, 1, s.stop)
        trace.ranges[idx._view.storage] = (0, bound(n))
        return idx
    length = _length(n)

    def clip(v, default):
        if v is None:
            return default
        v = as_tracer(v).astype(I64, copy=False)
        span = trace.ranges.get(v._view.storage)
        if span is not None and span[0] >= 0:  # (a loop's counter, i + 1 of it: never from the end)
            return np.minimum(v, length)
        return np.where(v < 0, np.maximum(v + length, 0), np.minimum(v, length))

    start = clip(s.start, current_trace().const(np.int64(0)))
    count_ = np.maximum(clip(s.stop, length) - start, 0).astype(I64)
    idx = arange_at(start, 1, Extent(bound(n), count_._view.storage))
    trace.ranges[idx._view.storage] = (0, bound(n))
    if isinstance(n, Extent):  # (start is clipped to n, the count to n - start: every position is below n)
        trace.relative[idx._view.storage] = (n.storage, trace.versions.get(n.storage, 0), 0)
    trace.sliced[cache] = idx
    return idx


def _one_bool(key):
    """A boolean scalar as a whole key (YOLOv7's `predictions[np.squeeze(scores) > t]` of one
    detection), as NumPy reads it: a mask of one element over a new first axis; else None."""
    if isinstance(key, (bool, np.bool_)) or (isinstance(key, Tracer) and key.dtype == np.bool_ and key.ndim == 0):
        return as_tracer(key).reshape(1)
    return None


def _chosen_ints(key):
    """The Choices of integers in a key, as indices or slice bounds (builtin min(n, k) of a traced
    count and a Python int: FCOS's x[:pre_nms_top_n]), as one traced int64 each: no index minds
    which kind of integer it is."""
    def one(k):
        if isinstance(k, slice) and any(type(p) is Choice for p in (k.start, k.stop, k.step)):
            return slice(*(one(p) for p in (k.start, k.stop, k.step)))
        if type(k) is Choice and all(_one_integer(x) for _, x in sides(k)):
            return as_one(k, np.int64)
        return k
    return tuple(one(k) for k in key) if isinstance(key, tuple) else one(key)


def getitem(t, key):
    if (mask := _one_bool(key)) is not None:
        return getitem(t[None], mask)
    key = _chosen_ints(key)
    if choices := [k for k in (key if isinstance(key, tuple) else (key,)) if type(k) is Choice]:
        # (index lists of two kinds: a loop's and a slice of it a traced branch took) each side's read;
        # a side that is no index (facenet's empty float64 picks) refuses the Choice, naming its kinds
        for c in choices:
            if any(isinstance(v, (Tracer, np.ndarray)) and v.dtype.kind not in "biu" for _, v in sides(c)):
                c._fail()
        return IMPL["in_branches"](getitem, (t, key), {}, "an index")
    key = _lists_as_arrays(key)
    if (traced := _traced_slices(t, key)) is not None:  # a copy where NumPy's is a view, kept in step with t
        r = getitem_plain(t, traced)
        r._trace.copy_of_view(r, t, traced)
        return r
    r = top_k(t, key) if t.ndim == 1 and current_trace().sorted else None
    return r if r is not None else getitem_plain(t, key)


def getitem_plain(t, key):
    rows = _rows_key(t, key)
    if rows is not None and rows[0] == "mask":
        src, m = _mask_rows(t, rows[1])
        return emit("compress", [m, src], (count(m),) + src.shape[1:], t.dtype)
    if rows is not None:
        idx = rows[1]
        if (r := _compressed(t, idx)) is not None:
            return r
        return emit("take", [t, _checked(idx, t.shape[0], 0)], idx.shape + t.shape[1:], t.dtype)
    if (r := _runtime_slice_view(t, key)) is not None:
        return r
    found = _offsets(t, key) if needs_advanced(t, key) else None
    if found is None:
        return basic_getitem(t, key)
    source, off = found
    view = current_trace().temp(off.shape, t.dtype)
    current_trace().op("take", [t.view_of(source), off], view)
    # a copy: NumPy's basic indexing of a run-time dimension would be a view, which this is not;
    # ints alone give a NumPy scalar, with `...` a 0-d array
    keys = key if isinstance(key, tuple) else (key,)
    r = Tracer(current_trace(), view, t.dtype, scalar=not off.shape and not any(k is Ellipsis for k in keys))
    if not _has_adv(t, key) and not r._scalar:  # (a NumPy scalar is NumPy's copy too)
        current_trace().copy_of_view(r, t, key)
    return r


def _compressed(t, idx):
    """t[idx] as compress(m, t[k:]) where idx holds the positions where the 1-d mask m holds,
    plus k (np.where(m)[0] + k: Trace.selects) and t has rows for all of m from its row k on (by
    static lengths, or Trace.bounded for run-time ones): one pass over the mask and the rows,
    not the positions and then a gather (py_cpu_nms's order[np.where(ovr <= t)[0] + 1]). None
    where that is not known."""
    trace = current_trace()
    found = trace.selected(idx)
    if found is None:
        return None
    m, k = found
    n, rows = m.shape[0], t.shape[0]
    if k < 0:
        return None
    if isinstance(n, Extent) and isinstance(rows, Extent):
        b = trace.bounded.get(n.storage)
        if not (b is not None and b[0] == rows.storage and b[2] == trace.versions.get(rows.storage, 0)
                and b[3] == trace.versions.get(n.storage, 0) and b[1] + k <= 0):
            return None
    elif isinstance(rows, Extent) or bound(n) + k > rows:
        return None
    v = t._view
    extents = []
    if isinstance(n, Extent) or v.extents:
        extents = [n.storage if isinstance(n, Extent) else -1] + (list(v.extents[1:]) if v.extents else [-1] * (t.ndim - 1))
    src = t.view_of(_C.View(v.storage, [bound(n)] + list(v.shape[1:]), list(v.strides), v.offset + k * v.strides[0], extents))
    return emit("compress", [m, src], (count(m),) + src.shape[1:], t.dtype)


def _has_adv(t, key):
    """Whether NumPy's result is a copy too (an index array in the key)."""
    keys = key if isinstance(key, tuple) else (key,)
    return any(isinstance(k, (list, np.ndarray)) or (isinstance(k, Tracer) and k.ndim) for k in keys)


def setitem(t, key, value):
    check_writeable(t)
    if (mask := _one_bool(key)) is not None:
        return setitem(t[None], mask, value)
    key = _lists_as_arrays(_chosen_ints(key))
    if type(value) is Choice and number_sides(value):
        # a number of one of several kinds (a Python float, a float32 scalar) is stored as t's dtype either way
        value = as_one(value, t.dtype)
    elif type(value) is Choice and all(isinstance(v, (Tracer, np.ndarray)) or number_sides(v) for _, v in sides(value)):
        # an array of one of several kinds (float32 or float64, lengths apart): the store of the
        # side the condition picks, a branch (the other side's lengths may hold anything then)
        from ._control import if_stmt  # (_control builds on this module)
        if_stmt(value.cond, lambda: setitem(t, key, value.then) or (), lambda: setitem(t, key, value.other) or (), (), ())
        return
    # slices, ints, None and ... alone (their bounds traced too): NumPy's basic indexing, whose
    # error messages differ from its advanced indexing's
    basic = not any(_array_index(k) for k in (key if isinstance(key, tuple) else (key,)))
    key = _traced_slices(t, key) or key
    keys = key if isinstance(key, tuple) else (key,)
    if len(keys) == 1 and isinstance(keys[0], Tracer) and keys[0].dtype == np.bool_ and np.ndim(value) == 0 \
            and keys[0].shape == t.shape[:keys[0].ndim] and not t.is_dynamic:
        # x[m] = scalar selects elementwise: no run-time length, compiled and fused
        m = keys[0].reshape(keys[0].shape + (1,) * (t.ndim - keys[0].ndim))
        assign(t, where(m, written(value, t.dtype, "index"), t))
        return
    rows = _rows_key(t, key)
    if rows is not None:
        dest, idx = t, rows[1]
        if rows[0] == "mask":
            dest, m = _mask_rows(t, idx)
            if dest._view.storage != t._view.storage:
                rows = None  # the rows could not be a view of t: scatter its elements instead
            else:
                idx = flatnonzero(m)
        else:
            idx = _checked(idx, t.shape[0], 0)
    if rows is not None:
        v = _values(value, t.dtype, idx.shape + dest.shape[1:], t)
        current_trace().op("put", [idx, v], dest._view)
        return
    if (view := _runtime_slice_view(t, key)) is not None:
        return assign(view, value)
    found = _offsets(t, key) if needs_advanced(t, key) else None
    if found is None:
        return basic_setitem(t, key, value)
    dest, off = found
    off, value = _one_length_with(off, value, t.dtype, basic)
    current_trace().op("put", [off, _values(value, t.dtype, off.shape, t)], dest)


def _one_length_with(off, value, dtype, basic):
    """The positions `off` a put writes and its values, read with one length along each axis
    where a run-time length of one meets another length (not the values' static 1, which
    broadcasts): CenterNet's `heatmap[y - t:y + b, x - l:x + r] = np.maximum(...)` with y and x
    computed. They are checked equal when the function runs: NumPy's ValueError where they
    differ (its message for slices and ints alone when `basic`, else its advanced indexing's),
    the call run in NumPy where the values' is 1 then (NumPy broadcasts it)."""
    v = written(value, dtype, "index")
    if not (v.is_dynamic or off.is_dynamic):
        return off, value
    for axis in range(1, min(v.ndim, off.ndim) + 1):
        def axis_of(t, axis=axis):
            if t is not off and not isinstance(t.shape[-axis], Extent) and t.shape[-axis] == 1:
                return None
            return t.ndim - axis

        def message(first, other):
            def shown(t):
                return "(" + ",".join("\x01" if d is first else "\x02" if d is other else str(bound(d))
                                      for d in t.shape) + ("," if t.ndim == 1 else "") + ")"
            if basic:
                return f"could not broadcast input array from shape {shown(v)} into shape {shown(off)}"
            return (f"shape mismatch: value array of shape {shown(v)} could not be broadcast to indexing result of "
                    f"shape {shown(off)}")
        off, v = one_length([off, v], axis_of, message)
    return off, v


def _values(value, dtype, shape, into=None):
    """What an indexed assignment into `into` stores: value cast to dtype (unsafe, as NumPy's) and
    broadcast to the indexing result's shape; a copy where it is a view of into's memory, as
    NumPy's (`p[:, [1, 0]] = p[:, :2]` swaps: element by element, the first store would change
    what the second reads)."""
    v = written(value, dtype, "index")
    if into is not None and v._view.storage == into._view.storage:
        v = v.copy()
    vshape = v.shape
    while len(vshape) > len(shape) and not isinstance(vshape[0], Extent) and vshape[0] == 1:
        vshape = vshape[1:]
    if len(vshape) != v.ndim:
        v = v.reshape(vshape)
    try:
        if not same_shape(broadcast_shape(vshape, shape), shape) and not _checked_when_run(vshape, shape):
            raise ValueError
        v = v.broadcast_to(shape)
    except ValueError:
        raise ValueError(f"shape mismatch: value array of shape {v.shape} could not be broadcast to indexing "
                         f"result of shape {shape}") from None
    return v


def _checked_when_run(vshape, shape):
    """Whether a value of vshape goes into shape where each of its run-time lengths equals the
    static one it meets, which broadcast_to checks when the function runs (`v[:-1, None] = v`
    with v of a run-time length: NumPy's ValueError unless it is 1)."""
    return len(vshape) <= len(shape) and all(
        same_shape((vd,), (d,)) or (not isinstance(vd, Extent) and vd == 1) or (isinstance(vd, Extent)
                                                                              and not isinstance(d, Extent))
        for vd, d in zip(vshape[::-1], shape[::-1]))


# the ufuncs whose .at has an op: each combines a row with the one it lands on, in index order
AT_OPS = {np.add: "add_at", np.maximum: "maximum_at", np.minimum: "minimum_at"}


def ufunc_at(uf, a, indices, b, negate=False):
    """np.add.at, np.maximum.at, np.minimum.at: a[indices] = uf(a[indices], b) with repeated
    indices combining in turn, in NumPy's loop for a's dtype and b's as an array (a Python float
    is float64 there, not a weak scalar as in a + 1.5), each step cast back to a's dtype (unsafe).
    `negate`: b's negative in that loop (np.subtract.at)."""
    t = as_tracer(a)
    check_writeable(t)
    b = as_tracer(b)
    loop = uf.resolve_dtypes((t.dtype, b.dtype, None))[2]
    b = b.astype(loop, copy=False)
    if negate:
        b = np.negative(b)
    found = _offsets(t, indices if isinstance(indices, tuple) else (indices,))
    if found is None:  # basic indices alone: every element once
        t[indices] = uf(t[indices].astype(loop, copy=False), b)
        return
    dest, off = found
    current_trace().op(AT_OPS[uf], [off, _values(b, loop, off.shape, t)], dest)


def subtract_at(a, indices, b):
    """np.subtract.at: np.add.at of -b in subtract's loop, the same result (x - y is x + -y in
    IEEE arithmetic and in integers' wrap); bools raise subtract's TypeError."""
    t = as_tracer(a)
    np.subtract.resolve_dtypes((t.dtype, as_tracer(b).dtype, None))
    ufunc_at(np.add, t, indices, b, negate=True)


# a bincount of 8- or 16-bit integers (or bools) needs at most this many bins: their dtype bounds them
_BIN_DTYPES = {np.dtype(np.bool_): 2,
               **{np.dtype(t): np.iinfo(t).max + 1 for t in (np.int8, np.uint8, np.int16, np.uint16)}}


def bincount(x, weights=None, minlength=0):
    """np.bincount: how often each value of the 1-d non-negative integers x occurs (with weights:
    their sums, in float64), in max(x.max() + 1, minlength) bins. Compiled where tracing bounds the
    values, so that the bins' count is bounded: argmax's and argsort's positions and copies,
    gathers and shifts of them (Trace.ranges), 8- and 16-bit integers and bools by their dtype;
    exactly `minlength` bins where that bound is at most minlength. Elsewhere a graph break."""
    if minlength is None:
        raise TypeError("use 0 instead of None for minlength")
    if isinstance(minlength, Tracer):
        if (known := known_scalar(minlength)) is None:
            raise unsupported("np.bincount of a minlength known only when the function runs",
                              "pass minlength as a Python int (static_argnames)")
        minlength = known
    minlength = operator.index(minlength)
    if minlength < 0:
        raise ValueError("'minlength' must not be negative")
    t = as_tracer(x)
    if t.ndim != 1:
        raise ValueError("object too deep for desired array" if t.ndim else
                         "object of too small depth for desired array")
    if t.dtype.kind not in "biu":
        raise TypeError(f"Cannot cast array data from {t.dtype!r} to dtype('int64') according to the rule 'safe'")
    w = None
    if weights is not None:
        w = as_tracer(weights)
        if not same_shape(w.shape, t.shape):
            if isinstance(w.shape[0] if w.ndim else 0, Extent) or isinstance(t.shape[0], Extent):
                raise unsupported("np.bincount of weights whose run-time length differs from the values'",
                                  "take both from one mask")
            raise ValueError("The weights and list don't have the same length.")
        if isinstance(t.shape[0], Extent):  # NumPy's bins of no values are int64 even with weights
            raise unsupported("np.bincount with weights of a run-time length (its dtype is int64 where the length "
                              "is 0)", "count into np.zeros(n) with np.add.at")
        w = w.astype(np.float64)
    trace = current_trace()
    lo, hi = trace.ranges.get(t._view.storage, (None, None))
    if t.dtype in _BIN_DTYPES:
        hi = min(hi if hi is not None else _BIN_DTYPES[t.dtype], _BIN_DTYPES[t.dtype])
        lo = 0 if t.dtype.kind in "bu" else lo
    if hi is None:
        raise unsupported("np.bincount of values tracing cannot bound (its bins' count would have no bound)",
                          "give np.bincount values whose range is known (argmax's positions, 8- or 16-bit integers), "
                          "or count into np.zeros(n) with np.add.at")
    idx = t.astype(np.int64)
    if lo is None or lo < 0:
        trace.check_assert(np.all(idx >= 0), "'list' argument must have no negative elements", ValueError)
    if bound(t.shape[0]) == 0:  # no values: int64 bins, with weights too
        return _creation.zeros((minlength,), np.int64)
    if hi <= minlength:
        n = minlength
    else:
        top = np.max(np.concatenate([np.full(1, -1, np.int64), idx]))
        n = Extent(max(hi, minlength), np.maximum(top + 1, minlength)._view.storage)
    out = _creation.zeros((n,), np.float64 if w is not None else np.int64)
    ufunc_at(np.add, out, idx, w if w is not None else np.int64(1))
    return out


def _in_mode(idx, n, mode, empty):
    """Indices as np.take and np.put read them in `mode` ('clip': into [0, n - 1], negative ones
    too; 'wrap': modulo n; 'raise': as they are, checked in range); `empty` is NumPy's IndexError
    where n is 0 and there are indices."""
    if mode not in ("raise", "clip", "wrap"):
        raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {mode!r})")
    if idx.dtype.kind not in "biu":
        raise TypeError(f"Cannot cast array data from dtype('{idx.dtype}') to dtype('int64') according to the rule "
                        "'same_kind'")
    if idx.dtype == np.bool_:  # positions 0 and 1, not a mask
        idx = idx.astype(I64)
    if mode == "raise":
        return idx
    count = n.value() if isinstance(n, Extent) else n
    if not isinstance(n, Extent) and n == 0 and not (not isinstance(idx.size, Extent) and idx.size == 0):
        raise IndexError(empty)
    idx = idx.astype(I64, copy=False)
    return np.clip(idx, 0, np.subtract(count, 1)) if mode == "clip" else np.remainder(idx, count)


def take(a, indices, axis=None, out=None, mode="raise"):
    if out is not None:
        raise unsupported("np.take(out=...)", "assign the result")
    t = as_tracer(a)
    # a Python int takes as NumPy's index array does (a copy), not as x[1] (a view)
    idx = as_tracer(np.asarray(indices) if type(indices) in (bool, int) else indices)
    if axis is None:
        t, axis = t.reshape(-1), 0
    axis = normalize_axis_index(axis, t.ndim)
    idx = _in_mode(idx, t.shape[axis], mode, "cannot do a non-empty take from an empty axes.")
    return getitem(t, (slice(None),) * axis + (idx,))


def _along_axis_key(t, idx, axis):
    """The index NumPy's take_along_axis and put_along_axis make: idx along `axis`, aranges
    broadcasting along the others."""
    if idx.ndim != t.ndim:
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    if idx.dtype.kind not in "iu":
        raise IndexError("`indices` must be an integer array")
    key = []
    for d in range(t.ndim):
        if d == axis:
            key.append(idx)
        else:
            shape = [1] * t.ndim
            shape[d] = t.shape[d]
            key.append(arange_at(0, 1, t.shape[d]).reshape(shape))  # of the axis's run-time length too
    return tuple(key)


def take_along_axis(arr, indices, axis=-1):
    t, idx = as_tracer(arr), as_tracer(indices)
    if axis is None:
        if idx.ndim != 1:
            raise ValueError("when axis=None, `indices` must have a single dimension.")
        t, axis = t.reshape(-1), 0
    return getitem(t, _along_axis_key(t, idx, normalize_axis_index(axis, t.ndim)))


def put_along_axis(arr, indices, values, axis):
    t, idx = as_tracer(arr), as_tracer(indices)
    if axis is None:
        if idx.ndim != 1:
            raise ValueError("when axis=None, `indices` must have a single dimension.")
        return put(t, idx, values)
    setitem(t, _along_axis_key(t, idx, normalize_axis_index(axis, t.ndim)), values)


def put(a, ind, v, mode="raise"):
    """a.flat[ind] = v, v repeated where it is shorter; the last of repeated indices wins. An index
    out of range raises before anything is written (NumPy writes the positions before it)."""
    if isinstance(a, np.ndarray) and not isinstance(a, Tracer):
        raise unsupported("np.put into an array the function did not receive", "pass the array as an argument")
    if not isinstance(a, Tracer):
        raise TypeError(f"argument 1 must be numpy.ndarray, not {type(a)}")
    check_writeable(a)
    if a.is_dynamic:
        raise unsupported("np.put into an array whose length is known only at run time",
                          "index it with a boolean mask or an index array")
    idx = as_tracer(ind)
    if isinstance(ind, (Tracer, np.ndarray)) and idx.dtype.kind not in "biu":
        raise TypeError(f"Cannot cast array data from dtype('{idx.dtype}') to dtype('int64') according to the rule "
                        "'safe'")
    idx = idx.astype(I64, copy=False)  # a list or a number of any kind is cast, as NumPy does
    idx = idx.reshape(-1) if idx.ndim != 1 else idx
    idx = _in_mode(idx, a.size, mode, "cannot replace elements of an empty array")
    v = written(v, a.dtype)
    v = v.reshape(-1) if v.ndim != 1 else v
    if v.shape[0] == 0 or (not isinstance(idx.shape[0], Extent) and idx.shape[0] == 0):
        return  # NumPy writes nothing
    n = idx.shape[0]
    if v.shape[0] != 1 and (isinstance(n, Extent) or v.shape[0] != n):
        v = getitem(v, np.remainder(arange_at(0, 1, n), v.shape[0]))
    # the flat (C-order) index as a storage offset of a's view
    off = current_trace().const(np.int64(a._view.offset))
    for i, stride in zip(_unravel(_checked(idx, a.size, 0), a.shape), a._view.strides):
        off = np.add(off, np.multiply(i, stride))
    current_trace().op("put", [off, _values(v, a.dtype, off.shape, a)], _storage_view(a))


def ix_(*args):
    """Index arrays that broadcast to the grid of their product (a mask gives its nonzero indices)."""
    out = []
    for k, a in enumerate(args):
        t = as_tracer(a) if not isinstance(a, list) or a else as_tracer(np.asarray(a, np.intp))
        if t.ndim != 1:
            raise ValueError("Cross index must be 1 dimensional")
        if t.dtype == np.bool_:
            t = flatnonzero(t)
        out.append(t.reshape((1,) * k + t.shape + (1,) * (len(args) - k - 1)))
    return tuple(out)


def compress(condition, a, axis=None, out=None):
    if out is not None:
        raise unsupported("np.compress(out=...)", "assign the result")
    c = as_tracer(condition)
    t = as_tracer(a)
    if axis is None:
        t, axis = t.reshape(-1), 0
    axis = axis % t.ndim
    if c.ndim != 1:
        raise ValueError("condition must be a 1-d array")
    if not same_shape(c.shape, (t.shape[axis],)):
        # NumPy takes the positions of the true entries: a shorter condition keeps none past its
        # end, a longer one raises IndexError only for a true entry past the axis's
        return take(t, flatnonzero(c), axis=axis)
    return getitem(t, (slice(None),) * axis + (c.astype(np.bool_),))


def extract(condition, arr):
    return getitem(as_tracer(arr).reshape(-1), np.not_equal(as_tracer(condition), 0).reshape(-1))
