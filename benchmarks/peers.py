"""The systems run.py puts side by side: NumPy (the reference), strider, Numba, JAX, torch.compile,
and torchvision's NMS operator for the NMS heads it computes.

Each system is an adapter with the same small interface:

* ``load()`` imports the system lazily and returns its version string, or raises
  :class:`Skip` (not installed, not importable) -- run.py then skips it with that note;
* ``prepare(head, dtype)`` returns a fresh callable for one case, taking the head's
  ``(*args, **kwargs)``; a fresh one per case so that its first call pays trace + compile.  It
  may raise :class:`Unsupported` (no port of this head, no float16) or any error (recorded as a
  FAIL with its class); errors of a lazy compiler surface at the first call and are recorded the
  same way;
* ``place(inputs)`` the case's ``(args, kwargs)`` as the system takes them, once per case after
  ``prepare``: the tree itself (run.py copies its NumPy arrays before every call), or an object
  whose ``fresh()`` returns per-call copies (arrays in device memory, copied there);
* ``sync(out)`` waits for asynchronous results (JAX, GPU streams) and is part of the timed call;
* ``to_host(tree)`` results and arguments as NumPy can compare them (copied back from a device);
* ``expected(head, result, args, kwargs)`` picks from NumPy's call what the system returns
  (JAX ports return the updated argument of heads that return None);
* ``checks_arguments``: the system runs the NumPy source on the caller's arrays, so writes into
  the arguments are compared too; ``strict_dtypes``: result dtypes must be NumPy's;
* ``tolerance(head, dtype)`` the ``(rtol, atol)`` its results are held to: the head's, or a port's
  own where the system's compiler changes the bits (JAX's ``image_preprocess_u8``);
* ``note(fn, args, kwargs)`` says something about the instance ``fn`` after its first call on
  those inputs (torch's graph breaks, strider's stages left to its reference executor), or None;
* ``info()`` the settings that matter for reading its numbers (threads, caches).

``load()`` also warms the system up on a trivial function (``warmup_s``, ``warmup_error``), so the
one-time start-up of a compiler (LLVM, XLA, Inductor) is not charged to the first head's
first call.
"""
import importlib
import os
import time
import types

import numpy as np


class Skip(Exception):
    """The system is not available here (not installed or not importable)."""


class Unsupported(Exception):
    """The system has nothing to run for this head (no port, or none in this dtype)."""


def _require(*module_names):
    """The modules, imported; Skip naming the first that does not import."""
    modules = []
    for name in module_names:
        try:
            modules.append(importlib.import_module(name))
        except Exception as exc:  # noqa: BLE001 - any import failure means the system is absent
            raise Skip(f"{name} does not import ({type(exc).__name__}: {exc})") from exc
    return modules


def tree_map(fn, tree):
    """``fn`` applied to the leaves of nested tuples, lists and dicts, the nesting kept."""
    if isinstance(tree, (tuple, list)):
        return type(tree)(tree_map(fn, t) for t in tree)
    if isinstance(tree, dict):
        return {k: tree_map(fn, v) for k, v in tree.items()}
    return fn(tree)


def _version(module_name):
    try:
        return importlib.import_module(module_name).__version__
    except Exception:  # noqa: BLE001 - a version is informative only
        return None


def _trivial(a):
    return a * 2 + 1


class System:
    name = ""
    checks_arguments = True
    strict_dtypes = True
    is_reference = False
    warmup_s = None

    warmup_error = None

    def _warm_up(self, make):
        """Compiles and runs a trivial function once, on an input placed where the system's cases
        put theirs; records how long that took (or the error: the cases then record their own
        failures)."""
        t0 = time.perf_counter()
        try:
            placed = self.place(((np.ones(4, np.float32),), {}))
            (a,), _ = placed.fresh() if hasattr(placed, "fresh") else placed
            self.sync(make(_trivial)(a))
        except Exception as exc:  # noqa: BLE001
            lines = str(exc).strip().splitlines()
            self.warmup_error = f"{type(exc).__name__}: {lines[0] if lines else ''}"
        self.warmup_s = time.perf_counter() - t0

    def load(self):
        raise NotImplementedError

    def prepare(self, head, dtype):
        raise NotImplementedError

    def place(self, inputs):
        return inputs

    def sync(self, out):
        return out

    def to_host(self, tree):
        return tree

    def expected(self, head, result, args, kwargs):
        return result

    def tolerance(self, head, dtype):
        return head.tolerance(dtype)

    def note(self, fn, args, kwargs):
        return None

    def info(self):
        return {}


