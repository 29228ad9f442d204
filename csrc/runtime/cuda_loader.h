#pragma once

#include <cstddef>
#include <cstdint>
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

/// The CUDA driver API entry points the runtime uses, under cuda.h's names (C ABI; no CUDA header
/// is included). Loaded once per process from libcuda.so.1, or from $STRIDER_CUDA_DRIVER (a
/// path: the test suite's emulated device, tests/cuda_fake).
struct CudaDriver {
  using Result = int;
  using Device = int;
  using DevicePtr = uint64_t;  // CUdeviceptr: unsigned long long, the same 64 bits
  using Context = struct CUctx_st*;
  using Module = struct CUmod_st*;
  using Function = struct CUfunc_st*;
  using Stream = struct CUstream_st*;

  Result (*Init)(unsigned);
  Result (*GetErrorString)(Result, const char**);
  Result (*DeviceGetCount)(int*);
  Result (*DeviceGet)(Device*, int);
  Result (*DeviceGetAttribute)(int*, int, Device);
  Result (*DevicePrimaryCtxRetain)(Context*, Device);
  Result (*CtxSetCurrent)(Context);
  Result (*MemAllocAsync)(DevicePtr*, size_t, Stream);
  Result (*MemFreeAsync)(DevicePtr, Stream);
  Result (*MemcpyHtoDAsync)(DevicePtr, const void*, size_t, Stream);
  Result (*MemcpyDtoHAsync)(void*, DevicePtr, size_t, Stream);
  Result (*MemsetD8Async)(DevicePtr, unsigned char, size_t, Stream);
  Result (*StreamCreate)(Stream*, unsigned);
  Result (*StreamSynchronize)(Stream);
  Result (*ModuleLoadData)(Module*, const void*);
  Result (*ModuleGetFunction)(Function*, Module, const char*);
  Result (*LaunchKernel)(Function, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, Stream,
                         void**, void**);
  Result (*PointerGetAttribute)(void*, int, DevicePtr);

  int devices = 0;

  /// The process's driver, initialized, with at least one device; null when there is none
  /// (cuda_unavailable_reason says why).
  static const CudaDriver* get();
  /// Throws std::runtime_error "CUDA <what> failed: <the driver's text>" unless r is success.
  void check(Result r, const char* what) const;
};

/// The library names NVRTC is looked for under, in order ($STRIDER_NVRTC first when set).
std::vector<std::string> nvrtc_candidates();
/// Empty when NVRTC loads; else one sentence, e.g. "NVRTC not found (tried libnvrtc.so.13, ...)".
std::string nvrtc_unavailable_reason();

/// Why kernels cannot run on a GPU here, in one sentence ("no NVIDIA driver (libcuda.so.1 not
/// found)", "the NVIDIA driver found no CUDA device", "NVRTC not found (...)"); empty when the
/// driver, a device and NVRTC are all present.
std::string cuda_unavailable_reason();
/// The same checks with the driver looked for under `driver` (tests pass a missing name).
std::string cuda_unavailable_reason(const std::string& driver);

/// "sm_90": the architecture of CUDA device `ordinal`, for NVRTC's -arch; empty when there is none.
std::string cuda_device_arch(int ordinal = 0);

}  // namespace strider
