"""Loops and branches on traced values (issue 17): differential tests against NumPy, through the
harness (values, dtypes, shapes and every argument after the call, in both legal orders)."""
import functools
import math
import re
import warnings

import numpy as np
import pytest

import strider
from differential import TARGET, check, check_raises
from heads import _nms, greedy_nms_class_tagged, py_cpu_nms
from nms_ports import nms_cython_port, nms_malisiewicz, nms_ternary, soft_nms_cython_port, yolo_predictions, \
    yolov5_non_max_suppression

def boxes(n, seed=0):
    rng = np.random.default_rng(seed)
    xy = rng.uniform(0, 100, (n, 2)).astype(np.float32)
    wh = rng.uniform(5, 40, (n, 2)).astype(np.float32)
    return np.concatenate([xy, xy + wh, rng.uniform(0, 1, (n, 1)).astype(np.float32)], 1)


@pytest.mark.parametrize("n", [1, 2, 7, 60])
@pytest.mark.parametrize("thresh", [0.0, 0.3, 1.0])
def test_nms_loop_with_a_list(n, thresh):
    # YOLOX's py_cpu_nms, unmodified: a while loop on order.size, keep.append, the list returned
    d = boxes(n, n)
    f = check(_nms, d[:, :4], d[:, 4], thresh, calls=2)
    out = f(d[:, :4], d[:, 4], thresh)
    assert type(out) is list and all(type(k) is np.int64 for k in out)  # the list, as Python's


def append_then_break(s, a):
    # the first trip runs as Python's (order.size is known) until the traced break: the loop is
    # then traced from that trip on, and what the trip appended must not stay in keep as well
    order = s.argsort()[::-1]
    keep, seen = [], []
    while order.size > 0:
        keep.append(order[0])
        for j in range(2):
            seen.append(j)
            if a[order[0]] < 0:
                break
        if a[order[0]] < 0:
            break
        order = order[1:]
    return keep, seen


@pytest.mark.parametrize("first", [0, 1, 2])
def test_a_trip_traced_again_appends_once(first):
    a = np.array([1.0, 2.0, 3.0])
    a[first] = -1.0
    check(append_then_break, np.array([0.5, 0.9, 0.1]), a)


def gathers_through_compacted_positions(dets, labels, areas, t, where, start):
    # gathers through positions a loop compacts (py_cpu_nms's shape), from sources of three dtypes
    # (a strided column, f64, i32); a source the loop writes; a gathered array returned; an early
    # break; positions from argsort or from a mask; the compaction by where() + 1 or by the mask
    x1, s = dets[:, 0], dets[:, 4]
    order = s.argsort()[::-1] if start == "argsort" else np.flatnonzero(s > 0.3)
    keep, last = [], np.zeros(0, np.float32)
    while order.size > 0:
        i = order[0]
        keep.append(i)
        x, a, lab = x1[order[1:]], areas[order[1:]], labels[order[1:]]
        if a.size and a.min() < 0:
            break
        s[order[1:]] = s[order[1:]] * np.float32(0.9)
        m = (np.abs(x - x1[i]) > t) | (lab != labels[i]) | (a > 2.0)
        order = order[np.where(m)[0] + 1] if where else order[1:][m]
        last = x
    return keep, last, s


@pytest.mark.parametrize("n", [0, 1, 9, 70])
@pytest.mark.parametrize("where", [True, False])
@pytest.mark.parametrize("start", ["argsort", "mask"])
def test_gathers_through_positions_a_loop_compacts(n, where, start):
    d = boxes(n, n)
    rng = np.random.default_rng(n)
    labels = rng.integers(0, 3, n).astype(np.int32)
    areas = rng.uniform(0, 3, n)
    if n == 9:
        areas[4] = -1.0  # the break, on whichever trip reaches it
    check(gathers_through_compacted_positions, d, labels, areas, 8.0, where, start, static_argnames=("where", "start"),
          calls=2)


def ends_of(x, t, pair):
    # extend by a list (or tuple) of traced values in a loop on a traced condition: each appended
    out, lone = [], []
    order = np.flatnonzero(x > t)
    while order.size > 0:
        out.extend((order[0], order[-1]) if pair else [order[0], order[-1] + 1])
        lone.extend([order.size])
        order = order[1:-1]
    out.extend(out[:0])
    return out, lone


@pytest.mark.parametrize("t", [2.0, 0.95, 0.4])  # no trip, one trip, some
@pytest.mark.parametrize("pair", [True, False])
def test_extend_by_a_list_in_a_traced_loop(t, pair):
    check(ends_of, np.random.default_rng(4).uniform(0, 1, 15), t, pair, static_argnames=("pair",))


def index_of_two_kinds(x, t):
    k = 0
    if x.sum() > t:  # a traced condition: k is a NumPy int64 on one path, a Python int on the other
        k = np.argmax(x)
    return x[[0, k]]


def test_a_variable_of_two_kinds_is_named_by_its_kinds():
    # both sides are 0-d int64 values to strider: the message names the Python kinds that differ
    with pytest.raises(strider.TraceError, match="'k' holds a NumPy int64 scalar or a Python int"):
        strider.compile(index_of_two_kinds, strict=True)(np.arange(4.0), 1.0)


def above(x, t):
    order = np.flatnonzero(x > t)  # a run-time length from the start: the loop is traced from trip 0
    total = x[:0].sum()
    while order.size > 0:
        total = total + x[order[0]]
        order = order[1:]
    return total, order


@pytest.mark.parametrize("t", [2.0, 0.95, 0.5, -1.0])  # no trip, one trip, some, all
def test_trips_zero_one_many(t):
    check(above, np.random.default_rng(1).uniform(0, 1, 40), t)


def first_over(x, t):
    i = 0
    n = np.flatnonzero(x == x).size  # traced: the loop runs on it
    found = -1
    while i < n:
        if x[i] > t:
            break
        found = i
        i = i + 1
    return i, found


@pytest.mark.parametrize("t", [-1.0, 0.5, 2.0])  # break on the first trip, in the middle, never
def test_break(t):
    check(first_over, np.random.default_rng(2).uniform(0, 1, 30), t)


def last_trip_break(x):
    n = np.flatnonzero(x >= 0).size
    k = 0
    while True:
        k = k + 1
        if k >= n:
            break
    return k


def test_break_on_the_last_trip_of_a_while_true():
    check(last_trip_break, np.arange(9.0))


def collect(x, t):
    picked = []
    order = np.flatnonzero(x > 0)
    while order.size > 0:
        j = order[0]
        if x[j] > t:
            picked.append(j)
        order = order[1:]
    return np.array(picked, dtype=np.int64)


@pytest.mark.parametrize("t", [5.0, 0.5])  # the list stays empty; it fills
def test_list_appended_in_a_branch(t):
    check(collect, np.random.default_rng(3).uniform(-1, 1, 25), t)


def first_hits(x, t):
    # the list's items are read (`in`) before the branch's append fills it, from empty
    found = []
    for i in range(x.shape[0]):
        if x[i] > t and i not in found:
            found.append(i)
    return np.array(found, dtype=np.int64)


def first_hits_after_continue(x, t):
    found = []
    for i in range(x.shape[0]):
        if x[i] < 0:
            continue
        seen = i in found
        if x[i] > t and not seen:
            found.append(i)
    return np.array(found, dtype=np.int64)


@pytest.mark.parametrize("fn", [first_hits, first_hits_after_continue])
@pytest.mark.parametrize("t", [5.0, 0.5])
def test_list_read_before_a_branch_appends_to_it(fn, t):
    check(fn, np.random.default_rng(4).uniform(-0.2, 1, 12), t)


def kept_then_cut(x, t, top_k):
    # OpenVINO's NMS sample: the list a loop filled, cut to its top k on one path
    keep = []
    for i in range(x.shape[0]):
        if x[i] > t:
            keep.append(i)
    if top_k and len(keep) > top_k:
        keep = keep[:top_k]
    return keep, x[keep] * 1  # (the index: each path's list where its condition holds)


@pytest.mark.parametrize("t", [0.3, 0.95])  # more than top_k kept, fewer
def test_a_slice_of_a_filled_list_on_one_path_of_a_branch(t):
    check(kept_then_cut, np.random.default_rng(6).random(12), t, 3)


def items_set_in_loops_in_a_branch(x, t):
    flags, marks = [0] * 4, [0.0] * 3
    if x.sum() > t:
        for i in range(4):
            flags[i] = 1
        j = 0
        while j < 3:
            marks[j] = x[j] * 2
            j += 1
    return np.array(flags), np.array(marks)


@pytest.mark.parametrize("t", [1.0, 100.0])
def test_list_items_set_in_loops_inside_a_branch(t):
    check(items_set_in_loops_in_a_branch, np.random.default_rng(5).random(5), t)


def decay(dets, t):
    # Soft-NMS's shape: writes into the caller's array through views, in a loop
    n = np.flatnonzero(dets[:, 4] > t).size
    i = 0
    while i < n:
        dets[:, 4] *= 0.5
        dets[i, :4] = dets[i, :4] + 1
        i = i + 1
    return dets[:, 4].max()


def test_writes_into_the_argument_inside_a_loop():
    check(decay, boxes(12, 4), 0.3)


def nested(x):
    rows = np.flatnonzero(x[:, 0] > 0.2)
    out = np.zeros(x.shape[0])
    while rows.size > 0:
        r = rows[0]
        cols = np.flatnonzero(x[r] > 0.5)
        s = x[r, :0].sum()
        while cols.size > 0:
            s = s + x[r, cols[0]]
            cols = cols[1:]
        out[r] = s
        rows = rows[1:]
    return out


def test_nested_loops():
    check(nested, np.random.default_rng(5).uniform(0, 1, (9, 6)))


def branches(x, t):
    if x.sum() > t:
        y = x[x > 0.5]       # a run-time length on one side,
        k = 1
    else:
        y = x[:3] * 2        # a static one on the other
        k = 2
    return y, y.shape[0] + k


@pytest.mark.parametrize("t", [0.0, 1e9])
def test_branch_merges_lengths_and_numbers(t):
    check(branches, np.random.default_rng(6).uniform(0, 1, 10), t)


def short_circuit(x):
    n = np.flatnonzero(x > 0.5).size
    # x[n - 1] only where n > 0, as Python's `and` (an empty x would raise IndexError)
    if n > 0 and x[n - 1] > 0.2 or n == 0:
        y = x * 2
    else:
        y = x - 1
    return y


@pytest.mark.parametrize("x", [np.zeros(4), np.array([0.1, 0.9, 0.3]), np.array([0.9, 0.1])])
def test_and_or_short_circuit(x):
    check(short_circuit, x)


def evaluatable(a, b, t):
    # TF OD API's per_image_evaluation: `is_evaluatable = (not a[i] and b[i] >= t)`, then tested
    out = np.zeros(a.shape[0], dtype=bool)
    for i in range(a.shape[0]):
        ok = (not a[i] and b[i] >= t)
        if ok:
            out[i] = True
    return out, not b[0] > t, (not a[1]) + 1


def first_and(a, b, t):
    return a[0] and b[0] >= t  # no loop nor branch: `and` alone is rewritten


@pytest.mark.parametrize("a", [np.array([False, True, False, False]), np.array([True, False, False, True])])
def test_not_and_and_as_values(a):
    """`not x` and `a and b` of traced values as values: Python's bool (`not`), the operand that
    decides (`and`); refused before (the truth value of a traced array), where an `if` took them."""
    b = np.array([0.9, 0.9, 0.1, 0.7])
    check(evaluatable, a, b, 0.5)
    check(first_and, a, b, 0.5)


def python_loops(x):
    i, out = 0, x
    while i < 3:  # Python's condition: unrolled, as before
        out = out + i
        i += 1
    if x.shape[0] > 2:
        out = out * 2
    return out


def test_loops_on_python_values_unroll():
    f = check(python_loops, np.arange(4.0))
    ir = str(f.explain(np.arange(4.0)))
    assert "loop_begin" not in ir and "branch_if" not in ir


def prior_boxes(image_size, step, n):
    # FaceBoxes/RetinaFace's PriorBox: anchors computed in Python loops from the image size
    anchors = []
    for i in range(n):
        for j in range(n):
            cx = (j + 0.5) * step / image_size[1]
            cy = (i + 0.5) * step / image_size[0]
            anchors.append([cx, cy, 32 / image_size[1], 32 / image_size[0]])
    return np.array(anchors)


def scaled_items(x):
    # hundreds of numbers computed from the data, one at a time, joined
    return np.array([x[i] * 2 + x[i + 1] for i in range(x.shape[0] - 1)])


def test_many_numbers_in_python_loops():
    """Numbers computed from the caller's numbers alone, past a few hundred of them (prior boxes
    from the image size: minutes to trace and compile at FaceBoxes' size), make those static:
    the loop then computes them while tracing, as NumPy does. Ones computed from the data stay
    traced, in stages of at most 256 ops (one stage took seconds to compile, its alias lists
    and its one block growing faster than its ops)."""
    f = check(prior_boxes, (256, 256), 8, 24)
    assert f.stats()["specialized"] == 4  # n for range(n), and (past 256 numbers) image_size and step
    np.testing.assert_array_equal(f((128, 256), 8, 24), prior_boxes((128, 256), 8, 24), strict=True)
    x = np.random.default_rng(8).uniform(0, 1, 700)
    g = check(scaled_items, x)
    e = g.explain(x)
    assert len(e.stages) > 1 and "the stage holds 256 ops, the most one takes" in str(e)


def oks_like_nms(db, thresh):
    # HRNet's oks_nms: the scores and areas of a list of dicts, decided on in a traced loop
    scores = np.array([d['score'] for d in db])
    areas = np.array([d['area'] for d in db])
    order = scores.argsort()[::-1]
    keep = []
    while order.size > 0:
        i = order[0]
        keep.append(i)
        rest = areas[order[1:]]
        ovr = np.zeros(rest.shape[0])
        for n in range(0, rest.shape[0]):
            ovr[n] = min(rest[n], areas[i]) / max(rest[n], areas[i])
        order = order[np.where(ovr <= thresh)[0] + 1]
    return keep


def test_decisions_on_many_of_the_callers_numbers_stay_traced():
    """A Python decision on a value computed from many of the caller's numbers (data: a list of
    dicts of scores) is traced, not made static: each call would be a new signature."""
    frames = [[{'score': float(r.random()), 'area': float(r.uniform(5e3, 2e4))} for _ in range(30)]
              for r in map(np.random.default_rng, range(3))]
    f = check(oks_like_nms, frames[0], 0.9)
    for db in frames[1:]:
        assert [int(k) for k in f(db, 0.9)] == [int(k) for k in oks_like_nms(db, 0.9)]
    assert f.stats()["specialized"] == 0 and f.stats()["traces"] == 1


def changes_dtype(x):
    if x.sum() > 0:
        y = x * 2
    else:
        y = x.astype(np.int32)
    return y


@pytest.mark.parametrize("x", [np.arange(3.0), -np.arange(3.0)])
def test_a_branch_that_changes_dtype_returns_the_side_its_condition_picks(x):
    check(changes_dtype, x)


def changes_dtype_then_adds(x):
    y = changes_dtype(x)
    return y + 1, y * 0.5 > 0.25, np.maximum(y, 1), y.sum()  # on each side: the result's dtype is its own


def changes_dtype_then_writes(x):
    y = changes_dtype(x)
    y[0] = 7
    return y


@pytest.mark.parametrize("x", [np.arange(3.0), -np.arange(3.0)])
def test_a_value_of_two_dtypes_computes_on_each_side(x):
    check(changes_dtype_then_adds, x)


def mean_of_two_kinds(p, t):
    # PaddleOCR's decode: conf_list a float32 array or [0]; np.mean(conf_list).tolist()
    conf = p[p > t]
    if len(conf) == 0:
        conf = [0]
    return np.mean(conf).tolist(), np.max(conf).item()


@pytest.mark.parametrize("t", [0.5, 2.0])
def test_tolist_and_item_of_numbers_of_two_kinds(t):
    check(mean_of_two_kinds, np.random.default_rng(3).random(8).astype(np.float32), t)


def aliased_then_added_in_place(x, t):
    # another name for an array of two kinds sees an in-place op on it, as NumPy's (the op
    # rebound the name before: `p` kept the old values)
    if x.sum() > t:
        o = x * 2
    else:
        o = np.zeros(3, np.float32)
    p = o
    o += 1
    if x.sum() > t:
        n = x * 2
    else:
        n = 5  # a number: `+=` rebinds it
    m = n
    n *= 2
    return p, o, m, n


def bound_in_a_branch(x, t):
    q = x * 2
    if x.sum() > t:
        o = q
    else:
        o = np.zeros(3)
    return o + 1, q  # read, never written: NumPy's o is q or the zeros, strider's a copy of either


def written_through_a_branchs_binding(x, t, argument):
    q = x if argument else x * 2
    if x.sum() > t:
        o = q
    else:
        o = np.zeros(3)
    o -= 1  # NumPy's write reaches q (the argument, or a temporary read after) where the first side holds
    return q + 0, o


def carried_from_an_array(x, t, write):
    q = x * 2
    o = q
    while o.sum() > t:
        if write:
            o -= 1  # the first trip's write reaches q, as NumPy's o is q until a trip assigns it
        o = o * 0.5
    return q + 0, o


@pytest.mark.parametrize("t", [1.0, 100.0])
def test_a_variable_a_loop_carries_from_an_array_from_before_it(t):
    x = np.arange(3.0)
    check(carried_from_an_array, x, t, False)
    if t == 1.0:
        with pytest.raises(strider.TraceError, match="an array is read after a write through"):
            strider.compile(carried_from_an_array, strict=True, target=TARGET)(x.copy(), t, True)
    check(carried_from_an_array, x, t, True, strict=False)


def _merged_into(g, p):
    g[:8] = (g[8] * g[:8] + p[8] * p[:8]) / (g[8] + p[8])
    g[8] = g[8] + p[8]
    return g


def merged_rows(polys, thres):
    # EAST's locality-aware merge: `p` is a row of polys a traced branch picked, and the rows
    # written after it are later ones (its own elements unwritten: it stays readable)
    S = []
    p = None
    for g in polys:
        if p is not None and abs(g[0] - p[0]) < thres:
            p = _merged_into(g, p)
        else:
            if p is not None:
                S.append(p)
            p = g
    if p is not None:
        S.append(p)
    return np.array(S)


def test_a_branch_bound_to_rows_of_an_array_written_elsewhere():
    polys = np.random.default_rng(4).random((12, 9))
    polys[:, 0] = np.repeat(np.arange(6.0), 2)
    check(merged_rows, polys, 0.5)


@pytest.mark.parametrize("t", [1.0, 100.0])
def test_a_variable_a_branch_bound_to_an_array_from_before_it(t):
    """A variable that a traced branch binds to an array from before it (`o = q` on one side) is
    NumPy's array there and strider's copy: read, it is exact; written through while that array
    is read after, or is an argument, the graph breaks (it gave the copy's values silently)."""
    x = np.arange(3.0)
    check(aliased_then_added_in_place, x, t)
    check(bound_in_a_branch, x, t)
    for argument, refusal in ((False, "an array is read after a write through"),
                              (True, "NumPy's write would reach the argument")):
        with pytest.raises(strider.TraceError, match=refusal):
            strider.compile(written_through_a_branchs_binding, strict=True, target=TARGET)(x.copy(), t, argument)
        check(written_through_a_branchs_binding, x, t, argument, strict=False)


def test_a_value_of_two_dtypes_used_otherwise_breaks_the_graph():
    with pytest.raises(strider.TraceError, match="'y' holds a 1-d float64 array or a 1-d int32 array"):
        strider.compile(changes_dtype_then_writes, strict=True)(np.arange(3.0))
    f = strider.compile(changes_dtype_then_writes, strict=False)
    with pytest.warns(strider.GraphBreakWarning):
        np.testing.assert_array_equal(f(np.arange(3.0)), changes_dtype_then_writes(np.arange(3.0)))


@pytest.mark.parametrize("n", [0, 1, 9, 40])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_builtin_max_and_min_on_traced_scalars(n, dtype):
    d = boxes(n, n).astype(dtype)
    d[:, 2:4] -= 20  # some boxes empty: max(0.0, ...) picks the Python float
    f = check(nms_cython_port, d, 0.3)  # max(0.0, xx2 - xx1 + 1): the Python float or the NumPy scalar
    assert f.stats()["graph_breaks"] == 0


def extremes(x):
    y = x[x > 0.5]
    w = max(0.0, x[0] - 1)
    v = x[1]
    if v > 0.5:
        r = 2  # an int on one path, NumPy's scalar on the other
    else:
        r = v
    return (max(x[0], x[1], 0.25), min(x[2], 1.0), w, w * max(0.0, x[1] - 1), w + 1 > 1.5, -w, abs(w),
            np.maximum(w, 0.5), np.sqrt(w), r * 0.5, r + w, len(y), min(len(y), 2), max(1, len(y)), x.shape[0] - 1)


@pytest.mark.parametrize("x", [[0.9, 2.0, 0.1], [2.5, 0.3, 0.7], [3.0, 4.0, 2.0], [np.nan, 0.75, np.nan]])
def test_builtin_extremes_and_values_of_two_kinds(x):
    check(extremes, np.array(x, np.float32))


