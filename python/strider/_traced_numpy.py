"""NumPy as a traced function sees it: creation functions (np.zeros & co.) that record into the
trace, random functions refused, np.vectorize of a Python function traced on the whole array, and
the math module's functions applied to traced values as NumPy's ufuncs."""
import builtins
import datetime
import dis
import functools
import logging
import math
import os
import random
import sys
import threading
import time
import types
import uuid
import warnings

import numpy as np
from numpy.lib.array_utils import normalize_axis_tuple

from ._creation import _known_number
from ._errors import _internal, located, unsupported, user_file
from ._ops import CREATION, holds_length, refuse_lengths
from ._shapes import as_strided, column_stack, concatenate, dstack, hstack, repeat, stack, vstack
from ._sorting import lexsort
from ._tracer import (IMPL, Extent, TracedList, Tracer, as_tracer, check_int_of_float, current_trace, holds_traced,
                      item_list)


def _creation(traced, real):
    """np.zeros & co. take no array, so NumPy cannot dispatch them to a Tracer: while a trace
    runs, these wrappers stand in the numpy module and record into the trace of their thread
    when called from user code; any other caller gets NumPy's own function."""

    @functools.wraps(real)
    def call(*args, **kwargs):
        if not _traced_call_site():
            return real(*args, **kwargs)
        refuse_lengths(real.__name__, args, kwargs)
        return traced(*args, **kwargs)

    return call


def _traced_call_site():
    """Where the wrapper's caller is the traced function's code, while a trace runs, the frame
    messages name (the innermost user frame among those, else the caller); else None: strider's
    or NumPy's own calls, through the standard library's logging too (strider's log records read
    the clock), and a module the function imports for the first time (OC_SORT's `import lap`
    inside a function: its globals are NumPy's arrays, kept after the call). Only the frames up
    to strider's, which runs the function, are searched for the import: a module whose top-level
    code calls a compiled function is being imported too."""
    frame = caller = sys._getframe(2)
    if current_trace() is None or _internal(frame.f_code.co_filename):
        return None
    while frame is not None and frame.f_code.co_filename.startswith(_LOGGING_DIR):
        frame = frame.f_back
    if frame is None or _internal(frame.f_code.co_filename):
        return None
    user = None
    while frame is not None and not _internal(frame.f_code.co_filename):
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return None
        if user is None and user_file(frame.f_code.co_filename):
            user = frame
        frame = frame.f_back
    return user or caller


_LOGGING_DIR = os.path.dirname(logging.__file__) + os.sep


def _refused(real, what, instead, refuses=lambda *args, **kwargs: True):
    """real, refused (`what`; do `instead`) where traced code calls it and refuses(its arguments)
    says so: random numbers would be drawn once while tracing and then replayed as constants on
    every call; floating-point errors that raise are NumPy's checks of each result, which compiled
    kernels do not make."""

    @functools.wraps(real)
    def call(*args, **kwargs):
        if (site := _traced_call_site()) and refuses(*args, **kwargs):
            with located(site.f_code, site.f_lineno):
                raise unsupported(what, instead)
        return real(*args, **kwargs)

    return call


def _print(real):
    """print: where traced code calls it, recorded, to print after each run what that run
    computed (printed while tracing, it would print once, and a traced value's description);
    the traced arrays as they are at the call (a copy: a later write must not show). In a loop or
    branch on a traced condition, refused: only the run knows how often it prints."""

    @functools.wraps(real)
    def call(*args, **kwargs):
        if not _traced_call_site():
            return real(*args, **kwargs)
        trace = current_trace()
        trace.refuse_side_effect("print", message=True)
        file = kwargs.get("file")  # sys.stdout or sys.stderr as each run finds it, by name
        std = [name for name in ("stdout", "stderr") if file is getattr(sys, name)]
        trace.prints.append((_as_now(args), dict(kwargs, file=std[0]) if std else kwargs, None))

    return call


