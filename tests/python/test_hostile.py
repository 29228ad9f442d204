"""Hostile and bad inputs (issue 5): constructs strider does not compile, unusual arrays NumPy
accepts, and calls that fail before running.

test_errors.py has the basic cases (if/and/bool/float/int/item/tolist of traced values,
np.histogram, np.gradient, np.fft.fft, ndarray.byteswap, runtime ints as shapes and indices,
broadcast and index errors with the arguments left alone, wrong argument counts, np.random); its
helpers are used here. This file adds:

1. CONSTRUCTS, a table of small user functions, each with its outcome under NumPy's semantics:
   ERROR (a StriderError naming the operation and `test_hostile.py:LINE` of the line marked
   `# <- error`), NUMPY (the exception NumPy itself raises for the uncompiled function) or SAME
   (strider compiles it: results and arguments match NumPy). ARGUMENTS does the same for values
   passed in (dtypes, subclasses, Python objects); the error then names the line of the call.
   Constructs that need more than one call (generators, exceptions, recursion, escaping tracers,
   keyword-only arguments) have tests of their own below the tables.
2. Arrays: non-contiguous, unaligned, read-only, Fortran-ordered, huge (in a subprocess with an
   address-space limit, so an allocation that succeeds lazily cannot take pytest down), empty,
   0-d, and NaN/Inf/-0.0 through the reductions and comparisons.
3. Calls that fail after the function wrote into its arguments: every argument is unchanged.
"""
import copy
import json
import re
import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest

import strider
from differential import check, check_raises
from test_errors import arr, assert_fails_like_numpy, location, raises_at

ERROR, NUMPY, SAME = "error", "numpy", "same"


def x5():
    return arr((5,))


# --- 1. constructs: (id, function, args, outcome, operation regex for ERROR) ---------------------


def while_on_traced(x):
    while x.sum() > 0:  # <- error (a loop of the IR, returning what may be the argument itself)
        x = x - 1
    return x


def return_in_traced_branch(x):
    if x.sum() > 0:  # <- error: NumPy returns the argument itself on one path, strider would copy it
        return x - 1
    return x


def return_new_in_traced_branch(x):
    if x.sum() > 0:
        return x - 1
    return x * 2


def in_traced(x):
    return 3.0 in x


def builtin_max(x):
    return max(x)


def builtin_sorted(x):
    return sorted(x)


def format_traced(x):
    return f"{x.sum():.2f}"  # <- error


def np_argsort(x):
    return np.argsort(x)


def np_nonzero(x):
    return np.nonzero(x)


def np_cumsum(x):
    return np.cumsum(x)


def cumsum_method(x):
    return x.cumsum()


def np_einsum(x):
    return np.einsum("i,i->", x, x)


def np_argwhere(x):
    return np.argwhere(x > 0)


def np_searchsorted(x):
    return np.searchsorted(x, 0.5)


def np_median(x):
    return np.median(x)


def np_linalg_inv(x):
    return np.linalg.inv(x[:4].reshape(2, 2))  # <- error


def np_take(x):
    return np.take(x, [0, 2])


def astype_object(x):
    return x.astype(object)  # <- error


def string_array(x):
    return np.zeros(3, dtype="U3")  # <- error


def complex_scalar(x):
    return x * 1j  # <- error


def astype_complex(x):
    return x.astype(np.complex128)  # <- error


def astype_float16(x):
    return x.astype(np.float16)


def uint8_array(x):
    return np.zeros(5, np.uint8) + x


def astype_datetime(x):
    return x.astype("datetime64[s]")  # <- error


def longdouble_array(x):
    return np.zeros(5, np.longdouble) + x  # <- error


def int_array_write(x):
    x[np.array([0, 2])] = 1
    return x


def mask_augmented_write(x):
    x[x < 0] += 1
    return x


def eq_none(x):
    return x == None  # noqa: E711 (NumPy compares elementwise: never equal)


def data_attribute(x):
    return x.data  # <- error


def ctypes_attribute(x):
    return x.ctypes  # <- error


def tobytes_method(x):
    return (x + 1).tobytes()  # <- error


def flat_attribute(x):
    return x.flat[0]


def set_shape(x):
    y = x + 1
    y.shape = (5, 1)  # <- error
    return y


def asarray_tolist(x):
    return np.asarray(x).tolist()


def frompyfunc(x):
    return np.frompyfunc(lambda v: v + 1, 1, 1)(x)  # <- error


def vectorize(x):
    return np.vectorize(lambda v: v + 1)(x)


_TABLE = np.linspace(-1.0, 1.0, 5)
_SCRATCH = np.zeros(5)


class _Config:
    offset = 0.5

    def __init__(self):
        self.scale = np.full(5, 2.0)


_CONFIG = _Config()


def global_array(x):
    return x * _TABLE  # read on every call


def write_into_global(x):
    _SCRATCH[:] = x * 3  # the module's array holds it after every call
    return _SCRATCH + 1


def attributes_of_a_global_object(x):
    return x * _CONFIG.scale + _CONFIG.offset


def returns_lambda(x):
    y = x + 1
    return lambda: y  # <- error


