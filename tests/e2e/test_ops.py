"""Differential tests of single operations: arithmetic, comparisons, bitwise and logical ops,
unary math, rounding, clip, where, astype, creation, joins and reductions.

Every case runs the function in NumPy and under `strider.compile` (tests/differential.py) and
compares values, dtypes, shapes, kinds, argument contents and memory sharing. Where NumPy raises,
strider must raise an exception of the same built-in type (TypeError, ValueError, ...).

Arrays are small (at most a few dozen elements). Float data are multiples of 1/4, so + - * and
comparisons are exact, and results are compared bit-for-bit except for transcendentals, float
powers and float reductions, which get a relative tolerance per dtype.
"""
import itertools
import math

import numpy as np
import pytest

import strider
from differential import TARGET, check, check_raises, clone_args

BOOL, I32, I64, F32, F64 = np.bool_, np.int32, np.int64, np.float32, np.float64
# NumPy (and perhaps strider) warn about division by zero, log of negatives, overflow, ...
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

DTYPES = [BOOL, I32, I64, F32, F64]
INTS = [I32, I64]
FLOATS = [F32, F64]
DT_IDS = {BOOL: "bool", I32: "int32", I64: "int64", F32: "float32", F64: "float64"}


def dtid(dt):
    return DT_IDS[dt]


# Tolerances for transcendental functions / float powers, and for float reductions.
TRANS_RTOL = {np.dtype(np.float16): 1e-3, np.dtype(F32): 1e-6, np.dtype(F64): 1e-13}
TRANS_ATOL = {np.dtype(np.float16): 1e-3, np.dtype(F32): 1e-7, np.dtype(F64): 1e-15}
REDUCE_RTOL = {np.dtype(F32): 1e-5, np.dtype(F64): 1e-12}


def make(dtype, shape=(3, 4), seed=0, lo=-6, hi=7):
    """Deterministic small data. Ints in [lo, hi), floats are quarters in [lo, hi)."""
    rng = np.random.default_rng(seed)
    if dtype is BOOL:
        return rng.random(shape) < 0.5
    if np.dtype(dtype).kind == "i":
        return rng.integers(lo, hi, shape).astype(dtype)
    return (rng.integers(lo * 4, hi * 4, shape) / 4).astype(dtype)


def specials(dtype, shape=(3, 4), seed=0):
    """Float data with NaN, +-Inf, -0.0 and 0.0 mixed in."""
    x = make(dtype, shape, seed).ravel()
    vals = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0]
    rng = np.random.default_rng(seed + 100)
    pos = rng.permutation(x.size)[: len(vals)]
    x[pos] = vals
    return x.reshape(shape)


def builtin_exc(e):
    """The first built-in class in the exception's MRO (UFuncTypeError -> TypeError)."""
    for cls in type(e).__mro__:
        if cls.__module__ == "builtins":
            return cls
    return Exception


def check_numpy(fn, *args, **kwargs):
    """Let NumPy decide: if it raises, strider must raise the same built-in type; else compare."""
    np_args, np_kwargs = clone_args((args, {k: v for k, v in kwargs.items()
                                              if k not in ("rtol", "atol", "static_argnames", "calls")}))
    try:
        with np.errstate(all="ignore"):
            fn(*np_args, **np_kwargs)
    except Exception as e:  # noqa: BLE001 - NumPy's verdict is the reference
        kw = {k: v for k, v in kwargs.items() if k not in ("rtol", "atol", "calls")}
        check_raises(fn, *args, exc=builtin_exc(e), **kw)
        return
    check(fn, *args, **kwargs)


def trans_tol(fn, *args):
    """rtol/atol for a result of fn according to its float dtype (exact for non-floats)."""
    with np.errstate(all="ignore"):
        r = fn(*clone_args(args))
    rs = r if isinstance(r, tuple) else (r,)
    dts = [np.asarray(v).dtype for v in rs if np.asarray(v).dtype.kind == "f"]
    if not dts:
        return {}
    return {"rtol": max(TRANS_RTOL[d] for d in dts), "atol": max(TRANS_ATOL[d] for d in dts)}


# ---------------------------------------------------------------------------------------------
# Binary arithmetic, comparison and bitwise operators
# ---------------------------------------------------------------------------------------------
BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "truediv": lambda a, b: a / b,
    "floordiv": lambda a, b: a // b,
    "mod": lambda a, b: a % b,
    "pow": lambda a, b: a ** b,
    "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b,
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "and": lambda a, b: a & b,
    "or": lambda a, b: a | b,
    "xor": lambda a, b: a ^ b,
    "minimum": lambda a, b: np.minimum(a, b),
    "maximum": lambda a, b: np.maximum(a, b),
}


def _pow_operands(dt, seed=1):
    a = make(dt, seed=seed)
    b = make(dt, seed=seed + 1, lo=-3, hi=4)
    if dt is not BOOL and np.dtype(dt).kind == "i":
        b = np.abs(b)  # integers to negative powers raise ValueError (value-dependent)
    return a, b


@pytest.mark.parametrize("dt", DTYPES, ids=dtid)
@pytest.mark.parametrize("op", list(BINARY))
def test_binary_same_dtype(op, dt):
    if op == "pow":
        a, b = _pow_operands(dt)
        tol = {"rtol": TRANS_RTOL[np.dtype(dt)], "atol": 0} if np.dtype(dt).kind == "f" else {}
        check_numpy(BINARY[op], a, b, **tol)
    else:
        check_numpy(BINARY[op], make(dt, seed=1), make(dt, seed=2))


@pytest.mark.parametrize("dt", FLOATS, ids=dtid)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "lt", "eq",
                                "ne", "minimum", "maximum"])
def test_binary_nan_inf(op, dt):
    a, b = specials(dt, seed=3), specials(dt, seed=4)
    tol = {"rtol": TRANS_RTOL[np.dtype(dt)]} if op == "pow" else {}
    check(BINARY[op], a, b, **tol)


UFUNC_FUNCS = {
    "np.add": lambda a, b: np.add(a, b),
    "np.subtract": lambda a, b: np.subtract(a, b),
    "np.multiply": lambda a, b: np.multiply(a, b),
    "np.divide": lambda a, b: np.divide(a, b),
    "np.true_divide": lambda a, b: np.true_divide(a, b),
    "np.floor_divide": lambda a, b: np.floor_divide(a, b),
    "np.remainder": lambda a, b: np.remainder(a, b),
    "np.mod": lambda a, b: np.mod(a, b),
    "np.less": lambda a, b: np.less(a, b),
    "np.less_equal": lambda a, b: np.less_equal(a, b),
    "np.greater": lambda a, b: np.greater(a, b),
    "np.greater_equal": lambda a, b: np.greater_equal(a, b),
    "np.equal": lambda a, b: np.equal(a, b),
    "np.not_equal": lambda a, b: np.not_equal(a, b),
    "np.minimum": lambda a, b: np.minimum(a, b),
    "np.maximum": lambda a, b: np.maximum(a, b),
    "np.logical_and": lambda a, b: np.logical_and(a, b),
    "np.logical_or": lambda a, b: np.logical_or(a, b),
}


