"""A variable that a branch on a traced condition leaves holding values of different kinds.

`if keep: dets = np.concatenate(...)` after `dets = None`, or `return None` on one side of such a
branch and an array on the other (_convert.py moves every return to the function's end): which
value the variable holds is known only when the function runs. The branch (_control.py) keeps
each side's arrays in storages of its own and gives the variable a Choice of the two. A call
returns the one its condition picks (pytree.cc's Choice node); `x is None` and `x is not None`
become traced conditions; any other use, `isinstance` among them, is refused with a TraceError
(a graph break)."""
import sys

import numpy as np

from ._errors import _internal, trace_error
from ._tracer import Extent, TracedList, Tracer, as_tracer


_USES = ("bool", "len", "iter", "getitem", "setitem", "call", "index", "int", "float", "add", "radd", "sub", "rsub",
         "mul", "rmul", "truediv", "rtruediv", "lt", "le", "gt", "ge", "neg", "array", "array_ufunc")


def refusing(*more):
    """A class decorator: every use of an instance (its attributes, the operators and conversions
    in _USES and `more`) calls its _fail, which raises the TraceError that says why."""
    def make(cls):
        for name in _USES + more:
            setattr(cls, f"__{name}__", cls._fail)
        cls.__getattr__ = lambda self, attr: self._fail()
        return cls
    return make


@refusing("complex", "floordiv", "rfloordiv", "mod", "rmod", "pow", "rpow", "matmul", "rmatmul", "and", "rand", "or",
          "ror", "xor", "rxor", "eq", "ne", "pos", "abs", "invert", "array_function", "hash")
class Choice:
    __slots__ = ("cond", "then", "other", "name")

    def __init__(self, cond, then, other, name):
        self.cond, self.then, self.other, self.name = cond, then, other, name

    def _fail(self, *args, **kwargs):
        raise trace_error(f"{self.name!r} holds {_kind(self.then)} or {_kind(self.other)}, as a condition known only "
                          "when the function runs says: strider can return it or test it with `is None`, not use it "
                          "otherwise", "give it the same kind of value on both paths (an empty array for None)")

    def __repr__(self):
        return f"<{self.name}: {_kind(self.then)} or {_kind(self.other)}>"

    @property
    def __class__(self):
        # isinstance(x, np.ndarray) in the user's code asks for it: refused, not a silent False
        # for a value that is an array on one path (strider's own code sees the Choice)
        if not _internal(sys._getframe(1).f_code.co_filename):
            self._fail()
        return Choice


def _kind(value):
    if value is None:
        return "None"
    if isinstance(value, Choice):
        return f"({_kind(value.then)} or {_kind(value.other)})"
    if isinstance(value, (Tracer, np.ndarray)):
        return f"a {value.ndim}-d {value.dtype} array"
    return f"a {type(value).__name__}"


def is_(a, b, negate=False):
    """`a is b` (`a is not b` where `negate`), a traced bool where a Choice's condition decides it."""
    if type(a) is Choice or type(b) is Choice:
        c, other = (a, b) if type(a) is Choice else (b, a)
        then, otherwise = is_(c.then, other), is_(c.other, other)
        if type(then) is bool and type(otherwise) is bool:
            result = then if then == otherwise else (c.cond if then else np.logical_not(c.cond))
        else:
            result = np.where(c.cond, then, otherwise)
        return np.logical_not(result) if negate else result
    return (a is not b) if negate else (a is b)


def leaf(value):
    """Whether a value of a Choice's side is an array the branch keeps in a storage (else it is
    kept as it is: None, a number, a string)."""
    return isinstance(value, (Tracer, Extent, np.ndarray))


def structure(value, leaves):
    """The shape of a side's value (tuples, lists, dicts and Choices of leaves and other values),
    its arrays appended to `leaves` in order; comparable with ==."""
    if isinstance(value, TracedList):
        raise trace_error("a list filled in a loop on a traced condition is assigned on one path of a branch on a "
                          "traced condition and something else on the other", "assign lists on both paths")
    if type(value) is Choice:
        leaves.append(value.cond)
        return ("choice", value.name, structure(value.then, leaves), structure(value.other, leaves))
    if isinstance(value, (tuple, list)):
        return (type(value), tuple(structure(v, leaves) for v in value))
    if isinstance(value, dict):
        return (dict, tuple((k, structure(v, leaves)) for k, v in value.items()))
    if leaf(value):
        leaves.append(as_tracer(value))
        return ("leaf",)
    return ("value", type(value), id(value), value)


def rebuild(shape, leaves):
    """The value of `structure` with its arrays taken from the iterator `leaves`."""
    kind = shape[0]
    if kind == "leaf":
        return next(leaves)
    if kind == "value":
        return shape[3]
    if kind == "choice":
        cond = next(leaves)
        return Choice(cond, rebuild(shape[2], leaves), rebuild(shape[3], leaves), shape[1])
    if kind is dict:
        return {k: rebuild(v, leaves) for k, v in shape[1]}
    items = [rebuild(v, leaves) for v in shape[1]]
    if kind is tuple or kind is list:
        return kind(items)
    return kind(*items) if hasattr(kind, "_fields") else kind(items)  # a namedtuple takes its fields
