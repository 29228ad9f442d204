"""Differential tests of views and in-place writes.

Views of arguments (basic indexing, transpose, reshape, broadcast, ...) returned from the
function must share memory with the argument exactly when NumPy's do; writes through views must
land in the caller's arrays; overlapping reads and writes follow NumPy's semantics (the right
side of an assignment, and ufunc inputs that overlap the output, behave as if copied first);
arguments that alias each other, odd layouts, and the compiled-function cache (calls with
differently aliased or laid-out arguments) are covered too.
"""
import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided

import strider
from differential import check, check_raises

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

S = slice
E = Ellipsis


def ar(shape, dtype=np.float64, start=0):
    """Distinct values 0, 1, 2, ... (so every element is identifiable), C-contiguous."""
    n = int(np.prod(shape))
    return (np.arange(start, start + n) % 97).astype(dtype).reshape(shape)


def check_again(monkeypatch, compiled, fn, *args, **kwargs):
    """Run the harness comparison with an already compiled function (exercises its cache)."""
    with monkeypatch.context() as m:
        m.setattr(strider, "compile", lambda f=None, **kw: compiled)
        check(fn, *args, **kwargs)


def kid(key):
    """Readable test id for an index key."""
    def one(k):
        if isinstance(k, slice):
            return ":".join("" if v is None else str(v) for v in (k.start, k.stop, k.step))
        if k is None:
            return "None"
        if k is Ellipsis:
            return "..."
        return str(k)
    if isinstance(key, tuple):
        return "[" + ",".join(one(k) for k in key) + "]"
    return "[" + one(key) + "]"


# ---------------------------------------------------------------------------------------------
# Basic indexing returns views (or NumPy scalars when every axis gets an int)
# ---------------------------------------------------------------------------------------------
KEYS_1D = [
    3, -1, -10, S(2, 8), S(None, None, -1), S(8, 2, -2), S(-3, None), S(-100, 100), S(100, None),
    S(None, -100, -1), S(5, 5), S(1, None, 3), S(None, None, 7), S(-1, -11, -1), S(-2, 2, -3),
    S(None, None, 100), S(7, -8, -1), S(3, 1), None, E, (None, S(1, 3)), (E, None), (S(None, None, 2), None),
]
KEYS_2D = [
    1, -1, (1, S(None)), (S(None), 2), (E, 1), (None, 1), (S(None, None, -1), None, S(1, 4, 2)), (-1, -1),
    (E,), (), (None,), (E, None), (1, E, None), (S(1, 3), S(-2, None)), (S(None, None, -2), S(None, None, -3)),
    (S(10, None), 0), (0, S(3, 1)), (S(-5, 5), S(-100, 2)), (None, E, None), (2, None, S(None, None, -1)),
    (S(3, 0, -1), S(4, None, -2)), (S(None), S(None, None, -1)),
]
KEYS_3D = [
    (E, S(0, None, 2)), (0, E, 1), (S(None), None, 1, S(None, None, -2)), (-1, S(None, None, -1), E),
    (E, -1, None), (1, 2, 3), (S(None), S(1, 2), S(None)), (None, None, 0, E), (S(None, None, -1), E, S(-1, 0, -1)),
]


@pytest.mark.parametrize("key", KEYS_1D, ids=kid)
def test_getitem_1d(key):
    check(lambda x: x[key], ar(10))


@pytest.mark.parametrize("key", KEYS_2D, ids=kid)
def test_getitem_2d(key):
    check(lambda x: x[key], ar((4, 5), np.int32))


@pytest.mark.parametrize("key", KEYS_3D, ids=kid)
def test_getitem_3d(key):
    check(lambda x: x[key], ar((2, 3, 4), np.float32))


@pytest.mark.parametrize("key", [(), E, None, (E, None), (None, E, None)], ids=kid)
def test_getitem_0d(key):
    # x[()] gives a NumPy scalar, x[...] a 0-d view, x[None] a (1,) view
    check(lambda x: x[key], np.array(4.5))


def test_getitem_chained_views_and_arithmetic():
    check(lambda x: (x[1:][::-1][:, 2], x[::2][1:, ::-1] * 2, x[..., 1:][None][0, -1]), ar((5, 4)))


@pytest.mark.parametrize("case", [
    ("int_out_of_range", lambda x: x[4], IndexError),
    ("neg_int_out_of_range", lambda x: x[:, -6], IndexError),
    ("too_many_indices", lambda x: x[0, 0, 0], IndexError),
    ("two_ellipses", lambda x: x[..., 0, ...], IndexError),
    ("zero_step", lambda x: x[::0], ValueError),
], ids=lambda c: c[0])
def test_getitem_errors(case):
    check_raises(case[1], ar((4, 5)), exc=case[2])