@pytest.mark.parametrize("op", list(UFUNC_FUNCS))
def test_ufunc_function_form_mixed(op):
    # int64 with float32 promotes to float64
    check(UFUNC_FUNCS[op], make(I64, seed=5), make(F32, seed=6))


@pytest.mark.parametrize("op", ["np.bitwise_and", "np.bitwise_or", "np.bitwise_xor", "np.power"])
def test_ufunc_function_form_int(op):
    fns = {
        "np.bitwise_and": lambda a, b: np.bitwise_and(a, b),
        "np.bitwise_or": lambda a, b: np.bitwise_or(a, b),
        "np.bitwise_xor": lambda a, b: np.bitwise_xor(a, b),
        "np.power": lambda a, b: np.power(a, b),
    }
    check(fns[op], make(I32, seed=7), np.abs(make(I64, seed=8, lo=-4, hi=5)))


MIXED_FAMILIES = {
    "arith": lambda a, b: (a + b, a - b, b - a, a * b),
    "div": lambda a, b: (a / b, a // b, a % b, b // a, b % a),
    "cmp": lambda a, b: (a < b, a == b, a >= b, b != a),
    "minmax": lambda a, b: (np.minimum(a, b), np.maximum(b, a)),
    "pow": lambda a, b: a ** b,
    "bitwise": lambda a, b: (a & b, a | b, b ^ a),
}
DTYPE_PAIRS = list(itertools.combinations(DTYPES, 2))


@pytest.mark.parametrize("pair", DTYPE_PAIRS, ids=lambda p: f"{dtid(p[0])}-{dtid(p[1])}")
@pytest.mark.parametrize("family", list(MIXED_FAMILIES))
def test_binary_mixed_dtypes(family, pair):
    da, db = pair
    a = make(da, seed=10)
    b = make(db, seed=11)
    tol = {}
    if family == "pow":
        if np.dtype(db).kind in "iu":
            b = np.abs(b)
        rdt = np.result_type(da, db)
        if rdt.kind == "f":
            tol = {"rtol": TRANS_RTOL[rdt]}
    check_numpy(MIXED_FAMILIES[family], a, b, **tol)


@pytest.mark.parametrize("shapes", [
    ((3, 1), (1, 4)), ((2, 3, 4), (4,)), ((2, 1, 4), (3, 1)), ((5,), ()), ((), (2, 3)),
    ((0, 3), (1, 3)), ((1,), (0,)), ((2, 0), (2, 1)), ((4, 1), (4, 0)), ((1, 1, 1), (2, 3)),
], ids=lambda s: str(s).replace(" ", ""))
def test_broadcasting(shapes):
    sa, sb = shapes
    check(lambda a, b: (a + b, a * b, a < b, np.maximum(a, b)), make(F64, sa, seed=1), make(I32, sb, seed=2))


@pytest.mark.parametrize("shapes", [((3,), (4,)), ((2, 3), (3, 2)), ((0,), (2,))],
                         ids=lambda s: str(s).replace(" ", ""))
def test_broadcasting_incompatible_raises(shapes):
    sa, sb = shapes
    check_raises(lambda a, b: a + b, make(F64, sa), make(F64, sb), exc=ValueError)


# 0-d arrays: arithmetic on 0-d arrays gives NumPy scalars, not 0-d arrays.
ZERO_D = {
    "add": lambda a, b: a + b,
    "np.add": lambda a, b: np.add(a, b),
    "mul_pyscalar": lambda a, b: a * 2,
    "neg": lambda a, b: -a,
    "exp": lambda a, b: np.exp(a),
    "cmp": lambda a, b: a > b,
    "with_1d": lambda a, b: a + np.arange(3),
    "where": lambda a, b: np.where(a > b, a, b),
    "maximum": lambda a, b: np.maximum(a, b),
    "astype": lambda a, b: a.astype(np.int32),
}


@pytest.mark.parametrize("op", list(ZERO_D))
def test_zero_d(op):
    check(ZERO_D[op], np.array(2.5), np.array(-1.0, dtype=F32), rtol=1e-13)


@pytest.mark.parametrize("op", ["add", "mul", "lt", "truediv", "minimum"])
def test_zero_size(op):
    check(BINARY[op], make(F32, (0, 3)), make(I64, (3,)))


# ---------------------------------------------------------------------------------------------
# Python scalars (NumPy 2 weak promotion) and NumPy scalars (strong)
# ---------------------------------------------------------------------------------------------
SCALAR_OPS = {
    "add": lambda x, s: x + s,
    "rsub": lambda x, s: s - x,
    "truediv": lambda x, s: x / s,
    "rfloordiv": lambda x, s: s // x,
    "mod": lambda x, s: x % s,
    "lt": lambda x, s: x < s,
    "maximum": lambda x, s: np.maximum(x, s),
}


@pytest.mark.parametrize("scalar", [3, -2.5, True], ids=["int", "float", "bool"])
@pytest.mark.parametrize("dt", DTYPES, ids=dtid)
@pytest.mark.parametrize("op", list(SCALAR_OPS))
def test_python_scalar_runtime_arg(op, dt, scalar):
    # The scalar is a runtime argument: its Python type is known, its value is not.
    check_numpy(SCALAR_OPS[op], make(dt, seed=12), scalar)


def test_python_scalar_runtime_value_changes():
    # Same compiled function, different scalar values: must not bake in the first value.
    fn = lambda x, s: x * s + 1  # noqa: E731
    compiled = check(fn, make(F32, seed=1), 2.5)
    x = make(F32, seed=1)
    np.testing.assert_array_equal(compiled(x.copy(), -0.75), fn(x.copy(), -0.75), strict=True)


SCALAR_LITERALS = lambda x: (x + 2, 2.5 * x, 1 - x, x / 4, x < 1.5, x == True, x * True,  # noqa: E712,E731
                             x + 0.0, 3 // (x + 10), x % 4, x ** 2, np.maximum(x, 1), np.minimum(2.5, x))


@pytest.mark.parametrize("dt", DTYPES, ids=dtid)
def test_python_scalar_literals(dt):
    check_numpy(SCALAR_LITERALS, make(dt, seed=13))


@pytest.mark.parametrize("case", [
    ("int32+np.float64", I32, lambda x: x + np.float64(1.5)),
    ("float32*np.float64", F32, lambda x: x * np.float64(2)),
    ("int32+np.int64", I32, lambda x: x + np.int64(3)),
    ("bool+np.int32", BOOL, lambda x: x + np.int32(1)),
    ("float32+np.float32", F32, lambda x: x + np.float32(0.25)),
    ("int64/np.int32", I64, lambda x: x / np.int32(4)),
    ("np.float32+pyint", F32, lambda x: np.float32(2) + 1 + x),
], ids=lambda c: c[0])
def test_numpy_scalar_literals(case):
    _, dt, fn = case
    check(fn, make(dt, seed=14))


@pytest.mark.parametrize("scalar", [np.float64(1.5), np.int64(3), np.float32(-0.5), np.int32(7), np.bool_(True)],
                         ids=lambda s: type(s).__name__)
@pytest.mark.parametrize("dt", [I32, F32], ids=dtid)
def test_numpy_scalar_runtime_arg(dt, scalar):
    check(lambda x, s: (x + s, x * s, x < s), make(dt, seed=15), scalar)


def test_python_int_out_of_bounds_raises():
    check_raises(lambda x: x + 2**40, make(I32), exc=OverflowError)


def test_python_int_out_of_bounds_comparison():
    # NumPy 2 compares with out-of-range Python ints exactly instead of raising.
    check(lambda x: (x < 2**40, x == 2**40, x > -(2**40)), make(I32))


def test_int64_float64_compare_is_lossy():
    # int64 vs float64 comparison converts the int64 to float64 (2**53 + 1 == 2.0**53).
    check(lambda a, b: (a == b, a < b), np.array([2**53 + 1, 2**53, 3], I64), np.array([2.0**53] * 3))


# ---------------------------------------------------------------------------------------------
# Integer edge cases: division by zero, negative operands, overflow
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dt", INTS, ids=dtid)
@pytest.mark.parametrize("op", ["floordiv", "mod", "truediv"])
def test_int_div_edges(op, dt):
    info = np.iinfo(dt)
    a = np.array([7, -7, 7, -7, 0, info.min, info.min, 5, -5, 0, info.max, 6], dt)
    b = np.array([2, 2, -2, -2, 3, -1, 1, 0, 0, 0, -1, -3], dt)
    check(BINARY[op], a, b)


@pytest.mark.parametrize("dt", INTS, ids=dtid)
def test_int_reciprocal_edges(dt):
    # NumPy's integer loop converts 1.0 / x: 0 gives inf converted, the type's lowest value on x86
    info = np.iinfo(dt)
    check(lambda x: np.reciprocal(x), np.array([0, 1, -1, 2, -2, 7, info.min, info.max], dt))


def test_float_floordiv_mod_not_floor_of_quotient():
    # NumPy's float // and % follow divmod: 1.0 // 0.1 == 9.0 (not floor(1.0 / 0.1) == 10.0).
    check(lambda a, b: (a // b, a % b, np.floor(a / b)),
          np.array([1.0, -1.0, 1.0, 0.7, 5.0, -5.0, -0.0]), np.array([0.1, 0.1, -0.1, 0.1, np.inf, np.inf, 3.0]))


@pytest.mark.parametrize("dt", INTS, ids=dtid)
def test_int_overflow_wraps(dt):
    info = np.iinfo(dt)
    a = np.array([info.max, info.min, info.max // 2 + 1, info.min, 3], dt)
    b = np.array([1, -1, 3, 2, 0], dt)
    check(lambda a, b: (a + b, a - b, a * b, -a, abs(a), np.abs(a), a ** 2), a, b)


def test_int_power_wraps_and_zero_power():
    a = np.array([0, 0, 3, -3, 2, 7, -1], I64)
    b = np.array([0, 5, 40, 41, 63, 30, 31], I64)
    check(lambda a, b: (a ** b, a.astype(I32) ** b.astype(I32)), a, b)


def test_int_negative_power_raises():
    check_raises(lambda x: x ** -1, make(I32), exc=ValueError)


def test_float_power_fast_paths():
    # NumPy rewrites `x ** 2` to square, `x ** 0.5` to sqrt, `x ** -1` to reciprocal, `x ** 1` and `x ** 0`.
    x = np.array([0.5, -1.5, 2.0, -0.0, np.inf, -np.inf, np.nan, 3.0])
    check(lambda x: (x ** 2, x ** 0.5, x ** -1, x ** 1, x ** 0, x ** 3.0, np.power(x, 2)), x, rtol=1e-13)


# ---------------------------------------------------------------------------------------------
# In-place operators (casting rule same_kind) incl. the ones NumPy rejects
# ---------------------------------------------------------------------------------------------
def _iadd(x, y):
    x += y
    return x


def _isub(x, y):
    x -= y
    return x


def _imul(x, y):
    x *= y
    return x


def _itruediv(x, y):
    x /= y
    return x


def _ifloordiv(x, y):
    x //= y
    return x


def _imod(x, y):
    x %= y
    return x


def _ipow(x, y):
    x **= y
    return x


def _iand(x, y):
    x &= y
    return x


def _ior(x, y):
    x |= y
    return x


def _ixor(x, y):
    x ^= y
    return x


def _iadd_noreturn(x, y):
    x += y


INPLACE = {"+=": _iadd, "-=": _isub, "*=": _imul, "/=": _itruediv, "//=": _ifloordiv, "%=": _imod,
           "**=": _ipow, "&=": _iand, "|=": _ior, "^=": _ixor}

INPLACE_OK = [
    (F64, I32, "+="), (F32, F64, "+="), (I32, I64, "+="), (I64, BOOL, "*="), (F64, BOOL, "-="),
    (I32, I32, "//="), (I64, I32, "%="), (F32, F32, "/="), (F64, I64, "/="), (F64, F64, "**="),
    (I32, I32, "**="), (BOOL, BOOL, "|="), (BOOL, BOOL, "&="), (I64, I32, "^="), (BOOL, BOOL, "+="),
    (BOOL, BOOL, "*="), (F32, I64, "-="), (I32, BOOL, "&="), (F32, F32, "%="), (F64, F32, "//="),
]
INPLACE_BAD = [
    (I32, F64, "+="), (I32, F32, "*="), (I64, I64, "/="), (BOOL, I32, "+="), (I32, F64, "//="),
    (F64, F64, "&="), (BOOL, BOOL, "-="), (I32, BOOL, "/="), (BOOL, F32, "*="), (I64, F32, "-="),
]


def _ids(c):
    return f"{dtid(c[0])}{c[2]}{dtid(c[1])}"


@pytest.mark.parametrize("case", INPLACE_OK, ids=_ids)
def test_inplace_allowed(case):
    dx, dy, op = case
    x = make(dx, seed=20)
    y = make(dy, seed=21, lo=0, hi=4) if op == "**=" else make(dy, seed=21)
    if op in ("//=", "%=") and np.dtype(dy).kind != "f":
        y = np.where(y == 0, 1, y).astype(dy)  # keep integer results value-deterministic
    tol = {"rtol": TRANS_RTOL[np.dtype(dx)]} if op == "**=" and np.dtype(dx).kind == "f" else {}
    check(INPLACE[op], x, y, **tol)


@pytest.mark.parametrize("case", INPLACE_BAD, ids=_ids)
def test_inplace_rejected(case):
    dx, dy, op = case
    check_raises(INPLACE[op], make(dx, seed=22), make(dy, seed=23), exc=TypeError)


@pytest.mark.parametrize("case", [
    ("int32+=int", _iadd, I32, 2, None), ("float32*=float", _imul, F32, 2.5, None),
    ("int64-=bool", _isub, I64, True, None), ("bool|=bool", _ior, BOOL, True, None),
    ("int32+=float", _iadd, I32, 1.5, TypeError), ("bool+=int", _iadd, BOOL, 1, TypeError),
    ("int32/=int", _itruediv, I32, 2, TypeError),
], ids=lambda c: c[0])
def test_inplace_python_scalar(case):
    _, op, dt, s, exc = case
    if exc is None:
        check(op, make(dt, seed=24), s)
    else:
        check_raises(op, make(dt, seed=24), s, exc=exc)


def test_inplace_out_of_bounds_python_int_raises():
    def f(x):
        x += 2**40
        return x
    check_raises(f, make(I32), exc=OverflowError)


def test_inplace_no_return():
    check(_iadd_noreturn, make(F64, seed=25), make(I32, seed=26))


def test_inplace_broadcast_operand():
    check(_imul, make(F32, (3, 4), seed=27), make(F32, (4,), seed=28))


def test_inplace_non_broadcastable_output_raises():
    check_raises(_iadd, make(F64, (4,)), make(F64, (3, 4)), exc=ValueError)


def test_inplace_int32_overflow_wraps():
    info = np.iinfo(I32)
    check(_iadd, np.array([info.max, info.min, 5], I32), np.array([1, -1, 2], I64))


# ---------------------------------------------------------------------------------------------
# Unary ops and math functions
# ---------------------------------------------------------------------------------------------
UNARY = {
    "neg": lambda x: -x,
    "builtin_abs": lambda x: abs(x),
    "np.abs": lambda x: np.abs(x),
    "invert": lambda x: ~x,
    "exp": lambda x: np.exp(x),
    "log": lambda x: np.log(x),
    "log2": lambda x: np.log2(x),
    "sqrt": lambda x: np.sqrt(x),
    "sin": lambda x: np.sin(x),
    "cos": lambda x: np.cos(x),
    "tanh": lambda x: np.tanh(x),
    "floor": lambda x: np.floor(x),
    "ceil": lambda x: np.ceil(x),
    "round": lambda x: np.round(x),
    "sign": lambda x: np.sign(x),
    "logical_not": lambda x: np.logical_not(x),
    "isfinite": lambda x: np.isfinite(x),
    "isnan": lambda x: np.isnan(x),
}
TRANSCENDENTAL = {"exp", "log", "log2", "sin", "cos", "tanh"}


@pytest.mark.parametrize("dt", DTYPES, ids=dtid)
@pytest.mark.parametrize("op", list(UNARY))
def test_unary(op, dt):
    # bool inputs of exp/log/sqrt/sin/... give float16 (and np.round(bool) too); int inputs float64.
    x = specials(dt, (4, 5), seed=30) if np.dtype(dt).kind == "f" else make(dt, (4, 5), seed=30)
    fn = UNARY[op]
    tol = {}
    if op in TRANSCENDENTAL:
        try:
            tol = trans_tol(fn, x)
        except Exception:  # noqa: BLE001 - check_numpy will report NumPy's exception
            tol = {}
    check_numpy(fn, x, **tol)


@pytest.mark.parametrize("dt", FLOATS, ids=dtid)
@pytest.mark.parametrize("op", sorted(TRANSCENDENTAL))
def test_transcendental_wide_range(op, dt):
    # Larger magnitudes: exp overflow to inf, log of tiny values, sin/cos of larger arguments.
    x = np.array([-100.0, -20.5, -3.25, -1e-3, 1e-30, 1e-3, 0.5, 3.0, 20.25, 88.5, 100.0, 710.0], dt)
    check(UNARY[op], x, **trans_tol(UNARY[op], x))


# ---------------------------------------------------------------------------------------------
# round with decimals, clip, where, logical ops, astype
# ---------------------------------------------------------------------------------------------
ROUND_DATA = [2.675, 0.125, -1.005, 12345.678, 0.5, 1.5, 2.5, -0.5, -2.5, 15.0, 25.0, -35.0, 0.0,
              np.nan, np.inf, -np.inf]


@pytest.mark.parametrize("decimals", [0, 1, 2, -1, -2])
@pytest.mark.parametrize("dt", FLOATS, ids=dtid)
def test_round_decimals_float(dt, decimals):
    # NumPy: x * 10**d, rint (half to even), / 10**d, in the array's precision.
    check(lambda x: (np.round(x, decimals), x.round(decimals), np.around(x, decimals)), np.array(ROUND_DATA, dt))


@pytest.mark.parametrize("decimals", [0, 2, -1])
@pytest.mark.parametrize("dt", INTS, ids=dtid)
def test_round_decimals_int(dt, decimals):
    check(lambda x: np.round(x, decimals), np.array([15, 25, 35, -15, -25, 4, 5, 6, 149, 150, 151, 0], dt))


def test_round_builtin_on_numpy_scalar():
    check(lambda x: (round(x[0], 1), round(x[3]), x[1].round(1)), np.array([0.25, 0.35, -1.25, 2.5]))
    # an integer scalar's round with digits is that scalar type (it was a 0-d array)
    for dt in (np.int64, np.uint8, np.int8):
        check(lambda x: (round(x[0], 2), round(x[1], -1), round(x[1])), np.array([7, 17], dt))


@pytest.mark.parametrize("fn, x", [
    (lambda x: round(x[0]), np.array([True, False])),
    (lambda x: round(x[0], 1), np.array([True, False])),
    (lambda x: math.trunc(x[0]), np.array([2.5], np.float32)),
    (lambda x: math.trunc(x[0]), np.array([3])),
], ids=["round_bool", "round_bool_digits", "trunc_float32", "trunc_int64"])
def test_round_and_trunc_of_numpy_scalars_without_them_raise(fn, x):
    # NumPy's bool scalar has no __round__, and of its scalars only float64 (a Python float) has __trunc__
    check_raises(fn, x, exc=TypeError)


@pytest.mark.parametrize("value, exc", [(np.nan, ValueError), (np.inf, OverflowError), (-np.inf, OverflowError),
                                        (1e20, OverflowError)], ids=["nan", "inf", "-inf", "past_int64"])
@pytest.mark.parametrize("name", ["floor", "ceil", "trunc"])
def test_math_floor_ceil_trunc_of_what_no_int64_holds_raise(name, value, exc):
    # albumentations' padding `max(0, math.ceil(...))` of an infinite corner: it was INT64_MIN,
    # silently (Python's int past int64 is refused as int()'s is)
    def fn(v):  # (math's function as the user's code finds it, when it runs)
        return getattr(math, name)(v)

    if value == 1e20:  # (Python's is an int past int64, which strider refuses when the function runs)
        with pytest.raises(exc, match="past int64"):
            strider.compile(lambda x: fn(x[1]), target=TARGET)(np.array([0.0, value]))
        return
    check_raises(lambda x: max(0, fn(x[1] - 3.0)), np.array([0.0, value]), exc=exc)
    check(lambda x: (fn(x[0]), fn(-x[0])), np.array([2.5, value]))


@pytest.mark.parametrize("dt", DTYPES, ids=dtid)
@pytest.mark.parametrize("bounds", [(0, 3), (-1.5, 2.5), (None, 2), (-1, None), (3, 1), (True, True)], ids=str)
def test_clip_scalar_bounds(bounds, dt):
    lo, hi = bounds
    check_numpy(lambda x: np.clip(x, lo, hi), make(dt, seed=31))


@pytest.mark.parametrize("case", [
    ("method", lambda x, lo, hi: x.clip(-1, 2)),
    ("method_kw", lambda x, lo, hi: x.clip(min=0.5)),
    ("arrays", lambda x, lo, hi: np.clip(x, lo, hi)),
    ("array_lo_scalar_hi", lambda x, lo, hi: np.clip(x, lo, 1.5)),
    ("nan_in_bounds", lambda x, lo, hi: np.clip(x, np.nan, 1.0)),
    ("runtime_scalar_args", None),
], ids=lambda c: c[0])
def test_clip_forms(case):
    name, fn = case
    x = specials(F64, (3, 4), seed=32)
    if name == "runtime_scalar_args":
        check(lambda x, lo, hi: np.clip(x, lo, hi), x, -1.25, 2.0)
    else:
        check(fn, x, make(F64, (4,), seed=33, lo=-3, hi=0), make(F32, (3, 1), seed=34, lo=0, hi=3))


def _zero_ties(a, b, i):
    m = a.copy()
    np.maximum.at(m, i, b[i])
    return (np.maximum(a, b), np.minimum(a, b), np.maximum(b, a), np.maximum(a[::2], 0.0), np.minimum(-0.0, b),
            np.maximum(a[1], b[1]), np.maximum.accumulate(a), np.minimum.accumulate(b), m,
            np.clip(a, -0.0, 1.0), np.clip(a, b[:1], 0.0), np.clip(a, b, 1.0), np.clip(a, None, -0.0))


@pytest.mark.parametrize("dt", [np.float16, F32, F64], ids=str)
def test_zero_ties_take_numpys_operand(dt):
    # +0 and -0 tie: float32's and float64's maximum and minimum (and their accumulations and
    # .at) take the second operand, float16's the first; clip between two single values keeps
    # the element, against an array the bound (the harness tells the zeros apart)
    a = np.array([0.0, -0.0, 0.0, -0.0, np.nan, 1.0, -0.0, 0.0], dt)
    b = np.array([-0.0, 0.0, -0.0, 0.0, -0.0, -0.0, np.nan, 0.0], dt)
    check(_zero_ties, a, b, np.array([0, 1, 2, 3, 5, 7]))


def _clip_out_self(x):
    return np.clip(x, 0, 3, out=x)


def _clip_out_other(x, y):
    r = np.clip(x, -1.0, 1.0, out=y)
    return r, y


@pytest.mark.parametrize("dt", [I32, F32, F64], ids=dtid)
def test_clip_out_self(dt):
    check(_clip_out_self, make(dt, seed=35))


def test_clip_out_other_arg():
    check(_clip_out_other, make(F64, seed=36), np.zeros((3, 4), F32))


def test_clip_out_cast_rejected():
    check_raises(lambda x: np.clip(x, 0.5, 2.5, out=x), make(I32), exc=TypeError)


def _safe_divide(inter, union, o):
    # the safe division idiom (open_model_zoo's nms, YOLOX's postprocess): out= and where=
    iou = np.divide(inter, union, out=np.zeros_like(inter), where=union != 0)
    np.multiply(inter, 2, out=o, where=o[:, :1] > 0.5)  # a mask broadcast over out's rows
    np.add(o[:, :2], 1, out=o[:, :2], where=[True, False])
    return iou, o


def test_ufunc_where_with_out():
    inter = make(F64, (4,), seed=37, lo=0, hi=3)
    check(_safe_divide, inter, np.array([0.0, 2.0, 0.0, 5.0]), make(F32, (3, 4), seed=38, lo=0, hi=1))


@pytest.mark.parametrize("fn,exc", [
    (lambda a, o: np.add(a, 1, out=o, where=np.ones(4, I32)), TypeError),  # where= holds bools
    (lambda a, o: np.add(a, 1, out=o, where=np.ones((2, 1), bool)), ValueError),  # broadcast to out's shape
])
def test_ufunc_where_raises_as_numpy(fn, exc):
    check_raises(fn, make(F64, (4,), seed=39), np.zeros(4), exc=exc)


@pytest.mark.parametrize("case", [
    ("same_dtype", lambda c, a, b: np.where(c, a, a * 2)),
    ("mixed_dtypes", lambda c, a, b: np.where(c, a, b)),
    ("int_scalar", lambda c, a, b: np.where(c, b, 0)),
    ("float_scalar_int_array", lambda c, a, b: np.where(c, b, 1.5)),
    ("both_scalars", lambda c, a, b: np.where(c, 1, 0.0)),
    ("float32_with_pyfloat", lambda c, a, b: np.where(c, a.astype(np.float32), 2.5)),
    ("broadcast", lambda c, a, b: np.where(c[:, :1], a[0], b[:, 1:2])),
    ("int_condition", lambda c, a, b: np.where(b, a, -a)),
    ("computed_condition", lambda c, a, b: np.where(a > b, a - b, b - a)),
    ("nan", lambda c, a, b: np.where(np.isnan(a), 0.0, a)),
], ids=lambda c: c[0])
def test_where(case):
    check(case[1], make(BOOL, seed=40), specials(F64, seed=41), make(I32, seed=42))


@pytest.mark.parametrize("dt", DTYPES, ids=dtid)
def test_logical_ops(dt):
    x = specials(dt, seed=43) if np.dtype(dt).kind == "f" else make(dt, seed=43)
    y = make(BOOL, seed=44)
    check(lambda x, y: (np.logical_and(x, y), np.logical_or(x, 0), np.logical_not(x), np.logical_and(x, x > 0)),
          x, y)


@pytest.mark.parametrize("dt", DTYPES, ids=dtid)
def test_isfinite_isnan(dt):
    x = specials(dt, seed=45) if np.dtype(dt).kind == "f" else make(dt, seed=45)
    check(lambda x: (np.isfinite(x), np.isnan(x), ~np.isfinite(x)), x)


def _astype_source(src):
    if src is BOOL:
        return make(BOOL, seed=46)
    if np.dtype(src).kind == "i":
        info = np.iinfo(src)
        return np.array([0, 1, -1, 7, -8, info.max, info.min, 2**24 + 1, -(2**24) - 1, 100], src)
    # in-range values only: float -> int of NaN/Inf/out-of-range is undefined
    return np.array([0.0, -0.0, 1.5, -1.5, 2.7, -2.7, 1e6 + 0.5, 0.1, 3.0e-8, 16777217.0], src)


@pytest.mark.parametrize("dst", DTYPES, ids=dtid)
@pytest.mark.parametrize("src", DTYPES, ids=dtid)
def test_astype(src, dst):
    check(lambda x: x.astype(dst), _astype_source(src))


def test_astype_float_nan_inf_to_bool():
    check(lambda x: (x.astype(bool), x.astype(np.float32)), np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1e300]))


def test_astype_same_dtype_copies():
    check(lambda x: x.astype(x.dtype), make(F32))


def test_astype_copy_false_returns_self():
    check(lambda x: x.astype(np.float32, copy=False), make(F32))


def test_astype_copy_false_other_dtype():
    check(lambda x: x.astype(np.float64, copy=False), make(F32))


def test_astype_on_view_and_expression():
    check(lambda x: ((x[:, ::2] * 3).astype(np.int32), x.T.astype(bool)), make(F64, seed=47))


# ---------------------------------------------------------------------------------------------
# Creation inside the function
# ---------------------------------------------------------------------------------------------
CREATE = {
    "zeros_f64": lambda x: np.zeros((3, 4)),
    "zeros_int_shape": lambda x: np.zeros(5, dtype=np.int32),
    "zeros_zero_size": lambda x: np.zeros((2, 0)),
    "zeros_0d": lambda x: np.zeros(()),
    "zeros_from_arg_shape": lambda x: np.zeros(x.shape, dtype=x.dtype),
    "ones_bool": lambda x: np.ones((2, 3), dtype=bool),
    "ones_plus_arg": lambda x: np.ones((3, 4), np.float32) + x,
    "full_int": lambda x: np.full((2, 3), 7),
    "full_float": lambda x: np.full(4, 1.5),
    "full_bool": lambda x: np.full((2, 2), True),
    "full_cast": lambda x: np.full((2, 3), 2.7, dtype=np.int32),
    "full_nan": lambda x: np.full((3,), np.nan, dtype=np.float32),
    "full_array_fill": lambda x: np.full((2, 3, 4), x[0]),
    "empty_written": lambda x: _empty_written(x),
    "empty_written_parts": lambda x: _empty_written_parts(x),
    "arange_int": lambda x: np.arange(5),
    "arange_start_stop_step": lambda x: np.arange(2, 11, 3),
    "arange_negative_step": lambda x: np.arange(10, 0, -3),
    "arange_empty": lambda x: np.arange(5, 2),
    "arange_float_dtype": lambda x: np.arange(5, dtype=np.float32),
    "arange_float_step": lambda x: np.arange(0.5, 3.0, 0.5),
    "arange_float_negative_step": lambda x: np.arange(3, -2.5, -0.75),
    "arange_int_start_float_step": lambda x: np.arange(1, 4, 0.5),
    "arange_shape": lambda x: np.arange(x.shape[1]) * x,
    "arange_reshape": lambda x: np.arange(12).reshape(3, 4),
    "linspace": lambda x: np.linspace(0, 1, 5),
    "linspace_no_endpoint": lambda x: np.linspace(0, 1, 5, endpoint=False),
    "linspace_descending": lambda x: np.linspace(2, -3, 6),
    "linspace_num1": lambda x: np.linspace(3, 4, 1),
    "linspace_num0": lambda x: np.linspace(3, 4, 0),
    "linspace_f32": lambda x: np.linspace(-1, 1, 7, dtype=np.float32),
    "linspace_int_floors": lambda x: np.linspace(-5, 5, 7, dtype=np.int64),
    "eye": lambda x: np.eye(3),
    "eye_M": lambda x: np.eye(3, 4),
    "eye_k": lambda x: np.eye(4, k=1),
    "eye_M_negk": lambda x: np.eye(3, 5, k=-1),
    "eye_int": lambda x: np.eye(3, dtype=np.int32),
    "eye_k_out_of_range": lambda x: np.eye(3, k=5),
    "zeros_like": lambda x: np.zeros_like(x),
    "zeros_like_dtype": lambda x: np.zeros_like(x, dtype=np.int32),
    "ones_like": lambda x: np.ones_like(x),
    "ones_like_bool": lambda x: np.ones_like(x, dtype=bool),
    "full_like_cast": lambda x: np.full_like(x.astype(np.int32), 2.7),
    "full_like_dtype": lambda x: np.full_like(x, 1.5, dtype=np.float32),
    "full_like_nan": lambda x: np.full_like(x, np.nan),
    "empty_like_written": lambda x: _empty_like_written(x),
    "zeros_like_view": lambda x: np.zeros_like(x[:, ::2].T),
}


def _empty_written(x):
    y = np.empty((3, 4))
    y[...] = x * 2
    return y


def _empty_written_parts(x):
    y = np.empty((3, 4), dtype=np.int32)
    y[:, :2] = 1
    y[:, 2:] = x[:, 2:]
    return y


def _empty_like_written(x):
    y = np.empty_like(x, dtype=np.float32)
    y[0] = -1
    y[1:] = x[1:] + 0.5
    return y


FLOAT_CREATE_TOL = {"linspace", "linspace_no_endpoint", "linspace_descending", "linspace_f32",
                    "arange_float_step", "arange_float_negative_step", "arange_int_start_float_step"}


@pytest.mark.parametrize("name", list(CREATE))
def test_creation(name):
    # linspace/float arange: NumPy computes start + i*step (linspace: and sets the end point to stop);
    # allow a few ulps in case of contraction into fma.
    tol = {"rtol": 1e-6 if name == "linspace_f32" else 1e-15} if name in FLOAT_CREATE_TOL else {}
    check(CREATE[name], make(F64, (3, 4), seed=50), **tol)


def test_arange_float_tenth_step():
    check(lambda: (np.arange(0, 1, 0.1), np.arange(0.1, 1, 0.3)), rtol=1e-15)


def test_creation_no_args():
    check(lambda: (np.zeros(3), np.ones((2, 2), np.int64), np.eye(2), np.arange(4.0)))


@pytest.mark.parametrize("arg", ["fortran", "zero_d", "zero_size", "int32"])
def test_like_functions_on_layouts(arg):
    x = {"fortran": np.asfortranarray(make(F32, (3, 4))), "zero_d": np.array(2.5),
         "zero_size": np.zeros((0, 3)), "int32": make(I32, (2, 3))}[arg]
    check(lambda x: (np.zeros_like(x), np.ones_like(x), np.full_like(x, 3), np.full_like(x, -1, dtype=np.int64)), x)


def test_full_runtime_fill_value():
    check(lambda x, v: np.full((2, 3), v) + x[0, 0], make(F64), 2.5)


# ---------------------------------------------------------------------------------------------
# Joins, tiling, repeats, copies
# ---------------------------------------------------------------------------------------------
JOINS = {
    "stack0": lambda a, b: np.stack([a, b]),
    "stack1": lambda a, b: np.stack([a, b], axis=1),
    "stack2": lambda a, b: np.stack((a, b, a), axis=2),
    "stack-1": lambda a, b: np.stack([a, b], axis=-1),
    "stack-3": lambda a, b: np.stack([a, b], axis=-3),
    "stack_mixed_dtypes": lambda a, b: np.stack([a, b.astype(np.int32)]),
    "stack_views": lambda a, b: np.stack([a[:, 0], b[:, -1], a[::-1, 1]], axis=-1),
    "concat0": lambda a, b: np.concatenate([a, b]),
    "concat1": lambda a, b: np.concatenate([a, b], axis=1),
    "concat-1": lambda a, b: np.concatenate((a, b[:, :1]), axis=-1),
    "concat_none": lambda a, b: np.concatenate([a, b.T], axis=None),
    "concat_mixed_dtypes": lambda a, b: np.concatenate([a.astype(np.int32), b.astype(bool)]),
    "concat_zero_size": lambda a, b: np.concatenate([a[:0], b, a[:, :0].T.reshape(0, 4)]),
    "concat_single": lambda a, b: np.concatenate([a]),
    "hstack_2d": lambda a, b: np.hstack([a, b]),
    "hstack_1d": lambda a, b: np.hstack([a[0], b[1], a[2, :1]]),
    "vstack_2d": lambda a, b: np.vstack([a, b]),
    "vstack_1d": lambda a, b: np.vstack([a[0], b[1]]),
    "vstack_mixed": lambda a, b: np.vstack([a, b[0]]),
    "meshgrid_xy": lambda a, b: np.meshgrid(a[0], b[:, 0]),
    "meshgrid_ij": lambda a, b: np.meshgrid(a[0], b[:, 0], indexing="ij"),
    "meshgrid_3": lambda a, b: np.meshgrid(a[0, :2], b[:, 0], a[1], indexing="ij"),
    "meshgrid_3_xy": lambda a, b: np.meshgrid(a[0, :2], b[:, 0], a[1]),
    "meshgrid_sparse": lambda a, b: np.meshgrid(a[0], b[:, 0], sparse=True),
    "tile_int": lambda a, b: np.tile(a, 2),
    "tile_tuple": lambda a, b: np.tile(a, (2, 1)),
    "tile_more_dims": lambda a, b: np.tile(a[0], (2, 1, 3)),
    "tile_0d": lambda a, b: np.tile(a[0, 0], 3),
    "repeat_none": lambda a, b: np.repeat(a, 2),
    "repeat_axis0": lambda a, b: np.repeat(a, 3, axis=0),
    "repeat_axis-1": lambda a, b: a.repeat(2, axis=-1),
    "repeat_list": lambda a, b: np.repeat(a, [1, 0, 2], axis=0),
    "repeat_zero": lambda a, b: np.repeat(a, 0, axis=1),
    "np.copy": lambda a, b: np.copy(a),
    "method_copy": lambda a, b: a.copy(),
    "copy_of_view": lambda a, b: a[::-1, 1::2].copy(),
    "copy_transposed": lambda a, b: np.copy(b.T),
    # lists of traced arrays nested in the list (second.pytorch's rotation matrices), which
    # NumPy's dispatchers do not look into
    "stack_nested": lambda a, b: np.stack([[a[0], -a[1]], [a[1], a[0]]]),
    "stack_nested_axis": lambda a, b: np.stack(([a[0], b[1]], (a[1], b[0])), axis=-1),
    "concatenate_nested": lambda a, b: np.concatenate(([a[0], a[1]], [b[0], b[2]])),
    "vstack_nested": lambda a, b: np.vstack([[a[0, 0], b[0, 1]], [a[1, 1], b[2, 2]]]),
    "hstack_nested": lambda a, b: np.hstack(([a[0], a[1]], [b[0], b[1]])),
    "dstack_nested": lambda a, b: np.dstack([[a[0], a[1]], [b[0], b[1]]]),
    "column_stack_nested": lambda a, b: np.column_stack([[a[0], a[1]], [b[0], b[1]]]),
}


@pytest.mark.parametrize("name", list(JOINS))
def test_joins(name):
    check(JOINS[name], make(F64, (3, 4), seed=60), make(F32, (3, 4), seed=61))


@pytest.mark.parametrize("arg", ["fortran", "zero_d", "zero_size", "negative_stride"])
def test_copy_layouts(arg):
    base = make(I64, (4, 5), seed=62)
    x = {"fortran": np.asfortranarray(base), "zero_d": np.array(7), "zero_size": base[:, :0],
         "negative_stride": base[::-2, ::-1]}[arg]
    check(lambda x: (x.copy(), np.copy(x)), x)


def test_meshgrid_copy_false_shares_memory():
    check(lambda a, b: np.meshgrid(a, b, copy=False), make(I32, (3,), seed=63), make(F32, (4,), seed=64))


@pytest.mark.parametrize("case", [
    ("stack_axis_out_of_range", lambda a: np.stack([a, a], axis=3), ValueError),
    ("concat_shape_mismatch", lambda a: np.concatenate([a, a[:, :2]]), ValueError),
    ("stack_shape_mismatch", lambda a: np.stack([a, a[:2]]), ValueError),
], ids=lambda c: c[0])
def test_join_errors(case):
    check_raises(case[1], make(F64, (3, 4)), exc=case[2])


# ---------------------------------------------------------------------------------------------
# Reductions
# ---------------------------------------------------------------------------------------------
def _sum(x, axis=None, keepdims=False):
    return np.sum(x, axis=axis, keepdims=keepdims)


def _prod(x, axis=None, keepdims=False):
    return np.prod(x, axis=axis, keepdims=keepdims)


def _mean(x, axis=None, keepdims=False):
    return np.mean(x, axis=axis, keepdims=keepdims)


def _max(x, axis=None, keepdims=False):
    return np.max(x, axis=axis, keepdims=keepdims)


def _min(x, axis=None, keepdims=False):
    return np.min(x, axis=axis, keepdims=keepdims)


def _argmax(x, axis=None, keepdims=False):
    return np.argmax(x, axis=axis, keepdims=keepdims)


def _argmin(x, axis=None, keepdims=False):
    return np.argmin(x, axis=axis, keepdims=keepdims)


def _any(x, axis=None, keepdims=False):
    return np.any(x, axis=axis, keepdims=keepdims)


def _all(x, axis=None, keepdims=False):
    return np.all(x, axis=axis, keepdims=keepdims)


REDUCE = {"sum": _sum, "prod": _prod, "mean": _mean, "max": _max, "min": _min, "argmax": _argmax,
          "argmin": _argmin, "any": _any, "all": _all}
STATIC = ("axis", "keepdims")


def _reduce_tol(op, x):
    if op in ("sum", "prod", "mean"):
        with np.errstate(all="ignore"):
            dt = np.asarray(REDUCE[op](x)).dtype
        if dt.kind == "f":
            return {"rtol": REDUCE_RTOL[dt]}
    return {}


def _reduce_data(dt, shape, seed):
    if dt is BOOL:
        return make(BOOL, shape, seed)
    # small magnitudes keep prod within range; include zeros for any/all
    return make(dt, shape, seed, lo=-2, hi=3)


@pytest.mark.parametrize("dt", DTYPES, ids=dtid)
@pytest.mark.parametrize("op", list(REDUCE))
def test_reduce_all_axes(op, dt):
    # axis=None gives a NumPy scalar; sum/prod of bool/int32 -> int64, mean of int -> float64.
    x = _reduce_data(dt, (3, 5), seed=70)
    check(REDUCE[op], x, **_reduce_tol(op, x))


AXIS_CONFIGS = [(0, False), (1, False), (-1, False), ((0, 2), False), ((-1, 0), False), ((), False),
                (None, True), (1, True), ((0, 2), True)]


@pytest.mark.parametrize("axis_keepdims", AXIS_CONFIGS, ids=lambda c: f"axis={c[0]}{'-keepdims' if c[1] else ''}".replace(" ", ""))
@pytest.mark.parametrize("op", list(REDUCE))
def test_reduce_axis_f64(op, axis_keepdims):
    axis, keepdims = axis_keepdims
    x = _reduce_data(F64, (3, 4, 5), seed=71)
    check_numpy(REDUCE[op], x, axis=axis, keepdims=keepdims, static_argnames=STATIC, **_reduce_tol(op, x))


@pytest.mark.parametrize("dt", [BOOL, I32, F32], ids=dtid)
@pytest.mark.parametrize("op", list(REDUCE))
def test_reduce_axis_other_dtypes(op, dt):
    x = _reduce_data(dt, (4, 6), seed=72)
    check(REDUCE[op], x, axis=1, static_argnames=STATIC, **_reduce_tol(op, x))


def test_reduce_int32_sum_promotes_to_int64():
    info = np.iinfo(I32)
    x = np.array([info.max, info.max, info.max, info.min + 1], I32)
    check(lambda x: (x.sum(), np.sum(x, axis=0), x.prod(), np.mean(x), np.sum(x, dtype=np.int32)), x, rtol=1e-15)


@pytest.mark.parametrize("case", [
    ("sum", lambda x: x.sum()),
    ("sum_axis", lambda x: x.sum(axis=0)),
    ("sum_keepdims", lambda x: x.sum(1, keepdims=True)),
    ("max", lambda x: x.max()),
    ("max_axis", lambda x: x.max(axis=-1)),
    ("min", lambda x: x.min(0)),
    ("mean", lambda x: x.mean(axis=(0, 1))),
    ("prod", lambda x: x.prod(axis=1)),
    ("argmax", lambda x: x.argmax()),
    ("argmin_axis", lambda x: x.argmin(axis=1)),
    ("any", lambda x: (x > 1).any()),
    ("all_axis", lambda x: (x > -3).all(axis=0)),
    ("chained", lambda x: (x - x.mean(axis=1, keepdims=True)) / x.max()),
], ids=lambda c: c[0])
def test_reduce_methods(case):
    check(case[1], make(F64, (4, 5), seed=73), rtol=1e-12)


@pytest.mark.parametrize("axis", [None, 0, 1], ids=str)
@pytest.mark.parametrize("op", ["max", "min", "argmax", "argmin", "sum", "mean"])
def test_reduce_nan_propagation(op, axis):
    x = make(F32, (3, 4), seed=74)
    x[1, 2] = np.nan
    x[2, 0] = np.nan
    x[0, 3] = np.inf
    check(REDUCE[op], x, axis=axis, static_argnames=STATIC)


@pytest.mark.parametrize("sign", [1, -1], ids=["nan", "negative_nan"])
@pytest.mark.parametrize("op", ["max", "min", "argmax", "argmin"])
def test_reduce_nan_of_either_sign_in_a_row_and_a_column(op, sign):
    # a row's extreme finds NaNs as keys past either infinity: a NaN with its sign bit set lies
    # past -inf, which a max's own fold never reaches; the strided column folds in several chains
    x = make(F32, (40, 5), seed=75)
    x[23, 1] = x[17, 3] = np.copysign(np.nan, sign)
    x[30, 1] = x[3, 3] = np.inf if op in ("max", "argmax") else -np.inf
    check(lambda x: (REDUCE[op](x[:, 1]), REDUCE[op](x[3:, 3]), REDUCE[op](x[::-1, 1] * 2),
                     REDUCE[op](x, axis=1), REDUCE[op](x[:, 1::2], axis=0)), x)


@pytest.mark.parametrize("op", ["sum", "prod", "mean", "any", "all"])
def test_reduce_zero_size_identity(op):
    # mean of an empty array is nan (with a RuntimeWarning in NumPy)
    check(lambda x: (REDUCE[op](x), REDUCE[op](x, axis=0), REDUCE[op](x, axis=1)), np.zeros((0, 3)))


@pytest.mark.parametrize("op", ["max", "min", "argmax", "argmin"])
def test_reduce_zero_size_no_identity_raises(op):
    check_raises(REDUCE[op], np.zeros((0, 3)), exc=ValueError)
    check_raises(REDUCE[op], np.zeros((0, 3)), axis=0, static_argnames=STATIC, exc=ValueError)


def test_reduce_zero_size_nonreduced_axis():
    check(lambda x: (np.max(x, axis=1), np.argmin(x, axis=1)), np.zeros((0, 3)))


@pytest.mark.parametrize("op", list(REDUCE))
def test_reduce_zero_d(op):
    check(REDUCE[op], np.array(1.5))


@pytest.mark.parametrize("dtype", [F32, F64])
def test_float_products_are_numpys_bit_for_bit(dtype):
    # NumPy multiplies in order in the dtype (no pairwise or lanes, as its sums have)
    x = np.linspace(0.5, 1.7, 64, dtype=dtype)
    check(lambda x: (x.prod(), np.multiply.reduce(x), x.reshape(8, 8).prod(), x.reshape(8, 8).prod(axis=1),
                     x.reshape(8, 8).prod(axis=0), np.prod(x.astype(F32), dtype=F64), x[::-3].prod()), x)


@pytest.mark.parametrize("x", [np.array(1.5, F32), np.array(True)], ids=["float32", "bool"])
def test_extremes_of_0d_along_an_int_axis(x):
    # NumPy takes a 0-d array as one element along axis 0 or -1 here (not for sum, nor a tuple)
    check(lambda x: (np.argmax(x, axis=0), x.argmin(-1, keepdims=True), np.max(x, axis=0), x.min(-1, keepdims=True)), x)
    check_raises(lambda x: np.argmax(x, axis=1), x, exc=np.exceptions.AxisError)
    check_raises(lambda x: np.max(x, axis=(0,)), x, exc=np.exceptions.AxisError)


def test_reduce_argmax_tuple_axis_raises():
    check_raises(_argmax, make(F64, (3, 4)), axis=(0, 1), static_argnames=STATIC, exc=TypeError)


@pytest.mark.parametrize("case", [
    ("non_contiguous", lambda x: x[:, ::2].sum(axis=0)),
    ("negative_stride", lambda x: x[::-1].max(axis=1)),
    ("transposed_argmax", lambda x: x.T.argmax(axis=1)),
    ("broadcast", lambda x: np.broadcast_to(x[0], (3, 5)).sum(axis=0)),
], ids=lambda c: c[0])
def test_reduce_on_views(case):
    check(case[1], make(F64, (4, 5), seed=75), rtol=1e-12)
