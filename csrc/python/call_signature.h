#pragma once
// The signature of a call: its arguments bound to the compiled function's parameters, walked
// once into a cache key, the leaves (arrays and runtime scalars), the static values, and the
// aliasing layout of the array leaves. The dispatcher (dispatcher.cc) computes it once per call.

#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory_resource>
#include <optional>
#include <string>
#include <vector>

#include "device_leaf.h"
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

/// A value a compiled function reads that the caller does not pass: an attribute of an object
/// argument (`self.stride`), a module global or a closure variable (python/strider/_capture.py).
/// Each call reads it again and walks it as a source (arrays leaves, the rest static).
struct Source {
  int param = -1;                  // the root: this parameter's value, or else
  py::object root;                 // a dict (`key`: the item), a cell (its contents) or an object
  py::object key;
  std::vector<py::object> attrs;   // then these attributes (a 1-tuple: that item), in turn
};

/// Why a call cannot run, in NumPy's terms: what it passed and what to pass instead.
struct Refusal {
  std::string what, instead;
  bool device = false;  // an array in GPU memory, which NumPy cannot run on: raised in every mode
};

/// What a call does with arrays in GPU memory: the compiled function's target decides.
enum class DevicePolicy {
  Refuse,  // target="cpu": say so
  Route,   // target="auto": at an array in GPU memory the walk goes on as Take and the call runs as
           // target="cuda" (CallSignature::routed)
  Take,    // target="cuda": leaves, read and written in place
};

/// What a leaf is, as the cache key tells leaves apart.
enum class LeafKind : char { HostArray = 'A', DeviceArray = 'D', NumpyScalar = 'S', Bool = 'b', Int = 'i', Float = 'f' };

/// A call's signature: what the dispatcher looks its traced program up by, and what a trace and
/// a run read from the call.
struct CallSignature {
  /// Allocates from `memory` (the dispatcher's arena on its stack: a call allocates nothing).
  explicit CallSignature(std::pmr::memory_resource* memory)
      : key(memory), statics(memory), leaves(memory), kinds(memory), callers(memory), bases(memory),
        group_owner(memory), group_dtype(memory), group_ordinal(memory), group_extent(memory), group_used(memory),
        leaf_group(memory), leaf_offset(memory), leaf_ordinal(memory), leaf_rows(memory) {}

  std::pmr::string key;                   // structure codes, '|', the leaves' layout
  size_t structure_end = 0;               // where the structure codes end in `key`
  std::pmr::vector<py::object> statics;   // objects the structure names, compared by value on lookup
  std::pmr::vector<py::object> leaves;    // arrays and runtime scalars, in walk order
  std::pmr::vector<LeafKind> kinds;       // per leaf
  std::pmr::vector<py::object> callers;   // per leaf, or empty: the caller's array a DeviceArray leaf
                                          // stands for (CuPy, PyTorch, JAX; python/strider/_cuda.py)
  bool on_device = false;                 // a leaf is in GPU memory
  std::optional<Refusal> routed;          // policy Route met one: what target="cpu" would say
  py::object device_kind;                 // the first such leaf's library kind where its results need
                                          // one (_cuda.py: it names the stream, makes the arrays)
  // how the array leaves map onto storages: leaves whose bytes overlap share one storage (an
  // aliasing group) whose base is the lowest address among them
  std::pmr::vector<uintptr_t> bases;      // per group
  std::pmr::vector<int> group_owner;      // per group: a leaf of the group (keeps its memory alive)
  std::pmr::vector<int> group_dtype;      // per group: NumPy type number
  std::pmr::vector<int> group_ordinal;    // per group: the CUDA device holding it, -1: host memory
  std::pmr::vector<int64_t> group_extent; // per group: elements from the base to the end of the last leaf
                                          // (of a leaf of run-time rows: to the end of its bound's)
  std::pmr::vector<int64_t> group_used;   // per group: elements from the base to the end of the last leaf
  std::pmr::vector<int> leaf_group;       // per leaf: its group, -1 for scalars
  std::pmr::vector<int64_t> leaf_offset;  // per leaf: elements from its group's base to its first element
  std::pmr::vector<int> leaf_ordinal;     // per leaf: its place among the values the walk could have
                                          // made leaves (Dispatcher::specialize names them so)
  // per leaf: for an array whose rows are a run-time length (Dispatcher::run_time_rows), the leaf
  // holding that length: an int leaf after the walk's, one per distinct length; else -1
  std::pmr::vector<int> leaf_rows;
  size_t walked = 0;                      // the leaves the walk made (the rest hold lengths of rows)
  PyObject* args = nullptr;               // the call's own (borrowed, for the call): a Runner's post
  PyObject* kwargs = nullptr;             // step replays writes into its containers

