"""The systems run.py --device cuda puts side by side on one GPU: strider (target="cuda"), CuPy,
torch.compile and JAX, with NumPy on the host as the reference.  Same interface as peers.py.

Every GPU system is called on inputs in device memory: they are uploaded once per case, and each
call gets copies made on the device (one buffer per host array, so arguments that alias keep
aliasing), synchronized before the timer starts; JAX's immutable arrays need no copies.  The
timed call ends with a synchronize of the stream the system runs on.  Results and arguments are
copied back only to be checked.
"""
import numpy as np

import cuda_device
from peers import JaxSystem, NumPySystem, Skip, System, TorchSystem, _require, _trivial, strider_info, tree_map, \
    with_helpers


# ---------------------------------------------------------------------------------------------
# Arrays in device memory, by library
# ---------------------------------------------------------------------------------------------

class StriderArrays:
    """strider's own DeviceArray (what runs where neither torch.cuda nor CuPy does); strider
    runs their kernels on the legacy default stream."""
    name = "strider DeviceArray"

    def __init__(self, drv):
        from strider import _C, _cuda
        self._C, self._to_numpy, self._drv = _C, _cuda.to_numpy, drv

    def upload(self, data):
        buf = self._C.DeviceBuffer(0, max(data.nbytes, 1))
        if data.nbytes:
            self._C.cuda_upload(0, buf.ptr, data)
        return buf, data.nbytes

    def copy(self, buf):
        src, nbytes = buf
        dst = self._C.DeviceBuffer(0, max(nbytes, 1))
        if nbytes:
            self._drv.copy(dst.ptr, src.ptr, nbytes)
        return dst, nbytes

    def view(self, buf, offset, shape, strides, dtype, writeable):
        return self._C.DeviceArray(buf[0].ptr + offset, shape, strides, dtype, writeable, 0, buf[0])

    def synchronize(self):
        self._drv.synchronize()

    def to_host(self, x):
        return self._to_numpy(x) if isinstance(x, self._C.DeviceArray) else x


