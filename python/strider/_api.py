"""strider.compile: signatures, the trace cache, running a lowered program, building results."""
import functools
import inspect
import os
import sys
import threading
import types

import numpy as np

from . import _C, _cuda
from ._errors import ScheduleError, StriderError, UnsupportedError, _internal, unsupported
from ._ops import CREATION
from ._tracer import IR_DTYPES, Trace, Tracer, as_tracer, check_dtype, contiguous, current_trace

_TARGETS = ("cpu", "cuda", "auto")


# -- arguments: pytrees of arrays, runtime scalars and static values --

def _flatten(value, leaves):
    """Replaces arrays and Python numbers by leaf markers; returns the static structure."""
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(_flatten(v, leaves) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple((k, _flatten(value[k], leaves)) for k in sorted(value)))
    if isinstance(value, np.ndarray) and type(value) is not np.ndarray:
        # np.matrix, masked arrays: the same operators mean other things (matrix `*`, masks)
        raise unsupported(f"an argument of type {type(value).__name__} (a subclass of ndarray)",
                          "pass np.asarray(x), or the data and mask as arrays")
    if type(value) is int and not -2**63 <= value < 2**63:
        # no int64 holds it: a static value, which NumPy's weak promotion then places (a float
        # in float arithmetic, OverflowError against int64), as it does outside a trace
        return ("static", "int", value)
    if isinstance(value, (np.ndarray, np.generic, bool, int, float, _C.DeviceArray)):
        leaves.append(value)
        return ("leaf",)
    if isinstance(value, Tracer):
        raise unsupported("a traced value kept from an earlier trace as an argument",
                          "pass arrays, and return what the compiled function computes")
    if _cuda.on_device(value):
        raise unsupported(f"an array in GPU memory ({type(value).__name__}) with target='cpu'",
                          "compile with target='cuda' or target='auto'")
    try:
        hash(value)
    except TypeError:
        raise unsupported(f"an argument of type {type(value).__name__}",
                          "pass arrays, numbers, or hashable static values") from None
    return ("static", type(value).__name__, value)


def _unflatten(spec, leaves):
    kind = spec[0]
    if kind == "leaf":
        return next(leaves)
    if kind == "static":
        return spec[2].value if isinstance(spec[2], _Fixed) else spec[2]
    if kind == "dict":
        return {k: _unflatten(s, leaves) for k, s in spec[1]}
    items = [_unflatten(s, leaves) for s in spec[1]]
    return tuple(items) if kind == "tuple" else items


def _layout(leaves):
    """The cache key and aliasing layout of a call's leaves (C++: _C.call_layout): leaves whose
    memory overlaps share one storage, an aliasing group."""
    layout = _C.call_layout(tuple(leaves))
    if layout is None:
        _refuse_leaves(leaves)
    return layout


def _refuse_leaves(leaves):
    """Names the argument the dispatcher could not take."""
    arrays = [(i, a) for i, a in enumerate(leaves) if isinstance(a, np.ndarray)]
    for i, a in enumerate(leaves):
        if isinstance(a, (np.ndarray, np.generic, _C.DeviceArray)):
            check_dtype(a.dtype, f"argument {i}")
    devices = [(i, a) for i, a in enumerate(leaves) if isinstance(a, _C.DeviceArray)]
    for i, a in devices:
        if any(s % a.dtype.itemsize for s in a.strides):
            raise unsupported(f"argument {i} with strides that are not a multiple of its itemsize",
                              "pass a contiguous copy")
    if devices:
        raise unsupported("arrays in GPU memory that share memory with different dtypes or at offsets that are not "
                          "a multiple of their itemsize", "pass one of them as a copy")
    for i, a in arrays:
        if not a.dtype.isnative:
            raise unsupported(f"argument {i} in non-native byte order", "convert it with .astype(native)")
        if any(s % a.itemsize for s in a.strides):
            raise unsupported(f"argument {i} with strides that are not a multiple of its itemsize",
                              "pass a copy (np.ascontiguousarray)")
    for (i, a), (j, b) in ((x, y) for x in arrays for y in arrays if x[0] < y[0]):
        if a.dtype != b.dtype and np.shares_memory(a, b):
            raise unsupported(f"arguments {i} and {j} share memory with different dtypes ({a.dtype}, {b.dtype})",
                              "pass one of them as a copy")
    raise unsupported("arguments that share memory at offsets that are not a multiple of their itemsize",
                      "pass one of them as a copy")


