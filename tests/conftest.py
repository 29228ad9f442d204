import os
import sys
import tempfile

# The harness (tests/differential.py) and the detection-head workloads (benchmarks/heads.py) are
# imported by tests across folders.
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [_here, os.path.join(os.path.dirname(_here), "benchmarks")]

# The suite's compiled kernels go to a cache of its own, not the user's (~/.cache/strider).
os.environ.setdefault("STRIDER_CACHE_DIR", tempfile.mkdtemp(prefix="strider-test-cache-"))
