"""Loops and branches on traced values: what the code _convert.py rewrites calls.

`while c:` and `if c:` run as Python runs them while `c` is a Python value. Where `c` is traced
(its value is known only when the function runs), the statement becomes a region of the IR
(ops.def's control ops):

- A loop: the variables it carries (assigned in the body and read after an iteration) live in
  storages of their own, sized for the largest value they may hold; the body is traced once on
  views of them and writes its new values back at its end (and before each `if c: break`). An
  array whose length changes from one trip to the next (`order = order[inds + 1]`) is carried
  with a run-time length bounded by the first trace's. A Python list the body appends to becomes
  a TracedList with room for the loop's trips; a call whose loop outgrows it is traced again with
  more room (LoopBoundExceeded, CompiledFunction._outgrown).
- A branch: both sides are traced; the variables they assign meet in storages written by each.

The body is traced again (the graph and what tracing knew rolled back) until what it carries is
stable: lengths that change, lists it fills, storages from before the loop it writes (what
tracing knew of them no longer holds inside). Values a region computes and does not assign to a
variable it carries are sealed: used after it, they raise a TraceError, as does a loop that
changes a variable's dtype or rank, which NumPy allows and strider does not carry."""
import functools
import inspect
import math
import operator
import os
import random
import sys
import traceback
import types

import numpy as np

from . import _C
from ._choice import (Choice, Undefined, apply, imply, implied, is_, known_side, knowing, merge, narrowed,  # noqa: F401
                      rebuild, selected, sides, structure)
from ._choice import _kind, _objects, bound as assigned_value, length as choice_length
from ._convert import INPLACE, OPERATORS, converted, user_function
from ._capture import compared, hold, own_class, put_back
from ._creation import _nested_leaves, items, kind_names
from ._errors import (StriderError, TraceError, UnsupportedError, _internal, trace_error, unsupported, user_class,
                      user_location)
from ._traced_numpy import READ_ONCE_METHODS, READ_ONCE_WHY, RANDOM_STATES, stands_in, with_traced_numpy
from ._sorting import lexsort
from ._ufuncs import python_bool
from ._tracer import (IMPL, LIST_METHODS, Extent, RunInNumPy, TracedList, TracedRows, TracedSlice, Tracer, arange_at,
                      _length_of, as_tracer, bound, concrete, in_step, item_list, length_value, only_0d,
                      current_trace, forgive, holds_traced, side_effect_error)

_MAX_TRIES = 12
_MIN_TRIPS = 64  # the trips a loop is given room for, at least (more where it carries more)
# a range of at most this many trips unrolls even where its trips trace regions (a loop over a
# batch's images): its counter stays a Python int, so `x[n]` is a view as NumPy's
_UNROLLED = 8
_LONG = 64  # a range of more trips is a loop of the IR where its body allows (for_stmt)


class _Retry(Exception):
    """A region's trace learned something (a length, a list, a write) and starts again."""

    def __init__(self, region):
        super().__init__("retry")
        self.region = region


class _GoTraced(Exception):
    """A loop run as Python met a traced `break` condition: it is traced from this trip on."""

    def __init__(self, loop):
        super().__init__("traced")
        self.loop = loop


class _PythonLoop:
    """A loop run as Python, on the trace's stack of regions while a trip runs."""
    traced_region = False


def maybe(thunk, name):
    """A variable's value, or Undefined where it has none yet."""
    try:
        return thunk()
    except NameError:
        return Undefined(name, surely=True)


def _is_traced(c):
    """Whether a condition's truth is known only when the function runs. Values computed from
    the numbers the caller passes are not: bool() makes those static (Tracer.__bool__)."""
    if type(c) is Choice or isinstance(c, (Extent, TracedList)):
        return True
    if isinstance(c, Tracer):
        return concrete(c) is None and not c._trace.from_arguments(c)
    return False


def _condition(c):
    """A traced condition as a 0-d bool, with NumPy's truth rules (Python's on a Choice's sides
    that are Python values)."""
    if type(c) is Choice:
        return merge([(cond, _condition(v) if _is_traced(v) else _const_bool(bool(v))) for cond, v in sides(c)],
                     c.name)
    if isinstance(c, TracedList):
        c = c.size()
    if isinstance(c, Extent):
        c = c.value()
    t = as_tracer(c)
    if t.is_dynamic:
        raise trace_error("the truth value of an array whose length is known only at run time", "use x.any(), "
                          "x.all() or x.size > 0")
    if t.size != 1:
        bool(np.empty(t.shape))  # NumPy's ValueError for the truth of several elements
    t = t.reshape(())
    return t if t.dtype == np.bool_ else np.not_equal(t, 0)


def _control(trace, name, region, inputs=()):
    """Records a control op; its index."""
    out = trace.temp((), np.bool_)
    trace.op(name, list(inputs), out, axes=[region])
    return trace.graph.num_ops - 1


def _seal(trace, first, carried=()):
    """Seals the storages a region made from `first` on (Trace.check_unsealed), but those it
    carries out."""
    lo = first
    for sid in sorted(carried) + [trace.graph.num_storages]:
        if lo < sid:
            trace.sealed.append((lo, sid))
        lo = sid + 1


def _whole(trace, sid):
    return _C.View(sid, [trace.graph.storage_size(sid)], [1], 0)


def _written_since(trace, first_op, before):
    """The storages from before (ids < `before`) the ops from `first_op` on write."""
    return {s for s in trace.graph.op_outputs(first_op)
            if s < before and trace.graph.storage_kind(s) != "const"}


class _Slot:
    """Where a carried (or merged) variable lives: a storage sized for `bounds`, a run-time
    length storage for each axis in `dynamic`."""

    def __init__(self, trace, name, dtype, bounds, dynamic, weak, scalar, span=None, relative=None):
        self.name, self.dtype, self.bounds, self.weak, self.scalar = name, dtype, tuple(bounds), weak, scalar
        self.span = span  # the range every value written holds (Trace.ranges): assumed, then checked
        self.relative = relative  # and its bound by a run-time length (Trace.relative), likewise
        self.view = trace.temp(self.bounds, dtype)
        self.extents = [trace.temp((), np.int64).storage if d else -1 for d in dynamic]
        self.storages = [self.view.storage] + [e for e in self.extents if e >= 0]


    def tracer(self, trace):
        v = self.view
        view = _C.View(v.storage, list(v.shape), list(v.strides), 0, self.extents if any(e >= 0 for e in self.extents) else [])
        return Tracer(trace, view, self.dtype, weak=self.weak, scalar=self.scalar)

    def widened(self, trace, t):
        """The spec that also holds t, or None where this one does."""
        bounds, dynamic = [], []
        span, r = self.span, trace.ranges.get(t._view.storage)
        grew = span is not None and (r is None or r[0] < span[0] or r[1] > span[1])
        if grew:  # given up: a counter's range moves on every trip, a union would never settle
            span = None
        relative, q = self.relative, _relative_of(t)
        if relative is not None and (q is None or q[:2] != relative[:2] or q[2] > relative[2]):
            relative, grew = None, True
        for d, (b, e) in enumerate(zip(self.bounds, self.extents)):
            n = t.shape[d]
            dyn = e >= 0 or isinstance(n, Extent) or bound(n) != b
            bounds.append(max(b, bound(n)))
            dynamic.append(dyn)
            grew = grew or dyn != (e >= 0) or bounds[-1] != b
        return (self.dtype, tuple(bounds), tuple(dynamic), self.weak, self.scalar, span, relative) if grew else None


def _no_lengths(trace, slot):
    """A placeholder's run-time lengths set to 0 (its data is never read): a copy of it reads
    no further than its storage."""
    for e in slot.extents:
        if e >= 0:
            trace.op("copy", [trace.const(np.int64(0))], _C.View(e, [], [], 0))


def _relative_of(t):
    """t's bound by a run-time length (Trace.relative) while that length is unwritten, else None."""
    r = t._trace.relative.get(t._view.storage)
    return r if r is not None and r[1] == t._trace.versions.get(r[0], 0) else None


def _spec_of(t):
    dynamic = tuple(isinstance(d, Extent) for d in t.shape)
    return (t.dtype, tuple(bound(d) for d in t.shape), dynamic, t._weak, t._scalar, t._trace.ranges.get(t._view.storage),
            _relative_of(t))


def _carryable(value):
    """The value as a Tracer a slot can hold, or None for what is carried as it is."""
    if isinstance(value, (Tracer, Extent, bool, int, float, np.generic)) and not isinstance(value, TracedList):
        t = as_tracer(value)
        if isinstance(value, np.generic):  # a NumPy scalar stays one (its slot returns np.float64, not a 0-d array)
            t._scalar = True
        return t
    return None


def _write_back(trace, slots, values):
    """Copies new values into their slots: first whatever reads a slot (a swap, `a = a[1:]`) into
    fresh storage, then every slot. Raises _Retry (via the caller) where a slot must grow: returns
    the specs that must change."""
    grow = {}
    pending = []
    owned = {s for slot in slots.values() for s in slot.storages}
    for name, value in values.items():
        slot = slots[name]
        if value is None:
            continue
        if isinstance(value, Tracer) and value._view == slot.tracer(trace)._view:
            continue  # the slot's own value, unchanged
        t = as_tracer(value)
        if t.dtype != slot.dtype or t.ndim != len(slot.bounds):
            raise trace_error(f"{name!r} changes from {slot.dtype}{list(slot.bounds)} to {t.dtype}{list(t.shape)} in a loop "
                              "or branch on a traced condition", "keep a variable's dtype and number of axes the same "
                              "on every path (astype, reshape)")
        if (w := slot.widened(trace, t)) is not None:
            grow[name] = w
            continue
        reads = [t._view.storage] + [e for e in t._view.extents if e >= 0]
        if any(s in owned for s in reads):
            t = _detach(trace, t)
        pending.append((slot, t))
    if grow:
        return grow
    for slot, t in pending:
        if _may_hold_argument(trace, t):
            trace.may_be_argument.setdefault(slot.view.storage, user_location())
        out = _C.View(slot.view.storage, [bound(d) for d in t.shape], list(slot.view.strides), 0, list(t._view.extents))
        trace.stand_ins.pop(slot.view.storage, None)  # (a new value: no longer the array it stood in for)
        trace.stale.discard(slot.view.storage)
        trace.op("copy", [t], out)
        for d, e in enumerate(slot.extents):
            if e >= 0:
                n = t.shape[d]
                length = n.value() if isinstance(n, Extent) else trace.const(np.int64(n))
                trace.op("copy", [length], _C.View(e, [], [], 0))
    _assume_spans(trace, slots.values())
    return {}


def _may_hold_argument(trace, t):
    """Whether NumPy's variable may be an argument itself where t is (an argument, or a slot
    that may hold one); a number (a Python number, a NumPy scalar) is a value, not memory: the
    copy is the same number."""
    sid = t._view.storage
    return not (t._scalar or t._weak) and (trace.graph.storage_kind(sid) == "arg" or sid in trace.may_be_argument)


def _assume_spans(trace, slots):
    """What the slots' values range over holds wherever they are read (checked at every write):
    their spans, and their bounds by run-time lengths (x1[order[1:]] with order from argsort of
    a compacted array then needs no index check)."""
    for slot in slots:
        if slot.span is not None:
            trace.ranges[slot.view.storage] = slot.span
        if slot.relative is not None:
            trace.relative[slot.view.storage] = slot.relative


def _detach(trace, t):
    """A copy of t in fresh storage, with fresh run-time lengths."""
    extents = []
    for e in t._view.extents:
        if e >= 0:
            fresh = trace.temp((), np.int64)
            trace.op("copy", [Tracer(trace, _C.View(e, [], [], 0), np.int64)], fresh)
            extents.append(fresh.storage)
        else:
            extents.append(-1)
    shape = [Extent(bound(d), x) if x >= 0 else bound(d) for d, x in zip(t.shape, extents)] if extents else list(t.shape)
    view = trace.temp(tuple(shape), t.dtype)
    trace.op("copy", [t], _C.View(view.storage, list(view.shape), list(view.strides), 0, list(t._view.extents)))
    return Tracer(trace, view, t.dtype, weak=t._weak, scalar=t._scalar)


# -- the calls the rewritten code makes --

def callee(fn):
    """What a call in rewritten code calls: the user's functions rewritten in turn, builtin max,
    min, float and int as ours (_BUILTINS); a random generator's method refused."""
    for builtin, ours in _BUILTINS:
        if fn is builtin:
            return ours
    if isinstance(getattr(fn, "__self__", None), RANDOM_STATES + (random.Random,)):
        # (a global's: an argument is RandomRefused) drawn once while tracing, its values would be
        # every call's (and NumPy's C code would get the trace's np.empty stand-in, a Tracer,
        # where it writes an array)
        raise unsupported(f"{type(fn.__self__).__name__}.{fn.__name__} inside a compiled function (it would be drawn "
                          "once, at trace time)", "draw the random values outside and pass them as arguments")
    if type(fn) is types.BuiltinMethodType and fn in READ_ONCE_METHODS:
        raise unsupported(f"{fn.__self__.__name__}.{fn.__name__}() {READ_ONCE_WHY[0]}", READ_ONCE_WHY[1])
    if type(fn).__module__.startswith("numba") and hasattr(fn, "py_func"):
        # numba's dispatcher takes arrays, not traced values (it failed inside numba's own code)
        raise unsupported(f"calling {fn.py_func.__name__}, a function compiled by numba, inside a compiled function",
                          f"call its Python function ({fn.py_func.__name__}.py_func), which strider traces, or call it "
                          "outside")
    if fn is map or fn is filter:
        return functools.partial(_mapping, fn)
    if isinstance(fn, type) and issubclass(fn, np.generic):
        return functools.partial(scalar_type_, fn)
    if type(fn) is types.BuiltinMethodType and type(fn.__self__) is list and fn.__name__ == "sort":
        return functools.partial(_list_sort, fn.__self__)
    positions = _array_positions(fn)
    if positions:
        return functools.partial(_lists_as_arrays, fn, positions)
    if user_function(fn.__func__ if type(fn) is types.MethodType else fn):  # self._nms(...) too
        return converted(with_traced_numpy(fn), _MODULE)
    call = getattr(type(fn), "__call__", None)
    if not isinstance(fn, (types.FunctionType, type)) and user_function(call):  # an object called: post(dets)
        return converted(types.MethodType(call, fn), _MODULE)
    if (isinstance(fn, type) and type(fn) is type and fn.__new__ is object.__new__
            and user_function(getattr(fn, "__init__", None))):
        return functools.partial(_constructed, fn)
    return fn


def _constructed(cls, *args, **kwargs):
    """cls(*args, **kwargs) of a plain class of the user's, its __init__ rewritten as the user's
    functions are (TF OD API's BoxList(data) checks its boxes in a loop)."""
    obj = object.__new__(cls)
    if (returned := converted(with_traced_numpy(cls.__init__), _MODULE)(obj, *args, **kwargs)) is not None:
        raise TypeError(f"__init__() should return None, not '{type(returned).__name__}'")
    return obj