def _log(real):
    """A logger's method (logger.info, logging.warning through the root logger's): where traced
    code calls it, recorded, to log after each run what that run computed, as print is (_print);
    the record names strider's frame, not the user's line. In a loop or branch on a traced
    condition, refused."""

    @functools.wraps(real)
    def call(self, *args, **kwargs):
        if not _traced_call_site():
            return real(self, *args, **kwargs)
        trace = current_trace()
        trace.refuse_side_effect(f"logging.Logger.{real.__name__}", message=True)
        trace.prints.append((_as_now(args), kwargs, functools.partial(real, self)))

    return call


def _as_now(value, depth=0):
    """value with its traced arrays copied, in the lists, tuples and dicts that hold them."""
    if isinstance(value, Tracer):
        return value.copy()
    if depth < 8 and type(value) in (list, tuple):
        return type(value)(_as_now(v, depth + 1) for v in value)
    if depth < 8 and type(value) is dict:
        return {k: _as_now(v, depth + 1) for k, v in value.items()}
    return value


def _raising(*args, **kwargs):
    """Whether np.errstate's or np.seterr's arguments make an error raise (or call a function)."""
    return any(kwargs.get(k) in ("raise", "call") for k in ("all", "divide", "over", "under", "invalid"))


def _warn(real):
    """warnings.warn: in a loop or branch on a traced condition it would warn once, as the trace
    runs the path, not where the run takes it: refused there (NumPy runs the call)."""

    @functools.wraps(real)
    def call(message, category=None, stacklevel=1, *args, **kwargs):
        if _traced_call_site():
            current_trace().refuse_side_effect("warnings.warn", message=True)
        return real(message, category, stacklevel + 1, *args, **kwargs)  # (this frame is not the caller)

    return call


RANDOM_STATES = (np.random.Generator, np.random.RandomState, np.random.BitGenerator)


class RandomRefused:
    """A random generator a trace gets in place of one passed in: any use of it is refused, since
    a draw would happen once, at trace time, and be replayed (its C code would also meet the
    np.empty stand-in, which hands it a Tracer); the call runs in NumPy, or strict raises."""
    __slots__ = ("_of",)

    def __init__(self, of):
        object.__setattr__(self, "_of", type(of).__name__)

    def __getattr__(self, name):
        raise unsupported(f"{self._of}.{name} inside a compiled function (a generator passed in: its draws would be "
                          "made once, at trace time)", "draw the random values outside and pass them as arguments")


def without_random_states(value):
    """An argument as a trace gets it: random generators (in lists, tuples and dicts too) as
    RandomRefused."""
    if isinstance(value, RANDOM_STATES):
        return RandomRefused(value)
    if type(value) in (list, tuple):
        return type(value)(without_random_states(v) for v in value)
    if type(value) is dict:
        return {k: without_random_states(v) for k, v in value.items()}
    return value


def _joining(real, traced):
    """np.concatenate, np.vstack, np.hstack, np.dstack and np.column_stack of a list a loop filled
    (a TracedList or TracedRows: NumPy finds no Tracer in it to dispatch on) or of lists of traced
    values join its items, and np.lexsort of a list of traced keys (its dispatcher looks into
    tuples only) sorts by them; any other call is NumPy's."""

    @functools.wraps(real)
    def call(arrays, *args, **kwargs):
        if current_trace() is not None and (isinstance(arrays, TracedList) or _sequence_of_traced(arrays)):
            return IMPL["in_branches"](traced, (arrays, *args), kwargs, f"np.{real.__name__}()")
        return real(arrays, *args, **kwargs)

    return call


def _sequence_of_traced(arrays):
    """A list or tuple holding traced values, in lists of them too (np.stack([[c, -s], [s, c]]):
    NumPy's dispatchers look one level in)."""
    return type(arrays) in (list, tuple) and holds_traced(arrays)


