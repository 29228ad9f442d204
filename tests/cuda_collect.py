"""A pytest plugin (-p cuda_collect) that keeps the CUDA C of every stage strider lowers during
the session (each graph lowered again as target="cuda" lowers it, fused for a GPU), and writes it
as JSON to $STRIDER_CUDA_COLLECT when the session ends:
{"kernels": {kernel name: source}, "refused": {reason: count}}. tests/python/test_cuda_e2e.py
runs the e2e suite with it to compile every kernel of that suite with NVRTC."""
import json
import os

from strider import _C

_kernels = {}
_refused = {}


def pytest_configure(config):
    lower = _C.lower

    def lower_and_collect(graph, schedules={}, jit=True, target=_C.Target.cpu):
        program = lower(graph, schedules, jit, target)
        for stage in _C.cuda_source(program if target == _C.Target.cuda else lower(graph, schedules, False, _C.Target.cuda)):
            if isinstance(stage, str):
                _refused[stage] = _refused.get(stage, 0) + 1
            else:
                _kernels.setdefault(stage.name, stage.source)  # one name, one code
        return program

    _C.lower = lower_and_collect


def pytest_sessionfinish(session, exitstatus):
    with open(os.environ["STRIDER_CUDA_COLLECT"], "w") as f:
        json.dump({"kernels": _kernels, "refused": _refused}, f)
