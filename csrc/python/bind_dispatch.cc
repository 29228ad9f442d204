// The per-call signature on the dispatch path: cache key and aliasing layout of a call's leaves
// (arrays and scalars), computed with NumPy's C API.
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

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
  std::vector<int64_t> group_extent;  // per group: elements from the base to the end of the last leaf
  std::vector<int> leaf_group;     // per leaf: its group, -1 for scalars
  std::vector<int64_t> leaf_offset;  // per leaf: elements from its group's base to its first element
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

// False when a leaf needs the general path (which raises the right error for it).
bool layout_of(const py::tuple& leaves, CallLayout& out) {
  if (PyArray_API == nullptr && _import_array() < 0) throw py::error_already_set();
  const int n = static_cast<int>(leaves.size());
  out.leaf_group.assign(n, -1);
  out.leaf_offset.assign(n, 0);
  std::vector<Span> spans, empties;
  std::vector<char> tags(n);
  for (int i = 0; i < n; ++i) {
    PyObject* o = leaves[i].ptr();
    if (PyArray_Check(o)) {
      auto* a = reinterpret_cast<PyArrayObject*>(o);
      if (!supported_type(PyArray_TYPE(a)) || !PyArray_ISNBO(PyArray_DESCR(a)->byteorder)) return false;
      const int item = static_cast<int>(PyArray_ITEMSIZE(a));
      uintptr_t lo = reinterpret_cast<uintptr_t>(PyArray_DATA(a)), hi = lo;
      bool empty = false;
      for (int d = 0; d < PyArray_NDIM(a); ++d) {
        const npy_intp ext = PyArray_DIM(a, d), st = PyArray_STRIDE(a, d);
        if (ext == 0) empty = true;
        if (st % item) return false;
        if (st < 0) lo += st * (ext - 1);
        else hi += st * (ext - 1);
      }
      (empty ? empties : spans).push_back({lo, hi + item, i});
      tags[i] = 'A';
    } else if (PyArray_IsScalar(o, Generic)) {  // before float: np.float64 subclasses it
      if (!supported_type(PyArray_DescrFromScalar(o)->type_num)) return false;
      tags[i] = 'S';
    } else if (PyBool_Check(o)) {
      tags[i] = 'b';
    } else if (PyLong_Check(o)) {
      tags[i] = 'i';
    } else if (PyFloat_Check(o)) {
      tags[i] = 'f';
    } else {
      return false;
    }
  }
  // sweep the non-empty spans by address; an empty array touches nothing and is its own group
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.lo < b.lo; });
  std::vector<std::vector<Span>> groups;
  uintptr_t open_hi = 0;
  for (const Span& s : spans) {
    if (!groups.empty() && s.lo < open_hi) {
      groups.back().push_back(s);
      open_hi = std::max(open_hi, s.hi);
    } else {
      groups.push_back({s});
      open_hi = s.hi;
    }
  }
  for (const Span& s : empties) groups.push_back({s});
  // number groups by their first leaf, so storages follow the arguments' order
  for (auto& g : groups) std::sort(g.begin(), g.end(), [](const Span& a, const Span& b) { return a.leaf < b.leaf; });
  std::sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) { return a[0].leaf < b[0].leaf; });
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    uintptr_t base = groups[gi][0].lo, end = groups[gi][0].hi;
    auto* first = reinterpret_cast<PyArrayObject*>(leaves[groups[gi][0].leaf].ptr());
    const int type = PyArray_TYPE(first);
    const npy_intp item = PyArray_ITEMSIZE(first);
    for (const Span& s : groups[gi]) {
      base = std::min(base, s.lo);
      end = std::max(end, s.hi);
      if (PyArray_TYPE(reinterpret_cast<PyArrayObject*>(leaves[s.leaf].ptr())) != type) return false;
    }
    for (const Span& s : groups[gi]) {
      uintptr_t start = reinterpret_cast<uintptr_t>(PyArray_DATA(reinterpret_cast<PyArrayObject*>(leaves[s.leaf].ptr())));
      if ((start - base) % item) return false;
      out.leaf_group[s.leaf] = static_cast<int>(gi);
      out.leaf_offset[s.leaf] = static_cast<int64_t>((start - base) / item);
    }
    out.bases.push_back(base);
    out.group_owner.push_back(groups[gi][0].leaf);
    out.group_dtype.push_back(type);
    out.group_extent.push_back(static_cast<int64_t>((end - base) / item));
    put(out.key, 'G');
    put(out.key, static_cast<int32_t>(type));
    put(out.key, out.group_extent.back());
  }
  for (int i = 0; i < n; ++i) {
    PyObject* o = leaves[i].ptr();
    put(out.key, tags[i]);
    if (tags[i] == 'A') {
      auto* a = reinterpret_cast<PyArrayObject*>(o);
      put(out.key, static_cast<int32_t>(PyArray_NDIM(a)));
      for (int d = 0; d < PyArray_NDIM(a); ++d) {
        put(out.key, static_cast<int64_t>(PyArray_DIM(a, d)));
        put(out.key, static_cast<int64_t>(PyArray_STRIDE(a, d)));
      }
      put(out.key, static_cast<char>(PyArray_ISWRITEABLE(a)));
      put(out.key, static_cast<int32_t>(out.leaf_group[i]));
      put(out.key, out.leaf_offset[i]);
    } else if (tags[i] == 'S') {
      put(out.key, static_cast<int32_t>(PyArray_DescrFromScalar(o)->type_num));
    }
  }
  return true;
}

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
      .def_readonly("leaf_group", &CallLayout::leaf_group)
      .def_readonly("leaf_offset", &CallLayout::leaf_offset);
  m.def(
      "call_layout",
      [](const py::tuple& leaves) -> py::object {
        CallLayout l;
        if (!layout_of(leaves, l)) return py::none();
        return py::cast(std::move(l));
      },
      "The cache key and aliasing layout of a call's leaves, or None when one needs the general path.");
}

}  // namespace strider::python
