"""A traced signature's results: what the function returned (a pytree of traced values and Python
values), and the plan the dispatcher's Runner (csrc/python/runner.h) follows to build them on
every call."""
import os
import types

import numpy as np

from . import _C
from ._choice import Choice, _both, bound
from ._errors import UnsupportedError, unsupported, where
from ._tracer import Extent, ItemList, RunInNumPy, TracedList, Tracer, as_tracer, contiguous, holds_traced
from ._ufuncs import same_kind_copy


def dense_order(view, size):
    """The axes of `view`, outermost first, when it covers all `size` elements of its storage
    densely in some axis order; None otherwise."""
    if view.offset != 0 or view.numel != size or size == 0:
        return None
    # a size-1 axis sharing its stride with a longer one is the inner of the two (so it gets
    # the stride NumPy gives it: C order (2, 1, 4) is (4, 4, 1), F order (1, 2, 2))
    order = sorted(range(len(view.shape)), key=lambda d: (-abs(view.strides[d]), view.shape[d] == 1))
    return order if contiguous(view.shape, view.strides, order) else None


class GraphBreak:
    """A signature whose trace met what strider cannot capture (`reason`, the error's message with
    the user's file:line): the dispatcher runs its calls as the function's own Python."""

    __slots__ = ("reason",)
    runner = None

    def __init__(self, reason):
        self.reason = reason


class Entry:
    """One traced signature: the lowered program and how a call maps onto it (planned here once,
    run by the dispatcher's Runner on every call)."""

    __slots__ = ("program", "runner", "cuda")

    def __init__(self, program, arg_storages, result_spec, outputs):
        self.program = program
        graph = program.graph
        views = list(graph.outputs)
        groups = [(sid, g) for sid, (kind, g) in arg_storages.items() if kind == "group"]
        scalars = [(sid, i) for sid, (kind, i) in arg_storages.items() if kind == "scalar"]
        # returned temporaries are allocated by NumPy: in their final shape when one dense view
        # returns them (the result is then the buffer itself, or a transpose of it)
        returned = {}
        for v in views:
            if graph.storage_kind(v.storage) == "temp":
                returned.setdefault(v.storage, []).append(v)
        # run-time lengths: the runner reads them (in an array of their own) to shape the results;
        # an argument's count of rows it reads from the call
        lengths = {e for v in views for e in v.extents if e >= 0 and graph.storage_kind(e) == "temp"}
        for e in lengths:
            returned.setdefault(e, [])
        temps = []  # (storage, shape to allocate, TempForm, axes to transpose)
        for sid, vs in sorted(returned.items()):
            size = graph.storage_size(sid)
            dynamic = sid in lengths or any(e >= 0 for v in vs for e in v.extents)
            order = dense_order(vs[0], size) if len(vs) == 1 and not dynamic else None
            if order is None:
                temps.append((sid, [max(size, 1)], _C.TempForm.viewed, []))
            else:
                inverse = sorted(range(len(order)), key=order.__getitem__)
                transposed = inverse != list(range(len(order)))
                temps.append((sid, [vs[0].shape[d] for d in order],
                              _C.TempForm.transposed if transposed else _C.TempForm.buffer, inverse if transposed else []))
        self.runner = _C.Runner(program, groups, scalars, temps, outputs, result_spec)
        self.cuda = None  # the program's stages loaded on a CUDA device (target="cuda")


def _numbers_of_one_array(value):
    """A list (nested) of traced Python numbers of one kind that are the elements of one array in
    C order (what .tolist() gives): that array, returned as one (pytree's "numbers"); else None."""
    shape, first = [], value
    while type(first) is list and first:
        shape.append(len(first))
        first = first[0]
    if not (isinstance(first, Tracer) and first.ndim == 0 and first._weak in (bool, int, float)):
        return None
    v0, items = first._view, [value]
    for n in shape:  # each level: lists of the same length
        if any(type(x) is not list or len(x) != n for x in items):
            return None
        items = [y for x in items for y in x]
    for i, x in enumerate(items):
        if not (isinstance(x, Tracer) and x.ndim == 0 and x._weak is first._weak and x.dtype == first.dtype and
                x._view.storage == v0.storage and x._view.offset == v0.offset + i):
            return None
    return Tracer(first._trace, _C.View(v0.storage, [len(items)], [1], v0.offset), first.dtype).reshape(shape)


