"""A variable that a branch on a traced condition leaves holding values of different kinds.

`if keep: dets = np.concatenate(...)` after `dets = None`, or `return None` on one side of such a
branch and an array on the other (_convert.py moves every return to the function's end): which
value the variable holds is known only when the function runs. The branch (_control.py) keeps
each side's arrays in storages of its own and gives the variable a Choice of the two; a loop whose
trips may leave a variable of another kind than before it carries both and a flag (_control's
_LoopTrace.pairs) and gives it a Choice inside and after it. A call
returns the one its condition picks (pytree.cc's Choice node); `x is None` and `x is not None`
become traced conditions. Arithmetic, comparisons and NumPy's elementwise functions that cannot
fail run on every side (`r = 0.0` on one path and a float32 scalar on the other, as builtin
max(0.0, w) leaves it): the results of one kind merge into one value, selected by the conditions,
and two kinds stay a Choice (merge). Any other use, `isinstance` among them, is refused with a
TraceError (a graph break), but inside a side of a branch on `x is None` (or `not`, `and`, `or` of
such tests), where the side says which value the Choice holds: there it is that value (narrowed)."""
import inspect
import operator
import sys
import types

import numpy as np

from . import _C
from ._errors import StriderError, _internal, trace_error, user_class
from ._tracer import bound as length_bound
from ._tracer import (IMPL, Extent, TracedList, TracedRows, Tracer, _length_of, as_tracer, length_value,
                      python_operator_call)


_USES = ("bool", "len", "iter", "getitem", "setitem", "call", "index", "int", "float", "add", "radd", "sub", "rsub",
         "mul", "rmul", "truediv", "rtruediv", "lt", "le", "gt", "ge", "neg", "array", "array_ufunc")


def refusing(*more):
    """A class decorator: every use of an instance (its attributes, the operators and conversions
    in _USES and `more`) is that of the value the branch being traced knows it holds (narrowed),
    else calls its _fail, which raises the TraceError that says why."""
    def make(cls):
        for name in _USES + more:
            setattr(cls, f"__{name}__", _narrowed_use(f"__{name}__"))
        cls.__getattr__ = lambda self, attr: getattr(known_side(self), attr)
        return cls
    return make


def _narrowed_use(dunder):
    return lambda self, *args, **kwargs: getattr(known_side(self), dunder)(*args, **kwargs)


def known_side(value):
    """The value a use of `value` sees: a Choice's side the branch being traced knows, or the
    side a variable assigned on one path only holds (bound); else the TraceError that refuses it."""
    side = narrowed(value) if type(value) is Choice else value
    if type(side) is Choice and any(isinstance(v, Undefined) for _, v in sides(side)):
        side = bound(side)  # assigned on one path only (the other raises, or Python would): the assigned value
    if type(side) is type(value) and hasattr(side, "_fail"):
        side._fail()
    return side


@refusing("complex", "floordiv", "rfloordiv", "mod", "rmod", "pow", "rpow", "matmul", "rmatmul", "and", "rand", "or",
          "ror", "xor", "rxor", "pos", "abs", "invert", "array_function", "hash")
class Choice:
    __slots__ = ("cond", "then", "other", "name", "items")

    def __init__(self, cond, then, other, name):
        self.cond, self.then, self.other, self.name = cond, then, other, name
        self.items = {}  # of sides that are containers alike: key -> the merged item (_item)

    def _fail(self, *args, **kwargs):
        what = f"the result of {self.name}" if self.name.endswith("()") else repr(self.name)
        raise trace_error(f"{what} holds {_kinds(self.then, self.other)} depending on a condition known only when the "
                          "function runs; such a value strider can return, test with `is None`, compute with "
                          "(arithmetic, comparisons) or pass to NumPy's functions, not use otherwise",
                          "give it the same kind of value on every path (an empty array for None, one dtype)")

    def __repr__(self):
        return f"<{self.name}: {_kinds(self.then, self.other)}>"

    @property
    def __class__(self):
        # isinstance(x, np.ndarray) in the user's code asks for it: refused, not a silent False
        # for a value that is an array on one path, but where a branch knows the side (strider's
        # own code sees the Choice)
        if not _internal(sys._getframe(1).f_code.co_filename):
            return _objects(sides(self)) or known_side(self).__class__
        return Choice

    def __setattr__(self, name, value):
        if name not in Choice.__slots__:
            self._fail()  # (a side's object would not see it)
        object.__setattr__(self, name, value)


