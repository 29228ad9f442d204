#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "schedule/loop_nest.h"

// What the runtime runs, as the backends (codegen/llvm, codegen/cuda) deliver it: the runtime
// knows compiled code only through these.
namespace strider {

/// A stage compiled to native code for the host (codegen/llvm/codegen.h compiles them).
class CompiledStage {
 public:
  virtual ~CompiledStage() = default;
  /// Runs the whole loop nest. bases[s] is the base address of storage s (indexed like
  /// Graph::storages; entries for the stage's register storages may be null). Throws
  /// std::domain_error where the reference throws at run time (kMayFail ops: an integer power with
  /// a negative exponent); elements before it may have been written, as in the reference. A check
  /// or append compiled in the stage (joins_scalar_stage) throws what the library's would, the
  /// ops before it having run and none after.
  virtual void run(char* const* bases) const = 0;
  /// The optimized module as .ll text (dumps, tests); empty for a quick kernel (codegen.h's
  /// Effort::kQuick).
  virtual const std::string& llvm_ir() const = 0;
  /// True when the machine code was loaded from the disk cache, false when LLVM compiled it.
  virtual bool from_disk() const = 0;
};

/// One kernel launch of a CUDA stage: 1-d grid and block.
struct CudaLaunch {
  std::string kernel;  // the extern "C" name
  int64_t blocks = 1;
  int threads = 256;
};

/// The error record of a call on a CUDA device: kCudaErrorWords int64 words, zeroed before the
/// first stage, which the kernels of stages with `error_flag` fill (ST_FAIL in the CUDA prelude)
/// and the runtime reads after the last. The first failure of the call keeps it:
/// [0] who failed: 0 none, 1 an integer power with a negative exponent (kMayFail), 2 + i op i of
///     the graph (a Check op, or take/put/add_at meeting an index out of range);
/// [1] INT64_MAX minus the C-order position of the failing element (atomicMax: the first wins);
/// [2], [3] the payload throw_check_failure (runtime/data_dependent.h) takes.
constexpr int kCudaErrorWords = 4;
constexpr int64_t kCudaFailedPower = 1;
constexpr int64_t kCudaFailedOp = 2;

/// A stage as CUDA C and how to launch it. Every kernel of the stage takes the same parameters:
/// a pointer per storage in `params` (in that order; const for those it only reads), then
/// `long long* err` (the error record) when `error_flag`, then `void* scratch` (scratch_bytes,
/// device memory) when nonzero.
struct CudaStage {
  std::string name;                  // strider_<16 hex digits of the stage's key>
  std::string source;                // self-contained CUDA C
  std::vector<int> params;           // storages passed by pointer (memory, extents, large constants)
  std::vector<CudaLaunch> launches;  // in order, on one stream
  bool error_flag = false;           // the kernels may fill the error record
  int64_t scratch_bytes = 0;
};

/// codegen/cuda as the driver hands it to a CudaProgram. `emit` writes a stage's kernels
/// (emit_cuda_stage): it throws std::invalid_argument where the backend refuses the stage, which
/// then runs on the host. `compile` makes the cubin of several emitted stages, compiled as one
/// program for an architecture ("sm_90") or loaded from the disk cache, *from_disk saying which
/// (compile_cuda_group): it throws std::runtime_error where compiling fails.
struct CudaBackend {
  std::function<CudaStage(const Graph& g, const Stage& s)> emit;
  std::function<std::string(const Graph& g, const std::vector<const Stage*>& stages,
                            const std::vector<const CudaStage*>& emitted, const std::string& arch, bool* from_disk)>
      compile;
};

}  // namespace strider
