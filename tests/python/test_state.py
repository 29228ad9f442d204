"""Python state a compiled function reads and writes besides its arguments (_capture.py): arrays
and numbers on `self`, module globals and closure variables are read on every call, never frozen
at trace time; what the function writes on objects, into their lists and dicts, into globals and
closure variables is what NumPy leaves there after every call. Each scenario runs a plain object
and a compiled one side by side and compares results and state after every step."""
import dataclasses
import re
import enum
import logging
import sys
import types
import warnings

import numpy as np
import pytest
from numpy import zeros as np_zeros
from numpy.lib.stride_tricks import as_strided

import strider
from differential import assert_same
from strider._tracer import Tracer


def same_state(a, b, path="state"):
    assert not isinstance(b, Tracer), f"{path} holds a traced value"
    if isinstance(a, np.ndarray):
        assert_same(a, b, what=path)
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            same_state(x, y, f"{path}[{i}]")
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), path
        for k in a:
            same_state(a[k], b[k], f"{path}[{k!r}]")
    elif hasattr(a, "__dict__") and not isinstance(a, (type, types.FunctionType)):
        assert type(a) is type(b), path
        same_state(vars(a), vars(b), path)
    else:
        assert a == b and type(a) is type(b), (path, a, b)


class Twins:
    """A plain object and its twin whose method `name` is compiled (called as compiled(twin, ...)),
    made by `make`; each step runs on both and compares."""

    def __init__(self, make, name, **options):
        self.plain, self.twin = make(), make()
        self.method = getattr(self.plain, name)
        self.compiled = strider.compile(getattr(type(self.twin), name), **options)

    def call(self, *args):
        expected = self.method(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
        got = self.compiled(self.twin, *args)
        same_state(expected, got, "result")
        same_state(self.plain, self.twin)
        return got

    def change(self, mutate):
        mutate(self.plain)
        mutate(self.twin)


class Head:
    def __init__(self):
        self.stride = np.array([8.0, 16.0, 32.0])
        self.scale = 2.0
        self.cfg = types.SimpleNamespace(eps=1e-3)
        self.opts = Options()
        self.grid = [np.zeros((1, 1))] * 3
        self.shapes = {}

    def decode(self, x):
        return x * self.stride * self.scale + self.opts.shift + self.cfg.eps

    def make_grid(self, n):
        return np.arange(n, dtype=np.float64)[:, None] + np.zeros((1, 3))

    def forward(self, xs):
        out = []
        for i, x in enumerate(xs):
            if self.grid[i].shape != x.shape:
                self.grid[i] = self.make_grid(x.shape[0])
            self.shapes[i] = x.shape
            out.append(x + self.grid[i] * self.stride)
        self.anchors = out[0] * 0.5
        return out

    def write_in_place(self, x):
        self.stride[:] = x
        self.stride *= 2
        return self.stride


class Options:
    shift = 0.0

    def __init__(self):
        self.shift = 1.0


def x3(seed=0):
    return np.random.default_rng(seed).standard_normal(3)


def test_arrays_and_numbers_on_self_are_read_on_every_call():
    t = Twins(Head, "decode")
    t.call(x3())
    t.change(lambda h: h.stride.__setitem__(0, 100.0))  # in place
    t.call(x3(1))
    t.change(lambda h: setattr(h, "scale", 3.0))  # a number: a new signature
    t.call(x3(2))
    t.change(lambda h: setattr(h, "stride", np.array([1.0, 2.0, 3.0])))  # rebound
    t.call(x3(3))
    t.change(lambda h: setattr(h.opts, "shift", -5.0))  # through an attribute
    t.call(x3(4))
    t.change(lambda h: setattr(h, "opts", Options()))
    t.call(x3(5))
    t.change(lambda h: setattr(h.cfg, "eps", 0.5))  # on an object of a C class
    t.call(x3(5))
    calls = t.compiled.stats()
    t.call(x3(6))  # nothing changed: served from the cache
    assert t.compiled.stats()["traces"] == calls["traces"]
    assert t.compiled.stats()["cache_hits"] == calls["cache_hits"] + 1


def test_state_cached_on_self_is_what_numpy_leaves_there():
    t = Twins(Head, "forward")
    xs = [np.ones((4, 3)), np.ones((2, 3)) * 2]
    for k in range(4):
        t.call([x * (k + 1) for x in xs])
    assert all(isinstance(g, np.ndarray) for g in t.twin.grid)
    # a later uncompiled method uses what the compiled one cached
    assert_same(t.plain.anchors + t.plain.grid[0], t.twin.anchors + t.twin.grid[0])
    t.call([np.ones((5, 3)), np.ones((2, 3))])  # a new grid shape: made again


def test_explain_lists_what_a_call_reads_besides_its_arguments():
    h = Head()
    e = strider.compile(Head.decode).explain(h, x3())
    assert {"self.stride", "self.scale", "self.opts.shift", "self.cfg.eps"} <= set(e.reads)
    assert "self.stride" in str(e)


def test_writes_into_arrays_on_self_are_writes_into_the_callers_arrays():
    t = Twins(Head, "write_in_place")
    kept = t.twin.stride
    got = t.call(x3())
    assert got is kept and t.twin.stride is kept  # the same array, as NumPy returns it


class Decorated:
    """strider.compile as a decorator in the class body: `self` is a static argument."""

    def __init__(self, scale):
        self.scale = scale
        self.bias = np.zeros(3)
        self.calls = 0

    @strider.compile
    def f(self, x):
        self.calls += 1
        self.last = x * self.scale
        return self.last + self.bias


def test_decorated_in_the_class_body():
    a, b = Decorated(2.0), Decorated(3.0)
    x = x3()
    assert_same(x * 2.0, a.f(x))
    assert_same(x * 3.0, b.f(x))
    a.bias += 1
    assert_same(x * 2.0 + 1, a.f(x))
    a.scale = 5.0
    assert_same(x * 5.0 + 1, a.f(x))
    assert a.calls == 3 and b.calls == 1
    assert_same(x * 5.0, a.last)
    assert type(a) is Decorated and type(a.last) is np.ndarray


def test_bound_method_compiled():
    h = Head()
    f = strider.compile(h.decode)
    x = x3()
    assert_same(h.decode(x), f(x))
    h.stride[1] = -1.0
    h.scale = 0.5
    assert_same(h.decode(x), f(x))


ANCHORS = np.array([1.0, 2.0, 3.0])
THRESHOLD = 0.5
CACHE = {}


def _helper(x):
    return x - ANCHORS  # a global read by a function the compiled one calls


def uses_globals(x):
    CACHE["last"] = x * THRESHOLD
    return _helper(x) * THRESHOLD


def test_module_globals_are_read_on_every_call():
    global THRESHOLD, ANCHORS
    f = strider.compile(uses_globals)
    saved = ANCHORS, THRESHOLD
    try:
        x = x3()
        assert_same((x - ANCHORS) * THRESHOLD, f(x))
        ANCHORS[0] = 10.0
        assert_same((x - ANCHORS) * THRESHOLD, f(x))
        THRESHOLD = 0.25
        assert_same((x - ANCHORS) * THRESHOLD, f(x))
        ANCHORS = np.zeros(3)
        assert_same(x * THRESHOLD, f(x))
        assert_same(x * THRESHOLD, CACHE["last"])
    finally:
        ANCHORS, THRESHOLD = saved
        CACHE.clear()


CALLS = 0


def _doubled(a):
    out = np_zeros(a.shape)  # a name imported straight from NumPy, in a function the compiled one calls
    out[:] = a * 2
    return out


def _window_max(a):
    # CenterNet's _nms: as_strided imported by name
    w = as_strided(a, shape=(a.shape[0] - 2, a.shape[1] - 2, 3, 3), strides=a.strides + a.strides)
    return w.max(axis=(2, 3))


def calls_helpers(x):
    return _doubled(x) + 1, _window_max(x.reshape(3, 3) * 2)


def counted(x):
    global CALLS
    CALLS += 1
    return np_zeros(3) + x[:3]


def test_names_imported_from_numpy_and_global_writes():
    """This module imports names straight from NumPy: a function the compiled one calls uses
    them (they were NumPy's own there: 'a traced array was converted to a concrete NumPy array'),
    and the compiled one's writes to a global happen on every call (they went to the copy of the
    module's globals that rebinds such names: CALLS stayed 0)."""
    global CALLS
    f, g = strider.compile(calls_helpers), strider.compile(counted)
    CALLS = 0
    for k in range(3):
        x = np.arange(9.0) + k
        for a, b in zip(calls_helpers(x), f(x), strict=True):
            assert_same(a, b)
        assert_same(counted(x), g(x))
        assert CALLS == 2 * (k + 1)
    assert f.stats()["traces"] == 1  # (g reads CALLS: each value is a signature)


SCRATCH = np.zeros(3)


def writes_into_a_global_array(x):
    SCRATCH[1:] = x[:2] * 3
    return SCRATCH.sum()


def test_writes_into_global_arrays_are_writes_into_them():
    f = strider.compile(writes_into_a_global_array)
    for k in range(3):
        x = x3(k)
        got = f(x)
        assert_same(np.concatenate([[0.0], x[:2] * 3]), SCRATCH)
        assert_same(SCRATCH.sum(), got)
    assert f.stats()["traces"] == 1


def test_closure_variables_are_read_and_written_as_numpy_leaves_them():
    table = np.arange(3.0)
    kept = []
    count = 0

    def f(x):
        nonlocal count
        count += 1
        kept.append(x + table)
        return x * table

    g = strider.compile(f)
    x = x3()
    assert_same(x * table, g(x))
    table[:] = 7.0
    assert_same(x * 7.0, g(x))
    assert count == 2 and len(kept) == 2
    assert_same(x + 7.0, kept[1])
    assert all(type(k) is np.ndarray for k in kept)


def test_constants_are_read_once():
    h = Head()
    f = strider.compile(Head.decode, constants=("self.stride",))
    x = x3()
    first = f(h, x)
    h.stride[:] = 0.0
    assert_same(first, f(h, x))  # as asked: the trace's values
    h.scale = 1.0  # not a constant: read on every call, and a new signature reads the rest again
    assert_same(x * 0.0 + 1.0 + 1e-3, f(h, x))


def test_a_failed_trace_leaves_objects_as_they_were():
    class Bad:
        def __init__(self):
            self.stride = np.ones(3)

        def f(self, x):
            self.partial = x * 2
            self.stride = self.stride + 1
            return np.frompyfunc(abs, 1, 1)(x)

    b = Bad()
    with pytest.raises(strider.StriderError):
        strider.compile(Bad.f)(b, x3())
    assert not hasattr(b, "partial") and type(b) is Bad
    assert_same(b.stride, np.ones(3))


def test_writes_into_containers_the_caller_passes():
    def f(x, out, log):
        out["boxes"] = x * 2
        log.append(x.sum())
        return x + 1

    g = strider.compile(f)
    for k in range(3):
        x = x3(k)
        out_np, log_np, out_st, log_st = {"keep": 1}, [], {"keep": 1}, []
        same_state(f(x, out_np, log_np), g(x, out_st, log_st), "result")
        same_state((out_np, log_np), (out_st, log_st))
    assert g.stats()["traces"] == 1


def test_a_container_the_caller_passes_and_the_function_returns_is_the_callers():
    # YOLOv5's `output[xi] = x; return output` with output passed in: NumPy returns that list
    def f(x, output, meta):
        output[0] = x * 2
        return output, (x.sum(), meta), [output]

    g = strider.compile(f, strict=True)
    for k in range(3):
        x = x3(k)
        out_np, meta_np, out_st, meta_st = [None, 5], {"k": k}, [None, 5], {"k": k}
        want, got = f(x, out_np, meta_np), g(x, out_st, meta_st)
        same_state(want, got, "result")
        assert got[0] is out_st and got[2][0] is out_st and got[1][1] is meta_st
        assert got[0][0] is out_st[0]
    assert g.stats()["traces"] == 1


class Mode(enum.Enum):
    FAST = 1


@dataclasses.dataclass(frozen=True)
class Frozen:
    scale: float
    mode: Mode


def test_frozen_dataclasses_and_enums():
    def f(x, cfg):
        return x * cfg.scale if cfg.mode is Mode.FAST else x

    g = strider.compile(f)
    x = x3()
    for scale in (2.0, 3.0):
        cfg = Frozen(scale, Mode.FAST)
        assert_same(f(x, cfg), g(x, cfg))
        assert type(cfg) is Frozen and type(cfg.mode) is Mode


LOG = []


def appends_to_a_global(x):
    LOG.append(x.sum())  # a call: `LOG = append(LOG, ...)` would make LOG local (UnboundLocalError)
    for i in range(100):  # more than 64 trips, a Python int wanted: unrolled, each trip appends
        LOG.append(i)
        x = x + 1
    return x


def appends_to_a_global_in_a_traced_loop(x):
    while x.sum() < 10:
        LOG.append(x.sum())
        x = x + 1
    return x + 0


class _Recorder:
    def __init__(self):
        self.hist, self.n = [], 0

    def loop(self, x):
        while x.sum() < 10:
            self.hist.append(1)
            x = x + 1
        return x + 0

    def branch(self, x):
        if x.sum() > 1:
            self.n = 5
        return x + 0


@pytest.mark.parametrize("fn, why", [(appends_to_a_global, None),
                                     (appends_to_a_global_in_a_traced_loop, "append to a list from outside"),
                                     (_Recorder.loop, "a change to a list or dict from outside"),
                                     (_Recorder.branch, "setting _Recorder.n")])
def test_state_from_before_the_call_changed_in_loops_and_branches(fn, why):
    # what a loop or branch on a traced condition changes of the caller's Python state would
    # change once, as it traces: such a call runs in NumPy (a graph break, said once); a Python
    # loop's changes are replayed
    g = strider.compile(fn, strict=False)
    method = fn.__qualname__.startswith("_Recorder")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for v in (0.0, 2.0):
            rec_np, rec_st = _Recorder(), _Recorder()
            LOG.clear()
            expected = fn(*(rec_np,) * method, np.full(3, v))
            log_np = list(LOG)
            LOG.clear()
            got = g(*(rec_st,) * method, np.full(3, v))
            same_state((expected, log_np, vars(rec_np)), (got, list(LOG), vars(rec_st)))
    breaks = [str(w.message) for w in caught if w.category is strider.GraphBreakWarning]
    assert len(breaks) == (why is not None) and all(why in b for b in breaks)
    if why is not None:
        with pytest.raises(strider.TraceError, match=why):
            strider.compile(fn, strict=True)(*(_Recorder(),) * method, np.full(3, 0.0))


def _dict_of_lists(s):
    out = {"idx": []}
    for i in range(len(s)):
        if s[i] > 0.4:
            out["idx"].append(i)
    return out


def _dict_counter(s):
    stats = {"n": 0}
    for i in range(len(s)):
        if s[i] > 0.4:
            stats["n"] += 1
    return stats


def _set_add(s):
    seen = set()
    for i in range(len(s)):
        if s[i] > 0.4:
            seen.add(i % 3)
    return sorted(seen)


class _Counter:
    n = 0


def _object_attribute(s):
    acc = _Counter()
    for i in range(len(s)):
        if s[i] > 0.4:
            acc.n += 1
    return acc.n


def _key_in_a_branch(s):
    out = {}
    if s.max() > 0.5:
        out["high"] = s
    return sorted(out)


def _list_of_lists(s):
    groups = [[s[0]]]
    for j in range(1, len(s)):
        if s[j] > 0.5:
            groups[0].append(s[j])
        else:
            groups.append([s[j]])
    return len(groups)


def _callers_list(s, out):
    for i in range(len(s)):
        if s[i] > 0.4:
            out.append(i)
    return s.sum()


def _callers_list_in_a_while(s, out):
    order = np.argsort(s)[::-1]
    while order.size > 0:
        out.append(order[0])
        order = order[1:][s[order[1:]] < s[order[0]] - 0.2]
    return s.sum()


def _list_a_dict_also_holds(s):
    keep = []
    res = {"keep": keep}
    for i in range(len(s)):
        if s[i] > 0.4:
            keep.append(i)
    return res


def _list_another_name_names(s):
    keep = []
    alias = keep
    for v in s:
        if v > 0.4:
            keep.append(v)
    return alias


def _appends_for_its_caller(keep, s):
    for v in s:
        if v > 0.4:
            keep.append(v)


def _list_a_helper_appends_to(s):
    keep = []
    _appends_for_its_caller(keep, s)
    return keep


def _warns_in_a_branch(s):
    if s.max() > 0.5:
        warnings.warn("a high score")
    return s + 1


@pytest.mark.parametrize("fn, why", [
    (_warns_in_a_branch, "warnings.warn"),
    (_dict_of_lists, "a change to a dict, a set, a list inside another object"),
    (_dict_counter, "setting an item of a dict"),
    (_set_add, "a change to a dict, a set"),
    (_object_attribute, "an object's attribute"),
    (_key_in_a_branch, "setting an item of a dict"),
    (_list_of_lists, "a change to a list that is an item of a list filled at run time"),
    (_callers_list, "an append to a list the caller passes"),
    (_callers_list_in_a_while, "an append to a list the caller passes"),
    (_list_a_dict_also_holds, r"a list 'res' in _list_a_dict_also_holds\(\) also holds"),
    (_list_another_name_names, "a list the name 'alias' in _list_another_name_names"),
    (_list_a_helper_appends_to, r"the name 'keep' in _list_a_helper_appends_to\(\) also names"),
])
@pytest.mark.parametrize("n", [6, 12], ids=["unrolled", "loop"])
def test_python_state_changed_in_loops_and_branches_on_traced_conditions(fn, why, n):
    # dicts, sets, lists inside other objects, objects' attributes the function changes on a
    # traced path (its own or the caller's) would change as the trace runs both sides, once: such
    # a call runs in NumPy; a list of the function's own that it appends to is a traced list
    s = np.random.default_rng(n).random(n)
    args = (s,) if fn.__code__.co_argcount == 1 else (s, [7])
    g = strider.compile(fn, strict=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for k in range(2):
            a_np, a_st = ([list(a) if type(a) is list else a.copy() for a in args] for _ in range(2))
            same_state((fn(*a_np), a_np), (g(*a_st), a_st))
    breaks = [str(w.message) for w in caught if w.category is strider.GraphBreakWarning]
    assert len(breaks) == 1 and re.search(why, breaks[0]), breaks
    with pytest.raises(strider.TraceError, match=why):
        strider.compile(fn, strict=True)(*args)


def _with_a_history(x, history=[]):
    history.append(float(x.sum()))
    return len(history)


def test_a_list_default_the_function_changes_runs_in_numpy():
    # NumPy's calls see the default grow from call to call; a trace would change it once
    g = strider.compile(_with_a_history, strict=False)
    _with_a_history.__defaults__[0].clear()
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        assert [g(np.ones(3)) for _ in range(3)] == [1, 2, 3]
    assert _with_a_history.__defaults__[0] == [3.0, 3.0, 3.0]
    with pytest.raises(strider.TraceError, match="default"):
        strider.compile(_with_a_history, strict=True)(np.ones(3))
    assert _with_a_history.__defaults__[0] == [3.0, 3.0, 3.0]  # a refused trace leaves it as it was


def _scaled_by_defaults(x, strides=[8, 16], *, gains={"a": 2.0}):
    return np.array([x.sum() * s * gains["a"] for s in strides])


def test_list_and_dict_defaults_the_caller_changes_are_read_on_every_call():
    # a default list or dict is the function's, which the caller may change between calls
    # (strider kept the first trace's values)
    f = strider.compile(_scaled_by_defaults)
    for k in range(3):
        same_state(_scaled_by_defaults(np.ones(3)), f(np.ones(3)))
        _scaled_by_defaults.__defaults__[0].append(32 * (k + 1))
        _scaled_by_defaults.__kwdefaults__["gains"]["a"] += 1.0
    assert {"_scaled_by_defaults.__defaults__[0]", "_scaled_by_defaults.__kwdefaults__['gains']"} <= set(
        f.explain(np.ones(3)).reads)


def _raises_on_division_by_zero(x):
    with np.errstate(divide="raise"):
        return 1.0 / x


def test_errstate_that_raises_inside_the_function_runs_in_numpy():
    # compiled kernels check no floating-point errors: NumPy's run raises FloatingPointError
    x = np.array([0.5, 0.0])
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        with pytest.raises(FloatingPointError):
            strider.compile(_raises_on_division_by_zero, strict=False)(x)
    with pytest.raises(strider.UnsupportedError, match="errstate"):
        strider.compile(_raises_on_division_by_zero, strict=True)(x)


def _reciprocal(x):
    return 1.0 / x


def test_errstate_that_raises_around_the_call_runs_it_in_numpy():
    # the caller's np.errstate is read on every call: 'raise' and 'call' run NumPy (once the
    # compiled program exists), any other setting the compiled program
    x = np.array([0.5, 0.0])
    f = strider.compile(_reciprocal, strict=False)
    np.testing.assert_array_equal(f(x), [2.0, np.inf])
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
            f(x)
        seen = []
        with np.errstate(divide="call", call=lambda kind, flag: seen.append(kind)):
            np.testing.assert_array_equal(f(x), [2.0, np.inf])
        assert seen == ["divide by zero"]
    assert "errstate" in str(said[0].message)
    with np.errstate(divide="ignore", over="warn"):
        np.testing.assert_array_equal(f(x), [2.0, np.inf])
    assert f.stats()["runtime_breaks"] == 2 and f.stats()["traces"] == 1
    old = np.seterr(invalid="raise")
    try:
        with pytest.raises(ValueError, match="errstate"):
            strider.compile(_reciprocal, strict=True)(x)
    finally:
        np.seterr(**old)
    np.testing.assert_array_equal(f(x), [2.0, np.inf])


class _Track:
    def __init__(self):
        self.x = np.array([1.0, 2.0, 0.5])

    def predict(self):
        self.x[0] += self.x[1]  # on an attribute only: the first walk writes it as NumPy
        return self.x.copy()


def test_a_write_into_an_attribute_array_is_made_once_on_the_first_call():
    # the walk that finds self.x a source is dropped: what it wrote as NumPy is put back
    plain, twin = _Track(), _Track()
    compiled = strider.compile(twin.predict)
    for _ in range(3):
        same_state(plain.predict(), compiled())
        same_state(plain.x, twin.x)


class _Config:
    scale = 2.0
    calls = 0


class _Counted:
    made = 0

    def __init__(self, row):
        self.id = _Counted.made
        _Counted.made += 1
        self.row = row


def _scaled(d):
    _Config.calls += 1
    return d * _Config.scale


def _spawned(d):
    return [_Counted(d[i]).id for i in range(d.shape[0])]


def test_class_attributes_are_read_and_written_on_every_call():
    # a config class's numbers are read on each call, never frozen; SORT's id counter on a class
    # counts each call's objects once
    compiled = strider.compile(_scaled, strict=False)
    _Config.scale, _Config.calls = 2.0, 0
    same_state(compiled(np.ones(2)), np.full(2, 2.0))
    _Config.scale = 3.0
    same_state(compiled(np.ones(2)), np.full(2, 3.0))
    assert _Config.calls == 2
    spawn = strider.compile(_spawned, strict=False)
    _Counted.made = 0
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        assert spawn(np.ones((3, 2))) == [0, 1, 2] and spawn(np.ones((2, 2))) == [3, 4]
    assert _Counted.made == 5


class _Steps:
    taken = 0

    def step(self, d):
        type(self).taken += 1
        self.__class__.taken += 1
        return d * 2


def test_a_class_attribute_written_through_the_objects_type():
    # type(self) and self.__class__ are the object's own class, not the trace's recording one
    t = _Steps()
    compiled = strider.compile(_Steps.step, strict=False)
    _Steps.taken = 0
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        for _ in range(3):
            same_state(compiled(t, np.ones(2)), np.full(2, 2.0))
    assert _Steps.taken == 6


class _Filter:
    def __init__(self):
        self.x = np.arange(3.0)


class _Kept:
    def __init__(self):
        self.age, self.x = 0, np.array([1.0, 2.0])
        self.kf = _Filter()


class _Tracks:
    kf = None  # (ByteTrack's STrack: set by activate)

    def __init__(self):
        self.trackers = [_Kept(), _Kept()]

    def predict(self, dets):  # SORT's Sort.update: `for trk in self.trackers: trk.predict()`
        for t in self.trackers:
            t.age += 1
            t.x[0] += 1.0  # in place: a write into the caller's array
            t.kf.x = t.kf.x * 2.0 + dets[0]  # rebound, an attribute of an attribute (filterpy's self.x)
        return sum(t.kf.x.sum() for t in self.trackers)


def _ages(trackers, dets):
    for t in trackers:
        t.age += 1
        t.x = t.x + dets
    return dets * 2


def _activate(trackers, kf):  # ByteTrack's STrack.activate, for each new track
    for t in trackers:
        t.kf = kf
        t.mean = t.kf.x * 2
    return trackers[0].mean


def test_objects_in_lists_are_changed_as_numpy_changes_them():
    # attributes the function sets on objects in a list (an argument, or one an attribute holds)
    # are set again by every call with that call's values, and what it reads there is that call's:
    # strider used to read such an object's arrays once (stale results on later calls), set none
    # of them, or leave its Tracers there
    for strict in (False, True):
        pair = Twins(_Tracks, "predict", strict=strict)
        for i in range(4):
            pair.call(np.array([0.5 * i, 1.0]))
            if i == 1:
                pair.change(lambda t: t.trackers.append(_Kept()))
    for fn, make in ((_ages, lambda: [_Kept(), _Kept()]), (_activate, lambda: [_Kept()])):
        plain, twin = make(), make()
        for strict in (False, True):
            compiled = strider.compile(fn, strict=strict)
            for i in range(3):
                arg = np.array([i, 1.0]) if fn is _ages else _Filter()
                same_state(fn(plain, arg), compiled(twin, arg if fn is _ages else _Filter()))
                same_state(plain, twin)


def _popped(trackers, dets):
    t = trackers.pop(0)
    t.age += 1
    return dets * 2


def test_a_change_through_a_list_the_function_changes_runs_in_numpy():
    # the object a call's replay finds at trackers[0] is not the one the trace changed: the call
    # runs in NumPy instead, the trace's changes undone first
    plain, twin = [_Kept(), _Kept()], [_Kept(), _Kept()]
    compiled = strider.compile(_popped, strict=False)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        same_state(_popped(plain, np.ones(2)), compiled(twin, np.ones(2)))
        same_state(plain, twin)
    assert "_Kept.age of an object in a list or dict that it also changes" in str(said[0].message)
    # (found after the function returned: named at the function's first line, not the caller's)
    line = _popped.__code__.co_firstlineno
    with pytest.raises(strider.TraceError, match=rf"test_state.py:{line}: _popped\(\) changes _Kept.age of an "
                       "object in a list"):
        strider.compile(_popped, strict=True)(twin, np.ones(2))
    same_state(plain, twin)


def _aged_then_unsupported(holder, x):
    for t in holder.trackers:
        t.age += 1
    return np.linalg.inv(x)


def test_a_graph_break_undoes_changes_to_objects_in_an_attributes_list():
    # NumPy's run after the break makes the changes once (SORT's trackers were predicted twice)
    plain, twin = _Tracks(), _Tracks()
    compiled = strider.compile(_aged_then_unsupported, strict=False)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        for _ in range(2):
            same_state(_aged_then_unsupported(plain, np.eye(2)), compiled(twin, np.eye(2)))
            same_state(plain, twin)


def _frozen_read(holder):
    return holder.trackers[0].x * 2


def test_arrays_of_objects_in_an_attributes_list_are_read_on_every_call():
    holder = _Tracks()
    compiled = strider.compile(_frozen_read, strict=True)
    for i in range(3):
        holder.trackers[0].x[0] = i
        same_state(_frozen_read(holder), compiled(holder))


def _observed(trackers, held, dets):
    # OC-SORT's `[k_previous_obs(trk.observations, trk.age, ...) for trk in self.trackers]`
    ages = np.array([t.age for t in trackers], dtype=np.float64)
    return dets + ages.sum() + trackers[1].x * held["a"].x + held["pair"][0].age


class _Association:
    def __init__(self):
        self.trackers = [_Kept(), _Kept()]

    def update(self, dets):
        return dets * np.array([t.age + t.x[0] for t in self.trackers]).sum()


def test_what_a_function_reads_from_objects_in_lists_tuples_and_dicts_is_read_on_every_call():
    # objects in an argument's containers, or in a list an attribute holds, are followed through
    # their items: their numbers and arrays are this call's, whether the caller changed them in
    # place, rebound them or put other objects there (a number and a new object a new
    # signature). strider used to freeze them at the first trace.
    plain, twin = ([_Kept(), _Kept()], {"a": _Kept(), "pair": (_Kept(),)}), ([_Kept(), _Kept()], {"a": _Kept(), "pair": (_Kept(),)})
    tracker, tracker_twin = _Association(), _Association()
    compiled, bound = strider.compile(_observed), strider.compile(tracker_twin.update)
    for frame in range(4):
        same_state(_observed(*plain, np.ones(2)), compiled(*twin, np.ones(2)))
        same_state(tracker.update(np.ones(2)), bound(np.ones(2)))
        for trackers, held, association in ((*plain, tracker), (*twin, tracker_twin)):
            for t in trackers + association.trackers + [held["a"], held["pair"][0]]:
                t.age += 1
                t.x[1] += 0.5  # in place: the next call reads it
            trackers[0].x = trackers[0].x * 3  # rebound
            if frame == 2:
                held["a"] = _Kept()
                association.trackers.append(_Kept())
    same_state(plain, twin)
    assert compiled.stats()["cache_hits"] == 0  # (each frame's ages: new numbers, new signatures)
    assert "trackers[0].age" in compiled.explain(*twin, np.ones(2)).reads


class _CoderA:
    def __init__(self):
        self.k = 2.0

    def encode(self, x):
        return x * self.k


class _CoderB(_CoderA):
    def encode(self, x):
        return x + self.k


_SEEN = {}


class _Made:
    """Objects made anew for each call (a decoder built per image): keyed by their class, what a
    method reads from them is read on every call; where it uses an object's identity (==, hash,
    id(), vars(), the object returned or kept) the key is the identity again."""

    def __init__(self, offset=1.0, act=np.negative, coder=_CoderA, extra=None):
        self.stride, self.offset, self.act, self.coder = np.array([8.0, 16.0]), offset, act, coder()
        self.buf = np.zeros(2)
        if extra is not None:
            self.extra = extra

    def decode(self, x):
        return x * self.stride + self.offset

    def activate(self, x):
        return self.act(x)

    def maybe(self, x):
        return x + self.extra if hasattr(self, "extra") else x

    def nested(self, x):
        return self.coder.encode(x)

    def returns_self(self, x):
        return self, x * 2

    def keyed(self, x):
        return x + _SEEN.setdefault(self, len(_SEEN))

    def uses_id(self, x):
        return x + id(self) % 7

    def counted(self, x):
        return x + len(vars(self))

    def writes(self, x):
        self.last = x * 2
        self.buf[:] = x
        return x


_MAKES = [lambda: _Made(), lambda: _Made(), lambda: _Made(offset=3.0), lambda: _Made(act=np.abs),
          lambda: _Made(coder=_CoderB), lambda: _Made(extra=5.0), lambda: _Made(), lambda: _Made(extra=6.0)]


@pytest.mark.parametrize("name", ["decode", "activate", "maybe", "nested", "returns_self", "keyed", "uses_id",
                                  "counted", "writes"])
def test_objects_made_anew_are_keyed_by_their_class(name):
    compiled = strider.compile(getattr(_Made, name))
    x = np.array([1.0, 2.0])
    for make in _MAKES:
        plain, twin = make(), make()
        if name == "uses_id":
            plain = twin  # id() of the same object
        expected = getattr(_Made, name)(plain, x.copy())
        if name == "keyed":
            _SEEN[twin] = _SEEN.pop(plain)
        got = compiled(twin, x.copy())
        if name == "returns_self":
            assert got[0] is twin
            got, expected = got[1], expected[1]
        same_state(expected, got, "result")
        same_state(plain, twin)
    if name == "decode":  # two offsets: a signature each, and one trace the walk asked again for
        assert compiled.stats()["traces"] == 3


def _same_or_not(a, b, x):
    return x if a is b else -x


def test_objects_compared_with_is_keep_that_in_the_key():
    compiled = strider.compile(_same_or_not)
    one, other, x = _Made(), _Made(), np.ones(2)
    for a, b in [(one, one), (one, other), (other, other), (other, one)]:
        assert_same(_same_or_not(a, b, x), compiled(a, b, x))


def _reported(x, t):
    y = x * 2
    print("post processing done")  # YOLOv4's post_processing reports as it goes
    print("kept", int((y > t).sum()), "of", x.shape[0], sep=" ", end=".\n")
    y[0] = 100.0  # after the print: the printed values are the ones at the call
    print(y[:2], [y[1], len(x[x > t])], file=sys.stderr)
    y[1] = -5.0
    for i in range(2):
        print("row", i, y[i])
    return y


def _reported_in_a_branch(x):
    if x[0] > 0:
        print("positive")
    return x + 1


def test_prints_print_on_every_call_what_that_call_computes(capsys):
    """print runs after each call with the values that call computed, to the stream it names
    then (while tracing it printed once, and traced values' descriptions); in a branch on a
    traced condition it breaks the graph, so NumPy prints as often as the run says."""
    compiled = strider.compile(_reported, strict=True)
    for x in (np.array([1.0, -2.0, 3.0]), np.array([-4.0, 5.0, 6.0, 7.0])):
        for _ in range(2):
            expected = _reported(x.copy(), 0.5)
            want = capsys.readouterr()
            assert_same(expected, compiled(x.copy(), 0.5))
            got = capsys.readouterr()
            assert (got.out, got.err) == (want.out, want.err) and "post processing done" in got.out
    with pytest.raises(strider.TraceError, match="print in a loop or branch on a traced condition"):
        strider.compile(_reported_in_a_branch, strict=True)(np.ones(2))
    compiled = strider.compile(_reported_in_a_branch, strict=False)
    with pytest.warns(strider.GraphBreakWarning):
        for x in (np.array([1.0]), np.array([-1.0]), np.array([2.0])):
            compiled(x)
    assert capsys.readouterr().out == "positive\npositive\n"


_LOG = logging.getLogger("strider_tests.postprocess")


def _logged(x, t):
    y = x[x > t]
    _LOG.info("kept %d of %d, first %s", y.shape[0], x.shape[0], y[:1])
    logging.getLogger("strider_tests").warning("sum %s", int(x.sum()))  # through the root logger's class
    return y * 2


def _logged_in_a_branch(x):
    if x[0] > 0:
        _LOG.warning("positive")
    return x + 1


def test_logs_are_made_on_every_call_with_what_that_call_computes(caplog):
    """A logger's methods run after each call with the values that call computed, as print; in
    a branch on a traced condition they break the graph, so NumPy logs as often as the run says."""
    compiled = strider.compile(_logged, strict=True)
    with caplog.at_level(logging.INFO, logger="strider_tests"):
        for x in (np.array([1.0, -2.0, 3.0]), np.array([-4.0, 5.0, 6.0, 7.0]), np.array([-1.0])):
            caplog.clear()
            expected = _logged(x.copy(), 0.5)
            want = [(r.levelno, r.getMessage()) for r in caplog.records]
            caplog.clear()
            assert_same(expected, compiled(x.copy(), 0.5))
            assert [(r.levelno, r.getMessage()) for r in caplog.records] == want and len(want) == 2
        with pytest.raises(strider.TraceError, match="Logger.warning in a loop or branch on a traced condition; "
                           "return a flag"):
            strider.compile(_logged_in_a_branch, strict=True)(np.ones(2))
        compiled = strider.compile(_logged_in_a_branch, strict=False)
        caplog.clear()
        with pytest.warns(strider.GraphBreakWarning):
            for x in (np.array([1.0]), np.array([-1.0]), np.array([2.0])):
                compiled(x)
        assert [r.getMessage() for r in caplog.records if r.name == _LOG.name] == ["positive", "positive"]


class _Tracker:
    count = 0

    def __init__(self, row):
        self.id = _Tracker.count
        _Tracker.count += 1


def _survivor_ids(d):
    x = d[d[:, 0] > 0]
    return [_Tracker(x[i]).id for i in range(x.shape[0])]


def test_a_class_attribute_changed_in_a_loop_on_a_run_time_count_breaks_the_graph():
    # SORT's KalmanBoxTracker.count on each trip of a loop of the IR: traced once, it changed
    # once a call ([0, 0, 0], then [1, 1, 1]); refused, the call runs in NumPy
    with pytest.raises(strider.TraceError, match="a change to _Tracker.count in a loop or branch"):
        strider.compile(_survivor_ids, strict=True)(np.ones((3, 2)))
    f = strider.compile(_survivor_ids, strict=False)
    _Tracker.count = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", strider.GraphBreakWarning)
        assert f(np.ones((3, 2))) == [0, 1, 2] and f(np.ones((3, 2))) == [3, 4, 5]
