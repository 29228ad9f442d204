"""Differential tests of data-dependent ops: boolean-mask reads, the nonzero family, integer-array
indexing, writes through masks and index arrays, sorting, and arrays whose length is known only at
run time flowing on through later ops (a YOLOv5-style NMS prologue and a threshold + top-k head).
"""
import math
import operator
import re
import warnings

import numpy as np
import pytest

import strider
from assert_functions import assert_bare, assert_computed_message, assert_positive  # Python's own asserts
from differential import TARGET, assert_same, check, check_raises, clone_args
from strider.testing import compare, compare_calls

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

F32, F64, I32, I64, BOOL = np.float32, np.float64, np.int32, np.int64, np.bool_
NAN, INF = np.nan, np.inf


def rnd(shape, dtype=F64, seed=0):
    """Uniform [0, 1) floats (distinct, so default-kind sorts are defined) or ints in [-5, 5]."""
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return rng.random(shape).astype(dtype)
    return rng.integers(-5, 6, shape).astype(dtype)


def mask(*bits):
    return np.array(bits, BOOL)


def idx(*values, dtype=I64):
    return np.array(values, dtype)


def check_raises_untouched(fn, *args, exc):
    """NumPy and strider both raise `exc`, and neither leaves a trace in the arguments
    (check_raises compares no arguments)."""
    for name, run in (("NumPy", fn), ("strider", lambda *a: strider.compile(fn, target=TARGET)(*a))):
        copies = clone_args(args)
        with pytest.raises(exc), np.errstate(all="ignore"):
            run(*copies)
        for i, (a, c) in enumerate(zip(args, copies)):
            compare(a, c, what=f"{name}: argument {i} after the {exc.__name__}")


def check_again(monkeypatch, compiled, fn, *args, **kwargs):
    """Run the harness comparison with an already compiled function (exercises its cache)."""
    with monkeypatch.context() as m:
        m.setattr(strider, "compile", lambda f=None, **kw: compiled)
        check(fn, *args, **kwargs)


# ---------------------------------------------------------------------------------------------
# 1. Boolean-mask reads
# ---------------------------------------------------------------------------------------------
M8 = mask(1, 0, 1, 1, 0, 0, 1, 0)
M6 = mask(0, 1, 1, 0, 1, 0)

MASK_READS = [
    pytest.param(lambda x, m: x[m], (rnd(8), M8), id="lead_1d"),
    pytest.param(lambda x, m: x[m], (rnd((8, 6), F32), M8), id="lead_2d"),
    pytest.param(lambda x, m: x[m], (rnd((8, 6), I64), rnd((8, 6), seed=1) > 0.5), id="full_shape"),
    pytest.param(lambda x, m: x[m, :], (rnd((8, 6), F32), M8), id="m_colon"),
    pytest.param(lambda x, m: x[:, m], (rnd((8, 6)), M6), id="colon_m"),
    pytest.param(lambda x, a, b: x[a & b], (rnd((8, 3)), M8, rnd(8, seed=2) > 0.3), id="and"),
    pytest.param(lambda b, s: b[s > 0.5], (rnd((8, 4), F32), rnd(8, F32, seed=3)), id="boxes_scores_gt"),
    pytest.param(lambda x: x[x[:, 4] > 0.5], (rnd((8, 6), F32, seed=4),), id="own_column_gt"),
    pytest.param(lambda x: x[x > 0], (rnd((4, 5), I64),), id="full_shape_computed_int"),
    pytest.param(lambda x, m: (x[m], x[~m]), (rnd((8, 2)), M8), id="m_and_not_m"),
    pytest.param(lambda x, m: x[m], (rnd((8, 6)), np.zeros(8, BOOL)), id="all_false"),
    pytest.param(lambda x, m: x[m], (rnd((8, 6), F32), np.ones(8, BOOL)), id="all_true"),
    pytest.param(lambda x: x[x[:, 4] > 2.0], (rnd((8, 6)),), id="computed_all_false"),
    pytest.param(lambda x: x[x[:, 4] > -1.0], (rnd((8, 6), F32),), id="computed_all_true"),
    pytest.param(lambda x, m: x[m], (np.zeros(0, F32), np.zeros(0, BOOL)), id="zero_length_1d"),
    pytest.param(lambda x: x[x[:, 4] > 0.5], (np.zeros((0, 6)),), id="zero_length_2d"),
    pytest.param(lambda x, m: np.compress(m, x, axis=0), (rnd((8, 3), F32), M8), id="compress"),
    pytest.param(lambda x, m: np.compress(m, x, axis=0), (rnd((8, 3)), M8[:5]), id="compress_short_cond"),
    # longer than the axis: NumPy raises only for a true entry past it
    pytest.param(lambda x, m: np.compress(m, x, axis=0), (rnd((7, 3)), M8), id="compress_long_cond_false_past_axis"),
    pytest.param(lambda x: np.extract(x > 0.5, x), (rnd((4, 5), F32),), id="extract"),
    pytest.param(lambda x, m: np.extract(m, x), (rnd((4, 5), I64), rnd((4, 5), seed=5) > 0.5), id="extract_arg"),
]


@pytest.mark.parametrize("fn,args", MASK_READS)
def test_mask_read(fn, args):
    check(fn, *args)


def compress_by_a_prefix(x, c):
    return np.compress(c[:2], x, axis=0)


def test_compress_by_a_condition_of_another_run_time_length():
    # with run-time rows the condition c[:2] and the axis differ in length only when the call runs
    f = strider.compile(compress_by_a_prefix, strict=True, dynamic=True)
    for n in (7, 0, 1, 12, 3):
        x, c = rnd((n, 2)), np.ones(n, np.bool_)
        compare_calls(compress_by_a_prefix(x.copy(), c), f(x, c), ((x, c), {}), ((x, c), {}))


@pytest.mark.parametrize("fn,args", [
    pytest.param(lambda x, m: x[m], (rnd((8, 3)), M8[:7]), id="mask_too_short"),
    pytest.param(lambda x, m: x[:, m], (rnd((8, 6)), M8), id="mask_too_long"),
    pytest.param(lambda x, m: np.compress(m, x, axis=0), (rnd((5, 3)), M8), id="compress_cond_too_long"),
    pytest.param(lambda x: x[x > 0.5, :], (rnd(6),), id="too_many_indices"),  # the `:` counts
    pytest.param(lambda x, m: x[m, :], (rnd((2, 3)), M8[:6].reshape(2, 3)), id="mask_2d_and_slice"),
])
def test_mask_read_raises(fn, args):
    check_raises(fn, *args, exc=IndexError)


def test_mask_read_cache_with_other_counts(monkeypatch):
    # one signature (shape, dtype) called on data selecting 4, 0 and 8 rows
    def f(x):
        return x[x[:, 4] > 0.5] * 2

    x = rnd((8, 6), F32, seed=6)
    compiled = check(f, x)
    for col in (np.zeros(8, F32), np.ones(8, F32)):
        y = x.copy()
        y[:, 4] = col
        check_again(monkeypatch, compiled, f, y)


def _columns_by_one_mask(s, a, b, c, d):
    keep = s > 0.4
    return s[keep], a[keep], b[::-1][keep], c[keep], d[1::2][keep]


def _shrinking_candidates(s, x, y):
    # an NMS loop's shape: the candidates and their columns compacted in place each trip
    order = np.argsort(s)
    left = x[order]
    width = y[order]
    kept = []
    while order.size > 0:
        kept.append(order[0])
        keep = np.abs(left[1:] - left[0]) > width[0]
        order = order[1:][keep]
        left = left[1:][keep]
        width = width[1:][keep]
    return np.array(kept)


@pytest.mark.parametrize("n", [0, 1, 15, 16, 17, 100, 255, 256, 257, 1003])
def test_compresses_by_one_mask(n):
    # They share one stage on the CPU with the ops that make and count the mask (fuse_stages,
    # emit_compress.cc): 1-, 2-, 4- and 8-byte elements, a reversed and a strided source, blocks
    # of 256 mask bytes and vectors of 16 with their tails
    rng = np.random.default_rng(n)
    s = rng.random(n).astype(F32)
    args = (s, rng.integers(-9, 9, n).astype(np.int8), rng.random(n), rnd(n, I64, seed=n), rng.random(2 * n).astype(np.float16))
    f = check(_columns_by_one_mask, *args)
    if TARGET == "cpu" and n > 1:
        stages = str(f.explain(*args)).split("== stages")[1].split("\nstage ")
        assert sum("compress(" in st for st in stages) == 1 and any("compress(" in st and "sum(" in st for st in stages)
    check(_columns_by_one_mask, s, s > 0.7, rng.integers(0, 99, n).astype(np.uint16), rnd(n, I32, seed=n),
          rng.random(2 * n).astype(F32))
    check(_shrinking_candidates, s, rng.random(n), (rng.random(n) * 0.05).astype(F32))


def _rows_by_one_mask(x, r, w, idx):
    keep = x[:, 4] > 0.4
    return x[keep], r[keep], w[:, ::2][keep], idx[keep]


def _candidates_concat(x, t):
    # YOLOv5's shape: columns written into the rows of a new array, then its rows by a mask the
    # same pass makes
    box = x[:, :4] * 2
    conf = x[:, 5:].max(1, keepdims=True)
    j = x[:, 5:].argmax(1)[:, None]
    return np.concatenate((box, conf, j.astype(x.dtype)), 1)[conf.reshape(-1) > t]


def _shrinking_rows(dets):
    # the rows of an NMS loop's candidates compacted in place each trip
    kept = []
    while dets.shape[0] > 0:
        kept.append(dets[0, 4])
        keep = np.abs(dets[1:, 0] - dets[0, 0]) > dets[0, 2]
        dets = dets[1:][keep]
    return np.array(kept)


@pytest.mark.parametrize("n", [0, 1, 63, 64, 65, 255, 256, 257, 1003])
def test_rows_by_one_mask(n):
    # A compress of rows joins the stage that makes and counts its mask on the CPU (fuse_stages,
    # emit_compress.cc): dense rows of 1-d and 2-d shape move as one block, a strided row element
    # by element, beside a 1-d compress by the mask; words of 64 mask bytes and their tails; an
    # NMS loop's rows compressed in place (compress_in_place)
    rng = np.random.default_rng(n)
    x = rng.random((n, 6)).astype(F32)
    args = (x, rng.integers(-9, 9, (n, 2, 3)).astype(np.int16), rng.random((n, 5)), rnd(n, I64, seed=n))
    f = check(_rows_by_one_mask, *args)
    if TARGET == "cpu" and n > 1:
        stages = str(f.explain(*args)).split("== stages")[1].split("\nstage ")
        assert sum("compress(" in st for st in stages) == 1 and "(compress): " not in str(f.explain(*args))
    check(_candidates_concat, rng.random((n, 9)).astype(F32), 0.5)
    dets = np.concatenate([np.sort(rng.random((n, 1)) * 100, 0), rng.random((n, 1)), rng.random((n, 3)) * 5], 1)
    g = check(_shrinking_rows, dets)
    if TARGET == "cpu" and n > 1:  # the rows move in place, compiled with the mask that keeps them
        assert "in place: " in str(g.explain(dets)) and "(compress): " not in str(g.explain(dets))