def _counted(real, traced):
    """np.repeat by a count only the run knows (EfficientDet's np.repeat(image_id, len(keep))):
    NumPy's dispatcher looks at the array alone, so it is strider's repeat; any other call is
    NumPy's."""

    @functools.wraps(real)
    def call(a, repeats, *args, **kwargs):
        if current_trace() is not None and isinstance(repeats, (Tracer, Extent)):
            return traced(a, repeats, *args, **kwargs)
        return real(a, repeats, *args, **kwargs)

    return call


def _stacking(real, traced):
    """np.stack of an array whose length only the run knows (a mask's rows), of a list a loop
    filled, or of lists of traced arrays (second.pytorch's np.stack([[cos, -sin], [sin, cos]]),
    where NumPy's dispatcher sees lists only): NumPy's dispatcher would iterate it first, so it is
    strider's stack of it; any other call is NumPy's."""

    @functools.wraps(real)
    def call(arrays, *args, **kwargs):
        if (isinstance(arrays, Tracer) and arrays.ndim and isinstance(arrays.shape[0], Extent)) or (
                current_trace() is not None and (item_list(arrays) or _sequence_of_traced(arrays))):
            return traced(arrays, *args, **kwargs)
        return real(arrays, *args, **kwargs)

    return call


class _Grid:
    """np.ogrid and np.mgrid while a trace runs: of bounds tracing knows, NumPy's arrays as the
    trace's constants (CenterNet's gaussian2D, then sliced at a box only the run knows: a
    concrete array cannot take such an index); any other index is NumPy's own."""

    def __init__(self, real):
        self.real = real

    def __getitem__(self, key):
        if not _traced_call_site():
            return self.real[key]
        # bounds only the run knows (a radius from the data) size the grid: as np.arange's
        for k in key if isinstance(key, tuple) else (key,):
            for v in (k.start, k.stop, k.step) if isinstance(k, slice) else (k,):
                _known_number(v.value() if isinstance(v, Extent) else v, "a bound of np.ogrid or np.mgrid")
        grid = self.real[key]
        return tuple(as_tracer(g) for g in grid) if isinstance(grid, tuple) else as_tracer(grid)


class _Concatenator:
    """np.r_ and np.c_ while a trace runs: an index of traced values is NumPy's concatenation of
    them (arrays made at least ndmin-d, 1-d ones turned to axis trans1d, scalars not upcasting
    the arrays); any other index is NumPy's own."""

    def __init__(self, real, axis, ndmin, trans1d):
        self.real, self.axis, self.ndmin, self.trans1d = real, axis, ndmin, trans1d

    def __getitem__(self, key):
        items = key if isinstance(key, tuple) else (key,)
        if not _traced_call_site() or not holds_traced(items):
            return self.real[key]
        objs, kinds = [], []
        for item in items:
            if isinstance(item, str):
                raise unsupported("np.r_ or np.c_ with a string directive on traced values",
                                  "use np.concatenate or np.stack")
            if type(item) in np.ScalarType:  # a Python or NumPy scalar: (1,)*ndmin, no upcast
                objs.append((item, False))
                kinds.append(item)
                continue
            t = as_tracer(self.real[item] if isinstance(item, slice) else item)  # a slice: its arange
            objs.append((t, True))
            kinds.append(t._weak(0) if t._weak is not None else t.dtype)
        dtype = np.result_type(*kinds)
        return concatenate([self._shaped(as_tracer(o, dtype), turn) for o, turn in objs], axis=self.axis)

    def _shaped(self, t, turn):
        """np.array(t, ndmin=ndmin), an array's axes turned as NumPy turns one of fewer."""
        n = t.ndim
        if n >= self.ndmin:
            return t
        t = t.reshape((1,) * (self.ndmin - n) + tuple(t.shape))
        if turn and self.trans1d != -1:
            k2, k1 = self.ndmin - n, self.trans1d
            k1 = k1 + k2 + 1 if k1 < 0 else k1
            axes = list(range(self.ndmin))
            t = t.transpose(axes[:k1] + axes[k2:] + axes[k1:k2])
        return t


