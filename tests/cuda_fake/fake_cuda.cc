// The CUDA driver on the CPU (libstrider_fake_cuda.so): cuda.h's entry points the runtime uses,
// under their exported names, for one sm_90 device whose memory is host memory and whose
// kernels are libstrider_fake_nvrtc.so's images, run by the emulation (emulation.h). Every call
// completes before it returns; streams are checked handles. The checks are the real driver's
// where a runtime bug would trip them: cuInit first, a current context on the calling thread
// (the primary context, retained), live handles, copies within an allocation, launch sizes.
// Device ranges outside every allocation are accepted: tests pass host memory (NumPy's) as
// device arrays, and every pointer reads as device memory.
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "cuda_fake/emulation.h"

#define FAKE_API extern "C" __attribute__((visibility("default")))

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
struct CUctx_st {};
struct CUstream_st {};
struct CUfunc_st {
  strider::testing::EmuLaunch launch;
  int arity;
};
struct CUmod_st {
  void* lib;
  std::map<std::string, std::unique_ptr<CUfunc_st>> functions;  // found so far
};
using CUcontext = CUctx_st*;
using CUmodule = CUmod_st*;
using CUfunction = CUfunc_st*;
using CUstream = CUstream_st*;

namespace {

constexpr CUresult kSuccess = 0;
constexpr CUresult kInvalidValue = 1;
constexpr CUresult kOutOfMemory = 2;
constexpr CUresult kNotInitialized = 3;
constexpr CUresult kNoDevice = 100;
constexpr CUresult kInvalidDevice = 101;
constexpr CUresult kInvalidImage = 200;
constexpr CUresult kInvalidContext = 201;
constexpr CUresult kOperatingSystem = 304;
constexpr CUresult kInvalidHandle = 400;
constexpr CUresult kNotFound = 500;

struct ErrorText {
  CUresult code;
  const char* name;
  const char* text;  // the real driver's
};
constexpr ErrorText kErrors[] = {
    {0, "CUDA_SUCCESS", "no error"},
    {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {4, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {200, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {209, "CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on the device"},
    {304, "CUDA_ERROR_OPERATING_SYSTEM", "OS call failed or operation not supported on this OS"},
    {400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
    {719, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {999, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

const ErrorText* error_text(CUresult code) {
  for (const ErrorText& e : kErrors)
    if (e.code == code) return &e;
  return nullptr;
}

// strider_fake_cuda_counters' order
enum Counter {
  kLaunches,
  kHtoDBytes,
  kDtoHBytes,
  kDtoDBytes,
  kLiveAllocations,
  kModuleLoads,
  kLiveModules,
  kHtoDCopies,
  kDtoHCopies,
  kMemsets,
  kCounters
};

struct State {
  std::mutex mu;  // every call holds it: the emulation's block and thread indices are globals
  bool initialized = false;
  int retained = 0;  // the primary context's retain count
  std::map<CUdeviceptr, size_t> allocations;  // base -> bytes asked for
  std::set<CUmodule> modules;
  std::set<CUfunction> functions;
  std::set<CUstream> streams;
  std::map<std::string, CUresult> failures;  // entry point -> what its next call returns
  long long counters[kCounters] = {};
};

// never destroyed: the runtime may call in from static destructors
State& state() {
  static State* s = new State;
  return *s;
}

CUctx_st primary;
thread_local CUcontext current = nullptr;

enum class Needs { nothing, init, context };

// What every entry point checks first: an injected failure, then cuInit, then a current context.
CUresult enter(State& s, const char* entry, Needs needs) {
  if (auto it = s.failures.find(entry); it != s.failures.end()) {
    const CUresult r = it->second;
    s.failures.erase(it);
    return r;
  }
  if (needs != Needs::nothing && !s.initialized) return kNotInitialized;
  if (needs == Needs::context && (current != &primary || s.retained == 0)) return kInvalidContext;
  return kSuccess;
}

// Locks the state as `s` and returns enter()'s error from the calling entry point.
#define ENTER(needs)                                 \
  State& s = state();                                \
  std::lock_guard<std::mutex> lock(s.mu);            \
  if (CUresult r = enter(s, __func__, Needs::needs)) \
  return r

// Inside one live allocation, or clear of all of them.
bool valid_range(const State& s, CUdeviceptr p, size_t n) {
  if (n == 0) return true;
  if (p == 0 || n > UINT64_MAX - p) return false;
  auto next = s.allocations.upper_bound(p);
  if (next != s.allocations.end() && next->first < p + n) return false;
  if (next == s.allocations.begin()) return true;
  auto [base, size] = *std::prev(next);
  return p >= base + size || p + n <= base + size;
}

bool valid_stream(const State& s, CUstream h) {
  // the NULL stream, CU_STREAM_LEGACY and CU_STREAM_PER_THREAD
  return reinterpret_cast<uintptr_t>(h) <= 2 || s.streams.count(h) > 0;
}

void* device(CUdeviceptr p) { return reinterpret_cast<void*>(static_cast<uintptr_t>(p)); }

CUresult alloc(State& s, CUdeviceptr* p, size_t n) {
  if (!p || n == 0) return kInvalidValue;
  void* mem = aligned_alloc(256, (n + 255) / 256 * 256);
  if (!mem) return kOutOfMemory;
  std::memset(mem, 0xff, n);  // undefined contents: NaN and -1, never a plausible zero
  *p = reinterpret_cast<uintptr_t>(mem);
  s.allocations[*p] = n;
  return kSuccess;
}

CUresult release(State& s, CUdeviceptr p) {
  auto it = s.allocations.find(p);
  if (it == s.allocations.end()) return kInvalidValue;
  std::free(device(p));
  s.allocations.erase(it);
  return kSuccess;
}

CUresult htod(State& s, CUdeviceptr dst, const void* src, size_t n) {
  if ((n && !src) || !valid_range(s, dst, n)) return kInvalidValue;
  if (n) std::memcpy(device(dst), src, n);
  s.counters[kHtoDBytes] += n;
  ++s.counters[kHtoDCopies];
  return kSuccess;
}

CUresult dtoh(State& s, void* dst, CUdeviceptr src, size_t n) {
  if ((n && !dst) || !valid_range(s, src, n)) return kInvalidValue;
  if (n) std::memcpy(dst, device(src), n);
  s.counters[kDtoHBytes] += n;
  ++s.counters[kDtoHCopies];
  return kSuccess;
}

}  // namespace

FAKE_API CUresult cuGetErrorString(CUresult error, const char** str) {
  ENTER(nothing);
  if (!str) return kInvalidValue;
  const ErrorText* e = error_text(error);
  *str = e ? e->text : nullptr;
  return e ? kSuccess : kInvalidValue;
}

FAKE_API CUresult cuGetErrorName(CUresult error, const char** str) {
  ENTER(nothing);
  if (!str) return kInvalidValue;
  const ErrorText* e = error_text(error);
  *str = e ? e->name : nullptr;
  return e ? kSuccess : kInvalidValue;
}

FAKE_API CUresult cuInit(unsigned flags) {
  ENTER(nothing);
  // tests of the runtime's message when the driver finds no device
  if (const char* v = std::getenv("STRIDER_FAKE_CUDA_NO_DEVICE"); v && std::string(v) == "1") return kNoDevice;
  if (flags != 0) return kInvalidValue;
  s.initialized = true;
  return kSuccess;
}

FAKE_API CUresult cuDriverGetVersion(int* version) {
  ENTER(nothing);
  if (!version) return kInvalidValue;
  *version = 13000;
  return kSuccess;
}

FAKE_API CUresult cuDeviceGetCount(int* count) {
  ENTER(init);
  if (!count) return kInvalidValue;
  *count = 1;
  return kSuccess;
}

FAKE_API CUresult cuDeviceGet(CUdevice* dev, int ordinal) {
  ENTER(init);
  if (!dev) return kInvalidValue;
  if (ordinal != 0) return kInvalidDevice;
  *dev = 0;
  return kSuccess;
}

FAKE_API CUresult cuDeviceGetAttribute(int* value, int attribute, CUdevice dev) {
  ENTER(init);
  if (!value) return kInvalidValue;
  if (dev != 0) return kInvalidDevice;
  // an H100's, or the emulation's limits where they are lower (1-d grids and blocks)
  static const std::map<int, int> kAttributes = {
      {1, 1024},         // MAX_THREADS_PER_BLOCK
      {2, 1024},         // MAX_BLOCK_DIM_X
      {3, 1},            // MAX_BLOCK_DIM_Y
      {4, 1},            // MAX_BLOCK_DIM_Z
      {5, 2147483647},   // MAX_GRID_DIM_X
      {6, 1},            // MAX_GRID_DIM_Y
      {7, 1},            // MAX_GRID_DIM_Z
      {8, 49152},        // MAX_SHARED_MEMORY_PER_BLOCK
      {10, 32},          // WARP_SIZE
      {16, 132},         // MULTIPROCESSOR_COUNT
      {41, 1},           // UNIFIED_ADDRESSING
      {75, 9},           // COMPUTE_CAPABILITY_MAJOR
      {76, 0},           // COMPUTE_CAPABILITY_MINOR
      {115, 1},          // MEMORY_POOLS_SUPPORTED
  };
  auto it = kAttributes.find(attribute);
  *value = it == kAttributes.end() ? 0 : it->second;
  return kSuccess;
}

FAKE_API CUresult cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice dev) {
  ENTER(init);
  if (!ctx) return kInvalidValue;
  if (dev != 0) return kInvalidDevice;
  ++s.retained;
  *ctx = &primary;
  return kSuccess;
}

FAKE_API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  ENTER(init);
  if (dev != 0) return kInvalidDevice;
  if (s.retained == 0) return kInvalidContext;
  --s.retained;
  return kSuccess;
}

FAKE_API CUresult cuCtxSetCurrent(CUcontext ctx) {
  ENTER(init);
  if (ctx && ctx != &primary) return kInvalidContext;
  current = ctx;
  return kSuccess;
}

FAKE_API CUresult cuCtxGetCurrent(CUcontext* ctx) {
  ENTER(init);
  if (!ctx) return kInvalidValue;
  *ctx = current;
  return kSuccess;
}

FAKE_API CUresult cuCtxGetDevice(CUdevice* dev) {
  ENTER(context);
  if (!dev) return kInvalidValue;
  *dev = 0;
  return kSuccess;
}

FAKE_API CUresult cuCtxSynchronize() {
  ENTER(context);
  return kSuccess;
}

FAKE_API CUresult cuMemAlloc_v2(CUdeviceptr* p, size_t bytes) {
  ENTER(context);
  return alloc(s, p, bytes);
}

FAKE_API CUresult cuMemFree_v2(CUdeviceptr p) {
  ENTER(context);
  return release(s, p);
}

FAKE_API CUresult cuMemAllocAsync(CUdeviceptr* p, size_t bytes, CUstream stream) {
  ENTER(context);
  if (!valid_stream(s, stream)) return kInvalidHandle;
  return alloc(s, p, bytes);
}

FAKE_API CUresult cuMemFreeAsync(CUdeviceptr p, CUstream stream) {
  ENTER(context);
  if (!valid_stream(s, stream)) return kInvalidHandle;
  return release(s, p);
}

FAKE_API CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t bytes) {
  ENTER(context);
  return htod(s, dst, src, bytes);
}

FAKE_API CUresult cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t bytes) {
  ENTER(context);
  return dtoh(s, dst, src, bytes);
}

FAKE_API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src, size_t bytes, CUstream stream) {
  ENTER(context);
  if (!valid_stream(s, stream)) return kInvalidHandle;
  return htod(s, dst, src, bytes);
}

FAKE_API CUresult cuMemcpyDtoHAsync_v2(void* dst, CUdeviceptr src, size_t bytes, CUstream stream) {
  ENTER(context);
  if (!valid_stream(s, stream)) return kInvalidHandle;
  return dtoh(s, dst, src, bytes);
}

FAKE_API CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream) {
  ENTER(context);
  if (!valid_stream(s, stream)) return kInvalidHandle;
  if (!valid_range(s, dst, bytes) || !valid_range(s, src, bytes)) return kInvalidValue;
  if (bytes) std::memmove(device(dst), device(src), bytes);
  s.counters[kDtoDBytes] += bytes;
  return kSuccess;
}

FAKE_API CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t n, CUstream stream) {
  ENTER(context);
  if (!valid_stream(s, stream)) return kInvalidHandle;
  if (!valid_range(s, dst, n)) return kInvalidValue;
  if (n) std::memset(device(dst), value, n);
  ++s.counters[kMemsets];
  return kSuccess;
}

