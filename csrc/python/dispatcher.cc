// A compiled function's calls: signature, lookup, trace on a miss, eviction, counters, run.
#include "dispatcher.h"

#include <pybind11/detail/exception_translation.h>

#include <algorithm>
#include <cstddef>
#include <memory_resource>

#include "runtime/cuda_loader.h"
#include "runtime/data_dependent.h"

namespace py = pybind11;

namespace strider::python {

namespace {

bool same_statics(const std::vector<py::object>& a, const std::pmr::vector<py::object>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const int same = PyObject_RichCompareBool(a[i].ptr(), b[i].ptr(), Py_EQ);
    if (same < 0) throw py::error_already_set();
    if (!same) return false;
    if (is_plain_tag(a[i].ptr())) ++i;  // an object kept by type: its tag says all
  }
  return true;
}

// Walks of one call when its traces keep finding new sources (a trace that fails on one, as
// `self.buf[:] = x` does before it is a source, finds the next one on the next walk).
constexpr int kMaxWalks = 64;

// A call's signature lives in an arena on the dispatcher's stack (heap past it).
constexpr size_t kArenaBytes = 4096;

// CUDA's legacy default stream (CU_STREAM_LEGACY): it orders kernels with every blocking stream
constexpr uintptr_t kLegacyStream = 1;

bool tracing() { return !dispatch_hooks().current_trace().is_none(); }

bool latest_first() { return dispatch_hooks().latest_first; }

// Whether np.errstate/np.seterr asks floating-point errors to raise (or call a function): compiled
// kernels check none, so NumPy runs the call. Python is asked only when the setting changes.
bool errstate_asks_numpy() {
  DispatchHooks& h = dispatch_hooks();
  PyObject* value = nullptr;
  if (PyContextVar_Get(h.errstate.ptr(), nullptr, &value) < 0) throw py::error_already_set();
  py::object now = py::reinterpret_steal<py::object>(value);
  if (!now.is(h.errstate_seen)) {
    h.errstate_asks = h.errstate_raises().cast<bool>();
    h.errstate_seen = std::move(now);
  }
  return h.errstate_asks;
}

py::dict as_dict(PyObject* kwargs) { return kwargs ? py::reinterpret_borrow<py::dict>(kwargs) : py::dict(); }

[[noreturn]] void refuse(const Refusal& r) {
  py::object error = dispatch_hooks().unsupported(r.what, r.instead);
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(error.ptr())), error.ptr());
  throw py::error_already_set();
}

PyObject* call_slot(PyObject* self, PyObject* args, PyObject* kwargs) {
  try {
    // pybind11's instance holds the Dispatcher's pointer first in its simple layout: read it
    // there rather than through a cast, which looks the type up on every call
    auto* inst = reinterpret_cast<py::detail::instance*>(self);
    auto& d = inst->simple_layout ? *static_cast<Dispatcher*>(inst->simple_value_holder[0])
                                  : py::handle(self).cast<Dispatcher&>();
    return d.call(self, args, kwargs).release().ptr();
  } catch (...) {
    py::detail::try_translate_exceptions();
    return nullptr;
  }
}

}  // namespace

DispatchHooks& dispatch_hooks() {
  static DispatchHooks* hooks = new DispatchHooks();  // never destroyed: Python may be gone at exit
  return *hooks;
}

Dispatcher::Dispatcher(std::vector<Param> params, DevicePolicy policy, bool cache, int max_signatures)
    : params_(std::move(params)), policy_(policy), cache_(cache),
      max_signatures_(static_cast<size_t>(max_signatures)) {}

size_t Dispatcher::hash(const CallSignature& sig) { return std::hash<std::string_view>()(std::string_view(sig.key)); }

Dispatcher::Item* Dispatcher::find(const CallSignature& sig) {
  auto it = table_.find(hash(sig));
  if (it == table_.end()) return nullptr;
  for (Item& item : it->second)
    if (std::string_view(item.key) == std::string_view(sig.key) && same_statics(item.statics, sig.statics)) return &item;
  return nullptr;
}

void Dispatcher::insert(const CallSignature& sig, Item item) {
  if (size_ >= max_signatures_) {  // the least recently called makes room
    auto victim = table_.end();
    size_t at = 0;
    for (auto it = table_.begin(); it != table_.end(); ++it)
      for (size_t k = 0; k < it->second.size(); ++k)
        if (victim == table_.end() || it->second[k].used < victim->second[at].used) victim = it, at = k;
    victim->second.erase(victim->second.begin() + static_cast<std::ptrdiff_t>(at));
    if (victim->second.empty()) table_.erase(victim);
    --size_;
  }
  std::vector<Item>& items = table_[hash(sig)];
  items.push_back(std::move(item));
  ++size_;
}

