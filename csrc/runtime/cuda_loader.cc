#include "runtime/cuda_loader.h"

#include <dlfcn.h>

#include <cstdlib>
#include <stdexcept>

namespace strider {

// The few NVRTC and driver declarations used, as nvrtc.h and cuda.h give them (C ABI).
using nvrtcResult = int;
using nvrtcProgram = struct _nvrtcProgram*;
using CUresult = int;
using CUdevice = int;
constexpr CUresult kCudaErrorNoDevice = 100;                // CUDA_ERROR_NO_DEVICE
constexpr int kAttributeComputeCapabilityMajor = 75;        // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
constexpr int kAttributeComputeCapabilityMinor = 76;        // ... _MINOR

struct Nvrtc::Api {
  const char* (*GetErrorString)(nvrtcResult);
  nvrtcResult (*Version)(int*, int*);
  nvrtcResult (*CreateProgram)(nvrtcProgram*, const char*, const char*, int, const char* const*, const char* const*);
  nvrtcResult (*DestroyProgram)(nvrtcProgram*);
  nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char* const*);
  nvrtcResult (*GetProgramLogSize)(nvrtcProgram, size_t*);
  nvrtcResult (*GetProgramLog)(nvrtcProgram, char*);
  nvrtcResult (*GetCUBINSize)(nvrtcProgram, size_t*);
  nvrtcResult (*GetCUBIN)(nvrtcProgram, char*);
};

namespace {

// Resolves `name` into `fn`; false (with the name in `missing`) when the library lacks it.
template <typename F>
bool resolve(void* lib, const char* name, F& fn, std::string* missing) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  if (!fn && missing->empty()) *missing = name;
  return fn != nullptr;
}

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// The driver under `name`, initialized, with its device count; the reason when unusable.
// The handle is never closed: unloading libcuda while it may hold contexts is unsafe.
std::string open_driver(const std::string& name, CudaDriver* d) {
  void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) return "no NVIDIA driver (" + name + " not found)";
  std::string missing;
  resolve(lib, "cuInit", d->Init, &missing);
  resolve(lib, "cuGetErrorString", d->GetErrorString, &missing);
  resolve(lib, "cuDeviceGetCount", d->DeviceGetCount, &missing);
  resolve(lib, "cuDeviceGet", d->DeviceGet, &missing);
  resolve(lib, "cuDeviceGetAttribute", d->DeviceGetAttribute, &missing);
  resolve(lib, "cuDevicePrimaryCtxRetain", d->DevicePrimaryCtxRetain, &missing);
  resolve(lib, "cuCtxSetCurrent", d->CtxSetCurrent, &missing);
  resolve(lib, "cuMemAllocAsync", d->MemAllocAsync, &missing);
  resolve(lib, "cuMemFreeAsync", d->MemFreeAsync, &missing);
  resolve(lib, "cuMemcpyHtoDAsync_v2", d->MemcpyHtoDAsync, &missing);
  resolve(lib, "cuMemcpyDtoHAsync_v2", d->MemcpyDtoHAsync, &missing);
  resolve(lib, "cuMemsetD8Async", d->MemsetD8Async, &missing);
  resolve(lib, "cuStreamCreate", d->StreamCreate, &missing);
  resolve(lib, "cuStreamSynchronize", d->StreamSynchronize, &missing);
  resolve(lib, "cuModuleLoadData", d->ModuleLoadData, &missing);
  resolve(lib, "cuModuleGetFunction", d->ModuleGetFunction, &missing);
  resolve(lib, "cuLaunchKernel", d->LaunchKernel, &missing);
  resolve(lib, "cuPointerGetAttribute", d->PointerGetAttribute, &missing);
  if (!missing.empty()) return "the NVIDIA driver " + name + " lacks " + missing;
  const CUresult init = d->Init(0);
  if (init == kCudaErrorNoDevice) return "the NVIDIA driver found no CUDA device";
  if (init != 0) {
    const char* text = nullptr;
    d->GetErrorString(init, &text);
    return "the NVIDIA driver failed to initialize (" + std::string(text ? text : "error " + std::to_string(init)) + ")";
  }
  if (d->DeviceGetCount(&d->devices) != 0 || d->devices < 1) return "the NVIDIA driver found no CUDA device";
  return "";
}

// $STRIDER_CUDA_DRIVER, else the driver's own name
std::string driver_name() {
  const char* path = std::getenv("STRIDER_CUDA_DRIVER");
  return path && *path ? path : "libcuda.so.1";
}

struct ProcessDriver {
  CudaDriver d{};
  std::string why;
};

const ProcessDriver& process_driver() {
  static const ProcessDriver pd = [] {
    ProcessDriver p;
    p.why = open_driver(driver_name(), &p.d);
    return p;
  }();
  return pd;
}

struct ProcessNvrtc {
  const Nvrtc* nvrtc = nullptr;
  std::string why;
};

const ProcessNvrtc& process_nvrtc() {
  static const ProcessNvrtc pn = [] {
    ProcessNvrtc p;
    p.nvrtc = Nvrtc::load(nvrtc_candidates(), &p.why);
    return p;
  }();
  return pn;
}

}  // namespace