def _traced_call(args, kwargs=None):
    """Whether a call, in a trace, has a traced argument (else the real function runs, which
    could do nothing with one)."""
    return current_trace() is not None and any(isinstance(a, Tracer) for a in (*args, *(kwargs or {}).values()))


# math's functions on traced values: NumPy's ufunc on the values as float64 (what math computes
# in), the result as math gives it (a float, an int or a bool). Where math raises ValueError for
# an argument outside the domain the value is not known while tracing: NumPy's NaN stands instead;
# floor, ceil and trunc of NaN or infinity raise when the function runs, as int() does
_MATH = {
    "exp": (np.exp, float), "expm1": (np.expm1, float), "log2": (np.log2, float), "log10": (np.log10, float),
    "log1p": (np.log1p, float), "sqrt": (np.sqrt, float), "sin": (np.sin, float), "cos": (np.cos, float),
    "tan": (np.tan, float), "asin": (np.arcsin, float), "acos": (np.arccos, float), "atan": (np.arctan, float),
    "sinh": (np.sinh, float), "cosh": (np.cosh, float), "tanh": (np.tanh, float), "asinh": (np.arcsinh, float),
    "acosh": (np.arccosh, float), "atanh": (np.arctanh, float), "atan2": (np.arctan2, float),
    "hypot": (np.hypot, float), "copysign": (np.copysign, float), "pow": (np.power, float),
    "fabs": (np.absolute, float), "floor": (np.floor, int), "ceil": (np.ceil, int), "trunc": (np.trunc, int),
    "isnan": (np.isnan, bool), "isinf": (np.isinf, bool), "isfinite": (np.isfinite, bool),
}
_PYTHON_DTYPES = {float: np.float64, int: np.int64, bool: np.bool_}


def _math(real, uf, result):
    def traced(*args):
        x = args[0]
        if (real.__name__ == "trunc" and isinstance(x, Tracer) and x._weak is None
                and not (x._scalar and x.dtype == np.float64)):
            # (of NumPy's scalars only float64, a Python float, has __trunc__)
            raise TypeError(f"type numpy.{x.dtype.name if x._scalar else 'ndarray'} doesn't define __trunc__ method")
        values = [a.astype(np.float64) if isinstance(a, Tracer) else float(a) for a in args]
        if uf is np.log and len(values) == 2:  # log(x, base)
            r = np.log(values[0]) / np.log(values[1])
        else:
            r = uf(*values)
            if result is int:  # (Python's floor, ceil and trunc of NaN, infinity or past int64 raise, as int() does)
                check_int_of_float(r, f"math.{real.__name__}()")
            r = r.astype(_PYTHON_DTYPES[result])
        if r.ndim == 0:
            r._weak, r._scalar = result, False  # a Python number, as math returns
        return r

    @functools.wraps(real)
    def call(*args):
        return traced(*args) if _traced_call(args) else real(*args)

    return call


def _vectorize_call(real):
    """np.vectorize(f)(x) of traced arrays: f runs once on the whole arrays, whose operators and
    NumPy and math functions are elementwise, instead of once per element; the result broadcast
    to the arguments' shape, in otypes[0] where given."""

    @functools.wraps(real)
    def call(self, *args, **kwargs):
        if not _traced_call(args, kwargs):
            return real(self, *args, **kwargs)
        if self.signature is not None or self.excluded or (self.otypes and len(self.otypes) != 1):
            raise unsupported("np.vectorize with signature=, excluded= or several otypes on traced values",
                              "write the function on whole arrays")
        shape = np.broadcast_shapes(*(np.shape(a) for a in (*args, *kwargs.values())))
        r = self.pyfunc(*args, **kwargs)
        r = r if isinstance(r, Tracer) else as_tracer(r)
        if self.otypes:
            r = r.astype(self.otypes[0])
        elif isinstance(r, Tracer) and r._weak is not None:  # a Python number per element: its dtype
            r = r.astype(_PYTHON_DTYPES[r._weak])
        return np.broadcast_to(r, shape).copy()

    return call


