"""Post-processing a batch of images on a Dask cluster: strider-compiled functions shipped to the
workers, against the same pipeline in plain NumPy on the same workers.

    python3 benchmarks/dask_batch.py [--scheduler ADDRESS | --workers N] [--images N]
                                     [--size tiny|small|image] [--rounds N] [--seed N]
                                     [--cache-dir DIR] [--out PATH | --no-save]

The pipeline is YOLOv5's post-processing of one image up to NMS, in two steps taken from
heads.py: ``yolo_postprocess`` (class scores times objectness, best class and its score, boxes
from centre-size to corners, the confidence threshold applied with np.where) and
``scale_boxes_`` (YOLOv5's scale_boxes: the letterbox padding and resize undone and the boxes
clipped to the original image, in place through strided views).  Every op in it is bit-exact in
strider (README, Accuracy), so strider's results are checked to be identical to NumPy's.

Each image's network output (``pred``: (1, H*W*A, 5 + C) float32 at the heads' --size, B = 1)
is made on the workers and stays there, as a detector's output would.  The two steps go to every
worker once, in a worker plugin (``Shipped``): strider.compile'd for strider, the plain
functions for NumPy; one task per image runs them.  The client compiles the pipeline first, so
that workers sharing its STRIDER_CACHE_DIR (a LocalCluster's do: --cache-dir, or a fresh
temporary directory) trace on their first call and load the stages from the disk cache instead
of compiling them; the counters gathered from the workers say what happened.  Workers of a
--scheduler cluster read their own STRIDER_CACHE_DIR and get heads.py through
Client.upload_file.

Timing: after an untimed first round each, ``--rounds`` rounds take NumPy, strider and Dask
alone (a no-op task per image: what Dask itself spends) in turn, the order rotated every round;
a round submits every image's task and waits for all of them.  Reported: the median round,
images per second, strider's speed-up over NumPy on the workers, Dask's own round, the same
pipeline's per-image time in the client's own process for reference, and the check.  The
result is saved as JSON (benchmarks/results/<host>-<date>-dask.json, or --out).  Exit status 1
if strider's results differ from NumPy's.
"""
import argparse
import datetime
import os
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np

_here = os.path.dirname(os.path.abspath(__file__))
if _here not in sys.path:
    sys.path.insert(0, _here)
try:
    import strider
except ImportError:  # running from a checkout that was not pip-installed
    sys.path.insert(0, os.path.join(os.path.dirname(_here), "python"))
    import strider

try:
    from distributed import Client, LocalCluster, WorkerPlugin, get_worker, wait
except ImportError as exc:  # main() says what to install
    NO_DASK = exc
    WorkerPlugin = object
else:
    NO_DASK = None

from heads import HEADS, _img_shape, clip_boxes_, size_config, yolo_postprocess  # noqa: E402
from run import _loadavg, default_path as run_py_default_path, describe_machine, save  # noqa: E402

SCHEMA = "strider-dask-batch/1"
PER_IMAGE_SIZES = ("tiny", "small", "image")  # heads.SIZES with B forced to 1


def scale_boxes_(boxes, gain, pad, img0_shape):
    """YOLOv5 scale_boxes: boxes on the letterboxed network input back to the original image,
    in place (``boxes[..., [0, 2]]`` written as the strided view ``0::2``)."""
    boxes[..., 0::2] -= pad[0]
    boxes[..., 1::2] -= pad[1]
    boxes /= gain
    return clip_boxes_(boxes, img0_shape)


PIPELINE = (yolo_postprocess, scale_boxes_)


def image_config(size):
    return dict(size_config(size), B=1)


def make_image(size, index, seed):
    """One image's network output and letterbox parameters, the same wherever it is made: the
    original image is up to twice the network input on each side, resized by ``gain`` to fit
    it and padded by ``pad`` (x, y) to centre it."""
    cfg = image_config(size)
    rng = np.random.default_rng([seed, index])
    (pred,), kwargs = HEADS["yolo_postprocess"].make_inputs(cfg, rng, np.float32)
    h1, w1 = _img_shape(cfg)
    h0, w0 = (int(rng.integers(n, 2 * n + 1)) for n in (h1, w1))
    gain = min(h1 / h0, w1 / w0)
    pad = ((w1 - w0 * gain) / 2, (h1 - h0 * gain) / 2)
    return {"pred": pred, "conf_thres": kwargs["conf_thres"], "gain": gain, "pad": pad,
            "img0_shape": (h0, w0)}


def postprocess(steps, image):
    """One image through the pipeline's steps (compiled or plain): boxes on the original image,
    best score (0 below the threshold), best class, kept flags.  The input is left untouched."""
    decode, scale = steps
    boxes, conf, labels, keep = decode(image["pred"], image["conf_thres"])
    scale(boxes, image["gain"], image["pad"], image["img0_shape"])
    return boxes, conf, labels, keep


