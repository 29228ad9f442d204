"""Differential tests of the ops that edit arrays by position: np.delete, np.insert, np.append,
np.put, np.put_along_axis, partition/argpartition, np.ix_, and np.concatenate along an axis whose
length is known only at run time (the pieces NMS code joins)."""
import warnings

import numpy as np
import pytest

import strider
from differential import TARGET, assert_same, check, check_raises

F32, F64, I64 = np.float32, np.float64, np.int64


def rnd(shape, dtype=F64, seed=0):
    return np.random.default_rng(seed).random(shape).astype(dtype)


X = np.arange(24.0).reshape(4, 6)
S = rnd(10, seed=1)


@pytest.mark.parametrize("fn,args", [
    pytest.param(lambda x: (np.delete(x, 1, axis=1), np.delete(x, -1), np.delete(x, [0, 2, 5], axis=1)), (X,),
                 id="delete_constant"),
    pytest.param(lambda x: (np.delete(x, slice(None, None, 2), axis=1), np.delete(x, np.arange(0, 24, 2)),
                            np.delete(x, [], axis=0)), (X,), id="delete_slices_and_many_pieces"),
    pytest.param(lambda x: np.delete(x[:, ::2], [True, False, True, False], axis=0), (X,), id="delete_mask_view"),
    pytest.param(lambda s: (np.delete(s, np.where(s > 0.5)[0]), np.delete(s, np.argmax(s)), np.delete(s, s > 0.5)),
                 (S,), id="delete_computed"),
    pytest.param(lambda s, i: np.delete(s, i), (S, np.array([1, -1, 1])), id="delete_repeated_negative"),
    pytest.param(lambda s: np.delete(s[s > 0.3], np.concatenate(([0], np.where(s[s > 0.3] > 0.6)[0]))), (S,),
                 id="delete_pyimagesearch_nms_step"),
    pytest.param(lambda x: (np.insert(x, 1, 9.5, axis=1), np.insert(x, [1, 1, 0], [7, 8, 9], axis=1),
                            np.insert(x, slice(0, 4, 2), -1.0)), (X,), id="insert_constant"),
    pytest.param(lambda x: (np.insert(x, 2, x[:, 0], axis=1), np.insert(x, [2], x[:, :1], axis=1),
                            np.insert(x, 0, [x[:, 0]], axis=1)), (X,), id="insert_columns"),
    pytest.param(lambda x: np.insert(x.astype(np.int64), np.array([True, False, False, True]), 2.7, axis=0), (X,),
                 id="insert_mask_casts"),
    pytest.param(lambda x: (np.append(x, [1, 2]), np.append(x, x[:1], axis=0)), (X,), id="append"),
    # EasyOCR's decode_greedy: at the start of a run-time length
    pytest.param(lambda t: (np.insert(~(t[t >= 0][1:] == t[t >= 0][:-1]), 0, True),
                            np.insert(np.stack([t[t >= 0]] * 2, 1), 0, [7, 8], axis=0), np.insert(t[t > 9], [0], 5)),
                 (np.array([1, 1, 2, -1, 3, 3, 3]),), id="insert_at_the_start_of_a_run_time_length"),
])
def test_delete_insert_append(fn, args):
    check(fn, *args)


def _suppressed(idx, s, t):
    # a numpy NMS port's suppression list: positions appended under a traced condition
    sup = []
    for pos in range(idx.size):
        if s[pos] > t:
            sup.append(pos)
    i, rows = 0, []
    while i < s.size:
        if s[i] < t:
            rows.append(i)
        i += 1
    pair = np.stack([idx, idx], axis=1)
    return np.delete(idx, sup), np.delete(pair, rows, axis=0), np.delete(idx, [0, np.argmax(s)])


@pytest.mark.parametrize("n", [1, 6, 20])
@pytest.mark.parametrize("t", [0.5, 2.0, -1.0])
def test_delete_positions_of_a_list_filled_at_run_time(n, t):
    check(_suppressed, np.arange(n), rnd(n, seed=n), t)


