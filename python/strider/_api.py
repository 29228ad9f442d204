"""strider.compile and CompiledFunction: the API over the dispatcher (C++: csrc/python/dispatcher.h),
which owns every call and enters Python only to trace a new signature (CompiledFunction._trace)."""
import atexit
import functools
import importlib
import inspect
import logging
import math
import os
import pickle
import re
import sys
import traceback
import warnings
import weakref

import numpy as np

from . import _C, _control, _cuda
from ._convert import converted, slice_bound_parameters
from ._capture import _MISSING, Capture, by_type, replay, source_name, static_sources
from ._errors import (GraphBreakWarning, RunTimeBreakError, ScheduleError, StriderError, TraceError, UnsupportedError,
                      located, trace_error, unsupported, user_file)
from ._explain import Explanation, GraphBreakExplanation
from ._frozen import Frozen, Identity, Plain
from ._results import Entry, GraphBreak, caller_owned, flatten_result
from ._traced_numpy import TracedNumpy, with_traced_numpy, without_random_states
from ._tracer import DTYPES_TAKEN, IR_DTYPES, Specialize, Trace, Tracer, check_dtype, current_trace

_TARGETS = ("cpu", "cuda", "auto")
_STAND_INS = re.compile(r"'(Tracer|TracedList|TracedRows|TracedSlice|Extent|Choice)'")  # in Python's TypeErrors
_LOG = logging.getLogger("strider")
_MAX_TRIP_FACTOR = 4 ** 8  # (room for 65,536 times the trips a first trace gave loops)
_NUMBERS_ARRAY = _C.numbers_array_elements  # elements of an int array the caller passes that a trace may need as values, made static
_RETRACES = 16  # traces before a function that reuses its programs less often runs new signatures in NumPy
_SAME_BREAKS = 3  # traces in a row that broke the graph for one reason, after which new signatures run in NumPy


# -- arguments: what the dispatcher (C++) refuses, named --

def _refuse_leaves(leaves):
    """Raises the UnsupportedError that names the argument the dispatcher could not take."""
    raise unsupported(*_leaves_refusal(leaves))


def _leaves_refusal(leaves):
    """What of the arguments the dispatcher could not take, and what to do instead."""
    arrays = [(i, a) for i, a in enumerate(leaves) if isinstance(a, np.ndarray)]
    for i, a in enumerate(leaves):
        if isinstance(a, (np.ndarray, np.generic, _C.DeviceArray)) and a.dtype.newbyteorder("=") not in IR_DTYPES:
            return f"argument {i} of dtype {a.dtype}", DTYPES_TAKEN
    devices = [(i, a) for i, a in enumerate(leaves) if isinstance(a, _C.DeviceArray)]
    for i, a in devices:
        if any(s % a.dtype.itemsize for s in a.strides):
            return f"argument {i} with strides that are not a multiple of its itemsize", "pass a contiguous copy"
    if devices:
        return ("arrays in GPU memory that share memory with different dtypes or at offsets that are not a multiple "
                "of their itemsize", "pass one of them as a copy")
    for i, a in arrays:
        if not a.dtype.isnative:
            return (f"argument {i} in non-native byte order ({a.dtype.str})",
                    f"pass .astype(np.{a.dtype.newbyteorder('=').name})")
        if any(s % a.itemsize for s in a.strides):
            return (f"argument {i} with strides that are not a multiple of its itemsize",
                    "pass a copy (np.ascontiguousarray)")
    for (i, a), (j, b) in ((x, y) for x in arrays for y in arrays if x[0] < y[0]):
        if a.dtype != b.dtype and np.shares_memory(a, b):
            return (f"arguments {i} and {j} share memory with different dtypes ({a.dtype}, {b.dtype})",
                    "pass one of them as a copy")
    return ("arguments that share memory at offsets that are not a multiple of their itemsize",
            "pass one of them as a copy")


def _returned_containers(value, params, path=()):
    """(path, parameter index) of each list or dict the caller passed that the result holds
    itself (YOLOv5's `output[xi] = x; return output`, with output passed): NumPy's result is the
    caller's object, where strider's would be built anew (capture.replay puts it back)."""
    for k, p in enumerate(params):
        if value is p and type(p) in (list, dict):
            return [(path, k)]
    if type(value) in (tuple, list) and len(path) < 4:
        return [x for i, v in enumerate(value) for x in _returned_containers(v, params, path + (i,))]
    return []


