"""DLPack on target="cuda": arguments that offer only __dlpack__ (JAX, array-API libraries) read and
written in place, versioned and legacy capsules, read-only and copied tensors, a producer's
deleter run once; DeviceArray's own export checked field by field through the ABI as ctypes
declares it here, independently of strider's C++ declaration."""
import ctypes
import gc
import sys

import numpy as np
import pytest
from conftest import counters, fake_driver, needs_cuda, to_device, to_numpy

import strider
from strider import _C
from strider.testing import compare

pytestmark = needs_cuda


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32), ("dtype", DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    pass


DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER)]


class DLManagedTensorVersioned(ctypes.Structure):
    pass


DELETER_V = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensorVersioned))
DLManagedTensorVersioned._fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32),
                                     ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER_V),
                                     ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]

api = ctypes.pythonapi
api.PyCapsule_New.restype = ctypes.py_object
api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
api.PyCapsule_GetPointer.restype = ctypes.c_void_p
api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
api.PyCapsule_GetName.restype = ctypes.c_char_p
api.PyCapsule_GetName.argtypes = [ctypes.py_object]
api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]


class DlpackOnly:
    """A device array known only by DLPack, as JAX's are: it forwards to a DeviceArray's export
    (`legacy`: a producer older than DLPack 1.0, whose __dlpack__ takes no max_version)."""

    def __init__(self, array, legacy=False):
        self.array, self.legacy, self.streams = array, legacy, []
        if legacy:
            self.__dlpack__ = self._legacy

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        self.streams.append(stream)
        return self.array.__dlpack__(stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)

    def _legacy(self, stream=None):
        self.streams.append(stream)
        return self.array.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def cuda(fn, **options):
    return strider.compile(fn, target="cuda", **options)


def head(boxes, scale):
    boxes[:, 0::2] *= scale  # in place, through a strided view
    return boxes[::-1, 1], boxes.sum(axis=1)


@pytest.mark.parametrize("legacy", [False, True], ids=["versioned", "legacy"])
def test_dlpack_only_arguments_are_read_and_written_in_place(legacy):
    host = np.arange(24, dtype=np.float32).reshape(6, 4)
    expected_arg = host.copy()
    expected = head(expected_arg, 2.0)
    d = to_device(host)
    arg = DlpackOnly(d, legacy)
    fn = cuda(head)
    fn(DlpackOnly(to_device(host), legacy), 2.0)  # compiled: the next call only launches
    before = counters() if fake_driver() else None
    view, sums = fn(arg, 2.0)
    if before is not None:
        after = counters()
        assert after["htod_bytes"] - before["htod_bytes"] == 8  # the runtime scalar, not the array
        assert after["dtoh_bytes"] == before["dtoh_bytes"]
    assert arg.streams == [1]  # the producer orders its work before the legacy stream's
    assert isinstance(view, _C.DeviceArray) and isinstance(sums, _C.DeviceArray)
    compare(expected_arg, to_numpy(d), what="argument")
    compare(expected[0], to_numpy(view))
    compare(expected[1], to_numpy(sums))
    assert view.ptr == d.ptr + 5 * 16 + 4 and view.strides == (-16,)


def test_a_read_only_tensor_is_read_but_never_written():
    base = to_device(np.ones(4, np.float32))
    ro = _C.DeviceArray(base.ptr, (4,), (4,), np.dtype(np.float32), False, 0, base)
    arg = DlpackOnly(ro)
    compare(np.full(4, 3, np.float32), to_numpy(cuda(lambda a: a * 3)(arg)))

    def write(a):
        a[1:] = 0.0

    with pytest.raises(ValueError, match="read-only"):
        cuda(write)(arg)
    with pytest.raises(ValueError, match="read-only"):  # NumPy's own error for the same call
        write(_read_only(np.ones(4, np.float32)))


def _read_only(a):
    a.flags.writeable = False
    return a