class Shipped(WorkerPlugin):
    """A system's pipeline steps, shipped to every worker (and to each worker that joins later)
    as a worker plugin: a worker unpickles them once and keeps them, so a compiled step traces
    once per worker and no pickle travels with each task (Dask re-sends a task's arguments, and
    its active memory manager drops replicas that a later task fetches back)."""

    def __init__(self, system, steps):
        self.name, self.steps = f"dask_batch-{system}", steps


def on_worker(system, image):
    """postprocess with this worker's copy of the system's steps; nothing for "dask", whose
    rounds measure what Dask itself spends on a round of tasks."""
    if system == "dask":
        return None
    return postprocess(get_worker().plugins[f"dask_batch-{system}"].steps, image)


def difference(expected, got):
    """None when every result has NumPy's dtype, shape and bits; else what differs first."""
    for i, (e, g) in enumerate(zip(expected, got)):
        if e.dtype != g.dtype or e.shape != g.shape:
            return f"result {i}: {g.dtype}{list(g.shape)} != NumPy's {e.dtype}{list(e.shape)}"
        if not np.array_equal(e, g, equal_nan=True):
            err = np.max(np.abs(e.astype(np.float64) - g.astype(np.float64)))
            return f"result {i}: {np.count_nonzero(e != g)} elements differ (max abs difference {err:g})"
    return None


def stats(steps):
    """The counters of compiled steps, summed."""
    total = {}
    for f in steps:
        for k, v in f.stats().items():
            total[k] = total.get(k, 0) + v
    return total


def worker_stats(dask_worker):
    """The counters of this worker's copy of the compiled steps (client.run calls it)."""
    return stats(dask_worker.plugins["dask_batch-strider"].steps)


def per_image_in_process(steps, image, reps=20):
    """Median seconds of the pipeline on one image in this process (after a first call)."""
    postprocess(steps, image)
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        postprocess(steps, image)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _round(client, system, images):
    """Seconds to run every image's task, and their result futures."""
    t0 = time.perf_counter()
    futures = [client.submit(on_worker, system, im, pure=False) for im in images]
    wait(futures)
    elapsed = time.perf_counter() - t0
    failed = [f for f in futures if f.status != "finished"]
    if failed:
        failed[0].result()  # raises the task's error here
    return elapsed, futures


def run(client, size="image", n_images=64, rounds=5, seed=0, log=print):
    """The benchmark on the cluster behind ``client``; returns the result dict."""
    machine = describe_machine()  # with the load average before the run
    workers = sorted(client.scheduler_info()["workers"])
    cfg = image_config(size)
    log(f"cluster: {client.scheduler.address}, {len(workers)} workers "
        f"({sum(w['nthreads'] for w in client.scheduler_info()['workers'].values())} threads)")

    t0 = time.perf_counter()
    # made and held on the workers, dealt out evenly: a task runs where its image is
    images = [client.submit(make_image, size, i, seed, workers=[workers[i % len(workers)]], pure=False)
              for i in range(n_images)]
    wait(images)
    sample = make_image(size, 0, seed)
    log(f"images: {n_images} x pred {sample['pred'].dtype}{list(sample['pred'].shape)} "
        f"({sample['pred'].nbytes / 2**20:.1f} MiB each), made on the workers in {time.perf_counter() - t0:.1f} s")

    # the client compiles first: workers sharing its disk cache then load the stages
    compiled = tuple(strider.compile(f, strict=True) for f in PIPELINE)
    t0 = time.perf_counter()
    postprocess(compiled, sample)
    client_first = time.perf_counter() - t0
    local = {"numpy": per_image_in_process(PIPELINE, sample), "strider": per_image_in_process(compiled, sample)}
    client_stats = stats(compiled)
    log(f"in the client's process, per image: numpy {local['numpy'] * 1e3:.3f} ms, strider "
        f"{local['strider'] * 1e3:.3f} ms (x{local['numpy'] / local['strider']:.2f}); strider's first call "
        f"{client_first * 1e3:.0f} ms, {client_stats['compiles']} stages compiled, "
        f"{client_stats['disk_hits']} from disk")

    systems = {"numpy": PIPELINE, "strider": compiled}
    for name, steps in systems.items():
        client.register_plugin(Shipped(name, steps))
    order = list(systems) + ["dask"]
    recs = {name: {"rounds_s": []} for name in order}
    results = {}
    for name in order:
        recs[name]["first_round_s"], _ = _round(client, name, images)
    for r in range(rounds):
        line = []
        for name in order[r % len(order):] + order[:r % len(order)]:
            elapsed, results[name] = _round(client, name, images)
            recs[name]["rounds_s"].append(elapsed)
            line.append(f"{name} {elapsed:.3f} s")
        log(f"round {r + 1}/{rounds}: " + ", ".join(line))
    for name, rec in recs.items():
        rec["median_s"] = statistics.median(rec["rounds_s"])
        rec["images_per_s"] = n_images / rec["median_s"]
        if name in local:
            rec["in_process_per_image_s"] = local[name]
    speedup = recs["numpy"]["median_s"] / recs["strider"]["median_s"]
    overhead = recs["dask"]["median_s"]

    diffs = client.gather([client.submit(difference, e, g, pure=False)
                           for e, g in zip(results["numpy"], results["strider"])])
    wrong = {i: d for i, d in enumerate(diffs) if d}
    per_worker = client.run(worker_stats)
    for name in systems:
        log(f"{name:8s} median round {recs[name]['median_s']:.3f} s, {recs[name]['images_per_s']:.1f} images/s "
            f"(first round {recs[name]['first_round_s']:.3f} s)")
    log(f"dask     median round of no-op tasks {overhead:.3f} s ({overhead / n_images * 1e3:.2f} ms a task)")
    log(f"strider's speed-up over NumPy on {len(workers)} workers: x{speedup:.2f}")
    if wrong:
        first = min(wrong)
        log(f"check: {len(wrong)} of {n_images} images differ from NumPy; image {first}: {wrong[first]}")
    else:
        log(f"check: identical to NumPy on all {n_images} images")
    for w, s in per_worker.items():
        log(f"worker {w}: {s['traces']} traces, {s['compiles']} stages compiled, {s['disk_hits']} from disk, "
            f"{s['cache_hits']} warm calls")
    machine["loadavg_end"] = _loadavg()
    return {
        "schema": SCHEMA,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine,
        "config": {"scheduler": client.scheduler.address, "workers": len(workers),
                   "threads": {w: i["nthreads"] for w, i in client.scheduler_info()["workers"].items()},
                   "images": n_images, "size": size, "size_config": cfg, "rounds": rounds, "seed": seed,
                   "pred_shape": list(sample["pred"].shape), "dtype": str(sample["pred"].dtype),
                   "strider_cache_dir": os.environ.get("STRIDER_CACHE_DIR"),
                   "dask": _version("dask"), "distributed": _version("distributed"),
                   "strider": strider.__version__},
        "systems": recs,
        "speedup_vs_numpy": speedup,
        "check": {"identical": not wrong, "images_checked": n_images, "differences": wrong},
        "client": {"first_call_s": client_first, "stats": client_stats},
        "worker_stats": per_worker,
    }


