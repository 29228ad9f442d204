// A call's signature: binding, the one walk of its arguments, and the aliasing layout of its
// array leaves (NumPy's C API for NumPy arrays, DeviceArray's fields for arrays in GPU memory).
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include "call_signature.h"

#include <numpy/arrayobject.h>

#include <algorithm>
#include <cstring>
#include <unordered_map>
#include <utility>

#include "device_array.h"
#include "numpy_dtype.h"
#include "runtime/cuda_loader.h"

namespace strider::python {

namespace {

void import_numpy() {
  if (PyArray_API == nullptr && _import_array() < 0) throw py::error_already_set();
}

bool supported_type(int t) { return dtype_of_typenum(t).has_value(); }

template <typename String, typename T>
void put(String& key, T v) {
  key.append(reinterpret_cast<const char*>(&v), sizeof v);
}

py::str type_name(PyObject* o) { return py::handle(reinterpret_cast<PyObject*>(Py_TYPE(o))).attr("__name__"); }

std::string type_name_text(PyObject* o) { return type_name(o).cast<std::string>(); }

bool int64_overflows(PyObject* o) {
  int overflow = 0;
  PyLong_AsLongLongAndOverflow(o, &overflow);
  return overflow != 0;
}

// Binds a call's arguments to the parameters as inspect.Signature.bind does: one value per
// parameter, null for one the caller left out (a *args or **kwargs given nothing too). False
// when they do not bind.
bool bind(const std::vector<Param>& params, PyObject* args, PyObject* kwargs, std::pmr::vector<PyObject*>& values,
          std::pmr::vector<py::object>& owned) {
  const Py_ssize_t nargs = PyTuple_GET_SIZE(args);
  values.assign(params.size(), nullptr);
  Py_ssize_t at = 0;
  int var_positional = -1, var_keyword = -1;
  for (size_t i = 0; i < params.size(); ++i) {
    const ParamKind kind = params[i].kind;
    if (kind == ParamKind::VarPositional) var_positional = static_cast<int>(i);
    if (kind == ParamKind::VarKeyword) var_keyword = static_cast<int>(i);
    if ((kind == ParamKind::PositionalOnly || kind == ParamKind::PositionalOrKeyword) && at < nargs)
      values[i] = PyTuple_GET_ITEM(args, at++);
  }
  if (at < nargs) {
    if (var_positional < 0) return false;
    owned.push_back(py::reinterpret_steal<py::object>(PyTuple_GetSlice(args, at, nargs)));
    values[var_positional] = owned.back().ptr();
  }
  if (kwargs && PyDict_GET_SIZE(kwargs)) {
    py::dict extra;
    PyObject *name, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(kwargs, &pos, &name, &value)) {
      size_t i = 0;
      for (; i < params.size(); ++i) {
        const ParamKind kind = params[i].kind;
        if (kind != ParamKind::PositionalOrKeyword && kind != ParamKind::KeywordOnly) continue;
        if (params[i].name.ptr() == name) break;
        const int same = PyObject_RichCompareBool(params[i].name.ptr(), name, Py_EQ);
        if (same < 0) throw py::error_already_set();
        if (same) break;
      }
      if (i < params.size()) {
        if (values[i]) return false;  // given twice
        values[i] = value;
      } else if (var_keyword >= 0) {
        extra[name] = value;
      } else {
        return false;
      }
    }
    if (!extra.empty()) {
      owned.push_back(std::move(extra));
      values[var_keyword] = owned.back().ptr();
    }
  }
  for (size_t i = 0; i < params.size(); ++i) {
    const ParamKind kind = params[i].kind;
    if (!values[i] && !params[i].has_default && kind != ParamKind::VarPositional && kind != ParamKind::VarKeyword)
      return false;
  }
  return true;
}

// True for a NumPy array whose dtype and byte order the layout takes.
bool layable_type(PyArrayObject* a) {
  return supported_type(PyArray_TYPE(a)) && PyArray_ISNBO(PyArray_DESCR(a)->byteorder);
}

// True for a NumPy array the layout takes: its dtype and byte order, strides a multiple of the
// itemsize.
bool layable(PyArrayObject* a) {
  if (!layable_type(a)) return false;
  for (int d = 0; d < PyArray_NDIM(a); ++d)
    if (PyArray_STRIDES(a)[d] % PyArray_ITEMSIZE(a)) return false;
  return true;
}

// The walk of one call's values (what _api traced by): tuples, lists and dicts are structure,
// arrays and numbers leaves, other hashable values statics.
class Walk {
 public:
  Walk(CallSignature& out, DevicePolicy policy, DeviceKinds& kinds, const std::vector<int>& static_numbers,
       bool by_identity)
      : out_(out), policy_(policy), kinds_(kinds), static_numbers_(static_numbers), by_identity_(by_identity),
        plains_(out.key.get_allocator().resource()) {}