class TorchArrays:
    """torch tensors on ``device``; work runs on torch's current stream."""
    name = "torch tensors"

    def __init__(self, device="cuda"):
        import torch

        from strider import _C
        self._torch, self._device = torch, torch.device(device)
        # every dtype strider takes; torch names them as NumPy does (its uint16/32/64 since 2.3)
        self._dtypes = {np.dtype(name): getattr(torch, name) for name in _C.dtype_names() if hasattr(torch, name)}

    def upload(self, data):
        return self._torch.from_numpy(data).to(self._device)

    def copy(self, buf):
        return buf.clone()

    def view(self, buf, offset, shape, strides, dtype, writeable):
        # torch strides and offsets count elements; NumPy's count bytes
        item = dtype.itemsize
        out = self._torch.empty(0, dtype=self._dtypes[dtype], device=self._device)
        return out.set_(buf.untyped_storage(), offset // item, shape, [s // item for s in strides])

    def synchronize(self):
        if self._device.type == "cuda":
            self._torch.cuda.current_stream(self._device).synchronize()

    def to_host(self, x):
        return x.cpu().numpy() if isinstance(x, self._torch.Tensor) else x


class CupyArrays:
    """CuPy arrays; work runs on CuPy's current stream."""
    name = "cupy arrays"

    def __init__(self):
        import cupy
        self._cupy = cupy

    def upload(self, data):
        return self._cupy.asarray(data)

    def copy(self, buf):
        return buf.copy()

    def view(self, buf, offset, shape, strides, dtype, writeable):
        return self._cupy.ndarray(shape, dtype, memptr=buf.data + offset, strides=strides)

    def synchronize(self):
        self._cupy.cuda.get_current_stream().synchronize()

    def to_host(self, x):
        return self._cupy.asnumpy(x) if isinstance(x, self._cupy.ndarray) else x


class _Slot:
    """Where an array leaf lies in one of DeviceInputs' buffers."""

    def __init__(self, index, offset, like):
        self.index, self.offset = index, offset
        self.shape, self.strides, self.dtype = like.shape, like.strides, like.dtype
        self.writeable = like.flags.writeable


class DeviceInputs:
    """A case's (args, kwargs) in device memory: one buffer per distinct host array that the
    leaves view (the whole contiguous base array, so views of one array stay views of one
    buffer), and the tree with each array leaf a slot in them."""

    def __init__(self, arrays, inputs):
        self.arrays, self.buffers, roots = arrays, [], {}

        def slot(x):
            if not isinstance(x, np.ndarray):
                return x
            root = x
            while isinstance(root.base, np.ndarray):
                root = root.base
            if not root.flags.c_contiguous:  # a C-contiguous copy in a buffer of its own
                root = x = np.ascontiguousarray(x)
            if id(root) not in roots:
                roots[id(root)] = len(self.buffers)
                self.buffers.append(arrays.upload(root.reshape(-1).view(np.uint8)))
            offset = x.__array_interface__["data"][0] - root.__array_interface__["data"][0]
            return _Slot(roots[id(root)], offset, x)

        self.tree = tree_map(slot, inputs)
        arrays.synchronize()

    def fresh(self):
        """Copies made on the device, done before this returns."""
        buffers = [self.arrays.copy(b) for b in self.buffers]
        self.arrays.synchronize()
        return tree_map(lambda s: self.arrays.view(buffers[s.index], s.offset, s.shape, s.strides, s.dtype,
                                                    s.writeable) if isinstance(s, _Slot) else s, self.tree)


_DRIVER = []


def driver():
    """The process's cuda_device.Driver (NoDevice where CUDA cannot run)."""
    if not _DRIVER:
        try:
            from strider import _C
        except Exception as exc:  # noqa: BLE001 - any import failure means no strider
            raise cuda_device.NoDevice(f"strider does not import ({type(exc).__name__}: {exc})") from exc
        why = _C.cuda_unavailable_reason()
        if why:
            raise cuda_device.NoDevice(why)
        _DRIVER.append(cuda_device.Driver())
    return _DRIVER[0]


def strider_arrays():
    """The array library strider's inputs come in: torch tensors where torch.cuda is available,
    else CuPy arrays where CuPy imports, else strider's DeviceArray."""
    try:
        import torch
        if torch.cuda.is_available():
            return TorchArrays()
    except ImportError:
        pass
    try:
        return CupyArrays()
    except ImportError:
        return StriderArrays(driver())


# ---------------------------------------------------------------------------------------------
# The systems
# ---------------------------------------------------------------------------------------------

class _OnDevice(System):
    """Called on inputs in device memory (``arrays``: set by load before warming up)."""
    arrays = None

    def place(self, inputs):
        return DeviceInputs(self.arrays, inputs)

    def sync(self, out):
        self.arrays.synchronize()
        return out

    def to_host(self, tree):
        return tree_map(self.arrays.to_host, tree)


class StriderCuda(_OnDevice):
    """``strider.compile(fn, target="cuda")`` on the head's source."""
    name = "strider"

    def load(self):
        (strider,) = _require("strider")
        self._strider = strider
        driver()
        self.arrays = strider_arrays()
        self._warm_up(lambda fn: strider.compile(fn, target="cuda"))
        return strider.__version__

    def prepare(self, head, dtype):
        return self._strider.compile(head.fn, target="cuda", static_argnames=head.static_argnames, strict=True)

    def note(self, fn, args, kwargs):
        fallbacks = fn.explain(*args, **kwargs).cuda_fallbacks
        why = next((w for w in fallbacks if w), "")
        on_device = sum(1 for w in fallbacks if not w)
        return f"{on_device}/{len(fallbacks)} stages on the device" + (f"; host: {why}" if why else "")

    def info(self):
        from strider import _C
        return dict(strider_info(), inputs=self.arrays.name, nvrtc=_C.nvrtc_version(), arch=_C.cuda_device_arch(),
                    includes="the call and a synchronize of the stream strider runs on")


class CupySystem(_OnDevice):
    """The head's NumPy source with ``np`` bound to ``cupy`` (in its module-level helpers too)."""
    name = "cupy"

    def load(self):
        (cupy,) = _require("cupy")
        self._cupy = cupy
        self.arrays = CupyArrays()
        self._warm_up(self._bind)
        return cupy.__version__

    def _bind(self, fn):
        return with_helpers(fn, lambda f: f, {}, {"np": self._cupy})

    def prepare(self, head, dtype):
        return self._bind(head.fn)

    def info(self):
        return {"cuda_runtime": self._cupy.cuda.runtime.runtimeGetVersion(),
                "includes": "the call and a synchronize of CuPy's current stream"}


class TorchCuda(_OnDevice, TorchSystem):
    """``torch.compile(torch.compiler.wrap_numpy(fn), dynamic=False)`` on CUDA tensors.  Dynamo
    traces np.* calls on tensors without wrap_numpy too, but with torch's semantics for the
    tensors' own operators and every NumPy result returned as a host array (a device-to-host copy
    in the call); wrap_numpy, torch's documented way to run NumPy code on CUDA, makes the
    arguments NumPy arrays inside the trace and the results tensors on the device."""

    def load(self):
        (torch,) = _require("torch")
        if not torch.cuda.is_available():
            raise Skip(f"torch.cuda.is_available() is False (torch {torch.__version__}, "
                       f"CUDA {torch.version.cuda or 'none'})")
        self.arrays = TorchArrays()
        return super().load()

    def source(self, fn):
        return self._torch.compiler.wrap_numpy(fn)

    def info(self):
        return dict(super().info(), device=self._torch.cuda.get_device_name(), source="torch.compiler.wrap_numpy",
                    includes="the call and a synchronize of torch's current stream; a graph break hands NumPy "
                             "arrays on the host to the code after it (notes count the breaks)")


class JaxCuda(JaxSystem):
    """The jax.numpy ports, jitted, on inputs put on the GPU once per case (JAX arrays are
    immutable: a call cannot change them, so no per-call copies)."""

    def load(self):
        (jax,) = _require("jax")
        try:
            self._device = jax.devices("gpu")[0]
        except RuntimeError as exc:
            raise Skip(f"jax has no GPU device (jax {jax.__version__}, devices: "
                       f"{', '.join(str(d) for d in jax.devices())})") from exc
        return super().load()

    def place(self, inputs):
        return tree_map(lambda x: self._jax.device_put(x, self._device) if isinstance(x, np.ndarray) else x, inputs)

    def info(self):
        return dict(super().info(), device=str(self._device), includes="the call and block_until_ready")


SYSTEMS = {s.name: s for s in (NumPySystem, StriderCuda, CupySystem, TorchCuda, JaxCuda)}


def _add_one_(x):
    x += 1


def launch_overhead(drv, arch, strider_system, reps=2000, trials=5):
    """The raw launch of an empty kernel and strider's warm call of one-stage functions on a
    4-element array in device memory (in place, and with a result to allocate), timed the same
    two ways (cuda_device.time_calls); strider's time over the raw launch is its dispatch path."""
    out = cuda_device.raw_launch(drv, arch, reps, trials)
    if strider_system is None:
        return out
    (x,), _ = strider_system.place(((np.ones(4, np.float32),), {})).fresh()
    out["strider_inputs"] = strider_system.arrays.name
    out["strider"] = {}
    for label, fn in (("x += 1", _add_one_), ("x * 2 + 1", _trivial)):
        f = strider_system._strider.compile(fn, target="cuda")
        f(x)  # trace, compile and load outside the timing
        queued, sync = cuda_device.time_calls(lambda: f(x), strider_system.arrays.synchronize, reps, trials)
        out["strider"][label] = {"call_s": queued, "call_sync_s": sync, "over_raw_s": queued - out["launch_s"],
                                 "over_raw_sync_s": sync - out["launch_sync_s"]}
    return out
