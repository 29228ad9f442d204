#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/kernel.h"
#include "runtime/program.h"

// Runs a lowered program on a CUDA device through the driver API (runtime/cuda_loader.h): every
// stage in order on one stream, each as the kernels a CudaBackend (codegen/cuda, which the driver
// hands in) compiles for the device's own architecture; modules kept in memory per device.
// A stage the CUDA backend refuses (overlapping accesses, a data-dependent op reading the storage
// it writes, a schedule with a tail: what it names) runs on the host on the reference executor,
// between copies of the storages its ops touch, so every program runs, with NumPy's semantics, at
// some speed. A failing check (or host stage) ends the call where the reference would.
namespace strider {

class CudaProgram {
 public:
  /// Compiles every stage of `program` with `backend` for device `ordinal` (but those whose
  /// kernels the device has loaded already) and loads it. Throws std::runtime_error when CUDA is
  /// unavailable, compiling fails or the driver does (naming the call and the driver's error text).
  CudaProgram(std::shared_ptr<const Program> program, int ordinal, const CudaBackend& backend);
  ~CudaProgram();

  /// One call. Per storage of the graph (Const ones excepted: uploaded once, here):
  /// - `device[s]` nonzero: device memory the caller owns (arrays on the GPU, results it allocated);
  /// - else `host[s]` non-null: host memory (NumPy arrays, runtime scalars, results to be), copied
  ///   to the device before the stages when an argument, and back after them when written;
  /// - else a temporary, allocated on the stream for the call when some stage needs its memory.
  /// Runs on `stream` (0: this device's own stream). Returns once host memory holds the results;
  /// a call with no host results returns as soon as its kernels are queued, unless a stage runs
  /// on the host or the error record must be read (raise_cuda_error throws what it holds).
  void run(const std::vector<void*>& host, const std::vector<uint64_t>& device, uintptr_t stream) const;

  int ordinal() const { return ordinal_; }
  const std::string& arch() const { return arch_; }
  /// Per stage: why it runs on the host (empty when its kernels run on the device).
  const std::vector<std::string>& fallbacks() const { return fallbacks_; }
  // Stages NVRTC compiled for this program, and those whose cubins came from the disk cache; a
  // stage of a group the device had loaded already (another program's) counts in neither.
  int compiled() const { return compiled_; }
  int disk_hits() const { return disk_hits_; }

  struct Kernel;  // one stage's launches (cuda_executor.cc)

 private:
  void run_on_host(size_t stage, const std::vector<uint64_t>& memory, uintptr_t stream) const;

  std::shared_ptr<const Program> program_;
  int ordinal_;
  std::string arch_;
  std::vector<std::shared_ptr<const Kernel>> kernels_;  // per stage; null: run on the host
  std::vector<const Op*> control_;  // per stage: its loop or branch op (Program::jumps), or null
  std::vector<std::string> fallbacks_;
  std::vector<bool> checks_;      // per stage: a Check op's kernels, after which the call reads the error record
  std::vector<uint64_t> consts_;  // per storage: the device copy of a Const storage, 0: none
  std::vector<bool> needed_;      // per storage: some stage reads or writes its memory
  std::vector<bool> written_;     // per storage: some op writes it (host copies come back)
  int64_t scratch_bytes_ = 0;     // the largest stage's scratch (stages run one after another)
  bool error_flag_ = false;       // some kernel may fill the error record
  int compiled_ = 0, disk_hits_ = 0;
};

/// Throws what a call's error record (kCudaErrorWords words, runtime/kernel.h) says failed:
/// std::domain_error for an integer power, else what the failing op throws on the host
/// (throw_check_failure); returns when it says nothing failed.
void raise_cuda_error(const Graph& g, const int64_t* record);

/// Device memory outside programs (results for callers whose arrays are of no library strider
/// knows; tests) on device `ordinal`: allocated and freed on the legacy default stream, which
/// orders them with the work of every blocking stream; copies synchronize (the host's memory).
uint64_t cuda_alloc(int ordinal, size_t bytes);
void cuda_free(int ordinal, uint64_t ptr);
void cuda_download(int ordinal, void* dst, uint64_t src, size_t bytes);
void cuda_upload(int ordinal, uint64_t dst, const void* src, size_t bytes);
/// Waits for the work queued on `stream` of device `ordinal` (1: the legacy default stream).
void cuda_synchronize(int ordinal, uintptr_t stream);
/// The device holding `ptr` (CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL); throws for host memory.
int cuda_pointer_ordinal(uint64_t ptr);

}  // namespace strider