def _user_dunder(obj, name):
    """The method `name` of obj's class where the user's code defines it (BoxList.__getitem__),
    which Python calls unrewritten where an operator or builtin calls it (of a Choice of objects
    of one such class, each side's); else None."""
    cls = _objects(sides(obj)) if type(obj) is Choice else type(obj)
    if cls is None or cls.__module__.partition(".")[0] in ("builtins", "numpy", "strider"):
        return None  # (what traced code computes with most: no class of the user's)
    method = getattr(cls, name, None)
    return method if user_function(method) else None


def item_(obj, key):
    """obj[key] in rewritten code; of a list or tuple at an index only the run knows (DBNet's
    get_mini_boxes: `points[index_1]` of an index a traced branch set), the item gathered from
    its items stacked, where they are Python numbers of one type (traced ones too) or arrays of
    one shape and dtype. An array is a copy, so writing into it is refused and so is reading it
    after a write into an array of the list (Trace.stand_in): Python's is the list's own array.
    A list, tuple or str sliced at a run-time length is refused: Python's slice would read the
    length's bound."""
    if (method := _user_dunder(obj, "__getitem__")) is not None:
        return callee(method)(obj, key)
    if isinstance(obj, np.ndarray) and any(_is_traced(k) for k in (key if type(key) is tuple else (key,))):
        # an array tracing knows (an argument of a few ints specialized by value, KITTI eval's
        # ignored_det) at an index only the run knows: NumPy's indexing would ask the index's value
        return as_tracer(obj)[key]
    if (type(obj) in (list, tuple, str) and type(key) is slice
            and any(isinstance(b, Extent) for b in (key.start, key.stop, key.step))):
        raise trace_error(f"a {type(obj).__name__} sliced at a length known only when the function runs",
                          "slice an array (np.array(lst)[:n])")
    if (type(obj) not in (list, tuple) or not obj or not isinstance(key, Tracer) or not _is_traced(key) or key.ndim
            or key.dtype.kind not in "iu"):
        return obj[key]
    weak = _number_type(obj[0])
    if weak in (int, float) and all(_number_type(v) is weak and not isinstance(v, Extent) for v in obj):
        picked = items(list(obj))[0][key]
        picked._weak, picked._scalar = weak, False
        return picked
    arrays = [v for v in obj if isinstance(v, (Tracer, np.ndarray)) and not (isinstance(v, Tracer) and v._weak)]
    kinds = {(tuple(v.shape), v.dtype, isinstance(v, Tracer) and v._scalar) for v in arrays}
    if len(arrays) != len(obj) or len(kinds) != 1 or any(isinstance(d, Extent) for d in arrays[0].shape):
        return obj[key]
    traced = [as_tracer(v) for v in arrays]
    picked = np.stack(traced)[key]
    picked._scalar = next(iter(kinds))[2]
    current_trace().stand_in(picked, traced, writable=False)
    return picked


def _mapping(builtin, fn, *iterables):
    """map(fn, ...) (filter) in rewritten code: fn as a call of it there calls it (mmrotate's
    map(get_best_begin_point_single, ...), whose builtin min() is ours then)."""
    return builtin(fn if fn is None else callee(fn), *iterables)


def _length_read(a, b):
    # float's operators (and NumPy scalars') take an int subclass by its int value: an Extent's
    # bound; Python's int and an Extent's own operators take its traced length (a sequence
    # repeated: the Extent's, as a list of a run-time length)
    return b.value() if isinstance(b, Extent) and type(a) not in (int, bool, list, tuple, str) and not isinstance(
        a, Extent) else b


def binop_(op, a, b):
    """`a op b` in rewritten code (_convert.py's _operator); `a + b` of lists, one of them of a
    run-time length, is a fresh list of both's items (outside a loop on a traced condition, which
    carries a list's appends, not a new list each trip)."""
    if op == "Add" and (item_list(a) or item_list(b)) and all(type(x) is list or item_list(x) for x in (a, b)) and (
            trace := current_trace()) is not None and not any(isinstance(r, _Region) for r in trace.loops):
        return _joined(trace, a, b) if type(a) is list else extend(_joined(trace, [], a), b)
    if (out := _user_operator(op, a, b)) is not NotImplemented:
        return out
    if op == "Mod" and isinstance(a, str):
        b = tuple(map(_formatted, b)) if type(b) is tuple else _formatted(b)
    return OPERATORS[op](a, _length_read(a, b))


# a comparison's reflection (an arithmetic operator's is its name with an r)
_REFLECTED = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}


def _user_operator(op, a, b):
    """`a op b` where a's class defines the operator in the user's code (or b's reflects it, a
    Python number's operator aside): that method, rewritten; NotImplemented where neither does
    or both decline."""
    name = OPERATORS[op].__name__
    reflected = _REFLECTED.get(name, "r" + name)
    for x, y, method in ((a, b, _user_dunder(a, f"__{name}__")), (b, a, _user_dunder(b, f"__{reflected}__"))):
        if method is not None and (x is a or type(a) in (bool, int, float)):
            if (out := callee(method)(x, y)) is not NotImplemented:
                return out
    return NotImplemented


def _formatted(v):
    """What `"%d" % v` formats: a traced value's where tracing knows it; else refused (str's %
    would read a run-time length's bound, a traced array's text)."""
    if not isinstance(v, (Extent, Tracer)):
        return v
    if isinstance(v, Tracer) and (known := v._known_value()) is not None:
        return known
    raise trace_error("%-formatting a traced value into a string: its value is known only when the function runs",
                      "return the value and format it outside the compiled function")


def augop_(op, a, b):
    """`a op= b` in rewritten code; `lst += items` of a list is lst.extend(items), which a loop on
    a traced condition carries as it carries appends."""
    if op == "Add" and isinstance(a, (list, TracedList)) and isinstance(b, (list, tuple, TracedList)):
        return extend(a, b)
    if _number_choice_into_floats(a, b):
        if a.ndim == 0 and (a._scalar or a._weak):  # a NumPy scalar's or Python number's op= binds anew
            return OPERATORS[op](a, b)
        a[...] = OPERATORS[op](a, b)
        return a
    return INPLACE[op](a, _length_read(a, b))


def _number_choice_into_floats(target, value):
    """Whether `target op= value` may run as `target[...] = target op value`: `value` a Choice of
    numbers (Deep OC-SORT's `w[idx] += min(d, 0.5) / 2`: a Python float on one path, a float64
    scalar on the other), `target` floats; the in-place op would cast the result to target's
    dtype as the set does, on either path."""
    return (type(value) is Choice and isinstance(target, Tracer) and target.dtype.kind == "f"
            and all(isinstance(side, (int, float, np.number)) or (isinstance(side, Tracer) and not side.ndim)
                    for side in (value.then, value.other)))


slice_ = slice  # a subscript's slice in rewritten code (the function may name another `slice`)


def augitem_(op, obj, key, value):
    """`obj[key] op= value()` in rewritten code, as Python runs it: get, in-place op, set. Where
    strider holds obj[key] as a copy (a key only the run knows) and NumPy as a view, the op runs
    in place on a fresh copy of it, which the set writes back: what NumPy's view ends up holding."""
    item = obj[key]
    if isinstance(item, Tracer) and (item._readonly == "copy" or in_step(item)):
        item = item.copy()
    v = value()
    obj[key] = OPERATORS[op](item, v) if _number_choice_into_floats(item, v) else INPLACE[op](item, v)


def float_(x=0.0):
    """Builtin float, a traced Python float where only the run knows x."""
    return _number(float, x)


def int_(x=0, *base):
    """Builtin int, a traced Python int where only the run knows the integer x."""
    return int(x, *base) if base else _number(int, x)


def bool_(x=False):
    """Builtin bool, a traced Python bool where only the run knows x's truth (a one-element
    array's, with NumPy's rules: `keep = bool((iou > t).any())`)."""
    return python_bool(_condition(x)) if _is_traced(x) else bool(x)


# (np.add.at's index, its second argument, may be a tuple of index arrays: not an array)
_UFUNC_METHODS = {"reduce": (0,), "accumulate": (0,), "reduceat": (0,), "outer": (0, 1), "at": (2,)}
_ARRAY_PARAMETERS = ("a", "A", "m", "ar", "x", "arr", "ary")


def _array_positions(fn):
    """The positions of the arguments a NumPy function or ufunc takes as arrays (a list of
    traced values there is the array of them): a ufunc's inputs, its reduce's array, a NumPy
    function's first where it is its array (np.max(a), not np.stack(arrays) nor a shape)."""
    if isinstance(fn, np.ufunc):
        return tuple(range(fn.nin))
    owner = getattr(fn, "__self__", None)
    if isinstance(owner, np.ufunc):
        return _UFUNC_METHODS.get(fn.__name__, ())
    module = getattr(fn, "__module__", None)
    if not (isinstance(module, str) and module.startswith("numpy")) or stands_in(fn):
        return ()
    return _first_is_array(fn)


@functools.lru_cache(maxsize=1024)
def _first_is_array(fn):
    try:
        first = next(iter(inspect.signature(fn).parameters), None)
    except (TypeError, ValueError):
        return ()
    return (0,) if first in _ARRAY_PARAMETERS else ()


def _lists_as_arrays(fn, positions, *args, **kwargs):
    args = tuple(as_tracer(a) if k in positions and type(a) in (list, tuple) and holds_traced(a) else a
                 for k, a in enumerate(args))
    return fn(*args, **kwargs)


def scalar_type_(kind, *args, **kwargs):
    """np.float64(x) & co. (a NumPy scalar type called): on a traced x, NumPy's cast of it, a
    NumPy scalar where x has one element and no axes, else an array (x itself where its dtype is
    kind already, as NumPy gives it)."""
    if len(args) != 1 or kwargs or not (type(args[0]) is Choice or isinstance(args[0], (Tracer, Extent))):
        return kind(*args, **kwargs)
    x = args[0]
    if type(x) is Choice:
        return apply(lambda v: scalar_type_(kind, v), (x,), x.name)
    t = as_tracer(x.value() if isinstance(x, Extent) else x)
    if t.ndim:
        return t.astype(kind, copy=False)
    t = t.astype(kind, copy=True)
    t._weak, t._scalar = None, True
    return t


def _number(kind, x):
    if type(x) is Choice:
        return apply(lambda v: _number(kind, v), (x,), x.name)
    if isinstance(x, Extent):  # a run-time length is an int already
        if kind is int:
            return x
        x = x.value()
    if isinstance(x, Tracer):
        only_0d(x)
        if (t := x.traced_number(kind)) is not None:
            return t
    return kind(x)


def max_(*args, **kwargs):
    """Builtin max, on traced values too."""
    return _extreme(max, operator.gt, args, kwargs)


def min_(*args, **kwargs):
    """Builtin min, on traced values too."""
    return _extreme(min, operator.lt, args, kwargs)


def print_(*args, **kwargs):
    """Builtin print: traced values print as their description, once, as the function traces (a
    Python side effect, as in any tracing JIT); str(), repr() and f-strings of them in the
    function's own code, which would make values of that text, are refused (Tracer.__str__)."""
    print(*args, **kwargs)


def sorted_(*args, **kwargs):
    """Builtin sorted, where the keys' order is known only when the function runs: a stable
    argsort of them (with reverse=True, equal keys keep their order, as Python's), the items
    gathered by it into a list of as many. The items must be numbers of one kind or arrays of
    one shape and dtype; NaN keys, which Python's timsort orders its own way, run the call in
    NumPy."""
    if len(args) == 1 and isinstance(args[0], Tracer) and args[0].ndim and not isinstance(args[0].shape[0], Extent):
        args = (list(args[0]),)  # (PaddleOCR's sorted(dt_boxes, key=...) of an (n, 4, 2) array: its rows)
    if len(args) != 1 or set(kwargs) - {"key", "reverse"} or not (type(args[0]) in (list, tuple, range)
                                                                    or item_list(args[0])):
        return sorted(*args, **kwargs)
    key, reverse = kwargs.get("key"), kwargs.get("reverse", False)
    if _is_traced(reverse):
        raise trace_error("sorted() with a traced reverse=", "give reverse a value known while tracing")
    if item_list(args[0]):
        return _sorted_list(args[0], key, reverse)
    values = list(args[0])
    keys = [key(v) for v in values] if key is not None else values
    # tuples of numbers compare position by position (Python's order of (score, index) records)
    records = bool(keys) and all(type(k) in (tuple, list) and len(k) == len(keys[0]) and k for k in keys)
    numbers = [x for k in keys for x in k] if records else keys
    if not values or not any(type(x) is Choice or _is_traced(x) for x in numbers):
        return sorted(*args, **kwargs)
    if any(np.ndim(x) for x in numbers):
        raise trace_error("sorted() by keys that are not numbers", "sort by numbers")
    columns = [items(list(c))[0] for c in zip(*keys)] if records else [items(keys)[0]]
    return _gathered(values, _sorted_order(columns, len(values), reverse))


def _sorted_order(columns, n, reverse):
    """The permutation Python's sort by these keys (a record's positions: one column each) gives
    n items: stable, and with reverse=True equal keys keep their order."""
    for k in columns:
        if k.dtype.kind == "f":
            current_trace().check_assert(np.logical_not(np.any(np.isnan(k))), "sorted() by a NaN key, which "
                                         "Python's timsort places its own way", RunInNumPy)

    def stable(cols):  # the first position sorts first: np.lexsort's last key
        return lexsort(cols[::-1])

    return (n - 1 - stable([k[::-1] for k in columns])[::-1]) if reverse else stable(columns)


def _sorted_list(lst, key, reverse):
    """sorted() of a list filled at run time: the key of each item (a loop of the IR, where
    given), their order, the items gathered by it into a list of as many."""
    keys = listcomp_(lst, key) if key is not None else lst
    if not item_list(keys) or keys.data.ndim != 1 or lst.mixed:
        raise trace_error("sorted() of a list filled in a loop on a traced condition by keys that are not numbers "
                          "of one kind", "sort by numbers")
    order = _sorted_order([keys.array()], lst.size(), reverse)
    return TracedList.of(lst.array(raw=True)[order], lst.weak, lst.scalar)


def _gathered(values, order):
    """values (numbers of one kind, arrays of one shape and dtype, or records of those: tuples or
    lists of one length) in `order`, a traced permutation; Python numbers stay Python numbers, a
    record's positions keep their kinds."""
    record = type(values[0])
    if record in (tuple, list) and all(type(v) is record and len(v) == len(values[0]) for v in values):
        columns = [_gathered(list(c), order) for c in zip(*values)]
        return [record(c[i] for c in columns) for i in range(len(values))]
    kinds = {_number_type(v) or type(v) for v in values}  # (a traced Python number's is its type)
    picked, mixed = items(values)
    if mixed or (len(kinds) > 1 and kinds & {bool, int, float}):
        raise trace_error("sorted() of items of several kinds by keys known only when the function runs",
                          "sort items of one kind (indices, then index with them)")
    picked = picked[order]
    out = [picked[i] for i in range(len(values))]
    if kinds <= {bool, int, float}:  # (of one of them: checked above)
        weak = next(iter(kinds))
        for t in out:
            t._weak, t._scalar = weak, False
    return out