def ternaries(x, t):
    y = x[x > t]
    a = y.sum() if len(y) else x[0] * 0  # the test a run-time length
    b = 2 if x[0] > 0.5 else 3  # Python ints: a traced int
    c = x * 2 if x[1] > 0.5 else x[::-1] + 0
    d = (x[0] if x[0] > x[1] else x[1]) + (1.0 if x[2] > 0 and x[2] < 0.5 else 0.0)
    e = y[:1] if y.size else None  # two kinds: a Choice
    return a, b, c, d, e, [v * 2 if v > 0.5 else v for v in (x[0], x[1])]


@pytest.mark.parametrize("x", [[0.9, 0.2, 0.3], [0.1, 0.7, -1.0]])
@pytest.mark.parametrize("t", [0.5, 2.0])
def test_conditional_expressions_on_traced_values(x, t):
    check(ternaries, np.array(x), t)
    check(nms_ternary, boxes(12, 3), 0.5)  # a list's truth in a ternary


@pytest.mark.parametrize("method", [0, 1, 2])
@pytest.mark.parametrize("n", [1, 12])
def test_scalar_soft_nms(method, n):
    d = boxes(n, n).astype(np.float64)
    # the caller's rows swapped and rescored, float(), a weight of two kinds within a trip, N
    # shrinking as rows go and a list of range(N) returned
    check(soft_nms_cython_port, d, 0.5, 0.3, 0.3, method, static_argnames=("method",),
          rtol=1e-15 if method == 2 else 0.0)  # np.exp's last bit is libm's


def numbers(x, t):
    y = x[x > t]
    a = float(x[0] * 2)  # a Python float of a value known only when the function runs
    b = int(np.argmax(x))
    c = x[1].item() + y[:1].sum().item()
    d = int(len(y)) + float(x.shape[0])
    return a, b, c, d, a / 3, b * 2, float(5), int("7"), int(x.shape[0]), float(d > 1), 2.5 - y.shape[0], 0.5 * len(y) < 1.0


@pytest.mark.parametrize("t", [0.5, 2.0])
def test_python_numbers_of_traced_values(t):
    check(numbers, np.array([0.9, 0.2, 0.7], np.float32), t)


def rows_as_ints(out, thr, fx):
    # YOLOv8's ONNX example: a Python loop over rows, int() of scaled floats into lists
    boxes, scores = [], []
    for i in range(out.shape[0]):
        if np.amax(out[i][4:]) >= thr:
            x, w = out[i][0], out[i][2]
            boxes.append([int((x - w / 2) * fx), int(w * fx)])
            scores.append(np.amax(out[i][4:]))
    return boxes, scores


def test_int_of_a_traced_float():
    # Python's int() truncates toward zero; NaN raises ValueError and infinities OverflowError
    # when the function runs, after the writes before it
    out = np.random.default_rng(8).uniform(-1, 1, (30, 7)).astype(np.float32)
    for thr in (0.5, 2.0):
        check(rows_as_ints, out, thr, 37.5)

    def f(x, y):
        y[0] = 1.0
        return int(x[0] * 3) + int(x[1] - 0.5)

    check(f, np.array([-2.7, 0.2]), np.zeros(2))
    for bad, exc in ((np.nan, ValueError), (np.inf, OverflowError), (-np.inf, OverflowError)):
        check_raises(f, np.array([bad, 0.0]), np.zeros(2), exc=exc)
    with pytest.raises(OverflowError, match="past int64's range"):  # Python's int would hold it
        strider.compile(f, strict=True)(np.array([1e19, 0.0]), np.zeros(2))


def _python_number_ops(x, y, n):
    a, b = float(x.sum()), float(y.sum())
    i, j = int(x.size), int(y.sum())
    return a / b, a // b, a % b, i / j, i // j, i % j, b ** -1.0, i ** n, a ** 0.5


def test_python_numbers_divide_and_raise_to_powers_as_python_does():
    # traced Python numbers (sums made floats and ints) keep Python's rules where NumPy's ufunc
    # would give inf, NaN or an error: division by zero raises ZeroDivisionError when the
    # function runs; an int to a negative power (a float) and a negative float to a fractional
    # power (complex) run the call in NumPy
    x = np.array([1.5, 2.0, 0.25])
    check(_python_number_ops, x, np.array([2.0, 1.0]), 3)
    for y in (np.zeros(2), np.array([0.0, -0.0])):
        check_raises(_python_number_ops, x, y, 3, exc=ZeroDivisionError)
    for sign, n in ((1, -2), (-1, 3)):
        with pytest.warns(strider.GraphBreakWarning, match="power"):
            check(_python_number_ops, sign * x, np.array([2.0, 1.0]), n, strict=False)
    with pytest.raises(ValueError, match="negative power"):
        strider.compile(_python_number_ops, strict=True)(x, np.ones(2), -2)


def _ints_of_unsigned_sums(a):
    return int(a.sum()), a.sum().item(), float(a.sum()), int(a.astype(np.uint64).max())


def test_int_of_an_unsigned_sum():
    # NumPy sums unsigned ints in uint64: int() of one is a traced Python int (int64 holds it),
    # past int64's range an OverflowError when the function runs
    check(_ints_of_unsigned_sums, np.arange(200, dtype=np.uint8))
    with pytest.raises(OverflowError, match="past int64's range"):
        strider.compile(_ints_of_unsigned_sums, strict=True)(np.array([2**63 + 5], np.uint64))


def rounded(x):
    # COCO-style results: Python's round() of Python numbers (correctly rounded decimals, not
    # np.round's scaling: round(2.675, 2) is 2.67), of NumPy scalars (np.round), to an int
    out = []
    for k in range(x.shape[0]):
        v = float(x[k])
        out.append([round(v, 2), round(v, 5), round(v)])
    return out, round(x[0], 2), round(int(x[1] * 1000), -2), round(int(x[2] * 100), -1)


def test_round_of_traced_numbers():
    rng = np.random.default_rng(9)
    ties = [(m + 0.5) / 100 for m in rng.integers(-10**6, 10**6, 200)]
    x = np.array([2.675, 0.125, -2.675, 1.005, -0.0, 1e15 + 0.5, 4503599627370495.5, 2.5, 3.5, 1.25e-9]
                 + ties + [np.nextafter(v, np.inf) for v in ties] + list(rng.uniform(-1e4, 1e4, 200)))
    check(rounded, x)
    for bad, exc in ((np.nan, ValueError), (np.inf, OverflowError)):
        check_raises(rounded, np.array([1.0, 2.0, 3.0, bad]), exc=exc)
    with pytest.raises(OverflowError, match="past int64's range"):  # Python's int would hold it
        strider.compile(rounded, strict=True)(np.array([1.0, 2.0, 3.0, 1e300]))
    for x in (np.array([2.5]), np.array(2.5)):  # an array has no __round__ (its elements do)
        check_raises(_round_of, x, exc=TypeError)


def _round_of(x):
    return round(x), round(x[..., 0] if x.ndim else x, 1)


def soft_nms_fancy_swap(dets, thresh=0.001):
    # Soft-NMS (linear) as some projects write it: rows swapped with a list index of a traced
    # position, each row unpacked into Python names
    N = dets.shape[0]
    for i in range(N):
        maxpos = i + np.argmax(dets[i:, 4])
        dets[[i, maxpos]] = dets[[maxpos, i]]
        tx1, ty1, tx2, ty2, ts = dets[i]
        for pos in range(i + 1, N):
            x1, y1, x2, y2, s = dets[pos]
            iw = min(tx2, x2) - max(tx1, x1) + 1
            if iw > 0:
                ih = min(ty2, y2) - max(ty1, y1) + 1
                if ih > 0:
                    ua = (x2 - x1 + 1) * (y2 - y1 + 1) + (tx2 - tx1 + 1) * (ty2 - ty1 + 1) - iw * ih
                    dets[pos, 4] = s * (1 - iw * ih / ua)
    return dets[dets[:, 4] > thresh]


def lists_of_traced_values(x, y):
    # lists of traced values where NumPy takes an array: np.max([a, b]), a ufunc's reduce
    return (np.max([x.max(), y.max()]), np.mean([x, y], axis=0), np.sum((x.sum(), y.sum(), 1.0)),
            np.logical_and.reduce([x > 0, y > 0, x < y]), np.maximum.reduce([x, y]), np.argmax([x.sum(), y.sum()]),
            np.clip([x.sum(), 1.0], 0, 2), np.min((x[0], y[0], 0.5)), np.maximum([x[0], y[1]], 0.0),
            x[[0, np.argmax(y)]])


def test_lists_of_traced_values_as_arrays():
    check(soft_nms_fancy_swap, boxes(12, 3).astype(np.float64))
    check(lists_of_traced_values, np.array([0.5, -1.0, 2.0]), np.array([1.5, 2.0, -3.0]))


def shrinking_range(x, t):
    N = x.shape[0]
    for i in range(x.shape[0]):
        if x[i] < t:
            N = N - 1  # a traced int from here
    y = x[x > t]
    return [i for i in range(N)], list(range(2, N)), list(range(len(y)))


@pytest.mark.parametrize("n", [5, 100])  # 100: more than the room first traced (traced again)
def test_lists_of_a_range_known_only_at_run_time(n):
    x = np.random.default_rng(n).random(n)
    f = check(shrinking_range, x, 0.3)
    out = f(x, 0.3)
    assert all(type(v) is int for v in out[0] + out[1] + out[2])  # Python's ints, as range's


def counted_keep(x, t):
    keep = []
    for i in range(x.shape[0]):
        if x[i] > t:
            keep.append(i)  # the loop's counter: a Python int
    return keep


def halvings(x, t):
    x *= 2  # written before the loop outgrows its list: put back, and written again on the rerun
    s = x[0]
    seen = []
    while s > t:
        seen.append(s)
        s = s * 0.5
        x[1] = s
    return seen


def test_a_call_that_outgrows_its_list_after_writing_an_argument_runs_anew():
    f = check(counted_keep, np.array([0.1, 0.9, 0.5, 0.95]), 0.4)
    assert [type(v) for v in f(np.array([0.1, 0.9, 0.5, 0.95]), 0.4)] == [int, int, int]
    f = check(halvings, np.array([2.0 ** 90, 0.0]), 1.0)  # 91 trips: past the first trace's room
    assert f.stats()["regrown"] >= 1


def test_a_list_that_more_room_does_not_help_runs_the_call_in_numpy():
    """Room is grown at most to _MAX_TRIP_FACTOR times the first: past it the call runs in NumPy
    (strict: ValueError), where it would be traced again without end (a list whose room no
    trips set, once, recursed until Python's limit)."""
    from strider import _api
    x = np.array([2.0 ** 90, 0.0])
    for strict in (True, False):
        f = strider.compile(halvings, strict=strict)
        f(np.array([4.0, 0.0]), 1.0)  # traced with the first room; then as if grown to the most
        f._trip_factor = _api._MAX_TRIP_FACTOR
        if strict:
            with pytest.raises(ValueError, match="a list filled at run time in halvings outgrew its room again"):
                f(x.copy(), 1.0)
            continue
        with pytest.warns(UserWarning, match="outgrew its room again"):
            out = f(x.copy(), 1.0)
        assert out == halvings(x.copy(), 1.0) and f.stats()["runtime_breaks"] == 1


def and_or_values(x, t):
    y = x[x > t]
    a = (x[0] > 0.5) and (x[1] > 0.5)  # NumPy's bools on both paths: one value
    b = y.size and y.sum()  # 0 or NumPy's float: a value of two kinds, returned as the run says
    c = (x[0] > 2) or x[1] * 2
    d = x[2] > 0 or x[1] > 0.5
    return a, b, c, 1 if a else 0, d


@pytest.mark.parametrize("x", [[0.9, 0.8, -1.0], [0.1, 0.7, 3.0], [2.5, 0.1, 0.2]])
@pytest.mark.parametrize("t", [0.5, 9.0])
def test_and_or_as_values(x, t):
    check(and_or_values, np.array(x), t)


def three_kinds(x):
    if x[0] > 0.5:
        r = 1
    elif x[0] > 0.2:
        r = 2.0
    else:
        r = x[0]
    return r * 2


def five_kinds(x):
    if x[0] > 0.5:
        r = 1
    elif x[0] > 0.4:
        r = 2.0
    elif x[0] > 0.3:
        r = x[0]
    elif x[0] > 0.2:
        r = x[1:]
    else:
        r = np.float64(x[0])
    return r * 2


def divides_by_a_side(x):
    return 1 / max(0, x[0])  # Python's 1 / 0 on the side where 0 wins


def adds_to_none(x):
    d = None
    if x[0] > 0.2:
        d = x * 2
    return d + 1 if x[1] < 0.5 else x  # Python's TypeError where d is None and x[1] < 0.5


def none_tested_before_use(x):
    d = None
    if x[0] > 0.2:
        d = x * 2
    a = d + 1 if d is not None else x + 0  # only d's array side reaches d + 1
    if d is None or d[1] > 0.3:
        b = x - 1
    else:
        b = d * 3
    return a, b


@pytest.mark.parametrize("x", [[0.3, 0.1], [0.1, 0.1], [0.3, 0.2]])
def test_a_test_of_none_narrows_the_value_on_each_side(x):
    """`x is None` on a Choice of None and an array: each side of a branch (an `if`, a ternary, an
    `or`) on it sees the value its side knows."""
    check(none_tested_before_use, np.array(x, np.float32))


@pytest.mark.parametrize("x0", [0.6, 0.45, 0.1])
def test_a_value_of_three_kinds(x0):
    check(three_kinds, np.array([x0, 0.3], np.float32))


def generate_bounding_box(imap, reg, scale, t):
    # MTCNN's generateBoundingBox (facenet's detect_face.py): `reg` the float32 rows of the boxes
    # kept or an empty float64 (0, 3), then joined with the kept boxes' float64 columns
    stride = 2
    cellsize = 12
    imap = np.transpose(imap)
    dx1 = np.transpose(reg[:, :, 0])
    dy1 = np.transpose(reg[:, :, 1])
    dx2 = np.transpose(reg[:, :, 2])
    dy2 = np.transpose(reg[:, :, 3])
    y, x = np.where(imap >= t)
    if y.shape[0] == 1:
        dx1 = np.flipud(dx1)
        dy1 = np.flipud(dy1)
        dx2 = np.flipud(dx2)
        dy2 = np.flipud(dy2)
    score = imap[(y, x)]
    reg = np.transpose(np.vstack([dx1[(y, x)], dy1[(y, x)], dx2[(y, x)], dy2[(y, x)]]))
    if reg.size == 0:
        reg = np.empty((0, 3))
    bb = np.transpose(np.vstack([y, x]))
    q1 = np.fix((stride * bb + 1) / scale)
    q2 = np.fix((stride * bb + cellsize - 1 + 1) / scale)
    boundingbox = np.hstack([q1, q2, np.expand_dims(score, 1), reg])
    return boundingbox, reg, np.concatenate([reg, reg]), np.stack([reg, reg])


def joined_if_not_none(x, t):
    d = None
    if x.max() > t:
        d = x * 2
    return np.concatenate([x, d]) if d is not None else x * 1  # d in a list, narrowed


def test_numpy_functions_of_values_of_several_kinds():
    """NumPy's functions of a variable a traced branch left holding arrays of two dtypes and
    shapes (MTCNN's `reg`), in a list too, second or later: a branch of calls on its condition,
    each side's checks run only where it holds (np.hstack of the empty (0, 3) and the kept rows
    would fail). Refused before ('holds a 2-d float64 array or a 2-d float32 array'; 'a traced
    value was used after its compiled function returned' where the array was second)."""
    rng = np.random.default_rng(4)
    imap, reg = rng.uniform(0, 1, (6, 7)).astype(np.float32), rng.uniform(-0.1, 0.1, (6, 7, 4)).astype(np.float32)
    one = imap.copy()
    one[2, 3] = 0.999
    f = None
    for m, t in ((imap, 0.9), (imap, 2.0), (one, 0.995), (imap, 0.2)):  # rows, none, one (flipped), many
        got = check(generate_bounding_box, m, reg, 0.6, t) if f is None else None
        f = f or got
        for a, b in zip(f(m, reg, 0.6, t), generate_bounding_box(m, reg, 0.6, t), strict=True):
            np.testing.assert_array_equal(a, b, strict=True)
    assert f.stats()["traces"] == 1
    for t in (0.5, 5.0):  # (refused before: 'a traced array was converted to a concrete NumPy array')
        check(joined_if_not_none, np.array([1.0, 2.0]), t)


@pytest.mark.parametrize("fn,why", [(five_kinds, "'r' would hold 5 kinds of value"),
                                    (divides_by_a_side, "truediv fails on one of them"),
                                    (adds_to_none, "add fails on one of them \\(TypeError")])
def test_what_values_of_several_kinds_cannot_do_breaks_the_graph(fn, why):
    x = np.array([0.3, 0.1], np.float32)
    with pytest.raises(strider.TraceError, match=why):
        strider.compile(fn, strict=True)(x)
    with pytest.warns(strider.GraphBreakWarning, match=why):
        np.testing.assert_array_equal(strider.compile(fn, strict=False)(x), fn(x))


def assigned_if_kept(boxes, scores, t):
    # YOLOX's multiclass_nms_class_agnostic: `dets` assigned under `if keep:` only, then returned
    # (Python raises UnboundLocalError where keep is empty); the argument written before
    scores[scores < 0] = 0
    keep = [int(i) for i in np.flatnonzero(scores > t)]
    if keep:
        dets = np.concatenate([boxes[keep], scores[keep, None]], 1)
    return dets, scores.max()


def assigned_in_else(x, t):
    if x.max() <= t:
        pass
    else:
        y = x * 2
    return y


def read_before_a_write(x, t):
    if x.max() > t:
        y = x * 2
    z = y  # Python raises here, before the write below
    x[0] = 7
    return z


def computed_with(x, t):
    if x.max() > t:
        y = x * 2
    return y + 1


def ratio_of_a_trip(paf, xs):
    # Lightweight OpenPose's group_keypoints: `ratio` assigned under a traced condition in an
    # unrolled loop, compared after it (Python raises UnboundLocalError where no trip so far
    # assigned it, and keeps the last assigning trip's value)
    out = []
    for i in range(len(xs)):
        score = paf[xs[i]]
        if score > -100:
            ratio = score * 2
        if ratio > 0:
            out.append(i)
    return out


def sliced_if_not_none(scores, t):
    # YOLOX's demo: `dets` of the class-agnostic NMS (assigned under `if keep:`), tested
    # `is not None` by its caller and sliced
    order = np.flatnonzero(scores > t)
    keep = [int(i) for i in order]
    if keep:
        dets = np.stack([scores[keep], scores[keep] * 2], 1)
    if dets is not None:
        return dets[:, 1], dets[:, 0]
    return None


@pytest.mark.parametrize("t", [0.5, 2.0], ids=["assigned", "unassigned"])
def test_a_variable_one_side_of_a_branch_assigns(t):
    """Read where only one side of a branch on a traced condition assigned it: the value that
    side gave, and Python's UnboundLocalError (after the writes before it) where the other side
    ran, from the compiled program."""
    x = np.array([0.3, -0.2, 0.9, 0.7], np.float32)
    d = boxes(4)
    for fn, args in ((assigned_if_kept, (d[:, :4], x, t)), (assigned_in_else, (x, t))):
        if t < 1:
            check(fn, *args)
            continue
        check_raises(fn, *args, exc=UnboundLocalError)
        if fn is assigned_if_kept:
            c, mine = strider.compile(fn, strict=True), x.copy()
            with pytest.raises(UnboundLocalError, match="cannot access local variable 'dets'"):
                c(d[:, :4], mine, t)
            np.testing.assert_array_equal(mine, np.maximum(x, 0))  # the write before the read


def matched_or_raises(a):
    # SORT's associate_detections_to_trackers: the other side raises (there, a solver the trace
    # cannot follow); m is then used, not only returned
    if a.sum(1).max() == 1:
        m = np.stack(np.where(a), axis=1)
    else:
        raise ValueError("needs a linear assignment")
    return m[:, 0] * 2


def iterated_if_matched(a, iou):
    # SORT again: `for m in matched_indices:` over the rows the assigning side gave
    if a.sum(1).max() == 1:
        matched = np.stack(np.where(a), axis=1)
    else:
        raise ValueError("needs a linear assignment")
    total = 0.0
    for m in matched:
        total = total + iou[m[0], m[1]]
    return total


def indexed_if_kept(scores, t):
    # YOLOX's class-agnostic multiclass_nms: `if keep:` after an NMS loop, dets indexed after it
    keep = []
    order = np.flatnonzero(scores > 0.2)
    order = order[scores[order].argsort()[::-1]]
    while order.size > 0:
        keep.append(order[0])
        order = order[np.where(scores[order[1:]] < t)[0] + 1]
    if keep:
        dets = np.stack([scores[keep], scores[keep] * 2], 1)
    return dets[:, 1].sum(), dets.shape[0]