# -- results --

def _dense_order(view, size):
    """The axes of `view`, outermost first, when it covers all `size` elements of its storage
    densely in some axis order; None otherwise."""
    if view.offset != 0 or view.numel != size or size == 0:
        return None
    # a size-1 axis sharing its stride with a longer one is the inner of the two (so it gets
    # the stride NumPy gives it: C order (2, 1, 4) is (4, 4, 1), F order (1, 2, 2))
    order = sorted(range(len(view.shape)), key=lambda d: (-abs(view.strides[d]), view.shape[d] == 1))
    return order if contiguous(view.shape, view.strides, order) else None


class _Entry:
    """One traced signature: the lowered program and how a call maps onto it (planned here once,
    run by _C.Runner on every call)."""

    __slots__ = ("program", "result_spec", "runner", "single", "finish", "used", "cuda")  # (a cheaper `used` store per call)

    def __init__(self, program, arg_storages, result_spec, outputs):
        self.program = program
        self.result_spec = result_spec
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
        temps = []  # (storage, shape to allocate, () | axes to transpose | None: a view of it)
        for sid, vs in sorted(returned.items()):
            size = graph.storage_size(sid)
            order = _dense_order(vs[0], size) if len(vs) == 1 else None
            if order is None:
                temps.append((sid, [max(size, 1)], None))
            else:
                inverse = sorted(range(len(order)), key=order.__getitem__)
                temps.append((sid, [vs[0].shape[d] for d in order],
                              [] if inverse == list(range(len(order))) else inverse))
        plan = []
        for spec in outputs:
            if spec[0] == "arg":
                plan.append(("a", spec[1]))
            elif spec[0] == "py":
                plan.append(("p", spec[1]))
            else:
                _, k, _, scalar, weak, writeable = spec
                plan.append(("v", k, bool(scalar), weak, bool(writeable)))
        self.runner = _C.Runner(program, groups, scalars, temps, plan)
        self.single = result_spec == ("leaf",)
        # the fast path's last step: None when the first result is the function's result
        self.finish = None if self.single else functools.partial(_finish, result_spec)
        self.used = 0  # the function's cache_hits count at its latest call: recency for eviction
        self.cuda = None  # the program's stages loaded on a CUDA device (target="cuda")

    def run(self, leaves, layout, latest_first=False, kind=None, stream=0):
        results = self.runner.run(tuple(leaves), layout, latest_first, kind, stream)
        return results[0] if self.single else _unflatten(self.result_spec, iter(results))


def _finish(result_spec, results):
    return _unflatten(result_spec, iter(results))


class Explanation:
    """What strider made of one call: the IR, the storages' dependency tables, the DAG."""

    def __init__(self, program, cuda=None):
        graph = program.graph
        self.ir = str(graph)
        self.tables = program.table_text
        self.edges = list(program.edges)
        self.stages = list(program.stages)          # dicts: domain, ops, reduce_axes, registers, loops, schedule,
                                                    # computed_in (the stage whose loops run it, or -1)
        self.rejections = list(program.rejections)  # why neighbouring ops were not fused
        self.schedules = dict(program.schedules)    # stage index -> primitives, as compile(schedule=) takes
        self.fallbacks = list(program.fallbacks)    # per stage: why it runs on the reference executor
        self._stages_text = program.stages_text
        self.code = [ll or None for ll in program.code]  # per stage: the optimized LLVM IR, None without
        # target="cuda": per stage, why it runs on the host between copies ("" when on the device)
        self.cuda_fallbacks = list(cuda.fallbacks) if cuda is not None else []
        self._lines = [graph.op_line(i) for i in range(graph.num_ops)]
        self._names = [graph.op_name(i) for i in range(graph.num_ops)]

    def source_line(self, op):
        file, line = self._lines[op]
        return f"{os.path.basename(file)}:{line}"

    def __str__(self):
        lines = ["== IR ==", self.ir.rstrip(), "", "== storages: data-dependency tables ==",
                 self.tables.rstrip(), "", "== DAG edges =="]
        for src, dst, kind in self.edges:
            lines.append(f"{kind}  op{src} ({self._names[src]} @ {self.source_line(src)}) -> "
                         f"op{dst} ({self._names[dst]} @ {self.source_line(dst)})")
        if not self.edges:
            lines.append("(none)")
        lines += ["", "== stages (loop nests) and fusion decisions ==", self._stages_text.rstrip()]
        for i, why in enumerate(self.fallbacks):
            if why:
                lines.append(f"stage {i} runs on the reference executor: {why}")
        return "\n".join(lines) + "\n"

    __repr__ = __str__


