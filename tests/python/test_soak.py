"""Memory over long runs: resident memory stays flat over a million warm calls (and over calls that
fail), and the memory cache of a compiled function is bounded across many distinct signatures
(least recently called evicted, its machine code freed)."""
import gc
import os

import numpy as np
import pytest

import strider

_PAGE = os.sysconf("SC_PAGE_SIZE")


def _rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * _PAGE


def _delta2bbox(rois, deltas, scale):
    px = (rois[:, 0] + rois[:, 2]) * 0.5
    pw = rois[:, 2] - rois[:, 0]
    deltas[:, 0::2] = px[:, None] + pw[:, None] * deltas[:, 0::2] * scale  # in place, through a view
    return deltas[:, ::-1], np.max(deltas, axis=1)


def _grow(fn, calls, warmup):
    """RSS growth over `calls` calls of fn(), after `warmup` calls."""
    for _ in range(warmup):
        fn()
    gc.collect()
    before = _rss()
    for _ in range(calls):
        fn()
    gc.collect()
    return _rss() - before


def test_resident_memory_is_flat_over_a_million_calls():
    f = strider.compile(_delta2bbox)
    rois = np.arange(8 * 4, dtype=np.float32).reshape(8, 4)
    deltas = np.ones((8, 4), dtype=np.float32)
    grew = _grow(lambda: f(rois, deltas, 0.5), 1_000_000, 20_000)
    s = f.stats()
    assert s["traces"] == 1 and s["cache_hits"] == 1_020_000 - 1, s
    assert grew < 2 * 2**20, f"resident memory grew by {grew} bytes over a million calls"


def test_resident_memory_is_flat_over_calls_that_fail():
    f = strider.compile(_delta2bbox)
    rois = np.zeros((8, 4), dtype=np.float32)
    deltas = np.ones((7, 4), dtype=np.float32)  # 8 rows against 7: NumPy's broadcast error

    def call():
        with pytest.raises(ValueError):
            f(rois, deltas, 0.5)

    grew = _grow(call, 5_000, 500)  # each one traces again (a failed trace is not cached): ~1 ms
    assert np.all(deltas == 1)
    assert grew < 2 * 2**20, f"resident memory grew by {grew} bytes over 5,000 failing calls"


def _shape_signatures(f, n, start=0):
    for rows in range(start + 1, start + n + 1):
        f(np.zeros((rows, 4), dtype=np.float32), np.ones((rows, 4), dtype=np.float32), 0.5)


def test_the_memory_cache_keeps_at_most_max_signatures():
    f = strider.compile(_delta2bbox, max_signatures=8, dynamic=False)
    _shape_signatures(f, 40)
    assert f.stats()["traces"] == 40
    assert len(f._cache) == 8 and len(f._fast) <= 8
    # the eight most recent stay: calling them again traces nothing
    _shape_signatures(f, 8, start=32)
    assert f.stats()["traces"] == 40
    _shape_signatures(f, 1)  # evicted long ago: traced again
    assert f.stats()["traces"] == 41


def test_eviction_drops_the_least_recently_called_signature():
    f = strider.compile(_delta2bbox, max_signatures=4, dynamic=False)
    hot = (np.zeros((100, 4), dtype=np.float32), np.ones((100, 4), dtype=np.float32), 0.5)
    f(*hot)
    for i in range(12):
        _shape_signatures(f, 1, start=i)
        f(*hot)  # called between every new signature: never the least recent
    assert f.stats()["traces"] == 13  # the hot one once, twelve others once each


def test_evicted_signatures_free_their_machine_code():
    # a signature kept costs about 200 KiB here (its program and machine code), so 30 leaked
    # would add about 6 MiB
    f = strider.compile(_delta2bbox, max_signatures=4, dynamic=False)
    _shape_signatures(f, 10)  # allocators and the JIT reach their steady state
    gc.collect()
    before = _rss()
    _shape_signatures(f, 30, start=10)
    gc.collect()
    grew = _rss() - before
    assert f.stats()["traces"] == 40 and len(f._cache) == 4
    assert grew < 2 * 2**20, f"resident memory grew by {grew} bytes over 30 evicted signatures"


def test_max_signatures_must_be_positive():
    with pytest.raises(ValueError, match="max_signatures"):
        strider.compile(_delta2bbox, max_signatures=0)
