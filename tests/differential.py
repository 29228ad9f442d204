"""The differential harness of the test suite: run a function in NumPy and through strider on
clones of the same arguments and compare everything (strider.testing.compare_calls)."""
import os

import numpy as np
import pytest

import strider
from strider import _C
from strider.testing import clone_args, compare, compare_calls, leaves

SUPPORTED_DTYPES = {np.dtype(name) for name in _C.dtype_names()}  # csrc/ir/dtypes.def
# STRIDER_TEST_TARGET=cuda: every check() runs its function on the GPU (NumPy arguments copied
# there and back); tests/gpu runs the e2e suite so, on a GPU or on the emulated device
TARGET = os.environ.get("STRIDER_TEST_TARGET", "cpu")


def assert_same(expected, got, rtol=0.0, atol=0.0, what="result"):
    compare(expected, got, rtol, atol, what)


def check(fn, *args, rtol=0.0, atol=0.0, static_argnames=(), calls=1, strict=True, **kwargs):
    """Compare `fn(*args, **kwargs)` in NumPy and under strider.compile; return the compiled fn.

    `calls` > 1 calls the compiled function again on fresh copies (exercises the cache). Every
    call also runs in the other extreme legal order of the DAG, which must agree. `strict`
    False lets a graph break run the call in NumPy (still compared).
    """
    compiled = strider.compile(fn, static_argnames=static_argnames, target=TARGET, strict=strict)
    # the device runs stages in program order; the reference's other order is a CPU check
    orders = ("program",) if TARGET == "cuda" else ("program", "latest")
    for _ in range(calls):
        np_args = clone_args((args, kwargs))
        with np.errstate(all="ignore"):
            expected = fn(*np_args[0], **np_args[1])
        if any(isinstance(e, (np.ndarray, np.generic)) and e.dtype not in SUPPORTED_DTYPES
               for e in leaves(expected)):
            # NumPy answers in a dtype strider does not carry (complex, ...): say so
            with pytest.raises(strider.UnsupportedError):
                compiled(*args, **kwargs)
            return compiled
        for order in orders:
            st_args = clone_args((args, kwargs))
            with _exec_order(order):
                got = compiled(*st_args[0], **st_args[1])
            compare_calls(expected, got, np_args, st_args, rtol, atol)
    return compiled


class _exec_order:
    def __init__(self, order):
        self.latest = order == "latest"

    def __enter__(self):
        self.saved = _C.exec_order_latest()
        _C.set_exec_order(self.latest)

    def __exit__(self, *exc):
        _C.set_exec_order(self.saved)


def check_raises(fn, *args, exc, static_argnames=(), **kwargs):
    """NumPy raises `exc`; strider must raise it too (at trace, compile or run time)."""
    np_args, np_kwargs = clone_args((args, kwargs))
    with pytest.raises(exc), np.errstate(all="ignore"):
        fn(*np_args, **np_kwargs)
    st_args, st_kwargs = clone_args((args, kwargs))
    with pytest.raises(exc):
        strider.compile(fn, static_argnames=static_argnames, target=TARGET)(*st_args, **st_kwargs)
