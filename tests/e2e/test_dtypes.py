"""Differential tests of every dtype strider carries against NumPy 2: the promotion table of every
pair (arrays and weak Python scalars, NumPy's OverflowError for Python ints out of a dtype's
range), every op family on the small integers, the unsigned ones and float16, casts between
every pair, and float16 rounded after every op as NumPy's loops round it.

Each test compiles one function computing many results (one compile per case keeps the suite
fast); tests/differential.py compares values bit for bit, dtypes, shapes and argument contents.
"""
import warnings

import numpy as np
import pytest

import strider
from differential import TARGET, check, check_raises
from strider import _C

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

ALL = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16", "float32",
       "float64"]
NEW = ["int8", "uint8", "int16", "uint16", "uint32", "uint64", "float16"]
INTEGERS = [d for d in ALL if np.dtype(d).kind in "iu"]


def values(dtype, shape=(4, 6), seed=0):
    """Data over the dtype's whole range: its extremes, zero, one and random values, so integer
    arithmetic wraps; float16 quarters, its largest finite value, a subnormal, -0.0, Inf and NaN."""
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        special = [info.min, info.max, 0, 1, info.max - 1, info.min + 1 if dtype.kind == "i" else 2]
        body = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    else:
        finfo = np.finfo(dtype)
        special = [np.nan, np.inf, -np.inf, -0.0, finfo.max, finfo.smallest_subnormal]
        body = (rng.integers(-40, 40, n) / 4).astype(dtype)
    body[rng.permutation(n)[:len(special)]] = np.array(special, dtype=dtype)
    return body.reshape(shape)


def small(dtype, shape=(4, 6), seed=0, nonzero=False):
    """Small values of any dtype (non-negative for unsigned ones), optionally without zeros."""
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    lo = 0 if dtype.kind in "ub" else -9
    x = rng.integers(lo, 10, shape)
    if nonzero:
        x[x == 0] = 3
    if dtype.kind == "f":
        return (x / 4).astype(dtype)
    return x.astype(dtype)


# ---------------------------------------------------------------------------------------------
# Promotion: every pair of dtypes, and weak Python scalars
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("left", ALL)
def test_promotion_with_every_dtype(left):
    """x op y for y of every dtype: NumPy 2's result dtype (np.result_type) and values, including
    a signed integer compared with uint64 exactly (NumPy's mixed loop) and int64 + uint64 in
    float64."""
    def fn(x, *ys):
        out = []
        for y in ys:
            out += [x + y, x * y, x < y, x == y, x >= y, np.maximum(x, y), np.where(y > 1, x, y)]
            if x.dtype != np.bool_ or y.dtype != np.bool_:
                out.append(x - y)
        return tuple(out)

    x = values(left, seed=1)
    ys = [values(d, seed=2 + k) for k, d in enumerate(ALL)]
    got = check(fn, x, *ys)(x, *ys)
    sums, at = [], 0
    for d in ALL:  # x + y leads each dtype's results
        sums.append(got[at].dtype)
        at += 7 + (left != "bool" or d != "bool")
    assert sums == [np.result_type(np.dtype(left), np.dtype(d)) for d in ALL]


WEAK_SCALARS = [True, 0, 7, -3, 127, 2.5, -0.75, 1e30]


@pytest.mark.parametrize("dt", ALL)
def test_weak_python_scalars(dt):
    """Python scalars are weak: the array's dtype wins within its kind (uint8 + 7 is uint8,
    float16 * 2.5 is float16), a float scalar makes an integer array float64."""
    def fn(x):
        out = []
        for s in WEAK_SCALARS:
            if isinstance(s, int) and not isinstance(s, bool) and x.dtype.kind in "iu":
                info = np.iinfo(x.dtype)
                if not info.min <= s <= info.max:
                    continue  # NumPy raises (test_python_ints_out_of_range)
            out += [x + s, s * x, x < s, s == x, np.maximum(x, s)]
        return tuple(out)

    check(fn, values(dt, seed=3))


