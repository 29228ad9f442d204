"""Differential tests for NumPy functions beyond the basics: split, matmul/dot, isclose,
count_nonzero, pad, linalg.norm, np.average, the NaN-ignoring reductions, roll, select, digitize,
diff's prepend/append, np.vectorize and the math module; values tracing knows."""
import math
import warnings
from math import sqrt

import numpy as np
import pytest

import strider
from differential import check, check_raises


def ar(shape, dtype=np.float64):
    n = int(np.prod(shape))
    return (np.arange(n) % 13 - 6).astype(dtype).reshape(shape)


@pytest.mark.parametrize("fn", [
    lambda x: np.split(x, 2, axis=1),
    lambda x: np.split(x, [1, 3], axis=0),
    lambda x: np.array_split(x, 3, axis=1),
    lambda x: np.hsplit(x, 2),
    lambda x: np.vsplit(x, [2]),
    lambda x: tuple(c.sum() for c in np.split(x, 4, axis=-1)),
], ids=["split2", "split_idx", "array_split", "hsplit", "vsplit", "unpack_boxes"])
def test_split_returns_views(fn):
    check(fn, ar((4, 4)))


@pytest.mark.parametrize("fn", [np.triu, np.tril, lambda m: np.triu(m, k=1), lambda m: np.tril(m, -2),
                                lambda m: np.triu(m, 5)], ids=["triu", "tril", "triu_k1", "tril_k-2", "triu_past"])
@pytest.mark.parametrize("m", [ar((3, 4)), ar((2, 3, 4), np.int32)[..., ::-1], ar(3), ar((2, 2)) > 0],
                         ids=["2d", "3d_reversed_int", "1d_rows", "bool"])
def test_triangles(fn, m):
    # YOLACT's fast NMS keeps the upper triangle of the IoU matrix
    check(fn, m)


def test_triangle_of_a_runtime_length_is_refused():
    with pytest.raises(strider.UnsupportedError, match="np.triu of an array whose length is known only at run time"):
        strider.compile(lambda x: np.triu(x[x > 0][:, None] * x[None, :2]), strict=True)(ar((5,)))


def test_split_writes_reach_the_argument():
    def f(boxes):
        x1, y1, x2, y2 = np.split(boxes, 4, axis=-1)
        x2 += x1
        return y2

    check(f, ar((5, 4)))


def test_split_unequal_raises():
    check_raises(lambda x: np.split(x, 3, axis=1), ar((4, 4)), exc=ValueError)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float64, np.bool_])
@pytest.mark.parametrize("shapes", [((3, 4), (4, 2)), ((4,), (4, 2)), ((3, 4), (4,)), ((4,), (4,)),
                                    ((2, 3, 4), (4, 5)), ((2, 1, 3, 4), (5, 4, 2))], ids=str)
def test_matmul(shapes, dtype):
    a, b = ar(shapes[0], dtype), ar(shapes[1], dtype)
    tol = {"rtol": 1e-12} if dtype == np.float64 else {}
    check(lambda x, y: (x @ y, np.matmul(x, y)), a, b, **tol)


def overlaps(masks):
    # SOLO's matrix NMS, Mask R-CNN's mask overlaps: every mask against every other, a row apart
    inter = masks @ masks.T
    areas = masks.sum(axis=1)
    return inter / (areas[:, None] + areas[None, :] - inter)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
@pytest.mark.parametrize("shape", [(7, 300), (33, 1024), (2, 5, 64)], ids=str)
def test_matmul_against_a_transpose(shape, dtype):
    # the reduced axis is folded innermost (default_schedule): sums of contiguous runs, reassociated
    rng = np.random.default_rng(len(shape))
    m = ((rng.random(shape) < 0.3) * rng.integers(1, 9, shape) * (rng.random() + 0.5)).astype(dtype)
    m[..., 0] = 1
    tol = {} if dtype == np.int64 else {"rtol": 1e-5 if dtype == np.float32 else 1e-12}
    check(lambda x: x @ x.swapaxes(-1, -2), m, **tol)
    if len(shape) == 2 and dtype != np.int64:
        check(overlaps, m, **tol)


