"""Differential fuzzing for as long as asked, in parallel.

    python3 tests/fuzz/run.py --minutes 60 --jobs 2 [--seed N] [--save-dir DIR]

Each worker process runs hypothesis over the program generator (generator.py) in batches, each
batch with a seed of its own; every program runs in NumPy and through strider (JIT and reference
executor, differential.check). Hypothesis shrinks a mismatch, a greedy pass drops what steps and
arguments it can, and the program is saved as <save-dir>/<digest>.json (default
tests/fuzz/regressions, replayed by test_regressions.py), one per kind of error. A program that
crashes or hangs its worker is saved as it was. Exits 1 when any mismatch was found.
"""
import argparse
import json
import multiprocessing
import os
import queue
import re
import shutil
import sys
import tempfile
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(_HERE)]  # tests/, for the harness and the fuzz package

from hypothesis import HealthCheck, Verbosity, assume, given, settings  # noqa: E402
from hypothesis import seed as with_seed  # noqa: E402
from hypothesis.control import current_build_context  # noqa: E402

from fuzz.generator import programs, simulate  # noqa: E402
from fuzz.programs import Case, check_case, runs_in_numpy, save_regression  # noqa: E402

BATCH = 300  # programs per hypothesis run (~10 s): a worker looks at the clock between runs
PROGRESS_S = 60  # seconds between progress lines
WORKER_MINUTES = 10  # a worker is replaced after this long, so no leak grows for the whole run
HANG_S = 600  # a worker silent for this long is stuck in a program: it is killed and the program saved


def _batch(seed, inflight):
    """One hypothesis run; returns (programs checked, [(case as JSON, error)]). Each program is
    written to `inflight` before it runs, so a crash or a hang does not lose it."""
    count, final, last = [0], [], []

    @settings(max_examples=BATCH, database=None, derandomize=False, deadline=None,
              suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet)
    @with_seed(seed)
    @given(programs())
    def fuzz(case):
        assume(runs_in_numpy(case))
        count[0] += 1
        with open(inflight, "w") as f:
            json.dump(case.to_json(), f)
        try:
            check_case(case)
        except Exception as e:
            last[:] = [(case, f"{type(e).__name__}: {e}")]
            # after shrinking, hypothesis replays each distinct failure once, marked final
            if current_build_context().is_final:
                final.append(last[0])
            raise

    try:
        fuzz()
    except Exception as e:
        if not final and last:  # the failure did not happen again: keep the last program it hit
            case, error = last[0]
            final.append((case, f"not reproducible ({type(e).__name__}); it was {error}"))
    return count[0], [(case.to_json(), error) for case, error in map(_minimize, final)]


def _minimize(failure):
    """Shrink further than hypothesis can (it cannot drop a step whose draws later steps depend
    on): take any simpler case that fails with the same kind of error, until none does."""
    case, error = failure
    kind = _error_kind(error)
    smaller = True
    while smaller:
        smaller = False
        for candidate in case.smaller():
            e = _failure(candidate)
            if e is not None and _error_kind(e) == kind:
                case, error, smaller = candidate, e, True
                break
    return case, error


def _failure(case):
    """The error strider makes on a valid case (as the generator would accept it), else None."""
    try:
        simulate(case.specs, case.steps)
    except Exception:
        return None
    if not runs_in_numpy(case):
        return None
    try:
        check_case(case)
    except Exception as e:
        return f"{type(e).__name__}: {e}"
    return None


def _error_kind(error):
    """The first line of the message without its numbers: one bug found twice reads the same."""
    return re.sub(r"-?\d[\d.e+-]*", "#", error.splitlines()[0])


def _worker(index, seed, stop_at, inflight, reports):
    batch, until = 0, min(stop_at, time.time() + 60 * WORKER_MINUTES)
    while time.time() < until:
        n, failures = _batch(seed * 1_000_003 + batch, inflight)
        reports.put((index, n, failures))
        batch += 1
    reports.put((index, None, []))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=5.0)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--seed", type=int, default=None, help="default: from the clock")
    ap.add_argument("--save-dir", default=os.path.join(_HERE, "regressions"))
    opts = ap.parse_args()
    seed = opts.seed if opts.seed is not None else int(time.time())
    start = time.time()
    stop_at = start + 60 * opts.minutes
    # the compiled kernels of thousands of throwaway programs go to a cache of the run's own
    cache = tempfile.mkdtemp(prefix="strider-fuzz-cache-")
    os.environ["STRIDER_CACHE_DIR"] = cache
    print(f"fuzzing for {opts.minutes:g} min with {opts.jobs} workers, seed {seed}", flush=True)

    ctx = multiprocessing.get_context("spawn")
    reports = ctx.Queue()
    workers, heard, generation = {}, {}, 0
    total, mismatches, last_progress = 0, 0, 0.0
    saved = {}  # kind of error -> path of the shortest program saved for it

    def save(case, error):
        """Save the case unless this run saved a program as short for the same kind of error:
        one bug found by many seeds is saved once."""
        nonlocal mismatches
        mismatches += 1
        kind = _error_kind(error)
        path = saved.get(kind)
        if path is not None:
            with open(path) as f:
                if len(json.load(f)["case"]["steps"]) <= len(case.steps):
                    name = os.path.basename(path)
                    print(f"MISMATCH (one more of {name}): {error.splitlines()[0]}", flush=True)
                    return
            os.remove(path)
        saved[kind] = save_regression(case, opts.save_dir, error=error)
        print(f"MISMATCH saved to {saved[kind]}\n  {error}", flush=True)

    def inflight(index):
        return os.path.join(cache, f"inflight-{index}.json")

    def spawn(index):
        nonlocal generation
        generation += 1  # a replacement worker draws other seeds than the one it replaces
        p = ctx.Process(target=_worker, args=(index, seed + 7919 * generation, stop_at, inflight(index),
                                              reports), daemon=True)
        p.start()
        workers[index], heard[index] = p, time.time()

    def lost(index, why):
        """A worker crashed or hung: save the program it was running (unshrunk), start another."""
        p = workers.pop(index)
        p.kill()
        p.join()
        with open(inflight(index)) as f:
            save(Case.from_json(json.load(f)), why)
        if time.time() < stop_at:
            spawn(index)

    try:
        for i in range(opts.jobs):
            spawn(i)
        while workers:
            for i, p in list(workers.items()):
                if not p.is_alive() and p.exitcode != 0:  # (0: done; its last report is still queued)
                    lost(i, f"the process died with exit code {p.exitcode}")
                elif time.time() - heard[i] > HANG_S:
                    lost(i, f"no answer for {HANG_S} s")
            try:
                index, n, failures = reports.get(timeout=5)
            except queue.Empty:
                continue
            heard[index] = time.time()
            if n is None:
                workers.pop(index).join()
                if time.time() < stop_at:
                    spawn(index)
                continue
            total += n
            elapsed = time.time() - start
            for case, error in failures:
                save(Case.from_json(case), error)
            if failures or elapsed - last_progress >= PROGRESS_S:
                last_progress = elapsed
                print(f"[{elapsed / 60:5.1f} min] {total} programs ({total / elapsed:.1f}/s), "
                      f"{mismatches} mismatches", flush=True)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
    finally:
        for p in workers.values():
            p.terminate()
        shutil.rmtree(cache, ignore_errors=True)

    elapsed = time.time() - start
    print(f"\n{total} programs in {elapsed / 60:.1f} min ({total / max(elapsed, 1e-9):.1f}/s), "
          f"{mismatches} mismatches; files saved:", flush=True)
    for path in saved.values():
        print("  " + path)
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