def _producer_capsule(ptr, shape, strides, code, bits, byte_offset, deleted):
    """A legacy DLPack capsule built here (not by strider): its tensor, and a deleter that counts."""
    n = len(shape)
    keep = {"shape": (ctypes.c_int64 * n)(*shape), "strides": (ctypes.c_int64 * n)(*strides) if strides else None}
    m = DLManagedTensor()
    m.dl_tensor = DLTensor(ptr - byte_offset, DLDevice(2, 0), n, DLDataType(code, bits, 1), keep["shape"],
                           keep["strides"], byte_offset)
    keep["deleter"] = DELETER(lambda _: deleted.append(1))
    m.deleter = keep["deleter"]
    keep["tensor"] = m
    return api.PyCapsule_New(ctypes.addressof(m), b"dltensor", None), keep


class Producer:
    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, stream=None):
        return self.capsule

    def __dlpack_device__(self):
        return (2, 0)


def test_a_capsule_from_another_producer_its_strides_offset_and_deleter():
    host = np.arange(30, dtype=np.float64).reshape(5, 6)
    buf = to_device(host)
    deleted = []
    # the transposed odd columns: strides in elements, data reached through byte_offset
    capsule, keep = _producer_capsule(buf.ptr + 8, (3, 5), (2, 6), 2, 64, 8, deleted)
    fn = cuda(lambda a: a * 10)
    got = fn(Producer(capsule))
    assert api.PyCapsule_GetName(capsule) == b"used_dltensor"
    compare(host[:, 1::2].T * 10, to_numpy(got))
    del got, capsule
    gc.collect()
    assert deleted == [1]  # the producer's deleter, once, when strider let go of the tensor
    del keep


@pytest.mark.parametrize("code,bits,name", [(4, 16, "bfloat16"), (5, 64, "complex64"), (1, 128, "uint128")])
def test_a_dtype_strider_does_not_take_is_refused_by_name_and_left_to_its_producer(code, bits, name):
    buf = to_device(np.zeros(8, np.float64))
    deleted = []
    capsule, keep = _producer_capsule(buf.ptr, (4,), None, code, bits, 0, deleted)
    with pytest.raises(TypeError, match=f"dtype {name}"):
        cuda(lambda a: a + 1)(Producer(capsule))
    assert api.PyCapsule_GetName(capsule) == b"dltensor" and deleted == []  # not consumed
    del keep


def _tensor(capsule, versioned):
    name = b"dltensor_versioned" if versioned else b"dltensor"
    kind = DLManagedTensorVersioned if versioned else DLManagedTensor
    return ctypes.cast(api.PyCapsule_GetPointer(capsule, name), ctypes.POINTER(kind)).contents


@pytest.mark.parametrize("versioned", [False, True], ids=["legacy", "versioned"])
def test_device_array_exports_itself_field_by_field(versioned):
    base = to_device(np.arange(24, dtype=np.int32).reshape(4, 6))
    view = _C.DeviceArray(base.ptr + 5 * 4, (4, 3), (24, -8), np.dtype(np.int32), not versioned, 0, base)
    assert view.__dlpack_device__() == (2, 0)
    capsule = view.__dlpack__(stream=1, max_version=(1, 2) if versioned else None)
    m = _tensor(capsule, versioned)
    t = m.dl_tensor
    assert (t.data, t.byte_offset, t.ndim) == (view.ptr, 0, 2)
    assert (t.device.device_type, t.device.device_id) == (2, 0)
    assert (t.dtype.code, t.dtype.bits, t.dtype.lanes) == (0, 32, 1)
    assert (t.shape[0], t.shape[1], t.strides[0], t.strides[1]) == (4, 3, 6, -2)
    if versioned:
        assert (m.major, m.minor, m.flags) == (1, 0, 1)  # read only: the view is not writeable
    # a consumer takes it, then frees it through the deleter: the view is released once
    refs = _refs(view)
    api.PyCapsule_SetName(capsule, b"used_dltensor_versioned" if versioned else b"used_dltensor")
    del capsule
    assert _refs(view) == refs
    m.deleter(ctypes.pointer(m))
    assert _refs(view) == refs - 1


def _refs(obj):
    return sys.getrefcount(obj)


def test_an_export_no_consumer_takes_is_freed_with_its_capsule():
    a = to_device(np.ones(3, np.float32))
    refs = _refs(a)
    capsule = a.__dlpack__()
    assert _refs(a) == refs + 1
    del capsule
    assert _refs(a) == refs