FAKE_API CUresult cuStreamCreate(CUstream* stream, unsigned flags) {
  ENTER(context);
  if (!stream || flags > 1) return kInvalidValue;  // CU_STREAM_DEFAULT or CU_STREAM_NON_BLOCKING
  *stream = new CUstream_st;
  s.streams.insert(*stream);
  return kSuccess;
}

FAKE_API CUresult cuStreamDestroy_v2(CUstream stream) {
  ENTER(context);
  if (!s.streams.erase(stream)) return kInvalidHandle;
  delete stream;
  return kSuccess;
}

FAKE_API CUresult cuStreamSynchronize(CUstream stream) {
  ENTER(context);
  return valid_stream(s, stream) ? kSuccess : kInvalidHandle;
}

FAKE_API CUresult cuModuleLoadData(CUmodule* module, const void* image) {
  ENTER(context);
  if (!module || !image) return kInvalidValue;
  std::string so;
  if (!strider::testing::emu_image_library(image, &so)) return kInvalidImage;
  // a name never used before in this process: dlopen takes a loaded library's name for it
  static std::atomic<long> serial{0};
  std::string path = (std::filesystem::temp_directory_path() /
                      ("strider-fake-cuda-" + std::to_string(getpid()) + "-" + std::to_string(serial++) + "-XXXXXX.so"))
                         .string();
  const int fd = mkstemps(path.data(), 3);
  if (fd < 0) return kOperatingSystem;
  const bool written = write(fd, so.data(), so.size()) == static_cast<ssize_t>(so.size());
  close(fd);
  void* lib = written ? dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL) : nullptr;
  // the mapping keeps the file's inode, so no later file can pass for this library
  unlink(path.c_str());
  if (!written) return kOperatingSystem;
  if (!lib) return kInvalidImage;
  *module = new CUmod_st{lib, {}};
  s.modules.insert(*module);
  ++s.counters[kModuleLoads];
  return kSuccess;
}