@refusing()
class Undefined:
    """A variable a loop or branch on a traced condition may leave unassigned (Python would
    raise NameError reading it there, or hold the last trip's value); `surely`: one Python has
    not assigned (maybe() met its NameError). As a side of a Choice (a branch assigned it on its
    other side only), `since` is the number of ops the graph held when the branch ended: a call
    that returns the Choice raises Python's UnboundLocalError where the condition picks this
    side (bound)."""

    __slots__ = ("name", "since", "surely")

    def __init__(self, name, since=None, surely=False):
        self.name, self.since, self.surely = name, since, surely

    def _fail(self, *args, **kwargs):
        raise trace_error(f"{self.name!r} is read where a loop or branch on a traced condition may not have "
                          "assigned it", "assign it before the loop or branch (or in both branches)")

    def __repr__(self):
        return f"<{self.name}: not assigned on every path>"


def bound(value):
    """A value read where it may be unassigned (a Choice with Undefined sides) as the value it
    holds where it is assigned, with a check that raises Python's UnboundLocalError where the
    conditions pick an Undefined side. The check runs when the call ends; it stands for the read
    only where nothing since the branch may raise or write an argument (else a TraceError: the
    call runs in NumPy)."""
    if type(value) is not Choice:
        return value
    alternatives = sides(value)
    missing = [(c, v) for c, v in alternatives if isinstance(v, Undefined)]
    if not missing:
        return value
    trace, first = value.cond._trace, missing[0][1]
    if id(value) in trace.bound_reads:
        return trace.bound_reads[id(value)][1]
    if not all(v.surely and v.since is not None for _, v in missing):
        first._fail()
    since = min(v.since for _, v in missing)
    if any(trace.graph.op_may_raise(i) for i in range(since, trace.graph.num_ops)) or any(
            trace.graph.storage_kind(s) == "arg" for s in trace.graph.op_outputs(since)):
        first._fail()
    trace.check_assert(np.logical_not(_either([c for c, _ in missing])), f"cannot access local variable {first.name!r} "
                       "where it is not associated with a value", UnboundLocalError)
    result = merge([(c, v) for c, v in alternatives if not isinstance(v, Undefined)], value.name)
    trace.bound_reads[id(value)] = (value, result)
    return result


# What a Choice computes on each side: operators and ufuncs that cannot fail when they run, so
# that computing the side the condition does not pick is harmless (Python's own errors on the
# numbers of a side are refused while tracing).
_BINARY = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv}
_COMPARE = {"lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge, "eq": operator.eq,
            "ne": operator.ne}
_UNARY = {"neg": operator.neg, "pos": operator.pos, "abs": operator.abs}
_UFUNC_OPERATORS = {np.add: operator.add, np.subtract: operator.sub, np.multiply: operator.mul,
                    np.true_divide: operator.truediv, np.less: operator.lt, np.less_equal: operator.le,
                    np.greater: operator.gt, np.greater_equal: operator.ge, np.equal: operator.eq,
                    np.not_equal: operator.ne, np.negative: operator.neg,
                    np.positive: operator.pos, np.absolute: operator.abs}
_UFUNCS = set(_UFUNC_OPERATORS) | {np.maximum, np.minimum, np.fmax, np.fmin, np.sqrt, np.exp, np.log, np.square,
                                   np.floor, np.ceil, np.rint, np.isnan, np.isfinite, np.logical_and, np.logical_or,
                                   np.logical_not}


def _operator(fn, reflected):
    return lambda self, other: apply(fn, (other, self) if reflected else (self, other), self.name)