def _as_strided(real):
    """numpy.lib.stride_tricks.as_strided, a view of a traced array too (_shapes.as_strided)."""

    @functools.wraps(real)
    def call(x, shape=None, strides=None, subok=False, writeable=True):
        if not isinstance(x, Tracer):
            return real(x, shape, strides, subok, writeable)
        return as_strided(x, shape, strides, writeable)

    return call


def _sliding_window_view(real):
    """numpy.lib.stride_tricks.sliding_window_view of a traced array: NumPy's read-only view of
    its windows (a NumPy port of CenterNet's 3x3 max-pool NMS), made as NumPy makes it, with
    as_strided."""

    @functools.wraps(real)
    def call(x, window_shape, axis=None, *, subok=False, writeable=False):
        if not isinstance(x, Tracer):
            return real(x, window_shape, axis, subok=subok, writeable=writeable)
        window = tuple(window_shape) if np.iterable(window_shape) else (window_shape,)
        if any(w < 0 for w in window):
            raise ValueError("`window_shape` cannot contain negative values")
        if axis is None:
            if len(window) != x.ndim:
                raise ValueError(f"Since axis is `None`, must provide window_shape for all dimensions of `x`; got "
                                 f"{len(window)} window_shape elements and `x.ndim` is {x.ndim}.")
            axis = tuple(range(x.ndim))
        else:
            axis = normalize_axis_tuple(axis, x.ndim, allow_duplicate=True)
            if len(window) != len(axis):
                raise ValueError(f"Must provide matching length window_shape and axis; got {len(window)} "
                                 f"window_shape elements and {len(axis)} axes elements.")
        shape = list(x.shape)
        for ax, dim in zip(axis, window):
            if shape[ax] < dim:
                raise ValueError("window shape cannot be larger than input array shape")
            shape[ax] -= dim - 1
        return as_strided(x, tuple(shape) + window, tuple(x.strides) + tuple(x.strides[ax] for ax in axis), writeable)

    return call


_REAL = {(np, name): getattr(np, name) for name in CREATION}
_WRAPPED = {(np, name): _creation(fn, _REAL[(np, name)]) for name, fn in CREATION.items()}
for _name in ("rand", "randn", "random", "random_sample", "uniform", "normal", "randint", "choice",
              "permutation", "shuffle", "standard_normal", "integers", "beta", "binomial", "poisson",
              "exponential"):
    if hasattr(np.random, _name):
        _REAL[(np.random, _name)] = getattr(np.random, _name)
        _WRAPPED[(np.random, _name)] = _refused(
            _REAL[(np.random, _name)], f"np.random.{_name} inside a compiled function (it would be drawn once, at "
            "trace time)", "draw the random values outside and pass them as arguments")
for _name, (_uf, _result) in _MATH.items():
    _REAL[(math, _name)] = getattr(math, _name)
    _WRAPPED[(math, _name)] = _math(_REAL[(math, _name)], _uf, _result)
for _name in ("gcd", "lcm", "factorial", "comb", "perm", "isqrt"):  # (they read an int subclass's int value)
    _REAL[(math, _name)] = getattr(math, _name)
    _WRAPPED[(math, _name)] = _refused(_REAL[(math, _name)], f"math.{_name}() of a length known only when the "
                                       "function runs", "compute it with NumPy on the length",
                                       lambda *args: any(isinstance(a, Extent) for a in args))