def smooth(y, f=0.05):
    # YOLOv5's utils/metrics.py: a box filter of fraction f over the curve, ends padded
    nf = round(len(y) * f * 2) // 2 + 1
    p = np.ones(nf // 2)
    yp = np.concatenate((p * y[0], y, p * y[-1]), 0)
    return np.convolve(yp, np.ones(nf) / nf, mode="valid")


@pytest.mark.parametrize("mode", ["full", "same", "valid", 1])
@pytest.mark.parametrize("lengths", [(10, 3), (3, 10), (7, 7), (6, 4), (1, 1), (5, 1)], ids=str)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.bool_])
def test_convolve_and_correlate(lengths, mode, dtype):
    rng = np.random.default_rng(sum(lengths))
    a, v = ((rng.random(n) * 9 - 3).astype(dtype) for n in lengths)
    tol = {"rtol": 1e-12 if dtype == np.float64 else 1e-5} if dtype in (np.float32, np.float64) else {}
    check(lambda x, y: (np.convolve(x, y, mode), np.correlate(x, y, mode)), a, v, **tol)


def test_convolve_smooths_a_curve_and_raises_numpys_errors():
    check(smooth, np.sort(np.random.default_rng(2).random(1000)), rtol=1e-12)
    check(lambda x: np.convolve(x, x[::-1] * 0.5), ar((9,)), rtol=1e-12)
    check_raises(lambda x, y: np.convolve(x, y), ar((4,)), np.zeros(0), exc=ValueError)
    check_raises(lambda x, y: np.correlate(x, y), np.zeros(0), ar((4,)), exc=ValueError)
    for mode in ("bogus", "VALID", 5):
        check_raises(lambda x, y, mode=mode: np.correlate(x, y, mode=mode), ar((4,)), ar((2,)), exc=ValueError)
    check_raises(lambda x, y: np.convolve(x, y), ar((2, 3)), ar((2,)), exc=ValueError)


@pytest.mark.parametrize("shapes", [((3, 4), (4, 2)), ((4,), (4,)), ((2, 3, 4), (4,)), ((2, 3, 4), (5, 4, 2)),
                                    ((3,), ())], ids=str)
def test_dot(shapes):
    check(lambda x, y: (np.dot(x, y), x.dot(y)), ar(shapes[0]), ar(shapes[1]) if shapes[1] else np.float64(2.5),
          rtol=1e-12)


def test_matmul_mismatch_raises():
    check_raises(lambda x, y: x @ y, ar((3, 4)), ar((3, 4)), exc=ValueError)


@pytest.mark.parametrize("equal_nan", [False, True])
def test_isclose(equal_nan):
    a = np.array([1.0, np.nan, np.inf, -np.inf, 1e-9, 5.0], np.float32)
    b = np.array([1.0 + 1e-7, np.nan, np.inf, np.inf, 0.0, 5.1], np.float32)
    check(lambda x, y: np.isclose(x, y, equal_nan=equal_nan), a, b)
    check(lambda x: np.isclose(x, 1), np.array([1, 2], np.int32))


@pytest.mark.parametrize("axis,keepdims", [(None, False), (0, False), (1, True), ((0, 1), False)])
def test_count_nonzero(axis, keepdims):
    check(lambda x: np.count_nonzero(x, axis=axis, keepdims=keepdims), ar((3, 4)) > 0)
    check(lambda x: np.count_nonzero(x, axis=axis, keepdims=keepdims), ar((3, 4), np.float32))


@pytest.mark.parametrize("pad_width", [1, (1, 2), ((0, 1), (2, 0))], ids=str)
def test_pad_constant(pad_width):
    check(lambda x: np.pad(x, pad_width, constant_values=-1.5), ar((3, 4), np.float32))


@pytest.mark.parametrize("mode", ["edge", "reflect", "symmetric", "wrap"])
@pytest.mark.parametrize("pad_width", [2, ((1, 7), (0, 2)), 0], ids=str)
def test_pad_by_positions(mode, pad_width):
    # gathers at NumPy's positions; widths past the axis reflect or wrap again, an axis of one
    check(lambda x: (np.pad(x, pad_width, mode=mode), np.pad(x[:1], pad_width, mode=mode)), ar((3, 4), np.float32))


def test_pad_other_modes_are_refused():
    import strider

    with pytest.raises(strider.UnsupportedError, match="np.pad"):
        strider.compile(lambda x: np.pad(x, 1, mode="mean"))(ar((3, 4)))
    with pytest.raises(strider.UnsupportedError, match="np.pad"):
        strider.compile(lambda x: np.pad(x, 1, mode="reflect", reflect_type="odd"))(ar((3, 4)))


@pytest.mark.parametrize("axis,keepdims", [(None, False), (-1, False), (0, True)])
def test_linalg_norm(axis, keepdims):
    check(lambda x: np.linalg.norm(x, axis=axis, keepdims=keepdims), ar((3, 4), np.float32), rtol=1e-6)
    check(lambda x: np.linalg.norm(x, axis=axis, keepdims=keepdims), ar((3, 4), np.int32), rtol=1e-12)


