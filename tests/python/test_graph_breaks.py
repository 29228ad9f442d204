"""Code a trace cannot capture runs in NumPy instead of raising (issue 17's graph breaks, first
level): the whole call runs as the user's Python on the real arrays, so its values, dtypes and
writes are NumPy's by construction. A warning says so once per function and reason, explain()
lists the break with the user's file:line, stats() counts it, and strict=True raises instead.
The suite runs with STRIDER_STRICT=1 (tests/conftest.py), so no other test falls back unseen."""
import collections
import datetime
import inspect
import logging
import os
import random
import struct
import time
import warnings

import numpy as np
import pytest

import strider
from differential import check
from heads import py_cpu_nms  # Fast R-CNN's loop, as the benchmark times it


def dets(n, seed=0):
    rng = np.random.default_rng(seed)
    xy = rng.random((n, 2)) * 300
    wh = rng.random((n, 2)) * 60 + 1
    return np.hstack([xy, xy + wh, rng.random((n, 1))]).astype(np.float32)


def line_of(fn, mark="# <- break"):
    """'file.py:NN' of the line of `fn` holding `mark`."""
    lines, first = inspect.getsourcelines(fn)
    return f"{os.path.basename(inspect.getsourcefile(fn))}:{first + next(i for i, t in enumerate(lines) if mark in t)}"


def kept_or_none(dets, thresh):
    keep = py_cpu_nms(dets, thresh)
    i = 0
    while i < keep.size:  # <- break: its else clause keeps this loop on a traced value Python's
        if keep[i] < 0:
            break
        i = i + 1
    else:
        return keep
    return None


LOOP = "<- break: its else clause"  # the line that needs a traced value's truth


def test_a_branch_it_cannot_capture_runs_in_numpy_and_says_where_once():
    f = strider.compile(kept_or_none, strict=False)
    d = dets(200)
    with pytest.warns(strider.GraphBreakWarning, match=line_of(kept_or_none, LOOP)) as caught:
        got = f(d, 0.5)
    assert len(caught) == 1
    want = kept_or_none(d, 0.5)
    assert got.dtype == want.dtype and np.array_equal(got, want)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no second warning
        np.testing.assert_array_equal(f(dets(200, seed=1), 0.3), kept_or_none(dets(200, seed=1), 0.3), strict=True)
    text = str(f.explain(d, 0.5))
    assert "graph break" in text and line_of(kept_or_none, LOOP) in text
    assert "a `while` loop with an `else` clause" in text
    assert f.stats()["graph_breaks"] == 1 and f.stats()["traces"] == 1  # the break is kept per signature


def first_big(x, t):
    i = 0
    while i < x.shape[0]:  # a Python loop: its bound is static
        try:
            if x[i] > t:  # <- a return inside a try inside a loop
                return x[i] * 2
        finally:
            i += 1
    return x[0] * 0


def test_a_return_inside_a_try_inside_a_loop_breaks_saying_so():
    x = np.array([0.1, 0.5, 0.9])
    with pytest.raises(strider.TraceError, match="an `if` around a `return` inside a loop on a traced condition"):
        strider.compile(first_big, strict=True)(x, 0.4)
    with pytest.warns(strider.GraphBreakWarning, match=line_of(first_big, "# <- a return")):
        np.testing.assert_array_equal(strider.compile(first_big, strict=False)(x, 0.4), first_big(x, 0.4), strict=True)


def priors(image_size, f):
    # ssd.pytorch's PriorBox, its image size passed in: a Python loop over every cell of a
    # feature map making a list of traced floats (34,928 of them at 300 px)
    mean = []
    for i in range(f):
        for j in range(f):
            f_k = image_size / 8.0
            mean += [(j + 0.5) / f_k, (i + 0.5) / f_k]  # <- ops
    return np.array(mean)


def test_a_trace_too_long_to_compile_runs_in_numpy(monkeypatch):
    # (the limit lowered, so that the test traces a few hundred ops, not 20,000)
    monkeypatch.setattr(strider._tracer, "_MAX_OPS", 300)
    with pytest.raises(strider.TraceError, match=line_of(priors, "# <- ops") + ": the function traces to more than 300"):
        strider.compile(priors, static_argnames=("f",), strict=True)(300.0, 12)
    g = strider.compile(priors, static_argnames=("f",), strict=False)
    with pytest.warns(strider.GraphBreakWarning, match="static_argnames"):
        np.testing.assert_array_equal(g(300.0, 12), priors(300.0, 12), strict=True)
    check(priors, 300.0, 4, static_argnames=("f",))  # (what fits compiles)


