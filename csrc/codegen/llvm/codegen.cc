#include "codegen/llvm/codegen.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <stdexcept>

#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/DiagnosticPrinter.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Linker/Linker.h>
#include <llvm/Support/raw_ostream.h>

#include "codegen/llvm/emitter.h"
#include "codegen/llvm/jit.h"
#include "runtime/data_dependent.h"
#include "support/flags.h"

namespace strider {

namespace {

class LlvmStage final : public CompiledStage {
 public:
  // `code` holds the group's object, `ir` its module's text: shared by the group's stages (and
  // by stages of one text: `storages`, this one's in stage_storages' order, tells them apart)
  LlvmStage(std::shared_ptr<detail::JitCode> code, std::shared_ptr<const std::string> ir,
            const KernelBlob::Entry& entry, bool from_disk, const Stage& stage)
      : ir_(std::move(ir)), code_(std::move(code)), scratch_bytes_(entry.scratch_bytes), from_disk_(from_disk) {
    const std::vector<int> storages = detail::stage_storages(stage);
    storages_.assign(storages.begin(), storages.end());
    if (std::any_of(stage.ops.begin(), stage.ops.end(), joins_scalar_stage)) ops_ = stage.ops;
    entry_ = reinterpret_cast<Entry>(code_->lookup(entry.symbol));  // links the object
  }

  void run(char* const* bases) const override {
    std::unique_ptr<uint64_t[]> scratch(scratch_bytes_ ? new uint64_t[(scratch_bytes_ + 7) / 8] : nullptr);
    int64_t failed[2] = {0, 0};  // what a failing check reports (Emitter::fail_if)
    void* args[4] = {const_cast<char**>(bases), scratch.get(), const_cast<int64_t*>(storages_.data()), failed};
    const int32_t code = entry_(args);
    if (code == 0) return;
    if (code == 1) throw std::domain_error(kMayFailMessage);
    throw_check_failure(ops_.at(code - 2), failed[0], failed[1], bases);
  }

  const std::string& llvm_ir() const override { return *ir_; }
  bool from_disk() const override { return from_disk_; }