_REAL[(math, "log")] = math.log
_WRAPPED[(math, "log")] = _math(math.log, np.log, float)
for _name, _fn in (("concatenate", concatenate), ("vstack", vstack), ("hstack", hstack), ("dstack", dstack),
                   ("column_stack", column_stack), ("lexsort", lexsort)):
    _REAL[(np, _name)] = getattr(np, _name)
    _WRAPPED[(np, _name)] = _joining(_REAL[(np, _name)], _fn)
_REAL[(np, "stack")] = np.stack
_WRAPPED[(np, "stack")] = _stacking(np.stack, stack)
_REAL[(np, "repeat")] = np.repeat
_WRAPPED[(np, "repeat")] = _counted(np.repeat, repeat)
_REAL[(np, "r_")], _REAL[(np, "c_")] = np.r_, np.c_
_WRAPPED[(np, "r_")], _WRAPPED[(np, "c_")] = _Concatenator(np.r_, 0, 1, -1), _Concatenator(np.c_, -1, 2, 0)
_REAL[(np, "ogrid")], _REAL[(np, "mgrid")] = np.ogrid, np.mgrid
_WRAPPED[(np, "ogrid")], _WRAPPED[(np, "mgrid")] = _Grid(np.ogrid), _Grid(np.mgrid)
_REAL[(builtins, "print")] = builtins.print
_WRAPPED[(builtins, "print")] = _print(builtins.print)
_REAL[(warnings, "warn")] = warnings.warn
for _name in ("debug", "info", "warning", "error", "critical", "exception", "log"):
    _REAL[(logging.Logger, _name)] = getattr(logging.Logger, _name)
    _WRAPPED[(logging.Logger, _name)] = _log(_REAL[(logging.Logger, _name)])
_WRAPPED[(warnings, "warn")] = _warn(warnings.warn)
for _name in ("errstate", "seterr"):
    _REAL[(np, _name)] = getattr(np, _name)
    _WRAPPED[(np, _name)] = _refused(_REAL[(np, _name)], f"np.{_name}() with 'raise' or 'call' inside a compiled "
                                     "function (its kernels check no floating-point errors)",
                                     "check the results for inf or NaN instead", _raising)
_REAL[(np.vectorize, "__call__")] = np.vectorize.__call__
_WRAPPED[(np.vectorize, "__call__")] = _vectorize_call(np.vectorize.__call__)
_REAL[(np.lib.stride_tricks, "as_strided")] = np.lib.stride_tricks.as_strided
_WRAPPED[(np.lib.stride_tricks, "as_strided")] = _as_strided(np.lib.stride_tricks.as_strided)
_REAL[(np.lib.stride_tricks, "sliding_window_view")] = np.lib.stride_tricks.sliding_window_view
_WRAPPED[(np.lib.stride_tricks, "sliding_window_view")] = _sliding_window_view(
    np.lib.stride_tricks.sliding_window_view)
# what changes from call to call with no argument's change: read once while tracing, every call
# would return the trace's value (the first call's time, a frozen draw)
_READ_ONCE = [(time, n) for n in ("time", "time_ns", "perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns",
                                  "process_time", "process_time_ns", "thread_time", "thread_time_ns", "localtime",
                                  "gmtime", "ctime", "asctime", "strftime")]
_READ_ONCE += [(os, "urandom"), (os, "getpid"), (uuid, "uuid1"), (uuid, "uuid4")]
_READ_ONCE += [(random, n) for n in dir(random) if getattr(getattr(random, n), "__self__", None) is random._inst]
READ_ONCE_WHY = ("inside a compiled function (it would be read once, at trace time, and every call would return "
                 "that value)", "read it outside and pass it as an argument")
# the clock's methods of the datetime types, which cannot stand in for them: refused where the
# rewritten code calls them (_control.callee)
READ_ONCE_METHODS = (datetime.datetime.now, datetime.datetime.utcnow, datetime.datetime.today, datetime.date.today)
for _module, _name in _READ_ONCE:
    _REAL[(_module, _name)] = getattr(_module, _name)
    _WRAPPED[(_module, _name)] = _refused(_REAL[(_module, _name)], f"{_module.__name__}.{_name}() {READ_ONCE_WHY[0]}",
                                          READ_ONCE_WHY[1])
