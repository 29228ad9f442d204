#pragma once

// Internal to the LLVM backend: the process-wide ORC JIT and the optimization pipeline.

#include <memory>
#include <string>

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

namespace strider::detail {

/// The machine code of one module; freed from the JIT with this handle.
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

  /// A target machine for the host owned by the calling thread (they are not thread-safe).
  llvm::TargetMachine& target_machine();
  /// Whether loops may call libmvec's SSE4 ('b') and AVX2 ('d') variants: libmvec.so.1 is loaded
  /// and the CPU has AVX2.
  bool vector_math() const { return vector_math_; }
  /// Whether a loaded library defines the symbol (a libmvec older than the function list).
  bool has_symbol(const std::string& name) const;
  /// Sets the module's triple and data layout for the host.
  void prepare(llvm::Module& m);
  /// The O3 pipeline with the target's cost model and libmvec as TargetLibraryInfo's vector library.
  void optimize(llvm::Module& m);
  /// Hands the module to the JIT; it is compiled on the first lookup.
  std::unique_ptr<JitCode> add(std::unique_ptr<llvm::Module> m, std::unique_ptr<llvm::LLVMContext> ctx);

  ~Jit();

 private:
  Jit() = default;
  struct State;
  std::unique_ptr<State> state_;
  bool vector_math_ = false;
};

}  // namespace strider::detail
