#include "codegen/llvm/codegen.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/DiagnosticPrinter.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include "codegen/llvm/emitter.h"
#include "codegen/llvm/jit.h"
#include "support/flags.h"

namespace strider {

namespace {

class LlvmStage final : public CompiledStage {
 public:
  LlvmStage(const KernelBlob& blob, std::unique_ptr<detail::JitCode> code, bool from_disk)
      : ir_(blob.ir), code_(std::move(code)), scratch_bytes_(blob.scratch_bytes), from_disk_(from_disk) {
    entry_ = reinterpret_cast<Entry>(code_->lookup(blob.symbol));  // links the object
  }

  void run(char* const* bases) const override {
    std::unique_ptr<uint64_t[]> scratch(scratch_bytes_ ? new uint64_t[(scratch_bytes_ + 7) / 8] : nullptr);
    void* args[2] = {const_cast<char**>(bases), scratch.get()};
    if (entry_(args) != 0) throw std::domain_error(kMayFailMessage);
  }

  const std::string& llvm_ir() const override { return ir_; }
  bool from_disk() const override { return from_disk_; }

 private:
  using Entry = int32_t (*)(void**);
  std::string ir_;
  std::unique_ptr<detail::JitCode> code_;
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

}  // namespace

bool llvm_backend_available() { return detail::Jit::get() != nullptr; }

namespace {

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// IR, O3, machine code: the blob a cache stores. `symbol` names the entry function.
KernelBlob build(detail::Jit& jit, const Graph& g, const Stage& s, const std::string& symbol) {
  detail::StagePlan plan = detail::make_plan(g, s, "LLVM");
  auto ctx = std::make_unique<llvm::LLVMContext>();
  ctx->setDiagnosticHandlerCallBack(on_diagnostic, nullptr, /*RespectFilters=*/true);
  auto module = std::make_unique<llvm::Module>(symbol, *ctx);
  jit.prepare(*module);
  detail::Emitter emitter(g, plan, *module, jit.vector_math());
  emitter.emit(symbol);
  std::string problems;
  llvm::raw_string_ostream os(problems);
  if (llvm::verifyModule(*module, &os)) throw std::logic_error("it emitted invalid IR: " + os.str());
  jit.optimize(*module);
  detail::drop_unused_vector_math(*module);
  KernelBlob blob;
  blob.symbol = symbol;
  blob.scratch_bytes = emitter.scratch_bytes();
  llvm::raw_string_ostream irs(blob.ir);
  module->print(irs, nullptr);
  irs.flush();
  blob.object = jit.emit_object(*module);
  return blob;
}

std::unique_ptr<CompiledStage> compile(detail::Jit& jit, const Graph& g, const Stage& s, DiskCache* cache) {
  const auto start = std::chrono::steady_clock::now();
  const CacheKey key = stage_cache_key(g, s);
  const std::string digest = key.digest();
  log_line("cache", "key " + digest.substr(0, 16) + ": " + key.summary());
  if (cache) {
    if (std::optional<KernelBlob> blob = cache->load(key)) {
      try {
        auto stage = std::make_unique<LlvmStage>(*blob, jit.add_object(blob->object), true);
        log_line("codegen", "loaded " + g.name + " " + first_op(s) + " from the disk cache in " +
                                std::to_string(ms_since(start)) + " ms");
        return stage;
      } catch (const std::exception& e) {
        // intact bytes that LLVM cannot link (a foreign object): compile and replace them
        log_line("cache", std::string("could not link the entry (") + e.what() + "): recompiling");
      }
    }
  }
  // named by the key: the same stage is the same symbol in every process (each object is linked
  // in a JITDylib of its own, so one process may hold it twice)
  KernelBlob blob = build(jit, g, s, "strider_" + digest.substr(0, 16));
  auto stage = std::make_unique<LlvmStage>(blob, jit.add_object(blob.object), false);
  if (cache) cache->store(key, blob);  // once it links
  log_line("codegen", "compiled " + g.name + " " + first_op(s) + " (" + std::to_string(s.ops.size()) + " ops) in " +
                          std::to_string(ms_since(start)) + " ms");
  return stage;
}

}  // namespace

std::unique_ptr<CompiledStage> compile_stage(const Graph& g, const Stage& s, DiskCache* cache) {
  detail::Jit* jit = detail::Jit::get();
  if (!jit) throw std::invalid_argument("the LLVM backend cannot target this host");
  try {
    return compile(*jit, g, s, cache);
  } catch (const std::invalid_argument&) {
    throw;
  } catch (const std::exception& e) {
    // a failure of LLVM (or a bug here) still leaves the reference executor to run the stage
    throw std::invalid_argument("LLVM backend failed on the stage of " + first_op(s) + ": " + e.what());
  }
}

int host_vector_width(DType t) {
  detail::Jit* jit = detail::Jit::get();
  const int bits = jit ? jit->vector_bits() : 0;
  return std::max<int>(1, bits / (8 * static_cast<int>(itemsize(t))));
}

}  // namespace strider