def flatten_result(value, leaves, path=None):
    """The result's structure for pytree.cc, its arrays appended to `leaves`; `path`: the
    condition under which the call returns this part of it (None: always)."""
    value = bound(value)  # a variable a branch assigned on one side only
    if type(value) is Choice:  # the side its condition picks (pytree.cc)
        leaves.append(value.cond)
        return ("choice", (("leaf",), flatten_result(value.then, leaves, _both(path, value.cond)),
                           flatten_result(value.other, leaves, _both(path, np.logical_not(value.cond)))))
    if type(value) is list and (numbers := _numbers_of_one_array(value)) is not None:
        leaves.append(numbers)  # .tolist()'s: one array, made a list of numbers when returned
        return ("numbers",)
    if isinstance(value, (tuple, list)):
        items = tuple(flatten_result(v, leaves, path) for v in value)
        if type(value) in (tuple, list, ItemList):
            return ("tuple" if type(value) is tuple else "list", items)
        return ("subclass", items, type(value))
    if isinstance(value, dict):  # (a key is a value tracing knows: a traced one hashes by it)
        return ("dict", tuple((k._known_value() if isinstance(k, Tracer) else k, flatten_result(value[k], leaves, path))
                              for k in value))
    if isinstance(value, TracedList) and value.mixed:
        # its items' kinds are the run's: returned where it is empty then (CenterFace's `boxes = []`
        # where nothing passed the threshold), else the call runs in NumPy
        empty = np.equal(value.size().value(), 0)
        value.data._trace.check_assert(empty if path is None else np.logical_or(np.logical_not(path), empty),
                                       "a list whose items hold numbers of kinds known only when the function runs "
                                       f"(a float32 on one path and a Python float on another, say), returned by the "
                                       f"function at {where()}", RunInNumPy)
        leaves.append(value.array(raw=True))
        return ("items",)
    if isinstance(value, TracedList):  # returned as the list of its items, as Python's list would be
        items = value.array()
        if value.weak is None:
            leaves.append(items)
            return ("items",)
        # Python numbers, or lists of them: the array's tolist(); tuples of them, or lists of
        # floats and ints, with each position's type
        leaves.append(Tracer(items._trace, items._view, items.dtype))
        return ("rows", value.weak) if type(value.weak) is tuple else ("numbers",)
    if isinstance(value, Extent):  # a run-time length (len(y) of a mask's y): the int it holds then
        leaves.append(value.value())
        return ("leaf",)
    check_result(value)
    leaves.append(value)
    return ("leaf",)


def check_result(value):
    """Refuses results that would carry this trace's Tracers out unseen, to be returned again on
    every call: generators (a generator function's body has not even run), functions, and objects
    whose attributes hold traced values (a dataclass of a detection). The message names the line
    that made a generator or function (the function has returned: no frame has it)."""
    code = getattr(value, "gi_code", None) or getattr(value, "cr_code", None) or getattr(value, "ag_code", None)
    if code is not None:
        what = f"a generator or coroutine ({code.co_name})"
    elif isinstance(value, types.FunctionType):
        code = value.__code__
        what = f"returning a function ({code.co_name})"
    else:
        attrs = getattr(value, "__dict__", None)
        if type(attrs) is dict and not isinstance(value, (Tracer, type)) and holds_traced(list(attrs.values())):
            raise unsupported(f"returning a {type(value).__name__} object holding traced values",
                              "return its arrays (a tuple, a namedtuple or a dict of them)")  # (at the function's def)
        return
    raise UnsupportedError(f"{os.path.basename(code.co_filename)}:{code.co_firstlineno}: {what} is not "
                           "supported by strider.compile; return the arrays (a tuple or list of them)")


def caller_owned(trace, value, arg_storages):
    """A result in memory the caller may keep: temporaries and views of array arguments as they
    are; constants (NumPy arrays made while tracing) and scalar arguments copied."""
    t = as_tracer(value)
    kind = trace.graph.storage_kind(t._view.storage)
    if kind == "temp" or (kind == "arg" and arg_storages[t._view.storage][0] == "group"):
        return t
    return same_kind_copy(t)