@pytest.mark.parametrize("dt, scalar", [("uint8", 300), ("uint8", -1), ("int8", 128), ("int8", -129),
                                        ("int16", 40000), ("uint16", -5), ("uint32", 2**32), ("uint64", -1),
                                        ("int64", 2**63), ("uint64", 2**64)])
def test_python_ints_out_of_range(dt, scalar):
    """NumPy 2 refuses a Python int the array's integer dtype cannot hold (OverflowError) in
    arithmetic, and compares it exactly."""
    x = values(dt, seed=4)
    check_raises(lambda a: a + scalar, x, exc=OverflowError)
    check(lambda a: (a < scalar, a == scalar, a != scalar, scalar > a, a >= scalar), x)


@pytest.mark.parametrize("dt, scalar", [("uint8", 300), ("uint8", -1), ("int8", -129), ("uint16", -5),
                                        ("uint32", 2**32), ("uint64", -1), ("int16", 7), ("uint64", 2**40)])
def test_python_int_arguments_out_of_range(dt, scalar):
    """The same for a Python int passed as an argument (known only when the function runs): an
    integer comparison of an array with it runs in int64 (uint64: exactly), and arithmetic checks
    that the dtype holds it, raising NumPy's OverflowError when the function runs."""
    x = values(dt, seed=5)
    check(lambda a, s: (a < s, a == s, a != s, s > a, a >= s, np.greater(a, s)), x, scalar)
    info = np.iinfo(dt)
    if info.min <= scalar <= info.max:
        check(lambda a, s: (a + s, s * a, a - s), x, scalar)
    else:
        check_raises(lambda a, s: a + s, x, scalar, exc=OverflowError)


_STORES = [lambda a, s: a.__setitem__((slice(None), 0), s), lambda a, s: a.__setitem__(a > 3, s),
           lambda a, s: a.__setitem__([0, 2], s), lambda a, s: a[0].__setitem__([0, 1], [s, 1]),
           lambda a, s: a.fill(s), lambda a, s: np.copyto(a, s), lambda a, s: np.put(a, [1, 5], s),
           lambda a, s: np.full(3, s, a.dtype), lambda a, s: np.array([s, 1], a.dtype),
           lambda a, s: np.insert(a.ravel(), 1, s), lambda a, s: np.max(a, initial=s)]


@pytest.mark.parametrize("dt, scalar", [("uint8", 300), ("uint8", -1), ("uint8", 255), ("int8", -129),
                                        ("int8", -128), ("uint64", -1), ("uint64", 2**40), ("int16", 7)])
@pytest.mark.parametrize("store", range(len(_STORES)))
def test_python_int_arguments_stored_out_of_range(dt, scalar, store):
    """A Python int argument stored into an integer array (an item, a mask's or an index's
    elements, fill, copyto, put, np.full, np.array, np.insert, initial=) is checked when the
    function runs: NumPy's OverflowError where the dtype cannot hold it, never a wrapped value."""
    def fn(a, s):
        r = _STORES[store](a, s)
        return a if r is None else r

    x = values(dt, (3, 4), seed=17)
    info = np.iinfo(dt)
    if info.min <= scalar <= info.max:
        check(fn, x, scalar)
    else:
        check_raises(fn, x, scalar, exc=OverflowError)


def test_a_python_int_out_of_range_leaves_the_earlier_writes():
    """The check runs where NumPy's store is: the writes before it are made, none after."""
    def fn(a, s):
        a[:, 1] = 5
        a[:, 0] = s
        a[:, 2] = 9

    expected, got = values("uint8", (3, 4), seed=18), values("uint8", (3, 4), seed=18)
    with pytest.raises(OverflowError):
        fn(expected, 300)
    with pytest.raises(OverflowError):
        strider.compile(fn, target=TARGET)(got, 300)
    np.testing.assert_array_equal(got, expected)


