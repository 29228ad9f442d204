"""Differential tests for sorting's companions: searchsorted, lexsort, unique (of values and of rows),
isin and the set operations, cumulative sums and products, maximum/minimum.accumulate and np.add.at, on fixed and run-time
lengths."""
import numpy as np
import pytest

import strider
from differential import TARGET, assert_same, check, check_raises

F32, F64, I32, I64 = np.float32, np.float64, np.int32, np.int64


def rnd(shape, dtype=F64, seed=0):
    return np.random.default_rng(seed).random(shape).astype(dtype)


def ints(shape, hi=5, dtype=I64, seed=0):
    return np.random.default_rng(seed).integers(-hi, hi, shape).astype(dtype)


WITH_NAN = np.array([3.0, np.nan, -1.0, 0.0, -0.0, 3.0, np.nan, 2.0])


@pytest.mark.parametrize("fn,args", [
    pytest.param(lambda x: np.cumsum(x), (ints((3, 4)),), id="cumsum_flat"),
    pytest.param(lambda x: np.cumsum(x, axis=0), (rnd((5, 3), F32),), id="cumsum_axis0_f32"),
    pytest.param(lambda x: x.cumsum(1), (ints((3, 4), dtype=I32),), id="cumsum_int32_widens"),
    pytest.param(lambda m: np.cumsum(m), (np.array([True, False, True, True]),), id="cumsum_bool"),
    pytest.param(lambda x: np.cumprod(x, axis=-1), (ints((2, 5), hi=3),), id="cumprod"),
    pytest.param(lambda x: np.cumsum(x, dtype=np.float64), (ints(6),), id="cumsum_dtype"),
    pytest.param(lambda x: np.maximum.accumulate(x), (WITH_NAN,), id="max_accumulate_nan"),
    pytest.param(lambda x: np.minimum.accumulate(x, axis=1), (rnd((3, 6)),), id="min_accumulate_axis1"),
    pytest.param(lambda x: np.add.accumulate(x, axis=0), (ints((4, 2), dtype=I32),), id="add_accumulate_int32"),
    pytest.param(lambda x: np.cumsum(x[x > 0.3]), (rnd(12, F32, seed=1),), id="cumsum_runtime_length"),
    pytest.param(lambda x: np.cumsum(x[:0]), (rnd(4),), id="cumsum_empty"),
])
def test_scans(fn, args):
    check(fn, *args)


@pytest.mark.parametrize("fn,args", [
    pytest.param(lambda a, v: np.searchsorted(a, v), (np.arange(10.0), rnd(7) * 10), id="left"),
    pytest.param(lambda a, v: np.searchsorted(a, v, side="right"), (np.array([1, 2, 2, 2, 5]), np.array([2, 0, 6])),
                 id="right_ties"),
    pytest.param(lambda a, v: a.searchsorted(v), (np.array([1.0, 2.0, np.nan]), np.array([np.nan, 2.0, -0.0])),
                 id="nan_last"),
    pytest.param(lambda a, v: np.searchsorted(a, v), (np.array([1, 2, 3]), 2.5), id="scalar_promotes"),
    pytest.param(lambda a, v: np.searchsorted(a, v, sorter=np.argsort(a)), (rnd(9, seed=2), rnd(4, seed=3)),
                 id="sorter"),
    pytest.param(lambda a, v: np.searchsorted(np.sort(a[a > 0.5]), v), (rnd(20, seed=4), rnd(5, seed=5)),
                 id="runtime_length"),
])
def test_searchsorted(fn, args):
    check(fn, *args)


A3, V3 = np.array([3.0, 1.0, 2.0]), np.array([1.5, 9.0, 0.0])


@pytest.mark.parametrize("sorter,exc", [
    pytest.param(np.array([1, 2]), ValueError, id="size"),
    pytest.param(np.array([1.0, 2.0, 0.0]), TypeError, id="floats"),
    pytest.param(np.array([1, 2, 7]), ValueError, id="past_the_end"),
    pytest.param(np.array([1, -1, 0]), ValueError, id="negative"),
    pytest.param(np.array([[1, 2, 0]]), TypeError, id="2d"),
])
def test_searchsorted_checks_sorter(sorter, exc):
    check_raises(lambda a, v, s: np.searchsorted(a, v, sorter=s), A3, V3, sorter, exc=exc)