# -- the traced function --

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


class _TracedNumpy:
    """Installs the wrappers in the numpy module while any thread traces."""

    _lock = threading.Lock()
    _depth = 0

    def __enter__(self):
        with self._lock:
            if _TracedNumpy._depth == 0:
                for (module, name), fn in _WRAPPED.items():
                    setattr(module, name, fn)
            _TracedNumpy._depth += 1

    def __exit__(self, *exc):
        with self._lock:
            _TracedNumpy._depth -= 1
            if _TracedNumpy._depth == 0:
                for (module, name), fn in _REAL.items():
                    setattr(module, name, fn)


def _with_traced_numpy(fn):
    """fn, with names it imported straight from numpy (`from numpy import zeros`) rebound to the
    wrappers; fn itself when it has none."""
    g = getattr(fn, "__globals__", None)  # None for builtins (np.max), partials, callable objects
    if g is None or not any(id(v) in _BY_REAL_ID for v in g.values()):
        return fn
    swapped = {k: _BY_REAL_ID.get(id(v), v) for k, v in g.items()}
    clone = types.FunctionType(fn.__code__, swapped, fn.__name__, fn.__defaults__, fn.__closure__)
    clone.__kwdefaults__ = fn.__kwdefaults__
    return clone


class _Fixed:
    """A default argument value: part of the trace, keyed by identity (it never changes)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __hash__(self):
        return id(self.value)

    def __eq__(self, other):
        return isinstance(other, _Fixed) and other.value is self.value


class CompiledFunction:
    """A function compiled by strider.compile; call it like the original."""

    def __init__(self, fn, target="cpu", static_argnames=(), cache=True, schedule=None,
                 max_signatures=64):
        if target not in _TARGETS:
            raise ValueError(f"strider.compile: target {target!r} is not available; available: {_TARGETS}")
        if isinstance(static_argnames, str):
            static_argnames = (static_argnames,)
        self._fn = fn
        self._signature = inspect.signature(fn)
        unknown = set(static_argnames) - set(self._signature.parameters)
        if unknown:
            raise ValueError(f"strider.compile: static_argnames {sorted(unknown)} are not parameters of "
                             f"{fn.__name__}")
        self._static = frozenset(static_argnames)
        self._schedule = {int(k): str(v) for k, v in (schedule or {}).items()}
        if not (isinstance(max_signatures, int) and max_signatures >= 1):
            raise ValueError(f"strider.compile: max_signatures must be a positive int, not {max_signatures!r}")
        self._use_cache = cache
        self._max_signatures = max_signatures
        self._cache = {}
        params = list(self._signature.parameters.values())
        plain = all(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) for p in params)
        self._params = params if plain and cache else None
        self._lock = threading.Lock()
        self._stats = {"traces": 0, "cache_hits": 0, "lowered": 0, "compiles": 0, "disk_hits": 0}
        # the fast path (C++): calls shaped and valued like an earlier one run their entry directly
        self._fast = _C.FastPath(self._stats, _MISS)
        self.target = target
        self._options = dict(static_argnames=static_argnames, cache=cache, schedule=schedule,
                             max_signatures=max_signatures)
        self._gpu = None
        functools.update_wrapper(self, fn)

    def __call__(self, *args, **kwargs):
        if not LATEST_FIRST:
            result = self._fast(args, kwargs)
            if result is not _MISS:
                return result
        if current_trace() is not None:
            # called by code being traced (another compiled function, or this one recursively):
            # inlined, so the outer trace records these ops too and may fuse across the call
            return _with_traced_numpy(self._fn)(*args, **kwargs)
        entry, leaves, layout = self._lookup(args, kwargs)
        return entry.run(leaves, layout, LATEST_FIRST)

    def explain(self, *args, **kwargs):
        """The IR, storages, dependency tables and DAG edges strider uses for this call."""
        entry, _, _ = self._lookup(args, kwargs)
        return Explanation(entry.program, entry.cuda)

    def cuda_source(self, *args, **kwargs):
        """The CUDA C strider emits for this call's stages as target="cuda" makes them, as one
        listing: each stage's kernels after a `// stage N` line, or that line with the reason the
        CUDA backend refuses it."""
        entry, _, _ = self._on_gpu()._lookup(args, kwargs)
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

    def stats(self):
        """Counters: traces (signatures traced), cache_hits (calls served from the memory cache),
        lowered (programs built), compiles (stages LLVM, or NVRTC for target="cuda", compiled),
        disk_hits (stages loaded from the disk cache instead of compiled)."""
        return dict(self._stats)

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def _lookup(self, args, kwargs):
        bound = self._signature.bind(*args, **kwargs)
        given = set(bound.arguments)
        bound.apply_defaults()
        leaves, structure = [], []
        for name, value in bound.arguments.items():
            if name not in given:  # a default the caller did not override never varies
                structure.append((name, ("static", "default", _Fixed(value))))
            elif name in self._static:
                try:
                    hash(value)
                except TypeError:
                    raise unsupported(f"static argument {name!r} of type {type(value).__name__} (unhashable)",
                                      "pass a hashable value (a tuple instead of a list)") from None
                structure.append((name, ("static", type(value).__name__, value)))
            else:
                structure.append((name, _flatten(value, leaves)))
        if self.target != "cuda" and any(isinstance(leaf, _C.DeviceArray) for leaf in leaves):
            raise unsupported("an array in GPU memory (DeviceArray) with target='cpu'",
                              "compile with target='cuda' or target='auto'")
        layout = _layout(leaves)
        key = (tuple(structure), layout.key)
        entry = self._cache.get(key) if self._use_cache else None
        if entry is not None:
            self._stats["cache_hits"] += 1
            entry.used = self._stats["cache_hits"]
            if self._cache.get(key) is entry:  # not evicted by another thread meanwhile
                self._fast_insert(args, kwargs, entry)
            return entry, leaves, layout
        with self._lock:
            entry = self._cache.get(key) if self._use_cache else None
            if entry is None:
                entry = self._trace(bound, structure, leaves, layout)
                if self._use_cache:
                    self._insert(key, entry)
            else:
                self._stats["cache_hits"] += 1
            entry.used = self._stats["cache_hits"]
            if self._use_cache:
                self._fast_insert(args, kwargs, entry)
        return entry, leaves, layout

    def _fast_insert(self, args, kwargs, entry):
        """Gives the fast path a call that bound to `entry`, unless its shape does not take the
        fast path: keywords out of the signature's order (the leaves would come in another
        order), a signature with *args or **kwargs."""
        if self._params is None or len(args) > len(self._params):
            return
        names = [p.name for p in self._params]
        if kwargs:
            at = [names.index(k) for k in kwargs]
            if at[0] < len(args) or at != sorted(at):
                return
        mask = "".join("s" if name in self._static else "." for name in names[:len(args)] + list(kwargs))
        self._fast.insert(args, kwargs, mask, entry, entry.runner, entry.finish)

    def _insert(self, key, entry):
        """Keeps at most max_signatures entries: the least recently called one makes room (its
        compiled code is freed with it once no running call holds it)."""
        if len(self._cache) >= self._max_signatures:
            victim = min(self._cache, key=lambda k: self._cache[k].used)
            self._fast.drop(self._cache.pop(victim))
        self._cache[key] = entry

    def _trace(self, bound, structure, leaves, layout):
        self._stats["traces"] += 1
        with Trace(self._fn.__name__) as trace, _TracedNumpy():
            graph = trace.graph
            group_storage = [graph.add_storage(IR_DTYPES[dtype], extent, "arg", gi)
                             for gi, (dtype, extent) in enumerate(zip(layout.group_dtype, layout.group_extent))]
            arg_storages = {sid: ("group", gi) for gi, sid in enumerate(group_storage)}
            tracers = []
            for i, leaf in enumerate(leaves):
                if isinstance(leaf, (np.ndarray, _C.DeviceArray)):
                    item = leaf.dtype.itemsize
                    view = _C.View(group_storage[layout.leaf_group[i]], list(leaf.shape),
                                   [s // item for s in leaf.strides], layout.leaf_offset[i])
                    writeable = leaf.writeable if isinstance(leaf, _C.DeviceArray) else leaf.flags.writeable
                    tracers.append(Tracer(trace, view, leaf.dtype, readonly=None if writeable else "arg"))
                else:
                    dtype = np.dtype(leaf.dtype if isinstance(leaf, np.generic) else
                                     {bool: np.bool_, int: np.int64, float: np.float64}[type(leaf)])
                    check_dtype(dtype, f"argument {i}")
                    sid = graph.add_storage(IR_DTYPES[dtype], 1, "arg", len(group_storage) + i)
                    arg_storages[sid] = ("scalar", i)
                    weak = None if isinstance(leaf, np.generic) else type(leaf)
                    tracers.append(Tracer(trace, _C.View(sid, [], [], 0), dtype, weak=weak,
                                          scalar=isinstance(leaf, np.generic), readonly="arg"))
            it = iter(tracers)
            call_args = {name: _unflatten(spec, it) for name, spec in structure}
            posargs, kwargs = [], {}
            # a parameter the caller left out stays out: fn applies its own default, as in the
            # caller's call (NumPy's functions refuse some of their defaults passed explicitly:
            # np.sign(x, dtype=None, signature=None)); the ones after it then go by keyword
            defaulted = {name for name, spec in structure if spec[:2] == ("static", "default")}
            by_keyword = False
            for name, param in self._signature.parameters.items():
                value = call_args[name]
                if name in defaulted:
                    by_keyword = True
                elif param.kind == param.VAR_POSITIONAL:
                    posargs.extend(value)
                elif param.kind == param.VAR_KEYWORD:
                    kwargs.update(value)
                elif param.kind == param.KEYWORD_ONLY or by_keyword:
                    kwargs[name] = value
                else:
                    posargs.append(value)
            result = _with_traced_numpy(self._fn)(*posargs, **kwargs)
            out_leaves = []
            result_spec = _flatten_result(result, out_leaves)
            arg_ids = {id(t): i for i, t in enumerate(tracers) if isinstance(leaves[i], (np.ndarray, _C.DeviceArray))}
            outputs, views = [], []
            for value in out_leaves:
                if isinstance(value, Tracer) and id(value) in arg_ids:
                    outputs.append(("arg", arg_ids[id(value)]))
                elif isinstance(value, (Tracer, np.ndarray, np.generic)):
                    t = _caller_owned(trace, value, arg_storages)
                    outputs.append(("view", len(views), t.dtype, t._scalar or isinstance(value, np.generic),
                                    t._weak, t._readonly is None))
                    views.append(t._view)
                else:
                    outputs.append(("py", value))
            graph.outputs = views
        try:
            # CPU code only where the function runs on the CPU; a GPU runs a stage's points at
            # once, which its fusion must allow for
            on_gpu = self.target == "cuda"
            program = _C.lower(graph, self._schedule, JIT and not on_gpu,
                               _C.Target.cuda if on_gpu else _C.Target.cpu)
        except _C.ScheduleError as e:
            raise ScheduleError(f"{self._fn.__name__}: {e}") from None
        self._stats["lowered"] += 1
        self._stats["compiles"] += program.compiled
        self._stats["disk_hits"] += program.disk_hits
        entry = _Entry(program, arg_storages, result_spec, outputs)
        self._prepare(entry, layout)
        return entry

    def _prepare(self, entry, layout):
        """Readies a new entry to run (the CPU's kernels are compiled by lowering)."""


def _flatten_result(value, leaves):
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(_flatten_result(v, leaves) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple((k, _flatten_result(value[k], leaves)) for k in value))
    _check_result(value)
    leaves.append(value)
    return ("leaf",)


def _check_result(value):
    """Refuses results that would carry this trace's Tracers out unseen, to be returned again on
    every call: generators (a generator function's body has not even run) and functions. The
    message names the line that made them (the function has returned: no frame has it)."""
    code = getattr(value, "gi_code", None) or getattr(value, "cr_code", None) or getattr(value, "ag_code", None)
    if code is not None:
        what = f"a generator or coroutine ({code.co_name})"
    elif isinstance(value, types.FunctionType):
        code = value.__code__
        what = f"returning a function ({code.co_name})"
    else:
        return
    raise UnsupportedError(f"{os.path.basename(code.co_filename)}:{code.co_firstlineno}: {what} is not "
                           "supported by strider.compile; return the arrays (a tuple or list of them)")


def _caller_owned(trace, value, arg_storages):
    """A result in memory the caller may keep: temporaries and views of array arguments as they
    are; constants (NumPy arrays made while tracing) and scalar arguments copied."""
    from ._ops import copy_

    t = as_tracer(value)
    kind = trace.graph.storage_kind(t._view.storage)
    if kind == "temp" or (kind == "arg" and arg_storages[t._view.storage][0] == "group"):
        return t
    c = copy_(t)
    c._scalar, c._weak = t._scalar, t._weak
    return c


# STRIDER_EXEC_ORDER=latest: run in the other extreme legal order of the DAG (checks its edges)
LATEST_FIRST = os.environ.get("STRIDER_EXEC_ORDER") == "latest"
_MISS = object()  # the fast path's answer for a call it does not know


def _cuda_refusal(name):
    """Why `name` cannot run on a GPU here, as the error to raise."""
    return StriderError(f"strider.compile: {name} cannot run on a GPU here: CUDA is unavailable: "
                        f"{_C.cuda_unavailable_reason()}; pass NumPy arrays and use target='cpu'")


def _on_device(value):
    """True for an array in GPU memory, also inside lists, tuples and dicts."""
    if isinstance(value, (tuple, list)):
        return any(_on_device(v) for v in value)
    if isinstance(value, dict):
        return any(_on_device(v) for v in value.values())
    return _cuda.on_device(value)


class _CudaFunction(CompiledFunction):
    """strider.compile(fn, target="cuda"): the stages run on a GPU. Arrays in GPU memory
    (__cuda_array_interface__: CuPy, PyTorch, Numba; DLPack: JAX, read only) are read and written
    in place, results come back as the caller's kind of array and the kernels run on its library's
    current stream; NumPy arrays are copied to the device and back (in-place writes included),
    results are NumPy arrays."""

    def __call__(self, *args, **kwargs):
        if current_trace() is not None:
            return super().__call__(*args, **kwargs)  # inlined into the calling trace
        if _C.cuda_unavailable_reason():
            raise _cuda_refusal(self.__name__)
        # before the fast path, which knows only NumPy leaves (a torch tensor is hashable: it
        # would pass for a static value there)
        dargs, dkwargs, kind = _cuda.device_leaves(args, kwargs)
        if kind is None:
            return super().__call__(*args, **kwargs)
        stream = kind.stream()
        result = self._fast(dargs, dkwargs, kind, stream)
        if result is _MISS:
            entry, leaves, layout = super()._lookup(dargs, dkwargs)  # leaves made: not again
            result = entry.run(leaves, layout, kind=kind, stream=stream)
        return kind.finish(result)

    def _lookup(self, args, kwargs):
        args, kwargs, _ = _cuda.device_leaves(args, kwargs)
        return super()._lookup(args, kwargs)

    def _prepare(self, entry, layout):
        """Loads the entry's stages on the device of its arguments (device 0 for NumPy ones):
        NVRTC compiles them for that device, or the disk cache has them."""
        if _C.cuda_unavailable_reason():
            return  # explain() and cuda_source() work without a GPU; calls say why they cannot run
        ordinal = next((o for o in layout.group_ordinal if o >= 0), 0)
        try:
            cuda = _C.CudaProgram(entry.program, ordinal)
        except RuntimeError as e:
            raise StriderError(f"strider.compile: {self.__name__}: {e}") from None
        entry.runner.set_cuda(cuda)
        entry.cuda = cuda
        self._stats["compiles"] += cuda.compiled
        self._stats["disk_hits"] += cuda.disk_hits


class _AutoFunction(CompiledFunction):
    """strider.compile(fn, target="auto"): runs where the arguments live: on the CPU for NumPy
    arrays, on their GPU (target="cuda") for arrays in GPU memory."""

    def __call__(self, *args, **kwargs):
        if current_trace() is None and (_on_device(args) or _on_device(kwargs)):
            return self._on_gpu()(*args, **kwargs)
        return super().__call__(*args, **kwargs)


# STRIDER_JIT=0: every stage on the reference executor
JIT = os.environ.get("STRIDER_JIT", "1") != "0"


def compile(fn=None, *, target="cpu", static_argnames=(), cache=True, schedule=None, max_signatures=64):
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
    """
    options = dict(target=target, static_argnames=static_argnames, cache=cache, schedule=schedule,
                   max_signatures=max_signatures)
    kind = {"cuda": _CudaFunction, "auto": _AutoFunction}.get(target, CompiledFunction)
    if fn is None:
        return lambda f: kind(f, **options)
    return kind(fn, **options)
