"""Imports strider from wherever it is installed, calls one compiled function on the CPU JIT and
checks it against NumPy; prints one JSON line (where strider came from, import and first-call
seconds, the function's counters). Run by test_wheel.py inside a clean root and by
`make install-check` in a fresh venv, where no source tree is on the path."""

import json
import os
import sys
import tempfile
import time

# a kernel cache of its own (removed at exit), so the stages compile here instead of loading from
# an earlier run's
cache = tempfile.TemporaryDirectory(prefix="strider-first-call-")
os.environ["STRIDER_CACHE_DIR"] = cache.name
start = time.perf_counter()
import numpy as np  # noqa: E402
import strider  # noqa: E402

imported = time.perf_counter()


def delta2bbox(rois, deltas, max_w, max_h):
    px = (rois[:, 0] + rois[:, 2]) * 0.5
    pw = rois[:, 2] - rois[:, 0]
    deltas[:, 0::4] = px[:, None] + pw[:, None] * deltas[:, 0::4]
    np.clip(deltas[:, 0::2], 0, max_w, out=deltas[:, 0::2])
    return deltas


rng = np.random.default_rng(0)
rois = rng.uniform(0, 500, (1000, 4)).astype(np.float32)
deltas = rng.normal(size=(1000, 8)).astype(np.float32)
expected = delta2bbox(rois, deltas.copy(), 1333.0, 800.0)

compiled = strider.compile(delta2bbox)
called = time.perf_counter()
got = compiled(rois, deltas, 1333.0, 800.0)
done = time.perf_counter()

stats = compiled.stats()
report = {
    "strider": strider.__file__,
    "python": sys.version.split()[0],
    "llvm_backend_available": strider._C.llvm_backend_available(),
    "import_s": round(imported - start, 3),
    "first_call_s": round(done - called, 3),
    "stats": stats,
}
print(json.dumps(report))
if not report["llvm_backend_available"] or stats["compiles"] < 1:
    sys.exit("strider did not compile a stage with the CPU JIT")
if got is not deltas or not np.array_equal(got, expected):
    sys.exit("the compiled function's result differs from NumPy's")
