#pragma once

// Internal to the CUDA backend: the state of emitting one normalized stage as CUDA C text.
// emit_cuda.cc: the prelude, parameters, addressing, op calls, elementwise kernels;
// emit_cuda_reduce.cc: the reduction kernels.

#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/cuda/cuda_codegen.h"
#include "codegen/stage_plan.h"

namespace strider::detail {

/// Threads per block of every kernel (also the __launch_bounds__).
constexpr int kCudaThreads = 256;
/// Blocks beyond which a kernel's grid-stride loop takes more trips instead (about 8 waves of
/// resident blocks on a 132-SM H100).
constexpr int64_t kCudaMaxBlocks = 8192;
/// Points per thread and trip in an elementwise stage's vector path.
constexpr int kCudaVectorLanes = 4;

/// The source every stage starts with (guarded: stages compile together): ops/scalar_ops.inc,
/// st_extent (a run-time extent), st_fail (the error record), st_key (NumPy's sort order of floats).
const std::string& prelude();
/// v as a C literal of its type.
std::string literal(int64_t v);
/// A memory element of dtype t as it computes (st::reg_t: bool, float for float16), and back.
std::string from_memory(const std::string& x, DType t);
std::string to_memory(const std::string& x, DType t);

/// Emits the stage of a data-dependent op (alone in its stage, as fuse_stages keeps it), op
/// `op_id` of `g`, as kernels named `name`_<step> (emit_cuda_data_dependent.cc).
CudaStage emit_data_dependent(const Graph& g, const Op& op, int op_id, const std::string& name);

class CudaEmitter {
 public:
  CudaEmitter(const Graph& g, const StagePlan& p, std::string name);
  CudaStage emit();

  // --- emit_cuda.cc
  static std::string mem_type(DType t);  // bool is unsigned char in memory
  static std::string reg_type(DType t);  // and bool in registers
  /// Appends one line of kernel code at the current indentation.
  void line(const std::string& text);
  /// The element offset of v at the current indices (i<d>, the innermost plus the lane in the
  /// vector path), as C.
  std::string element_index(const View& v) const;
  /// The value of v at the current point: a register's local, or a load.
  std::string load(const View& v) const;
  void store(const View& v, const std::string& value);
  /// Runs op k of the plan at the current point (every op but a final reduction).
  void emit_op(size_t k);
  /// Declares i<d> for `axes` (C order) from the flat index in `flat`.
  void decompose(const std::string& flat, const std::vector<int>& axes);
  /// "n0 * n2": the product of the extents of `axes` ("1" for none).
  std::string count(const std::vector<int>& axes) const;
  /// The product of the static bounds of `axes`.
  int64_t bound(const std::vector<int>& axes) const;
  /// x, computed in t's register type, as t holds it (float16 rounds to half).
  static std::string as_dtype(const std::string& x, DType t);
  /// st::convert (ops/scalar_ops.inc) from one dtype to another.
  static std::string convert(const std::string& x, DType from, DType to);
  /// The call of an elementwise op's scalar function, st::<op>(args), on loop dtype t; refused
  /// where the op has no loop for t.
  std::string call(OpCode code, DType t, const std::vector<std::string>& args) const;
  /// Whether the op may raise on loop dtype t (kMayFail: NumPy raises for some integer inputs).
  static bool may_fail(OpCode code, DType t);
  [[noreturn]] void refuse(const std::string& why) const;
  /// Opens `extern "C" __global__ void <kernel>(params) {` and declares the extents.
  void open_kernel(const std::string& kernel);
  void close_kernel();
  /// Chooses the views an elementwise stage reads and writes as whole vectors (stride 1 along the
  /// innermost axis, every vector start a multiple of kCudaVectorLanes); false when none.
  bool plan_vectors();
  /// The vector path: kCudaVectorLanes points per trip, vector loads, the lanes' ops, vector stores.
  void emit_vector_loop();
  /// " && "-joined: the vector-accessed storages' base addresses are aligned for their vectors.
  std::string vectors_aligned() const;

  // --- emit_cuda_reduce.cc
  /// Emits the accumulator helpers and the kernels of the final reduction.
  void emit_reduction();

  const Graph& g_;
  const StagePlan& p_;
  std::string name_;
  std::string index_t_;          // "int" when every offset and count fits, else "long long"
  std::set<int> params_;         // storages passed by pointer
  std::set<int> written_;        // of those, the ones the stage writes
  std::set<int> embedded_;       // small constants compiled into the source
  std::ostringstream helpers_;   // the stage's own device code before its kernels
  std::ostringstream kernels_;
  int indent_ = 0;
  int cur_op_ = -1;              // index into p_.ops, for messages
  bool error_flag_ = false;
  int64_t scratch_bytes_ = 0;
  std::vector<CudaLaunch> launches_;
  struct VectorAccess {
    View view;
    std::string name;  // the vector local (two halves, name_0 and name_1, for 8-byte types)
  };
  std::vector<VectorAccess> vector_loads_, vector_stores_;
  int lane_ = -1;  // the lane of the vector path being emitted; -1 outside it
};

}  // namespace strider::detail