# ---------------------------------------------------------------------------------------------
# View-producing functions and methods
# ---------------------------------------------------------------------------------------------
VIEW_FNS = {
    "T": lambda x: x.T,
    "transpose": lambda x: x.transpose(),
    "transpose_axes": lambda x: x.transpose((1, 0, 2)),
    "transpose_varargs_negative": lambda x: x.transpose(-1, 0, 1),
    "np.transpose": lambda x: np.transpose(x, (2, 0, 1)),
    "swapaxes": lambda x: x.swapaxes(0, 2),
    "np.swapaxes_negative": lambda x: np.swapaxes(x, -1, 0),
    "moveaxis": lambda x: np.moveaxis(x, 0, -1),
    "expand_dims0": lambda x: np.expand_dims(x, 0),
    "expand_dims-1": lambda x: np.expand_dims(x, -1),
    "expand_dims_tuple": lambda x: np.expand_dims(x, (0, 2)),
    "flip_none": lambda x: np.flip(x),
    "flip0": lambda x: np.flip(x, 0),
    "flip-1": lambda x: np.flip(x, axis=-1),
    "flip_tuple": lambda x: np.flip(x, (0, 2)),
    "flipud": lambda x: np.flipud(x),
    "fliplr": lambda x: np.fliplr(x),
    "broadcast_to": lambda x: np.broadcast_to(x, (3, 2, 3, 4)),
    "broadcast_to_expand": lambda x: np.broadcast_to(x[:, :1, :], (2, 5, 4)),
    "broadcast_arrays": lambda x: np.broadcast_arrays(x, x[0, :, :1]),
    "squeeze_from_expand": lambda x: np.expand_dims(x, 1).squeeze(axis=1),
    "view": lambda x: x.view(),
    "ravel_contig": lambda x: x.ravel(),
    "np.ravel": lambda x: np.ravel(x),
    "ravel_T_copies": lambda x: x.T.ravel(),
    "ravel_T_order_F_is_view": lambda x: x.T.ravel(order="F"),
    "ravel_sliced_copies": lambda x: x[:, :, 1:].ravel(),
    "ravel_leading_slice_view": lambda x: x[1:].ravel(),
    "flatten_copies": lambda x: x.flatten(),
    "np.reshape": lambda x: np.reshape(x, (6, 4)),
}


@pytest.mark.parametrize("name", list(VIEW_FNS))
def test_view_functions(name):
    check(VIEW_FNS[name], ar((2, 3, 4)))


def test_T_on_1d_and_0d():
    check(lambda a, b: (a.T, b.T, a.transpose(), np.flip(b)), ar(5), np.array(3.0))


@pytest.mark.parametrize("axis", [None, 0, 2, -2, (0, 2)], ids=str)
def test_squeeze(axis):
    check(lambda x: np.squeeze(x, axis=axis), ar((1, 4, 1, 3)))


def test_squeeze_method_and_errors():
    check(lambda x: (x.squeeze(), x.squeeze(-2), x[0].squeeze()), ar((1, 4, 1, 3)))
    check_raises(lambda x: np.squeeze(x, axis=1), ar((1, 4, 1, 3)), exc=ValueError)


RESHAPES = [
    # (argument view, new shape) -- NumPy returns a view when strides allow it, else a copy
    ("contig", (24,)), ("contig", (2, 12)), ("contig", (-1, 3)), ("contig", (2, 2, 6)), ("contig", (4, 6, 1)),
    ("T", (24,)), ("T", (6, 2, 2)), ("T", (3, 2, 4)),
    ("cols_step", (12,)), ("cols_step", (4, 3, 1)), ("cols_step", (2, 2, 3)),
    ("rows_reversed", (24,)), ("rows_reversed", (2, 2, 6)), ("rows_reversed", (4, 2, 3)),
    ("rows_step", (12,)), ("rows_slice", (12,)),
    ("zero_size", (3, 0, 2)), ("zero_size", (-1, 6)), ("zero_d", (1, 1)), ("zero_d", (-1,)),
]


def _reshape_arg(kind):
    x = ar((4, 6))
    return {"contig": x, "T": x.T, "cols_step": x[:, ::2], "rows_reversed": x[::-1], "rows_step": x[::2],
            "rows_slice": x[1:3], "zero_size": x[:0], "zero_d": np.array(2.0)}[kind]


@pytest.mark.parametrize("case", RESHAPES, ids=lambda c: f"{c[0]}-{c[1]}".replace(" ", ""))
def test_reshape_view_or_copy(case):
    kind, shape = case
    check(lambda x: (x.reshape(shape), np.reshape(x, shape)), _reshape_arg(kind))


def test_reshape_order_f_and_varargs():
    check(lambda x: (x.reshape(6, 4), x.reshape((4, 6), order="F"), x.T.reshape(-1, order="F")), ar((4, 6)))


def test_reshape_bad_size_raises():
    check_raises(lambda x: x.reshape(5, 5), ar((4, 6)), exc=ValueError)