@pytest.mark.parametrize("fn,args,exc", [
    pytest.param(lambda x: np.delete(x, 6, axis=1), (X,), IndexError, id="delete_int"),
    pytest.param(lambda x: np.delete(x, [1.0]), (X,), IndexError, id="delete_float"),
    pytest.param(lambda x: np.delete(x, [True, False]), (X,), ValueError, id="delete_short_mask"),
    pytest.param(lambda s, i: np.delete(s, i), (S, np.array([0, 10])), IndexError, id="delete_computed"),
    pytest.param(lambda x: np.insert(x, 7, 0.0, axis=1), (X,), IndexError, id="insert_int"),
    pytest.param(lambda x: np.insert(x, [[1]], 0.0), (X,), ValueError, id="insert_2d_positions"),
    pytest.param(lambda x: np.insert(x, [0, 1], x[:3], axis=0), (X,), ValueError, id="insert_values_shape"),
])
def test_delete_insert_raise(fn, args, exc):
    check_raises(fn, *args, exc=exc)


def _puts(a, i, v):
    np.put(a, i, v[:2])
    a.put([0, -1], 5.5)
    np.put(a[::2], [1, 4], [-1, -2])
    c = np.zeros((3, 4))
    np.put_along_axis(c, np.argsort(v.reshape(3, 4), axis=1)[:, :2], 1.0, axis=1)
    np.put_along_axis(c, np.array([2, 0]), v[:2], axis=None)
    return c


def test_put_and_put_along_axis():
    check(_puts, np.arange(10.0), np.array([3, 4, 3, 7, -2]), rnd(12, seed=2))
    check(lambda a, v: _puts(a, [3.7, 4.0], v), np.arange(10.0), rnd(12, seed=3))  # a list's floats are cast


@pytest.mark.parametrize("fn,args,exc", [
    pytest.param(lambda a, i: np.put(a, i, 0.0), (np.arange(5.0), np.array([1, 5])), IndexError, id="index"),
    pytest.param(lambda a, i: np.put(a, i, 0.0), (np.arange(5.0), np.array([1.0])), TypeError, id="float_array"),
])
def test_put_raises(fn, args, exc):
    check_raises(fn, *args, exc=exc)


def _modes(a, i, s):
    k = np.argsort(s)[::-1]  # positions of a run-time order, shifted past either end
    return (np.take(a, i, mode="clip"), np.take(a, i, mode="wrap"), a.take(i, axis=1, mode="clip"),
            np.take(a, i[:, None], axis=-2, mode="wrap"), np.take(a, k - 2, axis=1, mode="wrap"),
            np.take(a[:, s > 0.5], i, axis=1, mode="clip"), np.take(a, np.array([True, False]), mode="clip"))


def test_take_clip_and_wrap_modes():
    # clip: negative positions go to 0 too; wrap: modulo the extent, a run-time one included
    check(_modes, rnd((3, 5), seed=4), np.array([-7, -1, 0, 4, 5, 12]), rnd(5, seed=5))


def _put_modes(a, b, i, v):
    np.put(a, i, v, mode="clip")
    b.put(i, v[::-1], mode="wrap")
    np.put(b[:, ::2], np.argsort(v) - 3, v, mode="wrap")


def test_put_clip_and_wrap_modes():
    # repeated positions after clipping or wrapping: the last value wins, as in mode='raise'
    check(_put_modes, np.zeros(6), np.zeros((2, 4)), np.array([-3, 9, 2, 14, 7]), rnd(5, seed=6))


@pytest.mark.parametrize("fn,args,exc", [
    pytest.param(lambda a: np.take(a, [1], mode="foo"), (np.arange(3.0),), ValueError, id="take_bad_mode"),
    pytest.param(lambda a: np.put(a, [1], 0.0, mode="foo"), (np.arange(3.0),), ValueError, id="put_bad_mode"),
    pytest.param(lambda a: np.take(a, np.array([0.5]), mode="clip"), (np.arange(3.0),), TypeError, id="take_float"),
    pytest.param(lambda a: np.take(a, [0], axis=1, mode="wrap"), (np.zeros((2, 0)),), IndexError, id="take_empty_axis"),
    pytest.param(lambda a: np.put(a, [0], 1.0, mode="clip"), (np.zeros(0),), IndexError, id="put_into_empty"),
    pytest.param(lambda a: np.take(a, [0], axis=2, mode="clip"), (np.zeros((2, 3)),), np.exceptions.AxisError,
                 id="take_axis"),
])
def test_take_put_modes_raise(fn, args, exc):
    check_raises(fn, *args, exc=exc)


