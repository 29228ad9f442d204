"""Differential tests for ufunc.outer, np.putmask, np.place, np.rot90, np.trace, np.resize,
np.polyval and np.modf: values, dtypes, shapes, the arguments after the call, and NumPy's errors."""
import numpy as np
import pytest

import strider
from differential import check, check_raises


def ar(shape, dtype=np.float64):
    n = int(np.prod(shape))
    return (np.arange(n) % 13 - 6).astype(dtype).reshape(shape)


@pytest.mark.parametrize("fn", [
    lambda a, b: np.maximum.outer(a, b),
    lambda a, b: np.minimum.outer(a[:, 0], b[0]),  # IoU's corners of every pair
    lambda a, b: np.subtract.outer(a[0], 1.5),  # a Python float is float64 in outer, not weak
    lambda a, b: np.multiply.outer(a[0, 0], b[0, 1]),  # 0-d: a NumPy scalar
    lambda a, b: np.less.outer(a[0], [1, 2]),
    lambda a, b: np.divmod.outer(a[0], b[0, :2]),
    lambda a, b: np.add.outer(a.T, b[:, ::2]),
], ids=["maximum", "minimum_1d", "subtract_py_float", "scalars", "less_list", "divmod", "strided"])
@pytest.mark.parametrize("dtype", [np.float32, np.int16])
def test_ufunc_outer(fn, dtype):
    check(fn, ar((3, 4), dtype) + 2, ar((2, 5), dtype))


def test_outer_of_a_unary_ufunc_raises():
    check_raises(lambda a: np.sin.outer(a, a), ar(3), exc=ValueError)


MASKS = [lambda a: a > 0, lambda a: a > 100, lambda a: a.astype(np.int32) % 2, lambda a: np.ones(a.shape, bool)]


@pytest.mark.parametrize("values", [[10.0, 20, 30], 7, np.float32(2.5), [1.5], [], "array_same_size", "array_short"])
@pytest.mark.parametrize("mask", range(len(MASKS)), ids=["positive", "none", "odd_ints", "all"])
@pytest.mark.parametrize("fill", [np.putmask, np.place])
def test_putmask_and_place(fill, mask, values):
    # values repeat by position (putmask) or by count of Trues before (place); the argument is a
    # transposed view, so C order is not memory order
    def f(a, v):
        fill(a, MASKS[mask](a), v)

    def g(a):
        fill(a, MASKS[mask](a), values)

    a = ar((4, 3), np.float32).T
    if isinstance(values, str):
        check(f, a, ar(12 if values == "array_same_size" else 5, np.float32)[::-1] * 10)
    elif isinstance(values, list) and not values and fill is np.place and mask != 1:
        check_raises(g, a, exc=ValueError)  # "Cannot insert from an empty array!", nothing written
    else:
        check(g, a)


@pytest.mark.parametrize("values, exc", [
    (np.array([1.5, 2.0]), TypeError),  # an array must cast safely
    (np.array(1.5), TypeError),
    (300, OverflowError),  # a Python int the dtype cannot hold
])
@pytest.mark.parametrize("fill", [np.putmask, np.place])
def test_putmask_and_place_convert_values_as_numpy(fill, values, exc):
    def f(a):
        fill(a, a > 0, values)

    check_raises(f, ar((2, 3), np.uint8), exc=exc)


@pytest.mark.parametrize("fill", [np.putmask, np.place])
def test_putmask_and_place_unsafe_scalars_and_size_errors(fill):
    def f(a, m):
        fill(a, m, np.float64(300.7))  # a NumPy scalar casts unsafely

    check(lambda a: f(a, a > 2), ar((2, 3), np.int16))
    check_raises(lambda a: f(a, a[0] > 2), ar((2, 3), np.int16), exc=ValueError)  # mask and data sizes differ


def test_place_with_a_traced_value():
    def f(a, v):
        np.place(a, a < 0, v[0])
        np.putmask(a, a > 3, v[1:])

    check(f, ar((3, 5)), np.float64([0.5, 8, 9]))


@pytest.mark.parametrize("fn", [
    lambda a: np.rot90(a),
    lambda a: np.rot90(a, 2),
    lambda a: np.rot90(a, 3, axes=(1, 2)),
    lambda a: np.rot90(a, -1, axes=(2, 0)),
    lambda a: np.rot90(a, 4),
], ids=["k1", "k2", "k3_axes12", "k-1_axes20", "k4"])
def test_rot90(fn):
    check(fn, ar((2, 3, 4), np.float32))


def test_rot90_is_a_view_written_through():
    def f(a):
        r = np.rot90(a[0])
        r[0] = -1
        return r

    check(f, ar((2, 3, 4)))


@pytest.mark.parametrize("axes", [(0, 0), (0, 3), (0, 1, 2)])
def test_rot90_errors(axes):
    check_raises(lambda a: np.rot90(a, 1, axes), ar((2, 3, 4)), exc=ValueError)


@pytest.mark.parametrize("fn", [
    lambda a: np.trace(a[0]),
    lambda a: np.trace(a, 1, 1, 2),
    lambda a: np.trace(a, -1, 2, 1),
    lambda a: a[1].trace(offset=2, dtype=np.float64),
    lambda a: np.trace(a[:, :, :0]),
], ids=["2d", "offset_axes", "negative", "method_dtype", "empty"])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_])
def test_trace(fn, dtype):
    check(fn, ar((2, 3, 4), dtype))


