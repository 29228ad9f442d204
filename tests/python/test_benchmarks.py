"""The benchmark runner (benchmarks/run.py), its checks, the JAX ports and the notebook, at the tiny
size.  No timing is asserted: only that the runner works, that it calls a wrong answer WRONG and an
error FAIL, and that what it saves has the documented structure."""
import importlib.util
import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(ROOT, "benchmarks")
sys.path.insert(0, BENCH)

import peers  # noqa: E402
import run  # noqa: E402
from heads import HEADS, NMS_HEADS  # noqa: E402

HEAD_NAMES = ["delta2bbox", "clip_boxes_", "softmax"]
STATUSES = {"OK", "WRONG", "FAIL", "N/A"}


def test_run_cli_writes_the_documented_json(tmp_path):
    out = tmp_path / "result.json"
    proc = subprocess.run(
        [sys.executable, os.path.join(BENCH, "run.py"), "--sizes", "tiny", "--heads", ",".join(HEAD_NAMES),
         "--systems", "numpy,strider", "--budget", "0.01", "--dispatch-budget", "0.01", "--out", str(out)],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "xNumPy" in proc.stdout and f"saved {out}" in proc.stdout

    r = json.loads(out.read_text())
    assert r["schema"] == run.SCHEMA
    m = r["machine"]
    for key in ("host", "cpu", "logical_cores", "memory_gib", "os", "python", "numpy"):
        assert key in m
    assert m["numpy"] == np.__version__
    assert set(r["systems"]) == {"numpy", "strider"}
    assert r["systems"]["numpy"]["available"] is True
    strider_sys = r["systems"]["strider"]
    if strider_sys["available"]:
        assert strider_sys["version"] and strider_sys["info"]["version"] == strider_sys["version"]
    assert r["config"]["sizes"] == ["tiny"] and r["config"]["heads"] == HEAD_NAMES

    assert [(c["head"], c["size"], c["dtype"]) for c in r["cases"]] == [(h, "tiny", "float32") for h in HEAD_NAMES]
    for case in r["cases"]:
        assert case["inputs"]
        res = case["results"]
        assert set(res) == {n for n, d in r["systems"].items() if d["available"]}
        ref = res["numpy"]
        assert ref["status"] == "OK" and ref["time_s"] > 0 and ref["speedup_vs_numpy"] == 1.0
        for rec in res.values():
            assert rec["status"] in STATUSES
            if rec["status"] == "OK":
                assert rec["time_s"] > 0 and rec["reps"] >= 5 and rec["first_call_s"] > 0
                assert rec["speedup_vs_numpy"] > 0 and rec["dispatch_s"] > 0
                assert rec["max_abs_err"] >= 0
            else:
                assert "time_s" not in rec and rec["message"]
    for name, per_size in r["summary"].items():
        s = per_size["tiny"]
        assert s["cases"] == len(HEAD_NAMES)
        assert s["OK"] + s["WRONG"] + s["FAIL"] + s["N/A"] == s["cases"]


class _Fake(peers.System):
    """A system that runs a given function instead of the head."""
    name = "strider"  # any JIT name: it takes part in the best-other-JIT ratio

    def __init__(self, fn=None, error=None):
        self._fn, self._error = fn, error

    def prepare(self, head, dtype):
        if self._error:
            raise self._error
        return self._fn


def _case(head, fake):
    return run.run_case(HEADS[head], "float32", "tiny", [peers.NumPySystem(), fake], budget=0.0)


def test_wrong_values_are_wrong_and_not_timed():
    fn = HEADS["softmax"].fn
    rec = _case("softmax", _Fake(lambda x, axis=-1: fn(x, axis) * (1 + 1e-3)))["results"]["strider"]
    assert rec["status"] == "WRONG" and "time_s" not in rec and "elements differ" in rec["message"]


def test_a_missing_write_into_an_argument_is_wrong():
    # cxcywh2xyxy_ writes into its argument and returns None; doing nothing returns the same None
    rec = _case("cxcywh2xyxy_", _Fake(lambda x: None))["results"]["strider"]
    assert rec["status"] == "WRONG" and "argument 0 after the call" in rec["message"]


def test_a_wrong_dtype_is_wrong():
    fn = HEADS["softmax"].fn
    rec = _case("softmax", _Fake(lambda x, axis=-1: fn(x.astype(np.float64), axis)))["results"]["strider"]
    assert rec["status"] == "WRONG" and "dtype" in rec["message"]


def test_errors_are_results():
    def boom(*args, **kwargs):
        raise KeyError("no such op")
    case = _case("softmax", _Fake(boom))
    assert case["results"]["strider"]["status"] == "FAIL"
    assert case["results"]["strider"]["error"] == "KeyError"
    rec = _case("softmax", _Fake(error=peers.Unsupported("no port")))["results"]["strider"]
    assert rec["status"] == "N/A" and rec["message"] == "no port"
    assert case["results"]["numpy"]["status"] == "OK"


def test_right_answers_are_timed_with_ratios():
    case = _case("softmax", _Fake(HEADS["softmax"].fn))
    rec = case["results"]["strider"]
    assert rec["status"] == "OK" and rec["reps"] >= 5
    assert rec["speedup_vs_numpy"] == pytest.approx(case["results"]["numpy"]["time_s"] / rec["time_s"])
    assert rec["vs_best_other_jit"] is None  # no other JIT in this case


def test_unknown_names_are_refused():
    with pytest.raises(ValueError, match="unknown heads"):
        run.run_benchmark(heads=["nope"], sizes=["tiny"], systems=["numpy"], log=None)
    with pytest.raises(ValueError, match="unknown systems"):
        run.run_benchmark(heads=["softmax"], sizes=["tiny"], systems=["numpy", "nope"], log=None)


def test_a_quiet_run_says_what_it_is_doing():
    lines = []
    with run.Progress(lines.append, total=4, quiet_s=0.05) as progress:
        progress.log("a table line")
        progress.done = 1
        progress.doing("giou_batched batch float32: numba's first call")
        deadline = time.monotonic() + 10  # the watcher wakes every quiet_s, however loaded the machine
        while len(lines) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
    assert lines[0] == "a table line"
    assert lines[1].startswith("... giou_batched batch float32: numba's first call (0:")
    assert "1/4 cases done" in lines[1]
    n = len(lines)
    time.sleep(0.2)
    assert len(lines) == n  # stopped with the run

    with run.Progress(None, total=1, quiet_s=0.01) as silent:  # log=None: no lines, no thread
        silent.log("dropped")
    assert not silent._watcher.is_alive()


# The ports whose functional rewrite of in-place code is least obvious (run.py checks them all).
JAX_CHECKED = ["delta2bbox", "tblr2bbox", "cxcywh2xyxy_", "bbox_mapping_back_", "yolo_decode_"]


def test_jax_ports_match_numpy():
    """Every head but the NMS loops has a jax.numpy port; the trickiest ones, run eagerly, return
    NumPy's values."""
    jnp = pytest.importorskip("jax.numpy")
    import jax_heads
    ports = jax_heads.ports()
    assert set(ports) == set(HEADS) - set(NMS_HEADS)
    system = peers.JaxSystem()
    system._ports, system._expected_of = ports, jax_heads.expected_of
    with np.errstate(all="ignore"):
        for name in JAX_CHECKED:
            head = HEADS[name]
            dtype = head.dtypes[0]
            args, kwargs = head.inputs("tiny", dtype)
            np_args = run.fresh_copies((args, kwargs))
            expected = head.fn(*np_args[0], **np_args[1])
            j_args, j_kwargs = peers.tree_map(lambda x: jnp.asarray(x) if isinstance(x, np.ndarray) else x,
                                              (args, kwargs))
            got = ports[name].fn(*j_args, **j_kwargs)
            run.check(system, head, dtype, expected, np_args, got, (args, kwargs))


def _loaded(system):
    try:
        system.load()
    except peers.Skip as exc:
        pytest.skip(str(exc))
    return system


def test_nms_heads_compile_or_fail_in_strider_with_the_reason():
    """The NMS loops (issue 17's workloads): NumPy runs them; strider compiles them exactly, or
    (the benchmark runs strict) says why it does not, a TraceError naming the line."""
    systems = [peers.NumPySystem(), _loaded(peers.StriderSystem())]
    compiled = set()
    with np.errstate(all="ignore"):
        for name in NMS_HEADS:
            res = run.run_case(HEADS[name], "float32", "tiny", systems, budget=0.0)["results"]
            assert res["numpy"]["status"] == "OK", name
            rec = res["strider"]
            if rec["status"] == "OK":
                compiled.add(name)
            else:
                assert rec["status"] == "FAIL" and rec["error"] == "TraceError", (name, rec)
                assert "heads.py:" in rec["message"], rec
    assert {"py_cpu_nms", "hard_nms", "greedy_nms_class_tagged", "soft_nms_linear_"} <= compiled


def test_torchvision_nms_is_py_cpu_nms_and_nothing_else():
    """torchvision.ops.nms keeps py_cpu_nms's boxes in its order; the other heads are N/A.
    (Most of this test's time is importing torchvision.)"""
    systems = [peers.NumPySystem(), _loaded(peers.TorchvisionSystem())]
    for name, size, want in [("py_cpu_nms", "tiny", "OK"), ("py_cpu_nms", "small", "OK"),
                             ("hard_nms", "tiny", "N/A")]:
        rec = run.run_case(HEADS[name], "float64", size, systems, budget=0.0)["results"]["torchvision"]
        assert rec["status"] == want, (name, size, rec)


def test_soft_nms_writes_rows_in_place_and_its_hard_method_is_py_cpu_nms():
    """soft_nms swaps and rescores the caller's rows; with method 0 (hard) the rows it keeps are
    py_cpu_nms's, in its order (the same IoU and the same test against the threshold)."""
    head = HEADS["soft_nms_hard_"]
    (dets,), kwargs = head.inputs("small", "float32")
    before = dets.copy()
    keep = head.fn(dets, **kwargs)
    assert not np.array_equal(dets, before)  # rows swapped, scores zeroed in place
    assert np.array_equal(np.sort(dets[:, :4], axis=0), np.sort(before[:, :4], axis=0))
    nms_keep = HEADS["py_cpu_nms"].fn(before, kwargs["Nt"])
    assert 1 < len(keep) < len(before)
    np.testing.assert_array_equal(dets[keep], before[nms_keep])


def _missing(*modules):
    return [m for m in modules if importlib.util.find_spec(m) is None]


def test_nms_ports_compile_and_agree_with_numpy():
    # other projects' Python ports of NMS (benchmarks/nms_ports.py): every one compiles under
    # strict=True and leaves NumPy's results and arguments
    out = subprocess.run([sys.executable, os.path.join(BENCH, "nms_ports.py"), "--boxes", "24", "--reps", "1"],
                         capture_output=True, text=True, timeout=600, check=True).stdout
    rows = [line for line in out.splitlines()[1:] if line.strip()]
    assert len(rows) == 8 and not any("WRONG" in r for r in rows), out


def test_notebook_executes_at_tiny_size(monkeypatch):
    missing = _missing("nbclient", "nbformat", "ipykernel", "matplotlib")
    if missing:
        pytest.skip(f"notebook execution needs {', '.join(missing)} (not installed)")
    import nbclient
    import nbformat
    for var in [v for v in os.environ if v.startswith("STRIDER_BENCH_")]:
        monkeypatch.delenv(var)  # the notebook's defaults: tiny, numpy + strider
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    path = os.path.join(ROOT, "notebooks", "detection_heads.ipynb")
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                                     resources={"metadata": {"path": os.path.dirname(path)}})
    client.execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert sum("image/png" in o.get("data", {}) for o in outputs) >= 2  # the two figures
    text = "".join(o.get("text", "") for o in outputs)
    assert "xNumPy" in text and "geomean" in text


def test_memory_floor_cli_checks_strider_and_writes_json(tmp_path):
    out = tmp_path / "floor.json"
    proc = subprocess.run([sys.executable, os.path.join(BENCH, "memory_floor.py"), "--sizes", "tiny", "--calls", "3",
                           "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (result,) = json.loads(out.read_text())["results"]
    assert set(result["median_s"]) == {"numpy", "strider", "floor_1_thread", f"floor_{os.cpu_count()}_threads"}


def test_frames_cli_checks_every_frame_and_writes_json(tmp_path):
    out = tmp_path / "frames.json"
    proc = subprocess.run(
        [sys.executable, os.path.join(BENCH, "frames.py"), "--heads", "py_cpu_nms", "--frames", "6", "--rows", "20,90",
         "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cases = json.loads(out.read_text())["cases"]
    assert [c["system"] for c in cases] == ["numpy", "strider", "strider dynamic=False"]
    # counts of 20..90 rows: the first alone, then run-time rows up to two bounds at most
    assert cases[1]["traces"] <= 4 < cases[2]["traces"]