def test_searchsorted_sorter_of_another_run_time_length():
    check(lambda a, v: np.searchsorted(a[a > 0], v, sorter=np.argsort(a[a > 0]).astype(np.uint8)), A3, V3)
    check_raises(lambda a, v: np.searchsorted(a[a > 1.5], v, sorter=np.argsort(a[a > 0])), A3, V3, exc=ValueError)


@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_in_an_unsorted_array_gives_numpys_places(side):
    a = np.array([0.5, 0.2, np.nan, 0.9, 0.1, 0.7])
    check(lambda a, v: np.searchsorted(a, v, side=side), a, rnd((3, 4), seed=6))


def _before(x, y):
    """NumPy's order of a sort: NaNs last."""
    return x < y or (np.isnan(y) and not np.isnan(x))


def _narrowed_places(a, values, right):
    """NumPy's searchsorted before 2.5 (binsearch.cpp): each value's range narrowed from the last's."""
    goes_right = (lambda k, key: not _before(key, k)) if right else _before
    out, lo, hi, last = [], 0, len(a), values[0]
    for key in values:
        if (not _before(key, last)) if right else _before(last, key):
            hi = len(a)
        else:
            lo, hi = 0, min(hi + 1, len(a))
        last = key
        while lo < hi:
            mid = lo + (hi - lo) // 2
            lo, hi = (mid + 1, hi) if goes_right(a[mid], key) else (lo, mid)
        out.append(lo)
    return out


def _halved_places(a, values, right):
    """NumPy 2.5's searchsorted: the whole range halved for each value alone."""
    goes_right = (lambda k, key: not _before(key, k)) if right else _before
    out = []
    for key in values:
        first, n = 0, len(a)
        while n > 1:
            first += n // 2 if goes_right(a[first + n // 2], key) else 0
            n -= n // 2
        out.append(first + goes_right(a[first], key) if len(a) else 0)
    return out


@pytest.mark.parametrize("halving", [0, 1], ids=["numpy_2_4", "numpy_2_5"])
@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_in_an_unsorted_array_searches_as_either_numpy(monkeypatch, side, halving):
    # whichever NumPy is installed, strider searches as the one it finds (_sorting.HALVING_SEARCH):
    # each way against a model of that NumPy's search, NaNs and ties in an unsorted array
    installed = strider._sorting.HALVING_SEARCH
    monkeypatch.setattr(strider._sorting, "HALVING_SEARCH", halving)
    rng = np.random.default_rng(7)
    a = np.round(rng.random(37) * 8)
    a[[3, 20]] = np.nan
    v = np.concatenate([np.round(rng.random(40) * 9) - 0.5, np.round(rng.random(20) * 8), [np.nan]])
    got = strider.compile(lambda a, v: np.searchsorted(a, v, side=side), target=TARGET, strict=True)(a, v)
    model = _halved_places if halving else _narrowed_places
    np.testing.assert_array_equal(got, model(list(a), list(v), side == "right"))
    if halving == installed:  # the model is the installed NumPy's search
        np.testing.assert_array_equal(np.searchsorted(a, v, side=side), got)
    assert model([0.0, 4.0, 2.0, 4.0, 3.0], [3.5], False) == ([3] if halving else [5])  # the two differ


def _sorted_then_written(x):
    # a C-order sort along axis 0 ravels to a view, which sees the write after it
    v = np.sort(x, axis=0, kind="stable")
    flat = v.ravel()
    v[1:] = v[:-1] + 1
    return flat


