// The per-call signature on the dispatch path: cache key and aliasing layout of a call's leaves
// (arrays and scalars), computed with NumPy's C API.
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "device_array.h"
#include "runtime/cuda_executor.h"
#include "runtime/executor.h"

namespace py = pybind11;

namespace strider::python {

namespace {

/// How a call's array leaves map onto storages: leaves whose bytes overlap share one storage (an
/// aliasing group) whose base is the lowest address among them.
struct CallLayout {
  std::string key;
  std::vector<uintptr_t> bases;    // per group
  std::vector<int> group_owner;    // per group: a leaf of the group (keeps its memory alive)
  std::vector<int> group_dtype;    // per group: NumPy type number
  std::vector<int> group_ordinal;  // per group: the CUDA device holding it, -1: host memory
  std::vector<int64_t> group_extent;  // per group: elements from the base to the end of the last leaf
  std::vector<int> leaf_group;     // per leaf: its group, -1 for scalars
  std::vector<int64_t> leaf_offset;  // per leaf: elements from its group's base to its first element
  py::tuple leaves;                // signature(): the call's leaves, in _api._flatten's order
  py::tuple statics;               // signature(): (type, value) of each static value
};

bool supported_type(int t) {
  return t == NPY_BOOL || t == NPY_INT32 || t == NPY_INT64 || t == NPY_FLOAT32 || t == NPY_FLOAT64 ||
         (t == NPY_LONG && sizeof(long) == 8) || (t == NPY_INT && sizeof(int) == 4);
}

template <typename T>
void put(std::string& key, T v) {
  key.append(reinterpret_cast<const char*>(&v), sizeof v);
}

struct Span {
  uintptr_t lo, hi;
  int leaf;
};

// An array leaf as the layout sees it: a NumPy array or an array in GPU memory.
struct ArrayLeaf {
  uintptr_t data = 0;
  int ndim = 0;
  const npy_intp* dims = nullptr;
  const npy_intp* strides = nullptr;  // bytes
  int type = 0, item = 0;
  bool writeable = true;
  int ordinal = -1;  // the CUDA device holding it; -1: host memory
};

// False when the leaf is no array the layout takes (a scalar, or one for the general path).
bool array_leaf(PyObject* o, ArrayLeaf& a, bool& refused) {
  // exact ndarrays only: a subclass (np.matrix, masked arrays) has its own semantics for the same
  // operators, so it takes the general path, which refuses it
  if (PyArray_CheckExact(o)) {
    auto* arr = reinterpret_cast<PyArrayObject*>(o);
    if (!supported_type(PyArray_TYPE(arr)) || !PyArray_ISNBO(PyArray_DESCR(arr)->byteorder)) refused = true;
    a = ArrayLeaf{reinterpret_cast<uintptr_t>(PyArray_DATA(arr)), PyArray_NDIM(arr), PyArray_DIMS(arr),
                  PyArray_STRIDES(arr), PyArray_TYPE(arr), static_cast<int>(PyArray_ITEMSIZE(arr)),
                  PyArray_ISWRITEABLE(arr) != 0, -1};
    return true;
  }
  if (!py::isinstance<DeviceArray>(o)) return false;
  const auto& d = py::handle(o).cast<const DeviceArray&>();
  static_assert(sizeof(npy_intp) == sizeof(int64_t));
  a = ArrayLeaf{static_cast<uintptr_t>(d.ptr), static_cast<int>(d.shape.size()),
                reinterpret_cast<const npy_intp*>(d.shape.data()), reinterpret_cast<const npy_intp*>(d.strides.data()),
                d.typenum, d.itemsize, d.writeable, d.ordinal};
  if (!supported_type(d.typenum)) refused = true;
  return true;
}

// False when a leaf needs the general path (which raises the right error for it).
bool layout_of(const py::tuple& leaves, CallLayout& out) {
  if (PyArray_API == nullptr && _import_array() < 0) throw py::error_already_set();
  const int n = static_cast<int>(leaves.size());
  out.leaf_group.assign(n, -1);
  out.leaf_offset.assign(n, 0);
  std::vector<Span> spans, empties;
  std::vector<char> tags(n);
  std::vector<ArrayLeaf> arrays(n);
  for (int i = 0; i < n; ++i) {
    PyObject* o = leaves[i].ptr();
    bool refused = false;
    if (array_leaf(o, arrays[i], refused)) {
      if (refused) return false;
      const ArrayLeaf& a = arrays[i];
      uintptr_t lo = a.data, hi = lo;
      bool empty = false;
      for (int d = 0; d < a.ndim; ++d) {
        const npy_intp ext = a.dims[d], st = a.strides[d];
        if (ext == 0) empty = true;
        if (st % a.item) return false;
        if (st < 0) lo += st * (ext - 1);
        else hi += st * (ext - 1);
      }
      if (empty) empties.push_back({lo, lo, i});  // touches nothing: extent 0
      else spans.push_back({lo, hi + a.item, i});
      tags[i] = a.ordinal < 0 ? 'A' : 'D';
    } else if (PyArray_IsScalar(o, Generic)) {  // before float: np.float64 subclasses it
      if (!supported_type(PyArray_DescrFromScalar(o)->type_num)) return false;
      tags[i] = 'S';
    } else if (PyBool_Check(o)) {
      tags[i] = 'b';
    } else if (PyLong_Check(o)) {
      // an int past int64 takes the general path, which makes it a static value
      int overflow = 0;
      PyLong_AsLongLongAndOverflow(o, &overflow);
      if (overflow) return false;
      tags[i] = 'i';
    } else if (PyFloat_Check(o)) {
      tags[i] = 'f';
    } else {
      return false;
    }
  }
  // sweep the non-empty spans by address (host and device memory never share addresses: CUDA's
  // unified addressing); an empty array touches nothing and is its own group
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.lo < b.lo; });
  std::vector<int> group_of(n, -1);  // per leaf, in sweep order first
  int groups = 0;
  uintptr_t open_hi = 0;
  for (size_t k = 0; k < spans.size(); ++k) {
    if (k == 0 || spans[k].lo >= open_hi) ++groups;
    open_hi = k == 0 ? spans[k].hi : std::max(open_hi, spans[k].hi);
    group_of[spans[k].leaf] = groups - 1;
  }
  for (const Span& s : empties) group_of[s.leaf] = groups++;
  // number groups by their first leaf, so storages follow the arguments' order
  std::vector<int> renumber(groups, -1);
  int next = 0;
  for (int i = 0; i < n; ++i)
    if (group_of[i] >= 0 && renumber[group_of[i]] < 0) renumber[group_of[i]] = next++;
  out.bases.assign(groups, UINTPTR_MAX);
  out.group_owner.assign(groups, -1);
  out.group_dtype.assign(groups, -1);
  out.group_ordinal.assign(groups, -1);
  std::vector<uintptr_t> ends(groups, 0);
  std::vector<Span> by_leaf(n, Span{0, 0, -1});
  for (const Span& s : spans) by_leaf[s.leaf] = s;
  for (const Span& s : empties) by_leaf[s.leaf] = s;
  for (int i = 0; i < n; ++i) {
    if (group_of[i] < 0) continue;
    const int gi = group_of[i] = renumber[group_of[i]];
    if (out.group_owner[gi] < 0) {
      out.group_owner[gi] = i;
      out.group_dtype[gi] = arrays[i].type;
      out.group_ordinal[gi] = arrays[i].ordinal;
    } else if (out.group_dtype[gi] != arrays[i].type || out.group_ordinal[gi] != arrays[i].ordinal) {
      return false;
    }
    out.bases[gi] = std::min(out.bases[gi], by_leaf[i].lo);
    ends[gi] = std::max(ends[gi], by_leaf[i].hi);
  }
  out.group_extent.resize(groups);
  for (int gi = 0; gi < groups; ++gi)
    out.group_extent[gi] = static_cast<int64_t>((ends[gi] - out.bases[gi]) / arrays[out.group_owner[gi]].item);
  for (int i = 0; i < n; ++i) {
    if (group_of[i] < 0) continue;
    const int gi = group_of[i];
    const uintptr_t start = arrays[i].data;
    if ((start - out.bases[gi]) % arrays[i].item) return false;
    out.leaf_group[i] = gi;
    out.leaf_offset[i] = static_cast<int64_t>((start - out.bases[gi]) / arrays[i].item);
  }
  out.key.reserve(out.key.size() + 16 * groups + 24 * n + 32);
  for (int gi = 0; gi < groups; ++gi) {
    put(out.key, 'G');
    put(out.key, static_cast<int32_t>(out.group_dtype[gi]));
    put(out.key, out.group_extent[gi]);
    put(out.key, static_cast<int32_t>(out.group_ordinal[gi]));
  }
  for (int i = 0; i < n; ++i) {
    PyObject* o = leaves[i].ptr();
    put(out.key, tags[i]);
    if (tags[i] == 'A' || tags[i] == 'D') {
      const ArrayLeaf& a = arrays[i];
      put(out.key, static_cast<int32_t>(a.ndim));
      for (int d = 0; d < a.ndim; ++d) {
        put(out.key, static_cast<int64_t>(a.dims[d]));
        put(out.key, static_cast<int64_t>(a.strides[d]));
      }
      put(out.key, static_cast<char>(a.writeable));
      put(out.key, static_cast<int32_t>(out.leaf_group[i]));
      put(out.key, out.leaf_offset[i]);
    } else if (tags[i] == 'S') {
      put(out.key, static_cast<int32_t>(PyArray_DescrFromScalar(o)->type_num));
    }
  }
  return true;
}