  /// A parameter's value: an object of the user's class that a trace follows (_capture.by_type)
  /// is keyed by its type and by which earlier such object of this walk it is (the function may
  /// compare them with `is`), not by its identity: a new but like object (a `self` made per
  /// call) finds the entry, as what the function reads from it is read on every call (sources).
  void top(PyObject* o) {
    if (by_type(o)) return add_plain(o);
    value(o);
  }

  void static_value(PyObject* o, const py::str& name) {
    if (PyObject_Hash(o) != -1) return add_static(o);
    PyErr_Clear();
    // lists and ndarrays: kept by value, as _frozen.Frozen
    py::object frozen = py::reinterpret_steal<py::object>(PyObject_CallOneArg(freeze, o));
    if (!frozen) {
      PyErr_Clear();
      throw Refusal{"static argument '" + name.cast<std::string>() + "' of type " + type_name_text(o) + " (unhashable)",
                    "pass a hashable value, or lists, tuples and ndarrays of them"};
    }
    add_static(frozen.ptr());
  }

  void value(PyObject* o) {
    if (Py_EnterRecursiveCall(" while reading a compiled function's arguments")) throw py::error_already_set();
    struct Leave {
      ~Leave() { Py_LeaveRecursiveCall(); }
    } leave;
    if (source_ && source_value(o)) return;
    if (PyArray_CheckExact(o)) return leaf(o, LeafKind::HostArray);
    if (PyTuple_Check(o) || PyList_Check(o)) {
      const bool tuple = PyTuple_Check(o);
      const Py_ssize_t n = tuple ? PyTuple_GET_SIZE(o) : PyList_GET_SIZE(o);
      if (PyTuple_CheckExact(o) || PyList_CheckExact(o)) {
        put_node(out_.key, tuple ? Node::Tuple : Node::List, n);
      } else {
        put_node(out_.key, Node::Named, n);  // the function gets one of its type (a namedtuple)
        out_.statics.push_back(py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(Py_TYPE(o))));
      }
      for (Py_ssize_t i = 0; i < n; ++i) value(tuple ? PyTuple_GET_ITEM(o, i) : PyList_GET_ITEM(o, i));
      return;
    }
    if (PyDict_Check(o)) {
      // in insertion order: the function iterates them so (d.values() concatenated), and a
      // dict of other order is another signature
      py::list keys = py::reinterpret_steal<py::list>(PyDict_Keys(o));
      if (!keys) throw py::error_already_set();
      put_node(out_.key, Node::Dict, static_cast<int64_t>(keys.size()));
      out_.statics.push_back(py::tuple(keys));
      for (const py::handle& k : keys) value(py::reinterpret_borrow<py::object>(o)[k].ptr());
      return;
    }
    if (PyArray_Check(o))  // np.matrix, masked arrays: the same operators mean other things
      throw Refusal{"an argument of type " + type_name_text(o) + " (a subclass of ndarray)",
                    "pass np.asarray(x), or the data and mask as arrays"};
    if (PyLong_CheckExact(o) && int64_overflows(o)) {
      // no int64 holds it: a static value, which NumPy's weak promotion then places (a float in
      // float arithmetic, OverflowError against int64), as it does outside a trace
      return add_static(o);
    }
    if (PyArray_IsScalar(o, Generic)) return leaf(o, LeafKind::NumpyScalar);
    if (PyBool_Check(o)) return leaf(o, LeafKind::Bool);
    if (PyLong_Check(o)) return leaf(o, LeafKind::Int);
    if (PyFloat_Check(o)) return leaf(o, LeafKind::Float);
    if (is_device_array(o)) {
      if (policy_ != DevicePolicy::Take) refuse_device(o);
      return device_leaf(o, py::object());
    }
    if (tracer_type && PyObject_TypeCheck(o, reinterpret_cast<PyTypeObject*>(tracer_type)))
      throw Refusal{"a traced value kept from an earlier trace as an argument",
                    "pass arrays, and return what the compiled function computes"};
    if (policy_ == DevicePolicy::Route && kinds_.on_device(o)) refuse_device(o);  // from here on: Take
    if (policy_ == DevicePolicy::Take) {
      if (std::optional<DeviceKinds::Leaf> found = kinds_.leaf_of(o)) return device_leaf(found->leaf.ptr(), found->kind, o);
    } else if (policy_ == DevicePolicy::Refuse && on_device(o)) {
      refuse_device(o);
    }
    if (PySlice_Check(o)) {  // unhashable before Python 3.12: kept by its bounds (supervision's get_data_item)
      const auto* s = reinterpret_cast<PySliceObject*>(o);
      py::tuple bounds = py::make_tuple(py::handle(reinterpret_cast<PyObject*>(&PySlice_Type)), py::handle(s->start),
                                        py::handle(s->stop), py::handle(s->step));
      return add_static(o, bounds.ptr());
    }
    if (PyObject_Hash(o) == -1) {
      PyErr_Clear();
      // an unhashable object of attributes (a @dataclass config): by identity, as a plain
      // object's default hash and == are; what the function reads from it is a source, read on
      // every call. Others (a set) hold what no source reads: refused
      if (Py_TYPE(o)->tp_dictoffset == 0)
        throw Refusal{"an argument of type " + type_name_text(o), "pass arrays, numbers, or hashable static values"};
      py::object same = py::reinterpret_steal<py::object>(PyObject_CallOneArg(identity, o));
      if (!same) throw py::error_already_set();
      return add_static(o, same.ptr());
    }
    add_static(o);
  }

