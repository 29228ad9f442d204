"""Arguments of an array library in GPU memory (CuPy's kind, on tests/gpu/fake_cupy.py where CuPy
is not installed): read and written in place, results and views as the library's arrays, and a
call that enters Python once, in the library's kind, for target="cuda" and target="auto" alike."""
import os
import sys

import numpy as np
import pytest
from conftest import counters, fake_driver, needs_cuda

import strider
from strider.testing import compare

pytestmark = needs_cuda

try:
    import cupy
    REAL = True
except ImportError:
    import fake_cupy as cupy
    REAL = False


@pytest.fixture(autouse=True)
def cupy_module(monkeypatch):
    if not REAL:  # the kind imports "cupy" when it first meets the fake's arrays
        monkeypatch.setitem(sys.modules, "cupy", cupy)


def head(boxes, deltas, scale):
    boxes[:, 2:] += deltas[:, 2:] * scale  # written in place
    return boxes[:, :2], (boxes * 2).sum(axis=1), np.exp(deltas)  # a view, a reduction, a temporary


def args(rng):
    return rng.random((6, 4), np.float32), rng.random((6, 4), np.float32)


def _entries(fn, *args):
    """fn(*args) and the functions of strider's Python that C++ entered during it (the library's
    own, such as the fake's __cuda_array_interface__ property, aside)."""
    here = sys._getframe()
    package = os.path.dirname(strider.__file__)
    entered = []

    def profile(frame, event, arg):
        if event == "call" and frame.f_back is here and frame.f_code.co_filename.startswith(package):
            entered.append(frame.f_code.co_name)

    sys.setprofile(profile)
    try:
        result = fn(*args)
    finally:
        sys.setprofile(None)
    return result, entered


@pytest.mark.parametrize("target", ["cuda", "auto"])
def test_results_are_the_librarys_arrays_and_arguments_are_written_in_place(target):
    boxes, deltas = args(np.random.default_rng(0))
    expected_boxes = boxes.copy()
    expected = head(expected_boxes, deltas, 0.5)
    d_boxes, d_deltas = cupy.asarray(boxes), cupy.asarray(deltas)
    view, sums, exp = strider.compile(head, target=target)(d_boxes, d_deltas, 0.5)
    for got in (view, sums, exp):
        assert type(got) is cupy.ndarray
    compare(expected_boxes, d_boxes.get())
    compare(expected[0], view.get())
    compare(expected[1], sums.get(), rtol=1e-6)
    compare(expected[2], exp.get(), rtol=1e-6)
    assert view.data.ptr == d_boxes.data.ptr  # boxes[:, :2] views the caller's memory


@pytest.mark.parametrize("target", ["cuda", "auto"])
def test_a_warm_call_enters_python_once_in_the_librarys_kind(target):
    rng = np.random.default_rng(1)
    fn = strider.compile(head, target=target)
    d = [cupy.asarray(a) for a in args(rng)]
    fn(*d, 0.5)
    _, entered = _entries(fn, *d, 0.5)
    assert entered == ["call"]


@pytest.mark.skipif(REAL, reason="counts the fake's interface reads")
def test_auto_walks_the_arguments_once():
    # target="auto" meeting arrays in GPU memory reads them as target="cuda" does, no more
    d = [cupy.asarray(a) for a in args(np.random.default_rng(2))]
    reads = {}
    for target in ("cuda", "auto"):
        fn = strider.compile(head, target=target)
        fn(*d, 0.5)
        before = cupy.ndarray.interface_reads
        fn(*d, 0.5)
        reads[target] = cupy.ndarray.interface_reads - before
    assert reads["auto"] == reads["cuda"] > 0


class Tensor:
    """A library's array type whose instances may live on the host, as PyTorch's do: there it has
    no __cuda_array_interface__ (reading it raises AttributeError)."""

    def __init__(self, device_array=None):
        self.device_array = device_array

    @property
    def __cuda_array_interface__(self):
        if self.device_array is None:
            raise AttributeError("a tensor on the host")
        return self.device_array.__cuda_array_interface__


def test_auto_runs_on_the_host_when_a_device_type_holds_a_host_array():
    fn = strider.compile(lambda a, t: a * 2, target="auto")
    a = np.arange(3.0)
    on_gpu = fn(cupy.asarray(a), Tensor(cupy.asarray(a)))
    assert type(on_gpu) is cupy.ndarray  # the first leaf's library gives the results
    launches = counters()["launches"] if fake_driver() else None
    got = fn(a, Tensor())  # the same type, on the host: a static argument, and the CPU runs the call
    assert type(got) is np.ndarray
    compare(a * 2, got)
    if launches is not None:
        assert counters()["launches"] == launches