// _api._flatten's walk of one argument: tuples and lists (exact types) recorded in `structure`
// and walked, arrays and numbers appended to `leaves`, other hashable values to `statics` as
// (type, value). False when the value needs the general path (a dict, a subclass of tuple, list
// or ndarray, an int past int64, an unhashable value), which flattens it or raises.
bool flatten_value(PyObject* o, std::string& structure, py::list& leaves, py::list& statics, int depth) {
  if (depth > 8) return false;
  const bool tuple = PyTuple_CheckExact(o);
  if (tuple || PyList_CheckExact(o)) {
    const Py_ssize_t n = tuple ? PyTuple_GET_SIZE(o) : PyList_GET_SIZE(o);
    structure += tuple ? 'T' : 'L';
    put(structure, static_cast<int64_t>(n));
    for (Py_ssize_t i = 0; i < n; ++i)
      if (!flatten_value(tuple ? PyTuple_GET_ITEM(o, i) : PyList_GET_ITEM(o, i), structure, leaves, statics, depth + 1))
        return false;
    return true;
  }
  if (PyArray_CheckExact(o) || PyArray_IsScalar(o, Generic) || PyFloat_Check(o) || PyLong_Check(o) ||
      py::isinstance<DeviceArray>(o)) {
    if (PyLong_CheckExact(o)) {
      int overflow = 0;
      PyLong_AsLongLongAndOverflow(o, &overflow);
      if (overflow) return false;
    }
    structure += 'X';
    leaves.append(py::reinterpret_borrow<py::object>(o));
    return true;
  }
  if (PyArray_Check(o) || PyTuple_Check(o) || PyList_Check(o) || PyDict_Check(o)) return false;
  if (PyObject_Hash(o) == -1) {
    PyErr_Clear();
    return false;
  }
  structure += 'O';
  statics.append(py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(Py_TYPE(o))));
  statics.append(py::reinterpret_borrow<py::object>(o));
  return true;
}