for _name, _fn in _BINARY.items():
    setattr(Choice, f"__{_name}__", _operator(_fn, False))
    setattr(Choice, f"__r{_name}__", _operator(_fn, True))
for _name, _fn in _COMPARE.items():
    setattr(Choice, f"__{_name}__", _operator(_fn, False))
for _name, _fn in _UNARY.items():
    setattr(Choice, f"__{_name}__", lambda self, fn=_fn: apply(fn, (self,), self.name))


def _in_place(fn):
    """`x op= y` of a Choice: an array side changes in place where its condition holds (the op
    on a copy, with NumPy's casting, written back under the condition), so that another name for
    that array sees it, as NumPy's would, and the side the run does not take stays as it was; a
    number side, which Python rebinds, is the new number. (Python's fallback to `x = x op y`
    left another name for the array unchanged.)"""
    def method(self, other):
        if type(other) is Choice:
            self._fail()
        out = []
        for cond, v in sides(self):
            try:
                if isinstance(v, Tracer) and v.ndim and not v._scalar and v._weak is None:
                    changed = fn(v.copy(), other)
                    v[...] = changed if cond is None else np.where(cond, changed, v)
                    out.append((cond, v))
                else:
                    out.append((cond, fn(v, other)))
            except StriderError:
                raise
            except Exception as e:  # NumPy's error on one side (a float into an int array): NumPy decides
                raise trace_error(f"{self.name!r} holds values of more than one kind, and {fn.__name__} fails on one "
                                  f"of them ({type(e).__name__}: {e}): strider computes every side before the "
                                  "condition picks one", "give it the same kind of value on both paths") from None
        return merge(out, self.name)
    return method


for _name, _fn in (("iadd", operator.iadd), ("isub", operator.isub), ("imul", operator.imul),
                   ("itruediv", operator.itruediv)):
    setattr(Choice, f"__{_name}__", _in_place(_fn))


def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    # a Python operator that a Tracer's side passed on (Tracer.__array_ufunc__ defers to a
    # Choice) keeps Python's rules on the sides that are Python numbers
    by_operator = python_operator_call()
    if method != "__call__" or kwargs or ufunc not in _UFUNCS:
        self._fail()
    return apply(_UFUNC_OPERATORS[ufunc] if by_operator and ufunc in _UFUNC_OPERATORS else ufunc, inputs, self.name)


Choice.__array_ufunc__ = _array_ufunc
# a NumPy function of it (np.hstack([q1, reg])): a branch on its condition (_control.in_branches)
Choice.__array_function__ = lambda self, func, types, args, kwargs: IMPL["array_function"](func, args, kwargs)
Choice.takes_ufuncs = True  # what Tracer.__array_ufunc__ defers to


def _number_method(name):
    """x.tolist() (x.item()) of a Choice of numbers (PaddleOCR's np.mean(conf).tolist(), conf a
    float32 array or [0]): each side's Python number, merged; else a use refused."""
    def method(self):
        if all(isinstance(v, (Tracer, np.generic)) and not np.ndim(v) for _, v in sides(self)):
            return apply(lambda v: getattr(v, name)(), (self,), f"{self.name}.{name}()")
        return getattr(known_side(self), name)()
    return method


Choice.tolist, Choice.item = _number_method("tolist"), _number_method("item")


def _sequences(choice):
    """The sides of a Choice, where each is a tuple or a list and all are of one length: (their
    (condition, value) pairs, the length); else None."""
    alternatives = sides(choice)
    lengths = {len(v) if type(v) in (tuple, list) else None for _, v in alternatives}
    return (alternatives, lengths.pop()) if len(lengths) == 1 and None not in lengths else None


def _item(choice, alternatives, key, get=operator.getitem):
    """Item `key` of the sides (tuples, lists or dicts alike; attribute `key`, where `get` is
    getattr): theirs merged (a Choice where their kinds differ), made once, so that every read
    sees the same value. A merged array is a copy where NumPy's is a side's own: it stands for
    the sides' arrays and for what those stand for (Trace.stand_in), so that a write through it
    or a read after a write is refused, not lost."""
    if (key, get) in choice.items:
        return choice.items[key, get]
    items = [get(v, key) for _, v in alternatives]
    out = merge([(c, v) for (c, _), v in zip(alternatives, items)],
                f"{choice.name}.{key}" if get is getattr else f"{choice.name}[{key!r}]")
    if all(out is not v for v in items):
        _stands_for(out, items, writable=True)
    choice.items[key, get] = out
    return out


