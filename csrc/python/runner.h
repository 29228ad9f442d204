#pragma once
// How one traced signature maps a call onto its lowered program and its results back: planned
// once by _api when it traces, run by the dispatcher on every call.

#include <pybind11/pybind11.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <memory_resource>
#include <string>
#include <utility>
#include <vector>

#include "call_signature.h"
#include "runtime/cuda_executor.h"
#include "runtime/executor.h"

namespace strider::python {

/// p once its background compile is done (runtime/background_compile.h), waited for without the
/// GIL, which the compile never takes.
const Program& settled(const Program& p);

/// What one of a traced function's results is.
enum class ResultKind {
  Argument,  // an array argument, returned as the caller passed it
  Python,    // a Python value the trace computed (the same on every call)
  View,      // a view of a storage: a temporary the call allocates, or an argument's memory
};

/// How a returned temporary is allocated.
enum class TempForm {
  Buffer,      // in the result's shape: the buffer is the result
  Transposed,  // in the result's axis order: the result is a transpose of it
  Viewed,      // flat: the results are views of it
};

class Runner {
 public:
  struct Temp {
    int storage;
    std::vector<int64_t> shape;  // as allocated (dense, C order)
    TempForm form;
    std::vector<int64_t> axes;   // Transposed: the transpose's axes
  };
  struct Output {
    ResultKind kind;
    int index = 0;                 // the argument leaf (Argument) or graph output (View)
    pybind11::object value;        // Python
    bool scalar = false, writeable = true;
    pybind11::object weak;         // View: Python type for weak scalars, or None
  };

  /// `groups`: (storage, aliasing group); `scalars`: (storage, leaf); `result`: _api's result spec.
  Runner(pybind11::object program, std::vector<std::pair<int, int>> groups, std::vector<std::pair<int, int>> scalars,
         std::vector<Temp> temps, std::vector<Output> outputs, const pybind11::handle& result);

  /// Runs the program on the device when it was given a CUDA program.
  void set_cuda(std::shared_ptr<CudaProgram> cuda) { cuda_ = std::move(cuda); }
  /// Passes each result through `post(result, args, kwargs)` with the call's arguments
  /// (_capture.py: it replays the function's writes on Python objects and containers and returns
  /// the function's own result).
  void set_post(pybind11::object post) { post_ = std::move(post); }

  /// Runs the program on the call (on `stream` when it runs on a CUDA device) and returns the
  /// function's result. Arrays in GPU memory are DeviceArrays: in strider's memory, or where
  /// `made` is given, in the temporaries the caller's library made (per temp_specs(): its arrays
  /// and their addresses, as (array, address) pairs), or views of the caller's arrays; the
  /// caller's kind (python/strider/_cuda.py) turns them into its arrays.
  pybind11::object run(const CallSignature& call, bool latest_first, uintptr_t stream,
                       const pybind11::list* made = nullptr) const;
  /// The temporaries a call allocates: (shape, NumPy type number) each.
  const pybind11::list& temp_specs() const { return temp_specs_; }

 private:
  using Objects = std::pmr::vector<pybind11::object>;
  pybind11::object view_result(const Output& o, const CallSignature& call, const Objects& temps,
                               const std::pmr::vector<int64_t>& temp_slots) const;
  // A scalar result (NumPy's, or a weak Python number) of the `dtype` value at `data`.
  pybind11::object scalar_result(const Output& o, DType dtype, const void* data) const;
  pybind11::object device_view_result(const Output& o, const CallSignature& call, const Objects& temps,
                                      const std::pmr::vector<uint64_t>& temp_ptrs) const;
  // temps_[k]'s elements its results reach, copied out of `data` (its bound-sized run)
  pybind11::object trimmed_copy(int k, const void* data, const CallSignature& call, const Objects& temps) const;
  int group_of(int storage) const;
  // A returned view's shape with its run-time extents read (clamped to their bounds, as the
  // stages clamp them): `read(k)` gives the int64 that temps_[k] holds.
  template <typename Read>
  std::vector<int64_t> result_shape(const View& v, const CallSignature& call, Read&& read) const {
    std::vector<int64_t> shape = v.shape;
    for (int d = 0; d < v.ndim(); ++d) {
      const int e = v.extent_of(d);
      if (e < 0) continue;
      int64_t n = v.shape[d];
      for (size_t k = 0; k < temps_.size(); ++k)
        if (temps_[k].storage == e) n = read(k);
      for (const auto& [sid, leaf] : scalars_)  // the rows of an argument (CallSignature::leaf_rows)
        if (sid == e) n = PyLong_AsLongLong(call.leaves[leaf].ptr());
      shape[d] = std::max<int64_t>(0, std::min(n, v.shape[d]));
    }
    return shape;
  }

  pybind11::object program_obj_;
  const Program* program_ = nullptr;
  bool release_gil_ = true;            // the program is large enough to run with the GIL released
  std::shared_ptr<CudaProgram> cuda_;  // set: the stages run on a CUDA device
  pybind11::object post_;              // set: what each result goes through
  std::vector<std::pair<int, int>> groups_;   // (storage, aliasing group)
  std::vector<std::pair<int, int>> scalars_;  // (storage, leaf)
  std::vector<Temp> temps_;
  // The arguments the program writes, where it may throw RunInNumPy or LoopBoundExceeded:
  // a run keeps their bytes and puts them back when it does, so that the call can run anew (in
  // NumPy, or traced with more room).
  std::vector<int> put_back_;
  std::vector<char> in_slot_;                 // per temp: a 0-d one returned only as scalars (no array)
  // The temporaries no result shows live in one host buffer kept between calls (one call at a
  // time: another running meanwhile has the executor allocate its own). A bound-sized one, of a
  // run-time length, touches only the pages its call uses, and those need no fault on the next.
  struct Kept {
    std::unique_ptr<std::byte, void (*)(void*)> buffer{nullptr, std::free};
    std::atomic<bool> busy{false};
  };
  std::vector<std::pair<int, int64_t>> kept_offsets_;  // (storage, byte offset in the kept buffer)
  std::vector<int64_t> trimmed_at_;  // per temp: its byte offset in the kept buffer (run-time lengths), or -1
  int64_t kept_bytes_ = 0;
  std::unique_ptr<Kept> kept_ = std::make_unique<Kept>();
  pybind11::list temp_specs_;
  std::vector<Output> outputs_;
  std::string result_codes_;                  // the result's structure (call_signature.h's Node codes)
  std::vector<pybind11::object> result_objects_;
};

/// One call's run, handed to the caller's kind of array (python/strider/_cuda.py), whose
/// call(run, temps) calls it with the stream and the temporaries it made.
struct DeviceRun {
  const Runner* runner;
  const CallSignature* call;
  bool latest_first;
  pybind11::object operator()(uintptr_t stream, const pybind11::list& made) const {
    return runner->run(*call, latest_first, stream, &made);
  }
};

}  // namespace strider::python
