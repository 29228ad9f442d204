#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/cuda/cuda_codegen.h"

namespace strider::testing {

/// Runs CUDA stages on the CPU where there is no GPU, to test what the backend emits against the
/// reference executor: the sources are compiled together into one shared library by the CUDA C
/// emulation (tests/cuda_fake/emulation.h). Math functions are the host's libm: results are the
/// reference's bit for bit wherever the backend's scalar code is right.
class CudaEmulator {
 public:
  /// Why stages cannot be emulated here (no host compiler), or empty.
  static std::string unavailable();
  /// Compiles the stages; throws std::runtime_error with the compiler's output.
  explicit CudaEmulator(const std::vector<CudaStage>& stages);
  ~CudaEmulator();
  CudaEmulator(const CudaEmulator&) = delete;
  CudaEmulator& operator=(const CudaEmulator&) = delete;

  /// Runs stage i's launches in order over bases[s] (storage s's memory), with scratch memory
  /// of garbage; returns the error record (runtime/kernel.h), zeroed before.
  std::array<int64_t, kCudaErrorWords> run(size_t i, const std::vector<char*>& bases) const;

 private:
  std::vector<CudaStage> stages_;
  std::string dir_;
  void* lib_ = nullptr;
};

}  // namespace strider::testing

// Skips a gtest test where stages cannot be emulated.
#define SKIP_WITHOUT_EMULATOR()                                                      \
  if (std::string why = ::strider::testing::CudaEmulator::unavailable(); !why.empty()) \
  GTEST_SKIP() << why
