"""The GPU suite: target="cuda" on a real device, or on the emulated one (tests/cuda_fake: a fake
driver and NVRTC that run the emitted CUDA C on the CPU) where STRIDER_CUDA_DRIVER and
STRIDER_NVRTC name it, as tests/python/test_cuda_device.py does in CI. Skipped, saying why, where
neither is there."""
import ctypes
import os

import numpy as np
import pytest

from strider import _C, _cuda

WHY = _C.cuda_unavailable_reason()
# every test module here: pytestmark = needs_cuda
needs_cuda = pytest.mark.skipif(bool(WHY), reason=f"CUDA is unavailable: {WHY}")


def fake_driver():
    """The emulated driver's test hooks (ctypes), or None on a real GPU."""
    path = os.environ.get("STRIDER_CUDA_DRIVER", "")
    if not path:
        return None
    lib = ctypes.CDLL(path)
    return lib if hasattr(lib, "strider_fake_cuda_counters") else None


COUNTERS = ("launches", "htod_bytes", "dtoh_bytes", "dtod_bytes", "live_allocations", "modules", "live_modules",
            "htod_copies", "dtoh_copies", "memsets")


def counters():
    """The emulated driver's counters as a dict (launches, bytes copied each way, ...)."""
    lib = fake_driver()
    out = (ctypes.c_longlong * len(COUNTERS))()
    lib.strider_fake_cuda_counters(out, len(COUNTERS))
    return dict(zip(COUNTERS, out))


def to_device(*arrays):
    """DeviceArrays holding copies of `arrays`, which must be views of one base array (or one
    array): the copies alias as the originals do."""
    base = arrays[0]
    while isinstance(base.base, np.ndarray):
        base = base.base
    assert base.flags.c_contiguous
    buf = _C.DeviceBuffer(0, max(base.nbytes, 1))
    if base.nbytes:
        _C.cuda_upload(0, buf.ptr, base)
    start = base.__array_interface__["data"][0]
    out = [_C.DeviceArray(buf.ptr + a.__array_interface__["data"][0] - start, a.shape, a.strides, a.dtype,
                          a.flags.writeable, 0, buf) for a in arrays]
    return out if len(out) > 1 else out[0]


to_numpy = _cuda.to_numpy
