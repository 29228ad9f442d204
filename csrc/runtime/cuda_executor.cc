#include "runtime/cuda_executor.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>

#include "runtime/cuda_loader.h"
#include "runtime/data_dependent.h"
#include "runtime/executor.h"
#include "runtime/thread_pool.h"
#include "support/flags.h"

namespace strider {

namespace {

using Driver = CudaDriver;
constexpr int64_t kAlign = 256;  // cudaMalloc's alignment: vector loads of any view stay aligned
// host arguments up to this size are gathered into one upload per call (scalars, small arrays);
// larger ones are copied on their own rather than through an extra host copy
constexpr int64_t kStagedBytes = 64 << 10;
// CU_STREAM_LEGACY: the default stream every blocking stream waits for and is waited for by
const auto kLegacyStream = reinterpret_cast<Driver::Stream>(0x1);

int64_t aligned(int64_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

const Driver& driver() {
  const Driver* d = Driver::get();
  if (!d) throw std::runtime_error("CUDA is unavailable: " + cuda_unavailable_reason());
  return *d;
}

// One device: its primary context (the one CuPy and PyTorch use, so their memory and streams
// are ours too), a stream for calls that bring none, and the kernels loaded on it by name (a
// name is a hash of the code, so programs share them; kept for the process's life).
struct DeviceState {
  Driver::Context ctx = nullptr;
  Driver::Stream stream = nullptr;
  std::string arch;
  std::mutex mu;
  std::map<std::string, Driver::Function> functions;
};

DeviceState& device_state(int ordinal) {
  static std::mutex mu;
  static std::map<int, std::unique_ptr<DeviceState>> states;
  const Driver& d = driver();
  std::lock_guard<std::mutex> lock(mu);
  std::unique_ptr<DeviceState>& st = states[ordinal];
  if (st) return *st;
  if (ordinal < 0 || ordinal >= d.devices)
    throw std::runtime_error("CUDA device " + std::to_string(ordinal) + " does not exist (" +
                             std::to_string(d.devices) + " found)");
  auto s = std::make_unique<DeviceState>();
  Driver::Device dev = 0;
  d.check(d.DeviceGet(&dev, ordinal), "cuDeviceGet");
  s->arch = cuda_device_arch(ordinal);
  if (s->arch.empty()) throw std::runtime_error("CUDA device " + std::to_string(ordinal) + " has no compute capability");
  d.check(d.DevicePrimaryCtxRetain(&s->ctx, dev), "cuDevicePrimaryCtxRetain");
  d.check(d.CtxSetCurrent(s->ctx), "cuCtxSetCurrent");
  d.check(d.StreamCreate(&s->stream, 0), "cuStreamCreate");
  st = std::move(s);
  return *st;
}

// The device's state with its context current on this thread.
DeviceState& current(int ordinal) {
  DeviceState& dev = device_state(ordinal);
  driver().check(driver().CtxSetCurrent(dev.ctx), "cuCtxSetCurrent");
  return dev;
}

Driver::DevicePtr at(Driver::DevicePtr base, int64_t offset) { return base + static_cast<Driver::DevicePtr>(offset); }

size_t bytes_of(const Storage& st) { return static_cast<size_t>(st.size * itemsize(st.dtype)); }

// Copies that skip empty storages (a zero-byte copy is an error for some drivers).
void upload(const Driver& d, Driver::DevicePtr dst, const void* src, size_t bytes, Driver::Stream s) {
  if (bytes) d.check(d.MemcpyHtoDAsync(dst, src, bytes, s), "cuMemcpyHtoDAsync");
}

void download(const Driver& d, void* dst, Driver::DevicePtr src, size_t bytes, Driver::Stream s) {
  if (bytes) d.check(d.MemcpyDtoHAsync(dst, src, bytes, s), "cuMemcpyDtoHAsync");
}

// The storages the ops read or write, run-time extents included.
std::set<int> storages_of(const Graph& g, const std::vector<int>& op_ids) {
  std::set<int> out;
  auto add = [&](const View& v) {
    out.insert(v.storage);
    for (int e : v.extents)
      if (e >= 0) out.insert(e);
  };
  for (int id : op_ids) {
    for (const View& v : g.ops[id].inputs) add(v);
    add(g.ops[id].output);
  }
  return out;
}

}  // namespace

struct CudaProgram::Kernel {
  CudaStage stage;
  std::vector<Driver::Function> functions;  // per launch
};

CudaProgram::CudaProgram(std::shared_ptr<const Program> program, int ordinal, const CudaBackend& backend)
    : program_(std::move(program)), ordinal_(ordinal) {
  const Driver& d = driver();
  DeviceState& dev = current(ordinal);
  arch_ = dev.arch;
  const Graph& g = program_->graph;
  const size_t n = g.storages.size();
  needed_.assign(n, false);
  written_.assign(n, false);
  consts_.assign(n, 0);
  for (const Op& op : g.ops) written_[op.output.storage] = true;
  const std::vector<Stage>& stages = program_->stages.stages;
  kernels_.resize(stages.size());
  fallbacks_.resize(stages.size());
  checks_.assign(stages.size(), false);
  control_.assign(stages.size(), nullptr);
  for (size_t i = 0; i < stages.size(); ++i) control_[i] = stages[i].control();  // run by the call's own loop
  std::vector<CudaStage> emitted(stages.size());
  std::vector<char> refused(stages.size(), 0);
  parallel_for(static_cast<int64_t>(stages.size()), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      if (control_[i]) continue;
      try {
        emitted[i] = backend.emit(g, stages[i]);
      } catch (const std::invalid_argument& e) {
        fallbacks_[i] = e.what();
        refused[i] = 1;
      }
    }
  });
  // The stages to compile, each kernel once. NVRTC pays tens of milliseconds a program, most of a
  // small stage's compile, and the prelude's parse: the stages compile as one program a thread of
  // the pool (NVRTC is thread-safe), cut in stage order into runs of about equal source length.
  // The groups depend on the program and the pool alone, so that each is the same disk-cache
  // entry in every process with as many threads.
  std::vector<size_t> todo;
  std::set<std::string> named;
  for (size_t i = 0; i < stages.size(); ++i)
    if (!control_[i] && !refused[i] && named.insert(emitted[i].name).second) todo.push_back(i);
  const size_t groups = std::min<size_t>(parallel_threads(), todo.size());
  std::vector<std::vector<size_t>> group(groups);
  size_t total = 0, done = 0;
  for (size_t i : todo) total += emitted[i].source.size();
  for (size_t i : todo) {
    group[std::min(groups - 1, done * groups / std::max<size_t>(total, 1))].push_back(i);
    done += emitted[i].source.size();
  }
  // a group whose kernels the device holds (another program's, a retrace's) is not compiled again
  {
    std::lock_guard<std::mutex> lock(dev.mu);
    for (std::vector<size_t>& members : group) {
      const bool loaded = std::all_of(members.begin(), members.end(), [&](size_t i) {
        const auto& launches = emitted[i].launches;
        return std::all_of(launches.begin(), launches.end(), [&](const CudaLaunch& l) { return dev.functions.count(l.kernel) > 0; });
      });
      if (loaded) members.clear();
    }
  }
  std::vector<std::string> cubins(groups);
  std::vector<char> from_disk(groups, 0);
  parallel_for(static_cast<int64_t>(groups), [&](int64_t begin, int64_t end) {
    for (int64_t j = begin; j < end; ++j) {
      if (group[j].empty()) continue;
      std::vector<const Stage*> ss;
      std::vector<const CudaStage*> es;
      for (size_t i : group[j]) {
        ss.push_back(&stages[i]);
        es.push_back(&emitted[i]);
      }
      bool disk = false;
      cubins[j] = backend.compile(g, ss, es, arch_, &disk);
      from_disk[j] = disk;
    }
  });
  std::unique_lock<std::mutex> lock(dev.mu);
  for (size_t j = 0; j < groups; ++j) {
    if (group[j].empty()) continue;
    Driver::Module module = nullptr;
    d.check(d.ModuleLoadData(&module, cubins[j].data()), "cuModuleLoadData");
    // every kernel of the group's stages is in its module: register those not loaded yet
    for (size_t i : group[j])
      for (const CudaLaunch& l : emitted[i].launches) {
        if (dev.functions.count(l.kernel)) continue;
        Driver::Function f = nullptr;
        d.check(d.ModuleGetFunction(&f, module, l.kernel.c_str()), "cuModuleGetFunction");
        dev.functions[l.kernel] = f;
      }
    (from_disk[j] ? disk_hits_ : compiled_) += static_cast<int>(group[j].size());
  }
  for (size_t i = 0; i < stages.size(); ++i) {
    if (control_[i]) continue;
    if (refused[i]) {
      log_line("cuda", "stage " + std::to_string(i) + " runs on the host: " + fallbacks_[i]);
      for (int st : storages_of(g, stages[i].op_ids))
        if (g.storages[st].kind != StorageKind::Const) needed_[st] = true;  // the host reads the graph's
      continue;
    }
    auto k = std::make_shared<Kernel>();
    for (const CudaLaunch& l : emitted[i].launches) k->functions.push_back(dev.functions.at(l.kernel));
    for (int s : emitted[i].params) needed_[s] = true;
    scratch_bytes_ = std::max(scratch_bytes_, emitted[i].scratch_bytes);
    error_flag_ = error_flag_ || emitted[i].error_flag;
    k->stage = std::move(emitted[i]);
    checks_[i] = std::any_of(stages[i].ops.begin(), stages[i].ops.end(), [](const Op& op) { return op_kind(op.code) == OpKind::Check; });
    kernels_[i] = std::move(k);
  }
  lock.unlock();
  // constants a stage reads from memory: uploaded once, for the program's life
  for (size_t s = 0; s < n; ++s) {
    const Storage& st = g.storages[s];
    if (st.kind != StorageKind::Const || !needed_[s]) continue;
    d.check(d.MemAllocAsync(&consts_[s], std::max<size_t>(st.data.size(), 1), dev.stream), "cuMemAllocAsync");
    upload(d, consts_[s], st.data.data(), st.data.size(), dev.stream);
  }
  d.check(d.StreamSynchronize(dev.stream), "cuStreamSynchronize");
}