def test_an_unsupported_op_runs_in_numpy_with_the_callers_arrays_written():
    def f(x, y):
        y[:2] = x[:2] * 2
        return np.histogram(x, 3)[0][0] + y.sum()  # <- break

    x, y = np.arange(6.0), np.ones(4)
    want_y = y.copy()
    want = f(x, want_y)
    g = strider.compile(f, strict=False)
    with pytest.warns(strider.GraphBreakWarning, match="histogram"):
        assert g(x, y) == want
    np.testing.assert_array_equal(y, want_y)


def test_numpys_own_errors_come_from_numpy():
    def f(x):
        if x.sum() > 0:  # <- break
            return x.reshape(7)
        return x

    g = strider.compile(f, strict=False)
    with pytest.warns(strider.GraphBreakWarning), pytest.raises(ValueError, match="reshape"):
        g(np.ones(4))


def test_strict_raises_what_the_trace_met():
    g = strider.compile(kept_or_none, strict=True)
    with pytest.raises(strider.TraceError, match=line_of(kept_or_none, LOOP)):
        g(dets(20), 0.5)


def test_the_suite_is_strict_by_default():
    assert os.environ.get("STRIDER_STRICT") == "1"
    with pytest.raises(strider.TraceError):
        strider.compile(kept_or_none)(dets(20), 0.5)


def packed(x, scale):
    y = x * scale
    return struct.pack("<f", y[0]), struct.pack("<d", scale * 2), y


def test_code_that_turns_a_refusal_into_its_own_error_breaks_the_graph():
    # struct.pack's 'f' raises struct.error for any failure of float(): a traced element's
    # refusal stays the reason (a graph break, NumPy's result); a number the caller passes is
    # specialized, as where float() itself is called on it
    x = np.arange(3, dtype=np.float32)
    f = strider.compile(packed, strict=False)
    with pytest.warns(strider.GraphBreakWarning, match=r"float\(\) of a traced array"):
        got = f(x, 2.0)
    want = packed(x, 2.0)
    assert got[:2] == want[:2] and np.array_equal(got[2], want[2])
    assert f.stats()["graph_breaks"] == 1
    with pytest.raises(strider.TraceError, match=r"float\(\) of a traced array"):
        strider.compile(packed, strict=True)(x, 2.0)
    g = strider.compile(lambda x, s: (struct.pack("<d", s * 2), x * s), strict=True)
    for s in (2.0, 3.0):
        got = g(x, s)
        assert got[0] == struct.pack("<d", s * 2) and np.array_equal(got[1], x * s)


def brightness(rng, image):
    # CenterNet's color augmentation: a draw from the generator the caller passes
    return image * (1 + rng.uniform(-0.4, 0.4)), rng.random(2)


_GLOBAL_RNG = np.random.default_rng(0)


def jitter(boxes):
    return boxes + _GLOBAL_RNG.normal(size=boxes.shape)


@pytest.mark.parametrize("fn,make", [
    (brightness, lambda seed: (np.random.default_rng(seed), np.ones(3))),
    (lambda rngs, x: x * rngs[0].random(3), lambda seed: ([np.random.RandomState(seed)], np.ones(3))),  # not rewritten
])
def test_a_random_generator_drawn_from_breaks_the_graph(fn, make):
    """Its values would be drawn once, at trace time, and replayed: strict raises, otherwise NumPy
    runs each call (a generator passed in, in a lambda too: its C code met the np.empty stand-in
    and crashed)."""
    with pytest.raises(strider.UnsupportedError, match=r"(Generator|RandomState)\.\w+ inside a compiled function"):
        strider.compile(fn, strict=True)(*make(0))
    compiled = strider.compile(fn, strict=False)
    ours, theirs = make(0), make(0)
    with pytest.warns(strider.GraphBreakWarning):
        for _ in range(2):
            got, expected = compiled(*ours), fn(*theirs)
            for a, b in zip(got if type(got) is tuple else (got,), expected if type(expected) is tuple else (expected,)):
                np.testing.assert_array_equal(a, b)


def test_a_global_random_generator_breaks_the_graph():
    with pytest.raises(strider.UnsupportedError, match=r"Generator\.normal inside a compiled function"):
        strider.compile(jitter, strict=True)(np.zeros((2, 4)))


