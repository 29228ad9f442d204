"""NumPy as a traced function sees it: creation functions (np.zeros & co.) that record into the
trace, random functions refused."""
import functools
import sys
import threading
import types

import numpy as np

from ._errors import _internal, unsupported
from ._ops import CREATION
from ._tracer import current_trace


def _creation(traced, real):
    """np.zeros & co. take no array, so NumPy cannot dispatch them to a Tracer: while a trace
    runs, these wrappers stand in the numpy module and record into the trace of their thread
    when called from user code; any other caller gets NumPy's own function."""

    @functools.wraps(real)
    def call(*args, **kwargs):
        if current_trace() is None or _internal(sys._getframe(1).f_code.co_filename):
            return real(*args, **kwargs)
        return traced(*args, **kwargs)

    return call


def _refused(real, module):
    """Random numbers would be drawn once while tracing and then replayed as constants on every
    call: refuse them in traced code instead of answering wrongly."""

    @functools.wraps(real)
    def call(*args, **kwargs):
        if current_trace() is None or _internal(sys._getframe(1).f_code.co_filename):
            return real(*args, **kwargs)
        raise unsupported(f"{module}.{real.__name__} inside a compiled function (it would be drawn once, "
                          "at trace time)", "draw the random values outside and pass them as arguments")

    return call


_REAL = {(np, name): getattr(np, name) for name in CREATION}
_WRAPPED = {(np, name): _creation(fn, _REAL[(np, name)]) for name, fn in CREATION.items()}
for _name in ("rand", "randn", "random", "random_sample", "uniform", "normal", "randint", "choice",
              "permutation", "shuffle", "standard_normal", "integers", "beta", "binomial", "poisson",
              "exponential"):
    if hasattr(np.random, _name):
        _REAL[(np.random, _name)] = getattr(np.random, _name)
        _WRAPPED[(np.random, _name)] = _refused(_REAL[(np.random, _name)], "np.random")
_BY_REAL_ID = {id(_REAL[key]): _WRAPPED[key] for key in _REAL}


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


def with_traced_numpy(fn):
    """fn, with names it imported straight from numpy (`from numpy import zeros`) rebound to the
    wrappers; fn itself when it has none."""
    g = getattr(fn, "__globals__", None)  # None for builtins (np.max), partials, callable objects
    if g is None or not any(id(v) in _BY_REAL_ID for v in g.values()):
        return fn
    swapped = {k: _BY_REAL_ID.get(id(v), v) for k, v in g.items()}
    clone = types.FunctionType(fn.__code__, swapped, fn.__name__, fn.__defaults__, fn.__closure__)
    clone.__kwdefaults__ = fn.__kwdefaults__
    return clone
