"""target="cuda" end to end without a GPU: tests/gpu, the e2e suite's detection heads, views
and layouts, and the property suite (chains of views and in-place writes) run through the CUDA
runtime on the emulated device (tests/cuda_fake: a driver and an NVRTC that compile the emitted
CUDA C for the CPU and run its kernels there), in a subprocess
whose STRIDER_CUDA_DRIVER and STRIDER_NVRTC name it. What this checks is the runtime (copies in
and out, in-place writes, views, aliasing, host fallbacks, scratch, the error flag, module and
cubin caches) and the kernels' semantics; speed needs a real GPU. The emulator runs blocks and
threads last first (STRIDER_EMU_REVERSE): first first is the CPU loop nest's order, which the
fusion legality already keeps correct, so a kernel that races between its points differs only so."""
import os
import pathlib
import sys

import pytest

from emulated_cuda import BackgroundRuns, emulated_cuda

ROOT = pathlib.Path(__file__).resolve().parents[2]
# the e2e files whose checks also run on the device, every third test of them (the rest: on a
# GPU, see README); STRIDER_EMULATED_ALL=1 runs all of their tests and adds the data-dependent,
# sorting and array-editing files and every control-flow test, about 8 minutes more, mostly the host compiler building their stages: a
# campaign by hand (tests/cpp/cuda_data_dependent_test.cc runs each data-dependent op on the
# emulator in both thread orders in CI; CI's 20 minutes do not hold them all)
ALL = os.environ.get("STRIDER_EMULATED_ALL") == "1"
E2E = ("test_detection_heads.py", "test_dtypes.py", "test_views.py", "test_layouts.py")
if ALL:
    E2E += ("test_data_dependent.py", "test_sorting_scans.py", "test_array_editing.py")
# the host-driven loops and branches: a while loop with a list, a branch merging lengths, a range
# loop writing its argument through slices from its counter, a break, returns in branches (a
# Choice), a list of arrays of run-time lengths (block appends), returns inside loops, a variable
# a trip leaves of another kind (all of them with ALL)
CONTROL = [] if ALL else ["-k", "nms_loop_with_a_list and 0.3-7 or merges_lengths or range_loop or test_break or "
                                "returns_inside_traced_branches and 3.0 or joined_in_order and 0.9 or "
                                "items_of_a_list_assigned_in_a_branch and 0.85 or return_inside_a_loop and 0.5 or "
                                "another_kind and 0.99"]


# the dtypes' families: int16, uint16 and uint32 share their kernels' code with the other
# integers of their kind (all of them with ALL)
DTYPES = [] if ALL else ["-k", "not int16 and not uint32"]


# the suites run from the session's start on the cores other tests leave idle (each is one
# single-threaded subprocess, mostly the host compiler building kernels), longest first, their
# tests last
BACKGROUND = BackgroundRuns(max(1, (os.cpu_count() or 1) - 1))


def suite_run(suite):
    """The subprocess that runs `suite` on the emulated device: its arguments and environment."""
    env = dict(os.environ, **emulated_cuda(), STRIDER_TEST_TARGET="cuda", STRIDER_EMU_REVERSE="1")
    if not ALL:  # the property suite's first 50 programs, a third of the e2e files' tests (all with ALL)
        env.setdefault("HYPOTHESIS_PROFILE", "device")
        if suite.startswith("e2e/"):
            env.setdefault("STRIDER_TEST_SLICE", "0/3")
    extra = CONTROL if suite.endswith("test_control_flow.py") else DTYPES if suite.endswith("test_dtypes.py") else []
    args = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", str(ROOT / "tests" / suite)]
    return args + extra, env


def start(item):
    try:
        BACKGROUND.submit(item.callspec.params["suite"], *suite_run(item.callspec.params["suite"]), timeout=1800)
    except (pytest.skip.Exception, pytest.fail.Exception):
        return  # the test says why
    item.config.add_cleanup(BACKGROUND.stop)


@pytest.mark.background.with_args(start)
@pytest.mark.parametrize("suite", [f"e2e/{f}" for f in E2E[:1]] + ["python/test_control_flow.py"]
                         + [f"e2e/{f}" for f in E2E[1:]] + ["gpu", "property"])
def test_suite_on_the_emulated_device(suite):
    run = BACKGROUND.result(suite, *suite_run(suite), timeout=1800)
    tail = run.stdout[-6000:] + run.stderr[-3000:]
    assert run.returncode == 0, tail
    assert " skipped" not in run.stdout.splitlines()[-1] or suite != "gpu", tail