def test_export_refuses_another_device_and_copies():
    a = to_device(np.ones(3, np.float32))
    with pytest.raises(BufferError, match="device 0"):
        a.__dlpack__(dl_device=(2, 1))
    with pytest.raises(BufferError, match="copy"):
        a.__dlpack__(copy=True)
    assert _C.DeviceArray.from_dlpack(a, 1).ptr == a.ptr  # dl_device=(2, 0) and copy=False take it as is
    a.__dlpack__(dl_device=(2, 0), copy=False)


def test_no_device_memory_leaks_through_dlpack_round_trips():
    if fake_driver() is None:
        pytest.skip("counts the emulated driver's allocations")
    fn = cuda(lambda a: (a * 2, a[1:]))
    fn(DlpackOnly(to_device(np.ones(64, np.float32))))
    gc.collect()
    live = counters()["live_allocations"]
    for _ in range(5):
        r = fn(DlpackOnly(to_device(np.ones(64, np.float32))))
        _C.DeviceArray.from_dlpack(r[0], 1)
    del r
    gc.collect()
    assert counters()["live_allocations"] == live


def _jax_gpu():
    try:
        import jax
        return jax.devices("gpu")[0]
    except Exception as exc:  # noqa: BLE001 - no jax, or no GPU backend in it
        pytest.skip(f"JAX has no GPU device here ({type(exc).__name__})")


def test_jax_arrays_are_read_only_and_results_are_jax_arrays():
    device = _jax_gpu()
    import jax
    x = jax.device_put(np.arange(12, dtype=np.float32).reshape(3, 4), device)
    r = cuda(lambda a: (a * 2)[:, 1:])(x)
    assert isinstance(r, jax.Array)
    compare((np.arange(12, dtype=np.float32).reshape(3, 4) * 2)[:, 1:], np.asarray(r))

    def write(a):
        a[0] = 1.0

    with pytest.raises(ValueError, match="read-only"):
        cuda(write)(x)


class FakeJaxArray(DlpackOnly):
    """What the dispatcher sees of a jax.Array: its module, and DLPack."""


FakeJaxArray.__module__ = "jax._src.array"


def _xla_from_dlpack(array):
    """XLA's DLPack import as it behaved on an H100 (jax 0.11): strides in elements must be dense
    in some order of the axes, axes of length 1 aside, or it raises; a host copy stands for the
    JAX array."""
    item, dense = array.dtype.itemsize, 1
    for axis in sorted(range(len(array.shape)), key=lambda a: (array.strides[a], -a)):
        if array.shape[axis] > 1 and array.strides[axis] != dense * item:
            raise RuntimeError("UNIMPLEMENTED: Only DLPack tensors with trivial (compact) striding are supported")
        dense *= array.shape[axis]
    return to_numpy(array)


def test_jax_results_of_any_strides_import(monkeypatch):
    """Results for JAX callers whose strides XLA refuses (a slice of a temporary, a view of an
    argument, a reversal, a broadcast) are copied compact on the device first; compact ones (a
    transposition, axes of length 1) go as they are. Found on an H100, where the emulator had
    accepted every stride."""
    if fake_driver() is None:
        pytest.skip("on a GPU, test_jax_arrays_are_read_only_and_results_are_jax_arrays imports into JAX itself")
    jax = type(sys)("jax")
    jax.dlpack = type(sys)("jax.dlpack")
    jax.dlpack.from_dlpack = _xla_from_dlpack
    monkeypatch.setitem(sys.modules, "jax", jax)
    monkeypatch.setitem(sys.modules, "jax.dlpack", jax.dlpack)
    x = np.arange(12, dtype=np.float32).reshape(3, 4)

    def results(a):
        return (a * 2)[:, 1:], a[:, 1:], a[::-1, ::2], np.broadcast_to(a[0] + 1, (2, 4)), (a + 1).T, a[:, :1] * 3

    got = cuda(results)(FakeJaxArray(to_device(x)))
    for want, r in zip(results(x), got):
        compare(want, r)