def test_broadcast_to_is_read_only():
    def f(x):
        v = np.broadcast_to(x, (3, 4))
        v[0, 0] = 1.0
    check_raises(f, ar(4), exc=ValueError)


def _window_max(heat, kernel=3):
    # CenterNet's max pooling: windows of a padded heatmap, by as_strided
    pad = (kernel - 1) // 2
    c, h, w = heat.shape
    hp = np.pad(heat, ((0, 0), (pad, pad), (pad, pad)), constant_values=-np.inf)
    s = hp.strides
    windows = as_strided(hp, (c, h, w, kernel, kernel), (s[0], s[1], s[2], s[1], s[2]))
    return heat * (windows.max(axis=(3, 4)) == heat)


def _strided_views(x):
    rows = np.lib.stride_tricks.as_strided(x[1:], (2, 3), (x.strides[0] * 3, x.strides[0]))
    rows[1] *= -1  # written through: no two of its elements are one
    pairs = as_strided(x, (4, 2), (x.strides[0], x.strides[0]))
    return pairs.sum(axis=1), rows, as_strided(x, writeable=False)


def test_as_strided_views():
    heat = (np.random.default_rng(9).integers(0, 5, (2, 6, 7)) / 4).astype(np.float32)
    check(_window_max, heat)
    check(_strided_views, ar(8))
    check(_strided_views, ar(9).astype(np.float16)[::-1])


def _window_peaks(heat):
    # a NumPy port of CenterNet's 3x3 max-pool NMS, and windows along one axis
    hmax = np.lib.stride_tricks.sliding_window_view(heat, (3, 3)).max(axis=(-1, -2))
    pairs = np.lib.stride_tricks.sliding_window_view(heat, 2, axis=0)
    return heat[1:-1, 1:-1] * (hmax == heat[1:-1, 1:-1]), pairs.max(-1), pairs


def test_sliding_window_views():
    heat = (np.random.default_rng(4).integers(0, 5, (6, 7)) / 4).astype(np.float32)
    check(_window_peaks, heat)

    def written(x):
        np.lib.stride_tricks.sliding_window_view(x, 3)[0, 0] = 1.0  # NumPy's: read-only

    def too_wide(x):
        return np.lib.stride_tricks.sliding_window_view(x, 9)

    check_raises(written, ar(6), exc=ValueError)
    check_raises(too_wide, ar(6), exc=ValueError)


def test_as_strided_overlapping_or_past_the_array_is_refused():
    def overlapping(x):
        as_strided(x, (3, 2), (x.strides[0], x.strides[0]))[0] = 7.0

    def past(x):
        return as_strided(x, (10,), x.strides).sum()

    for fn in (overlapping, past):
        with pytest.raises(strider.UnsupportedError, match="as_strided"):
            strider.compile(fn, strict=True)(ar(6))


# ---------------------------------------------------------------------------------------------
# Item assignment for every key kind: scalar, matching array, broadcast array
# ---------------------------------------------------------------------------------------------
SET_KEYS = [
    2, -1, (1, 3), (S(None), 2), (S(1, 3), S(None, None, 2)), (S(None, None, -1), S(4, 0, -2)),
    (S(-100, 100), S(-2, None)), (E, 1), (None, 1, S(1, 4)), (E,), (), (S(10, None), 0), (0, S(3, 1)),
    (S(None, None, 3), E, None),
]


def _value_for(x, key, kind):
    shape = x[key].shape if isinstance(x[key], np.ndarray) else ()
    if kind == "scalar":
        return -7.5
    if kind == "array":
        return ar(shape, np.float64, start=50) + 0.25
    # broadcast: only the last axis (or a length-1 leading shape)
    return ar(shape[-1:], np.float64, start=70) - 0.5 if shape else np.array(-2.0)


def _setter(key):
    def f(x, v):
        x[key] = v
    return f


@pytest.mark.parametrize("kind", ["scalar", "array", "broadcast"])
@pytest.mark.parametrize("key", SET_KEYS, ids=kid)
def test_setitem(key, kind):
    x = ar((4, 5))
    check(_setter(key), x, _value_for(x, key, kind))


@pytest.mark.parametrize("key", [2, (S(None), 2), (S(None, None, -1), S(4, 0, -2)), (E,)], ids=kid)
def test_setitem_int_array_truncates_float_values(key):
    # __setitem__ casts unsafely: float values are truncated into an int array (unlike +=)
    x = ar((4, 5), np.int32)
    check(_setter(key), x, _value_for(x, key, "array") * -1.5)