@pytest.mark.parametrize("fn", [
    pytest.param(lambda x: np.sort(x, axis=0), id="sort_axis0"),
    pytest.param(lambda x: np.sort(x.T, axis=0), id="sort_of_transpose_keeps_its_order"),
    pytest.param(lambda x: np.argsort(x.T, axis=1, kind="stable"), id="argsort_c_order"),
    pytest.param(lambda x: np.cumsum(x.T, axis=0), id="cumsum_of_transpose"),
    pytest.param(lambda x: np.maximum.accumulate(x[:, ::-2], axis=0), id="accumulate_strided"),
    pytest.param(_sorted_then_written, id="sort_ravel_is_a_view"),
])
def test_results_along_an_axis_are_laid_out_as_numpys(fn):
    """Strides as NumPy's (sort and scans like their input, argsort in C order): a ravel or
    reshape of the result is a view exactly where NumPy's is."""
    x = ints((4, 5), dtype=I32)
    assert check(fn, x)(x.copy()).strides == fn(x.copy()).strides


def test_lexsort():
    surname = np.array([3, 1, 3, 2, 1, 3])
    first = np.array([0, 2, 1, 1, 2, 0])
    check(lambda a, b: np.lexsort((a, b)), first, surname)
    check(lambda a, b: np.lexsort((a, b, a)), rnd(8, seed=6), ints(8, hi=2, seed=7))
    check(lambda a, b: np.lexsort([a, b]), first, surname)  # a list (NumPy's dispatcher sees no Tracer in it)


def test_lexsort_of_keys_of_other_lengths_raises():
    check_raises(lambda a, b: np.lexsort((b, a)), rnd(8), rnd(7), exc=ValueError)
    check_raises(lambda a, b: np.lexsort((b[b > 0.5], a[a > 0.5])), rnd(8), rnd(8, seed=1), exc=ValueError)


@pytest.mark.parametrize("x", [
    pytest.param(ints(20, hi=4, seed=8), id="ints"),
    pytest.param(ints((3, 5), hi=3, seed=9), id="2d"),
    pytest.param(WITH_NAN, id="nan_and_signed_zero"),
    pytest.param(np.array([2.0]), id="one"),
    pytest.param(np.zeros(0), id="empty"),
    pytest.param(np.array([True, False, True]), id="bool"),
])
@pytest.mark.parametrize("flags", [(False, False, False), (True, True, True), (False, True, False),
                                   (True, False, True)], ids=["plain", "all", "inverse", "index_counts"])
def test_unique(x, flags):
    ri, rv, rc = flags
    check(lambda a: np.unique(a, return_index=ri, return_inverse=rv, return_counts=rc), x)


def test_unique_without_equal_nan():
    check(lambda a: np.unique(a, equal_nan=False), WITH_NAN)


ALL_OF_UNIQUE = dict(return_index=True, return_inverse=True, return_counts=True)
ROWS = np.array([[1, 2], [0, 1], [1, 2], [0, 1.0], [np.nan, 1], [np.nan, 1], [-0.0, 1], [0.0, 1]])


@pytest.mark.parametrize("fn,args", [
    pytest.param(lambda a: np.unique(a, axis=0, **ALL_OF_UNIQUE), (ROWS,), id="rows_nan_never_equal"),
    # NumPy compares float16 records with NaN first, float32 and float64 ones with NaN last
    pytest.param(lambda a: np.unique(a, axis=0, **ALL_OF_UNIQUE), (np.vstack([ROWS, [[2, np.nan], [np.nan, 0]]]).astype(np.float16),),
                 id="float16_rows_nan_first"),
    pytest.param(lambda a: np.unique(a, axis=1, **ALL_OF_UNIQUE), (ROWS.T.copy(),), id="columns"),
    pytest.param(lambda a: np.unique(a, axis=0), (ints((20, 2, 2), hi=1, seed=10),), id="rows_of_3d"),
    pytest.param(lambda a: np.unique(a, axis=0, return_counts=True), (np.zeros((0, 3)),), id="no_rows"),
    # rows of no element are all equal: one stays where there are any
    pytest.param(lambda a: (np.unique(a, axis=1, **ALL_OF_UNIQUE), np.unique(a.T, axis=0, **ALL_OF_UNIQUE)),
                 (np.zeros((0, 3)),), id="empty_rows"),
    pytest.param(lambda a: np.unique(a, axis=1, **ALL_OF_UNIQUE), (np.zeros((2, 0, 3)),), id="no_rows_of_3d"),
    pytest.param(lambda a: np.unique(a, axis=0, return_inverse=True), (ints(9, hi=2, seed=11),), id="axis0_of_1d"),
    # NumPy takes a 1-d array's axis as no axis: its NaNs are equal (equal_nan)
    pytest.param(lambda a: np.unique(a, axis=-1, **ALL_OF_UNIQUE), (ROWS[:, 0].copy(),), id="axis_of_1d_nans_equal"),
    pytest.param(lambda s: np.unique(np.floor(s[s > 0.2] * 5), **ALL_OF_UNIQUE), (rnd(30, seed=12),),
                 id="runtime_length"),
    pytest.param(lambda s: np.unique(s[s > 2], **ALL_OF_UNIQUE), (rnd(5, seed=12),), id="runtime_length_empty"),
    pytest.param(lambda b, s: np.unique(b[s > 0.3], axis=0, return_inverse=True, return_counts=True),
                 (ints((30, 3), hi=1, seed=13), rnd(30, seed=14)), id="runtime_rows"),
])
def test_unique_rows_and_runtime_lengths(fn, args):
    check(fn, *args)


