#pragma once
// The owner of a compiled function's calls: the signature of each call, the cache of traced
// programs (at most max_signatures, the least recently called evicted), the counters; Python is
// entered only to trace a signature it has not seen (CompiledFunction._trace in _api.py).

#include <pybind11/pybind11.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "call_signature.h"
#include "runner.h"

namespace strider::python {

/// What the dispatcher asks of Python, installed once by strider._api.
struct DispatchHooks {
  pybind11::object current_trace;  // () -> the trace running on this thread, or None
  pybind11::object unsupported;    // (what, instead) -> the UnsupportedError to raise
  pybind11::object refuse_leaves;  // (leaves) -> raises the error naming the leaf the layout refused
  bool latest_first = false;       // run in the other extreme legal order (STRIDER_EXEC_ORDER=latest)
  DeviceKinds device_kinds;        // reads arrays in GPU memory (_cuda.library, _cuda.kind)
  // NumPy's context variable behind np.errstate/np.seterr (a new object whenever it is set), and
  // () -> whether it asks to raise or call on floating-point errors, for the last object seen
  pybind11::object errstate, errstate_raises, errstate_seen;
  bool errstate_asks = false;
};
DispatchHooks& dispatch_hooks();

/// The C++ base of CompiledFunction. The Python subclass implements _trace(signature) -> entry
/// (with .runner, a Runner; None when the trace found sources it had not read: set_sources, and
/// the call is walked again), _inline(args, kwargs) (a call made while this thread traces),
/// _bind_error(args, kwargs) (raises inspect's TypeError), _cuda_refusal() (raises why CUDA is
/// unavailable) and _on_gpu() (the function compiled for target="cuda", for target="auto").
class Dispatcher {
 public:
  /// Counters as CompiledFunction.stats() names them.
  struct Counters {
    int64_t traces = 0, cache_hits = 0, lowered = 0, compiles = 0, disk_hits = 0, specialized = 0, graph_breaks = 0, regrown = 0,
            runtime_breaks = 0, region_tries = 0;
  };

  Dispatcher(std::vector<Param> params, DevicePolicy policy, bool cache, int max_signatures);

  /// The function's result for a call.
  pybind11::object call(pybind11::handle self, PyObject* args, PyObject* kwargs);
  /// (entry, leaves) of a call's signature (traced when new), as explain() shows it.
  pybind11::tuple entry(pybind11::handle self, PyObject* args, PyObject* kwargs);
  Counters& counters() { return counters_; }
  /// counters(), with the compiles and disk hits of the programs given to count_compiles added
  /// (waits for their background compiles).
  const Counters& settled_counters();
  /// Counts p's compiles and disk hits when counters() is next read (a background compile may be
  /// running: the first call does not wait for it).
  void count_compiles(std::shared_ptr<const Program> p) { uncounted_.push_back(std::move(p)); }
  /// The entries kept.
  pybind11::list entries() const;
  /// Replaces the sources every call reads (call_signature.h); the entries kept go, as their keys
  /// did not read them.
  void set_sources(std::vector<Source> sources);
  /// Makes the numbers at these leaf ordinals (CallSignature::leaf_ordinal) static from now on:
  /// a trace needed their values. The entries kept go.
  void specialize(const std::vector<int>& ordinals);
  /// Makes the rows of the host arrays at these leaf ordinals (CallSignature::leaf_ordinal) a
  /// length known at run time from now on (call_signature.h), none where `ordinals` is empty: a
  /// new signature differed from a traced one only in them. The entries kept go.
  void set_run_time_rows(std::vector<int> ordinals);
  /// Keys the objects of the user's classes by identity from now on, as a trace found the function
  /// using it (_capture.Capture.identity). The entries kept go.
  void keep_by_identity();

 private:
  struct Item {
    std::string key;
    std::vector<pybind11::object> statics;
    pybind11::object entry;  // _results.Entry: keeps `runner` alive; or a _results.GraphBreak
    const Runner* runner;    // null for a GraphBreak: the signature's calls run in NumPy
    uint64_t used;           // the clock at its latest call: recency for eviction
  };

  struct Found {
    pybind11::object entry;
    const Runner* runner = nullptr;
    bool walk_again = false;  // the trace set new sources
    bool in_numpy = false;    // a graph break: the call runs as the function's own Python (_run_in_numpy)
  };
  // The entry of the call's signature, tracing it when new; none (and `inlined` set) when the
  // call runs inline in a trace of this thread.
  Found resolve(pybind11::handle self, PyObject* args, PyObject* kwargs, CallSignature& sig,
                      pybind11::object* inlined);
  // One walk of the call and its entry (resolve).
  Found walk_and_find(pybind11::handle self, PyObject* args, PyObject* kwargs, CallSignature& sig,
                      pybind11::object* inlined);
  // The entry of a walked signature the cache did not have (cached() first): traced by _trace on
  // `self`, unless another thread traced it meanwhile.
  Found lookup(pybind11::handle self, const CallSignature& sig);
  // The cached entry of a signature, or none.
  Found cached(const CallSignature& sig);
  static size_t hash(const CallSignature& sig);
  Item* find(const CallSignature& sig);
  // Drops the entries kept (the walk's key changed: new sources or static numbers).
  void forget();
  void insert(const CallSignature& sig, Item item);

  std::vector<Param> params_;
  std::vector<Source> sources_;
  std::vector<int> static_numbers_;  // sorted leaf ordinals (specialize)
  std::vector<int> run_time_rows_;   // sorted leaf ordinals (set_run_time_rows)
  bool by_identity_ = false;         // keep_by_identity
  DevicePolicy policy_;
  bool cache_;
  pybind11::object gpu_;  // target="auto": the function compiled for target="cuda", once asked for
  size_t max_signatures_, size_ = 0;
  Counters counters_;
  std::vector<std::shared_ptr<const Program>> uncounted_;
  uint64_t clock_ = 0;  // ticks at each call that finds or makes an item
  std::unordered_map<size_t, std::vector<Item>> table_;  // by the key's hash
  std::mutex trace_mutex_;          // one trace at a time; waiters release the GIL
};

/// Makes `cls` (a Python subclass of Dispatcher that does not override __call__) call
/// Dispatcher::call straight from CPython's call slot.
void install_call_slot(pybind11::handle cls);

}  // namespace strider::python