def _objects(alternatives):
    """The class of the sides, where each is an object of one class of the user's with the same
    attributes (TF OD API's BoxList, returned early); else None."""
    # __class__: an argument's object answers with its own class while tracing swaps it for a
    # recording one (_capture), so the caller's BoxList and one the function makes are alike
    cls = alternatives[0][1].__class__
    if not user_class(cls):
        return None
    names = [vars(v).keys() if v.__class__ is cls and type(getattr(v, "__dict__", None)) is dict else None
             for _, v in alternatives]
    return cls if None not in names and all(n == names[0] for n in names) else None


def _getattr(self, attr):
    """An attribute of a Choice of objects alike (_objects): the sides' merged (_item); a
    method of their class, bound to the Choice (its reads of self merge so too). Else the
    attribute of the side a branch knows it holds, or refused."""
    alternatives = sides(self)
    cls = _objects(alternatives)
    if cls is not None and attr in vars(alternatives[0][1]):
        return _item(self, alternatives, attr, getattr)
    if cls is not None and isinstance(method := inspect.getattr_static(cls, attr, None), types.FunctionType):
        return types.MethodType(method, self)
    arrays = all(isinstance(v, (Tracer, np.ndarray)) for _, v in alternatives)
    if arrays and attr in ("shape", "ndim", "dtype"):
        values = [getattr(v, attr) for _, v in alternatives]
        if attr != "shape" and all(v == values[0] for v in values):
            return values[0]
        if attr == "shape" and len({len(v) for v in values}) == 1:
            # (BoxList.num_boxes() of the caller's rows on one path, a mask's on the other)
            return tuple(_length(alternatives, [v[d] for v in values]) for d in range(len(values[0])))
    if arrays and attr == "size":  # of arrays of any ndim (facenet's nms: np.empty((0, 3)) or the picks)
        return _length(alternatives, [v.size for _, v in alternatives])
    if arrays and attr == "T":
        return _on_sides(self, lambda v: v.T, f"{self.name}.T")
    if arrays and (attr in _ARRAY_METHODS or attr in ("max", "min", "argmax", "argmin") and all(
            not as_tracer(v).is_dynamic and v.size for _, v in alternatives)):  # (an empty side's would raise)
        return lambda *args, **kwargs: _on_sides(self, lambda v: getattr(v, attr)(*args, **kwargs),
                                                 f"{self.name}.{attr}()")
    return getattr(known_side(self), attr)


# the methods of a Choice of arrays that run on each side (apply): those that cannot fail when
# they run (x.max() of a side's empty array would raise where that side is not taken); what they
# return is read-only
_ARRAY_METHODS = {"sum", "prod", "mean", "any", "all", "argsort", "copy", "astype", "cumsum", "round", "clip", "ravel",
                  "transpose", "nonzero"}


def _checked_while_tracing(key, alternatives):
    """Whether a basic index of each side's array fails, where it does, as it traces: slices,
    None and `...` never do; an int only on an axis whose length tracing knows on every side."""
    key = key if type(key) is tuple else (key,)
    if not all(k is None or k is Ellipsis or type(k) in (int, slice) for k in key) or Ellipsis in key and any(
            type(k) is int for k in key):
        return False
    axes = [d for d, k in enumerate(k for k in key if k is not None) if type(k) is int]
    return all(d < v.ndim and not isinstance(v.shape[d], Extent) for _, v in alternatives for d in axes)