def _version(name):
    try:
        return __import__(name).__version__
    except ImportError:
        return None


def default_path(result):
    return run_py_default_path(result)[: -len(".json")] + "-dask.json"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scheduler", default=None, help="address of a running scheduler (default: a LocalCluster)")
    p.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)),
                   help="LocalCluster worker processes, one thread each (default: the usable cores)")
    p.add_argument("--images", type=int, default=64)
    p.add_argument("--size", choices=PER_IMAGE_SIZES, default="image",
                   help="one image's head outputs, from heads.SIZES (image: 20,400 anchors, 80 classes)")
    p.add_argument("--rounds", type=int, default=5, help="timed rounds per system")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cache-dir", default=None,
                   help="STRIDER_CACHE_DIR of the client and a LocalCluster's workers "
                        "(default: $STRIDER_CACHE_DIR, else a fresh temporary directory)")
    p.add_argument("--out", default=None, help="JSON path (default benchmarks/results/<host>-<date>-dask.json)")
    p.add_argument("--no-save", action="store_true")
    opts = p.parse_args(argv)
    if NO_DASK:
        sys.exit(f"dask_batch.py needs dask.distributed: pip install dask distributed ({NO_DASK})")

    scratch = None
    if opts.cache_dir:
        os.environ["STRIDER_CACHE_DIR"] = opts.cache_dir
    elif not os.environ.get("STRIDER_CACHE_DIR"):
        os.environ["STRIDER_CACHE_DIR"] = scratch = tempfile.mkdtemp(prefix="strider-dask-cache-")
    try:
        if opts.scheduler:
            with Client(opts.scheduler) as client:
                client.upload_file(os.path.join(_here, "heads.py"))  # remote workers may lack benchmarks/
                result = run(client, opts.size, opts.images, opts.rounds, opts.seed)
        else:
            # processes, not threads: each worker is a Python of its own, as on a real cluster; the
            # workers inherit STRIDER_CACHE_DIR from this process
            with LocalCluster(n_workers=opts.workers, threads_per_worker=1, processes=True,
                              dashboard_address=None) as cluster, Client(cluster) as client:
                result = run(client, opts.size, opts.images, opts.rounds, opts.seed)
    finally:
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)
    if not opts.no_save:
        print(f"saved {save(result, opts.out or default_path(result))}")
    return 0 if result["check"]["identical"] else 1


if __name__ == "__main__":
    sys.exit(main())