  /// A source's value (call_signature.h's Source), or `missing` where it could not be read.
  void source(const py::object& o) {
    source_ = true;
    if (o) top(o.ptr());
    else add_static(missing);
    source_ = false;
  }

  static PyObject* tracer_type;  // _tracer.Tracer, installed by _api
  static PyObject* freeze;       // _frozen.Frozen, installed by _api
  static PyObject* missing;      // what a source that cannot be read stands as, installed by _api
  static PyObject* identity;     // _frozen.Identity, installed by _api
  static PyObject* plain;        // _frozen.Plain, the tag of an object keyed by its type, installed by _api
  static PyObject* plain_type;   // _capture.by_type: (class) -> whether its objects are, installed by _api

 private:
  void leaf(PyObject* o, LeafKind kind, PyObject* caller = nullptr) {
    const int ordinal = ordinal_++;
    const bool number = kind == LeafKind::NumpyScalar || kind == LeafKind::Bool || kind == LeafKind::Int ||
                        kind == LeafKind::Float;
    if ((number || kind == LeafKind::HostArray) &&
        std::binary_search(static_numbers_.begin(), static_numbers_.end(), ordinal)) {
      if (number) return add_static(o);
      if (numbers_array(o)) {
        // a small array of the numbers a trace needed as values (Mask R-CNN's feature shapes): by value
        py::object frozen = py::reinterpret_steal<py::object>(PyObject_CallOneArg(freeze, o));
        if (!frozen) throw py::error_already_set();
        return add_static(frozen.ptr());
      }
    }
    out_.leaf_ordinal.push_back(ordinal);
    out_.key += static_cast<char>(Node::Leaf);
    out_.leaves.push_back(py::reinterpret_borrow<py::object>(o));
    out_.kinds.push_back(kind);
    if (caller) {  // callers stays empty until a leaf stands for a caller's array
      out_.callers.resize(out_.leaves.size());
      out_.callers.back() = py::reinterpret_borrow<py::object>(caller);
    }
  }