@pytest.mark.parametrize("ord", [1, 3, 0.5, -1, -2, 0, np.inf, -np.inf])
def test_linalg_vector_norms_of_any_order(ord):
    # norfair's mean_manhattan: np.linalg.norm(p - e, ord=1, axis=1); NumPy's forms (its float
    # sums within ulps), zeros among the values
    x = ar((4, 3))
    check(lambda x: np.linalg.norm(x, ord=ord, axis=1), x.astype(np.float32), rtol=1e-6)
    check(lambda x: np.linalg.norm(x, ord=ord, axis=0, keepdims=True), x + 0.5, rtol=1e-13)
    check(lambda x: np.linalg.norm(x[1], ord=ord), x.astype(np.int32), rtol=1e-13)


@pytest.mark.parametrize("ord", [1, -1, np.inf, -np.inf, "fro"])
def test_linalg_matrix_norms(ord):
    check(lambda x: np.linalg.norm(x, ord=ord), ar((4, 3)) + 0.5, rtol=1e-13)
    check(lambda x: np.linalg.norm(x, ord=ord, axis=(2, 0), keepdims=True), ar((3, 2, 4), np.float32), rtol=1e-6)


def test_linalg_norms_an_svd_gives_are_refused():
    import strider

    with pytest.raises(strider.UnsupportedError, match="np.linalg.norm with ord='nuc' over 2 axes"):
        strider.compile(lambda x: np.linalg.norm(x, ord="nuc"), strict=True)(ar((3, 3)))


# ---------------------------------------------------------------------------------------------
# Values tracing knows (constants, static arguments through NumPy, and what is computed from them)
# stay known: sizes, indices, slice bounds and Python decisions computed from them work
# ---------------------------------------------------------------------------------------------
def _grid(x, shape):
    h, w = np.array(shape[:2])  # a static shape through NumPy
    if np.array(shape).prod() > 10:  # a Python decision on a value computed from it
        x = x * 2
    xs = np.arange(w - 1) * 0.5
    return x[:h, :w - 1] + xs, x.reshape(np.array(x.shape)[0], -1)[: np.int64(h) // 2]


@pytest.mark.parametrize("fn", [
    lambda x, w: np.average(x),
    lambda x, w: np.average(x, axis=0, returned=True),
    lambda x, w: np.average(x, axis=1, weights=w[0], returned=True),
    lambda x, w: np.average(x, weights=w),
    lambda x, w: np.average(x, axis=(1, 0), weights=w.T),
    lambda x, w: np.average(x, axis=0, weights=w[:, 0], keepdims=True),
    lambda x, w: np.average(x[x[:, 0] > 0], axis=0, weights=w[x[:, 0] > 0, 1]),  # a run-time length
    lambda x, w: np.average(x.astype(np.int32), axis=1, weights=w[0].astype(np.float32)),  # int: float64
], ids=["mean", "returned", "weights_axis", "weights_all", "axes_reordered", "keepdims", "runtime_length",
        "int_data"])
def test_average(fn):
    # Detectron's box voting: np.average(boxes_to_vote, axis=0, weights=ws)
    check(fn, ar((5, 4)), np.abs(ar((5, 4), np.float32)) + 0.5, rtol=1e-12)


def test_average_of_weights_summing_to_zero_raises_when_it_runs():
    check_raises(lambda x, w: np.average(x, axis=0, weights=w), ar((3, 2)), np.array([1.0, -1.0, 0.0]),
                 exc=ZeroDivisionError)
    check_raises(lambda x, w: np.average(x, weights=w), ar((3, 2)), np.ones(3), exc=TypeError)


@pytest.mark.parametrize("shape", [(3, 4), (2, 2), (4, 5, 3)])
def test_static_values_through_numpy_stay_known(shape):
    check(_grid, ar((4, 5)), shape, static_argnames=("shape",))


def test_a_known_array_written_is_known_no_more():
    def f(x):
        n = np.array([2, 3])
        n[0] = x.shape[0]  # written: what tracing knew of n[0] no longer holds
        return np.zeros(n[0]) + x[0]

    try:
        check(f, ar((5,)))
    except strider.UnsupportedError:  # refusing is fine; the first value of n[0] would be wrong
        pass


# ---------------------------------------------------------------------------------------------
# np.vectorize of Python scalar functions and the math module on traced values
# (a TensorRT sample's YOLOv3 decode: np.vectorize(math.exp)); transcendental: within 1e-14
# ---------------------------------------------------------------------------------------------
def _sigmoid(v):
    return 1.0 / (1.0 + math.exp(-v))


_SIGMOID = np.vectorize(_sigmoid)  # made outside the compiled function


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn", [
    lambda x: np.vectorize(math.exp)(x),
    lambda x: _SIGMOID(x) * 2,
    lambda x: np.vectorize(lambda v: math.floor(v) + math.hypot(v, 3.0))(x),
    lambda x: np.vectorize(lambda v: 3.0)(x),
    lambda x: np.vectorize(lambda v: v * 2, otypes=[np.float32])(x),
], ids=["exp", "sigmoid_outside", "floor_hypot", "constant", "otypes"])
def test_vectorize_of_python_functions(fn, dtype):
    check(fn, (ar((3, 4)) / 3).astype(dtype), rtol=1e-14)