Dispatcher::Found Dispatcher::resolve(py::handle self, PyObject* args, PyObject* kwargs, CallSignature& sig,
                                      py::object* inlined) {
  // a trace that finds sources the walk did not read asks for another walk (in practice one)
  for (int walks = 0;; ++walks) {
    if (walks == kMaxWalks) {
      if (!inlined || tracing()) throw std::runtime_error("strider: the sources a compiled function reads did not settle");
      self.attr("_argument_break")("the numbers and sources the function reads settle in no signature",
                                   "pass what it reads as arrays");
      return Found{py::none(), nullptr, false, true};
    }
    if (walks) sig.clear();
    Found found = walk_and_find(self, args, kwargs, sig, inlined);
    if (!found.walk_again) return found;
  }
}

Dispatcher::Found Dispatcher::walk_and_find(py::handle self, PyObject* args, PyObject* kwargs, CallSignature& sig,
                                            py::object* inlined) {
  // a call made while this thread traces (another compiled function, or this one recursively)
  // that the cache cannot serve runs inline: the outer trace records its ops and may fuse them
  auto inline_call = [&]() -> bool {
    if (!inlined || !tracing()) return false;
    *inlined = self.attr("_inline")(py::reinterpret_borrow<py::tuple>(args), as_dict(kwargs));
    return true;
  };
  try {
    call_signature(params_, sources_, static_numbers_, run_time_rows_, by_identity_, policy_,
                   dispatch_hooks().device_kinds, args, kwargs, sig);
  } catch (const Refusal& r) {
    if (inline_call()) return {};
    // an argument strider cannot take (a string array, a slice): NumPy runs the call, or strict raises
    if (!r.device && inlined) {
      self.attr("_argument_break")(r.what, r.instead);
      return Found{py::none(), nullptr, false, true};
    }
    refuse(r);
  } catch (const RoutedNowhere&) {
    if (inline_call()) return {};
    if (!inlined) refuse(*sig.routed);  // explain(): the CPU's program
    self.attr("_on_gpu")().attr("_cuda_refusal")();
    throw std::logic_error("strider: _cuda_refusal returned");
  } catch (const LayoutRefusal&) {
    if (inline_call()) return {};
    if (inlined) {  // a call, not explain(): NumPy runs it where strict=False and no array is on the GPU
      self.attr("_leaves_refused")(sig.leaf_tuple());
      return Found{py::none(), nullptr, false, true};
    }
    dispatch_hooks().refuse_leaves(sig.leaf_tuple());
    throw std::logic_error("strider: the dispatcher refused arguments that _refuse_leaves accepts");
  } catch (const py::type_error&) {
    if (inline_call()) return {};
    self.attr("_bind_error")(py::reinterpret_borrow<py::tuple>(args), as_dict(kwargs));
    throw std::logic_error("strider: the dispatcher could not bind arguments that inspect binds");
  }
  Dispatcher* d = this;  // whose cache and trace serve the call
  py::handle owner = self;
  if (sig.routed) {  // target="auto": the function compiled for target="cuda", on this walk
    if (!inlined) refuse(*sig.routed);  // explain(): the CPU's program
    if (!gpu_) gpu_ = self.attr("_on_gpu")();
    d = &gpu_.cast<Dispatcher&>();
    owner = gpu_;
  }
  if (Found hit = d->cached(sig); hit.runner || hit.in_numpy) return hit;
  if (inline_call()) return {};
  return d->lookup(owner, sig);
}

const Dispatcher::Counters& Dispatcher::settled_counters() {
  // taken out first: another thread may trace (and add one) while this one waits without the GIL
  const std::vector<std::shared_ptr<const Program>> programs = std::move(uncounted_);
  uncounted_.clear();
  for (const std::shared_ptr<const Program>& p : programs) {
    counters_.compiles += settled(*p).compiled;
    counters_.disk_hits += p->disk_hits;
  }
  return counters_;
}

Dispatcher::Found Dispatcher::cached(const CallSignature& sig) {
  Item* item = cache_ ? find(sig) : nullptr;
  if (!item) return {};
  ++counters_.cache_hits;
  item->used = ++clock_;
  return {item->entry, item->runner, false, !item->runner};
}

