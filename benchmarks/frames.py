"""Frames of a video: each frame's boxes, a different count every frame, through one compiled
function, as a tracker's or a detector's loop calls it.

    python3 benchmarks/frames.py [--heads py_cpu_nms,...] [--frames N] [--rows LO,HI] [--seed N]
                                 [--out PATH | --no-save]

Each head of heads.py's NMS loops takes a frame's candidates: its inputs made at the image size
with the count of rows drawn for that frame (uniform in --rows; the heads' own generators, the
rest of their shape and their arguments fixed). The frames run in order through NumPy, through
strider.compile with its default (run-time rows: the count a length known only at run time once
it changes, one program up to a bound), and through strider.compile(dynamic=False) (a signature
per count: each new count traced and compiled, and after 16 traces more than its programs served,
the calls in NumPy), each system on its own fresh copies, its first frame included: what a
process that starts on a video spends. Every frame's result is checked against NumPy's.
Reported per system: the whole run, the mean frame, the frames after the first 10% (warm), the
traces made, and the speed-up over NumPy. The disk cache is off (STRIDER_CACHE=0), so that every
run starts cold. Saved as JSON (benchmarks/results/<host>-<date>-frames.json, or --out); exit
status 1 if a result differs from NumPy's.
"""
import argparse
import datetime
import json
import os
import platform
import sys
import time
import warnings

os.environ.setdefault("STRIDER_CACHE", "0")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import heads  # noqa: E402
import strider  # noqa: E402
from strider.testing import clone_args, compare_calls  # noqa: E402


def frames_of(head, rows, n, seed):
    """n frames of the head's inputs, each with a count of rows drawn from `rows` (lo, hi)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        cfg = dict(heads.SIZES["image"], R=int(rng.integers(rows[0], rows[1] + 1)))
        out.append(head.make_inputs(cfg, rng))
    return out


def run(system, fn, frames):
    """Seconds per frame of fn over the frames in order (fresh copies each), and its results."""
    times, results = [], []
    for args, kwargs in frames:
        a, k = clone_args((args, kwargs))
        t = time.perf_counter()
        results.append((fn(*a, **k), a, k))
        times.append(time.perf_counter() - t)
    return times, results


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--heads", default=",".join(heads.NMS_HEADS))
    p.add_argument("--frames", type=int, default=120)
    p.add_argument("--rows", default="600,1400", help="the least and most candidates of a frame")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out")
    p.add_argument("--no-save", action="store_true")
    opts = p.parse_args()
    rows = tuple(int(r) for r in opts.rows.split(","))
    warnings.simplefilter("ignore", strider.GraphBreakWarning)
    cases, wrong = [], 0
    print(f"{'head':26s} {'system':22s} {'total ms':>9s} {'frame ms':>9s} {'warm ms':>9s} {'traces':>6s} "
          f"{'xNumPy':>7s} {'warm xNumPy':>11s}")
    for name in opts.heads.split(","):
        head = heads.HEADS[name]
        frames = frames_of(head, rows, opts.frames, opts.seed)
        warm_from = max(1, opts.frames // 10)
        systems = {"numpy": head.fn,
                   "strider": strider.compile(head.fn, static_argnames=head.static_argnames),
                   "strider dynamic=False": strider.compile(head.fn, static_argnames=head.static_argnames,
                                                            dynamic=False)}
        measured = {}
        for system, fn in systems.items():
            with np.errstate(all="ignore"):
                times, results = run(system, fn, frames)
            measured[system] = (times, results)
        ref_times, expected = measured["numpy"]
        for system, (times, results) in measured.items():
            rtol, atol = head.tolerance(np.float32)
            for (got, a, k), (exp, ea, ek) in zip(results, expected):
                try:
                    compare_calls(exp, got, (ea, ek), (a, k), rtol, atol)
                except Exception as e:  # noqa: BLE001 - a mismatch is a result
                    wrong += 1
                    print(f"  {name} {system}: {e}")
                    break
            traces = systems[system].stats()["traces"] if system != "numpy" else 0
            rec = dict(head=name, system=system, total_s=sum(times), frame_s=sum(times) / len(times),
                       warm_s=float(np.mean(times[warm_from:])), traces=traces,
                       speedup=sum(ref_times) / sum(times),
                       warm_speedup=float(np.mean(ref_times[warm_from:]) / np.mean(times[warm_from:])))
            cases.append(rec)
            print(f"{name:26s} {system:22s} {rec['total_s'] * 1e3:9.1f} {rec['frame_s'] * 1e3:9.3f} "
                  f"{rec['warm_s'] * 1e3:9.3f} {traces:6d} {rec['speedup']:6.2f}x {rec['warm_speedup']:10.2f}x",
                  flush=True)
    if not opts.no_save:
        out = opts.out or os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                                       f"{platform.node() or 'host'}-{datetime.date.today()}-frames.json")
        with open(out, "w") as f:
            json.dump(dict(schema=1, created=datetime.datetime.now().isoformat(timespec="seconds"),
                           config=dict(vars(opts), rows=rows), numpy=np.__version__, cases=cases), f, indent=1)
        print(f"saved {out}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
