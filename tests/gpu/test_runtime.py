"""target="cuda" end to end: NumPy arguments copied to the device and back, arrays in GPU memory
read and written in place, views returned as views, aliasing and overlapping arguments, stages the
CUDA backend refuses run on the host between copies, the error flag, scratch memory, the caller's
kind of result, target="auto". Compared with NumPy on every call."""
import os
import sys

import numpy as np
import pytest
from conftest import counters, fake_driver, needs_cuda, to_device, to_numpy

import strider
from strider import _C
from strider.testing import compare

pytestmark = needs_cuda
emulated = pytest.mark.skipif(fake_driver() is None, reason="counts the emulated driver's calls")


def cuda(fn, **options):
    return strider.compile(fn, target="cuda", **options)


def test_numpy_arguments_come_back_written_through_views():
    def f(a, b):
        a[1:, ::2] += b[1:, ::2] * 2.0
        return a[0], np.sqrt(b) + 1.0

    a, b = np.arange(48, dtype=np.float32).reshape(6, 8), np.linspace(0, 4, 48, dtype=np.float32).reshape(6, 8)
    ea, eb = a.copy(), b.copy()
    expected = f(ea, eb)
    got = cuda(f)(a, b)
    compare(ea, a, what="argument a")
    compare(expected[0], got[0])
    compare(expected[1], got[1])
    assert np.shares_memory(got[0], a) and isinstance(got[1], np.ndarray)


def test_device_arguments_are_written_in_place_with_no_copy():
    def f(a):
        a[::2] = a[::2] * 2.0 + 1.0
        return a[1:, ::-1]

    host = np.arange(40, dtype=np.float64).reshape(8, 5)
    d = to_device(host)
    expected_arg = host.copy()
    expected = f(expected_arg)
    fn = cuda(f)
    fn(to_device(host))  # compiled and loaded: the next call only launches
    before = counters() if fake_driver() else None
    got = fn(d)
    if before is not None:
        after = counters()
        assert after["htod_bytes"] == before["htod_bytes"] and after["dtoh_bytes"] == before["dtoh_bytes"]
        assert after["launches"] > before["launches"]
    assert isinstance(got, _C.DeviceArray)
    compare(expected_arg, to_numpy(d), what="argument")
    compare(expected, to_numpy(got))
    # a view of the argument: its memory, NumPy's strides
    assert got.ptr == d.ptr + 5 * 8 + 4 * 8 and got.strides == (40, -8) and got.owner is d


def test_aliasing_device_arguments_keep_numpy_order():
    def f(x, y):
        x += y  # x and y overlap: NumPy reads y as it was before the write
        return x

    base = np.arange(20, dtype=np.int64)
    ex = base.copy()
    expected = f(ex[2:12], ex[0:10])
    x, y = to_device(base[2:12], base[0:10])
    got = cuda(f)(x, y)
    compare(expected, to_numpy(got))
    compare(ex, to_numpy(_C.DeviceArray(x.ptr - 16, (20,), (8,), np.dtype(np.int64), True, 0, x.owner)),
            what="argument after the call")


def test_overlapping_assignments_run_on_the_device_with_numpy_semantics():
    # each reads elements that other points (threads) overwrite: the copy goes through a
    # temporary in a kernel of its own, and the add is not fused with its store
    def f(a):
        a[:] = a[::-1]
        a[1:] = a[:-1] + 1
        a[:-1] += a[1:]
        return a

    a = np.arange(10, dtype=np.int32)
    e = a.copy()
    f(e)
    fn = cuda(f)
    compare(e, fn(a), what="numpy argument")
    d = to_device(np.arange(10, dtype=np.int32))
    fn(d)
    compare(e, to_numpy(d), what="device argument")
    explanation = fn.explain(a)
    assert not any(explanation.cuda_fallbacks), explanation.cuda_fallbacks
    assert "buffered: op0 (copy" in str(explanation), explanation


def test_a_split_with_a_tail_skips_the_points_past_the_extent():
    def f(a, b, c):
        b[:, 1:] = a[:, ::-1] * 2 + 1
        return c.sum(axis=1)

    a = np.arange(60, dtype=np.float32).reshape(6, 10)
    b = np.zeros((6, 11), np.float32)
    c = np.arange(42, dtype=np.float32).reshape(6, 7)
    eb = b.copy()
    e = f(a, eb, c)
    # 4 divides neither 10 nor 7: the elementwise stage runs on the device, skipping the points
    # past 10; the reduction's fold index would not be the unsplit axis's: it runs on the host
    fn = cuda(f, schedule={0: "split(i1, i1o, i1i, 4) reorder(i1i, i0, i1o)", 1: "split(i1, i1o, i1i, 4)"})
    compare(e, fn(a, b, c))
    compare(eb, b, what="argument after the call")
    fallbacks = fn.explain(a, b, c).cuda_fallbacks
    assert not fallbacks[0] and "splits a loop of a reduction with a tail" in fallbacks[1], fallbacks
    # loops i1i, i0, i1o are i0, i1, i2 in the kernel
    assert "if (i2 * 4 + i0 >= 10) continue;" in fn.cuda_source(a, b, c)


