#include "cuda_emulator.h"

#include <dlfcn.h>
#include <stdlib.h>

#include <filesystem>
#include <set>
#include <stdexcept>

#include "cuda_fake/emulation.h"

namespace strider::testing {

std::string CudaEmulator::unavailable() { return emu_unavailable(); }

CudaEmulator::CudaEmulator(const std::vector<CudaStage>& stages) : stages_(stages) {
  char name[] = "/tmp/strider-cuda-emu-XXXXXX";
  if (!mkdtemp(name)) throw std::runtime_error("cannot create a directory in /tmp");
  dir_ = name;
  std::string source;
  std::set<std::string> sources;  // a stage given twice is compiled once (named by its code)
  for (const CudaStage& s : stages_)
    if (sources.insert(s.name).second) source += s.source;
  emu_build(source, dir_ + "/stages.so", "stages.cu");
  lib_ = dlopen((dir_ + "/stages.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib_) throw std::runtime_error(std::string("dlopen: ") + dlerror());
}

CudaEmulator::~CudaEmulator() {
  if (lib_) dlclose(lib_);
  std::filesystem::remove_all(dir_);
}

std::array<int64_t, kCudaErrorWords> CudaEmulator::run(size_t i, const std::vector<char*>& bases) const {
  const CudaStage& s = stages_.at(i);
  std::array<int64_t, kCudaErrorWords> err{};
  // scratch as the device leaves it: whatever an earlier stage wrote
  std::vector<uint64_t> scratch((s.scratch_bytes + 7) / 8, 0xA5A5A5A5A5A5A5A5ull);
  std::vector<void*> args;
  for (int p : s.params) args.push_back(bases.at(p));
  if (s.error_flag) args.push_back(err.data());
  if (s.scratch_bytes) args.push_back(scratch.data());
  std::vector<void*> params;  // pointers to the arguments, as the driver takes them
  for (void*& a : args) params.push_back(&a);
  for (const CudaLaunch& l : s.launches) {
    auto launch = reinterpret_cast<EmuLaunch>(dlsym(lib_, emu_launch_symbol(l.kernel).c_str()));
    if (!launch) throw std::runtime_error("no kernel " + l.kernel);
    launch(params.data(), l.blocks, l.threads);
  }
  return err;
}

}  // namespace strider::testing
