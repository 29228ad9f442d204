"""Random chains of views, elementwise ops, in-place writes and reductions, strider vs NumPy.

The programs come from the fuzzer's generator (tests/fuzz): this is its fixed-seed slice of 150
examples (the "ci" profile of conftest.py), or as many new ones as HYPOTHESIS_PROFILE=dev asks.
"""
import numpy as np
from hypothesis import assume, given

from fuzz.generator import programs
from fuzz.programs import Case, check_case, runs_in_numpy


@given(programs())
def test_view_chains(case):
    assume(runs_in_numpy(case))
    check_case(case)


def test_interpreter_matches_rendering():
    """The rendered source of a hand-written program runs to the same result as the interpreter."""
    specs = [("root", (4, 3), "int64", 0, None), ("alias", 0, (slice(1, None),))]
    steps = [
        ("view", "index", 0, (slice(None, None, -1), None, Ellipsis)),  # v2
        ("setitem", 0, (slice(1, None),), ("bin", "+", ("sub", 0, (slice(None, -1),)), ("const", 1))),
        ("aug", 1, (slice(None, None, -1),), "+", ("env", 1)),
        ("reduce", "sum", 2, 0, False),  # v3
    ]
    case = Case(specs, steps, (3, 2), False, 1)
    src = repr(case)
    ns = {"np": np, "rng": np.random.default_rng}
    exec(src, ns)
    expected = ns["program"](ns["a0"], ns["a1"])
    got = case.fn(*case.args())
    for e, g in zip(expected, got):
        np.testing.assert_array_equal(e, g)
    a = np.random.default_rng(0).integers(-3, 4, (4, 3))
    a[1:] = a[:-1] + 1
    a[1:][::-1] += a[1:].copy()
    np.testing.assert_array_equal(got[1], a[::-1, None])