std::vector<std::string> nvrtc_candidates() {
  // versioned names first: the runtime packages ship only those, the -dev ones add libnvrtc.so
  static const char* const kVersions[] = {".13", ".12", ".11.2", ""};
  std::vector<std::string> out;
  if (const char* path = std::getenv("STRIDER_NVRTC"); path && *path) out.push_back(path);
  std::vector<std::string> dirs;
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* root = std::getenv(var); root && *root) dirs.push_back(std::string(root) + "/lib64/");
  dirs.push_back("/usr/local/cuda/lib64/");
  dirs.push_back("");  // the dynamic loader's own search path
  for (const std::string& dir : dirs)
    for (const char* v : kVersions) out.push_back(dir + "libnvrtc.so" + v);
  return out;
}

const Nvrtc* Nvrtc::load(const std::vector<std::string>& candidates, std::string* why) {
  std::string lacking;
  for (const std::string& name : candidates) {
    void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) continue;
    auto* api = new Api{};
    std::string missing;
    resolve(lib, "nvrtcGetErrorString", api->GetErrorString, &missing);
    resolve(lib, "nvrtcVersion", api->Version, &missing);
    resolve(lib, "nvrtcCreateProgram", api->CreateProgram, &missing);
    resolve(lib, "nvrtcDestroyProgram", api->DestroyProgram, &missing);
    resolve(lib, "nvrtcCompileProgram", api->CompileProgram, &missing);
    resolve(lib, "nvrtcGetProgramLogSize", api->GetProgramLogSize, &missing);
    resolve(lib, "nvrtcGetProgramLog", api->GetProgramLog, &missing);
    resolve(lib, "nvrtcGetCUBINSize", api->GetCUBINSize, &missing);
    resolve(lib, "nvrtcGetCUBIN", api->GetCUBIN, &missing);
    int major = 0, minor = 0;
    if (missing.empty() && api->Version(&major, &minor) == 0) {
      // loaded once per process and kept: the API table and the library live as long as it
      auto* nvrtc = new Nvrtc();
      nvrtc->api_ = api;
      nvrtc->version_ = std::to_string(major) + "." + std::to_string(minor);
      return nvrtc;
    }
    if (lacking.empty()) lacking = name + " lacks " + (missing.empty() ? "a working nvrtcVersion" : missing);
    delete api;
    dlclose(lib);
  }
  *why = lacking.empty() ? "NVRTC not found (tried " + join(candidates) + ")" : "NVRTC unusable: " + lacking;
  return nullptr;
}

const Nvrtc* Nvrtc::get() { return process_nvrtc().nvrtc; }

std::string nvrtc_unavailable_reason() { return process_nvrtc().why; }

std::string Nvrtc::compile_cubin(const std::string& source, const std::string& file, const std::string& arch,
                                 const std::vector<std::string>& options) const {
  const Api& api = *api_;
  auto check = [&](nvrtcResult r, const char* what) {
    if (r != 0) throw std::runtime_error(std::string("NVRTC ") + what + " failed: " + api.GetErrorString(r));
  };
  nvrtcProgram prog = nullptr;
  check(api.CreateProgram(&prog, source.c_str(), file.c_str(), 0, nullptr, nullptr), "nvrtcCreateProgram");
  struct Destroy {
    const Api& api;
    nvrtcProgram* prog;
    ~Destroy() { api.DestroyProgram(prog); }
  } destroy{api, &prog};
  std::vector<std::string> all{"-arch=" + arch};
  all.insert(all.end(), options.begin(), options.end());
  std::vector<const char*> argv;
  for (const std::string& o : all) argv.push_back(o.c_str());
  const nvrtcResult r = api.CompileProgram(prog, static_cast<int>(argv.size()), argv.data());
  if (r != 0) {
    size_t n = 0;
    std::string log;
    if (api.GetProgramLogSize(prog, &n) == 0 && n > 1) {
      log.resize(n);
      api.GetProgramLog(prog, log.data());
      log.resize(n - 1);  // the terminating NUL
    }
    throw std::runtime_error("NVRTC " + version_ + " could not compile " + file + " for " + arch + " (" +
                             api.GetErrorString(r) + "):\n" + log);
  }
  size_t size = 0;
  check(api.GetCUBINSize(prog, &size), "nvrtcGetCUBINSize");
  std::string cubin(size, '\0');
  check(api.GetCUBIN(prog, cubin.data()), "nvrtcGetCUBIN");
  return cubin;
}

const CudaDriver* CudaDriver::get() {
  const ProcessDriver& pd = process_driver();
  return pd.why.empty() ? &pd.d : nullptr;
}

void CudaDriver::check(Result r, const char* what) const {
  if (r == 0) return;
  const char* text = nullptr;
  if (GetErrorString(r, &text) != 0 || !text) text = "unknown error";
  throw std::runtime_error(std::string("CUDA ") + what + " failed: " + text + " (error " + std::to_string(r) + ")");
}

std::string cuda_unavailable_reason(const std::string& driver) {
  CudaDriver d{};
  std::string why = driver == driver_name() ? process_driver().why : open_driver(driver, &d);
  if (why.empty()) why = nvrtc_unavailable_reason();
  return why;
}

std::string cuda_unavailable_reason() { return cuda_unavailable_reason(driver_name()); }

std::string cuda_device_arch(int ordinal) {
  const CudaDriver* d = CudaDriver::get();
  if (!d) return "";
  CUdevice dev = 0;
  int major = 0, minor = 0;
  if (d->DeviceGet(&dev, ordinal) != 0 || d->DeviceGetAttribute(&major, kAttributeComputeCapabilityMajor, dev) != 0 ||
      d->DeviceGetAttribute(&minor, kAttributeComputeCapabilityMinor, dev) != 0)
    return "";
  return "sm_" + std::to_string(major) + std::to_string(minor);
}

}  // namespace strider
