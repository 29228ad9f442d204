"""How close the YOLOv5 prologue runs to the memory traffic it cannot avoid.

    python3 benchmarks/memory_floor.py [--sizes image,batch] [--calls 400] [--out PATH]

The prologue (heads.yolov5_prologue) must read every row's confidence, one float of each
85-float row (a cache line a row), and every line of the rows it keeps. The floor is a C loop
that does only that (the kept rows summed, so nothing is optimized away), compiled here with the
system's C compiler at -O2 -march=native, once on one thread and once under OpenMP on every core
(whose threads spin between calls for as long as GOMP_SPINCOUNT says, where strider's pool spins
50 us). The confidence column is prefetched 16 KB ahead, as strider's compaction does. Each call
of NumPy, strider and both floors gets a fresh copy of the input, in rotated order, as
benchmarks/run.py times heads, after a check that strider's result is NumPy's; the medians and
NumPy's time over each are printed (and saved as JSON with --out). NumPy over a floor bounds what any implementation reaches with that many
threads.
"""
import argparse
import ctypes
import json
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time

import numpy as np

_here = os.path.dirname(os.path.abspath(__file__))
if _here not in sys.path:
    sys.path.insert(0, _here)

import strider  # noqa: E402
from heads import HEADS  # noqa: E402
from strider.testing import clone_args, compare, leaves  # noqa: E402

_SOURCE = r"""
#include <stdint.h>
float yolov5_floor(const float* p, int64_t rows, int64_t width, float thr) {
  float acc = 0;
  #pragma omp parallel for reduction(+:acc) schedule(static)
  for (int64_t i = 0; i < rows; ++i) {
    __builtin_prefetch(p + (i + 16384 / (4 * width)) * width + 4);
    const float* r = p + i * width;
    if (r[4] > thr)
      for (int64_t c = 0; c < width; ++c) acc += r[c];
  }
  return acc;
}
"""


def _build(tmp, openmp):
    src = os.path.join(tmp, "floor.c")
    with open(src, "w") as f:
        f.write(_SOURCE)
    lib = os.path.join(tmp, "floor_omp.so" if openmp else "floor.so")
    cc = sysconfig.get_config_var("CC") or "cc"
    cmd = cc.split()[:1] + ["-O2", "-march=native", "-shared", "-fPIC", src, "-o", lib] + (["-fopenmp"] if openmp else [])
    subprocess.run(cmd, check=True)
    fn = ctypes.CDLL(lib).yolov5_floor
    fn.restype = ctypes.c_float
    fn.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_float]
    return fn


def measure(size, calls, floors):
    head = HEADS["yolov5_prologue"]
    (pred,), kw = head.inputs(size)
    compiled = strider.compile(head.fn, static_argnames=head.static_argnames)
    expected, got = leaves(head.fn(clone_args(pred), **kw)), leaves(compiled(clone_args(pred), **kw))
    assert len(expected) == len(got)
    for e, g in zip(expected, got):
        compare(e, g)  # (raises Mismatch)
    rows, width = pred.shape[0] * pred.shape[1], pred.shape[2]
    thr = kw["conf_thres"]
    systems = {"numpy": lambda q: head.fn(q, **kw), "strider": lambda q: compiled(q, **kw)}
    for name, fn in floors.items():
        systems[name] = lambda q, fn=fn: fn(q.ctypes.data, rows, width, thr)
    times = {k: [] for k in systems}
    names = list(systems)
    for r in range(calls):
        for k in names[r % len(names):] + names[:r % len(names)]:
            q = clone_args(pred)
            t = time.perf_counter()
            systems[k](q)
            times[k].append(time.perf_counter() - t)
    med = {k: statistics.median(v) for k, v in times.items()}
    return {"size": size, "shape": list(pred.shape), "kept": int((pred[..., 4] > thr).sum()),
            "median_s": med, "numpy_over": {k: med["numpy"] / v for k, v in med.items()}}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="image,batch")
    ap.add_argument("--calls", type=int, default=400)
    ap.add_argument("--out")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="strider-floor-")
    try:
        floors = {"floor_1_thread": _build(tmp, False), f"floor_{os.cpu_count()}_threads": _build(tmp, True)}
        out = []
        for size in args.sizes.split(","):
            res = measure(size, args.calls, floors)
            out.append(res)
            print(f"{size} {res['shape']} ({res['kept']} rows kept): " + "  ".join(
                f"{k} {v * 1e6:.0f} us (NumPy x{res['numpy_over'][k]:.2f})" for k, v in res["median_s"].items()))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"cpus": os.cpu_count(), "numpy": np.__version__, "results": out}, f, indent=1)


if __name__ == "__main__":
    main()
