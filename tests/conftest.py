import os
import sys
import tempfile

# The harness (tests/differential.py) and the detection-head workloads (benchmarks/heads.py) are
# imported by tests across folders.
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [_here, os.path.join(os.path.dirname(_here), "benchmarks")]

# Calls that cannot be compiled raise instead of running in NumPy (test_graph_breaks.py tests
# that), so no test passes by falling back unseen.
os.environ.setdefault("STRIDER_STRICT", "1")

# The suite's compiled kernels go to a cache of its own, not the user's (~/.cache/strider).
os.environ.setdefault("STRIDER_CACHE_DIR", tempfile.mkdtemp(prefix="strider-test-cache-"))