def _list_sort(lst, *, key=None, reverse=False):
    """list.sort in rewritten code: sorted_'s order, into the list."""
    lst[:] = sorted_(lst, key=key, reverse=reverse)


def in_(item, container, negate):
    """`item in container` (`not in`, `negate`) in rewritten code: of a traced array (or a list a
    traced loop filled) NumPy's `(container == item).any()`, a Python bool the run may decide
    (YOLOv5's `if k in unique_classes`); of a list or tuple of numbers, a traced one among them
    or as the item, Python's comparisons; of an object whose class defines __contains__ in the
    user's code, that method rewritten; else Python's."""
    if (method := _user_dunder(container, "__contains__")) is not None:
        found = callee(method)(container, item)
        if not _is_traced(found):
            return (not found) if negate else bool(found)
        found = _condition(found)
        return python_bool(np.logical_not(found) if negate else found)
    if item_list(container):
        container = container.array()
    if type(container) is Choice and all(isinstance(v, (Tracer, np.ndarray)) for _, v in sides(container)):
        # arrays of two dtypes (SORT's matched indices: np.where's int64 or an int32 assignment)
        found = apply(lambda c: np.any(np.equal(c, item)), (container,), "in")
        return python_bool(np.logical_not(found) if negate else found)
    if type(container) in (list, tuple) and container and _numbers_one_traced([item, *container]):
        # a traced number among numbers (bes's check_box): Python's == of each item, any of them
        found = functools.reduce(np.logical_or, (np.equal(v, item) for v in container))
    elif not isinstance(container, Tracer):
        return (item not in container) if negate else (item in container)
    else:
        found = np.any(np.equal(container, item))
    return python_bool(np.logical_not(found) if negate else found)


def _numbers_one_traced(values):
    """Whether values are numbers, 0-d traced ones among them."""
    return any(isinstance(v, Tracer) for v in values) and all(
        isinstance(v, Tracer) and v.ndim == 0 or type(v) in (bool, int, float) or isinstance(v, (np.number, np.bool_))
        for v in values)


def _truth_of_items(builtin, reduce):
    """Builtin any (all) of a 1-d traced array: the truth of its items, np.any's (np.all's), a
    bool only the run may know (YOLOv5's segment2box: `... if any(x) else ...` of a mask's
    result, whose length tracing does not know); of a list, tuple or generator of traced truths
    too (_truths); else Python's."""

    def call(*args, **kwargs):
        if len(args) == 1 and not kwargs and isinstance(args[0], Tracer) and args[0].ndim == 1:
            return python_bool(reduce(args[0]))
        if len(args) == 1 and not kwargs and type(args[0]) in (list, tuple, types.GeneratorType):
            return _truths(builtin, args[0])
        return builtin(*args, **kwargs)

    return call


def _truths(builtin, values):
    """any(values) (all), items traced among them (TF OD API's `all(recall[i] <= recall[i + 1]
    for i in ...)`): Python's scan, up to an item known while tracing that decides it, and the
    traced items' truths reduced. A generator's items after a traced one are those Python may
    not compute: tracing them, a check when the function runs is refused (Trace.speculating)."""
    stop = builtin is any  # the truth that ends the scan
    traced, trace = [], current_trace()
    before = trace.speculating
    try:
        for v in values:
            if type(v) is Choice or isinstance(v, (Tracer, Extent, TracedList)):
                traced.append(_condition(v))
                if type(values) is types.GeneratorType:
                    trace.speculating = before or f"an item of {builtin.__name__}() after one only the run decides"
                    if len(traced) > _LONG:  # each item traced anew (a generator is no loop of the IR)
                        raise trace_error(f"{builtin.__name__}() of a generator of more than {_LONG} traced items",
                                          "compute the items as an array and reduce it (np.all(r[:-1] <= r[1:]))")
            elif bool(v) is stop:
                return stop
    finally:
        trace.speculating = before
    if not traced:
        return not stop
    found = functools.reduce(np.logical_or if stop else np.logical_and, traced)
    return python_bool(found)


def type_(*args):
    """Builtin type in rewritten code: of a traced value what NumPy's run would give (np.ndarray,
    a NumPy scalar's type, a Python number's, a list for a list a traced loop filled); of an
    object a trace follows its own class, not the recording one."""
    if len(args) != 1:
        return type(*args)
    x = args[0]
    if isinstance(x, Tracer):
        return x._weak if x._weak in (bool, int, float) else x.dtype.type if x._scalar else np.ndarray
    if isinstance(x, TracedList):
        return list
    if isinstance(x, Extent):
        return int
    if type(x) is Choice:  # (one type on every side, or a type only the run knows: refused)
        kinds = {type_(v) for _, v in sides(x)}
        if len(kinds) != 1:
            x._fail()
        return kinds.pop()
    return own_class(type(x))


def sum_(*args, **kwargs):
    """Builtin sum of a traced array's items (YOLOv5's ConfusionMatrix: `sum(j) == 1` of a mask's
    result): Python's fold start + x[0] + x[1] + ... in the dtype NumPy gives start + x[0] (a
    mask's sum an int64), floats added in order as np.add.accumulate adds them (rounding as
    Python's fold, not as np.sum's pairwise sum); of no items, start itself. Else Python's."""
    x, start = (args + (kwargs.get("start", 0),))[:2] if args else (None, None)
    if (len(args) + len(kwargs) not in (1, 2) or set(kwargs) - {"start"} or not isinstance(x, Tracer) or not x.ndim
            or x.dtype.kind not in "biuf" or not isinstance(start, (bool, int, float, np.number, np.bool_))):
        return sum(*args, **kwargs)
    n = x.shape[0]
    if not isinstance(n, Extent) and n == 0:
        return start
    dtype = np.result_type(start, x.dtype)
    items = np.concatenate([np.full((1,) + x.shape[1:], start, dtype), x.astype(dtype)])
    # (integers wrap as they add, in any order)
    total = np.add.accumulate(items, axis=0)[-1] if dtype.kind == "f" else np.sum(items, axis=0, dtype=dtype)
    if not isinstance(n, Extent):
        return total
    empty = np.equal(n.value(), 0)
    return merge([(empty, start), (np.logical_not(empty), total)], "sum()")


any_, all_ = _truth_of_items(any, np.any), _truth_of_items(all, np.all)


def index_(x):
    """operator.index(x) in rewritten code: a run-time length as it is (Python's reads an int
    subclass by its int value, the bound)."""
    return x if isinstance(x, Extent) else operator.index(x)


_BUILTINS = ((max, max_), (min, min_), (float, float_), (int, int_), (bool, bool_), (print, print_), (sorted, sorted_),
             (any, any_), (all, all_), (type, type_), (sum, sum_), (operator.index, index_),
             (range, lambda *args: range_(range, *args)))


def _extreme(builtin, better, args, kwargs):
    """Python's max(a, b, ...) (min), of one iterable's items too, by key= where given: the first
    item, replaced by each later one whose key is better, where `better` may be known only when
    the function runs: the winner is then the value the comparisons select, a Choice where the
    candidates are of different kinds (max(0.0, w) is the Python float or w's NumPy scalar)."""
    key = kwargs.get("key")
    if set(kwargs) - {"key", "default"} or not args or (len(args) == 1 and type(args[0]) not in (list, tuple, range)
                                                         and not isinstance(args[0], Tracer)):
        return builtin(*args, **kwargs)
    if len(args) == 1 and isinstance(args[0], Tracer) and args[0].ndim == 1 and args[0].dtype.kind in "biuf" \
            and key is None:
        return _extreme_of_array(builtin, args[0], kwargs)
    items = list(args[0]) if len(args) == 1 else list(args)
    keys = [key(x) for x in items] if key is not None else items
    if not items or not any(type(k) is Choice or _is_traced(k) for k in keys):
        return builtin(*args, **kwargs)
    if key is None and all(isinstance(a, Extent) or (type(a) is int and a >= 0) for a in items):
        # lengths: a run-time length again (min(len(keep), k) slices as len(keep) does), bounded
        # by the bounds' extreme
        n = _extreme(builtin, better, tuple(a.value() if isinstance(a, Extent) else a for a in items), {})
        return Extent(builtin(bound(a) if isinstance(a, Extent) else a for a in items), n._view.storage)
    if type(args[0]) is range and len(items) > _LONG:
        return _extreme_of_range(builtin, args[0], keys)
    # beside other numbers, a run-time length is its traced value
    items, keys = ([a.value() if isinstance(a, Extent) else a for a in v] for v in (items, keys))
    best, best_key = items[0], keys[0]
    for x, k in zip(items[1:], keys[1:]):
        c = better(k, best_key)
        if _is_traced(c):
            cond = _condition(c)
            best = merge([(cond, x), (np.logical_not(cond), best)], f"{builtin.__name__}()")
            best_key = best if key is None else merge([(cond, k), (np.logical_not(cond), best_key)], "key")
        elif c:
            best, best_key = x, k
    return best


def _extreme_of_range(builtin, r, keys):
    """max(range(n), key=f) (min) of many trips: the first index of the best key."""
    k = np.stack([as_tracer(v) for v in keys])
    if k.ndim != 1:
        raise trace_error(f"{builtin.__name__}() of a range by keys that are not numbers", "key by a number")
    at = np.add(np.multiply(_first_best(builtin, k), r.step), r.start)
    at._weak, at._scalar = int, False
    return at


def _first_best(builtin, k):
    """The index Python's max (min) scan of the 1-d keys k ends on: the first of the best keys
    (a later one replaces the best only where it compares better), a NaN only where it is first,
    since none compares better than it and it compares better than none."""
    if k.dtype.kind == "f":
        worst = _worst(builtin, k.dtype)
        k = np.concatenate([np.where(np.isnan(k[:1]), -worst, k[:1]), np.where(np.isnan(k[1:]), worst, k[1:])])
    return np.argmax(k) if builtin is max else np.argmin(k)


def _worst(builtin, dtype):
    """The value of dtype max (min) ranks last."""
    if dtype.kind == "f":
        return -np.inf if builtin is max else np.inf
    if dtype.kind == "b":
        return builtin is min
    return np.iinfo(dtype).min if builtin is max else np.iinfo(dtype).max


def _extreme_of_array(builtin, a, kwargs):
    """max(a) (min) of a 1-d traced array: its item at _first_best, a NumPy scalar; of no items,
    default= where given, else Python's ValueError (where only the run knows the length, a
    check that raises it)."""
    n = a.shape[0]
    if not isinstance(n, Extent):
        return builtin((), **kwargs) if n == 0 else a[_first_best(builtin, a)]
    empty = np.equal(n.value(), 0)
    if "default" not in kwargs:
        current_trace().check_assert(np.logical_not(empty), f"{builtin.__name__}() arg is an empty sequence",
                                     ValueError)
    # one item more, never the best (the first of equal keys is), for the scan of no items
    padded = np.concatenate([a, np.full(1, _worst(builtin, a.dtype), a.dtype)])
    best = padded[_first_best(builtin, padded)]
    if "default" not in kwargs:
        return best
    return merge([(empty, kwargs["default"]), (np.logical_not(empty), best)], f"{builtin.__name__}()")


def len_(x):
    """len(x), a run-time length (an Extent) where x has one."""
    if isinstance(x, (TracedList, TracedRange)):
        return x.size()
    if isinstance(x, Tracer) and x.ndim and isinstance(x.shape[0], Extent):
        return x.shape[0]
    if type(x) is Choice:
        return choice_length(x)
    if (method := _user_dunder(x, "__len__")) is not None:
        # (Python's len() takes an int subclass by its int value: a run-time length's bound)
        n = callee(method)(x)
        if isinstance(n, Extent):
            return n
        n = operator.index(n)
        if n < 0:
            raise ValueError("__len__() should return >= 0")
        return n
    return len(x)


def not_(x):
    if _is_traced(x):
        c = _condition(x)
        out = np.logical_not(c)
        imply(out, *reversed(implied(c)))
        return out
    return not x


def in_branches(fn, args, kwargs, name):
    """fn(*args, **kwargs) where they hold a Choice (MTCNN's `reg`, the float32 rows of its
    boxes or an empty float64 (0, 3) as a traced branch left it, in np.hstack): a branch on its
    condition, each side fn of its value, merged as a branch's variable is. The checks fn makes
    run only where their side's condition holds (the rows of one side and the other's empty
    array would fail np.hstack's). A Choice a branch narrowed (`np.concatenate([x, d]) if d is
    not None`), or a variable one path alone assigns, is the value its read gives."""
    tree = (args, kwargs)
    if _first_choice(tree) is None:
        return fn(*args, **kwargs)
    args, kwargs = tree = _read(tree)
    choice = _first_choice(tree)
    if choice is None:
        return fn(*args, **kwargs)

    def side(value):
        a, k = _read(tree, choice, value)
        return lambda _: (in_branches(fn, a, k, name),)

    (out,) = if_stmt(choice.cond, side(choice.then), side(choice.other), (Undefined(name),), (name,))
    return out


def _first_choice(tree):
    """The first Choice in lists, tuples and dicts, else None."""
    if type(tree) in (list, tuple):
        return next((c for c in map(_first_choice, tree) if c is not None), None)
    if type(tree) is dict:
        return _first_choice(list(tree.values()))
    return tree if type(tree) is Choice else None


def _read(tree, choice=None, value=None):
    """tree with `value` in place of `choice`, and each other Choice as a read sees it (the side
    a branch narrowed it to, the value a path assigned: bound())."""
    if type(tree) in (list, tuple):
        return type(tree)(_read(v, choice, value) for v in tree)
    if type(tree) is dict:
        return {k: _read(v, choice, value) for k, v in tree.items()}
    if type(tree) is not Choice:
        return tree
    if tree is choice:
        return value
    read = assigned_value(tree)
    return narrowed(read) if type(read) is Choice else read


def not_value(x):
    """`not x` as a value: Python's bool, traced where only the run knows x's truth."""
    return python_bool(not_(x)) if _is_traced(x) else not x


def _short_circuit(thunks, stop_on, values=False):
    """`and` (stop_on False) or `or` of the thunks' values: where `values`, the operand Python's
    gives (`a and b` as a value), else its truth (a condition's)."""
    v = thunks[0]()
    for i, th in enumerate(thunks[1:], 1):
        if _is_traced(v):
            # the rest runs only where Python's would (`n > 0 and x[0] > t` must not index an empty x)
            rest, stopped = thunks[i:], v
            if values:
                then = (lambda _: (_short_circuit(rest, stop_on, True),))
                other = (lambda _: (stopped,))
            else:
                then = (lambda _: (_condition(_short_circuit(rest, stop_on)),))
                other = (lambda _: (_const_bool(stop_on),))
            first, second = (other, then) if stop_on else (then, other)
            name = "__strider_boolop" if values else "condition"
            test = _condition(v)
            (out,) = if_stmt(test, first, second, (Undefined(name),), (name,))
            if not values:  # `a or b` false says what a false says; `a and b` true, what a true says
                facts = implied(test)
                imply(out, *(({}, facts[1]) if stop_on else (facts[0], {})))
            return out
        if bool(v) == stop_on:
            return v
        v = th()
    return v


