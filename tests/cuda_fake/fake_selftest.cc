#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cuda_fake/emulation.h"

// The fake NVRTC and driver (libstrider_fake_nvrtc.so, libstrider_fake_cuda.so), loaded as the
// runtime loads the real ones and called through nvrtc.h's and cuda.h's exported names: CUDA C
// compiled, loaded, launched over copied memory, and the checks a runtime bug would trip.

// The prototypes (exact, cuda.h's enums as int), only for decltype: the calls go through dlsym.
extern "C" {
using nvrtcProgram = struct _nvrtcProgram*;
const char* nvrtcGetErrorString(int);
int nvrtcVersion(int*, int*);
int nvrtcCreateProgram(nvrtcProgram*, const char*, const char*, int, const char* const*, const char* const*);
int nvrtcDestroyProgram(nvrtcProgram*);
int nvrtcCompileProgram(nvrtcProgram, int, const char* const*);
int nvrtcGetProgramLogSize(nvrtcProgram, size_t*);
int nvrtcGetProgramLog(nvrtcProgram, char*);
int nvrtcGetCUBINSize(nvrtcProgram, size_t*);
int nvrtcGetCUBIN(nvrtcProgram, char*);

using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
int cuInit(unsigned);
int cuGetErrorString(int, const char**);
int cuGetErrorName(int, const char**);
int cuDriverGetVersion(int*);
int cuDeviceGetCount(int*);
int cuDeviceGet(int*, int);
int cuDeviceGetAttribute(int*, int, int);
int cuDevicePrimaryCtxRetain(CUcontext*, int);
int cuDevicePrimaryCtxRelease_v2(int);
int cuCtxSetCurrent(CUcontext);
int cuCtxGetCurrent(CUcontext*);
int cuCtxGetDevice(int*);
int cuCtxSynchronize();
int cuMemAlloc_v2(CUdeviceptr*, size_t);
int cuMemFree_v2(CUdeviceptr);
int cuMemAllocAsync(CUdeviceptr*, size_t, CUstream);
int cuMemFreeAsync(CUdeviceptr, CUstream);
int cuMemcpyHtoD_v2(CUdeviceptr, const void*, size_t);
int cuMemcpyDtoH_v2(void*, CUdeviceptr, size_t);
int cuMemcpyHtoDAsync_v2(CUdeviceptr, const void*, size_t, CUstream);
int cuMemcpyDtoHAsync_v2(void*, CUdeviceptr, size_t, CUstream);
int cuMemcpyDtoDAsync_v2(CUdeviceptr, CUdeviceptr, size_t, CUstream);
int cuMemsetD8Async(CUdeviceptr, unsigned char, size_t, CUstream);
int cuStreamCreate(CUstream*, unsigned);
int cuStreamDestroy_v2(CUstream);
int cuStreamSynchronize(CUstream);
int cuModuleLoadData(CUmodule*, const void*);
int cuModuleUnload(CUmodule);
int cuModuleGetFunction(CUfunction*, CUmodule, const char*);
int cuLaunchKernel(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void**,
                   void**);
int cuPointerGetAttribute(void*, int, CUdeviceptr);
int strider_fake_cuda_counters(long long*, int);
int strider_fake_cuda_fail_next(const char*, int);
}

