"""The CUDA device through its driver API (ctypes), for run.py --device cuda: what the device is,
its measured device-to-device copy bandwidth (what a memory-bound kernel can hope for) and the
time of a raw kernel launch (what strider's dispatch path is compared with).

The driver is the library strider loads: $STRIDER_CUDA_DRIVER (the emulated device of the tests)
or libcuda.so.1; same path, same library, so the primary context and the allocations are shared
with strider. Times are wall-clock from Python around a synchronize: the raw launch includes
ctypes' call overhead, as strider's calls include pybind11's.
"""
import ctypes
import os
import statistics
import time
from ctypes import POINTER, byref, c_char_p, c_int, c_size_t, c_uint, c_uint64, c_void_p

# CU_STREAM_LEGACY: the legacy default stream, where strider runs kernels for DeviceArray callers
LEGACY_STREAM = 1

_PROTOTYPES = {
    "cuInit": (c_uint,),
    "cuGetErrorString": (c_int, POINTER(c_char_p)),
    "cuDriverGetVersion": (POINTER(c_int),),
    "cuDeviceGet": (POINTER(c_int), c_int),
    "cuDeviceGetAttribute": (POINTER(c_int), c_int, c_int),
    "cuDeviceGetName": (c_char_p, c_int, c_int),
    "cuDeviceTotalMem_v2": (POINTER(c_size_t), c_int),
    "cuDevicePrimaryCtxRetain": (POINTER(c_void_p), c_int),
    "cuCtxSetCurrent": (c_void_p,),
    "cuStreamSynchronize": (c_void_p,),
    "cuMemAlloc_v2": (POINTER(c_uint64), c_size_t),
    "cuMemFree_v2": (c_uint64,),
    "cuMemcpyDtoDAsync_v2": (c_uint64, c_uint64, c_size_t, c_void_p),
    "cuModuleLoadData": (POINTER(c_void_p), c_char_p),
    "cuModuleUnload": (c_void_p,),
    "cuModuleGetFunction": (POINTER(c_void_p), c_void_p, c_char_p),
    "cuLaunchKernel": (c_void_p, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_void_p, c_void_p,
                       c_void_p),
}
# cuDeviceGetAttribute's attributes (cuda.h's CUdevice_attribute)
_SM_COUNT, _CC_MAJOR, _CC_MINOR = 16, 75, 76


class NoDevice(Exception):
    """CUDA cannot run here; the message says why in one sentence."""


class Driver:
    """The CUDA driver, initialized, with device 0's primary context current on this thread."""

    def __init__(self, ordinal=0):
        self.path = os.environ.get("STRIDER_CUDA_DRIVER") or "libcuda.so.1"
        try:
            self.lib = ctypes.CDLL(self.path)
        except OSError as exc:
            raise NoDevice(f"no NVIDIA driver ({self.path} does not load: {exc})") from exc
        for name, argtypes in _PROTOTYPES.items():
            if hasattr(self.lib, name):  # the emulated driver has only what strider uses
                fn = getattr(self.lib, name)
                fn.argtypes, fn.restype = argtypes, c_int
        self.emulated = hasattr(self.lib, "strider_fake_cuda_counters")
        self.call("cuInit", 0)
        self.device = c_int()
        self.call("cuDeviceGet", byref(self.device), ordinal)
        ctx = c_void_p()
        self.call("cuDevicePrimaryCtxRetain", byref(ctx), self.device)
        self.call("cuCtxSetCurrent", ctx)

    def call(self, name, *args):
        r = getattr(self.lib, name)(*args)
        if r != 0:
            text = c_char_p()
            self.lib.cuGetErrorString(r, byref(text))
            raise RuntimeError(f"CUDA {name} failed: {(text.value or b'error %d' % r).decode()}")

    def attribute(self, attribute):
        value = c_int()
        self.call("cuDeviceGetAttribute", byref(value), attribute, self.device)
        return value.value

    def alloc(self, nbytes):
        ptr = c_uint64()
        self.call("cuMemAlloc_v2", byref(ptr), nbytes)
        return ptr.value

    def free(self, ptr):
        self.call("cuMemFree_v2", ptr)

    def copy(self, dst, src, nbytes, stream=LEGACY_STREAM):
        self.call("cuMemcpyDtoDAsync_v2", dst, src, nbytes, stream)

    def synchronize(self, stream=LEGACY_STREAM):
        self.call("cuStreamSynchronize", stream)