_SCALAR_STORES = {"item": lambda x, v: x.__setitem__(0, v), "slice": lambda x, v: x.__setitem__(slice(None), v),
                  "fill": lambda x, v: x.fill(v), "index": lambda x, v: x.__setitem__([0, 1], v),
                  "mask": lambda x, v: x.__setitem__(x == 0, v), "array": lambda x, v: np.array([v, v], x.dtype),
                  "full": lambda x, v: np.full(2, v, x.dtype), "item_0d": lambda x, v: x.__setitem__(0, np.array(v))}


@pytest.mark.parametrize("store", list(_SCALAR_STORES))
@pytest.mark.parametrize("python", [False, True], ids=["numpy_scalar", "python_float"])
def test_scalars_stored_into_integer_arrays(store, python):
    """A float scalar stored into an integer array: a Python float converts as int() does
    wherever it is stored as an item or by an index, a NumPy scalar so as an item of a signed
    array (NaN: ValueError; infinity, a value past the dtype: OverflowError); an index or mask
    store of a NumPy scalar, np.full and a 0-d array cast unsafely, as NumPy's do."""
    def fn(x, a):
        v = float(a[0]) if python else a[0]
        r = _SCALAR_STORES[store](x, v)
        return x if r is None else r

    for dt in ("int8", "uint8", "int64"):
        for a in (np.array([v], np.float32) for v in (np.nan, np.inf, 300.7, -1.5, 3.5)):
            try:
                with np.errstate(all="ignore"):
                    fn(np.zeros(3, dt), a.copy())
            except (ValueError, OverflowError) as e:
                check_raises(fn, np.zeros(3, dt), a, exc=type(e))
            else:
                check(fn, np.zeros(3, dt), a)
    for a in (np.array([300]), np.array([250], np.uint8)):  # integers NumPy checks as items of int8
        try:
            fn(np.zeros(3, np.int8), a.copy())
        except OverflowError:
            check_raises(fn, np.zeros(3, np.int8), a, exc=OverflowError)
        else:
            check(fn, np.zeros(3, np.int8), a)


def test_an_array_stored_as_one_element_raises():
    # NumPy 2: "setting an array element with a sequence" where an integer index names one element
    for fn in (lambda x, a: x.__setitem__(0, a[0:1]), lambda x, a: x.reshape(3, 1).__setitem__((0, 0), a[:1]),
               lambda x, a: x.__setitem__(-1, a.sum(keepdims=True))):
        check_raises(fn, np.zeros(3), np.ones(2), exc=ValueError)
    check(lambda x, a: (x.__setitem__(0, a[0]), x.__setitem__(slice(1, 2), a[1:]), x)[-1], np.zeros(3), np.ones(2))


def test_traced_python_int_bounds_of_clip():
    """np.clip's Python-int bounds known only when the function runs: one past the dtype's limit
    on its side clips nothing, one past the other side raises OverflowError, as NumPy's do."""
    for dt in ("uint8", "int8", "uint64"):
        x = values(dt, (3, 4), seed=19)
        for lo, hi in ((-1, 3), (0, 300), (-500, 500), (2, 1)):
            check(lambda a, lo, hi: (np.clip(a, lo, hi), a.clip(lo, None), np.clip(a, None, hi)), x, lo, hi)
        check_raises(lambda a, hi: np.clip(a, 0, hi), x, int(np.iinfo(dt).min) - 1, exc=OverflowError)
        check(lambda a, s: np.copyto(a, s, casting="same_kind"), x, 1)
        check_raises(lambda a, s: np.copyto(a, s), x, 1.5, exc=TypeError)
    i64 = values("int64", (3, 4), seed=20)
    check_raises(lambda a, s: np.clip(a, 0, s, out=a), i64, 2.5, exc=np._core._exceptions.UFuncTypeError)


