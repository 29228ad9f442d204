"""benchmarks/dask_batch.py at a tiny size: a LocalCluster of two worker processes post-processes a
few images with the compiled pipeline and with plain NumPy, strider's results are identical to
NumPy's, and the workers trace once each and load the stages the client compiled from the shared
disk cache.  No timing is asserted."""
import json
import os
import subprocess
import sys

import pytest

import strider

pytest.importorskip("distributed", reason="dask.distributed is not installed (pip install dask distributed)")

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "benchmarks")


def test_two_workers_match_numpy_and_load_the_clients_kernels(tmp_path):
    out = tmp_path / "dask.json"
    env = dict(os.environ, STRIDER_CACHE_DIR=str(tmp_path / "cache"))  # fresh: the client compiles
    proc = subprocess.run([sys.executable, os.path.join(BENCH, "dask_batch.py"), "--workers", "2", "--images", "6",
                           "--size", "tiny", "--rounds", "1", "--out", str(out)],
                          capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "identical to NumPy on all 6 images" in proc.stdout and "speed-up over NumPy" in proc.stdout

    r = json.loads(out.read_text())
    assert r["check"] == {"identical": True, "images_checked": 6, "differences": {}}
    assert r["config"]["workers"] == 2 and r["config"]["pred_shape"][0] == 1
    assert set(r["systems"]) == {"numpy", "strider", "dask"}
    for rec in r["systems"].values():
        assert len(rec["rounds_s"]) == 1 and rec["images_per_s"] > 0
    assert r["speedup_vs_numpy"] > 0
    stats = r["worker_stats"]
    assert len(stats) == 2
    # each worker unpickled the scattered steps once: one trace per step, whatever it ran
    assert sum(s["traces"] + s["cache_hits"] for s in stats.values()) == 2 * 2 * 6  # 2 rounds, 2 steps
    if strider._C.llvm_backend_available():
        assert r["client"]["stats"]["compiles"] >= 1
    for s in stats.values():
        assert s["traces"] in (0, 2)
        if s["traces"] and strider._C.llvm_backend_available():
            assert s["compiles"] == 0 and s["disk_hits"] >= 1, s