// The signature of a call's argument values: `out` gets the layout of their leaves, its key
// prefixed by their structure, the leaves and the statics. False when a value needs the general
// path.
bool signature(const py::tuple& values, const std::string& static_mask, CallLayout& out) {
  if (PyArray_API == nullptr && _import_array() < 0) throw py::error_already_set();
  std::string structure;
  py::list leaves, statics;
  for (size_t i = 0; i < values.size(); ++i) {
    PyObject* o = values[i].ptr();
    if (i < static_mask.size() && static_mask[i] == 's') {
      if (PyObject_Hash(o) == -1) {
        PyErr_Clear();
        return false;
      }
      structure += 'O';
      statics.append(py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(Py_TYPE(o))));
      statics.append(values[i]);
    } else if (!flatten_value(o, structure, leaves, statics, 0)) {
      return false;
    }
  }
  out.leaves = py::tuple(leaves);
  out.key += structure;
  out.key += '|';
  if (!layout_of(out.leaves, out)) return false;
  out.statics = py::tuple(statics);
  return true;
}

// Programs of fewer points than this run holding the GIL: releasing and taking it back costs
// more than their kernels, and other threads wait a few microseconds at most.
constexpr int64_t kKeepGilPoints = 1 << 14;

// How one traced signature maps a call onto its program and back (planned once, in _api.py).
class Runner {
 public:
  struct Temp {
    int storage;
    std::vector<npy_intp> shape;   // as allocated (dense, C order)
    int transform;                 // 0: the buffer is the result; 1: transpose by axes; 2: a view
    std::vector<npy_intp> axes;
  };
  struct Output {
    char kind;                     // 'a' argument leaf, 'p' Python object, 'v' view of a storage
    int index = 0;                 // leaf ('a') or graph output ('v')
    py::object value;              // 'p'
    bool scalar = false, writeable = true;
    py::object weak;               // Python type for weak scalars, or None
  };

