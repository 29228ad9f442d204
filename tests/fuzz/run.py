"""Differential fuzzing for as long as asked, in parallel.

    python3 tests/fuzz/run.py --minutes 60 --jobs 2 [--seed N] [--save-dir DIR]

Each worker process runs hypothesis over the program generator (generator.py) in batches, each
batch with a seed of its own; every program runs in NumPy and through strider (JIT and reference
executor, differential.check). Hypothesis shrinks a mismatch to a minimal program, which is saved
as <save-dir>/<digest>.json (default tests/fuzz/regressions, replayed by test_regressions.py).
Exits 1 when any mismatch was found.
"""
import argparse
import multiprocessing
import os
import queue
import shutil
import sys
import tempfile
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(_HERE)]  # tests/, for the harness and the fuzz package

BATCH = 500  # programs per hypothesis run (some seconds): a worker looks at the clock between runs
PROGRESS_S = 60  # seconds between progress lines
WORKER_MINUTES = 10  # a worker is replaced after this long, so no leak grows for the whole run


def _batch(seed, save_dir):
    """One hypothesis run; returns (programs checked, [(saved path, error)])."""
    from hypothesis import HealthCheck, Verbosity, assume, given, settings
    from hypothesis import seed as with_seed
    from hypothesis.control import current_build_context

    from fuzz.generator import programs
    from fuzz.programs import check_case, runs_in_numpy, save_regression

    count, final = [0], []

    @settings(max_examples=BATCH, database=None, derandomize=False, deadline=None,
              suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet)
    @with_seed(seed)
    @given(programs())
    def fuzz(case):
        assume(runs_in_numpy(case))
        count[0] += 1
        try:
            check_case(case)
        except Exception as e:
            # after shrinking, hypothesis replays each distinct failure once, marked final
            if current_build_context().is_final:
                final.append((case, f"{type(e).__name__}: {e}"))
            raise

    try:
        fuzz()
    except Exception:
        pass
    return count[0], [(save_regression(case, save_dir, error=error), error) for case, error in final]


def _worker(index, seed, stop_at, save_dir, reports):
    batch, until = 0, min(stop_at, time.time() + 60 * WORKER_MINUTES)
    while time.time() < until:
        n, saved = _batch(seed * 1_000_003 + batch, save_dir)
        reports.put((index, n, saved))
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
    workers, generation = {}, 0
    total, found, crashes, last_progress = 0, [], 0, 0.0

    def spawn(index):
        nonlocal generation
        generation += 1  # a replacement worker draws other seeds than the one it replaces
        p = ctx.Process(target=_worker, args=(index, seed + 7919 * generation, stop_at,
                                              opts.save_dir, reports), daemon=True)
        p.start()
        workers[index] = p

    try:
        for i in range(opts.jobs):
            spawn(i)
        while workers:
            try:
                index, n, saved = reports.get(timeout=5)
            except queue.Empty:
                for i, p in list(workers.items()):
                    if not p.is_alive():  # died without saying goodbye: a crash in strider
                        crashes += 1
                        print(f"worker {i} died (exit code {p.exitcode}); its program is lost", flush=True)
                        del workers[i]
                        if time.time() < stop_at:
                            spawn(i)
                continue
            if n is None:
                workers.pop(index).join()
                if time.time() < stop_at:
                    spawn(index)
                continue
            total += n
            elapsed = time.time() - start
            for path, error in saved:
                found.append(path)
                print(f"MISMATCH saved to {path}\n  {error.splitlines()[0]}", flush=True)
            if saved or elapsed - last_progress >= PROGRESS_S:
                last_progress = elapsed
                print(f"[{elapsed / 60:5.1f} min] {total} programs ({total / elapsed:.1f}/s), "
                      f"{len(found)} mismatches", flush=True)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
    finally:
        for p in workers.values():
            p.terminate()
        shutil.rmtree(cache, ignore_errors=True)

    elapsed = time.time() - start
    print(f"\n{total} programs in {elapsed / 60:.1f} min ({total / max(elapsed, 1e-9):.1f}/s), "
          f"{len(found)} mismatches, {crashes} worker crashes; files saved:", flush=True)
    for path in found:
        print("  " + path)
    return 1 if found or crashes else 0


if __name__ == "__main__":
    sys.exit(main())