class NumPySystem(System):
    name = "numpy"
    is_reference = True

    def load(self):
        return np.__version__

    def prepare(self, head, dtype):
        return head.fn


class StriderSystem(System):
    name = "strider"

    def load(self):
        (strider,) = _require("strider")
        self._strider = strider
        self._warm_up(strider.compile)
        return strider.__version__

    def prepare(self, head, dtype):
        # strict: a head that does not compile fails here rather than timing NumPy
        return self._strider.compile(head.fn, static_argnames=head.static_argnames, strict=True)

    def note(self, fn, args, kwargs):
        return _stages_note(fn.explain(*args, **kwargs))

    def info(self):
        return strider_info()


def _stages_note(explanation):
    """How many of a program's stages run compiled code, and why the first other one does not."""
    code = getattr(explanation, "code", None)
    stages = getattr(explanation, "stages", None)
    if not code or not stages:
        return None  # a strider without compiled stages: nothing to say
    # a stage run inside another's loops (compute_at) has its code there
    host = [s.get("computed_in", -1) if isinstance(s, dict) else -1 for s in stages]
    compiled = sum(1 for i, c in enumerate(code) if c or (host[i] >= 0 and code[host[i]]))
    why = next((w for w in getattr(explanation, "fallbacks", ()) if w), "")
    return f"{compiled}/{len(stages)} stages compiled" + (f"; reference: {why}" if why else "")