def test_integer_power_with_negative_exponent_raises_numpys_error():
    fn = cuda(lambda a, b: a ** b)
    with pytest.raises(ValueError, match="Integers to negative integer powers"):
        fn(np.arange(4, dtype=np.int64), np.array([1, 2, -1, 3]))
    np.testing.assert_array_equal(fn(np.arange(4, dtype=np.int64), np.array([1, 2, 0, 3])), [0, 1, 1, 27])


def test_data_dependent_ops_run_as_kernels():
    def f(scores, boxes, idx, needles):
        keep = scores > 0.3
        kept = boxes[keep]  # compress
        order = np.argsort(-scores[keep], kind="stable")[:5]  # a top-k (ties: NumPy's default sort is not stable)
        flat = np.nonzero(scores > 0.9)[0]
        acc = np.zeros(6)
        np.add.at(acc, idx, scores[: idx.shape[0]])
        return kept[order], flat, acc, np.cumsum(boxes, axis=1), np.searchsorted(np.sort(scores), needles), boxes[idx]

    rng = np.random.default_rng(0)
    scores = rng.random(3000).round(2)  # ties
    args = (scores, rng.random((3000, 4)), np.array([1, 5, 1, 0, 5, 5]), np.array([0.0, 0.5, 2.0]))
    fn = cuda(f)
    for e, g in zip(f(*args), fn(*args)):
        compare(e, g)
    assert not any(fn.explain(*args).cuda_fallbacks), fn.explain(*args).cuda_fallbacks


def test_a_failing_check_stops_the_call_after_the_writes_before_it():
    def f(x, i, y):
        y[0] = 7.0
        z = x[i]
        y[1] = 8.0
        return z

    fn = cuda(f)
    for y in (np.zeros(2), to_device(np.zeros(2))):
        with pytest.raises(IndexError, match="index 9 is out of bounds for axis 0 with size 5"):
            fn(np.arange(5.0), np.array([1, 9, -7]), y)
        np.testing.assert_array_equal(y if isinstance(y, np.ndarray) else to_numpy(y), [7.0, 0.0])
    assert not any(fn.explain(np.arange(5.0), np.array([1]), np.zeros(2)).cuda_fallbacks)


@pytest.mark.parametrize("shape,axis", [((3, 1 << 17), 1), ((1 << 17, 3), 0), ((5000, 81), 1)])
def test_reductions_of_every_shape(shape, axis):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    fn = cuda(lambda a: (a.sum(axis=axis), a.max(axis=axis), np.argmax(a, axis=axis)))
    # float32 sums fold in double: compared with NumPy's float64 sum, not its float32 pairwise one
    exact_sum = x.astype(np.float64).sum(axis=axis).astype(np.float32)
    for e, g in zip((exact_sum, x.max(axis=axis), np.argmax(x, axis=axis)), fn(x)):
        compare(e, g, rtol=1e-6, atol=1e-5)


def test_softmax_members_of_compute_at_groups_run_as_kernels():
    def softmax(x):
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    x = np.random.default_rng(1).standard_normal((4000, 81)).astype(np.float32)
    compare(softmax(x), cuda(softmax)(x), rtol=1e-5, atol=1e-7)
    d = to_device(x)
    compare(softmax(x), to_numpy(cuda(softmax)(d)), rtol=1e-5, atol=1e-7)


def test_runtime_scalars_and_weak_python_scalars():
    fn = cuda(lambda a, s, t: (a * s + t, t))
    a = np.arange(6, dtype=np.float32)
    for s, t in ((2.5, 1), (np.float32(0.5), 3)):
        e = (a * s + t, t)
        got = fn(a, s, t)
        compare(e[0], got[0])
        assert got[1] == t
        d = fn(to_device(a), s, t)
        compare(e[0], to_numpy(d[0]))


def test_results_are_the_callers_kind_of_array():
    d = to_device(np.ones((3, 4), np.float32))
    r = cuda(lambda a: a.sum(axis=0) * 2)(d)
    assert isinstance(r, _C.DeviceArray)
    cai = r.__cuda_array_interface__
    assert cai["shape"] == (4,) and cai["typestr"] == "<f4" and cai["version"] == 3
    assert cai["stream"] == 1  # its kernels were queued on the legacy stream, not waited for
    compare(np.full(4, 6, np.float32), to_numpy(r))


def test_auto_target_follows_the_arguments():
    fn = strider.compile(lambda a: a * 2 + 1, target="auto")
    a = np.arange(5, dtype=np.int64)
    assert isinstance(fn(a), np.ndarray)
    r = fn(to_device(a))
    assert isinstance(r, _C.DeviceArray)
    compare(a * 2 + 1, to_numpy(r))