  // Whether an array leaf may be static by its values: an int array of a few elements. (An ordinal is a
  // place in the walk: in a call of another structure, a larger array may stand where a number did.)
  static bool numbers_array(PyObject* o) {
    PyArrayObject* a = reinterpret_cast<PyArrayObject*>(o);
    return PyArray_SIZE(a) <= kNumbersArray && PyTypeNum_ISINTEGER(PyArray_TYPE(a));
  }

  // A source's value other than a container: arrays the layout takes are leaves (read and written
  // in place on every call), the rest static, numbers included (a shape or a loop bound is read
  // from them); an unhashable value is kept by value. False for a container (structure, as for
  // arguments) and a Tracer (refused).
  bool source_value(PyObject* o) {
    if (PyTuple_Check(o) || PyList_Check(o) || PyDict_Check(o)) return false;
    if (tracer_type && PyObject_TypeCheck(o, reinterpret_cast<PyTypeObject*>(tracer_type))) return false;
    if (PyArray_CheckExact(o) && layable(reinterpret_cast<PyArrayObject*>(o))) {
      leaf(o, LeafKind::HostArray);
      return true;
    }
    if (!PyArray_Check(o) && PyObject_Hash(o) != -1) {
      add_static(o);
      return true;
    }
    PyErr_Clear();
    py::object frozen = py::reinterpret_steal<py::object>(PyObject_CallOneArg(freeze, o));
    if (!frozen) PyErr_Clear();
    add_static(frozen ? frozen.ptr() : o);  // else compared by ==
    return true;
  }

  // An array in GPU memory where the target is the CPU: target="auto" goes on as target="cuda",
  // whose function then runs the call on this walk.
  void refuse_device(PyObject* o) {
    Refusal r{"an array in GPU memory (" + type_name_text(o) + ") with target='cpu'",
              "compile with target='cuda' or target='auto'", true};
    if (policy_ != DevicePolicy::Route) throw r;
    out_.routed = std::move(r);
    if (!cuda_unavailable_reason().empty()) throw RoutedNowhere{};
    policy_ = DevicePolicy::Take;
  }

  // An array in GPU memory: results follow the first one's library (`kind`; null for a
  // DeviceArray), as NumPy-style libraries do.
  void device_leaf(PyObject* o, py::object kind, PyObject* caller = nullptr) {
    if (!out_.on_device) out_.device_kind = std::move(kind);
    out_.on_device = true;
    leaf(o, LeafKind::DeviceArray, caller);
  }

  /// The value and, before it, what tells it from equal values of other kinds (1, 1.0, True): its
  /// type, or `tag` (an Identity, compared first, so that o's own == never runs on another object)
  void add_static(PyObject* o, PyObject* tag = nullptr) {
    out_.key += static_cast<char>(Node::Static);
    out_.statics.push_back(py::reinterpret_borrow<py::object>(tag ? tag : reinterpret_cast<PyObject*>(Py_TYPE(o))));
    out_.statics.push_back(py::reinterpret_borrow<py::object>(o));
  }

  bool by_type(PyObject* o) const {
    PyTypeObject* t = Py_TYPE(o);
    if (by_identity_ || !(t->tp_flags & Py_TPFLAGS_HEAPTYPE) || t->tp_dictoffset == 0 || PyType_Check(o)) return false;
    // asked once per class (kept alive here: its address is the key)
    static auto* known = new std::unordered_map<PyTypeObject*, std::pair<py::object, bool>>();
    auto it = known->find(t);
    if (it == known->end()) {
      py::handle cls(reinterpret_cast<PyObject*>(t));
      const bool yes = py::handle(plain_type)(cls).cast<bool>();
      it = known->emplace(t, std::make_pair(py::reinterpret_borrow<py::object>(cls), yes)).first;
    }
    return it->second.second;
  }

  // The tag (Plain, type, k), k: the first object of this walk kept by type that o is, then o
  // (same_statics compares the tag alone).
  void add_plain(PyObject* o) {
    size_t k = 0;
    while (k < plains_.size() && plains_[k] != o) ++k;
    if (k == plains_.size()) plains_.push_back(o);
    out_.key += static_cast<char>(Node::Static);
    out_.statics.push_back(py::make_tuple(py::handle(plain), py::handle(reinterpret_cast<PyObject*>(Py_TYPE(o))), k));
    out_.statics.push_back(py::reinterpret_borrow<py::object>(o));
  }