def describe(drv, arch):
    """The device: name, architecture, compute capability, SMs, memory and driver version (None
    where this driver does not say)."""
    name = None
    if hasattr(drv.lib, "cuDeviceGetName"):
        buf = ctypes.create_string_buffer(256)
        drv.call("cuDeviceGetName", buf, len(buf), drv.device)
        name = buf.value.decode()
    memory = None
    if hasattr(drv.lib, "cuDeviceTotalMem_v2"):
        total = c_size_t()
        drv.call("cuDeviceTotalMem_v2", byref(total), drv.device)
        memory = round(total.value / 2**30, 1)
    version = c_int()
    drv.call("cuDriverGetVersion", byref(version))
    return {
        "name": name or ("emulated CUDA device" if drv.emulated else None),
        "emulated": drv.emulated,
        "driver_library": drv.path,
        "driver_version": f"{version.value // 1000}.{version.value % 1000 // 10}",
        "arch": arch,
        "compute_capability": f"{drv.attribute(_CC_MAJOR)}.{drv.attribute(_CC_MINOR)}",
        "multiprocessors": drv.attribute(_SM_COUNT),
        "memory_gib": memory,
    }


def copy_bandwidth(drv, nbytes, reps=10, trials=5):
    """Device-to-device copy of ``nbytes``: ``reps`` copies queued back to back and synchronized,
    ``trials`` times; GB/s of the median trial, counting the bytes read and the bytes written."""
    src, dst = drv.alloc(nbytes), drv.alloc(nbytes)
    try:
        drv.copy(dst, src, nbytes)  # the first copy maps the pages
        drv.synchronize()
        per_copy = []
        for _ in range(trials):
            t0 = time.perf_counter()
            for _ in range(reps):
                drv.copy(dst, src, nbytes)
            drv.synchronize()
            per_copy.append((time.perf_counter() - t0) / reps)
    finally:
        drv.free(src)
        drv.free(dst)
    t = statistics.median(per_copy)
    return {"bytes": nbytes, "reps": reps, "trials": trials, "copy_s": t, "gbps": 2 * nbytes / t / 1e9,
            "counts": "bytes read + bytes written"}


def time_calls(call, synchronize, reps=2000, trials=5):
    """Seconds per ``call()``: ``reps`` calls queued back to back, then ``synchronize()`` (the
    median of ``trials`` such loops), and one call followed by ``synchronize()`` (the median of
    ``reps // 10``)."""
    def queued():
        t0 = time.perf_counter()
        for _ in range(reps):
            call()
        synchronize()
        return (time.perf_counter() - t0) / reps

    def round_trip():
        t0 = time.perf_counter()
        call()
        synchronize()
        return time.perf_counter() - t0

    return (statistics.median(queued() for _ in range(trials)),
            statistics.median(round_trip() for _ in range(max(reps // 10, 1))))


_EMPTY_KERNEL = 'extern "C" __global__ void strider_bench_empty() {}'


def raw_launch(drv, arch, reps=2000, trials=5):
    """cuLaunchKernel of an empty kernel (1 block of 1 thread) on the legacy stream, where strider
    launches its stages for DeviceArray callers, timed by time_calls."""
    from strider import _C
    cubin = _C.nvrtc_compile(_EMPTY_KERNEL, arch, "strider_bench_empty.cu")
    module, fn = c_void_p(), c_void_p()
    drv.call("cuModuleLoadData", byref(module), cubin)
    try:
        drv.call("cuModuleGetFunction", byref(fn), module, b"strider_bench_empty")
        drv.call("cuLaunchKernel", fn, 1, 1, 1, 1, 1, 1, 0, LEGACY_STREAM, None, None)  # checked once
        drv.synchronize()
        launch = drv.lib.cuLaunchKernel  # unchecked in the loops: checked once above
        queued, sync = time_calls(lambda: launch(fn, 1, 1, 1, 1, 1, 1, 0, LEGACY_STREAM, None, None),
                                  drv.synchronize, reps, trials)
        return {"launch_s": queued, "launch_sync_s": sync, "reps": reps, "trials": trials, "kernel": _EMPTY_KERNEL}
    finally:
        drv.call("cuModuleUnload", module)
