"""Differential tests for np.percentile and np.quantile: every method NumPy has, q as a number, a
list or an array (known while tracing, or an argument), axes, keepdims, out= and overwrite_input=,
NaNs, ties of -0.0 and 0.0, a 1-d array of a run-time length; NumPy's errors, strider's refusals."""
import numpy as np
import pytest

import strider
from differential import TARGET, check, check_raises
from strider.testing import clone_args, compare_calls

METHODS = ["inverted_cdf", "averaged_inverted_cdf", "closest_observation", "interpolated_inverted_cdf", "hazen",
           "weibull", "linear", "median_unbiased", "normal_unbiased", "lower", "higher", "midpoint", "nearest"]


def values(shape, dtype, nan=True, seed=0):
    a = np.random.default_rng(seed).uniform(0, 40, shape)
    a = np.round(a, 1) if np.dtype(dtype).kind == "f" else a
    a = a.astype(dtype)
    if nan and a.dtype.kind == "f":
        a[(1,) * a.ndim] = np.nan  # one slice of each axis holds a NaN, the others none
    return a


def quantiles_of(method):
    def f(x):
        return (np.percentile(x, 30, method=method),
                np.quantile(x, [0, 0.255, 0.5, 1], axis=0, method=method),
                np.percentile(x, [[10, 90], [50, 100]], axis=1, keepdims=True, method=method),
                np.quantile(x, np.array([0.0, 0.375, 1.0]), axis=-1, method=method),
                np.percentile(x[:, :3], 62.5, axis=(0, 1), method=method),
                np.quantile(x[:4], 0.5, method=method, keepdims=True))
    return f


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "uint8"])
@pytest.mark.parametrize("method", METHODS)
def test_methods(method, dtype):
    # NumPy's index arithmetic and interpolation, in its dtypes (float32 stays float32 with a
    # Python q, integers answer in float64 or, for the methods that take a value, in their own)
    check(quantiles_of(method), values((5, 4), dtype))


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7, 10])
def test_lengths(n):
    # odd and even lengths, one value, q at 0 and 100 and halfway between values
    x = values((n, 3), "float64", nan=False, seed=n)

    def f(x):
        return tuple(np.percentile(x, [0, 12.5, 50, 87.5, 100], axis=0, method=m) for m in METHODS)

    check(f, x)


@pytest.mark.parametrize("dtype", ["float16", "int32", "bool"])
def test_other_dtypes(dtype):
    # bool takes a value (NumPy's subtraction of bools, for the interpolating methods, raises)
    x = values((4, 5), dtype, seed=3) if dtype != "bool" else values((4, 5), "float64") > 20
    interpolate = [] if dtype == "bool" else ["linear", "hazen", "midpoint"]
    check(lambda x: tuple(np.percentile(x, [25, 60], axis=1, method=m) for m in ["lower", "nearest"] + interpolate), x)
    if dtype == "bool":
        check_raises(lambda x: np.percentile(x, 30), x, exc=TypeError)


def test_dtype_follows_q():
    # NumPy's promotion of the weights: a Python number is weak, a NumPy scalar or array is not
    x = values((6,), "float32", nan=False)

    def f(x):
        return (np.quantile(x, 0.3), np.quantile(x, np.float32(0.3)), np.quantile(x, np.float64(0.3)),
                np.quantile(x, np.array(0.3)), np.quantile(x, [0.3]), np.quantile(x, np.array([0.3], np.float32)),
                np.percentile(x, 30), np.percentile(x, np.float32(30)), np.percentile(x, np.array([30.0])),
                np.quantile(x.astype(np.int64), 1), np.quantile(x.astype(np.int64), [0, 1]), np.quantile(x, True))

    check(f, x)


@pytest.mark.parametrize("strict", [True, False])
def test_float32_nan_with_a_numpy_q(strict):
    # NumPy's 0-d answer where a NaN is among float32 values is the NaN itself, float32, where
    # a NumPy float64 q makes it float64 elsewhere: such a run goes to NumPy
    def f(x):
        return np.percentile(x, np.float64(30))

    check(f, values((6,), "float32", nan=False))
    x = values((6,), "float32")
    if strict:
        with pytest.raises(strider.RunTimeBreakError, match="np.percentile of float32 values that hold a NaN"):
            strider.compile(f, target=TARGET, strict=True)(x)
    else:
        with pytest.warns(strider.GraphBreakWarning, match="np.percentile of float32 values that hold a NaN"):
            check(f, x, strict=False)


