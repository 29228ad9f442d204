"""Arrays whose count of rows changes from call to call (the boxes of each frame): traced once
with that count known only at run time (strider.compile's `dynamic`), against NumPy on every call."""
import logging
import warnings

import numpy as np
import pytest

import strider
from heads import HEADS
from strider.testing import clone_args, compare_calls


def boxes(n, seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    xy = rng.uniform(0, 400, (n, 2))
    wh = rng.uniform(4, 90, (n, 2))
    scores = rng.permutation(n) / max(n, 1)
    return np.concatenate([xy, xy + wh, scores[:, None]], axis=1).astype(dtype)


def same_calls(compiled, fn, *args):
    """One call of `compiled` against `fn` on clones of args: results and arguments after it."""
    np_args, st_args = clone_args(args), clone_args(args)
    with np.errstate(all="ignore"):
        expected = fn(*np_args)
    got = compiled(*st_args)
    compare_calls(expected, got, (np_args, {}), (st_args, {}), 0.0, 0.0)
    return got


nms = HEADS["py_cpu_nms"].fn  # the Fast R-CNN py_cpu_nms


def test_one_trace_serves_every_count_up_to_the_bound():
    f = strider.compile(nms)
    counts = [300, 299, 310, 257, 400, 511, 280]
    for k, n in enumerate(counts):
        same_calls(f, nms, boxes(n, k), 0.5)
    # 300 alone, then the rows are a run-time length: one program for 257..512 (the walk that
    # switched counts as a trace too)
    assert f.stats()["traces"] == 3, f.stats()
    assert f.stats()["cache_hits"] == len(counts) - 2
    text = str(f.explain(boxes(290), 0.5))
    assert "storage f32[2560] arg 0" in text and "[?%" in text[:text.find("== storages")]  # 512 rows of 5
    same_calls(f, nms, boxes(513), 0.5)  # past the bound: the next one
    assert f.stats()["traces"] == 4


def test_dynamic_false_traces_each_count_and_true_from_the_first_call():
    fixed = strider.compile(nms, dynamic=False)
    rows = strider.compile(nms, dynamic=True)
    for n in (40, 41, 42):
        same_calls(fixed, nms, boxes(n), 0.5)
        same_calls(rows, nms, boxes(n), 0.5)
    assert fixed.stats()["traces"] == 3
    assert rows.stats()["traces"] == 2  # the first walk asked for run-time rows, then one trace
    with pytest.raises(ValueError, match="dynamic"):
        strider.compile(nms, dynamic="rows")


def clip_in_place(b, h, w):
    b[:, 0::2] = np.clip(b[:, 0::2], 0, w)
    b[:, 1::2] = np.clip(b[:, 1::2], 0, h)
    return b[:, :2]


def test_writes_into_the_argument_and_views_of_it():
    f = strider.compile(clip_in_place)
    for n in (20, 33, 50, 2):
        b = boxes(n) * 2 - 100
        got = same_calls(f, clip_in_place, b, 300.0, 400.0)
        assert got.shape == (n, 2)
    b = boxes(37) * 2 - 100
    view = f(b, 300.0, 400.0)
    assert np.shares_memory(view, b) and view.base is not None
    assert f.stats()["traces"] == 4  # 20, the switch, 33..64 and 2..16


def pair(scores, labels, boxes_):
    keep = scores > 0.3
    return boxes_[keep] + labels[keep, None] * 1000.0, scores.max() + labels.max()


def test_arrays_of_one_count_share_it_and_of_two_counts_are_checked():
    f = strider.compile(pair)
    for n in (30, 40, 45):
        b = boxes(n, n)
        same_calls(f, pair, b[:, 4].copy(), np.arange(n) % 3, b[:, :4].copy())
    # a count the others do not have: NumPy's IndexError, from the compiled program
    b = boxes(40)
    with pytest.raises(IndexError):
        pair(b[:, 4].copy(), np.arange(41) % 3, b[:, :4].copy())
    with pytest.raises(IndexError):
        f(b[:, 4].copy(), np.arange(41) % 3, b[:, :4].copy())


def diff(a, b):
    return a - b


def test_one_row_broadcasts_as_numpys_and_two_counts_must_agree():
    f = strider.compile(diff)
    for n, m in ((5, 5), (7, 7), (7, 1), (1, 9), (0, 0), (3, 3)):
        same_calls(f, diff, boxes(n), boxes(m, 1))
    with pytest.raises(ValueError, match="could not be broadcast"):
        f(boxes(6), boxes(5))


def test_a_write_then_a_run_time_break_puts_back_only_the_arguments_rows():
    # a mask's one survivor broadcasts in NumPy: the compiled run puts back what it wrote (the
    # argument's own bytes, not its bound's) and NumPy runs the call
    def f(x, y):
        x += 1
        return x[:2] - y[y > 0.5]

    g = strider.compile(f, strict=False)
    for n, y in ((5, np.array([0.9, 0.8])), (7, np.array([0.7, 0.6])), (9, np.array([0.2, 0.9]))):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", strider.GraphBreakWarning)
            same_calls(g, f, np.arange(n, dtype=np.float64), y)
    assert g.stats()["runtime_breaks"] == 1


def text_of_length(x):
    return x * 2, f"{len(x)}"


def test_a_trace_that_needs_the_count_goes_back_to_one_per_count(caplog):
    f = strider.compile(text_of_length)
    with caplog.at_level(logging.INFO, logger="strider"):
        for n in (4, 5, 6):
            same_calls(f, text_of_length, boxes(n))
    assert "every count of rows is a signature of its own" in caplog.text
    assert f.stats()["graph_breaks"] == 0


def broadcast_rows(b, scores):
    # mmdet multiclass_nms: each box beside each class, flattened: with run-time rows a gather
    # element by element outside compiled code, slower than NumPy
    n, c = scores.shape
    flat = np.broadcast_to(b[:, None], (n, c, 4)).reshape(-1, 4)
    return flat + np.repeat(np.arange(c), 4)[None, :].reshape(-1, 4)[:1] * 0 + scores.reshape(-1)[:, None]


def test_a_program_slower_with_run_time_rows_goes_back_to_one_per_count(caplog):
    f = strider.compile(broadcast_rows)
    with caplog.at_level(logging.INFO, logger="strider"):
        for n in (300, 301, 302):
            same_calls(f, broadcast_rows, boxes(n)[:, :4].copy(), boxes(n, 1)[:, :4].repeat(5, axis=1))
    assert "over many points" in caplog.text
    assert f.stats()["traces"] == 5  # 300, the switch, its refusal, 301, 302


def test_strided_and_aliased_arrays_keep_a_signature_per_count():
    f = strider.compile(diff)
    for n in (10, 11, 12):
        base = boxes(2 * n)
        same_calls(f, diff, base[::2], base[1::2])  # not contiguous
        same_calls(f, diff, base[:n], base[n:])  # one array's memory
    text = str(f.explain(boxes(26)[::2], boxes(26)[1::2]))
    assert "?%" not in text[:text.find("== storages")]


class _Track:
    count = 0

    def __init__(self, row):
        self.id = _Track.count
        _Track.count += 1


def _ids(d):
    return [_Track(d[i]).id for i in range(d.shape[0])]


def test_objects_counted_in_a_loop_over_the_rows_are_counted_each_trip():
    # SORT's KalmanBoxTracker.count, changed on each trip of a loop over the rows: with run-time
    # rows the loop would be one of the IR, which refuses the change: a signature per count
    f = strider.compile(_ids, strict=False)
    _Track.count = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", strider.GraphBreakWarning)
        assert f(np.ones((3, 2))) == [0, 1, 2]
        assert f(np.ones((2, 2))) == [3, 4]
        assert f(np.ones((4, 2))) == [5, 6, 7, 8]
