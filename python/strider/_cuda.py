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


class _Generic:
    """Arrays known only by __cuda_array_interface__: results are DeviceArrays on memory strider
    allocates; the kernels run on the legacy default stream, which orders them with every
    blocking stream of the process. The dispatcher reads the arguments itself (csrc/python/
    device_leaf.cc, by `protocol`) and, for a library whose results need it (`wraps`), enters
    Python once per call: its kind's call()."""

    protocol = "cuda_array_interface"
    writeable = True  # DLPack imports: whether the function may write into them
    wraps = False

    def __init__(self, ordinal):
        self.ordinal = ordinal

    def call(self, run, temps):
        """run(stream, temporaries) on the library's current stream, with its arrays as the
        temporaries (`temps`: (shape, NumPy type number) each), and the result as its arrays."""
        return self.finish(run(self.stream(), [self.empty(shape, typenum) for shape, typenum in temps]))

    def stream(self):
        return _LEGACY_STREAM

    def empty(self, shape, typenum):
        arr = _C.DeviceArray.empty(self.ordinal, shape, typenum)
        return arr, arr.ptr

    def finish(self, result):
        """The result with each DeviceArray in it as the library's array."""
        if isinstance(result, _C.DeviceArray):
            return self.wrap(result)
        if isinstance(result, tuple) and hasattr(result, "_fields"):  # a namedtuple
            return type(result)(*(self.finish(r) for r in result))
        if isinstance(result, (tuple, list)):
            return type(result)(self.finish(r) for r in result)
        if isinstance(result, dict):
            return {k: self.finish(v) for k, v in result.items()}
        return result

    def wrap(self, array):
        return array


class _Dlpack(_Generic):
    """Arrays known only by DLPack: their producer orders its work before the legacy default
    stream, where the kernels run; results are DeviceArrays, which export DLPack."""

    protocol = "dlpack"


class _Jax(_Dlpack):
    """JAX arrays: immutable, so the function may not write into them (NumPy's error for a
    read-only array); results are imported into JAX through DLPack once the kernels are queued,
    which makes JAX's stream wait for them. XLA imports only compact layouts (a transposition of
    a dense buffer): a result with other strides (a slice, a broadcast, a reversal) is copied to a
    C-contiguous one on the device first, which JAX's immutable arrays cannot tell apart."""

    writeable = False
    wraps = True

    def __init__(self, ordinal):
        super().__init__(ordinal)
        import jax.dlpack
        self.from_dlpack = jax.dlpack.from_dlpack

    def wrap(self, array):
        if not _compact(array):
            array = _contiguous(array)
        return self.from_dlpack(array)


def _compact(array):
    """Whether XLA's DLPack import takes `array`'s strides: some order of its axes makes them
    dense, axes of length 1 aside (its StridesToLayout)."""
    item = array.dtype.itemsize
    dense = item
    for axis in sorted(range(len(array.shape)), key=lambda a: (array.strides[a], -a)):
        if array.shape[axis] > 1 and array.strides[axis] != dense:
            return False
        dense *= array.shape[axis]
    return True


_CONTIGUOUS = {}


def _c_order_copy(a):
    # strider's own np.ascontiguousarray: NumPy's, called from strider's files, would not trace
    from ._creation import ascontiguousarray
    return ascontiguousarray(a)


def _contiguous(array):
    """A C-contiguous copy of a DeviceArray, made on its device by a compiled np.ascontiguousarray
    (on the legacy default stream, after the kernels that wrote `array`). A call that traced
    wraps its results with its trace still current: the copy is a call of its own, not a step
    of that trace."""
    from ._api import compile
    from ._tracer import untraced
    if "fn" not in _CONTIGUOUS:
        _CONTIGUOUS["fn"] = compile(_c_order_copy, target="cuda")
    with untraced():
        return _CONTIGUOUS["fn"](array)


class _Cupy(_Generic):
    """CuPy arrays: temporaries from CuPy's memory pool, kernels on CuPy's current stream, results
    as CuPy arrays (views of an argument view its memory)."""

    wraps = True

    def __init__(self, ordinal):
        super().__init__(ordinal)
        import cupy
        self.cupy = cupy

    def stream(self):
        return self.cupy.cuda.get_current_stream().ptr or _LEGACY_STREAM

    def empty(self, shape, typenum):
        with self.cupy.cuda.Device(self.ordinal):
            arr = self.cupy.empty(shape, _NUMS[typenum])
        return arr, arr.data.ptr

    def wrap(self, array):
        cupy, owner = self.cupy, array.owner
        size = int(owner.data.mem.size) if owner.data.mem is not None else 0
        memory = cupy.cuda.UnownedMemory(array.ptr, size, owner, self.ordinal)
        return cupy.ndarray(array.shape, array.dtype, cupy.cuda.MemoryPointer(memory, 0), array.strides)


class _Torch(_Generic):
    """PyTorch tensors: temporaries from its caching allocator, kernels on its current stream,
    results as tensors (views of an argument are as_strided views of it)."""

    wraps = True

    def __init__(self, ordinal):
        super().__init__(ordinal)
        import torch
        self.torch = torch
        # torch names its dtypes as NumPy does (its uint16/32/64 since 2.3)
        self.dtypes = {np.dtype(name): getattr(torch, name) for name in _C.dtype_names() if hasattr(torch, name)}

    def stream(self):
        return self.torch.cuda.current_stream(self.ordinal).cuda_stream or _LEGACY_STREAM

    def empty(self, shape, typenum):
        t = self.torch.empty(tuple(shape), dtype=self.dtypes[_NUMS[typenum]], device=f"cuda:{self.ordinal}")
        return t, t.data_ptr()

    def wrap(self, array):
        owner, item = array.owner, array.dtype.itemsize
        base = owner.untyped_storage().data_ptr()
        return self.torch.as_strided(owner, array.shape, tuple(s // item for s in array.strides),
                                     (array.ptr - base) // item)


# NumPy's type numbers (what the C++ side passes) and their dtypes
_NUMS = {np.dtype(t).num: np.dtype(t) for t in (*_C.dtype_names(), np.intc, np.int_, np.longlong, np.uintc, np.uint,
                                                 np.ulonglong)}


def library(value):
    """The kind of array `value` (in GPU memory) is, by its module (cupy, torch, jax) or else by
    the protocol it offers (the dispatcher asks once per type)."""
    module = type(value).__module__.split(".")[0]
    if module == "cupy" and "cupy" in sys.modules:
        return _Cupy
    if module == "torch" and "torch" in sys.modules:
        return _Torch
    if module in ("jax", "jaxlib") and "jax" in sys.modules:
        return _Jax
    return _Generic if hasattr(value, "__cuda_array_interface__") else _Dlpack


def kind(cls, ordinal):
    """The kind object of a library's arrays (`cls`, from library()) on one device (the dispatcher
    asks once per pair)."""
    return cls(ordinal)


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