def for_over_traced(x):
    acc = np.zeros(())
    for v in x:  # static length: unrolled
        acc = acc + v * v
    return acc


def for_over_0d(x):
    return [v for v in x.sum()]


def len_of_traced(x):
    return np.zeros(len(x)) + x


def len_of_0d(x):
    return len(x.sum())


def if_on_shape(x):
    return x * 2 if x.shape[0] > 2 and x.ndim == 1 else x


def builtin_sum(x):
    return sum(x)


def str_of_traced(x):
    return x * 2, [f"box {i}: {x[i]}" for i in range(2)]  # <- error (text made once, as it traces)


def text_of_length(x):
    return f"{len(x[x > 0])} kept"  # <- error


def text_of_known(x):
    k = np.array([1.5, 2.0]) * 2  # known while tracing: its text is NumPy's
    return x + 1, f"{k[0]:.1f} {k}", str(k.sum()), repr(k[1])


def repeat_list_by_traced(x):
    return [0] * len(x[x > 0])  # a list of a length only the run knows


def list_times_traced_array(x):
    return [1, 2] * (x[:2] > 0)  # an array: elementwise, as ndarray's


def dict_keyed_by_traced(x):
    counts = {}
    for v in x[:3]:
        counts[v] = counts.get(v, 0) + 1  # <- error (a NumPy scalar's hash is its value)
    return counts


def dict_keyed_by_array(x):
    return {x: 1}  # NumPy's TypeError: an array is unhashable


def deepcopy_traced(x):
    dets = copy.deepcopy(x)  # as some NMS code copies its input
    dets[:2] = 0
    return dets, copy.deepcopy(x.sum()), copy.copy(x[0]), copy.deepcopy([x[1], x[:2]])


def memoryview_of_traced(x):
    return bytes(memoryview(x * 2))  # <- error (a Python function that needs the values)


def deletes_from_a_filled_list(x):
    keep, i = [], 0
    while i < len(x):  # a list of a run-time length
        keep.append(i)
        i += 1 if x[i] > 0 else 2
    del keep[0]  # <- error (Python's list operation needs the list itself)
    return keep


def print_traced(x):
    print("traced:", x + 1)  # prints after each call, the call's values
    return x * 3


def unknown_kwarg_in_numpy(x):
    return np.sum(x, axes=0)


def index_with_float(x):
    return x[1.0]


def isinstance_ndarray(x):
    return x + 1 if isinstance(x, np.ndarray) else x - 1


class _ArrayLike:
    def __array__(self, dtype=None, copy=None):
        return np.arange(5.0)  # NumPy's own arange, not a traced one


def array_like_global(x):
    return x + _ArrayLike()


CONSTRUCTS = [
    ("while_on_traced", while_on_traced, ERROR, r"argument's memory"),
    ("return_in_traced_branch", return_in_traced_branch, ERROR, r"argument's memory"),
    ("return_new_in_traced_branch", return_new_in_traced_branch, SAME, None),
    ("in_traced", in_traced, SAME, None),
    ("builtin_max", builtin_max, SAME, None),
    ("builtin_sorted", builtin_sorted, SAME, None),
    ("format_traced", format_traced, ERROR, r"format"),
    ("np_argsort", np_argsort, SAME, None),
    ("np_nonzero", np_nonzero, SAME, None),
    ("np_cumsum", np_cumsum, SAME, None),
    ("cumsum_method", cumsum_method, SAME, None),
    ("np_einsum", np_einsum, SAME, None),
    ("np_argwhere", np_argwhere, SAME, None),
    ("np_searchsorted", np_searchsorted, SAME, None),
    ("np_median", np_median, SAME, None),
    ("np_linalg_inv", np_linalg_inv, ERROR, r"\binv\b"),
    ("np_take", np_take, SAME, None),
    ("astype_object", astype_object, ERROR, r"object"),
    ("string_array", string_array, ERROR, r"<U3"),
    ("complex_scalar", complex_scalar, ERROR, r"complex128"),
    ("astype_complex", astype_complex, ERROR, r"complex128"),
    ("astype_float16", astype_float16, SAME, None),
    ("uint8_array", uint8_array, SAME, None),
    ("astype_datetime", astype_datetime, ERROR, r"datetime64"),
    ("longdouble_array", longdouble_array, ERROR, r"float128|longdouble"),
    ("int_array_write", int_array_write, SAME, None),
    ("mask_augmented_write", mask_augmented_write, SAME, None),
    ("eq_none", eq_none, SAME, None),
    ("data_attribute", data_attribute, ERROR, r"\.data\b"),
    ("ctypes_attribute", ctypes_attribute, ERROR, r"\.ctypes\b"),
    ("tobytes_method", tobytes_method, ERROR, r"tobytes"),
    ("flat_attribute", flat_attribute, SAME, None),
    ("set_shape", set_shape, ERROR, r"shape"),
    ("asarray_tolist", asarray_tolist, SAME, None),
    ("frompyfunc", frompyfunc, ERROR, r"np.frompyfunc\(.*object arrays.*np.vectorize"),
    ("vectorize", vectorize, SAME, None),
    ("global_array", global_array, SAME, None),
    ("write_into_global", write_into_global, SAME, None),
    ("attributes_of_a_global_object", attributes_of_a_global_object, SAME, None),
    ("returns_lambda", returns_lambda, ERROR, r"returning a function"),
    ("for_over_traced", for_over_traced, SAME, None),
    ("for_over_0d", for_over_0d, NUMPY, None),
    ("len_of_traced", len_of_traced, SAME, None),
    ("len_of_0d", len_of_0d, NUMPY, None),
    ("if_on_shape", if_on_shape, SAME, None),
    ("builtin_sum", builtin_sum, SAME, None),
    ("print_traced", print_traced, SAME, None),
    ("str_of_traced", str_of_traced, ERROR, r"text of a traced array"),
    ("text_of_length", text_of_length, ERROR, r"text of a length"),
    ("text_of_known", text_of_known, SAME, None),
    ("deepcopy_traced", deepcopy_traced, SAME, None),
    ("memoryview_of_traced", memoryview_of_traced, ERROR, r"memoryview"),
    ("deletes_from_a_filled_list", deletes_from_a_filled_list, ERROR, r"item deletion"),
    ("repeat_list_by_traced", repeat_list_by_traced, SAME, None),
    ("dict_keyed_by_traced", dict_keyed_by_traced, ERROR, r"dict key or set item"),
    ("dict_keyed_by_array", dict_keyed_by_array, NUMPY, None),
    ("list_times_traced_array", list_times_traced_array, SAME, None),
    ("unknown_kwarg_in_numpy", unknown_kwarg_in_numpy, NUMPY, None),
    ("index_with_float", index_with_float, NUMPY, None),
    ("isinstance_ndarray", isinstance_ndarray, SAME, None),
    ("array_like_global", array_like_global, SAME, None),
]


