// Runs a traced signature's program on a call and builds the function's result.
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include "runner.h"

#include <numpy/arrayobject.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory_resource>
#include <new>

#include "device_array.h"
#include "numpy_dtype.h"
#include "ops/scalar_ops.h"
#include "runtime/data_dependent.h"

namespace py = pybind11;

namespace strider::python {

namespace {

// Programs of fewer points than this run holding the GIL: releasing and taking it back costs
// more than their kernels, and other threads wait a few microseconds at most.
constexpr int64_t kKeepGilPoints = 1 << 14;
// The most bytes of temporaries a Runner holds between calls (virtual: untouched pages cost none).
constexpr int64_t kMaxKeptBytes = int64_t{1} << 28;

static_assert(sizeof(npy_intp) == sizeof(int64_t));

// A runtime scalar argument in its storage's dtype (the same dtype as a NumPy scalar leaf;
// Python's bool, int and float for weak ones).
void store_scalar(PyObject* o, DType t, int64_t* slot) {
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

npy_intp* dims_of(const std::vector<int64_t>& v) { return const_cast<npy_intp*>(reinterpret_cast<const npy_intp*>(v.data())); }

// The run-time length held by the array temps[k].
int64_t length_of(const std::pmr::vector<py::object>& temps, size_t k) {
  return *static_cast<const int64_t*>(PyArray_DATA(reinterpret_cast<PyArrayObject*>(temps[k].ptr())));
}

}  // namespace

Runner::Runner(py::object program, std::vector<std::pair<int, int>> groups, std::vector<std::pair<int, int>> scalars,
               std::vector<Temp> temps, std::vector<Output> outputs, const py::handle& result)
    : program_obj_(std::move(program)), groups_(std::move(groups)), scalars_(std::move(scalars)),
      temps_(std::move(temps)), outputs_(std::move(outputs)) {
  if (PyArray_API == nullptr && _import_array() < 0) throw py::error_already_set();
  program_ = program_obj_.cast<const Program*>();
  int64_t points = 0;
  for (const Stage& st : program_->stages.stages) points += shape_numel(st.domain);
  // unstaged ops run one by one on the reference executor, however large: let other threads run
  release_gil_ = points >= kKeepGilPoints || (program_->stages.stages.empty() && !program_->graph.ops.empty());
  encode_result(result, result_codes_, result_objects_);
  for (const Temp& t : temps_)
    temp_specs_.append(py::make_tuple(py::cast(t.shape), typenum(program_->graph.storages[t.storage].dtype)));
  // a 0-d temporary returned only as scalars needs no array: a host run writes it into a slot
  for (const Temp& t : temps_) {
    bool only_scalars = t.shape.empty() && t.form == TempForm::Buffer;
    for (const Output& o : outputs_)
      if (o.kind == ResultKind::View && program_->graph.outputs[o.index].storage == t.storage)
        only_scalars = only_scalars && (o.scalar || !o.weak.is_none());
    in_slot_.push_back(only_scalars);
  }
  // the temporaries no result shows, that a run stores: one buffer, kept between calls
  const Graph& g = program_->graph;
  std::vector<char> returned(g.storages.size(), 0);
  for (const Temp& t : temps_) returned[t.storage] = 1;
  auto reserve = [&](int s) {  // storage s's offset in the kept buffer, cache-line aligned
    const int64_t at = kept_bytes_;
    kept_bytes_ += (g.storages[s].size * itemsize(g.storages[s].dtype) + 63) / 64 * 64;
    return at;
  };
  for (size_t s = 0; s < g.storages.size(); ++s) {
    const Storage& st = g.storages[s];
    if (st.kind != StorageKind::Temp || returned[s] || (!program_->unstored.empty() && program_->unstored[s])) continue;
    kept_offsets_.emplace_back(static_cast<int>(s), reserve(static_cast<int>(s)));
  }
  // a returned temporary of a run-time length runs in the kept buffer too, at its bound, and
  // leaves it copied into an array of the elements its results reach: a fresh bound-sized array
  // per call faulted in every page it wrote, and each result held its whole bound
  for (size_t k = 0; k < temps_.size(); ++k) {
    const int s = temps_[k].storage;
    bool dynamic = false;
    for (const Output& o : outputs_)
      dynamic = dynamic || (o.kind == ResultKind::View && g.outputs[o.index].storage == s && g.outputs[o.index].is_dynamic());
    trimmed_at_.push_back(dynamic && temps_[k].form == TempForm::Viewed ? reserve(s) : -1);
  }
  if (std::any_of(g.ops.begin(), g.ops.end(), [](const Op& op) {
        return op.code == OpCode::check_equal || op.code == OpCode::append ||
               (op.code == OpCode::check_assert && !op.axes.empty() && op.axes[0] == kRunInNumPy);
      }))
    for (const Op& op : g.ops)
      if (g.storages[op.output.storage].kind == StorageKind::Arg &&
          std::find(put_back_.begin(), put_back_.end(), op.output.storage) == put_back_.end())
        put_back_.push_back(op.output.storage);
  if (kept_bytes_ > kMaxKeptBytes) {  // too much to hold between calls: every call allocates
    kept_offsets_.clear();
    std::fill(trimmed_at_.begin(), trimmed_at_.end(), -1);
    kept_bytes_ = 0;
  }
}

const Program& settled(const Program& p) {
  if (!p.settled()) {
    py::gil_scoped_release release;
    p.settle();
  }
  return p;
}

int Runner::group_of(int storage) const {
  auto it = std::find_if(groups_.begin(), groups_.end(), [&](const auto& gs) { return gs.first == storage; });
  return it->second;
}

py::object Runner::run(const CallSignature& call, bool latest_first, uintptr_t stream, const py::list* made) const {
  const Graph& g = program_->graph;
  const bool on_device = call.on_device;
  std::vector<void*> buffers(g.storages.size(), nullptr);
  std::vector<uint64_t> device(on_device ? g.storages.size() : 0, 0);
  for (const auto& [sid, group] : groups_) {
    if (call.group_ordinal[group] >= 0) device.at(sid) = call.bases[group];
    else buffers[sid] = reinterpret_cast<void*>(call.bases[group]);
  }
  // the call's bookkeeping lives on the stack (heap past it): a small call allocates little
  alignas(std::max_align_t) std::byte arena_bytes[1024];
  std::pmr::monotonic_buffer_resource arena(arena_bytes, sizeof arena_bytes);
  std::pmr::vector<int64_t> slots(scalars_.size(), &arena);  // 8 bytes hold any scalar dtype
  for (size_t k = 0; k < scalars_.size(); ++k) {
    const auto& [sid, leaf] = scalars_[k];
    store_scalar(call.leaves[leaf].ptr(), g.storages[sid].dtype, &slots[k]);
    buffers[sid] = &slots[k];
  }
  std::pmr::vector<py::object> temps(&arena);
  std::pmr::vector<uint64_t> temp_ptrs(&arena);
  std::pmr::vector<int64_t> temp_slots(temps_.size(), &arena);  // in_slot_ temporaries
  temps.reserve(temps_.size());
  // the kept buffer, where no other call holds it
  const bool keep = !cuda_ && kept_bytes_ > 0 && !kept_->busy.exchange(true, std::memory_order_acquire);
  struct Release {
    std::atomic<bool>* busy;
    ~Release() {
      if (busy) busy->store(false, std::memory_order_release);
    }
  } release{keep ? &kept_->busy : nullptr};
  if (keep && !kept_->buffer) {
    kept_->buffer.reset(static_cast<std::byte*>(std::aligned_alloc(64, kept_bytes_)));
    if (!kept_->buffer) throw std::bad_alloc();
  }
  if (keep)
    for (const auto& [storage, offset] : kept_offsets_) buffers[storage] = kept_->buffer.get() + offset;
  auto trimmed = [&](size_t k) { return keep && trimmed_at_[k] >= 0; };
  for (size_t k = 0; k < temps_.size(); ++k) {
    const Temp& t = temps_[k];
    if (trimmed(k)) {
      buffers[t.storage] = kept_->buffer.get() + trimmed_at_[k];
      temps.emplace_back();
      continue;
    }
    if (!on_device && in_slot_[k]) {
      buffers[t.storage] = &temp_slots[k];
      temps.emplace_back();
      continue;
    }
    if (on_device) {
      if (made) {
        const py::tuple pair = (*made)[k].cast<py::tuple>();
        temps.push_back(pair[0]);
        temp_ptrs.push_back(pair[1].cast<uint64_t>());
      } else {
        DeviceArray buffer = device_array_empty(cuda_->ordinal(), t.shape, typenum(g.storages[t.storage].dtype));
        temp_ptrs.push_back(buffer.ptr);
        temps.push_back(py::cast(std::move(buffer)));
      }
      device[t.storage] = temp_ptrs.back();
      continue;
    }
    PyObject* arr = PyArray_SimpleNew(static_cast<int>(t.shape.size()), dims_of(t.shape),
                                      typenum(g.storages[t.storage].dtype));
    if (!arr) throw py::error_already_set();
    temps.push_back(py::reinterpret_steal<py::object>(arr));
    buffers[t.storage] = PyArray_DATA(reinterpret_cast<PyArrayObject*>(arr));
  }
  auto go = [&] {
    if (cuda_) cuda_->run(buffers, device, stream);
    else execute(*program_, buffers, latest_first);
  };
  // the bytes of the arguments it writes, where the call may run anew: in NumPy, or traced again
  std::vector<std::string> kept_args;
  bool all_kept = true;
  for (int s : put_back_) {
    const char* at = static_cast<const char*>(buffers[s]);
    all_kept = all_kept && at;
    // (the call's elements: the storage's are a bound where the rows are a run-time length)
    kept_args.emplace_back(at ? at : "", at ? call.group_used[group_of(s)] * itemsize(g.storages[s].dtype) : 0);
  }
  // false where an argument in GPU memory was written: the call cannot run anew
  auto put_back = [&] {
    if (!all_kept) return false;
    for (size_t k = put_back_.size(); k-- > 0;)  // in reverse: aliasing arguments end as they began
      std::memcpy(buffers[put_back_[k]], kept_args[k].data(), kept_args[k].size());
    return true;
  };
  const char* const kNotAnew = ": strider.compile cannot run the call anew, since it wrote arrays in GPU memory";
  try {
    if (release_gil_) {
      py::gil_scoped_release release;
      go();
    } else {
      go();
    }
  } catch (const RunInNumPy& e) {
    if (!put_back()) throw std::invalid_argument(std::string(e.what()) + kNotAnew);
    throw;
  } catch (const LoopBoundExceeded& e) {
    if (!put_back()) throw std::runtime_error(std::string(e.what()) + kNotAnew);
    throw;
  }
  for (size_t k = 0; k < temps_.size(); ++k)
    if (trimmed(k)) temps[k] = trimmed_copy(static_cast<int>(k), buffers[temps_[k].storage], call, temps);
  std::pmr::vector<py::object> results(&arena);
  results.reserve(outputs_.size());
  for (const Output& o : outputs_) {
    switch (o.kind) {
      case ResultKind::Argument: results.push_back(call.caller(o.index)); break;
      case ResultKind::Python: results.push_back(o.value); break;
      case ResultKind::View:
        results.push_back(on_device ? device_view_result(o, call, temps, temp_ptrs)
                                    : view_result(o, call, temps, temp_slots));
        break;
    }
  }
  py::object result;
  if (result_codes_.size() == 1 && result_codes_[0] == static_cast<char>(Node::Leaf)) {
    result = results[0];  // one leaf: the function's result
  } else {
    const char* code = result_codes_.data();
    const py::object* object = result_objects_.data();
    const py::object* leaf = results.data();
    result = build_tree(code, object, leaf);
  }
  if (!post_) return result;
  return post_(result, py::handle(call.args), call.kwargs ? py::handle(call.kwargs) : py::handle(Py_None));
}

py::object Runner::view_result(const Output& o, const CallSignature& call, const Objects& temps,
                               const std::pmr::vector<int64_t>& temp_slots) const {
  const View& v = program_->graph.outputs[o.index];
  py::object arr;
  char* base = nullptr;
  py::object owner;
  for (size_t k = 0; k < temps_.size() && !arr; ++k) {
    if (temps_[k].storage != v.storage) continue;
    if (in_slot_[k]) return scalar_result(o, program_->graph.storages[v.storage].dtype, &temp_slots[k]);
    if (temps_[k].form == TempForm::Buffer) {
      arr = temps[k];
    } else if (temps_[k].form == TempForm::Transposed) {
      std::vector<int64_t> axes = temps_[k].axes;  // PyArray_Dims takes a mutable pointer
      PyArray_Dims perm{dims_of(axes), static_cast<int>(axes.size())};
      arr = py::reinterpret_steal<py::object>(PyArray_Transpose(reinterpret_cast<PyArrayObject*>(temps[k].ptr()), &perm));
      if (!arr) throw py::error_already_set();
    } else {
      base = static_cast<char*>(PyArray_DATA(reinterpret_cast<PyArrayObject*>(temps[k].ptr())));
      owner = temps[k];
    }
  }
  if (!arr) {
    if (!owner) {
      const int group = group_of(v.storage);
      base = reinterpret_cast<char*>(call.bases[group]);
      owner = call.leaves[call.group_owner[group]];
    }
    const DType dtype = program_->graph.storages[v.storage].dtype;
    const int type = typenum(dtype);
    const npy_intp item = static_cast<npy_intp>(itemsize(dtype));
    std::vector<npy_intp> dims(v.shape.begin(), v.shape.end()), strides;
    if (v.is_dynamic()) {
      const std::vector<int64_t> shape = result_shape(v, call, [&](size_t k) { return length_of(temps, k); });
      dims.assign(shape.begin(), shape.end());
    }
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

py::object Runner::trimmed_copy(int k, const void* data, const CallSignature& call, const Objects& temps) const {
  const Graph& g = program_->graph;
  const int s = temps_[k].storage;
  int64_t used = 0;  // elements from the storage's start to the last one a result reaches
  for (const Output& o : outputs_) {
    if (o.kind != ResultKind::View || g.outputs[o.index].storage != s) continue;
    const View& v = g.outputs[o.index];
    const std::vector<int64_t> shape = result_shape(v, call, [&](size_t j) { return length_of(temps, j); });
    if (std::find(shape.begin(), shape.end(), 0) != shape.end()) continue;
    int64_t last = v.offset;
    for (int d = 0; d < v.ndim(); ++d) last += (shape[d] - 1) * std::max<int64_t>(v.strides[d], 0);
    used = std::max(used, last + 1);
  }
  const DType dtype = g.storages[s].dtype;
  const npy_intp n = std::max<int64_t>(used, 1);
  PyObject* arr = PyArray_SimpleNew(1, &n, typenum(dtype));
  if (!arr) throw py::error_already_set();
  std::memcpy(PyArray_DATA(reinterpret_cast<PyArrayObject*>(arr)), data, used * itemsize(dtype));
  return py::reinterpret_steal<py::object>(arr);
}

py::object Runner::scalar_result(const Output& o, DType dtype, const void* data) const {
  if (o.weak.is_none()) {
    PyArray_Descr* descr = PyArray_DescrFromType(typenum(dtype));
    PyObject* scalar = PyArray_Scalar(const_cast<void*>(data), descr, nullptr);
    Py_DECREF(descr);
    if (!scalar) throw py::error_already_set();
    return py::reinterpret_steal<py::object>(scalar);
  }
  // a Python number: the value as ndarray.item() gives it, of the weak type
  PyObject* value = dispatch_dtype(dtype, [&](auto tag) -> PyObject* {
    using T = decltype(tag);
    const auto x = st::from_memory(*static_cast<const T*>(data));
    if constexpr (std::is_same_v<T, bool>) return PyBool_FromLong(x);
    else if constexpr (std::is_floating_point_v<decltype(x)>) return PyFloat_FromDouble(x);
    else if constexpr (std::is_signed_v<T>) return PyLong_FromLongLong(x);
    else return PyLong_FromUnsignedLongLong(x);
  });
  if (!value) throw py::error_already_set();
  py::object item = py::reinterpret_steal<py::object>(value);
  return Py_TYPE(value) == reinterpret_cast<PyTypeObject*>(o.weak.ptr()) ? item : o.weak(item);
}

// A result in GPU memory: a returned temporary as allocated, else a DeviceArray viewing a
// temporary or an argument group (owned by it: the caller's kind views the owner instead).
py::object Runner::device_view_result(const Output& o, const CallSignature& call, const Objects& temps,
                                      const std::pmr::vector<uint64_t>& temp_ptrs) const {
  const View& v = program_->graph.outputs[o.index];
  const DType dtype = program_->graph.storages[v.storage].dtype;
  const int64_t item = itemsize(dtype);
  py::object arr, owner;
  uint64_t base = 0;
  for (size_t k = 0; k < temps_.size(); ++k) {
    if (temps_[k].storage != v.storage) continue;
    if (temps_[k].form == TempForm::Buffer) arr = temps[k];
    owner = temps[k];
    base = temp_ptrs[k];
  }
  if (!owner) {
    const int group = group_of(v.storage);
    base = call.bases[group];
    owner = call.caller(call.group_owner[group]);
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
  if (arr) return arr;
  std::vector<int64_t> strides;
  for (int64_t st : v.strides) strides.push_back(st * item);
  DeviceArray view;
  view.ptr = first;
  view.shape = result_shape(v, call, [&](size_t k) {
    int64_t n = 0;
    cuda_download(cuda_->ordinal(), &n, temp_ptrs[k], sizeof n);
    return n;
  });
  view.strides = std::move(strides);
  view.typenum = typenum(dtype);
  view.itemsize = static_cast<int>(item);
  view.writeable = o.writeable;
  view.ordinal = cuda_->ordinal();
  view.owner = std::move(owner);
  return py::cast(std::move(view));
}

}  // namespace strider::python
