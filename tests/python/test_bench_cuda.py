"""benchmarks/run.py --device cuda on the emulated device (tests/cuda_fake), at the tiny size: the
plumbing a GPU session relies on (device facts, copy bandwidth, raw launch against strider's
dispatch, device inputs copied per call, writes into arguments checked, the JSON). No timing is
asserted: the emulated device runs kernels on the CPU."""
import json
import os
import pathlib
import subprocess
import sys

import pytest

from emulated_cuda import emulated_cuda

ROOT = pathlib.Path(__file__).resolve().parents[2]
RUN = ROOT / "benchmarks" / "run.py"
# cxcywh2xyxy_ writes into its argument and returns None; delta2bbox has several stages
HEADS = ["delta2bbox", "cxcywh2xyxy_", "softmax"]


def _run(args, env, timeout=120):
    return subprocess.run([sys.executable, str(RUN), *args], env=env, capture_output=True, text=True, timeout=timeout)


def test_cuda_benchmark_on_the_emulated_device(tmp_path):
    out = tmp_path / "result.json"
    env = dict(os.environ, **emulated_cuda(),
               STRIDER_CACHE_DIR=str(tmp_path / "cache"))
    proc = _run(["--device", "cuda", "--sizes", "tiny", "--heads", ",".join(HEADS), "--systems", "strider",
                 "--budget", "0.01", "--dispatch-budget", "0.01", "--copy-mib", "4", "--out", str(out)], env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "device-to-device copy" in proc.stdout and "%copy" in proc.stdout and f"saved {out}" in proc.stdout

    r = json.loads(out.read_text())
    assert r["config"]["device"] == "cuda"
    dev = r["machine"]["device"]
    assert dev["emulated"] is True and dev["arch"].startswith("sm_") and dev["driver_version"]
    assert dev["copy"]["bytes"] == 4 << 20 and dev["copy"]["gbps"] > 0
    launch = r["launch"]
    assert launch["launch_s"] > 0 and launch["launch_sync_s"] > 0
    assert launch["strider_inputs"] == "strider DeviceArray"
    for t in launch["strider"].values():
        assert t["call_s"] > 0 and t["over_raw_s"] == pytest.approx(t["call_s"] - launch["launch_s"])

    assert set(r["systems"]) == {"numpy", "strider"} and r["systems"]["strider"]["available"]
    assert [c["head"] for c in r["cases"]] == HEADS
    for case in r["cases"]:
        assert case["bytes"] > 0
        rec = case["results"]["strider"]
        assert rec["status"] == "OK", rec
        assert rec["note"].endswith("stages on the device") and rec["dispatch_s"] > 0
        assert rec["gbps"] == pytest.approx(case["bytes"] / rec["time_s"] / 1e9)
        assert rec["of_copy"] == pytest.approx(rec["gbps"] / dev["copy"]["gbps"])
        assert "of_copy" not in case["results"]["numpy"]  # the host reference has no device to compare with
    assert r["summary"]["strider"]["tiny"]["max_of_copy"] > 0


def test_cuda_benchmark_without_cuda_says_why_in_one_line(tmp_path):
    env = dict(os.environ, STRIDER_CUDA_DRIVER=str(tmp_path / "no-such-libcuda.so"))
    proc = _run(["--device", "cuda", "--sizes", "tiny", "--heads", "softmax", "--no-save"], env)
    assert proc.returncode == 1
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("run.py --device cuda: CUDA is unavailable here: no NVIDIA driver")