  Runner(py::object program, std::vector<std::pair<int, int>> groups, std::vector<std::pair<int, int>> scalars,
         std::vector<Temp> temps, std::vector<Output> outputs)
      : program_obj_(std::move(program)), groups_(std::move(groups)), scalars_(std::move(scalars)),
        temps_(std::move(temps)), outputs_(std::move(outputs)) {
    program_ = program_obj_.cast<const Program*>();
    int64_t points = 0;
    for (const Stage& st : program_->stages.stages) points += shape_numel(st.domain);
    release_gil_ = points >= kKeepGilPoints || program_->stages.stages.empty();
  }

  // Runs the program on the device when it was given a CUDA program (`kind`: the caller's kind
  // of device array, python/strider/_cuda.py, for results when arguments are in GPU memory).
  void set_cuda(std::shared_ptr<CudaProgram> cuda) { cuda_ = std::move(cuda); }

  py::list run(const py::tuple& leaves, const CallLayout& layout, bool latest_first,
               const py::object& kind = py::none(), uintptr_t stream = 0) const {
    const Graph& g = program_->graph;
    const bool on_device = !kind.is_none();
    std::vector<void*> buffers(g.storages.size(), nullptr);
    std::vector<uint64_t> device(on_device ? g.storages.size() : 0, 0);
    for (const auto& [sid, group] : groups_) {
      if (layout.group_ordinal[group] >= 0) device.at(sid) = layout.bases[group];
      else buffers[sid] = reinterpret_cast<void*>(layout.bases[group]);
    }
    std::vector<int64_t> slots(scalars_.size());  // 8 bytes hold any scalar dtype
    for (size_t k = 0; k < scalars_.size(); ++k) {
      const auto& [sid, leaf] = scalars_[k];
      store_scalar(leaves[leaf].ptr(), g.storages[sid].dtype, &slots[k]);
      buffers[sid] = &slots[k];
    }
    std::vector<py::object> temps;
    std::vector<uint64_t> temp_ptrs;
    for (const Temp& t : temps_) {
      if (on_device) {
        // the caller's kind of array: (array, device address)
        py::tuple made = kind.attr("empty")(py::cast(t.shape), typenum(g.storages[t.storage].dtype));
        temps.push_back(made[0]);
        temp_ptrs.push_back(made[1].cast<uint64_t>());
        device[t.storage] = temp_ptrs.back();
        continue;
      }
      PyObject* arr = PyArray_SimpleNew(static_cast<int>(t.shape.size()), const_cast<npy_intp*>(t.shape.data()),
                                        typenum(g.storages[t.storage].dtype));
      if (!arr) throw py::error_already_set();
      temps.push_back(py::reinterpret_steal<py::object>(arr));
      buffers[t.storage] = PyArray_DATA(reinterpret_cast<PyArrayObject*>(arr));
    }
    auto go = [&] {
      if (cuda_) cuda_->run(buffers, device, stream);
      else execute(*program_, buffers, latest_first);
    };
    if (release_gil_) {
      py::gil_scoped_release release;
      go();
    } else {
      go();
    }
    py::list results;
    for (const Output& o : outputs_) {
      if (o.kind == 'a') {
        const py::object leaf = leaves[o.index];
        // a device leaf stands for the caller's array (CPU calls never have one)
        results.append(on_device && py::isinstance<DeviceArray>(leaf) ? leaf.cast<const DeviceArray&>().owner : leaf);
      } else if (o.kind == 'p') {
        results.append(o.value);
      } else if (on_device) {
        results.append(device_view_result(o, leaves, layout, temps, temp_ptrs, kind));
      } else {
        results.append(view_result(o, leaves, layout, temps));
      }
    }
    return results;
  }

