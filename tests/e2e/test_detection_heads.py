"""End-to-end: every detection head in benchmarks/heads.py, NumPy versus strider.

Each head runs through the differential harness at the ``tiny`` and ``small`` sizes, in float32
and float64 where the head has floating inputs, and is called twice on the same signature so
that the second call goes through the compiled-function cache.
"""
import os

import numpy as np
import pytest

import strider
from differential import TARGET, assert_same, check
from heads import HEADS, NMS_HEADS

SIZES = ("tiny", "small")
# On the emulated device every stage of an NMS loop is a kernel the host compiler builds and every
# trip a round of launches on the CPU: py_cpu_nms at the tiny size stands for them there (and
# tests/python/test_control_flow.py's loops); STRIDER_EMULATED_ALL=1 and a real device run them all
EMULATED = TARGET == "cuda" and "STRIDER_CUDA_DRIVER" in os.environ and os.environ.get("STRIDER_EMULATED_ALL") != "1"
LONG = pytest.mark.skip(reason="an NMS loop on the emulated device: py_cpu_nms-tiny-float32 stands for them")
# float64 at the small size builds the same kernels as float32 there (many blocks) and float64 at
# the tiny size (the type): on the emulated device, where building them is most of the time, the
# other three cases stand for it
TWICE = pytest.mark.skip(reason="on the emulated device, small-float32 and tiny-float64 stand for small-float64")


def _long(name, size, dtype):
    return EMULATED and name in NMS_HEADS and (name, size, dtype) != ("py_cpu_nms", "tiny", "float32")


CASES = [
    pytest.param(name, size, dtype, id=f"{name}-{size}-{dtype}",
                 marks=[LONG] if _long(name, size, dtype) else [TWICE] if EMULATED and (size, dtype) == ("small", "float64")
                 else [])
    for name, head in HEADS.items()
    for size in SIZES
    for dtype in head.dtypes
]


def _stats(compiled):
    stats = getattr(compiled, "stats", None)
    return stats() if callable(stats) else None


@pytest.mark.parametrize("name,size,dtype", CASES)
def test_head_matches_numpy(name, size, dtype):
    head = HEADS[name]
    args, kwargs = head.inputs(size, dtype)
    rtol, atol = head.tolerance(dtype)
    compiled = check(head.fn, *args, rtol=rtol, atol=atol,
                     static_argnames=head.static_argnames, calls=2, **kwargs)
    stats = _stats(compiled)
    if stats is not None:
        # Same shapes, dtypes, strides and static values twice: the second call is a cache hit.
        assert stats["cache_hits"] >= 1, stats
        assert stats["traces"] == 1, stats


def _run_both(head, compiled, size, dtype, seed):
    args, kwargs = head.inputs(size, dtype, seed=seed)
    np_args, np_kwargs = head.inputs(size, dtype, seed=seed)
    with np.errstate(all="ignore"):
        expected = head.fn(*np_args, **np_kwargs)
    got = compiled(*args, **kwargs)
    rtol, atol = head.tolerance(dtype)
    exp = expected if isinstance(expected, tuple) else (expected,)
    res = got if isinstance(got, tuple) else (got,)
    assert len(exp) == len(res)
    for i, (e, g) in enumerate(zip(exp, res)):
        assert_same(e, g, rtol, atol, what=f"{head.name} {size} result {i}")
    for i, (e, g) in enumerate(zip(np_args, args)):
        if isinstance(e, np.ndarray):
            assert_same(e, g, rtol, atol, what=f"{head.name} {size} argument {i} after the call")


@pytest.mark.parametrize("name", ["delta2bbox", "bbox_overlaps", "yolo_decode_", "clip_boxes_",
                                  "softmax", "grid_anchors", "cxcywh2xyxy_"])
def test_one_compiled_function_across_sizes(name):
    """One CompiledFunction called on new shapes (and new static values) retraces correctly,
    and going back to an earlier signature still gives the right answer (the rows that changed
    are a run-time length from the second size on: the last tiny call is the third's program)."""
    head = HEADS[name]
    compiled = strider.compile(head.fn, static_argnames=head.static_argnames)
    for seed, size in enumerate(["tiny", "small", "tiny", {"H": 5, "W": 7, "B": 1}, "tiny"]):
        _run_both(head, compiled, size, "float32", seed)
    stats = _stats(compiled)
    if stats is not None:
        assert stats["traces"] >= 3, stats  # tiny, small and the custom size
        assert stats["cache_hits"] >= 1, stats  # back to tiny


def test_decorator_form_and_new_runtime_values():
    """The decorator form; runtime scalars (stride, score_thr) may change without a new
    signature and must take their new values."""

    @strider.compile(static_argnames=("max_shape",))
    def decode(cls_score, bbox_pred, anchors, means, stds, max_shape, score_thr):
        return HEADS["retina_decode"].fn(cls_score, bbox_pred, anchors, means, stds,
                                         max_shape, score_thr)

    head = HEADS["retina_decode"]
    for thr in (0.05, 0.5, 0.95):
        args, kwargs = head.inputs("tiny", "float32")
        kwargs["score_thr"] = thr
        expected = head.fn(*args, **kwargs)
        got = decode(*args, **kwargs)
        rtol, atol = head.tolerance("float32")
        for i, (e, g) in enumerate(zip(expected, got)):
            assert_same(e, g, rtol, atol, what=f"score_thr={thr} result {i}")

    yolo = strider.compile(HEADS["yolov5_decode"].fn)
    for stride in (8, 16, 32):
        args, _ = HEADS["yolov5_decode"].inputs("tiny", "float64")
        args = args[:2] + (stride,)
        np_args = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
        assert_same(HEADS["yolov5_decode"].fn(*np_args), yolo(*args), 1e-12, 1e-9,
                    what=f"yolov5_decode stride={stride}")
