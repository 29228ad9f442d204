import os
import sys

# The harness (tests/differential.py) and the detection-head workloads (benchmarks/heads.py) are
# imported by tests across folders.
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [_here, os.path.join(os.path.dirname(_here), "benchmarks")]
