import atexit
import os
import shutil
import sys
import tempfile

import pytest

# The harness (tests/differential.py) and the detection-head workloads (benchmarks/heads.py) are
# imported by tests across folders.
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [_here, os.path.join(os.path.dirname(_here), "benchmarks")]

# Calls that cannot be compiled raise instead of running in NumPy (test_graph_breaks.py tests
# that), so no test passes by falling back unseen.
os.environ.setdefault("STRIDER_STRICT", "1")

# The suite's compiled kernels go to a cache of its own, not the user's (~/.cache/strider), gone
# when the session ends (the subprocesses tests start share it and end first).
if "STRIDER_CACHE_DIR" not in os.environ:
    os.environ["STRIDER_CACHE_DIR"] = tempfile.mkdtemp(prefix="strider-test-cache-")
    atexit.register(shutil.rmtree, os.environ["STRIDER_CACHE_DIR"], ignore_errors=True)


@pytest.hookimpl(trylast=True)  # after -k and -m have deselected
def pytest_collection_modifyitems(config, items):
    """STRIDER_TEST_SLICE=k/n keeps every n-th test from the k-th (a suite's share of CI's time:
    test_cuda_device.py's runs on the emulated device). A test marked background(start) has
    start(item) begin its work now and runs last, waiting for it: the emulated device's suites,
    single-threaded subprocesses, so run beside the rest of the session on the cores it leaves
    idle."""
    if os.environ.get("STRIDER_TEST_SLICE"):
        k, n = map(int, os.environ["STRIDER_TEST_SLICE"].split("/"))
        config.hook.pytest_deselected(items=[item for i, item in enumerate(items) if i % n != k])
        items[:] = items[k::n]
    late = [item for item in items if item.get_closest_marker("background")]
    items[:] = [item for item in items if not item.get_closest_marker("background")] + late
    for item in [] if config.option.collectonly else late:
        item.get_closest_marker("background").args[0](item)