  CallSignature& out_;
  DevicePolicy policy_;
  DeviceKinds& kinds_;
  bool source_ = false;  // walking a source's value
  const std::vector<int>& static_numbers_;
  int ordinal_ = 0;  // of the next value that could be a leaf
  bool by_identity_;  // the function uses its objects' identities: none is kept by type
  std::pmr::vector<PyObject*> plains_;  // the objects kept by type so far
};

PyObject* Walk::tracer_type = nullptr;
PyObject* Walk::freeze = nullptr;
PyObject* Walk::identity = nullptr;
PyObject* Walk::plain = nullptr;
PyObject* Walk::plain_type = nullptr;
PyObject* Walk::missing = nullptr;

// A source's value as this call reads it; null where a step is missing (an attribute, a global,
// an empty cell, a parameter left out).
py::object read_source(const Source& s, const std::pmr::vector<PyObject*>& values) {
  PyObject* o = nullptr;
  if (s.param >= 0) {
    o = values[s.param];
  } else if (PyDict_Check(s.root.ptr())) {
    o = PyDict_GetItemWithError(s.root.ptr(), s.key.ptr());
    if (!o && PyErr_Occurred()) throw py::error_already_set();
  } else if (PyCell_Check(s.root.ptr())) {
    o = PyCell_GET(s.root.ptr());
  } else {
    o = s.root.ptr();
  }
  if (!o) return {};
  py::object v = py::reinterpret_borrow<py::object>(o);
  for (const py::object& attr : s.attrs) {
    // a 1-tuple: an item of a list, tuple or dict (_capture.source_name), else an attribute
    const bool item = PyTuple_Check(attr.ptr());
    PyObject* next = item ? PyObject_GetItem(v.ptr(), PyTuple_GET_ITEM(attr.ptr(), 0)) : PyObject_GetAttr(v.ptr(), attr.ptr());
    if (!next) {
      if (!PyErr_ExceptionMatches(item ? PyExc_LookupError : PyExc_AttributeError) &&
          !(item && PyErr_ExceptionMatches(PyExc_TypeError)))
        throw py::error_already_set();
      PyErr_Clear();
      return {};
    }
    v = py::reinterpret_steal<py::object>(next);
  }
  return v;
}

struct Span {
  uintptr_t lo, hi;
  int leaf;
};

// An array leaf as the layout sees it.
struct ArrayLeaf {
  uintptr_t data = 0;
  int ndim = 0;
  const npy_intp* dims = nullptr;
  const npy_intp* strides = nullptr;  // bytes
  int type = 0, item = 0;
  bool writeable = true;
  int ordinal = -1;  // the CUDA device holding it; -1: host memory
};

// False when the layout refuses the leaf (its dtype or byte order).
bool array_leaf(PyObject* o, LeafKind kind, ArrayLeaf& a) {
  if (kind == LeafKind::HostArray) {
    auto* arr = reinterpret_cast<PyArrayObject*>(o);
    a = ArrayLeaf{reinterpret_cast<uintptr_t>(PyArray_DATA(arr)), PyArray_NDIM(arr), PyArray_DIMS(arr),
                  PyArray_STRIDES(arr), PyArray_TYPE(arr), static_cast<int>(PyArray_ITEMSIZE(arr)),
                  PyArray_ISWRITEABLE(arr) != 0, -1};
    return layable_type(arr);
  }
  const auto& d = py::handle(o).cast<const DeviceArray&>();
  static_assert(sizeof(npy_intp) == sizeof(int64_t));
  a = ArrayLeaf{static_cast<uintptr_t>(d.ptr), static_cast<int>(d.shape.size()),
                reinterpret_cast<const npy_intp*>(d.shape.data()), reinterpret_cast<const npy_intp*>(d.strides.data()),
                d.typenum, d.itemsize, d.writeable, d.ordinal};
  return supported_type(d.typenum);
}

// True for an array whose elements lie in C order with no gaps.
bool c_contiguous(const ArrayLeaf& a) {
  npy_intp expect = a.item;
  for (int d = a.ndim - 1; d >= 0; --d) {
    if (a.dims[d] != 1 && a.strides[d] != expect) return false;
    expect *= a.dims[d];
  }
  return true;
}

