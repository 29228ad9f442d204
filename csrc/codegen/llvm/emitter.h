#pragma once

// Internal to the LLVM backend: the state of emitting a stage normalized by codegen/stage_plan.h.
// The member functions are split by concern: emit_loops.cc (functions, loops, addressing),
// emit_elementwise.cc (scalar semantics), vector_math.cc (libm and libmvec), emit_reduce.cc,
// emit_compress.cc.

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include "codegen/stage_plan.h"
#include "ir/graph.h"
#include "schedule/loop_nest.h"

namespace strider::detail {

/// Removes what only the vectorizer needed (libmvec declarations and wrappers left unused).
void drop_unused_vector_math(llvm::Module& m);

class Emitter {
 public:
  /// `versions`: the stage may run in versions (nan_tested), where the code is optimized anyway.
  Emitter(const Graph& g, const StagePlan& p, llvm::Module& m, bool vector_math, bool versions = false);
  /// Defines `name`(ptr args) -> i32, which runs the stage (args[0]: the bases, args[1]: scratch,
  /// args[2]: where each storage the stage's text names is among the bases, args[3]: two i64 an
  /// op that fails fills, fail_if),
  /// and the internal `name`_body(args, begin, end) -> i32 over part of axis 0 (what the thread
  /// pool calls). Nonzero results are errors. The scalar ops it calls are declared only:
  /// link_scalar_ops brings their bodies, once for every stage of a module.
  void emit(const std::string& name);
  /// The stage's loops and ops below what is already in scope (the shared loops of compute_at).
  void emit_body();
  /// A compute_at member's body at the current point of the shared loops, in this function.
  void emit_member(const StagePlan& member);
  /// Bytes of scratch memory the entry expects in args[1] (reduction accumulators).
  size_t scratch_bytes() const { return scratch_bytes_; }

  using Values = std::vector<llvm::Value*>;
  using LoopBody = std::function<Values(llvm::Value* i, const Values& carried)>;

  // --- emit_loops.cc
  llvm::Type* mem_type(DType t);  // bool is i8 in memory
  llvm::Type* reg_type(DType t);  // and i1 in registers
  llvm::Value* i64(int64_t v) { return b_.getInt64(v); }
  /// for (i = lo; i < hi; ++i) with loop-carried values; returns their values after the loop.
  Values loop(llvm::Value* lo, llvm::Value* hi, const Values& init, const LoopBody& body, llvm::MDNode* md);
  /// Nested loops over `axes` (outermost first; axis 0 over [begin, end) when the plan splits it),
  /// calling at_point innermost; md goes on the innermost loop. Axes already in scope are skipped.
  void nest(const std::vector<int>& axes, const std::function<void()>& at_point, llvm::MDNode* md);
  /// The end of axis a's loop at the current point: its extent, shortened by a tail whose other
  /// loop is outside it.
  llvm::Value* upper(int a);
  /// The innermost loop's hints: the schedule's width when every access along `axis` takes it
  /// (vector_load_stride, vector_stores; registers and scratch accumulators always do),
  /// the unroll factor as interleave count; `chains` > 1: scalar, interleaved that many times.
  llvm::MDNode* loop_hints(int axis, int chains = 1);
  /// Every loop outside the innermost one: not unrolled; `scalar`: not vectorized either (a
  /// short loop).
  llvm::MDNode* outer_hints(bool scalar = false);
  /// Outer loops of fewer trips than this stay scalar (outer_hints).
  static constexpr int64_t kShortLoop = 16;
  /// The run-time extent held at `at` (an i64), clamped to [0, bound] as the reference does.
  llvm::Value* run_time_extent(llvm::Value* at, int64_t bound);
  /// Axis 0's extent in an entry whose arguments are `args`: its bound, or the call's run-time one.
  llvm::Value* axis0_extent(llvm::Value* args);
  llvm::Value* element_index(const View& v);
  /// Whether any element of v that the stage's points read is a NaN (loops over the axes v walks).
  llvm::Value* any_nan(const View& v);
  // Prefetches, a page ahead along `axis`, the memory the ops in [begin, end) read an element
  // per cache line or fewer of (a column of rows: a compaction's predicate).
  void prefetch_strided(size_t begin, size_t end, int axis);
  /// A prefetch of the line holding `address` (which may lie outside every storage).
  void prefetch(llvm::Value* address);
  llvm::Value* load(const View& v, llvm::Value* shift = nullptr);  // shift: elements past v's element
  void store(const View& v, llvm::Value* x, llvm::Value* shift = nullptr);
  /// Where `bad` holds, the stage stops: the entry returns 2 + the current op's index with (a, b)
  /// in the error record args[3] (for throw_check_failure), or the error already flagged. 0-d
  /// stages only (one point, its ops in program order).
  void fail_if(llvm::Value* bad, llvm::Value* a, llvm::Value* b);
  /// Memory accesses to different storages (and scratch arrays) never alias: one scope each.
  void set_scopes(llvm::Instruction* access, int object);