def test_vectorize_keeps_integer_results():
    check(lambda x: np.vectorize(lambda v: v * 3 + 1)(x), ar((5,), np.int32))


def test_math_functions_on_traced_values():
    def f(x, s):
        return x * sqrt(s) + math.floor(s) + math.log(s, 2) + math.atan2(s, 2.0), math.isfinite(s)

    check(f, ar((4,), np.float32), 2.5, rtol=1e-14)


def test_vectorize_with_python_branches_is_refused_by_name():
    f = strider.compile(lambda x: np.vectorize(lambda v: v if v > 0 else 0.0)(x))
    with pytest.raises(strider.TraceError, match="truth value of a traced array"):
        f(ar((3,)))


def test_python_numbers_through_operators_and_ufuncs():
    # an operator on Python numbers gives a Python number, an np.* ufunc NumPy's scalar
    def f(x, n):
        return np.minimum(n, 2), n - 1, x.sum() + n, -n, n < 3, abs(n), n ** 2, np.add(n, 1) + 1

    check(f, np.ones(3), 5)


def test_divmod():
    # np.divmod's halves are floor_divide and remainder; Python's divmod of Python numbers stays Python's
    def f(a, b, n):
        q, r = np.divmod(a, b)
        return q, r, divmod(a, 3), divmod(n, 4), np.divmod(7, b)

    check(f, np.array([7.0, -7, 7, -7, 0.5, np.inf, 3]), np.array([2.0, 2, -2, -2, 0, 2, np.nan]), 9)
    check(lambda a: divmod(a, np.int64(3)), np.array([7, -7, 0, 5]))


def index_tricks(x, y, s):
    # np.c_ and np.r_ of traced values: columns, scalars that do not upcast, slices as aranges
    return (np.c_[x, y, x + 1], np.r_[x, 0.5, y[:2]], np.r_[x.astype(np.float32), 1, 2], np.r_[0, np.cumsum(s)],
            np.c_[np.c_[x, y], s], np.r_[1:4, x[:2]], np.c_[x[:3], 1:4], np.r_[[x[0], y[1]], x[1:3]])


def test_index_tricks():
    x = np.arange(5.0)
    check(index_tricks, x, x * 2 - 3, np.array([1, 2, 3, 4, 5]))


def comparisons_and_cleanups(a, b):
    nan_free = np.nan_to_num(a)
    bounded = np.nan_to_num(a, nan=-1.0, posinf=9.0, neginf=-9.0)
    same = np.allclose(a, b, atol=1e-3, equal_nan=True)
    if np.array_equal(b, b):  # a traced condition (False where b holds a NaN)
        kept = b + 1
    else:
        kept = b - 1
    return (nan_free, bounded, same, kept, np.array_equal(a, b[:2]), np.array_equal(a, a, equal_nan=True),
            np.isposinf(a), np.isneginf(a), np.ptp(b), np.ptp(np.abs(a[:2] - b[:2]).reshape(1, 2), axis=1))


def nan_to_num_in_place(a):
    r = np.nan_to_num(a, copy=False)
    return r, np.nan_to_num(a.astype(np.int32))


@pytest.mark.parametrize("b", [np.array([1.0, np.nan, 2.0, -3.0]), np.array([1.0, 2.0, 2.0, -3.0])])
def test_comparisons_and_cleanups(b):
    a = np.array([1.0, np.nan, np.inf, -np.inf], np.float32)
    check(comparisons_and_cleanups, a, b)
    check(comparisons_and_cleanups, b.astype(np.float32), b + 1e-4)
    check(nan_to_num_in_place, a)