def _stores_from_its_own_memory(p, x, b):
    p[:, [1, 0]] = p[:, 0:2]  # a swap of columns
    x[np.array([3, 4, 5])] = x[2:5]
    np.put(x, [0, 1], x[1:3])
    np.add.at(x, np.array([6, 6, 7]), x[5:8])
    b[b.argsort()] = b
    return p, x, b


def test_index_writes_of_values_in_the_arrays_own_memory():
    # NumPy copies a value that overlaps the array it writes first: element by element, a store
    # would change what a later one reads
    check(_stores_from_its_own_memory, rnd((3, 2), seed=7), np.arange(9.0), rnd(6, seed=8))


def _partition_agrees(a, kth, got, arg=False, axis=-1):
    """got is one of the answers NumPy's (arg)partition allows: every kth holds NumPy's value, and
    nothing before (after) it is greater (less)."""
    values = np.take_along_axis(a, got, axis) if arg else got
    expected = np.partition(a, kth, axis)
    assert values.shape == expected.shape and values.dtype == expected.dtype
    moved, exp = np.moveaxis(values, axis, -1), np.moveaxis(expected, axis, -1)
    ordered = np.where(np.isnan(moved), np.inf, moved)  # NaNs sort last
    for k in np.atleast_1d(kth):
        np.testing.assert_array_equal(moved[..., k], exp[..., k])
        assert (ordered[..., :k] <= ordered[..., k:k + 1]).all() and (ordered[..., k:] >= ordered[..., k:k + 1]).all()
    np.testing.assert_array_equal(np.sort(values, axis), np.sort(a, axis))


@pytest.mark.parametrize("kth,axis", [(3, -1), ([0, 5, 9], -1), (-2, -1), (1, 0)])
def test_partition(kth, axis):
    a = rnd((4, 10), F32, seed=4) if axis == -1 else rnd((5, 3), seed=5)
    a[0, :2] = np.nan

    def f(x):
        y = x.copy()
        y.partition(kth, axis=axis)
        return np.partition(x, kth, axis=axis), np.argpartition(x, kth, axis=axis), y

    if TARGET == "cpu":  # NumPy's own partition: its answer exactly
        check(f, a)
        return
    p, ap, inplace = strider.compile(f, target=TARGET)(a)  # the device's: a sort, one NumPy allows
    _partition_agrees(a, kth, p, axis=axis)
    _partition_agrees(a, kth, ap, arg=True, axis=axis)
    _partition_agrees(a, kth, inplace, axis=axis)


def test_argpartition_head_is_a_top_k():
    def f(s, k):
        return np.argpartition(-s, k)[:k]

    got = strider.compile(f, target=TARGET, static_argnames=("k",))(S, 4)
    np.testing.assert_array_equal(np.sort(got), np.sort(np.argsort(-S)[:4]))


def _top_ks(s, t):
    heat = s.reshape(-1)
    tail = np.argpartition(heat, -5)[-5:]  # CenterNet's top-k of a heatmap
    head = np.argpartition(-heat, 4)[:4]
    kept = heat[heat > t]  # of a run-time length
    return tail, heat[tail], head, np.partition(kept, 1)[:3], np.argpartition(kept, [0, -1])[::-1]


@pytest.mark.skipif(TARGET != "cpu", reason="the device's partition is a sort (one of the answers NumPy allows)")
@pytest.mark.parametrize("dtype", [F32, np.float64, np.float16, np.int64, np.uint8])
def test_partition_gives_numpys_answer_with_ties(dtype):
    # which of equal keys lands on which side of a kth, and the order on each side, are NumPy's
    # introselect's: a quantised heatmap (many equal scores, NaNs) gives NumPy's indices
    rng = np.random.default_rng(6)
    for n in (12, 300):
        s = (rng.integers(0, 4, (3, n)) * 0.25).astype(dtype)
        if s.dtype.kind == "f":
            s[0, :3] = np.nan
        check(_top_ks, s, 0.4 if s.dtype.kind == "f" else 0)