def numpy_exception(fn, *args):
    """The exception type NumPy raises running fn uncompiled on copies of args."""
    with pytest.raises(Exception) as info, np.errstate(all="ignore"):
        fn(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    return type(info.value)


def check_like_numpy(fn, *args):
    """check(fn, *args) when NumPy runs fn, else check_raises with NumPy's exception."""
    try:
        with np.errstate(all="ignore"):
            fn(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    except Exception as e:
        check_raises(fn, *args, exc=type(e))
    else:
        check(fn, *args)


@pytest.mark.parametrize("name, fn, outcome, op", [c for c in CONSTRUCTS if c[2]], ids=lambda v: v
                         if isinstance(v, str) else "")
def test_construct(name, fn, outcome, op):
    x = x5()
    before = x.copy()
    if outcome == ERROR:
        raises_at(fn, (x,), op)
        np.testing.assert_array_equal(x, before, strict=True)
    elif outcome == NUMPY:
        check_raises(fn, x, exc=numpy_exception(fn, x))
    else:
        check(fn, x, calls=2)


def test_the_table_is_large_and_distinct():
    assert len(CONSTRUCTS) >= 30
    assert len({c[0] for c in CONSTRUCTS}) == len({c[1] for c in CONSTRUCTS}) == len(CONSTRUCTS)


def test_isinstance_of_a_traced_array():
    """Code that checks isinstance(x, np.ndarray) (or a NumPy scalar type) takes NumPy's branch;
    a traced Python number is not an ndarray, as the number is not."""
    check(isinstance_ndarray, x5())

    def kinds(x, n):
        s = x.sum()
        return x * (isinstance(x, np.ndarray) + 2 * isinstance(s, np.floating) + 4 * isinstance(s, np.ndarray)
                    + 8 * isinstance(n, np.ndarray) + 16 * isinstance(x[0], np.integer))

    check(kinds, x5(), 3)


def test_print_prints_each_call_what_it_computed(capsys):
    compiled = strider.compile(print_traced)
    compiled(x5())
    compiled(x5() * 2)
    print_traced(x5())
    print_traced(x5() * 2)
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 4 and out[:2] == out[2:]  # as NumPy prints them, not a traced value's description


# --- 1b. arguments strider does not take, and Python values it does -------------------------------


class _Hashable:
    scale = 3.0


CALL_MARK = "# <- " + "call"  # (spelled so that only the marked line carries it)

ARGUMENTS = [
    # (id, argument, function of it, outcome, operation regex)
    ("object_dtype", np.array([1.0, "a"], dtype=object), lambda a: a, ERROR, r"dtype object"),
    ("string_dtype", np.array(["ab", "c"]), lambda a: a, ERROR, r"<U2"),
    ("bytes_dtype", np.array([b"ab"]), lambda a: a, ERROR, r"\|S2"),
    ("complex_array", np.arange(3) + 1j, lambda a: a + 1, ERROR, r"complex128"),
    ("float16_array", np.arange(3, dtype=np.float16), lambda a: a + 1, SAME, None),
    ("int8_array", np.arange(3, dtype=np.int8), lambda a: a + 1, SAME, None),
    ("uint8_array", np.arange(3, dtype=np.uint8), lambda a: a + 1, SAME, None),
    ("uint8_array_past_its_range", np.arange(3, dtype=np.uint8), lambda a: a + 300, NUMPY, None),
    ("datetime_array", np.arange(3).astype("datetime64[D]"), lambda a: a + 1, ERROR, r"datetime64"),
    ("big_endian", np.arange(3.0).astype(">f8"), lambda a: a + 1, ERROR, r">f8|byte order"),
    ("structured", np.zeros(3, [("a", "f8"), ("b", "i4")]), lambda a: a["a"] + 1, ERROR, r"\('a'"),
    ("matrix", np.eye(2).view(np.matrix), lambda m: m * m, ERROR, r"matrix"),  # (no deprecation warning)
    ("masked_array", np.ma.masked_array([1.0, 2.0], mask=[0, 1]), lambda m: m + 1, ERROR, r"MaskedArray"),
    ("set", {1, 2}, lambda s: np.ones(len(s)), ERROR, r"\bset\b"),
    ("list_of_floats", [1.0, 2.5, -3.0], lambda l: np.asarray(l) * 2, SAME, None),
    ("tuple_of_arrays", (np.ones(2), np.arange(2.0)), lambda t: t[0] + t[1], SAME, None),
    ("dict_of_arrays", {"a": np.ones(2), "b": 2.0}, lambda d: d["a"] * d["b"], SAME, None),
    ("none", None, lambda n: np.ones(2) if n is None else np.zeros(2), SAME, None),
    ("string", "abc", lambda s: np.full(len(s), 2.0), SAME, None),
    ("custom_object", _Hashable(), lambda o: np.ones(2) * o.scale, SAME, None),
    ("array_like_object", _ArrayLike(), lambda a: np.asarray(a) + 1, SAME, None),
    ("array_like_in_ufunc", _ArrayLike(), lambda a: np.add(np.ones(5), a), SAME, None),
    ("numpy_scalar", np.float32(2.5), lambda s: np.ones(2, np.float32) * s, SAME, None),
    ("bool_scalar", True, lambda b: np.ones(2) * b, SAME, None),
    ("huge_python_int_float", 2**70, lambda n: np.ones(2) * n, SAME, None),
    ("huge_python_int_int", 2**70, lambda n: np.ones(2, np.int64) * n, NUMPY, None),
]


@pytest.mark.parametrize("name, value, fn, outcome, op", ARGUMENTS, ids=[a[0] for a in ARGUMENTS])
def test_argument(name, value, fn, outcome, op):
    if outcome == SAME:
        check(fn, value, calls=2)
    elif outcome == NUMPY:
        check_raises(fn, value, exc=numpy_exception(fn, value))
    else:
        compiled = strider.compile(fn)
        with pytest.raises(strider.StriderError) as info:
            compiled(value)  # <- call
        where = location(test_argument, CALL_MARK)
        assert re.search(re.escape(where) + r"(?!\d)", str(info.value)), (where, str(info.value))
        assert re.search(op, str(info.value)), (op, str(info.value))


def test_compiling_numpy_functions_themselves():
    """Callables that are not Python functions (no __globals__), with sentinel defaults that NumPy
    refuses when passed explicitly (np.sign(x, dtype=None, signature=None))."""
    v = np.array([1.0, np.nan, -2.0, 0.5, -0.0])
    for fn in (np.max, np.argmax, np.mean, np.sign, np.isnan, np.abs):
        check(fn, v)
    check(np.clip, v, -1.0, 1.0)
    check(np.where, v > 0, v, -v)


# --- 1c. constructs that need more than one call -------------------------------------------------


def test_generator_function_names_its_def_line():
    def gen(x):  # <- error
        yield x + 1

    raises_at(gen, (x5(),), r"generator")


def test_generator_expression_result_names_its_line():
    def f(x):
        return (v * 2 for v in x)  # <- error

    raises_at(f, (x5(),), r"generator")


def test_users_exception_propagates_unchanged_and_args_are_untouched():
    class Mine(Exception):
        pass

    err = Mine("from the user's code")

    def f(x, y):
        x[:] = 7
        y += x
        raise err

    x, y = arr((4,)), arr((4,), seed=1)
    bx, by = x.copy(), y.copy()
    with pytest.raises(Mine) as info:
        strider.compile(f)(x, y)
    assert info.value is err
    np.testing.assert_array_equal(x, bx, strict=True)
    np.testing.assert_array_equal(y, by, strict=True)


def test_finite_recursion_on_a_static_int():
    def f(x, n):
        return x if n == 0 else f(x * 2 + 1, n - 1)

    check(f, x5(), 3, static_argnames=("n",))


def test_unbounded_recursion_is_a_recursion_error_and_leaves_strider_usable():
    def f(x):
        return f(x + 1)

    with pytest.raises(RecursionError):
        strider.compile(f)(x5())
    assert np.zeros is np._core.multiarray.zeros  # the stand-ins are gone after the trace
    check(lambda x: np.zeros(5) + x, x5())


def test_compiled_function_called_inside_a_compiled_function_is_inlined():
    inner = strider.compile(lambda y: y * 2)

    def outer(x):
        x[1:] = inner(x[:-1]) + 1  # an overlapping write across the call
        return inner(x)

    compiled = check(outer, x5())  # (NumPy's run of outer calls the compiled inner: traces it)
    traced = inner.stats()["traces"]
    compiled(x5().astype(np.float32))  # a new signature of outer: inner is inlined, not traced
    assert inner.stats()["traces"] == traced and compiled.stats()["traces"] == 2


def test_compiled_function_calling_itself():
    @strider.compile(static_argnames=("n",))
    def f(x, n):
        return x if n == 0 else f(x + 1, n - 1)

    check(f.__wrapped__, x5(), 3, static_argnames=("n",))
    np.testing.assert_array_equal(f(x5(), 3), x5() + 3)

    @strider.compile
    def g(x, n):  # the decision on n makes it static: the recursion ends at trace time
        return x if n == 0 else g(x + 1, n - 1)

    np.testing.assert_array_equal(g(x5(), 2), x5() + 2)
    assert g.stats()["specialized"] == 1


class _Slotted:
    __slots__ = ("y",)


def test_tracer_escaping_through_a_closure():
    # an object without a __dict__ is one strider does not follow (tests/python/test_state.py has
    # the state it does, an object in a list included): its attribute keeps the trace's value
    followed, kept = [types.SimpleNamespace()], [_Slotted()]

    def f(x):
        y = x * 2
        followed[0].y = y
        kept[0].y = y
        return y + 1

    compiled = strider.compile(f)
    check(f, x5())
    compiled(x5() + 1)
    np.testing.assert_array_equal(followed[0].y, (x5() + 1) * 2)  # the call's, as NumPy's
    escaped = kept[0].y

    def use_outside():
        return escaped + 1  # <- error

    with pytest.raises(strider.TraceError, match=re.escape(location(use_outside))):
        use_outside()

    def use_in_another_trace(x):
        return x + escaped  # <- error

    raises_at(use_in_another_trace, (x5(),), r"another call")

    # from either side of an operator, through NumPy, a method or an index: the same TraceError
    uses = [lambda: 1 + escaped, lambda: escaped * 2, lambda: 2 < escaped, lambda: np.exp(escaped),
            lambda: np.concatenate([escaped, escaped]), lambda: escaped.sum(), lambda: escaped[0], lambda: escaped.T]
    for use in uses:
        with pytest.raises(strider.TraceError, match="used after its compiled function returned"):
            use()

    def right_side_in_another_trace(x):
        return 1.5 * escaped + x  # <- error

    raises_at(right_side_in_another_trace, (x5(),), r"another call")


def test_keyword_only_and_variadic_arguments():
    def kwonly(x, *, scale, shift=1.0):
        return x * scale + shift

    check(kwonly, x5(), scale=2.0)
    check(kwonly, x5(), scale=np.float32(3.0), shift=-1.0)
    compiled = strider.compile(kwonly)
    with pytest.raises(TypeError, match="scale"):
        compiled(x5())
    with pytest.raises(TypeError, match="bogus"):
        compiled(x5(), scale=1.0, bogus=2)
    with pytest.raises(TypeError):
        compiled(x5(), 2.0)

    def variadic(*arrays, **weights):
        return sum(a * weights.get(f"w{i}", 1.0) for i, a in enumerate(arrays))

    check(variadic, x5(), arr((5,), seed=1))
    check(variadic, x5(), arr((5,), seed=1), arr((1,), seed=2), w1=0.5, w2=-2.0)


# --- 2. arrays NumPy accepts that strider must take as they are ----------------------------------


def _elementwise(a):
    return a * 2 + 1


def _reduce(a):
    return a.sum(axis=0), a.max(axis=-1), a.argmin(axis=0)


def _write(a):
    a[1:] += a[:-1]
    return a


def _view_chain(a):
    return a[::-1].T[..., None] + 1


NONCONTIGUOUS = {
    "strided": lambda: np.arange(60.0).reshape(6, 10)[::2, 1::3],
    "negative_strides": lambda: np.arange(60.0).reshape(6, 10)[::-1, ::-2],
    "transposed": lambda: np.arange(60.0).reshape(6, 10).T,
    "fortran": lambda: np.asfortranarray(np.arange(60.0).reshape(6, 10)),
    "fortran_int32": lambda: np.asfortranarray(np.arange(60, dtype=np.int32).reshape(6, 10)),
    "broadcast_zero_stride_readonly": lambda: np.broadcast_to(np.arange(10.0), (6, 10)),
    "3d_swapped": lambda: np.arange(120.0).reshape(2, 6, 10).swapaxes(0, 2)[:, ::2],
}


@pytest.mark.parametrize("fn", [_elementwise, _reduce, _write, _view_chain], ids=lambda f: f.__name__)
@pytest.mark.parametrize("make", NONCONTIGUOUS.values(), ids=NONCONTIGUOUS.keys())
def test_noncontiguous_arguments(make, fn):
    a = make()
    if fn is _write and not a.flags.writeable:
        check_raises(fn, a, exc=ValueError)
    else:
        check(fn, a)


def unaligned(dtype, shape, offset=1):
    """An array NumPy accepts at an address that is not a multiple of its itemsize."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape))
    a = np.frombuffer(bytearray(n * dtype.itemsize + offset), dtype, count=n, offset=offset).reshape(shape)
    a[...] = np.random.default_rng(n).integers(-50, 50, shape)
    assert not a.flags.aligned
    return a


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32])
@pytest.mark.parametrize("fn", [_elementwise, _reduce, _write, _view_chain], ids=lambda f: f.__name__)
def test_unaligned_arguments(dtype, fn):
    # 1003 x 3: long enough for the vectorized loops, odd so their tails run too
    check(fn, unaligned(dtype, (1003, 3)))


def test_unaligned_aliasing_arguments_and_clones():
    a = unaligned(np.float64, (64,), offset=3)
    check(lambda x, y: (x.__iadd__(y), y * 2), a[8:], a[:-8])  # overlapping, unaligned views
    check(lambda x, y: np.maximum(x, y.astype(np.float64)), unaligned(np.float64, (257,)),
          unaligned(np.int32, (257,), offset=2))


def readonly(a):
    a.flags.writeable = False
    return a


def test_readonly_arguments_can_be_read():
    check(lambda a, b: (a * b, a.sum(), a[::-1], b.T), readonly(arr((6,))), readonly(arr((3, 6))))
    # a view of a read-only argument is read-only in strider as in NumPy
    got = strider.compile(lambda a: a[1:])(readonly(arr((6,))))
    assert not got.flags.writeable


READONLY_WRITES = {
    "setitem": lambda w, r: r.__setitem__(0, 1.0),
    "slice_assign": lambda w, r: r.__setitem__(slice(None), w),
    "augmented": lambda w, r: r.__iadd__(w),
    "ufunc_out": lambda w, r: np.add(w, 1.0, out=r),
    "clip_out": lambda w, r: np.clip(w, 0, 1, out=r),
    "copyto": lambda w, r: np.copyto(r, w),
    "fill": lambda w, r: r.fill(3.0),
    "through_a_view": lambda w, r: r[::2].__setitem__(Ellipsis, 0.0),
    "through_reshape": lambda w, r: r.reshape(2, 3).__setitem__((0, 0), 5.0),
    "sum_out": lambda w, r: np.sum(w.reshape(1, 6), axis=0, out=r),
}


@pytest.mark.parametrize("write", READONLY_WRITES.values(), ids=READONLY_WRITES.keys())
def test_writing_into_a_readonly_argument_raises_and_modifies_nothing(write):
    def f(w, r):
        w[:] = w * 2  # an earlier write into the writeable argument
        write(w, r)
        return w

    w, r = arr((6,)), readonly(arr((6,), seed=1))
    with pytest.raises(ValueError, match="read-only"):
        f(w.copy(), r)
    bw = w.copy()
    with pytest.raises(ValueError, match="read-only"):
        strider.compile(f)(w, r)
    np.testing.assert_array_equal(w, bw, strict=True)


def test_readonly_and_writeable_views_of_one_buffer():
    base = arr((8,))
    ro = readonly(base[4:].view())

    def f(w, r):
        return w + r  # reading a read-only view that aliases a writeable one is fine

    check(f, base[:4], ro)

    def g(w, r):
        w[:] = 0
        r += 1

    before = base.copy()
    with pytest.raises(ValueError, match="read-only"):
        strider.compile(g)(base[:4], ro)
    np.testing.assert_array_equal(base, before, strict=True)


# huge: a function that allocates (or broadcasts to) more than any machine has. Run in a child
# process whose address space is capped: where memory overcommits, a lazily-backed allocation
# that strider then fills could otherwise exhaust the machine instead of raising.
HUGE = {
    "zeros_returned": "lambda x: np.zeros((2**40,))",
    "empty_returned": "lambda x: np.empty((2**40,))",
    "zeros_then_add": "lambda x: np.zeros((2**40,)) + x[0]",
    "empty_internal_temp": "lambda x: np.empty((2**40,)).sum() + x",
    "ones_2d": "lambda x: np.ones((2**20, 2**20)) * x[0]",
    "broadcast_returned": "lambda x: np.broadcast_to(x, (2**40, 4)) + 1",
    "broadcast_too_large": "lambda x: np.broadcast_to(x, (2**40, 2**40, 4)) + 1",
    "size_overflows": "lambda x: np.zeros((2**62, 2**62))",
    "negative_size": "lambda x: np.zeros((-1,))",
    "arange": "lambda x: np.arange(2**40) * x[0]",
    "linspace": "lambda x: np.linspace(0, 1, 2**40)",
    "tile": "lambda x: np.tile(x, 2**40)",
    "repeat": "lambda x: np.repeat(x, 2**40)",
    "outer_product": "lambda x: x[:, None, None] * np.ones((1, 2**20, 2**20))",
}

_HUGE_CHILD = textwrap.dedent("""
    import json, resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))
    import numpy as np
    import strider
    out = {}
    x = np.arange(4.0)
    for name, src in json.loads(sys.argv[1]).items():
        fn = eval(src)
        row = []
        for run in (fn, strider.compile(fn)):
            try:
                run(x)
                row.append("no error")
            except Exception as e:
                row.append(type(e).__name__)
        out[name] = row
    print(json.dumps(out))