def ifexp_(test, then, other):
    """`then() if test else other()`: where test is traced, a branch whose one variable is the
    value (each side traced; values of two kinds a Choice). A side's value is what that side knows
    it holds (`a - 1 if y is None else y`: y's array, not y)."""
    if not _is_traced(test):
        return then() if test else other()
    (value,) = if_stmt(test, lambda _: (narrowed(then()),), lambda _: (narrowed(other()),),
                       (Undefined("__strider_ifexp"),), ("__strider_ifexp",))
    return value


def _const_bool(value):
    return current_trace().const(np.bool_(value))


def and_(*thunks):
    return _short_circuit(thunks, False)


def or_(*thunks):
    return _short_circuit(thunks, True)


def and_value(*thunks):
    return _short_circuit(thunks, False, True)


def or_value(*thunks):
    return _short_circuit(thunks, True, True)


def outer_append(lst, method, value):
    """`lst.append(value)` (or extend) on a list that is not the function's own (a global's, a
    closure variable's): as Python does it, but refused in a loop or branch on a traced condition,
    before the list changes."""
    trace = current_trace()
    if trace is not None:
        trace.refuse_side_effect(f"{method} to a list from outside the function")
    getattr(lst, method)(value)


def append(lst, value):
    """lst.append(value), into a TracedList where a traced loop carries the list."""
    trace = current_trace()
    if isinstance(lst, TracedList):
        for loop in trace.loops:  # a list of a run-time length from before the region: learned of its items
            if isinstance(loop, _Region) and id(lst) in loop.python_lists:
                _learn(trace, loop, lst, lst.like_item())
        if not isinstance(lst, TracedRows) and isinstance(value, Tracer) and value.is_dynamic:
            for region in trace.loops:  # items from before the loop and arrays of run-time lengths: all rows
                if isinstance(region, _Region) and id(lst) in region.made:
                    region.learn_list(region.made[id(lst)], value)
                    raise _Retry(region)
        _append(trace, lst, value)
        return lst
    if type(lst) is list and trace is not None:
        for loop in trace.loops:  # the outermost region it comes from carries it
            if isinstance(loop, _Region) and id(lst) in loop.python_lists:
                _learn(trace, loop, lst, value)
    lst.append(value)
    return lst


def _learn(trace, region, lst, item):
    """A Python list from before `region` that it appends `item` to: traced again with the list
    a TracedList, a new list of the function's own; refused where the list is not the function's
    (the caller's would not see the items)."""
    capture = getattr(trace, "capture", None)
    if capture is not None and capture.holds(lst):
        raise side_effect_error("an append to a list the caller passes or the function reads from outside")
    region.learn_list(region.python_lists[id(lst)], item)
    raise _Retry(region)


def _other_holder(lst, name):
    """How the traced function's own variables hold the list `name` names, other than as that
    name in the function whose loop or branch is traced now (another name, a caller's name, or an
    item or attribute of what one names: `res = {'keep': keep}`), in words; else None. The region
    makes a new list of it, which those would not see."""
    seen = set()

    def holds(v, depth):
        if v is lst:
            return True
        if isinstance(v, _OPAQUE) or depth > 8 or id(v) in seen:
            return False
        seen.add(id(v))
        if isinstance(v, (list, tuple, set, frozenset)):
            return any(holds(x, depth + 1) for x in v)
        if isinstance(v, dict):
            return any(holds(x, depth + 1) for x in v.values())
        d = getattr(v, "__dict__", None)
        return type(d) is dict and not type(v).__module__.startswith(("strider", "numpy")) and holds(d, depth + 1)

    frame, owner = sys._getframe(1), True
    while frame is not None:  # the user's frames up to strider's call of the function
        file = frame.f_code.co_filename
        if _internal(file) and file.endswith("_api.py"):
            break
        if not _internal(file):
            for other, v in frame.f_locals.items():
                if other.startswith("__strider_") or (owner and other == name and v is lst):
                    continue
                if holds(v, 0):
                    where = f"{other!r} in {frame.f_code.co_name}()"
                    return f"the name {where} also names" if v is lst else f"{where} also holds"
            # (the region's function, and the functions its loops' bodies became)
            owner = owner and frame.f_code.co_name.startswith("__strider_")
        frame = frame.f_back
    return None


def listcomp_(items, fn):
    """[fn(v) for v in items] (one `for`, no `if`); where the items are a list a traced loop
    filled or an array's rows of a run-time length, a loop of the IR appending each (a list of a
    run-time length)."""
    if current_trace() is None or not (isinstance(items, (TracedList, TracedRange)) or (
            isinstance(items, Tracer) and items.ndim and isinstance(items.shape[0], Extent))):
        return [fn(v) for v in items]

    def body(out, item):
        return (append(out, fn(item)), item), False

    names = ("<list>", "<item>")
    return for_stmt(items, body, ([], Undefined("<item>")), names, names[:1], names[1])[0]


def extend(lst, values):
    """lst.extend(values): the rows of an array as items of a TracedList where a traced loop
    carries the list (their count may be known only at run time); the items of a list or tuple,
    appended in turn (`keep.extend([i, j])`); the items of a list of a run-time length (`[c] *
    len(x)`), into a TracedList where a loop carries the list, else into a fresh one (_joined)."""
    trace = current_trace()
    if isinstance(values, TracedList) and trace is not None:
        in_region = any(isinstance(r, _Region) for r in trace.loops)
        if not (isinstance(lst, TracedList) and in_region) and not (type(lst) is list and any(
                isinstance(r, _Region) and id(lst) in r.python_lists for r in trace.loops)):
            if type(lst) is list or (type(lst) is TracedList and not isinstance(values, TracedRows)):
                return _joined(trace, lst, values)
            raise trace_error("extending a list of arrays by a list of a run-time length", "build an array")
        values = values.array()  # into the list a region carries, or learned by the region
    if type(values) in (list, tuple) and trace is not None and (isinstance(lst, TracedList) or type(lst) is list):
        for v in list(values):
            append(lst, v)
        return lst
    if item_list(lst):
        _append(trace, lst, values, block=True)
        return lst
    if type(lst) is list and trace is not None and isinstance(values, Tracer) and values.ndim:
        for loop in trace.loops:
            if isinstance(loop, _Region) and id(lst) in loop.python_lists:
                _learn(trace, loop, lst, _first_row(values))
    lst.extend(values)
    return lst


def _joined(trace, lst, values):
    """A fresh TracedList of lst's items (a Python list's, or a TracedList's that no loop
    carries) then those of `values`, a list of a run-time length: room for both."""
    have = len(lst) if type(lst) is list else bound(lst.size())
    data = values.data
    joined = TracedList(Tracer(trace, trace.temp((have + bound(values.size()),) + tuple(data.shape[1:]), data.dtype),
                               data.dtype), _counter(trace), values.weak, values.scalar)
    joined.mixed = values.mixed or getattr(lst, "mixed", False)
    if type(lst) is list:
        for v in lst:
            _append(trace, joined, v)
    else:
        _append(trace, joined, lst.array(raw=True), block=True)
    _append(trace, joined, values.array(raw=True), block=True)
    return joined


def repeated(seq, n):
    """`seq * n` for a list of Python numbers of one type, or of NumPy scalars of one type (WBF's
    `[l] * len(boxes_by_label)` of a label np.unique gave), and n a run-time length: a list of a
    run-time length (a TracedList with room for n's bound times seq's items); else the
    TraceError that refuses the repetition."""
    trace = current_trace()
    kinds = {type(v) for v in seq} if type(seq) is list else set()
    scalars = {_scalar_type(v) for v in seq} if type(seq) is list else set()
    if trace is None or not isinstance(n, Extent) or not seq or not (
            len(kinds) == 1 and kinds <= {bool, int, float} or len(scalars) == 1 and None not in scalars):
        raise trace_error("repeating a list, tuple or string a number of times known only when the function runs",
                          "build an array instead (np.full(n, v), np.tile)")
    k = len(seq)
    if len(kinds) == 1 and kinds <= {bool, int, float}:
        kind = kinds.pop()
        dtype = np.dtype({bool: np.bool_, int: np.int64, float: np.float64}[kind])
        values = as_tracer(np.array(seq, dtype))
    else:
        kind, dtype = None, np.dtype(scalars.pop())
        values = np.stack([as_tracer(v) for v in seq])
    at = arange_at(0, 1, n * k)  # (a length times a length: a length)
    out = TracedList(Tracer(trace, trace.temp((bound(n) * k,), dtype), dtype), _counter(trace), kind, True)
    _append(trace, out, values[np.remainder(at, k)], block=True)
    return out


def _first_row(t):
    """t's first row, a view (an item's shape and dtype, whatever its run-time length)."""
    v = t._view
    return Tracer(t._trace, _C.View(v.storage, list(v.shape[1:]), list(v.strides[1:]), v.offset), t.dtype)


def _item(lst, value):
    if lst.kinds is not None:
        return _kind_item(lst, value)
    t, mixed = items(value, lst.data.dtype if lst.mixed else None)  # (a mixed list's in its widest dtype)
    if mixed:
        raise trace_error("appending numbers whose kinds are known only when the function runs (`max(0, x)`) to a "
                          "list of numbers of one kind in a loop on a traced condition", "append numbers of one kind")
    if type(value) in (bool, int, float) and lst.weak is type(value):
        t = as_tracer(value, lst.data.dtype)
    if (t.dtype != lst.data.dtype and lst.scalar and not lst.mixed and not t.ndim and not t.is_dynamic
            and {t.dtype.kind, lst.data.dtype.kind} <= set("biuf")):
        _widen(lst, t.dtype)
    if t.is_dynamic or t.dtype != lst.data.dtype or tuple(t.shape) != tuple(lst.data.shape[1:]):
        raise trace_error(f"appending a {t.dtype}{list(t.shape)} value to a list of {lst.data.dtype}"
                          f"{list(lst.data.shape[1:])} items in a loop on a traced condition",
                          "append items of one dtype and shape")
    return t


def _widen(lst, dtype):
    """A number of another kind appended to a list of numbers the region being traced made (PyTorch-
    YOLOv3's `ap.append(0)` on one path, a float64 on another): the list learns the kind and the
    region is traced again, the list then kept in the widest of its kinds (_kind_item). Returns
    where no region made it (the caller refuses the append)."""
    region = next((r for r in current_trace().loops if isinstance(r, _Region) and id(lst) in r.made), None)
    if region is None:
        return
    name = region.made[id(lst)]
    dtype_, shape, _, scalar, per_trip, rows_bound, _, inner, kinds = region.lists[name]
    kinds = (kinds or (dtype_,)) + (np.dtype(dtype),)
    region.lists[name] = (np.result_type(*kinds), shape, None, scalar, per_trip, rows_bound, True, inner, kinds)
    raise _Retry(region)


def _kind_item(lst, value):
    """A number appended to a list of numbers of several kinds: in the list's dtype, its kind's
    count raised (np.array of the list checks the kinds a call appended)."""
    t, mixed = items(value)
    if mixed or t.ndim or t.is_dynamic:
        raise trace_error(f"appending a {t.dtype}{list(t.shape)} value to a list of numbers of several kinds in a loop "
                          "on a traced condition", "append numbers")
    counter = dict(lst.kinds).get(t.dtype)
    if counter is None:
        _widen(lst, t.dtype)
        raise trace_error(f"appending a {t.dtype} number to a list of numbers of kinds {kind_names(lst)} after the "
                          "loop that filled it", "append numbers of those kinds")
    trace = current_trace()
    trace.op("copy", [np.add(_count_of(trace, counter), 1)], _C.View(counter, [], [], 0))
    return t.astype(lst.data.dtype)


def _block(lst, value):
    """An array appended to a TracedRows, checked: its rows are the list's."""
    t = as_tracer(value)
    row = tuple(lst.data.shape[1:])
    if (t.dtype != lst.data.dtype or t.ndim != len(row) + 1 or tuple(bound(d) for d in t.shape[1:]) != row
            or any(isinstance(d, Extent) for d in t.shape[1:])):
        raise trace_error(f"appending a {t.dtype} array of shape {tuple(t.shape)} to a list of {lst.data.dtype} arrays "
                          f"of rows of shape {row} in a loop on a traced condition", "append arrays of one dtype and row "
                          "shape")
    return t


def _append(trace, lst, value, block=False):
    """Appends an item to a TracedList, the rows of `value` where `block` (extend), or an array
    to a TracedRows."""
    if isinstance(lst, TracedSlice):
        raise trace_error("appending to a slice of a list filled in a loop on a traced condition",
                          "append to the list itself and slice it after")
    regions = [r for r in trace.loops if isinstance(r, _Region)]
    for r in regions:  # the caller's list, or another holder of the list, would not see the items
        if id(lst) in r.outside:
            raise side_effect_error(r.outside[id(lst)])
    if type(lst) is _PendingList:
        lst.appended(_first_row(as_tracer(value)) if block else value)
    rows = isinstance(lst, TracedRows)
    t = _block(lst, value) if rows or block else _item(lst, value)
    if not regions and not rows:  # room for these items past what it holds, where no loop's trips say how much
        _make_room(trace, lst, bound(t.shape[0]) if block else 1)
    length = _count_of(trace, lst.length)
    at = _count_of(trace, lst.rows) if rows else length
    data = lst.data._view
    trace.op("append", [at, t], _C.View(data.storage, list(data.shape), list(data.strides), data.offset))
    n = t.shape[0] if rows or block else 1
    moved = np.add(at, n.value() if isinstance(n, Extent) else n)  # what the position moves by
    for k, region in enumerate(regions):  # an append in a loop inside the region: once a trip of it
        region.appended(lst, bound(n) if block else 1,
                        math.prod(r.room for r in regions[k + 1:] if isinstance(r, _LoopTrace)))
    if rows:
        trace.op("copy", [moved], _C.View(lst.rows, [], [], 0))
        moved = np.add(length, 1)
    trace.op("copy", [moved], _C.View(lst.length, [], [], 0))


def _make_room(trace, lst, more):
    """Moves a list's items into room for `more` items past its own."""
    old = lst.data
    room = Tracer(trace, trace.temp((old.shape[0] + more,) + tuple(old.shape[1:]), old.dtype), old.dtype,
                  weak=old._weak)
    trace.op("copy", [old], room[:old.shape[0]]._view)
    lst.data = room


def _count_of(trace, storage):
    """The value of a 0-d int64 counter storage (a list's length, rows, a kind's appends)."""
    return Tracer(trace, _C.View(storage, [], [], 0), np.int64, weak=int)