def compared_with_none(x, s):
    # SORT's convert_x_to_bbox: `if(score==None):` on a number the caller passes
    return (s == None, None != s, x[0] != None, x == None, x[x > 0.5] != None, x.sum() == None,  # noqa: E711
            x[1:2].reshape(()) == None)  # noqa: E711


def test_comparisons_with_none_are_never_equal():
    check(compared_with_none, np.array([0.2, 0.7, 0.9]), 0.4)


def matrices(v, m, c):
    d = np.diag(m)
    return (np.diag(v), np.diag(v, 1), np.diag(v, -2), d * 2, np.diag(m, -1), np.diagonal(m, 1), np.outer(v, c),
            np.linalg.multi_dot((m, m.T, m)), np.linalg.multi_dot((v[:3], m, c)), np.linalg.multi_dot([m, c]))


def writes_a_diagonal(m):
    np.diag(m)[0] = 1.0


def test_diag_outer_multi_dot():
    m = np.arange(9.0).reshape(3, 3) - 4
    check(matrices, np.array([1.0, -2.0, 3.5, 4.0]), m, np.array([0.5, -1.0, 2.0]))
    check(matrices, np.array([1, 2, 3, 4]), np.asfortranarray(m.astype(np.int64)), np.array([1, 0, 2]))
    check_raises(writes_a_diagonal, m, exc=ValueError)  # NumPy's diagonal is read-only


def _as_lists(b, m, k):
    rows = b.tolist()
    x = rows[0][0]
    x += 5  # a Python number: the list keeps its own
    rows[1][0] *= 2
    kept = [r for r, keep in zip(rows, m.tolist()) if keep]
    return (x, rows, kept, sum(rows[2]), max(rows[3]), [v * 2 for v in rows[-1]], b[0].tolist(),
            k.tolist(), (k > 0).tolist(), b.astype(np.float16).tolist())


@pytest.mark.parametrize("rows", [4, 7])
def test_tolist_gives_python_numbers_in_lists(rows):
    # floats, ints and bools as Python's, nested as the shape; each list its own (writes into one
    # leave the array and the others as they were)
    rng = np.random.default_rng(rows)
    b = rng.uniform(0, 100, (rows, 4)).astype(np.float32)
    check(_as_lists, b, rng.uniform(0, 1, rows) > 0.5, rng.integers(-5, 5, (rows, 2)).astype(np.int16))


def angles(x, out):
    # RetinaFace's check_large_pose: np.degrees of arctan2; NumPy's constant is computed in the
    # loop's dtype (float16's in float32)
    return np.degrees(x, out=out), np.radians(x[0]), np.rad2deg(x, dtype=np.float64), np.deg2rad(2.5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int8])
def test_degrees_and_radians(dtype):
    x = (np.random.default_rng(5).standard_normal(257) * 100).astype(dtype)
    check(angles, x, np.zeros(257))


def change_coordinate_frame(boxes, window):
    # TF object detection's np_box_list_ops: a list of traced numbers as a ufunc's operand
    win_height, win_width = window[2] - window[0], window[3] - window[1]
    return ((boxes - [window[0], window[1], window[0], window[1]]) * ([1.0 / win_height, 1.0 / win_width] * 2),
            np.maximum(boxes, (window[0], 0.5, window[2], 1)), [window[0], 1] + boxes[0, :2])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lists_of_traced_numbers_as_ufunc_operands(dtype):
    rng = np.random.default_rng(6)
    check(change_coordinate_frame, rng.random((3, 4)).astype(dtype), np.array([0.1, 0.2, 0.5, 0.6], dtype))


@pytest.mark.parametrize("fn", [
    pytest.param(lambda y, x: np.trapezoid(y[0]), id="dx"),
    pytest.param(lambda y, x: np.trapezoid(y, dx=0.5, axis=0), id="dx_axis0"),
    pytest.param(lambda y, x: np.trapezoid(y, x[0]), id="x_1d"),
    pytest.param(lambda y, x: np.trapezoid(y, x, axis=-1), id="x_2d"),
    pytest.param(lambda y, x: np.trapezoid(y[0][y[0] > 0], x[0][y[0] > 0]), id="run_time_length"),
])
def test_trapezoid(fn):
    rng = np.random.default_rng(9)
    check(fn, rng.standard_normal((3, 7)), np.cumsum(rng.random((3, 7)), axis=1), rtol=1e-12)


