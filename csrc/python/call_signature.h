#pragma once
// The signature of a call: its arguments bound to the compiled function's parameters, walked
// once into a cache key, the leaves (arrays and runtime scalars), the static values, and the
// aliasing layout of the array leaves. The dispatcher (dispatcher.cc) computes it once per call.

#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>
#include <vector>

#include "pytree.h"

namespace strider::python {

namespace py = pybind11;

/// A parameter's kind, numbered as inspect.Parameter.kind.
enum class ParamKind { PositionalOnly = 0, PositionalOrKeyword = 1, VarPositional = 2, KeywordOnly = 3, VarKeyword = 4 };

/// One parameter of a compiled function, as binding a call sees it.
struct Param {
  py::str name;
  ParamKind kind;
  bool has_default = false;
  bool is_static = false;  // in static_argnames: keyed by value, never a leaf
};

/// What a leaf is, as the cache key tells leaves apart.
enum class LeafKind : char { HostArray = 'A', DeviceArray = 'D', NumpyScalar = 'S', Bool = 'b', Int = 'i', Float = 'f' };

/// A call's signature: what the dispatcher looks its traced program up by, and what a trace and
/// a run read from the call.
struct CallSignature {
  std::string key;                   // structure codes, '|', the leaves' layout
  size_t structure_end = 0;          // where the structure codes end in `key`
  std::vector<py::object> statics;   // objects the structure names, compared by value on lookup
  std::vector<py::object> leaves;    // arrays and runtime scalars, in walk order
  std::vector<LeafKind> kinds;       // per leaf
  // how the array leaves map onto storages: leaves whose bytes overlap share one storage (an
  // aliasing group) whose base is the lowest address among them
  std::vector<uintptr_t> bases;      // per group
  std::vector<int> group_owner;      // per group: a leaf of the group (keeps its memory alive)
  std::vector<int> group_dtype;      // per group: NumPy type number
  std::vector<int> group_ordinal;    // per group: the CUDA device holding it, -1: host memory
  std::vector<int64_t> group_extent; // per group: elements from the base to the end of the last leaf
  std::vector<int> leaf_group;       // per leaf: its group, -1 for scalars
  std::vector<int64_t> leaf_offset;  // per leaf: elements from its group's base to its first element

  /// The call's arguments rebuilt with `leaves` in place of its leaves: one value per parameter,
  /// `missing` for a parameter the caller left out.
  py::list arguments(const std::vector<py::object>& leaves, const py::object& missing) const;
};

/// Why a call cannot run, in NumPy's terms: what it passed and what to pass instead.
struct Refusal {
  std::string what, instead;
};
/// The leaves' layout refused them (dtype, byte order, strides, aliasing): _api says which one.
struct LayoutRefusal {};

/// Binds a call's arguments to `params` and walks them into `out`. Throws Refusal or
/// LayoutRefusal for a call the function cannot run, py::type_error when the arguments do not
/// bind (its message is inspect's: the dispatcher asks inspect to raise it).
void call_signature(const std::vector<Param>& params, bool cuda_target, PyObject* args, PyObject* kwargs,
                    CallSignature& out);

/// Installs _tracer.Tracer, the type of values a walk refuses as kept from an earlier trace.
void set_tracer_type(PyObject* type);

/// True for a DeviceArray (csrc/python/device_array.h).
bool is_device_array(PyObject* o);

}  // namespace strider::python
