"""The CUDA backend where no GPU is needed: strider.compile(target="cuda") says why it cannot run,
f.cuda_source(*args) shows the kernels of a call signature (checked on the key patterns), and
what it shows compiles with NVRTC (skipped, with the reason, where NVRTC is not installed)."""
import gc
import sys

import numpy as np
import pytest

import strider
from strider import _C

NVRTC = _C.nvrtc_unavailable_reason()
needs_nvrtc = pytest.mark.skipif(bool(NVRTC), reason=f"NVRTC is unavailable: {NVRTC}")
ARCHS = ("sm_90", "sm_80")


def decode(boxes, deltas, a, b):
    boxes[:, 0::4] = np.exp(deltas[:, 0::4]) * 2.0  # a strided view store
    return boxes.sum(axis=1), np.argmax(deltas, axis=1), a[:, None] + b, a[::-1] * 3


def decode_args():
    rng = np.random.default_rng(0)
    return (rng.random((100, 8), np.float32), rng.random((100, 8), np.float32), np.arange(5.0), np.arange(7.0))


def stages(fn, *args):
    """Per stage: a CudaStage, or the reason (str) the backend refuses it."""
    program = strider.compile(fn, target="cuda")._lookup(args, {})[0].program
    return _C.cuda_source(program)


WHY = _C.cuda_unavailable_reason()
without_cuda = pytest.mark.skipif(not WHY, reason="checks what happens where CUDA is unavailable (tests/gpu runs it)")


@without_cuda
def test_cuda_target_says_why_it_cannot_run():
    f = strider.compile(decode, target="cuda")
    with pytest.raises(strider.StriderError, match="CUDA is unavailable: " + WHY.split(" (")[0]):
        f(*decode_args())


@without_cuda
def test_cuda_target_leaves_arguments_alone_and_cpu_stays_default():
    args = decode_args()
    before = args[0].copy()
    with pytest.raises(strider.StriderError):
        strider.compile(decode, target="cuda")(*args)
    np.testing.assert_array_equal(args[0], before)
    assert strider.compile(decode).target == "cpu"
    with pytest.raises(ValueError, match="target 'tpu' is not available"):
        strider.compile(decode, target="tpu")


class DeviceArray:
    """What CuPy arrays show: the CUDA array interface (never read here)."""
    __cuda_array_interface__ = {"shape": (3,), "typestr": "<f4", "data": (0, False), "version": 3}


class DLPackOnGpu:
    """What a torch tensor on a GPU shows: a DLPack device of kind CUDA."""

    def __dlpack_device__(self):
        return (2, 0)


@without_cuda
@pytest.mark.parametrize("device_array", [DeviceArray(), DLPackOnGpu(), [np.ones(3), {"x": DeviceArray()}]],
                         ids=["cuda_array_interface", "dlpack", "nested"])
def test_auto_target_follows_the_arguments(device_array):
    f = strider.compile(lambda x, y: x * 2 + 1, target="auto")
    x = np.arange(4.0)
    np.testing.assert_array_equal(f(x, 1), x * 2 + 1)  # NumPy arrays: the CPU
    with pytest.raises(strider.StriderError, match="cannot run on a GPU"):
        f(x, device_array)


@pytest.mark.parametrize("device_array", [DeviceArray(), _C.DeviceArray(4096, (3,), (4,), np.dtype(np.float32), True, 0, None)],
                         ids=["cuda_array_interface", "DeviceArray"])
def test_cpu_target_refuses_arrays_in_gpu_memory_by_name(device_array):
    g = strider.compile(lambda x, kind: x * 2 if kind is np.ndarray else x)  # a hashable value: static
    np.testing.assert_array_equal(g(np.arange(3.0), np.ndarray), np.arange(3.0) * 2)  # a class is no array
    f = strider.compile(lambda x, y: x * 2 + y)
    with pytest.raises(strider.UnsupportedError, match="array in GPU memory .* with target='cpu'.*target='cuda'"):
        f(np.arange(3.0), device_array)


def test_a_dlpack_tensor_in_host_memory_is_refused_and_left_to_its_producer():
    a = np.arange(4.0)
    refs = sys.getrefcount(a)
    with pytest.raises(TypeError, match="device type 1, not CUDA memory"):
        _C.DeviceArray.from_dlpack(a, None)  # NumPy's capsule: its own destructor frees it
    gc.collect()
    assert sys.getrefcount(a) == refs


def test_unavailable_reason_without_a_driver_is_one_sentence():
    why = _C.cuda_unavailable_reason()
    if not why:
        pytest.skip(f"CUDA is available here ({_C.cuda_device_arch()})")
    assert "\n" not in why and why[0].islower()


def test_cuda_source_shows_the_key_patterns():
    text = strider.compile(decode).cuda_source(*decode_args())
    # one listing line per stage, naming its launches
    assert text.count("// stage ") == 5
    assert "<<<1, 256>>>" in text
    # the strided store: boxes[:, 0::4] of a (100, 8) array, both columns of the view as one axis
    assert "const float a0_0 = s1[4 * i0];" in text
    assert "s0[4 * i0] = " in text
    # the row sum: float32 accumulated in double, a thread per row of 8
    assert "step(acc& a, float x, long long r) { a.v = st::add(a.v, st::convert<double>(x)); }" in text
    assert "step(a, s0[8 * i0 + i1], r++);" in text
    # argmax: the first NaN, else the first maximum
    assert "if (a.at < 0 || st::replaces<true>(x, a.v)) { a.v = x; a.at = r; }" in text
    # a[:, None] + b: broadcasts read with one index each
    assert "const double a0_0 = s2[i0];" in text and "const double a0_1 = s3[i1];" in text
    # a[::-1]: a negative stride from the last element
    assert "s2[4 - i0]" in text