@pytest.mark.parametrize("case", [
    ("bool_from_int", np.bool_, lambda x: x.__setitem__((S(None), S(1, 3)), np.array([0, 5]))),
    ("float32_from_float64", np.float32, lambda x: x.__setitem__(1, np.full(5, 1 / 3))),
    ("int64_from_bool", np.int64, lambda x: x.__setitem__(E, x > 7)),
    ("int32_from_pyfloat", np.int32, lambda x: x.__setitem__((0, S(None)), -2.9)),
    ("float_nan_inf", np.float64, lambda x: x.__setitem__((S(None), 0), np.array([np.nan, np.inf, -np.inf, -0.0]))),
], ids=lambda c: c[0])
def test_setitem_dtype_casts(case):
    _, dt, fn = case
    check(fn, ar((4, 5), dt))


def test_setitem_nan_into_int_raises():
    def f(x):
        x[0] = float("nan")
    check_raises(f, ar(4, np.int32), exc=ValueError)


def test_setitem_shape_mismatch_raises():
    def f(x, v):
        x[:, 1:] = v
    check_raises(f, ar((4, 5)), ar(3), exc=ValueError)


def test_setitem_literal_in_body():
    def f(x):
        x[0] = 1
        x[:, -1] = 2.5
        x[1:3, ::2] = x[0, ::2]
        x[...] += 0.5
        return x
    check(f, ar((4, 5)))


# ---------------------------------------------------------------------------------------------
# Augmented assignment through views
# ---------------------------------------------------------------------------------------------
def _aug_cols_sub(x, y):
    x[:, 0::2] -= y


def _aug_last_axis_scale(x, s):
    x[..., 0:2] *= s


def _aug_reversed(x):
    x[::-1] += np.arange(x.shape[0])[:, None]


def _aug_row_from_row(x):
    x[1] += x[0]


def _aug_col_div(x):
    x[:, 1] /= x[:, 0] + 1


def _aug_none_floordiv(x):
    x[None, 1:3] //= 2


def _aug_neg_step_pow(x):
    x[-1, ::-2] **= 2


def _aug_boxes(x):
    x[:, 0::4] += x[:, 2::4]


def _aug_transposed(x):
    x.T[1:] -= 1


def _aug_chained(x):
    x[1:][::2] *= -1


def _aug_two_disjoint(x, y):
    x[:, 0::2] *= y
    x[:, 1::2] += y


AUG = {
    "cols_sub": (_aug_cols_sub, lambda: (ar((4, 5)), ar((4, 3), start=30))),
    "last_axis_scale": (_aug_last_axis_scale, lambda: (ar((2, 3, 4)), 2.5)),
    "reversed": (_aug_reversed, lambda: (ar((4, 5)),)),
    "row_from_row": (_aug_row_from_row, lambda: (ar((3, 4), np.int64),)),
    "col_div": (_aug_col_div, lambda: (ar((4, 3)),)),
    "none_floordiv": (_aug_none_floordiv, lambda: (ar((4, 3), np.int32),)),
    "neg_step_pow": (_aug_neg_step_pow, lambda: (ar((3, 5), np.int64),)),
    "boxes": (_aug_boxes, lambda: (ar((3, 8), np.float32),)),
    "transposed": (_aug_transposed, lambda: (ar((3, 4)),)),
    "chained": (_aug_chained, lambda: (ar((6, 2)),)),
    "two_disjoint": (_aug_two_disjoint, lambda: (ar((3, 6)), ar((3, 3), start=5))),
}


@pytest.mark.parametrize("name", list(AUG))
def test_augmented_assignment_through_views(name):
    fn, args = AUG[name]
    check(fn, *args())


def test_augmented_assignment_view_cast_rejected():
    def f(x):
        x[:, ::2] += 1.5
    check_raises(f, ar((3, 4), np.int32), exc=TypeError)


# ---------------------------------------------------------------------------------------------
# out= on ufuncs, clip(out=), .fill, np.copyto
# ---------------------------------------------------------------------------------------------
def _out_self(a, b):
    return np.add(a, b, out=a)


def _out_view(a):
    return np.multiply(a[:, ::2], 2, out=a[:, ::2])


def _out_other(x, y):
    r = np.exp(x, out=y)
    return r


def _out_tuple(a, b):
    return np.subtract(a, b, out=(b,))


def _out_reversed_self(x):
    return np.negative(x, out=x[::-1])


def _out_transposed_self(a):
    np.add(a, a, out=a.T)


def _out_maximum(x):
    np.maximum(x, 0, out=x)
    np.floor(x, out=x)
    return x


def _out_int_to_float(a, b, c):
    np.add(a, b, out=c)
    return c


def _clip_view_out(boxes, w):
    v = boxes[:, 0::2]
    np.clip(v, 0, w, out=v)
    return boxes


def _clip_self_out(v):
    return np.clip(v, -2.5, 2.5, out=v)


def _clip_local_out(x):
    y = x * 2
    np.clip(y, -3, 3, out=y)
    return y