def test_python_ints_past_the_range_in_clip_and_where():
    """np.clip drops a bound past the dtype's own limit on its side (else OverflowError); np.where
    casts a Python int unsafely before NumPy 2.5 (-1 into uint8 is 255, 300 is 44) and raises
    OverflowError from 2.5, as the NumPy installed does; a 0-d comparison with an int out of range
    is a NumPy scalar."""
    u8 = values("uint8", (3, 4), seed=16)
    check(lambda a: (np.clip(a, -1, 0), np.clip(a, 1, 300), np.clip(a, -5, None)), u8)
    for fn in (lambda a: np.where(a > 9, -1, a), lambda a: np.where(a > 9, 300, 2**64 - 1),
               lambda a: np.where(a > 9, a, 2**63)):
        try:
            fn(u8.copy())
        except OverflowError:
            check_raises(fn, u8, exc=OverflowError)
        else:
            check(fn, u8)
    check_raises(lambda a: np.clip(a, 300, 400), u8, exc=OverflowError)
    check_raises(lambda a: np.clip(a, 5, -1), u8, exc=OverflowError)
    check(lambda a: (a < -1, a == 2**64, a[0, 0] > -7), np.array(3, np.uint64)[None, None])
    # np.full and np.pad cast a float (np.pad: any number) from an array of its own
    check(lambda a: (np.full_like(a, -1.0), np.full(3, 300.0, np.uint8), np.full(2, 2.7, np.int8),
                     np.pad(a, 1, constant_values=-1), np.pad(a, 1, constant_values=300.5)), u8)
    check_raises(lambda a: np.full_like(a, -1), u8, exc=OverflowError)


def test_signed_and_uint64_compare_exactly():
    i = np.array([-1, 0, 2**62, -2**63, 7, 2**63 - 1], np.int64)
    u = np.array([2**64 - 1, 0, 2**62, 0, 8, 2**63], np.uint64)
    check(lambda a, b: (a < b, a <= b, a > b, a >= b, a == b, a != b, b < a, b == a, np.less(b, a)), i, u)
    check(lambda a, b: (a < b, b >= a), i.astype(np.int8), u)


# ---------------------------------------------------------------------------------------------
# Every op family on the new dtypes
# ---------------------------------------------------------------------------------------------

def _arith(x, y):
    return (x + y, x - y, x * y, -x, abs(x), np.square(x), np.maximum(x, y), np.minimum(x, y), x // y, x % y,
            np.fmod(x, y), x ** (y % 3 if x.dtype.kind == "u" else abs(y) % 3), np.sign(x), x / y)


def _compare(x, y):
    return (x < y, x <= y, x > y, x >= y, x == y, x != y, np.logical_and(x, y), np.logical_not(x))


def _bitwise(x, y):
    shift = (y % 5).astype(x.dtype)
    return (x & y, x | y, x ^ y, ~x, x << shift, x >> shift, np.left_shift(x, x.dtype.type(9)),
            np.right_shift(x, np.asarray(x.dtype.itemsize * 8 + 1).astype(x.dtype)))


def _math(x, y):
    return (np.sqrt(abs(x)), np.exp(x / 4), np.log(abs(x) + 1), np.sin(x), np.tanh(x), np.arctan2(x, y),
            np.hypot(x, y), np.floor(x / 3), np.ceil(x / 3), np.rint(x / 3), np.round(x / 3, 1), np.trunc(x / 3),
            np.isnan(x / y), np.isinf(x / y), np.signbit(x), np.clip(x, 1, 4), 1 / (1 + np.exp(-x)))


def _reductions(x, y):
    return (x.sum(), x.sum(axis=1), x.prod(axis=0), x.max(), x.min(axis=0), x.argmax(axis=1), x.argmin(),
            x.any(axis=0), x.all(), np.count_nonzero(x), np.cumsum(x, axis=1), np.cumprod(x, axis=0),
            x.mean(axis=1), x.sum(dtype=np.int64), x.max(axis=1, keepdims=True))


def _data_dependent(x, y):
    return (x[x > y], np.nonzero(x)[1], np.sort(x, axis=1), np.argsort(x.ravel(), kind="stable"),
            np.unique(x), x[np.argsort(y[:, 0], kind="stable")], np.take(x, np.array([3, 0, 2]), axis=1),
            np.where(x > y, x, y), np.concatenate([x, y]), np.stack([x, y], axis=-1))


FAMILIES = {"arith": _arith, "compare": _compare, "bitwise": _bitwise, "math": _math,
            "reductions": _reductions, "data_dependent": _data_dependent}