// The leaves at the ordinals `run_time_rows` lists whose rows are a run-time length in this call
// (call_signature): each given the int leaf of its length, appended after the walk's leaves
// (arrays of one length share it), its group's extent the bound's.
void run_time_lengths(CallSignature& out, const std::pmr::vector<ArrayLeaf>& arrays, const std::vector<int>& run_time_rows) {
  const size_t n = out.walked;
  std::pmr::vector<int> in_group(out.group_extent.size(), 0, out.key.get_allocator().resource());
  for (size_t i = 0; i < n; ++i)
    if (out.leaf_group[i] >= 0) ++in_group[out.leaf_group[i]];
  for (size_t i = 0; i < n; ++i) {
    const ArrayLeaf& a = arrays[i];
    if (out.kinds[i] != LeafKind::HostArray || a.ndim < 1 || a.dims[0] < 2 || in_group[out.leaf_group[i]] != 1 ||
        out.group_used[out.leaf_group[i]] == 0 ||
        !std::binary_search(run_time_rows.begin(), run_time_rows.end(), out.leaf_ordinal[i]) || !c_contiguous(a))
      continue;
    int rows = -1;
    for (size_t j = 0; j < i && rows < 0; ++j)
      if (out.leaf_rows[j] >= 0 && arrays[j].dims[0] == a.dims[0]) rows = out.leaf_rows[j];
    if (rows < 0) {
      rows = static_cast<int>(out.leaves.size());
      out.leaves.push_back(py::int_(static_cast<int64_t>(a.dims[0])));
      out.kinds.push_back(LeafKind::Int);
      out.leaf_group.push_back(-1);
      out.leaf_offset.push_back(0);
      out.leaf_ordinal.push_back(-1);
      out.leaf_rows.push_back(-1);
    }
    out.leaf_rows[i] = rows;
    const int gi = out.leaf_group[i];
    out.group_extent[gi] = out.group_used[gi] / a.dims[0] * rows_bound(a.dims[0]);
  }
}