_STAND_IN_IDS = {id(fn) for fn in _WRAPPED.values()}


def _length_guard(real):
    """A NumPy function strider stands in for no other way: refused where traced code passes it
    a run-time length (NumPy's code would read the int that is its bound: np.logspace(0, 1, n),
    np.prod(y.shape)); else NumPy's (it dispatches traced arrays to strider)."""

    @functools.wraps(real)
    def call(*args, **kwargs):
        if holds_length((args, kwargs)) and _traced_call_site():
            refuse_lengths(real.__name__, args, kwargs)
        return real(*args, **kwargs)

    return call


for _name in dir(np):
    _fn = getattr(np, _name)
    if (not _name.startswith("_") and (np, _name) not in _REAL and callable(_fn) and not isinstance(_fn, (type, np.ufunc))
            and getattr(_fn, "__module__", "").startswith("numpy")):
        _REAL[(np, _name)] = _fn
        _WRAPPED[(np, _name)] = _length_guard(_fn)
_BY_REAL_ID = {id(_REAL[key]): _WRAPPED[key] for key in _REAL}


def stands_in(fn):
    """Whether fn is one of the wrappers standing in the numpy module while a trace runs (they
    take traced values, in lists too, themselves)."""
    return id(fn) in _STAND_IN_IDS


class TracedNumpy:
    """Installs the wrappers in the numpy module while any thread traces."""

    _lock = threading.Lock()
    _depth = 0

    def __enter__(self):
        with self._lock:
            if TracedNumpy._depth == 0:
                for (module, name), fn in _WRAPPED.items():
                    setattr(module, name, fn)
            TracedNumpy._depth += 1

    def __exit__(self, *exc):
        with self._lock:
            TracedNumpy._depth -= 1
            if TracedNumpy._depth == 0:
                for (module, name), fn in _REAL.items():
                    setattr(module, name, fn)


@functools.lru_cache(maxsize=4096)
def _writes_globals(code):
    """Whether code (or a function or class defined in it) assigns or deletes a global."""
    return any(i.opname in ("STORE_GLOBAL", "DELETE_GLOBAL") for i in dis.get_instructions(code)) or any(
        _writes_globals(c) for c in code.co_consts if isinstance(c, types.CodeType))


_NUMPY_NAMES = {}  # id of a module's globals -> (their number, the names holding NumPy's functions)


def _numpy_names(g):
    """The names of g that hold NumPy's functions a wrapper stands in for, found again where g's
    number of names changed (a function the compiled one calls is cloned on every call)."""
    found = _NUMPY_NAMES.get(id(g))
    if found is None or found[0] != len(g):
        found = _NUMPY_NAMES[id(g)] = (len(g), [k for k, v in g.items() if id(v) in _BY_REAL_ID])
    return found[1]


def with_traced_numpy(fn):
    """fn, with names it imported straight from numpy (`from numpy import zeros`) rebound to the
    wrappers; fn itself when it has none."""
    if isinstance(fn, types.MethodType):
        return types.MethodType(with_traced_numpy(fn.__func__), fn.__self__)
    g = getattr(fn, "__globals__", None)  # None for builtins (np.max), partials, callable objects
    if g is None or not (names := _numpy_names(g)) or _writes_globals(fn.__code__):
        return fn  # (a clone's writes would go to its copy of the globals)
    swapped = g.copy()
    for k in names:
        swapped[k] = _BY_REAL_ID.get(id(g.get(k)), g.get(k))
    clone = types.FunctionType(fn.__code__, swapped, fn.__name__, fn.__defaults__, fn.__closure__)
    clone.__kwdefaults__ = fn.__kwdefaults__
    return clone