@pytest.mark.parametrize("fn,args", [
    pytest.param(lambda a, b: (np.isin(a, b), np.isin(a, b, invert=True)),
                 (np.array([1.0, np.nan, 0.0, -0.0, 3.0]), np.array([np.nan, 0.0, 5.0])), id="isin_nan_signed_zero"),
    pytest.param(lambda a: np.isin(a, [4, 1]), (ints((3, 4), seed=15),), id="isin_list_2d"),
    pytest.param(lambda a: np.isin(a, np.zeros(0)), (ints(4, seed=16),), id="isin_nothing"),
    pytest.param(lambda a, s: np.isin(a, a[s > 0.5]), (ints(6, seed=17), rnd(6, seed=18)), id="isin_runtime_length"),
    pytest.param(lambda a, b: (np.intersect1d(a, b), np.union1d(a, b), np.setdiff1d(a, b), np.setdiff1d(b, a, True)),
                 (np.array([3.0, 1.0, 2.0, 2.0, np.nan]), np.array([2.0, np.nan, 3.0, 7.0])), id="set_ops_nan"),
    pytest.param(lambda s: (np.setdiff1d(np.arange(6), np.where(s > 0.5)[0]),
                            np.intersect1d(np.where(s > 0.2)[0], np.where(s < 0.7)[0])), (rnd(6, seed=19),),
                 id="set_ops_of_indices"),
])
def test_set_ops(fn, args):
    check(fn, *args)


def _add_at(a, i, b):
    np.add.at(a, i, b)


