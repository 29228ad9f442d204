"""strider's exceptions and the user source location they report."""
import functools
import contextlib
import os
import re
import sys
import sysconfig
import threading

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))
_NUMPY_DIR = None


@functools.lru_cache(maxsize=1024)
def _internal(filename):
    """Whether code of this file is strider's or NumPy's (asked for every frame of every op traced)."""
    global _NUMPY_DIR
    if _NUMPY_DIR is None:
        import numpy

        _NUMPY_DIR = os.path.dirname(os.path.abspath(numpy.__file__))
    path = os.path.abspath(filename)
    return path.startswith(_PKG_DIR + os.sep) or path.startswith(_NUMPY_DIR + os.sep) or filename.startswith("<__array_function__")


_LIBRARY_DIRS = tuple({sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")})


def user_file(filename):
    """Whether code of this file is the user's (not strider's, NumPy's, the standard library's or
    an installed package's, nor made by exec)."""
    return not (_internal(filename) or filename.startswith(_LIBRARY_DIRS) or filename.startswith("<")
                or any(f"{os.sep}{d}{os.sep}" in filename for d in ("site-packages", "dist-packages")))  # (a venv's)


def user_class(cls):
    """Whether the user's code defines the class (TF OD API's BoxList, DeepSORT's Detection): its
    module's file is the user's (builtins have none)."""
    file = getattr(sys.modules.get(cls.__module__), "__file__", None)
    return bool(file) and user_file(file)


_located = threading.local()


@contextlib.contextmanager
def located(code, line=None):
    """Names the first line of a code object (None: nothing), or its `line`, as the user's
    location while strider works on what the user's function returned (its frame is gone: the
    innermost user frame is the caller's)."""
    before = getattr(_located, "at", None)
    _located.at = (code.co_filename, line or code.co_firstlineno) if code is not None else before
    try:
        yield
    finally:
        _located.at = before


def user_location():
    """(file, line) of the innermost frame outside strider and NumPy: the user's line."""
    if (at := getattr(_located, "at", None)) is not None:
        return at
    frame = sys._getframe(1)
    while frame is not None and _internal(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None:
        return "<unknown>", 0
    return frame.f_code.co_filename, frame.f_lineno


def where():
    """'file.py:12' for messages; where that is a library's line (an installed package's, the
    standard library's), the user's line that led there, naming the library's: 'kalman.py:41 (in
    scipy.linalg._decomp_cholesky, _decomp_cholesky.py:88)'."""
    file, line = user_location()
    at = f"{os.path.basename(file)}:{line}"
    if getattr(_located, "at", None) is not None or user_file(file):
        return at
    frame, library = sys._getframe(1), None
    while frame is not None and not user_file(frame.f_code.co_filename):
        if library is None and not _internal(frame.f_code.co_filename):
            library = frame.f_globals.get("__name__", "?")
        frame = frame.f_back
    if frame is None:
        return at
    return f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno} (in {library}, {at})"


class StriderError(Exception):
    """Base class of every error strider raises about the user's code."""


class UnsupportedError(StriderError):
    """The function uses a NumPy feature strider does not compile (yet)."""


class ScheduleError(StriderError, ValueError):
    """A schedule primitive does not apply: the message names it, the loop and the reason."""


class RunTimeBreakError(StriderError, ValueError):
    """strict=True: a call whose run met values where NumPy's semantics part from the compiled
    program's (a run-time length of 1 NumPy broadcasts, an empty list made an array, ...), which
    strict=False runs in NumPy; a ValueError, as it was before it had a class of its own."""


class TraceError(StriderError):
    """The function does something a trace cannot represent, such as Python control flow that
    depends on the value of an array."""


class GraphBreakWarning(UserWarning):
    """A call runs in NumPy: its trace met what strider cannot capture (a TraceError or an
    UnsupportedError, which strict=True raises instead). Said once per function and reason."""


# told of each refusal made (_tracer's _refusal_made: whether a `try` of the traced function may
# catch it)
REFUSALS_MADE = []


def _made(error):
    for told in REFUSALS_MADE:
        told(error)
    return error


def unsupported(what, instead):
    return _made(UnsupportedError(f"{where()}: {what} is not supported by strider.compile; {instead}"))


# the rewrite's own variables, named in messages as the user sees them
_SHOWN = {"__strider_return": "the value a function returns", "__strider_ifexp": "the value of an `a if c else b`",
          "__strider_boolop": "the value of an `a and b` (`or`)", "__strider_list": "the list a comprehension builds"}


def trace_error(what, instead):
    what = re.sub(r"'(__strider_\w+?)(\[\d+\]|\[\.\.\.\])?(\.\w+)?'", lambda m: _SHOWN.get(re.sub(r"_\d+$", "", m.group(1)), m.group(1)) + (
        "" if not m.group(2) else " (indexed)" if m.group(2) == "[...]" else f" (its item {m.group(2)[1:-1]})") + (
        f" (its attribute {m.group(3)[1:]})" if m.group(3) else ""), what)
    return _made(TraceError(f"{where()}: {what}; {instead}"))