""")


@pytest.fixture(scope="module")
def huge_outcomes():
    proc = subprocess.run([sys.executable, "-c", _HUGE_CHILD, json.dumps(HUGE)], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, f"the child died (rc {proc.returncode}): {proc.stderr[-2000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", HUGE)
def test_huge_allocations_raise_like_numpy(huge_outcomes, name):
    numpy_says, strider_says = huge_outcomes[name]
    assert numpy_says in ("MemoryError", "ValueError"), numpy_says
    assert strider_says == numpy_says or strider_says.endswith("StriderError"), (numpy_says, strider_says)


EMPTY_SHAPES = [(0,), (0, 3), (3, 0), (2, 0, 4), (0, 0)]


@pytest.mark.parametrize("shape", EMPTY_SHAPES, ids=str)
def test_empty_arrays(shape):
    a = np.zeros(shape)
    check(lambda a: (a * 2 + 1, a.T, a[::-1], a.sum(), a.sum(axis=0), a.any(), a.all(), a.astype(np.int32)), a)
    check(_write, a)
    check(lambda a, b: np.where(a > 0, a, b), a, np.ones(shape[-1:]))
    check(lambda a: np.concatenate([a, a]), a)
    for axis in range(len(shape)):
        check_like_numpy(lambda a: (a.max(axis=axis), a.argmax(axis=axis)), a)
    check_raises(lambda a: a.max(), a, exc=ValueError)
    check_raises(lambda a: a.argmin(), a, exc=ValueError)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy's "Mean of empty slice"
def test_empty_mean_is_nan_like_numpy():
    check(lambda a: (a.mean(), a.mean(axis=0), a.var(axis=1)), np.zeros((0, 3)))


ZERO_D = [np.array(3.5), np.array(-2, np.int32), np.array(True), np.array(np.nan)]


@pytest.mark.parametrize("a", ZERO_D, ids=lambda a: str(a.dtype))
def test_zero_d_arrays(a):
    check(lambda a: (a * 2, a[()], a[...], a[None], a.sum(), a.max(), a.argmax(), a.reshape(1), a.T), a)

    def write(a, b):
        a[...] = b
        a += b
        return a, a[()]

    check(write, a, np.array(1, a.dtype))
    check(lambda a, s: np.where(a, s, -s), a, 1.5)


NAN_VALUES = np.array([1.0, np.nan, -np.inf, np.inf, -0.0, 0.0, 2.0, np.nan, -3.0])


def _nan_input(dtype, layout):
    v = NAN_VALUES.astype(dtype)
    if layout == "short":
        return v
    if layout == "long":  # NaN and inf far into a vectorized loop, and at its end
        big = np.tile(np.arange(-4, 4, dtype=dtype), 125)
        big[[600, 601, 602, 998]] = v[[1, 2, 3, 7]]
        return big
    return np.stack([v, v[::-1], np.full_like(v, np.nan), np.abs(v)])  # 2-D: along axes


NAN_FUNCTIONS = {
    "max": lambda a: np.max(a, axis=-1),
    "min": lambda a: np.min(a, axis=-1),
    "amax_all": lambda a: np.amax(a),
    "argmax": lambda a: np.argmax(a, axis=-1),
    "argmin": lambda a: np.argmin(a, axis=-1),
    "argmax_axis0": lambda a: np.argmax(a, axis=0),
    "sum": lambda a: (a.sum(axis=-1), a.sum()),
    "mean": lambda a: a.mean(axis=-1),
    "prod": lambda a: a.prod(axis=-1),
    "any_all": lambda a: (a.any(axis=-1), a.all(axis=-1)),
    "clip": lambda a: np.clip(a, -1.0, 1.0),
    "clip_nan_bound": lambda a: np.clip(a, -1.0, np.nan),
    "where": lambda a: np.where(a > 0, a, -a),
    "comparisons": lambda a: (a < 1, a <= 1, a == a, a != a, a >= 0, a > -np.inf),
    "maximum_minimum": lambda a: (np.maximum(a, 0.0), np.minimum(a, a[..., ::-1])),
    # which zero fmax and fmin return for a tie of +0 and -0 differs between NumPy's own loops
    # (its vector body and its scalar tail): the zeros' signs are left out (+ 0.0)
    "fmax_fmin": lambda a: (np.fmax(a, 0.0) + 0.0, np.fmin(a, a[..., ::-1]) + 0.0),
    "sign_signbit_copysign": lambda a: (np.sign(a), np.signbit(a), np.copysign(1.0, a)),
    "rounding": lambda a: (np.floor(a), np.ceil(a), np.trunc(a), np.rint(a)),
    "tests": lambda a: (np.isnan(a), np.isinf(a), np.isfinite(a)),
    "division": lambda a: (a / 0.0, 1.0 / a, a // 1.0, a % 2.0),
    "zero_sign": lambda a: (a * 0.0, -a, a + 0.0, a - a),
    "isclose": lambda a: np.isclose(a, a[..., ::-1], equal_nan=True),
}


@pytest.mark.parametrize("layout", ["short", "long", "2d"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", NAN_FUNCTIONS)
def test_nan_inf_and_negative_zero(name, dtype, layout):
    check(NAN_FUNCTIONS[name], _nan_input(dtype, layout))


# --- 3. calls that fail before running leave every argument as it was ---------------------------


def _write_then(fail):
    """A function that writes into both arguments (one through a view) and then fails."""
    def f(x, y):
        x[::2] = 5
        y[:, 0] += x
        x += 1
        return fail(x, y)
    return f


FAILURES = {
    "shape_mismatch": (lambda x, y: x + y, ValueError),
    "index_error": (lambda x, y: y[7], IndexError),
    "too_many_indices": (lambda x, y: x[0, 0], IndexError),
    "bad_reshape": (lambda x, y: x.reshape(3, 3), ValueError),
    "out_wrong_shape": (lambda x, y: np.add(x, 1, out=y), ValueError),
    "empty_reduction": (lambda x, y: x[:0].max(), ValueError),
    "float_index": (lambda x, y: x[1.5], IndexError),
    "cast_out": (lambda x, y: np.add(x, 0.5, out=x.astype(np.int64)), TypeError),
    "readonly_write": (lambda x, y: np.broadcast_to(x, (2, 4)).__setitem__(0, 1), ValueError),
    "unsupported_op": (lambda x, y: np.histogram(x, 3), strider.UnsupportedError),
    "traced_bool": (lambda x, y: x if x.sum() else y, strider.TraceError),
    "users_exception": (lambda x, y: {}["missing"], KeyError),
}


@pytest.mark.parametrize("fail, exc", FAILURES.values(), ids=FAILURES.keys())
def test_failure_after_writes_leaves_arguments_alone(fail, exc):
    f = _write_then(fail)
    x, y = arr((4,)), arr((4, 2), seed=1)
    bx, by = x.copy(), y.copy()
    with pytest.raises(exc):
        strider.compile(f)(x, y)
    np.testing.assert_array_equal(x, bx, strict=True)
    np.testing.assert_array_equal(y, by, strict=True)
    if not issubclass(exc, strider.StriderError):
        assert issubclass(numpy_exception(f, x, y), exc)  # the exception NumPy raises


def test_failure_after_writes_into_aliased_and_unaligned_arguments():
    buf = unaligned(np.float64, (16,))
    before = buf.copy()
    assert_fails_like_numpy(_write_then(lambda x, y: x[9]), [buf[:4], buf[8:].reshape(4, 2)], IndexError)
    np.testing.assert_array_equal(buf, before, strict=True)


def test_huge_allocation_after_writes_fails_before_running():
    """NumPy writes x and then fails to allocate; strider allocates its results before it runs
    anything, so the call fails with nothing written."""
    code = textwrap.dedent("""
        import resource; resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))
        import numpy as np, strider

        def f(x):
            x[:] = 1
            return np.empty((2**40,))

        x = np.zeros(3)
        try:
            strider.compile(f)(x)
        except MemoryError:
            print("MemoryError", x.tolist())
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "MemoryError [0.0, 0.0, 0.0]"