# float16's transcendentals: libm's float functions rounded to half, an ulp off NumPy's at most
MATH_TOL = {"float16": 1e-3, "float32": 1e-6, "float64": 1e-13}


@pytest.mark.parametrize("family", list(FAMILIES))
@pytest.mark.parametrize("dt", NEW)
def test_op_families(dt, family):
    if family == "bitwise" and np.dtype(dt).kind == "f":
        pytest.skip("NumPy has no bitwise loops for floats")
    x, y = small(dt, seed=5), small(dt, seed=6, nonzero=True)
    tol = {}
    if family == "math":
        # integer inputs compute in float16 (8-bit), float32 (16-bit) or float64
        out = np.result_type(dt, np.float16) if np.dtype(dt).itemsize < 4 or dt == "float16" else np.float64
        tol = {"rtol": MATH_TOL[np.dtype(out).name], "atol": MATH_TOL[np.dtype(out).name]}
    if family == "reductions" and dt == "float16":
        tol = {"rtol": 1e-3}  # mean: NumPy sums float16 in float32 pairwise, strider in float64
    check(FAMILIES[family], x, y, **tol)


@pytest.mark.parametrize("dt", NEW)
def test_in_place_writes_through_views(dt):
    """Writes through views into the caller's arrays, with NumPy's same_kind casting of Python
    scalars and of other dtypes' results."""
    def fn(x, y):
        x[::2, 1:] += y[::2, 1:]
        x[1, :] = 3
        x[:, ::-3] *= 2
        np.maximum(x[2:], y[2:], out=x[2:])
        y[...] = x[::-1]
        x.T[0] = x.T[-1]
        return x[1:3], y[:, 2]

    check(fn, small(dt, seed=7), small(dt, seed=8))


# ---------------------------------------------------------------------------------------------
# Casts
# ---------------------------------------------------------------------------------------------

def _cast_source(src):
    """Values of src, floats including ones out of every integer dtype's range (NaN, Inf, 300.7,
    -1e10, 70000.5, ...)."""
    if np.dtype(src).kind != "f":
        return values(src, (3, 7), seed=9)
    x = np.array([[0.5, -1.5, 300.7, -300.2, 127.9, -128.9, 255.5],
                  [70000.5, -1e10, np.nan, np.inf, -np.inf, 65535.5, 65520.0],
                  [1e20, -0.0, 2.0**31, -2.0**31, 2.0**63, -2.0**63, 1.5e19]])
    return x.astype(src)


@pytest.mark.parametrize("src", ALL)
def test_casts_to_every_dtype(src):
    """astype to every dtype: integers wrap to the low bits, floats truncate, out-of-range floats
    as NumPy on x86 (its scalar loops), float16 rounds to nearest even (65520 and up to inf).

    Out-of-range floats to uint32 are left out: NumPy's own contiguous SIMD loop and its
    strided loop give different values there."""
    x = _cast_source(src)
    targets = [d for d in ALL if not (np.dtype(src).kind == "f" and d == "uint32")]
    check(lambda a: tuple(a.astype(d) for d in targets), x)
    if np.dtype(src).kind == "f":
        x_in_range = np.where(np.abs(x.astype(np.float64)) < 2**31, x, 0).astype(src)
        check(lambda a: a.astype(np.uint32), np.abs(x_in_range))


# ---------------------------------------------------------------------------------------------
# float16
# ---------------------------------------------------------------------------------------------

def test_float16_rounds_after_every_op():
    """A fused chain stays bit-exact: each op computes in float32 and rounds to half, as NumPy's
    float16 loops do (one rounding at the end would differ)."""
    x = values("float16", (6, 7), seed=10)
    check(lambda a: ((a * 3 + 1) / 7 - a, a * a * a - a / 3, (a + 0.1) * (a - 0.1)), x)
    check(lambda a, b: (a * b + a / b, np.maximum(a * 1.1, b) * 0.3), x, values("float16", (6, 7), seed=11))