OUT = {
    "self": (_out_self, lambda: (ar((3, 4)), ar((3, 4), start=10) * -1)),
    "view": (_out_view, lambda: (ar((3, 6), np.int32),)),
    "other": (_out_other, lambda: (ar((2, 3)) / 10, np.zeros((2, 3)))),
    "tuple": (_out_tuple, lambda: (ar((3, 4)), ar((3, 4), start=5))),
    "reversed_self_overlap": (_out_reversed_self, lambda: (ar(7),)),
    "transposed_self_overlap": (_out_transposed_self, lambda: (ar((4, 4)),)),
    "maximum_floor": (_out_maximum, lambda: ((ar((3, 4)) - 5) / 3,)),
    "int_to_float_out": (_out_int_to_float, lambda: (ar(5, np.int32), ar(5, np.int64), np.zeros(5))),
    "clip_view_out": (_clip_view_out, lambda: ((ar((3, 4)) - 4) * 1.5, 7.0)),
    "clip_self_out": (_clip_self_out, lambda: ((ar((3, 4)) - 6) / 2,)),
    "clip_local_out": (_clip_local_out, lambda: ((ar((3, 4)) - 6) / 2,)),
}


@pytest.mark.parametrize("name", list(OUT))
def test_ufunc_out(name):
    fn, args = OUT[name]
    check(fn, *args(), rtol=1e-13 if name == "other" else 0)


def test_ufunc_out_cast_rejected():
    check_raises(lambda a, c: np.add(a, a, out=c), ar(4), np.zeros(4, np.int32), exc=TypeError)


def test_ufunc_out_shape_mismatch_raises():
    check_raises(lambda a, c: np.add(a, a, out=c), ar((2, 3)), np.zeros((3,)), exc=ValueError)


def _fill_all(x):
    x.fill(3)


def _fill_view(x):
    x[:, 1].fill(-1)
    x[::-2, ::2].fill(9)


def _fill_cast(x):
    x.fill(2.7)


def _fill_runtime(x, v):
    x[1:].fill(v)
    return x


def _copyto_broadcast(x, y):
    np.copyto(x, y)


def _copyto_view(x, y):
    np.copyto(x[:, ::2], y)


def _copyto_unsafe(x, y):
    np.copyto(x, y, casting="unsafe")


def _copyto_where(x, y):
    np.copyto(x, y, where=y > 3)


def _copyto_scalar(x):
    np.copyto(x[1], 5)


def _copyto_overlap(x):
    np.copyto(x[1:], x[:-1])


FILL_COPY = {
    "fill_all": (_fill_all, lambda: (ar((3, 4)),)),
    "fill_view": (_fill_view, lambda: (ar((4, 5), np.int32),)),
    "fill_cast": (_fill_cast, lambda: (ar((2, 3), np.int64),)),
    "fill_runtime": (_fill_runtime, lambda: (ar((3, 2)), -0.5)),
    "copyto_broadcast": (_copyto_broadcast, lambda: (ar((3, 4)), ar(4, np.int32, start=20))),
    "copyto_view": (_copyto_view, lambda: (ar((3, 6)), ar((3, 3), start=40))),
    "copyto_unsafe": (_copyto_unsafe, lambda: (ar((2, 3), np.int32), ar((2, 3)) * -0.75)),
    "copyto_where": (_copyto_where, lambda: (ar((2, 4)) * 0, ar((2, 4), start=1))),
    "copyto_scalar": (_copyto_scalar, lambda: (ar((3, 3), np.float32),)),
    "copyto_overlap": (_copyto_overlap, lambda: (ar(8),)),
}


@pytest.mark.parametrize("name", list(FILL_COPY))
def test_fill_and_copyto(name):
    fn, args = FILL_COPY[name]
    check(fn, *args())


def test_copyto_same_kind_rejected():
    check_raises(_copyto_broadcast, ar((2, 3), np.int32), ar((2, 3)), exc=TypeError)


# ---------------------------------------------------------------------------------------------
# Overlapping reads and writes of one storage
# ---------------------------------------------------------------------------------------------
def _ov_shift_plus(x):
    x[1:] = x[:-1] + 1


def _ov_shift_right(x):
    x[1:] = x[:-1]


def _ov_shift_left(x):
    x[:-1] = x[1:]


def _ov_reverse_iadd(x):
    x[::-1] += x


def _ov_transpose_iadd(a):
    a += a.T


def _ov_prefix_iadd(x):
    x[1:] += x[:-1]


def _ov_suffix_iadd(x):
    x[:-1] += x[1:]


def _ov_disjoint(x):
    x[::2] = x[1::2]


def _ov_swap_columns_not_a_swap(x):
    # the right side is a tuple of views: the second assignment sees the first one's write
    x[:, 0::2], x[:, 1::2] = x[:, 1::2], x[:, 0::2]


def _ov_reverse_assign(x):
    x[...] = x[::-1]


def _ov_2d_shift(x):
    x[1:, 1:] = x[:-1, :-1]


def _ov_transpose_assign(a):
    a[...] = a.T


def _ov_expr(x):
    x[2:] = x[:-2] * 2 + x[1:-1]


