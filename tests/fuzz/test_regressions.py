"""Every saved regression case (tests/fuzz/regressions/*.json), replayed against NumPy.

The fuzzer (run.py) saves each mismatch it finds there, shrunk; a few hand-written cases carry a
"why" note instead of an "error": programs where NumPy's answer is easy to miss.
"""
import glob
import json
import os

import pytest
from hypothesis import given, settings

from fuzz.generator import programs
from fuzz.programs import Case, check_case, load_regression

_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "regressions")


@pytest.mark.parametrize("name", sorted(os.path.basename(p) for p in glob.glob(os.path.join(_DIR, "*.json"))))
def test_regression(name):
    check_case(load_regression(os.path.join(_DIR, name)))


@settings(max_examples=50, derandomize=True, database=None, deadline=None)
@given(programs())
def test_json_round_trip(case):
    again = Case.from_json(json.loads(json.dumps(case.to_json())))
    assert again.to_json() == case.to_json()
    assert repr(again) == repr(case)