CudaProgram::~CudaProgram() {
  const Driver* d = Driver::get();
  DeviceState& dev = device_state(ordinal_);
  if (d->CtxSetCurrent(dev.ctx) != 0) return;  // the driver is shutting down: it frees everything
  for (uint64_t p : consts_)
    if (p) d->MemFreeAsync(p, dev.stream);
}

void CudaProgram::run(const std::vector<void*>& host, const std::vector<uint64_t>& device, uintptr_t stream) const {
  const Driver& d = driver();
  DeviceState& dev = current(ordinal_);
  Driver::Stream s = stream ? reinterpret_cast<Driver::Stream>(stream) : dev.stream;
  const Graph& g = program_->graph;
  const size_t n = g.storages.size();
  // One allocation holds the call's device memory, each part 256-byte aligned: first the small
  // host arguments (runtime scalars above all) and the error flag, which one copy from a host
  // staging buffer fills (a copy from pageable memory costs microseconds of driver time each),
  // then large host arguments, temporaries and scratch.
  std::vector<int64_t> offset(n, -1);
  int64_t bytes = 0;
  auto place = [&](size_t i, int64_t size) {
    offset[i] = bytes;
    bytes += aligned(std::max<int64_t>(size, 1));
  };
  auto needs_memory = [&](size_t i) { return needed_[i] && !consts_[i] && !(i < device.size() && device[i]); };
  auto staged = [&](size_t i) {
    return g.storages[i].kind == StorageKind::Arg && host[i] &&
           static_cast<int64_t>(bytes_of(g.storages[i])) <= kStagedBytes;
  };
  int64_t staged_bytes = 0;  // up to the end of the last staged part: no padding goes up
  for (size_t i = 0; i < n; ++i) {
    if (!needs_memory(i)) continue;
    if (g.storages[i].kind == StorageKind::Arg && !host[i])
      throw std::invalid_argument("no memory given for argument storage %s" + std::to_string(i));
    if (!staged(i)) continue;
    place(i, static_cast<int64_t>(bytes_of(g.storages[i])));
    staged_bytes = offset[i] + static_cast<int64_t>(bytes_of(g.storages[i]));
  }
  const int64_t err_at = bytes;
  if (error_flag_) {
    bytes += kAlign;
    staged_bytes = err_at + static_cast<int64_t>(kCudaErrorWords * sizeof(int64_t));
  }
  for (size_t i = 0; i < n; ++i)
    if (needs_memory(i) && !staged(i)) place(i, static_cast<int64_t>(bytes_of(g.storages[i])));
  const int64_t scratch_at = bytes;
  bytes += aligned(scratch_bytes_);
  Driver::DevicePtr arena = 0;
  if (bytes) d.check(d.MemAllocAsync(&arena, static_cast<size_t>(bytes), s), "cuMemAllocAsync");
  struct Free {
    const Driver& d;
    Driver::DevicePtr p;
    Driver::Stream s;
    ~Free() {
      if (p) d.MemFreeAsync(p, s);
    }
  } free_arena{d, arena, s};

  thread_local std::vector<char> staging;
  staging.assign(static_cast<size_t>(staged_bytes), 0);  // the error record starts cleared
  std::vector<uint64_t> memory(n, 0);
  bool downloads = false;
  for (size_t i = 0; i < n; ++i) {
    if (consts_[i]) memory[i] = consts_[i];
    else if (i < device.size() && device[i]) memory[i] = device[i];
    else if (offset[i] >= 0) memory[i] = at(arena, offset[i]);
    if (offset[i] < 0 || !host[i]) continue;
    if (g.storages[i].kind == StorageKind::Arg) {
      if (staged(i)) std::memcpy(staging.data() + offset[i], host[i], bytes_of(g.storages[i]));
      else upload(d, memory[i], host[i], bytes_of(g.storages[i]), s);
    }
    downloads = downloads || written_[i];
  }
  // the driver has copied pageable memory away when the call returns: staging may be reused
  upload(d, arena, staging.data(), staging.size(), s);

  const Driver::DevicePtr scratch = at(arena, scratch_at), err = at(arena, err_at);
  // A failing check stops the call where the reference stops: the stages after it do not run,
  // the writes before it reach the caller (so a check waits for its kernels and reads the record).
  int64_t record[kCudaErrorWords] = {};
  std::exception_ptr thrown;  // what a stage run on the host threw
  const std::vector<int>& jumps = program_->jumps;
  for (size_t k = 0; k < kernels_.size(); ++k) {
    if (const Op* c = control_[k]) {
      // a loop or branch driven from the host: its bool read back where it decides (correct
      // before fast: one round trip per trip)
      bool jump = true;
      if (c->code == OpCode::loop_while || c->code == OpCode::branch_if) {
        bool holds = false;
        const View& v = c->inputs[0];
        const Storage& st = g.storages[v.storage];
        if (st.kind == StorageKind::Const) {  // `while True:` (its exits are breaks)
          holds = st.data[v.offset] != 0;
        } else {
          download(d, &holds, memory[v.storage] + static_cast<uint64_t>(v.offset), 1, s);
          d.check(d.StreamSynchronize(s), "cuStreamSynchronize");
        }
        jump = !holds;
      }
      if (jump && jumps[k] >= 0) k = static_cast<size_t>(jumps[k]) - 1;
      continue;
    }
    if (!kernels_[k]) {
      try {
        run_on_host(k, memory, reinterpret_cast<uintptr_t>(s));
      } catch (...) {
        thrown = std::current_exception();
        break;
      }
      continue;
    }
    const Kernel& kernel = *kernels_[k];
    std::vector<void*> args;
    args.reserve(kernel.stage.params.size() + 2);
    for (int p : kernel.stage.params) args.push_back(&memory[p]);
    if (kernel.stage.error_flag) args.push_back(const_cast<Driver::DevicePtr*>(&err));
    if (kernel.stage.scratch_bytes) args.push_back(const_cast<Driver::DevicePtr*>(&scratch));
    for (size_t l = 0; l < kernel.functions.size(); ++l) {
      const CudaLaunch& launch = kernel.stage.launches[l];
      d.check(d.LaunchKernel(kernel.functions[l], static_cast<unsigned>(launch.blocks), 1, 1,
                             static_cast<unsigned>(launch.threads), 1, 1, 0, s, args.data(), nullptr),
              "cuLaunchKernel");
    }
    if (!checks_[k] || k + 1 == kernels_.size()) continue;  // the last stage's record is read below
    download(d, record, err, sizeof record, s);
    d.check(d.StreamSynchronize(s), "cuStreamSynchronize");
    if (record[0]) break;
  }
  for (size_t i = 0; i < n; ++i) {
    if (offset[i] < 0 || !host[i] || !written_[i]) continue;
    download(d, host[i], memory[i], bytes_of(g.storages[i]), s);
  }
  if (error_flag_ && !record[0]) download(d, record, err, sizeof record, s);  // as the last stage left it
  if (downloads || error_flag_) d.check(d.StreamSynchronize(s), "cuStreamSynchronize");
  if (thrown) std::rethrow_exception(thrown);
  raise_cuda_error(g, record);
}