def _on_sides(choice, fn, name):
    """fn of each side of a Choice of arrays, merged (apply). An array it returns may be a view of
    a side's (x.T, x[:, 0]) that strider holds in a copy: read-only, and read only while the
    sides' arrays, and what they stand for, are unwritten (Trace.stand_in)."""
    out = apply(fn, (choice,), name)
    _stands_for(out, [v for _, v in sides(choice)], writable=False)
    return out


def _stands_for(out, values, writable):
    """Records that `out`, where it is an array merged from the sides' values, stands for their
    arrays and for what those stand for (Trace.stand_in)."""
    if isinstance(out, Tracer) and out.ndim:
        trace = out._trace
        arrays = [v for v in values if isinstance(v, Tracer) and v.ndim]
        also = [r for v in arrays for r in trace.stand_ins.get(v._view.storage, ())]
        trace.stand_in(out, arrays, writable, also=also)


def _length(alternatives, lengths):
    """The length of an axis the sides' arrays have: one where all agree, else the length each
    side's condition picks (a run-time length)."""
    if all(type(n) is int and n == lengths[0] for n in lengths):
        return lengths[0]
    value = merge([(c, as_tracer(length_value(n))) for (c, _), n in zip(alternatives, lengths)], "a length")
    return _length_of(value, max(map(length_bound, lengths)))


def _iter(self):
    """Unpacking a Choice of tuples (lists) of one length (Ultra-Light's `boxes, labels, probs =
    predict(...)` of a function that returns early): their items, each the sides' merged (_item)."""
    found = _sequences(self)
    if found is None:
        return _narrowed_use("__iter__")(self)
    alternatives, n = found
    return iter([_item(self, alternatives, i) for i in range(n)])


def _len(self):
    found = _sequences(self)
    return found[1] if found is not None else _narrowed_use("__len__")(self)


def length(choice):
    """len() of a Choice where the user's code calls it (_control.len_): of tuples or lists of one
    length, that; of arrays (of any ndim but 0), the length the condition picks, a run-time one
    where they differ (Python's own len() would take its bound)."""
    alternatives = sides(choice)
    if all(isinstance(v, (Tracer, np.ndarray)) and v.ndim for _, v in alternatives):
        return _length(alternatives, [v.shape[0] for _, v in alternatives])
    return _len(choice)


def _getitem(self, key):
    """An item (a slice) of a Choice of tuples or lists of one length, at a Python int (SSD's
    `return keep, 0` on one path and `keep, 1` on another), or of dicts of the same keys: the
    sides' merged (_item)."""
    found = _sequences(self)
    if found is not None and type(key) in (int, slice):
        alternatives, n = found
        if type(key) is slice:
            return type(alternatives[0][1])(_item(self, alternatives, i) for i in range(n)[key])
        if not -n <= key < n:
            raise IndexError(f"{type(alternatives[0][1]).__name__} index out of range")
        return _item(self, alternatives, key % n)
    alternatives = sides(self)
    if (all(type(v) is dict and v.keys() == alternatives[0][1].keys() for _, v in alternatives)
            and key in alternatives[0][1]):
        return _item(self, alternatives, key)
    if all(isinstance(v, (Tracer, np.ndarray)) for _, v in alternatives) and _checked_while_tracing(key, alternatives):
        return _on_sides(self, lambda v: v[key], f"{self.name}[...]")  # (arrays of two dtypes: m[:, 0])
    return _narrowed_use("__getitem__")(self, key)


def _contains(self, item):
    """`item in` a Choice of dicts (TF OD API's BoxList.has_field of a box list one path returns
    early): their answer, where every side gives the same."""
    alternatives = sides(self)
    if all(type(v) is dict for _, v in alternatives):
        answers = {item in v for _, v in alternatives}
        if len(answers) == 1:
            return answers.pop()
    return _narrowed_use("__contains__")(self, item)


Choice.__iter__, Choice.__len__, Choice.__getitem__, Choice.__getattr__ = _iter, _len, _getitem, _getattr
Choice.__contains__ = _contains