def strider_info():
    """strider's version and what its native module says about backends (names only; the LLVM
    backend is being added, so whatever ``strider._C`` exposes is recorded as is)."""
    try:
        import strider
    except Exception as exc:  # noqa: BLE001
        return {"importable": False, "error": f"{type(exc).__name__}: {exc}"}
    out = {"version": strider.__version__, "module": os.path.dirname(strider.__file__)}
    try:
        from strider import _C
    except Exception as exc:  # noqa: BLE001
        out["native"] = f"{type(exc).__name__}: {exc}"
        return out
    names = sorted(n for n in dir(_C) if not n.startswith("__"))
    out["native_names"] = names
    hints = [n for n in names if any(k in n.lower() for k in ("llvm", "jit", "backend", "target"))]
    out["backend_names"] = hints
    for n in hints:  # plain flags and zero-argument queries such as llvm_backend_available()
        v = getattr(_C, n)
        try:
            v = v() if callable(v) and not isinstance(v, type) else v
        except Exception as exc:  # noqa: BLE001 - not a zero-argument query
            v = f"{type(exc).__name__}"
        if isinstance(v, (bool, int, float, str, tuple, list)):
            out[f"_C.{n}"] = v
    try:
        from strider import _api
        out["targets"] = list(getattr(_api, "_TARGETS", ()))
    except Exception:  # noqa: BLE001
        pass
    out["STRIDER_JIT"] = os.environ.get("STRIDER_JIT")
    # The probe: does a trivial function get compiled code for its stage?  (None: this strider
    # has no notion of compiled stages, or the probe failed.)
    out["llvm_backend"] = None
    try:
        f = strider.compile(_trivial)
        a = np.ones(4, np.float32)
        f(a)
        code = getattr(f.explain(a), "code", None)
        if code is not None:
            out["llvm_backend"] = any(bool(c) for c in code)
    except Exception as exc:  # noqa: BLE001
        out["probe_error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
    return out


class NumbaSystem(System):
    """``numba.njit`` on the head's own source.  Module-level helpers the head calls
    (``sigmoid``, ``_whctrs``, ...) are jitted the same way, since nopython code cannot call
    Python functions; everything else is numba's own NumPy support.  float16 cases are N/A
    where ``load()``'s probe finds that njit cannot take a float16 array (numba's CPU target
    has no float16 type; only its CUDA target has)."""
    name = "numba"

    def load(self):
        (numba,) = _require("numba")
        self._numba = numba
        self._warm_up(numba.njit)
        self._float16 = _probe(numba.njit, np.float16)
        return numba.__version__

    def prepare(self, head, dtype):
        if np.dtype(dtype) == np.float16 and self._float16:
            raise Unsupported(f"numba {self._numba.__version__} runs no float16 on the CPU "
                              f"(njit of a * 2 + 1 on a float16 array: {self._float16})")
        return with_helpers(head.fn, self._numba.njit, {})

    def info(self):
        return {"llvmlite": _version("llvmlite"), "parallel": False, "cache": False,
                "helpers": "module-level Python functions called by a head are njit-ed too",
                "float16": self._float16 or "supported"}


def _probe(make, dtype):
    """None when ``make(_trivial)`` runs on an array of ``dtype``, else its error in one line."""
    try:
        make(_trivial)(np.ones(4, dtype))
        return None
    except Exception as exc:  # noqa: BLE001 - any failure means the dtype is not supported
        lines = str(exc).strip().splitlines()
        return f"{type(exc).__name__}: {lines[0] if lines else ''}"


def _names(code):
    names = set(code.co_names)
    for c in code.co_consts:  # generator expressions, comprehensions, nested functions
        if isinstance(c, types.CodeType):
            names |= _names(c)
    return names


def with_helpers(fn, wrap, memo, rebind=None):
    """``wrap`` of a clone of ``fn`` whose module-level helper functions are cloned and wrapped the
    same way, with the globals in ``rebind`` replaced in all of them (``{"np": cupy}``)."""
    if fn in memo:
        return memo[fn]
    env = dict(fn.__globals__, **(rebind or {}))
    for name in _names(fn.__code__):
        obj = env.get(name)
        if isinstance(obj, types.FunctionType) and obj.__module__ == fn.__module__ and obj is not fn:
            env[name] = with_helpers(obj, wrap, memo, rebind)
    clone = types.FunctionType(fn.__code__, env, fn.__name__, fn.__defaults__, fn.__closure__)
    clone.__kwdefaults__ = fn.__kwdefaults__
    clone.__module__ = fn.__module__
    memo[fn] = wrapped = wrap(clone)
    return wrapped


class JaxSystem(System):
    """``jax.jit`` on the functional jax.numpy port in jax_heads.py.  float32 by default; x64 is
    switched on only while float64 cases run.  A call includes moving the NumPy inputs in (a
    copy on CPU) and ``block_until_ready`` on the results."""
    name = "jax"
    checks_arguments = False
    strict_dtypes = False  # without x64, integer results are int32 where NumPy gives int64

    def load(self):
        jax, jax_heads = _require("jax", "jax_heads")
        self._jax = jax
        self._ports = jax_heads.ports()
        self._expected_of = jax_heads.expected_of
        self._warm_up(jax.jit)
        return jax.__version__

    def prepare(self, head, dtype):
        port = self._ports.get(head.name)
        if port is None:
            raise Unsupported(f"no jax.numpy port of {head.name} in jax_heads.py")
        self._jax.config.update("jax_enable_x64", np.dtype(dtype) == np.float64)
        self._jax.clear_caches()  # the first call of this case traces and compiles anew
        return self._jax.jit(port.fn, static_argnames=port.static_argnames)

    def sync(self, out):
        return self._jax.block_until_ready(out)

    def expected(self, head, result, args, kwargs):
        port = self._ports.get(head.name)
        return self._expected_of(port, result, args, kwargs) if port else result

    def tolerance(self, head, dtype):
        port = self._ports.get(head.name)
        tol = (port.tol or {}) if port else {}
        return tol.get(np.dtype(dtype).name) or head.tolerance(dtype)

    def info(self):
        return {"jaxlib": _version("jaxlib"), "devices": [str(d) for d in self._jax.devices()],
                "x64": "only for float64 cases", "includes": "NumPy -> device copy, block_until_ready"}


class TorchSystem(System):
    """``torch.compile(fn, dynamic=False)`` on the NumPy source: TorchDynamo's NumPy front end
    traces the np.* calls into torch ops and Inductor compiles them (C++/OpenMP on CPU).  Graph
    breaks do not fail: that code runs eagerly, and the count is recorded as a note.  Inductor's
    on-disk FX graph cache is off so that the first call of a case pays a real compile."""
    name = "torch"

    def load(self):
        torch, _, _ = _require("torch", "torch._dynamo", "torch._inductor.config")
        self._torch = torch
        torch._inductor.config.fx_graph_cache = False
        try:
            torch._functorch.config.enable_autograd_cache = False
        except Exception:  # noqa: BLE001 - older torch
            pass
        self._warm_up(lambda fn: torch.compile(self.source(fn), dynamic=False))
        torch._dynamo.reset()
        return torch.__version__

    def source(self, fn):
        """What torch.compile compiles for a head: the NumPy source as it is."""
        return fn

    def prepare(self, head, dtype):
        self._torch._dynamo.reset()  # a fresh cache: the first call traces and compiles
        from torch._dynamo.utils import counters
        self._counters = counters
        self._before = (dict(counters["graph_break"]), counters["stats"].get("unique_graphs", 0))
        return self._torch.compile(self.source(head.fn), dynamic=False)

    def note(self, fn, args, kwargs):
        breaks, graphs0 = self._before
        new = {k: v - breaks.get(k, 0) for k, v in self._counters["graph_break"].items()
               if v > breaks.get(k, 0)}
        graphs = self._counters["stats"].get("unique_graphs", 0) - graphs0
        if not new and graphs:
            return None
        reasons = "; ".join(" ".join(str(k).split())[:80] for k in list(new)[:2])
        return f"{sum(new.values())} graph break(s), {graphs} graph(s) compiled" + (f": {reasons}" if reasons else "")

    def info(self):
        t = self._torch
        return {"threads": t.get_num_threads(), "dynamic": False, "fx_graph_cache": False,
                "cuda_available": t.cuda.is_available()}


class _SameInputs:
    """Placed inputs that every call may share: the callee writes none of them."""

    def __init__(self, args, kwargs):
        self._inputs = (args, kwargs)

    def fresh(self):
        return self._inputs


def _py_cpu_nms_as_torchvision(torch, args, kwargs):
    """``torchvision.ops.nms``'s arguments for py_cpu_nms's ``(dets, thresh)``.  py_cpu_nms
    counts a box's width as x2 - x1 + 1 and torchvision as x2 - x1, so x2 and y2 move one pixel
    right and down; on the input maker's whole-pixel boxes both give the same IoU bits.  nms
    suppresses where IoU > threshold and py_cpu_nms keeps where IoU <= thresh: the same test."""
    (dets,) = args
    boxes = dets[:, :4].copy()
    boxes[:, 2:] += 1
    return (torch.from_numpy(boxes), torch.from_numpy(dets[:, 4].copy())), \
        dict(iou_threshold=kwargs["thresh"])


class TorchvisionSystem(System):
    """``torchvision.ops.nms`` (its C++ CPU kernel, one thread) for the NMS heads it computes:
    py_cpu_nms, whose boxes and scores become torch tensors of the case's dtype once per case,
    outside the timed region (``place``), so that the timed call is the nms call alone, its sort
    by score included.  N/A for every other head.  Its result, an int64 tensor of the kept
    indices best first, is compared with the head's."""
    name = "torchvision"
    checks_arguments = False  # it takes tensors made from the arguments, not the arguments

    PORTS = {"py_cpu_nms": _py_cpu_nms_as_torchvision}

    def load(self):
        torch, torchvision = _require("torch", "torchvision")
        self._torch, self._torchvision = torch, torchvision
        t0 = time.perf_counter()  # the first call loads torchvision's C++ operators
        try:
            boxes = torch.tensor([[0.0, 0.0, 2.0, 2.0], [1.0, 1.0, 3.0, 3.0]])
            torchvision.ops.nms(boxes, torch.tensor([0.9, 0.8]), 0.5)
        except Exception as exc:  # noqa: BLE001 - the cases then record their own failures
            lines = str(exc).strip().splitlines()
            self.warmup_error = f"{type(exc).__name__}: {lines[0] if lines else ''}"
        self.warmup_s = time.perf_counter() - t0
        return torchvision.__version__

    def prepare(self, head, dtype):
        self._port = self.PORTS.get(head.name)
        if self._port is None:
            raise Unsupported(f"torchvision has no op for {head.name} (only for {', '.join(self.PORTS)})")
        return self._torchvision.ops.nms

    def place(self, inputs):
        return _SameInputs(*self._port(self._torch, *inputs))

    def to_host(self, tree):
        return tree_map(lambda x: x.numpy() if isinstance(x, self._torch.Tensor) else x, tree)

    def info(self):
        return {"torch": self._torch.__version__, "op": "torchvision.ops.nms (CPU)",
                "timed": "the nms call on tensors made before it (no NumPy conversion)"}


SYSTEMS = {s.name: s for s in (NumPySystem, StriderSystem, NumbaSystem, JaxSystem, TorchSystem,
                               TorchvisionSystem)}


def make_systems(names, registry=SYSTEMS):
    """Instantiates the named systems of ``registry`` (NumPy always first, it is the reference)."""
    names = ["numpy"] + [n for n in names if n != "numpy"]
    unknown = [n for n in names if n not in registry]
    if unknown:
        raise ValueError(f"unknown systems {unknown}; known: {', '.join(registry)}")
    return [registry[n]() for n in names]