def test_cuda_source_names_a_refused_stage():
    # the fold's index would be the split axes', not the array's
    fn = strider.compile(lambda x: x.sum(axis=0), schedule={0: "split(i0, a, b, 3)"})
    program = strider.compile(lambda x: x.sum(axis=0), target="cuda", schedule={0: "split(i0, a, b, 3)"})._lookup(
        (np.ones(10),), {})[0].program
    (why,) = _C.cuda_source(program)
    assert why == "CUDA backend cannot compile op0 (sum): its schedule splits a loop of a reduction with a tail"
    assert fn.cuda_source(np.ones(10)) == f"// stage 0: not compiled for CUDA: {why}\n"


def test_cuda_source_shows_the_stages_as_fused_for_a_gpu():
    def shift(x, a):
        x[1:] = a * 2.0
        x[:-1] = x[1:]  # one copy reading what other points write: through a temporary
        return x[:-1] + 1.0

    args = (np.zeros(9), np.arange(8.0))
    # one loop nest keeps NumPy's order by running its points in order: one stage on the CPU
    assert "stage 0: domain [i0=8] ops op0 op1 op2 op3 registers" in str(strider.compile(shift).explain(*args))
    # every point at once: x[:-1] = x[1:] goes through a temporary, stored by the next kernel
    text = strider.compile(shift).cuda_source(*args)
    assert text.count("// stage ") == 2 and "not compiled" not in text
    explanation = str(strider.compile(shift, target="cuda").explain(*args))
    assert "stage 0: domain [i0=8] ops op0 op1 op2 registers" in explanation
    assert "buffered: op2 (copy @ test_cuda.py:138) writes %s6, copied into %s0 after it" in explanation
    assert "it writes %s0 where an earlier op of the stage wrote it at another point" in explanation


def softmax(x):
    m = np.max(x, axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / np.sum(e, axis=-1, keepdims=True)


def test_a_compute_at_group_is_emitted_as_one_kernel_per_stage():
    x = np.ones((64, 81), np.float32)
    assert "folded %s2[81]" in str(strider.compile(softmax).explain(x))  # the CPU's default groups them
    emitted = stages(softmax, x)
    assert [type(s) for s in emitted] == [_C.CudaStage] * 3
    # the exponentials are stored in device memory by one kernel and read by the next
    assert "s2[81 * i0 + i1] = " in emitted[1].source
    assert "s2[81 * i0 + i1]" in emitted[2].source


def test_long_rows_and_columns_take_the_warp_block_grid_and_column_shapes():
    kernels = {}
    for name, shape, axis in (("warp", (64, 1000), 1), ("block", (64, 10000), 1), ("grid", (200000,), None),
                              ("columns", (100000, 4), 0)):
        (stage,) = stages(lambda x, axis=axis: x.max(axis=axis), np.ones(shape, np.float32))
        kernels[name] = stage
    assert "f += 32" in kernels["warp"].source
    assert "__shared__ acc part[8];" in kernels["block"].source
    grid = kernels["grid"]
    assert [l.kernel for l in grid.launches] == [grid.name + "_partial", grid.name]
    assert grid.scratch_bytes > 0
    # boxes.max(axis=0) over 100000 boxes: a thread per chunk of a column, not 4 threads in all
    columns = kernels["columns"]
    assert [l.kernel for l in columns.launches] == [columns.name + "_partial", columns.name]
    assert columns.launches[0].blocks * columns.launches[0].threads >= 1000
    assert "for (int f = chunk * len; f < end; ++f) {" in columns.source


@needs_nvrtc
@pytest.mark.parametrize("arch", ARCHS)
def test_emitted_stages_compile(arch):
    for stage in stages(decode, *decode_args()):
        assert _C.nvrtc_compile(stage.source, arch, stage.name + ".cu")[:4] == b"\x7fELF"


@needs_nvrtc
def test_nvrtc_error_carries_its_log():
    with pytest.raises(RuntimeError, match="could not compile bad.cu for sm_80(.|\n)*no_such_function"):
        _C.nvrtc_compile('extern "C" __global__ void k() { no_such_function(); }', "sm_80", "bad.cu")


@needs_nvrtc
def test_cubins_are_cached_on_disk_per_arch():
    def f(x):
        return np.sqrt(x) + 1.5

    x = np.ones(1237, np.float32)  # a shape no other test compiles
    program = strider.compile(f, target="cuda")._lookup((x,), {})[0].program
    first = _C.cuda_compile(program, "sm_90")
    again = _C.cuda_compile(program, "sm_90")
    other = _C.cuda_compile(program, "sm_80")
    assert [hit for _, _, hit in first] == [False]
    assert [hit for _, _, hit in again] == [True]
    assert again[0][1] == first[0][1]
    assert [hit for _, _, hit in other] == [False]
