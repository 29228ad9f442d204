"""where= on reductions against NumPy: np.sum, prod, max/amax, min/amin, any, all, mean, var, std,
the nan- forms, ufunc.reduce and the ndarray methods. An element where= leaves out folds as the
ufunc's identity (initial= for max and min, which NumPy then requires); mean and var divide by
where's count, NaN where it is 0."""
import warnings

import numpy as np
import pytest

import strider
from differential import check, check_raises

# the values are small integers, so a float sum is exact in any order (NumPy folds each run of
# elements where= keeps on its own; test_random_floats_agree_to_rounding shows the difference)


def ar(shape, dtype=np.float64):
    n = int(np.prod(shape))
    return (np.arange(n) * 7 % 11 - 5).astype(dtype).reshape(shape)


def mask(shape, seed=0):
    m = np.random.default_rng(seed).random(shape) < 0.5
    if m.ndim == 2:
        m[1] = False  # a row where= leaves empty
        m[:, 2] = True
    return m


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():  # (NumPy's "Mean of empty slice", "Degrees of freedom <= 0")
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


REDUCTIONS = {
    "sum": lambda x, m, ax, kd: np.sum(x, axis=ax, keepdims=kd, where=m),
    "prod": lambda x, m, ax, kd: np.prod(x, axis=ax, keepdims=kd, where=m),
    "max": lambda x, m, ax, kd: np.max(x, axis=ax, keepdims=kd, initial=-3, where=m),
    "amin": lambda x, m, ax, kd: np.amin(x, axis=ax, keepdims=kd, initial=2, where=m),
    "any": lambda x, m, ax, kd: np.any(x > 1, axis=ax, keepdims=kd, where=m),
    "all": lambda x, m, ax, kd: np.all(x > -4, axis=ax, keepdims=kd, where=m),
    "mean": lambda x, m, ax, kd: np.mean(x, axis=ax, keepdims=kd, where=m),
    "var": lambda x, m, ax, kd: np.var(x, axis=ax, keepdims=kd, where=m),
    "std": lambda x, m, ax, kd: np.std(x, axis=ax, keepdims=kd, ddof=1, where=m),
    "nansum": lambda x, m, ax, kd: np.nansum(x, axis=ax, keepdims=kd, where=m),
    "nanprod": lambda x, m, ax, kd: np.nanprod(x, axis=ax, keepdims=kd, where=m),
    "nanmax": lambda x, m, ax, kd: np.nanmax(x, axis=ax, keepdims=kd, initial=-9, where=m),
    "nanmin": lambda x, m, ax, kd: np.nanmin(x, axis=ax, keepdims=kd, initial=9, where=m),
    "nanmean": lambda x, m, ax, kd: np.nanmean(x, axis=ax, keepdims=kd, where=m),
}


@pytest.mark.parametrize("name", list(REDUCTIONS))
@pytest.mark.parametrize("axis,keepdims", [(None, False), (0, True), (1, False), ((0, 1), True)])
def test_traced_where(name, axis, keepdims):
    x = ar((4, 6))
    x[0, 1] = x[3, 4] = np.nan  # (one left out by where=, one kept)
    m = mask((4, 6))
    m[0, 1], m[3, 4] = False, True
    check(lambda x, m: REDUCTIONS[name](x, m, axis, keepdims), x if name.startswith("nan") else np.nan_to_num(x), m,
          rtol=1e-15 if name in ("var", "std") else 0.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.uint8, np.bool_])
@pytest.mark.parametrize("name", ["sum", "prod", "max", "amin", "mean", "var"])
def test_dtypes(name, dtype):
    x = ar((4, 6), dtype) if dtype != np.uint8 else ar((4, 6)).astype(np.int8).astype(np.uint8)
    if name in ("max", "amin"):  # (an initial every dtype holds)
        lo, hi = (False, True) if dtype == np.bool_ else (1, 3)
        f = {"max": lambda x, m: np.max(x, axis=1, initial=lo, where=m),
             "amin": lambda x, m: np.amin(x, axis=1, initial=hi, where=m)}[name]
    else:
        f = lambda x, m: REDUCTIONS[name](x, m, 1, False)  # noqa: E731
    check(f, x, mask((4, 6), 1), rtol=1e-6 if name == "var" and dtype == np.float32 else 0.0)


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.bool_])
def test_any_all_of_the_array_itself(dtype):
    x = (ar((4, 6)) % 3 == 0).astype(dtype)
    check(lambda x, m: (np.any(x, axis=1, where=m), np.all(x, axis=0, where=m), x.all(where=m)), x, mask((4, 6)))


