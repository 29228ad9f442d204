"""Benchmark every detection head against NumPy, strider, Numba, JAX and torch.compile, in one process.

    python3 benchmarks/run.py [--sizes image,batch] [--heads NAME,...] [--dtypes float32[,float64]]
                              [--systems numpy,strider,numba,jax,torch] [--budget SECONDS]
                              [--dispatch-size tiny] [--dispatch-budget SECONDS] [--seed N]
                              [--device cpu|cuda] [--copy-mib MIB] [--out PATH | --no-save]

For each head (heads.py), dtype and size, every system gets a fresh compiled function, runs
it once on fresh copies of the inputs (the *first call*: trace + compile + run) and is checked
against NumPy: result values within the head's tolerance, result dtypes and shapes, and the
arguments after the call for systems that run the NumPy source on the caller's arrays (strider,
Numba, torch.compile; JAX ports are functional, so only their returned values are compared).
A head written for one dtype (a uint8 image, float16 network outputs) runs in that dtype alone,
whatever --dtypes says, and its cases carry it.  A system that disagrees is WRONG and is not
timed; one that raises is FAIL (with the error's class); one with nothing to run (no port, no
float16) is N/A.  Then the systems that passed are timed round-robin,
each call on fresh copies of the inputs and the order rotated every round, so that they share
the machine's noise; the median is reported.

Per case and system: median time, speed-up over NumPy (``t_numpy / t``, >1 is faster),
speed-up over the best other JIT (``t_best_other / t``, >1 beats every other JIT that got the
case right), the first call, and the warm dispatch overhead: the median call at the "tiny" size
with the function already compiled (for NumPy, its own call at that size).  A peer that is not
installed is skipped with a note.  One table is printed as cases finish (a run that prints
nothing for 15 s, in a slow compile, says which case and step it is on, and how far along the run
is), then a summary; the whole result, with the machine described, is saved as JSON to
benchmarks/results/<host>-<date>.json (or --out).

``--device cuda`` runs the same heads, sizes and checks on the GPU (gpu_peers.py: strider with
target="cuda", CuPy, torch.compile and JAX, on inputs in device memory; NumPy stays the host
reference) and saves to <host>-<date>-cuda.json.  The device is described with its measured
device-to-device copy bandwidth (cuda_device.py), each case gets the bandwidth a system achieved
(the bytes of its distinct input arrays, results and changed arguments over the median time) and
its fraction of the copy's, and the raw launch of an empty kernel is set against strider's warm
call of a one-stage function.  Without CUDA it stops with one line saying why.
"""
import argparse
import datetime
import gc
import json
import math
import os
import platform
import re
import socket
import statistics
import subprocess
import sys
import threading
import time
import warnings

import numpy as np

_here = os.path.dirname(os.path.abspath(__file__))
_root = os.path.dirname(_here)
if _here not in sys.path:
    sys.path.insert(0, _here)
try:
    import strider  # noqa: F401
except ImportError:  # running from a checkout that was not pip-installed
    sys.path.insert(0, os.path.join(_root, "python"))

import cuda_device  # noqa: E402
import gpu_peers  # noqa: E402
from heads import HEADS, SIZES  # noqa: E402
from peers import SYSTEMS, Skip, Unsupported, make_systems  # noqa: E402
from strider.testing import Mismatch, clone_args, compare, leaves  # noqa: E402

SCHEMA = "strider-bench/1"
DEFAULT_SIZES = ("image", "batch")
RESULTS_DIR = os.path.join(_here, "results")


# ---------------------------------------------------------------------------------------------
# The machine
# ---------------------------------------------------------------------------------------------

