"""Arrays in GPU memory as a call's leaves, and results of the caller's kind of array.

An argument with `__cuda_array_interface__` (CuPy, PyTorch, Numba, strider's DeviceArray), or only
`__dlpack__` on a CUDA device (JAX, array-API libraries), becomes a _C.DeviceArray leaf with no
copy: the dispatcher lays it out like a NumPy array and the kernels read and write it in place.
Results come back as the caller's kind of array (CuPy arrays for CuPy arguments, tensors for
PyTorch ones, JAX arrays for JAX ones, DeviceArray otherwise), allocated by that library or
imported from strider's memory, and the kernels run on the library's current stream (the legacy
default stream for the others), so a call queues after the work that made its arguments and
before the work that reads its results, without waiting for either.
"""
import sys

import numpy as np

from . import _C

# CUDA's legacy default stream (CU_STREAM_LEGACY): what a library's "stream 0" is
_LEGACY_STREAM = 1
_TYPESTR_DTYPES = {}


def _dtype(typestr):
    dtype = _TYPESTR_DTYPES.get(typestr)
    if dtype is None:
        dtype = _TYPESTR_DTYPES[typestr] = np.dtype(typestr)
    return dtype


def _contiguous_strides(shape, itemsize):
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


class _Generic:
    """Arrays known only by __cuda_array_interface__: results are DeviceArrays on memory strider
    allocates; the kernels run on the legacy default stream, which orders them with every
    blocking stream of the process."""

    name = "cuda_array_interface"

    def __init__(self, ordinal):
        self.ordinal = ordinal

    def leaf(self, value):
        cai = value.__cuda_array_interface__
        ptr, readonly = cai["data"]
        dtype = _dtype(cai["typestr"])
        shape = tuple(cai["shape"])
        strides = cai.get("strides") or _contiguous_strides(shape, dtype.itemsize)
        if cai.get("mask") is not None:
            raise TypeError("masked __cuda_array_interface__ arrays are not supported")
        return _C.DeviceArray(ptr, shape, strides, dtype, not readonly, _C.cuda_pointer_ordinal(ptr) if ptr else
                              self.ordinal, value)

    def stream(self):
        return _LEGACY_STREAM

    def empty(self, shape, typenum):
        arr = _C.DeviceArray.empty(self.ordinal, shape, typenum)
        return arr, arr.ptr

    def view(self, owner, ptr, shape, strides, typenum, writeable):
        return _C.DeviceArray(ptr, shape, strides, _NUMS[typenum], writeable, self.ordinal, owner)


    def finish(self, result):
        return result


class _Dlpack(_Generic):
    """Arrays known only by DLPack: their producer orders its work before the legacy default
    stream, where the kernels run; results are DeviceArrays, which export DLPack."""

    name = "dlpack"
    writeable = True

    def leaf(self, value):
        return _C.DeviceArray.from_dlpack(value, _LEGACY_STREAM, self.writeable)


class _Jax(_Dlpack):
    """JAX arrays: immutable, so the function may not write into them (NumPy's error for a
    read-only array); results are imported into JAX through DLPack once the kernels are queued,
    which makes JAX's stream wait for them."""

    name = "jax"
    writeable = False

    def __init__(self, ordinal):
        super().__init__(ordinal)
        import jax.dlpack
        self.from_dlpack = jax.dlpack.from_dlpack

    def finish(self, result):
        if isinstance(result, _C.DeviceArray):
            return self.from_dlpack(result)
        if isinstance(result, (tuple, list)):
            return type(result)(self.finish(r) for r in result)
        if isinstance(result, dict):
            return {k: self.finish(v) for k, v in result.items()}
        return result


class _Cupy(_Generic):
    name = "cupy"

    def __init__(self, ordinal):
        super().__init__(ordinal)
        import cupy
        self.cupy = cupy

    def leaf(self, value):
        return _C.DeviceArray(value.data.ptr, value.shape, value.strides, value.dtype, True, value.device.id, value)

    def stream(self):
        return self.cupy.cuda.get_current_stream().ptr or _LEGACY_STREAM

    def empty(self, shape, typenum):
        with self.cupy.cuda.Device(self.ordinal):
            arr = self.cupy.empty(shape, _NUMS[typenum])
        return arr, arr.data.ptr

    def view(self, owner, ptr, shape, strides, typenum, writeable):
        cupy = self.cupy
        size = int(owner.data.mem.size) if owner.data.mem is not None else 0
        memory = cupy.cuda.UnownedMemory(ptr, size, owner, self.ordinal)
        return cupy.ndarray(shape, _NUMS[typenum], cupy.cuda.MemoryPointer(memory, 0), strides)