def _ov_local(x):
    y = x.copy()
    y[1:] = y[:-1]
    y[:-1] += y[1:]
    return y


def _ov_self_assign(x):
    x[:] = x
    x[::2] = x[::2] * 1


def _ov_neg_step_shift(x):
    x[-2::-1] = x[:0:-1] - 1


def _ov_reduction_then_write(x):
    x[0] = x.sum(axis=0)
    x[1:] -= x[0]


OVERLAP = {
    "shift_plus": (_ov_shift_plus, (10,)), "shift_right": (_ov_shift_right, (10,)),
    "shift_left": (_ov_shift_left, (10,)), "reverse_iadd": (_ov_reverse_iadd, (9,)),
    "transpose_iadd": (_ov_transpose_iadd, (4, 4)), "prefix_iadd": (_ov_prefix_iadd, (8,)),
    "suffix_iadd": (_ov_suffix_iadd, (8,)), "disjoint": (_ov_disjoint, (10,)),
    "swap_columns_not_a_swap": (_ov_swap_columns_not_a_swap, (3, 6)),
    "reverse_assign": (_ov_reverse_assign, (3, 5)), "2d_shift": (_ov_2d_shift, (4, 5)),
    "transpose_assign": (_ov_transpose_assign, (5, 5)), "expr": (_ov_expr, (9,)), "local": (_ov_local, (7,)),
    "self_assign": (_ov_self_assign, (6,)), "neg_step_shift": (_ov_neg_step_shift, (8,)),
    "reduction_then_write": (_ov_reduction_then_write, (3, 4)),
}


@pytest.mark.parametrize("name", list(OVERLAP))
def test_overlapping_assignment(name):
    fn, shape = OVERLAP[name]
    check(fn, ar(shape))


# ---------------------------------------------------------------------------------------------
# Arguments that alias each other
# ---------------------------------------------------------------------------------------------
def _alias_iadd(x, y):
    x += y


def _alias_assign_expr(x, y):
    x[...] = y * 2 + 1


def _alias_write_then_read(x, y):
    x[...] = 0
    return y * 2


def _alias_read_then_write(x, y):
    r = y + 1
    x[...] = -1
    return r


def _alias_views_returned(x, y):
    return x[1:], y[:, None]


def _aliased_pairs():
    r = ar(11)
    m = ar((4, 4))
    w = ar((3, 6))
    v = ar(12)
    return {
        "x_and_shifted": (r[1:], r[:-1]),
        "x_and_shifted_rev": (r[:-1], r[1:]),
        "a_and_aT": (m, m.T),
        "same_object_twice": (m, m),
        "even_odd_cols_disjoint": (w[:, ::2], w[:, 1::2]),
        "overlapping_views": (v[:6], v[4:10]),
        "reversed_self": (v, v[::-1]),
        "view_of_other": (m[1:3], m[:2]),
    }


ALIAS_FNS = {"iadd": _alias_iadd, "assign_expr": _alias_assign_expr, "write_then_read": _alias_write_then_read,
             "read_then_write": _alias_read_then_write}


@pytest.mark.parametrize("pair", list(_aliased_pairs()))
@pytest.mark.parametrize("fn", list(ALIAS_FNS))
def test_aliased_arguments(fn, pair):
    x, y = _aliased_pairs()[pair]
    check(ALIAS_FNS[fn], x, y)


def test_aliased_arguments_returned_views():
    r = ar((4, 4))
    check(_alias_views_returned, r, r.T)


def test_aliased_arguments_three_views():
    def f(a, b, c):
        a[:] = b + c
        c *= 2
        return a + b + c
    r = ar(10)
    check(f, r[2:8], r[:6], r[4:])


# ---------------------------------------------------------------------------------------------
# Argument layouts
# ---------------------------------------------------------------------------------------------
def _layouts():
    base = ar((4, 6))
    return {
        "contiguous": base,
        "col_step": base[:, ::2],
        "row_step": base[::2],
        "negative_strides": base[::-1, ::-2],
        "transposed": base.T,
        "fortran": np.asfortranarray(base),
        "fortran_view": np.asfortranarray(base)[1:, ::2],
        "zero_size": base[:, :0],
        "zero_size_rows": base[4:],
        "zero_d": np.array(2.5),
        "broadcast_readonly": np.broadcast_to(ar(6), (4, 6)),
    }


def _lay_compute(x):
    # ndim is static: Python control flow on it is resolved while tracing
    return x + 1, x.sum(), x.T * 2, (x[..., ::-1] if x.ndim else x[...])


def _lay_inplace(x):
    x *= 2
    x[...] += 1
    return x


def _lay_view_write(x):
    v = x[..., ::2] if x.ndim else x[...]
    v -= 0.5
    return v


LAYOUT_FNS = {"compute": _lay_compute, "inplace": _lay_inplace, "view_write": _lay_view_write}


