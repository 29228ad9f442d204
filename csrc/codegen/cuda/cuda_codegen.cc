#include "codegen/cuda/cuda_codegen.h"

#include <stdexcept>

#include "codegen/cuda/cuda_emitter.h"
#include "runtime/cuda_loader.h"
#include "support/flags.h"
#include "schedule/legality.h"

#ifndef STRIDER_VERSION
#error "CMakeLists.txt defines STRIDER_VERSION (project version) for this file"
#endif
#ifndef STRIDER_CUDA_CODEGEN_ID
#error "CMakeLists.txt defines STRIDER_CUDA_CODEGEN_ID (a hash of the CUDA backend's sources) for this file"
#endif

namespace strider {

namespace {

std::string codegen_id() { return STRIDER_CUDA_CODEGEN_ID; }

std::string options_text() {
  std::string out;
  for (const std::string& o : cuda_compile_options()) out += (out.empty() ? "" : " ") + o;
  return out;
}

// compute_at groups are a CPU schedule (rows in cache, temporaries in stack slabs): here every
// stage is its own kernel, run in stage order, with its temporaries in device memory.
Stage standalone(const Stage& s) {
  Stage t = s;
  t.computed_in = -1;
  t.computed_at.clear();
  t.shared_loops = 0;
  t.folded.clear();
  return t;
}

// The code a stage's kernel holds: its text, the storages it names (its parameters are theirs,
// in the order of their ids) and the op id a data-dependent op's kernel writes into the error
// record (the same stage in two functions may be two ops: each names its own).
std::string kernel_text(const Graph& g, const Stage& s) {
  std::string text = detail::stage_text(g, s) + "storages";
  for (int sid : detail::stage_storages(s)) text += " " + std::to_string(sid);
  text += "\n";
  if (s.ops.size() == 1 && runs_in_library(s.ops[0])) text += "error record op " + std::to_string(s.op_ids[0]) + "\n";
  return text;
}

}  // namespace

CudaStage emit_cuda_stage(const Graph& g, const Stage& stage) {
  const Stage s = standalone(stage);
  // named by the code it holds, as the LLVM backend's symbols: the same stage in any function or
  // process is the same kernel, whatever device it is compiled for
  const std::string name = "strider_" + sha256_hex("cuda " + codegen_id() + "\n" + kernel_text(g, s)).substr(0, 16);
  // a data-dependent op is alone in its stage (fuse_stages keeps it so); a take written over its
  // output's domain is a load of the stage's loop (the CPU's: make_plan decides)
  if (s.ops.size() == 1 && runs_in_library(s.ops[0]))
    return detail::emit_data_dependent(g, s.ops[0], s.op_ids[0], name);
  // its threads run the points in no order (a stage fused for Target::Cuda never has this)
  if (const std::string why = stage_point_conflict(s); !why.empty())
    throw std::invalid_argument("CUDA backend cannot compile the stage of op" + std::to_string(s.op_ids.front()) + ": " + why);
  const detail::StagePlan plan = detail::make_plan(g, s, "CUDA");
  return detail::CudaEmitter(g, plan, name).emit();
}

const std::vector<std::string>& cuda_compile_options() {
  // no FMA contraction: a * b + c rounds twice, as the reference computes it
  static const std::vector<std::string> kOptions{"-std=c++17", "-fmad=false"};
  return kOptions;
}

CacheKey cuda_group_cache_key(const Graph& g, const std::vector<const Stage*>& stages, const std::string& arch,
                              const std::string& nvrtc_version) {
  CacheKey key;
  key.add("strider", STRIDER_VERSION);
  key.add("codegen", "cuda-" + codegen_id());
  key.add("nvrtc", nvrtc_version);
  key.add("arch", arch);
  key.add("options", options_text());
  for (const Stage* s : stages) key.add("stage", kernel_text(g, standalone(*s)));
  return key;
}

std::string compile_cuda_group(const Graph& g, const std::vector<const Stage*>& stages,
                               const std::vector<const CudaStage*>& emitted, const std::string& arch,
                               bool* from_disk, DiskCache* cache) {
  *from_disk = false;
  if (stages.empty() || stages.size() != emitted.size())
    throw std::logic_error("compile_cuda_group takes one emitted stage per stage, at least one");
  const Nvrtc* nvrtc = Nvrtc::get();
  if (!nvrtc) throw std::runtime_error("cannot compile CUDA kernels: " + nvrtc_unavailable_reason());
  const CacheKey key = cuda_group_cache_key(g, stages, arch, nvrtc->version());
  log_line("cache", "key " + key.digest().substr(0, 16) + ": " + key.summary());
  auto holds_them = [&](const KernelBlob& blob) {
    if (blob.entries.size() != emitted.size()) return false;
    for (size_t i = 0; i < emitted.size(); ++i)
      if (blob.entries[i].symbol != emitted[i]->name) return false;
    return true;
  };
  if (cache) {
    std::optional<KernelBlob> blob = cache->load(key);
    if (blob && holds_them(*blob)) {
      *from_disk = true;
      return std::move(blob->object);
    }
  }
  std::string source;
  for (const CudaStage* e : emitted) source += e->source;
  const std::string file = emitted.front()->name + (emitted.size() > 1 ? "+" + std::to_string(emitted.size() - 1) : "") + ".cu";
  std::string cubin = nvrtc->compile_cubin(source, file, arch, cuda_compile_options());
  if (cache) {
    KernelBlob blob;
    for (const CudaStage* e : emitted) blob.entries.push_back({e->name, static_cast<uint64_t>(e->scratch_bytes), ""});
    blob.object = cubin;
    blob.ir = source;
    cache->store(key, blob);
  }
  return cubin;
}

CudaCompiled compile_cuda_stage(const Graph& g, const Stage& s, const std::string& arch, DiskCache* cache) {
  CudaCompiled out;
  out.stage = emit_cuda_stage(g, s);
  out.cubin = compile_cuda_group(g, {&s}, {&out.stage}, arch, &out.from_disk, cache);
  return out;
}

}  // namespace strider
