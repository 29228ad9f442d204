"""A function's first call runs while LLVM compiles its stages on background threads
(runtime/background_compile.h): its results are the later calls' bit for bit (a stage the
reference executor would compute otherwise waits for its kernel), stats() and explain() wait for
the compile, a fork meanwhile leaves its child a working function, and exit waits for it (the
disk cache gets its kernels)."""
import json
import multiprocessing
import os
import subprocess
import sys

import numpy as np
import pytest

import strider

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "benchmarks")
sys.path.insert(0, BENCH)

# Fast R-CNN's py_cpu_nms: tens of small stages the reference executor runs (no sum, no
# transcendental) while LLVM compiles them, for tens of milliseconds after the first call
from heads import py_cpu_nms as nms  # noqa: E402

pytestmark = pytest.mark.skipif(not strider._C.llvm_backend_available(), reason="built without LLVM")


def scores_and_loop(boxes, w):
    # float64 sums (the loop vectorizer reassociates them), arctan2 (libmvec in vector loops),
    # and a loop of small stages the reference executor runs while they compile
    total = np.sum(boxes * w)
    angle = np.arctan2(boxes[:, 1], boxes[:, 0])
    keep = []
    order = np.argsort(-boxes[:, 2])
    while order.size > 0:
        i = order[0]
        keep.append(i)
        order = order[1:][np.abs(boxes[order[1:], 2] - boxes[i, 2]) > 0.05]
    return total, angle, np.asarray(keep, dtype=np.int64), boxes.sum(axis=1)


def test_a_first_call_gives_the_later_calls_results_bit_for_bit():
    rng = np.random.default_rng(0)
    boxes, w = rng.uniform(-1, 1, (400, 3)), rng.uniform(0, 1, 3)
    expected = scores_and_loop(boxes, w)
    for _ in range(3):  # each a new function: its first call while it compiles
        f = strider.compile(scores_and_loop, strict=True)
        first, second = f(boxes, w), f(boxes, w)
        for a, b, e in zip(first, second, expected, strict=True):
            assert a.tobytes() == b.tobytes()
            np.testing.assert_allclose(a, e, rtol=1e-12, strict=True)


def _softmax(x):
    x_max = np.max(x, axis=-1, keepdims=True)
    e = np.exp(x - x_max)
    return e / np.sum(e, axis=-1, keepdims=True)


def test_a_stage_links_the_scalar_ops_of_the_stages_it_computes():
    """The divide stage computes the exp stage inside it: the scalar ops those call are linked
    too (missed, LLVM could not link the stage and the reference executor ran it, right but
    slowly)."""
    x = np.random.default_rng(1).standard_normal((1000, 81)).astype(np.float32)
    f = strider.compile(_softmax)
    np.testing.assert_array_equal(f(x), f(x))
    assert [why for why in f.explain(x).fallbacks if why] == []


def test_stats_and_explain_wait_for_the_compile():
    f = strider.compile(scores_and_loop)
    boxes = np.random.default_rng(1).uniform(-1, 1, (50, 3))
    f(boxes, np.ones(3))
    s = f.stats()
    assert s["compiles"] + s["disk_hits"] > 0
    assert f.stats()["compiles"] == s["compiles"]  # counted once
    assert any(why == "" for why in f.explain(boxes, np.ones(3)).fallbacks)


def _dets(n=200):
    rng = np.random.default_rng(3)
    xy = rng.uniform(0, 100, (n, 2))
    return np.concatenate([xy, xy + rng.uniform(5, 30, (n, 2)), rng.random((n, 1))], 1)


def _call_in_child(f, dets, expected, queue):
    queue.put([int(i) for i in f(dets, 0.5)] == expected)


def test_a_fork_right_after_a_first_call_leaves_the_child_a_working_function():
    ctx = multiprocessing.get_context("fork")
    dets = _dets()
    f = strider.compile(nms)
    expected = [int(i) for i in f(dets, 0.5)]  # LLVM still compiling: the fork waits for it
    assert expected == [int(i) for i in nms(dets, 0.5)]
    queue = ctx.Queue()
    child = ctx.Process(target=_call_in_child, args=(f, dets, expected, queue), daemon=True)
    child.start()
    child.join(timeout=60)
    if child.exitcode is None:
        child.kill()
    assert child.exitcode == 0, "the child hangs"
    assert queue.get(timeout=5)


_CHILD = r"""
import json, sys
import numpy as np
import strider
sys.path[:0] = [{here!r}, {bench!r}]
from heads import py_cpu_nms
from test_background_compile import _dets
f = strider.compile(py_cpu_nms)
f(_dets(), 0.5)
if sys.argv[1] == "stats":
    print(json.dumps(f.stats()))
"""


def test_exit_waits_for_the_compile_and_the_disk_cache_keeps_its_kernels(tmp_path):
    env = dict(os.environ, STRIDER_CACHE_DIR=str(tmp_path))
    env.pop("STRIDER_CACHE", None)
    code = _CHILD.format(here=os.path.dirname(os.path.abspath(__file__)), bench=BENCH)

    def run(mode):
        done = subprocess.run([sys.executable, "-c", code, mode], env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout

    run("exit")  # returns from its first call and exits at once
    stats = json.loads(run("stats").strip().splitlines()[-1])
    assert stats["compiles"] == 0 and stats["disk_hits"] > 0