class _Torch(_Generic):
    name = "torch"

    def __init__(self, ordinal):
        super().__init__(ordinal)
        import torch
        self.torch = torch
        self.dtypes = {np.dtype(k): v for k, v in ((np.bool_, torch.bool), (np.int32, torch.int32),
                                                   (np.int64, torch.int64), (np.float32, torch.float32),
                                                   (np.float64, torch.float64))}
        self.np_dtypes = {v: k for k, v in self.dtypes.items()}

    def leaf(self, value):
        if value.requires_grad:
            raise TypeError("a tensor that requires grad: strider does not record gradients; pass t.detach()")
        dtype = self.np_dtypes.get(value.dtype)
        if dtype is None:
            raise TypeError(f"a tensor of dtype {value.dtype}")
        item = dtype.itemsize
        return _C.DeviceArray(value.data_ptr(), tuple(value.shape), tuple(s * item for s in value.stride()), dtype,
                              True, value.device.index, value)

    def stream(self):
        return self.torch.cuda.current_stream(self.ordinal).cuda_stream or _LEGACY_STREAM

    def empty(self, shape, typenum):
        t = self.torch.empty(tuple(shape), dtype=self.dtypes[_NUMS[typenum]], device=f"cuda:{self.ordinal}")
        return t, t.data_ptr()

    def view(self, owner, ptr, shape, strides, typenum, writeable):
        dtype = _NUMS[typenum]
        base = owner.untyped_storage().data_ptr()
        return self.torch.as_strided(owner, tuple(shape), tuple(s // dtype.itemsize for s in strides),
                                     (ptr - base) // dtype.itemsize)


# NumPy's type numbers (what the C++ side passes) and their dtypes
_NUMS = {np.dtype(t).num: np.dtype(t) for t in (np.bool_, np.int32, np.int64, np.float32, np.float64,
                                                 np.intc, np.int_, np.longlong)}


def _library(value):
    """The kind of array `value` is, by its module (cupy, torch, jax) or else by the protocol it
    offers."""
    module = type(value).__module__.split(".")[0]
    if module == "cupy" and "cupy" in sys.modules:
        return _Cupy
    if module == "torch" and "torch" in sys.modules:
        return _Torch
    if module in ("jax", "jaxlib") and "jax" in sys.modules:
        return _Jax
    return _Generic if hasattr(value, "__cuda_array_interface__") else _Dlpack


_HOST_TYPES = {np.ndarray, int, float, bool, type(None)}


def on_device(value):
    """True for an array in GPU memory: __cuda_array_interface__, or a DLPack device of kind
    CUDA or CUDA managed memory."""
    if type(value) in _HOST_TYPES or isinstance(value, (np.generic, type)):  # a class: its methods are unbound
        return False
    if isinstance(value, _C.DeviceArray) or hasattr(value, "__cuda_array_interface__"):
        return True
    device = getattr(value, "__dlpack_device__", None)
    return device is not None and device()[0] in (2, 13)  # kDLCUDA, kDLCUDAManaged


_KINDS = {}


def _kind(library, ordinal):
    """The kind object of a library's arrays on one device (made once: torch's dtype tables)."""
    kind = _KINDS.get((library, ordinal))
    if kind is None:
        kind = _KINDS[library, ordinal] = library(ordinal)
    return kind


def classify(value):
    """(DeviceArray leaf, kind) for an array in GPU memory of a library (the dispatcher asks, in C++,
    for each argument value it does not know), else None."""
    if not on_device(value):
        return None
    library = _library(value)
    leaf = _kind(library, 0).leaf(value)
    return leaf, _kind(library, leaf.ordinal)


def to_numpy(array):
    """A NumPy copy of a DeviceArray (tests, and callers with no array library)."""
    out = np.empty(array.shape, array.dtype)
    if out.size:
        lo = sum(s * (n - 1) for s, n in zip(array.strides, array.shape) if s < 0)
        hi = sum(s * (n - 1) for s, n in zip(array.strides, array.shape) if s > 0) + array.dtype.itemsize
        span = np.empty(hi - lo, np.uint8)
        _C.cuda_download(array.ordinal, array.ptr + lo, span)
        out[...] = np.ndarray(array.shape, array.dtype, span, -lo, array.strides)
    return out