 private:
  using Entry = int32_t (*)(void**);
  std::shared_ptr<const std::string> ir_;
  std::shared_ptr<detail::JitCode> code_;
  std::vector<int64_t> storages_;  // where the storages its code names are among the bases
  std::vector<Op> ops_;            // the stage's ops where one may fail (joins_scalar_stage)
  Entry entry_ = nullptr;
  size_t scratch_bytes_;
  bool from_disk_;
};

// LLVM's remarks ("loop not vectorized: ...", printed to stderr by default) go to STRIDER_LOG=codegen.
void on_diagnostic(const llvm::DiagnosticInfo& info, void*) {
  if (!log_enabled("codegen")) return;
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::DiagnosticPrinterRawOStream printer(os);
  info.print(printer);
  log_line("codegen", "llvm: " + os.str());
}

std::string first_op(const Stage& s) {
  return s.op_ids.empty() ? std::string("stage") : "op" + std::to_string(s.op_ids.front());
}

std::string failed(const Stage& s, const std::exception& e) {
  return std::string("LLVM backend failed on the stage of ") + first_op(s) + ": " + e.what();
}

}  // namespace

bool llvm_backend_available() { return detail::Jit::get() != nullptr; }

namespace {

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// Each stage's function emitted into a module of its own (a refused stage leaves nothing behind)
// and linked into one; then the scalar ops, O3 and machine code once: the blob a cache stores.
// Stage i's entry function is symbols[i].
KernelBlob build(detail::Jit& jit, const Graph& g, const std::vector<const Stage*>& stages,
                 const std::vector<std::string>& symbols, Effort effort) {
  auto ctx = std::make_unique<llvm::LLVMContext>();
  ctx->setDiagnosticHandlerCallBack(on_diagnostic, nullptr, /*RespectFilters=*/true);
  auto module = std::make_unique<llvm::Module>(symbols.front(), *ctx);
  jit.prepare(*module);
  KernelBlob blob;
  blob.entries.resize(stages.size());
  detail::Emitter::ScalarCalls calls;
  detail::StagePlan widest;  // the plan linking sees: the widest vector width of the group
  std::map<std::string, size_t> emitted;  // symbol -> the first stage emitted with it
  for (size_t i = 0; i < stages.size(); ++i) {
    KernelBlob::Entry& e = blob.entries[i];
    if (auto same = emitted.find(symbols[i]); same != emitted.end()) {
      e = blob.entries[same->second];
      continue;
    }
    emitted[symbols[i]] = i;
    try {
      const detail::StagePlan plan = detail::make_plan(g, *stages[i], "LLVM");
      auto part = std::make_unique<llvm::Module>(symbols[i], *ctx);
      jit.prepare(*part);
      detail::Emitter emitter(g, plan, *part, jit.vector_math(), effort == Effort::kFull);
      emitter.emit(symbols[i]);
      std::string problems;
      llvm::raw_string_ostream os(problems);
      if (llvm::verifyModule(*part, &os)) throw std::logic_error("it emitted invalid IR: " + os.str());
      for (const auto& [name, type] : emitter.scalar_calls())
        if (!calls.emplace(name, type).second && calls[name] != type)
          throw std::logic_error(name + " called with two signatures");
      if (llvm::Linker::linkModules(*module, std::move(part))) throw std::logic_error("linking the stage's module failed");
      widest.vector_width = std::max(widest.vector_width, plan.vector_width);
      e.symbol = symbols[i];
      e.scratch_bytes = emitter.scratch_bytes();
    } catch (const std::invalid_argument& ex) {
      e.refused = ex.what();
    } catch (const std::exception& ex) {
      // a bug here, in this stage alone: the reference executor runs it
      e.refused = failed(*stages[i], ex);
    }
  }
  if (std::all_of(blob.entries.begin(), blob.entries.end(), [](const KernelBlob::Entry& e) { return e.symbol.empty(); }))
    return blob;  // every stage refused: no module to compile
  detail::Emitter(g, widest, *module, jit.vector_math()).link_scalar_ops(calls);
  jit.optimize(*module, effort);
  detail::drop_unused_vector_math(*module);
  if (effort == Effort::kFull) {  // (a quick kernel's is never read: its full one replaces it)
    llvm::raw_string_ostream irs(blob.ir);
    module->print(irs, nullptr);
  }
  blob.object = jit.emit_object(*module, effort);
  return blob;
}

// The group's kernels from a blob (an entry per stage): the object linked once, each entry
// looked up in it.
CompiledGroup load(detail::Jit& jit, const KernelBlob& blob, bool from_disk, const std::vector<const Stage*>& stages) {
  CompiledGroup out;
  std::shared_ptr<detail::JitCode> code;
  if (!blob.object.empty()) code = jit.add_object(blob.object);
  auto ir = std::make_shared<const std::string>(blob.ir);
  for (size_t i = 0; i < blob.entries.size(); ++i) {
    const KernelBlob::Entry& e = blob.entries[i];
    out.kernels.push_back(e.symbol.empty() ? nullptr
                                           : std::make_unique<LlvmStage>(code, ir, e, from_disk, *stages[i]));
    out.refused.push_back(e.refused);
  }
  return out;
}

std::string ops_text(const std::vector<const Stage*>& stages) {
  std::string out;
  for (const Stage* s : stages) out += (out.empty() ? "" : ", ") + first_op(*s) + " (" + std::to_string(s->ops.size()) + " ops)";
  return out;
}

CompiledGroup compile(detail::Jit& jit, const Graph& g, const std::vector<const Stage*>& stages, DiskCache* cache,
                      Effort effort) {
  const auto start = std::chrono::steady_clock::now();
  const CacheKey key = stage_cache_key(g, stages);
  log_line("cache", "key " + key.digest().substr(0, 16) + ": " + key.summary());
  if (cache) {
    std::optional<KernelBlob> blob = cache->load(key);
    if (blob && blob->entries.size() == stages.size()) {
      try {
        CompiledGroup out = load(jit, *blob, true, stages);
        log_line("codegen", "loaded " + g.name + " " + ops_text(stages) + " from the disk cache in " +
                                std::to_string(ms_since(start)) + " ms");
        return out;
      } catch (const std::exception& e) {
        // intact bytes that LLVM cannot link (a foreign object): compile and replace them
        log_line("cache", std::string("could not link the entry (") + e.what() + "): recompiling");
      }
    }
  }
  // a stage's entry is named by its own key (the group's common parts and its stage part): the
  // same stage is the same symbol in every process (each object is linked in a JITDylib of its
  // own, so one process may hold it twice)
  const auto& parts = key.parts();
  const size_t common = parts.size() - stages.size();
  std::vector<std::string> symbols;
  for (size_t i = 0; i < stages.size(); ++i) {
    CacheKey own;
    for (size_t k = 0; k < common; ++k) own.add(parts[k].first, parts[k].second);
    own.add(parts[common + i].first, parts[common + i].second);
    symbols.push_back("strider_" + own.digest().substr(0, 16));
  }
  const KernelBlob blob = build(jit, g, stages, symbols, effort);
  CompiledGroup out = load(jit, blob, false, stages);
  if (cache && effort == Effort::kFull) cache->store(key, blob);  // once it links
  log_line("codegen", std::string(effort != Effort::kFull ? "quickly " : "") + "compiled " + g.name + " " +
                          ops_text(stages) + " in " + std::to_string(ms_since(start)) + " ms");
  return out;
}

}  // namespace

CompiledGroup compile_stage_group(const Graph& g, const std::vector<const Stage*>& stages, DiskCache* cache,
                                  Effort effort) {
  detail::Jit* jit = detail::Jit::get();
  if (!jit) {
    CompiledGroup out;
    out.kernels.resize(stages.size());
    out.refused.assign(stages.size(), "the LLVM backend cannot target this host");
    return out;
  }
  if (stages.empty()) return {};
  try {
    return compile(*jit, g, stages, cache, effort);
  } catch (const std::exception& e) {
    if (stages.size() == 1) {
      CompiledGroup out;
      out.kernels.resize(1);
      out.refused.push_back(failed(*stages[0], e));
      return out;
    }
    // LLVM failed on the module: alone, only the stage it fails on is refused
    log_line("codegen", std::string("compiling ") + std::to_string(stages.size()) + " stages together failed (" +
                            e.what() + "): one at a time");
    CompiledGroup out;
    for (const Stage* s : stages) {
      CompiledGroup one = compile_stage_group(g, {s}, cache, effort);
      out.kernels.push_back(std::move(one.kernels[0]));
      out.refused.push_back(std::move(one.refused[0]));
    }
    return out;
  }
}

std::unique_ptr<CompiledStage> compile_stage(const Graph& g, const Stage& s, DiskCache* cache, Effort effort) {
  CompiledGroup one = compile_stage_group(g, {&s}, cache, effort);
  if (!one.kernels[0]) throw std::invalid_argument(one.refused[0]);
  return std::move(one.kernels[0]);
}

int host_vector_width(DType t) {
  detail::Jit* jit = detail::Jit::get();
  const int bits = jit ? jit->vector_bits() : 0;
  return std::max<int>(1, bits / (8 * static_cast<int>(itemsize(t))));
}

namespace {
constexpr std::pair<detail::Jit::VectorCompress, const char*> kCompressNames[] = {
    {detail::Jit::VectorCompress::kNone, "none"},
    {detail::Jit::VectorCompress::kPermute, "avx2"},
    {detail::Jit::VectorCompress::kCompressStore, "avx512"}};
}  // namespace

std::string vector_compress() {
  detail::Jit* jit = detail::Jit::get();
  for (auto [how, name] : kCompressNames)
    if (jit && jit->vector_compress() == how) return name;
  return "none";
}

bool use_vector_compress(const std::string& how) {
  detail::Jit* jit = detail::Jit::get();
  for (auto [kind, name] : kCompressNames)
    if (how == name) return jit ? jit->set_vector_compress(kind) : kind == detail::Jit::VectorCompress::kNone;
  return false;
}

}  // namespace strider