  // --- emit_elementwise.cc
  /// Whether op is a float maximum or minimum whose first operand is loop-invariant or reused
  /// along a loop, read from memory the stage does not write (NMS's x1[i] in
  /// np.maximum(x1[i], x1[order[1:]])): where that operand is no NaN, NumPy's maximum is
  /// a > b ? a : b, one vector max. emit() then runs the stage in two versions: one where no such
  /// operand holds a NaN, one as written.
  bool nan_tested(const Op& op) const;
  /// Runs one non-reduction op at the current point.
  void emit_op(const Op& op);
  /// st::<op> of ops/scalar_ops.inc on inputs of dtype t (refused where ops.def has no loop);
  /// a kMayFail op also sets the error flag where st::<op>_fails.
  llvm::Value* scalar_op(OpCode code, DType t, const Values& args);
  /// st::convert<to>(x).
  llvm::Value* convert(llvm::Value* x, DType from, DType to);
  /// A call of `name` from scalar_ops_bitcode.cc, which link_scalar_ops brings into the module.
  llvm::Value* call_scalar(const std::string& name, llvm::Type* result, const Values& args);
  using ScalarCalls = std::map<std::string, llvm::FunctionType*>;
  /// What call_scalar called, by name.
  const ScalarCalls& scalar_calls() const { return scalar_calls_; }
  /// Links the bodies of `calls` (what the module's stages called) into the module, to be
  /// inlined; libm calls in them may widen to the plan's vector width.
  void link_scalar_ops(const ScalarCalls& calls);
  [[noreturn]] void refuse(const std::string& why) const;

  // --- vector_math.cc
  /// A call of libm's `name` (the double spelling; f32 appends 'f') that the loop vectorizer may
  /// widen to libmvec.
  llvm::Value* call_math(const std::string& name, DType t, const Values& args);
  /// NumPy's loop of `code` on x (ops/numpy_loops.h), as a call the loop vectorizer widens.
  llvm::Value* call_numpy(OpCode code, DType t, llvm::Value* x);
  /// Names on `call` (of `scalar`, nargs arguments) its vector variants, variant(lanes) for 2, 4,
  /// ... lanes up to the widest the stage may use.
  void add_variants(llvm::CallInst* call, const std::string& scalar, size_t nargs,
                    const std::function<llvm::Function*(int lanes)>& variant);
  /// Replaces f's calls of libm functions (and of the intrinsics that lower to them) by call_math.
  void widen_math_calls(llvm::Function& f);

  // --- emit_compress.cc
  /// The plan's compress: mask[j] selects src[j] into out[k++] while k is below the output's
  /// count, as the runtime's library does; contiguous operands move a vector of elements per
  /// compressing store.
  void emit_compress();
  /// A parallel compaction's entry (plan's parallel_compress): the chunks of the body on the
  /// thread pool, or here where the call's points are few, then the count.
  void emit_compaction_entry(llvm::Function* entry, llvm::Function* body);
  /// Chunks of a parallel compaction, each compacting at most kCompactionChunk points.
  int64_t compaction_chunks() const;

  // --- emit_reduce.cc
  void emit_reduction();
  /// max/min/argmax/argmin over the one reduced axis `a` (innermost; its extent static or a
  /// run-time one) at the current row, in two passes: the extreme (floats ordered as integers,
  /// NaN aside), vectorized, with a NaN flag; then a find-first scan of the row (vector compares)
  /// for the reference's element, the first NaN or else the first equal to the extreme. Returns
  /// the output value. Only where row_extreme_applies (emit_reduce.cc).
  llvm::Value* row_extreme(int a, const std::function<llvm::Value*()>& point);
  /// The first i in [0, n) where pred(element i) holds, or 0: vector compares of `lanes`
  /// elements while whole vectors remain (when `contiguous`), then one at a time. Runs only when
  /// `enabled` (else 0). at(i) is the address of element i, of memory type `elem`.
  llvm::Value* find_first(llvm::Value* enabled, llvm::Value* n, llvm::Type* elem, bool contiguous, int lanes,
                          const std::function<llvm::Value*(llvm::Value*)>& at,
                          const std::function<llvm::Value*(llvm::Value*)>& pred);
  /// The alias object of an access through `v`: its region's (disjoint_regions) or its storage's
  /// (-1: none).
  int object_of(const View& v) const;
  /// Accumulator arrays in scratch memory (0 unless the reduced axes are not the innermost ones).
  int scratch_arrays() const;
  /// The slot of the bases (args[0]) that holds storage `sid`'s base, found through the table
  /// at args[2] (StagePlan::bases: stages of one text share code, each with its own table).
  llvm::Value* base_slot(llvm::Value* args, int sid);

  const Graph& g_;
  const StagePlan& p_;
  llvm::Module& m_;
  llvm::LLVMContext& ctx_;
  llvm::IRBuilder<> b_;
  bool vector_math_;
  bool versions_;
  bool no_nan_ = false;              // emitting the version where no nan_tested operand is a NaN
  int cur_op_ = -1;                  // index into p_.ops, for messages
  llvm::Value* begin_ = nullptr;     // the body's range of axis 0
  llvm::Value* end_ = nullptr;
  llvm::Value* scratch_ = nullptr;
  llvm::Value* args_ = nullptr;      // the entry's args
  llvm::Value* err_ = nullptr;       // i32 slot, nonzero after a run-time error
  std::vector<llvm::Value*> base_;   // per storage
  std::vector<llvm::Value*> idx_;    // per axis: the loop index in scope
  std::vector<llvm::Value*> bound_;  // per axis: its extent
  std::vector<llvm::Value*> reg_;    // per storage: the register value at this point
  std::vector<llvm::MDNode*> scope_, noalias_;  // per object: storages, scratch arrays, then regions
  std::vector<std::pair<View, int>> region_;     // views of storages split into regions: their alias objects
  ScalarCalls scalar_calls_;
  size_t scratch_bytes_ = 0;
};

}  // namespace strider::detail
