"""Compile every detection head in heads.py with strider, check it against NumPy, time both.

    python3 benchmarks/demo.py [--size tiny|small|image|batch] [--dtype float32|float64|both]
                               [--heads NAME,NAME...] [--target cpu|cuda] [--budget SECONDS]
                               [--explain NAME]

One row per head (and dtype): size, max abs error over results and arguments after the call,
OK/FAIL, NumPy and strider time per call (median over repeated calls on fresh inputs), the
speed-up, the first strider call (trace + compile + run) and the compile-cache counters.
A head FAILs when a result's kind, dtype or shape differs from NumPy's, a value is outside the
head's tolerance, an argument differs after the call (in-place writes), memory sharing between
results and arguments differs, or strider raises.  Exits 1 if any head fails.
"""
import argparse
import os
import statistics
import sys
import time
import traceback

import numpy as np

_here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _here)

try:
    import strider
except ImportError:  # running from a checkout that was not pip-installed
    sys.path.insert(0, os.path.join(os.path.dirname(_here), "python"))
    import strider

from heads import HEADS, SIZES, size_config  # noqa: E402
from strider.testing import Mismatch, clone_args, compare_calls  # noqa: E402


def compare_call(head, dtype, args, kwargs, compiled):
    """Run NumPy and strider once on fresh copies; return (max abs err, strider seconds)."""
    rtol, atol = head.tolerance(dtype)
    np_args, st_args = clone_args((args, kwargs)), clone_args((args, kwargs))
    with np.errstate(all="ignore"):
        expected = head.fn(*np_args[0], **np_args[1])
        t0 = time.perf_counter()
        got = compiled(*st_args[0], **st_args[1])
        first = time.perf_counter() - t0
    return compare_calls(expected, got, np_args, st_args, rtol, atol), first


# ---------------------------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------------------------

def time_per_call(fn, args, kwargs, budget, min_reps=3, max_reps=200):
    """Median seconds per call, each call on fresh copies (in-place heads mutate inputs)."""
    times = []
    spent = 0.0
    while len(times) < min_reps or (spent < budget and len(times) < max_reps):
        a, k = clone_args((args, kwargs))
        with np.errstate(all="ignore"):
            t0 = time.perf_counter()
            fn(*a, **k)
            dt = time.perf_counter() - t0
        times.append(dt)
        spent += dt
    return statistics.median(times)


def _ms(seconds):
    if seconds is None:
        return "-"
    ms = seconds * 1e3
    return f"{ms:.3f}" if ms < 10 else f"{ms:.1f}"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", default="image", choices=sorted(SIZES))
    p.add_argument("--dtype", default="float32", choices=["float32", "float64", "both"])
    p.add_argument("--heads", default="", help="comma-separated head names (default: all)")
    p.add_argument("--target", default="cpu")
    p.add_argument("--budget", type=float, default=0.2,
                   help="seconds of timed calls per head and side (at least 3 calls)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--explain", default="", help="print strider's explain() for this head")
    opts = p.parse_args(argv)

    names = [n for n in opts.heads.split(",") if n] or list(HEADS)
    unknown = [n for n in names if n not in HEADS]
    if unknown:
        p.error(f"unknown heads {unknown}; known: {', '.join(HEADS)}")
    dtypes = ["float32", "float64"] if opts.dtype == "both" else [opts.dtype]

    cfg = size_config(opts.size)
    print(f"strider demo: size={opts.size} {cfg}, target={opts.target}, numpy {np.__version__}")
    header = (f"{'head':24s} {'size':6s} {'dtype':8s} {'max abs err':>11s} {'':4s} "
              f"{'numpy ms':>9s} {'strider ms':>10s} {'speedup':>8s} {'1st call ms':>11s} "
              f"{'compiles/hits':>13s}")
    print(header)
    print("-" * len(header))

    failures = []
    t_start = time.perf_counter()
    for name in names:
        head = HEADS[name]
        # Heads without float inputs (valid_flags) run once, in their own dtype.
        for dtype in [d for d in dtypes if d in head.dtypes] or [head.dtypes[0]]:
            label = f"{name:24s} {opts.size:6s} {dtype:8s}"
            args, kwargs = head.inputs(opts.size, dtype, seed=opts.seed)
            try:
                compiled = strider.compile(head.fn, target=opts.target,
                                           static_argnames=head.static_argnames)
                err, first = compare_call(head, dtype, args, kwargs, compiled)
            except Exception as exc:  # noqa: BLE001 - report every failure, keep going
                kind = "mismatch" if isinstance(exc, Mismatch) else type(exc).__name__
                msg = str(exc).splitlines()[0] if str(exc) else ""
                print(f"{label} {'-':>11s} FAIL  {kind}: {msg}")
                failures.append((name, dtype, exc))
                continue
            t_np = time_per_call(head.fn, args, kwargs, opts.budget)
            try:
                t_st = time_per_call(compiled, args, kwargs, opts.budget)
            except Exception as exc:  # noqa: BLE001
                print(f"{label} {err:11.3g} FAIL  later call raised {type(exc).__name__}: {exc}")
                failures.append((name, dtype, exc))
                continue
            stats = compiled.stats() if callable(getattr(compiled, "stats", None)) else None
            cache = f"{stats.get('compiles', '?')}/{stats.get('cache_hits', '?')}" if stats else "-"
            speedup = f"{t_np / t_st:.2f}x" if t_st > 0 else "-"
            print(f"{label} {err:11.3g} OK   {_ms(t_np):>9s} {_ms(t_st):>10s} {speedup:>8s} "
                  f"{_ms(first):>11s} {cache:>13s}")
            if opts.explain == name:
                try:
                    print(compiled.explain(*args, **kwargs))
                except Exception as exc:  # noqa: BLE001
                    print(f"  explain() raised {type(exc).__name__}: {exc}")
    print("-" * len(header))
    total = time.perf_counter() - t_start
    print(f"{len(failures)} failed; {total:.1f} s")
    for name, dtype, exc in failures:
        print(f"\n{name} [{dtype}]:")
        if isinstance(exc, Mismatch):
            print(f"  {exc}")
        else:
            print("  " + "".join(traceback.format_exception(exc)).replace("\n", "\n  ").rstrip())
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
