"""Memory layout of new arrays, as NumPy makes them: astype, copy, the *_like family and np.array
follow PyArray_NewLikeArray, np.concatenate and np.stack the inputs' stride order (C or F where the source is so contiguous, else its axes by decreasing
|stride|: a broadcast axis innermost), zeros/ones/empty/full take order=, and ravel/flatten walk
memory order for 'K'. The layout decides whether a later ravel or reshape is a view, so a wrong
one changes what writes reach (found by the fuzzer: tests/fuzz/regressions/astype_of_broadcast_*)."""
import numpy as np
import pytest

import strider
from differential import check


def _base():
    return np.arange(24, dtype=np.int32)


LAYOUTS = {
    "C": lambda: _base().reshape(2, 3, 4),
    "F": lambda: np.asfortranarray(_base().reshape(2, 3, 4)),
    "transposed": lambda: _base().reshape(2, 3, 4).transpose(1, 2, 0),
    "negative": lambda: _base().reshape(2, 3, 4)[:, ::-1, ::-2],
    "broadcast_outer": lambda: np.broadcast_to(_base()[:4].reshape(1, 1, 4), (2, 3, 4)),
    "broadcast_inner": lambda: np.broadcast_to(_base()[:3].reshape(1, 3, 1), (2, 3, 4)),
    "unit_dim": lambda: _base().reshape(2, 3, 4)[:, :1, :],
    "strided": lambda: _base().reshape(4, 6)[::2, 1::2],
    "newaxis": lambda: _base()[:6].reshape(2, 3)[:, None, :],
    "broadcast_2d": lambda: np.broadcast_to(_base()[:3], (4, 3)),
}

MAKERS = {
    "astype": lambda x: x.astype(np.float64),
    "astype_same_dtype": lambda x: x.astype(np.int32),
    "astype_F": lambda x: x.astype(np.float32, order="F"),
    "astype_A": lambda x: x.astype(np.float32, order="A"),
    "np.copy": lambda x: np.copy(x),
    "np.copy_C": lambda x: np.copy(x, order="C"),
    "np.copy_F": lambda x: np.copy(x, order="F"),
    "np.copy_A": lambda x: np.copy(x, order="A"),
    "copy_method": lambda x: x.copy(),
    "copy_method_K": lambda x: x.copy(order="K"),
    "np.array": lambda x: np.array(x),
    "asarray_cast": lambda x: np.asarray(x, dtype=np.float64),
    "zeros_like": lambda x: np.zeros_like(x),
    "ones_like_dtype": lambda x: np.ones_like(x, dtype=np.float32),
    "full_like": lambda x: np.full_like(x, 7),
    "full_like_C": lambda x: np.full_like(x, 7, order="C"),
    "zeros_like_new_shape": lambda x: np.zeros_like(x, shape=(5, 2)),
    "zeros_F": lambda x: np.zeros((2, 3), order="F") + x.sum(),
    # PyArray_CreateMultiSortedStridePerm: the inputs' stride order (broadcast axes innermost),
    # C where they disagree (found by the fuzzer: tests/fuzz/regressions/concatenate_of_transposes)
    "concatenate": lambda x: np.concatenate((x, x)),
    "concatenate_last_axis": lambda x: np.concatenate((x, x), axis=-1),
    "ascontiguousarray": lambda x: np.ascontiguousarray(x),
    "concatenate_with_a_C_copy": lambda x: np.concatenate((x, np.ascontiguousarray(x)), axis=1),
    "stack": lambda x: np.stack((x, x), axis=1),
}


def _element_strides(a):
    return tuple(s // a.itemsize for s in a.strides)


@pytest.mark.parametrize("make", sorted(MAKERS))
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_new_array_layout_matches_numpy(layout, make):
    fn = MAKERS[make]
    expected = fn(LAYOUTS[layout]())
    got = strider.compile(fn)(LAYOUTS[layout]())
    assert _element_strides(got) == _element_strides(expected), (got.strides, expected.strides)
    check(fn, LAYOUTS[layout]())


@pytest.mark.parametrize("order", "CFAK")
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_ravel_flatten_and_writes_through_them(layout, order):
    def fn(x):
        r = np.ravel(x, order)
        flat = x.flatten(order)
        c = x.astype(np.int64).ravel(order)  # a view of the new array exactly when NumPy's is
        c[1:] = c[:-1] + 1
        return r, flat, c

    check(fn, LAYOUTS[layout]())
