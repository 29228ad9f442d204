// DLPack in both directions for arrays in GPU memory: a call's argument that offers only
// __dlpack__ (JAX, and any array-API library) becomes a DeviceArray leaf, and a DeviceArray
// strider returns exports itself, so such libraries take strider's results with no copy.
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "device_array.h"
#include "numpy_dtype.h"
#include "runtime/cuda_executor.h"

namespace py = pybind11;

namespace strider::python {

namespace {

// The DLPack ABI (dlpack.h, v1.0): declared here, since no package strider builds with ships it.
enum : int32_t { kDLCUDA = 2, kDLCUDAManaged = 13 };
enum : uint8_t { kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBool = 6 };
constexpr uint64_t kReadOnly = 1, kIsCopied = 2;  // DLPACK_FLAG_BITMASK_*

struct DLDevice {
  int32_t device_type;
  int32_t device_id;
};
struct DLDataType {
  uint8_t code, bits;
  uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;  // in elements; null: C-contiguous
  uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor*);
};
struct DLPackVersion {
  uint32_t major, minor;
};
struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(DLManagedTensorVersioned*);
  uint64_t flags;
  DLTensor dl_tensor;
};

constexpr const char* kName = "dltensor";
constexpr const char* kVersionedName = "dltensor_versioned";

// strider's dtypes as DLPack's (code, bits): NumPy type number, or -1
DLDataType dlpack_dtype(DType t) {
  const char kind = dtype_kind(t);
  const uint8_t code = kind == 'b' ? kDLBool : kind == 'i' ? kDLInt : kind == 'u' ? kDLUInt : kDLFloat;
  return {code, static_cast<uint8_t>(8 * itemsize(t)), 1};
}

int typenum_of(DLDataType t) {
  for (DType d : kDTypes) {
    const DLDataType own = dlpack_dtype(d);
    if (t.code == own.code && t.bits == own.bits && t.lanes == 1) return typenum(d);
  }
  return -1;
}

DLDataType dlpack_dtype(int typenum) {
  const std::optional<DType> t = dtype_of_typenum(typenum);
  if (!t) throw py::type_error("a DeviceArray of NumPy type number " + std::to_string(typenum) + " has no DLPack dtype");
  return dlpack_dtype(*t);
}

std::string describe(DLDataType t) {
  static const char* codes[] = {"int", "uint", "float", "opaque", "bfloat", "complex", "bool"};
  std::string s = t.code < 7 ? codes[t.code] : "code " + std::to_string(t.code);
  s += std::to_string(t.bits);
  return t.lanes == 1 ? s : s + "x" + std::to_string(t.lanes);
}

// The consumed capsule's tensor, freed by its producer's deleter when the last leaf or result
// viewing it goes.
template <typename Managed>
py::capsule owning(Managed* m) {
  return py::capsule(m, +[](void* p) {
    auto* managed = static_cast<Managed*>(p);
    if (managed->deleter) managed->deleter(managed);
  });
}

// What strider keeps alive for a consumer of its export: the shape and strides DLPack points at,
// and the DeviceArray (which owns the memory).
struct Export {
  DLManagedTensorVersioned versioned{};
  DLManagedTensor legacy{};
  std::vector<int64_t> shape, strides;
  py::object keep;
};

void release(Export* e) {
  if (!Py_IsInitialized()) return;  // at exit: the interpreter's objects are gone already
  py::gil_scoped_acquire gil;       // a consumer may free it from any thread
  delete e;
}

// An export no consumer took: the capsule's own name is still the unused one.
void free_unconsumed(PyObject* capsule) {
  for (const char* name : {kName, kVersionedName}) {
    if (!PyCapsule_IsValid(capsule, name)) continue;
    auto* e = static_cast<Export*>(PyCapsule_GetContext(capsule));
    release(e);
    return;
  }
}

}  // namespace

