#pragma once
// Arguments in GPU memory of an array library (CuPy, PyTorch, JAX, Numba, any producer of
// __cuda_array_interface__ or of CUDA DLPack capsules) as a call's leaves, read in C++: Python
// (python/strider/_cuda.py) is asked once per type of array which library it is, and once per
// library and device for the kind object that gives results back as that library's arrays.

#include <pybind11/pybind11.h>

#include <map>
#include <optional>
#include <utility>

namespace strider::python {

class DeviceKinds {
 public:
  struct Leaf {
    pybind11::object leaf;  // a DeviceArray
    pybind11::object kind;  // null: results are DeviceArrays, on the legacy stream, with no Python
  };

  /// `library(value)` -> the library class of an array in GPU memory (_cuda.library);
  /// `kind(library, ordinal)` -> its kind object on that device (_cuda.kind).
  void install(pybind11::object library, pybind11::object kind);
  /// Whether o is an array in GPU memory (on_device); the interface it reads for that is the one
  /// leaf_of(o) then uses.
  bool on_device(PyObject* o);
  /// o as a leaf where it is an array in GPU memory (DeviceArrays aside), else nullopt. Reads
  /// an array's __cuda_array_interface__ once once its type is known.
  std::optional<Leaf> leaf_of(PyObject* o);

 private:
  struct Library {
    pybind11::object type;  // held: its address keys the table
    pybind11::object cls;
    bool dlpack = false;     // read through __dlpack__, else __cuda_array_interface__
    bool writeable = true;   // what a DLPack import may write
    bool wraps = false;      // results need the kind's call(); else they stay DeviceArrays
  };
  const Library& library_of(PyObject* o);
  // o's __cuda_array_interface__ where its type is known to export it, else null (o has none)
  pybind11::object interface_of(PyObject* o);
  Leaf leaf(const Library& lib, PyObject* o, pybind11::object interface);

  pybind11::object library_, kind_;
  std::map<PyTypeObject*, Library> libraries_;
  std::map<std::pair<PyObject*, int>, pybind11::object> kinds_;
  // on_device's object (held, so that no other takes its address) and the interface it read
  std::pair<pybind11::object, pybind11::object> read_;
};

}  // namespace strider::python