FAKE_API CUresult cuModuleUnload(CUmodule module) {
  ENTER(context);
  if (!s.modules.erase(module)) return kInvalidHandle;
  for (auto& [name, f] : module->functions) s.functions.erase(f.get());
  dlclose(module->lib);
  delete module;
  return kSuccess;
}

FAKE_API CUresult cuModuleGetFunction(CUfunction* function, CUmodule module, const char* name) {
  ENTER(context);
  if (!function || !name) return kInvalidValue;
  if (!s.modules.count(module)) return kInvalidHandle;
  std::unique_ptr<CUfunc_st>& f = module->functions[name];
  if (!f) {
    auto launch = reinterpret_cast<strider::testing::EmuLaunch>(dlsym(module->lib, strider::testing::emu_launch_symbol(name).c_str()));
    auto arity = static_cast<const int*>(dlsym(module->lib, strider::testing::emu_arity_symbol(name).c_str()));
    if (!launch || !arity) {
      module->functions.erase(name);
      return kNotFound;
    }
    f.reset(new CUfunc_st{launch, *arity});
    s.functions.insert(f.get());
  }
  *function = f.get();
  return kSuccess;
}

FAKE_API CUresult cuLaunchKernel(CUfunction f, unsigned grid_x, unsigned grid_y, unsigned grid_z, unsigned block_x,
                                 unsigned block_y, unsigned block_z, unsigned shared_bytes, CUstream stream,
                                 void** params, void** extra) {
  ENTER(context);
  if (!s.functions.count(f)) return kInvalidHandle;
  if (!valid_stream(s, stream)) return kInvalidHandle;
  // 1-d grids and blocks, static shared memory only: what the emulation runs
  if (grid_x < 1 || grid_x > 2147483647u || grid_y != 1 || grid_z != 1 || block_x < 1 || block_x > 1024 ||
      block_y != 1 || block_z != 1 || shared_bytes != 0 || extra || (f->arity > 0 && !params))
    return kInvalidValue;
  f->launch(params, grid_x, static_cast<int>(block_x));
  ++s.counters[kLaunches];
  return kSuccess;
}