@pytest.mark.parametrize("uf", [np.add, np.maximum, np.minimum])
@pytest.mark.parametrize("args", [
    pytest.param((np.zeros(5), np.array([0, 1, 1, 4, 1]), 1.0), id="repeated_scalar"),
    pytest.param((np.zeros((4, 2), F32), np.array([3, 3, 0]), rnd((3, 2), F32, seed=20) - 0.5), id="rows"),
    pytest.param((np.zeros(6, I64), np.array([-1, -1, 2]), np.array([5, -6, 7])), id="negative"),
    pytest.param((np.zeros((3, 3)), (np.array([0, 0, 2]), np.array([1, 1, 2])), np.array([2.0, -1.0, 3.0])),
                 id="two_index_arrays"),
    pytest.param((np.ones(4), np.array([2, 0, 2, 2]), np.array([np.nan, -0.0, 0.5, 3.0])), id="nan_and_signed_zero"),
    pytest.param((np.array([3, 200, 7], np.uint8), np.array([1, 1, 0]), np.array([250, 9, 1], np.uint8)), id="uint8"),
    pytest.param((np.zeros(3, bool), np.array([2, 2]), np.array([True, False])), id="bool"),
    pytest.param((np.arange(6.0), 2, 9.0), id="basic_index"),
    # the values are cast to the array's dtype first (unsafe), as NumPy casts them
    pytest.param((np.arange(3, dtype=np.uint8), np.array([0, 0, 2]), np.array([1.5, 2.5, 300.0])), id="cast_floats"),
    pytest.param((np.arange(3, dtype=np.uint8), np.array([1, 1]), 300), id="cast_python_int"),
    pytest.param((np.arange(3, dtype=F32), np.array([0, 0]), np.float64(0.1)), id="cast_float64"),
    # NumPy's loop for the array's dtype and the values' (a Python number as an array: float64,
    # int64), each step cast back: 3 + -1.5 is 1 in uint8, max(3, -1) is 3
    pytest.param((np.array([3, 0, 200], np.uint8), np.array([0, 1, 2, 2]), np.array([-1.5, 2.7, 10.5, -30.25])),
                 id="float_loop_of_uint8"),
    pytest.param((np.array([3, 7], np.uint8), np.array([0, 1, 1]), np.array([-1, 300, -2])), id="int64_loop_of_uint8"),
    pytest.param((np.array([0.1252069, 0.1050341, 0.09911536], F32), np.array([0, 1, 2, 2]), 0.1),
                 id="python_float_into_float32"),
    pytest.param((np.array([-1.543, 2.023], np.float16), np.array([0, 1, 1]), np.array([1.9878846, -0.74167585, 0.5], F32)),
                 id="float32_loop_of_float16"),
    pytest.param((np.array([True, False, True]), np.array([0, 1, 1]), -1), id="int64_loop_of_bool"),
])
def test_ufunc_at(uf, args):
    check(lambda a, i, b: uf.at(a, i, b), *args)


@pytest.mark.parametrize("args", [
    pytest.param((np.zeros(5), np.array([0, 1, 1, 4, 1]), 1.0), id="repeated_scalar"),
    pytest.param((np.zeros((4, 2), F32), np.array([3, 3, 0]), rnd((3, 2), F32, seed=20) - 0.5), id="rows"),
    pytest.param((np.ones(3), np.array([1, 1, 2]), np.array([np.inf, np.inf, -0.0])), id="inf_minus_inf"),
    # unsigned integers wrap below zero, as a - b does
    pytest.param((np.array([3, 200, 7], np.uint8), np.array([1, 1, 0]), np.array([250, 9, 1], np.uint8)), id="uint8"),
    pytest.param((np.arange(3, dtype=np.uint8), np.array([0, 0, 2]), np.array([1.5, 2.5, 300.0])), id="float_loop"),
    pytest.param((np.array([0.1252069, 0.1050341], F32), np.array([0, 1, 1]), 0.1), id="python_float_into_float32"),
    pytest.param((np.arange(4.0), 2, 0.5), id="basic_index"),
])
def test_subtract_at(args):
    check(lambda a, i, b: np.subtract.at(a, i, b), *args)


def test_subtract_at_of_bools_raises():
    check_raises(lambda a, i: np.subtract.at(a, i, True), np.ones(3, bool), np.array([1]), exc=TypeError)


@pytest.mark.parametrize("fn", [
    pytest.param(lambda x: (np.logical_or.accumulate(x), np.logical_and.accumulate(x)), id="or_and"),
    pytest.param(lambda x: (np.logical_or.accumulate(x[::-1], axis=0), np.logical_and.accumulate(x > 0, axis=0)),
                 id="or_and_axis0"),
    # NumPy 2's add and multiply of bools accumulate as int64 counts and products
    pytest.param(lambda x: (np.add.accumulate(x != 0, axis=1), np.multiply.accumulate(x == 0, axis=1)), id="bool_counts"),
    pytest.param(lambda x: np.logical_or.accumulate(x[x != 0], dtype=bool), id="runtime_length"),
])
@pytest.mark.parametrize("x", [
    pytest.param(np.array([[0.0, np.nan, 0.0], [-0.0, 0.0, 2.0], [1.0, 0.0, 0.0]]), id="float_nan"),
    pytest.param(np.array([[0, 0, 3], [1, 0, 0]]), id="int"),
    pytest.param(np.zeros((0, 3)), id="empty"),
])
def test_logical_accumulate(fn, x):
    check(fn, x)