def _wide_rows_by_one_mask(x, t, ids):
    # YOLOv5's `x[x[:, 4] > t]` with a column and an id array beside it: a cache line a row
    keep = x[:, 4] > t
    return x[keep], x[:, 2][keep], ids[keep]


@pytest.mark.parametrize("t", [2.0, 0.97, 0.5, -1.0])
def test_wide_rows_by_one_mask_in_chunks(t):
    # From 16,384 rows of a cache line each, the stage that makes, counts and compresses runs in
    # chunks on the thread pool, each moving its kept rows after those of the chunks before it
    # (emit_compress.cc); calls in a row find the pool warm, so that both threads take chunks.
    # The arguments hold NaNs (never kept) and the rows do not divide into the chunks evenly.
    rng = np.random.default_rng(7)
    x = rng.random((20011, 24)).astype(F32)
    x[rng.integers(0, 20011, 50), 4] = np.nan
    ids = np.arange(20011, dtype=I64)
    f = check(_wide_rows_by_one_mask, x, t, ids, calls=3)
    if TARGET == "cpu":
        stages = str(f.explain(x, t, ids)).split("== stages")[1].split("\nstage ")
        assert any("compress(" in st and "sum(" in st and "parallel(i0)" in st for st in stages)


# ---------------------------------------------------------------------------------------------
# 2. The nonzero family (results are int64 arrays; NaN counts as nonzero, -0.0 as zero)
# ---------------------------------------------------------------------------------------------
NONZERO_FORMS = [
    pytest.param(lambda m: np.nonzero(m), id="np.nonzero"),
    pytest.param(lambda m: m.nonzero(), id="method"),
    pytest.param(lambda m: np.where(m), id="where"),
    pytest.param(lambda m: np.where(m)[0], id="where0"),
    pytest.param(lambda m: np.argwhere(m), id="argwhere"),
    pytest.param(lambda m: np.flatnonzero(m), id="flatnonzero"),
]


@pytest.mark.parametrize("fn", NONZERO_FORMS)
def test_nonzero_forms(fn):
    check(fn, rnd(9, seed=7) > 0.5)
    check(fn, rnd((3, 4), seed=7) > 0.5)


def rows_at_positions(x, t, k):
    # the positions where a mask holds, plus k, index rows: a compress of x[k:] where x has the
    # rows (Trace.selects); NumPy's IndexError where it does not
    inds = np.where(x[:-1, 0] > t)[0]
    return x[inds + k], x[inds + k, :], x[:, 0][inds]


def past_the_rows(x, t):
    return x[np.where(x[:, 0] > t)[0] + 1]


def rows_after_the_mask_changed(x, t):
    m = x[:, 0] > t
    inds = np.nonzero(m)[0]
    m[0] = True  # the positions are the old mask's: a gather of them, not a compress of the new one
    return x[inds], x[inds[1:]], x[m]


def tail_positions(x, t):
    # py_cpu_nms's order[np.where(ovr <= t)[0] + 1] on a run-time length
    order = x[:, 0][x[:, 1] > 0.1]
    ovr = order[1:] * 2
    return order[np.where(ovr <= t)[0] + 1], order[np.where(ovr <= t)[0]]


@pytest.mark.parametrize("t", [-1.0, 0.3, 0.7, 2.0])  # every row, some, few, none
def test_positions_of_a_mask_index_rows_as_a_compress(t):
    x = rnd((12, 3), seed=11)
    for k in (0, 1):
        check(rows_at_positions, x, t, k)
    check(rows_after_the_mask_changed, x, t)
    check(tail_positions, x, t)
    text = str(strider.compile(tail_positions, strict=True).explain(x, t))
    if TARGET == "cpu":
        ir = text[:text.find("== storages")]
        assert ir.count("= compress(") >= 2 and "= nonzero(" not in ir and "= take(" not in ir, ir


def test_positions_past_the_rows_raise_as_numpy():
    x = rnd((12, 3), seed=11)
    x[-1, 0] = 0.9  # the last row is kept: + 1 passes the end
    check_raises(past_the_rows, x, 0.5, exc=IndexError)


@pytest.mark.parametrize("a", [
    pytest.param(np.zeros((3, 4), BOOL), id="all_false"),
    pytest.param(np.ones(5, BOOL), id="all_true"),
    pytest.param(np.zeros(0, BOOL), id="zero_length"),
    pytest.param(np.zeros((0, 3), BOOL), id="zero_length_2d"),
    pytest.param(np.array([[0, 3, -1], [0, 0, 7]], I64), id="int64"),
    pytest.param(np.array([0, 2, 0, 0, -4, 1], I32), id="int32"),
    pytest.param(np.array([0.0, NAN, -0.0, 1.5, -INF, 0.0], F32), id="float32_nan_negzero"),
    pytest.param(np.array([[0.0, 1e-300], [NAN, 0.0]], F64), id="float64"),
])
def test_nonzero_inputs(a):
    check(lambda m: (np.nonzero(m), np.argwhere(m), np.flatnonzero(m), np.where(m)), a)


@pytest.mark.parametrize("fn,args", [
    pytest.param(lambda x, m: x[np.where(m)], (rnd((3, 4)), rnd((3, 4), seed=8) > 0.5), id="x_where_tuple"),
    pytest.param(lambda x: x[np.nonzero(x > 0.5)], (rnd((3, 4), F32),), id="x_nonzero_computed"),
    pytest.param(lambda x: x[np.where(x[:, 4] > 0.5)[0]], (rnd((8, 6), F32, seed=9),), id="rows_where0"),
    pytest.param(lambda x: np.where(x > 0.5)[0] * 2 + 1, (rnd(10),), id="where0_math"),
    pytest.param(lambda x: np.argwhere(x > 0.5)[:, 1], (rnd((4, 5)),), id="argwhere_column"),
])
def test_nonzero_used(fn, args):
    check(fn, *args)


def peak_and_cells(hm, idx):
    # a heatmap's peak as (row, column), flat indices as cells in both orders, a mask's indices
    peak = np.unravel_index(np.argmax(hm), hm.shape)
    return (peak, np.unravel_index(idx, (3, 4)), np.unravel_index(idx, (3, 4), order="F"),
            np.unravel_index(idx.astype(np.uint8), 12), np.unravel_index(np.flatnonzero(hm > 0.7), hm.shape))


@pytest.mark.parametrize("idx", [np.array([0, 5, 11, 7]), np.array([[1, 2], [3, 4]]), np.array([], np.int64)])
def test_unravel_index(idx):
    check(peak_and_cells, rnd((5, 7), seed=3), idx)


@pytest.mark.parametrize("idx", [np.array([3, 12]), np.array([-1])])
def test_unravel_index_out_of_bounds(idx):
    check_raises(peak_and_cells, rnd((5, 7), seed=3), idx, exc=ValueError)
    check_raises(lambda i: np.unravel_index(i.astype(np.float64), (3, 4)), idx, exc=TypeError)


def runtime_length_uses(x, z):
    y = x[x > 0.5]
    k = min(len(y), 2)
    return (len(y), y.shape, z[:len(y)] + 0, y[:k], k, max(1, len(y)), np.arange(len(y)), np.arange(1, len(y), 2),
            np.arange(2, len(y), dtype=np.float32), y[np.arange(len(y))[::-1]])


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("scale", [1.0, 0.0])  # some over 0.5, or none
def test_a_runtime_length_as_a_number(seed, scale):
    # returned (it used to return its bound), a slice's stop, an np.arange's, max and min of it
    check(runtime_length_uses, rnd(7, F32, seed=seed) * scale, rnd(9, seed=seed))


class _Rows:
    def __init__(self, t):
        self.t = t

    def __len__(self):
        return self.t.shape[0]


def runtime_length_read_by_python(x):
    # Python's int-taking code reads an int subclass by its int value: each took the bound
    n = x[x > 0.5].shape[0]
    return np.float64(len(_Rows(x[x > 0.5]))), np.zeros(operator.index(n)), 0.5 * n, 3.0 - n


@pytest.mark.parametrize("scale", [1.0, 0.0])
def test_a_runtime_length_read_by_python(scale):
    check(runtime_length_read_by_python, rnd(30, seed=2) * scale)


def runtime_lengths_numpy_takes(x, t):
    y = x[x[:, 4] > t]
    n = len(y)
    return (np.full((n, 2), 3.0), np.ones(n) + 1, np.array(n), np.asarray(n), np.reshape(y, (n, 6)),
            np.broadcast_to(y[:, :1], (n, 3)) + 0, len(range(n)), len(range(1, n, 2)),
            np.arange(n).tolist())  # (an arange of its bound's values is folded, not its run-time length)


@pytest.mark.parametrize("t", [0.5, 2.0])  # some rows, none
def test_runtime_lengths_numpy_takes(t):
    check(runtime_lengths_numpy_takes, rnd((12, 6), seed=3), t)


@pytest.mark.parametrize("reps", [(5, 1), 3, (2, 3), 1, 0, (2, 0), (3, 1, 2)])
@pytest.mark.parametrize("t", [0.5, 2.0, -1.0])  # some rows, none, all
def test_tile_of_a_runtime_length(reps, t):
    # MTCNN's np.tile(score[keep], (5, 1)), RetinaFace's bbox_vote: refused before
    x = rnd((12, 6), seed=4)
    check(lambda x, t, reps: (np.tile(x[x[:, 4] > t][:, 0], reps), np.tile(x[x[:, 4] > t], reps),
                              np.tile(x[x[:, 4] > t].T, reps), np.tile(x[x[:, 4] > t][:, :1], reps)),
          x, t, reps, static_argnames=("reps",))


def _count(x, t):
    return len(x[x[:, 4] > t])


@pytest.mark.parametrize("k", [0, 1, -2, 7])
@pytest.mark.parametrize("t", [0.5, 2.0, -1.0])  # some rows, none, all
def test_eye_of_a_runtime_length(k, t):
    # supervision's box_non_max_suppression after a confidence filter: `ious - np.eye(rows)`
    check(lambda x, t, k: (np.ones((_count(x, t),) * 2) - np.eye(_count(x, t)), np.identity(_count(x, t), np.int32),
                           np.eye(_count(x, t), 4, k, dtype=np.uint8), np.eye(3, _count(x, t), k=k, dtype=bool)),
          rnd((12, 6), seed=3), t, k, static_argnames=("k",))


