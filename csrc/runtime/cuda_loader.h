#pragma once

#include <string>
#include <vector>

// NVRTC and the CUDA driver, loaded with dlopen on first use: strider links against neither, so
// it builds, imports and runs on the CPU where there is no GPU, no driver and no toolkit, and says
// in one sentence why CUDA is unavailable when asked for it. No CUDA header is included: the few
// types and enums used are declared in cuda_loader.cc.
namespace strider {

/// NVRTC (libnvrtc.so), found in $CUDA_HOME/lib64, /usr/local/cuda/lib64 or the loader's path.
class Nvrtc {
 public:
  /// The process's NVRTC, loaded once; null when it cannot be (nvrtc_unavailable_reason says why).
  static const Nvrtc* get();
  /// Loads the first library of `candidates` (names or paths) that has every entry point used;
  /// null, with the reason in `why`, when none does (tests pass missing names).
  static const Nvrtc* load(const std::vector<std::string>& candidates, std::string* why);

  /// "13.0": major.minor, part of every cubin's cache key.
  const std::string& version() const { return version_; }
  /// Compiles self-contained CUDA C to a cubin for `arch` ("sm_90", "sm_80") with `options`
  /// added after -arch; throws std::runtime_error with NVRTC's log when compilation fails.
  /// Thread-safe (NVRTC compiles separate programs concurrently).
  std::string compile_cubin(const std::string& source, const std::string& file, const std::string& arch,
                            const std::vector<std::string>& options) const;

  struct Api;  // the entry points (cuda_loader.cc)

 private:
  Nvrtc() = default;
  const Api* api_ = nullptr;
  std::string version_;
};

/// The library names NVRTC is looked for under, in order.
std::vector<std::string> nvrtc_candidates();
/// Empty when NVRTC loads; else one sentence, e.g. "NVRTC not found (tried libnvrtc.so.13, ...)".
std::string nvrtc_unavailable_reason();

/// Why kernels cannot run on a GPU here, in one sentence ("no NVIDIA driver (libcuda.so.1 not
/// found)", "the NVIDIA driver found no CUDA device", "NVRTC not found (...)"); empty when the
/// driver, a device and NVRTC are all present.
std::string cuda_unavailable_reason();
/// The same checks with the driver looked for under `driver` (tests pass a missing name).
std::string cuda_unavailable_reason(const std::string& driver);

/// "sm_90": the architecture of CUDA device 0, for NVRTC's -arch; empty when there is none.
std::string cuda_device_arch();

}  // namespace strider