def test_logical_accumulate_to_another_dtype_raises():
    check_raises(lambda x: np.logical_or.accumulate(x, dtype=np.int64), np.ones(3, bool), exc=TypeError)


def _class_best(scores, labels, n):
    # a per-class best score and worst score by scatter (np.maximum.at, np.minimum.at)
    best, worst = np.full(n, -np.inf, np.float32), np.full(n, np.inf, np.float32)
    keep = scores > 0.2
    np.maximum.at(best, labels[keep], scores[keep])
    np.minimum.at(worst, labels[keep], scores[keep])
    return best, worst


@pytest.mark.parametrize("rows", [0, 1, 40])
def test_maximum_at_of_a_run_time_length(rows):
    check(_class_best, rnd(rows, F32, seed=rows), ints(rows, seed=rows) % 5, 5, static_argnames=("n",))


def test_add_at_out_of_range():
    check_raises(_add_at, np.zeros(3), np.array([0, 3]), 1.0, exc=IndexError)


def test_bincount_style_counts():
    def f(labels, n):
        counts = np.zeros(n, np.int64)
        np.add.at(counts, labels, 1)
        return counts

    check(f, np.array([0, 2, 2, 1, 2]), 4, static_argnames=("n",))


def _class_counts(scores, n):
    labels = scores.argmax(1)
    keep = scores.max(1) > 0.5
    return (np.bincount(labels, minlength=n), np.bincount(labels), np.bincount(labels, weights=scores[:, 0]),
            np.bincount(labels[keep], minlength=n), np.bincount(np.argsort(scores[:, 1])[:3]))


@pytest.mark.parametrize("n", [0, 4, 6])
@pytest.mark.parametrize("rows", [0, 1, 50])
def test_bincount_of_bounded_labels(n, rows):
    # argmax's and argsort's positions bound the bins: exactly n where n covers them, else a
    # run-time count; weights sum in float64; no values give int64 bins
    check(_class_counts, rnd((rows, 4), F32, seed=rows), n, static_argnames=("n",))


def _per_class_hits(scores, t):
    hits = np.argwhere(scores > t)  # (row, class) pairs: columns bounded by the shape
    rows, cols = np.unravel_index(np.flatnonzero(scores > t), scores.shape)
    return np.bincount(hits[:, 1], minlength=scores.shape[1]), np.bincount(rows), np.bincount(cols // 2)


@pytest.mark.parametrize("t", [0.3, 0.9, 2.0])
def test_bincount_of_positions_the_shape_bounds(t):
    # np.argwhere's and np.unravel_index's positions (remainders and quotients by the shape)
    # bound the bins; no position above t gives int64 bins of minlength or none
    check(_per_class_hits, rnd((6, 4), F32, seed=3), t)


@pytest.mark.parametrize("x", [np.array([3, 0, 200, 3], np.uint8), np.array([True, False, True]),
                               np.array([5, 1, 300], np.uint16), np.array([], np.int8)])
def test_bincount_of_small_integers(x):
    # 8- and 16-bit integers and bools bound the bins by their dtype; weights of any real dtype
    check(lambda v, w: (np.bincount(v), np.bincount(v[v > 0], minlength=2), np.bincount(v, weights=w, minlength=3)),
          x, np.arange(x.size, dtype=F32) - 1)


@pytest.mark.parametrize("x, w, minlength, exc", [
    (np.array([1, -1, 2], np.int8), None, 0, ValueError),      # a negative value, found when the function runs
    (np.array([1.0, 2.0]), None, 0, TypeError),                # not integers
    (np.array([[1, 2]], np.uint8), None, 0, ValueError),       # not 1-d
    (np.array([1, 2], np.uint8), np.ones(3), 0, ValueError),   # weights of another length
    (np.array([1, 2], np.uint8), None, -1, ValueError),        # a negative minlength
])
def test_bincount_raises_numpys_errors(x, w, minlength, exc):
    check_raises(lambda v, w: np.bincount(v, weights=w, minlength=minlength), x, w, exc=exc)


def test_bincount_of_unbounded_values_breaks_the_graph():
    def f(x):
        return np.bincount(x * 2)

    g = strider.compile(f, target=TARGET, strict=False)
    x = np.array([3, 1, 4, 1, 5])
    with pytest.warns(strider.GraphBreakWarning, match="np.bincount of values tracing cannot bound"):
        got = g(x)
    assert_same(f(x), got)


def medians(a):
    return (np.median(a), np.median(a, axis=0), np.median(a, axis=1, keepdims=True), np.median(a[:, :3], axis=-1),
            np.median(a, keepdims=True))


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "int64", "uint8"])
@pytest.mark.parametrize("nan", [False, True])
def test_median(dtype, nan):
    # the mean of the middle one or two sorted values, in NumPy's mean's dtype; NaN where any is
    a = np.random.default_rng(5).uniform(0, 50, (5, 4)).astype(dtype)
    if nan and a.dtype.kind == "f":
        a[2, 1] = np.nan
    check(medians, a)