def gaussian_at(heatmap, center, radius):
    # CenterNet's gaussian2D (np.ogrid of known bounds) cut at a center only the run knows
    m = n = radius
    y, x = np.ogrid[-m:m + 1, -n:n + 1]
    h = np.exp(-(x * x + y * y) / (2 * (radius / 3) ** 2))
    cx, cy = int(center[0]), int(center[1])
    height, width = heatmap.shape
    left, right = min(cx, radius), min(width - cx, radius + 1)
    top, bottom = min(cy, radius), min(height - cy, radius + 1)
    g = h[radius - top:radius + bottom, radius - left:radius + right]
    return np.maximum(heatmap[cy - top:cy + bottom, cx - left:cx + right], g), np.mgrid[0:2, 0:3]


@pytest.mark.parametrize("center", [[4.5, 3.2], [0.0, 0.0], [7.9, 5.0]], ids=["inside", "corner", "edge"])
def test_a_grid_of_known_bounds_cut_at_run_time_positions(center):
    check(gaussian_at, np.random.default_rng(10).random((6, 8)), np.array(center), 2)


def _max_into(a):
    o = np.zeros_like(a[~(a <= 0.4)])
    np.maximum(a[a > 0.4], 0.5, out=o)  # out's run-time length, another, is the operand's at run time
    return o


def test_out_of_a_run_time_length_equal_to_the_operands():
    a = np.random.default_rng(11).random(10)
    check(_max_into, a)


def test_out_of_another_run_time_length_raises_as_numpy():
    a = np.random.default_rng(11).random(10)
    check_raises(lambda a: np.maximum(a[a > 0.4], 0.5, out=np.zeros_like(a[a > 0.7])), a, exc=ValueError)


def _with_nans(seed=0, dtype=np.float32):
    x = np.random.default_rng(seed).random((5, 6)).astype(dtype)
    x[x > 0.8] = np.nan
    x[2] = np.nan
    return x


@pytest.mark.parametrize("fn", [
    pytest.param(lambda x: (np.nanmax(x, 1), np.nanmin(x, 0), np.nanmax(x), np.nanmin(x, keepdims=True)), id="extremes"),
    pytest.param(lambda x: np.nanmax(x, 1, initial=0.5), id="max_initial"),
    pytest.param(lambda x: (np.nansum(x, 1), np.nansum(x), np.nanprod(x, 0, keepdims=True)), id="sum_prod"),
    pytest.param(lambda x: (np.nanmean(x, 1), np.nanmean(x), np.nanmean(x, 0, dtype=np.float64)), id="mean"),
    pytest.param(lambda x: np.nanmean(x.astype(np.float16), 1), id="mean_f16"),
    pytest.param(lambda x: (np.nanargmax(x[:2], 1), np.nanargmin(x), np.nanargmax(x[3:], 0, keepdims=True)), id="arg"),
    pytest.param(lambda x: (np.nanmax(x[x[:, 0] > 0.3], 0), np.nanmean(x[x[:, 0] > 0.3], 0)), id="runtime_length"),
    pytest.param(lambda x: (np.nanmax(x.astype(np.int32) + 3, 0), np.nanargmin(x > 0.5), np.nanmean(x > 0.5, 1)),
                 id="ints"),
])
def test_nan_reductions(fn):
    check(fn, _with_nans(), rtol=1e-6)  # float sums add in SIMD lanes (README, Accuracy)


@pytest.mark.parametrize("fn", [
    pytest.param(lambda x: np.nanargmax(x, 1), id="all_nan_row"),
    pytest.param(lambda x: np.nanargmin(x[x[:, 0] > 2]), id="runtime_empty"),
    pytest.param(lambda x: np.nanmax(x[:0], 0), id="empty"),
])
def test_nan_reductions_raise_numpys_error(fn):
    check_raises(fn, _with_nans(), exc=ValueError)


@pytest.mark.parametrize("fn", [
    pytest.param(lambda x: np.roll(x, 2), id="flat"),
    pytest.param(lambda x: np.roll(x, -1, 1), id="axis"),
    pytest.param(lambda x: np.roll(x, (1, 2), (0, 1)), id="axes"),
    pytest.param(lambda x: np.roll(x, [1, 1], 1), id="same_axis_twice"),
    pytest.param(lambda x: np.roll(x[:, ::-1].T, 7, 0), id="past_length_strided"),
    pytest.param(lambda x: np.roll(x[x[:, 0] > 0.3], 2, 1), id="runtime_rows"),
    pytest.param(lambda x: np.roll(x[x[:, 0] > 0.3], (-3, 1), (0, 1)), id="along_runtime_length"),
    pytest.param(lambda x: np.roll(x[x[:, 0] > 9], 2, 0), id="runtime_empty"),
])
def test_roll(fn):
    check(fn, ar((4, 6), np.float32) / 7)