void CudaProgram::run_on_host(size_t stage, const std::vector<uint64_t>& memory, uintptr_t stream) const {
  const Driver& d = driver();
  Driver::Stream s = reinterpret_cast<Driver::Stream>(stream);
  const Graph& g = program_->graph;
  const Stage& st = program_->stages.stages[stage];
  const std::set<int> touched = storages_of(g, st.op_ids);
  std::vector<std::vector<uint64_t>> copies;  // 8-byte aligned host memory for any dtype
  std::vector<void*> buffers(g.storages.size(), nullptr);
  for (int i : touched) {
    if (g.storages[i].kind == StorageKind::Const) continue;  // the executor reads the graph's data
    copies.emplace_back(bytes_of(g.storages[i]) / 8 + 1);
    buffers[i] = copies.back().data();
    download(d, buffers[i], memory[i], bytes_of(g.storages[i]), s);
  }
  d.check(d.StreamSynchronize(s), "cuStreamSynchronize");
  execute_ops(*program_, st.op_ids, buffers);
  for (int i : touched) {
    if (!buffers[i] || !written_[i]) continue;
    upload(d, memory[i], buffers[i], bytes_of(g.storages[i]), s);
  }
  // the copies' host memory is freed on return: the uploads must be done by then
  d.check(d.StreamSynchronize(s), "cuStreamSynchronize");
}