def test_a_variable_one_side_assigns_used_in_any_way():
    """Indexed, sliced, iterated or asked its shape where one side of a branch on a traced
    condition assigned it: the value that side gave; where the other side runs, its error (the call runs
    in NumPy, which raises it) or Python's UnboundLocalError. (It was refused: 'holds an array
    or a Undefined'.) Computed with, as well, and read in a later trip of an unrolled loop or
    after a branch on another traced condition (Lightweight OpenPose, YOLOX's demo: refused before)."""
    for fn, taken, other, exc in ((matched_or_raises, (np.eye(3, dtype=np.int32)[::-1].copy(),),
                                   (np.ones((3, 3), np.int32),), ValueError),
                                  (indexed_if_kept, (np.array([0.1, 0.9, 0.5, 0.85]), 0.3), (np.full(4, 0.1), 0.3),
                                   UnboundLocalError),
                                  (iterated_if_matched, (np.eye(3, dtype=np.int32)[[2, 0, 1]], boxes(3, 3)),
                                   (np.ones((3, 3), np.int32), boxes(3, 3)), ValueError),
                                  (computed_with, (np.array([0.3, 0.9]), 0.5), (np.array([0.3, 0.9]), 2.0),
                                   UnboundLocalError),
                                  (ratio_of_a_trip, (np.array([0.5, -300.0, 0.3]), [0, 1, 2]),
                                   (np.array([-300.0, 0.5, 0.3]), [0, 1, 2]), UnboundLocalError),
                                  (sliced_if_not_none, (np.array([0.1, 0.9, 0.5]), 0.3), (np.full(3, 0.1), 0.3),
                                   UnboundLocalError)):
        f = check(fn, *taken)
        check_raises(fn, *other, exc=exc)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", strider.GraphBreakWarning)
            with pytest.raises(exc):
                f(*other)
        assert f.stats()["cache_hits"] >= 1 and f.stats()["graph_breaks"] == 0  # (the other call compiled)


@pytest.mark.parametrize("fn", [read_before_a_write])
def test_a_variable_one_side_assigns_read_otherwise_breaks_the_graph(fn):
    """A read the call's end cannot stand for (a write after it): a graph break, so the call
    runs as NumPy runs it."""
    x = np.array([0.3, 0.9], np.float32)
    with pytest.raises(strider.TraceError, match=r"test_control_flow\.py:\d+: 'y' is read where a loop or branch"):
        strider.compile(fn, strict=True)(x.copy(), 0.5)
    for t in (0.5, 2.0):
        mine, theirs = x.copy(), x.copy()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", strider.GraphBreakWarning)
            try:
                expected = fn(theirs, t)
            except UnboundLocalError:
                with pytest.raises(UnboundLocalError):
                    strider.compile(fn, strict=False)(mine, t)
            else:
                np.testing.assert_array_equal(strider.compile(fn, strict=False)(mine, t), expected)
        np.testing.assert_array_equal(mine, theirs)


def escapes(x):
    kept = {}
    order = np.flatnonzero(x > 0)
    while order.size > 0:
        kept["last"] = x[order[0]] * 2
        order = order[1:]
    return kept["last"]


def test_a_value_that_escapes_its_loop_through_a_dict_is_refused():
    with pytest.raises(strider.TraceError, match=r"^test_control_flow\.py:\d+: a change to a dict"):
        strider.compile(escapes, strict=True)(np.arange(1.0, 5.0))


def many(x, limit):
    keep = []
    total = x[:0].sum()
    while total < limit:  # more trips than the room first traced for the list
        keep.append(total)
        total = total + x[0]
    return np.array(keep)


def test_a_list_that_outgrows_its_room_is_traced_again():
    f = strider.compile(many, strict=True)
    x = np.ones(3)
    np.testing.assert_array_equal(f(x, 10.0), many(x, 10.0))
    np.testing.assert_array_equal(f(x, 500.0), many(x, 500.0))
    assert f.stats()["regrown"] >= 1


def ir_of(x):
    order = np.flatnonzero(x > 0)
    while order.size > 1:
        order = order[1:]
    return order


def test_the_ir_has_the_loop_and_the_text_round_trips():
    f = strider.compile(ir_of, strict=True)
    x = np.arange(-2.0, 5.0)
    np.testing.assert_array_equal(f(x), ir_of(x))
    text = str(f.explain(x))
    for op in ("loop_begin", "loop_while", "loop_end"):
        assert op in text
    assert "test_control_flow.py" in text  # the user's file and line on the loop's ops
    # why their stages run on the reference executor names what they are
    assert "(loop_begin): a loop or branch op has no kernel: the host drives it" in text


def gathers(dets):
    order = dets[:, 4].argsort()[::-1]
    total = dets[:0, 0].sum()
    while order.size > 0:
        total = total + dets[order[0], 0]
        order = order[1:][dets[order[1:], 1] > 50]
    return total


def test_gathers_at_argsorts_positions_need_no_index_check():
    # argsort's positions are in range by construction, and so are gathers of them (the loop
    # carries that fact): dets[order[0], 0] and dets[order[1:], 1] run no check_index; order[0]
    # on order's run-time length keeps its own
    f = check(gathers, boxes(20, 7))
    text = str(f.explain(boxes(20, 7)))
    ir = text[:text.find("== storages")]
    assert ir.count("= check_index(") == 1


def columns_at_a_traced_row(dets):
    # Soft-NMS's reads of row i and of the rows after it, a column at a time, and its write
    for i in range(dets.shape[0]):
        tail = np.maximum(dets[i + 1:, 0], dets[i, 0]) + np.minimum(dets[i + 1:, 2], dets[i, 2]) - dets[i + 1:, 1]
        dets[i + 1:, 3] += tail - dets[i, 3]
    return dets


@pytest.mark.parametrize("n", [0, 1, 70])
def test_columns_at_a_traced_row_share_one_computation_of_their_positions(n):
    # dets[i, 0] .. dets[i, 3] are i * 5 in views starting at columns 0 .. 3, and so are the
    # rows after it: two multiplies in the loop of the IR (over 64 trips), not one per indexing
    d = boxes(n, 4).astype(np.float64)
    d = np.concatenate([d, d[:, :1]], 1)
    f = check(columns_at_a_traced_row, d)
    if n > 64:
        text = str(f.explain(d))
        ir = text[:text.find("== storages")]
        assert ir.count("= multiply(") == 2, ir
        # and i, a counter below the rows' count, needs no index check nor a slice's clip from the end
        assert "= check_index(" not in ir and "= where(" not in ir, ir


def test_an_nms_loop_carries_the_values_it_gathers():
    # carry_gathers: py_cpu_nms's gathers through `order` (four columns of dets, and areas) read
    # arrays the loop compresses alongside it; a source the loop writes (s, a column of dets: all
    # of dets then) is gathered as before, its neighbours (areas, labels) carried
    f = check(py_cpu_nms, boxes(50, 3), 0.5)
    text = str(f.explain(boxes(50, 3), 0.5))
    assert sum(line.startswith("carried: ") for line in text.splitlines()) == 5
    d, labels, areas = boxes(9, 9), np.arange(9, dtype=np.int32) % 3, np.linspace(0.0, 3.0, 9)
    g = check(gathers_through_compacted_positions, d, labels, areas, 8.0, True, "argsort",
              static_argnames=("where", "start"))
    text = str(g.explain(d, labels, areas, 8.0, True, "argsort"))
    assert sum(line.startswith("carried: ") for line in text.splitlines()) == 2


@pytest.mark.parametrize("n", [0, 1, 40])
def test_a_greedy_nms_gathers_values_taken_before_its_loop(n):
    # carry_gathers: greedy NMS's x1[order[i + 1:]] (four columns, labels, areas: order and dets
    # unwritten in the loop) reads x1[order], taken before the loop, at the positions (a loop of
    # the IR; zero or one trip unrolls)
    d = np.concatenate([boxes(n, n), (np.arange(n) % 2)[:, None].astype(np.float32)], 1)
    f = check(greedy_nms_class_tagged, d, 0.3)
    text = str(f.explain(d, 0.3))
    taken = sum("taken before the loop" in line for line in text.splitlines() if line.startswith("carried: "))
    assert taken == (6 if n > 1 else 0)


def nms_of_the_kept(b, s, t):
    # YOLOX's class-agnostic path: the loop's order is argsort of a compacted array
    m = s > 0.3
    return _nms(b[m], s[m], t)


@pytest.mark.parametrize("n", [0, 1, 30])
def test_positions_below_a_run_time_length_stay_below_it_through_a_loop(n):
    # argsort of the kept scores gives positions below their run-time length, and the loop that
    # compacts them keeps that bound: x2[order[1:]] inside it needs no index check (only
    # order[0] on order's own length does), and its gathers read carried values (a loop of the
    # IR from two boxes on)
    d = boxes(n, n)
    f = check(nms_of_the_kept, d[:, :4], d[:, 4], 0.4)
    text = str(f.explain(d[:, :4], d[:, 4], 0.4))
    assert text[:text.find("== storages")].count("= check_index(") == 1
    assert sum(line.startswith("carried: ") for line in text.splitlines()) == (5 if n > 1 else 0)


def nms_order(dets, t):
    order = dets[:, 4].argsort()[::-1]
    kept = dets[:0, 0].sum()
    while order.size > 0:
        kept = kept + dets[order[0], 0]
        ovr = dets[order[1:], 0] - dets[order[0], 0]
        order = order[np.where(ovr <= t)[0] + 1]
    return kept


def test_shifted_nonzero_of_a_tail_needs_no_index_check():
    # np.where(ovr <= t)[0] indexes ovr, which is order[1:]: plus 1 it stays below order's
    # run-time length, so order[inds + 1] runs no check_index (only order[0] keeps one)
    d = boxes(40, 8)
    f = check(nms_order, d, 5.0)
    text = str(f.explain(d, 5.0))
    assert text[:text.find("== storages")].count("= check_index(") == 1


def shifted_too_far(x, k):
    y = x[x > 0]  # a run-time length
    inds = np.nonzero(y[1:] > 0.5)[0]
    return y[inds + k]


@pytest.mark.parametrize("k", [-1, 1, 2])
def test_shifted_nonzero_past_the_tail_is_checked(k):
    # + 2 passes y's end where y's last element is selected (NumPy's IndexError); + 1 and - 1
    # never do (a negative index counts from the end)
    x = np.array([0.9, -1.0, 0.2, 0.7, 0.8], np.float32)
    if k == 2:
        check_raises(shifted_too_far, x, k, exc=IndexError)
    else:
        check(shifted_too_far, x, k)
    check(shifted_too_far, np.array([0.9, 0.7, 0.8, 0.1], np.float32), k)


def skip_small(x, t):
    keep = []
    for i in range(x.shape[0]):
        if x[i] < t:
            continue
        scaled = x * x[i]
        keep.append(scaled.sum())
    return np.array(keep)


def test_what_a_continue_guards_stays_in_its_branch():
    # `if x[i] < t: continue` guards the rest of the body as a branch: `scaled`, assigned and
    # read only there, is not merged out of it (a copy of the array every trip); 12 trips: a
    # loop of the IR (8 or fewer unroll)
    x = np.array([14, 1, 11, 5, 13, 3, 10, 6, 15, 0, 9, 7]) / 16  # sums exact in any order
    f = check(skip_small, x, 0.5)
    text = str(f.explain(x, 0.5))
    assert not [line for line in text[:text.find("== storages")].splitlines() if "copy(" in line and "[12]{1}" in line]


def soft_decay(dets, t):
    # Soft-NMS's shape: a for loop over a range whose trips branch on traced values becomes one
    # loop of the IR; slices start at its counter; in-place writes through them reach dets
    n = dets.shape[0]
    for i in range(n):
        best = i + np.argmax(dets[i:, 4])
        if best != i:
            row = dets[i, :].copy()
            dets[i, :] = dets[best, :]
            dets[best, :] = row
        dets[i + 1:, 4] *= np.where(dets[i + 1:, 0] > t, 0.5, 1.0)
    return np.where(dets[:, 4] > 0.1)[0]


def rows_rewritten_through_traced_slices(x, idx):
    # writes through slices that start at the loop's counter, reading other columns of their own
    # rows, the column just written and row i (each compiled in the stage that gathers them:
    # fuse_stages' scatter), and repeated indices, the last one winning (not so compiled)
    n = x.shape[0]
    for i in range(n):
        x[i + 1:, 4] *= x[i + 1:, 0] - x[i + 1:, 2]
        x[i + 1:, 0] = np.maximum(x[i + 1:, 0], x[i, 0]) + x[i + 1:, 4]
        x[idx, 3] = x[idx, 3] + np.arange(idx.shape[0])
    return x


@pytest.mark.parametrize("n", [0, 1, 2, 9, 70])
def test_rows_rewritten_through_traced_slices(n):
    x = boxes(n, 5).astype(np.float64)
    idx = np.array([0, 1, 0, 1, 1], dtype=np.int64) % max(n, 1)
    f = check(rows_rewritten_through_traced_slices, x, idx[:min(n, 5)])
    if n > 64 and TARGET == "cpu":  # (one loop of the IR, its body compiled)
        stages = str(f.explain(x, idx[:min(n, 5)])).split("== stages")[1].split("\nstage ")
        assert sum("  take(" in st and "  put(" in st for st in stages) == 2, stages


def test_a_range_loop_with_traced_branches_is_one_ir_loop():
    f = check(soft_decay, boxes(30, 8).astype(np.float64), 50.0)
    ir = str(f.explain(boxes(30, 8).astype(np.float64), 50.0))
    assert ir.count("= loop_begin(") == 1 and ir.count("= branch_if(") == 1  # not 30 unrolled branches


def slices(x, k):
    i = np.argmax(x)
    return x[i + 1:].sum(), x[i:] * 1, x[:i] + 0, x[i - k:i + k] - 1


def returns_a_slice(x):
    return x[np.argmax(x):]


def test_returning_a_slice_with_a_run_time_bound_of_an_argument_is_refused():
    # NumPy's result is the argument's memory, strider's a copy
    with pytest.raises(strider.TraceError, match="argument's memory"):
        strider.compile(returns_a_slice, strict=True)(np.arange(5.0))


@pytest.mark.parametrize("k", [0, 2, 50])
def test_slices_with_run_time_bounds(k):
    check(slices, np.array([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0]), k)


def columns_past(d, j):
    k = np.argmax(d[:, 4])
    return d[k + 1:, 2] - d[k + 1:, 0], d[k:, j] * 2


@pytest.mark.parametrize("j", [1, -1])
def test_columns_of_a_slice_with_a_run_time_bound_are_a_constant_apart(j):
    # d[k + 1:, 2] and d[k + 1:, 0]: one array of positions, and each column's int a constant of
    # its offsets, so a compiled stage sees them 2 apart; only j, which the call passes, takes a
    # multiply of 0-d values (its offset)
    d = boxes(20, 5)
    f = check(columns_past, d, j)
    text = str(f.explain(d, j))
    assert len(re.findall(r"= multiply\(%s\d+\[\]\{\}\+0, %s\d+\[\]\{\}\+0\)", text[:text.find("== storages")])) == 1


def alias(x):
    i = np.argmax(x)
    v = x[i:]
    v += 1  # NumPy writes x through the view; strider's slice is a copy, written back into x
    return x


def test_writing_through_a_slice_with_a_run_time_bound_writes_the_array():
    check(alias, np.array([1.0, 4.0, 2.0, 3.0]))


def none_when_empty(x, t):
    # YOLOX's shape: returns in branches on traced values, None on one path, tuples on others
    m = x > t
    if m.sum() == 0:
        return None
    y = x[m]
    if y.max() > 5:
        return y.astype(np.float64), y.size
    elif y.min() < 1:
        return y, -1
    return y * 2, 0


@pytest.mark.parametrize("t", [100.0, 3.0, 0.5, 1.5])  # no element, a float64 result, a negative code, the end
def test_returns_inside_traced_branches_return_the_path_the_data_takes(t):
    check(none_when_empty, np.array([0.5, 7.0, 2.0, 1.2, 4.0]), t)
    f = strider.compile(none_when_empty, strict=True)
    assert f.stats()["traces"] == 0
    for s in (100.0, 3.0, 0.5, 1.5):  # one trace serves every path
        f(np.array([0.5, 7.0, 2.0, 1.2, 4.0]), s)
    assert f.stats()["traces"] == 1


def assigned_on_one_path(x):
    # the variable keeps None where the branch does not run (strider once returned the slot's
    # stale memory there)
    d = None
    if x.sum() > 0:
        d = x * 2
    return d


@pytest.mark.parametrize("x", [np.ones(3), -np.ones(3)])
def test_a_variable_none_on_one_path_is_none_there(x):
    check(assigned_on_one_path, x)


def none_checked(x):
    d = assigned_on_one_path(x)  # a callee's None or array, tested in the caller
    if d is None:
        return x - 1
    return d


def nested_returns(x):
    if x[0] > 0:
        if x[1] > 0:
            return x[:1] + 0
        return None
    if x[2] > 0:
        return 7
    return x.astype(np.int32), x.sum() > 1


@pytest.mark.parametrize("x", [np.array([1.0, 1.0, 0.0]), np.array([1.0, -1.0, 0.0]), np.array([-1.0, 0.0, 1.0]),
                               np.array([-1.0, 1.0, 0.0])])
def test_none_tests_and_nested_returns(x):
    check(none_checked, x)
    check(nested_returns, x)


def kind_tested(x):
    d = assigned_on_one_path(x)
    if isinstance(d, np.ndarray):  # an array on one path, None on the other: known only at run time
        return d + 1
    return x


@pytest.mark.parametrize("x", [np.ones(3), -np.ones(3)])
def test_isinstance_of_a_value_of_two_kinds_is_a_graph_break(x):
    with pytest.raises(strider.TraceError, match="'d' holds a 1-d float64 array or None"):
        strider.compile(kind_tested, strict=True)(x)
    with pytest.warns(strider.GraphBreakWarning, match="'d' holds"):  # the call runs in NumPy
        np.testing.assert_array_equal(strider.compile(kind_tested, strict=False)(x), kind_tested(x), strict=True)


def python_returns(x, mode):
    if mode == "double":  # a Python condition: one path traced, as Python runs it
        return x * 2
    if mode is None:
        return None
    return x


def test_returns_on_python_values_trace_one_path():
    for mode in ("double", None, "same"):
        f = check(python_returns, np.arange(3.0), mode, static_argnames=("mode",))
        assert "branch_if" not in str(f.explain(np.arange(3.0), mode))


def raises_where_taken(x):
    if x.sum() > 100:
        return x.reshape(7)  # NumPy raises only where this path runs
    return x + 1