 private:
  static int typenum(DType t) {
    switch (t) {
      case DType::Bool: return NPY_BOOL;
      case DType::Int32: return NPY_INT32;
      case DType::Int64: return NPY_INT64;
      case DType::Float32: return NPY_FLOAT32;
      case DType::Float64: break;
    }
    return NPY_FLOAT64;
  }

  // A runtime scalar argument in its storage's dtype (the same dtype as a NumPy scalar leaf;
  // Python's bool, int and float for weak ones).
  static void store_scalar(PyObject* o, DType t, int64_t* slot) {
    if (PyArray_IsScalar(o, Generic)) {
      PyArray_ScalarAsCtype(o, slot);
      return;
    }
    switch (t) {
      case DType::Bool: *reinterpret_cast<bool*>(slot) = PyObject_IsTrue(o); break;
      case DType::Float64: *reinterpret_cast<double*>(slot) = PyFloat_AsDouble(o); break;
      default: *slot = PyLong_AsLongLong(o); break;
    }
    if (PyErr_Occurred()) throw py::error_already_set();
  }

  py::object view_result(const Output& o, const py::tuple& leaves, const CallLayout& layout,
                         const std::vector<py::object>& temps) const {
    const View& v = program_->graph.outputs[o.index];
    py::object arr;
    char* base = nullptr;
    py::object owner;
    for (size_t k = 0; k < temps_.size() && !arr; ++k) {
      if (temps_[k].storage != v.storage) continue;
      if (temps_[k].transform == 0) arr = temps[k];
      else if (temps_[k].transform == 1) {
        std::vector<npy_intp> axes = temps_[k].axes;  // PyArray_Dims takes a mutable pointer
        PyArray_Dims perm{axes.data(), static_cast<int>(axes.size())};
        arr = py::reinterpret_steal<py::object>(PyArray_Transpose(reinterpret_cast<PyArrayObject*>(temps[k].ptr()), &perm));
        if (!arr) throw py::error_already_set();
      } else {
        base = static_cast<char*>(PyArray_DATA(reinterpret_cast<PyArrayObject*>(temps[k].ptr())));
        owner = temps[k];
      }
    }
    if (!arr) {
      if (!owner) {
        auto it = std::find_if(groups_.begin(), groups_.end(), [&](const auto& gs) { return gs.first == v.storage; });
        base = reinterpret_cast<char*>(layout.bases[it->second]);
        owner = leaves[layout.group_owner[it->second]];
      }
      const DType dtype = program_->graph.storages[v.storage].dtype;
      const int type = typenum(dtype);
      const npy_intp item = static_cast<npy_intp>(itemsize(dtype));
      std::vector<npy_intp> dims(v.shape.begin(), v.shape.end()), strides;
      for (int64_t st : v.strides) strides.push_back(st * item);
      PyObject* a = PyArray_NewFromDescr(&PyArray_Type, PyArray_DescrFromType(type), v.ndim(), dims.data(),
                                         strides.data(), base + v.offset * item,
                                         o.writeable ? NPY_ARRAY_WRITEABLE : 0, nullptr);
      if (!a) throw py::error_already_set();
      arr = py::reinterpret_steal<py::object>(a);
      if (PyArray_SetBaseObject(reinterpret_cast<PyArrayObject*>(a), owner.inc_ref().ptr()) < 0)
        throw py::error_already_set();
    }
    if (!o.weak.is_none()) return o.weak(arr.attr("item")());
    if (o.scalar) return py::reinterpret_steal<py::object>(PyArray_Return(reinterpret_cast<PyArrayObject*>(arr.inc_ref().ptr())));
    return arr;
  }

