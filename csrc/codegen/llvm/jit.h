#pragma once

// Internal to the LLVM backend: the process-wide ORC JIT and the optimization pipeline.

#include <atomic>
#include <memory>
#include <string>

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include "codegen/llvm/codegen.h"

namespace strider::detail {

/// The machine code of one object file, linked in a JITDylib of its own (so that one object may
/// be loaded twice); freed from the JIT with this handle.
class JitCode {
 public:
  virtual ~JitCode() = default;
  /// The address of a function the module defines; throws std::runtime_error when missing.
  virtual void* lookup(const std::string& name) = 0;
};

/// One LLJIT per process, created on first use: the host's CPU and features, FP contraction off,
/// the current process (libm) and glibc's libmvec in the symbol search, strider_parallel_for
/// defined. Every member is thread-safe.
class Jit {
 public:
  /// Null when LLVM cannot target the host; the backend is then unavailable.
  static Jit* get();

  /// A target machine for the host at that effort owned by the calling thread (they are not
  /// thread-safe).
  llvm::TargetMachine& target_machine(Effort effort = Effort::kFull);
  /// Whether loops may call libmvec's SSE4 ('b') and AVX2 ('d') variants: libmvec.so.1 is loaded
  /// and the CPU has AVX2.
  bool vector_math() const { return vector_math_; }
  /// Whether they may call its AVX-512 ('e') variants too: the CPU has AVX512F and LLVM keeps
  /// 512-bit vectors whole (vector_bits() is 512), so a <16 x float> argument is one zmm register
  /// as the variants expect.
  bool vector_math_512() const { return vector_math_512_; }
  /// Bits in the widest vector register LLVM's cost model uses on this host.
  int vector_bits() const { return vector_bits_; }
  /// How compiled compresses move contiguous 4- and 8-byte elements a vector at a time: with x86's
  /// AVX512F compressing store (vpcompressd/q), or, with AVX2, a permutation of each 32-byte vector
  /// looked up by its mask (vpermd); otherwise one at a time (LLVM would expand a compressing
  /// store into a branch per lane, which a mask of random survivors mispredicts: an NMS loop 10x
  /// slower on AVX2). The best the host has unless set_vector_compress chose another.
  enum class VectorCompress { kNone, kPermute, kCompressStore };
  VectorCompress vector_compress() const { return vector_compress_.load(); }
  /// Makes later compiles use `how` (tests run every way their host can); false, changing
  /// nothing, where the host lacks it.
  bool set_vector_compress(VectorCompress how);
  /// Whether a loaded library defines the symbol (a libmvec older than the function list).
  bool has_symbol(const std::string& name) const;
  /// Sets the module's triple and data layout for the host.
  void prepare(llvm::Module& m);
  /// kFull: the O3 pipeline with the target's cost model and libmvec as TargetLibraryInfo's vector
  /// library. kQuick: the scalar ops inlined, SROA, early CSE, InstCombine and SimplifyCFG; kLoops:
  /// those, then the loop vectorizer. Then, on x86 without AVX512-FP16, widen_half_ops.
  void optimize(llvm::Module& m, Effort effort = Effort::kFull);
  /// Compiles the module to a relocatable object file (the bytes the disk cache stores).
  std::string emit_object(llvm::Module& m, Effort effort = Effort::kFull);
  /// Links an object file into the JIT; its symbols resolve against the process, libmvec and
  /// strider_parallel_for. Throws std::runtime_error when LLVM rejects it.
  std::unique_ptr<JitCode> add_object(const std::string& object);
  /// Everything about the host the machine code depends on: triple, CPU, features, libmvec.
  const std::string& target_description() const { return target_; }

  ~Jit();

 private:
  Jit() = default;
  struct State;
  std::unique_ptr<State> state_;
  bool vector_math_ = false;
  bool vector_math_512_ = false;
  int vector_bits_ = 0;
  bool widen_half_ = false;
  VectorCompress best_compress_ = VectorCompress::kNone;
  std::atomic<VectorCompress> vector_compress_{VectorCompress::kNone};
  std::string target_;
};

/// Rewrites the module's float16 fneg, fcmp, frem and rounding, sign, min/max and sqrt
/// intrinsics as the same bits computed on float lanes (half_ops.cc): x86 without AVX512-FP16
/// would split them lane by lane.
void widen_half_ops(llvm::Module& m);

}  // namespace strider::detail