def sides(value):
    """(condition, value) for each side a value may be when the function runs: a Choice's, its
    own Choices' in turn; None: always. Inside a side of a branch whose condition decides the
    Choice (`if best is None: ... else: s > best`), only its side there."""
    if type(value) is not Choice:
        return [(None, value)]
    known = narrowed(value)
    if known is not value:
        return sides(known)
    return ([(_both(value.cond, c), v) for c, v in sides(value.then)] +
            [(_both(np.logical_not(value.cond), c), v) for c, v in sides(value.other)])


def _both(a, b):
    return b if a is None else a if b is None else np.logical_and(a, b)


def apply(fn, args, name):
    """fn(*args) where args hold Choices: fn on each combination of their sides, merged. An
    argument a branch may have left unassigned is read as bound() reads it."""
    combos = [(None, ())]
    for a in map(bound, args):
        combos = [(_both(c, sc), vals + (v,)) for c, vals in combos for sc, v in sides(a)]
    results = []
    for cond, vals in combos:
        try:
            results.append((cond, fn(*vals)))
        except StriderError as e:
            if not any(v is None for v in vals):
                raise
            raise trace_error(f"{name!r} holds values of more than one kind, and {_use(fn)} "
                              "fails on None, one of them: strider computes every side before the condition picks "
                              "one", "give it the same kind of value on both paths") from e
        except Exception as e:  # Python's error on one side (None + 1, 1 / 0): NumPy decides (a graph break)
            raise trace_error(f"{name!r} holds values of more than one kind, and {_use(fn)} fails on one of them "
                              f"({type(e).__name__}: {e}): strider computes every side before the condition picks "
                              "one", "give it the same kind of value on both paths") from None
    return merge(results, name)


def _use(fn):
    """What apply's fn does, as a message names it (strider's own lambdas: using the value)."""
    name = getattr(fn, "__name__", str(fn))
    return "using it" if name == "<lambda>" else name


def merge(alternatives, name):
    """The value that is each (condition, value) of `alternatives` where its condition holds
    (the conditions are exclusive and cover every run): the values of one kind (an array's dtype,
    shape and scalar or weak kind, a Python number's type, one object) selected into one by the
    conditions; several kinds, a Choice of the first and (a Choice of) the others; more than
    _MAX_KINDS, a TraceError."""
    groups = {}
    for cond, value in alternatives:
        for c, v in sides(value):
            groups.setdefault(_kind_key(v), []).append((_both(cond, c), v))
    if len(groups) > _MAX_KINDS:
        raise trace_error(f"{name!r} would hold {len(groups)} kinds of value ("
                          + ", ".join(_kind(g[0][1]) for g in groups.values()) + "), as conditions known only when "
                          f"the function runs say; strider keeps {_MAX_KINDS}", "give it one kind of value on every path")
    merged = [(_either([c for c, _ in g]), _select(key, g)) for key, g in groups.items()]
    out = merged[-1][1]
    for cond, value in reversed(merged[:-1]):
        out = Choice(cond, value, out, name)
    return out


# the kinds of value a variable may hold (`max(0, x)` of a float32 x, then `min(that + s, w)`
# with a Python int w: an int, a float32 and a float64 scalar); each computation runs on every
# combination of its operands' kinds
_MAX_KINDS = 4


def as_one(v, dtype=None):
    """A Choice of numbers as one array (of `dtype`), each side where its condition holds."""
    if type(v) is Choice:
        return np.where(v.cond, as_one(v.then, dtype), as_one(v.other, dtype))
    return as_tracer(v) if dtype is None else as_tracer(v).astype(dtype)


def number_sides(v):
    """Whether every side of a Choice is a number (Python's, NumPy's, a 0-d traced array)."""
    return all(np.ndim(x) == 0 and (type(x) in (bool, int, float) or isinstance(x, (Tracer, np.generic))
                                    and x.dtype.kind in "biuf") for _, x in sides(v))


def _either(conds):
    out = conds[0]
    for c in conds[1:]:
        out = np.logical_or(out, c)
    return out


