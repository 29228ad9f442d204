"""Errors strider raises about the user's code, and calls that must fail the way NumPy fails.

Each unsupported construct raises a StriderError subclass (UnsupportedError or TraceError) whose
message names the operation and the user's line as `test_errors.py:LINE`; the line is the one
marked `# <- error` in the function, found with `inspect` so the tests survive edits.
Bad calls (shapes that do not broadcast, out-of-range indices, mismatched writes) raise the
built-in exception NumPy raises, and leave the arguments untouched even when an earlier line of
the function writes into them: strider finds the error while tracing, before it runs anything.
"""
import inspect
import os
import re

import numpy as np
import pytest

import strider
from differential import check

MARK = "# <- error"


def location(fn, mark=MARK):
    """'test_errors.py:NN' of the line of `fn` carrying `mark`."""
    lines, first = inspect.getsourcelines(fn)
    hits = [first + i for i, text in enumerate(lines) if mark in text]
    assert len(hits) == 1, f"{fn.__name__}: expected one line marked {mark!r}"
    return f"{os.path.basename(inspect.getsourcefile(fn))}:{hits[0]}"


def raises_at(fn, args, op, kwargs=None, static_argnames=()):
    """Calls strider.compile(fn) and checks the error: its class, its location and the op."""
    compiled = strider.compile(fn, static_argnames=static_argnames)
    with pytest.raises(strider.StriderError) as info:
        compiled(*args, **(kwargs or {}))
    err = info.value
    msg = str(err)
    assert isinstance(err, (strider.UnsupportedError, strider.TraceError)), type(err)
    where = location(fn)
    assert re.search(re.escape(where) + r"(?!\d)", msg), f"{where!r} not in {msg!r}"
    assert re.search(op, msg, re.IGNORECASE), f"operation /{op}/ not named in {msg!r}"
    return msg


def arr(shape=(4,), dtype=np.float64, seed=0):
    return np.random.default_rng(seed).integers(-3, 4, shape).astype(dtype)


def test_error_classes():
    assert issubclass(strider.UnsupportedError, strider.StriderError)
    assert issubclass(strider.TraceError, strider.StriderError)
    assert issubclass(strider.StriderError, Exception)


# --- Python needs a concrete value from a traced one ---------------------------------------------


def test_bool_of_several_traced_values():
    def f(x):
        return bool(x > 0)  # NumPy's ValueError: the truth of four elements

    with pytest.raises(ValueError, match="truth value of an array with more than one element"):
        f(arr())
    with pytest.raises(ValueError, match="truth value of an array with more than one element"):
        strider.compile(f, strict=True)(arr())


def test_a_grid_bound_from_the_data():
    def f(a):
        m = int(a[0])
        y, x = np.ogrid[-m:m + 1, -m:m + 1]  # <- error (CenterNet's gaussian2D of a radius the data gives)
        return x * y

    msg = raises_at(f, (np.array([2.0]),), r"np\.ogrid")
    assert "truth value" not in msg


def test_float_of_traced_values():
    def f(x):
        t = x[:2] * x.sum()
        return x * float(t)  # <- error (NumPy's too: two elements)

    if np.lib.NumpyVersion(np.__version__) >= "2.4.0":  # NumPy's TypeError for an array with dimensions
        with pytest.raises(TypeError, match="only 0-dimensional arrays"):
            strider.compile(f, strict=True)(arr())
    else:
        raises_at(f, (arr(),), r"\bfloat\b|__float__")


def test_item_of_traced_value_at_a_position():
    def f(x):
        t = x * 2
        s = t.item(1)  # <- error
        return x * s

    raises_at(f, (arr(),), r"item")


def test_a_python_list_indexed_by_a_traced_int_is_named():
    def f(x, names):
        return names[int(np.argmax(x))]  # <- error (YOLOv7's ONNX demo: a class name per detection)

    raises_at(f, (arr(), ["a", "b", "c", "d"]), r"an index into a Python list, tuple or str")


