"""Basic indexing: keys become views (no data moves) and assignments become copy ops."""
import numpy as np

from ._errors import unsupported
from ._tracer import Tracer, bound, check_writeable, emit, item_list, known_by_static, known_scalar, written


def _advanced(kind):
    return unsupported(f"advanced indexing with {kind}",
                       "use basic indexing (ints, slices, None, ...), or np.where(mask, x, other) to "
                       "select values elementwise")


def _traced_index(what, t):
    return known_by_static(t, what, "indexing by values computed in the function is not supported yet: return the "
                           "array and the index, and index after the call")


def _known_index(k):
    """An index (or a slice's bounds) tracing knows the value of (Trace.fold) as that value."""
    if isinstance(k, Tracer) and k.dtype.kind in "iu" and (value := known_scalar(k)) is not None:
        return int(value)
    if isinstance(k, slice) and any(isinstance(p, Tracer) for p in (k.start, k.stop, k.step)):
        return slice(*(_known_index(p) for p in (k.start, k.stop, k.step)))
    return k


def normalize_key(key, shape):
    """NumPy's basic-indexing key as C++ IndexItems, and whether NumPy would return a scalar."""
    shape = tuple(bound(d) for d in shape)  # slices of run-time dimensions here are whole (_advanced)
    if not isinstance(key, tuple):
        key = (key,)
    key = tuple(_known_index(k) for k in key)
    for k in key:
        if isinstance(k, Tracer):
            if k.dtype == np.bool_:
                raise _advanced("a boolean mask")
            if k.ndim == 0:
                raise _traced_index("an index", k)
            raise _advanced("an integer array")
        if isinstance(k, (bool, np.bool_)):
            raise _advanced("a boolean scalar")
        if isinstance(k, (list, np.ndarray)):
            raise _advanced("a list or an array")
        if not (k is None or k is Ellipsis or isinstance(k, (int, np.integer, slice))):
            raise IndexError("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and "
                             "integer or boolean arrays are valid indices")
    n_ellipsis = sum(k is Ellipsis for k in key)
    if n_ellipsis > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    consumed = sum(1 for k in key if k is not None and k is not Ellipsis)
    if consumed > len(shape):
        raise IndexError(f"too many indices for array: array is {len(shape)}-dimensional, but "
                         f"{consumed} were indexed")
    items, dim = [], 0
    for k in key:
        if k is None:
            items.append(("n", 0, 0, 0))
        elif k is Ellipsis:
            for _ in range(len(shape) - consumed):
                items.append(("s", 0, 1, shape[dim]))
                dim += 1
        elif isinstance(k, slice):
            for part in (k.start, k.stop, k.step):
                if isinstance(part, Tracer):
                    raise _traced_index("a slice bound", part)
            start, stop, step = k.indices(shape[dim])
            items.append(("s", start, step, len(range(start, stop, step))))
            dim += 1
        else:
            i, n = int(k), shape[dim]
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for axis {dim} with size {n}")
            items.append(("i", i % n, 0, 0))
            dim += 1
    scalar = n_ellipsis == 0 and all(it[0] == "i" for it in items) and consumed == len(shape)
    return items, scalar


def getitem(t, key):
    items, scalar = normalize_key(key, t.shape)
    view = t._view.subscript(items)
    if not scalar:
        return t.view_of(view)
    # NumPy hands back a scalar: a copy, unaffected by later writes to the array
    return emit("copy", [t.view_of(view)], (), t.dtype, scalar=True)


def assign(dest, value, store="cast"):
    """dest[...] = value with NumPy's rules: broadcast value (dropping leading 1s), unsafe cast
    (but for a scalar's checks: written's `store`)."""
    check_writeable(dest)
    v = written(value, dest.dtype, store)
    vshape = v.shape
    while len(vshape) > dest.ndim and vshape[0] == 1:
        vshape = vshape[1:]
    if vshape != v.shape:
        v = v.reshape(vshape)
    if v.is_dynamic or dest.is_dynamic:  # run-time lengths that must agree: checked when the function runs
        from ._ufuncs import one_length  # (_ufuncs builds on this module)
        for axis in range(1, min(v.ndim, dest.ndim) + 1):
            dest, v = one_length([dest, v], lambda t: t.ndim - axis, lambda first, other: (
                f"could not broadcast input array from shape {v.shape} into shape {dest.shape}"))
    try:
        v = v.broadcast_to(dest.shape)
    except ValueError:
        raise ValueError(f"could not broadcast input array from shape {v.shape} into shape "
                         f"{dest.shape}") from None
    if v._view != dest._view:  # `x[k] -= y` stores x[k] onto itself after the in-place op
        dest._trace.op("copy", [v], dest._view)


def setitem(t, key, value):
    items, element = normalize_key(key, t.shape)
    if element and ((isinstance(value, (Tracer, np.ndarray)) and value.ndim) or isinstance(value, (list, tuple))
                    or item_list(value)):
        raise ValueError("setting an array element with a sequence.")
    assign(t.view_of(t._view.subscript(items)), value, "item")