// The aliasing layout of the leaves, appended to the key. Throws LayoutRefusal for leaves it
// cannot lay out.
void layout(CallSignature& out, const std::vector<int>& run_time_rows) {
  const int n = static_cast<int>(out.leaves.size());
  out.leaf_group.assign(n, -1);
  out.leaf_offset.assign(n, 0);
  std::pmr::memory_resource* memory = out.key.get_allocator().resource();
  std::pmr::vector<Span> spans(memory), empties(memory);
  spans.reserve(n);
  std::pmr::vector<ArrayLeaf> arrays(n, memory);
  for (int i = 0; i < n; ++i) {
    PyObject* o = out.leaves[i].ptr();
    const LeafKind kind = out.kinds[i];
    if (kind == LeafKind::HostArray || kind == LeafKind::DeviceArray) {
      if (!array_leaf(o, kind, arrays[i])) throw LayoutRefusal{};
      const ArrayLeaf& a = arrays[i];
      uintptr_t lo = a.data, hi = lo;
      bool empty = false;
      for (int d = 0; d < a.ndim; ++d) {
        const npy_intp ext = a.dims[d], st = a.strides[d];
        if (ext == 0) empty = true;
        if (st % a.item) throw LayoutRefusal{};
        if (st < 0) lo += st * (ext - 1);
        else hi += st * (ext - 1);
      }
      if (empty) empties.push_back({lo, lo, i});  // touches nothing: extent 0
      else spans.push_back({lo, hi + a.item, i});
    } else if (kind == LeafKind::NumpyScalar) {
      if (!supported_type(PyArray_DescrFromScalar(o)->type_num)) throw LayoutRefusal{};
    } else if (kind == LeafKind::Int && int64_overflows(o)) {
      throw LayoutRefusal{};  // a subclass of int past int64
    }
  }
  // sweep the non-empty spans by address (host and device memory never share addresses: CUDA's
  // unified addressing); an empty array touches nothing and is its own group
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.lo < b.lo; });
  std::pmr::vector<int> group_of(n, -1, memory);  // per leaf, in sweep order first
  int groups = 0;
  uintptr_t open_hi = 0;
  for (size_t k = 0; k < spans.size(); ++k) {
    if (k == 0 || spans[k].lo >= open_hi) ++groups;
    open_hi = k == 0 ? spans[k].hi : std::max(open_hi, spans[k].hi);
    group_of[spans[k].leaf] = groups - 1;
  }
  for (const Span& s : empties) group_of[s.leaf] = groups++;
  // number groups by their first leaf, so storages follow the arguments' order
  std::pmr::vector<int> renumber(groups, -1, memory);
  int next = 0;
  for (int i = 0; i < n; ++i)
    if (group_of[i] >= 0 && renumber[group_of[i]] < 0) renumber[group_of[i]] = next++;
  out.bases.assign(groups, UINTPTR_MAX);
  out.group_owner.assign(groups, -1);
  out.group_dtype.assign(groups, -1);
  out.group_ordinal.assign(groups, -1);
  std::pmr::vector<uintptr_t> ends(groups, 0, memory);
  std::pmr::vector<Span> by_leaf(n, Span{0, 0, -1}, memory);
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
      throw LayoutRefusal{};
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
    if ((start - out.bases[gi]) % arrays[i].item) throw LayoutRefusal{};
    out.leaf_group[i] = gi;
    out.leaf_offset[i] = static_cast<int64_t>((start - out.bases[gi]) / arrays[i].item);
  }
  out.group_used.assign(out.group_extent.begin(), out.group_extent.end());
  out.walked = static_cast<size_t>(n);
  out.leaf_rows.assign(n, -1);
  if (!run_time_rows.empty()) run_time_lengths(out, arrays, run_time_rows);
  auto& key = out.key;
  for (int gi = 0; gi < groups; ++gi) {
    key += 'G';
    put(key, static_cast<int32_t>(out.group_dtype[gi]));
    put(key, out.group_extent[gi]);
    put(key, static_cast<int32_t>(out.group_ordinal[gi]));
  }
  for (size_t i = 0; i < out.leaves.size(); ++i) {
    const LeafKind kind = out.kinds[i];
    key += static_cast<char>(kind);
    if (kind == LeafKind::HostArray || kind == LeafKind::DeviceArray) {
      const ArrayLeaf& a = arrays[i];
      put(key, static_cast<int32_t>(a.ndim));
      const bool rows = out.leaf_rows[i] >= 0;  // keyed by the bound, negated, and the leaf of the length
      if (rows) put(key, static_cast<int32_t>(out.leaf_rows[i]));
      for (int d = 0; d < a.ndim; ++d) {
        put(key, static_cast<int64_t>(rows && d == 0 ? -rows_bound(a.dims[0]) : a.dims[d]));
        put(key, static_cast<int64_t>(a.strides[d]));
      }
      put(key, static_cast<char>(a.writeable));
      put(key, static_cast<int32_t>(out.leaf_group[i]));
      put(key, out.leaf_offset[i]);
    } else if (kind == LeafKind::NumpyScalar) {
      put(key, static_cast<int32_t>(PyArray_DescrFromScalar(out.leaves[i].ptr())->type_num));
    }
  }
}

// Refuses arrays on more than one CUDA device in one call.
void one_device(const CallSignature& out) {
  std::vector<int> ordinals;
  for (size_t i = 0; i < out.leaves.size(); ++i)
    if (out.kinds[i] == LeafKind::DeviceArray) ordinals.push_back(py::handle(out.leaves[i]).cast<const DeviceArray&>().ordinal);
  std::sort(ordinals.begin(), ordinals.end());
  ordinals.erase(std::unique(ordinals.begin(), ordinals.end()), ordinals.end());
  if (ordinals.size() > 1) {
    std::string listed;
    for (int o : ordinals) listed += (listed.empty() ? "" : ", ") + std::to_string(o);
    throw py::value_error("arrays on different CUDA devices ([" + listed + "]) in one call");
  }
}

}  // namespace