@pytest.mark.skipif(TARGET == "cuda", reason="the device's partition is a sort: which of -0.0 and 0.0 lands where "
                                             "is NumPy's partition's only on the CPU")
@pytest.mark.parametrize("method", ["linear", "lower", "higher", "nearest", "midpoint", "inverted_cdf", "hazen"])
def test_signed_zeros(method):
    # NumPy's partition decides which of the equal -0.0 and 0.0 lands at each place
    z = np.array([0.0, -0.0, 0.0, -0.0, 1.0, -0.0, 0.0, 2.0, -1.0, -0.0])

    def f(x):
        return (np.quantile(x, [0.1, 0.2, 0.3, 0.4, 0.5, 0.6], method=method),
                np.quantile(x.reshape(2, 5), [0.25, 0.5, 0.75], axis=1, method=method))

    check(f, z)


def test_nan_slices():
    # NaN wherever a slice holds one, whatever q
    x = values((3, 4, 5), "float64", nan=False)
    x[0, 1, 2] = x[2, 3, 0] = np.nan

    def f(x):
        return (np.percentile(x, [0, 40, 100], axis=(0, 2)), np.quantile(x, 0.4, axis=(2, 0), keepdims=True),
                np.percentile(x, 50, axis=(1,)), np.quantile(x, 0.9, axis=(0, 1, 2)),
                np.percentile(x, [10, 60], axis=2, method="lower"))

    check(f, x)


def test_one_element_and_empty_slices():
    x = values((4, 5), "float64", seed=4)
    check(lambda x: (np.percentile(x[:1], [0, 30, 100], axis=0), np.quantile(x[:1], 0.5, axis=0, method="midpoint"),
                     np.percentile(x[0, 0], 30), np.percentile(x[0, 0], [30]), np.percentile(x[:0], 30, axis=1),
                     np.quantile(x[:0].astype(np.int64), [])), x)


@pytest.mark.parametrize("method", ["linear", "hazen", "lower", "averaged_inverted_cdf", "closest_observation"])
def test_q_an_argument(method):
    # q known only when the function runs: NumPy's index arithmetic traced, on the sorted values
    x = values((4, 5), "float32", seed=5)

    def f(x, p, qs):
        return (np.percentile(x, p, axis=1, method=method), np.quantile(x, qs, axis=0, method=method),
                np.percentile(x[:, :2], p, method=method))

    check(f, x, 37.5, np.array([0.0, 0.3, 1.0]))
    check(f, x, 100.0, np.array([[0.0, 0.3], [0.5, 1.0]], np.float32))


def test_q_an_argument_out_of_range():
    x = values((4, 5), "float64")
    check_raises(lambda x, p: np.percentile(x, p), x, 101.0, exc=ValueError)
    check_raises(lambda x, q: np.quantile(x, q, axis=0), x, np.array([0.5, -0.1]), exc=ValueError)


def test_out():
    # out= (keepdims too) is written and returned
    def f(x, out, out2):
        np.percentile(x, [20, 80], axis=0, out=out)
        return np.quantile(x, 0.5, axis=1, keepdims=True, out=out2)

    check(f, values((4, 5), "float64", seed=6), np.zeros((2, 5)), np.zeros((4, 1)))


@pytest.mark.skipif(TARGET == "cuda", reason="the device's partition is a sort, which NumPy's leaves in the input "
                                             "only on the CPU")
def test_overwrite_input():
    # NumPy's partition is left in the input where the values it partitions are a view of it
    x = values((4, 5), "float64", nan=False, seed=6)
    w = values((3, 4, 5), "float64", nan=False, seed=7)

    def g(x, y, w):
        return (np.percentile(x, [20, 80], axis=0, overwrite_input=True), np.quantile(y, 0.3, overwrite_input=True),
                np.percentile(w, 40, axis=(0, 2), overwrite_input=True, method="lower"))

    check(g, x, x.copy(), w)
    check(g, x, x[:, ::2], w[:, ::-1])