@pytest.mark.parametrize("fn", [  # each took the bound (the rows of x), not the count
    lambda x, t: np.linspace(0, 1, _count(x, t)),
    lambda x, t: np.logspace(0, 1, _count(x, t)),  # (NumPy's own code, that strider does not stand in for)
    lambda x, t: np.tile(np.arange(2), _count(x, t)),
    lambda x, t: tuple(range(_count(x, t))),
    lambda x, t: list(reversed(range(_count(x, t)))),
    lambda x, t: sorted(range(_count(x, t))),
    lambda x, t: max(range(_count(x, t)), default=-1),
    lambda x, t: sum(range(min(5, _count(x, t)))),
    lambda x, t: any(i > 2 for i in range(_count(x, t))),
    lambda x, t: math.gcd(_count(x, t), 6),
    lambda x, t: math.comb(_count(x, t) + 2, 2),
    lambda x, t: {0: "zero"}.get(_count(x, t), "many"),
    lambda x, t: pow(_count(x, t), 2, 7),
])
def test_a_runtime_length_python_or_numpy_would_read_as_its_bound_is_refused(fn):
    with pytest.raises((strider.TraceError, strider.UnsupportedError), match="(range of a bound|length) known "
                       "only when the function runs"):
        strider.compile(fn, strict=True)(rnd((12, 6), seed=3), 0.5)
    for t in (0.5, 2.0):  # NumPy's answer, through a graph break
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", strider.GraphBreakWarning)
            assert_same(fn(rnd((12, 6), seed=3), t), strider.compile(fn, strict=False)(rnd((12, 6), seed=3), t))


@pytest.mark.parametrize("fn", [
    pytest.param(lambda x: "%d kept" % x[x > 0.5].shape[0], id="percent"),
    pytest.param(lambda x: "{:d} kept".format(x[x > 0.5].shape[0]), id="format"),
    pytest.param(lambda x: "%s" % x.sum(), id="percent_of_an_array"),
    pytest.param(lambda x: np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0][:len(x[x > 0.5])]), id="list_sliced"),
])
def test_python_text_or_slices_of_runtime_values_are_refused(fn):
    with pytest.warns(strider.GraphBreakWarning, match="known only when the function runs"):
        got = strider.compile(fn, strict=False)(rnd(7, seed=1))  # NumPy's answer, through a graph break
    assert_same(fn(rnd(7, seed=1)), got)
    with pytest.raises(strider.TraceError, match="known only when the function runs"):
        strider.compile(fn, strict=True)(rnd(7, seed=1))


# ---------------------------------------------------------------------------------------------
# 3. Integer-array and list indexing reads
# ---------------------------------------------------------------------------------------------
X56 = rnd((5, 6), seed=10)
X456 = rnd((4, 5, 6), F32, seed=11)

INDEX_READS = [
    pytest.param(lambda x, i: x[i], (rnd(6), idx(3, 0, 4)), id="1d_i64"),
    pytest.param(lambda x, i: x[i], (X56, idx(3, 0, 4)), id="2d_i64"),
    pytest.param(lambda x, i: x[i], (rnd((5, 6), I64), idx(4, 1, dtype=I32)), id="2d_i32"),
    pytest.param(lambda x: x[[0, 2]], (X56,), id="list"),
    pytest.param(lambda x, i: x[i], (X56, idx(-1, 0, -5, 2)), id="negative"),
    pytest.param(lambda x, i: x[i], (rnd(6, F32), idx(1, 1, 3, 1, 1)), id="repeated"),
    pytest.param(lambda x, i: x[i], (X56, idx()), id="empty_index"),
    pytest.param(lambda x, i: x[i], (X56, idx(0, 4, 2, 1, 3, 0).reshape(2, 3)), id="2d_index"),
    pytest.param(lambda x, i: x[i, :], (X56, idx(2, 0)), id="idx_colon"),
    pytest.param(lambda x: x[:, [0, 2]], (X56,), id="colon_list"),
    pytest.param(lambda x: x[..., [0, 2]], (X456,), id="ellipsis_list"),
    pytest.param(lambda x: x[:, :, (2, 1, 0)], (X456,), id="tuple_in_key"),  # SSD's SwapChannels
    pytest.param(lambda x: (x[(1, 0),], x[:, ()], x[(1, (0, 2))]), (X56,), id="tuples_in_keys"),
    pytest.param(lambda x, i, j: x[i, j], (X56, idx(0, 4, 2).reshape(3, 1), idx(5, 0, 1, 5)), id="broadcast_3x1_4"),
    pytest.param(lambda x, i, j: x[:, i, j], (X456, idx(0, 4, 2), idx(5, 0, 1)), id="colon_i_j"),
    pytest.param(lambda x, i, j: x[i, :, j], (X456, idx(3, 0), idx(5, 1)), id="i_colon_j_moves_first"),
    pytest.param(lambda x, i: x[1, :, i], (X456, idx(5, 1, 2)), id="int_colon_i_moves_first"),
    pytest.param(lambda x, i: x[:, 1, i], (X456, idx(5, 1, 2)), id="colon_int_i_stays"),
    pytest.param(lambda x, i: x[i, 2], (X56, idx(4, 0, 0)), id="i_int"),
    pytest.param(lambda x, i: x[None, i], (X56, idx(4, 1)), id="none_i"),
    pytest.param(lambda x, i: x[..., i, :], (X456, idx(4, 1)), id="ellipsis_i_colon"),
    pytest.param(lambda x, i: np.take(x, i, axis=0), (X56, idx(4, -1, 0)), id="take_axis0"),
    pytest.param(lambda x, i: np.take(x, i, axis=1), (rnd((5, 6), I64), idx(5, 0, 5)), id="take_axis1"),
    pytest.param(lambda x, i: np.take(x, i), (X56, idx(29, 0, 7, 7).reshape(2, 2)), id="take_flat"),
    # a Python int takes a copy, as an index array does: NumPy's result is not a view of x
    pytest.param(lambda x: (np.take(x, 1, axis=0), np.take(x, -1, axis=1), np.take(x, 7)), (X56,), id="take_int"),
    pytest.param(lambda x, i: np.take_along_axis(x, i, axis=1), (X56, rnd((5, 2), I64) % 6), id="take_along_arg"),
    pytest.param(lambda x: np.take_along_axis(x, x.argsort(1)[:, ::-1][:, :2], axis=1), (X56,), id="take_along_top2"),
    pytest.param(lambda x: np.take_along_axis(x, x.argmax(1)[:, None], axis=1), (X456[0],), id="take_along_argmax"),
    pytest.param(lambda x: np.take_along_axis(x, x.argsort(0), axis=0), (X56,), id="take_along_axis0"),
    # rows of a run-time length: the aranges along the other axes have it too
    pytest.param(lambda x: np.take_along_axis(x[x[:, 0] > 0.5], np.argsort(x[x[:, 0] > 0.5], axis=1), 1), (X56,),
                 id="take_along_run_time_rows"),
    pytest.param(lambda x: np.take_along_axis(x[x[:, 0] > 9], np.argsort(x[x[:, 0] > 9], axis=1), 1), (X56[:1],),
                 id="take_along_no_rows_of_one"),
    pytest.param(lambda x: x[np.arange(5), x.argmax(1)], (X56,), id="arange_argmax"),
    pytest.param(lambda x: x[x[:, 0].argsort()], (X56,), id="rows_by_argsort"),
    pytest.param(lambda x: x[:, x.argmax(1)], (X56,), id="colon_argmax"),
]


@pytest.mark.parametrize("fn,args", INDEX_READS)
def test_index_read(fn, args):
    check(fn, *args)


@pytest.mark.parametrize("fn,args", [
    pytest.param(lambda x, i: x[i], (X56, idx(0, 5)), id="past_end"),
    pytest.param(lambda x, i: x[i], (X56, idx(-6, 1)), id="negative_past_start"),
    pytest.param(lambda x: x[:, [0, 6]], (X56,), id="list_axis1"),
    pytest.param(lambda x, i: np.take(x, i, axis=0), (X56, idx(1, 5)), id="take"),
    pytest.param(lambda x, i: np.take_along_axis(x, i, axis=1), (X56, np.full((5, 1), 6, I64)), id="take_along"),
    pytest.param(lambda x, i, j: x[i, j], (X56, idx(0, 1, 2), idx(0, 1)), id="no_broadcast"),
    pytest.param(lambda x, i: x[i], (X56, np.array([0.0, 1.0])), id="float_index"),
    pytest.param(lambda x, i: x[i, :, :], (X56, idx(0, 2)), id="too_many_indices"),  # the `:`s count
    pytest.param(lambda x, i: x[i, :], (X56[0], idx(0, 2)), id="too_many_indices_1d"),
])
def test_index_read_raises(fn, args):
    check_raises(fn, *args, exc=IndexError)


def test_index_read_computed_out_of_range_raises():
    # the bad index is known only at run time
    check_raises(lambda x, i: x[i * 2], X56, idx(1, 3), exc=IndexError)


# ---------------------------------------------------------------------------------------------
# 4. Writes through masks and index arrays
# ---------------------------------------------------------------------------------------------
def _mask_scalar(x, m):
    x[m] = 0.0


def _mask_full_computed(x):
    x[x < 0.3] = 0.0


def _mask_array(x, y, m):
    x[m] = y[m]


def _mask_isub(x, y, m):
    x[m] -= y[m]
    return x[m]


def _mask_column(x, m):
    x[m, 0] = x[m, 1] * 2


def _mask_broadcast_row(x, m):
    x[m] = np.arange(6.0)


def _mask_into_view(x, m):
    x[:, 1:3][m] = -1.0


def _idx_array(x, i, v):
    x[i] = v


def _idx_scalar(x, i):
    x[i] = -1


def _clip_columns(x):
    x[:, [0, 2]] = x[:, [0, 2]].clip(0, 0.5)


def _tuple_columns(x):
    x[:, (0, 2)] = 0.0
    x[(1,), (3, 1)] += 1.0


def _repeated_last_wins(x):
    x[[0, 0, 1]] = [1.0, 2.0, 3.0]


def _repeated_iadd_once(x, i):
    x[i] += 1


def _int_mask_write(x):
    x[x < 0] = 0
    return x.sum()


def _created_idx(i, v):
    z = np.zeros(6)
    z[i] = v
    return z


def _created_mask(x):
    out = x.copy()
    out[out < 0.5] = 0
    return out


def _created_masked_copy(x, m):
    z = np.full((8, 6), -1.0, x.dtype)
    z[m] = x[m]
    return z


def _created_rows_idx(x, i):
    z = np.zeros_like(x)
    z[i, :] = x[i] * 2
    return z


XW = rnd((8, 6), F32, seed=12)
YW = rnd((8, 6), F32, seed=13)