namespace strider::testing {
namespace {

void* open_library(const char* path) {
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) throw std::runtime_error(dlerror());
  return lib;
}

void* nvrtc_library() {
  static void* lib = open_library(STRIDER_FAKE_NVRTC_PATH);
  return lib;
}

void* cuda_library() {
  static void* lib = open_library(STRIDER_FAKE_CUDA_PATH);
  return lib;
}

template <class F>
F find(void* lib, const char* name) {
  auto f = reinterpret_cast<F>(dlsym(lib, name));
  if (!f) throw std::runtime_error(std::string("missing ") + name);
  return f;
}

#define NVRTC(fn) find<decltype(&::fn)>(nvrtc_library(), #fn)
#define CU(fn) find<decltype(&::fn)>(cuda_library(), #fn)

constexpr unsigned kLaunches = 0, kHtoD = 1, kDtoH = 2, kDtoD = 3, kLiveAllocations = 4, kModuleLoads = 5,
                   kLiveModules = 6;

std::vector<long long> counters() {
  std::vector<long long> c(CU(strider_fake_cuda_counters)(nullptr, 0));
  CU(strider_fake_cuda_counters)(c.data(), static_cast<int>(c.size()));
  return c;
}

// Written as the backend writes kernels: extern "C", launch bounds, grid-stride loops; the second
// folds each block's share by warp shuffles, then through shared memory.
constexpr const char* kKernels = R"(
extern "C" __global__ void __launch_bounds__(128) scale_add(float* __restrict__ a, const float* __restrict__ b, int n, float k) {
  for (int i = (int)(blockIdx.x * blockDim.x + threadIdx.x); i < n; i += (int)(gridDim.x * blockDim.x)) a[i] = k * a[i] + b[i];
}

extern "C" __global__ void __launch_bounds__(256) block_sums(const float* __restrict__ x, float* __restrict__ out, int n) {
  __shared__ float warps[8];
  float v = 0.0f;
  for (int i = (int)blockIdx.x * 256 + threadIdx.x; i < n; i += (int)gridDim.x * 256) v += x[i];
  for (int d = 16; d > 0; d >>= 1) v += __shfl_down_sync(0xffffffffu, v, d);
  if (threadIdx.x % 32 == 0) warps[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = 0.0f;
    for (int w = 0; w < 8; ++w) total += warps[w];
    out[blockIdx.x] = total;
  }
}
)";

// NVRTC's result for `source` with `options`; the image in `image`, the log in `log`.
int compile(const std::string& source, const std::string& name, std::vector<const char*> options, std::string* image,
            std::string* log) {
  nvrtcProgram prog = nullptr;
  EXPECT_EQ(NVRTC(nvrtcCreateProgram)(&prog, source.c_str(), name.c_str(), 0, nullptr, nullptr), 0);
  const int r = NVRTC(nvrtcCompileProgram)(prog, static_cast<int>(options.size()), options.data());
  size_t n = 0;
  EXPECT_EQ(NVRTC(nvrtcGetProgramLogSize)(prog, &n), 0);
  log->assign(n, '\0');
  EXPECT_EQ(NVRTC(nvrtcGetProgramLog)(prog, log->data()), 0);
  log->resize(n - 1);
  if (r == 0) {
    EXPECT_EQ(NVRTC(nvrtcGetCUBINSize)(prog, &n), 0);
    image->assign(n, '\0');
    EXPECT_EQ(NVRTC(nvrtcGetCUBIN)(prog, image->data()), 0);
  } else {
    EXPECT_NE(NVRTC(nvrtcGetCUBINSize)(prog, &n), 0);
  }
  EXPECT_EQ(NVRTC(nvrtcDestroyProgram)(&prog), 0);
  EXPECT_EQ(prog, nullptr);
  return r;
}

std::string compile_kernels() {
  std::string image, log;
  if (compile(kKernels, "kernels.cu", {"-arch=sm_90", "-std=c++17", "-fmad=false"}, &image, &log) != 0)
    throw std::runtime_error(log);
  return image;
}

// Every test starts from cuInit and the primary context made current, as the runtime does.
class FakeCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = emu_unavailable(); !why.empty()) GTEST_SKIP() << why;
    ASSERT_EQ(CU(cuInit)(0), 0);
    ASSERT_EQ(CU(cuDevicePrimaryCtxRetain)(&ctx_, 0), 0);
    ASSERT_EQ(CU(cuCtxSetCurrent)(ctx_), 0);
  }

  void TearDown() override {
    if (ctx_) {
      EXPECT_EQ(CU(cuDevicePrimaryCtxRelease_v2)(0), 0);
    }
  }

  CUmodule load(const std::string& image) {
    CUmodule m = nullptr;
    EXPECT_EQ(CU(cuModuleLoadData)(&m, image.data()), 0);
    return m;
  }

  CUcontext ctx_ = nullptr;
};

TEST(FakeNvrtc, ReportsVersionZeroAndNamesItsErrors) {
  int major = -1, minor = -1;
  EXPECT_EQ(NVRTC(nvrtcVersion)(&major, &minor), 0);
  EXPECT_EQ(major, 0);
  EXPECT_EQ(minor, 0);
  EXPECT_STREQ(NVRTC(nvrtcGetErrorString)(6), "NVRTC_ERROR_COMPILATION");
  EXPECT_STREQ(NVRTC(nvrtcGetErrorString)(5), "NVRTC_ERROR_INVALID_OPTION");
}