def _counter(trace):
    """A fresh 0-d int64 storage holding 0 (a list's length or rows)."""
    count = trace.temp((), np.int64)
    trace.op("copy", [trace.const(np.int64(0))], count)
    return count.storage


def range_list(make, fn, *args):
    """list(range(...)) (`make` list) or [i for i in range(...)] (`make` None) in rewritten code:
    where a bound is traced (N after `N = N - 1` in a traced branch), a list of a run-time length
    (the items of an arange) with room for the longest axis of the arguments' arrays (or a
    loop's trips), more where a call outgrows it."""
    trace = current_trace()
    if (make not in (None, list) or fn is not range or trace is None
            or not any(_is_traced(a) or isinstance(a, Extent) for a in args)):
        return (make or list)(fn(*args))
    start, stop, step = (0, args[0], 1) if len(args) == 1 else (args[0], args[1], args[2] if len(args) > 2 else 1)
    if type(start) is not int or type(step) is not int or step <= 0:
        raise unsupported("range() of a bound known only when the function runs with a start or step other than "
                          "known ints, made a list", "use np.arange")
    # a traced bound is most often a count of an argument's rows (Soft-NMS's N after `N = N - 1`)
    room = max(0, bound(stop) - start) if isinstance(stop, Extent) else trace.trip_factor * max(
        _MIN_TRIPS, trace.longest_axis - start)
    count = _range_count(start, stop, step)
    # one past the room where more: the append refuses it (LoopBoundExceeded) and the call is
    # traced again with more
    count = np.minimum(count, room + 1).astype(np.int64)
    lst = TracedList(Tracer(trace, trace.temp((room,), np.int64), np.int64), _counter(trace), int, True)
    _append(trace, lst, arange_at(start, step, Extent(room + 1, count._view.storage)), block=True)
    return lst


def _range_count(start, stop, step):
    """How many items range(start, stop, step) holds, start and step known ints (step positive)
    and stop traced: a traced int64."""
    return np.maximum(np.floor_divide(np.add(as_tracer(length_value(stop)).astype(np.int64), step - 1 - start), step),
                      0)


def python_test(test, what):
    """The test of `what`, an `if` or `while` the rewrite leaves to Python (_convert.py): where it
    is traced, a TraceError that says why (a graph break: the call runs in NumPy)."""
    if _is_traced(test):
        raise trace_error(f"{what} on a traced condition: strider.compile captures a `return` only in `if`s (in a "
                          "loop too, not in a with or try there), `break` and `continue` only in the loop they leave, "
                          "and no loop's `else`",
                          "keep the result in a variable, break out of the loop and return it after the loop")
    return test


def break_if(t, state):
    """`if t: break` in a loop's body: whether Python leaves it; in a traced loop, the carried
    values go back to their storages and the loop is left at run time where t holds."""
    trace = current_trace()
    loop = trace.loops[-1] if trace is not None and trace.loops else None
    if isinstance(loop, _LoopTrace):
        loop.broke = True
        loop.write_back(state())
        _control(trace, "loop_while", loop.region, [np.logical_not(_condition(t))])
        return False
    if _is_traced(t):
        if isinstance(loop, _PythonLoop):
            raise _GoTraced(loop)
        return bool(t)  # Tracer.__bool__'s error
    return bool(t)