def test_list_index_of_a_traced_value_is_named():
    def f(box):
        mask = [[6, 7, 8], [3, 4, 5], [0, 1, 2]]
        n = np.argmax(box)
        for level in range(3):
            if n in mask[level]:
                k = mask[level].index(n)  # <- error (keras-yolo3's anchor_mask[l].index(n))
                return level, k
        return -1, -1

    raises_at(f, (np.arange(9.0)[::-1].copy(),), r"list\.index\(\) of a traced value")


def test_a_loop_variable_that_keeps_growing_is_named():
    def f(cand, n):
        connection = np.zeros((0, 3))
        for c in range(len(cand)):  # <- error (OpenPose's limb connections, grown a row a trip)
            if c not in connection[:, 2]:
                connection = np.vstack([connection, [cand[c], 0.0, c]])
                if len(connection) >= n:
                    break
        return connection

    raises_at(f, (np.array([0.5, 0.2, 0.9]), 2), r"carried variable 'connection' keeps growing")


def test_np_matrix_of_a_traced_value_is_named():
    def f(x):
        m = np.matrix([[x[0], x[1]], [x[1], x[0]]])  # <- error
        return np.array(m.I * m)

    raises_at(f, (arr(),), r"np\.matrix of a traced value")


def test_tolist_of_columns_of_a_run_time_count():
    def f(x):
        y = np.stack([x, x], 0)[:, x > 0]
        return y.tolist()  # <- error

    raises_at(f, (arr(),), r"tolist")


# --- NumPy functions strider does not compile ------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["histogram", "gradient", "fft"],
)
def test_unsupported_numpy_function(name):
    if name == "histogram":
        def f(x):
            y = x + 1
            return np.histogram(y, 4)[0] * 2  # <- error
    elif name == "gradient":
        def f(x):
            y = x + 1
            return np.gradient(y) * 2  # <- error
    else:
        def f(x):
            y = x + 1
            return np.fft.fft(y)  # <- error

    raises_at(f, (arr((5,)),), name)


def test_unsupported_method():
    def f(x):
        y = x + 1
        return y.byteswap()  # <- error

    raises_at(f, (arr((5, 5)),), r"ndarray\.byteswap")


# --- runtime (non-static) Python ints where a compile-time value is needed -------------------------