WRITES = [
    pytest.param(_mask_scalar, (XW, M8), id="mask_scalar"),
    pytest.param(_mask_full_computed, (rnd((4, 5), seed=14),), id="mask_full_computed"),
    pytest.param(_mask_array, (XW, YW, M8), id="mask_array"),
    pytest.param(_mask_array, (rnd((8, 6)), rnd((8, 6), seed=15), np.zeros(8, BOOL)), id="mask_array_all_false"),
    pytest.param(_mask_array, (np.zeros((0, 6), F32), np.zeros((0, 6), F32), np.zeros(0, BOOL)), id="mask_zero_length"),
    pytest.param(_mask_isub, (XW, YW, M8), id="mask_isub"),
    pytest.param(_mask_column, (rnd((8, 6)), M8), id="mask_column"),
    pytest.param(_mask_broadcast_row, (rnd((8, 6)), M8), id="mask_broadcast_row"),
    pytest.param(_mask_into_view, (rnd((8, 6), F32), M8), id="mask_into_view"),
    pytest.param(_idx_array, (rnd((5, 6)), idx(3, 0), rnd((2, 6), seed=16)), id="idx_rows"),
    pytest.param(_idx_array, (rnd(6, F32), idx(-1, 2, dtype=I32), np.array([7.0, 8.0], F32)), id="idx_1d_i32"),
    pytest.param(_idx_array, (rnd((5, 6), I64), idx(4, 1), rnd(6, I64, seed=17)), id="idx_broadcast_row"),
    pytest.param(_idx_scalar, (rnd((5, 6), I64), idx(0, 2, 2)), id="idx_scalar"),
    pytest.param(_clip_columns, (rnd((5, 4)) * 2 - 0.5,), id="clip_columns"),
    pytest.param(_tuple_columns, (rnd((5, 4)),), id="tuple_columns"),
    pytest.param(_repeated_last_wins, (rnd(4),), id="repeated_last_wins"),
    pytest.param(_repeated_iadd_once, (rnd(6), idx(1, 1, 3, 1)), id="repeated_iadd_once"),
    pytest.param(_repeated_iadd_once, (rnd((4, 3), I64), idx(0, 0, 2)), id="repeated_iadd_once_rows"),
    pytest.param(_int_mask_write, (rnd((4, 5), I64),), id="int_mask"),
    pytest.param(_created_idx, (idx(5, 0, 3), np.array([1.0, 2.0, 3.0])), id="created_idx"),
    pytest.param(_created_mask, (rnd((4, 5), F32),), id="created_mask"),
    pytest.param(_created_masked_copy, (XW, M8), id="created_masked_copy"),
    pytest.param(_created_rows_idx, (rnd((5, 3)), idx(4, 0)), id="created_rows_idx"),
]


@pytest.mark.parametrize("fn,args", WRITES)
def test_write(fn, args):
    check(fn, *args)


def _mask_wrong_count(x, v):
    x[x > 0.5] = v


@pytest.mark.parametrize("fn,args,exc", [
    pytest.param(_idx_scalar, (rnd((5, 6)), idx(0, 5)), IndexError, id="idx_past_end"),
    pytest.param(_idx_scalar, (rnd(6), idx(2, -7)), IndexError, id="idx_negative_past_start"),
    pytest.param(_repeated_iadd_once, (rnd(6), idx(0, 6)), IndexError, id="iadd_past_end"),
    pytest.param(_idx_array, (rnd((5, 2)), idx(1, 2), np.ones((3, 2))), ValueError, id="idx_value_shape"),
    pytest.param(_mask_scalar, (rnd((8, 6)), M8[:6]), IndexError, id="mask_wrong_length"),
])
def test_write_raises_and_leaves_arguments(fn, args, exc):
    check_raises_untouched(fn, *args, exc=exc)


def test_mask_write_of_fixed_length_values_is_refused():
    # NumPy compares the mask's count with len(v) when it runs; strider refuses while tracing
    # (a length known only at run time against a fixed one), naming the line
    with pytest.raises(strider.UnsupportedError, match="known only at run time"):
        strider.compile(_mask_wrong_count)(rnd(8, seed=18), np.ones(20))


# ---------------------------------------------------------------------------------------------
# 5. Sorting (default kind only on distinct keys; stable kind with ties; NaNs sort last)
# ---------------------------------------------------------------------------------------------
DISTINCT = rnd((5, 6), F32, seed=19)
TIES = np.random.default_rng(20).integers(0, 3, (6, 5))
NANS = np.array([3.0, NAN, 1.0, -INF, NAN, 2.0, INF, 0.5, NAN])


@pytest.mark.parametrize("fn,args", [
    pytest.param(lambda x: np.sort(x), (rnd(9),), id="sort_1d"),
    pytest.param(lambda x: (np.sort(x, axis=0), np.sort(x, axis=1), np.sort(x, axis=-1)), (DISTINCT,), id="sort_axes"),
    pytest.param(lambda x: np.sort(x, axis=None), (DISTINCT,), id="sort_flat"),
    pytest.param(lambda x: (np.sort(x), np.sort(x, axis=0, kind="stable"), np.argsort(x, axis=0, kind="stable")),
                 (TIES.astype(I32),), id="sort_int32_ties"),
    pytest.param(lambda x: x.argsort(), (rnd(9),), id="argsort_method"),
    pytest.param(lambda x: (np.argsort(x, axis=0), np.argsort(x, axis=1), np.argsort(x, axis=-1)), (DISTINCT,),
                 id="argsort_axes"),
    pytest.param(lambda x: (np.argsort(x), np.argsort(x, axis=0)),
                 (np.random.default_rng(21).permutation(20).reshape(4, 5) - 7,),
                 id="argsort_int64_distinct"),
    pytest.param(lambda x: (np.argsort(x, kind="stable"), np.argsort(x, axis=0, kind="stable")), (TIES,),
                 id="argsort_stable_int_ties"),
    pytest.param(lambda x: (x.argsort(kind="stable"), np.argsort(x, axis=None, kind="stable")),
                 (TIES.astype(F32) * 0.5,), id="argsort_stable_float_ties"),
    pytest.param(lambda x: (np.sort(x), np.argsort(x, kind="stable")), (NANS,), id="nans_f64"),
    pytest.param(lambda x: (np.sort(x), np.argsort(x, kind="stable")), (NANS.astype(F32),), id="nans_f32"),
    pytest.param(lambda x: np.argsort(x), (np.array([3.0, NAN, 1.0, -INF, 2.0], F32),), id="argsort_one_nan"),
    pytest.param(lambda x: (np.sort(x, axis=0), np.argsort(x, axis=0, kind="stable")),
                 (NANS[:8].reshape(4, 2),), id="nans_axis0"),
    pytest.param(lambda x: (np.sort(x), np.argsort(x)), (np.zeros(0, F32),), id="zero_length"),
    pytest.param(lambda s: np.argsort(-s)[:3], (rnd(9, F32),), id="topk_neg"),
    pytest.param(lambda s: s.argsort()[::-1][:3], (rnd(9),), id="topk_reversed"),
    pytest.param(lambda s: np.argsort(-s, kind="stable")[:4], (TIES[0].astype(F64),), id="topk_stable_ties"),
])
def test_sort(fn, args):
    check(fn, *args)


def test_sort_order_gathers_boxes():
    def f(boxes, scores):
        order = scores.argsort()[::-1]
        return boxes[order], scores[order][:4]

    check(f, rnd((9, 4), F32, seed=22), rnd(9, F32, seed=23))


# ---------------------------------------------------------------------------------------------
# 6. Run-time lengths flowing on: y = x[mask] (its length known only at run time) used further
# ---------------------------------------------------------------------------------------------
def _sel(x):
    return x[x[:, 4] > 0.5]


def _inplace_scale(x):
    y = _sel(x)
    y[:, 5:] *= y[:, 4:5]
    return y


def _top3_by_column(x):
    y = _sel(x)
    return y[y[:, 4].argsort()[::-1][:3]]


def _row_slices(x):
    # slices of the run-time axis with a positive step from a known start: NumPy's views of it
    sel = _sel(x)
    return sel, sel[2:], sel[:3], sel[5:40:3, 1:4], sel[2:][::2], sel[:100, None, 2], sel.T[:, 1:]


def _writes_through_row_slices(x):
    sel = _sel(x)
    odd = sel[1::2]
    odd[:, 0] = -1.0
    sel[::3, 1] += 10
    return sel, odd


RUNTIME = [
    pytest.param(lambda x: _sel(x), {}, id="return_y"),
    pytest.param(lambda x: np.exp(_sel(x)) * 2 - _sel(x), {"rtol": 1e-6}, id="elementwise"),
    pytest.param(lambda x: _sel(x)[:, 0:2] * 2, {}, id="slice_cols"),
    pytest.param(lambda x: _sel(x)[:, 4:5] * _sel(x)[:, 5:], {}, id="col_broadcast"),
    pytest.param(_inplace_scale, {}, id="inplace_cols"),
    pytest.param(_row_slices, {}, id="row_slices_are_views"),
    pytest.param(_writes_through_row_slices, {}, id="writes_through_row_slices"),
    pytest.param(lambda x: (_sel(x).max(1), _sel(x).argmax(1)), {}, id="max_argmax_1"),
    pytest.param(lambda x: (_sel(x).sum(0), _sel(x).sum()), {"rtol": 1e-5}, id="sums"),
    pytest.param(lambda x: _sel(x) - x.mean(0), {"rtol": 1e-6, "atol": 1e-6}, id="minus_static"),
    pytest.param(lambda x: (_sel(x)[:3], _sel(x)[:100]), {}, id="head_k"),
    pytest.param(lambda x: _sel(x)[::-1], {}, id="reversed"),
    pytest.param(_top3_by_column, {}, id="top3_by_column"),
    pytest.param(lambda x: _sel(_sel(x)[:, 1:]), {}, id="mask_of_masked"),
    pytest.param(lambda x: (np.sort(_sel(x)[:, 5]), np.nonzero(_sel(x)[:, 5] > 0.5)[0]), {}, id="sort_nonzero"),
    pytest.param(lambda x: (x[x[:, 4] > 0.5], x[x[:, 5] > 0.3, :2], x[:, 0][x[:, 0] > 0.8]), {}, id="several_lengths"),
    pytest.param(lambda x: (_sel(x).reshape(-1, 7), _sel(x).reshape(-1, 1, 7), _sel(x)[:, :1].reshape(-1)), {},
                 id="reshape_keeping_the_length"),
]


def _runtime_inputs():
    x = rnd((12, 7), F32, seed=24)
    none = x.copy()
    none[:, 4] = 0.0
    return {"some": x, "none": none, "zero_length": x[:0].copy()}


@pytest.mark.parametrize("fn,tol", RUNTIME)
def test_runtime_length(fn, tol):
    for kind, x in _runtime_inputs().items():
        try:
            check(fn, x, **tol)
        except Exception as e:
            e.add_note(f"input: {kind} rows selected")
            raise


