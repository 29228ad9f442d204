"""strider: a tracing JIT for NumPy post-processing code with in-place writes through views."""
from ._api import CompiledFunction, Explanation, compile
from ._errors import GraphBreakWarning, RunTimeBreakError, ScheduleError, StriderError, TraceError, UnsupportedError

__version__ = "0.1.0"
__all__ = ["compile", "CompiledFunction", "Explanation", "GraphBreakWarning", "RunTimeBreakError", "ScheduleError",
           "StriderError", "TraceError", "UnsupportedError"]