@pytest.mark.parametrize("wshape", [(6,), (1, 6), (4, 1), ()], ids=["row", "unit_row", "column", "0d"])
def test_broadcast_where(wshape):
    m = np.random.default_rng(3).random(wshape) < 0.5
    if m.ndim:
        m.flat[0], m.flat[-1] = True, False
    check(lambda x, m: (np.sum(x, axis=1, where=m), np.mean(x, axis=0, where=m), np.var(x, where=m),
                        np.max(x, axis=(0, 1), keepdims=True, initial=-100, where=m), np.nanmean(x, axis=1, where=m)),
          ar((4, 6)), m, rtol=1e-15)


@pytest.mark.parametrize("where", [1, False, np.True_, np.False_, 2, 0.0, np.array(False), [True, False] * 3,
                                   [2, 0, 1, 1, 0, 3]],
                         ids=["one", "False", "np_True", "np_False", "two", "zero", "0d_array", "list", "int_list"])
def test_constant_where(where):
    # (NumPy casts a number to bool for the fold, but mean and var count where= itself: where=2
    # counts every element twice)
    check(lambda x: (np.sum(x, axis=1, where=where), np.prod(x, axis=0, where=where), np.any(x, where=where),
                     np.all(x, axis=1, where=where), np.mean(x, axis=1, where=where), np.var(x, axis=0, where=where),
                     np.std(x, where=where), np.nansum(x, axis=1, where=where), np.nanmean(x, where=where),
                     np.max(x, axis=1, initial=-2, where=where), np.nanmin(x, initial=1, where=where)), ar((4, 6)))


def test_constant_array_where():
    m = mask((4, 6), 5)
    check(lambda x: (np.sum(x, axis=0, where=m), np.mean(x, axis=1, where=m), np.min(x, initial=0, where=m)),
          ar((4, 6)))


def test_all_false_where():
    m = np.zeros((4, 6), bool)
    check(lambda x, m: (np.sum(x, where=m), np.sum(x, axis=1, where=m), np.prod(x, axis=0, where=m),
                        np.max(x, axis=1, initial=-7.5, where=m), np.min(x, initial=3, where=m),
                        np.mean(x, where=m), np.mean(x, axis=0, where=m), np.var(x, axis=1, where=m),
                        np.any(x, where=m), np.all(x, axis=0, where=m), np.nanmean(x, axis=1, where=m)),
          ar((4, 6)), m)
    check(lambda x, m: (np.sum(x, axis=1, where=m), np.mean(x, axis=1, where=m)), ar((4, 6), np.int32), m)


@pytest.mark.parametrize("dtype", [np.float64, np.int32])
def test_initial_with_where(dtype):
    check(lambda x, m: (np.sum(x, axis=1, initial=10, where=m), np.prod(x, axis=0, initial=2, where=m),
                        np.max(x, axis=0, initial=1, where=m), np.min(x, axis=1, initial=-1, where=m),
                        np.sum(x, initial=-3, where=m)),
          ar((4, 6), dtype), mask((4, 6), 2))


def test_out():
    def f(x, m, o_sum, o_mean, o_max):
        np.sum(x, axis=0, out=o_sum, where=m)  # (out's old values are not folded in)
        np.mean(x, axis=1, out=o_mean, where=m)
        np.max(x, axis=0, out=o_max, initial=-1, where=m)
        return o_sum, o_mean, o_max

    check(f, ar((4, 6)), mask((4, 6)), np.full(6, 100.0), np.full(4, 100.0, np.float32), np.full(6, 100, np.int32))


def test_methods():
    check(lambda x, m: (x.sum(axis=1, where=m), x.prod(where=m), x.max(axis=0, initial=-5, where=m),
                        x.min(axis=1, keepdims=True, initial=4, where=m), (x > 0).any(axis=1, where=m),
                        (x > -4).all(where=m), x.mean(axis=0, where=m), x.var(axis=1, ddof=1, where=m),
                        x.std(where=m)),
          ar((4, 6)), mask((4, 6)))