def test_runtime_length_results_outlive_the_next_call():
    # the run-time-length temporaries run in memory the function keeps between calls: each call's
    # results are copied out of it, views of one result still one array, and hold no more than
    # the rows they show
    def f(x, t):
        sel = x[x[:, 4] > t]
        return sel, sel[:, :2], sel[:, 4]

    x = rnd((5000, 7), F32, seed=27)
    g = check(f, x, 0.75)
    first = g(x, 0.75)
    kept = [r.copy() for r in first]
    g(x[::-1].copy(), 0.1)
    for was, now in zip(kept, first):
        assert_same(was, now)
    if TARGET != "cuda":
        owner = first[0].base if first[0].base is not None else first[0]
        assert owner.nbytes <= first[0].nbytes + 64, "a result holds its bound, not its rows"


def test_runtime_length_sliced_by_an_argument():
    # a bound the caller passes specializes: the slices are views all the same
    def f(x, k):
        d = _sel(x)
        return d[np.argsort(-d[:, 4], kind="stable")][:k], d[1:k:2], d[k:]

    for kind, x in _runtime_inputs().items():
        for k in (3, 100):
            check(f, x, k)


def test_a_unit_step_slice_of_a_runtime_length_is_its_length_less_its_start():
    # x[1:], x[:k]: min(start, n) and max(stop - start, 0), without rounding up or dividing by
    # the step (py_cpu_nms's order[1:] each trip); a step of 2 divides
    def f(x):
        d = _sel(x)
        return d[1:] * 2, d[:3] + 1

    for x in _runtime_inputs().values():
        check(f, x)
    ir = strider.compile(f).explain(next(iter(_runtime_inputs().values()))).ir
    assert "floor_divide(" not in ir, ir
    assert "floor_divide(" in strider.compile(lambda x: _sel(x)[1::2] + 1).explain(
        next(iter(_runtime_inputs().values()))).ir


@pytest.mark.parametrize("name", ["max", "min", "argmax", "argmin"])
def test_reductions_without_identity_over_a_runtime_length(name):
    # the checked length is the one the reduction reads (compiled, since it has an element);
    # none selected: NumPy's ValueError, before anything after it
    def f(x, t):
        sel = x[x[:, 4] > t]
        return getattr(sel, name)(), getattr(sel, name)(axis=0), getattr(sel[:, 2], name)()

    x = rnd((40, 6), F32, seed=28)
    x[3, 1] = NAN
    g = check(f, x, 0.5)
    check(f, x, 0.0)
    check_raises(f, x, 2.0, exc=ValueError)
    assert "no identity" not in str(g.explain(x, 0.5)), "the reductions compile"



def _masks_of_several_axes(x, t):
    y = _sel(x)
    z = _sel(x)[:, 1::2]  # strided
    w = _sel(x).T  # its run-time length second
    z[z > t] -= 1.0  # through a view, into y's rows
    y[:, :3][y[:, :3] < 0.2] = 5.0
    r = np.stack([_sel(x), _sel(x)], axis=2)
    return y[y > t], z[z > t], w[w > t], y, x, r[r[..., 0] > t]


def test_masks_of_several_axes_over_a_runtime_length():
    for kind, x in _runtime_inputs().items():
        try:
            check(_masks_of_several_axes, x, 0.6)
        except Exception as e:
            e.add_note(f"input: {kind} rows selected")
            raise


def _by_a_mask_and_its_transpose(preds, mask):
    # mmpose's _calc_distances: `distances[mask.T] = np.linalg.norm(...[mask], axis=-1)`
    distances = np.full(mask.T.shape, -1, dtype=np.float32)
    distances[mask.T] = np.sqrt((preds[mask] ** 2).sum(-1))
    return distances, preds[..., 0][mask] - preds[..., 1].T[mask.T]


@pytest.mark.parametrize("t", [0.5, 2.0, -1.0])  # some, none, all
def test_a_mask_and_its_transpose_select_as_many(t):
    # the same elements in another order: one count (they were refused as lengths that differ)
    preds = rnd((4, 5, 2), F32, seed=27)
    check(_by_a_mask_and_its_transpose, preds, rnd((4, 5), seed=28) < t)


def test_runtime_length_concatenate():
    def f(a, b):
        m = b[:, 0] > 0.5
        return np.concatenate((a[m], b[m]), axis=1)

    check(f, rnd((10, 4), F32, seed=25), rnd((10, 3), F32, seed=26))
    check(f, np.zeros((0, 4)), np.zeros((0, 3)))


def joined_levels(scores, boxes, t):
    """SCRFD's tail: each level's survivors listed, the lists stacked, then joined side by side
    (two run-time lengths the program cannot prove equal: checked when it runs)."""
    scores_list, boxes_list = [], []
    for level in range(2):
        pos = np.where(scores[level] >= t)[0]
        scores_list.append(scores[level][pos])
        boxes_list.append(boxes[level][pos])
    return np.hstack((np.vstack(boxes_list), np.vstack(scores_list)))


def two_masks_joined(a, b, t, u):
    return np.concatenate((a[a[:, 0] > t], b[b[:, 0] > u]), axis=1)


def two_masks_stacked(a, b, t, u):
    return np.stack((a[a > t], b[b > u]), axis=-1)


def test_runtime_lengths_a_join_needs_equal():
    check(joined_levels, rnd((2, 12, 1), F32, seed=27), rnd((2, 12, 4), F32, seed=28), 0.5)
    a, b = rnd((10, 2), seed=29), rnd((10, 3), seed=30)
    t, u = np.sort(a[:, 0])[3], np.sort(b[:, 0])[3]  # six rows each
    check(two_masks_joined, a, b, t, u)
    check_raises(two_masks_joined, a, b, t, np.sort(b[:, 0])[4], exc=ValueError)
    check(two_masks_stacked, a[:, 0], b[:, 0], t, u)
    check_raises(two_masks_stacked, a[:, 0], b[:, 0], t, np.sort(b[:, 0])[4], exc=ValueError)


def columns_of_masked_rows(b, t):
    # a list of columns beside `:` of a run-time length keeps that length (it gave the bound's rows)
    boxes = b[b[:, 0] > t]
    return boxes[:, [0, 1, 2, 3, 0, 3, 2, 1]], boxes[:, [0, 2]].max(initial=0.0), boxes[[-1], :] if len(boxes) else boxes


@pytest.mark.parametrize("t", [0.3, 0.95, 2.0], ids=["many", "one", "none"])
def test_columns_of_masked_rows_keep_their_length(t):
    check(columns_of_masked_rows, rnd((12, 4), seed=31), t)