def timed_decode(x):
    t1 = time.time()  # YOLOv4's post_processing: timings it prints
    y = x * 2
    return y, t1, time.time() - t1


def jittered(x):
    return x * (1 + random.uniform(-0.1, 0.1)), random.random()


def stamped(x):
    return x, datetime.datetime.now()


@pytest.mark.parametrize("fn,what", [(timed_decode, r"time\.time\(\)"), (jittered, r"random\.uniform\(\)"),
                                     (lambda x: (x, time.perf_counter()), r"time\.perf_counter\(\)"),
                                     (stamped, r"datetime\.now\(\)")])
def test_a_clock_or_pythons_random_breaks_the_graph(fn, what):
    """A clock or Python's random module read while tracing would give every call the trace's
    value (the first call's time, a frozen draw): strict raises, otherwise NumPy runs each call."""
    with pytest.raises(strider.UnsupportedError, match=what + " inside a compiled function"):
        strider.compile(fn, strict=True)(np.ones(3))
    compiled = strider.compile(fn, strict=False)
    got = []
    with pytest.warns(strider.GraphBreakWarning):
        for seed in (5, 6):
            random.seed(seed)
            got.append(compiled(np.ones(3)))
            random.seed(seed)
            want = fn(np.ones(3))
            time.sleep(0.01)
            assert np.array_equal(got[-1][0], want[0]) and (fn is not jittered or got[-1][1] == want[1])
    assert got[1][1] > got[0][1] if fn is not jittered else got[1][1] != got[0][1]


def logged(x):
    logging.getLogger("strider-test-user").info("decoding")  # a record: it reads the clock
    return x * 2


def test_logging_at_info_reads_the_clock_for_strider_alone(caplog):
    """At INFO, strider's own records (a number made static) read the clock while a trace runs:
    they were refused as the function's clock (a graph break naming logging's file); the
    function's own record is made after each call, as print's output (it was refused as a read
    of the clock, which would be written once)."""
    caplog.set_level(logging.INFO)
    f = strider.compile(lambda x, n: x[:n] * 2, strict=True)
    np.testing.assert_array_equal(f(np.arange(5.0), 3), np.arange(3.0) * 2)
    assert f.stats()["specialized"] == 1 and any("static from now on" in r.getMessage() for r in caplog.records)
    g = strider.compile(logged, strict=True)
    caplog.clear()
    for _ in range(2):
        np.testing.assert_array_equal(g(np.ones(2)), np.ones(2) * 2)
    assert [r.getMessage() for r in caplog.records if r.name == "strider-test-user"] == ["decoding"] * 2


def present_names(target_cls, names):
    # YOLOv5's ap_per_class: the names of the classes present, a test known only at run time
    unique_classes, nt = np.unique(target_cls, return_counts=True)
    names = [v for k, v in names.items() if k in unique_classes]
    return nt, names


def test_text_in_a_list_filled_under_a_traced_condition_breaks_the_graph():
    """Text cannot be an item of a list only the run fills: said so (it was 'a value of type str
    in an array operation', on a line with no array operation); NumPy runs the call."""
    t, names = np.array([0.0, 2.0, 2.0]), {0: "person", 1: "car", 2: "dog"}
    with pytest.raises(strider.TraceError, match=r"test_graph_breaks\.py:\d+: the list a comprehension builds holds "
                                                 r"text and is filled in a loop or branch on a traced condition"):
        strider.compile(present_names, strict=True)(t, names)
    with pytest.warns(strider.GraphBreakWarning):
        nt, got = strider.compile(present_names, strict=False)(t, names)
    assert got == ["person", "dog"] and nt.tolist() == [1, 2]


class _Detection:
    def __init__(self, score):
        self.score = score


def fused_cost(cost, detections):
    # ByteTrack's fuse_score: the detections are new objects each frame, keyed by identity
    scores = np.array([d.score for d in detections])
    return 1 - (1 - cost) * scores[None, :]