DeviceArray device_array_from_dlpack(const py::object& value, const py::object& stream, bool writeable) {
  const py::object dlpack = value.attr("__dlpack__");
  py::object capsule;
  try {
    capsule = dlpack(py::arg("stream") = stream, py::arg("max_version") = py::make_tuple(1, 0));
  } catch (py::error_already_set& e) {
    if (!e.matches(PyExc_TypeError)) throw;  // a producer older than DLPack 1.0 has no max_version
    capsule = dlpack(py::arg("stream") = stream);
  }
  PyObject* c = capsule.ptr();
  const bool versioned = PyCapsule_IsValid(c, kVersionedName);
  if (!versioned && !PyCapsule_IsValid(c, kName))
    throw py::type_error(std::string(Py_TYPE(value.ptr())->tp_name) + ".__dlpack__() returned no unused DLPack capsule");
  const char* name = versioned ? kVersionedName : kName;
  void* raw = PyCapsule_GetPointer(c, name);
  uint64_t flags = 0;
  if (versioned) {
    auto* m = static_cast<DLManagedTensorVersioned*>(raw);
    if (m->version.major != 1)
      throw py::type_error("a DLPack " + std::to_string(m->version.major) + "." + std::to_string(m->version.minor) +
                           " tensor: strider reads DLPack 1.x");
    flags = m->flags;
  }
  const DLTensor& t = versioned ? static_cast<DLManagedTensorVersioned*>(raw)->dl_tensor
                                : static_cast<DLManagedTensor*>(raw)->dl_tensor;
  // refusals leave the capsule unused: its own destructor frees the tensor
  if (t.device.device_type != kDLCUDA && t.device.device_type != kDLCUDAManaged)
    throw py::type_error("a DLPack tensor on device type " + std::to_string(t.device.device_type) +
                         ", not CUDA memory");
  const int typenum = typenum_of(t.dtype);
  if (typenum < 0)
    throw py::type_error("a DLPack tensor of dtype " + describe(t.dtype) +
                         ": strider takes bool, int32, int64, float32 and float64 arrays");
  DeviceArray a;
  a.typenum = typenum;
  a.itemsize = t.dtype.bits / 8;
  a.ptr = reinterpret_cast<uint64_t>(t.data) + t.byte_offset;
  a.shape.assign(t.shape, t.shape + t.ndim);
  a.strides = byte_strides(t.strides ? Shape(t.strides, t.strides + t.ndim) : contiguous_strides(a.shape), a.itemsize);
  // a producer's copy would take the writes the caller expects in its own array
  a.writeable = writeable && !(flags & (kReadOnly | kIsCopied));
  a.ordinal = t.device.device_id;
  PyCapsule_SetName(c, versioned ? "used_dltensor_versioned" : "used_dltensor");
  a.owner = versioned ? owning(static_cast<DLManagedTensorVersioned*>(raw)) : owning(static_cast<DLManagedTensor*>(raw));
  return a;
}

py::object device_array_to_dlpack(const py::object& self, const py::object& stream, const py::object& max_version,
                                  const py::object& dl_device, const py::object& copy) {
  const auto& a = self.cast<const DeviceArray&>();
  if (!dl_device.is_none() && !dl_device.equal(py::make_tuple(int(kDLCUDA), a.ordinal)))
    throw py::buffer_error("a DeviceArray on CUDA device " + std::to_string(a.ordinal) + " exports only there");
  if (!copy.is_none() && copy.cast<bool>()) throw py::buffer_error("a DeviceArray does not copy itself for DLPack");
  // strider's kernels for callers of no array library run on the legacy default stream; a
  // consumer on another stream gets them finished (-1: the consumer asks for no ordering)
  if (!stream.is_none()) {
    const auto s = stream.cast<int64_t>();
    if (s != 1 && s != -1) cuda_synchronize(a.ordinal, 1);
  }
  const bool versioned = !max_version.is_none() && py::len(max_version) > 0 && max_version[py::int_(0)].cast<int>() >= 1;
  auto e = std::make_unique<Export>();
  e->shape = a.shape;
  for (int64_t s : a.strides) {
    if (s % a.itemsize) throw py::buffer_error("a DeviceArray with strides that are not whole elements");
    e->strides.push_back(s / a.itemsize);
  }
  e->keep = self;
  DLTensor t{reinterpret_cast<void*>(a.ptr),
             {kDLCUDA, a.ordinal},
             static_cast<int32_t>(a.shape.size()),
             dlpack_dtype(a.typenum),
             e->shape.data(),
             e->strides.data(),
             0};
  void* managed;
  if (versioned) {
    e->versioned = {{1, 0}, e.get(), [](DLManagedTensorVersioned* m) { release(static_cast<Export*>(m->manager_ctx)); },
                    a.writeable ? 0 : kReadOnly, t};
    managed = &e->versioned;
  } else {
    e->legacy = {t, e.get(), [](DLManagedTensor* m) { release(static_cast<Export*>(m->manager_ctx)); }};
    managed = &e->legacy;
  }
  PyObject* capsule = PyCapsule_New(managed, versioned ? kVersionedName : kName, free_unconsumed);
  if (!capsule || PyCapsule_SetContext(capsule, e.get()) != 0) {
    Py_XDECREF(capsule);
    throw py::error_already_set();
  }
  e.release();
  return py::reinterpret_steal<py::object>(capsule);
}

}  // namespace strider::python
