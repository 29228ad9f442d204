#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <vector>

#include "ir/view.h"

namespace strider::python {

/// An array in GPU memory as a call's leaf: what its `__cuda_array_interface__` (CuPy, PyTorch,
/// Numba) or DLPack capsule says, and the object it came from (kept alive by the call; the
/// results that view it keep it alive too). Also the array strider returns to callers whose
/// arrays are of no library it knows (python/strider/_cuda.py).
struct DeviceArray {
  uint64_t ptr = 0;
  std::vector<int64_t> shape, strides;  // strides in bytes
  int typenum = 0;                      // NumPy's type number
  int itemsize = 0;
  bool writeable = true;
  int ordinal = 0;                      // the CUDA device holding it
  pybind11::object owner;               // the caller's array (or the memory it views)
};

/// Element strides as byte strides.
inline std::vector<int64_t> byte_strides(Shape strides, int64_t itemsize) {
  for (int64_t& s : strides) s *= itemsize;
  return strides;
}

/// A C-contiguous array of NumPy type number `typenum` in new device memory it owns (freed with
/// its last view).
DeviceArray device_array_empty(int ordinal, std::vector<int64_t> shape, int typenum);

/// `value.__dlpack__(stream=stream)` as a leaf: a CUDA tensor of one of strider's dtypes, else
/// TypeError naming what it is. Writeable unless `writeable` is false or the producer marks the
/// tensor read-only or a copy; the producer's deleter runs when the last view of it goes.
DeviceArray device_array_from_dlpack(const pybind11::object& value, const pybind11::object& stream, bool writeable);
/// DeviceArray.__dlpack__ (the array API's signature): a capsule that keeps `self` alive.
pybind11::object device_array_to_dlpack(const pybind11::object& self, const pybind11::object& stream,
                                        const pybind11::object& max_version, const pybind11::object& dl_device,
                                        const pybind11::object& copy);

}  // namespace strider::python