  // A result in GPU memory: a returned temporary as allocated, else a view (of a temporary or of
  // an argument group) made by the caller's kind of array.
  py::object device_view_result(const Output& o, const py::tuple& leaves, const CallLayout& layout,
                                const std::vector<py::object>& temps, const std::vector<uint64_t>& temp_ptrs,
                                const py::object& kind) const {
    const View& v = program_->graph.outputs[o.index];
    const DType dtype = program_->graph.storages[v.storage].dtype;
    const int64_t item = itemsize(dtype);
    py::object arr, owner;
    uint64_t base = 0;
    for (size_t k = 0; k < temps_.size(); ++k) {
      if (temps_[k].storage != v.storage) continue;
      if (temps_[k].transform == 0) arr = temps[k];
      owner = temps[k];
      base = temp_ptrs[k];
    }
    if (!owner) {
      auto it = std::find_if(groups_.begin(), groups_.end(), [&](const auto& gs) { return gs.first == v.storage; });
      base = layout.bases[it->second];
      owner = leaves[layout.group_owner[it->second]].cast<const DeviceArray&>().owner;
    }
    const uint64_t first = base + static_cast<uint64_t>(v.offset * item);
    if (!o.weak.is_none()) {
      // a Python scalar the function returned: its value, read back
      PyObject* value = PyArray_SimpleNew(0, nullptr, typenum(dtype));
      if (!value) throw py::error_already_set();
      py::object holder = py::reinterpret_steal<py::object>(value);
      cuda_download(cuda_->ordinal(), PyArray_DATA(reinterpret_cast<PyArrayObject*>(value)), first,
                    static_cast<size_t>(item));
      return o.weak(holder.attr("item")());
    }
    if (!arr) {
      std::vector<int64_t> strides;
      for (int64_t st : v.strides) strides.push_back(st * item);
      arr = kind.attr("view")(owner, first, py::cast(v.shape), py::cast(strides), typenum(dtype), o.writeable);
    }
    return arr;
  }

  py::object program_obj_;
  const Program* program_ = nullptr;
  bool release_gil_ = true;  // the program is large enough to run with the GIL released
  std::shared_ptr<CudaProgram> cuda_;  // set: the stages run on a CUDA device
  std::vector<std::pair<int, int>> groups_;   // (storage, aliasing group)
  std::vector<std::pair<int, int>> scalars_;  // (storage, leaf)
  std::vector<Temp> temps_;
  std::vector<Output> outputs_;
};

// The dispatch fast path of one compiled function: a call shaped like an earlier one (as many
// positional values, the same keywords in the same order) finds its entry by the signature of
// its values and runs it, with no Python code between the call and the kernels. _api.py inserts
// each entry the general path traced or found, and drops the ones it evicts.
class FastPath {
 public:
  FastPath(py::dict stats, py::object miss)
      : stats_(std::move(stats)), miss_(std::move(miss)), hits_name_("cache_hits"), used_name_("used") {}