FAKE_API CUresult cuPointerGetAttribute(void* data, int attribute, CUdeviceptr p) {
  ENTER(init);
  if (!data || p == 0) return kInvalidValue;
  switch (attribute) {
    case 1:  // CONTEXT
      *static_cast<CUcontext*>(data) = &primary;
      return kSuccess;
    case 2:  // MEMORY_TYPE
      *static_cast<unsigned*>(data) = 2;  // CU_MEMORYTYPE_DEVICE
      return kSuccess;
    case 9:  // DEVICE_ORDINAL
      *static_cast<int*>(data) = 0;
      return kSuccess;
    default:
      return kInvalidValue;
  }
}

/// Test hook: fills out[0..n) with [launches, bytes copied host to device, device to host, device
/// to device, live allocations, modules loaded, live modules]; returns how many there are.
FAKE_API int strider_fake_cuda_counters(long long* out, int n) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.counters[kLiveAllocations] = static_cast<long long>(s.allocations.size());
  s.counters[kLiveModules] = static_cast<long long>(s.modules.size());
  for (int i = 0; i < n && i < kCounters; ++i) out[i] = s.counters[i];
  return kCounters;
}

/// Test hook: the next call of `entry_point` (its exported name, e.g. "cuMemAlloc_v2") returns
/// `code` and does nothing else. Returns 0, or -1 when this library exports no such entry point.
FAKE_API int strider_fake_cuda_fail_next(const char* entry_point, int code) {
  Dl_info self{};
  if (!entry_point || std::strncmp(entry_point, "cu", 2) != 0 ||
      !dladdr(reinterpret_cast<void*>(&strider_fake_cuda_fail_next), &self))
    return -1;
  void* lib = dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD);
  const bool exported = lib && dlsym(lib, entry_point);
  if (lib) dlclose(lib);
  if (!exported) return -1;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.failures[entry_point] = code;
  return 0;
}