def _read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def describe_machine():
    """CPU, cores, memory, OS, Python and NumPy, and the checkout's git commit."""
    cpuinfo = _read("/proc/cpuinfo")
    model = re.search(r"^model name\s*:\s*(.*)$", cpuinfo, re.M)
    cores = {(p, c) for p, c in re.findall(r"physical id\s*:\s*(\d+).*?core id\s*:\s*(\d+)", cpuinfo, re.S)}
    flags = re.search(r"^flags\s*:\s*(.*)$", cpuinfo, re.M)
    flags = set(flags.group(1).split()) if flags else set()
    simd = [f for f in ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni",
                        "amx_tile", "asimd", "sve") if f in flags]
    mem = re.search(r"MemTotal:\s*(\d+) kB", _read("/proc/meminfo"))
    os_name = re.search(r'^PRETTY_NAME="?(.*?)"?$', _read("/etc/os-release"), re.M)
    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:
        affinity = os.cpu_count()
    return {
        "host": socket.gethostname(),
        "cpu": model.group(1).strip() if model else platform.processor() or platform.machine(),
        "arch": platform.machine(),
        "logical_cores": os.cpu_count(),
        "usable_cores": affinity,
        "physical_cores": len(cores) or None,
        "simd": simd,
        "memory_gib": round(int(mem.group(1)) / 2**20, 1) if mem else None,
        "os": os_name.group(1) if os_name else platform.system(),
        "kernel": platform.release(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "numpy": np.__version__,
        "git": _git(),
        # other work on the machine while it ran (1, 5, 15 minute load averages)
        "loadavg_start": _loadavg(),
    }


def _loadavg():
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def _git():
    try:
        commit = subprocess.run(["git", "-C", _root, "rev-parse", "HEAD"], capture_output=True,
                                text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", _root, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return {"commit": commit or None, "dirty": bool(dirty)}
    except (OSError, subprocess.SubprocessError):
        return None


# ---------------------------------------------------------------------------------------------
# Checking one call against NumPy
# ---------------------------------------------------------------------------------------------

def _compare_leaf(e, g, rtol, atol, strict, what):
    if e is None or g is None:
        if (e is None) != (g is None):
            raise Mismatch(f"{what}: {type(g).__name__} != NumPy's {type(e).__name__}")
        return 0.0
    if not isinstance(e, (np.ndarray, np.generic, bool, int, float, complex)):
        if e != g:
            raise Mismatch(f"{what}: {g!r} != NumPy's {e!r}")
        return 0.0
    ea, ga = np.asarray(e), np.asarray(g)  # JAX arrays and Python scalars become ndarrays
    if ga.shape != ea.shape:
        raise Mismatch(f"{what}: shape {ga.shape} != NumPy's {ea.shape}")
    if ga.dtype != ea.dtype:
        if strict or (ga.dtype.kind in "iu") != (ea.dtype.kind in "iu") or (ga.dtype.kind == "b") != (
                ea.dtype.kind == "b"):
            raise Mismatch(f"{what}: dtype {ga.dtype} != NumPy's {ea.dtype}")
        ga = ga.astype(ea.dtype)
    return compare(ea, ga, rtol, atol, what)


def check(system, head, dtype, expected, np_args, got, sys_args):
    """Max abs error of a system's call against NumPy's; raises Mismatch."""
    rtol, atol = system.tolerance(head, dtype)
    exp_leaves = leaves(system.expected(head, expected, np_args[0], np_args[1]))
    got_leaves = leaves(system.to_host(got))
    if len(exp_leaves) != len(got_leaves):
        raise Mismatch(f"{len(got_leaves)} results, NumPy returns {len(exp_leaves)}")
    err = 0.0
    for i, (e, g) in enumerate(zip(exp_leaves, got_leaves)):
        err = max(err, _compare_leaf(e, g, rtol, atol, system.strict_dtypes, f"result {i}"))
    if system.checks_arguments:
        for i, (e, g) in enumerate(zip(leaves(np_args), leaves(system.to_host(sys_args)))):
            if isinstance(e, np.ndarray):
                err = max(err, _compare_leaf(e, g, rtol, atol, True, f"argument {i} after the call"))
    return err


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
# lines that say where an error happened rather than what it is (Numba's pipeline banners)
_BANNERS = re.compile(r"^(Failed in \w+ mode pipeline|- Resolution failure|During: |File \"|\s*$)")


def _first_line(exc, limit=240):
    """The line of an error message that says what went wrong (plus the signature Numba
    could not type, when it says which), without colours and addresses."""
    lines = [_ADDRESS.sub("", _ANSI.sub("", x)).strip() for x in str(exc).strip().splitlines()]
    useful = [i for i, x in enumerate(lines) if not _BANNERS.match(x)]
    if not useful:
        return (lines or [""])[0][:limit]
    i = useful[0]
    text = lines[i]
    if text.endswith("found for signature:"):
        text += " " + next((x for x in lines[i + 1:] if x), "")
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ---------------------------------------------------------------------------------------------
# One case: every system on one head, dtype and size
# ---------------------------------------------------------------------------------------------

def fresh_copies(tree, _roots=None):
    """Copies of the array leaves (aliasing between them kept, as strider.testing.clone_args);
    everything else (numbers, tuples, strings, dtypes) is passed as is: a deep copy of a dtype
    would defeat the callee's caches (NumPy's casts, torch's guards) and time that instead."""
    roots = {} if _roots is None else _roots
    if isinstance(tree, (tuple, list)):
        return type(tree)(fresh_copies(t, roots) for t in tree)
    if isinstance(tree, dict):
        return {k: fresh_copies(v, roots) for k, v in tree.items()}
    return clone_args(tree, roots) if isinstance(tree, np.ndarray) else tree


def _call(fn, system, placed):
    a, k = placed.fresh() if hasattr(placed, "fresh") else fresh_copies(placed)
    t0 = time.perf_counter()
    out = system.sync(fn(*a, **k))
    return out, time.perf_counter() - t0, a, k


def _quiet(what):
    pass


def _first_calls(head, dtype, size, systems, seed, doing=_quiet):
    """Prepares every system and makes its first, checked call; ``doing`` is told which.

    Returns (inputs, {name: rec}, {name: (fn, placed inputs)}, NumPy's (result, args after))."""
    inputs = head.inputs(size, dtype, seed=seed)
    recs, runs = {}, {}
    expected, np_args = None, None
    for system in systems:
        doing(f"{head.name} {size} {dtype}: {system.name}'s first call")
        rec = recs[system.name] = {}
        try:
            fn = system.prepare(head, dtype)
            placed = system.place(inputs)
            out, t, a, k = _call(fn, system, placed)
            if system.is_reference:
                expected, np_args, err = out, (a, k), 0.0
            else:
                err = check(system, head, dtype, expected, np_args, out, (a, k))
            rec.update(status="OK", first_call_s=t, max_abs_err=err)
            runs[system.name] = (fn, placed)
        except Unsupported as exc:
            rec.update(status="N/A", message=_first_line(exc))
        except Mismatch as exc:
            rec.update(status="WRONG", first_call_s=t, message=_first_line(exc))
        except Exception as exc:  # noqa: BLE001 - every failure is a result
            if system.is_reference:
                raise
            rec.update(status="FAIL", error=type(exc).__name__, message=_first_line(exc))
        if rec["status"] in ("OK", "WRONG") and not system.is_reference:
            try:
                note = system.note(fn, a, k)
            except Exception as exc:  # noqa: BLE001 - a note is informative only
                note = f"note failed: {type(exc).__name__}: {_first_line(exc, 80)}"
            if note:
                rec["note"] = note
    return inputs, recs, runs, (expected, np_args)


def _time_round_robin(systems, runs, recs, budget, min_reps=5, max_reps=1000):
    """Median seconds per call of each OK system; calls interleaved, the order rotated per round."""
    live = [s for s in systems if s.name in runs]
    times = {s.name: [] for s in live}
    start = time.perf_counter()
    rnd = 0
    while live:
        for s in live[rnd % len(live):] + live[:rnd % len(live)]:
            if len(times[s.name]) >= max_reps:
                continue
            try:
                fn, placed = runs[s.name]
                _, t, _, _ = _call(fn, s, placed)
            except Exception as exc:  # noqa: BLE001 - a later call that raises is a FAIL
                recs[s.name].update(status="FAIL", error=type(exc).__name__,
                                    message="later call raised: " + _first_line(exc))
                live.remove(s)
                times.pop(s.name)
                break
            times[s.name].append(t)
        rnd += 1
        done = all(len(v) >= min_reps for v in times.values())
        if done and (time.perf_counter() - start > budget or all(len(v) >= max_reps for v in times.values())):
            break
    return {name: (statistics.median(v), len(v)) for name, v in times.items() if v}


def traffic_bytes(inputs, expected, np_args):
    """The bytes a call must move at least: each distinct input array read once, each result and
    each argument the call changed written once (whole arrays)."""
    ins = {id(x): x for x in leaves(inputs) if isinstance(x, np.ndarray)}
    outs = {id(x): x for x in leaves(expected) if isinstance(x, (np.ndarray, np.generic))}
    for before, after in zip(leaves(inputs), leaves(np_args)):
        if isinstance(before, np.ndarray) and not np.array_equal(before, after, equal_nan=True):
            outs[id(after)] = after
    return sum(x.nbytes for x in ins.values()) + sum(x.nbytes for x in outs.values())


def run_case(head, dtype, size, systems, budget, seed=0, copy_gbps=None, doing=_quiet):
    """One head, dtype and size on every system; ``copy_gbps``, the device's measured copy
    bandwidth, adds each device system's fraction of it; ``doing`` is told each step."""
    gc.collect()
    inputs, recs, runs, (expected, np_args) = _first_calls(head, dtype, size, systems, seed, doing)
    doing(f"{head.name} {size} {dtype}: timing")
    for name, (t, n) in _time_round_robin(systems, runs, recs, budget).items():
        recs[name].update(time_s=t, reps=n)
    nbytes = traffic_bytes(inputs, expected, np_args)
    t_np = recs["numpy"].get("time_s")
    peers = {s.name for s in systems if not s.is_reference}
    peer_times = {n: r["time_s"] for n, r in recs.items() if n in peers and r.get("time_s")}
    for name, rec in recs.items():
        t = rec.get("time_s")
        if not t:
            continue
        rec["speedup_vs_numpy"] = t_np / t if t_np else None
        others = [v for n, v in peer_times.items() if n != name]
        rec["vs_best_other_jit"] = min(others) / t if others and name in peers else None
        rec["gbps"] = nbytes / t / 1e9
        if copy_gbps and name in peers:
            rec["of_copy"] = rec["gbps"] / copy_gbps
    shapes = [f"{np.asarray(x).dtype}{list(np.shape(x))}" for x in leaves(inputs) if isinstance(x, np.ndarray)]
    return {"head": head.name, "size": size, "dtype": dtype, "inputs": shapes, "bytes": nbytes, "results": recs}


def measure_dispatch(head, dtype, size, systems, budget, seed=0, doing=_quiet):
    """Median call of an already compiled function at a tiny size: {system: seconds or None}."""
    gc.collect()
    _, recs, runs, _ = _first_calls(head, dtype, size, systems, seed, doing)
    doing(f"{head.name} {size} {dtype}: timing the warm calls")
    timed = _time_round_robin(systems, runs, recs, budget)
    return {s.name: (timed[s.name][0] if s.name in timed else None) for s in systems}


# ---------------------------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------------------------

class Progress:
    """What a long run is doing, said when it goes quiet: the table's lines go through ``log``,
    and once nothing has been printed for ``quiet_s`` seconds a watcher thread prints the step
    that runs now (a case, a system's first call, the timing), how long it has taken, how many
    cases are done and the time so far, again every ``quiet_s`` while the run stays quiet."""

    def __init__(self, log, total, quiet_s=15.0):
        self._log, self.total, self.quiet_s = log, total, quiet_s
        self.done = 0
        self._start = self._last = self._since = time.perf_counter()
        self._what = "starting"
        self._lock = threading.Lock()  # the watcher's lines never interleave with the table's
        self._stop = threading.Event()
        self._watcher = threading.Thread(target=self._watch, name="run.py progress", daemon=True)

    def __enter__(self):
        if self._log is not None:
            self._watcher.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._watcher.is_alive():
            self._watcher.join()

    def log(self, *args):
        if self._log is None:
            return
        with self._lock:
            self._log(*args)
            self._last = time.perf_counter()

    def doing(self, what):
        self._what, self._since = what, time.perf_counter()

    def _watch(self):
        while not self._stop.wait(min(1.0, self.quiet_s)):
            now = time.perf_counter()
            if now - self._last >= self.quiet_s:
                self.log(f"... {self._what} ({_clock(now - self._since)} so far; {self.done}/{self.total} "
                         f"cases done in {_clock(now - self._start)})")


def _clock(seconds):
    return f"{int(seconds) // 60}:{int(seconds) % 60:02d}"


def load_systems(names, registry=SYSTEMS, doing=_quiet):
    """({name: system} loaded, {name: description} of every requested system of ``registry``)."""
    loaded, described = {}, {}
    for system in make_systems(names, registry):
        doing(f"loading {system.name} (import and warm-up)")
        try:
            version = system.load()
        except Skip as exc:
            described[system.name] = {"available": False, "note": str(exc)}
            continue
        loaded[system.name] = system
        described[system.name] = {"available": True, "version": version}
    for name, system in loaded.items():
        try:
            info = system.info()
        except Exception as exc:  # noqa: BLE001 - informative only
            info = {"error": f"{type(exc).__name__}: {exc}"}
        described[name]["info"] = dict(info, warmup_s=system.warmup_s, warmup_error=system.warmup_error)
    return loaded, described


def _head_dtypes(head, dtypes):
    # heads written for one dtype (valid_flags: bool, image_preprocess_u8: uint8,
    # yolo_decode_f16_: float16) run once, in it, whatever --dtypes asks for
    return [d for d in dtypes if d in head.dtypes] or [head.dtypes[0]]


def _print(*args):
    print(*args, flush=True)


def run_benchmark(heads=None, sizes=DEFAULT_SIZES, systems=None, dtypes=("float32",), budget=1.0,
                  dispatch_size="tiny", dispatch_budget=0.2, seed=0, log=_print, device="cpu", copy_bytes=1 << 30,
                  checkpoint=None):
    """Runs the benchmark and returns the result dict (what gets saved as JSON).

    ``checkpoint``, if given, receives the result so far (marked ``"partial": True``) after each
    head, so that a run cut short (a lent GPU's time running out) keeps what it measured.

    ``device="cuda"``: the GPU systems of gpu_peers.py, the device described with its measured
    copy bandwidth (``copy_bytes`` a buffer) and launch time; cuda_device.NoDevice where CUDA
    cannot run.  ``log`` receives the table's lines as cases finish (None: silent)."""
    names = list(heads) if heads else list(HEADS)
    unknown = [n for n in names if n not in HEADS]
    if unknown:
        raise ValueError(f"unknown heads {unknown}; known: {', '.join(HEADS)}")
    bad_sizes = [s for s in list(sizes) + ([dispatch_size] if dispatch_size else []) if s not in SIZES]
    if bad_sizes:
        raise ValueError(f"unknown sizes {bad_sizes}; known: {', '.join(SIZES)}")
    # First calls are cold for every system: torch's FX graph cache is off, JAX and Numba keep no
    # persistent cache by default, and strider's disk kernel cache is off unless the caller set
    # STRIDER_CACHE or STRIDER_CACHE_DIR (it must be decided before strider first compiles).
    if "STRIDER_CACHE" not in os.environ and "STRIDER_CACHE_DIR" not in os.environ:
        os.environ["STRIDER_CACHE"] = "0"
    strider_cache = {k: os.environ.get(k) for k in ("STRIDER_CACHE", "STRIDER_CACHE_DIR")}
    cuda = device == "cuda"
    drv = gpu_peers.driver() if cuda else None
    registry = gpu_peers.SYSTEMS if cuda else SYSTEMS
    total = len(sizes) * sum(len(_head_dtypes(HEADS[n], dtypes)) for n in names)
    with Progress(log, total) as progress:
        log = progress.log
        loaded, described = load_systems(systems or list(registry), registry, progress.doing)
        log("systems: " + ", ".join(
            f"{n} {d['version']}" + (f" (warm-up {d['info']['warmup_s']:.1f} s)" if d["info"].get("warmup_s") else "")
            for n, d in described.items() if d["available"]))
        order = [loaded[n] for n in registry if n in loaded]
        result = {
            "schema": SCHEMA,
            "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "machine": describe_machine(),
            "systems": described,
            "config": {"heads": names, "sizes": list(sizes), "dtypes": list(dtypes), "budget_s": budget,
                       "dispatch_size": dispatch_size, "dispatch_budget_s": dispatch_budget, "seed": seed,
                       "size_configs": {s: SIZES[s] for s in sizes}, "strider_disk_cache": strider_cache,
                       "device": device},
            "cases": [],
        }
        for name, d in described.items():
            if not d["available"]:
                log(f"note: {name} skipped: {d['note']}")
        copy_gbps = None
        if cuda:
            # measured after the systems' warm-ups, before any case: a quiet device
            progress.doing("measuring the device's copy bandwidth and launch time")
            from strider import _C
            arch = _C.cuda_device_arch()
            dev = result["machine"]["device"] = cuda_device.describe(drv, arch)
            dev["copy"] = cuda_device.copy_bandwidth(drv, copy_bytes)
            copy_gbps = dev["copy"]["gbps"]
            result["launch"] = gpu_peers.launch_overhead(drv, arch, loaded.get("strider"))
            for line in format_device(result):
                log(line)
        header = _header(cuda)
        log(header)
        log("-" * len(header))
        t_start = time.perf_counter()
        old = np.seterr(all="ignore")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for name in names:
                    head = HEADS[name]
                    for dtype in _head_dtypes(head, dtypes):
                        dispatch = None
                        if dispatch_size and dispatch_size not in sizes:
                            dispatch = measure_dispatch(head, dtype, dispatch_size, order, dispatch_budget, seed,
                                                        progress.doing)
                        # the dispatch size's own case first, so that every case prints as it ends, with
                        # its warm call; the result keeps the order of `sizes`
                        ran = []
                        for size in sorted(sizes, key=lambda s: s != dispatch_size):
                            case = run_case(head, dtype, size, order, budget, seed, copy_gbps, progress.doing)
                            if size == dispatch_size:
                                dispatch = {n: r.get("time_s") for n, r in case["results"].items()}
                            for n, rec in case["results"].items():
                                rec["dispatch_s"] = (dispatch or {}).get(n)
                            ran.append(case)
                            progress.done += 1
                            for line in format_case(case, cuda):
                                log(line)
                        result["cases"] += sorted(ran, key=lambda c: list(sizes).index(c["size"]))
                        if checkpoint:
                            checkpoint(dict(result, summary=summarize(result), partial=True))
        finally:
            np.seterr(**old)
        result["total_s"] = time.perf_counter() - t_start
        result["machine"]["loadavg_end"] = _loadavg()
        result["summary"] = summarize(result)
        log("-" * len(header))
        log(format_summary(result))
    return result


# ---------------------------------------------------------------------------------------------
# Summary and table
# ---------------------------------------------------------------------------------------------

def _geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def summarize(result):
    """Per system and size: counts by status, geometric-mean speed-ups, medians of the first
    call and of the dispatch overhead, how many cases it was the fastest system on, and (on a
    device) the median and best fraction of the copy bandwidth it achieved."""
    out = {}
    for case in result["cases"]:
        ok_times = {n: r["time_s"] for n, r in case["results"].items() if r.get("time_s")}
        fastest = min(ok_times, key=ok_times.get) if ok_times else None
        for n, rec in case["results"].items():
            s = out.setdefault(n, {}).setdefault(case["size"], {
                "cases": 0, "OK": 0, "WRONG": 0, "FAIL": 0, "N/A": 0, "fastest": 0,
                "_speedups": [], "_vs_best": [], "_first": [], "_dispatch": [], "_of_copy": []})
            s["cases"] += 1
            s[rec["status"]] = s.get(rec["status"], 0) + 1
            s["fastest"] += fastest == n
            if rec.get("time_s"):
                s["_speedups"].append(rec.get("speedup_vs_numpy"))
                s["_vs_best"].append(rec.get("vs_best_other_jit"))
                if rec.get("of_copy"):
                    s["_of_copy"].append(rec["of_copy"])
            if rec["status"] == "OK":
                s["_first"].append(rec.get("first_call_s"))
                s["_dispatch"].append(rec.get("dispatch_s"))
    for per_size in out.values():
        for s in per_size.values():
            s["geomean_speedup_vs_numpy"] = _geomean(s.pop("_speedups"))
            s["geomean_vs_best_other_jit"] = _geomean(s.pop("_vs_best"))
            first = [x for x in s.pop("_first") if x is not None]
            disp = [x for x in s.pop("_dispatch") if x is not None]
            s["median_first_call_s"] = statistics.median(first) if first else None
            s["median_dispatch_s"] = statistics.median(disp) if disp else None
            of_copy = s.pop("_of_copy")
            s["median_of_copy"] = statistics.median(of_copy) if of_copy else None
            s["max_of_copy"] = max(of_copy) if of_copy else None
    return out


def _header(cuda=False):
    """The table's header; on a device with the achieved bandwidth and its fraction of the copy's."""
    return (f"{'head':22s} {'size':5s} {'dtype':7s} {'system':7s} {'status':6s} {'ms':>9s} "
            f"{'xNumPy':>7s} {'xBestJIT':>8s} {'1st call ms':>11s} {'tiny us':>8s}"
            + (f" {'GB/s':>7s} {'%copy':>5s}" if cuda else "") + "  note")


def _pct(f):
    return "-" if f is None else f"{f * 100:.0f}"


def _is_cuda(result):
    return result["config"].get("device") == "cuda"


def _ms(s):
    if s is None:
        return "-"
    ms = s * 1e3
    return f"{ms:.4f}" if ms < 0.1 else f"{ms:.3f}" if ms < 10 else f"{ms:.1f}"


def _x(r):
    return "-" if r is None else f"{r:.2f}x"


def format_case(case, cuda=False):
    lines = []
    for n, r in case["results"].items():
        note = r.get("message", "")
        if r.get("error"):
            note = f"{r['error']}: {note}"
        if r.get("note"):
            note = f"{note}; {r['note']}" if note else r["note"]
        us = "-" if r.get("dispatch_s") is None else f"{r['dispatch_s'] * 1e6:.1f}"
        bandwidth = ""
        if cuda:
            gbps = "-" if r.get("gbps") is None else f"{r['gbps']:.1f}" if r["gbps"] >= 1 else f"{r['gbps']:.3f}"
            bandwidth = f" {gbps:>7s} {_pct(r.get('of_copy')):>5s}"
        lines.append(f"{case['head']:22s} {case['size']:5s} {case['dtype']:7s} {n:7s} {r['status']:6s} "
                     f"{_ms(r.get('time_s')):>9s} {_x(r.get('speedup_vs_numpy')):>7s} "
                     f"{_x(r.get('vs_best_other_jit')):>8s} {_ms(r.get('first_call_s')):>11s} {us:>8s}"
                     f"{bandwidth}  {note[:110]}".rstrip())
    return lines


def format_summary(result):
    summary = result.get("summary") or summarize(result)
    head = (f"{'system':8s} {'size':6s} {'OK':>4s} {'WRONG':>5s} {'FAIL':>4s} {'N/A':>4s} {'fastest':>7s} "
            f"{'geomean xNumPy':>14s} {'geomean xBestJIT':>16s} {'median 1st call ms':>18s} "
            f"{'median tiny us':>14s}" + (f" {'median %copy':>12s} {'max %copy':>9s}" if _is_cuda(result) else ""))
    lines = [head]
    for n, per_size in summary.items():
        for size, s in per_size.items():
            disp = s["median_dispatch_s"]
            lines.append(f"{n:8s} {size:6s} {s['OK']:4d} {s['WRONG']:5d} {s['FAIL']:4d} {s['N/A']:4d} "
                         f"{s['fastest']:7d} {_x(s['geomean_speedup_vs_numpy']):>14s} "
                         f"{_x(s['geomean_vs_best_other_jit']):>16s} {_ms(s['median_first_call_s']):>18s} "
                         f"{'-' if disp is None else f'{disp * 1e6:.1f}':>14s}"
                         + (f" {_pct(s.get('median_of_copy')):>12s} {_pct(s.get('max_of_copy')):>9s}"
                            if _is_cuda(result) else ""))
    for n, d in result["systems"].items():
        if not d["available"]:
            lines.append(f"{n}: skipped ({d['note']})")
    lines.append(f"{len(result['cases'])} cases in {result.get('total_s', 0):.1f} s")
    return "\n".join(lines)


def format_device(result):
    """The device, its copy bandwidth and the launch times, in a few lines."""
    dev, launch = result["machine"]["device"], result["launch"]
    copy = dev["copy"]
    memory = f"{dev['memory_gib']} GiB, " if dev["memory_gib"] else ""
    lines = [f"device: {dev['name']} ({dev['arch']}, {dev['multiprocessors']} SMs, {memory}driver "
             f"{dev['driver_version']}); device-to-device copy of {copy['bytes'] / 2**20:.0f} MiB: "
             f"{copy['gbps']:.1f} GB/s (read + write)",
             f"launch: raw cuLaunchKernel of an empty kernel {launch['launch_s'] * 1e6:.2f} us queued, "
             f"{launch['launch_sync_s'] * 1e6:.2f} us with its synchronize"]
    for label, t in launch.get("strider", {}).items():
        lines.append(f"launch: strider `{label}` on 4 float32 ({launch['strider_inputs']}) "
                     f"{t['call_s'] * 1e6:.2f} us queued (+{t['over_raw_s'] * 1e6:.2f} over raw), "
                     f"{t['call_sync_s'] * 1e6:.2f} us with its synchronize (+{t['over_raw_sync_s'] * 1e6:.2f})")
    return lines


def format_table(result):
    """The device (if any), the full table (every case and system) and the summary, from a result dict."""
    cuda = _is_cuda(result)
    header = _header(cuda)
    lines = (format_device(result) if cuda else []) + [header, "-" * len(header)]
    for case in result["cases"]:
        lines += format_case(case, cuda)
    lines += ["-" * len(header), format_summary(result)]
    return "\n".join(lines)


def default_path(result):
    host = re.sub(r"[^A-Za-z0-9_.-]", "_", result["machine"]["host"]) or "host"
    suffix = "-cuda" if _is_cuda(result) else ""
    return os.path.join(RESULTS_DIR, f"{host}-{result['created'][:10]}{suffix}.json")


def save(result, path=None):
    path = path or default_path(result)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump(result, f, indent=1, default=str)
        f.write("\n")
    os.replace(tmp, path)
    return path


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default=",".join(DEFAULT_SIZES), help="comma-separated sizes from heads.SIZES")
    p.add_argument("--heads", default="", help="comma-separated head names (default: all)")
    p.add_argument("--dtypes", default="float32",
                   help="float32, float64 or both, comma-separated (a head written for one dtype runs in it)")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="cuda: strider, CuPy, torch.compile and JAX on the GPU (NumPy stays on the host)")
    p.add_argument("--systems", default=None,
                   help=f"comma-separated systems (numpy is always run: it is the reference); "
                        f"default {','.join(SYSTEMS)}, with --device cuda {','.join(gpu_peers.SYSTEMS)}")
    p.add_argument("--budget", type=float, default=1.0,
                   help="seconds of round-robin timing per case (every system gets at least 5 calls)")
    p.add_argument("--dispatch-size", default="tiny", help="size for the warm dispatch overhead ('' to skip)")
    p.add_argument("--dispatch-budget", type=float, default=0.2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--copy-mib", type=float, default=1024,
                   help="with --device cuda: MiB a buffer of the device-to-device copy that measures bandwidth")
    p.add_argument("--out", default=None,
                   help="JSON path (default benchmarks/results/<host>-<date>.json, <host>-<date>-cuda.json)")
    p.add_argument("--no-save", action="store_true")
    opts = p.parse_args(argv)
    split = lambda s: [x for x in s.split(",") if x]  # noqa: E731
    dtypes = ["float32", "float64"] if opts.dtypes == "both" else split(opts.dtypes)
    try:
        result = run_benchmark(heads=split(opts.heads), sizes=split(opts.sizes),
                               systems=split(opts.systems or ""), dtypes=dtypes, budget=opts.budget,
                               dispatch_size=opts.dispatch_size or None,
                               dispatch_budget=opts.dispatch_budget, seed=opts.seed, device=opts.device,
                               copy_bytes=int(opts.copy_mib * 2**20),
                               checkpoint=None if opts.no_save else lambda partial: save(partial, opts.out))
    except ValueError as exc:
        p.error(str(exc))
    except cuda_device.NoDevice as exc:
        sys.exit(f"run.py --device cuda: CUDA is unavailable here: {exc}")
    if not opts.no_save:
        print(f"saved {save(result, opts.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
