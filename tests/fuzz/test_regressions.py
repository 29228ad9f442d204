"""Every saved regression case (tests/fuzz/regressions/*.json), replayed against NumPy.

The fuzzer (run.py) saves each mismatch it finds there, shrunk; a few hand-written cases carry a
"why" note instead of an "error": programs where NumPy's answer is easy to miss.
"""
import glob
import os

import pytest

from fuzz.programs import check_case, load_regression

_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "regressions")


@pytest.mark.parametrize("name", sorted(os.path.basename(p) for p in glob.glob(os.path.join(_DIR, "*.json"))))
def test_regression(name):
    check_case(load_regression(os.path.join(_DIR, name)))

