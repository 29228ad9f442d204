// NVRTC on the CPU (libstrider_fake_nvrtc.so): nvrtc.h's entry points the runtime uses, compiling
// CUDA C with the emulation (emulation.h) into an image that libstrider_fake_cuda.so loads. It
// reports version 0.0, so no cache key of its images matches a real NVRTC's cubins.
#include <stdlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "cuda_fake/emulation.h"

#define FAKE_API extern "C" __attribute__((visibility("default")))

using nvrtcResult = int;

struct _nvrtcProgram {
  std::string source;
  std::string name;
  std::string log;
  std::string image;  // empty until compiled
};
using nvrtcProgram = _nvrtcProgram*;

namespace {

constexpr nvrtcResult kSuccess = 0;
constexpr nvrtcResult kInvalidInput = 3;
constexpr nvrtcResult kInvalidProgram = 4;
constexpr nvrtcResult kInvalidOption = 5;
constexpr nvrtcResult kCompilation = 6;
constexpr nvrtcResult kInternalError = 11;

bool arch_option(const std::string& o) {
  for (const char* prefix : {"-arch=sm_", "--gpu-architecture=sm_"})
    if (o.rfind(prefix, 0) == 0) {
      const std::string digits = o.substr(std::strlen(prefix));
      return !digits.empty() && digits.find_first_not_of("0123456789") == std::string::npos;
    }
  return false;
}

// The emulated library of `source`, as an image; throws std::runtime_error with the compiler's output.
std::string build_image(const std::string& source, const std::string& name) {
  std::string dir = (std::filesystem::temp_directory_path() / "strider-fake-nvrtc-XXXXXX").string();
  if (!mkdtemp(dir.data())) throw std::runtime_error("cannot create a directory in " + dir);
  struct Remove {
    std::string dir;
    ~Remove() { std::filesystem::remove_all(dir); }
  } remove{dir};
  strider::testing::emu_build(source, dir + "/image.so", name);
  std::ifstream so(dir + "/image.so", std::ios::binary);
  std::stringstream bytes;
  bytes << so.rdbuf();
  return strider::testing::emu_image(bytes.str());
}

}  // namespace

FAKE_API const char* nvrtcGetErrorString(nvrtcResult result) {
  static const char* const kNames[] = {
      "NVRTC_SUCCESS",
      "NVRTC_ERROR_OUT_OF_MEMORY",
      "NVRTC_ERROR_PROGRAM_CREATION_FAILURE",
      "NVRTC_ERROR_INVALID_INPUT",
      "NVRTC_ERROR_INVALID_PROGRAM",
      "NVRTC_ERROR_INVALID_OPTION",
      "NVRTC_ERROR_COMPILATION",
      "NVRTC_ERROR_BUILTIN_OPERATION_FAILURE",
      "NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION",
      "NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION",
      "NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID",
      "NVRTC_ERROR_INTERNAL_ERROR",
  };
  if (result < 0 || result >= static_cast<int>(sizeof kNames / sizeof *kNames)) return "NVRTC_ERROR unknown";
  return kNames[result];
}

FAKE_API nvrtcResult nvrtcVersion(int* major, int* minor) {
  if (!major || !minor) return kInvalidInput;
  *major = 0;
  *minor = 0;
  return kSuccess;
}

FAKE_API nvrtcResult nvrtcCreateProgram(nvrtcProgram* prog, const char* src, const char* name, int num_headers,
                                        const char* const* /*headers*/, const char* const* /*include_names*/) {
  if (!prog) return kInvalidProgram;
  // sources are self-contained: headers would need an include path the host compiler lacks
  if (!src || num_headers != 0) return kInvalidInput;
  *prog = new _nvrtcProgram{src, name ? name : "default_program", "", ""};
  return kSuccess;
}

FAKE_API nvrtcResult nvrtcDestroyProgram(nvrtcProgram* prog) {
  if (!prog || !*prog) return kInvalidProgram;
  delete *prog;
  *prog = nullptr;
  return kSuccess;
}

FAKE_API nvrtcResult nvrtcCompileProgram(nvrtcProgram prog, int num_options, const char* const* options) {
  if (!prog) return kInvalidProgram;
  if (num_options < 0 || (num_options > 0 && !options)) return kInvalidInput;
  bool arch = false;
  for (int i = 0; i < num_options; ++i) {
    if (!options[i] || options[i][0] != '-') return kInvalidOption;
    arch = arch || arch_option(options[i]);
  }
  if (!arch) return kInvalidOption;
  prog->image.clear();
  prog->log.clear();
  // the host's headers would hide an #include that NVRTC cannot resolve
  if (prog->source.find("#include") != std::string::npos) {
    prog->log = prog->name + ": #include in a source the emulated NVRTC compiles (sources are self-contained)\n";
    return kCompilation;
  }
  try {
    prog->image = build_image(prog->source, prog->name);
  } catch (const std::runtime_error& e) {
    prog->log = e.what();
    return kCompilation;
  } catch (...) {
    return kInternalError;
  }
  return kSuccess;
}

FAKE_API nvrtcResult nvrtcGetProgramLogSize(nvrtcProgram prog, size_t* size) {
  if (!prog) return kInvalidProgram;
  if (!size) return kInvalidInput;
  *size = prog->log.size() + 1;
  return kSuccess;
}

FAKE_API nvrtcResult nvrtcGetProgramLog(nvrtcProgram prog, char* log) {
  if (!prog) return kInvalidProgram;
  if (!log) return kInvalidInput;
  std::memcpy(log, prog->log.c_str(), prog->log.size() + 1);
  return kSuccess;
}

FAKE_API nvrtcResult nvrtcGetCUBINSize(nvrtcProgram prog, size_t* size) {
  if (!prog) return kInvalidProgram;
  if (!size || prog->image.empty()) return kInvalidInput;
  *size = prog->image.size();
  return kSuccess;
}

FAKE_API nvrtcResult nvrtcGetCUBIN(nvrtcProgram prog, char* cubin) {
  if (!prog) return kInvalidProgram;
  if (!cubin || prog->image.empty()) return kInvalidInput;
  std::memcpy(cubin, prog->image.data(), prog->image.size());
  return kSuccess;
}
