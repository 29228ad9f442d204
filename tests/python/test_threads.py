"""Compiled functions called from many threads at once: tracing, compiling (the JIT) and running
(the thread pool) give the same results as one thread, also while signatures are evicted."""
import threading

import numpy as np
import pytest

import strider


def _decode(boxes, deltas):
    w = boxes[:, 2] - boxes[:, 0]
    deltas[:, 0::2] = deltas[:, 0::2] * w[:, None] + boxes[:, 0:1]
    return np.exp(deltas[:, 1::2]).sum(axis=1), deltas


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _iou(a, b):
    lt = np.maximum(a[:, None, :2], b[None, :, :2])
    rb = np.minimum(a[:, None, 2:], b[None, :, 2:])
    wh = np.clip(rb - lt, 0, None)
    return wh[..., 0] * wh[..., 1]


def _top_boxes(scores, boxes):
    # temporaries no result shows (the mask, the survivors): one call at a time holds the kept ones
    keep = scores > 0.5
    return boxes[keep][np.argsort(-scores[keep], kind="stable")[:10]]


def _inputs(i):
    rng = np.random.default_rng(i)
    n = (50, 300, 70_000)[i % 3]  # small, medium, and big enough for parallel stages
    boxes = np.sort(rng.random((n, 4), np.float32) * 100, axis=1)
    return {
        "decode": (boxes, rng.standard_normal((n, 4)).astype(np.float32)),
        "softmax": (rng.standard_normal((n // 10 + 1, 80)).astype(np.float64),),
        "iou": (boxes[:40], boxes[-30:]),
        "top_boxes": (rng.random(n), boxes),
    }


# one signature kept: every thread's call evicts what another is about to run; dynamic=None:
# the rows turn run-time lengths while the threads race
@pytest.mark.parametrize("max_signatures, dynamic", [(64, False), (1, False), (64, None)])
def test_many_threads_many_functions_many_signatures(max_signatures, dynamic):
    fns = {"decode": _decode, "softmax": _softmax, "iou": _iou, "top_boxes": _top_boxes}
    compiled = {k: strider.compile(f, max_signatures=max_signatures, dynamic=dynamic) for k, f in fns.items()}
    expected = {}
    for i in range(6):
        for k, args in _inputs(i).items():
            expected[(i, k)] = fns[k](*[a.copy() for a in args])
    errors = []

    def worker(t):
        try:
            for rep in range(4):
                i = (t + rep) % 6
                for k, args in _inputs(i).items():
                    # decode writes into its arguments; the others keep theirs aliased (iou's
                    # two views overlap for the smallest input)
                    got = compiled[k](*([a.copy() for a in args] if k == "decode" else args))
                    exp = expected[(i, k)]
                    for g, e in zip(got if isinstance(got, tuple) else (got,), exp if isinstance(exp, tuple) else (exp,)):
                        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)
        except Exception as e:  # noqa: BLE001 - reported below with its thread
            errors.append((t, repr(e)))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    if max_signatures == 1:
        assert all(len(c._cache) == 1 for c in compiled.values())
    elif dynamic is False:  # one trace per signature, however many threads raced: three sizes; iou's views alias or not
        assert {k: c.stats()["traces"] for k, c in compiled.items()} == {"decode": 3, "softmax": 3, "iou": 2,
                                                                         "top_boxes": 3}