def test_an_error_on_a_path_runs_in_numpy_where_the_path_is_taken():
    f = strider.compile(raises_where_taken, strict=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # compiled, the path not taken: no break
        np.testing.assert_array_equal(f(np.ones(4)), np.ones(4) + 1)
    assert f.stats()["graph_breaks"] == 0
    with pytest.warns(strider.GraphBreakWarning, match=r"ValueError \(cannot reshape.*test_control_flow.py:\d+, on "
                      "the side of a branch on a traced condition that this call took: this call ran in NumPy"):
        with pytest.raises(ValueError, match="reshape"):
            f(np.full(4, 50.0))
    assert f.stats()["runtime_breaks"] == 1
    np.testing.assert_array_equal(f(np.ones(4)), np.ones(4) + 1)
    with pytest.raises(ValueError, match="^cannot reshape"):  # strict too: NumPy's error, which that path raises
        strider.compile(raises_where_taken, strict=True)(np.full(4, 50.0))


def check_bboxes(bboxes):
    # albumentations' check_bboxes: the message names the coordinate by a traced index into a list
    valid = (bboxes[:, :4] >= 0) & (bboxes[:, :4] <= 1)
    if not np.all(valid):
        row = np.where(~np.all(valid, axis=1))[0][0]
        coord = ["x_min", "y_min", "x_max", "y_max"][np.where(~valid[row])[0][0]]
        raise ValueError(f"Expected {coord} for bbox {bboxes[row]} to be in the range [0.0, 1.0]")
    return bboxes * 2


@pytest.mark.parametrize("strict", [True, False])
def test_a_side_that_ends_raising_and_cannot_be_traced_runs_in_numpy_where_taken(strict):
    # it refused valid boxes too; an untraceable side that does not end raising still refuses
    f = strider.compile(check_bboxes, strict=strict)
    ok, bad = np.array([[0.1, 0.1, 0.5, 0.5]]), np.array([[0.1, 0.1, 1.5, 0.5]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", strider.GraphBreakWarning)
        np.testing.assert_array_equal(f(ok), ok * 2)
        with pytest.raises(ValueError, match=r"^Expected x_max for bbox \[0.1 0.1 1.5 0.5\]"):
            f(bad)
        np.testing.assert_array_equal(f(ok), ok * 2)
    assert f.stats()["traces"] == 1


def indexes_past_the_end_where_taken(x, k):
    if x.sum() > 0:
        y = x[k] * 2
    else:
        y = x[0]
    return y + 1


def test_an_index_error_on_a_path_taken_is_numpys_when_strict():
    f = strider.compile(indexes_past_the_end_where_taken, strict=True)
    assert f(-np.ones(3), 5) == 0.0
    with pytest.raises(IndexError, match="^index 5 is out of bounds for axis 0 with size 3$"):
        f(np.ones(3), 5)


def swap_best_forward(sc):
    # DocF's py_cpu_softnms, a short unrolled loop: on the last trip maxpos + i + 1 is N, out of
    # range, on the side of `sc[i] < maxscore` that never runs there (sc[-1] < sc[-1])
    N = sc.shape[0]
    for i in range(N):
        if i != N - 1:
            maxscore = np.max(sc[i + 1:])
            maxpos = np.argmax(sc[i + 1:])
        else:
            maxscore = sc[-1]
            maxpos = 0
        if sc[i] < maxscore:
            t = sc[i].copy()
            sc[i] = sc[maxpos + i + 1]
            sc[maxpos + i + 1] = t
    return sc


@pytest.mark.parametrize("n", [1, 3, 5])
def test_an_index_out_of_range_on_a_side_that_never_runs_compiles(n):
    f = check(swap_best_forward, np.random.default_rng(n).permutation(n).astype(np.float32))
    assert f.stats()["runtime_breaks"] == 0


def per_class(scores, boxes, t):
    # YOLOX's class-aware loop: arrays of run-time lengths appended in a branch, joined after
    found = []
    for c in range(scores.shape[1]):
        m = scores[:, c] > t
        if m.sum() == 0:
            continue
        rows = np.concatenate([boxes[m], scores[m, c][:, None], np.zeros_like(scores[m, c][:, None]) + c], 1)
        found.append(rows)
    if len(found) == 0:
        return None
    return np.concatenate(found, 0), np.vstack(found).max(0), len(found)


@pytest.mark.parametrize("t", [2.0, 0.9, 0.5, -1.0])  # no class, a few, most, every row of every class
def test_a_list_of_arrays_of_run_time_lengths_is_joined_in_order(t):
    rng = np.random.default_rng(5)
    check(per_class, rng.uniform(0, 1, (30, 4)), rng.uniform(0, 100, (30, 4)), t)


def joined_unguarded(scores, boxes, t, how):
    # YOLOX-style per-class rows joined with no `if found:` guard: NumPy raises when no class kept
    # a row, after the write into `boxes` (which must stay as NumPy leaves it)
    boxes[:, 0] += 1
    found = []
    for c in range(scores.shape[1]):
        m = scores[:, c] > t
        if m.sum():
            found.append(boxes[m] if how != "hstack" else scores[m, c])
    return {"concatenate": np.concatenate, "vstack": np.vstack, "hstack": np.hstack}[how](found)


@pytest.mark.parametrize("how", ["concatenate", "vstack", "hstack"])
def test_joining_arrays_of_run_time_lengths_a_loop_left_empty_raises_numpys_error(how):
    rng = np.random.default_rng(5)
    s, b = rng.uniform(0, 1, (30, 4)), rng.uniform(0, 100, (30, 4))
    check(joined_unguarded, s, b, 0.5, how, static_argnames=("how",))
    check_raises(joined_unguarded, s, b, 2.0, how, exc=ValueError, static_argnames=("how",))
    f = strider.compile(joined_unguarded, static_argnames=("how",), target=TARGET)
    b2 = b.copy()
    with pytest.raises(ValueError, match="need at least one array to concatenate"):
        f(s, b2, 2.0, how)
    assert np.array_equal(b2[:, 0], b[:, 0] + 1)


def counted_not_read(x):
    # a counter a traced branch bumps, never read after the loop (KITTI eval's leftovers): each
    # trip's `count += 1` reads the one before, so it is carried
    count = 0
    for i in range(x.shape[0]):
        if x[i] > 0.5:
            count += 1
    return x * 2


def test_a_counter_a_branch_bumps_and_nothing_reads_after_the_loop():
    check(counted_not_read, np.array([0.9, 0.05, 0.3]))


def best_is_ignored(scores, ignored_det):
    # KITTI eval's compute_statistics: ignored_det (a few ints, specialized by value as a branch
    # reads them) indexed by the best detection's index, a traced int
    det_idx = -1
    best = -1.0
    for j in range(scores.shape[0]):
        if ignored_det[j] == -1:
            continue
        if scores[j] > best:
            det_idx = j
            best = scores[j]
    return best > 0 and ignored_det[det_idx] == 1


@pytest.mark.parametrize("n", [4, 5, 7])
def test_an_array_known_by_value_indexed_by_a_traced_int(n):
    check(best_is_ignored, np.linspace(0.1, 1, n), np.array([0, 1, -1, 1, 0, 1, 0][:n]))


def returns_in_the_first_trip(x, c):
    # a return at the top level of a loop's body (mmdet's MinIoURandomCrop ends its trial loop so)
    for i in range(c.shape[0]):
        return x + c[i]
    return x * 0


def returns_after_a_continue(x, c):
    for i in range(c.shape[0]):
        if c[i] > 1:
            continue
        return x + c[i]
    return x * 0


@pytest.mark.parametrize("fn", [returns_in_the_first_trip, returns_after_a_continue])
@pytest.mark.parametrize("c", [[3.0, 0.5], [3.0, 4.0], [0.25]])
def test_a_return_at_the_top_of_a_loop_body(fn, c):
    check(fn, np.ones(2), np.array(c))


def rows_kept(d, t, how):
    # SORT's associate: arrays of one shape appended in a branch, then joined (matches.append(m.reshape(1, 2)))
    items = []
    for r in d:
        if r[4] > t:
            items.append(r[:4].reshape(1, 2, 2) if how.startswith("3d") else r[:4] if how.startswith("1d") else r[4])
    joins = {
        "3d-concat0": lambda: np.concatenate(items, axis=0), "3d-concat1": lambda: np.concatenate(items, axis=1),
        "3d-concat-1": lambda: np.concatenate(items, axis=-1), "3d-concatN": lambda: np.concatenate(items, axis=None),
        "3d-vstack": lambda: np.vstack(items), "3d-hstack": lambda: np.hstack(items),
        "3d-stack1": lambda: np.stack(items, axis=1), "1d-concat": lambda: np.concatenate(items),
        "1d-concat-f32": lambda: np.concatenate(items, dtype=np.float32), "1d-vstack": lambda: np.vstack(items),
        "1d-hstack": lambda: np.hstack(items), "1d-stack": lambda: np.stack(items),
        "1d-stack-1": lambda: np.stack(items, axis=-1), "0d-vstack": lambda: np.vstack(items),
        "0d-hstack": lambda: np.hstack(items), "0d-stack": lambda: np.stack(items),
        "0d-concat": lambda: np.concatenate(items),
    }
    return joins[how]()


_JOINS = ["3d-concat0", "3d-concat1", "3d-concat-1", "3d-concatN", "3d-vstack", "3d-hstack", "3d-stack1", "1d-concat",
          "1d-concat-f32", "1d-vstack", "1d-hstack", "1d-stack", "1d-stack-1", "0d-vstack", "0d-hstack", "0d-stack"]


@pytest.mark.parametrize("how", _JOINS)
def test_a_list_of_arrays_of_one_shape_is_joined(how):
    check(rows_kept, boxes(9, 21), 0.5, how, static_argnames=("how",))


@pytest.mark.parametrize("how", ["3d-concat0", "1d-hstack", "0d-stack", "0d-concat"])
def test_joining_a_list_a_loop_left_empty_raises_numpys_error(how):
    check_raises(rows_kept, boxes(9, 21), 2.0, how, exc=ValueError, static_argnames=("how",))


def repeated_over(x):
    # a while loop of 1-d pieces (its trips and their lengths the data's), joined by hstack
    pieces = [x[:1]]
    n = (x > 0.5).sum()
    i = 0
    while i < n:
        pieces.append(x[x > 0.5] + i)
        i = i + 1
    return np.hstack(pieces)


def test_a_list_of_arrays_that_outgrows_its_room_is_traced_again():
    f = strider.compile(repeated_over, strict=True)
    x = np.random.default_rng(3).uniform(0, 1, 200)
    for y in (x * 0.55, x + 1):  # then 200 pieces of 200 elements: past the room the first trace gave
        np.testing.assert_array_equal(f(y), repeated_over(y), strict=True)
    assert f.stats()["regrown"] >= 1


def indexed_pieces(x, t):
    pieces = []
    i = 0
    while i < (x > 0).sum():
        pieces.append(x[x > t] + i)
        i = i + 1
    return pieces[0]


def mixed_pieces(x, t):
    pieces = []
    i = 0
    while i < (x > 0).sum():
        pieces.append(x[x > t] + i)
        pieces.append((x[x > t] + i).astype(np.float32))
        i = i + 1
    return np.concatenate(pieces)


@pytest.mark.parametrize("fn,why", [(indexed_pieces, "np.concatenate"), (mixed_pieces, "one dtype and row shape")])
def test_lists_of_arrays_are_refused_beyond_joining(fn, why):
    with pytest.raises(strider.TraceError, match=why):
        strider.compile(fn, strict=True)(np.arange(5.0), 1.0)


def rows_by_kept_order(x, thr):
    # YOLOv8-ONNXRuntime's `box = boxes[i]` for the indices NMS keeps, picked in a loop over an
    # array of a run-time length: each row a list of its numbers, of their own kinds, as Python's
    # (strider returned arrays: [1., 0.9] for [1, 0.9])
    boxes, rows = [], []
    for i in range(x.shape[0]):
        if x[i, 0] >= thr:
            boxes.append([int(x[i, 1]), int(x[i, 2])])
            rows.append([i, float(x[i, 0])])
    order = np.argsort(-np.array([r[1] for r in rows]), kind="stable")
    keep = [int(i) for i in order[:3]]
    return [boxes[i] for i in keep], [rows[i] for i in order]


def parts_of_two_shapes(x):
    # YOLOv8-ONNXRuntime's `detections.append((box, score, class_id))`: an item NumPy itself
    # cannot make one array of
    boxes, detections = [], []
    for i in range(x.shape[0]):
        if x[i, 0] >= 0.5:
            boxes.append([int(x[i, 1]), int(x[i, 2])])
    for i in range(len(boxes)):
        detections.append((boxes[i], x[i, 0]))
    return detections


def dicts_of_scores(scores, thr):
    # EfficientDet's postprocess: a dict of the image's detections, an empty one where none passed
    out = []
    for i in range(scores.shape[0]):
        m = scores[i] > thr
        if m.sum() == 0:
            out.append({"scores": np.array(())})
            continue
        out.append({"scores": scores[i][m]})
    return out


def test_a_dict_appended_in_a_loop_on_a_traced_condition_is_named():
    s = np.random.default_rng(0).uniform(size=(2, 30))
    with pytest.raises(strider.TraceError, match=r"test_control_flow.py:\d+: appending a dict to 'out' in a loop or "
                       "branch on a traced condition"):
        strider.compile(dicts_of_scores, strict=True)(s, 0.5)
    check(dicts_of_scores, s, 0.5, strict=False)


class Detection:
    def __init__(self, tlwh, confidence):
        self.tlwh, self.confidence = np.asarray(tlwh, dtype=np.float64), float(confidence)


def detections_of_a_frame(rows, min_height):
    # DeepSORT's create_detections: an object per row of the frame's
    out = []
    for row in rows[rows[:, 0] > 0.5]:
        if row[3] < min_height:
            continue
        out.append(Detection(row[1:5], row[5]))
    return [d.tlwh for d in out]


def test_an_object_appended_in_a_loop_on_a_traced_condition_is_named():
    rows = np.random.default_rng(0).random((8, 6))
    with pytest.raises(strider.TraceError, match=r"test_control_flow.py:\d+: appending a Detection to 'out' in a loop"):
        strider.compile(detections_of_a_frame, strict=True)(rows, 0.3)
    check(detections_of_a_frame, rows, 0.3, strict=False)


@pytest.mark.parametrize("thr", [0.3, 2.0])
def test_rows_of_a_list_picked_in_a_loop_keep_their_kinds(thr):
    x = np.random.default_rng(3).uniform(0, 1, (20, 3)).astype(np.float32)
    x[:, 1:] *= 100
    check(rows_by_kept_order, x, thr)
    with pytest.raises(strider.TraceError, match=r"test_control_flow.py:\d+: appending an item whose parts differ in "
                       r"shape \(a list, a number\) to 'detections'"):
        strider.compile(parts_of_two_shapes, strict=True)(x.copy())
    check(parts_of_two_shapes, x, strict=False)


def bonus_of_a_min(e):
    # Deep OC-SORT's `w_emb_bonus[idx] += row_weight / 2` of a builtin min(): a Python float on one
    # path, a float64 scalar on the other, added in place into floats
    b = np.zeros_like(e)
    b[0] += min(e[0, 0] - e[0, 1], 0.5) / 2
    c = e[1].copy()
    c -= min(e[1, 0], 0.25)
    s = e[2, 0]  # a NumPy scalar: its op= binds anew, t keeps the old value
    t = s
    s += min(e[2, 1], 0.5)
    return b, c, s, t


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_number_of_a_kind_the_run_decides_added_in_place(dtype, seed):
    check(bonus_of_a_min, np.random.default_rng(seed).uniform(-1, 1, (3, 4)).astype(dtype))


def _peaks_in_range(x):
    # face-alignment's _get_preds_fromhm: int() of a traced value and a branch on it, in a loop
    out = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        p = int(x[i]) - 1
        if p > 0 and p < 63:
            out[i] = p
    return out


def test_a_lambda_calling_a_function_with_loops_compiles_as_a_def_does():
    check(lambda x: _peaks_in_range(x) + 1, np.arange(10.0) * 9)
    # (its line with other lambdas: told apart by the columns of its code)
    both = [lambda x: x, lambda x: _peaks_in_range(x), lambda x: x + 1]
    check(both[1], np.arange(10.0) * 9)


def _through_a_table(x, kind):
    # albumentations' bboxes_d4: `transformations[group_member](bboxes)`, a dict of lambdas
    transformations = {"e": lambda v: v, "p": lambda v: _peaks_in_range(v), "t": lambda v: type(v[0]) is np.float64}
    return transformations[kind](x), [_peaks_in_range][0](x)


@pytest.mark.parametrize("kind", ["e", "p", "t"])
def test_functions_called_through_a_dict_or_list_are_rewritten(kind):
    # they ran as written: a branch on a traced value refused, type() saw strider's Tracer
    check(_through_a_table, np.arange(10.0) * 9, kind, static_argnames=("kind",))


def over_survivors(x, t):
    # a for loop over an array of a run-time length: a loop of the IR indexing it
    total = x[:0].sum()
    last = x[0]
    for v in x[x > t]:
        total = total + v * 2
        last = v
    return total, last


@pytest.mark.parametrize("t", [2.0, 0.95, 0.5, -1.0])  # no trip, one, some, every element
def test_for_over_an_array_of_a_run_time_length(t):
    check(over_survivors, np.random.default_rng(6).uniform(0, 1, 25), t)


def nms_per_class(dets, labels, thr):
    # batched NMS as NumPy code writes it: a loop over np.unique's classes, extend, np.array
    keep = []
    for c in np.unique(labels):
        idx = np.where(labels == c)[0]
        k = py_cpu_nms(dets[idx], thr)
        keep.extend(idx[k])
    keep = np.array(keep)
    return keep[np.argsort(-dets[keep, 4], kind="stable")]


@pytest.mark.parametrize("classes", [1, 4])
@pytest.mark.parametrize("thr", [0.0, 0.3, 1.0])
def test_a_loop_over_unique_classes_extends_a_list(classes, thr):
    d = boxes(40, classes)
    d[:, 4] = np.random.default_rng(classes).permutation(40) / 40  # no ties: argsort's order is NumPy's
    check(nms_per_class, d, np.random.default_rng(classes).integers(0, classes, 40), thr)


def over_indices(x, t):
    # range(len(y)) and range(y.shape[0]) of a run-time length (the static bound, silently, once),
    # enumerate of one, a range from a traced start, tuple targets
    y = x[x > t]
    total = x[:0].sum()
    for i in range(len(y)):
        total = total + y[i]
    for i in range(y.shape[0] - 1, -1, -2):
        total = total * 0.5 + y[i] * i
    weighted = []
    for i, v in enumerate(y, 1):
        weighted.append(v * i)
    first = np.argmax(x)
    for j in range(first + 1, x.size):
        total = total + x[j]
    for a, b in x[:4].reshape(2, 2):
        total = total + a * b
    return total, np.array(weighted)


@pytest.mark.parametrize("t", [2.0, 0.95, 0.5, -1.0])
def test_ranges_with_run_time_bounds_and_enumerate(t):
    check(over_indices, np.random.default_rng(7).uniform(0, 1, 25), t)


def over_a_computed_stop(x, t):
    # range(idx.size - 1) inside a while (a numpy YOLOv5 NMS port's inner loop): a stop computed
    # from a run-time length, whose bound tracing does not know; zero trips where it is <= 0
    idx = np.flatnonzero(x > t)
    near, total = [], x[:0].sum()
    for pos in range(idx.size - 1):
        j = idx[pos]
        if x[j] - x[idx[pos + 1]] < 0.25:
            near.append(pos)
        total = total + x[j]
    for k in range(2, idx.size - 3):
        total = total * 0.5 + x[idx[k]]
    return np.delete(idx, near), total


@pytest.mark.parametrize("t", [2.0, 0.95, 0.8, 0.5, -1.0])
def test_a_range_to_a_stop_computed_from_a_run_time_length(t):
    check(over_a_computed_stop, np.random.default_rng(3).uniform(0, 1, 25), t)


def nested_break(x, t):
    # a break inside an if inside the body: a flag, the rest of the trip skipped, one exit
    i = 0
    found = -1
    while i < x.size:
        if x[i] > t:
            found = i
            if x[i] > 2 * t:
                break
        i = i + 1
    return i, found


def for_break(x, t):
    # break in a for over a range (traced from the trip whose condition is traced) and in a for
    # over an array of a run-time length; the counter read after the loop, as Python leaves it
    total = x[:0].sum()
    for i in range(x.size):
        if total > t:
            break
        total = total + x[i]
    doubled = x[:0].sum()
    for v in x[x > 0.2]:
        doubled = doubled + v
        if doubled > t:
            doubled = doubled * 2
            break
    return total, i, doubled


@pytest.mark.parametrize("t", [0.1, 0.45, 0.9, 50.0])  # first trip, early, later, never
def test_breaks_inside_branches_and_for_loops(t):
    x = np.random.default_rng(1).uniform(0, 1, 20)
    check(nested_break, x, t)
    check(for_break, x, t)


def nested_continue(x, t):
    # a continue inside an if inside the body: a flag lowered at each trip's start
    total = x[:0].sum()
    skipped = 0
    i = 0
    while i < x.size:
        v = x[i]
        i = i + 1
        if v > t:
            if v > 2 * t:
                skipped = skipped + 1
                continue
            v = v * 10
        total = total + v
    for w in x[x > t]:
        if w < 0.9:
            if w > 0.8:
                continue
        total = total - w
    return total, skipped


@pytest.mark.parametrize("t", [0.1, 0.45, 0.9, 50.0])
def test_continue_inside_branches(t):
    check(nested_continue, np.random.default_rng(1).uniform(0, 1, 20), t)


def extends(x):
    # extend by an empty array of static length, then by one of a run-time length
    out = []
    for v in x[x > 0.5]:
        out.extend(x[:0])
        out.extend(x[x > v])
    return np.array(out)


def test_extend_by_static_and_run_time_lengths():
    check(extends, np.random.default_rng(9).uniform(0, 1, 15))


def per_image(pred, thr):
    # YOLOv5's habit: a list of each image's results, assigned where the image has candidates,
    # each `if not ...: continue` guarding the rest; the list returned by another name
    out = [np.zeros((0, 4), np.float32)] * pred.shape[0]
    alias = out
    for i, x in enumerate(pred):
        x = x[x[:, 4] > thr]
        if not x.shape[0]:
            continue
        x = x[x[:, 4].argsort(kind="stable")[::-1]]
        if not (x[:, 4] > thr + 0.2).any():
            continue
        out[i] = x[:, :4] * 2
        if x.shape[0] > 3:
            out[i] = out[i][:3]
    return alias


@pytest.mark.parametrize("thr", [2.0, 0.85, 0.5, -1.0])  # none, some images, every image
def test_items_of_a_list_assigned_in_a_branch(thr):
    pred = np.random.default_rng(3).uniform(0, 1, (3, 12, 5)).astype(np.float32)
    pred[1, :, 4] = 0.0
    check(per_image, pred, thr)


def items_set_where(x, thr, init):
    pr = init(len(x))
    for i in range(len(x)):
        if x[i] > thr:
            pr[i] = 1.0
    return pr


def envelope(pr):
    # pycocotools' accumulate: the precision envelope, item by item on a list
    nd = len(pr)
    pr = pr.tolist()
    for i in range(nd - 1, 0, -1):
        if pr[i] > pr[i - 1]:
            pr[i - 1] = pr[i]
    return pr


def per_class_ap(scores, cls, nc=20):
    aps = [0.0] * nc
    for c in range(nc):
        i = cls == c
        if i.sum() == 0:
            continue
        aps[c] = float(scores[i].mean())
    return aps


_INITS = {"floats": lambda n: [0.0] * n, "ints": lambda n: list(range(n)),
          "numpy floats": lambda n: [np.float64(2.0)] * n}


# A loop of more than 8 trips whose first trip traces a branch is first tried as a loop of the IR:
# where it cannot be one, it is unrolled, with the list as the trip found it (not with the items
# that trip's branch made, of a trace thrown away)
@pytest.mark.parametrize("n", [3, 9, 12])
@pytest.mark.parametrize("init", sorted(_INITS))
@pytest.mark.parametrize("thr", [2.0, 0.5, -1.0])
def test_items_of_a_list_assigned_in_a_branch_in_a_loop(n, init, thr):
    x = np.random.default_rng(n).uniform(0, 1, n)
    check(items_set_where, x, thr, _INITS[init])


def argmax_of_the_rest(dets):
    # Soft-NMS's `i + np.argmax(dets[i:, 4])`: the gather of the rest and its argmax, whose check
    # that the rest is not empty runs before them, share one compiled stage a trip
    best = []
    for i in range(dets.shape[0]):
        best.append(i + np.argmax(dets[i:, 4]))
    return best


def test_the_argmax_of_a_gather_of_a_run_time_length_compiles_with_it():
    d = np.random.default_rng(5).random((100, 5)).astype(np.float32)
    d[::7, 4] = d[::7, 4].max()  # ties: the first
    f = check(argmax_of_the_rest, d)
    assert not [why for why in f.explain(d).fallbacks if "argmax" in why]


def test_lists_filled_item_by_item_under_traced_branches_of_long_loops():
    rng = np.random.default_rng(4)
    check(envelope, np.sort(rng.uniform(0, 1, 60))[::-1] * rng.uniform(0.8, 1, 60))
    cls = rng.integers(0, 20, 300)
    cls[(cls == 7) | (cls == 13)] = 8
    check(per_class_ap, rng.random(300), cls, rtol=1e-12)  # (a mean: its sum's order)


@pytest.mark.parametrize("empty", [(), (0,), (1, 2)])
def test_yolov5_non_max_suppression(empty):
    # benchmarks/nms_ports.py's port of YOLOv5's non_max_suppression, unmodified in style
    check(yolov5_non_max_suppression, yolo_predictions(40, images=3, empty=empty), 0.25, 0.45, 300)


def pops(x):
    out = [x[:0], x[:0]]
    if x.sum() > 0:
        out[0] = x
        out.pop()
    return out


def test_a_list_whose_length_a_branch_changes_is_refused():
    with pytest.raises(strider.TraceError, match="changes length"):
        strider.compile(pops, strict=True)(np.arange(3.0))


def best_match(x, t):
    # ensemble_boxes' find_matching_box: -1 and the threshold (Python numbers, the second an
    # argument) or NumPy's argmax and its value, by a traced condition
    best = -1
    score = t
    i = np.argmax(x)
    if x[i] > t:
        best = i
        score = x.astype(np.float64)[i]
    return best, score, x * score


@pytest.mark.parametrize("t", [0.5, 2.0])
def test_a_python_number_or_a_numpy_scalar_after_a_branch(t):
    # each path's own kind: returned as Python's or NumPy's number, promoted by NEP 50 (float32
    # data times a Python float stays float32, times np.float64 is float64)
    x = np.random.default_rng(9).random(6).astype(np.float32)
    f = check(best_match, x, t)
    got, want = f(x, t), best_match(x, t)
    assert [type(v) for v in got] == [type(v) for v in want] and got[2].dtype == want[2].dtype


def per_image_range(pred, thr):
    # a range over a batch's images whose trips branch: 8 trips or fewer unroll, so `out[i]` is
    # an item of a Python list and pred[i] a view
    out = [np.zeros((0, 4), np.float32)] * pred.shape[0]
    for i in range(pred.shape[0]):
        x = pred[i][pred[i][:, 4] > thr]
        if not x.shape[0]:
            continue
        out[i] = x[:, :4] * 2
    return out


def test_a_short_range_whose_trips_branch_unrolls():
    pred = np.random.default_rng(10).uniform(0, 1, (3, 12, 5)).astype(np.float32)
    pred[1, :, 4] = 0.0
    check(per_image_range, pred, 0.5)


def get_final_preds(batch_heatmaps):
    # HRNet's pose post-processing, unmodified in style: each joint's argmax moved a quarter
    # pixel towards its higher neighbour, in place, where it is not at the border
    b, j, height, width = batch_heatmaps.shape
    flat = batch_heatmaps.reshape((b, j, -1))
    idx = np.argmax(flat, 2).reshape((b, j, 1))
    coords = np.tile(idx, (1, 1, 2)).astype(np.float32)
    coords[:, :, 0] = coords[:, :, 0] % width
    coords[:, :, 1] = np.floor(coords[:, :, 1] / width)
    for n in range(coords.shape[0]):
        for p in range(coords.shape[1]):
            hm = batch_heatmaps[n][p]
            px = int(math.floor(coords[n][p][0] + 0.5))
            py = int(math.floor(coords[n][p][1] + 0.5))
            if 1 < px < width - 1 and 1 < py < height - 1:
                diff = np.array([hm[py][px + 1] - hm[py][px - 1], hm[py + 1][px] - hm[py - 1][px]])
                coords[n][p] += np.sign(diff) * .25
    return coords


@pytest.mark.parametrize("shape", [(2, 5, 9, 7), (2, 17, 9, 7)])  # joints unrolled, a loop of the IR
def test_keypoints_refined_in_place(shape):
    hm = np.random.default_rng(11).uniform(0, 1, shape).astype(np.float32)
    hm[0, 0] = 0.0
    hm[0, 0, 0, 0] = 1.0  # a joint at the border: left as it is
    check(get_final_preds, hm)


def bump(x, m, v):
    y = x.copy()
    k = np.argmax(m)  # an index only the run knows: y[k] is a view in NumPy, a copy in strider
    y[k] += v
    y[k, 1:] *= 2
    return y


def test_augmented_assignment_through_an_index_only_the_run_knows():
    x = np.arange(12.0).reshape(4, 3)
    for m in (np.array([0.1, 0.9, 0.2, 0.3]), np.array([0.8, 0.1, 0.2, 0.3])):
        check(bump, x, m, 0.5)
    check_raises(bump, x.astype(np.int64), np.array([0.1, 0.9, 0.2, 0.3]), 0.5, exc=TypeError)  # same_kind


def overlaps_by_rows(bboxes1, bboxes2):
    # mmdet's evaluation bbox_overlaps: a Python loop over the rows of the smaller set
    ious = np.zeros((bboxes1.shape[0], bboxes2.shape[0]), dtype=np.float32)
    area2 = (bboxes2[:, 2] - bboxes2[:, 0]) * (bboxes2[:, 3] - bboxes2[:, 1])
    for i in range(bboxes1.shape[0]):
        w = np.maximum(np.minimum(bboxes1[i, 2], bboxes2[:, 2]) - np.maximum(bboxes1[i, 0], bboxes2[:, 0]), 0)
        h = np.maximum(np.minimum(bboxes1[i, 3], bboxes2[:, 3]) - np.maximum(bboxes1[i, 1], bboxes2[:, 1]), 0)
        area1 = (bboxes1[i, 2] - bboxes1[i, 0]) * (bboxes1[i, 3] - bboxes1[i, 1])
        ious[i, :] = w * h / np.maximum(area1 + area2 - w * h, 1e-6)
    return ious


def rows_into_a_python_list(x):
    names = []
    for i in range(x.shape[0]):
        names.append(f"row {i}")  # a Python value of the counter: the loop unrolls
    return x * 2, names


def test_a_long_static_range_is_a_loop_of_the_ir():
    # more than 64 trips: one loop of the IR (an unrolled trace of 500 rows took a minute to
    # compile), unrolled where the body needs the counter as a Python int
    a, b = boxes(100, 1)[:, :4], boxes(70, 2)[:, :4]
    f = check(overlaps_by_rows, a, b)
    assert "loop_begin" in str(f.explain(a, b))
    g = check(rows_into_a_python_list, np.arange(70.0))
    assert "loop_begin" not in str(g.explain(np.arange(70.0)))


def reassigned_every_trip(x):
    for i in range(100):  # a loop of the IR: after one whole trip x is never the argument
        x = x * 0.5 + i
    return x


def may_leave_on_the_first_trip(x):
    y = x
    for i in range(100):
        if y.sum() > 50:
            break  # before any assignment: NumPy's y is x itself
        y = y + 1
    return y


def kept_by_a_branch_after_a_loop(x, c):
    y = x
    while y.sum() < 3:  # no trip where it holds: y is x
        y = y + 1
    if c.sum() > 0:
        z = y
    else:
        z = y * 2
    return z


def test_a_variable_that_held_an_argument_before_a_loop():
    # a range's loop runs a whole trip: what it carries is what the trips assign, a copy
    f = check(reassigned_every_trip, np.arange(4.0))
    assert "loop_begin" in str(f.explain(np.arange(4.0)))
    # where NumPy's result may be the argument itself, strider's would be a copy: a graph break
    # that runs NumPy's own code, and the caller gets the argument back as NumPy gives it
    for fn, args in ((may_leave_on_the_first_trip, (np.full(3, 20.0),)),
                     (kept_by_a_branch_after_a_loop, (np.ones(3), np.ones(2)))):
        with pytest.raises(strider.TraceError, match="argument's memory"):
            strider.compile(fn, strict=True)(*args)
        with pytest.warns(strider.GraphBreakWarning):
            assert strider.compile(fn, strict=False)(*args) is args[0]


def opencv_yolo(outs, width, height, conf_threshold=0.5):
    # the OpenCV DNN tutorial's YOLO post-processing, unmodified: a for over each output's rows,
    # a branch per row, boxes appended as lists of floats and ints
    class_ids, confidences, boxes = [], [], []
    for out in outs:
        for detection in out:
            scores = detection[5:]
            class_id = np.argmax(scores)
            confidence = scores[class_id]
            if confidence > conf_threshold:
                center_x = int(detection[0] * width)
                center_y = int(detection[1] * height)
                w = int(detection[2] * width)
                h = int(detection[3] * height)
                x = center_x - w / 2
                y = center_y - h / 2
                class_ids.append(class_id)
                confidences.append(float(confidence))
                boxes.append([x, y, w, h])
    return class_ids, confidences, boxes


def enumerate_rows(x, t):
    found = []
    for k, row in enumerate(x, 1):
        if row.sum() > t:
            found.append(k)
    return found


def test_a_for_over_an_arrays_rows_is_a_loop_of_the_ir():
    # the rows of a traced array iterate as a range of their indices does: one loop of the IR
    # where a trip traces a branch (it was 420 unrolled branches: 132 s to compile)
    rng = np.random.default_rng(4)
    outs = [rng.uniform(0, 1, (70, 12)).astype(np.float32), rng.uniform(0, 1, (5, 12)).astype(np.float32)]
    f = check(opencv_yolo, outs, 640, 480, 0.8)
    assert str(f.explain(outs, 640, 480, 0.8)).count("= loop_begin(") == 1  # the 5 rows unroll
    check(enumerate_rows, rng.uniform(0, 1, (20, 3)), 1.5)


def zipped_rows(boxes, scores, labels, thr):
    # for over zip() of arrays and enumerate(zip()) with a nested target: their rows together
    out, ids, pairs = [], [], []
    for box, score in zip(boxes, scores):
        if score > thr:
            out.append(box)
    for k, (s, lab) in enumerate(zip(scores, labels)):
        if s > thr:
            ids.append(k * 10 + int(lab))
    for a, b in zip(scores[:3], [1, 2, 3]):  # a list among them: Python's zip
        pairs.append(a * b)
    return np.array(out).reshape(-1, 4), ids, pairs


def best_by_key(d, t):
    # builtin max/min by key= (Python's first best, NaN keys as its scan treats them), of one
    # iterable, of several values
    return (max(range(d.shape[0]), key=lambda i: d[i, 4]), min(range(3), key=lambda i: d[i, 0]),
            max([d[0, 0], d[1, 0], t]), min(d[0, 1], d[1, 1], key=abs),
            max(range(2, 100, 3), key=lambda i: d[i % 5, 2]))


@pytest.mark.parametrize("n", [5, 80])
def test_zip_and_max_by_key(n):
    rng = np.random.default_rng(n)
    check(zipped_rows, rng.uniform(0, 1, (n, 4)), rng.uniform(0, 1, n), rng.integers(0, 5, n), 0.7)
    d = rng.uniform(-1, 1, (n, 5))
    check(best_by_key, d, 0.5)
    d[0, 4] = d[3, 2] = np.nan
    check(best_by_key, d, 0.5)


def filtering_comprehensions(boxes, scores, thr):
    # list comprehensions with a test per item: loops that fill lists (a branch per item)
    keep = [i for i in range(scores.shape[0]) if scores[i] > thr]
    rows = np.array([b for b in boxes if b[4] > thr and b[0] < 0.9]).reshape(-1, 5)
    best = [max(range(3), key=lambda j: b[j]) for b in boxes[:4] if b[1] > 0.2]
    pairs = [(k, float(s)) for k, s in enumerate(scores) if s > thr]
    return keep, rows, best, pairs


def rows_of_numbers(d, thr):
    # items appended in a branch per row: lists of a float32 row's NumPy scalars, tuples of an
    # int and a NumPy scalar, tuples of Python numbers, lists of ints: each as Python keeps it
    a, b, c, e = [], [], [], []
    for i in range(d.shape[0]):
        if d[i, 4] > thr:
            x1, y1, x2, y2 = d[i, 0], d[i, 1], d[i, 2], d[i, 3]
            a.append([x1, y1, x2, y2])
            b.append((i, d[i, 4]))
            c.append((int(x1 * 10), float(y1)))
            e.append([int(x1 * 10), 3])
    return a, b, c, e


@pytest.mark.parametrize("n", [6, 100])
def test_comprehensions_and_rows_of_numbers(n):
    rng = np.random.default_rng(n)
    check(filtering_comprehensions, rng.uniform(0, 1, (n, 5)), rng.uniform(0, 1, n), 0.5)
    check(rows_of_numbers, rng.uniform(0, 1, (n, 5)).astype(np.float32), 0.5)


def sums_over_a_range(d):
    total, kept = 0.0, 0
    for i in range(d.shape[0]):  # a branch each trip: a loop of the IR, a whole trip surely runs
        if d[i, 4] > 0.5:
            kept = kept + 1
        total = total + d[i, 4]
    return total, kept


def sums_over_a_mask(d):
    total = 0.0
    for j in np.flatnonzero(d[:, 4] > 0.5):  # no trip where none holds: NumPy's total stays 0.0
        total = total + d[j, 4]
    return total


def test_a_python_number_that_a_loop_makes_a_numpy_scalar():
    d = np.random.default_rng(6).uniform(0, 1, (20, 5))
    f = check(sums_over_a_range, d)
    assert type(f(d)[0]) is np.float64  # NumPy's kind after a trip
    # a loop with no sure trip leaves a Python float or a NumPy scalar as the run decides: it
    # carries both (a pair of kinds) and returns the one a trip left, or the one before
    for t in (d, d * 0.1):
        got = check(sums_over_a_mask, t)(t)
        assert type(got) is type(sums_over_a_mask(t)) and got == sums_over_a_mask(t)
    assert type(sums_over_a_mask(d * 0.1)) is float


def best_by_hand(scores, thr):
    keep = np.flatnonzero(scores > thr)
    best_score, best_idx = 0.0, -1  # Python numbers until a trip assigns NumPy scalars
    for i in range(len(keep)):
        if scores[keep[i]] > best_score:
            best_score = scores[keep[i]]
            best_idx = keep[i]
    return best_score, best_idx


def best_of_a_range(scores):
    best_score, best_idx = 0.0, -1
    for i in range(scores.shape[0]):  # a sure trip, but the branch may never assign
        if scores[i] > best_score:
            best_score = scores[i]
            best_idx = i
    return best_score, best_idx


def best_or_none(scores, thr):
    best = None
    for k in np.flatnonzero(scores > thr):
        if best is None or scores[k] > best:  # `or` sees best's NumPy scalar side only
            best = scores[k]
    return best


def decayed_until(scores, stop):
    acc, i = 0.0, 0
    while i < scores.shape[0]:
        if scores[i] > stop:
            break
        acc = acc * 0.5 + scores[i]  # a float32 scalar from the first trip on
        i += 1
    return acc, i


@pytest.mark.parametrize("thr", [0.5, 0.99, 2.0])
def test_a_variable_a_trip_leaves_of_another_kind(thr):
    """`best = 0.0` before a loop and a NumPy scalar after a trip that assigns it: the loop carries
    both kinds and a flag, and the function returns NumPy's kind: the Python number where no trip
    assigned it (no survivor, a branch never taken, a break on the first trip)."""
    s = np.random.default_rng(7).uniform(0, 1, 40).astype(np.float32)
    for f, args in ((best_by_hand, (s, thr)), (best_of_a_range, (s * (thr < 1),)), (decayed_until, (s, thr)),
                    (best_or_none, (s, thr))):
        got = check(f, *args)(*args)
        want = f(*args)
        kinds = [[type(v) for v in (r if isinstance(r, tuple) else (r,))] for r in (got, want)]
        assert kinds[0] == kinds[1], f.__name__
    assert type(best_by_hand(s, 2.0)[0]) is float and type(decayed_until(s, -1.0)[0]) is float


def best_row_written(scores, boxes, thr):
    best_idx, best = -1, 0.0
    for k in np.flatnonzero(scores > thr):
        if scores[k] > best:
            best, best_idx = scores[k], k
    row = boxes[best_idx] * 2  # the last row where nothing passes, as NumPy's -1 says
    boxes[best_idx, 0] = best
    return row, best_idx


@pytest.mark.parametrize("thr", [0.5, 2.0])
def test_an_index_and_a_value_of_either_kind(thr):
    """A Choice of integers indexes as one int64 (the kind does not change what it selects), and
    a Choice of numbers is stored as the array's dtype."""
    rng = np.random.default_rng(9)
    s, b = rng.uniform(0, 1, 30).astype(np.float32), rng.uniform(0, 1, (30, 4)).astype(np.float32)
    got = check(best_row_written, s, b, thr)(s, b.copy(), thr)
    assert type(got[1]) is type(best_row_written(s, b.copy(), thr)[1])


def nested_sums(scores, thr):
    keep = np.flatnonzero(scores > thr)
    total = 0
    for a in keep:
        for b in keep:
            if scores[a] > scores[b]:
                total = total + scores[a]
    return total


def test_a_pair_of_kinds_in_nested_loops_is_a_graph_break():
    s = np.random.default_rng(8).uniform(0, 1, 12).astype(np.float32)
    with pytest.raises(strider.TraceError, match="'total' holds values of different kinds"):
        strider.compile(nested_sums, strict=True)(s, 0.5)


def filled(s):
    keep = []
    i = 0
    while i < s.shape[0]:
        if s[i] > 0.5:
            keep.append(i)
        i += 1
    return keep


def copies_a_filled_list(s):
    keep = filled(s)
    return keep.copy(), keep


def pops_a_filled_list(s):
    keep = filled(s)
    return keep.pop(), keep


def int_ops_of_a_length(s):
    n = len(s[s > 0.5])  # a run-time length: int's own operations would see its bound
    return divmod(n, 2), round(n), n.real, n.conjugate(), n // 2, float(n)


def bit_length_of_a_length(s):
    return len(s[s > 0.5]).bit_length()


def test_lists_and_lengths_python_methods():
    s = np.array([0.9, 0.8, 0.1, 0.7, 0.2])
    check(copies_a_filled_list, s)
    check(int_ops_of_a_length, s)
    # the rest of list's API, int's bit methods: NumPy runs the call (it was an AttributeError, or
    # the bound's answer)
    for fn, what in ((pops_a_filled_list, r"list\.pop\(\)"), (bit_length_of_a_length, r"int\.bit_length\(\)")):
        with pytest.raises(strider.TraceError, match=what):
            strider.compile(fn, strict=True)(s)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", strider.GraphBreakWarning)
            assert str(strider.compile(fn, strict=False)(s)) == str(fn(s))


class _Post:
    """A post-processor object, as projects write them: its NMS a method with a loop on a traced
    value, called through self; a classmethod and a staticmethod with branches."""

    def __init__(self, thr):
        self.thr = thr

    def nms(self, dets):
        return _nms(dets[:, :4], dets[:, 4], self.thr)

    @classmethod
    def clipped(cls, x):
        if x.max() > 1.0:
            x = x / x.max()
        return x

    @staticmethod
    def positive(x):
        return x if x.min() >= 0 else x - x.min()

    def __call__(self, dets):
        return self.nms(dets), self.clipped(dets[:, 4] * 3), self.positive(dets[:, 0] - 50)


def run_post(post, dets):
    return post(dets)  # the object called: its __call__ rewritten, and the methods it calls


@pytest.mark.parametrize("thr", [0.3, 0.7])
def test_methods_called_through_self_are_rewritten(thr):
    d = boxes(12, 4)
    post = _Post(thr)
    want = post(d.copy())
    for fn, args in ((run_post, (post, d.copy())), (post.__call__, (d.copy(),))):
        got = strider.compile(fn, strict=True)(*args)
        assert [np.asarray(w).tolist() for w in want] == [np.asarray(g).tolist() for g in got]


# -- `return` inside loops: the loop leaves with a flag up and the function returns after it --

def first_index_over(x, t):
    for i in range(x.shape[0]):
        if x[i] > t:
            return i
    return -1


def doubled_over(x, t):
    i = 0
    while i < np.flatnonzero(x == x).size:
        v = x[i] * 2  # assigned before the return on every path: carried from a placeholder
        if v > t:
            return v
        i += 1
    return None  # a Choice with the trip's float32 scalar


def nms_top(dets, thr, top, as_list):
    x1, y1, x2, y2, scores = dets[:, 0], dets[:, 1], dets[:, 2], dets[:, 3], dets[:, 4]
    areas = (x2 - x1) * (y2 - y1)
    order = scores.argsort()[::-1]
    keep = []
    while order.size > 0:
        i = order[0]
        keep.append(i)
        if len(keep) >= top:
            return keep if as_list else np.array(keep)
        w = np.maximum(0.0, np.minimum(x2[i], x2[order[1:]]) - np.maximum(x1[i], x1[order[1:]]))
        h = np.maximum(0.0, np.minimum(y2[i], y2[order[1:]]) - np.maximum(y1[i], y1[order[1:]]))
        ovr = w * h / (areas[i] + areas[order[1:]] - w * h)
        order = order[np.where(ovr <= thr)[0] + 1]
    return keep if as_list else np.array(keep)


def first_cell_over(x, t):
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            v = x[i, j]
            if v > t:
                return i, j, v  # from the inner loop: both loops leave
        if x[i].sum() < 0:
            return i, -1, x[i, 0]
    return -1, -1, None


def assigned_in_the_returning_if(x, t):
    for i in range(x.shape[0]):
        if x[i] < 0:
            continue
        if x[i] > t:
            v = x[i:i + 2] * 2  # unassigned on the other side: merged from a placeholder
            return v, i
    return x[:1] * 0, -1


def returns_of_two_kinds(x, a, b, flag):
    if flag:
        k = 0
        while True:
            if x[k] > a:
                return "big", k
            if x[k] < b:
                return "small", x[k:k + 1].copy()
            k += 1
            if k == x.shape[0]:
                break
    return "none", None


def writes_then_returns(x, t):
    for k, v in enumerate(x):
        if v > t:
            return x.copy(), k
        x[k] = -1.0
    return None, -1


@pytest.mark.parametrize("t", [-1.0, 0.5, 0.99, 2.0])  # first trip, middle, last trips, never
def test_a_return_inside_a_loop(t):
    x = np.random.default_rng(3).uniform(0, 1, 40).astype(np.float32)
    check(first_index_over, x, t)
    check(doubled_over, x, 2 * t)
    check(assigned_in_the_returning_if, x - 0.2, t)
    check(writes_then_returns, x.copy(), t)
    check(first_cell_over, x.reshape(5, 8) - 0.1, t)
    for flag in (True, False):
        check(returns_of_two_kinds, x, t, t - 0.9, flag)


@pytest.mark.parametrize("top", [1, 3, 50])
@pytest.mark.parametrize("as_list", [True, False])
def test_nms_returning_from_inside_its_loop(top, as_list):
    check(nms_top, boxes(40, 5), 0.3, top, as_list)


def unassigned_when_returned(x, t):
    for i in range(x.shape[0]):
        if x[i] > t:
            v = x[i]
        if x[i] < -t:
            return v  # Python's UnboundLocalError where no element was above t first


def unassigned_after_a_long_loop(x, t):
    for i in range(x.shape[0]):
        if x[i] > t:
            v = x[i]
        if x[i] < -t:
            return v


@pytest.mark.parametrize("fn", [unassigned_when_returned, unassigned_after_a_long_loop])
@pytest.mark.parametrize("x", [[-0.5, 0.2, 0.9], [0.9, -0.5, 0.2], [0.1, 0.2, 0.3]],
                         ids=["unassigned", "assigned", "no_return"])
def test_a_return_reading_what_a_trip_may_not_have_assigned_is_not_carried(fn, x):
    """A trip may assign v, or not (the loop is traced from its first trip on, or a loop of the
    IR): v after it is neither a value nor surely unassigned, and the return breaks the graph."""
    x = np.repeat(np.array(x, np.float32), 1 if fn is unassigned_when_returned else 30)
    with pytest.raises(strider.TraceError, match="'v' is read where"):
        strider.compile(fn, strict=True)(x, 0.4)
    with pytest.warns(strider.GraphBreakWarning):
        if x[0] < 0:
            with pytest.raises(UnboundLocalError):
                strider.compile(fn, strict=False)(x, 0.4)
        else:
            np.testing.assert_array_equal(strider.compile(fn, strict=False)(x, 0.4), fn(x, 0.4))


def comprehensions_of_run_time_lengths(s, t):
    keep = []
    i = 0
    while i < np.flatnonzero(s > t).size:
        keep.append(i)
        i += 1
    idx = np.flatnonzero(s > t)
    return [int(v) for v in keep], [float(s[i]) * 2 for i in idx], np.array([s[i] for i in idx], np.float64)


@pytest.mark.parametrize("t", [0.5, 0.95, 2.0])  # many items, one, none
def test_comprehensions_over_run_time_lengths(t):
    check(comprehensions_of_run_time_lengths, np.random.default_rng(6).random(20).astype(np.float32), t)


def repeated_to_run_time_lengths(x, t):
    b = x[x > t]
    ones, halves, flags = [1] * len(b), b.shape[0] * [0.5], [True, False] * len(b)
    firsts = [x[0]] * len(b)  # NumPy scalars (WBF's `[l] * len(boxes_by_label)`)
    return ones, halves, np.array(flags, dtype=bool), len(ones) + len(flags), firsts, np.array(firsts)


def labels_by_class(confidences, boxes, t):
    # Ultra-Light-Fast-Generic-Face-Detector's predict: each class's survivors, their labels
    # listed by repeating the class a run-time number of times, a `continue` on a traced
    # condition, and an early return where no class kept anything
    picked_box_probs = []
    picked_labels = []
    for class_index in range(1, confidences.shape[1]):
        probs = confidences[:, class_index]
        mask = probs > t
        probs = probs[mask]
        if probs.shape[0] == 0:
            continue
        box_probs = np.concatenate([boxes[mask, :], probs.reshape(-1, 1)], axis=1)
        picked_box_probs.append(box_probs)
        picked_labels.extend([class_index] * box_probs.shape[0])
    if not picked_box_probs:
        return np.array([]), np.array([])
    picked_box_probs = np.concatenate(picked_box_probs)
    picked_box_probs[:, 0] *= 640
    return picked_box_probs, np.array(picked_labels)


def labels_per_image(confidences, boxes, t):
    # PicoDet's loop over a batch: per image, its classes' survivors (a list of arrays) and an
    # early return inside the loop where an image kept nothing; the images' results listed
    out_boxes_list, out_boxes_num = [], []
    for image in range(confidences.shape[0]):
        picked_box_probs, picked_labels = [], []
        for class_index in range(confidences.shape[2]):
            probs = confidences[image, :, class_index]
            mask = probs > t
            if probs[mask].shape[0] == 0:
                continue
            picked_box_probs.append(np.concatenate([boxes[image][mask], probs[mask].reshape(-1, 1)], axis=1))
            picked_labels.extend([class_index] * probs[mask].shape[0])
        if not picked_box_probs:
            return np.array([]), np.array([])
        picked_box_probs = np.concatenate(picked_box_probs)
        out_boxes_list.append(np.concatenate([np.array(picked_labels, dtype=np.float32)[:, None], picked_box_probs], 1))
        out_boxes_num.append(len(picked_labels))
    return np.concatenate(out_boxes_list, axis=0), np.asarray(out_boxes_num).astype(np.int32)


@pytest.mark.parametrize("t", [0.2, 0.95, 2.0], ids=["many", "few", "none"])
def test_lists_repeated_to_run_time_lengths(t):
    """`[c] * n` with n a run-time length is a list of that length (a TracedList), extended into
    a list, returned as Python's list and made an array as NumPy makes it."""
    rng = np.random.default_rng(8)
    check(repeated_to_run_time_lengths, rng.random(12), t)
    check(labels_by_class, rng.random((30, 4)).astype(np.float32), boxes(30)[:, :4], t)
    check(labels_per_image, rng.random((2, 20, 3)).astype(np.float32), np.stack([boxes(20)[:, :4]] * 2), t)


@pytest.mark.parametrize("fn", [lambda x: [x[0], 1.0] * x[x > 0].shape[0], lambda x: (1,) * x[x > 0].shape[0],
                                lambda x: "ab" * x[x > 0].shape[0]], ids=["two_kinds", "tuple", "str"])
def test_what_a_run_time_repetition_cannot_hold_breaks_the_graph(fn):
    with pytest.raises(strider.TraceError, match="repeating a list, tuple or string"):
        strider.compile(fn, strict=True)(np.array([0.5, -1.0, 2.0]))


def numbers_of_kinds_made_arrays(a, b):
    x1 = max(0, (a[0] + b[0] + 0.5) * 4 - b[1] / 2)  # a Python int or a float64 scalar
    x2 = min(x1 + b[1], 20)  # an int, a float32 or a float64 scalar
    return np.asarray([x1, x2, b[1]], dtype=np.float32), np.array([x1, b[0]]), np.array([[x2], [x1]], np.int32)


def kinds_decide_the_dtype(a, b):
    return np.array([max(0, b[0])])  # int64 or float32: the run decides


@pytest.mark.parametrize("b", [[0.5, 0.25], [-50.0, 30.0], [9.0, 0.5]])
def test_numbers_of_several_kinds_made_arrays(b):
    check(numbers_of_kinds_made_arrays, np.array([3, 1]), np.array(b, np.float32))
    with pytest.raises(strider.TraceError, match="np.array of numbers whose kinds are known only when"):
        strider.compile(kinds_decide_the_dtype, strict=True)(np.array([3, 1]), np.array(b, np.float32))


def boxes_from_heatmap(heatmap, scale, size, threshold):
    # CenterFace's decode: a row per peak built from builtin max/min of Python ints and NumPy
    # scalars (numbers whose kinds the run decides), the lists returned as they are where no
    # peak passed the threshold
    c0, c1 = np.where(heatmap > threshold)
    boxes, lms = [], []
    if len(c0) > 0:
        for i in range(len(c0)):
            s0, s1 = np.exp(scale[0, c0[i], c1[i]]) * 4, np.exp(scale[1, c0[i], c1[i]]) * 4
            s = heatmap[c0[i], c1[i]]
            x1, y1 = max(0, (c1[i] + 0.5) * 4 - s1 / 2), max(0, (c0[i] + 0.5) * 4 - s0 / 2)
            x1, y1 = min(x1, size[1]), min(y1, size[0])
            boxes.append([x1, y1, min(x1 + s1, size[1]), min(y1 + s0, size[0]), s])
            lm = []
            for j in range(2):
                lm.append(scale[j, c0[i], c1[i]] * s1 + x1)
            lms.append(lm)
        boxes = np.asarray(boxes, dtype=np.float32)
        lms = np.asarray(lms, dtype=np.float32)
        order = boxes[:, 4].argsort()[::-1]
        boxes, lms = boxes[order], lms[order]
    return boxes, lms


def mixed_list_returned(x, t):
    out = []
    for v in x[x > t]:
        out.append(max(0, v - 0.5))
    return out


@pytest.mark.parametrize("threshold", [0.5, 0.95, 2.0], ids=["many", "few", "none"])
def test_rows_of_numbers_of_several_kinds(threshold):
    rng = np.random.default_rng(11)
    heatmap = (rng.random((12, 16)) ** 4).astype(np.float32)
    scale = (rng.standard_normal((2, 12, 16)) * 0.3 + 2).astype(np.float32)
    check(boxes_from_heatmap, heatmap, scale, (48, 64), threshold)


def test_lists_filled_in_a_loop_over_a_run_time_length_have_room_for_it():
    """The loop's trips are at most the length's bound: its lists (made by the branch around it)
    get room for them, so that a call with hundreds of peaks is traced once, not grown."""
    rng = np.random.default_rng(12)
    heatmap = rng.random((30, 40)).astype(np.float32)
    scale = (rng.standard_normal((2, 30, 40)) * 0.3 + 2).astype(np.float32)
    f = check(boxes_from_heatmap, heatmap, scale, (120, 160), 0.2)  # about 960 peaks
    assert f.stats()["regrown"] == 0


def test_a_list_of_numbers_of_several_kinds_returned_runs_in_numpy_unless_empty():
    """Its items' kinds are the run's: an empty one is returned compiled, another runs in NumPy."""
    x = np.array([0.2, 0.7, 0.9], np.float32)
    check(mixed_list_returned, x, 1.0)
    with pytest.raises(ValueError, match="returned"):
        strider.compile(mixed_list_returned, strict=True)(x, 0.1)
    with pytest.warns(strider.GraphBreakWarning):
        out = strider.compile(mixed_list_returned, strict=False)(x, 0.1)
    assert out == mixed_list_returned(x, 0.1) and [type(v) for v in out] == [int, np.float32, np.float32]


def precision_recall_per_class(tp, conf, pred_cls, target_cls):
    # PyTorch-YOLOv3's ap_per_class: `0` appended where a class has no predictions or no ground
    # truth, a float64 elsewhere; np.array of each list has the dtype of the kinds a call appended
    i = np.argsort(-conf)
    tp, conf, pred_cls = tp[i], conf[i], pred_cls[i]
    unique_classes = np.unique(target_cls)
    p, r = [], []
    for c in unique_classes:
        i = pred_cls == c
        n_gt = (target_cls == c).sum()
        n_p = i.sum()
        if n_p == 0 and n_gt == 0:
            continue
        elif n_p == 0 or n_gt == 0:
            r.append(0)
            p.append(0)
        else:
            tpc = tp[i].cumsum()
            r.append((tpc / (n_gt + 1e-16))[-1])
            p.append((tpc / np.arange(1, tpc.size + 1))[-1])
    p, r = np.array(p), np.array(r)
    return p, r, 2 * p * r / (p + r + 1e-16)


def kinds_in_order(x, t):
    out = []
    for v in x:
        if v > t:
            out.append(v)  # a float32
        elif v < -t:
            out.append(v < -2 * t)  # a bool
        else:
            out.append(1)
    return np.array(out)


@pytest.mark.parametrize("shift,classes", [(0, 6), (0, 5), (10, 6), (0, 0)],
                         ids=["some_zero", "all_floats", "all_zero", "no_classes"])
def test_a_list_of_numbers_of_several_kinds_made_an_array(shift, classes):
    """Its dtype is the kinds' a call appended: compiled where that is the widest (or the list is
    empty: float64), else the call runs in NumPy (strict: ValueError)."""
    rng = np.random.default_rng(13)
    tp = (rng.random(60) > 0.4).astype(np.float64)
    conf, pred_cls = rng.random(60), rng.integers(0, 5, 60).astype(np.float64) + shift
    target_cls = rng.integers(0, classes, 20 if classes else 0).astype(np.float64)
    if shift:  # every class has ground truth but no prediction: lists of ints, an int64 array
        with pytest.raises(ValueError, match="numbers of several kinds"):
            strider.compile(precision_recall_per_class, strict=True)(tp, conf, pred_cls, target_cls)
    check(precision_recall_per_class, tp, conf, pred_cls, target_cls, strict=not shift)


@pytest.mark.parametrize("x,compiled", [([0.5, -0.7, 0.1], True), ([0.5, 0.2, 0.1], True), ([0.5, 0.9], False),
                                        ([-0.5, -0.2], False), ([], True)],
                         ids=["three_kinds", "float32_int", "float32", "bools", "empty"])
def test_the_dtype_of_a_list_of_three_kinds_is_the_kinds_a_call_appended(x, compiled):
    x = np.array(x, np.float32)
    check(kinds_in_order, x, 0.3, strict=compiled)
    if not compiled:
        with pytest.raises(ValueError, match="numbers of several kinds"):
            strider.compile(kinds_in_order, strict=True)(x, 0.3)


def best_uncovered_match(ious, covered, thr):
    # mmdet's tpfp_imagenet: per detection, the best uncovered ground truth over its threshold
    # (`continue` then `elif` in a loop of the IR: the branch carries what the next trip reads)
    matches = []
    for i in range(ious.shape[0]):
        max_iou = -1
        matched_gt = -1
        for j in range(ious.shape[1]):
            if covered[j]:
                continue
            elif ious[i, j] >= thr and ious[i, j] > max_iou:
                max_iou = ious[i, j]
                matched_gt = j
        if matched_gt >= 0:
            covered[matched_gt] = True
        matches.append(matched_gt)
    return matches, max_iou


@pytest.mark.parametrize("thr", [0.3, 0.9, 1.1])
def test_a_branch_carries_what_the_next_trip_reads(thr):
    rng = np.random.default_rng(12)
    check(best_uncovered_match, rng.random((6, 12)).astype(np.float32), rng.random(12) > 0.6, thr)


def kept_or_empty(scores, t):
    # DeepSORT's non_max_suppression's shape: the list a loop fills inside the branch an early
    # return makes is returned as it is
    s = scores[scores > t]
    if len(s) == 0:
        return []
    pick = []
    order = np.argsort(s)
    while len(order) > 0:
        pick.append(order[-1])
        order = order[:-1][s[order[:-1]] < s[order[-1]] - 0.1]
    return pick


def malisiewicz_of_a_mask(dets, t):
    return nms_malisiewicz(dets[dets[:, 4] > t][:, :4], 0.5)


@pytest.mark.parametrize("t", [0.3, 2.0], ids=["some", "none"])
def test_a_list_a_loop_fills_inside_a_branch_is_returned(t):
    d = boxes(40, 15)
    check(kept_or_empty, d[:, 4], t)
    check(malisiewicz_of_a_mask, d, t)


def mean_aps(ap, num_gts):
    # mmdet's eval_map with scale ranges: a float32 mean where a class has ground truth, else 0.0
    mean_ap = []
    for i in range(ap.shape[1]):
        if np.any(num_gts[:, i] > 0):
            mean_ap.append(ap[num_gts[:, i] > 0, i].mean())
        else:
            mean_ap.append(0.0)
    return mean_ap


def test_a_returned_list_of_numbers_of_run_time_kinds_names_the_function():
    ap, gts = np.array([[0.5, 0.25], [0.75, 0.5]], np.float32), np.array([[1, 0], [2, 0]])
    with pytest.raises(ValueError, match=r"returned by the function at test_control_flow\.py:"
                       + str(mean_aps.__code__.co_firstlineno)):
        strider.compile(mean_aps, strict=True)(ap, gts)
    check(mean_aps, ap, gts, strict=False)


def array_of_a_filled_list(s, t, rows):
    keep = []
    for i in np.flatnonzero(s > t):
        keep.append(s[i] * np.ones(2, s.dtype) if rows else s[i])
    return np.array(keep), np.asarray(keep, np.float32)


@pytest.mark.parametrize("rows", [False, True])
def test_an_empty_filled_list_made_an_array_runs_in_numpy(rows):
    # NumPy's np.array([]) is float64 of shape (0,), whatever the items would have been: an empty
    # list's call runs in NumPy (strict: ValueError), a full one's is compiled
    s = np.random.default_rng(7).random(12).astype(np.float32)
    g = strider.compile(array_of_a_filled_list, strict=False)
    for t, breaks in ((0.5, 0), (2.0, 1)):
        want = array_of_a_filled_list(s, t, rows)
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            got = g(s, t, rows)
        for w, x in zip(want, got):
            assert x.dtype == w.dtype and x.shape == w.shape and np.array_equal(x, w)
        assert g.stats()["runtime_breaks"] == breaks
        assert [str(w.message).split(": NumPy's")[0] for w in said] == (
            [f"strider.compile: array_of_a_filled_list: np.array of a list of a run-time length, empty when the function "
             f"runs, at test_control_flow.py:{array_of_a_filled_list.__code__.co_firstlineno + 4}"] if breaks else [])
    with pytest.raises(ValueError, match="np.array of a list of a run-time length, empty when the function runs"):
        strider.compile(array_of_a_filled_list, strict=True)(s, 2.0, rows)


def rows_of_masks_zipped(boxes, scores, t, u):
    # enumerate(zip(...)) of a mask's rows, and zip of two masks' rows (as many as the shorter)
    m = scores > t
    out = []
    for i, (b, s) in enumerate(zip(boxes[m], scores[m])):
        out.append((i, b[0] + b[2], s))
    pairs = []
    for a, b in zip(scores[scores > t], scores[scores > u]):
        pairs.append(a - b)
    return out, np.array(pairs, dtype=np.float32)


@pytest.mark.parametrize("t,u", [(0.3, 0.6), (0.6, 0.3), (2.0, 0.1)])
def test_zip_of_rows_of_run_time_lengths(t, u):
    d = boxes(12, 13)
    check(rows_of_masks_zipped, d[:, :4], d[:, 4], t, u)


def sorted_by_traced_keys(scores, rows):
    by_score = sorted(range(len(scores)), key=lambda i: scores[i], reverse=True)
    firsts = sorted(list(scores[:4]))
    three = sorted([scores[0], scores[1], scores[2]], reverse=True)
    ranked = sorted(list(rows), key=lambda r: r[4], reverse=True)
    return by_score[:5], firsts, three, np.stack(ranked)


def types_of_traced_values(a, n):
    keep = []
    for i in range(n):
        if a[i % 3] > 0.5:
            keep.append(i)
    if type(a) is np.ndarray:  # the branch NumPy's run takes
        return type(a[0]), type(float(a[0])), type(a.sum()) is np.float32, type(keep) is list, a * 2
    return a + 100


def test_type_of_traced_values_is_numpys():
    check(types_of_traced_values, np.array([0.2, 0.7, 0.9], np.float32), 7)


def kept_by_plus_equals(scores, t):
    # `keep += [i]` is keep.extend([i]): a list the loop carries, as its appends
    keep, pairs = [], []
    i = 0
    while i < scores.shape[0]:
        if scores[i] > t:
            keep += [i]
            pairs += (float(scores[i]), i * 0.5)
        i += 1
    return keep, pairs


def test_a_list_extended_by_plus_equals_in_a_traced_loop():
    s = np.array([0.3, 0.9, 0.2, 0.1, 0.8, 0.5])
    for t in (0.4, 0.95):
        check(kept_by_plus_equals, s, t)


def sorted_records(scores, rows):
    # (score, box, index) records, as detection code sorts them: each position keeps its kind
    dets = [(scores[i], rows[i, :4], i) for i in range(len(scores))]
    dets.sort(key=lambda d: d[0], reverse=True)
    pairs = sorted([(float(scores[i]), [float(v) for v in rows[i, :2]]) for i in range(len(scores))],
                   key=lambda d: -d[0])
    by_tuple = sorted([(scores[i], -i) for i in range(len(scores))], reverse=True)  # Python's tuple order
    return [d[2] for d in dets], np.stack([d[1] for d in dets]), pairs, by_tuple


@pytest.mark.parametrize("ties", [False, True])
def test_sorted_by_keys_known_at_run_time(ties):
    """Builtin sorted by traced keys: a stable argsort (reverse=True keeps equal keys' order,
    as Python's); NaN keys run the call in NumPy."""
    s = np.array([0.3, 0.9, 0.3, 0.1, 0.9, 0.5] if ties else [0.3, 0.9, 0.2, 0.1, 0.8, 0.5], np.float32)
    rows = np.hstack([boxes(6, 14)[:, :4], s[:, None]])
    check(sorted_by_traced_keys, s, rows)
    check(sorted_records, s, rows)
    s[2] = np.nan
    with pytest.raises(ValueError, match="NaN key"):
        strider.compile(sorted_by_traced_keys, strict=True)(s, rows)


def sorted_array_rows(b, s):
    # PaddleOCR's sorted_boxes: sorted() of an (n, 4, 2) array by its rows' first points
    return (np.array(sorted(b, key=lambda x: (x[0][1], x[0][0]))), sorted(s), sorted(s, reverse=True),
            sorted(b[:, 0, 0]))


def test_sorted_of_an_array():
    b = np.zeros((5, 4, 2), np.float32)
    b[:, 0, 1] = [20, 10, 20, 10, 15]
    b[:, 0, 0] = [5, 7, 1, 3, 3]
    check(sorted_array_rows, b, np.array([0.5, -1.0, 0.5, 2.0]))


def begin_point(c):
    x1, y1, x2, y2 = c
    return min(x1, x2) + max(y1, y2)


def mapped(a, t):
    # mmrotate's list(map(get_best_begin_point_single, coordinates.tolist())): the function map
    # calls is the user's, rewritten as a call of it is
    return (list(map(begin_point, a.tolist())), list(map(begin_point, a)), list(map(int, a[0])),
            list(filter(None, [t, 0.0, t])))


def test_map_and_filter_call_the_users_functions_as_calls_do():
    a = np.array([[3.0, 1.0, 2.0, 5.0], [0.5, 4.0, 1.5, 2.0], [2.0, 2.0, 1.0, 9.0]], np.float32)
    check(mapped, a, 6.0)


def ratio_or_zero(g, p):
    union = g[0] + p[0]
    if union == 0:
        return 0
    return g[1] / union


def array_of_kinds_per_item(S):
    # EAST's standard_nms: np.array([intersection(...) for t in order[1:]]), 0 or a float64 each
    S = S[S[:, 1] > 0.1]
    order = np.argsort(S[:, 1])[::-1]
    return np.array([ratio_or_zero(S[order[0]], S[t]) for t in order[1:]])


def array_of_kinds_per_item_typed(S):
    S = S[S[:, 1] > 0.1]
    order = np.argsort(S[:, 1])[::-1]
    return np.array([ratio_or_zero(S[order[0]], S[t]) for t in order[1:]], dtype=np.float64)


def test_np_array_of_a_list_of_numbers_of_kinds_the_run_decides():
    S = np.random.default_rng(0).random((6, 2))
    with pytest.raises(strider.TraceError, match="np.array of a list whose items hold numbers of kinds known only "
                       "when the function runs .*; give np.array a dtype"):
        strider.compile(array_of_kinds_per_item, strict=True, target=TARGET)(S)
    check(array_of_kinds_per_item_typed, S)


def mini_boxes(pts, s):
    # DBNet's get_mini_boxes: points of a list indexed by positions a traced branch sets (the
    # points of cv2.boxPoints, a new array)
    points = sorted(list(pts + 0), key=lambda x: x[0])
    if points[1][1] > points[0][1]:
        index_1, index_4 = 0, 1
    else:
        index_1, index_4 = 1, 0
    if points[3][1] > points[2][1]:
        index_2, index_3 = 2, 3
    else:
        index_2, index_3 = 3, 2
    box = [points[index_1], points[index_2], points[index_3], points[index_4]]
    k = int(pts[0, 0] > s)
    return box, [0.5, 1.5, 2.5][k], (3, 4, 5)[k + 1], [pts[0, 0] * 1, pts[1, 1] * 2][k], [float(s), 2.0][k]


def item_of_an_argument(pts):
    return [pts[0], pts[1]][int(pts[0, 0] > 2)]  # NumPy's is a view of pts


def item_past_the_end(pts):
    return [1.0, 2.0][int(pts[0, 0])]


def item_read_after_a_write(pts):
    lst = [pts[0] * 1, pts[1] * 1]
    p = lst[int(pts[0, 0] > 2)]
    lst[0][0] = 99.0
    return p + 1


def item_written(pts):
    lst = [pts[0] * 1, pts[1] * 1]
    p = lst[int(pts[0, 0] > 2)]
    p[0] = 5
    return lst


@pytest.mark.parametrize("flip", [False, True])
def test_a_list_at_an_index_only_the_run_knows(flip):
    """lst[k] of a list of numbers of one type or of arrays of one shape, k known only when the
    function runs: the item gathered (a copy of the list's own array: reading it after a write
    into the list's arrays, or writing into it, breaks the graph)."""
    pts = np.array([[3.0, 1.0], [1.0, 4.0], [2.0, 0.5], [5.0, 2.0]], np.float32)
    if flip:
        pts[:, 1] = pts[::-1, 1]
    check(mini_boxes, pts, 2.5)
    check(mini_boxes, pts, 0.5)
    check_raises(item_past_the_end, pts, exc=IndexError)
    for fn, refusal in ((item_read_after_a_write, "a list's item .* is read after that array was written"),
                        (item_written, "writing into a value that strider holds in a copy"),
                        (item_of_an_argument, "returns a value that NumPy holds in an argument's memory")):
        with pytest.raises(strider.StriderError, match=refusal):
            strider.compile(fn, strict=True, target=TARGET)(pts)
        check(fn, pts, strict=False)


def sorted_kept_rows(dets, thr, ties, col=4):
    # a filter of rows then Python's sort of them by score, as tracker and demo code writes it
    dets = [d for d in dets if d[col] > thr]
    dets = sorted(dets, key=lambda d: d[4], reverse=True)
    scores = sorted([d[4] * 0.0 + ties if ties else d[4] for d in dets])
    firsts = sorted([int(d[0]) % 3 for d in dets], reverse=True)
    two = sorted(firsts[:2])  # (a slice of such a list)
    if len(dets) == 0:
        return np.zeros((0, 5), dtype=np.float32), scores, firsts, two
    return np.stack(dets, 0), scores, firsts, two


@pytest.mark.parametrize("thr", [0.2, 0.85, 2.0])
def test_sorted_of_a_list_filled_at_run_time(thr):
    """sorted() of a list a traced loop filled (here a filtering comprehension of rows): each
    item's key by a loop of the IR, the stable order Python's sort gives (reverse=True keeps
    equal keys' order), the items gathered into a list of as many; Python numbers stay Python
    numbers. NaN keys run the call in NumPy."""
    s = np.array([0.3, 0.9, 0.3, 0.1, 0.9, 0.5], np.float32)
    rows = np.hstack([boxes(6, 14)[:, :4] * 10, s[:, None]])
    for ties in (0.0, 1.0):
        check(sorted_kept_rows, rows, thr, ties)
    rows[1, 4] = np.nan
    with pytest.raises(ValueError, match="NaN key"):
        strider.compile(sorted_kept_rows, strict=True)(rows, -1.0, 0.0, 0)


def segment2box(segment, width=640, height=640):
    # YOLOv5's segment2box: builtin any of a mask's result picks the branch
    x, y = segment.T
    inside = (x >= 0) & (y >= 0) & (x <= width) & (y <= height)
    x, y = x[inside], y[inside]
    return np.array([x.min(), y.min(), x.max(), y.max()]) if any(x) else np.zeros((1, 4))


def truths(x):
    return any(x > 2), all(x > -5), any(x[x > 100]), all(x[x > 100]), any([1, 0]), all(x[:0])


@pytest.mark.parametrize("shift", [0.0, -2000.0], ids=["inside", "none_inside"])
def test_builtin_any_and_all_of_traced_arrays(shift):
    rng = np.random.default_rng(14)
    check(segment2box, rng.random((20, 2)) * 800 - 50 + shift)
    check(truths, rng.random(5) * 4)


def non_decreasing(r):
    # TF OD API's compute_average_precision
    if not all(r[i] <= r[i + 1] for i in range(len(r) - 1)):
        raise ValueError("recall must be a non-decreasing array")
    return r * 2


def truth_folds(x):
    return (any(x[i] > 0.5 for i in range(3)), all([x[0] > 0, x[1] > 0, True]), any((x[0] > 9, 1)),
            all(v > -1 for v in x[:4]), any([]), all(x[i] > 0.1 for i in range(0)), any([x[0] > 2, 0]))


def truth_of_gathered_items(x, idx):
    return all(x[idx[i]] > 0 for i in range(3))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_builtin_any_and_all_of_generators_and_lists(seed):
    rng = np.random.default_rng(seed)
    check(truth_folds, rng.random(6) * 2 - 0.5)
    r = np.sort(rng.random(50))
    check(non_decreasing, r)
    check_raises(non_decreasing, r[::-1].copy(), exc=ValueError)
    # a long generator's items would each be traced: a graph break
    r = np.sort(rng.random(500))
    with pytest.raises(strider.TraceError, match=r"all\(\) of a generator of more than 64 traced items"):
        strider.compile(non_decreasing, strict=True, target=TARGET)(r)
    check(non_decreasing, r, strict=False)


def test_a_check_in_an_item_python_may_not_compute_breaks_the_graph():
    # all() stops at the first false item: the index checks of the items after one only the run
    # decides would raise where Python's run never computes them
    x, idx = np.array([-1.0, 2.0]), np.array([0, 5, 1])
    with pytest.raises(strider.TraceError, match=r"an index known only when the function runs, checked in an "
                       r"item of all\(\) after one only the run decides"):
        strider.compile(truth_of_gathered_items, strict=True, target=TARGET)(x, idx)
    check(truth_of_gathered_items, x, idx, strict=False)


def sums_and_extremes(x, rows, t):
    y = x[x > t]  # a run-time length, which may be 0
    r = rows[rows[:, 0] > t]
    return (sum(y), sum(x), sum(y, 10), sum(x, start=0.5), sum(x > t), sum(r), sum(rows), max(x), min(x),
            max(y, default=-1), min(y, default=None), max(x[:1]))


def extreme_of_no_items(x, t):
    return max(x[x > t])


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int8, np.uint8, np.int64, np.bool_])
@pytest.mark.parametrize("t", [-1000.0, 0.0, 1000.0], ids=["all", "some", "none"])
def test_builtin_sum_max_and_min_of_traced_arrays(dtype, t):
    # Python's folds over the items: sum in order (not np.sum's pairwise order: 3000 float32s
    # round apart), max and min the first of the best, a NaN only where it is first, -0.0 and
    # 0.0 the first of them
    rng = np.random.default_rng(16)
    x = (rng.standard_normal(3000) * 100).astype(dtype)
    if dtype in (np.float32, np.float64, np.float16):
        x[[5, 9]] = np.nan, 0.0
        x[10] = -0.0
    rows = (rng.standard_normal((40, 3)) * 100).astype(dtype)
    if dtype is np.float32:
        assert sum(x[x > 0]) != np.sum(x[x > 0])
    check(sums_and_extremes, x, rows, t)
    check(sums_and_extremes, x[::-1].copy(), rows, t)
    if dtype in (np.float32, np.float64):
        check(sums_and_extremes, np.array([np.nan, 1, 2], dtype), rows, t)
        check(sums_and_extremes, np.array([-0.0, 0.0, -0.0], dtype), rows, t)


def test_builtin_max_of_no_items_raises_pythons_error():
    check_raises(extreme_of_no_items, np.arange(5.0), 10.0, exc=ValueError)
    with pytest.raises(ValueError, match=r"max\(\) arg is an empty sequence"):
        strider.compile(extreme_of_no_items, target=TARGET)(np.arange(5.0), 10.0)
    check(extreme_of_no_items, np.arange(5.0), 3.0)


def membership(cls, c, scores):
    # YOLOv5's ap_per_class: `if k in unique_classes`; NumPy's `in` is (a == k).any()
    u = np.unique(cls)
    keep = []
    for i in range(cls.shape[0]):
        if scores[i] > 0.5:
            keep.append(int(cls[i]))
    return (c in u), (c not in u), (3 in cls), [k for k in (0, 1, 7) if k in cls], 2.0 in [1.0, 2.0], 3 in keep


def among_numbers(x):
    # a function with no other construct to rewrite than `in`
    return x[0] in [1, 2, 3], x[1] not in (0.5, 2.0), 2 in (x[0], x[1]), x[0] in [np.float32(2)], np.nan in [x[0]]


def among_numbers_branch(x):
    if int(x[0]) in (1, 2):  # bes's check_box
        return x * 2
    return x + 1


@pytest.mark.parametrize("c", [3, 9])
def test_in_of_traced_arrays_and_lists(c):
    rng = np.random.default_rng(15)
    check(membership, rng.integers(0, 5, 12), c, rng.random(12))


@pytest.mark.parametrize("x", [[2.0, 0.5], [7.0, 1.0], [np.nan, 2.0], [1.5, 2.0]])
def test_a_traced_number_in_a_list_of_numbers(x):
    check(among_numbers, np.array(x))
    check(among_numbers, np.array(x, np.float32))
    if not np.isnan(x[0]):
        check(among_numbers_branch, np.array(x))


def kinds_then_another(x):
    out = []
    for v in x:
        if v > 0.5:
            out.append(0)
        else:
            out.append(v)
    out.append(np.float32(1))
    return np.array(out)


def test_a_list_of_several_kinds_takes_no_new_kind_after_its_loop():
    with pytest.raises(strider.TraceError, match="after the loop that filled it"):
        strider.compile(kinds_then_another, strict=True)(np.array([0.2, 0.7]))
    check(kinds_then_another, np.array([0.2, 0.7]), strict=False)


def _predict(boxes, scores, threshold):
    # Ultra-Light's predict: an early return of empty arrays where nothing passes
    keep = scores > threshold
    picked = boxes[keep]
    if picked.shape[0] == 0:
        return np.array([]), np.array([]), np.array([])
    return picked, np.nonzero(keep)[0], scores[keep]


def predicted(boxes, scores, threshold):
    picked, labels, probs = _predict(boxes, scores, threshold)
    return picked * 2, labels + 1, probs, len(_predict(boxes, scores, threshold))


@pytest.mark.parametrize("threshold", [0.5, 2.0], ids=["some", "none"])
def test_a_tuple_returned_early_unpacks_item_by_item(threshold):
    rng = np.random.default_rng(16)
    check(predicted, rng.random((8, 4)), rng.random(8), threshold)


def items_of_tuples_alike(x):
    # SSD's `return keep, 0` on one path and `keep, 1` on another: read by index and by key
    keep = x > 0.5
    r = (keep, 0) if x.sum() > 3 else (keep, 1)
    d = {"a": x + 1, "n": 2} if x.sum() > 3 else {"a": x - 1, "n": 3}
    return r[0].sum() + r[-1], r[:1][0] * 1, d["a"] * d["n"], len(r)


@pytest.mark.parametrize("scale", [1.0, 0.05])
def test_items_of_tuples_and_dicts_alike_on_both_sides_of_a_branch(scale):
    check(items_of_tuples_alike, np.random.default_rng(2).random(10) * scale)


def write_through_an_unpacked_item(x):
    a, _ = (x, 0) if x.sum() > 3 else (x, 1)
    a[1] = 7.0  # NumPy's a is x itself; strider's a copy: refused, never lost
    return x


def read_of_an_item_after_a_write(x):
    keep = x.copy()
    r = (keep, 0) if x.sum() > 3 else (keep, 1)
    keep[0] = 100.0  # NumPy's r[0] shows it; strider's copy would not: refused
    return r[0] + 0


@pytest.mark.parametrize("fn", [write_through_an_unpacked_item, read_of_an_item_after_a_write])
def test_an_item_of_tuples_alike_is_a_copy_that_is_never_stale(fn):
    with pytest.raises(strider.TraceError, match="strider holds in a copy"):
        strider.compile(fn, strict=True)(np.ones(5))
    check(fn, np.ones(5), strict=False)


class BoxList:
    # TF OD API's box list: fields in a dict, returned early as the caller's boxes
    def __init__(self, boxes):
        self.data = {"boxes": boxes}

    def num_boxes(self):
        return self.data["boxes"].shape[0]

    def get(self):
        return self.data["boxes"]

    def add_field(self, key, value):
        self.data[key] = value

    def get_field(self, key):
        if not self.has_field(key):
            raise ValueError(f"field {key} does not exist")
        return self.data[key]

    def has_field(self, key):
        return key in self.data

    def __getitem__(self, mask):  # Python calls these itself: strider rewrites them still
        if mask.sum() > 0:
            return _boxes_with_scores(self.get()[mask], self.get_field("scores")[mask])
        return self

    def __add__(self, other):
        if other.num_boxes() > 0:
            return _boxes_with_scores(np.concatenate([self.get(), other.get()]),
                                      np.concatenate([self.get_field("scores"), other.get_field("scores")]))
        return self

    def __contains__(self, score):
        if (self.get_field("scores") > score).any():
            return True
        return False


def _boxes_with_scores(boxes, scores):
    out = BoxList(boxes)
    out.add_field("scores", scores)
    return out


def _pruned(boxlist, thresh):
    if boxlist.get_field("scores").max() < thresh:
        return boxlist
    keep = np.nonzero(boxlist.get_field("scores") > thresh)[0]
    return _boxes_with_scores(boxlist.get()[keep], boxlist.get_field("scores")[keep])


def objects_on_both_sides(boxes, scores, t):
    r = _pruned(_boxes_with_scores(boxes, scores), t)
    masked = _boxes_with_scores(boxes * 1, scores * 1)[scores > t]
    both = masked + r
    return (r.get() * 1, r.get_field("scores") + 0, r.num_boxes(), isinstance(r, BoxList), both.num_boxes(),
            both.get_field("scores") * 1, 0.7 in r, 0.7 not in masked)


@pytest.mark.parametrize("t", [0.5, 2.0])
def test_objects_of_one_class_on_both_sides_of_a_branch_and_their_operators(t):
    rng = np.random.default_rng(8)
    check(objects_on_both_sides, rng.random((10, 4)), rng.random(10), t)


def the_callers_object_or_a_new_one(boxlist, t):
    # TF OD API's non_max_suppression: the caller's BoxList where nothing is pruned
    keep = np.nonzero(boxlist.get_field("scores") > t)[0]
    if keep.size == 0:
        out = boxlist
    else:
        out = _boxes_with_scores(boxlist.get()[keep], boxlist.get_field("scores")[keep])
    return out.get() * 1, out.get_field("scores") + 0, out.num_boxes(), out.has_field("labels")


@pytest.mark.parametrize("t", [0.5, 2.0])
def test_the_callers_object_and_a_new_one_of_its_class_on_two_sides(t):
    rng = np.random.default_rng(8)
    check(the_callers_object_or_a_new_one, _boxes_with_scores(rng.random((10, 4)), rng.random(10)), t)


def _picks(boxes):
    # facenet's detect_face nms: an empty 2-d float64 array where no box is left, else 1-d int16 picks
    if boxes.size == 0:
        return np.empty((0, 3))
    return np.argsort(boxes[:, 4]).astype(np.int16)


def sizes_of_arrays_of_two_ndims(boxes, t):
    pick = _picks(boxes[boxes[:, 4] > t])
    return pick.size, len(pick), pick.size * 2 + 1, np.zeros(len(pick)) + 1


@pytest.mark.parametrize("t", [0.5, 2.0, -1.0])  # some boxes, none, all
def test_size_and_len_of_arrays_of_two_ndims_on_two_paths(t):
    check(sizes_of_arrays_of_two_ndims, np.random.default_rng(0).uniform(0, 1, (6, 5)), t)


def arrays_of_two_dtypes(x, t):
    m = np.stack([x, x], 1)
    if x.sum() > t:
        m = m.astype(np.int32)
    r = (x[x > 0.2], 0) if x.sum() > t else (x[x > 0.4], 1)
    return m[:, 0] * 2, m.T + 0, m.sum(), m.max(0), m.shape[0] + 1, r[0].sum() + r[1], r[0].shape[0] * 2


@pytest.mark.parametrize("t", [0.5, 200.0])
def test_arrays_of_two_kinds_read_on_each_side(t):
    check(arrays_of_two_dtypes, np.random.default_rng(9).random(6) * 10, t)


def kinds_asked(x, t):
    y = x[x > t]
    o = y if len(y) > 2 else None
    s = y.max() if len(y) else np.float64(0.5)
    return o is None, o is not None, type(s).__name__, type(o if o is not None else y).__name__


@pytest.mark.parametrize("t", [0.5, 2.0])
def test_is_none_is_pythons_bool_and_type_is_the_sides_own(t):
    check(kinds_asked, np.random.default_rng(3).random(8), t)


def type_of_two_kinds(x, t):
    s = x.max() if x.sum() > t else 0
    return type(s).__name__


def test_the_type_of_a_value_of_two_kinds_is_refused():
    with pytest.raises(strider.TraceError, match="holds a NumPy float64 scalar or a Python int"):  # (was 'Choice')
        strider.compile(type_of_two_kinds, strict=True)(np.ones(3), 1.0)


def write_through_a_view_of_two_kinds(x, t):
    m = np.stack([x, x], 1)
    if x.sum() > t:
        m = m.astype(np.int32)
    c = m[:, 0]
    c[0] = 5  # NumPy's c is a view of m's
    return m


def test_a_write_through_a_view_of_arrays_of_two_kinds_is_refused():
    with pytest.raises(strider.TraceError, match="'m\\[...\\]' holds a 1-d int32 array or a 1-d float64 array"):
        strider.compile(write_through_a_view_of_two_kinds, strict=True)(np.ones(3), 0.5)
    check(write_through_a_view_of_two_kinds, np.ones(3), 0.5, strict=False)


def columns_if_over(x, t):
    if x.sum() > t:
        return x[:, [0, 13]]  # out of range: NumPy raises only where this side runs
    return x[:, :2] * 1


def test_an_index_out_of_range_on_one_side_of_a_branch_raises_where_it_runs():
    x = np.arange(20.0).reshape(2, 10)
    check(columns_if_over, x, 1e9)
    check_raises(columns_if_over, x, 0.0, exc=IndexError)


def clipped_widths(b):
    # ensemble_boxes' prefilter_boxes: coordinates clipped to ints or kept as floats, then
    # compared and subtracted, and rows of them
    out, rows = [], []
    for j in range(len(b)):
        x1, x2 = float(b[j][0]), float(b[j][1])
        if x1 < 0:
            x1 = 0
        if x2 > 1:
            x2 = 1
        if (x2 - x1) == 0.0 or x2 != x2:
            continue
        out.append(x2 - x1)
        rows.append([x1, 0.5])
    return np.array(out, dtype=np.float64), np.array(rows, dtype=np.float64)


def test_numbers_of_two_kinds_compare_and_subtract():
    rng = np.random.default_rng(18)
    check(clipped_widths, np.array([[-0.5, 1.5], [0.2, 0.2], [0.1, 0.3]]))
    check(clipped_widths, rng.random((20, 2)) * 2 - 0.5)


def rows_of_kinds(b):
    out = []
    for j in range(len(b)):
        x = float(b[j])
        if x > 1:
            x = 1
        out.append([x, 0.5])
    return out


def test_rows_whose_positions_the_run_types_are_returned_by_numpy():
    """A row's position holds an int or a float as the run decides: the list returned runs in
    NumPy (it came back as arrays)."""
    b = np.linspace(0, 2, 10)
    with pytest.raises(ValueError, match="returned"):
        strider.compile(rows_of_kinds, strict=True)(b)
    check(rows_of_kinds, b, strict=False)


def _timed(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper


@_timed
def _flag_the_largest(x, t):
    out = np.zeros(x.shape[0], np.int64)
    if x.max() > t:
        out[x == x.max()] = 1
    return out


def _calls_the_decorated(x, t):
    return _flag_the_largest(x, t) + 1


def test_a_function_behind_a_functools_wraps_decorator_is_rewritten():
    # its source is found from its own code, not from the __wrapped__ the decorator sets
    for t in (0.5, 2.0):
        check(_flag_the_largest, np.random.default_rng(0).random(10), t)
        check(_calls_the_decorated, np.random.default_rng(1).random(10), t)


@pytest.mark.parametrize("fn", [lambda x: int(x), lambda x: float(x), lambda x: float(x[x > 0]),
                                lambda x: int(x.reshape(1, 1))], ids=["int", "float", "masked", "2d"])
def test_int_and_float_of_an_array_with_dimensions_raise_as_numpys(fn):
    if np.lib.NumpyVersion(np.__version__) < "2.4.0":
        pytest.skip("this NumPy converts a 1-element array with a DeprecationWarning")
    check_raises(fn, np.array([3.7]), exc=TypeError)


def three_branches_deep(x):
    if x[0] > 0:
        if x[1] > 0:
            if x[2] > 0:
                y = x + 1
            else:
                y = x - 1
        else:
            y = x * 2
    else:
        y = x * 3
    return y


@pytest.mark.parametrize("x", [[1.0, 1.0, 1.0], [1.0, 1.0, -1.0], [1.0, -1.0, 0.0], [-1.0, 0.0, 0.0]])
def test_a_branch_whose_sides_agree_is_traced_once(x):
    """The first side makes the slots of what it assigns: nested branches cost one trace each,
    not twice their children's (Soft-NMS's three-deep branches in two loops took 92 tries)."""
    f = check(three_branches_deep, np.array(x))
    assert f.stats()["region_tries"] == 3


def kept_rows_or_none(boxes, t):
    mask = boxes[:, 4] > t
    if mask.sum() == 0:
        return None
    rows = boxes[mask]
    out = None
    if rows.shape[0] > 1:
        out = rows[np.argsort(-rows[:, 4])]
    return out


def none_or_max_then_flag_written(boxes, t):
    flag = boxes[:, 4] <= t
    if flag[0]:
        n = None
    else:
        n = boxes[1:, 4].max()
    flag[0] = ~flag[0]  # the condition's element, written after the branch
    return n, flag


@pytest.mark.parametrize("t", [0.3, 0.95, 2.0])
def test_a_branch_whose_first_side_leaves_no_array_is_traced_once(t):
    """`if not found: return None` before a result that is itself None or rows: the value the
    first side leaves holds no array, so the second side's, traced last, are written while its
    region is still open, with no second try (YOLOX's class-agnostic NMS traced its loop twice);
    the inner branch, whose first side leaves the rows, still takes two."""
    boxes = np.random.default_rng(7).uniform(0, 1, (40, 5))
    f = check(kept_rows_or_none, boxes, t)
    assert f.stats()["region_tries"] == 3
    f = check(none_or_max_then_flag_written, boxes, t)
    assert f.stats()["region_tries"] == 1


def class_rows(boxes, scores, t):
    """YOLOX's class-aware NMS loop: per class, the rows of its kept boxes appended in a branch,
    as arrays of run-time lengths; the list is empty before the loop."""
    out = []
    for c in range(scores.shape[1]):
        s = scores[:, c]
        keep = _nms(boxes[s > t], s[s > t], 0.5)
        if len(keep) > 0:
            out.append(np.concatenate([boxes[s > t][keep], s[s > t][keep, None]], 1))
    if len(out) == 0:
        return None
    return np.concatenate(out, 0)


def nms_of_passing(boxes, scores, t):
    m = scores > t  # (a run-time count: the NMS loop's first trip is traced too)
    return _nms(boxes[m], scores[m], 0.5)


def kept_run(s, t, k, rising):
    keep = []
    i = 0
    while i < s.size and s[i] > t:
        if len(keep) >= k:  # its length read before the loop's first append
            break
        if rising and len(keep) > 0 and keep[-1] > s[i]:  # an item, too
            break
        keep.append(s[i])
        i += 1
    return keep


def reset_each_trip(s, t):
    found = []
    n = 0
    while n < s.size and s[n] > t:
        if len(found) > 3:
            n = n + 100
        found = []  # assigned, never appended to: a Python list after the loop
        n += 1
    return found, n


def kept_in_branch(s, t):
    out = []
    if s[0] > t:
        out.append(s[0] * 2)
    return np.array(out, dtype=s.dtype)


def test_a_list_a_region_first_appends_to_is_made_there_and_traced_once():
    """A list empty before a loop or branch whose first use in it is an append has its counters
    made before the region and its storage by the append: the region is traced once (YOLOX's
    `keep` took two tries; YOLOX's per-class rows, four regions, took eleven), its length
    readable before the append. A list whose items are read before its first append is traced
    again as before, and one never appended to stays a Python list."""
    rng = np.random.default_rng(3)
    xy = rng.uniform(0, 50, (60, 2))
    boxes = np.concatenate([xy, xy + rng.uniform(5, 20, (60, 2))], 1)
    scores = rng.uniform(0, 1, 60)
    f = check(nms_of_passing, boxes, scores, 0.3)
    assert f.stats()["region_tries"] == 1
    # (70 classes: a loop of the IR, holding the NMS loop and the branch; then the final branch)
    f = check(class_rows, boxes, rng.uniform(0, 1, (60, 70)), 0.9)
    assert f.stats()["region_tries"] == 4
    check(class_rows, boxes, np.zeros((60, 70)), 0.9)
    f = check(kept_in_branch, scores, 0.5)
    assert f.stats()["region_tries"] == 1
    check(kept_in_branch, scores, 2.0)
    f = check(kept_run, scores, 0.2, 5, False)
    assert f.stats()["region_tries"] == 4  # the loop and the branches of its breaks, once each
    check(kept_run, scores, 0.2, 0, False)
    check(kept_run, np.sort(scores), 0.1, 100, True)
    check(kept_run, scores, 0.1, 100, True)
    check(reset_each_trip, np.sort(scores)[::-1].copy(), 0.5)


def kept_by_class(boxes, scores, classes, t):
    """A port of a batched NMS: each class's kept indices extended into a Python list (their
    tolist(), of a run-time length)."""
    keep_all = []
    uniq, counts = np.unique(classes, return_counts=True)
    for c, n in zip(uniq, counts):
        idx = np.where(classes == c)[0]
        assert len(idx) == n
        keep = _nms(boxes[idx], scores[idx], t)
        keep_all.extend(idx[keep].tolist())
    keep_all = np.array(keep_all, dtype=np.int64)
    return keep_all[np.argsort(-scores[keep_all], kind="stable")]


def passing_as_lists(s, t):
    doubled = (np.flatnonzero(s > t) * 2).tolist()
    values = s[s > t].tolist()
    return doubled, values, len(values), [v + 1 for v in values], values[-1] if len(values) > 0 else None


def test_tolist_of_a_run_time_length_is_a_list_of_that_length():
    """`.tolist()` of a 1-d array of a run-time length: a list of its Python numbers whose
    length the run says, which a loop extends into its own list, len() reads, a comprehension
    maps, an index reads (a Python number, as every list filled at run time gives) and a
    return hands back as Python's list of ints or floats."""
    rng = np.random.default_rng(11)
    xy = rng.uniform(0, 50, (60, 2))
    boxes = np.concatenate([xy, xy + rng.uniform(5, 20, (60, 2))], 1)
    scores = rng.uniform(0, 1, 60)
    check(kept_by_class, boxes, scores, rng.integers(0, 4, 60), 0.5)
    check(kept_by_class, boxes, scores, np.zeros(60, np.int64), 0.3)
    for t in (0.5, 2.0, -1.0):
        check(passing_as_lists, scores.astype(np.float32), t)


def rows_as_lists(dets, t, num_classes):
    ret = {}  # CenterNet's ctdet_post_process: each class's rows, lists of Python floats
    for j in range(num_classes):
        ret[j] = dets[dets[:, -1] == j, :5].astype(np.float32).tolist()
    rows = dets[dets[:, 4] > t, :2].tolist()
    counts = (dets[dets[:, 4] > t, :2] > 50).astype(np.int32).tolist()
    first = rows[0] + [0.0] if rows else None  # an item is a list: + joins
    joined = [[-1.0, -1.0]] + rows + rows
    rows.append([1.0, 2.0])
    return ret, rows, counts, first, joined, len(rows), rows[-1][1] * 2


def rows_as_tuples(s, t):
    out = []
    for v in s:
        if v > t:
            out.append((float(v), 1))
    last = out[-1] if out else None  # a tuple of Python numbers, returned beside the list
    return out, last, out[0] + (7.0,) if out else None, out[:1]


def tolist_then_appended(x, y, t):
    rows = x[x > t].tolist()
    for v in y:  # the loop's room: for the list's items and the trips'
        if v > t:
            rows.append(float(v))
    ints = (x[x > t] * 10).astype(np.int64).tolist()
    n = 0
    while ints and n < ints[0] % 7:
        ints.append(n)
        n += 1
    return rows, ints


def test_items_of_a_list_of_a_run_time_length_are_lists_and_tuples():
    """`.tolist()` of rows of a run-time count is a list of that length whose items are lists of
    Python numbers; an item of a list of lists or tuples a loop filled is a list or a tuple (a
    value, not a view): `+` joins it with another, as Python's does (it added arrays), and
    lists join with `+` into a new one."""
    rng = np.random.default_rng(12)
    dets = np.concatenate([rng.uniform(0, 100, (40, 4)), rng.uniform(0, 1, (40, 1)),
                           rng.integers(0, 3, (40, 1))], 1)
    for t in (0.5, 2.0):
        check(rows_as_lists, dets, t, 3)
        check(rows_as_tuples, dets[:, 4].copy(), t)
    check(rows_as_lists, dets[:0], 0.5, 2)
    for x in (dets[:, 4].copy(), dets[:0, 4].copy(), np.ones(3)):
        f = check(tolist_then_appended, x, dets[:7, 4].copy(), 0.3)  # (it recursed without end)
        assert f.stats()["regrown"] == 0
    with pytest.raises(strider.TraceError, match="a change to a list that is an item of a list filled at run time"):
        strider.compile(item_changed, strict=True)(dets, 0.5)  # the change would not reach the list


def item_changed(dets, t):
    rows = dets[dets[:, 4] > t, :2].tolist()
    rows[0].append(1.0)
    return rows


def rows_left(boxes, t):
    n = boxes.shape[0]
    for i in range(boxes.shape[0]):
        if boxes[i, 4] < t:
            n = n - 1
    return [i for i in range(n)]


def test_a_list_of_a_traced_range_has_room_for_the_arguments_rows():
    """[i for i in range(N)] with N traced (Soft-NMS's kept count): room for the longest axis of
    the arguments, so that 100 rows are traced once, not grown."""
    boxes = np.random.default_rng(5).uniform(0, 1, (100, 5))
    f = check(rows_left, boxes, 0.1)
    assert f.stats()["regrown"] == 0
    check(rows_left, boxes, 2.0)


def halve_until_below(s, t):
    n = 0
    while s[0] > t:
        s[0] = s[0] * 0.5
        n = n + 1
    return n


def halve_through_copyto(s, t):
    n = 0
    while s[0] > t:
        np.copyto(s, s * 0.5)
        n = n + 1
    return n


def test_a_loop_that_assigns_items_of_an_argument_is_traced_once():
    """The variables whose items the body assigns name storages it writes: the first try forgets
    what tracing knew of them. A write the source does not show (np.copyto) is learned by a
    second try, and the result is the same."""
    f = check(halve_until_below, np.array([8.0, 1.0]), 1.0)
    assert f.stats()["region_tries"] == 1
    f = check(halve_through_copyto, np.array([8.0, 1.0]), 1.0)
    assert f.stats()["region_tries"] == 2


def boxes_per_image(prediction, t):
    output = [np.zeros((0, 5))] * prediction.shape[0]
    for xi, x in enumerate(prediction):
        x = x[x[:, 4] > t]
        if not x.shape[0]:
            continue
        output[xi] = x[x[:, 4].argsort()[::-1]]
    return output


@pytest.mark.parametrize("images", [2, 10])
def test_a_loop_over_images_that_cannot_be_a_loop_of_the_ir_unrolls(images):
    """YOLOv5's non_max_suppression assigns an image's result into a list at the image's index:
    a loop of the IR cannot (its counter is traced), so a loop of more than _UNROLLED trips whose
    first trip traces a branch is unrolled after all, as a long one is, where it raised."""
    prediction = np.random.default_rng(6).uniform(0, 1, (images, 20, 5))
    prediction[1, :, 4] = 0.0  # no candidates: `continue`
    check(boxes_per_image, prediction, 0.5)


def top_of_branch(x, k):
    if x[0] > 0:
        y = x * 2
    else:
        y = -x
    return np.sort(y)[::-1][:k]


def test_a_number_the_source_uses_as_a_slice_bound_is_static_from_the_first_trace():
    """`y[:k]` needs k's value: k is static before the trace starts, where the trace found so
    at the slice, after its branch, and started again."""
    f = check(top_of_branch, np.array([0.5, -1.0, 3.0, 2.0]), 2)
    assert f.stats()["specialized"] == 1 and f.stats()["region_tries"] == 1
    check(top_of_branch, np.array([-0.5, -1.0, 3.0, 2.0]), 3)


def halves_the_top_then_shifts(s, t):
    # its source is read to the last line its code is on (_convert._parsed), here a `pass`: read
    # short of it, the `else:` would not parse and the loop would be left to Python (a TraceError)
    while s.max() > t:
        s[s.argmax()] *= 0.5
    if t > 0.5:
        s -= t
    else:
        pass


@pytest.mark.parametrize("t", [0.25, 0.75])
def test_a_function_whose_last_line_has_no_code_is_rewritten_whole(t):
    check(halves_the_top_then_shifts, np.array([0.9, 0.1, 3.0, 0.6], np.float32), t)


def membership_of_either_dtype(a, v):
    if a.sum() > 0:
        m = np.arange(3, dtype=np.int64)
    else:
        m = np.zeros(3, np.int32) + 5
    return v in m, v not in m


@pytest.mark.parametrize("sign", [1.0, -1.0])
@pytest.mark.parametrize("v", [1, 5, 7])
def test_membership_in_arrays_a_branch_left_of_two_dtypes(sign, v):
    """SORT's matched indices, np.where's int64 or an int32 assignment: `in` tests each side."""
    check(membership_of_either_dtype, np.ones(3) * sign, v)


def truths_of_one_element(iou, t):
    keep = bool((iou > t).any())
    off = bool(iou[0] - 0.5)
    if keep:
        iou = iou * 2
    return keep, off, bool(np.array([t])), iou + 0


@pytest.mark.parametrize("t", [0.0, 0.5, 2.0])
@pytest.mark.parametrize("iou", [[0.5, 0.7, 0.1], [0.2, 0.9, 3.0]])
def test_builtin_bool_of_a_traced_value_is_a_traced_bool(iou, t):
    """`bool((iou > t).any())`: NumPy's truth of one element, a Python bool only the run knows,
    returned and branched on."""
    check(truths_of_one_element, np.array(iou), t)


def early_none_inside_a_static_if(cond, a, c):
    if c % 2:
        if np.count_nonzero(cond) <= c:
            y = None
        else:
            y = a * 2
        return a - 1 if y is None else y
    return a


def times_early_none(cond, a):
    return a * early_none_inside_a_static_if(cond, a, 1)


@pytest.mark.parametrize("cond", [[0, 0, 0, 1], [1, 1, 1, 1]])
def test_a_ternary_on_is_none_takes_the_side_it_knows(cond):
    """`a - 1 if y is None else y` of a y that is None or an array: the else side is y's array
    (the fuzzer's branch found it, where the return inside an if made the ternary a value)."""
    check(times_early_none, np.array(cond), np.arange(4, dtype=np.int32))


def _survivors_as_floats(d):
    x = d[d[:, 1] > 0]
    return [float(x[i, 0]) for i in range(x.shape[0])]


@pytest.mark.parametrize("dropped", [0, 1, 3])
def test_a_comprehension_over_a_range_of_a_run_time_length(dropped):
    # range() of a run-time length in a comprehension is a loop of the IR: Python's range took
    # the length's bound, an IndexError where fewer rows survived
    d = np.ones((3, 2))
    d[3 - dropped:, 1] = -1
    f = check(_survivors_as_floats, d)
    assert f.stats()["traces"] == 1


def _deletes_in_a_branch(x, flag):
    # RetinaFace's PriorBox: `del anchors` in `if separated_variables:`
    a = x * 2
    b = x + 0
    if flag:
        b = a + 1
        del a
    return b


def _deletes_in_a_traced_branch(x):
    a = x * 2
    b = x + 0
    if x.sum() > 0:
        b = a + 1
        del a
    return b


def _deletes_in_a_loop(x):
    out = []
    for i in range(3):
        t = x * i
        out.append(t)
        del t
    return out


@pytest.mark.parametrize("fn, args", [(_deletes_in_a_branch, (True,)), (_deletes_in_a_branch, (False,)),
                                      (_deletes_in_a_traced_branch, ()), (_deletes_in_a_loop, ())],
                         ids=["branch", "branch_not_taken", "traced_branch", "loop"])
def test_del_of_a_variable_in_a_loop_or_branch(fn, args):
    # the side that deletes it returns it unassigned (its rewrite read it as a closure's and raised)
    check(fn, np.arange(3.0), *args)


def _reads_what_a_branch_deleted(x):
    a = x * 2
    if x.sum() > 0:
        del a
    return a


def test_reading_a_variable_a_branch_deleted_raises_pythons_error():
    check_raises(_reads_what_a_branch_deleted, np.arange(3.0), exc=UnboundLocalError)


def _keyed_by_a_made_constant(x):
    # CenterNet's multi_pose_post_process: a class id from np.ones(1, dtype=np.int32)[0]
    return {np.ones(1, dtype=np.int32)[0]: x * 2, np.zeros(2)[1]: x + 1}


def test_a_number_of_an_array_made_filled_is_known_while_tracing():
    f = check(_keyed_by_a_made_constant, np.arange(4.0))
    assert [type(k) for k in f(np.arange(4.0))] == [np.int32, np.float64]


class _Boxes:
    # TF OD API's np_box_list.BoxList: its constructor checks the boxes in a loop
    def __init__(self, data):
        if not self._valid(data):
            raise ValueError("Invalid box data.")
        self.data = {"boxes": data}

    def _valid(self, data):
        if data.shape[0] > 0:
            for i in range(data.shape[0]):
                if data[i, 0] > data[i, 2] or data[i, 1] > data[i, 3]:
                    return False
        return True


class _Scored(_Boxes):
    def __init__(self, data, scores):
        super().__init__(data)
        self.scores = scores


def _areas_of_a_box_list(boxes, scores):
    b = _Scored(boxes, scores)
    d = b.data["boxes"]
    return (d[:, 2] - d[:, 0]) * (d[:, 3] - d[:, 1]) * b.scores


def test_a_constructor_of_the_users_is_rewritten():
    # its loop over the boxes is a loop of the IR (the constructor ran unrewritten and broke the graph)
    x = np.random.default_rng(0).uniform(0, 1, (40, 4))
    x[:, 2:] += x[:, :2]
    check(_areas_of_a_box_list, x, np.arange(40.0))
    x[7, 0] = 5.0
    check_raises(_areas_of_a_box_list, x, np.arange(40.0), exc=ValueError)