def reshaped_at_run_time(b, t):
    boxes = b[b[:, 0] > t]
    n = len(boxes)
    pairs = boxes[:, [0, 1, 2, 3, 0, 3, 2, 1]].reshape(n * 4, 2)  # rows split
    xy = np.ones((n * 4, 3))
    xy[:, :2] = pairs
    back = (xy[:, :2] / xy[:, 2:3]).reshape(n, 8)  # rows merged
    x = back[:, [0, 2, 4, 6]]
    cols = np.concatenate((x.min(1), x.max(1))).reshape(2, n).T  # a run-time length moved inward
    return pairs, back, cols, boxes.reshape(-1, 2), boxes.reshape(-1), np.zeros((n + 2, n // 2 + 1)).shape


def warp_boxes(boxes, ori_shape):
    # PicoDet's (deploy/python/picodet_postprocess.py), without the affine matrix
    width, height = ori_shape[1], ori_shape[0]
    n = len(boxes)
    if n:
        xy = np.ones((n * 4, 3))
        xy[:, :2] = boxes[:, [0, 1, 2, 3, 0, 3, 2, 1]].reshape(n * 4, 2)
        xy = (xy[:, :2] / xy[:, 2:3]).reshape(n, 8)
        x = xy[:, [0, 2, 4, 6]]
        y = xy[:, [1, 3, 5, 7]]
        xy = np.concatenate((x.min(1), y.min(1), x.max(1), y.max(1))).reshape(4, n).T
        xy[:, [0, 2]] = xy[:, [0, 2]].clip(0, width)
        xy[:, [1, 3]] = xy[:, [1, 3]].clip(0, height)
        return xy.astype(np.float32)
    else:
        return boxes


def warped_in_place(dets, t):
    picked = dets[dets[:, 4] > t]
    picked[:, :4] = warp_boxes(picked[:, :4], (48, 64))  # float32 or float64 rows, by the branch
    return picked, np.array([len(picked), 3])


@pytest.mark.parametrize("t", [0.3, 0.95, 2.0], ids=["many", "one", "none"])
def test_run_time_lengths_through_reshapes(t):
    b = np.hstack([rnd((12, 4), seed=31) * 80, rnd((12, 1), seed=32)])
    if t == 0.95:
        b[3, 0], b[3, 4] = 0.99, 0.99
    check(reshaped_at_run_time, b[:, :4] / 80, t)
    check(warped_in_place, b, t)
    check_raises(lambda x, t: x[x[:, 0] > t].reshape(-1, 5), b[:, :4] / 80, 0.001, exc=ValueError)


def mask_overlaps(m1, b):
    # matterport's compute_overlaps_masks after trim_zeros: (h, w, n) masks of a run-time count
    # reshaped to (-1, n), whose -1 is then known while tracing, multiplied
    b2 = b[..., b.any(axis=(0, 1))]
    m2 = np.reshape(b2 > 0.5, (-1, b2.shape[-1])).astype(np.float32)
    return np.dot(m1.T, m2), m1.T @ m2, b2.reshape(b2.shape[-1], -1).shape


@pytest.mark.parametrize("kept", [4, 2, 0])
def test_a_reshape_whose_minus_one_is_known_while_tracing(kept):
    rng = np.random.default_rng(kept)
    b = rng.random((8, 8, 4))
    b[..., kept:] = 0
    m1 = rng.random((64, 3)).astype(np.float32)
    if kept:
        check(mask_overlaps, m1, b, rtol=2e-6)  # (matmul's sums: README)
    else:  # NumPy's -1 beside a length 0
        check_raises(mask_overlaps, m1, b, exc=ValueError)


def one_kept_as_0d(x, t):
    kept = x[x > t]
    r = kept.reshape(())  # a 0-d array viewing the one element (the fuzzer saw a scalar)
    r += 1
    return r, kept, kept.reshape(()) * 2


@pytest.mark.parametrize("t", [2.5, 0.5, 9.0], ids=["one", "many", "none"])
def test_a_run_time_length_reshaped_to_0d(t):
    if t == 2.5:
        check(one_kept_as_0d, np.array([1.0, 3.0, 2.0]), t)
    else:
        check_raises(one_kept_as_0d, np.array([1.0, 3.0, 2.0]), t, exc=ValueError)


def reductions_from_initial(x, t):
    a = x[x > t]
    return (a.max(initial=0.0), np.min(a, initial=5.0), a.sum(initial=1.0), x.max(initial=0.5), x[:0].max(initial=-1.0),
            np.max(x.reshape(2, 5), axis=1, initial=0.3),
            x.reshape(2, 5)[:, x[:5] > t].max(axis=1, initial=0.0, keepdims=True),
            np.prod(np.nan_to_num(a * 10).astype(np.int64), initial=2))


@pytest.mark.parametrize("t", [0.3, 0.95, 2.0], ids=["many", "one", "none"])
@pytest.mark.parametrize("nan", [False, True])
def test_reductions_from_initial(t, nan):
    x = np.arange(10) / 10
    if nan:
        x[3] = np.nan
    check(reductions_from_initial, x, t)
    check(reductions_from_initial, x.astype(np.float32), t)


def test_reductions_from_initial_of_no_rows():
    # a mask of an argument with no rows: the run-time length is bounded by 0, so the reduction
    # reads nothing and gives initial
    check(lambda x: (x[x > 0].max(initial=-100), x[x[:, 0] > 0].min(axis=0, initial=50)), np.zeros((0, 4), np.float32))
    check_raises(lambda x: (x[x > 0].max(), x[x > 0].max(initial=-100)), np.zeros(0), exc=ValueError)


def run_time_rows_indexed(a, t):
    v = a[a[:, 0] > t]
    first = v[0]  # a view at a static position, checked in range when the function runs
    v[0, 1] = 7
    return first, v, v[..., 1], v[0, ...], v[None, ..., 0], v[:, 1].var(), np.broadcast_to(v[:, :1], (v.shape[0], 3))


def run_time_rows_broadcast(a, t):
    v = a[a > t]
    a[:0] = v[:0] + 1
    return np.broadcast_to(v, (2,))


@pytest.mark.parametrize("t", [-5, 0, 5], ids=["all", "some", "none"])
def test_run_time_rows_indexed_as_numpy_does(t):
    a = np.array([[3, -1], [2, 5], [-4, 1]], np.int32)
    if t < 5:
        check(run_time_rows_indexed, a, t)
    else:
        check_raises(run_time_rows_indexed, a, t, exc=IndexError)
    check(run_time_rows_broadcast, np.array([2.0, 1.0, 0.0]), 0.5)
    check_raises(run_time_rows_broadcast, np.array([2.0, 1.0, 0.0]), -0.5, exc=ValueError)


def negative_indices_beside_run_time_rows(b, t):
    # a negative index on a static axis beside a run-time one (it read and wrote the element
    # before the row's start: v[-1, -1] gave the next row's first)
    v = b[b[:, 0] > t]
    r = (v[-1, -1], v[:, -1], v[0, -2], v[-1].copy())
    v[-1, -1] = 0
    v[0, -2] += 10
    return r, v, v.astype(np.float16).var(), v.astype(np.float16).std(ddof=1)


def last_row_then_written(b, t):
    v = b[b[:, 0] > t]
    last = v[-1]  # NumPy's view; strider's copy, which shows the write all the same
    v[-1, -1] = 0
    return last


def written_through_a_reshape(b, t):
    v = b[b[:, 0] > t]
    cols = np.concatenate((v[:, 0], v[:, 1])).reshape(2, -1)  # NumPy's: a view of the join
    cols[0] = 0
    copied = v.T.reshape(-1)  # NumPy's: a copy (v.T is not contiguous)
    copied[0] = 5
    return v


def join_read_after_a_write_through_its_reshape(b, t):
    v = b[b[:, 0] > t]
    joined = np.concatenate((v[:, 0], v[:, 1]))
    joined.reshape(2, -1)[0] = 0
    return joined


def flipped_rows(a, t):
    v = a[a[:, 0] > t]
    return np.flip(v, 0) * 1, np.flip(v) + 0, np.flipud(v).sum(0), np.flip(a[a[:, 1] > t])


@pytest.mark.parametrize("t", [0, 2], ids=["some", "one"])
def test_negative_indices_beside_run_time_rows(t):
    b = np.array([[3, 1], [-1, 2], [2, 7], [5, 8]])
    check(negative_indices_beside_run_time_rows, b, t)
    check(last_row_then_written, b, t)  # a copy standing for a view, gathered again after a write to what it views
    check(written_through_a_reshape, b, t)
    check(flipped_rows, b, t)
    with pytest.raises(strider.TraceError, match="NumPy's array would show the write"):
        strider.compile(join_read_after_a_write_through_its_reshape, strict=True)(b.copy(), t)


# ---------------------------------------------------------------------------------------------
# 7. Detection-head prologues
# ---------------------------------------------------------------------------------------------
def xywh2xyxy(x):
    y = np.empty_like(x)
    y[:, 0] = x[:, 0] - x[:, 2] / 2
    y[:, 1] = x[:, 1] - x[:, 3] / 2
    y[:, 2] = x[:, 0] + x[:, 2] / 2
    y[:, 3] = x[:, 1] + x[:, 3] / 2
    return y


def yolov5_prologue(pred, conf_thres, max_det=30):
    xc = pred[..., 4] > conf_thres
    x = pred[xc]
    x[:, 5:] *= x[:, 4:5]  # conf = obj_conf * cls_conf
    box = xywh2xyxy(x[:, :4])
    conf = x[:, 5:].max(1, keepdims=True)
    j = x[:, 5:].argmax(1)[:, None]
    x = np.concatenate((box, conf, j.astype(np.float32)), 1)[conf.reshape(-1) > conf_thres]
    return x[x[:, 4].argsort(kind="stable")[::-1][:max_det]]


def _yolo_pred():
    rng = np.random.default_rng(27)
    pred = rng.random((200, 85), np.float32)
    pred[:, :4] *= 640
    return pred


@pytest.mark.parametrize("conf_thres", [0.25, 0.9, 1.0], ids=["capped", "under_max_det", "none"])
def test_yolov5_prologue(conf_thres):
    check(lambda p: yolov5_prologue(p, conf_thres), _yolo_pred(), rtol=1e-6)


def score_topk_head(boxes, scores, thr, k=10):
    keep = scores > thr
    s = scores[keep]
    b = boxes[keep]
    order = np.argsort(-s, kind="stable")[:k]
    return b[order], s[order]


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("thr", [0.3, 0.9, 1.0], ids=["over_k", "under_k", "empty"])
def test_score_topk_head(thr, dtype):
    rng = np.random.default_rng(28)
    boxes = (rng.random((50, 4)) * 100).astype(dtype)
    scores = rng.integers(0, 20, 50).astype(dtype) / 19  # ties: the stable order decides
    check(lambda b, s: score_topk_head(b, s, thr), boxes, scores)


# ---------------------------------------------------------------------------------------------
# 8. Checks when the function runs: assert on traced values, IndexError after earlier writes
# ---------------------------------------------------------------------------------------------
def check_raises_like_numpy(fn, *args, exc):
    """NumPy and strider both raise `exc` with the same message, leaving the arguments alike (the
    writes before the failing line done, those after it not)."""
    results = []
    for run in (fn, lambda *a: strider.compile(fn, target=TARGET)(*a)):
        copies = clone_args(args)
        with pytest.raises(exc) as info, np.errstate(all="ignore"):
            run(*copies)
        results.append((str(info.value), copies))
    assert results[0][0] == results[1][0], results
    for i, (a, b) in enumerate(zip(results[0][1], results[1][1])):
        compare(a, b, what=f"argument {i} after the {exc.__name__}")


def test_assert_passes_like_python():
    check(assert_positive, rnd(5) + 0.1, np.zeros(3))
    check(assert_bare, rnd(5) * 0.5, np.zeros(3))


@pytest.mark.parametrize("fn", [assert_positive, assert_bare])
def test_assert_fails_after_the_writes_before_it(fn):
    x = rnd(5) - 0.5 if fn is assert_positive else rnd(5) + 1.0
    check_raises_like_numpy(fn, x, np.zeros(3), exc=AssertionError)


@pytest.mark.parametrize("fn", [assert_positive, assert_bare])
def test_an_assert_failing_in_a_compiled_call_names_its_line(fn):
    # OC-SORT's giou_batch on degenerate boxes, after a call that compiled it: the error's note
    # names the assert's file:line, as NumPy's traceback shows it (its message is the user's alone)
    f = strider.compile(fn, target=TARGET)
    f(rnd(5) + 0.1 if fn is assert_positive else rnd(5) * 0.5, np.zeros(3))
    with pytest.raises(AssertionError) as info:
        f(rnd(5) - 0.5 if fn is assert_positive else rnd(5) + 1.0, np.zeros(3))
    line = fn.__code__.co_firstlineno + 2
    assert info.value.args == (("x must be positive",) if fn is assert_positive else ())
    assert any(f"assert_functions.py:{line}: the assert that failed" in note for note in info.value.__notes__)


def test_assert_with_a_computed_message_names_its_line():
    f = strider.compile(assert_computed_message)
    y = np.zeros(3)
    with pytest.raises(AssertionError, match=r"assert x.min\(\) > 0, f\"x has"):
        f(rnd(4) - 1.0, y)
    assert y[2] == 5.0
    np.testing.assert_array_equal(f(rnd(4) + 1.0, y), (rnd(4) + 1.0) * 2)


def test_index_error_after_earlier_writes():
    def f(x, i, y):
        y[0] = 7.0
        return x[i]

    check_raises_like_numpy(f, rnd(5), idx(1, 9), np.zeros(2), exc=IndexError)


# ---------------------------------------------------------------------------------------------
# 9. A sort sliced to its head is a top-k selection (the same answer as the whole sort)
# ---------------------------------------------------------------------------------------------
TIES = (np.random.default_rng(30).integers(0, 6, 300) / 2).astype(F32)


@pytest.mark.parametrize("fn", [
    pytest.param(lambda s: np.argsort(s, kind="stable")[:7], id="head"),
    pytest.param(lambda s: s.argsort(kind="stable")[::-1][:7], id="reversed_head"),
    pytest.param(lambda s: np.sort(s)[::-1][:250], id="most_of_it"),
    pytest.param(lambda s: np.argsort(-s, kind="stable")[:400], id="more_than_all"),
    pytest.param(lambda s: (s.argsort(kind="stable")[:5], s.argsort(kind="stable")), id="head_and_whole"),
    pytest.param(lambda s: s[s > 1].argsort(kind="stable")[::-1][:9], id="runtime_length"),
    pytest.param(lambda s: s[s > 9].argsort(kind="stable")[::-1][:9], id="runtime_empty"),
    pytest.param(lambda s: (s[s > 1].argsort(kind="stable")[::-1], np.sort(s[s > 1])[::-1]), id="runtime_reversed"),
    pytest.param(lambda s: (lambda v: (v[0:300], v, v[:300][::2]))(np.sort(s)), id="whole_is_a_view"),
])
def test_top_k(fn):
    check(fn, TIES)


def _head_written(s):
    v = np.sort(s)
    w = v[:3]
    w *= 0
    return v


def _heads_read(s):
    order = np.argsort(-s, kind="stable")
    v = np.sort(s)
    return order[:5] * 2, v[::-1][:4] + 1, v[-3:].sum(), v[2:6]


def _tail_read(s):
    v = np.sort(s)
    return v[::-1][:4] + 1, v[-3:].sum()


def test_a_sort_read_only_in_part_is_selected_and_its_heads_are_views():
    # NumPy's head is a view of the sorted array: a write through it reaches the array, a head
    # returned shares its memory, and select_sort_heads selects only what the readers read
    check(_head_written, TIES)
    check(_heads_read, TIES)
    check(_tail_read, TIES)
    # (axes [reversed, k, 1]: the default kind's ties in NumPy's order; the whole sort: k -1)
    for fn, selected in ((_heads_read, "axes=[0,5]"), (_tail_read, "axes=[1,4,1]"), (_head_written, "axes=[0,-1,1]")):
        f = strider.compile(fn)
        f(TIES)
        ir = f.explain(TIES).ir
        assert selected in ir, ir


def test_a_write_into_a_top_k_of_a_runtime_length_is_refused_not_lost():
    with pytest.raises(strider.UnsupportedError, match="first k elements of a sort of a run-time length"):
        strider.compile(lambda s: _head_written(s[s > 1]), target=TARGET)(TIES)


def test_reverse_of_a_runtime_length_sort_is_the_reversed_order():
    # a copy either way: the sort's reversed order itself, no gather of the forward one
    f = strider.compile(lambda s: s[s > 1].argsort(kind="stable")[::-1])
    f(TIES)
    ir = f.explain(TIES).ir
    assert "axes=[1,-1]" in ir and "take(" not in ir, ir


@pytest.mark.parametrize("dtype", [F32, F64, I64, np.uint8, np.float16])
def test_gathers_fuse_with_their_consumers(dtype):
    # rows and elements gathered at indices of every sign, from contiguous, strided and reversed
    # sources, at a fixed and at a run-time length: compiled with the math that consumes them
    def f(boxes, scores, order, t):
        keep = order[scores[order] > t]
        b = boxes[keep]
        w = boxes[order, 2] - boxes[order, 0]
        return b * 2, boxes[::-1][order] + 1, w, scores[::2][order % 10] * w, scores[keep].max()

    rng = np.random.default_rng(31)
    boxes = (rng.random((20, 4)) * 50).astype(dtype)
    scores = (rng.random(20) * 100).astype(dtype)
    order = rng.integers(-20, 20, 30)
    g = check(f, boxes, scores, order, dtype(20))
    check_raises(f, boxes, scores, order, dtype(101), exc=ValueError)  # none kept: max raises
    if TARGET == "cpu":  # a GPU's stages keep each take alone (its own kernel)
        stages = str(g.explain(boxes, scores, order, dtype(20))).split("== stages")[1]
        assert "take runs as a stage of its own" not in stages
        fused = [s for s in stages.split("stage ") if "take(" in s and "multiply(" in s]
        assert fused, "a gather shares its stage with the product that consumes it"


def test_gathers_keep_numpys_order_with_writes_to_their_source():
    # the gathered values are the source's before the write that follows them, and after the one
    # before them: each write starts a stage of its own
    def f(x, i):
        a = x[i] * 2
        x[:, 1] = a[:, 0]
        b = x[i, 1] + x[i, 0]
        x[i[0]] = b[:4]
        return a, b

    x = rnd((6, 4), F64, seed=32)
    check(f, x, idx(5, 0, -1, 2, 2, 3))


def test_gathers_of_rows_of_a_runtime_length():
    # rows of a transposed selection: their own axis has the run-time length, in the gather's
    # view of its source too
    def f(x, t, i):
        s = x[x[:, 0] > t]
        return s.T[i] * 2, (s.T[i] + 1).sum(1)

    x = rnd((30, 4), F64, seed=33)
    g = check(f, x, 0.5, idx(3, 0, -1, 2, 2))
    if TARGET == "cpu":  # the CPU's gathers, written over their output's domain
        gathers = [line for line in str(g.explain(x, 0.5, idx(3, 0, -1, 2, 2))).splitlines() if "axes=[1,4]" in line]
        assert gathers and all(re.search(r"take\(%s\d+\[5,\?%s\d+<=30\]", line) for line in gathers), gathers


def mtcnn_pad(total_boxes, w, h):
    # MTCNN's pad (facenet's detect_face.py): writes through .flat at np.where's places
    tmpw = (total_boxes[:, 2] - total_boxes[:, 0] + 1).astype(np.int32)
    tmph = (total_boxes[:, 3] - total_boxes[:, 1] + 1).astype(np.int32)
    numbox = total_boxes.shape[0]
    dx = np.ones((numbox), dtype=np.int32)
    edx = tmpw.copy().astype(np.int32)
    x = total_boxes[:, 0].copy().astype(np.int32)
    ex = total_boxes[:, 2].copy().astype(np.int32)
    tmp = np.where(ex > w)
    edx.flat[tmp] = np.expand_dims(-ex[tmp] + w + tmpw[tmp], 1)
    ex[tmp] = w
    tmp = np.where(x < 1)
    dx.flat[tmp] = np.expand_dims(2 - x[tmp], 1)
    x[tmp] = 1
    return dx, edx, x, ex, tmph


def flat_uses(a, i):
    b = a.copy()
    b.flat[i] = 7
    b.flat[[0, 5]] = np.array([[1.5], [2.5]])
    return b, a.flat[3], a.flat[1:4], [v for v in a[:2, :2].flat], len(a.flat)


def test_flat():
    """x.flat read (a copy), iterated and written where x is contiguous or 1-d, values flattened
    (refused before: ndarray.flat)."""
    rng = np.random.default_rng(9)
    for k in range(2):
        boxes = np.concatenate([rng.uniform(-10, 100, (20, 2)), rng.uniform(50, 140, (20, 2))], 1)
        check(mtcnn_pad, boxes, 120, 110)
    check(flat_uses, np.arange(12.0).reshape(3, 4), 2)
    with pytest.raises(strider.UnsupportedError, match="x.flat of an array that is not contiguous"):
        strider.compile(lambda a: a.T.flat[2], strict=True, target=TARGET)(np.arange(12.0).reshape(3, 4))


def best_class_scores(p, t):
    # OpenVINO model API's YOLO decoding: each kept row's best class score, picked with
    # np.arange(len(v)) beside the argmax (both of the kept rows' length)
    v = p[np.nonzero(p[:, 4] > t)[0]]
    c = v[:, 5:] * v[:, 4:5]
    ids = np.argmax(c, axis=1)
    return c[np.arange(len(v)), ids], np.arange(1, len(v) + 1) * ids


def tracks_by_arange(b):
    # DeepSORT's iou_cost: a Python list indexed by the items of np.arange(len(tracks))
    tracks = [b[i] for i in range(len(b))]
    cost = np.zeros((len(tracks), 4))
    for row, track_idx in enumerate(np.arange(len(tracks))):
        cost[row, :] = tracks[track_idx] * 2
    return cost, tracks[np.arange(3)[-1]]


def test_aranges_of_lengths_and_of_known_positions():
    """np.arange(len(v)) of a run-time length is v's own length: it broadcasts against v's rows
    (refused before as another length); an int np.arange of known bounds has known items, which
    index a Python list (refused before as an index computed from the data)."""
    p = rnd((60, 9), F32, seed=41)
    for t in (0.5, 2.0):
        check(best_class_scores, p, t)
    check(tracks_by_arange, np.arange(12.0).reshape(3, 4))


def _gather_of_at_most_one(a, x):
    idx = np.flatnonzero(a > 0.5)  # a run-time length bounded by 1: 0 or 1
    return x[idx] * 2, x[idx].sum()


@pytest.mark.parametrize("a", [np.array([0.1]), np.array([0.9])])
def test_a_run_time_length_bounded_by_one_keeps_its_axis(a):
    # fuse_stages once dropped such an axis as a unit one: the gather ran once where it should
    # not run, at an index nobody wrote (a crash, found by the fuzzer's loops)
    check(_gather_of_at_most_one, a, np.array([3.0, 4.0, 5.0]))


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_stack_of_the_rows_of_a_run_time_length(axis):
    # ipazc's MTCNN: np.stack(bboxes[mask], axis=0); NumPy's dispatcher iterates the rows
    x = rnd((6, 4), F64, seed=41)
    check(lambda x: np.stack(x[x[:, 0] > 0.5], axis=axis), x)
    check_raises(lambda x: np.stack(x[x[:, 0] > 2.0], axis=axis), x, exc=ValueError)


def _rows_if(p, s):
    # YOLOv7's parse_processed_output of one detection: np.squeeze of a (1, 1) score is 0-d
    return p[np.squeeze(s) > 0.5], p[True], p[False]


def _write_if(p, s):
    p[np.squeeze(s) > 0.5] = -1.0
    return p


@pytest.mark.parametrize("score", [0.9, 0.1])
def test_a_boolean_scalar_index_is_a_mask_over_a_new_axis(score):
    check(_rows_if, rnd((1, 6), F64, seed=42), np.array([[score]]))
    check(_write_if, rnd((2, 3), F64, seed=43), np.array([[score]]))


def _crop_stats(m, b):
    # a crop of a mask at a box only the run knows (CenterNet's gaussian drawing, YOLOv8-seg)
    x1, y1, x2, y2 = int(b[0]), int(b[1]), int(b[2]), int(b[3])
    return m[y1:y2, x1:x2].sum(), m[y1:y2, x1:x2].max(initial=-1.0), m[0, y1:y2] * 1


def _paint(m, b):
    x1, y1, x2, y2 = int(b[0]), int(b[1]), int(b[2]), int(b[3])
    m[y1:y2, x1:x2] += 1
    m[1, x1:x2] = -1.0
    return m


def _masks_in_boxes(protos, boxes):
    out = np.zeros_like(protos)
    for i in range(boxes.shape[0]):
        x1, y1, x2, y2 = int(boxes[i, 0]), int(boxes[i, 1]), int(boxes[i, 2]), int(boxes[i, 3])
        out[i, y1:y2, x1:x2] = protos[i, y1:y2, x1:x2]
    return out


@pytest.mark.parametrize("box", [[1.5, 2.5, 5.5, 6.5], [0, 0, 8, 8], [5, 5, 2, 2], [-3, 1, 20, 4]],
                         ids=["inside", "whole", "empty", "negative_and_past"])
def test_slices_of_two_axes_with_run_time_bounds(box):
    m = np.arange(64.0).reshape(8, 8)
    check(_crop_stats, m, np.array(box))
    check(_paint, m.copy(), np.array(box))


def _masks_of_boxes(boxes, masks):
    # Mask R-CNN's compute_matches: masks[..., :n] with n the rows trim_zeros kept
    boxes = boxes[~np.all(boxes == 0, axis=1)]
    m = masks[..., :boxes.shape[0]]
    masks[1:, ..., :boxes.shape[0]] += 1
    return m.sum(axis=(0, 1)), m[..., 1:].astype(np.float32) * 2, masks[..., 0, :boxes.shape[0]].copy()


@pytest.mark.parametrize("kept", [[1, 1, 0], [0, 0, 0], [1, 1, 1]], ids=["two", "none", "all"])
def test_slices_of_run_time_bounds_beside_an_ellipsis(kept):
    boxes = np.array([[1, 1, 4, 4], [2, 2, 5, 5], [3, 3, 6, 6]]) * np.array(kept)[:, None]
    check(_masks_of_boxes, boxes[np.argsort(-np.array(kept), kind="stable")], np.arange(108).reshape(6, 6, 3))


def test_masks_cropped_to_boxes_in_a_loop():
    rng = np.random.default_rng(44)
    boxes = np.sort(rng.random((3, 2, 2)) * 8, axis=1).transpose(0, 2, 1).reshape(3, 4)[:, [0, 2, 1, 3]]
    check(_masks_in_boxes, rng.random((3, 8, 8)), boxes)


def _draw(heatmap, c, g):
    # CenterNet's draw_msra_gaussian: slices of run-time bounds written with a value whose own
    # run-time lengths are checked equal to theirs (NumPy's ValueError where they differ)
    x, y, m = int(c[0]), int(c[1]), int(c[2])
    heatmap[y:y + 3, x:x + 3] = np.maximum(heatmap[y:y + 3, x:x + 3], g[0:m, 0:3])
    heatmap[y:y + m, 0:3] = g[1:m + 1, 1:4]
    return heatmap


@pytest.mark.parametrize("c", [[2, 3, 3], [0, 0, 3], [2, 7, 1]], ids=["inside", "corner", "cut_one_row"])
def test_writes_of_run_time_lengths_into_slices_of_run_time_bounds(c):
    check(_draw, np.zeros((8, 8), np.float32), np.array(c, np.float64), np.arange(25, dtype=np.float32).reshape(5, 5))


def test_a_value_of_one_run_time_row_broadcasts_as_numpy_does():
    g, c = np.arange(25, dtype=np.float32).reshape(5, 5), np.array([2.0, 3.0, 1.0])
    f = strider.compile(_draw, target=TARGET, strict=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the break's warning)
        assert_same(_draw(np.zeros((8, 8), np.float32), c, g), f(np.zeros((8, 8), np.float32), c, g))
    assert f.stats()["runtime_breaks"] == 1 and f.stats()["graph_breaks"] == 0


@pytest.mark.parametrize("c", [[6, 3, 3], [2, 3, 2], [2, 7, 3]], ids=["cut_columns", "two_rows", "cut_rows"])
def test_writes_of_other_run_time_lengths_raise_as_numpy(c):
    check_raises(_draw, np.zeros((8, 8), np.float32), np.array(c, np.float64),
                 np.arange(25, dtype=np.float32).reshape(5, 5), exc=ValueError)


def _draw_umich(heatmap, c, g, r):
    # CenterNet's draw_umich_gaussian, as written: np.maximum(..., out=) into a view of run-time
    # bounds (strider's is a copy, written back into the heatmap as NumPy's view writes it)
    x, y = int(c[0]), int(c[1])
    height, width = heatmap.shape[0:2]
    left, right = min(x, r), min(width - x, r + 1)
    top, bottom = min(y, r), min(height - y, r + 1)
    masked_heatmap = heatmap[y - top:y + bottom, x - left:x + right]
    masked_gaussian = g[r - top:r + bottom, r - left:r + right]
    if min(masked_gaussian.shape) > 0 and min(masked_heatmap.shape) > 0:
        np.maximum(masked_heatmap, masked_gaussian * 2, out=masked_heatmap)
    return heatmap


@pytest.mark.parametrize("c", [[3.5, 4.2], [0, 0], [9.9, 1], [12, 3]], ids=["inside", "corner", "edge", "outside"])
def test_ufunc_out_into_a_view_of_run_time_bounds_writes_the_array(c):
    g = rnd((5, 5), F32, seed=3)
    check(_draw_umich, rnd((10, 10), F32, seed=4) * 0.5, np.array(c, F32), g, 2)


def _in_step(x, y):
    # a view of run-time bounds, written through and read after the array is written (in parts
    # too): strider's copy is gathered again and written back so it holds what NumPy's view does
    i = np.argmax(x)
    v = x[i - 1:]
    v += 1
    x[i] = -5.0
    w = v * 2
    v[1:3] = y[0]
    u = v[np.argmin(v):]  # a copy of a copy: written into v, and v into x
    u -= 10
    x[-1] = 7.0
    return x, w, v.sum(), u.sum() + v[0]


@pytest.mark.parametrize("x", [[0.5, 3, 1, 2, 0.25], [9, 1, 2, 3, 4], [0, 1, 2, 3, 9]],
                         ids=["middle", "first", "last"])
def test_a_view_of_run_time_bounds_stays_in_step_with_its_array(x):
    check(_in_step, np.array(x), np.array([4.5, 6.0]))


def _decayed_in_a_loop(scores, t):
    # Soft-NMS's scores[pos:] = weight * scores[pos:], written through a view instead
    for i in range(scores.shape[0]):
        pos = np.argmax(scores[i:]) + i
        rest = scores[pos:]
        rest *= t
        if scores[i] < 0.1:
            break
    return scores


def test_writes_through_views_of_run_time_bounds_in_a_loop():
    check(_decayed_in_a_loop, rnd(12, F64, seed=5), 0.7)


def _squeezed(x, c):
    v = x[x[:, 0] > c]
    w = np.squeeze(v[:, :1], 1) * 2  # an axis named: checked to be 1 when the function runs
    row = np.squeeze(x[np.argmax(x[:, 1]):][:1], 0)  # a view of the argument, written through
    row[1] = -1.0
    return np.squeeze(v), w, x


@pytest.mark.parametrize("c", [0, 4, 10], ids=["all", "one", "none"])
def test_squeeze_of_run_time_lengths(c):
    # NumPy drops a run-time length of 1 that squeeze names or (axis=None) finds: named, it is
    # checked; found, the call runs in NumPy where it is 1, as its result has fewer axes, from the
    # arguments as they were (the program's write into x put back first: it once was not)
    x = np.array([[1, 2], [5, 6], [3, 4.0]])
    check(_squeezed, x, c, strict=c != 4)
    check_raises(lambda x, c: np.squeeze(x[x[:, 0] > c], 0), x, 0, exc=ValueError)


def _repeated_by_kept(scores, boxes, t):
    # EfficientDet's _generate_detections: np.repeat(image_id, len(keep)) beside the kept rows
    keep = []
    order = np.flatnonzero(scores > t)
    while order.size > 0:
        keep.append(order[0])
        order = order[1:][scores[order[1:]] < scores[order[0]] + 0.5]
    ids = np.repeat(7, len(keep))
    rows = np.repeat(boxes[:2], len(keep), axis=0)
    return np.stack([ids, np.repeat(np.arange(3), len(keep))[:len(keep)]], 1), rows, np.repeat(boxes[0], len(keep))


@pytest.mark.parametrize("t", [0.2, 0.95], ids=["kept", "none"])
def test_repeat_by_a_run_time_count(t):
    check(_repeated_by_kept, rnd(6, F32, seed=8), rnd((3, 4), F32, seed=9), t)
    # a count no length bounds: NumPy's sizes, refused by name
    with pytest.raises(strider.UnsupportedError, match="a size of np.repeat's count"):
        strider.compile(lambda s: np.repeat(7, (s > 0.3).sum()), strict=True)(rnd(6, F32))


def kept_rows_into_a_new_axis(a):
    v = a[a[:, 0, 0] > 0]
    v[:-1, None] = v
    return v


@pytest.mark.parametrize("kept, ok", [(1, True), (0, False), (2, False)])
def test_a_run_time_length_assigned_where_a_length_is_1_is_checked_when_run(kept, ok):
    """NumPy writes a value of a run-time length into a length of 1 where it is 1 (the other
    rows broadcast) and raises ValueError otherwise; strider checks that when the function runs
    (it raised ValueError while tracing, for every length)."""
    a = np.arange(18, dtype=np.int32).reshape(3, 3, 2) - 20
    a[:kept, 0, 0] = 1
    if ok:
        check(kept_rows_into_a_new_axis, a)
    else:
        check_raises(kept_rows_into_a_new_axis, a, exc=ValueError)


def detections_padded(scores, boxes, t):
    out = np.zeros((10, 5), np.float32)
    keep = scores > t
    out[:len(boxes[keep]), :4] = boxes[keep]
    out[:np.count_nonzero(keep), 4] = scores[keep]
    return out


@pytest.mark.parametrize("t", [0.5, 2.0, -1.0])
def test_a_prefix_as_long_as_a_masks_result_takes_it(t):
    """SSD's `output[cl, :count] = ...`: a slice to a run-time length no longer than the axis has
    that very length, so the mask's rows fill it (none, some, all eight)."""
    rng = np.random.default_rng(4)
    check(detections_padded, rng.random(8).astype(F32), rng.random((8, 4)).astype(F32), t)


def top_n_of_kept(scores, x, n):
    k = min((scores > 0.5).sum(), n)
    y = x[:k] * 2
    x[:k] = -1
    return y, x[max(k - 1, 0)], x[k:].sum()


@pytest.mark.parametrize("n", [0, 3, 9])
@pytest.mark.parametrize("seed", [0, 1])
def test_builtin_min_of_a_count_and_an_int_bounds_a_slice(n, seed):
    """FCOS's pre_nms_top_n: builtin min() leaves a NumPy int64 or a Python int as the run says;
    as an index or a slice bound either is the same number."""
    check(top_n_of_kept, rnd(6, seed=seed), rnd(6, I64, seed=seed + 7), n)


def _mask_of_other_survivors(d, e):
    x = d[d[:, 0] > 0]
    y = e[e[:, 0] > 0]
    return x[y[:, 1] > 0]


@pytest.mark.parametrize("dropped", [0, 1, 4])
def test_a_mask_of_another_run_time_length_raises_numpys_index_error(dropped):
    # a mask whose length differs from its axis's, one of the two known only at run time: NumPy's
    # IndexError (a mask of one element does not broadcast); the program read the mask's
    # positions past the axis's end and answered
    d, e = np.ones((5, 2)), np.ones((5, 2))
    e[:dropped, 0] = -1
    if not dropped:
        check(_mask_of_other_survivors, d, e)
        return
    check_raises(_mask_of_other_survivors, d, e, exc=IndexError)
    with pytest.raises(IndexError, match="boolean index did not match indexed array along axis 0; size of axis is 5 "
                                         f"but size of corresponding boolean axis is {5 - dropped}"):
        strider.compile(_mask_of_other_survivors, target=TARGET)(d, e)
