"""The traced array and the trace it records into (a C++ Graph)."""
import dis
import functools
import linecache
import math
import operator
import sys
import threading
import warnings

import numpy as np

from . import _C
from . import _errors as _errors_module
from ._errors import _internal, trace_error, unsupported, user_file, user_location

# What Tracer's NumPy protocols, indexing and ndarray methods call, by name: the implementations
# sit above this module (they make Tracers), so the registry (_ops), which imports them all,
# fills this table once.
IMPL = {}


class _Method:
    """A method of Tracer whose implementation is IMPL[its name]."""

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, obj, cls=None):
        fn = IMPL[self.name]
        if obj is None:
            return fn
        check_live(obj)
        return fn.__get__(obj, cls)


class Specialize(BaseException):
    """Tracing needs the value of numbers the caller passes (a size, an index, a Python `if`):
    the compiled function makes them static, its signature holding their values, and traces
    again (_api). A BaseException, so that the user's `except Exception` lets it through."""

    def __init__(self, storages):
        super().__init__(storages)
        self.storages = storages


def needs_value(t, error):
    """What to raise where tracing needs t's value: Specialize where t is computed from numbers
    the caller passes (and constants) alone, else `error`. The trace keeps it (Trace.refused):
    Python code may turn it into an error of its own (struct.pack's 'f' into struct.error)."""
    storages = t._trace.from_arguments(t)
    t._trace.refused = Specialize(storages) if storages else error
    return t._trace.refused


def known_by_static(t, what, data_instead):
    """What to raise for a traced value whose value tracing needs: Specialize for one computed
    from the numbers the caller passes, or from a few ints of an array it passes (a size has no
    other way); the limitation for one computed from the data (data_instead says what to do)."""
    error = needs_value(t, unsupported(f"{what} computed from the data (its value is known only when the function "
                                       "runs)", data_instead))
    if type(error) is Specialize or not (arrays := t._trace.numbers_arrays_of(t)):
        return error
    t._trace.refused = Specialize(arrays)
    return t._trace.refused


def assert_message(frame):
    """Where the frame is deciding an `assert`, the message it would raise with (its text when
    the message is a constant, else the assert's source line); None elsewhere."""
    found = _asserts(frame.f_code).get(frame.f_lasti)
    if found is None:
        return None
    message, line = found
    return message if message is not None else linecache.getline(frame.f_code.co_filename, line).strip()


def subscripting(frame):
    """Whether the frame is subscripting a value (`lst[i]`, which calls i.__index__ for a list)."""
    return frame.f_code.co_code[frame.f_lasti] == dis.opmap["BINARY_SUBSCR"]


def called_method(frame):
    """The name of the method the frame is calling (`lst.index(n)`: 'index'), else None."""
    return _calls(frame.f_code).get(frame.f_lasti)


@functools.lru_cache(maxsize=256)
def _calls(code):
    """The calls of a code object -> the attribute last loaded before each on its line (its method's
    name; strider's conversion may wrap the bound method in a call of its own first)."""
    found, name, line = {}, None, None
    for ins in dis.get_instructions(code):
        if ins.starts_line is not None and ins.starts_line != line:
            name, line = None, ins.starts_line
        if ins.opname in ("LOAD_METHOD", "LOAD_ATTR"):
            name = ins.argval
        elif ins.opname == "CALL":
            found[ins.offset] = name
    return found


@functools.lru_cache(maxsize=256)
def _asserts(code):
    """The jumps of a code object that decide an assert (the offset of the test, which calls
    __bool__; the next instruction loads AssertionError) -> (a constant message, or '' for none,
    or None for a computed one; the line)."""
    if dis.opmap["LOAD_ASSERTION_ERROR"] not in code.co_code[::2]:  # (opcodes at even offsets)
        return {}
    found, ins = {}, list(dis.get_instructions(code))
    for i in range(len(ins) - 1):
        if ins[i + 1].opname != "LOAD_ASSERTION_ERROR" or "JUMP" not in ins[i].opname:
            continue
        after = [x.opname for x in ins[i + 2:i + 6]]
        if after and after[0] == "RAISE_VARARGS":
            message = ""
        elif after[:1] == ["LOAD_CONST"] and isinstance(ins[i + 2].argval, str) and "RAISE_VARARGS" in after[1:4]:
            message = ins[i + 2].argval
        else:
            message = None
        line = next((x.positions.lineno for x in reversed(ins[:i + 1]) if x.positions and x.positions.lineno), 0)
        found[ins[i].offset] = (message, line)
        if i and ins[i - 1].opname == "TO_BOOL":  # Python 3.13 calls __bool__ there
            found[ins[i - 1].offset] = (message, line)
    return found


def check_live(*values):
    """The documented TraceError for a Tracer of another call (or of no call: used after the
    compiled function returned), whichever side of an operation it is on."""
    trace = current_trace()
    for x in values:
        if isinstance(x, Tracer) and x._trace is not trace:
            if trace is None:
                raise trace_error("a traced value was used after its compiled function returned (kept in a global, "
                                  "a closure or an object?)", "return it from the compiled function and use the "
                                  "returned array")
            raise trace_error("a traced value from another call of a compiled function was used (kept in a global, "
                              "a closure or an object?)", "use only values computed in this call")


# dtypes the IR carries (csrc/ir/dtypes.def), by NumPy dtype.
IR_DTYPES = {np.dtype(name): short for name, short in _C.dtype_names().items()}
_WEAK_DTYPES = {bool: np.dtype(np.bool_), int: np.dtype(np.int64), float: np.dtype(np.float64)}
_TOLIST_ITEMS = 4096  # .tolist() of more: a number each, too many to trace
_SPAN_OPS = frozenset({"argsort", "argmax", "argmin", "nonzero", "check_index", "copy", "take", "cast", "compress",
                       "add", "subtract", "remainder", "floor_divide"})
_INT_SHORT = {IR_DTYPES[np.dtype(t)] for t in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
              if np.dtype(t) in IR_DTYPES}

_local = threading.local()
# ndarray attributes that expose memory a traced array does not have yet
_MEMORY_ATTRS = frozenset({"data", "ctypes", "tobytes", "tofile", "dump", "dumps"})


def _elements_source(name, inputs):
    """The input whose elements a copy, cast, take or compress writes (compress: in1)."""
    return inputs[1] if name == "compress" else inputs[0]


class RunInNumPy:
    """The error of a check that raises none: where it fails, the call runs in NumPy, whose
    semantics part from the compiled program's there (the dispatcher's RunInNumPy)."""


# the errors a check raises, by the index its op's axes[0] holds (csrc/ir/graph.h's CheckError)
_CHECK_ERRORS = (AssertionError, ValueError, OverflowError, ZeroDivisionError, RunInNumPy, UnboundLocalError)


def _not_in_a_try(name):
    """A check raises when the function runs, after the compiled program's call: a `try` of the
    traced function around it (ipazc's MTCNN: `try: return b[idx] except IndexError: ...`) would
    not catch it, as NumPy's run's does. A TraceError there (a graph break: NumPy runs the call)."""
    found = _user_try()
    if found is not None:
        raise trace_error(f"{_CHECKED.get(name, 'a value')} known only when the function runs, checked inside a `try` "
                          f"(at {found[0]}:{found[1]}) whose handler would not see the error",
                          "check it before the try, or outside the function")


