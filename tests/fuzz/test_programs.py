"""The program model's own machinery: JSON round trips and the shrinking candidates."""
import json

import numpy as np
from hypothesis import HealthCheck, assume, given, settings

from fuzz.generator import programs
from fuzz.programs import Case, _branch, _chase, _cut, _select, runs_in_numpy


@settings(max_examples=50, derandomize=True, database=None, deadline=None)
@given(programs())
def test_json_round_trip(case):
    again = Case.from_json(json.loads(json.dumps(case.to_json())))
    assert again.to_json() == case.to_json()
    assert repr(again) == repr(case)


def test_smaller_renumbers_what_follows():
    specs = [("root", (4,), "int64", 0, (slice(None, None, -1),)), ("root", (4,), "int64", 1, None)]
    steps = [
        ("view", "index", 1, (slice(1, None),)),  # v2, read by nothing
        ("expr", ("bin", "+", ("env", 0), ("const", 1))),  # v3
        ("setitem", 3, (0,), ("const", 5)),
        ("reduce", "sum", 3, None, False),  # v4
    ]
    case = Case(specs, steps, (4, 3), False, 2)  # a1 is read by v2: it cannot go before v2 does
    got = {repr(c) for c in case.smaller()}
    expected = [Case(specs, steps, r, False, 2) for r in [(3,), (4,), 4, 3]] + [
        Case(specs, steps, (4, 3), False, 1),
        Case(specs, [steps[1], ("setitem", 2, (0,), ("const", 5)), ("reduce", "sum", 2, None, False)],
             (3, 2), False, 2),
        Case(specs, steps[:2] + steps[3:], (4, 3), False, 2),
        Case([specs[0][:-1] + (None,), specs[1]], steps, (4, 3), False, 2),
    ]
    assert got == {repr(c) for c in expected}


def test_smaller_drops_an_unused_argument():
    specs = [("root", (3,), "int32", 0, None), ("root", (3,), "int32", 1, None), ("alias", 1, None)]
    case = Case(specs, [("aug", 2, None, "+", ("env", 1))], None, False, 1)
    dropped = Case(specs[1:2] + [("alias", 0, None)], [("aug", 1, None, "+", ("env", 0))], None, False, 1)
    assert repr(dropped) in {repr(c) for c in case.smaller()}


@settings(max_examples=100, derandomize=True, database=None, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_rendering_runs_as_interpreted(case):
    """The Python a case renders as computes what the interpreter does (every step kind's form)."""
    assume(runs_in_numpy(case))
    ns = {"np": np, "rng": np.random.default_rng, "_chase": _chase, "_branch": _branch, "_select": _select,
          "_cut": _cut}  # helpers
    with np.errstate(all="ignore"):
        exec(repr(case), ns)
        expected = ns["program"](*(ns[f"a{i}"] for i in range(case.nargs)))
        got = case.fn(*case.args())
    for e, g in zip(expected if isinstance(case.ret, tuple) else [expected],
                    got if isinstance(case.ret, tuple) else [got]):
        np.testing.assert_array_equal(e, g)
        assert np.asarray(e).dtype == np.asarray(g).dtype