def test_detection_head_on_device_arrays():
    from heads import HEADS

    head = HEADS["delta2bbox"]
    args, kwargs = head.make_inputs("small", np.random.default_rng(2), np.float32)
    expected = head.fn(*[a.copy() if isinstance(a, np.ndarray) else a for a in args], **kwargs)
    dev = [to_device(a) if isinstance(a, np.ndarray) else a for a in args]
    got = cuda(head.fn, static_argnames=head.static_argnames)(*dev, **kwargs)
    compare(expected, to_numpy(got), rtol=1e-5, atol=1e-4)


@emulated
def test_no_device_memory_leaks_across_calls():
    fn = cuda(lambda a: (a + 1).sum())
    a = np.arange(1000, dtype=np.float32)
    fn(a)
    live = counters()["live_allocations"]
    for _ in range(5):
        fn(a)
        fn(to_device(a))
    assert counters()["live_allocations"] <= live + 1  # the DeviceBuffer of the last to_device


@emulated
def test_scalars_small_arguments_and_the_error_flag_go_up_in_one_copy():
    def f(a, small, big, k, s):
        return (a ** k) * s + small, big * s  # an integer power: the error flag is cleared too

    a, small, big = np.arange(6, dtype=np.int64), np.full(6, 5, np.int64), np.linspace(0, 1, 20000)
    fn = cuda(f)
    fn(to_device(a), small, big, 2, 3)
    d = to_device(a)
    before = counters()
    got = fn(d, small, big, 3, 2)
    after = counters()
    # one copy for small, k, s and the flag; big (160 KB) on its own
    assert after["htod_copies"] - before["htod_copies"] == 2 and after["memsets"] == before["memsets"]
    assert after["htod_bytes"] - before["htod_bytes"] < big.nbytes + 4096
    expected = f(a, small, big, 3, 2)
    compare(expected[0], got[0] if isinstance(got[0], np.ndarray) else to_numpy(got[0]))
    compare(expected[1], got[1] if isinstance(got[1], np.ndarray) else to_numpy(got[1]))
    with pytest.raises(ValueError, match="negative integer powers"):
        fn(d, small, big, -1, 2)


@emulated
def test_driver_errors_name_the_call_and_leave_the_program_usable():
    fn = cuda(lambda a: a * 3)
    a = np.arange(8, dtype=np.int32)
    fn(a)
    fake_driver().strider_fake_cuda_fail_next(b"cuMemAllocAsync", 2)
    with pytest.raises(RuntimeError, match="cuMemAllocAsync failed: out of memory"):
        fn(a)
    np.testing.assert_array_equal(fn(a), a * 3)


@emulated
def test_identical_stages_share_one_module():
    before = counters()["modules"]
    cuda(lambda a: a * 7 - 2)(np.arange(3.0))
    mid = counters()["modules"]
    cuda(lambda b: b * 7 - 2)(np.arange(3.0))
    assert mid == before + 1 and counters()["modules"] == mid


def _many_stages(x):
    # a sort's passes, a mask's compaction and the scans: a stage each
    order = np.argsort(-x)
    kept = x[x > 0.5]
    return np.cumsum(x)[order], kept * 2, np.sort(kept), np.maximum.accumulate(x[::-1])


@emulated
def test_a_programs_stages_compile_as_a_program_a_thread_and_loaded_kernels_not_again():
    # NVRTC's fixed cost and the prelude's parse are paid once a group (a module each), and a
    # kernel the device holds (another program's same stage) is not compiled again
    x = np.random.default_rng(3).random(300)
    before = counters()["modules"]
    first = cuda(_many_stages)
    first(x)
    stages = sum(1 for why in first.explain(x).cuda_fallbacks if not why)
    loaded = counters()["modules"] - before
    s = first.stats()
    assert s["compiles"] + s["disk_hits"] == stages > loaded >= 1 and loaded <= os.cpu_count()
    again = cuda(_many_stages)
    for expected, got in zip(_many_stages(x), again(x)):
        compare(expected, got)
    s = again.stats()
    assert s["compiles"] == s["disk_hits"] == 0 and counters()["modules"] == before + loaded


def _python_entered(fn, *args):
    """fn(*args) and the Python functions it entered, by name (sys.setprofile sees calls from C++
    too)."""
    entered = []
    sys.setprofile(lambda frame, event, arg: entered.append(frame.f_code.co_name) if event == "call" else None)
    try:
        result = fn(*args)
    finally:
        sys.setprofile(None)
    return result, entered


def test_a_warm_call_with_device_arrays_enters_no_python():
    fn = cuda(lambda a, b: (a * b + 1, a[::2]))
    host = np.arange(12, dtype=np.float32)
    a, b = to_device(host), to_device(host[::-1].copy())
    fn(a, b)
    (r, v), entered = _python_entered(fn, a, b)
    assert entered == []
    assert isinstance(r, _C.DeviceArray) and v.owner is a
    compare(host * host[::-1] + 1, to_numpy(r))