  // The results of the call, or `miss` when it needs the general path. `kind` and `stream`: as
  // Runner::run takes them, for calls with arrays in GPU memory.
  py::object call(const py::tuple& args, const py::dict& kwargs, const py::object& kind, uintptr_t stream) {
    const Shape* shape = find_shape(args, kwargs);
    if (!shape) return miss_;
    CallLayout l;
    l.key.reserve(256);
    put(l.key, static_cast<int32_t>(shape - shapes_.data()));
    if (!signature(values(args, kwargs), shape->mask, l)) return miss_;
    auto it = table_.find(l.key);
    if (it == table_.end()) return miss_;
    for (const Item& item : it->second) {
      const int same = PyObject_RichCompareBool(item.statics.ptr(), l.statics.ptr(), Py_EQ);
      if (same < 0) throw py::error_already_set();
      if (!same) continue;
      PyObject* count = PyDict_GetItemWithError(stats_.ptr(), hits_name_.ptr());
      if (!count) throw py::error_already_set();
      py::object hits = py::reinterpret_steal<py::object>(PyNumber_Add(count, one_.ptr()));
      if (!hits || PyDict_SetItem(stats_.ptr(), hits_name_.ptr(), hits.ptr()) < 0 ||
          PyObject_SetAttr(item.entry.ptr(), used_name_.ptr(), hits.ptr()) < 0)
        throw py::error_already_set();
      // the run may release the GIL, and another thread insert or drop meanwhile: hold what
      // this call needs, not the item
      const py::object keep = item.runner_obj, finish = item.finish;
      const Runner* runner = item.runner;
      py::list results = runner->run(l.leaves, l, false, kind, stream);
      return finish.is_none() ? py::object(results[0]) : finish(results);
    }
    return miss_;
  }

  // Makes calls shaped and valued like this one run `runner`; `finish` turns its results into
  // the function's result (None: the first result is).
  void insert(const py::tuple& args, const py::dict& kwargs, const std::string& static_mask, py::object entry,
              py::object runner, py::object finish) {
    const Shape* shape = find_shape(args, kwargs);
    if (!shape) {
      Shape s{args.size(), {}, static_mask};
      for (auto kv : kwargs) s.names.push_back(py::reinterpret_borrow<py::object>(kv.first));
      shapes_.push_back(std::move(s));
      shape = &shapes_.back();
    }
    CallLayout l;
    put(l.key, static_cast<int32_t>(shape - shapes_.data()));
    if (!signature(values(args, kwargs), shape->mask, l)) return;
    std::vector<Item>& items = table_[l.key];
    items.erase(std::remove_if(items.begin(), items.end(),
                               [&](const Item& item) {
                                 const int same = PyObject_RichCompareBool(item.statics.ptr(), l.statics.ptr(), Py_EQ);
                                 if (same < 0) throw py::error_already_set();
                                 return same == 1;
                               }),
                items.end());
    items.push_back(Item{l.statics, std::move(entry), runner, runner.cast<const Runner*>(), std::move(finish)});
  }

  void drop(const py::object& entry) {
    for (auto it = table_.begin(); it != table_.end();) {
      auto& items = it->second;
      items.erase(std::remove_if(items.begin(), items.end(), [&](const Item& i) { return i.entry.is(entry); }),
                  items.end());
      it = items.empty() ? table_.erase(it) : std::next(it);
    }
  }

  size_t size() const {
    size_t n = 0;
    for (const auto& kv : table_) n += kv.second.size();
    return n;
  }

 private:
  struct Shape {
    size_t nargs;
    std::vector<py::object> names;  // keywords, in the call's order
    std::string mask;               // 's' for each static value
  };
  struct Item {
    py::tuple statics;
    py::object entry;         // the _api._Entry (its `used` is the recency for eviction)
    py::object runner_obj;    // keeps `runner` alive
    const Runner* runner;
    py::object finish;
  };

  const Shape* find_shape(const py::tuple& args, const py::dict& kwargs) const {
    for (const Shape& s : shapes_) {
      if (s.nargs != args.size() || s.names.size() != kwargs.size()) continue;
      size_t k = 0;
      bool same = true;
      for (auto kv : kwargs) {
        const int eq = PyObject_RichCompareBool(kv.first.ptr(), s.names[k++].ptr(), Py_EQ);
        if (eq < 0) throw py::error_already_set();
        same = same && eq;
      }
      if (same) return &s;
    }
    return nullptr;
  }

  static py::tuple values(const py::tuple& args, const py::dict& kwargs) {
    if (kwargs.empty()) return args;
    py::tuple out(args.size() + kwargs.size());
    size_t k = 0;
    for (auto a : args) out[k++] = a;
    for (auto kv : kwargs) out[k++] = kv.second;
    return out;
  }