  /// Empty again, for another walk of the same call.
  void clear();

  /// The leaves as a tuple.
  py::tuple leaf_tuple() const;

  /// The caller's array that leaf `i` stands for: itself, unless a DeviceArray leaf was made for it.
  const py::object& caller(size_t i) const { return i < callers.size() && callers[i] ? callers[i] : leaves[i]; }

  /// The call's arguments rebuilt with `leaves` in place of its leaves: one value per parameter,
  /// `missing` for a parameter the caller left out, then one per source (`missing` where it could
  /// not be read).
  py::list arguments(const std::vector<py::object>& leaves, const py::object& missing) const;
};

/// Policy Route met an array in GPU memory where CUDA is unavailable: the walk stops there
/// (CallSignature::routed says what target="cpu" would have said).
struct RoutedNowhere {};
/// The leaves' layout refused them (dtype, byte order, strides, aliasing): _api says which one.
struct LayoutRefusal {};

/// Elements of an int array the caller passes that a trace may need as values (Mask R-CNN's
/// feature shapes), made static by its values.
constexpr int64_t kNumbersArray = 16;

/// The bound a run-time count of `n` rows is traced with (a power of two, 16 at least): calls
/// whose counts share it share a trace.
int64_t rows_bound(int64_t n);

/// Binds a call's arguments to `params` and walks them, then `sources`, into `out`. The numbers
/// and NumPy arrays whose leaf ordinals `static_numbers` (sorted) lists are static instead of
/// leaves (an int array of at most kNumbersArray elements by its values; a larger one, at the
/// ordinal of another structure's number, stays a leaf); objects of
/// the user's classes are keyed by type unless `by_identity` (the function uses their identity).
/// The rows of the host arrays at the leaf ordinals `run_time_rows` (sorted) lists are a length
/// known at run time, keyed by rows_bound, where the array is C-contiguous, alone in its memory
/// and has two rows at least (0 and 1 rows stay keys of their own: NumPy broadcasts one row).
/// Throws Refusal or
/// LayoutRefusal for a call the function cannot run, RoutedNowhere, py::type_error
/// when the arguments do not bind (its message is inspect's: the dispatcher asks inspect to raise
/// it). `kinds` (policy Take) reads the values of array libraries in GPU memory.
void call_signature(const std::vector<Param>& params, const std::vector<Source>& sources,
                    const std::vector<int>& static_numbers, const std::vector<int>& run_time_rows, bool by_identity,
                    DevicePolicy policy, DeviceKinds& kinds, PyObject* args, PyObject* kwargs, CallSignature& out);

/// Installs _tracer.Tracer, the type of values a walk refuses as kept from an earlier trace.
void set_tracer_type(PyObject* type);
/// Installs _frozen.Frozen, which keeps an unhashable static argument by value, the object a
/// source that cannot be read stands as, and _frozen.Identity, which keeps an unhashable object
/// argument by identity, _frozen.Plain, the tag of an object argument or source kept by its type,
/// and _capture.by_type, which says of a class whether its objects are.
void set_freeze(PyObject* freeze, PyObject* missing, PyObject* identity, PyObject* plain, PyObject* plain_type);
/// True for the tag of an object kept by type: a signature's statics compare it, not the object
/// after it.
bool is_plain_tag(PyObject* o);

/// True for a DeviceArray (csrc/python/device_array.h).
bool is_device_array(PyObject* o);
/// True for an array in GPU memory: __cuda_array_interface__, or a DLPack device of kind CUDA or
/// CUDA managed memory.
bool on_device(PyObject* o);

}  // namespace strider::python
