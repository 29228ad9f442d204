"""The fuzzer's fixed-seed slice for CI: 1200 programs, the same on every run and other than the
property test's (derandomize seeds from the test's name and source)."""
from hypothesis import HealthCheck, assume, given, settings

from fuzz.generator import programs
from fuzz.programs import check_case, runs_in_numpy


@settings(max_examples=1200, derandomize=True, database=None, deadline=None, print_blob=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_fuzz_slice(case):
    assume(runs_in_numpy(case))
    check_case(case)