Dispatcher::Found Dispatcher::lookup(py::handle self, const CallSignature& sig) {
  std::unique_lock<std::mutex> lock(trace_mutex_, std::try_to_lock);
  if (!lock.owns_lock()) {
    py::gil_scoped_release release;
    lock.lock();
  }
  if (Found hit = cached(sig); hit.runner || hit.in_numpy) return hit;  // traced by another thread meanwhile
  ++counters_.traces;
  py::object entry = self.attr("_trace")(py::cast(&sig, py::return_value_policy::reference));
  if (entry.is_none()) return Found{{}, nullptr, true};  // new sources or static numbers: walk again
  const py::object runner = entry.attr("runner");
  Found found{entry, runner.is_none() ? nullptr : runner.cast<const Runner*>(), false, runner.is_none()};
  if (cache_)
    insert(sig, Item{std::string(sig.key), {sig.statics.begin(), sig.statics.end()}, entry, found.runner, ++clock_});
  return found;
}

py::object Dispatcher::call(py::handle self, PyObject* args, PyObject* kwargs) {
  if (policy_ == DevicePolicy::Take && !cuda_unavailable_reason().empty()) {
    if (tracing()) return self.attr("_inline")(py::reinterpret_borrow<py::tuple>(args), as_dict(kwargs));
    self.attr("_cuda_refusal")();
    throw std::logic_error("strider: _cuda_refusal returned");
  }
  alignas(std::max_align_t) std::byte arena_bytes[kArenaBytes];
  std::pmr::monotonic_buffer_resource arena(arena_bytes, sizeof arena_bytes);
  CallSignature sig(&arena);
  py::object inlined;
  // holds the entry: another thread may evict it while this one runs without the GIL
  const Found found = resolve(self, args, kwargs, sig, &inlined);
  if (found.in_numpy) return self.attr("_run_in_numpy")(py::reinterpret_borrow<py::tuple>(args), as_dict(kwargs));
  if (!found.runner) return inlined;
  if (!sig.device_kind && !sig.on_device && errstate_asks_numpy()) {
    return self.attr("_numpy_at_run_time")(
        "np.errstate or np.seterr asks floating-point errors to raise or call a function, which compiled kernels "
        "do not check",
        py::reinterpret_borrow<py::tuple>(args), as_dict(kwargs));
  }
  if (!sig.device_kind) {
    // NumPy arrays (copied to the device and back for target="cuda"), or DeviceArrays, whose
    // kernels run on the legacy default stream
    try {
      return found.runner->run(sig, latest_first(), sig.on_device ? kLegacyStream : 0);
    } catch (const LoopBoundExceeded&) {
      // a list in a loop outgrew the room traced for it: trace with more and run again
      return self.attr("_outgrown")(found.entry, py::reinterpret_borrow<py::tuple>(args), as_dict(kwargs));
    } catch (const RunInNumPy& e) {
      // values where NumPy's semantics part from the program's: the arguments are as they were
      return self.attr("_numpy_at_run_time")(std::string(e.what()), py::reinterpret_borrow<py::tuple>(args),
                                             as_dict(kwargs));
    }
  }
  // the arrays of a library: Python once, where its kind names the stream, allocates the
  // temporaries as its arrays, runs the program and gives the results back as its arrays
  return sig.device_kind.attr("call")(DeviceRun{found.runner, &sig, latest_first()}, found.runner->temp_specs());
}

py::tuple Dispatcher::entry(py::handle self, PyObject* args, PyObject* kwargs) {
  std::pmr::monotonic_buffer_resource arena;
  CallSignature sig(&arena);
  py::object entry = resolve(self, args, kwargs, sig, nullptr).entry;
  return py::make_tuple(entry, sig.leaf_tuple());
}

py::list Dispatcher::entries() const {
  py::list out;
  for (const auto& kv : table_)
    for (const Item& item : kv.second) out.append(item.entry);
  return out;
}

void Dispatcher::set_sources(std::vector<Source> sources) {
  sources_ = std::move(sources);
  forget();
}

void Dispatcher::specialize(const std::vector<int>& ordinals) {
  for (int o : ordinals)
    if (!std::binary_search(static_numbers_.begin(), static_numbers_.end(), o))
      static_numbers_.insert(std::upper_bound(static_numbers_.begin(), static_numbers_.end(), o), o);
  counters_.specialized += static_cast<int64_t>(ordinals.size());
  forget();
}

void Dispatcher::set_run_time_rows(std::vector<int> ordinals) {
  std::sort(ordinals.begin(), ordinals.end());
  run_time_rows_ = std::move(ordinals);
  forget();
}

void Dispatcher::keep_by_identity() {
  by_identity_ = true;
  forget();
}

void Dispatcher::forget() {
  table_.clear();
  size_ = 0;
}

void install_call_slot(py::handle cls) {
  if (!PyType_Check(cls.ptr())) throw py::type_error("install_call_slot: a class");
  reinterpret_cast<PyTypeObject*>(cls.ptr())->tp_call = call_slot;
}

}  // namespace strider::python