def test_float16_special_values_and_overflow():
    h = np.array([0.1, -2.5, 65504, np.inf, np.nan, -0.0, 6e-8, 1e-4, -65504, 0.0], np.float16)
    check(lambda a: (a * 1000, a + 65504, a * 2, -a, a / 0, a // 0, a % 0, np.fmod(a, 0), a * 6e-8,
                     np.sqrt(a), np.isnan(a), np.isinf(a), np.isfinite(a), np.signbit(a), a == 0,
                     np.maximum(a, 0), np.minimum(a, -0.0), a.max(), a.argmin()), h)


def test_float16_mixed_with_other_dtypes():
    h = values("float16", (4, 5), seed=12)
    check(lambda a, f, i8, i16, u8: (a + f, a * i8, a + i16, a - u8, a * np.float32(2), a + np.float64(2),
                                     a + np.int8(3), a * np.uint8(3), a + np.int32(3), a / 3, a * 2.5),
          h, values("float32", (4, 5)), values("int8", (4, 5)), values("int16", (4, 5)), values("uint8", (4, 5)))


def test_float16_reductions_round_as_numpy():
    """NumPy's float16 sum and prod fold a run along reduced axes lying inside every kept axis
    in float32 and round it once (a row sum, a full sum), and round to half after every other
    step (a column sum), in index order; its mean sums and divides in float32. Bit for bit."""
    x = np.random.default_rng(14).standard_normal((300, 37)).astype(np.float16)
    check(lambda a: (a.sum(), a.sum(0), a.sum(1), a.T.sum(1), a[::-1].sum(0), a[:, ::2].sum(), a[::2, 1:].sum(1),
                     np.add.reduce(a, 0), a.mean(0), a.mean(1), a.mean(), a.var(0), a.std(1), np.linalg.norm(a, axis=0)),
          x)
    z = np.random.default_rng(15).standard_normal((20, 30, 8)).astype(np.float16)
    check(lambda a: (a.sum((0, 1)), a.sum((0, 2)), a.sum((1, 2)), a.sum(1, keepdims=True), (a / 8 + 1).prod(0),
                     (a / 8 + 1).prod(2), a.transpose(2, 0, 1).sum((1, 2)), (a * a).sum(-1)), z)


def test_uint8_image_preprocessing():
    """HWC uint8 images: channel flip, float32 normalization, CHW transpose, integer ops kept in
    uint8 (wrapping), masks."""
    img = np.random.default_rng(13).integers(0, 256, (6, 5, 3)).astype(np.uint8)
    mean = np.array([123.675, 116.28, 103.53], np.float32)
    std = np.array([58.395, 57.12, 57.375], np.float32)
    check(lambda x, m, s: ((x[..., ::-1].astype(np.float32) - m) / s).transpose(2, 0, 1)[None], img, mean, std)
    check(lambda x: (x[:, ::-1], x // 2 + 1, x + x, x * 2, x.astype(np.int16) - 128, x > 100, x[x > 200],
                     x.sum(axis=2), x.mean(), x / 255), img)
    check(lambda x: x.__isub__(x[::-1]), img)


@pytest.mark.parametrize("dt", ["int8", "uint8", "int16", "uint16", "uint32", "uint64"])
def test_small_and_unsigned_index_arrays(dt):
    x = np.arange(40.0).reshape(8, 5)
    i = np.array([3, 1, 7, 0, 2], dt)
    check(lambda a, k: (a[k], a[:, k[:3] % 5], np.take(a, k, axis=0), a[k[::-1], k % 5]), x, i)
    if np.dtype(dt).kind == "i":
        check(lambda a, k: a[k], x, np.array([-1, -8, 3], dt))


def test_creation_in_new_dtypes():
    check(lambda x: (np.zeros(3, np.uint8), np.ones((2, 2), np.float16), np.full(3, 7, np.int8),
                     np.arange(5, dtype=np.uint16), np.arange(0, 1, 0.25, dtype=np.float16),
                     np.linspace(0, 1, 7, dtype=np.float16), np.eye(3, dtype=np.uint64),
                     np.zeros_like(x), np.full_like(x, 200), x.astype(np.uint32).cumsum()), small("uint8"))


