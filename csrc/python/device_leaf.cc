#include "device_leaf.h"

#include <string>

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "call_signature.h"
#include "device_array.h"
#include "runtime/cuda_executor.h"

namespace py = pybind11;

namespace strider::python {

namespace {

// CUDA's legacy default stream: where a DLPack producer is asked to have its work ordered
constexpr int kLegacyStream = 1;

[[noreturn]] void type_error(const std::string& what) {
  PyErr_SetString(PyExc_TypeError, what.c_str());
  throw py::error_already_set();
}

// The array `cai`, o's __cuda_array_interface__ (version 2 or 3), describes; its owner is o.
DeviceArray from_cuda_array_interface(PyObject* o, const py::object& cai) {
  if (!PyDict_Check(cai.ptr())) type_error("__cuda_array_interface__ is not a dict");
  const py::dict d = py::reinterpret_borrow<py::dict>(cai);
  if (d.contains("mask") && !d["mask"].is_none()) type_error("masked __cuda_array_interface__ arrays are not supported");
  const py::tuple data = d["data"].cast<py::tuple>();
  const py::dtype dtype(d["typestr"].cast<std::string>());
  DeviceArray a;
  a.ptr = data[0].cast<uint64_t>();
  a.writeable = !data[1].cast<bool>();
  a.shape = d["shape"].cast<std::vector<int64_t>>();
  a.typenum = dtype.num();
  a.itemsize = static_cast<int>(dtype.itemsize());
  const py::object strides = d.contains("strides") ? py::object(d["strides"]) : py::none();
  if (!strides.is_none()) {
    a.strides = strides.cast<std::vector<int64_t>>();
    if (a.strides.size() != a.shape.size()) type_error("__cuda_array_interface__'s strides and shape differ in length");
  } else {
    a.strides = byte_strides(contiguous_strides(a.shape), a.itemsize);
  }
  a.ordinal = a.ptr ? cuda_pointer_ordinal(a.ptr) : 0;
  a.owner = py::reinterpret_borrow<py::object>(o);
  return a;
}

}  // namespace

void DeviceKinds::install(py::object library, py::object kind) {
  library_ = std::move(library);
  kind_ = std::move(kind);
  libraries_.clear();
  kinds_.clear();
}

const DeviceKinds::Library& DeviceKinds::library_of(PyObject* o) {
  PyTypeObject* type = Py_TYPE(o);
  auto at = libraries_.find(type);
  if (at != libraries_.end()) return at->second;
  Library lib;
  lib.type = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(type));
  lib.cls = library_(py::handle(o));
  lib.dlpack = lib.cls.attr("protocol").cast<std::string>() == "dlpack";
  lib.writeable = lib.cls.attr("writeable").cast<bool>();
  lib.wraps = lib.cls.attr("wraps").cast<bool>();
  return libraries_.emplace(type, std::move(lib)).first->second;
}

py::object DeviceKinds::interface_of(PyObject* o) {
  auto at = libraries_.find(Py_TYPE(o));
  if (at == libraries_.end() || at->second.dlpack) return py::object();
  // PyTorch's raises for a tensor that requires grad, with its own advice; one on the host has none
  py::object cai = py::reinterpret_steal<py::object>(PyObject_GetAttrString(o, "__cuda_array_interface__"));
  if (!cai) {
    if (!PyErr_ExceptionMatches(PyExc_AttributeError)) throw py::error_already_set();
    PyErr_Clear();
  }
  return cai;
}

bool DeviceKinds::on_device(PyObject* o) {
  read_ = {py::reinterpret_borrow<py::object>(o), interface_of(o)};
  return read_.second || python::on_device(o);
}

std::optional<DeviceKinds::Leaf> DeviceKinds::leaf_of(PyObject* o) {
  py::object cai = read_.first.ptr() == o ? std::move(read_.second) : interface_of(o);
  read_ = {};
  if (cai) return leaf(libraries_.at(Py_TYPE(o)), o, std::move(cai));
  if (!python::on_device(o)) return std::nullopt;
  const Library& lib = library_of(o);
  if (!lib.dlpack) cai = py::reinterpret_borrow<py::object>(o).attr("__cuda_array_interface__");
  return leaf(lib, o, std::move(cai));
}

DeviceKinds::Leaf DeviceKinds::leaf(const Library& lib, PyObject* o, py::object cai) {
  DeviceArray a;
  try {
    a = lib.dlpack ? device_array_from_dlpack(py::reinterpret_borrow<py::object>(o), py::int_(kLegacyStream), lib.writeable)
                   : from_cuda_array_interface(o, cai);
  } catch (const py::builtin_exception& e) {
    // raised as Python raises it: the dispatcher takes a C++ TypeError for arguments that do not bind
    e.set_error();
    throw py::error_already_set();
  }
  Leaf out;
  if (lib.wraps) {
    py::object& kind = kinds_[{lib.cls.ptr(), a.ordinal}];
    if (!kind) kind = kind_(lib.cls, a.ordinal);
    out.kind = kind;
  }
  out.leaf = py::cast(std::move(a));
  return out;
}

}  // namespace strider::python