bool on_device(PyObject* o) {
  if (o == Py_None || PyUnicode_CheckExact(o) || PyType_Check(o) || PyArray_IsScalar(o, Generic)) return false;
  if (PyObject_HasAttrString(o, "__cuda_array_interface__")) return true;
  py::object device = py::reinterpret_steal<py::object>(PyObject_GetAttrString(o, "__dlpack_device__"));
  if (!device) {
    PyErr_Clear();
    return false;
  }
  const int kind = device()[py::int_(0)].cast<int>();
  return kind == 2 || kind == 13;  // kDLCUDA, kDLCUDAManaged
}

void set_tracer_type(PyObject* type) {
  Py_XINCREF(type);
  Walk::tracer_type = type;
}

void set_freeze(PyObject* freeze, PyObject* missing, PyObject* identity, PyObject* plain, PyObject* plain_type) {
  Py_XINCREF(freeze);
  Py_XINCREF(missing);
  Py_XINCREF(identity);
  Py_XINCREF(plain);
  Py_XINCREF(plain_type);
  Walk::freeze = freeze;
  Walk::missing = missing;
  Walk::identity = identity;
  Walk::plain = plain;
  Walk::plain_type = plain_type;
}

bool is_plain_tag(PyObject* o) {
  return PyTuple_CheckExact(o) && PyTuple_GET_SIZE(o) == 3 && PyTuple_GET_ITEM(o, 0) == Walk::plain;
}

bool is_device_array(PyObject* o) {
  static PyTypeObject* type = reinterpret_cast<PyTypeObject*>(py::type::of<DeviceArray>().ptr());
  return PyObject_TypeCheck(o, type);
}

int64_t rows_bound(int64_t n) {
  int64_t bound = 16;
  while (bound < n) bound *= 2;
  return bound;
}

void call_signature(const std::vector<Param>& params, const std::vector<Source>& sources,
                    const std::vector<int>& static_numbers, const std::vector<int>& run_time_rows, bool by_identity,
                    DevicePolicy policy, DeviceKinds& kinds, PyObject* args, PyObject* kwargs, CallSignature& out) {
  import_numpy();
  out.args = args;
  out.kwargs = kwargs;
  std::pmr::memory_resource* memory = out.key.get_allocator().resource();
  std::pmr::vector<PyObject*> values(memory);
  std::pmr::vector<py::object> owned(memory);
  if (!bind(params, args, kwargs, values, owned)) throw py::type_error();
  out.key.reserve(64 + 48 * params.size());
  out.leaves.reserve(8);
  out.kinds.reserve(8);
  Walk walk(out, policy, kinds, static_numbers, by_identity);
  for (size_t i = 0; i < params.size(); ++i) {
    if (!values[i]) out.key += static_cast<char>(Node::Default);  // the function's default never varies
    else if (params[i].is_static) walk.static_value(values[i], params[i].name);
    else walk.top(values[i]);
  }
  for (const Source& s : sources) walk.source(read_source(s, values));
  out.structure_end = out.key.size();
  out.key += '|';
  if (out.on_device) one_device(out);
  layout(out, run_time_rows);
}

void CallSignature::clear() {
  key.clear();
  structure_end = 0;
  statics.clear();
  leaves.clear();
  kinds.clear();
  callers.clear();
  on_device = false;
  routed.reset();
  device_kind = py::object();
  bases.clear();
  group_owner.clear();
  group_dtype.clear();
  group_ordinal.clear();
  group_extent.clear();
  group_used.clear();
  leaf_group.clear();
  leaf_offset.clear();
  leaf_ordinal.clear();
  leaf_rows.clear();
  walked = 0;
}

py::tuple CallSignature::leaf_tuple() const {
  py::tuple out(leaves.size());
  for (size_t i = 0; i < leaves.size(); ++i) out[i] = leaves[i];
  return out;
}

py::list CallSignature::arguments(const std::vector<py::object>& replacements, const py::object& missing) const {
  py::list out;
  const char* code = key.data();
  const char* end = key.data() + structure_end;
  const py::object* object = statics.data();
  const py::object* leaf = replacements.data();
  while (code < end) {
    if (*code == static_cast<char>(Node::Default)) {
      ++code;
      out.append(missing);
    } else {
      out.append(build_tree(code, object, leaf));
    }
  }
  return out;
}

}  // namespace strider::python