@pytest.mark.parametrize("layout", list(_layouts()))
@pytest.mark.parametrize("fn", list(LAYOUT_FNS))
def test_argument_layouts(fn, layout):
    x = _layouts()[layout]
    if layout == "broadcast_readonly" and fn != "compute":
        check_raises(LAYOUT_FNS[fn], x, exc=ValueError)  # read-only destination
    else:
        check(LAYOUT_FNS[fn], x)


# ---------------------------------------------------------------------------------------------
# What is returned: the argument itself, views of it, views of one new buffer
# ---------------------------------------------------------------------------------------------
def _ret_self(x):
    return x


def _ret_self_after_iadd(x):
    x += 1
    return x


def _ret_self_after_setitem(x):
    x[...] = 0
    return x


def _ret_self_twice(x):
    return x, x


def _ret_asarray(x):
    return np.asarray(x)


def _ret_astype_nocopy(x):
    return x.astype(x.dtype, copy=False)


def _ret_ellipsis_view(x):
    return x[...]  # a new view object, not x itself


def _ret_views_of_arg(x):
    return x[1:], x.T, x.reshape(-1), x[:, 0]


def _ret_two_views_of_new(x):
    y = x * 2
    return y[:2], y[1:]


def _ret_new_and_transpose(x):
    y = np.zeros((3, 2))
    y[:, 0] = x[:, 0]
    return y, y.T


def _ret_same_new_twice(x):
    y = x + 1
    return y, y


def _ret_disjoint_views_of_new(x):
    y = x - 1
    return y[:, ::2], y[:, 1::2]


def _ret_dict_and_list(x):
    return {"a": x[0], "b": [x[1:], x * 2]}


def _ret_scalar_and_view(x):
    return x[0, 0], x[0]


def _ret_inplace_then_view(x):
    x[1] = -1
    return x[1:]


RETURNS = {f.__name__[5:]: f for f in [
    _ret_self, _ret_self_after_iadd, _ret_self_after_setitem, _ret_self_twice, _ret_asarray, _ret_astype_nocopy,
    _ret_ellipsis_view, _ret_views_of_arg, _ret_two_views_of_new, _ret_new_and_transpose, _ret_same_new_twice,
    _ret_disjoint_views_of_new, _ret_dict_and_list, _ret_scalar_and_view, _ret_inplace_then_view]}


@pytest.mark.parametrize("name", list(RETURNS))
def test_returns(name):
    check(RETURNS[name], ar((3, 2)))


def test_returns_same_object_identity():
    # The compiled function must hand back the caller's very object, and the same object twice.
    x = ar((3, 2))
    compiled = strider.compile(_ret_self_twice)
    a, b = compiled(x)
    assert a is x and b is x
    assert strider.compile(_ret_self_after_iadd)(x) is x


# ---------------------------------------------------------------------------------------------
# Views and writes ordering: a view sees later writes to the storage it shares
# ---------------------------------------------------------------------------------------------
def _ord_write_view_read_other(x):
    v = x[:, 0]
    w = x[0]
    v[:] = 5
    return w + 1


def _ord_view_before_write(x):
    v = x[1:]
    x[:] = 0
    return v * 2


def _ord_view_before_iadd(x):
    v = x[::2]
    x += 1
    return v.copy()


def _ord_returned_view_after_write(x):
    v = x[::-1]
    x[2] = 100
    return v


def _ord_read_write_read(x):
    a = x.sum()
    x[0] = 10
    b = x.sum()
    x[:, 1] *= 2
    return a, b, x.sum()


def _ord_write_disjoint_views(x):
    even = x[:, 0::2]
    odd = x[:, 1::2]
    even[...] = odd + 1
    odd[...] = even * 2
    return x


def _ord_view_of_local(x):
    y = x.copy()
    t = y.T
    y[0] = -1
    return t + 0, y


def _ord_write_through_transpose_read_rows(x):
    x.T[0] = 7
    return x[1] + 0


def _ord_write_then_view_then_write(x):
    x[0] = 1
    v = x[:2]
    x[1] = 2
    return v.sum(), v


def _ord_aliased_local_views(x):
    y = np.zeros(6)
    a = y[:4]
    b = y[2:]
    a += x[:4]
    b += x[2:]
    return y, a, b


ORDER = {f.__name__[5:]: f for f in [
    _ord_write_view_read_other, _ord_view_before_write, _ord_view_before_iadd, _ord_returned_view_after_write,
    _ord_read_write_read, _ord_write_disjoint_views, _ord_view_of_local, _ord_write_through_transpose_read_rows,
    _ord_write_then_view_then_write]}


@pytest.mark.parametrize("name", list(ORDER))
def test_view_write_ordering(name):
    check(ORDER[name], ar((3, 4)) if name != "returned_view_after_write" else ar(6))


def test_view_write_ordering_aliased_local_views():
    check(_ord_aliased_local_views, ar(6))