def test_a_function_traced_more_often_than_reused_runs_new_signatures_in_numpy():
    """Past 16 traces, more than its programs served, a new signature runs in NumPy (ByteTrack
    traced every frame: 3-10 ms against NumPy's 0.1); strict=True traces each."""
    cost = np.random.default_rng(3).uniform(0, 1, (4, 5))
    for strict in (False, True):
        f = strider.compile(fused_cost, strict=strict)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for frame in range(24):
                dets = [_Detection(0.1 * k + frame) for k in range(5)]
                np.testing.assert_array_equal(f(cost, dets), fused_cost(cost, dets))
        said = [str(w.message) for w in caught if w.category is strider.GraphBreakWarning]
        stats = f.stats()
        if strict:
            assert stats["lowered"] == 24 and not said
        else:
            # (the first frame traces more than once: its detections' scores are sources it finds)
            assert 8 <= stats["graph_breaks"] == 24 - stats["lowered"] and stats["traces"] - stats["graph_breaks"] == 16
            assert len(said) == 1 and "fused_cost was traced for more than 16 calls" in said[0]


def offsets_if_landmarks(boxes):
    # ipazc's MTCNN fix_bboxes_offsets: landmark columns written where there are some
    boxes = boxes.copy()
    try:
        boxes[:, [6, 7]] -= 1.0
    except IndexError:
        pass
    return boxes


def picked_or_head(b, idx):
    try:
        return b[idx]
    except IndexError:
        return b[:2]


def scaled_in_errstate(b, idx):
    with np.errstate(divide="ignore"):
        return b[idx] / 0


def test_an_index_error_inside_a_try_is_the_try_s():
    """A list index out of range is known while tracing: raised then, the try catches it as in
    NumPy (it was checked at run time, past the handler). One known only at run time inside a
    `try` breaks the graph, so that NumPy's run raises where the handler sees it; a `with`
    block is no `try`."""
    for cols in (6, 8):
        x = np.arange(2.0 * cols).reshape(2, cols)
        check(offsets_if_landmarks, x)
    b = np.arange(10.0)
    with pytest.raises(strider.TraceError, match="checked inside a `try`"):
        strider.compile(picked_or_head, strict=True)(b, np.array([3, 1]))
    compiled = strider.compile(picked_or_head, strict=False)
    with pytest.warns(strider.GraphBreakWarning):
        for idx in (np.array([3, 12]), np.array([3, 1])):
            np.testing.assert_array_equal(compiled(b, idx), picked_or_head(b, idx))
    check(scaled_in_errstate, b, np.array([3, 1]))


def inverse_or_zero(x):
    try:
        y = np.linalg.inv(x)  # refused: strider's error must not reach this handler
    except Exception:
        y = x * 0
    return y


def precision_at(pr, inds):
    # COCOeval's accumulate: a bare except around reads at indices only the run knows
    q = np.zeros(2)
    try:
        for ri, pi in enumerate(inds):
            q[ri] = pr[pi]
    except:  # noqa: E722
        pass
    return q


@pytest.mark.parametrize("fn,args", [(inverse_or_zero, (np.eye(2) * 2,)),
                                     (precision_at, (np.array([1.0, 0.5, 0.25]), np.array([2, 1])))])
def test_a_refusal_inside_a_broad_except_breaks_the_graph(fn, args):
    """strider's own refusal is an Exception: caught by the function's handler while tracing, the
    handler's path was compiled (silently wrong). The trace raises it after all: NumPy runs."""
    with pytest.raises(strider.StriderError):
        strider.compile(fn, strict=True)(*args)
    with pytest.warns(strider.GraphBreakWarning):
        got = strider.compile(fn, strict=False)(*args)
    np.testing.assert_array_equal(got, fn(*args))


class _Track:
    def __init__(self, mean):
        self.mean = mean


_RUNS = collections.Counter()  # (not a list: a failed trace's appends to one are put back)


def _gate(tracks, m):
    _RUNS["calls"] += 1  # a trace's run and NumPy's alike
    d = np.stack([t.mean for t in tracks])
    return np.linalg.inv(m) @ d.T


def test_signatures_that_break_for_one_reason_stop_being_traced():
    # DeepSORT's gate_cost_matrix: new track objects each frame, each a new signature whose trace
    # breaks at np.linalg; after three such traces a new signature runs in NumPy at once
    f = strider.compile(_gate, strict=False)
    m = np.eye(4) * 2
    _RUNS.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", strider.GraphBreakWarning)
        for k in range(8):
            tracks = [_Track(np.full(4, float(i + k))) for i in range(3)]
            np.testing.assert_array_equal(f(tracks, m), np.linalg.inv(m) @ np.stack([t.mean for t in tracks]).T)
    # each call in NumPy, and three traces (the first twice: its walk learns what it reads of the
    # tracks), not eight
    assert _RUNS["calls"] - 8 == 4
    assert f.stats()["graph_breaks"] == 8 and f.stats()["lowered"] == 0