def medians_of_a_mask(a, t):
    kept = a[~(a <= t)]  # (NaNs kept)
    return np.median(kept), np.median(kept, axis=0, keepdims=True)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
@pytest.mark.parametrize("t", [60.0, 45.0, 30.0, 0.0], ids=["none", "few", "some", "all"])
def test_median_of_a_run_time_length(dtype, t):
    # the middle one or two of n sorted values where only the run knows n (refused before);
    # NaN where n is 0 or a NaN is kept
    a = np.random.default_rng(6).uniform(1, 50, 9).astype(dtype)
    if a.dtype.kind == "f":
        a[4] = np.nan
    check(medians_of_a_mask, a, t)
    check(medians_of_a_mask, np.where(np.isnan(a), 55, a).astype(dtype), t)


QUANTIZED = (np.random.default_rng(3).integers(0, 6, 300) / 5).astype(F32)  # a uint8 head's scores: ties
QUANTIZED[::17] = np.nan
QUANTIZED[::13] = -0.0


@pytest.mark.skipif(TARGET == "cuda", reason="the device's sorts order ties stably; NumPy's default kind's order is "
                                             "its own algorithm's, which only NumPy runs")
@pytest.mark.parametrize("dtype", [F32, F64, I64, np.uint8, np.float16, np.bool_])
@pytest.mark.parametrize("fn", [
    pytest.param(lambda s: np.argsort(s), id="argsort"),
    pytest.param(lambda s: s.argsort()[::-1], id="reversed"),
    pytest.param(lambda s: np.argsort(-s.astype(F32))[:7], id="top_k"),
    pytest.param(lambda s: s[s > 0].argsort()[::-1][:9], id="top_k_of_a_mask"),
    pytest.param(lambda s: np.sort(s)[::-1], id="sort_reversed"),
    pytest.param(lambda s: np.argsort(np.stack([s, s[::-1]]), axis=1, kind="heapsort"), id="rows_heapsort"),
    pytest.param(lambda s: np.argsort(s, kind="stable"), id="stable"),
])
def test_ties_come_in_numpy_order(fn, dtype):
    """NumPy's default kind leaves the order of equal keys to its algorithm (x86-simd-sort,
    introsort): a row with ties is sorted by NumPy's own function, so that NMS over quantized
    scores keeps NumPy's boxes; the -0.0s and 0.0s of np.sort stay where NumPy puts them."""
    check(fn, QUANTIZED.astype(dtype) if dtype != np.bool_ else QUANTIZED > 0.5)


XP = np.array([0.0, 0.5, 1.0, 1.0, 2.5, 4.0])  # a repeated point: NumPy takes the last
FP = np.array([1.0, -2.0, np.inf, 3.0, 0.5, 0.5])
XS = np.array([np.nan, -1.0, 0.0, 0.25, 1.0, 1.5, 2.5, 3.0, 4.0, 7.0])


