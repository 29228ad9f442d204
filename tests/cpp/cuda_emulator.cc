#include "cuda_emulator.h"

#include <dlfcn.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

namespace strider::testing {

namespace {

// CUDA as host C++: what the backend's sources use and nothing more.
constexpr const char* kShim = R"(#include <ucontext.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <utility>
#include <vector>
using std::isfinite;
using std::isinf;
using std::isnan;
using std::signbit;
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(n)
#define __shared__ static  // blocks run one at a time: one copy serves them all
struct strider_emu_dim { unsigned x; };
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(16) int4 { int x, y, z, w; };
struct alignas(16) double2 { double x, y; };
struct alignas(16) longlong2 { long long x, y; };
struct alignas(4) uchar4 { unsigned char x, y, z, w; };
inline strider_emu_dim threadIdx{0}, blockIdx{0}, gridDim{1};
namespace strider_emu {
// a block's threads are fibers, switched at barriers: a round runs each unfinished one up to its
// next barrier, so every barrier the backend emits (reached by whole warps or blocks) holds
constexpr size_t kStack = 64 * 1024;
inline ucontext_t scheduler;
inline ucontext_t fibers[1024];
inline bool done[1024];
inline unsigned long long lanes[1024];
inline const std::function<void()>* body;
inline void yield() { swapcontext(&fibers[threadIdx.x], &scheduler); }
inline void fiber_main() {
  (*body)();
  done[threadIdx.x] = true;
  yield();  // never resumed
}
template <class... P, size_t... I> void call(void (*k)(P...), void** a, std::index_sequence<I...>) { k(static_cast<P>(a[I])...); }
template <class... P> void call(void (*k)(P...), void** a) { call(k, a, std::index_sequence_for<P...>{}); }
inline void launch(const std::function<void()>& kernel, long long blocks, int threads, bool cooperative) {
  gridDim.x = (unsigned)blocks;
  std::vector<char> stacks(cooperative ? threads * kStack : 0);
  body = &kernel;
  for (long long b = 0; b < blocks; ++b) {
    blockIdx.x = (unsigned)b;
    if (!cooperative) {
      for (int t = 0; t < threads; ++t) {
        threadIdx.x = (unsigned)t;
        kernel();
      }
      continue;
    }
    for (int t = 0; t < threads; ++t) {
      getcontext(&fibers[t]);
      fibers[t].uc_stack.ss_sp = &stacks[t * kStack];
      fibers[t].uc_stack.ss_size = kStack;
      fibers[t].uc_link = nullptr;
      makecontext(&fibers[t], fiber_main, 0);
      done[t] = false;
    }
    for (bool running = true; running;) {
      running = false;
      for (int t = 0; t < threads; ++t)
        if (!done[t]) {
          threadIdx.x = (unsigned)t;
          swapcontext(&scheduler, &fibers[t]);
          running = true;
        }
    }
  }
}
}  // namespace strider_emu
inline void __syncthreads() { strider_emu::yield(); }
template <class T> T __shfl_down_sync(unsigned, T v, int d) {
  static_assert(sizeof(T) <= 8, "one lane slot");
  std::memcpy(&strider_emu::lanes[threadIdx.x], &v, sizeof(T));
  strider_emu::yield();  // every lane has written
  T r = v;
  if (threadIdx.x % 32 + d < 32) std::memcpy(&r, &strider_emu::lanes[threadIdx.x + d], sizeof(T));
  strider_emu::yield();  // every lane has read
  return r;
}
)";

using Launch = void (*)(void**, long long, int, int);

bool cooperative(const CudaStage& s) {
  return s.source.find("__syncthreads") != std::string::npos || s.source.find("merge(a, shfl_down") != std::string::npos;
}

std::string compiler() {
  const char* cxx = std::getenv("CXX");
  return cxx && *cxx ? cxx : "c++";
}

}  // namespace

std::string CudaEmulator::unavailable() {
  if (std::system((compiler() + " --version > /dev/null 2>&1").c_str()) != 0) return "no host C++ compiler (" + compiler() + ")";
  return "";
}

CudaEmulator::CudaEmulator(const std::vector<CudaStage>& stages) : stages_(stages) {
  char name[] = "/tmp/strider-cuda-emu-XXXXXX";
  if (!mkdtemp(name)) throw std::runtime_error("cannot create a directory in /tmp");
  dir_ = name;
  std::ofstream src(dir_ + "/stages.cc");
  src << kShim;
  std::set<std::string> sources, kernels;  // a stage given twice is compiled once (named by its code)
  for (const CudaStage& s : stages_)
    if (sources.insert(s.name).second) src << s.source;
  for (const CudaStage& s : stages_)
    for (const CudaLaunch& l : s.launches)
      if (kernels.insert(l.kernel).second)
        src << "extern \"C\" void emu_" << l.kernel << "(void** a, long long blocks, int threads, int coop) {\n"
            << "  strider_emu::launch([&] { strider_emu::call(" << l.kernel << ", a); }, blocks, threads, coop);\n}\n";
  src.close();
  // no contraction: a * b + c rounds twice, as on the device with -fmad=false
  const std::string cmd = compiler() + " -std=c++17 -O1 -fPIC -shared -ffp-contract=off -fno-strict-aliasing -w -o " + dir_ + "/stages.so " +
                          dir_ + "/stages.cc > " + dir_ + "/log 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    std::ifstream log(dir_ + "/log");
    std::stringstream text;
    text << log.rdbuf();
    throw std::runtime_error("the host compiler rejected the stages:\n" + text.str().substr(0, 4000));
  }
  lib_ = dlopen((dir_ + "/stages.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib_) throw std::runtime_error(std::string("dlopen: ") + dlerror());
}

CudaEmulator::~CudaEmulator() {
  if (lib_) dlclose(lib_);
  std::filesystem::remove_all(dir_);
}

int CudaEmulator::run(size_t i, const std::vector<char*>& bases) const {
  const CudaStage& s = stages_.at(i);
  int err = 0;
  std::vector<uint64_t> scratch((s.scratch_bytes + 7) / 8);
  std::vector<void*> args;
  for (int p : s.params) args.push_back(bases.at(p));
  if (s.error_flag) args.push_back(&err);
  if (s.scratch_bytes) args.push_back(scratch.data());
  for (const CudaLaunch& l : s.launches) {
    auto launch = reinterpret_cast<Launch>(dlsym(lib_, ("emu_" + l.kernel).c_str()));
    if (!launch) throw std::runtime_error("no kernel " + l.kernel);
    launch(args.data(), l.blocks, l.threads, cooperative(s));
  }
  return err;
}

}  // namespace strider::testing
