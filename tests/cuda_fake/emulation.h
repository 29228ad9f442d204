#pragma once

#include <string>
#include <vector>

// CUDA C run on the CPU, for tests where there is no GPU: the emulated stages of
// tests/cpp/cuda_emulator.h and the fake NVRTC and driver of this directory. A source is compiled
// by the host's C++ compiler ($CXX, else c++) after a shim defining CUDA's keywords, built-ins
// and the intrinsics the backend uses, into a shared library with one launch wrapper per
// extern "C" __global__ kernel. Grids and blocks are 1-d. Blocks run one after another; a block's
// threads run one after another, or as fibers switched at barriers where the kernel synchronizes
// (__syncthreads, warp shuffles). Math functions are the host's libm.
namespace strider::testing {

/// Why CUDA C cannot be emulated here (no host compiler), or empty.
std::string emu_unavailable();

/// An extern "C" __global__ kernel of a source.
struct EmuKernel {
  std::string name;
  bool cooperative = false;  // its body synchronizes: its threads run as fibers
};

/// The kernels defined in `cuda_source`, in order. A barrier is seen only in the kernel's own
/// body (or in a call of a shfl_down helper); a kernel reaching one through another function
/// aborts the process with a message when launched.
std::vector<EmuKernel> emu_kernels(const std::string& cuda_source);

/// Compiles `cuda_source` (named `name` in the compiler's messages) with the shim and the launch
/// wrappers into the shared library `so_path`; throws std::runtime_error with the compiler's output.
void emu_build(const std::string& cuda_source, const std::string& so_path, const std::string& name = "source.cu");

/// A kernel's launch wrapper: runs `blocks` blocks of `threads` (1 to 1024) threads. As the
/// driver's kernelParams, params[i] points to the kernel's i-th argument.
using EmuLaunch = void (*)(void* const* params, long long blocks, int threads);
/// The library's symbol for a kernel's launch wrapper (an EmuLaunch).
std::string emu_launch_symbol(const std::string& kernel);
/// The library's symbol for a kernel's parameter count (a const int).
std::string emu_arity_symbol(const std::string& kernel);

/// The fake NVRTC's "cubin" of a built library: "STRIDER-EMU-IMAGE" and a NUL (18 bytes), the
/// library's size (8 bytes, little-endian), then its bytes. It carries its size because
/// cuModuleLoadData is given none.
std::string emu_image(const std::string& so_bytes);
/// The library's bytes in an image; false where `image` does not start with the magic.
bool emu_image_library(const void* image, std::string* so_bytes);

}  // namespace strider::testing