def _kind_key(v):
    if isinstance(v, Tracer) and v._weak is not None and not v.ndim:
        return ("number", v._weak)  # a traced Python number
    if isinstance(v, Tracer):
        return ("array", v.dtype, v._weak, v._scalar, tuple(v._view.shape), tuple(v._view.extents))
    if isinstance(v, np.generic):
        return ("array", v.dtype, None, True, (), ())
    if type(v) in (bool, int, float):
        return ("number", type(v))
    return ("object", id(v))


def _select(key, group):
    """The values of one kind as one: the first whose condition holds."""
    if len(group) == 1 or key[0] == "object":
        return group[0][1]
    out = selected(group[:-1], as_tracer(group[-1][1]))
    if key[0] == "array":
        out._weak, out._scalar = key[2], key[3]
    else:  # a traced Python number, as x.item() gives
        out._weak, out._scalar = key[1], False
    return out


def selected(entries, default):
    """The value of the first (condition, value) of `entries` whose condition holds (None: always),
    else `default`."""
    out = default
    for cond, v in reversed(entries):
        out = as_tracer(v) if cond is None else np.where(cond, as_tracer(v), out)
    return out


def _kinds(a, b):
    """'a or b' in words: with their shapes where their kinds read alike (lengths apart: `?` one
    known only when the function runs)."""
    ka, kb = _kind(a), _kind(b)
    if ka == kb and all(isinstance(v, (Tracer, np.ndarray)) for v in (a, b)):
        ka, kb = (f"{k} of shape ({', '.join('?' if isinstance(d, Extent) else str(d) for d in v.shape)}"
                  f"{',' if v.ndim == 1 else ''})" for k, v in ((ka, a), (kb, b)))
    return f"{ka} or {kb}"


def _kind(value):
    if value is None:
        return "None"
    if isinstance(value, Choice):
        return f"({_kinds(value.then, value.other)})"
    if isinstance(value, Undefined):
        return "nothing (not assigned)"
    if type(value) in (bool, int, float):
        return f"a Python {type(value).__name__}"
    if isinstance(value, Tracer) and value._weak is not None and not value.ndim:
        return f"a Python {value._weak.__name__}"  # a traced one: 0-d arrays both, kinds apart
    if isinstance(value, np.generic) or (isinstance(value, Tracer) and value._scalar):
        return f"a NumPy {value.dtype} scalar"
    if isinstance(value, (Tracer, np.ndarray)):
        return f"a {value.ndim}-d {value.dtype} array"
    if type(value) is dict:
        return f"a dict of keys {', '.join(map(repr, value)) or '(none)'}"
    return f"a {type(value).__name__}"


def is_(a, b, negate=False):
    """`a is b` (`a is not b` where `negate`), a traced bool where a Choice's condition decides it;
    one that is the condition (or its negation) is recorded, for the sides of a branch on it."""
    a, b = narrowed(a), narrowed(b)
    if type(a) is Choice or type(b) is Choice:
        c, other = (a, b) if type(a) is Choice else (b, a)
        then, otherwise = is_(c.then, other), is_(c.other, other)
        if type(then) is bool and type(otherwise) is bool:
            if then == otherwise:
                return then != negate
            result = c.cond if then != negate else np.logical_not(c.cond)
            result = np.logical_and(result, True)  # a storage of its own, which the record names
            imply(result, {c.cond._view.storage: then != negate}, {c.cond._view.storage: then == negate})
            result._weak, result._scalar = bool, False  # (Python's bool, returned as one)
            return result
        result = np.where(c.cond, then, otherwise)
        result = np.logical_not(result) if negate else result
        result._weak, result._scalar = bool, False
        return result
    return (a is not b) if negate else (a is b)


def narrowed(value):
    """A Choice's side where the branch being traced knows its condition, else the value."""
    while type(value) is Choice and isinstance(value.cond, Tracer):
        known = value.cond._trace.choice_facts.get(value.cond._view.storage)
        if known is None:
            break
        value = value.then if known else value.other
    return value


def implied(t):
    """What a bool says of Choices' conditions where it holds and where it does not."""
    return t._trace.implied.get(t._view.storage, ({}, {})) if isinstance(t, Tracer) else ({}, {})