@pytest.mark.parametrize("fn", [
    pytest.param(lambda x: np.select([x < -2, x < 2], [x, -x], default=0), id="two"),
    pytest.param(lambda x: np.select([x > 0], [1]), id="python_int"),
    pytest.param(lambda x: np.select([x > 0, x > 3], [x.astype(np.float64), 2], 7.5), id="promotes"),
    pytest.param(lambda x: np.select([x[0] > 0], [x], default=x[1]), id="broadcast"),
    pytest.param(lambda x: np.select([x > 3], [np.int32(3)], default=np.int8(1)), id="numpy_scalars"),
])
def test_select(fn):
    check(fn, ar((4, 5), np.int32))


@pytest.mark.parametrize("fn,exc", [
    pytest.param(lambda x: np.select([x], [x]), TypeError, id="not_bool"),
    pytest.param(lambda x: np.select([x > 0], []), ValueError, id="lengths"),
    pytest.param(lambda x: np.select([], []), ValueError, id="empty"),
])
def test_select_raises_numpys_error(fn, exc):
    check_raises(fn, ar(5), exc=exc)


@pytest.mark.parametrize("bins", [[0.2, 0.5, 0.8], [0.8, 0.5, 0.5, 0.2], [0.3, 0.3], [0.5], [], [0.3, np.nan, 0.1]],
                         ids=["increasing", "decreasing", "flat", "one", "none", "nan"])
@pytest.mark.parametrize("known", [True, False], ids=["known_bins", "traced_bins"])
def test_digitize(bins, known):
    x = np.random.default_rng(1).random(9)
    if known:
        check(lambda x: (np.digitize(x, bins), np.digitize(x, bins, right=True), np.digitize(x[0], bins)), x)
    else:
        check(lambda x, b: (np.digitize(x, b), np.digitize(x, b, right=True), np.digitize(x[0], b)), x, np.array(bins))


@pytest.mark.parametrize("known", [True, False], ids=["known_bins", "traced_bins"])
def test_digitize_of_bins_out_of_order_raises(known):
    bins = [0.2, 0.9, 0.5]
    if known:
        check_raises(lambda x: np.digitize(x, bins), np.arange(3.0), exc=ValueError)
    else:
        check_raises(lambda x, b: np.digitize(x, b), np.arange(3.0), np.array(bins), exc=ValueError)


@pytest.mark.parametrize("fn", [
    pytest.param(lambda x: np.diff(x, prepend=0.0), id="prepend_number"),
    pytest.param(lambda x: np.diff(x, axis=0, append=x[-1:]), id="append_rows"),
    pytest.param(lambda x: np.diff(x, 2, prepend=[[0, 0]] * 4, append=1), id="twice_both"),
    pytest.param(lambda x: np.diff(x, 0), id="order_0"),
    pytest.param(lambda x: np.diff(x[x[:, 0] > 0.3], axis=0, prepend=0), id="runtime_rows"),
])
def test_diff_prepend_append(fn):
    check(fn, ar((4, 5), np.float32) / 5)


@pytest.mark.parametrize("fn", [lambda x: np.diff(x, -1), lambda x: np.diff(x[0, 0])], ids=["negative", "0d"])
def test_diff_raises_numpys_error(fn):
    check_raises(fn, ar((4, 5)), exc=ValueError)


@pytest.mark.parametrize("fn,args", [
    pytest.param(lambda x: (np.ediff1d(x), np.ediff1d(x, to_begin=3, to_end=[1, 2])), (ar((4, 5), np.float32) / 5,),
                 id="flattened_ends_cast"),
    pytest.param(lambda x: np.ediff1d(x, to_begin=np.uint8(7), to_end=x[:2]), (np.array([1, 9, 4], np.uint8),),
                 id="uint8_wraps"),
    pytest.param(lambda x: np.ediff1d(x[x > 0.5], to_end=x[:1]), (np.array([0.7, 0.1, 0.9, 0.6]),), id="runtime_length"),
    pytest.param(lambda x: np.ediff1d(x[:1], to_begin=[[1.0]]), (np.arange(3.0),), id="one_element"),
])
def test_ediff1d(fn, args):
    check(fn, *args)


@pytest.mark.parametrize("fn,x", [
    pytest.param(lambda x: np.ediff1d(x, to_begin=[0.5]), np.arange(3), id="float_begin_of_ints"),
    pytest.param(lambda x: np.ediff1d(x, to_end=[-1]), np.arange(3, dtype=np.uint8), id="int64_end_of_uint8"),
    pytest.param(lambda x: np.ediff1d(x), np.array([True, False]), id="bools"),
])
def test_ediff1d_raises_numpys_type_error(fn, x):
    check_raises(fn, x, exc=TypeError)