@pytest.mark.parametrize("fn,args", [
    pytest.param(lambda x, xp, fp: np.interp(x, xp, fp), (XS, XP, FP), id="cases"),
    pytest.param(lambda x, xp, fp: np.interp(x, xp, fp, left=-1.0, right=9), (XS, XP, FP), id="left_right"),
    pytest.param(lambda x, xp, fp: np.interp(x[5], xp, fp), (XS, XP, FP), id="scalar"),
    pytest.param(lambda x, xp, fp: np.interp(x.reshape(2, 5), xp[:1], fp[:1]), (XS, XP, FP), id="one_point"),
    pytest.param(lambda x, xp, fp: np.interp(-x, -xp[::-1][xp > 0.7], fp[xp > 0.7], left=0), (XS, XP, FP),
                 id="run_time_length"),  # YOLOv5's ap_per_class: np.interp(-px, -conf[i], recall, left=0)
    pytest.param(lambda x, xp, fp: np.interp(x, xp[xp > 3.0], fp[xp > 3.0]), (XS, XP, FP), id="run_time_one_point"),
    pytest.param(lambda x, xp, fp: np.interp(x.astype(F32), xp.astype(np.int32), fp.astype(F32)), (XS[1:], XP, FP),
                 id="other_dtypes"),
])
def test_interp(fn, args):
    check(fn, *args)


@pytest.mark.parametrize("fn", [
    pytest.param(lambda x, xp, fp: np.interp(x, xp, fp[1:]), id="lengths"),
    pytest.param(lambda x, xp, fp: np.interp(x, xp[:0], fp[:0]), id="empty"),
    pytest.param(lambda x, xp, fp: np.interp(x, xp[xp > 9], fp[xp > 9]), id="run_time_empty"),
    pytest.param(lambda x, xp, fp: np.interp(x, xp[xp > 1], fp), id="run_time_lengths"),
])
def test_interp_raises(fn):
    check_raises(fn, XS, XP, FP, exc=ValueError)


@pytest.mark.parametrize("xp", [XP[::-1].copy(), XP[[0, 3, 1, 5, 2, 4]], np.where(XP == 1.0, np.nan, XP)],
                         ids=["decreasing", "unsorted", "nan"])
def test_interp_of_points_that_do_not_increase_runs_in_numpy(xp):
    # NumPy's answer then depends on where its search of xp starts for each x
    check(lambda x, xp, fp: np.interp(x, xp, fp), XS, xp, FP, strict=False)
    with pytest.raises(strider.RunTimeBreakError, match="xp that do not increase"):
        strider.compile(lambda x, xp, fp: np.interp(x, xp, fp), target=TARGET, strict=True)(XS, xp, FP)


def compute_ap(recall, precision):
    # YOLOv5's metrics.compute_ap, its "interp" method
    mrec = np.concatenate(([0.0], recall, [1.0]))
    mpre = np.concatenate(([1.0], precision, [0.0]))
    mpre = np.flip(np.maximum.accumulate(np.flip(mpre)))
    x = np.linspace(0, 1, 101)
    return np.trapezoid(np.interp(x, mrec, mpre), x), mpre


def test_yolov5_compute_ap():
    rng = np.random.default_rng(8)
    recall, precision = np.sort(rng.random(40)), rng.random(40)
    check(compute_ap, recall, precision, rtol=1e-12)
    check(lambda r, p: compute_ap(r[p > 0.3], p[p > 0.3]), recall, precision, rtol=1e-12)
    # no ground truth: VOC's recall tp / npos is NaN, then inf
    check(compute_ap, np.array([np.nan, np.inf, np.inf]), precision[:3], strict=False)


def top_by_partition(s, t, k):
    # ssd_keras' top_k: a partition at a kth the mask's count decides
    s = s[s > t]
    return np.argpartition(s, kth=s.shape[0] - k)[s.shape[0] - k:]


def test_a_partition_at_a_run_time_kth_is_refused_by_name():
    s = np.random.default_rng(0).uniform(0, 1, 40)
    with pytest.raises(strider.UnsupportedError, match=r"test_sorting_scans\.py:\d+: np\.argpartition with a kth known "
                       "only when the function runs"):
        strider.compile(top_by_partition, strict=True, target=TARGET)(s, 0.2, 5)
