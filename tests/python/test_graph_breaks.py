"""Code a trace cannot capture runs in NumPy instead of raising (issue 17's graph breaks, first
level): the whole call runs as the user's Python on the real arrays, so its values, dtypes and
writes are NumPy's by construction. A warning says so once per function and reason, explain()
lists the break with the user's file:line, stats() counts it, and strict=True raises instead.
The suite runs with STRIDER_STRICT=1 (tests/conftest.py), so no other test falls back unseen."""
import inspect
import os
import warnings

import numpy as np
import pytest

import strider


def py_cpu_nms(dets, thresh):
    """Fast R-CNN's py_cpu_nms, as its project writes it."""
    x1 = dets[:, 0]
    y1 = dets[:, 1]
    x2 = dets[:, 2]
    y2 = dets[:, 3]
    scores = dets[:, 4]
    areas = (x2 - x1 + 1) * (y2 - y1 + 1)
    order = scores.argsort()[::-1]
    keep = []
    while order.size > 0:  # <- break
        i = order[0]
        keep.append(i)
        xx1 = np.maximum(x1[i], x1[order[1:]])
        yy1 = np.maximum(y1[i], y1[order[1:]])
        xx2 = np.minimum(x2[i], x2[order[1:]])
        yy2 = np.minimum(y2[i], y2[order[1:]])
        w = np.maximum(0.0, xx2 - xx1 + 1)
        h = np.maximum(0.0, yy2 - yy1 + 1)
        inter = w * h
        ovr = inter / (areas[i] + areas[order[1:]] - inter)
        inds = np.where(ovr <= thresh)[0]
        order = order[inds + 1]
    return keep


def dets(n, seed=0):
    rng = np.random.default_rng(seed)
    xy = rng.random((n, 2)) * 300
    wh = rng.random((n, 2)) * 60 + 1
    return np.hstack([xy, xy + wh, rng.random((n, 1))]).astype(np.float32)


def line_of(fn, mark="# <- break"):
    lines, first = inspect.getsourcelines(fn)
    return f"{os.path.basename(__file__)}:{first + next(i for i, t in enumerate(lines) if mark in t)}"


def test_a_python_loop_over_traced_values_runs_in_numpy_and_says_where_once():
    f = strider.compile(py_cpu_nms, strict=False)
    d = dets(200)
    with pytest.warns(strider.GraphBreakWarning, match=line_of(py_cpu_nms)) as caught:
        got = f(d, 0.5)
    assert len(caught) == 1
    assert got == py_cpu_nms(d, 0.5) and all(type(a) is type(b) for a, b in zip(got, py_cpu_nms(d, 0.5)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert f(dets(200, seed=1), 0.3) == py_cpu_nms(dets(200, seed=1), 0.3)  # no second warning
    text = str(f.explain(d, 0.5))
    assert "graph break" in text and line_of(py_cpu_nms) in text and "truth value" in text
    assert f.stats()["graph_breaks"] == 1 and f.stats()["traces"] == 1  # the break is kept per signature


def test_an_unsupported_op_runs_in_numpy_with_the_callers_arrays_written():
    def f(x, y):
        y[:2] = x[:2] * 2
        return np.median(x) + y.sum()  # <- break

    x, y = np.arange(6.0), np.ones(4)
    want_y = y.copy()
    want = f(x, want_y)
    g = strider.compile(f, strict=False)
    with pytest.warns(strider.GraphBreakWarning, match="median"):
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
    g = strider.compile(py_cpu_nms, strict=True)
    with pytest.raises(strider.TraceError, match=line_of(py_cpu_nms)):
        g(dets(20), 0.5)


def test_the_suite_is_strict_by_default():
    assert os.environ.get("STRIDER_STRICT") == "1"
    with pytest.raises(strider.TraceError):
        strider.compile(py_cpu_nms)(dets(20), 0.5)