def test_unsupported_dtype_names_the_dtype_and_the_line():
    import strider

    def fn(x):
        return x.astype(np.complex64)

    with pytest.raises(strider.UnsupportedError, match=r"complex64.*|.*complex64") as e:
        strider.compile(fn)(small("uint8"))
    assert "test_dtypes.py" in str(e.value)


def test_an_argument_in_non_native_byte_order_is_named_so():
    def area(b):
        return (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])

    boxes = np.array([[0, 0, 2, 3]], dtype=">f4")  # (it said to use float32, which it is)
    with pytest.raises(strider.UnsupportedError, match=r"argument 0 in non-native byte order \(>f4\).*"
                       r"\.astype\(np\.float32\)"):
        strider.compile(area, strict=True)(boxes)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", strider.GraphBreakWarning)
        np.testing.assert_array_equal(strider.compile(area, strict=False)(boxes), area(boxes))


def test_every_dtype_strider_carries_is_covered():
    assert set(ALL) == set(_C.dtype_names())


def scalar_types_called(x):
    # np.float64(x) & co. on traced values: NumPy scalars of one element, arrays of more (x
    # itself where its dtype is the type's already)
    best = float("-inf")
    for i in range(x.shape[0]):
        if x[i, 0] > best:
            best = np.float64(x[i, 0])  # a Python float before, a NumPy scalar after
    return (best, np.float64(x.sum()), np.float32(x[0, 0]) * 2, np.int64(x.max()), np.uint8(x[0, 1]),
            np.bool_(x[1, 0] > 0), np.float16(x[1]), np.int32(x), x.dtype.type(x), np.float64(x.shape[0]))


@pytest.mark.parametrize("src", ["float32", "float16", "int16", "uint8", "bool", "int64"])
def test_scalar_types_called_on_traced_values(src):
    x = (np.random.default_rng(3).integers(0, 120, (5, 4)) / 2).astype(src)
    check(scalar_types_called, x)


def _narrowing_values(seed):
    """float32 with every mantissa bit in use (so a second rounding would show), over exponents
    whose products and quotients overflow and go subnormal, with zeros, Inf and NaN among them."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(256) * np.exp2(rng.integers(-70, 70, 256))).astype(np.float32)
    x[:8] = [np.nan, np.inf, -np.inf, -0.0, 0.0, np.finfo(np.float32).max, np.finfo(np.float32).smallest_subnormal,
             np.finfo(np.float32).tiny]
    return rng.permutation(x)


def test_float64_ops_cast_back_to_float32_give_numpys_bits():
    # narrow_casts computes these in float32: double rounding through float64 is innocuous for
    # add, subtract, multiply, divide and sqrt, so the bits must be NumPy's
    def f(x, y, m, u):
        x64, y64 = x.astype(np.float64), y.astype(np.float64)
        a = (x64 * y64).astype(np.float32)
        b = (x64 + y).astype(np.float32)
        c = (x64 / y64).astype(np.float32)
        d = np.sqrt(x64).astype(np.float32)
        e = (u.astype(np.float64) - y64).astype(np.float32)
        g = (np.maximum(-x64, 0.5) * y64).astype(np.float32)
        h = (x64 * y64 + x64).astype(np.float32)  # not narrowed: rounding x64 * y64 would show
        k = (x64 * 0.1).astype(np.float32)  # not narrowed: 0.1 is not a float32 value
        x[1:] *= np.where(m[1:], 0.0, 1.0)
        y[1:] = (y[:-1].astype(np.float64) * 2.0).astype(np.float32)
        return a, b, c, d, e, g, h, k

    x, y = _narrowing_values(0), _narrowing_values(1)
    m = np.random.default_rng(2).random(256) < 0.5
    u = np.arange(256).astype(np.uint8)
    compiled = check(f, x, y, m, u)
    assert str(compiled.explain(x.copy(), y.copy(), m, u)).count("narrowed: ") == 8