void raise_cuda_error(const Graph& g, const int64_t* record) {
  if (record[0] == 0) return;
  if (record[0] == kCudaFailedPower) throw std::domain_error(kMayFailMessage);
  const int64_t op = record[0] - kCudaFailedOp;
  if (op < 0 || op >= static_cast<int64_t>(g.ops.size()))
    throw std::logic_error("CUDA error record names no op: " + std::to_string(record[0]));
  // a check_assert's message is a constant: the graph's own bytes
  std::vector<char*> base(g.storages.size(), nullptr);
  for (size_t i = 0; i < g.storages.size(); ++i)
    if (g.storages[i].kind == StorageKind::Const) base[i] = const_cast<char*>(reinterpret_cast<const char*>(g.storages[i].data.data()));
  throw_check_failure(g.ops[op], record[2], record[3], base.data());
}

uint64_t cuda_alloc(int ordinal, size_t bytes) {
  current(ordinal);
  Driver::DevicePtr p = 0;
  driver().check(driver().MemAllocAsync(&p, std::max<size_t>(bytes, 1), kLegacyStream), "cuMemAllocAsync");
  return p;
}

void cuda_free(int ordinal, uint64_t ptr) {
  current(ordinal);
  driver().check(driver().MemFreeAsync(ptr, kLegacyStream), "cuMemFreeAsync");
}

void cuda_download(int ordinal, void* dst, uint64_t src, size_t bytes) {
  DeviceState& dev = current(ordinal);
  download(driver(), dst, src, bytes, dev.stream);
  driver().check(driver().StreamSynchronize(dev.stream), "cuStreamSynchronize");
}

void cuda_upload(int ordinal, uint64_t dst, const void* src, size_t bytes) {
  DeviceState& dev = current(ordinal);
  upload(driver(), dst, src, bytes, dev.stream);
  driver().check(driver().StreamSynchronize(dev.stream), "cuStreamSynchronize");
}

void cuda_synchronize(int ordinal, uintptr_t stream) {
  current(ordinal);
  driver().check(driver().StreamSynchronize(reinterpret_cast<Driver::Stream>(stream)), "cuStreamSynchronize");
}

int cuda_pointer_ordinal(uint64_t ptr) {
  constexpr int kAttributeDeviceOrdinal = 9;  // CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
  int ordinal = -1;
  driver().check(driver().PointerGetAttribute(&ordinal, kAttributeDeviceOrdinal, ptr), "cuPointerGetAttribute");
  return ordinal;
}

}  // namespace strider