# ---------------------------------------------------------------------------------------------
# Detection-head style snippets
# ---------------------------------------------------------------------------------------------
def _decode(boxes, deltas, w, h):
    boxes = boxes.copy()
    boxes[:, 0::4] += deltas[:, 0::4] * w
    boxes[:, 1::4] += deltas[:, 1::4] * h
    boxes[:, 2::4] = np.clip(boxes[:, 2::4], 0, w)
    np.clip(boxes[:, 3::4], 0, h, out=boxes[:, 3::4])
    return boxes


def _yolo_inplace(y, s):
    y[..., 0:2] *= s
    y[..., 2:4] = np.exp(y[..., 2:4]) * 0.5
    y[..., 4:] = 1 / (1 + np.exp(-y[..., 4:]))
    return y


def test_box_decode():
    check(_decode, ar((5, 8)) / 4, (ar((5, 8)) - 20) / 16, 10.0, 6.0, rtol=1e-13)


def test_yolo_inplace():
    check(_yolo_inplace, (ar((2, 3, 6), np.float32) - 15) / 8, 2.0, rtol=1e-6, atol=1e-7)


# ---------------------------------------------------------------------------------------------
# Caching: the same compiled function called repeatedly and with different aliasing/layouts
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["shift_plus", "transpose_iadd", "reverse_iadd"])
def test_calls_twice_overlap(name):
    fn, shape = OVERLAP[name]
    check(fn, ar(shape), calls=2)


def test_calls_twice_views_and_returns():
    check(_ret_views_of_arg, ar((3, 2)), calls=2)
    check(_decode, ar((5, 8)) / 4, (ar((5, 8)) - 20) / 16, 10.0, 6.0, rtol=1e-13, calls=2)


def test_aliasing_changes_between_calls(monkeypatch):
    # First call: independent arguments; then the same compiled function with aliased ones.
    r = ar(11)
    compiled = check(_alias_iadd, ar(10), ar(10, start=3))
    check_again(monkeypatch, compiled, _alias_iadd, r[1:], r[:-1])
    check_again(monkeypatch, compiled, _alias_iadd, r[:-1], r[1:])
    check_again(monkeypatch, compiled, _alias_iadd, ar(10), ar(10, start=3))
    v = ar(10)
    check_again(monkeypatch, compiled, _alias_iadd, v, v)


def test_aliasing_transpose_between_calls(monkeypatch):
    m = ar((4, 4))
    compiled = check(_alias_assign_expr, ar((4, 4)), ar((4, 4), start=9))
    check_again(monkeypatch, compiled, _alias_assign_expr, m, m.T)
    check_again(monkeypatch, compiled, _alias_assign_expr, m[::-1], m)


def test_aliasing_write_then_read_between_calls(monkeypatch):
    m = ar((3, 4))
    compiled = check(_alias_write_then_read, ar((3, 4)), ar((3, 4)))
    check_again(monkeypatch, compiled, _alias_write_then_read, m, m)
    check_again(monkeypatch, compiled, _alias_write_then_read, ar((3, 4)), ar((3, 4), start=2))


def test_layout_changes_between_calls(monkeypatch):
    base = ar((4, 6))
    compiled = check(_lay_inplace, ar((4, 3)))
    for x in (base[:, ::2], base[::-1, 3:], np.asfortranarray(ar((4, 3))), ar((4, 3))):
        check_again(monkeypatch, compiled, _lay_inplace, x)


def test_shape_and_dtype_change_between_calls(monkeypatch):
    compiled = check(_lay_compute, ar((2, 3)))
    for x in (ar((3, 2)), ar((2, 3), np.int32), ar(5), np.array(1.5), ar((0, 3))):
        check_again(monkeypatch, compiled, _lay_compute, x)


def test_static_argnames_change_between_calls(monkeypatch):
    def f(x, k, axis):
        return x[k:].sum(axis=axis)
    compiled = check(f, ar((5, 4)), 1, 0, static_argnames=("k", "axis"))
    check_again(monkeypatch, compiled, f, ar((5, 4)), 3, 1, static_argnames=("k", "axis"))
    check_again(monkeypatch, compiled, f, ar((5, 4)), 1, 0, static_argnames=("k", "axis"))


def test_same_array_twice_with_an_empty_view_between():
    # found by hypothesis: an empty view sorted between two aliases must not split their storage
    def f(a0, a1, a2):
        a0[1:] = a0[:-1] + 1
        a2.fill(0)

    base = ar((3, 3), np.int32)
    check(f, base, base[..., 0, :0], base)


def test_empty_argument_sliced_to_zero_in_a_middle_dimension():
    # found by hypothesis: a zero-length dimension must give an empty storage, not a negative one
    base = np.arange(27.0).reshape(3, 3, 3)
    check(lambda a: (a.T, a[None, ..., 0, 0], a), base[..., :0, :, :1])