TEST(FakeNvrtc, CompilesToASelfDescribingImage) {
  if (std::string why = emu_unavailable(); !why.empty()) GTEST_SKIP() << why;
  std::string image, log;
  ASSERT_EQ(compile(kKernels, "kernels.cu", {"-arch=sm_80"}, &image, &log), 0) << log;
  EXPECT_EQ(log, "");
  ASSERT_GT(image.size(), 26u);
  EXPECT_EQ(image.substr(0, 18), std::string("STRIDER-EMU-IMAGE\0", 18));
  uint64_t size = 0;
  std::memcpy(&size, image.data() + 18, 8);
  EXPECT_EQ(size, image.size() - 26);
  EXPECT_EQ(image.substr(26, 4), "\x7f" "ELF");
}

TEST(FakeNvrtc, RefusesAMissingArchAndReportsCompileErrors) {
  if (std::string why = emu_unavailable(); !why.empty()) GTEST_SKIP() << why;
  std::string image, log;
  EXPECT_EQ(compile(kKernels, "kernels.cu", {"-std=c++17"}, &image, &log), 5);
  EXPECT_EQ(compile(kKernels, "kernels.cu", {"-arch=compute_90"}, &image, &log), 5);
  const char* broken = "extern \"C\" __global__ void broken(float* a) {\n  a[0] = undeclared_value;\n}\n";
  EXPECT_EQ(compile(broken, "broken.cu", {"-arch=sm_90"}, &image, &log), 6);
  EXPECT_NE(log.find("broken.cu:2"), std::string::npos) << log;
  EXPECT_NE(log.find("undeclared_value"), std::string::npos) << log;
  EXPECT_EQ(compile("#include <cmath>\n", "inc.cu", {"-arch=sm_90"}, &image, &log), 6);
  EXPECT_NE(log.find("#include"), std::string::npos) << log;
}

TEST(FakeNvrtc, FindsKernelsAndWhichSynchronize) {
  const std::vector<EmuKernel> kernels = emu_kernels(kKernels);
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(kernels[0].name, "scale_add");
  EXPECT_FALSE(kernels[0].cooperative);
  EXPECT_EQ(kernels[1].name, "block_sums");
  EXPECT_TRUE(kernels[1].cooperative);
}

TEST(FakeCudaDevice, NeedsInitFirst) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // a fresh process, where cuInit was never called
  int count = 0;
  EXPECT_EXIT(std::exit(CU(cuDeviceGetCount)(&count)), ::testing::ExitedWithCode(3), "");  // CUDA_ERROR_NOT_INITIALIZED
}

TEST(FakeCudaDevice, DescribesAnSm90) {
  ASSERT_EQ(CU(cuInit)(0), 0);
  int count = 0, dev = -1, value = 0, version = 0;
  EXPECT_EQ(CU(cuDeviceGetCount)(&count), 0);
  EXPECT_EQ(count, 1);
  EXPECT_EQ(CU(cuDeviceGet)(&dev, 1), 101);
  ASSERT_EQ(CU(cuDeviceGet)(&dev, 0), 0);
  for (auto [attribute, expected] : std::vector<std::pair<int, int>>{{75, 9}, {76, 0}, {16, 132}, {1, 1024}, {10, 32}}) {
    EXPECT_EQ(CU(cuDeviceGetAttribute)(&value, attribute, dev), 0);
    EXPECT_EQ(value, expected) << "attribute " << attribute;
  }
  EXPECT_EQ(CU(cuDriverGetVersion)(&version), 0);
  EXPECT_GT(version, 0);
  const char* text = nullptr;
  EXPECT_EQ(CU(cuGetErrorString)(2, &text), 0);
  EXPECT_STREQ(text, "out of memory");
  EXPECT_EQ(CU(cuGetErrorString)(1, &text), 0);
  EXPECT_STREQ(text, "invalid argument");
  EXPECT_EQ(CU(cuGetErrorName)(500, &text), 0);
  EXPECT_STREQ(text, "CUDA_ERROR_NOT_FOUND");
  EXPECT_EQ(CU(cuGetErrorString)(12345, &text), 1);
  EXPECT_EQ(text, nullptr);
}