  py::dict stats_;
  py::object miss_;
  py::str hits_name_, used_name_;
  py::int_ one_{1};
  std::vector<Shape> shapes_;  // their indices prefix the keys, so they are never removed
  std::unordered_map<std::string, std::vector<Item>> table_;
};

}  // namespace

void bind_dispatch(py::module_& m) {
  py::class_<CallLayout>(m, "CallLayout")
      .def_property_readonly("key", [](const CallLayout& l) { return py::bytes(l.key); })
      .def_readonly("bases", &CallLayout::bases)
      .def_readonly("group_owner", &CallLayout::group_owner)
      .def_readonly("group_extent", &CallLayout::group_extent)
      .def_property_readonly("group_dtype",
                             [](const CallLayout& l) {
                               py::list out;
                               for (int t : l.group_dtype) out.append(py::reinterpret_steal<py::object>(
                                   reinterpret_cast<PyObject*>(PyArray_DescrFromType(t))));
                               return out;
                             })
      .def_readonly("group_ordinal", &CallLayout::group_ordinal)
      .def_readonly("leaf_group", &CallLayout::leaf_group)
      .def_readonly("leaf_offset", &CallLayout::leaf_offset);
  py::class_<Runner>(m, "Runner")
      .def(py::init([](py::object program, std::vector<std::pair<int, int>> groups,
                       std::vector<std::pair<int, int>> scalars, const py::list& temps, const py::list& outputs) {
             std::vector<Runner::Temp> ts;
             for (const py::handle& t : temps) {
               auto [sid, shape, transform] = t.cast<std::tuple<int, std::vector<npy_intp>, py::object>>();
               Runner::Temp temp{sid, std::move(shape), 2, {}};
               if (!transform.is_none()) {
                 temp.axes = transform.cast<std::vector<npy_intp>>();
                 temp.transform = temp.axes.empty() ? 0 : 1;
               }
               ts.push_back(std::move(temp));
             }
             std::vector<Runner::Output> os;
             for (const py::handle& h : outputs) {
               py::tuple t = h.cast<py::tuple>();
               Runner::Output o;
               o.kind = t[0].cast<std::string>()[0];
               if (o.kind == 'p') o.value = t[1];
               else o.index = t[1].cast<int>();
               if (o.kind == 'v') {
                 o.scalar = t[2].cast<bool>();
                 o.weak = t[3];
                 o.writeable = t[4].cast<bool>();
               }
               os.push_back(std::move(o));
             }
             return Runner(std::move(program), std::move(groups), std::move(scalars), std::move(ts), std::move(os));
           }),
           "program, [(storage, group)], [(storage, leaf)], [(storage, shape, None | axes)], outputs: "
           "('a', leaf) | ('p', object) | ('v', output index, scalar, weak type or None, writeable)")
      .def("run", &Runner::run, py::arg("leaves"), py::arg("layout"), py::arg("latest_first") = false,
           py::arg("kind") = py::none(), py::arg("stream") = 0)
      .def("set_cuda", &Runner::set_cuda, py::arg("program"));
  m.def(
      "call_layout",
      [](const py::tuple& leaves) -> py::object {
        CallLayout l;
        if (!layout_of(leaves, l)) return py::none();
        return py::cast(std::move(l));
      },
      "The cache key and aliasing layout of a call's leaves, or None when one needs the general path.");
  py::class_<FastPath>(m, "FastPath")
      .def(py::init<py::dict, py::object>(), py::arg("stats"), py::arg("miss"))
      .def("__call__", &FastPath::call, py::arg("args"), py::arg("kwargs"), py::arg("kind") = py::none(),
           py::arg("stream") = 0)
      .def("insert", &FastPath::insert, py::arg("args"), py::arg("kwargs"), py::arg("static_mask"), py::arg("entry"),
           py::arg("runner"), py::arg("finish"))
      .def("drop", &FastPath::drop, py::arg("entry"))
      .def("__len__", &FastPath::size);
}

}  // namespace strider::python
