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


# -- arguments: what the dispatcher (C++) refuses, named --

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
        temps = []  # (storage, shape to allocate, TempForm, axes to transpose)
        for sid, vs in sorted(returned.items()):
            size = graph.storage_size(sid)
            order = _dense_order(vs[0], size) if len(vs) == 1 else None
            if order is None:
                temps.append((sid, [max(size, 1)], _C.TempForm.viewed, []))
            else:
                inverse = sorted(range(len(order)), key=order.__getitem__)
                transposed = inverse != list(range(len(order)))
                temps.append((sid, [vs[0].shape[d] for d in order],
                              _C.TempForm.transposed if transposed else _C.TempForm.buffer, inverse if transposed else []))
        self.runner = _C.Runner(program, groups, scalars, temps, outputs, result_spec)
        self.cuda = None  # the program's stages loaded on a CUDA device (target="cuda")


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


_MISSING = object()  # a parameter the caller left out: the function applies its own default


class CompiledFunction(_C.Dispatcher):
    """A function compiled by strider.compile; call it like the original. Its calls are the
    dispatcher's (C++: csrc/python/dispatcher.h), which enters Python only to trace a new
    signature (_trace)."""

    def __init__(self, fn, target="cpu", static_argnames=(), cache=True, schedule=None,
                 max_signatures=64):
        if target not in _TARGETS:
            raise ValueError(f"strider.compile: target {target!r} is not available; available: {_TARGETS}")
        if isinstance(static_argnames, str):
            static_argnames = (static_argnames,)
        signature = inspect.signature(fn)
        unknown = set(static_argnames) - set(signature.parameters)
        if unknown:
            raise ValueError(f"strider.compile: static_argnames {sorted(unknown)} are not parameters of "
                             f"{fn.__name__}")
        if not (isinstance(max_signatures, int) and max_signatures >= 1):
            raise ValueError(f"strider.compile: max_signatures must be a positive int, not {max_signatures!r}")
        params = [(p.name, int(p.kind), p.default is not p.empty, p.name in static_argnames)
                  for p in signature.parameters.values()]
        super().__init__(params, target == "cuda", bool(cache), max_signatures)
        self._fn = fn
        self._signature = signature
        self._schedule = {int(k): str(v) for k, v in (schedule or {}).items()}
        self.target = target
        self._options = dict(static_argnames=static_argnames, cache=cache, schedule=schedule,
                             max_signatures=max_signatures)
        self._gpu = None
        functools.update_wrapper(self, fn)

    # the dispatcher's table (tests read its length under this name too)
    _fast = _C.Dispatcher._cache

    def explain(self, *args, **kwargs):
        """The IR, storages, dependency tables and DAG edges strider uses for this call."""
        entry, _ = self._lookup(args, kwargs)
        return Explanation(entry.program, entry.cuda)

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

    def _inline(self, args, kwargs):
        """A call made while this thread traces: the outer trace records these ops too and may
        fuse across the call."""
        return _with_traced_numpy(self._fn)(*args, **kwargs)

    def _bind_error(self, args, kwargs):
        """Raises inspect's TypeError for arguments that do not bind to the function's parameters."""
        self._signature.bind(*args, **kwargs)

    def _trace(self, sig):
        """Traces and lowers the function for a new signature `sig` (a _C.CallSignature); the
        dispatcher keeps the entry."""
        leaves = sig.leaves
        with Trace(self._fn.__name__) as trace, _TracedNumpy():
            graph = trace.graph
            group_storage = [graph.add_storage(IR_DTYPES[dtype], extent, "arg", gi)
                             for gi, (dtype, extent) in enumerate(zip(sig.group_dtype, sig.group_extent))]
            arg_storages = {sid: ("group", gi) for gi, sid in enumerate(group_storage)}
            tracers = []
            for i, leaf in enumerate(leaves):
                if isinstance(leaf, (np.ndarray, _C.DeviceArray)):
                    item = leaf.dtype.itemsize
                    view = _C.View(group_storage[sig.leaf_group[i]], list(leaf.shape),
                                   [s // item for s in leaf.strides], sig.leaf_offset[i])
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
            posargs, kwargs = [], {}
            # a parameter the caller left out stays out: fn applies its own default, as in the
            # caller's call (NumPy's functions refuse some of their defaults passed explicitly:
            # np.sign(x, dtype=None, signature=None)); the ones after it then go by keyword
            by_keyword = False
            for value, (name, param) in zip(sig.arguments(tracers, _MISSING), self._signature.parameters.items()):
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
            result = _with_traced_numpy(self._fn)(*posargs, **kwargs)
            out_leaves = []
            result_spec = _flatten_result(result, out_leaves)
            arg_ids = {id(t): i for i, t in enumerate(tracers) if isinstance(leaves[i], (np.ndarray, _C.DeviceArray))}
            outputs, views = [], []
            for value in out_leaves:
                if isinstance(value, Tracer) and id(value) in arg_ids:
                    outputs.append((_C.ResultKind.argument, arg_ids[id(value)]))
                elif isinstance(value, (Tracer, np.ndarray, np.generic)):
                    t = _caller_owned(trace, value, arg_storages)
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
            program = _C.lower(graph, self._schedule, JIT and not on_gpu,
                               _C.Target.cuda if on_gpu else _C.Target.cpu)
        except _C.ScheduleError as e:
            raise ScheduleError(f"{self._fn.__name__}: {e}") from None
        self._count("lowered", 1)
        self._count("compiles", program.compiled)
        self._count("disk_hits", program.disk_hits)
        entry = _Entry(program, arg_storages, result_spec, outputs)
        self._prepare(entry, sig)
        return entry

    def _prepare(self, entry, sig):
        """Readies a new entry to run (the CPU's kernels are compiled by lowering)."""


# calls enter the dispatcher straight from CPython's call slot (no Python frame)
_C.install_call_slot(CompiledFunction)


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
        dargs, dkwargs, kind = _cuda.device_leaves(args, kwargs)
        if kind is None:
            return super().__call__(*args, **kwargs)
        return kind.finish(self._dispatch(dargs, dkwargs, kind, kind.stream()))

    def _lookup(self, args, kwargs):
        args, kwargs, _ = _cuda.device_leaves(args, kwargs)
        return super()._lookup(args, kwargs)

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
    arrays, on their GPU (target="cuda") for arrays in GPU memory."""

    def __call__(self, *args, **kwargs):
        if current_trace() is None and (_on_device(args) or _on_device(kwargs)):
            return self._on_gpu()(*args, **kwargs)
        return super().__call__(*args, **kwargs)


# STRIDER_JIT=0: every stage on the reference executor
JIT = os.environ.get("STRIDER_JIT", "1") != "0"

_C.set_dispatch_hooks(current_trace, unsupported, _refuse_leaves, Tracer, globals())


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