class TracedRange:
    """range(start, stop, step) with a bound known only at run time: a `for` over it is a loop
    of the IR; Python's own iteration of it (tuple(), sorted(), a generator, a `for` the rewrite
    leaves to Python) would take the bound, and is refused."""

    def __init__(self, start, stop, step):
        self.start, self.stop, self.step = start, stop, step

    def __iter__(self):
        raise trace_error("iterating over a range of a bound known only when the function runs where strider does "
                          "not rewrite the loop (tuple(), sorted(), reversed(), a generator, a `for` with an `else` or "
                          "with both `break` and `continue`)", "loop over it in a plain `for`, or use np.arange")

    __reversed__ = __iter__

    def size(self):
        """len() of it: a run-time length (start and step known ints, step positive)."""
        if (type(self.start) is not int or type(self.step) is not int or self.step <= 0
                or not isinstance(self.stop, Extent)):
            raise trace_error("len() of a range of bounds known only when the function runs", "use np.arange(...).size")
        n = _range_count(self.start, self.stop, self.step)
        return _length_of(n, max(0, -(-(bound(self.stop) - self.start) // self.step)))


class Enumerated:
    """enumerate(items, start) in a `for` header, of items of a run-time length."""

    def __init__(self, items, start):
        self.items, self.start = items, start

    def __iter__(self):  # a `for` the rewrite leaves to Python (a nested target)
        return enumerate(self.items, self.start)


def range_(fn, *args):
    """range(...) in a `for` header (fn: what the name `range` holds there)."""
    if fn is not range or current_trace() is None or not any(_is_traced(a) for a in args):
        return fn(*args)
    if not 1 <= len(args) <= 3:
        return fn(*args)  # Python's TypeError
    start, stop, step = (0, args[0], 1) if len(args) == 1 else (args[0], args[1], args[2] if len(args) == 3 else 1)
    if _is_traced(step):
        raise trace_error("range() with a step known only when the function runs", "use a constant step")
    step = operator.index(step)
    if step == 0:
        raise ValueError("range() arg 3 must not be zero")
    return TracedRange(start, stop, step)


def enumerate_(fn, *args):
    """enumerate(...) in a `for` header (fn: what the name `enumerate` holds there)."""
    if fn is enumerate and current_trace() is not None and args and (_of_rows(args[0]) or type(args[0]) is Zipped):
        return Enumerated(args[0], args[1] if len(args) > 1 else 0)
    return fn(*args)


class Zipped:
    """zip(a, b, ...) in a `for` header, of traced arrays: their rows together, as many as the
    shortest has (a run-time length where one is: the least of them then)."""

    def __init__(self, arrays):
        self.arrays = arrays

    @functools.cached_property
    def shape(self):
        lengths = list({(n.storage if isinstance(n, Extent) else ("fixed", n)): n
                        for n in (a.shape[0] for a in self.arrays)}.values())
        return (lengths[0] if len(lengths) == 1 else min_(*lengths),)  # (min of lengths: a length)

    def __getitem__(self, i):
        return tuple(a[i] for a in self.arrays)

    def __iter__(self):  # a `for` the rewrite leaves to Python (a nested target)
        return zip(*self.arrays)


def zip_(fn, *args):
    """zip(...) in a `for` header, or in an enumerate there (fn: what the name `zip` holds)."""
    if fn is zip and current_trace() is not None and args and all(isinstance(a, Tracer) and a.ndim for a in args):
        return Zipped(args)
    return fn(*args)


def for_stmt(iterable, body, state, names, live, target, guarded=(), writes=(), breaks=True):
    """`for target in iterable:` (target a name or a tuple of names) as Python runs it, but where
    the iterable is a range or a traced array's rows (or an enumerate of them) whose first trip
    traces a loop or branch on a traced condition or that are many (_unrolled_or_counted), a range
    with a bound known only at run time, or an array (or a list a loop filled) of a run-time
    length: a loop of the IR, its counter a traced int. `writes`: the values of the variables
    whose items the body assigns (_traced_while); `breaks`: whether the body leaves the loop
    (`if t: break`, a return)."""
    trace = current_trace()
    t = _positions(names, target)
    if type(iterable) is Choice:  # (a variable assigned on one path: what that path gave)
        iterable = known_side(iterable)
    if trace is not None and isinstance(iterable, TracedRange):
        return _counted(trace, body, state, names, live, (guarded, writes), t, iterable.start, iterable.stop,
                        iterable.step, lambda i: i)
    if trace is not None and (isinstance(iterable, (Enumerated, Zipped)) or _of_rows(iterable)):
        items, first = (iterable.items, iterable.start) if isinstance(iterable, Enumerated) else (iterable, None)
        get = items.__getitem__  # (a list's items are its numbers: Python ones where it holds them)
        items = items.array() if isinstance(items, TracedList) else items
        item = get if first is None else (lambda i: (i + first, get(i)))
        if isinstance(items.shape[0], Extent):
            return _counted(trace, body, state, names, live, (guarded, writes), t, 0, items.shape[0], 1, item)
        # its rows, as a range of their indices gives them
        return _unrolled_or_counted(trace, range(items.shape[0]), item, body, state, names, live, (guarded, writes),
                                    t, breaks)
    if trace is None or type(iterable) is not range:
        for value in iterable:
            state, broke = body(*_with(state, t, value))
            if broke:
                break
        return state
    return _unrolled_or_counted(trace, iterable, lambda i: i, body, state, names, live, (guarded, writes), t, breaks)


def _unrolled_or_counted(trace, r, item, body, state, names, live, guards, t, breaks=True):
    """A loop over item(i) for i in the range r: unrolled, as Python's loop, unless its first trip
    traces a loop or branch (a region each trip) where it has more than _UNROLLED trips, or a trip
    meets `if t: break` on a traced t (the loop from that trip on); a long one is a loop of the IR
    first (a trace of every trip would take seconds to compile). Either is unrolled where its body
    cannot be a loop of the IR (a Python counter it needs: YOLOv5's `output[xi] = x[i]` into a
    list of images). `guards`: (guarded, writes) of for_stmt. A trip's lists and dicts are held
    for a trace of it thrown away only where one may be: the probe's, or one that meets a break
    (copying every trip a list the loop fills, of lists each, made it quadratic in the trips:
    FaceBoxes' 21,824 prior boxes took minutes)."""
    if len(r) > _LONG and (out := _counted_or_unrolled(trace, r, item, body, state, names, live, guards,
                                                       t)) is not _UNROLL:
        return out
    probe = _UNROLLED < len(r) <= _LONG  # (a long one was tried)
    regions = trace.regions
    k = 0
    while k < len(r):
        # the lists a trip fills go back with the trace where the trip is traced again
        snap, marker = trace.snapshot(), _PythonLoop()
        held = _hold_all(trace, state, guards[1]) if breaks or probe else []
        trace.loops.append(marker)
        try:
            new_state, broke = body(*_with(state, t, item(r[k])))
        except _GoTraced as g:
            if g.loop is not marker:
                raise
            trace.restore(snap)
            put_back(held)
            return _counted_range(trace, r[k:], item, body, state, names, live, guards, t)
        finally:
            trace.loops.pop()
        if probe and trace.regions != regions:
            probe = False
            trace.restore(snap)
            put_back(held)
            if (out := _counted_or_unrolled(trace, r, item, body, state, names, live, guards, t)) is not _UNROLL:
                return out
            continue  # its first trip again, unrolled
        probe = False
        state = new_state
        if broke:
            break
        k += 1
    return state


_UNROLL = object()


def _hold_all(trace, state, writes):
    """What put_back needs to undo a trip traced and then thrown away: the lists and dicts of the
    loop's variables, of those whose items it assigns (`pr[i] = 1.0` in a branch makes every item
    of pr a traced value of that trace) and of those the function read from outside."""
    capture = getattr(trace, "capture", None)
    return (capture.hold() if capture is not None else []) + hold(tuple(state) + tuple(writes))


def _counted_or_unrolled(trace, r, item, body, state, names, live, guards, t):
    """_counted_range, or _UNROLL (the trace and the state put back) where its body cannot be
    traced as a loop of the IR."""
    snap, held = trace.snapshot(), _hold_all(trace, state, guards[1])
    try:
        return _counted_range(trace, r, item, body, state, names, live, guards, t)
    except (_Retry, _GoTraced):
        raise
    except Exception:  # noqa: BLE001 - unrolled, Python's loop decides
        trace.restore(snap)
        put_back(held)
        return _UNROLL


def _counted_range(trace, r, item, body, state, names, live, guards, t):
    """A loop of the IR over item(i) for the trips i of the range r, one at least: the target
    holds a value after it, as Python's would (its first, until a trip assigns it)."""
    if not isinstance(t, list):
        state = _with(state, t, item(r.start))
    return _counted(trace, body, state, names, live, guards, t, r.start, r.stop, r.step, item, trips=len(r))


def _counted(trace, body, state, names, live, guards, t, start, stop, step, item, trips=None):
    """A loop of the IR over a counter from start while below stop (above, for a negative step),
    the target given item(counter) each trip; `trips`: the exact count, where known."""

    def cond(*s):
        return s[-1] < stop if step > 0 else s[-1] > stop

    def counted(*s):
        c = s[-1]
        if isinstance(c, Tracer) and type(start) is int and step > 0 and not isinstance(stop, Tracer):
            # a trip runs while start <= c < stop: indices made of c need no check (a traced
            # stop, `range(order.size - 1)`, has no bound tracing knows: they keep theirs)
            trace.ranges[c._view.storage] = (start, bound(stop))
            if isinstance(stop, Extent):
                trace.relative[c._view.storage] = (stop.storage, trace.versions.get(stop.storage, 0), 0)
        out, broke = body(*_with(s[:-1], t, item(c)))
        return tuple(out) + (c + step,), broke

    # a run-time stop bounds the trips: the room its lists get (none outgrows it)
    most = -(-(bound(stop) - start) // step) if isinstance(stop, Extent) and type(start) is int and step > 0 else None
    out = _traced_while(trace, cond, counted, tuple(state) + (start,), tuple(names) + ("<counter>",),
                        tuple(live) + ("<counter>",), trips=trips, guarded=guards[0], most=most, writes=guards[1])
    return out[:-1]


def _of_rows(iterable):
    """Whether a `for` over iterable goes over a traced array's rows (or a filled list's items)."""
    return isinstance(iterable, TracedList) or (isinstance(iterable, Tracer) and iterable.ndim > 0)


def _positions(names, target):
    """A `for` target's positions in the state: an int for a name, a list for a tuple of them."""
    return [_positions(names, t) for t in target] if isinstance(target, tuple) else names.index(target)


def _with(state, i, value):
    """The state with the target at i (a list: a tuple target, unpacked as Python does, nested
    ones too) given value."""
    if isinstance(i, list):
        parts = tuple(value)
        if len(parts) != len(i):
            raise ValueError(f"too many values to unpack (expected {len(i)})" if len(parts) > len(i) else
                             f"not enough values to unpack (expected {len(i)}, got {len(parts)})")
        for k, v in zip(i, parts):
            state = _with(state, k, v)
        return state
    state = list(state)
    state[i] = value
    return tuple(state)


def while_stmt(cond, body, state, names, live, guarded=(), writes=()):
    trace = current_trace()
    while True:
        c = cond(*state)
        if trace is not None and _is_traced(c):
            return _traced_while(trace, cond, body, state, names, live, guarded=guarded, writes=writes)
        if not c:
            return state
        if trace is None:
            state, broke = body(*state)
        else:
            snap, marker, held = trace.snapshot(), _PythonLoop(), _hold_all(trace, state, writes)
            trace.loops.append(marker)
            try:
                new_state, broke = body(*state)
            except _GoTraced as g:
                if g.loop is not marker:
                    raise
                trace.loops.pop()
                trace.restore(snap)
                put_back(held)  # what the trip appended: it is traced again
                return _traced_while(trace, cond, body, state, names, live, guarded=guarded, writes=writes)
            trace.loops.pop()
            state = new_state
        if broke:
            return state


def if_stmt(test, then, other, state, names, live=None, items=(), guarded=()):
    """`if test:` with its two sides as functions of the variables they assign (`names`; the
    ones read after it: `live`, all when None) and, after those, of the ones whose items they
    assign (`items`); the values of the assigned ones after it. `guarded`: the ones it may merge
    from a placeholder where one side leaves them unassigned (_convert._assigned_before)."""
    trace = current_trace()
    if items:
        return _ItemLists(state, names, len(names) - len(items)).branch(test, then, other, names if live is None
                                                                        else live)
    if trace is None or not _is_traced(test):
        return then(*state) if test else other(*state)
    cond = _condition(test)
    return _settle(trace, lambda last: _BranchTrace(trace, last.specs, last.lists, last.choices) if last
                   else _BranchTrace(trace, {}, {}, {}),
                   lambda branch: branch.run(cond, then, other, state, names, names if live is None else live, guarded),
                   trace_error("a branch on a traced condition whose variables do not settle", "keep each variable's "
                               "shape the same in both branches"), (then, other), state)


class _ItemLists:
    """A branch's sides that assign items of variables (`output[xi] = x[i]`), which come after
    its other variables (the first `assigned`). Those holding Python lists are, on a traced
    condition, one variable per item: each side gets copies of the lists (what it writes stays
    its own), each item merges as a variable does, and the lists then take the merged items in
    place, so that every name for a list sees them, as after Python's branch. Other values (an
    array written through) reach the sides as they are."""

    def __init__(self, state, names, assigned):
        self.state, self.names, self.assigned = state, names, assigned
        self.lists = {i: state[i] for i in range(assigned, len(names)) if type(state[i]) is list}

    def branch(self, test, then, other, live):
        if current_trace() is None or not _is_traced(test):
            return (then if test else other)(*self.state)[:self.assigned]
        flat_names = self._flatten(self.names, lambda i, name: [f"{name}[{k}]" for k in range(len(self.lists[i]))])
        flat_live = [n for n in flat_names[:self.assigned] if n in live] + flat_names[self.assigned:]
        # a dict's items, an object's: written on both sides as they trace (arrays are written
        # through as the IR's branch writes them)
        others = [v for i, v in enumerate(self.state) if i >= self.assigned and i not in self.lists]
        before = _held(others)
        merged = iter(if_stmt(test, self._side(then), self._side(other), self._flatten(self.state, lambda i, v: v),
                              flat_names, flat_live))
        if _held(others) != before:
            raise side_effect_error("setting an item of a dict or an object")
        out = [next(merged) for _ in range(self.assigned)]
        for lst in self.lists.values():
            lst[:] = [next(merged) for _ in lst]
        return tuple(out)

    def _flatten(self, values, expand):
        """The assigned values, then each list's items (expand(index, value))."""
        return list(values[:self.assigned]) + [x for i in self.lists for x in expand(i, values[i])]

    def _side(self, fn):
        def run(*flat):
            rest = iter(flat[self.assigned:])
            out = fn(*flat[:self.assigned], *[[next(rest) for _ in self.lists[i]] if i in self.lists else self.state[i]
                                              for i in range(self.assigned, len(self.names))])
            for i, v in self.lists.items():
                if type(out[i]) is not list or len(out[i]) != len(v):
                    raise trace_error(f"{self.names[i]!r}, a list a branch on a traced condition assigns items of, "
                                      "changes length in it", "assign its items only, or build the list after the "
                                      "branch")
            return tuple(self._flatten(out, lambda i, v: v))
        return run


def _settle(trace, make, run, error, code=(), state=()):
    """Traces a region again (make(the last try)) until a try learns nothing new; `error` (or
    error(the last try)) where tries run out. `code`: the functions that trace it, `state`: what
    it assigns, from which the Python objects it may change are found (_held)."""
    start = trace.snapshot()
    region = None
    capture = getattr(trace, "capture", None)
    before = capture.contents() if capture is not None else {}
    held = _reached(code, state)
    own = _held(held)
    for _ in range(_MAX_TRIES):
        region = make(region)
        trace.region_tries += 1
        try:
            out = run(region)
            after = capture.contents() if capture is not None else {}
            if any(after.get(k, v) != v for k, v in before.items()):
                raise side_effect_error("a change to a list or dict from outside the function")
            if _held(held) != own:
                raise side_effect_error("a change to a dict, a set, a list inside another object, an object's "
                                        "attribute or a list changed in place (pop, remove, insert, sort, del: a "
                                        "list the loop builds with append is traced)")
            return out
        except _Retry as r:
            if r.region is not region:
                raise
            trace.restore(start)
    raise error(region) if callable(error) else error


def _reached(code, values):
    """The values a region's code reaches from before it: `values`, and what the functions in
    `code` close over (and the functions those hold, in turn)."""
    out, seen, todo = list(values), set(), list(code)
    while todo:
        f = todo.pop()
        if id(f) in seen:
            continue
        seen.add(id(f))
        for cell in getattr(f, "__closure__", None) or ():
            try:
                v = cell.cell_contents
            except ValueError:  # not yet assigned
                continue
            (todo if isinstance(v, types.FunctionType) else out).append(v)
    return out


_OPAQUE = (Tracer, TracedList, Choice, Undefined, Extent, np.ndarray, np.generic, types.ModuleType, type,
           types.FunctionType, types.BuiltinFunctionType, types.MethodType, functools.partial)


def _held(values):
    """What the Python containers and objects among `values` hold, deeply, by identity (numbers and
    strings by value): a region that changes one shows a different result. Lists the region turns
    into TracedLists are not changed: it traces them as new lists."""
    seen = {}

    def walk(v, depth):
        if isinstance(v, _OPAQUE) or depth > 8:
            return None
        if id(v) in seen:
            return ("seen", id(v))
        if isinstance(v, (list, tuple)):
            seen[id(v)] = v
            return type(v), tuple((compared(x), walk(x, depth + 1)) for x in v)
        if isinstance(v, dict):
            seen[id(v)] = v
            return type(v), tuple((compared(k), compared(x), walk(x, depth + 1)) for k, x in v.items())
        if isinstance(v, (set, frozenset)):
            seen[id(v)] = v
            return type(v), frozenset(compared(x) for x in v)
        d = getattr(v, "__dict__", None)
        if type(d) is dict and not type(v).__module__.startswith(("strider", "numpy")):
            seen[id(v)] = v
            return type(v), walk(d, depth + 1)
        return None

    return tuple(walk(v, 0) for v in values)


def _holds_text(value):
    """Whether a value appended to a list is text or a list or tuple holding some."""
    if isinstance(value, (list, tuple)):
        return any(map(_holds_text, value))
    return isinstance(value, (str, bytes))


def _slots_before(trace):
    """What the globals, closure variables and class attributes the function reads hold before a
    loop's or branch's body traces (_check_slots)."""
    capture = getattr(trace, "capture", None)
    return capture.slots_now() if capture is not None else None


def _check_slots(trace, before):
    """Refuses a change, in a loop or branch on a traced condition, to a global, closure variable
    or class attribute the function reads (a counter of the objects it makes): traced once, it
    would change once, not on each trip or path."""
    if before is not None and (name := trace.capture.changed_slot(before)) is not None:
        raise side_effect_error(f"a change to {name}")


class _Region:
    """A loop or branch being traced: the Python lists from before it that its body appends to
    become TracedLists (on the next try, once an append says what they hold)."""
    traced_region = True

    def __init__(self, trace, specs, lists, room, exact=False):
        self.trace, self.specs, self.lists, self.room = trace, dict(specs), dict(lists), room
        self.exact = exact  # room is the trip count itself (a range): a list never outgrows it
        self.python_lists = {}   # id -> name of a Python list from before the region, not yet a TracedList
        self.counts = {}         # id(TracedList) -> appends in one trace of the body
        self.inner_counts = {}   # id(TracedList) -> appends in loops inside it, times their room
        self.made = {}           # id(TracedList) -> name, the lists this region made
        self.outside = {}        # id -> why, of those made from a list an append must not change (_append)
        self.made_storages = set()

    def learn_list(self, name, value):
        """The list's spec from its first item: dtype, item shape, the Python type of numbers,
        whether items are scalars, appends per trip; and for arrays whose first length is known
        only at run time (a TracedRows of their rows), that length's bound, else None. Numbers of
        kinds known only at run time (a row of `max(0, x)`s) make it a mixed list."""
        if _holds_text(value):
            raise trace_error(f"{name!r} holds text and is filled in a loop or branch on a traced condition (only "
                              "the run knows its items, which strider holds in an array)",
                              "fill it after the call, from the indices the function returns")
        others = [v for v in _nested_leaves(value, []) if v is None or isinstance(v, (dict, set, frozenset)) or (
            not isinstance(v, type) and user_class(type(v)))]
        if others:
            raise trace_error(f"appending {'None' if others[0] is None else 'a ' + type(others[0]).__name__} to {name!r} in a "
                              "loop or branch on a traced condition (strider holds a list's items as the rows of one "
                              "array: numbers, arrays, or lists and tuples of them)",
                              "append the arrays to lists of their own and build the dicts or objects after the loop")
        try:
            t, mixed = items(value)
        except ValueError:  # (NumPy's own: np.array of parts of several shapes)
            parts = ", ".join("a list" if isinstance(v, list) else "a tuple" if isinstance(v, tuple)
                              else f"an array of shape {tuple(v.shape)}" if getattr(v, "ndim", 0) else "a number"
                              for v in (value if isinstance(value, (list, tuple)) else [value]))
            raise trace_error(f"appending an item whose parts differ in shape ({parts}) to {name!r} in a loop or "
                              "branch on a traced condition (strider holds a list's items as the rows of one array)",
                              "append each part to a list of its own") from None
        if t.is_dynamic:
            if any(isinstance(d, Extent) for d in t.shape[1:]):
                raise trace_error(f"appending an array whose lengths after the first are known only at run time to "
                                  f"{name!r} in a loop or branch on a traced condition", "append arrays of one row shape")
            self.lists[name] = (t.dtype, tuple(t.shape[1:]), None, False, 1, bound(t.shape[0]), False, 0, None)
            return
        # Python numbers, known or traced (a loop's counter), stay Python numbers in the list,
        # and so do those of a list of them appended (YOLOv8's boxes.append([left, top, w, h]));
        # a tuple of them, or a list of floats and ints, keeps its type and each position's: weak
        # is then (list or tuple, the positions' types)
        # (type(), not isinstance: a traced float64 scalar passes for a float)
        # (an item of another such list is an ItemList: a list)
        kind = tuple if type(value) is tuple else list if isinstance(value, list) else None
        if kind is None:
            weak = _number_type(value)
        else:
            kinds = [_number_type(v) or _scalar_type(v) for v in value]
            if any(type(v) is Choice for v in value):
                # a position whose type the run decides (ensemble_boxes' `x2 = 1` or a float):
                # returned, the list's items are the run's (a mixed list)
                weak, mixed = None, True
            elif None in kinds or not kinds:
                weak = None
            elif kind is list and len(set(kinds)) == 1 and kinds[0] in (bool, int, float):
                weak = kinds[0]
            else:  # NumPy scalars ([x1, y1, x2, y2] of a float32 row) come back as theirs
                weak = (kind,) + tuple(kinds)
        self.lists[name] = (t.dtype, tuple(t.shape), weak, not t.ndim, 1, None, mixed, 0, None)

    def appended(self, lst, items=1, trips=1):
        """Counts an append to a list the region made: `items` a trip of its own, or, in loops
        inside it of `trips` room in all, that many times as many."""
        if id(lst) in self.made:
            counts = self.counts if trips == 1 or isinstance(lst, TracedRows) else self.inner_counts
            counts[id(lst)] = counts.get(id(lst), 0) + items * (trips if counts is self.inner_counts else 1)

    def lists_as_traced(self, state, names):
        """The state with the Python lists the region appends to as TracedLists."""
        inside = list(state)
        capture = getattr(self.trace, "capture", None)
        for i, name in enumerate(names):
            if name is not None and type(state[i]) is TracedList and not state[i].by_region:
                # a list of a run-time length no region made (`keep = idx.tolist()`), whose room
                # no trips grow: room for its items and the region's
                if name in self.lists:
                    inside[i] = self.make_list(name, state[i])
                else:
                    self.python_lists[id(state[i])] = name
                continue
            if name is None or type(state[i]) is not list:
                continue
            if name in self.lists and self.lists[name] is None:  # used before an append said what it holds
                self.python_lists[id(state[i])] = name
                continue
            if any(isinstance(r, _Region) and id(state[i]) in r.python_lists for r in self.trace.loops):
                # a Python list a region around this one keeps so (`if s[i] > t and i not in
                # found`): its append has that region learn it, which carries it
                continue
            inside[i] = (self.make_list(name, state[i]) if name in self.lists or state[i]
                         else _PendingList(self, name, state[i]))
            if capture is not None and capture.holds(state[i]):
                self.outside[id(inside[i])] = "an append to a list the caller passes or the function reads from outside"
            elif (holder := _other_holder(state[i], name)) is not None:
                self.outside[id(inside[i])] = f"an append to {name!r}, a list {holder} (which would not see the items)"
        return inside

    def python_list(self, value):
        """A value the region leaves in a variable: the Python list itself where it is a list the
        region made pending and never appended to (where its length was read, the region is
        traced again with it a Python list: that length is known)."""
        if type(value) is not _PendingList or value.region is not self:
            return value
        if value.sized:
            value.used()
        return value.python

    def lists_learned(self):
        """Whether a list took more appends in one trace than it has room for per trip."""
        learned = False
        for key, name in self.made.items():
            spec = self.lists[name]
            if self.counts.get(key, 0) > spec[4]:
                spec = self.lists[name] = spec[:4] + (self.counts[key],) + spec[5:]
                learned = True
            if self.inner_counts.get(key, 0) > spec[7]:
                self.lists[name] = spec[:7] + (self.inner_counts[key],) + spec[8:]
                learned = True
        return learned

    def list_trips(self):
        """The trips a list the region makes has room for (times its appends per trip)."""
        trips = self.room
        if self.exact and self.trace.trip_factor > 1:
            # a range's trips fill it, and appends after the loop (a later loop's, a branch's)
            # where a call outgrew it
            trips += _MIN_TRIPS * self.trace.trip_factor
        return trips

    def make_list(self, name, items, pending=None):
        """The TracedList (or TracedRows) of `items` and room for the appends of the region's
        trips; `pending` (a _PendingList, no items) becomes it, in its storages."""
        trace = self.trace
        if name not in self.lists:
            self.learn_list(name, items[0])
        dtype, shape, weak, scalar, per_trip, rows_bound, mixed, inner, kinds = self.lists[name]
        trips = self.list_trips()
        have = bound(items.size()) if isinstance(items, TracedList) else len(items)
        room = have + max(trips * per_trip, inner)  # (inner: the appends of loops inside)
        length = _counter(trace) if pending is None else pending.length
        storage = None if pending is None else pending.storage
        if rows_bound is None:
            data = trace.temp((room,) + shape, dtype, storage=storage)
            lst = TracedList(Tracer(trace, data, dtype), length, weak, scalar)
            lst.mixed = mixed
            if kinds:  # (learned by a try before: never a pending list's)
                lst.kinds = tuple((kind, _counter(trace)) for kind in kinds)
                self.made_storages |= {counter for _, counter in lst.kinds}
        else:  # room for every array's rows
            data = trace.temp((sum(bound(as_tracer(v).shape[0]) for v in items) + trips * per_trip * rows_bound,)
                              + shape, dtype, storage=storage)
            rows = _counter(trace) if pending is None else pending.rows
            self.made_storages.add(rows)
            lst = TracedRows(Tracer(trace, data, dtype), rows, length, room)
        if isinstance(items, TracedList):
            _append(trace, lst, items.array(raw=True), block=True)
        for v in items if type(items) is list else ():
            _append(trace, lst, v)
        if pending is not None:  # the object the region's code holds is the list
            pending.__class__, pending.__dict__ = type(lst), lst.__dict__
            lst = pending
        self.made[id(lst)] = name
        self.made_storages |= {data.storage, length}
        lst.by_region = True
        return lst


class _PendingList(TracedList):
    """An empty Python list from before a region that assigns it: its counters are made (0)
    before the region, its storage by its first append, which says what the items are
    (_Region.make_list). Before, a loop filling `keep` was traced twice: once to learn the
    items from the append, once with the list made before it. Its length may be read before
    that append; any other use (its items) has the region traced again with it a Python list
    until an append, as then."""

    def __init__(self, region, name, python):
        self.region, self.name, self.python = region, name, python
        trace = region.trace
        self.length, self.rows = _counter(trace), _counter(trace)
        self.storage = trace.graph.add_storage("i64", 0, "temp")
        self.sized = False

    def size(self):
        self.sized = True
        return Extent(self.region.list_trips(), self.length)

    def appended(self, item):
        """The first append's item (a row of an extend's): the list made of what it holds."""
        self.region.learn_list(self.name, item)
        self.region.make_list(self.name, [], self)

    def used(self, *_):
        self.region.lists[self.name] = None
        raise _Retry(self.region)

    data = property(used)
    array = joined = copy = __len__ = __bool__ = __iter__ = __getitem__ = used

    def __getattr__(self, name):
        if name in LIST_METHODS:
            self.used()
        return super().__getattr__(name)

    def __repr__(self):
        return f"<list {self.name!r}, appended to in a loop or branch on a traced condition>"


def _scalar_type(value):
    """The NumPy scalar type of a NumPy scalar, known or traced; else None."""
    if isinstance(value, Tracer):  # (before np.generic, which a traced NumPy scalar passes for)
        return value.dtype.type if value._scalar and not value.ndim else None
    return type(value) if isinstance(value, np.generic) else None


def _number_type(value):
    """The Python type of a number, known or traced (a loop's counter, a run-time length); else
    None."""
    if type(value) in (bool, int, float):
        return type(value)
    if isinstance(value, Extent):
        return int
    return value._weak if isinstance(value, Tracer) and not value.ndim else None


def _stands_in(trace, merged, values, first_storage):
    """A branch's merged variable, where a side's value is an array from before the branch (`o = q`
    on one side): NumPy's variable is that array there, strider's a copy (Trace.stand_in). Not
    numbers, which Python does not share, nor the slots of loops around it, whose writes are the
    loop's carrying a variable, not writes into the array it held."""
    carried = {s for r in trace.loops for slot in getattr(r, "slots", {}).values() for s in slot.storages}
    before = [v for v in values if isinstance(v, Tracer) and v.ndim and not v._scalar and v._weak is None
              and v._view.storage < first_storage and v._view.storage not in carried]
    if before:
        trace.stand_in(merged, before, writable=True)
    return merged


class _BranchTrace(_Region):
    def __init__(self, trace, specs, lists, choices):
        super().__init__(trace, specs, lists, _MIN_TRIPS * trace.trip_factor)
        self.partial = set()
        # variables whose sides hold values of different kinds (_choice.py) -> per side, its
        # structure and the specs of its arrays' slots
        self.choices = {name: list(sides) for name, sides in choices.items()}

    def run(self, cond, then, other, state, names, live, guarded):
        trace = self.trace
        self.guarded = set(guarded)
        state = self.lists_as_traced(state, [n if n in live else None for n in names])
        slots = {n: _Slot(trace, n, *spec) for n, spec in self.specs.items()}
        for name in self.guarded & set(slots):
            _no_lengths(trace, slots[name])
        sides = {n: [[_Slot(trace, n, *spec) for spec in side[1]] for side in c] for n, c in self.choices.items()}
        test = cond  # (what `is_` recorded names it, not the copy below)
        if self.choices:
            # a loop carries values of one kind or a pair of kinds (_LoopTrace.pairs: the
            # innermost loop that carries the variable learns the pair, outer ones carry it as one)
            for name in sorted(self.choices):
                loops = _carrying_loops(trace, name)
                if not loops or (len(loops) == 1 and name in loops[0].pairs):
                    continue
                raise trace_error(f"{name!r} holds values of different kinds after a branch on a traced "
                                  "condition inside a loop on one that carries it", "give it the same kind of value on "
                                  "both paths")
            cond = _detach(trace, cond)  # what picks the side, as the branch saw it
        before = trace.snapshot()
        first_storage, first_op = trace.graph.num_storages, trace.graph.num_ops
        late = set()  # the storages of slots the first side made (_merge)
        region = trace.regions
        trace.regions += 1
        _control(trace, "branch_if", region, [cond])
        results = []
        trace.loops.append(self)
        try:
            for side, fn in ((0, then), (1, other)):
                if side:
                    # (the first side's writes hold where it runs: not on the second, after both)
                    first_marks = (set(trace.diverged), set(trace.stale))
                    trace.restore(before, graph=False, marks=(set(), set()))
                    _control(trace, "branch_else", region, [cond])
                sources = _slots_before(trace)
                with knowing(trace, test, side == 0):
                    out = tuple(map(_own_list, _side_of_branch(fn, state)))
                _check_slots(trace, sources)
                results.append(out)
                grow = self._merge(slots, state, out, [n if n in live else None for n in names], side, late, results[0])
                grow_sides = self._write_sides(sides, out, names, side)
                if grow or grow_sides:
                    self.specs.update(grow)
                    raise _Retry(self)
            mixed = [n for i, n in enumerate(names)
                     if n in live and n not in self.choices and (_kinds_differ(results[0][i], results[1][i]) or (
                         _one_side_assigns(results[0][i], results[1][i]) and n not in self.guarded
                         and not _carrying_loops(trace, n)))]
            for name in mixed:  # learned from this try's values: the next one writes them
                i = names.index(name)
                loops = _carrying_loops(trace, name)
                if (len(loops) == 1 and name not in loops[0].pairs
                        and loops[0].learn_pair(name, [out[i] for out in results])):
                    raise _Retry(loops[0])
                self.specs.pop(name, None)
                self.choices[name] = [_side(out[i]) for out in results]
            if self.lists_learned() or (mixed and not self._choose_now(mixed, names, results, slots, sides, late, cond,
                                                                       _written_since(trace, first_op, first_storage))):
                raise _Retry(self)
        finally:
            trace.loops.pop()
        end = _control(trace, "branch_end", region)
        written = _written_since(trace, first_op, first_storage)
        carried = sorted(written | self.made_storages | {s for slot in slots.values() for s in slot.storages}
                         | {s for side in sides.values() for slot in side[0] + side[1] for s in slot.storages})
        trace.graph.set_op_inputs(end, [_whole(trace, s) for s in carried])
        trace.restore(before, graph=False, marks=(trace.diverged | first_marks[0], trace.stale | first_marks[1]))
        trace.forget(carried)
        _assume_spans(trace, slots.values())
        _seal(trace, first_storage, late)
        if mixed:  # (chosen now: the condition as the branch saw it, whatever writes it later)
            cond = _detach(trace, cond)
        merged = []
        for i, name in enumerate(names):
            a, b = results[0][i], results[1][i]
            if name not in live:
                merged.append(Undefined(name))
            elif name in sides:
                for k, v in enumerate((a, b)):
                    leaves = []  # (a side's arrays, in the order of its slots)
                    structure(v, leaves)
                    for slot, leaf in zip(sides[name][k], leaves):
                        _stands_in(trace, slot.tracer(trace), [leaf], first_storage)
                merged.append(Choice(cond, *(rebuild(self.choices[name][k][0], iter([slot.tracer(trace) for slot in
                                                                                     sides[name][k]]), end + 1)
                                             for k in (0, 1)), name))
            elif name in slots and name not in self.partial:
                merged.append(_stands_in(trace, slots[name].tracer(trace), [a, b], first_storage))
            elif a is b:
                merged.append(self.python_list(a))
            else:  # (a side's value that is itself unassigned names its own variable; after the
                # branch it may be assigned, not surely unassigned)
                merged.append(next((Undefined(v.name) for v in (a, b) if isinstance(v, Undefined)), Undefined(name)))
        return tuple(merged)

    def _choose_now(self, mixed, names, results, slots, sides, late, cond, written):
        """Where the first side's values of the variables just learned as Choices (`mixed`) hold
        no array (`if not n: return None` before a function's result), writes the second side's,
        traced last and its region not yet ended, into slots of their own: no second try (YOLOX's
        class-agnostic NMS traced its loop twice). Whether it did; not where a slot of theirs, a
        loop carrying them or a write of the condition inside the branch needs the second try."""
        trace = self.trace
        if cond._view.storage in written:
            return False
        for name in mixed:
            loops = _carrying_loops(trace, name)
            if name in slots or self.choices[name][0][1] or loops:
                return False
        now = {}
        for name in mixed:
            now[name] = sides[name] = [[], [_Slot(trace, name, *spec) for spec in self.choices[name][1][1]]]
            late.update(s for slot in now[name][1] for s in slot.storages)
        return not self._write_sides(now, results[1], names, 1)

    def _merge(self, slots, state, out, names, side, late, first):
        """Writes this side's values of the merged variables. The first side makes the slots of
        those it is the first to see (their storages join `late`), so that a branch whose sides
        agree is traced once; ones the second side is the first to see, or whose slots must
        grow, are learned (specs) for the next try, but where the first side's value (`first`)
        holds no array (None): a Choice (run). Returns the specs that must grow."""
        values, grow = {}, {}
        for i, name in enumerate(names):
            value = out[i]
            if name is None:  # not read after the branch
                continue
            if name in self.choices:
                continue
            if name in slots:
                if isinstance(value, Undefined):  # assigned on one side only: unusable after the branch
                    if name not in self.guarded:
                        self.partial.add(name)
                elif _fits(slots[name], value):
                    values[name] = value
                continue  # else a value of another kind: a Choice (run)
            if isinstance(value, Undefined) or (value is state[i] and side):
                continue
            t = _carryable(value)
            if t is None:
                continue
            if side and name not in self.guarded and not _side(first[i])[1] and _kinds_differ(first[i], value):
                continue
            if side or name in self.guarded:  # (a placeholder's slot is made before the branch)
                grow[name] = _spec_of(t)
                continue
            # names only what a side assigns: the slot holds what this side leaves, the other's
            slots[name] = _Slot(self.trace, name, *_spec_of(t))
            self.specs[name] = _spec_of(t)
            late.update(slots[name].storages)
            values[name] = value
        if grow:
            return grow
        return _write_back(self.trace, slots, values)


    def _write_sides(self, sides, out, names, side):
        """Writes this side's arrays of the Choices into their slots; whether a structure or a
        spec changed (the next try learns it)."""
        learned = False
        for name, slots in sides.items():
            leaves = []
            shape = structure(out[names.index(name)], leaves)
            if shape != self.choices[name][side][0] or len(leaves) != len(slots[side]):
                self.choices[name][side] = _side(out[names.index(name)])
                learned = True
                continue
            grow = _write_back(self.trace, dict(enumerate(slots[side])), dict(enumerate(leaves)))
            if grow:
                self.choices[name][side] = (shape, [grow.get(k, self.choices[name][side][1][k]) for k in range(len(leaves))])
                learned = True
        return learned


# what NumPy (and strider standing for it) raises on a program's values
_NUMPY_ERRORS = (ArithmeticError, AssertionError, LookupError, TypeError, ValueError)


def _from_user(e):
    """Whether the exception was raised in the user's code (its innermost frame)."""
    tb = e.__traceback__
    while tb.tb_next is not None:
        tb = tb.tb_next
    return not _internal(tb.tb_frame.f_code.co_filename)


def _carrying_loops(trace, name):
    """The loops on a traced condition being traced that carry the variable."""
    return [r for r in trace.loops if isinstance(r, _LoopTrace) and name in r.live]


SIDE_RAISED = "on the side of a branch on a traced condition that this call took"


def _own_list(value):
    """A slice of a list a traced loop filled (keep[:k]) that a side of a branch leaves in a
    variable (OpenVINO's `if len(keep) > top_k: keep = keep[:top_k]`): a list of its own, which
    the branch carries as it carries lists (the slice's items are the list's storage)."""
    if type(value) is not TracedSlice:
        return value
    items = value.array(raw=True).copy()
    if isinstance(items.shape[0], Extent):
        return TracedList.of(items, value.weak, value.scalar)
    return TracedList(items, value.length, value.weak, value.scalar)


def _side_of_branch(fn, state):
    """A side's values. An error tracing it (`x.reshape(7)`, Soft-NMS's swap with row N on the
    trip where its condition never holds) is NumPy's only where the side runs: there, a check that
    runs the call in NumPy (which raises it); the side then leaves the variables as they were
    (where it runs, nothing after the check does). So does a refusal in a side that ends raising
    (albumentations' check_bboxes: its message picks a name from a list by a traced index)."""
    try:
        return fn(*state)
    except (_Retry, _GoTraced):
        raise
    except (TraceError, UnsupportedError) as e:
        if not fn.__name__.endswith("_raises"):
            raise
        forgive(e)
        file, line = _raised_at(e)
        current_trace().check_assert(as_tracer(False), f"the error raised at {os.path.basename(file)}:{line}, "
                                     f"{SIDE_RAISED}", RunInNumPy)
        return tuple(state)
    except StriderError:
        raise
    except Exception as e:
        if not isinstance(e, _NUMPY_ERRORS) and not _from_user(e):
            raise  # strider's own failure, not the program's
        file, line = _raised_at(e)
        trace = current_trace()
        trace.check_assert(as_tracer(False), f"{type(e).__name__} ({e}) at {os.path.basename(file)}:{line}, "
                           f"{SIDE_RAISED}", RunInNumPy)
        return tuple(state)


def _raised_at(e):
    """(file, line) of the user's innermost frame in the exception's traceback."""
    frames = [(f.f_code.co_filename, line) for f, line in traceback.walk_tb(e.__traceback__)
              if not _internal(f.f_code.co_filename)]
    return frames[-1] if frames else ("<unknown>", 0)


def _side(value):
    """A Choice's side as the branch learns it: the value's structure, the specs of its arrays."""
    leaves = []
    shape = structure(value, leaves)
    return shape, [_spec_of(t) for t in leaves]


def _fits(slot, value):
    """Whether a slot can hold the value (else the branch makes a Choice)."""
    t = _carryable(value)
    return t is not None and t.dtype == slot.dtype and t.ndim == len(slot.bounds)


def _kinds_differ(a, b):
    """Whether the two sides of a branch leave a variable holding values one slot cannot hold."""
    if a is b or isinstance(a, Undefined) or isinstance(b, Undefined):
        return False
    ta, tb = _carryable(a), _carryable(b)
    if ta is None or tb is None:
        return True
    # a Python number and a NumPy scalar of one dtype promote differently (NEP 50: float32 data
    # times 0.5 stays float32, times np.float64(0.5) is float64) and return as different types
    return ta.dtype != tb.dtype or ta.ndim != tb.ndim or (not ta.ndim and (ta._weak is None) != (tb._weak is None))


def _one_side_assigns(a, b):
    """Whether a branch assigns a variable on one side only, where Python has not assigned it
    before: a Choice whose other side is Undefined (reading it there raises UnboundLocalError)."""
    return any(isinstance(v, Undefined) and v.surely and not isinstance(w, Undefined) for v, w in ((a, b), (b, a)))


class _LoopTrace(_Region):
    """One try at tracing a loop on a traced condition."""

    def __init__(self, trace, specs, lists, written, room, exact=False, pairs=None):
        super().__init__(trace, specs, lists, room, exact)
        self.written = set(written)
        self.slots = {}
        self.statics = {}
        # variables a trip may leave of another kind than before the loop (`best = 0.0`, then
        # `best = s[i]` where s[i] > best): name -> that kind's spec; each is carried as its
        # value before the loop (a slot, or None as it is), a slot of the other kind and a flag
        # that says which it holds, and is a Choice of the two inside and after the loop
        self.pairs = dict(pairs or {})
        self.pair_slots = {}  # name -> (the other kind's slot, the flag's slot)
        self.broke = False  # a trip may leave the loop before its end (`if t: break`)
        self.kinds = {}  # name -> the kinds (_kind_of) of the values trips leave in its slot
        self.grew = []  # the variables whose slots this try found too small

    def write_back(self, state):
        # (a break in a counted loop's body gives its state without the counter, left as it is)
        given = {n: state[i] for n, i in self.index.items() if i < len(state)}
        # a placeholder's slot keeps what it holds where a trip leaves its variable unassigned;
        # one not yet made learns its spec from the first value a trip assigns
        values = {n: None if n in self.guarded and isinstance(given[n], Undefined) else given[n] for n in self.slots
                  if n in given}
        learned = {n: _spec_of(t) for n in self.guarded - set(self.slots)
                   if n in given and (t := _carryable(given[n])) is not None}
        if learned:
            self.specs.update(learned)
            raise _Retry(self)
        for n in self.pairs:
            if n in given and (grow := self._write_pair(n, given[n])):
                self.pairs[n] = grow.get("other", self.pairs[n])
                self.specs[n] = grow.get("before", self.specs.get(n))
                raise _Retry(self)
        values = {n: v for n, v in values.items() if n not in self.pairs}
        learned = [n for n, v in values.items() if v is not None and not _fits(self.slots[n], v)]
        learned += [n for n in self.statics
                    if n not in self.pairs and n in given and not self._kind_matches(n, given[n], None)]
        for n in learned:
            if self.learn_pair(n, [given[n]]):
                continue
            before = self.slots[n].tracer(self.trace) if n in self.slots else self.statics[n]
            if _carryable(before) is None and _carryable(given[n]) is None:
                raise trace_error(f"{n!r}, a {type(before).__name__}, is reassigned in a loop on a traced condition",
                                  "carry arrays, numbers and lists in such loops")
            raise trace_error(f"{n!r} holds {_kind(before)} before a loop on a traced condition and "
                              f"{_kind(given[n])} after a trip", "give it one kind of value (np.float32(0), an "
                              "empty array for None)")
        if learned:
            raise _Retry(self)
        for n, v in values.items():
            if v is not None and not (isinstance(v, Tracer) and v._view == self.slots[n].tracer(self.trace)._view):
                self.kinds.setdefault(n, set()).add(_kind_of(v))
        grow = _write_back(self.trace, self.slots, values)
        if grow:
            self.specs.update(grow)
            self.grew = sorted(grow)
            raise _Retry(self)

    def run(self, cond, body, state, names, live, guarded):
        trace = self.trace
        self.index = {n: i for i, n in enumerate(names)}
        self.live = set(live)
        self.guarded = set(guarded) & self.live
        inside = self.lists_as_traced(state, [n if n in live else None for n in names])
        for i, name in enumerate(names):
            value = state[i]
            if name not in live:
                inside[i] = Undefined(name) if isinstance(value, Undefined) else value
                continue
            if isinstance(value, Undefined) and name in self.guarded and name in self.specs:
                inside[i] = self._placeholder(name)
                continue
            if isinstance(value, Undefined):  # a trip may assign it: not surely unassigned in the body
                inside[i] = Undefined(value.name)
                continue
            if isinstance(value, TracedList) or type(value) is list:
                continue
            t = _carryable(value)
            if t is None:
                self.statics[name] = value
                continue
            spec = self.specs.get(name) or _spec_of(t)
            self.specs[name] = spec
            slot = self.slots[name] = _Slot(trace, name, *spec)
            _write_back(trace, {name: slot}, {name: t})
            # until a trip assigns it, NumPy's variable is the array it held before the loop
            inside[i] = _stands_in(trace, slot.tracer(trace), [t], trace.graph.num_storages)
        for name, spec in self.pairs.items():
            other, flag = self.pair_slots[name] = (_Slot(trace, name, *spec),
                                                   _Slot(trace, name, np.dtype(bool), (), (), None, True))
            _no_lengths(trace, other)
            _write_back(trace, {name: flag}, {name: False})
            inside[self.index[name]] = self._choice(name, inside[self.index[name]])
        carried = {s for slot in list(self.slots.values()) + [x for pair in self.pair_slots.values() for x in pair]
                   for s in slot.storages}
        trace.forget(self.written | carried)
        _assume_spans(trace, self.slots.values())
        before = trace.snapshot()
        first_storage, first_op = trace.graph.num_storages, trace.graph.num_ops
        self.region = trace.regions
        trace.regions += 1
        begin = _control(trace, "loop_begin", self.region)
        trace.loops.append(self)
        try:
            sources = _slots_before(trace)
            _control(trace, "loop_while", self.region, [_condition(cond(*inside))])
            out, _ = body(*inside)
            _check_slots(trace, sources)
            self._settle_argument_slots(out)
            self.write_back(out)
        finally:
            trace.loops.pop()
        end = _control(trace, "loop_end", self.region)
        written = _written_since(trace, first_op, first_storage) - carried - self.made_storages
        learned = False
        if not written <= self.written:
            self.written |= written
            learned = True
        if self.lists_learned() or learned:
            raise _Retry(self)
        carried |= self.made_storages
        boundary = [_whole(trace, s) for s in sorted(self.written | carried)]
        trace.graph.set_op_inputs(begin, boundary)
        trace.graph.set_op_inputs(end, boundary)
        trace.restore(before, graph=False)
        trace.forget(self.written | carried)
        _assume_spans(trace, self.slots.values())
        _seal(trace, first_storage)
        return tuple(self._choice(name, self.slots[name].tracer(trace) if name in self.slots else self.statics[name])
                     if name in self.pairs else self._after(name) if name in self.slots
                     else self.python_list(inside[i]) if name in live else Undefined(name) for i, name in enumerate(names))

    def _choice(self, name, before):
        """A paired variable: the other kind where its flag says so, else its kind before."""
        other, flag = self.pair_slots[name]
        return Choice(flag.tracer(self.trace), other.tracer(self.trace), before, name)

    def _kind_matches(self, name, value, other):
        """Whether `value` is of the kind `other` (the pair's slot) holds, or where other is None,
        of the kind the variable held before the loop (its slot's, or that very object)."""
        if other is None and name not in self.slots:
            return value is self.statics[name] or (type(value) is type(self.statics[name])
                                                    and _same_static(value, self.statics[name]))
        slot = other or self.slots[name]
        t = _carryable(value)
        return (t is not None and t.dtype == slot.dtype and t.ndim == len(slot.bounds)
                and _kind_of(t) == (slot.weak, slot.weak is None and slot.scalar))

    def learn_pair(self, name, values):
        """Learns the other kind of a variable from values a trip may leave in it (a branch's
        sides, a trip's end); False where they hold more than one other kind, or one that is
        not an array or number."""
        if name not in self.slots and name not in self.statics:
            return False
        others = [v for value in values for _, v in sides(value) if not self._kind_matches(name, v, None)]
        kinds = {(_kind_of(t), t.dtype, t.ndim) for v in others if (t := _carryable(v)) is not None}
        if not others or len(kinds) != 1 or any(_carryable(v) is None for v in others):
            return False
        self.pairs[name] = _spec_of(_carryable(others[0]))
        return True

    def _write_pair(self, name, value):
        """Writes what a trip leaves in a paired variable: each kind's value into its slot (the
        first side of a Choice that holds one of that kind where its condition holds, else the
        slot's own) and the flag (whether the other kind is held). Returns the specs that must
        grow ("before" and "other")."""
        other, flag = self.pair_slots[name]
        mine = {"other": [], "before": []}
        for cond, v in sides(value):
            key = ("other" if self._kind_matches(name, v, other) else "before" if self._kind_matches(name, v, None)
                   else None)
            if key is None:
                raise trace_error(f"{name!r} holds a third kind of value ({_kind(v)}) "
                                  "in a loop on a traced condition that it leaves holding one of two",
                                  "give it one kind of value in the loop")
            mine[key].append((cond, v))

        conds = [c for c, _ in mine["other"]]
        held = True if any(c is None for c in conds) else bool(conds) and functools.reduce(np.logical_or, conds)
        slots = {"flag": flag, "other": other}
        values = {"flag": held, "other": selected(mine["other"], other.tracer(self.trace))}
        if name in self.slots:
            slots["before"] = self.slots[name]
            values["before"] = selected(mine["before"], self.slots[name].tracer(self.trace))
        return _write_back(self.trace, slots, values)

    def _placeholder(self, name):
        """A slot for a variable unassigned before the loop that only a lifted return reads after
        it (_convert._lifted), where a trip assigned it: no value written, no length."""
        slot = self.slots[name] = _Slot(self.trace, name, *self.specs[name])
        _no_lengths(self.trace, slot)
        return slot.tracer(self.trace)

    def _after(self, name):
        """A carried variable after the loop: of the kind its trips leave (a Python number before
        the loop is a NumPy scalar after `total = total + s[i]`) where a whole trip surely ran (a
        range's loop, no break); where it may not have, one kind or a graph break."""
        slot = self.slots[name]
        t = slot.tracer(self.trace)
        before = (slot.weak, slot.weak is None and slot.scalar)
        written = self.kinds.get(name, set())
        if written <= {before}:
            return t
        if len(written) == 1 and self.exact and self.room >= 1 and not self.broke:
            t._weak, t._scalar = next(iter(written))
            t._scalar = t._scalar or (t._weak is not None and slot.scalar)
            return t
        # NumPy's kind after the loop depends on whether a trip assigned it: carried as a pair
        weak, scalar = next(iter(written - {before}))
        self.pairs[name] = (slot.dtype, slot.bounds, tuple(e >= 0 for e in slot.extents), weak,
                            scalar or (weak is not None and slot.scalar), None)
        raise _Retry(self)

    def _settle_argument_slots(self, out):
        """A loop that runs a whole trip at least (a range) holds in a slot what its trips
        assign, not what came before it: the slot holds an argument afterwards only where a trip
        may end with one (its own value, unchanged; a branch's that may keep it)."""
        if not self.exact or self.room < 1 or self.broke:
            return
        for name, slot in self.slots.items():
            value = out[self.index[name]] if self.index[name] < len(out) else None
            # (a pair's slot of its kind before the loop keeps it where no trip changed the kind)
            keeps = value is None or name in self.pairs or (isinstance(value, Tracer) and (
                value._view.storage == slot.view.storage or _may_hold_argument(self.trace, value)))
            if not keeps:
                self.trace.may_be_argument.pop(slot.view.storage, None)


def _kind_of(value):
    """(Python number type or None, whether a NumPy scalar) of a value a slot holds."""
    weak = _number_type(value)  # (a Python number is one, whatever its scalar flag)
    return weak, weak is None and as_tracer(value)._scalar


def _same_static(a, b):
    try:
        return bool(a == b)
    except Exception:
        return False


def _traced_while(trace, cond, body, state, names, live, trips=None, guarded=(), most=None, writes=()):
    """A loop of the IR; `trips` its trip count where known (a range), else its lists get room
    for `most` trips where that bounds them, else for as many as the longest array it carries
    (or _MIN_TRIPS), times the factor calls that outgrew it raised. `guarded`: the variables it
    may carry from a placeholder where they are unassigned before it (_convert._lifted).
    `writes`: the values of the variables whose items the body assigns (`boxes[i, 4] = w`): the
    storages the first try takes as written (a storage a try finds written otherwise, through
    another name or a call, is learned, and the loop traced again)."""
    room = trips if trips is not None else max(0, most) if most is not None else trace.trip_factor * max(
        [_MIN_TRIPS] + [bound(d) + 1 for v in state if isinstance(v, Tracer) for d in v.shape[:1]])
    exact = trips is not None
    written = {v._view.storage for v in writes if isinstance(v, Tracer)
               and trace.graph.storage_kind(v._view.storage) != "const"}
    return _settle(trace, lambda last: _LoopTrace(trace, last.specs, last.lists, last.written, room, exact, last.pairs)
                   if last else _LoopTrace(trace, {}, {}, written, room, exact),
                   lambda loop: loop.run(cond, body, state, names, live, guarded),
                   lambda loop: trace_error(f"a loop on a traced condition whose carried {_named(loop.grew)} keeps "
                                            "growing (longer after a trip than before it, each time strider tried "
                                            "again)", "keep what a loop carries at most as long as it was before "
                                            "the loop, or append its rows to a list and join them after it"),
                   (cond, body), state)


def _named(names):
    """'variable 'a'' or 'variables 'a', 'b'' in words (none known: 'variables')."""
    return (f"variable{'s' if len(names) > 1 else ''} " + ", ".join(map(repr, names))) if names else "variables"


_MODULE = sys.modules[__name__]
IMPL["in_branches"] = in_branches