TEST(FakeCudaDevice, NoDeviceWhenTheVariableSaysSo) {
  setenv("STRIDER_FAKE_CUDA_NO_DEVICE", "1", 1);
  EXPECT_EQ(CU(cuInit)(0), 100);
  const char* text = nullptr;
  EXPECT_EQ(CU(cuGetErrorString)(100, &text), 0);
  EXPECT_STREQ(text, "no CUDA-capable device is detected");
  unsetenv("STRIDER_FAKE_CUDA_NO_DEVICE");
  EXPECT_EQ(CU(cuInit)(0), 0);
}

TEST_F(FakeCuda, CopiesLaunchesAndCopiesBack) {
  const std::vector<long long> before = counters();
  CUmodule m = load(compile_kernels());
  CUfunction scale_add = nullptr, block_sums = nullptr;
  ASSERT_EQ(CU(cuModuleGetFunction)(&scale_add, m, "scale_add"), 0);
  ASSERT_EQ(CU(cuModuleGetFunction)(&block_sums, m, "block_sums"), 0);
  CUfunction missing = nullptr;
  EXPECT_EQ(CU(cuModuleGetFunction)(&missing, m, "no_such_kernel"), 500);
  CUstream stream = nullptr;
  ASSERT_EQ(CU(cuStreamCreate)(&stream, 0), 0);

  // a = 3 * a + b over 1000 elements by 3 blocks of 128 threads: the loop makes 3 trips
  int n = 1000;
  float k = 3.0f;
  std::vector<float> a(n), b(n), got(n);
  for (int i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i);
    b[i] = static_cast<float>(i % 5);
  }
  CUdeviceptr da = 0, db = 0;
  ASSERT_EQ(CU(cuMemAllocAsync)(&da, n * sizeof(float), stream), 0);
  ASSERT_EQ(CU(cuMemAlloc_v2)(&db, n * sizeof(float)), 0);
  EXPECT_EQ(da % 256, 0u);
  EXPECT_EQ(CU(cuMemcpyHtoDAsync_v2)(da, a.data(), n * sizeof(float), stream), 0);
  EXPECT_EQ(CU(cuMemcpyHtoD_v2)(db, b.data(), n * sizeof(float)), 0);
  void* args[] = {&da, &db, &n, &k};
  ASSERT_EQ(CU(cuLaunchKernel)(scale_add, 3, 1, 1, 128, 1, 1, 0, stream, args, nullptr), 0);
  EXPECT_EQ(CU(cuStreamSynchronize)(stream), 0);
  EXPECT_EQ(CU(cuMemcpyDtoHAsync_v2)(got.data(), da, n * sizeof(float), stream), 0);
  for (int i = 0; i < n; ++i) ASSERT_EQ(got[i], 3.0f * a[i] + b[i]) << i;

  // per-block sums of a copy of the result, by 4 blocks of 256 threads
  CUdeviceptr dx = 0, dsums = 0;
  ASSERT_EQ(CU(cuMemAlloc_v2)(&dx, n * sizeof(float)), 0);
  ASSERT_EQ(CU(cuMemAlloc_v2)(&dsums, 4 * sizeof(float)), 0);
  EXPECT_EQ(CU(cuMemcpyDtoDAsync_v2)(dx, da, n * sizeof(float), nullptr), 0);
  void* sum_args[] = {&dx, &dsums, &n};
  ASSERT_EQ(CU(cuLaunchKernel)(block_sums, 4, 1, 1, 256, 1, 1, 0, nullptr, sum_args, nullptr), 0);
  float sums[4] = {};
  EXPECT_EQ(CU(cuMemcpyDtoH_v2)(sums, dsums, sizeof sums), 0);
  float expected[4] = {};
  for (int i = 0; i < n; ++i) expected[(i / 256) % 4] += got[i];
  for (int blk = 0; blk < 4; ++blk) EXPECT_EQ(sums[blk], expected[blk]) << "block " << blk;

  // memset, then the counters of all of it
  EXPECT_EQ(CU(cuMemsetD8Async)(dsums, 0, sizeof sums, stream), 0);
  EXPECT_EQ(CU(cuMemcpyDtoH_v2)(sums, dsums, sizeof sums), 0);
  EXPECT_EQ(sums[3], 0.0f);
  std::vector<long long> after = counters();
  EXPECT_EQ(after[kLaunches] - before[kLaunches], 2);
  EXPECT_EQ(after[kHtoD] - before[kHtoD], static_cast<long long>(2 * n * sizeof(float)));
  EXPECT_EQ(after[kDtoH] - before[kDtoH], static_cast<long long>(n * sizeof(float) + 2 * sizeof sums));
  EXPECT_EQ(after[kDtoD] - before[kDtoD], static_cast<long long>(n * sizeof(float)));
  EXPECT_EQ(after[kLiveAllocations] - before[kLiveAllocations], 4);
  EXPECT_EQ(after[kModuleLoads] - before[kModuleLoads], 1);
  EXPECT_EQ(after[kLiveModules] - before[kLiveModules], 1);

  EXPECT_EQ(CU(cuMemFreeAsync)(da, stream), 0);
  for (CUdeviceptr p : {db, dx, dsums}) EXPECT_EQ(CU(cuMemFree_v2)(p), 0);
  EXPECT_EQ(CU(cuStreamDestroy_v2)(stream), 0);
  EXPECT_EQ(CU(cuStreamSynchronize)(stream), 400);
  EXPECT_EQ(CU(cuModuleUnload)(m), 0);
  EXPECT_EQ(CU(cuLaunchKernel)(scale_add, 1, 1, 1, 128, 1, 1, 0, nullptr, args, nullptr), 400);
  after = counters();
  EXPECT_EQ(after[kLiveAllocations], before[kLiveAllocations]);
  EXPECT_EQ(after[kLiveModules], before[kLiveModules]);
}