def test_a_module_imported_first_inside_a_compiled_function_keeps_numpy_arrays(tmp_path, monkeypatch):
    """Its top-level code runs while the function traces (OC_SORT's `import lap` inside a
    function): NumPy's own functions serve it, so its globals are arrays after the call, not
    values of the trace."""
    (tmp_path / "strider_lazy_table.py").write_text(
        "import numpy as np\n\ndef _make():\n    return np.ones(5) + np.random.random(5) * 0\n\n"
        "TABLE = np.arange(5.0) * 2 + _make()\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    def shifted(x):
        import strider_lazy_table
        return x + strider_lazy_table.TABLE

    try:
        np.testing.assert_array_equal(strider.compile(shifted, strict=True)(np.ones(5)), [2.0, 4.0, 6.0, 8.0, 10.0])
        import strider_lazy_table
        assert type(strider_lazy_table.TABLE) is np.ndarray
    finally:
        sys.modules.pop("strider_lazy_table", None)


def test_a_module_calling_a_compiled_function_at_its_top_level_traces_its_creations(tmp_path, monkeypatch):
    """A script imported by another (a module's top-level code calls the compiled function):
    np.zeros in the function records into the trace, though an import is running."""
    (tmp_path / "strider_top_level_call.py").write_text(
        "import numpy as np\nimport strider\n\ndef summed(x):\n    out = np.zeros(3, np.float32)\n"
        "    while out[0] < 10:\n        out += x\n    return out\n\n"
        "RESULT = strider.compile(summed, strict=True)(np.arange(1.0, 4.0, dtype=np.float32))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        import strider_top_level_call
        np.testing.assert_array_equal(strider_top_level_call.RESULT, [10.0, 20.0, 30.0])
    finally:
        sys.modules.pop("strider_top_level_call", None)


def test_an_unsupported_function_is_named_by_numpy_s_public_path():
    with pytest.raises(strider.UnsupportedError, match=r"np\.linalg\.inv is not supported"):
        strider.compile(lambda m: np.linalg.inv(m), strict=True)(np.eye(3))