def _user_try():
    """(file, line) of a `try` of the traced function (or of a function it calls) around the
    code running now, else None; a `with` block's handler (np.errstate) is not one."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_name != "_trace_and_lower":
        code = frame.f_code
        if not _internal(code.co_filename):
            for start, end in _try_ranges(code):
                if start <= frame.f_lasti < end:
                    return code.co_filename, frame.f_lineno
        frame = frame.f_back
    return None


def _refusal_made(error):
    """A refusal (TraceError, UnsupportedError) made inside a `try` of the traced function: its
    `except Exception` would take strider's refusal for the function's own error and trace the
    handler's path (COCOeval's accumulate: `try: ... except: pass`). The trace keeps it, and
    raises it if the function returns all the same (a graph break: NumPy runs the call)."""
    trace = current_trace()
    if trace is not None and _user_try() is not None:
        trace.refusals_in_try.append(error)


_errors_module.REFUSALS_MADE.append(_refusal_made)


def forgive(error):
    """A refusal strider itself caught (it then takes another way): no trace raises it later."""
    trace = current_trace()
    if trace is not None:
        trace.refusals_in_try[:] = [e for e in trace.refusals_in_try if e is not error]


def _span(view):
    """(first, last) element a view reaches in its storage, or None where it holds none."""
    lo = hi = view.offset
    for n, step in zip(view.shape, view.strides):
        if n == 0:
            return None
        lo, hi = lo + min(0, step * (n - 1)), hi + max(0, step * (n - 1))
    return lo, hi


# what Trace.stand_in records, as messages name it
_STAND_IN = ("a value that strider holds in a copy and NumPy as an array from before it (a list's item at an index "
             "known only when the function runs, a variable a loop or branch on a traced condition holds where it "
             "held an array from before it)")

_CHECKED = {"check_index": "an index", "check_assert": "a condition", "check_equal": "a length",
            "check_nonempty": "a reduction's length"}


@functools.lru_cache(maxsize=1024)
def _try_ranges(code):
    """The bytecode ranges of code that a `try`'s handler covers. A handler the compiler adds
    (Python 3.12's around a generator's body and an inlined comprehension, the clean-up of an
    `except ... as e`) does not begin by pushing the exception, and a `with` block's handler is
    the one that calls __exit__."""
    if not getattr(code, "co_exceptiontable", True):  # (no handler: most code; dis takes milliseconds)
        return ()
    names = {i.offset: i.opname for i in dis.get_instructions(code)}
    offsets = sorted(names)
    ranges = []
    for entry in dis.Bytecode(code).exception_entries:
        following = [names[o] for o in offsets if o >= entry.target][:3]
        if following[:1] == ["PUSH_EXC_INFO"] and "WITH_EXCEPT_START" not in following:
            ranges.append((entry.start, entry.end))
    return tuple(ranges)


def current_trace():
    """The trace being recorded on this thread, or None."""
    return getattr(_local, "trace", None)


class untraced:
    """Turns the trace off while strider makes a concrete NumPy array from a user's object: its
    `__array__` (user code) then gets NumPy's own np.arange & co., not the recording stand-ins
    that would hand it Tracers."""

    def __enter__(self):
        self._saved, _local.trace = current_trace(), None

    def __exit__(self, *exc):
        _local.trace = self._saved


def cast_unsafe(value, dtype):
    """A Python number as NumPy's unsafe copy from a 0-d array of its own casts it (np.full of a
    float, np.pad, np.where): 300 into uint8 is 44, -1.0 is 255; a NumPy scalar."""
    with untraced():
        return np.asarray(value).astype(dtype)


DTYPES_TAKEN = "use bool, an integer dtype of 8 to 64 bits or float16, float32 or float64"


def check_dtype(dtype, what):
    dtype = np.dtype(dtype)
    if dtype not in IR_DTYPES:
        raise unsupported(f"{what} of dtype {dtype}", DTYPES_TAKEN)
    return dtype


_MESSAGE_HINT = "return a flag (or the values) and print, log or warn after the call"


def side_effect_error(what, hint="build a list of the function's own and return it, or change the state after the call"):
    """The error for code that changes Python state from before the call (`what`) in a loop or
    branch on a traced condition: the change would happen once, as it traces, not on each trip or
    path at run time."""
    return trace_error(f"{what} in a loop or branch on a traced condition", hint)


class Trace:
    """Records operations into a C++ graph while the user's function runs on Tracers."""

    def __init__(self, name):
        self.graph = _C.Graph(name)
        self.scalar_arguments = set()  # storages of the numbers the caller passes (not static)
        # storages of small int arrays the caller passes (_api._NUMBERS_ARRAY): static where tracing
        # needs a value computed from them as a size (known_by_static)
        self.numbers_arrays = set()
        self.known = {}  # storage -> its contents (flat), where tracing knows them: constants folded
        # temporary -> the scalar arguments its writes so far computed it from, with constants
        # alone (written in parts too: np.array of a tuple of numbers, a copy an element)
        self.derived = {}
        self.number_ops = 0  # ops that computed a number from the caller's numbers alone (_MAX_NUMBER_OPS)
        self.counts = {}  # a mask's value_key -> its count (_advanced.count)
        self.checked = {}  # indices checked against a length, by value_key: one check serves (_advanced._checked)
        self.sliced = {}  # (run-time length, slice) -> its resolution: one length for one slice (_advanced)
        self.index_math = {}  # the positions indexing computes, by value_keys (_advanced._index_math)
        self.const_storages = {}  # (dtype, bytes) -> the storage of a constant of those values
        # a 1-d sort's result (or its reverse) of a run-time length, by value_key -> (op, the sorted
        # array, reversed): a slice of its head is a top-k (_advanced.top_k)
        self.sorted = {}
        # what a storage holds, by how it was computed (value numbering): storage -> key, while
        # nothing has written it since; versions count the writes into the others
        self.numbers = {}
        self.versions = {}
        # copies that stand for NumPy's views (an int or a slice at a position only the run knows):
        # storage -> (the viewed storage, its version then, (copy, base, key) or None). A copy with
        # its key is kept in step with its base: gathered again where the base was written since
        # it was read or written, and written back into base[key] after each write (so writes
        # through it reach the base, as through NumPy's view); one without (a reshape's) is
        # refused where it would miss what NumPy's view shows (check_fresh)
        self.copies = {}
        self.syncing = set()  # copies being gathered again or written back (their ops start no sync)
        # copies that stand for what NumPy holds as one of several arrays from before (stand_in):
        # storage -> ((each array's storage, the first and last element it spans there), ...);
        # `stale`: those an op wrote one of their arrays' elements after (not read again)
        self.stand_ins = {}
        self.stale = set()
        # the storages such a copy was written after (NumPy's would show the write): not read again
        self.diverged = set()
        # storage -> (lo, hi): every element is in [lo, hi) (argsort's positions, nonzero's indices,
        # gathers and shifts of them), while nothing else wrote it: index checks it proves drop
        self.ranges = {}
        # bounds relative to run-time lengths, each held while the storages it names keep the
        # version it saw: relative[storage] = (E, version of E, k): every element is below E's
        # length plus k (nonzero's indices, shifts of them); bounded[E] = (L, d, version of L,
        # version of E): a length E above 0 is at most L's plus d (a slice x[v:] of length L)
        self.relative = {}
        self.bounded = {}
        # storage -> (mask, versions of its storage and length, k, the extents it was written with):
        # the storage holds the positions where the 1-d mask holds, plus k (nonzero's indices,
        # shifts of them), while none has been written since: x[those] is a compress (_advanced)
        self.selects = {}
        # _control.py's state: storages made inside a loop or branch that has been closed, as
        # (first, end) ranges (their values do not outlive it); the loops being traced; how many
        # regions were opened; the room lists get for a loop's trips (grown by _outgrown)
        self.sealed = []
        self.loops = []
        self.regions = 0
        self.trip_factor = 1
        self.region_tries = 0  # traces of a loop's or branch's body (_control._settle)
        self.longest_axis = 0  # the longest axis of the arguments' arrays (room for a traced range's list)
        # storages of variables a loop carries or a branch merges that held an argument -> the
        # user's (file, line) of that loop or branch
        self.may_be_argument = {}
        # a Choice with unassigned sides read as the value it holds where assigned (_choice.bound):
        # id -> (the Choice, that value); its check stands for every later read
        self.bound_reads = {}
        # _choice.py's: the storage of a bool that `x is None` on a Choice gave (or `not`, `and`,
        # `or` of one) -> what it says of Choices' conditions where it holds and where it does
        # not ({condition's storage: its value}, twice); and while a side of a branch on such a
        # bool is traced, what it says there
        self.implied = {}
        self.choice_facts = {}
        self.target = "cpu"
        self.refused = None  # the last needs_value: why a trace that then failed failed
        self.refusals_in_try = []  # refusals made inside a `try` of the traced function (_refusal_made)
        self.prints = []  # (args, kwargs, logger method or None: print) of its prints and logs, made after each run
        # what runs now that Python may not run (the items of any(gen) after one only the run
        # decides): a check there would raise where Python's run stops first (_control._truths)
        self.speculating = None
        self._prev = None

    def refuse_side_effect(self, what, message=False):
        """side_effect_error(what) while a loop or branch on a traced condition traces; `message`:
        a print, log or warning (only the run knows how many)."""
        if any(r.traced_region for r in self.loops):
            raise side_effect_error(what, _MESSAGE_HINT) if message else side_effect_error(what)

    def __enter__(self):
        self._prev = current_trace()
        _local.trace = self
        return self

    def __exit__(self, *exc):
        _local.trace = self._prev

    def temp(self, shape, dtype, order=None, storage=None):
        """A fresh dense view of a new temporary storage (or of `storage`, a temp made earlier
        that no view reads yet, given its dtype and size now); `order` lists the axes from outermost
        to innermost in memory (C order when None). Extents in `shape` give the view their
        run-time lengths (the storage holds their bounds)."""
        extents = [d.storage if isinstance(d, Extent) else -1 for d in shape]
        shape = tuple(bound(d) for d in shape)
        dtype = check_dtype(dtype, "a result")
        size = math.prod(shape)
        if size * dtype.itemsize > _MAX_BYTES:
            raise ValueError("array is too big; `arr.size * arr.dtype.itemsize` is larger than the maximum possible size.")
        if storage is None:
            sid = self.graph.add_storage(IR_DTYPES[dtype], size, "temp")
        else:
            sid = storage
            self.graph.set_storage(sid, IR_DTYPES[dtype], size)
        strides, s = [0] * len(shape), 1
        for axis in reversed(order if order is not None else range(len(shape))):
            strides[axis] = s
            s *= max(shape[axis], 1)
        return _C.View(sid, list(shape), strides, 0, extents)

    def op(self, name, inputs, output, axes=()):
        if self.graph.num_ops >= _MAX_OPS:
            raise trace_error(f"the function traces to more than {_MAX_OPS:,} operations (a Python loop unrolled "
                              "over many trips, a list of that many traced numbers?), which would take minutes to "
                              "compile", "make the numbers the loop computes from known while tracing "
                              "(static_argnames), or compute them with array operations")
        file, line = user_location()
        if name.startswith("check_") and list(axes)[:1] != [_CHECK_ERRORS.index(RunInNumPy)]:
            _not_in_a_try(name)
            if self.speculating:
                raise trace_error(f"{_CHECKED.get(name, 'a value')} known only when the function runs, checked in "
                                  f"{self.speculating}", "compute the items as an array and reduce it (x.all())")
        if self.sealed:
            for t in inputs:
                self.check_unsealed(t._view)
        synced = None
        if self.copies or self.stand_ins:
            for t in inputs:
                self.check_fresh(t._view)
            for sid, _, _ in self.stand_ins.get(output.storage, ()):
                if self.graph.storage_kind(sid) == "arg" or sid in self.may_be_argument:
                    raise trace_error(f"writing through {_STAND_IN} (NumPy's write would reach the argument)",
                                      "write into the argument itself, or copy the value first (x.copy())")
                self.diverged.add(sid)  # (NumPy's write reaches it: not read again)
            spans = [(c, lo, hi) for c, bases in self.stand_ins.items() for sid, lo, hi in bases
                     if sid == output.storage]
            written = _span(output) if spans else None
            if written:
                self.stale.update(c for c, lo, hi in spans if written[0] <= hi and lo <= written[1])
            found = self.copies.get(output.storage)
            if found is not None and found[2] is None:  # written: what it stands for a view of misses it
                self.diverged.add(found[0])
            elif found is not None and output.storage not in self.syncing:
                self.check_fresh(output)  # a part written: the rest as the base holds it now
                synced = output.storage
        derived = self._derived(inputs, output)
        if derived and not output.shape and _few(derived):
            self.number_ops += 1
            if self.number_ops > _MAX_NUMBER_OPS:  # the numbers they come from: static, their ops folded
                self.refused = Specialize(derived)
                raise self.refused
        span = self._span(name, inputs, output, axes)
        relative = self._relative(name, inputs) if span is not None else None
        select = self._select(name, inputs) if span is not None else None
        self.graph.add_op(name, [t._view for t in inputs], output, list(axes), file, line)
        self.ranges.pop(output.storage, None)
        self.relative.pop(output.storage, None)
        self.selects.pop(output.storage, None)
        if span is not None:
            self.ranges[output.storage] = span
        if relative is not None:
            self.relative[output.storage] = relative
        if select is not None:
            self.selects[output.storage] = select + (list(output.extents),)
        self.known.pop(output.storage, None)  # written: what tracing knew of it no longer holds
        if (name == "copy" and all(e < 0 for e in output.extents) and output.offset == 0 and output.is_c_contiguous
                and output.numel == self.graph.storage_size(output.storage) <= _FOLD_MAX
                and not any(r.traced_region for r in self.loops) and (value := concrete(inputs[0])) is not None):
            # the whole storage written, on every path, with what tracing knows (np.ones(1,
            # np.int32)[0], a dict key)
            self.known[output.storage] = np.array(np.broadcast_to(value, output.shape), inputs[0].dtype).reshape(-1)
        if derived is None:
            self.derived.pop(output.storage, None)
        else:
            self.derived[output.storage] = derived
        self.numbers.pop(output.storage, None)
        self.versions[output.storage] = self.versions.get(output.storage, 0) + 1
        if synced is not None:
            self._sync(synced, write=True)

    def _sync(self, sid, write):
        """Copy `sid` and its base made alike again: base[key] = copy where `write`, else the copy
        gathered from base[key] anew."""
        base_sid, _, (copy, base, key) = self.copies[sid]
        self.syncing.add(sid)
        try:
            if write:
                base[key] = copy
            else:
                self.op("copy", [base[key]], copy._view)
        finally:
            self.syncing.discard(sid)
        self.copies[sid] = (base_sid, self.versions.get(base_sid, 0), (copy, base, key))

    def _derived(self, inputs, output):
        """The scalar arguments (and numbers_arrays) a temporary is computed from, with constants
        alone, once an op writes (part of) it from them (Trace.derived); None where it holds
        anything else."""
        sid = output.storage
        found = self.derived.get(sid) if self.versions.get(sid, 0) else frozenset()
        if found is None or self.graph.storage_kind(sid) != "temp":
            return None
        for t in inputs:
            if t._view.storage not in self.known:
                args = self._sources(t)
                if not args:
                    return None
                found = found | args
        return found

    def _span(self, name, inputs, output, axes=()):
        """The range of the integers an op writes (Trace.ranges) where it writes its whole
        storage and its kind says: None where unknown."""
        if name not in _SPAN_OPS:  # (every op is recorded here: the common case leaves at once)
            return None
        if (output.numel != self.graph.storage_size(output.storage) or not output.is_c_contiguous
                or self.graph.storage_dtype(output.storage) not in _INT_SHORT):
            return None
        if name == "argsort":
            return 0, bound(inputs[0].shape[-1])
        if name in ("argmax", "argmin"):  # a position along the axes it reduces
            return 0, max(1, math.prod([bound(inputs[0].shape[a]) for a in axes]))
        if name == "nonzero":
            return 0, max(1, math.prod([bound(d) for d in inputs[0].shape]))
        if name == "check_index":
            n = known_scalar(inputs[1])
            return (0, int(n)) if n is not None else None
        if name in ("copy", "take", "cast", "compress"):
            src = _elements_source(name, inputs)
            return self.ranges.get(src._view.storage) if src.dtype.kind in "iu" else None
        if name in ("remainder", "floor_divide"):  # by a positive constant (np.unravel_index's, argwhere's)
            k = self._uniform(inputs[1])
            if k is None or k <= 0 or inputs[0].dtype.kind not in "iu":
                return None
            if name == "remainder":
                return 0, k
            r = self.ranges.get(inputs[0]._view.storage)
            return (r[0] // k, (r[1] - 1) // k + 1) if r is not None else None
        r, k = self._shifted(name, inputs, self.ranges)
        return (r[0] + k, r[1] + k) if r is not None else None

    def _shifted(self, name, inputs, table):
        """For an add or subtract of a constant to an array `table` holds an entry of: the entry
        and the shift; else (None, 0)."""
        if name in ("add", "subtract") and len(inputs) == 2:
            for t, other in ((inputs[0], inputs[1]), (inputs[1], inputs[0])):
                r, k = table.get(t._view.storage), self._uniform(other)
                if r is not None and k is not None and (name == "add" or t is inputs[0]):
                    return r, (int(k) if name == "add" else -int(k))
        return None, 0

    def _relative(self, name, inputs):
        """Trace.relative of what an op writes whose range _span knows: nonzero and argsort of a
        run-time length E give indices below E, copies, gathers and compactions keep their
        source's bound, shifts move it."""
        if name == "nonzero":
            v = inputs[0]._view
            if len(v.extents) == 1 and v.extents[0] >= 0:
                return v.extents[0], self.versions.get(v.extents[0], 0), 0
            return None
        if name == "argsort":  # positions along a last axis of run-time length E
            e = inputs[0]._view.extents[-1] if inputs[0]._view.extents else -1
            return (e, self.versions.get(e, 0), 0) if e >= 0 else None
        if name in ("copy", "take", "compress"):
            return self.relative.get(_elements_source(name, inputs)._view.storage)
        r, k = self._shifted(name, inputs, self.relative)
        return (r[0], r[1], r[2] + k) if r is not None else None

    def _select(self, name, inputs):
        """Trace.selects of what an op writes whose range _span knows (without its extents):
        nonzero of a 1-d mask, whole copies and shifts of it."""
        if name == "nonzero":
            m = inputs[0]
            if m.ndim != 1 or m.dtype != np.bool_:
                return None
            length = m._view.extents[0] if m._view.extents else -1
            return m, self.versions.get(m._view.storage, 0), self.versions.get(length, 0), 0
        if name == "copy":
            r = self._selects_whole(inputs[0])
            return r[:4] if r is not None else None
        if name in ("add", "subtract") and len(inputs) == 2 and any(self._selects_whole(t) for t in inputs):
            r, k = self._shifted(name, inputs, self.selects)
            return r[:3] + (r[3] + k,) if r is not None else None
        return None

    def _selects_whole(self, t):
        """t's Trace.selects entry where t is all of the positions it holds (not a slice of them)."""
        r = self.selects.get(t._view.storage)
        if r is None:
            return None
        v = t._view
        whole = (v.offset == 0 and list(v.strides) == [1] and list(v.shape) == [self.graph.storage_size(v.storage)]
                 and list(v.extents) == r[4])
        return r if whole else None

    def selected(self, t):
        """(mask, k) where t holds every position where the 1-d mask holds, plus k, in order
        (Trace.selects, the mask and its length unwritten since); else None."""
        r = self._selects_whole(t)
        if r is None:
            return None
        m = r[0]
        length = m._view.extents[0] if m._view.extents else -1
        if r[1] != self.versions.get(m._view.storage, 0) or r[2] != self.versions.get(length, 0):
            return None
        return m, r[3]

    def below_length(self, t, length):
        """Whether every element of t is below the run-time length `length` (a storage), by
        Trace.relative and Trace.bounded while neither has been written since."""
        r = self.relative.get(t._view.storage)
        if r is None or r[1] != self.versions.get(r[0], 0):
            return False
        if r[0] == length:
            return r[2] <= 0
        b = self.bounded.get(r[0])
        return (b is not None and b[0] == length and b[2] == self.versions.get(length, 0) and b[3] == r[1]
                and r[2] + b[1] <= 0)

    def _uniform(self, t):
        """The one integer every element of t's storage holds, where tracing knows it (a constant,
        broadcast); else None."""
        flat = self.known.get(t._view.storage)
        if flat is None or flat.size == 0 or flat.dtype.kind not in "iu" or not (flat == flat[0]).all():
            return None
        return int(flat[0])

    def copy_of_view(self, copy, base, key=None):
        """Records that `copy` stands for NumPy's view `base[key]` (check_fresh); key None: kept
        apart from base (a reshape's, which base[key] does not give back)."""
        sid = base._view.storage
        if self.graph.storage_kind(sid) == "arg" or sid in self.may_be_argument:  # returned: NumPy's is the argument's memory
            self.may_be_argument.setdefault(copy._view.storage, user_location())
        self.copies[copy._view.storage] = (sid, self.versions.get(sid, 0), None if key is None else (copy, base, key))

    def check_fresh(self, view, returned=None):
        """Gathers a copy standing for a view base[key] again where base was written since; refuses
        one without its key read after that, or (`returned`: the storages a call returns) returned
        beside its base: NumPy's two results would share memory. (One of an argument is
        may_be_argument's.)"""
        if view.storage in self.diverged:
            raise trace_error("an array is read after a write through what NumPy makes a view of it and strider a copy "
                              "(a reshape that moves a run-time length between axes, x[-1] of one, a variable a loop "
                              "or branch on a traced condition bound to it): NumPy's array would show the write",
                              "write through the array itself")
        seen = self.copies.get(view.storage)
        if seen is not None and seen[2] is not None and view.storage not in self.syncing:
            if self.versions.get(seen[0], 0) != seen[1]:
                self._sync(view.storage, write=False)
            seen = self.copies[view.storage]
        if seen is not None and returned is not None and seen[0] in returned:
            raise trace_error("an element or slice at a position known only when the function runs (x[-1], x[i:] of a "
                              "run-time length), which strider holds in a copy and NumPy in a view, is returned beside "
                              "the array it views", "return a copy of it (x[-1].copy())")
        if returned is not None and any(sid in returned for sid, _, _ in self.stand_ins.get(view.storage, ())):
            raise trace_error(f"{_STAND_IN} is returned beside that array", "return a copy of it (x.copy())")
        if view.storage in self.stale:
            raise trace_error(f"{_STAND_IN} is read after that array was written", "read it before the write, or "
                              "copy it before (x.copy())")
        if seen is not None and self.versions.get(seen[0], 0) != seen[1]:
            raise trace_error("an element or slice at a position known only when the function runs (x[-1], x[i:] of a "
                              "run-time length), which strider holds in a copy and NumPy in a view, is read after the "
                              "array was written: NumPy's view would show the write", "index it after the write, or "
                              "copy it before (x[-1].copy())")

    def check_copies_apart(self, views):
        """Refuses two returned copies that stand for views of one array (x[-1] and x[i:] of a run-
        time length): NumPy's two results would share its memory, strider's would not."""
        bases = {}
        for view in views:
            seen = self.copies.get(view.storage)
            if seen is not None and bases.setdefault(seen[0], view.storage) != view.storage:
                raise trace_error("two elements or slices of one array at positions known only when the function runs "
                                  "(x[-1], x[i:] of a run-time length), which strider holds in copies and NumPy in "
                                  "views of that array, are returned together: NumPy's would share memory",
                                  "return a copy of one of them (x[i:].copy())")

    def stand_in(self, copy, arrays, writable, also=()):
        """Records that `copy` stands for what NumPy holds as one of `arrays` (made before it) or
        a view of one: read only while none of them is written (check_fresh); written, where
        `writable`, with those not read again (NumPy's would show the write) and none an
        argument's memory (the caller would see it), else refused; returned, as an argument's
        memory where one is. `also`: more of what it stands for, as stand_ins records them."""
        if not writable:
            copy._readonly = "stand_in"
        records = tuple((a._view.storage,) + span for a in arrays if (span := _span(a._view))) + tuple(also)
        self.stand_ins[copy._view.storage] = records
        self.stale.discard(copy._view.storage)
        if any(self.graph.storage_kind(sid) == "arg" or sid in self.may_be_argument for sid, *_ in records):
            self.may_be_argument.setdefault(copy._view.storage, user_location())  # returned: NumPy's is the argument's

    def check_unsealed(self, view):
        """Refuses a value a closed loop or branch computed (its storage holds the last trip's, or
        a branch not taken's): Python would see the last one; strider carries only the variables
        the region assigns."""
        for sid in [view.storage] + [e for e in view.extents if e >= 0]:
            if any(lo <= sid < hi for lo, hi in self.sealed) and self.graph.storage_kind(sid) != "const":
                raise trace_error("a value computed inside a loop or branch on a traced condition is used after it "
                                  "without being assigned to a variable there (kept in a container or an object?)",
                                  "assign it to a variable inside the loop or branch")

    def snapshot(self):
        """What tracing knows now, for restore: a loop or branch traced again starts from here."""
        return (self.graph.num_ops, self.graph.num_storages, dict(self.known), dict(self.derived), dict(self.counts),
                dict(self.checked), dict(self.sliced), dict(self.sorted), dict(self.numbers), dict(self.versions),
                dict(self.ranges), list(self.sealed), self.regions, dict(self.may_be_argument),
                dict(self.relative), dict(self.bounded), dict(self.selects), dict(self.implied), dict(self.copies),
                set(self.diverged), dict(self.index_math), dict(self.const_storages), dict(self.bound_reads),
                dict(self.stand_ins), set(self.stale))

    def restore(self, snap, graph=True, marks=None):
        """Back to `snap`: the graph too where `graph`, else only what tracing knows. A write the
        graph keeps keeps what it made unreadable (diverged, stale) unless `marks` says what
        holds instead: (diverged, stale)."""
        (ops, storages, self.known, self.derived, self.counts, self.checked, self.sliced, self.sorted, self.numbers,
         self.versions, self.ranges, self.sealed, regions) = (snap[0], snap[1]) + tuple(
            type(x)(x) for x in snap[2:12]) + (snap[12],)
        self.relative, self.bounded, self.selects = dict(snap[14]), dict(snap[15]), dict(snap[16])
        self.implied, self.copies = dict(snap[17]), dict(snap[18])
        kept = (set(), set()) if graph else (self.diverged, self.stale) if marks is None else marks
        self.diverged = set(snap[19]) | kept[0]
        self.index_math, self.const_storages, self.bound_reads = dict(snap[20]), dict(snap[21]), dict(snap[22])
        self.stand_ins, self.stale = dict(snap[23]), set(snap[24]) | kept[1]
        if graph:
            self.graph.truncate(ops, storages)
            self.regions, self.may_be_argument = regions, dict(snap[13])

    def forget(self, storages):
        """What tracing knew of these storages no longer holds (a loop or branch wrote them)."""
        for sid in storages:
            self.known.pop(sid, None)
            self.ranges.pop(sid, None)
            self.relative.pop(sid, None)
            self.selects.pop(sid, None)
            self.derived.pop(sid, None)
            self.numbers.pop(sid, None)
            self.versions[sid] = self.versions.get(sid, 0) + 1

    def check_assert(self, t, message, error=AssertionError):
        """`assert t, message` on a value known only when the function runs: a check that raises
        `error` (one of _CHECK_ERRORS) then (after the writes before it, before those after it),
        as Python's assert would; tracing goes on as if it held."""
        if t.size != 1:  # NumPy's error for the truth value of several elements (or of a run-time length)
            if t.is_dynamic:
                raise unsupported("assert on an array whose length is known only at run time",
                                  "assert on a reduction of it (x.all(), x.any())")
            bool(np.empty(t.shape))
        cond = t.reshape(()) if t.ndim else t
        if cond.dtype != np.bool_:
            cond = np.not_equal(cond, 0)
        text = self.const(np.array([ord(c) for c in message], np.int32))
        out = self.temp((), np.bool_)
        self.op("check_assert", [cond, text], out,
                [] if error is AssertionError else [_CHECK_ERRORS.index(error)])
        return True

    def value_key(self, t):
        """A key equal for two views that hold the same values: the same computation on the same
        inputs (x[:, 4] > 0.5 written twice), or the same view of a storage unwritten between."""
        v, sid = t._view, t._view.storage
        number = self.numbers.get(sid) or ("storage", sid, self.versions.get(sid, 0))
        return number, v.offset, tuple(v.shape), tuple(v.strides), tuple(v.extents)

    def number(self, name, inputs, output, dtype, axes):
        """Notes how a fresh result was computed (value_key)."""
        self.numbers[output.storage] = (name, tuple(self.value_key(t) for t in inputs), np.dtype(dtype).str,
                                        tuple(axes))

    def _sources(self, t):
        """The scalar arguments and numbers_arrays t is computed from, with constants alone."""
        sid = t._view.storage
        return frozenset({sid}) if sid in self.scalar_arguments or sid in self.numbers_arrays else self.derived.get(
            sid, frozenset())

    def from_arguments(self, t):
        """The storages of the scalar arguments t is computed from, with constants alone; empty
        where it depends on anything else (arrays, data) or on more than a few of them (_few)."""
        found = self._sources(t)
        return frozenset() if found & self.numbers_arrays or not _few(found) else found

    def numbers_arrays_of(self, t):
        """The storages of the small int arrays (numbers_arrays) and scalar arguments t is computed
        from, with constants alone, where it is computed from such an array; else empty."""
        found = self._sources(t)
        return found if found & self.numbers_arrays else frozenset()

    def fold(self, name, inputs, output, dtype, axes=()):
        """Records what a fresh result holds where tracing knows its inputs (constants and what was
        computed from them), so that shapes, indices and Python decisions computed from static
        values stay known; the op still runs."""
        size = math.prod(output.shape)
        if (name not in _FOLDABLE and (name != "arange" or dtype.kind not in "iu")) or size > _FOLD_MAX:
            return
        values = [concrete(t) for t in inputs]
        if any(v is None for v in values):
            return
        with np.errstate(all="ignore"):
            if name == "arange":  # an int one's positions (DeepSORT's tracks[np.arange(n)[k]]): exact
                value = values[0] + np.arange(size, dtype=dtype) * (values[1] - values[0])
            elif name == "copy":
                value = values[0]
            elif name == "cast":
                value = values[0].astype(dtype)
            elif name in _FOLDED_REDUCTIONS:  # argmax and argmin of several axes index them flattened
                # (over no axis, max and the like keep each element: axis=(), not NumPy's default)
                every = len(axes) == values[0].ndim and (len(axes) > 0 or name in ("argmax", "argmin"))
                if name in ("argmax", "argmin") and not every and len(axes) > 1:
                    return
                axis = None if every else axes[0] if name in ("argmax", "argmin") else tuple(axes)
                value = np.asarray(getattr(np, name)(values[0], axis=axis)).reshape(output.shape).astype(dtype)
            else:
                value = getattr(np, name)(*values)
        flat = np.empty(size, dtype)
        _strided(flat, output)[...] = value
        self.known[output.storage] = flat

    def const(self, value, dtype=None):
        """A Tracer over a constant (data copied into the graph)."""
        with untraced():
            arr = np.asarray(value, dtype=dtype)
        check_dtype(arr.dtype, "a constant")
        arr = np.array(arr, order="C")
        key = (arr.dtype.str, arr.tobytes()) if arr.size <= _FOLD_MAX else None
        sid = self.const_storages.get(key) if key is not None else None
        if sid is None:  # (a constant's storage is never written: one serves every use of its values)
            sid = self.graph.add_const(IR_DTYPES[arr.dtype], arr.tobytes())
            self.known[sid] = arr.reshape(-1)
            if key is not None:
                self.const_storages[key] = sid
                self.numbers[sid] = ("const", arr.dtype.str, arr.shape, arr.tobytes())
        strides = [s // arr.itemsize for s in arr.strides]
        view = _C.View(sid, list(arr.shape), strides, 0)
        return Tracer(self, view, arr.dtype, readonly="const")


# The ops a trace may record: the passes and the compile grow faster than linearly past this
# (11,000 ops of a list of 1,568 traced floats take 3 s), and a Python loop unrolled over tens of
# thousands of trips would hold a call for minutes; the benchmark heads trace 260 at most
_MAX_OPS = 20_000
# Numbers a trace may compute from the caller's numbers alone before those become static: a list
# of prior boxes computed in Python loops from the image size (FaceBoxes' 21,824 of them: minutes
# to trace and compile as run-time values) is then computed while tracing, as NumPy computes it
_MAX_NUMBER_OPS = 256


def _few(numbers):
    """Whether the caller's numbers a value is computed from are few enough to be made static
    (as many as a small int array made static holds): many (HRNet's oks_nms, the scores and areas
    of a list of dicts) are data, which made static would make each call a new signature."""
    return len(numbers) <= _C.numbers_array_elements


_MAX_BYTES = int(np.iinfo(np.intp).max)  # (NumPy's largest array; np.iinfo is slow to make each time)

# the ops Trace.fold computes: copies, casts, reductions and NumPy's ufuncs of ops.def's
# elementwise ops (its names are NumPy's), on results up to this many elements (shapes, indices
# and decisions need few; tables run compiled)
_FOLD_MAX = 4096
_FOLDED_REDUCTIONS = {"sum", "prod", "max", "min", "argmax", "argmin", "any", "all"}
_FOLDABLE = {"copy", "cast"} | _FOLDED_REDUCTIONS | {
    name for name, op in _C.op_table().items() if op["loops"] and isinstance(getattr(np, name, None), np.ufunc)}


def _strided(flat, view):
    """A view's elements in its storage's contents `flat`, as a NumPy view: ndarray's own
    constructor, which checks the view lies in `flat`, ten times as quick as as_strided (tracing
    asks this of every constant an op reads)."""
    shape = tuple(view.shape)
    if 0 in shape:
        return np.empty(shape, flat.dtype)
    return np.ndarray(shape, flat.dtype, flat, view.offset * flat.itemsize, [s * flat.itemsize for s in view.strides])


def concrete(t):
    """What a Tracer holds where tracing knows it (Trace.fold), as a NumPy array; else None (a
    view of a run-time length too: its storage's values are known, not how many it spans)."""
    flat = t._trace.known.get(t._view.storage)
    if flat is None or any(e >= 0 for e in t._view.extents):
        return None
    return _strided(flat, t._view).copy()


def known_scalar(t):
    """A 0-d Tracer's value as a NumPy scalar where tracing knows it; else None."""
    value = concrete(t) if t.ndim == 0 else None
    return None if value is None else value[()]


def same_shape(a, b):
    """Whether two shapes are the same, run-time lengths by identity."""
    return len(a) == len(b) and all(
        x.storage == y.storage if isinstance(x, Extent) and isinstance(y, Extent)
        else not isinstance(x, Extent) and not isinstance(y, Extent) and x == y for x, y in zip(a, b))


def bound(d):
    """A dimension as an int: an Extent's static bound."""
    return int.__int__(d) if isinstance(d, Extent) else int(d)


class Extent(int):
    """A dimension known only when the function runs (the count of a boolean mask): as an int,
    its static bound (the memory set aside for it); `storage` holds the run-time length. Shapes
    carry it, so that what is made from them keeps the run-time length. Used as a number
    (x.shape[0] * 2, len(x) > k) it is the traced 0-d length, whose value tracing does not know."""

    def __new__(cls, bound_, storage):
        self = super().__new__(cls, bound_)
        self.storage = storage
        return self

    def value(self):
        """The run-time length as a traced Python int."""
        view = _C.View(self.storage, [], [], 0)
        return Tracer(current_trace(), view, np.int64, weak=int, readonly="const")

    def __eq__(self, other):
        if isinstance(other, Extent) and other.storage == self.storage:
            return True
        return self.value() == (other.value() if isinstance(other, Extent) else other)

    def __ne__(self, other):
        if isinstance(other, Extent) and other.storage == self.storage:
            return False
        return self.value() != (other.value() if isinstance(other, Extent) else other)

    def __hash__(self):
        # (strider keys shapes by it; the user's dict key or set item is its value, the run's)
        if user_file(sys._getframe(1).f_code.co_filename):
            raise trace_error("a length known only when the function runs as a dict key or set item (its hash is its "
                              "value)", "key by a value known while tracing, or count with np.unique / np.bincount")
        return hash(("extent", self.storage))

    def __repr__(self):
        return as_text(f"<length known at run time, at most {int.__int__(self)}>", "a length known only at run time")

    __str__ = __repr__

    def __format__(self, spec):  # (int's would format the bound)
        return as_text(f"<length known at run time, at most {int.__int__(self)}>", "a length known only at run time")

    def __bool__(self):
        return bool(self.value())

    def __index__(self):
        return self.value().__index__()

    def __int__(self):
        return int(self.value())

    def __float__(self):
        return float(self.value())

    def __reduce__(self):
        raise TypeError("a run-time length cannot be pickled")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        # np.minimum(x.shape[0], k): the ufunc of the traced length
        return getattr(ufunc, method)(*(x.value() if isinstance(x, Extent) else x for x in inputs), **kwargs)


def length_value(d):
    """A length as a number: an Extent's traced value, an int as it is."""
    return d.value() if isinstance(d, Extent) else d


def _a_length(n):
    """Whether n is a length: a run-time one (an Extent) or a non-negative Python int."""
    return isinstance(n, Extent) or (type(n) is int and n >= 0)


def _length_of(value, bound_):
    """A run-time length holding `value` (a traced int), at most bound_."""
    return Extent(bound_, value.astype(np.int64)._view.storage)


def _extent_operators():
    """Every int operation of an Extent on the length it holds (int's own would use the bound).
    Lengths times, plus or floor-divided by lengths are lengths again, bounded (n * 4 rows, a
    shape for np.ones or a reshape); the rest are traced numbers."""
    value = length_value

    def times(self, other):
        if type(other) in (list, tuple, str):
            return repetition(other, self)
        if _a_length(other):
            return _length_of(self.value() * value(other), bound(self) * bound(other))
        return self.value() * value(other)

    def plus(self, other):
        if _a_length(other):
            return _length_of(self.value() + value(other), bound(self) + bound(other))
        return self.value() + value(other)

    Extent.__mul__ = Extent.__rmul__ = times
    Extent.__add__ = Extent.__radd__ = plus
    Extent.__floordiv__ = lambda self, other: (
        _length_of(self.value() // other, bound(self) // other) if type(other) is int and other > 0
        else self.value() // value(other))
    for name in ("sub", "floordiv", "truediv", "mod", "divmod", "pow", "lshift", "rshift", "and", "or", "xor"):
        for form in (f"__{name}__", f"__r{name}__"):
            if form != "__floordiv__":
                setattr(Extent, form, lambda self, other, form=form: getattr(self.value(), form)(value(other)))

    def power(self, other, modulo=None):
        if modulo is not None:  # (pow(n, 2, 7))
            raise trace_error("pow() with a modulus of a length known only when the function runs",
                              "use % after **")
        return self.value() ** value(other)

    Extent.__pow__ = power
    for name in ("lt", "le", "gt", "ge"):
        setattr(Extent, f"__{name}__", lambda self, other, name=name: getattr(self.value(), f"__{name}__")(
            other.value() if isinstance(other, Extent) else other))
    for name in ("neg", "pos", "abs", "invert"):
        setattr(Extent, f"__{name}__", lambda self, name=name: getattr(self.value(), f"__{name}__")())
    Extent.__round__ = lambda self, *ndigits: self.value().__round__(*ndigits)
    for name in ("__trunc__", "__floor__", "__ceil__", "conjugate"):  # an int's own value
        setattr(Extent, name, lambda self: self)
    Extent.real = Extent.numerator = property(lambda self: self)
    Extent.imag, Extent.denominator = property(lambda self: 0), property(lambda self: 1)
    for name in ("bit_length", "bit_count", "to_bytes", "as_integer_ratio", "is_integer"):
        setattr(Extent, name, lambda self, *args, name=name, **kwargs: _refuse_int_method(name))


def _refuse_int_method(name):
    raise trace_error(f"int.{name}() of a length known only at run time", "compute it with NumPy on the length")


_extent_operators()


class _Flat:
    """x.flat of a traced array: its elements in C order, read (a copy) and written (MTCNN's pad:
    `edx.flat[np.where(ex > w)] = np.expand_dims(...)`) as through NumPy's flatiter, where x is
    contiguous or 1-d. The values written are flattened; NumPy repeats fewer of them over the
    places, which strider refuses (one value fills them all, as NumPy's)."""

    def __init__(self, base):
        self.base = base

    def _line(self):
        t = self.base
        if t.ndim == 1:
            return t
        if t.is_dynamic or not t._view.is_c_contiguous:
            raise unsupported("x.flat of an array that is not contiguous or has a run-time length and more than one "
                              "axis", "index x.reshape(-1) of a contiguous copy, and write back")
        return t.reshape(-1)

    @staticmethod
    def _key(key):
        return key[0] if type(key) is tuple and len(key) == 1 else key  # (np.where's tuple, as NumPy takes it)

    def __getitem__(self, key):
        r = self._line()[self._key(key)]
        return r.copy() if isinstance(r, Tracer) and r.ndim else r

    def __setitem__(self, key, value):
        line = self._line()
        v = as_tracer(value)
        places = line[self._key(key)]
        one_place = not (isinstance(places, Tracer) and places.ndim)
        if one_place and v.ndim and not v.is_dynamic and v.size == 1:
            v = v.reshape(())
        elif v.ndim > 1:
            v = v.reshape(-1)
        n, m = (x.shape[0] if isinstance(x, Tracer) and x.ndim else 1 for x in (places, v))
        if type(n) is int and type(m) is int and m not in (1, n):
            raise unsupported(f"x.flat[...] = {m} values for {n} places (NumPy repeats them)",
                              "give one value or one per place")
        line[self._key(key)] = v

    def __iter__(self):
        return iter(self.base.ravel())

    def __len__(self):
        return self.base.size

    def copy(self):
        return self.base.ravel().copy()


_RUN_TIME_LIST = ("a list whose length is known only when the function runs (filled in a loop on a traced condition, "
                  "or .tolist() of such an array)")


class TracedList:
    """A Python list a loop on a traced condition appends to: `data` holds room for its items
    (rows of one shape and dtype), the 0-d int64 storage `length` how many it holds when the
    function runs. Outside the loop it reads as the array of its items (np.array(keep),
    x[keep]); returned, it is the list of them."""

    def __init__(self, data, length, weak=None, scalar=True):
        self.data = data          # Tracer (room, *item shape)
        self.length = length      # storage id
        self.weak = weak          # the Python type of numbers appended (NumPy 2 promotes them weakly)
        self.scalar = scalar      # items are what NumPy hands back as scalars

    @classmethod
    def of(cls, t, weak=None, scalar=True):
        """The list of the rows of t, an array of a run-time length (its room t's bound), with a
        length of its own (appends move it, not t's)."""
        v = t._view
        room = Tracer(t._trace, _C.View(v.storage, list(v.shape), list(v.strides), v.offset), t.dtype,
                      weak=weak if t.ndim == 1 else None)
        return cls(room, t.shape[0].value().copy()._view.storage, weak, scalar)

    def size(self):
        """The run-time length (an Extent bounded by the room)."""
        return Extent(self.data._view.shape[0], self.length)

    by_region = False  # a loop or branch on a traced condition made it, with room for its trips
    mixed = False  # items hold numbers of kinds known only at run time (`max(0, x)`), kept in the widest
    # numbers of several kinds appended (`0` on one path, a float64 on another), kept in the widest:
    # per kind, its dtype and the 0-d int64 storage counting its appends (np.array's dtype is the run's)
    kinds = None

    def array(self, raw=False):
        """The items as an array of run-time length; `raw`: as the list keeps them, for a cast or a
        copy (else a mixed list's are refused: their kinds are the run's)."""
        if self.mixed and not raw:
            raise trace_error("a list whose items hold numbers of kinds known only when the function runs (`max(0, "
                              "x)` of a float32 x, `0` on one path and a float64 on another) used otherwise than made "
                              "an array", "np.array(lst) or np.asarray(lst, dtype)")
        v = self.data._view
        view = _C.View(v.storage, list(v.shape), list(v.strides), v.offset, [self.length] + [-1] * (len(v.shape) - 1))
        return Tracer(self.data._trace, view, self.data.dtype, weak=self.weak if len(v.shape) == 1 else None,
                      readonly=None)

    def __len__(self):
        raise trace_error(f"len() of {_RUN_TIME_LIST}", "len(x) in the compiled "
                          "function's own code works (strider rewrites it)")

    def __bool__(self):
        raise trace_error(f"the truth value of {_RUN_TIME_LIST}",
                          "`if lst:` in the compiled function's own code works (strider rewrites it)")

    def __iter__(self):
        raise trace_error(f"iterating over or unpacking (`[a, *lst]`) {_RUN_TIME_LIST}", "use it as an array "
                          "(np.array(lst), np.concatenate) or index it")

    def __getitem__(self, key):
        items = self.array()[key]
        if not isinstance(key, slice):
            return self._item(items)
        # a slice of a list is a list (returned as one, as Python's), of its own
        n = items.shape[0]
        length = n.storage if isinstance(n, Extent) else self.data._trace.const(np.int64(n))._view.storage
        return TracedSlice(items, length, self.weak, self.scalar)

    def _item(self, items):
        """An item as the list holds it: an array, a Python number, or a list or tuple of numbers
        (a row the list holds as an array: `out[0] + [1.0]` joins lists, as Python's does)."""
        weak = self.weak
        if weak in (bool, int, float):
            return _python_numbers(items, weak)
        if type(weak) is tuple:  # (list or tuple, the type of each position: a Python or NumPy number's)
            row = (_python_numbers(items[k], kind) for k, kind in enumerate(weak[1:]))
            return tuple(row) if weak[0] is tuple else ItemList(row)
        return items

    def like_item(self):
        """An item of the list's kind and shape (zeros, not one of its items: it may hold none)."""
        t = as_tracer(np.zeros(tuple(self.data.shape[1:]), self.data.dtype))
        t._scalar = self.weak is None and self.scalar and not t.ndim
        return self._item(t)

    def __repr__(self):
        return f"<list filled at run time, at most {self.data._view.shape[0]} items>"


    def copy(self):
        return self[:]

    def __getattr__(self, name):
        if name in LIST_METHODS:  # the rest of list's API: NumPy runs the call (a graph break)
            raise trace_error(f"list.{name}() of {_RUN_TIME_LIST}",
                              "use it as an array (np.array(lst)), or build another list")
        raise AttributeError(f"'list' object has no attribute '{name}'")


LIST_METHODS = frozenset(n for n in dir(list) if not n.startswith("_"))


class TracedSlice(TracedList):
    """A slice of a TracedList (keep[:k]): a list of its items, which may share the list's
    storage, so nothing is appended to it."""


class TracedRows(TracedList):
    """A Python list a loop on a traced condition appends arrays of run-time lengths to (YOLOX's
    detections of each class): `data` holds room for their rows one after another (rows of one
    shape and dtype), the 0-d int64 storages `rows` how many rows and `length` how many arrays it
    holds when the function runs (at most `items`). np.concatenate(lst) (np.vstack, np.hstack)
    reads the rows, len(lst) and `if lst:` the count; any other use is refused."""

    def __init__(self, data, rows, length, items):
        super().__init__(data, length, None, False)
        self.rows = rows
        self.items = items

    def size(self):
        return Extent(self.items, self.length)

    def joined(self):
        """The arrays' rows, one after another: np.concatenate(lst)."""
        v = self.data._view
        view = _C.View(v.storage, list(v.shape), list(v.strides), v.offset, [self.rows] + [-1] * (len(v.shape) - 1))
        return Tracer(self.data._trace, view, self.data.dtype, readonly=None)

    def array(self):
        raise trace_error("a list of arrays of run-time lengths filled in a loop on a traced condition used as one "
                          "array (np.array, an index, a result)", "join it with np.concatenate(lst)")

    def __getitem__(self, key):
        self.array()

    def __repr__(self):
        return f"<list of arrays filled at run time, at most {self.items} arrays of {self.data._view.shape[0]} rows in all>"


class ItemList(list):
    """An item of a list of a run-time length that is itself a list: a copy of a row the list
    holds in an array, so a change to it would not reach the list (Python's item is the list
    itself): refused. Returned, it is a list."""

    def _changed(self, *args, **kwargs):
        raise trace_error("a change to a list that is an item of a list filled at run time (strider holds the "
                          "items as rows of an array)", "build a new list (row + [v]) and keep lists of numbers")

    append = extend = insert = pop = remove = clear = sort = reverse = _changed
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _changed


def _python_numbers(t, kind):
    """Numbers of `kind`, Python's or a NumPy scalar type (a copy: a list's numbers are values),
    as nested lists past 0-d."""
    if t.ndim:
        return ItemList(_python_numbers(t[i], kind) for i in range(t.shape[0]))
    weak = kind if kind in _WEAK_DTYPES else None
    n = t.astype(_WEAK_DTYPES[kind] if weak else kind, copy=True)
    n._weak, n._scalar = weak, weak is None
    return n


def item_list(x):
    """Whether x is a list a traced loop filled with items of one shape (a TracedList or a slice
    of one), not arrays of run-time lengths (a TracedRows)."""
    return isinstance(x, TracedList) and not isinstance(x, TracedRows)


def reshape_units(t, shape):
    """A reshape of an array with run-time lengths that only adds or drops axes of length 1 (one
    -1 standing for one of its axes): a view. Arrays of static shape reshape as NumPy's does."""
    if not t.is_dynamic:
        return t.view_of(t._view.reshape([int(d) for d in shape]), scalar=t._scalar)
    v = t._view
    old = [(Extent(d, e) if e >= 0 else d, st) for d, st, e in zip(v.shape, v.strides, v.extents) if e >= 0 or d != 1]
    dims, strides, k = [], [], 0
    for d in shape:
        if not isinstance(d, Extent) and d == 1:
            dims.append(1)
            strides.append(0)
            continue
        o = old[k][0] if k < len(old) else None
        if isinstance(d, Extent):
            same = isinstance(o, Extent) and d.storage == o.storage
        else:  # -1 stands for the axis, run-time or not; another number for a static axis as long
            same = o is not None and (d == -1 or not isinstance(o, Extent) and d == o)
        if not same:
            raise unsupported(f"reshaping an array of shape {t.shape} whose length is known only at run time to "
                              f"{tuple(shape)}", "only axes of length 1 can be added or removed")
        dims.append(old[k][0])
        strides.append(old[k][1])
        k += 1
    if k != len(old):
        raise unsupported(f"reshaping an array of shape {t.shape} whose length is known only at run time to "
                          f"{tuple(shape)}", "only axes of length 1 can be added or removed")
    return t.view_of(_C.View(v.storage, [bound(d) for d in dims], strides, v.offset,
                             [d.storage if isinstance(d, Extent) else -1 for d in dims]), scalar=t._scalar)


def fresh(shape, dtype, order=None):
    trace = current_trace()
    return Tracer(trace, trace.temp(shape, dtype, order), dtype)


def keep_order(inputs, ndim):
    """NumPy's order='K' for a new elementwise result: the axes, outermost first, sorted the way
    the inputs (as broadcast) lay them out in memory; C order wins where they disagree
    (npyiter_find_best_axis_ordering)."""
    strides = [t._view.strides for t in inputs if t.ndim == ndim]
    # innermost first, as NumPy's iterator keeps them; a broadcast axis says nothing
    return insertion_order(list(range(ndim - 1, -1, -1)), lambda a0, a1: [
        None if st[a0] == 0 or st[a1] == 0 else abs(st[a1]) > abs(st[a0]) for st in strides])[::-1]


def insertion_order(perm, votes):
    """NumPy's stable insertion sort of axes (its iterator's, and PyArray_CreateMultiSortedStridePerm's):
    `perm` in its starting order; votes(a0, a1), for an axis a0 against one before it, says per
    array whether a0 goes first (None: that array says nothing). The first array that says
    decides a move, and any that says no cancels it: the starting order wins where they disagree."""
    for i0 in range(1, len(perm)):
        a0, pos = perm[i0], i0
        for i1 in range(i0 - 1, -1, -1):
            ambiguous, swap = True, False
            for v in votes(a0, perm[i1]):
                if v is None:
                    continue
                if not v:
                    swap = False
                elif ambiguous:
                    swap = True
                ambiguous = False
            if ambiguous:
                continue
            if not swap:
                break
            pos = i1
        perm[pos + 1:i0 + 1] = perm[pos:i0]
        perm[pos] = a0
    return perm


def contiguous(shape, strides, axes):
    """Whether a view is dense with `axes` (outermost first) as its memory order; size-1 axes
    are ignored and empty views are dense, as in NumPy's contiguity flags."""
    shape = [bound(d) for d in shape]
    if 0 in shape:
        return True
    expect = 1
    for a in reversed(axes):
        if shape[a] != 1:
            if strides[a] != expect:
                return False
            expect *= shape[a]
    return True


def like_order(t, order="K"):
    """The axes, outermost first (None: C order), of a new array made like `t` in `order`, laid
    out as NumPy's PyArray_NewLikeArray does (astype, copy, *_like, array): K keeps C or F order
    where `t` is so contiguous, else sorts the axes by decreasing |stride|, ties in axis order, so
    a broadcast (stride-0) axis goes innermost; A is F only for an F- and not C-contiguous `t`."""
    n, shape, strides = t.ndim, t.shape, t._view.strides
    c_axes, f_axes = list(range(n)), list(range(n - 1, -1, -1))
    if n <= 1 or order == "C":
        return None
    if order == "F":
        return f_axes
    if contiguous(shape, strides, c_axes):
        return None
    if contiguous(shape, strides, f_axes):
        return f_axes
    if order == "A":
        return None
    return sorted(c_axes, key=lambda a: -abs(strides[a]))


def emit(name, inputs, shape, dtype, axes=(), order=None, **flags):
    """Records `name(inputs)` into a new temporary and returns its Tracer."""
    trace = current_trace()
    view = trace.temp(shape, dtype, order)
    trace.op(name, inputs, view, axes)
    trace.fold(name, inputs, view, np.dtype(dtype), axes)
    trace.number(name, inputs, view, dtype, axes)
    return Tracer(trace, view, dtype, **flags)


def arange_at(start, step, n):
    """start + i * step for i < n, int64 (start a 0-d Tracer or an int, step an int; n may be a
    run-time length): an arange of constants, shifted where start is traced, so that compiled
    loops see the step (a slice from a traced position reads memory in strides, not gathers)."""
    trace = current_trace()
    if not isinstance(start, Tracer):
        return emit("arange", [trace.const(np.int64(start)), trace.const(np.int64(start + step))], (n,), np.int64)
    return np.add(emit("arange", [trace.const(np.int64(0)), trace.const(np.int64(step))], (n,), np.int64), start)


def as_tracer(x, dtype=None):
    """x as a Tracer of the current trace; Python and NumPy values become constants (in `dtype`
    when given, with NumPy's checks: an out-of-range Python int raises OverflowError)."""
    trace = current_trace()
    if isinstance(x, Extent):
        x = x.value()
    if isinstance(x, TracedList):
        x = x.array()
    if isinstance(x, Tracer):
        check_live(x)
        return x if dtype is None else x.astype(dtype, copy=False)
    if isinstance(x, (list, tuple)):
        return IMPL["array"](x, dtype=dtype)
    if not isinstance(x, (bool, int, float, np.generic, np.ndarray)) and not hasattr(type(x), "__array__"):
        raise unsupported(f"a value of type {type(x).__name__} in an array operation",
                          "use arrays, Python numbers or NumPy scalars")
    t = trace.const(x, dtype)
    if type(x) in (bool, int, float) and dtype is None:
        t._weak = type(x)
    return t


def check_fits(x, dtype):
    """NumPy raises OverflowError where a Python int meets or is stored into an integer array of
    a dtype that cannot hold it (`x_uint8 + 300`, `x_uint8[0] = 300`); a constant one raises as
    the function traces, a traced one is checked when the function runs."""
    dtype = np.dtype(dtype)
    if isinstance(x, Tracer) and x._weak is int and dtype.kind in "iu" and dtype != np.int64:
        check_converts(x, dtype, f"Python integer out of bounds for {dtype}")
    return x


def written(x, dtype, store="cast"):
    """x as a Tracer of the dtype of the array it is stored into, cast unsafely as NumPy does, but
    with NumPy's checks of a scalar stored: a Python int the dtype cannot hold raises OverflowError
    wherever it is stored (check_fits); a Python float stored as an item (`store`: "item", a basic
    index or fill) or by an index ("index", an index array or a mask) converts as int() does, and
    so does a NumPy scalar stored as an item of a signed integer array (check_converts)."""
    dtype = np.dtype(dtype)
    check_fits(x, dtype)
    if store != "cast" and dtype.kind in "iu":
        if isinstance(x, Tracer) and not x.ndim and (x._weak is float or (
                store == "item" and x._scalar and x._weak is None and dtype.kind == "i" and x.dtype.kind in "fiu"
                and not np.can_cast(x.dtype, dtype))):  # (an int8 item into int8 needs no check)
            check_converts(x, dtype, f"Python integer out of bounds for {dtype}")
        elif not isinstance(x, Tracer) and (type(x) is float or (isinstance(x, np.generic) and x.dtype.kind in "fiu")):
            probe = np.zeros(1, dtype)  # NumPy's own error, as the function traces
            if store == "item":
                probe[0] = x
            else:
                probe[[0]] = x
    return as_tracer(x, dtype)


def check_converts(x, dtype, past):
    """Python's int() of the traced number x into `dtype`'s range, checked when the function runs:
    a float truncates, NaN raises ValueError and infinity OverflowError, a value past the range
    OverflowError (`past`, its message). Each input fails one check at most, so the order the
    checks run in does not matter."""
    info, trace = np.iinfo(dtype), x._trace

    def check(holds, message, error):  # (of an array's elements, np.vectorize's: all of them)
        trace.check_assert(holds if holds.ndim == 0 else np.all(holds), message, error)

    if x.dtype.kind == "f":
        t = np.trunc(x.astype(np.float64))
        nan, inf = np.isnan(t), np.isinf(t)
        check(~nan, "cannot convert float NaN to integer", ValueError)
        check(~inf, "cannot convert float infinity to integer", OverflowError)
        check(nan | inf | ((t >= float(info.min)) & (t < float(int(info.max) + 1))), past, OverflowError)
        return
    own = np.iinfo(x.dtype)  # (a bound x's own dtype keeps is no check)
    bounds = ([x >= int(info.min)] if info.min > own.min else []) + ([x <= int(info.max)] if info.max < own.max else [])
    if bounds:
        check(functools.reduce(operator.and_, bounds), past, OverflowError)


def as_text(text, what):
    """An object's text (`text`) where strider, NumPy, a library or builtin print (_control.print_)
    asks for it; where the user's code does (f"{x}", str(x), "%s" % x), a TraceError: the value
    is known only when the function runs, and the text would be made once, as it traces."""
    frame = sys._getframe(2)
    if user_file(frame.f_code.co_filename):
        raise trace_error(f"the text of {what} (str, repr, % or an f-string): its value is known only when the "
                          "function runs", "return the value and print or format it outside the compiled function")
    return text


def check_int_of_float(t, what):
    """Python's int() and round() of the float t: an int past int64 (exact in Python) is refused."""
    check_converts(t, np.int64, f"{what} of a float past int64's range: strider holds a traced Python int in int64")


def holds_traced(items, depth=0):
    """Whether a list, tuple or dict's values hold a traced value (8 levels deep at most)."""
    values = items.values() if type(items) is dict else items
    return any(isinstance(v, (Tracer, Extent, TracedList))
               or (type(v) in (list, tuple, dict) and depth < 8 and holds_traced(v, depth + 1)) for v in values)


def weak_type(x):
    """What NumPy's promotion sees: Python's int/float for weak scalars, else a dtype."""
    if isinstance(x, Tracer):
        if x._weak in (int, float):
            return x._weak
        return x.dtype
    if isinstance(x, (np.ndarray, np.generic)):
        return x.dtype
    if isinstance(x, bool):
        return np.dtype(np.bool_)
    if isinstance(x, (int, float)):
        return type(x)
    return np.asarray(x).dtype


def shape_of(x):
    if isinstance(x, Tracer):
        return x.shape
    return np.shape(x)


def _refuses_dimensions():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            int(np.ones(1))
        except TypeError:
            return True
    return False


_ONLY_0D = _refuses_dimensions()  # NumPy 2.4's int() and float() of an array: 0-d only (earlier ones warned)


def only_0d(t):
    """NumPy's TypeError for int() or float() of an array with dimensions, where this NumPy raises it."""
    if t.ndim and _ONLY_0D:
        raise TypeError("only 0-dimensional arrays can be converted to Python scalars")


class Tracer:
    """A traced array: a view (storage, shape, strides, offset) in the trace's graph.

    `_weak` is the Python type of a traced Python scalar (NumPy 2 promotes those weakly);
    `_scalar` marks values NumPy would hand back as NumPy scalars rather than 0-d arrays;
    `_readonly` says why the view may not be written ("arg", "broadcast", "const"), or None.
    """

    __slots__ = ("_trace", "_view", "dtype", "_weak", "_scalar", "_readonly", "_shape")
    __array_priority__ = 1000

    def __init__(self, trace, view, dtype, weak=None, scalar=False, readonly=None):
        self._trace = trace
        self._view = view
        self.dtype = np.dtype(dtype)
        self._weak = weak
        self._scalar = scalar
        self._readonly = readonly
        self._shape = None  # (the view never changes: its shape is made once, on first use)

    # -- metadata (static while tracing) --
    @property
    def __class__(self):
        """What the user's isinstance checks see (type(x) stays Tracer): np.ndarray, the NumPy
        scalar type for what NumPy hands back as one, the Python type of a traced Python number
        (mmdet's eval_recalls: `isinstance(proposal_nums, int)` of an argument), which NumPy's
        and strider's own code see as Tracer (their isinstance(x, int) does not expect an array)."""
        if self._weak is not None:
            user = not self.ndim and not _internal(sys._getframe(1).f_code.co_filename)
            return self._weak if user else Tracer
        return self.dtype.type if self._scalar else np.ndarray

    @property
    def shape(self):
        if self._shape is None:
            v = self._view
            self._shape = tuple(Extent(d, e) if e >= 0 else d for d, e in zip(v.shape, v.extents))
        return self._shape

    @property
    def is_dynamic(self):
        """Whether a dimension's length is known only at run time."""
        return any(type(d) is Extent for d in self.shape)

    @shape.setter
    def shape(self, value):
        raise unsupported("setting x.shape", "use x = x.reshape(shape)")

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        if self.is_dynamic:
            n = 1
            for d in self.shape:
                n = n * d
            return n
        return math.prod(self._view.shape)

    @property
    def itemsize(self):
        return self.dtype.itemsize

    @property
    def nbytes(self):
        return self.size * self.dtype.itemsize

    @property
    def flat(self):
        return _Flat(self)

    @property
    def strides(self):
        return tuple(s * self.dtype.itemsize for s in self._view.strides)

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of unsized object")
        if isinstance(self.shape[0], Extent):
            raise trace_error("len() of an array whose length is known only when the function runs (a boolean "
                              "mask's result)", "use x.shape[0], a traced length that works in arithmetic")
        return self.shape[0]

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        if isinstance(self.shape[0], Extent):
            raise trace_error("iterating over an array whose length is known only when the function runs (a boolean "
                              "mask's result) where strider does not rewrite the loop (set(), list(), unpacking, a "
                              "function it does not convert)", "loop over it in the function's own `for`, or use "
                              "array operations (np.unique for a set)")
        return (self[i] for i in range(len(self)))

    def __repr__(self):
        value = self._known_value()
        if value is not None and user_file(sys._getframe(1).f_code.co_filename):
            return repr(value)
        return as_text(self._text(), "a traced array")

    def __str__(self):
        value = self._known_value()
        return str(value) if value is not None else as_text(self._text(), "a traced array")

    def _text(self):
        return f"Tracer(shape={self.shape}, dtype={self.dtype})"

    def _known_value(self):
        """The value as NumPy (or Python, for a traced Python number) would hold it, where tracing
        knows it; else None."""
        value = concrete(self)
        if value is None:
            return None
        value = np.asarray(value, self.dtype)
        if self._weak is not None and not self.ndim:
            return self._weak(value)
        return value[()] if self._scalar or not self.ndim else value

    def view_of(self, view, readonly=None, scalar=False):
        """Another view of this tracer's storage."""
        return Tracer(self._trace, view, self.dtype, scalar=scalar,
                      readonly=self._readonly if readonly is None else readonly)

    # -- conversions a trace makes only of what it knows (Trace.fold) --
    def _known_item(self, convert):
        value = concrete(self)
        if value is None or value.size != 1:
            return None
        return convert(value.reshape(()).item())

    def __bool__(self):
        value = concrete(self)
        if value is not None:
            return bool(value)  # NumPy's rules (its error for more than one element)
        if not self._trace.from_arguments(self) and (message := assert_message(sys._getframe(1))) is not None:
            return self._trace.check_assert(self, message)
        if (method := called_method(sys._getframe(1))) in ("index", "count", "remove"):  # lst.index(n) compares
            raise needs_value(self, trace_error(f"list.{method}() of a traced value (it compares the value with each "
                                                "item while tracing)", "compare with an array instead: "
                                                "np.flatnonzero(np.asarray(lst) == n)"))
        raise needs_value(self, trace_error("the truth value of a traced array is not known while tracing (Python `if`, "
                          "`while`, `and`/`or` or bool() on an array value)",
                          "use np.where(cond, a, b) to select values"))

    def __float__(self):
        only_0d(self)
        if (value := self._known_item(float)) is not None:
            return value
        raise needs_value(self, trace_error("float() of a traced array", "keep the value as an array (0-d "
                                            "arrays work in arithmetic)"))

    def __int__(self):
        only_0d(self)
        if (value := self._known_item(int)) is not None:
            return value
        raise needs_value(self, trace_error("int() of a traced array", "keep the value as an array"))

    def __index__(self):
        if self.dtype.kind in "iu" and (value := known_scalar(self)) is not None:
            return int(value)
        if subscripting(sys._getframe(1)):  # names[cls_id]: a Python list, tuple or str (arrays take tracers)
            raise known_by_static(self, "an index into a Python list, tuple or str", "keep numbers in an array and "
                                  "index it (np.asarray(lst)[i]), or return the index and look the item up after "
                                  "the call")
        raise known_by_static(self, "an index or size", "shapes and indices must be known while tracing: return "
                              "the values and index or allocate after the call")

    def __complex__(self):
        raise unsupported("complex()", "strider has no complex dtypes")

    def item(self, *args):
        if not args:
            if (value := self._known_item(lambda v: v)) is not None:
                return value
            if (value := self.traced_number(None)) is not None:
                return value
        raise needs_value(self, trace_error(".item() of a traced array", "return the array and call .item() "
                                            "outside the compiled function"))

    def traced_number(self, kind):
        """kind(self) (float or int; None: what .item() gives for the dtype) as a traced Python
        number, where only the run knows the value: a copy (writing the array later leaves the
        number as it was). None where tracing should know the value instead (known, or from the
        caller's numbers, which specialize), and where a size other than 1 makes the conversion
        fail. int() of a float checks what Python's raises on (NaN, infinities) when it runs."""
        if concrete(self) is not None or self._trace.from_arguments(self) or self.is_dynamic or self.size != 1:
            return None
        k = self.dtype.kind
        if k not in "biuf":
            return None
        kind = kind or {"b": bool, "f": float}.get(k, int)
        t = self.reshape(())
        if kind is int and k == "f":  # Python's int() truncates
            t = t.astype(np.float64)
            check_int_of_float(t, "int()")
        if kind is int and self.dtype == np.uint64:  # (int(a_uint8.sum()): NumPy sums unsigned ints in uint64)
            check_converts(t, np.int64, "int() of a uint64 past int64's range: strider holds a traced Python int in "
                           "int64")
        t = t.astype({float: np.float64, int: np.int64, bool: np.bool_}[kind], copy=True)
        t._weak, t._scalar = kind, False
        return t

    def tolist(self):
        """ndarray.tolist(): nested lists of Python numbers, traced ones where only the run knows
        them: elements of one copy in the Python kind's dtype (as traced_number makes one); of an
        array whose first axis alone has a run-time length, a list of that length (a TracedList:
        `keep_all.extend(idx[keep].tolist())`, CenterNet's `dets[inds, :5].tolist()`). Other
        run-time lengths, more than _TOLIST_ITEMS elements (a number each) and uint64 are a graph
        break."""
        if (value := concrete(self)) is not None:
            return value.tolist()
        if self.ndim == 0:
            return self.item()
        # (a run-time length of the first axis alone: a list of that length, of numbers or rows)
        dynamic = self.is_dynamic and not (isinstance(self.shape[0], Extent) and
                                           not any(isinstance(d, Extent) for d in self.shape[1:]))
        many = not self.is_dynamic and self.size > _TOLIST_ITEMS
        if dynamic or many or self.dtype.kind not in "biuf" or self.dtype == np.uint64:
            raise trace_error(".tolist() of a traced array " + ("of run-time lengths past its first axis" if dynamic
                              else f"of more than {_TOLIST_ITEMS} elements" if many else f"of {self.dtype}"),
                              "return the array and convert it outside the compiled function")
        if self._trace.from_arguments(self):  # computed from the caller's numbers: they specialize
            raise needs_value(self, trace_error(".tolist() of a traced array", "return the array"))
        kind = {"b": bool, "f": float}.get(self.dtype.kind, int)
        numbers = self.astype({float: np.float64, int: np.int64, bool: np.bool_}[kind], copy=True)
        v = numbers._view
        if self.is_dynamic:
            return TracedList.of(numbers, kind)

        def nested(d, offset):  # 0-d views of the copy (an index would copy each)
            if d == numbers.ndim:
                return Tracer(self._trace, _C.View(v.storage, [], [], offset), numbers.dtype, weak=kind)
            return [nested(d + 1, offset + i * v.strides[d]) for i in range(v.shape[d])]

        return nested(0, v.offset)

    def __array__(self, dtype=None, copy=None):
        value = concrete(self)
        if value is not None:  # np.int64(n) of a value tracing knows
            return value if dtype is None else value.astype(dtype)
        if "matrixlib" in sys._getframe(1).f_code.co_filename:  # (np.matrix's constructor asks for one)
            raise unsupported("np.matrix of a traced value (an ndarray subclass whose * is a matrix product)",
                              "use arrays: @ for the product, .T as it is; .I (np.linalg.inv, which strider does not "
                              "compile either) outside the function, or a 2x2's inverse written out")
        raise needs_value(self, trace_error("a traced array was converted to a concrete NumPy array (np.asarray, "
                                            "a NumPy array created outside the trace, or a library that is not "
                                            "NumPy)", "create arrays with NumPy functions inside the compiled "
                                            "function"))

    def __hash__(self):
        # an array is unhashable, as NumPy's; a number (a NumPy scalar, a Python number) hashes by
        # its value, which only the run knows unless tracing does (a dict key, a set item); one
        # computed from the caller's numbers specializes
        if not (self._scalar or self._weak is not None):
            raise TypeError("unhashable type: 'numpy.ndarray'")
        value = self._known_value()
        if value is None:
            raise needs_value(self, trace_error("a traced number as a dict key or set item (its hash is its value, "
                                                "known only when the function runs)", "key by a value known while "
                                                "tracing, or count with np.unique / np.bincount"))
        return hash(value)

    def __format__(self, spec):
        value = self._known_value()
        if value is not None:
            return format(value, spec)
        if spec:  # f"{x:.2f}" needs the value; f"{x}" is str(x), as for any object
            raise trace_error(f"formatting a traced array with {spec!r}", "return the value and format it "
                              "outside the compiled function")
        return as_text(self._text(), "a traced array")

    def __getattr__(self, name):
        # only names normal lookup missed: the parts of ndarray's API strider does not trace are
        # named with the user's line instead of an AttributeError about a class users never wrote
        if name in _MEMORY_ATTRS:
            raise trace_error(f"x.{name} of a traced array (it has no memory while tracing)",
                              "return the array and use it outside the compiled function")
        if not name.startswith("_") and hasattr(np.ndarray, name):
            raise unsupported(f"ndarray.{name}", "see the README for the supported NumPy functions")
        if name in LIST_METHODS:
            # an item of a list a loop or branch on a traced condition fills is a row of an array
            # (groups[k].append(b) on a list of lists): NumPy runs the call, and raises NumPy's
            # AttributeError where the value was an array
            raise trace_error(f".{name}() of a traced array (an item of a list filled in a loop or branch on a "
                              "traced condition is a row of an array)", "keep the inner lists out of such loops")
        raise AttributeError(f"'Tracer' object has no attribute {name!r}")

    # -- NumPy's dispatch protocols --
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if any(getattr(type(x), "takes_ufuncs", False) for x in inputs):
            return NotImplemented  # a Choice computes on each of its sides (_choice.py)
        check_live(*inputs, *kwargs.get("out", ()))
        return IMPL["ufunc_method"](ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        check_live(self)
        return IMPL["array_function"](func, args, kwargs)

    # -- indexing --
    __getitem__ = _Method()
    __setitem__ = _Method()

    # -- ndarray's methods (IMPL has them from _ops) --
    sum = _Method()
    prod = _Method()
    max = _Method()
    min = _Method()
    any = _Method()
    all = _Method()
    argmax = _Method()
    argmin = _Method()
    mean = _Method()
    var = _Method()
    std = _Method()
    swapaxes = _Method()
    squeeze = _Method()
    clip = _Method()
    round = _Method()
    repeat = _Method()
    astype = _Method()
    fill = _Method()
    ravel = _Method()
    broadcast_to = _Method()
    dot = _Method()
    trace = _Method()
    diagonal = _Method()
    copy = _Method()
    flatten = _Method()
    reshape = _Method()
    transpose = _Method()
    __round__ = _Method()
    __copy__ = _Method()
    __deepcopy__ = _Method()
    nonzero = _Method()
    argsort = _Method()
    cumsum = _Method()
    cumprod = _Method()
    searchsorted = _Method()
    sort = _Method()
    take = _Method()
    compress = _Method()
    partition = _Method()
    argpartition = _Method()
    put = _Method()
    T = property(lambda self: self.transpose())
    real = property(lambda self: self)

    def view(self, dtype=None, type=None):
        if type is not None or (dtype is not None and np.dtype(dtype) != self.dtype):
            raise unsupported(".view() with another dtype or type", "reinterpreting memory is not supported; use .astype")
        return self.view_of(self._view)



_operator = threading.local()


def _python_operator(uf, *args):
    """uf(*args) for a Python operator: on Python numbers alone its result is a Python number
    (np.minimum(n, 2) of the same numbers is NumPy's scalar): ufunc_call reads the mark."""
    _operator.active = True
    try:
        return uf(*args)
    finally:
        _operator.active = False


def _multiply(a, b):
    """a * b: NumPy's multiply, but a list, tuple or string times a Python int or a NumPy integer
    scalar repeats it (an array of any shape multiplies elementwise, as ndarray's does)."""
    t, seq = (a, b) if isinstance(a, Tracer) else (b, a)
    if type(seq) in (list, tuple, str) and (t._weak in (int, bool) or (t._scalar and t.dtype.kind in "iub")):
        return repetition(seq, t)
    return _python_operator(np.multiply, a, b)


def repetition(seq, n):
    """seq * n, n known only when the function runs: a list of a run-time length where n is a
    length and seq a list of numbers (_control.repeated), else a TraceError that refuses it."""
    from ._control import repeated  # (_control builds on this module)
    return repeated(seq, n)


def _compared(uf, t, other):
    """`t == other` (`!=`): with None never equal, as NumPy's elementwise comparison with an
    object (a traced Python number or a NumPy scalar: Python's False; a 0-d array: np.False_)."""
    if other is not None:
        return _python_operator(uf, t, other)
    if (t._weak is not None or t._scalar) and not t.ndim:
        return uf is np.not_equal
    if not t.ndim:
        return np.bool_(uf is np.not_equal)
    return np.full_like(t, uf is np.not_equal, dtype=np.bool_)


def python_operator_call():
    """Whether the ufunc call being traced is a Python operator's (and clears the mark, so that
    the ufuncs it calls in turn are not)."""
    active = getattr(_operator, "active", False)
    _operator.active = False
    return active


def _install_operators():
    """Python operators as NumPy's ufuncs, the way ndarray defines them."""
    binary = {
        "add": np.add, "sub": np.subtract, "mul": np.multiply, "truediv": np.true_divide,
        "floordiv": np.floor_divide, "mod": np.remainder, "pow": np.power, "and": np.bitwise_and,
        "or": np.bitwise_or, "xor": np.bitwise_xor, "lshift": np.left_shift, "rshift": np.right_shift,
        "matmul": np.matmul,
    }
    for name, uf in binary.items():
        setattr(Tracer, f"__{name}__", lambda self, other, uf=uf: _python_operator(uf, self, other))
        setattr(Tracer, f"__r{name}__", lambda self, other, uf=uf: _python_operator(uf, other, self))
        setattr(Tracer, f"__i{name}__", lambda self, other, uf=uf: _inplace(uf, self, other))
    Tracer.__mul__ = lambda self, other: _multiply(self, other)
    Tracer.__rmul__ = lambda self, other: _multiply(other, self)
    compare = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
               "gt": np.greater, "ge": np.greater_equal}
    for name, uf in compare.items():
        setattr(Tracer, f"__{name}__", lambda self, other, uf=uf: _python_operator(uf, self, other))
    Tracer.__eq__ = lambda self, other: _compared(np.equal, self, other)
    Tracer.__ne__ = lambda self, other: _compared(np.not_equal, self, other)
    Tracer.__divmod__ = lambda self, other: (self // other, self % other)
    Tracer.__rdivmod__ = lambda self, other: (other // self, other % self)
    # ndarray's `x ** 2` calls np.square (which keeps bool's NumPy dtype rules)
    Tracer.__pow__ = lambda self, other: _python_operator(
        np.square, self) if type(other) is int and other == 2 else _python_operator(np.power, self, other)
    unary = {"neg": np.negative, "pos": np.positive, "abs": np.absolute, "invert": np.invert}
    for name, uf in unary.items():
        setattr(Tracer, f"__{name}__", lambda self, uf=uf: _python_operator(uf, self))


def _inplace(uf, self, other):
    # Python and NumPy scalars are immutable: `s += 1` rebinds, as it does outside a trace
    if self._weak is not None or self._scalar:
        return _python_operator(uf, self, other)
    if in_step(self) and _stored_back(sys._getframe(2)):
        return uf(self, other)  # x[i + 1:] *= w: the subscript assignment that follows writes x, not the copy
    return uf(self, other, out=self)


def in_step(t):
    """Whether t is a copy standing for NumPy's view of another array, kept in step with it
    (Trace.copies): what is written into it is written into that array again."""
    return t._trace.copies.get(t._view.storage, (None,) * 3)[2] is not None


def _stored_back(frame):
    """Whether the user's frame is in `x[key] op= v` (its next store is the subscript's)."""
    while frame is not None and _internal(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None:
        return False
    following = [i for i in dis.get_instructions(frame.f_code) if i.offset > frame.f_lasti][:4]
    for ins in following:
        if ins.opname == "STORE_SUBSCR":
            return True
        if ins.opname not in ("SWAP", "ROT_THREE", "ROT_TWO", "COPY", "CACHE"):
            return False
    return False


_install_operators()


def check_writeable(t):
    """NumPy's error for writes into read-only memory; ours for writes into constants."""
    if t._readonly == "const":
        raise unsupported("writing into a constant (a NumPy array created outside the compiled function)",
                          "pass it as an argument, or copy it with np.array(c) first")
    if t._readonly == "top_k":
        raise unsupported("writing into the first k elements of a sort of a run-time length (strider selects "
                          "them as a top-k, NumPy's result is a view of the sorted array)",
                          "write into the sorted array itself: s[:k] = v")
    if t._readonly == "copy":
        raise unsupported("writing into the result of indexing an array whose length is known only at run time "
                          "(NumPy's result would be a view; strider's is a copy)", "write through the array itself: "
                          "x[k] = v")
    if t._readonly == "stand_in":
        raise unsupported(f"writing into {_STAND_IN}", "write into the array itself")
    if t._readonly == "overlap":
        raise unsupported("writing through an as_strided view whose elements overlap (the order of its writes "
                          "would be NumPy's loop's)", "write into the array it views")
    if t._readonly is not None:
        raise ValueError("assignment destination is read-only")