TEST_F(FakeCuda, RefusesLaunchesTheEmulationCannotRun) {
  CUmodule m = load(compile_kernels());
  CUfunction f = nullptr;
  ASSERT_EQ(CU(cuModuleGetFunction)(&f, m, "scale_add"), 0);
  std::vector<float> a(4), b = {1, 2, 3, 4};
  float* pa = a.data();
  float* pb = b.data();
  int n = 4;
  float k = 1.0f;
  void* args[] = {&pa, &pb, &n, &k};
  void* extra[] = {nullptr};
  auto launch = CU(cuLaunchKernel);
  EXPECT_EQ(launch(f, 1, 1, 1, 1025, 1, 1, 0, nullptr, args, nullptr), 1);  // more threads than a block holds
  EXPECT_EQ(launch(f, 1, 2, 1, 128, 1, 1, 0, nullptr, args, nullptr), 1);   // a 2-d grid
  EXPECT_EQ(launch(f, 1, 1, 1, 128, 2, 1, 0, nullptr, args, nullptr), 1);   // a 2-d block
  EXPECT_EQ(launch(f, 0, 1, 1, 128, 1, 1, 0, nullptr, args, nullptr), 1);
  EXPECT_EQ(launch(f, 1, 1, 1, 128, 1, 1, 16, nullptr, args, nullptr), 1);  // dynamic shared memory
  EXPECT_EQ(launch(f, 1, 1, 1, 128, 1, 1, 0, nullptr, args, extra), 1);
  EXPECT_EQ(launch(f, 1, 1, 1, 128, 1, 1, 0, nullptr, nullptr, nullptr), 1);
  EXPECT_EQ(launch(f, 1, 1, 1, 128, 1, 1, 0, reinterpret_cast<CUstream>(0x1234), args, nullptr), 400);
  // host memory passed as device memory, on the legacy and per-thread streams
  EXPECT_EQ(launch(f, 1, 1, 1, 128, 1, 1, 0, reinterpret_cast<CUstream>(0x1), args, nullptr), 0);
  EXPECT_EQ(launch(f, 1, 1, 1, 128, 1, 1, 0, reinterpret_cast<CUstream>(0x2), args, nullptr), 0);
  EXPECT_EQ(a, (std::vector<float>{2, 4, 6, 8}));
  std::string bad(64, 'x');
  CUmodule none = nullptr;
  EXPECT_EQ(CU(cuModuleLoadData)(&none, bad.data()), 200);
  EXPECT_EQ(CU(cuModuleUnload)(m), 0);
  EXPECT_EQ(CU(cuModuleUnload)(m), 400);
}

