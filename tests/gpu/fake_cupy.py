"""Just enough of CuPy's API for strider's CuPy kind (python/strider/_cuda.py: _Cupy), on strider's
own device memory: what test_array_libraries.py runs where CuPy is not installed. Its arrays report
their module as "cupy", as CuPy's do, and export __cuda_array_interface__ (version 3), counting
how often it is read."""
import numpy as np

from strider import _C
from strider._cuda import to_numpy


class Stream:
    def __init__(self, ptr):
        self.ptr = ptr


class cuda:  # noqa: N801 - CuPy's namespace
    current_stream = Stream(0)  # 0: the legacy default stream, as CuPy's null stream

    @staticmethod
    def get_current_stream():
        return cuda.current_stream

    class Device:
        def __init__(self, ordinal):
            self.ordinal = ordinal

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    class UnownedMemory:
        def __init__(self, ptr, size, owner, ordinal):
            self.ptr, self.size, self.owner, self.device_id = ptr, size, owner, ordinal

    class MemoryPointer:
        def __init__(self, mem, offset):
            self.mem, self.ptr = mem, mem.ptr + offset


class ndarray:  # noqa: N801 - CuPy's name
    interface_reads = 0

    def __init__(self, shape, dtype, memptr, strides=None):
        self.shape, self.dtype, self.data = tuple(shape), np.dtype(dtype), memptr
        if strides is None:
            strides, step = [], self.dtype.itemsize
            for n in reversed(self.shape):
                strides.insert(0, step)
                step *= max(n, 1)
        self.strides = tuple(strides)

    @property
    def __cuda_array_interface__(self):
        ndarray.interface_reads += 1
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.data.ptr, False),
                "strides": self.strides, "version": 3, "stream": 1}

    def get(self):
        """A NumPy copy (CuPy's ndarray.get)."""
        return to_numpy(_C.DeviceArray(self.data.ptr, self.shape, self.strides, self.dtype, True, 0, self))


ndarray.__module__ = "cupy"


def empty(shape, dtype):
    nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
    buffer = _C.DeviceBuffer(0, max(nbytes, 1))
    return ndarray(shape, dtype, cuda.MemoryPointer(cuda.UnownedMemory(buffer.ptr, nbytes, buffer, 0), 0))


def asarray(host):
    """A copy of a NumPy array in device memory (CuPy's cupy.asarray)."""
    host = np.ascontiguousarray(host)
    out = empty(host.shape, host.dtype)
    if host.nbytes:
        _C.cuda_upload(0, out.data.ptr, host)
    return out
