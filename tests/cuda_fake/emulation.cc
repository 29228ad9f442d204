#include "cuda_fake/emulation.h"

#include <stdlib.h>

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace strider::testing {

namespace {

// CUDA as host C++: what the backend's sources use and nothing more.
constexpr const char* kShim = R"(#include <ucontext.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
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
struct alignas(16) uint4 { unsigned x, y, z, w; };
struct alignas(16) ulonglong2 { unsigned long long x, y; };
struct alignas(8) short4 { short x, y, z, w; };
struct alignas(8) ushort4 { unsigned short x, y, z, w; };
struct alignas(4) char4 { signed char x, y, z, w; };
struct alignas(4) uchar4 { unsigned char x, y, z, w; };
inline strider_emu_dim threadIdx{0}, blockIdx{0}, blockDim{1}, gridDim{1};
namespace strider_emu {
// a block's threads are fibers, switched at barriers: a round runs each unfinished one up to its
// next barrier, so every barrier the backend emits (reached by whole warps or blocks) holds
constexpr size_t kStack = 64 * 1024;
inline ucontext_t scheduler;
inline ucontext_t fibers[1024];
inline bool done[1024];
inline unsigned long long lanes[1024];
inline const std::function<void()>* body;
inline bool in_fibers = false;
inline void yield() {
  if (!in_fibers) {
    std::fputs("strider CUDA emulation: a barrier reached outside a kernel's own body (emulation.h)\n", stderr);
    std::abort();
  }
  swapcontext(&fibers[threadIdx.x], &scheduler);
}
inline void fiber_main() {
  (*body)();
  done[threadIdx.x] = true;
  yield();  // never resumed
}
// params[i] points to the i-th argument, as the driver's kernelParams
template <class... P, size_t... I> void call(void (*k)(P...), void* const* a, std::index_sequence<I...>) { k(*static_cast<P*>(a[I])...); }
template <class... P> void call(void (*k)(P...), void* const* a) { call(k, a, std::index_sequence_for<P...>{}); }
template <class... P> constexpr int arity(void (*)(P...)) { return sizeof...(P); }
// STRIDER_EMU_REVERSE=1 runs blocks and threads last first: a kernel whose result depends on
// the order of its threads (a race) then differs from the first-first run
inline void launch(const std::function<void()>& kernel, long long blocks, int threads, bool cooperative) {
  gridDim.x = (unsigned)blocks;
  blockDim.x = (unsigned)threads;
  std::vector<char> stacks(cooperative ? threads * kStack : 0);
  body = &kernel;
  const char* order = std::getenv("STRIDER_EMU_REVERSE");
  const bool reverse = order && *order && *order != '0';
  auto nth = [reverse](long long k, long long n) { return reverse ? n - 1 - k : k; };
  for (long long k = 0; k < blocks; ++k) {
    blockIdx.x = (unsigned)nth(k, blocks);
    if (!cooperative) {
      for (int t = 0; t < threads; ++t) {
        threadIdx.x = (unsigned)nth(t, threads);
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
    in_fibers = true;
    for (bool running = true; running;) {
      running = false;
      for (int k = 0; k < threads; ++k) {
        const int t = (int)nth(k, threads);
        if (!done[t]) {
          threadIdx.x = (unsigned)t;
          swapcontext(&scheduler, &fibers[t]);
          running = true;
        }
      }
    }
    in_fibers = false;
  }
}
}  // namespace strider_emu
inline void __syncthreads() { strider_emu::yield(); }
// Atomics: a fiber is switched only at a barrier, never inside these, so a plain
// read-modify-write is atomic with respect to every other thread of the emulated grid.
inline unsigned long long atomicCAS(unsigned long long* p, unsigned long long cmp, unsigned long long v) {
  const unsigned long long old = *p;
  if (old == cmp) *p = v;
  return old;
}
template <class T> T atomicAdd(T* p, T v) {
  const T old = *p;
  *p = old + v;
  return old;
}
inline long long atomicMax(long long* p, long long v) {
  const long long old = *p;
  if (v > old) *p = v;
  return old;
}
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

constexpr const char* kMarker = "extern \"C\" __global__";
constexpr char kMagic[] = "STRIDER-EMU-IMAGE";  // with its NUL, 18 bytes

std::string compiler() {
  const char* cxx = std::getenv("CXX");
  return cxx && *cxx ? cxx : "c++";
}

std::string quoted(const std::string& path) {
  std::string out = "'";
  for (char c : path) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

bool is_word(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

}  // namespace

std::string emu_unavailable() {
  if (std::system((compiler() + " --version > /dev/null 2>&1").c_str()) != 0) return "no host C++ compiler (" + compiler() + ")";
  return "";
}

std::vector<EmuKernel> emu_kernels(const std::string& src) {
  std::vector<EmuKernel> out;
  for (size_t at = src.find(kMarker); at != std::string::npos; at = src.find(kMarker, at + 1)) {
    const size_t open = src.find_first_of("{;", at);
    const size_t close = src.rfind(')', open);
    if (open == std::string::npos || src[open] == ';' || close == std::string::npos || close < at) continue;  // a declaration
    // the name precedes the parameter list, the last parenthesized group before the body
    size_t lparen = close;
    for (int depth = 0; lparen > at; --lparen) {
      if (src[lparen] == ')') ++depth;
      if (src[lparen] == '(' && --depth == 0) break;
    }
    size_t end = lparen;
    while (end > at && std::isspace(static_cast<unsigned char>(src[end - 1]))) --end;
    size_t begin = end;
    while (begin > at && is_word(src[begin - 1])) --begin;
    size_t stop = open;
    for (int depth = 0; stop < src.size(); ++stop) {
      if (src[stop] == '{') ++depth;
      if (src[stop] == '}' && --depth == 0) break;
    }
    const std::string body = src.substr(open, stop - open);
    const bool barrier = body.find("__syncthreads") != std::string::npos || body.find("shfl_down") != std::string::npos;
    out.push_back({src.substr(begin, end - begin), barrier});
  }
  return out;
}

std::string emu_launch_symbol(const std::string& kernel) { return "strider_emu_launch_" + kernel; }

std::string emu_arity_symbol(const std::string& kernel) { return "strider_emu_arity_" + kernel; }

std::string emu_image(const std::string& so_bytes) {
  std::string image(kMagic, sizeof kMagic);
  for (int i = 0; i < 8; ++i) image += static_cast<char>(static_cast<uint64_t>(so_bytes.size()) >> (8 * i));
  return image + so_bytes;
}

bool emu_image_library(const void* image, std::string* so_bytes) {
  const auto* bytes = static_cast<const unsigned char*>(image);
  if (!bytes || std::memcmp(bytes, kMagic, sizeof kMagic) != 0) return false;
  uint64_t size = 0;
  for (int i = 0; i < 8; ++i) size |= static_cast<uint64_t>(bytes[sizeof kMagic + i]) << (8 * i);
  so_bytes->assign(reinterpret_cast<const char*>(bytes + sizeof kMagic + 8), size);
  return true;
}

namespace {

// Flags of every compile: no contraction, so a * b + c rounds twice, as on the device with
// -fmad=false.
constexpr const char* kFlags = " -std=c++17 -O1 -fPIC -ffp-contract=off -fno-strict-aliasing -w";

// The shim as a header in a directory of its own, precompiled once per process: parsing it (the
// standard headers it includes) is most of a small source's compile time. Where the compiler
// makes no usable precompiled header it reads the header itself: slower, the same code.
struct PrecompiledShim {
  std::string dir;
  PrecompiledShim() {
    dir = (std::filesystem::temp_directory_path() / "strider-cuda-emu-pch-XXXXXX").string();
    if (!mkdtemp(dir.data())) throw std::runtime_error("cannot create a directory in " + dir);
    std::ofstream(dir + "/strider_emu_shim.h") << "#pragma once\n" << kShim;
    const std::string cmd = compiler() + kFlags + " -x c++-header -o " + quoted(dir + "/strider_emu_shim.h.gch") + " " +
                            quoted(dir + "/strider_emu_shim.h") + " > /dev/null 2>&1";
    if (std::system(cmd.c_str()) != 0) std::filesystem::remove(dir + "/strider_emu_shim.h.gch");
  }
  ~PrecompiledShim() { std::filesystem::remove_all(dir); }
};

const PrecompiledShim& shim() {
  static const PrecompiledShim s;
  return s;
}

}  // namespace

void emu_build(const std::string& cuda_source, const std::string& so_path, const std::string& name) {
  std::string dir = (std::filesystem::temp_directory_path() / "strider-cuda-emu-XXXXXX").string();
  if (!mkdtemp(dir.data())) throw std::runtime_error("cannot create a directory in " + dir);
  std::string file = name;
  for (char& c : file)
    if (c == '"' || c == '\\' || c == '\n') c = '_';
  std::ofstream src(dir + "/source.cc");
  src << "#include \"strider_emu_shim.h\"\n#line 1 \"" << file << "\"\n" << cuda_source << "\n#line 1 \"strider_emu_launchers\"\n";
  for (const EmuKernel& k : emu_kernels(cuda_source))
    src << "extern \"C\" const int " << emu_arity_symbol(k.name) << " = strider_emu::arity(" << k.name << ");\n"
        << "extern \"C\" void " << emu_launch_symbol(k.name) << "(void* const* p, long long blocks, int threads) {\n"
        << "  strider_emu::launch([&] { strider_emu::call(" << k.name << ", p); }, blocks, threads, " << k.cooperative << ");\n}\n";
  src.close();
  const std::string cmd = compiler() + kFlags + " -shared -I" + quoted(shim().dir) + " -o " + quoted(so_path) + " " +
                          quoted(dir + "/source.cc") + " > " + quoted(dir + "/log") + " 2>&1";
  const int status = std::system(cmd.c_str());
  std::ifstream log(dir + "/log");
  std::stringstream text;
  text << log.rdbuf();
  std::filesystem::remove_all(dir);
  if (status != 0) throw std::runtime_error("the host compiler (" + compiler() + ") rejected " + file + ":\n" + text.str().substr(0, 8000));
}

}  // namespace strider::testing