TEST_F(FakeCuda, ChecksCopiesAgainstAllocations) {
  CUdeviceptr p = 0;
  ASSERT_EQ(CU(cuMemAlloc_v2)(&p, 100), 0);
  std::vector<char> host(200, 7);
  auto htod = CU(cuMemcpyHtoD_v2);
  auto dtoh = CU(cuMemcpyDtoH_v2);
  EXPECT_EQ(htod(p, host.data(), 100), 0);
  EXPECT_EQ(htod(p + 50, host.data(), 50), 0);
  EXPECT_EQ(htod(p, host.data(), 101), 1);  // past the end
  EXPECT_EQ(htod(p + 50, host.data(), 51), 1);
  EXPECT_EQ(dtoh(host.data(), p + 99, 2), 1);
  EXPECT_EQ(htod(p - 8, host.data(), 16), 1);  // runs into it
  EXPECT_EQ(CU(cuMemsetD8Async)(p + 90, 0, 11, nullptr), 1);
  EXPECT_EQ(CU(cuMemcpyDtoDAsync_v2)(p, p + 1, 100, nullptr), 1);
  // memory outside every allocation passes for device memory
  const CUdeviceptr outside = reinterpret_cast<uintptr_t>(host.data() + 100);
  EXPECT_EQ(htod(outside, host.data(), 100), 0);
  EXPECT_EQ(CU(cuMemcpyDtoDAsync_v2)(p, outside, 100, nullptr), 0);
  unsigned type = 0;
  int ordinal = -1;
  CUcontext ctx = nullptr;
  for (CUdeviceptr q : {p, outside}) {
    EXPECT_EQ(CU(cuPointerGetAttribute)(&type, 2, q), 0);
    EXPECT_EQ(type, 2u);  // CU_MEMORYTYPE_DEVICE
    EXPECT_EQ(CU(cuPointerGetAttribute)(&ordinal, 9, q), 0);
    EXPECT_EQ(ordinal, 0);
    EXPECT_EQ(CU(cuPointerGetAttribute)(&ctx, 1, q), 0);
    EXPECT_EQ(ctx, ctx_);
  }
  EXPECT_EQ(CU(cuMemAlloc_v2)(&p, 0), 1);
  EXPECT_EQ(CU(cuMemFree_v2)(p + 1), 1);  // not an allocation's base
  EXPECT_EQ(CU(cuMemFree_v2)(outside), 1);
  EXPECT_EQ(CU(cuMemFree_v2)(p), 0);
  EXPECT_EQ(CU(cuMemFree_v2)(p), 1);  // twice
}

TEST_F(FakeCuda, FailsTheNextCallWhereATestSays) {
  CUdeviceptr p = 0;
  EXPECT_EQ(CU(strider_fake_cuda_fail_next)("cuMemAlloc_v2", 2), 0);
  EXPECT_EQ(CU(cuMemAlloc_v2)(&p, 64), 2);  // CUDA_ERROR_OUT_OF_MEMORY
  EXPECT_EQ(CU(cuMemAlloc_v2)(&p, 64), 0);
  EXPECT_EQ(CU(strider_fake_cuda_fail_next)("cuLaunchKernel", 719), 0);
  EXPECT_EQ(CU(cuLaunchKernel)(nullptr, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr), 719);
  EXPECT_EQ(CU(strider_fake_cuda_fail_next)("cuMemAlloc", 2), -1);  // cuda.h's macro, not an export
  EXPECT_EQ(CU(strider_fake_cuda_fail_next)("strider_fake_cuda_counters", 2), -1);
  EXPECT_EQ(CU(cuMemFree_v2)(p), 0);
}

TEST_F(FakeCuda, NeedsTheContextCurrentOnTheCallingThread) {
  int on_other_thread = -1;
  std::thread([&] {
    CUdeviceptr p = 0;
    on_other_thread = CU(cuMemAlloc_v2)(&p, 64);
  }).join();
  EXPECT_EQ(on_other_thread, 201);  // CUDA_ERROR_INVALID_CONTEXT
  CUcontext current = nullptr;
  EXPECT_EQ(CU(cuCtxGetCurrent)(&current), 0);
  EXPECT_EQ(current, ctx_);
  int dev = -1;
  EXPECT_EQ(CU(cuCtxGetDevice)(&dev), 0);
  EXPECT_EQ(dev, 0);
  EXPECT_EQ(CU(cuCtxSynchronize)(), 0);
  EXPECT_EQ(CU(cuDevicePrimaryCtxRelease_v2)(0), 0);
  EXPECT_EQ(CU(cuCtxSynchronize)(), 201);  // released: no longer active
  EXPECT_EQ(CU(cuDevicePrimaryCtxRelease_v2)(0), 201);
  EXPECT_EQ(CU(cuDevicePrimaryCtxRetain)(&current, 0), 0);  // as TearDown expects it
}

}  // namespace
}  // namespace strider::testing