def masked_quantiles(method):
    def f(x, t):
        kept = x[~(x <= t)]  # (NaNs kept)
        return (np.percentile(kept, 30, method=method), np.quantile(kept, [0, 0.25, 0.5, 1], method=method),
                np.quantile(kept, 0.75, axis=0, keepdims=True, method=method))
    return f


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
@pytest.mark.parametrize("method", METHODS)
def test_run_time_length(method, dtype):
    # NumPy's index arithmetic on n, known only when the function runs: n of 1, even, odd; NaN
    # where one is kept
    x = values((9,), dtype, nan=False, seed=8)
    f = masked_quantiles(method)
    for t in [np.sort(x)[-2], 20.0, 2.0]:
        check(f, x, t)
    if dtype != "int64":
        x[4] = np.nan
        check(f, x, 20.0)


def test_run_time_length_empty():
    # NumPy raises IndexError for an empty array: strict=True says why the run cannot go on,
    # strict=False runs it in NumPy
    f = masked_quantiles("linear")
    x = values((9,), "float64", nan=False)
    with pytest.raises(strider.RunTimeBreakError, match="np.percentile of an empty array"):
        strider.compile(f, target=TARGET, strict=True)(x, 50.0)
    with pytest.warns(strider.GraphBreakWarning), pytest.raises(IndexError):
        strider.compile(f, target=TARGET, strict=False)(x, 50.0)


def test_rows_of_a_run_time_count():
    # one program for every count of rows on the CPU (strider.compile's dynamic): over the rows'
    # known length, and over all values (a 1-d array of a run-time length)
    def f(x):
        return np.percentile(x, [25, 75], axis=1), np.quantile(x, 0.5, axis=-1, method="lower"), np.percentile(x, 40)

    g = strider.compile(f, target=TARGET, strict=True, dynamic=True)
    for n in [6, 7, 9, 5]:
        x = values((n, 4), "float64", nan=n == 9, seed=n)
        np_args, st_args = clone_args(((x,), {})), clone_args(((x,), {}))
        compare_calls(f(*np_args[0]), g(*st_args[0]), np_args, st_args)
    if TARGET == "cpu":  # (the device's programs take a signature per count)
        assert g.stats()["lowered"] == 1 and g.stats()["cache_hits"] == 3, g.stats()


@pytest.mark.parametrize("fn, exc", [
    (lambda x: np.percentile(x, 101), ValueError),
    (lambda x: np.percentile(x, [50, -1]), ValueError),
    (lambda x: np.quantile(x, 1.5), ValueError),
    (lambda x: np.quantile(x, np.nan), ValueError),
    (lambda x: np.quantile(x, np.full((1, 1, 1), 0.5)), ValueError),
    (lambda x: np.quantile(x, 0.5, method="cubic"), ValueError),
    (lambda x: np.quantile(x, 0.5, axis=2), np.exceptions.AxisError),
    (lambda x: np.quantile(x, 0.5, axis=(0, 0)), ValueError),
    (lambda x: np.percentile(x, 50, weights=np.ones_like(x)), ValueError),
    (lambda x: np.percentile(x[:0], 50), IndexError),
    (lambda x: np.quantile(x[:, :0], 0.5, axis=1, method="lower"), IndexError),
], ids=["pct_101", "pct_neg", "q_1.5", "q_nan", "q_3d", "method", "axis", "repeated_axis", "weights_linear",
        "empty", "empty_axis"])
def test_numpy_errors(fn, exc):
    check_raises(fn, values((4, 5), "float64"), exc=exc)


@pytest.mark.parametrize("fn, match", [
    (lambda x: np.percentile(x, 50, method="inverted_cdf", weights=np.ones_like(x)), r"np.percentile\(weights=...\)"),
    (lambda x: np.quantile(x, 0.5, axis=0, out=np.zeros(5, np.float32)), r"np.quantile\(out=...\) of another dtype"),
    (lambda x: np.percentile(x[x[:, 0] > 20], 50, axis=0), "np.percentile over an axis whose length is known only"),
    (lambda x: np.percentile(x[x > 20], 50, overwrite_input=True), r"np.percentile\(overwrite_input=True\) of a q or"),
], ids=["weights", "out_dtype", "n-d_run_time_length", "overwrite_run_time_length"])
def test_refused(fn, match):
    with pytest.raises(strider.UnsupportedError, match=match):
        strider.compile(fn, target=TARGET, strict=True)(values((4, 5), "float64", nan=False))
