"""Compiled functions pickle (issue 18): by reference where their module holds them, by value
through cloudpickle otherwise, options kept; a process that loads one (multiprocessing spawn and
forkserver) warm-starts from a shared disk cache: stages loaded, none compiled."""
import multiprocessing
import pickle

import numpy as np
import pytest

import strider
from differential import assert_same


@strider.compile(static_argnames="k")
def decode(x, k):
    return np.sqrt(np.abs(x)) * k - x[::-1]


class Head:
    @strider.compile
    def scores(self, x):
        return 1.0 / (1.0 + np.exp(-x))


def x4():
    return np.linspace(-1.0, 1.0, 4)


def test_by_reference():
    assert pickle.loads(pickle.dumps(decode)) is decode
    assert pickle.loads(pickle.dumps(Head.scores)) is Head.scores


def test_by_value_keeps_the_options():
    pytest.importorskip("cloudpickle")
    scale = 3.0
    f = strider.compile(lambda x, k: x * scale + k, static_argnames="k", max_signatures=5)
    g = pickle.loads(pickle.dumps(f))
    assert g is not f and g._options == f._options and g.target == f.target
    assert_same(f(x4(), 2), g(x4(), 2))
    plain = strider.compile(np.hypot)  # an importable function compiled by the caller
    # vectorized hypot is glibc's libmvec, within 4 ulp of NumPy's (csrc/codegen/llvm/codegen.h)
    assert_same(np.hypot(x4(), x4()), pickle.loads(pickle.dumps(plain))(x4(), x4()), rtol=1e-15)


def test_a_process_loads_one_compiled_function_per_pickle():
    pytest.importorskip("cloudpickle")
    f = strider.compile(lambda x: x * 2 + 1)
    data = pickle.dumps(f)
    g = pickle.loads(data)
    g(x4())
    h = pickle.loads(data)  # a copy that arrives again: the same function, its trace kept
    assert h is g
    h(x4())
    assert h.stats()["traces"] == 1


def _call_in_worker(data):
    f = pickle.loads(data)
    got = f(x4(), 2)
    return got, f.stats()


@pytest.mark.skipif(not strider._C.llvm_backend_available(), reason="built without LLVM: no disk cache")
@pytest.mark.parametrize("method", ["spawn", "forkserver"])
@pytest.mark.parametrize("by", ["reference", "value"])
def test_a_worker_warm_starts_from_the_disk_cache(method, by, tmp_path, monkeypatch):
    if by == "value":
        pytest.importorskip("cloudpickle")
    monkeypatch.setenv("STRIDER_CACHE_DIR", str(tmp_path))  # workers read it when they start
    f = decode if by == "reference" else strider.compile(lambda x, k: np.sqrt(np.abs(x)) * k - x[::-1],
                                                          static_argnames="k")
    data = pickle.dumps(f)
    ctx = multiprocessing.get_context(method)
    for warm in (False, True):  # a fresh worker each time: the first fills the cache
        with ctx.Pool(1) as pool:
            got, stats = pool.apply(_call_in_worker, (data,))
        assert_same(np.sqrt(np.abs(x4())) * 2 - x4()[::-1], got)
        assert stats["traces"] == 1
        if warm:
            assert stats["compiles"] == 0 and stats["disk_hits"] >= 1, stats