@pytest.mark.parametrize("fn", [
    lambda a: a[0].diagonal() + 0,
    lambda a: a.diagonal(1, 1, 2) * 2,
    lambda a: a[1].diagonal(offset=-1).copy(),
    lambda a: a[0].T.diagonal(),  # (a read-only view of the argument, as NumPy's)
], ids=["2d", "offset_axes", "negative", "view"])
def test_ndarray_diagonal(fn):
    # yolov5's ConfusionMatrix.tp_fp: matrix.diagonal()
    check(fn, ar((2, 3, 4)))


@pytest.mark.parametrize("shape", [(5, 7), 5, (2, 2), (3, 0), (0,)])
def test_resize(shape):
    check(lambda a: np.resize(a, shape), ar((2, 3), np.int32))
    check(lambda a: np.resize(a[:, :0], shape), ar((2, 3), np.int32))


def test_resize_negative_raises():
    check_raises(lambda a: np.resize(a, (-1, 2)), ar(3), exc=ValueError)


@pytest.mark.parametrize("fn", [
    lambda p, x: np.polyval(p, x),
    lambda p, x: np.polyval([3.0, 0.5, 1], x),  # NumPy scalars of float64: a float32 x gives float64
    lambda p, x: np.polyval(p, 2.0),
    lambda p, x: np.polyval(p[:0], x),
    lambda p, x: np.polyval(p.astype(np.int64), x.astype(np.int32)),
], ids=["arrays", "list", "scalar_x", "no_coefficients", "ints"])
def test_polyval(fn):
    check(fn, np.float32([3, -0.5, 1.25]), np.float32([1.5, 2, -1, 0.1]))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int32, np.uint8, np.bool_])
def test_modf(dtype):
    x = np.array([1.5, -2.5, 0.0, -0.0, np.inf, -np.inf, np.nan, 3.0, -1e30, 7.25])
    with np.errstate(all="ignore"):
        x = x.astype(dtype)
    check(lambda v: np.modf(v), x)
    check(lambda v: np.modf(v[1]), x)


def test_modf_out_is_refused():
    with pytest.raises(strider.UnsupportedError, match=r"np.modf\(..., out=...\)"):
        strider.compile(lambda v, o: np.modf(v, out=(o, None)), strict=True)(ar(3), ar(3))


_EINSUMS = ["aij,jka->aik", "ij,jk->ik", "ij,j->i", "i,i", "i,i->", "ii", "ii->i", "ij->ji", "ij", "ba", "...i,...i",
            "...ij,...jk->...ik", "ij,ij->ij", "i,j->ij", "ij,kj->ik", "bij->bji", "abc,abc", "ijk->", "i,i,i",
            "aij,ajk->aik"]


def _einsum_operands(spec, dtype):
    # each label's length: i 3, j 3, k 3 (rotations), a and b 5 (boxes), c 2
    sizes = {"i": 3, "j": 3, "k": 3, "a": 5, "b": 5, "c": 2}
    rng = np.random.default_rng(len(spec))
    terms = spec.partition("->")[0].split(",")
    return [rng.standard_normal([2] * (t.count(".") // 3) + [sizes[c] for c in t.replace("...", "")]).astype(dtype)
            for t in terms]


@pytest.mark.parametrize("spec", _EINSUMS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.bool_])
def test_einsum(spec, dtype):
    # mmdet3d's rotation_3d_in_axis: np.einsum('aij,jka->aik', points, rot_mat_T); sums of
    # products as np.matmul's (the README's Accuracy)
    check(lambda *ops: np.einsum(spec, *ops), *_einsum_operands(spec, dtype),
          rtol=1e-5 if dtype == np.float32 else 1e-12)


def test_einsum_of_one_operand_is_a_view_as_numpys():
    def f(a):
        v = np.einsum("ij->ji", a)
        v[0, 1] = -7.0
        d = np.einsum("ii->i", a)
        d[2] = 9.0
        return v, d

    check(f, ar((3, 3)))


@pytest.mark.parametrize("spec,shapes", [
    ("ij,jk->ik", [(2, 3), (4, 2)]), ("ij,jk", [(2, 3)]), ("ijk->ij", [(2, 3)]), ("ii->i", [(2, 3)]),
    ("ij->ii", [(2, 2)]), ("ij->k", [(2, 2)]), ("i1->i", [(2, 2)]),
])
def test_einsum_errors(spec, shapes):
    check_raises(lambda *ops: np.einsum(spec, *ops), *[ar(s) for s in shapes], exc=ValueError)


def test_einsum_of_sublists_is_refused_by_name():
    with pytest.raises(strider.UnsupportedError, match="np.einsum with subscripts as lists of axes"):
        strider.compile(lambda a: np.einsum(a, [0, 1], [1, 0]), strict=True)(ar((2, 2)))


@pytest.mark.parametrize("fn", [
    lambda a: np.nancumsum(a), lambda a: np.nancumsum(a, axis=0), lambda a: np.nancumsum(a, 1, dtype=np.float64),
    lambda a: np.nancumprod(a, axis=1), lambda a: np.nancumsum(a.astype(np.int32), 1),
], ids=["flat", "axis0", "dtype", "prod", "ints"])
def test_nancumsum_and_nancumprod(fn):
    # nuScenes' cummean: np.nancumsum(x) / np.arange(1, n + 1)
    a = (np.arange(12) % 5 - 2).astype(np.float32).reshape(3, 4)
    a[0, 1] = a[2, 3] = np.nan
    check(fn, a)