class CompiledFunction(_C.Dispatcher):
    """A function compiled by strider.compile; call it like the original. Its calls are the
    dispatcher's (C++: csrc/python/dispatcher.h), which enters Python only to trace a new
    signature (_trace)."""

    def __init__(self, fn, target="cpu", static_argnames=(), cache=True, schedule=None,
                 max_signatures=64, constants=(), strict=None, dynamic=None):
        if target not in _TARGETS:
            raise ValueError(f"strider.compile: target {target!r} is not available; available: {_TARGETS}")
        if isinstance(static_argnames, str):
            static_argnames = (static_argnames,)
        if not (inspect.isroutine(fn) or isinstance(fn, (type, functools.partial))) and callable(fn):
            fn = fn.__call__  # an object with __call__ (SSD's transforms): that method, bound to it
        signature = inspect.signature(fn)
        unknown = set(static_argnames) - set(signature.parameters)
        if unknown:
            raise ValueError(f"strider.compile: static_argnames {sorted(unknown)} are not parameters of "
                             f"{fn.__name__}")
        if not (isinstance(max_signatures, int) and max_signatures >= 1):
            raise ValueError(f"strider.compile: max_signatures must be a positive int, not {max_signatures!r}")
        if dynamic not in (None, True, False):
            raise ValueError(f"strider.compile: dynamic must be None, True or False, not {dynamic!r}")
        params = [(p.name, int(p.kind), p.default is not p.empty, p.name in static_argnames)
                  for p in signature.parameters.values()]
        super().__init__(params, target, bool(cache), max_signatures)
        self._fn = fn
        self._signature = signature
        self._schedule = {int(k): str(v) for k, v in (schedule or {}).items()}
        self.target = target
        if isinstance(constants, str):
            constants = (constants,)
        self._options = dict(static_argnames=static_argnames, cache=cache, schedule=schedule,
                             max_signatures=max_signatures, constants=constants, strict=strict, dynamic=dynamic)
        self._strict = os.environ.get("STRIDER_STRICT", "0") == "1" if strict is None else bool(strict)
        self._said = set()  # the graph breaks warned about
        self._runtime_breaks = []  # why calls ran in NumPy after their program started (explain() lists them)
        self._trip_factor = 1  # room for loops' trips, grown where a call outgrew it (_outgrown)
        self._by_identity = False  # objects of the user's classes keyed by identity (_capture.by_type)
        self._breaks = []  # why each trace since the last that made a program broke the graph (_breaking)
        # arrays whose rows are a run-time length (_rows_that_vary): their leaf ordinals, the
        # (dtype, shape) each ordinal had in the latest trace, and whether a trace refused them
        self._dynamic = dynamic
        self._run_time_rows, self._rows_seen, self._rows_refused = set(), {}, False
        self._constants = tuple(constants)
        self._gpu = None
        functools.update_wrapper(self, fn)
        # the data it reads besides its arguments, read on every call (_capture.py)
        self._sources = static_sources(fn, self._constants)
        self._set_sources(self._sources)

    # the dispatcher's table (tests read its length under this name too)
    _fast = _C.Dispatcher._cache

    def explain(self, *args, **kwargs):
        """The IR, storages, dependency tables and DAG edges strider uses for this call."""
        entry, _ = self._lookup(args, kwargs)
        if isinstance(entry, GraphBreak):
            return GraphBreakExplanation(entry.reason)
        params = list(self._signature.parameters)
        return Explanation(entry.program, entry.cuda, [source_name(s, params) for s in self._sources],
                           self._runtime_breaks)

    def cuda_source(self, *args, **kwargs):
        """The CUDA C strider emits for this call's stages as target="cuda" makes them, as one
        listing: each stage's kernels after a `// stage N` line, or that line with the reason the
        CUDA backend refuses it."""
        entry, _ = self._on_gpu()._lookup(args, kwargs)
        parts = []
        for i, stage in enumerate(_C.cuda_source(entry.program)):
            if isinstance(stage, str):
                parts.append(f"// stage {i}: not compiled for CUDA: {stage}\n")
            else:
                parts.append(f"// stage {i}: " + ", ".join(f"{l.kernel}<<<{l.blocks}, {l.threads}>>>" for l in stage.launches)
                             + "\n" + stage.source)
        return "\n".join(parts)

    def _on_gpu(self):
        """This function compiled with target="cuda" (itself, when it is): a GPU runs a stage's
        points at once, so its stages are fused differently."""
        if self.target == "cuda":
            return self
        if self._gpu is None:
            self._gpu = _CudaFunction(self._fn, target="cuda", **self._options)
        return self._gpu

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def __reduce__(self):
        """Pickles by reference (module and qualified name) where the module holds this compiled
        function under its name, else as strider.compile of the function (by reference where
        importable, by value through cloudpickle otherwise) with the same options; a process
        that loads it traces on its first call and finds the stages in the disk cache."""
        if _importable(self._fn) is self:
            return _imported, (self._fn.__module__, self._fn.__qualname__)
        fn = self._fn
        if _importable(fn) is not fn:
            try:
                import cloudpickle
            except ImportError:
                raise pickle.PicklingError(
                    f"strider.compile: {self.__name__} is not importable by name (a lambda, a closure or a local "
                    "function): install cloudpickle to pickle it by value") from None
            fn = _ByValue(cloudpickle.dumps(fn))
        return _compiled, (fn, self.target, self._options)

    def _inline(self, args, kwargs):
        """A call made while this thread traces: the outer trace records these ops too and may
        fuse across the call."""
        return converted(with_traced_numpy(self._fn), _control)(*args, **kwargs)

    def _outgrown(self, entry, args, kwargs):
        """A call whose loop filled a list past the room traced for it (the dispatcher caught
        LoopBoundExceeded; nothing the call did reached the caller): every signature is traced
        again with four times the room, and the call runs anew; past _MAX_TRIP_FACTOR, more room
        has not helped, and the call runs in NumPy."""
        if self._trip_factor >= _MAX_TRIP_FACTOR:
            return self._numpy_at_run_time(f"a list filled at run time in {self.__name__} outgrew its room again "
                                           f"after {self.stats()['regrown']} traces with more", args, kwargs)
        self._trip_factor *= 4
        self._count("regrown", 1)
        _LOG.info("strider.compile: %s: a loop outgrew its lists' room; traced again with %dx", self.__name__,
                  self._trip_factor)
        self._set_sources(self._sources)  # forgets the traced signatures
        return self(*args, **kwargs)

    def _numpy_at_run_time(self, reason, args, kwargs):
        """A call whose run met values where NumPy's semantics part from the compiled program's (a
        run-time length of 1 that NumPy broadcasts and the program read as equal to another, an
        empty list made an array: the dispatcher caught RunInNumPy; the run put back what it
        wrote): this call runs in NumPy, and says so once per reason, as a graph break does.
        strict=True raises RunTimeBreakError (a ValueError) instead, but for NumPy's own error where
        a side of a branch that raised as it traced ran (NumPy raises it: an IndexError is one)."""
        if self._strict:
            if reason.endswith(_control.SIDE_RAISED):
                self._run_in_numpy(args, kwargs)
            raise RunTimeBreakError(reason)
        self._count("runtime_breaks", 1)
        if reason not in self._runtime_breaks:
            self._runtime_breaks.append(reason)
        self._say_once(reason, f"{reason}: this call ran in NumPy", stacklevel=3)
        return self._run_in_numpy(args, kwargs)

    def _check_changes(self, thawed, capture):
        """Refuses what a trace changed that a compiled call would not change again."""
        if any(_changed(frozen, copy) for frozen, copy in thawed):
            raise trace_error(f"{self._fn.__name__}() writes into an array the signature holds by value (a static "
                              "argument, or a few ints tracing needed as values): the write would happen once, as "
                              "it traces", "make it an argument that is not static")
        if capture.changes_defaults():
            raise trace_error(f"a change to a list or dict default of {self._fn.__name__}() (it would change once, as "
                              "the function traces)", "use None as the default and make the list in the function")
        if changed := capture.changed_inside():
            raise trace_error(f"{self._fn.__name__}() changes {', '.join(changed)} of an object in a list or dict "
                              "that it also changes, or that strider does not follow (the change would happen once, "
                              "as it traces)",
                              "keep the state in arrays the function takes and returns")
        if changed := capture.changed_classes():
            raise trace_error(f"a change to the class attribute {', '.join(changed)} (it would change once, as the "
                              "function traces)", "keep the state on an object or pass it in")

    def _bind_error(self, args, kwargs):
        """Raises inspect's TypeError for arguments that do not bind to the function's parameters."""
        self._signature.bind(*args, **kwargs)

    def _trace(self, sig):
        """Traces and lowers the function for a new signature `sig` (a _C.CallSignature); the
        dispatcher keeps the entry. None when the function read sources the call's walk did not
        (_capture.py): the dispatcher walks the call again with them. A function traced more
        often than its programs are reused runs new signatures in NumPy (_retraced)."""
        if not self._strict and (why := self._retraced() or self._breaking()) and self._numpy_runs(sig):
            return self._graph_break(why)
        if rows := self._rows_that_vary(sig):
            _LOG.info("strider.compile: %s: the rows of argument leaves %s change from call to call: a length known "
                      "at run time from now on", self.__name__, sorted(rows))
            self._run_time_rows |= rows
            self._set_run_time_rows(sorted(self._run_time_rows))
            return None
        try:
            entry = self._trace_and_lower(sig)
            if entry is not None and any(r >= 0 for r in sig.leaf_rows) and (why := _slow_rows(entry.program)):
                return self._refuse_rows(f"{why} over many points")
            if entry is not None:
                self._breaks.clear()
            return entry
        except BaseException as e:
            capture = getattr(self, "_capture", None)
            if capture is not None:  # the trace's writes on objects go: they hold its Tracers
                capture.undo()
            if isinstance(e, Exception) and any(r >= 0 for r in sig.leaf_rows):
                # what the function does with the rows needs their count while tracing: each
                # count is a signature again (one that NumPy raises for raises so again)
                return self._refuse_rows(f"it failed ({e})")
            if isinstance(e, TypeError) and _STAND_INS.search(str(e)):
                # Python code that takes real values only (memoryview, del lst[0] of a list a
                # traced loop filled) met strider's stand-in for one: NumPy's run has the values
                frames = [f for f, _ in traceback.walk_tb(e.__traceback__) if user_file(f.f_code.co_filename)]
                at = f"{os.path.basename(frames[-1].f_code.co_filename)}:{frames[-1].f_lineno}: " if frames else ""
                e = TraceError(f"{at}TypeError ({e}): Python needs the value itself there, known only when the "
                               "function runs; use NumPy functions on traced arrays")
            if self._strict or not isinstance(e, (TraceError, UnsupportedError)) or not self._numpy_runs(sig):
                raise e
            self._breaks.append(str(e))
            return self._graph_break(e)
        finally:
            self._capture = None

    def _refuse_rows(self, why):
        """Every count of rows a signature of its own from now on (a trace with run-time rows
        failed, or made a slow program): None, so that the dispatcher walks the call again."""
        _LOG.info("strider.compile: %s: with run-time rows, %s: every count of rows is a signature of its own from "
                  "now on", self.__name__, why)
        self._rows_refused = True
        self._set_run_time_rows([])
        return None

    def _rows_that_vary(self, sig):
        """The leaf ordinals of the host arrays of `sig` whose count of rows (two at least) is not
        the one the latest trace saw, the rest of their shape and their dtype the same (with
        dynamic=True: every such array's), and that are not yet of run-time rows: a length the
        caller changes from call to call (the boxes of each frame), traced once for all counts up
        to a bound (call_signature.h) instead of once for each. Only on the CPU, not with
        dynamic=False, and not after a trace with them failed."""
        if self.target != "cpu" or self._rows_refused or self._dynamic is False:
            return set()
        seen, vary = self._rows_seen, set()
        for i in range(sig.walked):
            leaf, ordinal = sig.leaves[i], sig.leaf_ordinal[i]
            if not isinstance(leaf, np.ndarray) or leaf.ndim < 1 or leaf.shape[0] < 2 or sig.leaf_rows[i] >= 0:
                continue
            kind = (leaf.dtype, leaf.shape[1:])
            if self._dynamic or (before := seen.get(ordinal)) is not None and before[0] == kind and before[1] != leaf.shape[0]:
                vary.add(ordinal)
            seen[ordinal] = (kind, leaf.shape[0])
        return vary - self._run_time_rows

    def _breaking(self):
        """Why a new signature should run in NumPy without a trace, else None: the last
        _SAME_BREAKS traces broke the graph for one reason (a call into SciPy, a user object
        returned), which a trace of another signature would meet again (DeepSORT's
        gate_cost_matrix, given new track objects each frame: 13-180 ms a frame to trace and
        break, against NumPy's 0.5)."""
        last = self._breaks[-_SAME_BREAKS:]
        if len(last) < _SAME_BREAKS or len(set(last)) > 1:
            return None
        return TraceError(f"{last[0]} (the last {_SAME_BREAKS} signatures traced broke the graph so: a new one runs in "
                          "NumPy without a trace)")

    def _retraced(self):
        """Why a new signature should run in NumPy rather than be traced, else None: past
        _RETRACES traces, more of them than calls its programs served (objects made anew for each
        call keyed by identity, a list's length or an array's shape that changes call after call:
        ByteTrack's fuse_score traced every frame, 3-10 ms against NumPy's 0.1)."""
        traces, hits = self._counted("traces"), self._counted("cache_hits")
        if traces <= _RETRACES or hits >= traces:
            return None
        return TraceError(f"{self.__name__} was traced for more than {_RETRACES} calls, more than its programs "
                          "served: a call of a new signature runs in NumPy (objects made anew for each call, a list's "
                          "length or an array's shape that changes from call to call make new signatures; "
                          "strict=True traces each)")

    @staticmethod
    def _numpy_runs(sig):
        """Whether NumPy can run the call: none of its arrays is in GPU memory."""
        return not any(isinstance(leaf, _C.DeviceArray) for leaf in sig.leaves)

    def _graph_break(self, error):
        """The entry of a signature whose trace met what strider cannot capture: its calls run as
        the function's own Python on the real arrays (NumPy's semantics by construction). Says so
        once per reason, in a GraphBreakWarning (and at INFO in the log)."""
        reason = str(error)
        self._count("graph_breaks", 1)
        self._say_once(reason, f"{reason}: the call runs in NumPy (a graph break), as does every call with these "
                               "argument types", stacklevel=4)
        return GraphBreak(reason)

    def _say_once(self, reason, what, stacklevel):
        """A GraphBreakWarning (and an INFO line) the first time `reason` sends calls to NumPy;
        stacklevel: the user's frame, counted from here."""
        if reason in self._said:
            return
        self._said.add(reason)
        message = f"strider.compile: {self.__name__}: {what}; strict=True raises instead"
        _LOG.info("%s", message)
        warnings.warn(message, GraphBreakWarning, stacklevel=stacklevel)

    def _argument_break(self, what, instead, stacklevel=3):
        """A call with an argument strider cannot take (a string or complex array, a set), or
        whose signature does not settle: strict=True raises UnsupportedError; else the call runs
        in NumPy, said once (a GraphBreakWarning), as a graph break."""
        error = unsupported(what, instead)
        if self._strict:
            raise error
        reason = str(error).split(": ", 1)[-1]
        if reason not in self._said:
            self._count("graph_breaks", 1)
        self._say_once(reason, f"{reason}: the call runs in NumPy", stacklevel=stacklevel)

    def _leaves_refused(self, leaves):
        """_argument_break for the arrays the dispatcher could not take (_leaves_refusal says
        why); arrays in GPU memory, which NumPy cannot run on, raise in every mode."""
        if any(isinstance(a, _C.DeviceArray) for a in leaves):
            _refuse_leaves(leaves)
        self._argument_break(*_leaves_refusal(leaves), stacklevel=4)

    def _run_in_numpy(self, args, kwargs):
        """A call of a signature that breaks (_graph_break): the function itself."""
        return self._fn(*args, **kwargs)

    def _trace_and_lower(self, sig):
        leaves = sig.leaves
        with Trace(self._fn.__name__) as trace, TracedNumpy():
            graph = trace.graph
            group_storage = [graph.add_storage(IR_DTYPES[dtype], extent, "arg", gi)
                             for gi, (dtype, extent) in enumerate(zip(sig.group_dtype, sig.group_extent))]
            arg_storages = {sid: ("group", gi) for gi, sid in enumerate(group_storage)}
            # the counts of run-time rows, int leaves after the walk's (call_signature.h)
            counts = {j: graph.add_storage(IR_DTYPES[np.dtype(np.int64)], 1, "arg", len(group_storage) + j)
                      for j in range(sig.walked, len(leaves))}
            numbers_arrays = {}  # storage -> leaf: int arrays a trace may make static (_NUMBERS_ARRAY)
            tracers = []
            for i, leaf in enumerate(leaves):
                if i in counts:
                    arg_storages[counts[i]] = ("scalar", i)
                    tracers.append(Tracer(trace, _C.View(counts[i], [], [], 0), np.dtype(np.int64), weak=int,
                                          readonly="arg"))
                elif isinstance(leaf, (np.ndarray, _C.DeviceArray)):
                    item = leaf.dtype.itemsize
                    shape, extents = list(leaf.shape), []
                    if (j := sig.leaf_rows[i]) >= 0:
                        shape[0] = _C.rows_bound(shape[0])
                        extents = [counts[j]] + [-1] * (leaf.ndim - 1)
                    view = _C.View(group_storage[sig.leaf_group[i]], shape, [s // item for s in leaf.strides],
                                   sig.leaf_offset[i], extents)
                    writeable = leaf.writeable if isinstance(leaf, _C.DeviceArray) else leaf.flags.writeable
                    tracers.append(Tracer(trace, view, leaf.dtype, readonly=None if writeable else "arg"))
                    if (isinstance(leaf, np.ndarray) and leaf.size <= _NUMBERS_ARRAY and leaf.dtype.kind in "iu"
                            and not extents and sig.leaf_group.count(sig.leaf_group[i]) == 1):
                        # a few ints of its own (feature shapes): like numbers, static where needed
                        trace.numbers_arrays.add(view.storage)
                        numbers_arrays[view.storage] = i
                else:
                    dtype = np.dtype(leaf.dtype if isinstance(leaf, np.generic) else
                                     {bool: np.bool_, int: np.int64, float: np.float64}[type(leaf)])
                    check_dtype(dtype, f"argument {i}")
                    sid = graph.add_storage(IR_DTYPES[dtype], 1, "arg", len(group_storage) + i)
                    arg_storages[sid] = ("scalar", i)
                    trace.scalar_arguments.add(sid)
                    weak = None if isinstance(leaf, np.generic) else type(leaf)
                    tracers.append(Tracer(trace, _C.View(sid, [], [], 0), dtype, weak=weak,
                                          scalar=isinstance(leaf, np.generic), readonly="arg"))
            posargs, kwargs = [], {}
            thawed = []  # (Frozen, the trace's copy of it)

            def thaw(v):
                """v with the trace's copies of the Frozen values in it (an argument's, or a small
                int array's inside the lists, tuples and dicts the call passed)."""
                if isinstance(v, Frozen):
                    thawed.append((v, v.thaw()))
                    return thawed[-1][1]
                if type(v) in (list, dict):  # in place: one the call passed twice stays one
                    for k, item in (v.items() if type(v) is dict else enumerate(v)):
                        v[k] = thaw(item)
                elif type(v) is tuple:
                    items = tuple(map(thaw, v))
                    return v if all(a is b for a, b in zip(items, v)) else items
                return v

            values = [without_random_states(thaw(v)) for v in sig.arguments(tracers[:sig.walked], _MISSING)]
            nparams = len(self._signature.parameters)
            bounds = slice_bound_parameters(self._fn)
            ahead = [i for i, t in enumerate(tracers) if t._view.storage in trace.scalar_arguments
                     and any(t is v for name, v in zip(self._signature.parameters, values) if name in bounds)]
            if ahead:  # (their values are needed for a shape: a trace would stop there)
                self._specialize_numbers(sig, ahead)
                return None
            capture = Capture(self._fn, list(self._signature.parameters), values[:nparams], self._sources,
                              values[nparams:], self._constants)
            self._capture = trace.capture = capture
            # a parameter the caller left out stays out: fn applies its own default, as in the
            # caller's call (NumPy's functions refuse some of their defaults passed explicitly:
            # np.sign(x, dtype=None, signature=None)); the ones after it then go by keyword
            by_keyword = False
            for value, (name, param) in zip(values, self._signature.parameters.items()):
                if value is _MISSING:
                    by_keyword = True
                elif param.kind == param.VAR_POSITIONAL:
                    posargs.extend(value)
                elif param.kind == param.VAR_KEYWORD:
                    kwargs.update(value)
                elif param.kind == param.KEYWORD_ONLY or by_keyword:
                    kwargs[name] = value
                else:
                    posargs.append(value)
            trace.target = self.target
            trace.trip_factor = self._trip_factor
            trace.longest_axis = max((d for t, leaf in zip(tracers, leaves)
                                      if isinstance(leaf, (np.ndarray, _C.DeviceArray)) for d in t._view.shape), default=0)
            try:
                try:
                    result = converted(with_traced_numpy(self._fn), _control)(*posargs, **kwargs)
                    # (found after the function returned: named at its first line, not the caller's)
                    with located(getattr(self._fn, "__code__", None)):
                        self._check_changes(thawed, capture)
                    if trace.refusals_in_try:  # caught by the function's own `except`: NumPy decides
                        raise trace.refusals_in_try[0]
                except Exception as e:
                    # Python code that needed a traced value and raised an error of its own for
                    # strider's refusal (struct.pack's 'f': struct.error) fails for that refusal
                    if trace.refused is not None and not isinstance(e, StriderError) and not capture.found:
                        raise trace.refused from e
                    raise
            except Specialize as s:  # numbers the caller passes are needed as values
                capture.restore()
                capture.undo()
                self._specialize_numbers(sig, _with_siblings(sig, [numbers_arrays[sid] if sid in numbers_arrays else
                                                                   arg_storages[sid][1] for sid in s.storages]))
                return None
            except Exception:
                if not capture.found:
                    raise
                # it failed on a value read as a constant that is a source (`self.buf[:] = x`)
            finally:
                effects = capture.restore()
                self._count("region_tries", trace.region_tries)
            if capture.found:  # reads the walk did not make: walk the call again with them
                capture.undo()
                self._sources = self._sources + capture.found
                self._set_sources(self._sources)
                return None
            if not self._by_identity and (how := capture.uses_identity([result] + [v for _, _, v in effects])):
                _LOG.info("strider.compile: %s: %s; objects of the user's classes are keyed by identity from now on",
                          self.__name__, how)
                capture.undo()
                self._by_identity = True
                self._keep_by_identity()
                return None
            effects = effects + [("print", (-1, (fn, kwargs), None, ()), args) for args, kwargs, fn in trace.prints]
            passed = _returned_containers(result, values[:nparams])
            if effects:
                result = (result, [v for _, _, v in effects])
            out_leaves = []
            with located(getattr(self._fn, "__code__", None)):
                result_spec = flatten_result(result, out_leaves)
                returned = {v._view.storage for v in out_leaves if isinstance(v, Tracer)}
                for value in out_leaves:
                    if isinstance(value, Tracer) and trace.sealed:
                        trace.check_unsealed(value._view)
                    if isinstance(value, Tracer):
                        trace.check_fresh(value._view, returned)
                trace.check_copies_apart([v._view for v in out_leaves if isinstance(v, Tracer)])
            arg_ids = {id(t): i for i, t in enumerate(tracers) if isinstance(leaves[i], (np.ndarray, _C.DeviceArray))}
            outputs, views = [], []
            for value in out_leaves:
                if isinstance(value, Tracer) and value._view.storage in trace.may_be_argument:
                    # NumPy returns the argument itself where the loop ran no trip (or the branch
                    # kept it); the carried value is a copy
                    file, line = trace.may_be_argument[value._view.storage]
                    raise TraceError(f"{os.path.basename(file)}:{line}: {self._fn.__name__} returns a value that NumPy "
                                     "holds in an argument's memory (a variable a loop or branch on a traced condition "
                                     "carries, or a slice with a run-time bound) and strider holds in a copy; return "
                                     "a new array (x + 0) there")
                if isinstance(value, Tracer) and id(value) in arg_ids:
                    outputs.append((_C.ResultKind.argument, arg_ids[id(value)]))
                elif isinstance(value, (Tracer, np.ndarray, np.generic)):
                    t = caller_owned(trace, value, arg_storages)
                    outputs.append((_C.ResultKind.view, len(views), bool(t._scalar or isinstance(value, np.generic)),
                                    t._weak, t._readonly is None))
                    views.append(t._view)
                else:
                    outputs.append((_C.ResultKind.python, value))
            graph.outputs = views
        try:
            # CPU code only where the function runs on the CPU; a GPU runs a stage's points at
            # once, which its fusion must allow for
            on_gpu = self.target == "cuda"
            if JIT and not on_gpu:  # its first call runs while LLVM compiles its stages
                program = _C.lower_in_background(graph, self._schedule)
            else:
                program = _C.lower(graph, self._schedule, False, _C.Target.cuda if on_gpu else _C.Target.cpu)
        except _C.ScheduleError as e:
            raise ScheduleError(f"{self._fn.__name__}: {e}") from None
        self._count("lowered", 1)
        self._count_compiles(program)
        entry = Entry(program, arg_storages, result_spec, outputs)
        if effects or passed:
            entry.runner.set_post(replay([(kind, source) for kind, source, _ in effects], self._signature, passed))
        self._prepare(entry, sig)
        return entry

    def _specialize_numbers(self, sig, leaves):
        """Makes the numbers at these leaves static from now on (their values join the signature),
        and says so once per number in the log."""
        for i in leaves:
            _LOG.info("strider.compile: %s: the value %r it is given (leaf %d) is needed while tracing (a size, an "
                      "index, a Python decision): it is static from now on", self.__name__, sig.leaves[i], i)
        self._specialize([sig.leaf_ordinal[i] for i in leaves])

    def _prepare(self, entry, sig):
        """Readies a new entry to run (the CPU's kernels are compiled by lowering)."""


# calls enter the dispatcher straight from CPython's call slot (no Python frame)
_C.install_call_slot(CompiledFunction)


_SLOW_ROWS_POINTS = 1 << 12


def _slow_rows(program):
    """Why a program traced with run-time rows is slower than one per count would be, else None:
    a stage of many points left to the reference executor for an index check or for run-time
    lengths its kernel cannot join (mmdet's `np.broadcast_to(b[:, None], (n, c, 4)).reshape(-1, 4)`
    gathered element by element: 90x its static program)."""
    for stage, why in zip(program.stages, program.fallbacks):
        if ("check_index" in why or "different run-time extents" in why) and math.prod(stage["domain"]) >= _SLOW_ROWS_POINTS:
            return why
    return None


def _changed(frozen, copy):
    """Whether a trace changed its copy of a value the signature holds by value."""
    try:
        return Frozen(copy) != frozen
    except TypeError:  # (an unhashable item put in it)
        return True


def _with_siblings(sig, leaves):
    """The leaves a trace needs as values, with the other numbers of the argument (a list, tuple
    or dict, nested too) each is in: a loop over a list of floats (`if s[j] < t: continue`, or
    max() of rows' items) needs them all, so they are made static at once, not with a trace (and
    a walk of the call) for each."""
    marks = [object() for _ in sig.leaves]
    index = {id(m): i for i, m in enumerate(marks)}
    needed = set(leaves)

    def numbers(value, found):
        if type(value) in (list, tuple):
            for v in value:
                numbers(v, found)
        elif type(value) is dict:
            numbers(list(value.values()), found)
        elif id(value) in index and isinstance(sig.leaves[index[id(value)]], (int, float, np.generic)):
            found.append(index[id(value)])
        return found

    for value in sig.arguments(marks, _MISSING):
        found = numbers(value, [])
        if needed & set(found):
            needed.update(found)
    return sorted(needed)


def _importable(fn):
    """What fn's module holds under fn's qualified name; None for a lambda or a local function."""
    module, qualname = getattr(fn, "__module__", None), getattr(fn, "__qualname__", None)
    if not module or not qualname or "<" in qualname:
        return None
    obj = sys.modules.get(module)
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
    return obj


def _imported(module, qualname):
    """A pickled compiled function, by reference."""
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


class _ByValue:
    """A function pickled by value (cloudpickle's bytes), loaded back by _compiled."""

    def __init__(self, data):
        self.data = data


# what this process unpickled, by what was pickled: a copy that arrives again (Dask re-sends a
# task's arguments) is the compiled function the first one made, with its traces
_LOADED = weakref.WeakValueDictionary()


def _compiled(fn, target, options):
    """A pickled compiled function, made again from its function and options (once per process
    for equal pickles)."""
    key = (fn.data if isinstance(fn, _ByValue) else fn, target, repr(sorted(options.items())))
    found = _LOADED.get(key)
    if found is None:
        found = _LOADED[key] = compile(pickle.loads(fn.data) if isinstance(fn, _ByValue) else fn, target=target,
                                       **options)
    return found


# STRIDER_EXEC_ORDER=latest: run in the other extreme legal order of the DAG (checks its edges)
_C.set_exec_order(os.environ.get("STRIDER_EXEC_ORDER") == "latest")


def _cuda_refusal(name):
    """Why `name` cannot run on a GPU here, as the error to raise."""
    return StriderError(f"strider.compile: {name} cannot run on a GPU here: CUDA is unavailable: "
                        f"{_C.cuda_unavailable_reason()}; pass NumPy arrays and use target='cpu'")


class _CudaFunction(CompiledFunction):
    """strider.compile(fn, target="cuda"): the stages run on a GPU. Arrays in GPU memory
    (__cuda_array_interface__: CuPy, PyTorch, Numba; DLPack: JAX, read only) are read and written
    in place, results come back as the caller's kind of array and the kernels run on its library's
    current stream; NumPy arrays are copied to the device and back (in-place writes included),
    results are NumPy arrays."""

    def _cuda_refusal(self):
        raise _cuda_refusal(self.__name__)

    def _prepare(self, entry, sig):
        """Loads the entry's stages on the device of its arguments (device 0 for NumPy ones):
        NVRTC compiles them for that device, or the disk cache has them."""
        if _C.cuda_unavailable_reason():
            return  # explain() and cuda_source() work without a GPU; calls say why they cannot run
        ordinal = next((o for o in sig.group_ordinal if o >= 0), 0)
        try:
            cuda = _C.CudaProgram(entry.program, ordinal)
        except RuntimeError as e:
            raise StriderError(f"strider.compile: {self.__name__}: {e}") from None
        entry.runner.set_cuda(cuda)
        entry.cuda = cuda
        self._count("compiles", cuda.compiled)
        self._count("disk_hits", cuda.disk_hits)


class _AutoFunction(CompiledFunction):
    """strider.compile(fn, target="auto"): runs where the arguments live: on the CPU for NumPy
    arrays, on their GPU (target="cuda", self._on_gpu()) for arrays in GPU memory."""


_C.install_call_slot(_CudaFunction)
_C.install_call_slot(_AutoFunction)


# STRIDER_JIT=0: every stage on the reference executor
JIT = os.environ.get("STRIDER_JIT", "1") != "0"
# LLVM may still be compiling stages a first call ran without: a fork's child would wait for
# threads it does not have, and kernels compiled by exit are stored in the disk cache
os.register_at_fork(before=_C.settle_background_compiles)
atexit.register(_C.settle_background_compiles)

def _errstate_raises():
    return any(mode in ("raise", "call") for mode in np.geterr().values())


_C.set_dispatch_hooks(current_trace, unsupported, _refuse_leaves, Tracer, _cuda.library, _cuda.kind, Frozen, _MISSING,
                      Identity, Plain, by_type, np._core._ufunc_config._extobj_contextvar, _errstate_raises)


def compile(fn=None, *, target="cpu", static_argnames=(), cache=True, schedule=None, max_signatures=64,
            constants=(), strict=None, dynamic=None):
    """Compiles a NumPy function; use as @strider.compile or @strider.compile(...).

    target: "cpu" (LLVM); "cuda" (stages compiled by NVRTC for the GPU and launched through the
    driver API: arrays in GPU memory (CuPy, PyTorch, __cuda_array_interface__, DLPack: JAX) in
    place, NumPy arrays copied there and back; f.cuda_source shows the CUDA C; where CUDA is unavailable a call
    raises StriderError saying why); "auto" (where the arguments live: the CPU for NumPy arrays,
    "cuda" for arrays in GPU memory).
    schedule: {stage index: primitives} replacing the default schedule of those stages;
    f.explain(*args).schedules shows the defaults as text to start from.
    max_signatures: how many call signatures (traced and compiled programs) the function keeps in
    memory; a new one past it evicts the least recently called.
    constants: what the function reads besides its arguments (attributes of an object argument,
    module globals, closure variables) that is read once, when a signature is traced, and kept
    as a constant of its program: names as the function writes them ("ANCHORS", "self.priors";
    "self.cfg" covers what is read through it). Everything else such is read on every call:
    arrays as inputs (read and written in place), other values as part of the signature.
    strict: False runs a call whose trace meets what strider cannot capture (Python control flow
    on a traced value, an op it does not compile: a TraceError or an UnsupportedError) as the
    function's own Python on the real arrays, in NumPy, saying so once in a GraphBreakWarning,
    f.explain() and f.stats()["graph_breaks"]; True raises that error. None: the environment's
    STRIDER_STRICT=1 makes it True (test suites), else False. Arrays in GPU memory always raise.
    dynamic: None traces the rows of an array argument (its first axis) as a length known only
    when the function runs once a call passes a count of rows the last trace did not see, so
    that one program serves every count up to a bound, the next power of two (the boxes of each
    frame); True does from the first call; False traces each count as a signature of its own.
    Only where the function runs on the CPU, for C-contiguous arrays of two rows at least that
    share no memory with another argument; a trace that needs the count as a value, or whose
    program would run large stages outside compiled code, goes back to a signature per count.
    """
    options = dict(target=target, static_argnames=static_argnames, cache=cache, schedule=schedule,
                   max_signatures=max_signatures, constants=constants, strict=strict, dynamic=dynamic)
    kind = {"cuda": _CudaFunction, "auto": _AutoFunction}.get(target, CompiledFunction)
    if fn is None:
        return lambda f: compile(f, **options)
    if isinstance(fn, functools.partial):
        return _Partial(fn, kind(fn.func, **options))
    return kind(fn, **options)


class _Partial:
    """strider.compile of functools.partial(f, *args, **keywords): f compiled, called with the
    partial's arguments first, as arguments of each call (an array among them is read on every
    call, as the caller's are)."""

    def __init__(self, partial, compiled):
        self._partial, self._compiled = partial, compiled
        functools.update_wrapper(self, partial.func)
        self.__signature__ = inspect.signature(partial)

    def _arguments(self, args, kwargs):
        p = self._partial
        return (*p.args, *args), {**p.keywords, **kwargs}

    def __call__(self, *args, **kwargs):
        args, kwargs = self._arguments(args, kwargs)
        return self._compiled(*args, **kwargs)

    def explain(self, *args, **kwargs):
        args, kwargs = self._arguments(args, kwargs)
        return self._compiled.explain(*args, **kwargs)

    def __getattr__(self, name):  # stats(), target, ...: the compiled function's
        return getattr(self._compiled, name)