def _arrays_of_scalars(a):
    return np.array(a[0], dtype=np.uint8), np.array(a[1]), np.asarray(a[1]), a[0].copy(), np.asarray(float(a[0]))


def test_arrays_of_scalars_and_copies_of_scalars():
    # np.array and np.asarray of a scalar make a 0-d array; a NumPy scalar's copy is a scalar
    check(_arrays_of_scalars, np.array([3.5, 7.25]))


@pytest.mark.parametrize("fn, b", [
    pytest.param(lambda a, b: np.cross(a, b), ar((5, 3), np.float32) / 7, id="rows"),
    pytest.param(lambda a, b: np.cross(a, b[0]), ar((5, 3)) / 3, id="broadcast_row_float64"),
    pytest.param(lambda a, b: np.cross(a.T, b, axisa=0), ar((5, 3), np.float32) / 7, id="axisa"),
    pytest.param(lambda a, b: np.cross(a, b, axisc=0), ar((5, 3), np.float32) / 7, id="axisc"),
    pytest.param(lambda a, b: np.cross(a.T, b.T, axis=0), ar((5, 3), np.float32) / 7, id="axis"),
    pytest.param(lambda a, b: np.cross(a, b), ar((5, 3), np.int32) - 6, id="ints"),
    pytest.param(lambda a, b: np.cross(a[a[:, 0] > 0.4], b[0]), ar((5, 3), np.float32), id="runtime_rows"),
])
def test_cross(fn, b):
    # (face alignment's and rotated-box code's np.cross): NumPy's products and differences, in
    # the promoted dtype, laid out as NumPy lays out its result
    check(fn, ar((5, 3), np.float32) / 5, b)


def _numpy_takes_2_vectors():
    """NumPy 2.0 deprecated np.cross of 2-vectors, and 2.5 raises ValueError for them."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            np.cross(np.ones(2), np.ones(2))
        except ValueError:
            return False
    return True


@pytest.mark.parametrize("fn", [
    pytest.param(lambda a, b: np.cross(a[:, :2], b), id="2_by_3"),
    pytest.param(lambda a, b: np.cross(a, b[:, :2]), id="3_by_2"),
    pytest.param(lambda a, b: np.cross(a[:, :2], b[:, 1:]), id="2_by_2"),
    pytest.param(lambda a, b: np.cross(a[0, :2], b[1, :2]), id="2_by_2_0d"),
])
@pytest.mark.filterwarnings("ignore:Arrays of 2-dimensional vectors:DeprecationWarning")
def test_cross_of_2_vectors_as_the_installed_numpy(fn):
    # the third component alone, or NumPy 2.5's ValueError
    args = ar((5, 3), np.float32) / 5, ar((5, 3), np.float32) / 7
    if _numpy_takes_2_vectors():
        check(fn, *args)
    else:
        check_raises(fn, *args, exc=ValueError)


@pytest.mark.parametrize("fn, exc", [
    pytest.param(lambda a: np.cross(a, a[:, :1]), ValueError, id="1_component"),
    pytest.param(lambda a: np.cross(a[0, 0], a[0]), ValueError, id="0d"),
    pytest.param(lambda a: np.cross(a > 0.5, a > 0.2), TypeError, id="bool"),
])
def test_cross_raises_numpys_error(fn, exc):
    check_raises(fn, ar((4, 3)) / 12, exc=exc)


def _cross_of_2_vectors(a, b):
    return np.cross(a[:, :2], b[:, :2])


def test_cross_of_2_vectors_warns_at_the_users_line():
    # NumPy 2 deprecates 2-vectors; the warning points at the user's call, not at strider. NumPy
    # 2.5 refuses them: so does strider, with its words
    if not _numpy_takes_2_vectors():
        with pytest.raises(ValueError, match=r"must be \(arrays of\) 3-dimensional vectors, but they are 2 and 2"):
            strider.compile(_cross_of_2_vectors)(ar((4, 3)), ar((4, 3)) / 5)
        return
    with pytest.warns(DeprecationWarning, match="2-dimensional vectors") as record:
        strider.compile(_cross_of_2_vectors)(ar((4, 3)), ar((4, 3)) / 5)
    assert record[0].filename == __file__
    assert record[0].lineno == _cross_of_2_vectors.__code__.co_firstlineno + 1
