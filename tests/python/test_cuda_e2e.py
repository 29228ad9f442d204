"""The kernels of the e2e suite go through NVRTC, which finds what the emitter gets wrong in C++
or for the architecture: every kernel that has a line no kernel before it has (its registers,
buffers and numbers aside: `covering`), about a quarter of the 8,000 (a kernel's text is its lines
after the shared prelude, so each way the emitter writes a line, for each op and dtype, is
compiled); every CUBIN_EVERY-th of those to a cubin for sm_90 (the H100/H200 the device tests run
on), the others through NVRTC's front end and NVVM to PTX for compute_90 (half the time of a
cubin: no ptxas), and every SM80_EVERY-th to a cubin for sm_80. STRIDER_NVRTC_ALL=1 makes a cubin
of every kernel for both (about 6 minutes more on 2 cores, a campaign by hand). The suite runs in
a subprocess with the cuda_collect plugin (tests/cuda_collect.py) on the reference executor
(STRIDER_JIT=0: no LLVM time), which keeps each distinct kernel's CUDA C; they are then compiled
in batches (one NVRTC program holds many self-contained stages) on every core."""
import json
import multiprocessing
import os
import pathlib
import re
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor

import pytest

from strider import _C

NVRTC = _C.nvrtc_unavailable_reason()
TESTS = pathlib.Path(__file__).resolve().parents[1]
ALL = os.environ.get("STRIDER_NVRTC_ALL") == "1"
CUBIN_EVERY = 1 if ALL else 2
SM80_EVERY = 1 if ALL else 8
BATCH = 100  # kernels per NVRTC program: amortizes NVRTC's start-up, keeps a failure's batch small
# what make_plan refuses for every backend (a stage the LLVM backend leaves to the reference too)
PLAN_REFUSALS = ("access overlapping parts", "touches its output storage", "zero-size array to reduction",
                 "run-time extents", "different run-time extents", "runs in the runtime's library",
                 "the host drives it")
# what makes two lines of kernels the same way of writing one: stage names, registers, buffers, numbers
NAMES = re.compile(r"strider_[0-9a-f]{16}|\b(?:[abiknoprstv]|o_n)\d+(_\d+)?\b|\b\d+(\.\d+)?([eE][-+]?\d+)?[fLlUu]*\b")


def covering(kernels):
    """The kernels, in order, that each have a line (after the shared prelude) none before has."""
    seen, chosen = set(), []
    for name, source in kernels:
        lines = {NAMES.sub("#", line.strip()) for line in source[source.rfind("#endif"):].splitlines()}
        if not lines <= seen:
            chosen.append((name, source))
            seen |= lines
    return chosen


def compile_batch(job):
    """Failures ("name (arch): log") of one batch; a failing batch is retried kernel by kernel."""
    arch, batch = job
    try:
        _C.nvrtc_compile("".join(source for _, source in batch), arch, "e2e.cu")
        return []
    except RuntimeError:
        failures = []
        for name, source in batch:
            try:
                _C.nvrtc_compile(source, arch, name + ".cu")
            except RuntimeError as e:
                failures.append(f"{name} ({arch}): {e}")
        return failures


@pytest.mark.skipif(bool(NVRTC), reason=f"NVRTC is unavailable: {NVRTC}")
def test_every_e2e_kernel_compiles_with_nvrtc(tmp_path):
    out = tmp_path / "kernels.json"
    env = dict(os.environ, STRIDER_JIT="0", STRIDER_CUDA_COLLECT=str(out),
               PYTHONPATH=os.pathsep.join(p for p in (str(TESTS), os.environ.get("PYTHONPATH")) if p))
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "cuda_collect", "-p", "no:cacheprovider",
                          str(TESTS / "e2e")], env=env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    collected = json.loads(out.read_text())
    kernels = sorted(collected["kernels"].items())
    assert len(kernels) > 1000, "the e2e suite lowers well over a thousand distinct stages"
    for why, count in collected["refused"].items():
        assert any(r in why for r in PLAN_REFUSALS), f"{count} stages refused only by the CUDA backend: {why}"

    start = time.monotonic()
    some = kernels if ALL else covering(kernels)
    chosen = {"sm_90": some[::CUBIN_EVERY], "sm_80": some[::SM80_EVERY],
              "compute_90": [k for i, k in enumerate(some) if i % CUBIN_EVERY]}
    jobs = [(arch, some[i:i + BATCH]) for arch, some in chosen.items() for i in range(0, len(some), BATCH)]
    # processes: NVRTC serializes compilations within one process; spawned, since forking a
    # process where JAX's threads run (another test imported it) may deadlock the child
    with ProcessPoolExecutor(os.cpu_count(), mp_context=multiprocessing.get_context("spawn")) as pool:
        failures = [f for batch in pool.map(compile_batch, jobs) for f in batch]
    assert not failures, f"{len(failures)} kernels failed to compile:\n" + "\n\n".join(failures[:5])
    print(f"\n{len(some)} of {len(kernels)} e2e kernels compiled, 1 in {CUBIN_EVERY} of those to a cubin for sm_90 "
          f"(the others to PTX), 1 in {SM80_EVERY} for sm_80, in "
          f"{time.monotonic() - start:.1f} s ({sum(collected['refused'].values())} stages refused by the plan)")