def imply(t, holds, fails):
    """Records what the bool t says (see implied), where it says anything."""
    if isinstance(t, Tracer) and (holds or fails):
        t._trace.implied[t._view.storage] = (dict(holds), dict(fails))


class knowing:
    """While a side of a branch on `cond` is traced: what cond's value there says of Choices'
    conditions (`x is None` on a Choice; `not`, `and` and `or` of such tests)."""

    def __init__(self, trace, cond, value):
        self.trace, self.facts = trace, implied(cond)[0 if value else 1]

    def __enter__(self):
        self.before = dict(self.trace.choice_facts)
        self.trace.choice_facts.update(self.facts)

    def __exit__(self, *exc):
        self.trace.choice_facts = self.before


def leaf(value):
    """Whether a value of a Choice's side is an array the branch keeps in a storage (else it is
    kept as it is: None, a number, a string)."""
    return isinstance(value, (Tracer, Extent, np.ndarray))


def structure(value, leaves):
    """The shape of a side's value (tuples, lists, dicts and Choices of leaves and other values),
    its arrays appended to `leaves` in order; comparable with ==. A list filled in a loop on a
    traced condition is its room and its length (the branch carries them as it does arrays)."""
    if type(value) in (TracedList, TracedRows):
        counters = [value.length] + ([value.rows] if type(value) is TracedRows else [])
        leaves += [value.data] + [Tracer(value.data._trace, _C.View(c, [], [], 0), np.dtype(np.int64)) for c in counters]
        if type(value) is TracedRows:
            return ("rows", value.items)
        return ("list", value.weak, value.scalar, value.mixed)
    if isinstance(value, TracedList):
        raise trace_error("a slice of a list filled in a loop on a traced condition is assigned on one path of a "
                          "branch on a traced condition and something else on the other", "assign lists on both paths")
    if type(value) is Choice:
        leaves.append(value.cond)
        return ("choice", value.name, structure(value.then, leaves), structure(value.other, leaves))
    if isinstance(value, Undefined) and value.surely:
        return ("undefined", value.name)
    if isinstance(value, (tuple, list)):
        return (type(value), tuple(structure(v, leaves) for v in value))
    if isinstance(value, dict):
        return (dict, tuple((k, structure(v, leaves)) for k, v in value.items()))
    if leaf(value):
        leaves.append(as_tracer(value))
        return ("leaf",)
    if _objects([(None, value)]) is not None and type(value).__new__ is object.__new__:
        # an object of a class of the user's (a BoxList each side makes): its attributes
        return (object, type(value), tuple((k, structure(v, leaves)) for k, v in vars(value).items()))
    return ("value", type(value), id(value), value)


def rebuild(shape, leaves, since=None):
    """The value of `structure` with its arrays taken from the iterator `leaves` (an Undefined's
    `since` from `since`)."""
    kind = shape[0]
    if kind == "leaf":
        return next(leaves)
    if kind == "value":
        return shape[3]
    if kind == "list":
        data, length = next(leaves), next(leaves)
        lst = TracedList(data, length._view.storage, shape[1], shape[2])
        lst.mixed = shape[3]
        return lst
    if kind == "rows":
        data, length, rows = next(leaves), next(leaves), next(leaves)
        return TracedRows(data, rows._view.storage, length._view.storage, shape[1])
    if kind == "undefined":
        return Undefined(shape[1], since, surely=True)
    if kind == "choice":
        cond = next(leaves)
        return Choice(cond, rebuild(shape[2], leaves, since), rebuild(shape[3], leaves, since), shape[1])
    if kind is dict:
        return {k: rebuild(v, leaves, since) for k, v in shape[1]}
    if kind is object:
        obj = object.__new__(shape[1])
        vars(obj).update((k, rebuild(v, leaves, since)) for k, v in shape[2])
        return obj
    items = [rebuild(v, leaves, since) for v in shape[1]]
    if kind is tuple or kind is list:
        return kind(items)
    return kind(*items) if hasattr(kind, "_fields") else kind(items)  # a namedtuple takes its fields