def test_ufunc_reduce():
    check(lambda x, m: (np.add.reduce(x, where=m), np.multiply.reduce(x, axis=1, where=m),
                        np.maximum.reduce(x, axis=None, initial=-2, where=m),
                        np.logical_or.reduce(x > 2, axis=1, where=m)),
          ar((4, 6)), mask((4, 6)))


def test_mean_dtypes():
    # NumPy divides the sum by an intp count into the sum's dtype: float32 in float64, then
    # rounded; an integer dtype= gives an integer mean
    x = (ar((4, 6)) / 4).astype(np.float32)  # (quarters: the sums are exact, the divisions round)
    check(lambda x, m: (np.mean(x, axis=1, where=m), np.mean(x, where=m), np.var(x, axis=0, where=m)), x,
          mask((4, 6)))
    check(lambda x, m: (np.mean(x, axis=1, dtype=np.int64, where=m), np.mean(x, dtype=np.int64)),
          ar((4, 6), np.int32), np.ones((4, 6), bool))
    check(lambda x, m: np.mean(x, axis=0, dtype=np.float32, where=m), ar((4, 6), np.int32), mask((4, 6)))


def test_random_floats_agree_to_rounding():
    # NumPy sums each run of kept elements pairwise, then adds the runs; strider folds the left-out
    # elements as zeros in its one order, so the two round differently
    rng = np.random.default_rng(4)
    x, m = rng.standard_normal((5, 300)), rng.random((5, 300)) < 0.6
    check(lambda x, m: (np.sum(x, axis=1, where=m), np.mean(x, where=m), np.std(x, axis=1, where=m)), x, m,
          rtol=1e-12)


@pytest.mark.parametrize("fn", [
    lambda x, m: np.max(x, where=m),
    lambda x, m: np.amin(x, axis=0, where=m),
    lambda x, m: x.max(axis=1, where=m),
    lambda x, m: np.max(x, where=np.True_),
    lambda x, m: np.min(x, where=np.ones((4, 6), bool)),
    lambda x, m: np.max(x, where=False),
    lambda x, m: np.maximum.reduce(x, where=m),
], ids=["max", "amin", "method", "np_True", "all_true_array", "False", "ufunc"])
def test_max_min_without_initial_raise(fn):
    check_raises(fn, ar((4, 6)), mask((4, 6)), exc=ValueError)


@pytest.mark.parametrize("fn,ufunc", [(np.nanmax, "fmax"), (np.nanmin, "fmin"), (np.max, "maximum"),
                                      (np.min, "minimum")])
def test_no_identity_message(fn, ufunc):
    with pytest.raises(ValueError, match=f"reduction operation '{ufunc}' does not have an identity"):
        strider.compile(lambda x, m: fn(x, where=m))(ar((4, 6)), mask((4, 6)))


@pytest.mark.parametrize("fn,exc", [
    (lambda x, m: np.sum(x, where=m.astype(np.int64)), TypeError),
    (lambda x, m: np.mean(x, where=m.astype(np.float32)), TypeError),
    (lambda x, m: np.sum(x, where=m[None]), ValueError),
    (lambda x, m: np.any(x, where=m[:, :3]), ValueError),
    (lambda x, m: np.max(x.astype(np.uint8), initial=-3, where=m), OverflowError),
], ids=["int_array", "float_array", "more_dims", "unbroadcastable", "initial_out_of_range"])
def test_where_numpy_refuses(fn, exc):
    check_raises(fn, ar((4, 6)), mask((4, 6)), exc=exc)


@pytest.mark.parametrize("keep", [[True, False, True, True, False, True], [False] * 6], ids=["some", "none"])
def test_run_time_lengths(keep):
    # x[:, c] has a column count known when the function runs
    check(lambda x, m, c: (np.sum(x[:, c], axis=1, where=m[:, c]), np.mean(x[:, c], where=m[:, c]),
                           np.var(x[:, c], axis=1, where=m[:, c]), np.max(x[:, c], axis=1, initial=-1, where=m[:, c]),
                           np.mean(x[:, c], axis=0, where=m[0, c])),
          ar((4, 6)), mask((4, 6)), np.array(keep), rtol=1e-15)


def test_scalar_array_and_traced_scalar_where():
    check(lambda x, m: (np.sum(x[0, 0], where=m[0, 0]), np.max(x[0, 0], where=m[0, 0], initial=-3.0),
                        np.mean(x, axis=1, where=m[0, 1]), np.sum(x, axis=0, where=m[0, 2])),
          ar((4, 6)), mask((4, 6)))