@pytest.mark.parametrize("fn", [
    lambda x, n: x.sum() + np.zeros(n),  # a shape
    lambda x, n: x[n] * 2,  # an index
    lambda x, n: x[:n] + 1,  # a slice bound
    lambda x, n: x[: n * 2 - 1] if n > 1 else x,  # computed from it, and a Python decision
    lambda x, n: np.arange(int(n)) + x[0],
    lambda x, n: {(n // 2, 8): x * 2}.get((n // 2, 8), x),  # a dict key (SCRFD's cache of anchor centers)
    # an array made of it (keras-retinanet's guess_shapes: np.array(image_shape[:2]) arithmetic)
    lambda x, n: np.arange(0, ((np.array((n, 3)) + 7) // 8)[0]) + x[0],
], ids=["shape", "index", "slice", "decision", "int", "dict_key", "array_of_numbers"])
def test_numbers_needed_as_values_are_specialized(fn):
    """A number the caller passes that tracing needs as a value becomes static (counted in
    stats()["specialized"]): the call runs as NumPy runs it, and a new value traces again."""
    f = check(fn, arr(), 2)
    assert f.stats()["specialized"] == 1
    traces = f.stats()["traces"]
    np.testing.assert_array_equal(f(arr(), 2), fn(arr(), 2), strict=True)
    assert f.stats()["traces"] == traces
    np.testing.assert_array_equal(f(arr(), 3), fn(arr(), 3), strict=True)
    assert f.stats()["traces"] == traces + 1


def test_item_of_numbers_the_caller_passes_is_specialized():
    # mmdet's eval_map: np.array(aps).mean().item() of a list of float32 scalars
    f = check(lambda aps: np.array(aps).mean().item(), [np.float32(1 / 6), np.float32(0.5)])
    assert f.stats()["specialized"] > 0
    assert f([np.float32(0.25), np.float32(0.5)]) == 0.375


def _anchor_grid(shape, stride):
    # Mask R-CNN's generate_anchors: np.arange(0, shape[0], anchor_stride) of feature shapes the
    # caller holds in an ndarray (compute_backbone_shapes')
    ys = np.arange(0, shape[0], 1) * stride
    xs = np.arange(0, shape[1], 1) * stride
    return np.stack(np.meshgrid(xs, ys), axis=-1).reshape(-1, 2)


def _shape_written(x, shape):
    shape[0] = 7
    return np.zeros(shape[1]) + x


def test_a_few_ints_in_an_array_needed_as_values_are_specialized():
    """An int array of at most 16 elements the caller passes, needed as values while tracing,
    becomes static by its values (as numbers do): a new content traces again; a trace that then
    writes into it breaks the graph (the write would happen once, as it traces)."""
    f = check(_anchor_grid, np.array([6, 4]), 8)
    assert f.stats()["specialized"] == 1
    traces = f.stats()["traces"]
    np.testing.assert_array_equal(f(np.array([6, 4]), 8), _anchor_grid(np.array([6, 4]), 8), strict=True)
    assert f.stats()["traces"] == traces
    np.testing.assert_array_equal(f(np.array([3, 5]), 4), _anchor_grid(np.array([3, 5]), 4), strict=True)
    assert f.stats()["traces"] == traces + 1
    with pytest.raises(strider.TraceError, match=r"_shape_written\(\) writes into an array the signature holds by value"):
        strider.compile(_shape_written, strict=True)(1.0, np.array([0, 3]))
    check(_shape_written, 1.0, np.array([0, 3]), strict=False)  # NumPy runs it: the caller's array written


def _grids(shapes, stride):
    # compute_backbone_shapes' rows passed as a list of small int arrays
    return [_anchor_grid(s, stride) for s in shapes]


def _summed(gt, flag):
    # voc_eval's dict of ground-truth arrays, a different number of them call after call, beside
    # a flag a Python `if` needs
    total = 0.0
    for k in gt:
        total = total + gt[k].astype(float).sum()
    if flag:
        return total * 2
    return total


def test_values_made_static_inside_lists_and_calls_of_another_structure():
    """A small int array inside a list, needed as values, is its values (it reached the function
    as strider's frozen copy). A number made static is remembered by its place in the walk over
    the arguments; a call of another structure (a dict of more arrays) may have an array there,
    which stays an array (it reached the function as a frozen copy: AttributeError)."""
    f = strider.compile(_grids, strict=True)
    for shapes, stride in (([np.array([3, 2]), np.array([2, 2])], 4), ([np.array([1, 3])], 8)):
        for got, expected in zip(f(shapes, stride), _grids(shapes, stride), strict=True):
            np.testing.assert_array_equal(got, expected, strict=True)
    g = strider.compile(_summed, strict=True)
    for gt, flag in (({"a": np.ones(2)}, True), ({"a": np.ones(2), "b": np.arange(3.0)}, True),
                     ({"a": np.ones(2), "b": np.arange(3)}, False)):
        assert g(gt, flag) == _summed(gt, flag)


def test_static_int_as_shape_and_index_is_fine():
    def f(x, n, i):
        return x.sum() + np.zeros(n), x[i] * 2, x[:n] + 1

    check(f, arr(), 3, 1, static_argnames=("n", "i"))
    check(f, arr(), n=2, i=-1, static_argnames=("n", "i"))


# --- bad calls: NumPy's exception, and the arguments left alone -----------------------------------


def numpy_raises(fn, args):
    """The exception type NumPy raises for fn(*args) on copies (NumPy may have written to them)."""
    with pytest.raises(Exception) as info:
        fn(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    return type(info.value)


def assert_fails_like_numpy(fn, args, expected):
    assert numpy_raises(fn, args) is expected
    before = [a.copy() for a in args]
    compiled = strider.compile(fn)
    with pytest.raises(expected):
        compiled(*args)
    for i, (a, b) in enumerate(zip(args, before)):
        np.testing.assert_array_equal(a, b, err_msg=f"argument {i} was modified", strict=True)
    return compiled


def test_broadcast_mismatch():
    def f(x, y):
        return x + y

    assert_fails_like_numpy(f, [arr((3,)), arr((4,))], ValueError)
    assert_fails_like_numpy(f, [arr((2, 3)), arr((3, 2))], ValueError)


def test_broadcast_mismatch_after_write_leaves_args_alone():
    def f(x, y):
        x[:] = 1
        return x + y

    assert_fails_like_numpy(f, [arr((3,)), arr((4,))], ValueError)


def test_index_out_of_range():
    def f(x):
        return x[5]

    assert_fails_like_numpy(f, [arr((3,))], IndexError)


def test_index_out_of_range_negative_and_second_axis():
    def f(x):
        return x[-4] + x[:, 3]

    assert_fails_like_numpy(f, [arr((3, 3))], IndexError)


def test_index_out_of_range_after_write_leaves_args_alone():
    def f(x):
        x[:] = 1
        x[0] += 5
        return x[5]

    assert_fails_like_numpy(f, [arr((3,))], IndexError)


def test_write_of_mismatched_shape():
    def f(x, y):
        x[:2] = y

    assert_fails_like_numpy(f, [arr((4,)), arr((3,))], ValueError)


def test_write_of_mismatched_shape_after_writes_leaves_args_alone():
    def f(x, y):
        x += 1
        y[0] = 7
        x[:2] = y

    assert_fails_like_numpy(f, [arr((4,)), arr((3,))], ValueError)


def test_augmented_assignment_with_non_broadcastable_operand():
    def f(x, y):
        x[::2] = 0
        x += y  # y (2, 3) broadcasts, but not into x's shape (3,)

    assert_fails_like_numpy(f, [arr((3,)), arr((2, 3))], ValueError)


def test_error_after_write_into_aliased_arguments():
    def f(x, y):
        y[:] = 9  # y is a view of x: this writes x too
        return x[:2] + y

    base = arr((6,))
    x, y = base, base[3:]
    assert numpy_raises(f, [x, y]) is ValueError
    before = base.copy()
    with pytest.raises(ValueError):
        strider.compile(f)(x, y)
    np.testing.assert_array_equal(base, before, strict=True)


def test_bad_call_after_a_good_one():
    """A new signature retraces; its error still leaves the arguments alone."""
    def f(x, y):
        x[:] = 1
        return x + y

    compiled = strider.compile(f, dynamic=False)  # (its rows run-time lengths: the check runs after the write, as NumPy's)
    x, y = arr((3,)), arr((3,))
    np.testing.assert_array_equal(compiled(x, y), 1 + y)
    x2, y2 = arr((3,), seed=1), arr((4,), seed=2)
    before = x2.copy()
    with pytest.raises(ValueError):
        compiled(x2, y2)
    np.testing.assert_array_equal(x2, before, strict=True)
    # and the good signature still works afterwards
    x3 = arr((3,), seed=3)
    np.testing.assert_array_equal(compiled(x3, y), 1 + y)
    np.testing.assert_array_equal(x3, np.ones(3))


# --- calling with the wrong arguments: TypeError, as Python says --------------------------------


def test_wrong_number_of_arguments():
    def f(x, y):
        return x + y

    compiled = strider.compile(f)
    x = arr((3,))
    with pytest.raises(TypeError) as info:
        compiled(x)
    assert "'y'" in str(info.value)  # Python: "f() missing 1 required positional argument: 'y'"
    with pytest.raises(TypeError):
        compiled(x, x, x)
    with pytest.raises(TypeError):
        compiled()
    with pytest.raises(TypeError) as info:
        compiled(x, y=x, z=x)
    assert "'z'" in str(info.value)
    with pytest.raises(TypeError):
        compiled(x, x, y=x)
    np.testing.assert_array_equal(compiled(x, y=x), x + x, strict=True)


def test_wrong_number_of_arguments_with_defaults_and_static():
    def f(x, n=2, *, scale=1.0):
        return x[:n] * scale

    compiled = strider.compile(f, static_argnames=("n",))
    x = arr((4,))
    np.testing.assert_array_equal(compiled(x), x[:2] * 1.0, strict=True)
    np.testing.assert_array_equal(compiled(x, 3, scale=2.0), x[:3] * 2.0, strict=True)
    with pytest.raises(TypeError):
        compiled(x, 3, 2.0)  # scale is keyword-only
    with pytest.raises(TypeError):
        compiled(n=3)


def test_random_numbers_are_refused_not_baked_in():
    def f(x):
        return x + np.random.rand(*x.shape)  # <- error

    raises_at(f, (arr(),), r"np\.random\.rand")
    # after the trace the numpy module holds NumPy's own functions again
    assert np.random.rand is np.random.mtrand.rand
    assert np.zeros is np._core.multiarray.zeros


def test_creation_in_a_helper_function_is_traced():
    def make(n):
        return np.zeros((n, 2))

    def f(x):
        z = make(x.shape[0])
        z[:, 1] = x
        return z

    check(f, arr((3,)))


def _empty_or_order(b):
    if b.size == 0:
        return np.empty((0, 3))
    return np.argsort(b[:, 0]).astype(np.int16)


def _picked(x, t):
    # facenet's stage-1 glue: nms returns an empty float64 array or int16 indices
    b = x[x[:, 4] > t]
    pick = _empty_or_order(b)
    if b.size > 0 and pick.size > 0:
        b = b[pick, :]
    return b


def _matched(cost):
    if cost.size == 0:
        return np.empty((0, 2), dtype=np.int64), 0
    return np.argwhere(cost <= 0.5), 1


def _pairs(cost, scores, out):
    # ByteTrack's two-stage matching: pairs of an empty array or argwhere's, iterated
    m, _ = _matched(cost[:, scores > 0.2])
    for i, j in m:
        out[i] += j
    return out


def test_two_values_of_one_kind_are_told_apart_by_their_shapes():
    with pytest.raises(strider.TraceError, match=r"holds a 2-d int64 array of shape \(0, 2\) or a 2-d int64 array of "
                                                 r"shape \(\?, 2\)"):
        strider.compile(_pairs, strict=True)(np.array([[0.1, 0.9], [0.8, 0.3]]), np.array([0.5, 0.6]), np.zeros(2))


def test_a_returned_value_of_two_kinds_is_named_as_the_user_sees_it():
    with pytest.raises(strider.TraceError) as info:
        strider.compile(_picked, strict=True)(np.random.default_rng(0).random((6, 5)), 0.5)
    assert "the value a function returns holds a 2-d float64 array or a 1-d int16 array" in str(info.value)
    assert "__strider" not in str(info.value)


def test_iterating_a_run_time_length_outside_a_rewritten_loop_says_so():
    # tensorrt_demos' `for class_id in set(detections[:, 5])`: set() iterates, no len() was written
    with pytest.raises(strider.TraceError, match=r"iterating over an array whose length is known only when the "
                                                 r"function runs .* \(set\(\), list\(\)"):
        strider.compile(lambda x: set(x[x > 0.5]), strict=True)(np.array([0.2, 0.7, 0.9]))


def _grouped(order, ious, thr):
    # supervision's _group_overlapping_boxes
    return [int(order[-1]), *np.flip(order[ious >= thr]).tolist()]  # <- error


def _popped_in_a_traced_loop(x):
    # SORT's `trks.pop(t)` under a traced condition, on the function's own list
    alive = list(range(3))
    for t in reversed(range(3)):
        if x[t] > 0:  # <- error
            alive.pop(t)
    return alive


def test_a_list_of_a_run_time_length_or_changed_in_place_is_named_so():
    # (the first said "a list filled in a loop", the second "a list inside another object")
    raises_at(_grouped, (np.array([3, 0, 2, 1]), np.array([0.9, 0.1, 0.7, 0.95]), 0.5),
              r"unpacking \(`\[a, \*lst\]`\) a list whose length is known only when the function runs")
    raises_at(_popped_in_a_traced_loop, (np.array([1.0, -1.0, 2.0]),), r"a list changed in place \(pop")


def _kinds_then_rows(b):
    # albumentations' filter_bboxes then convert_bboxes_from_albumentations
    out = b[b[:, 2] > 0.5]
    if len(out) == 0:
        out = np.array([], dtype=np.float32)
    if not out.size:
        return out
    return out[:, 4:]  # <- error


def test_a_use_of_a_value_of_several_kinds_names_no_internal_function():
    msg = raises_at(_kinds_then_rows, (np.ones((2, 5), np.float32),), r"holds values of more than one kind, and "
                    r"using it fails on one of them \(IndexError")
    assert "<lambda>" not in msg and "__strider" not in msg


def test_a_numba_function_called_inside_is_named_at_the_user_s_line():
    numba = pytest.importorskip("numba", reason="numba is a peer of the benchmark, installed by `make demo`")
    overlap = numba.njit(lambda a, b: max(0.0, min(a[2], b[2]) - max(a[0], b[0])))

    def pair_overlap(a, b):
        return overlap(a, b)

    a, b = np.array([0.1, 0.1, 0.5, 0.5]), np.array([0.2, 0.2, 0.6, 0.6])
    with pytest.raises(strider.UnsupportedError, match=r"test_errors.py:\d+: calling <lambda>, a function compiled "
                                                         r"by numba"):
        strider.compile(pair_overlap, strict=True)(a, b)
    with pytest.warns(strider.GraphBreakWarning):
        assert strider.compile(pair_overlap, strict=False)(a, b) == pair_overlap(a, b)


def _dets_or_none(s):
    dets = None if s.max() < 0.5 else np.stack([s, s], 1)  # ByteTrack's onnx demo
    return dets[:, :-1]


def test_a_conditional_expression_s_value_is_named_as_such():
    with pytest.raises(strider.TraceError, match=r"the value of an `a if c else b` holds None or a 2-d float64 array"):
        strider.compile(_dets_or_none, strict=True)(np.array([0.2, 0.7]))


def _add(a, b):
    return a + b


def _add_in_place(a, b):
    a += b
    return a


@pytest.mark.parametrize("fn, a, b", [(_add, (3, 4), (2, 4)), (_add_in_place, (3,), (4,)), (_add_in_place, (3, 1), (3, 4))],
                         ids=["operands", "with_out", "non_broadcastable_out"])
def test_broadcast_errors_read_as_numpys(fn, a, b):
    # NumPy writes shapes (3,4) and lists an out= operand after the inputs (ByteTrack's
    # `ret[2:] -= ret[:2]` on a bad shape)
    with pytest.raises(ValueError) as numpy_error:
        fn(np.zeros(a), np.zeros(b))
    with pytest.raises(ValueError) as strider_error:
        strider.compile(fn)(np.zeros(a), np.zeros(b))
    assert str(strider_error.value) == str(numpy_error.value)


def test_an_unsupported_call_inside_a_library_names_the_users_line(tmp_path, monkeypatch):
    # DeepSORT's scipy.linalg.cho_factor: the message named scipy's blas.py:400 and ndarray.flags
    lib = tmp_path / "site-packages"
    lib.mkdir()
    (lib / "fakelinalg.py").write_text("import numpy as np\n\n\ndef solve(a, b):\n    return np.linalg.inv(a) @ b\n")
    monkeypatch.syspath_prepend(str(lib))
    import fakelinalg

    def update(cov, b):
        return fakelinalg.solve(cov, b) * 2  # <- named

    line = update.__code__.co_firstlineno + 1
    with pytest.raises(strider.UnsupportedError,
                       match=rf"^test_errors.py:{line} \(in fakelinalg, fakelinalg.py:5\): np.linalg.inv is not supported"):
        strider.compile(update, strict=True)(np.eye(3), np.ones((3, 2)))