@pytest.mark.parametrize("fn,args,exc", [
    pytest.param(lambda s: np.partition(s, 10), (S,), ValueError, id="kth"),
    pytest.param(lambda s: np.partition(s[s > 0.9], 3), (S,), ValueError, id="kth_runtime_length"),
    pytest.param(lambda s: np.argpartition(s, 1.0), (S,), TypeError, id="float_kth"),
    pytest.param(lambda s: np.partition(s, 1, kind="quicksort"), (S,), ValueError, id="kind"),
])
def test_partition_raises(fn, args, exc):
    check_raises(fn, *args, exc=exc)


B = rnd((12, 4), F32, seed=6)


@pytest.mark.parametrize("fn,args", [
    pytest.param(lambda b, s: np.concatenate([b[s > 0.5], b[:2], b[s < 0.2] * 2]), (B, rnd(12, seed=7)),
                 id="rows"),
    pytest.param(lambda b, s: np.concatenate([b[s > 0.5], b[:2], b[s < 0.2] * 2]), (B, np.zeros(12)),
                 id="rows_one_empty"),
    pytest.param(lambda b, s: (np.concatenate([b[s > 0.5].T, b[:4, :1]], axis=1), np.vstack([b[s > 0.5], b[:1]]),
                               np.hstack([s[s > 0.5], 1.0]), np.append(b[s > 0.5], [[1, 2, 3, 4]], axis=0)),
                 (B, rnd(12, seed=8)), id="axes_and_helpers"),
])
def test_concatenate_runtime_lengths(fn, args):
    check(fn, *args)


def _runs(mask):
    d = np.diff(np.concatenate([[0], mask.ravel().astype(np.int32), [0]]))
    starts = np.where(d == 1)[0]
    return starts, np.where(d == -1)[0] - starts  # two masks' lengths, equal when it runs


def test_two_runtime_lengths_in_one_elementwise_op():
    for seed in range(2):
        check(_runs, np.random.default_rng(seed).random((6, 7)) > 0.5)
    check(lambda a, c: a[a > 0.5] * c, S, np.arange(5.0))  # against a fixed length: S has 5 over 0.5
    check_raises(lambda a, b: a[a > 0.5] + b[b > 0.5], S, S[::-1] * 0.5 + 0.3, exc=ValueError)


def test_a_runtime_length_of_one_broadcasts_as_numpy():
    def f(x, y, t):
        x *= 2  # written before the lengths meet, and after
        a = x[x > t]
        b = y[y > t]
        x[:1] = -1.0
        return a + b

    one = np.array([0.1, 0.9, 0.2])
    g = strider.compile(f, target=TARGET, strict=False)
    # a length of 1 (the call runs in NumPy, the compiled run's writes put back), then lengths
    # that agree (compiled)
    for y, breaks in ((one, 1), (np.linspace(0.55, 0.95, 8), 1)):
        x, x_np = S.copy(), S.copy()
        expected = f(x_np, y, 0.5)
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            got = g(x, y, 0.5)
        assert_same(expected, got)
        assert_same(x_np, x, what="argument x")
        assert g.stats()["runtime_breaks"] == breaks
        assert all(w.filename == __file__ for w in said)  # the warning points at the call
        assert [str(w.message) for w in said if "NumPy broadcasts it" in str(w.message)] == (
            ["strider.compile: f: operands could not be broadcast together with shapes (8,) (1,) (a length of 1 known "
             f"only when the function runs, at {__file__}:{f.__code__.co_firstlineno + 5}): NumPy broadcasts it (the "
             "compiled program reads those lengths as one): this call ran in NumPy; strict=True raises instead"]
            if y is one else [])
        text = str(g.explain(x, y, 0.5))  # explain() lists the run-time break
        assert "(8,) (1,) (a length of 1 known only when the function runs" in text[text.index("== run-time breaks"):]
    with pytest.raises(ValueError, match="known only when the function runs"):
        strider.compile(f, target=TARGET, strict=True)(S.copy(), one, 0.5)


def test_ix_and_runtime_lengths_in_ufuncs():
    def f(x, m, s):
        y = s[s > 0.5]
        return x[np.ix_(m, [0, 2])], np.arange(3) < y.shape[0], np.minimum(y.shape[0], 2), y.shape[0] - 1

    check(f, X, np.array([True, False, True, True]), S)
    check_raises(lambda x: np.ix_(x), X, exc=ValueError)
