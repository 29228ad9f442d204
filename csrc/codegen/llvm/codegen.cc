#include "codegen/llvm/codegen.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <stdexcept>

#include <llvm/Analysis/TargetTransformInfo.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/DiagnosticPrinter.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include "codegen/llvm/emitter.h"
#include "codegen/llvm/jit.h"
#include "runtime/flags.h"

namespace strider {

namespace {

class LlvmStage final : public CompiledStage {
 public:
  LlvmStage(std::string ir, std::unique_ptr<detail::JitCode> code, const std::string& entry, size_t scratch_bytes)
      : ir_(std::move(ir)), code_(std::move(code)), scratch_bytes_(scratch_bytes) {
    entry_ = reinterpret_cast<Entry>(code_->lookup(entry));
  }

  void run(char* const* bases) const override {
    std::unique_ptr<uint64_t[]> scratch(scratch_bytes_ ? new uint64_t[(scratch_bytes_ + 7) / 8] : nullptr);
    void* args[2] = {const_cast<char**>(bases), scratch.get()};
    if (entry_(args) != 0) throw std::domain_error("Integers to negative integer powers are not allowed.");
  }

  const std::string& llvm_ir() const override { return ir_; }

 private:
  using Entry = int32_t (*)(void**);
  std::string ir_;
  std::unique_ptr<detail::JitCode> code_;
  Entry entry_ = nullptr;
  size_t scratch_bytes_;
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

std::unique_ptr<CompiledStage> compile(detail::Jit& jit, const Graph& g, const Stage& s) {
  const auto start = std::chrono::steady_clock::now();
  detail::StagePlan plan = detail::make_plan(g, s);

  static std::atomic<uint64_t> counter{0};
  const std::string name = "strider_stage" + std::to_string(counter++);
  auto ctx = std::make_unique<llvm::LLVMContext>();
  ctx->setDiagnosticHandlerCallBack(on_diagnostic, nullptr, /*RespectFilters=*/true);
  auto module = std::make_unique<llvm::Module>(name, *ctx);
  jit.prepare(*module);
  detail::Emitter emitter(g, plan, *module, jit.vector_math());
  emitter.emit(name);
  std::string problems;
  llvm::raw_string_ostream os(problems);
  if (llvm::verifyModule(*module, &os)) throw std::logic_error("it emitted invalid IR: " + os.str());
  jit.optimize(*module);
  detail::drop_unused_vector_math(*module);

  std::string ir;
  llvm::raw_string_ostream irs(ir);
  module->print(irs, nullptr);
  irs.flush();
  auto stage = std::make_unique<LlvmStage>(std::move(ir), jit.add(std::move(module), std::move(ctx)), name,
                                           emitter.scratch_bytes());
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  log_line("codegen", "compiled " + g.name + " " + first_op(s) + " (" + std::to_string(s.ops.size()) + " ops) in " +
                          std::to_string(ms) + " ms");
  return stage;
}

}  // namespace

std::unique_ptr<CompiledStage> compile_stage(const Graph& g, const Stage& s) {
  detail::Jit* jit = detail::Jit::get();
  if (!jit) throw std::invalid_argument("the LLVM backend cannot target this host");
  try {
    return compile(*jit, g, s);
  } catch (const std::invalid_argument&) {
    throw;
  } catch (const std::exception& e) {
    // a failure of LLVM (or a bug here) still leaves the reference executor to run the stage
    throw std::invalid_argument("LLVM backend failed on the stage of " + first_op(s) + ": " + e.what());
  }
}

int host_vector_width(DType t) {
  static const int bits = [] {
    detail::Jit* jit = detail::Jit::get();
    if (!jit) return 0;
    llvm::LLVMContext ctx;
    llvm::Module m("probe", ctx);
    jit->prepare(m);
    auto* f = llvm::Function::Create(llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), false),
                                     llvm::Function::ExternalLinkage, "probe", m);
    llvm::TargetTransformInfo tti = jit->target_machine().getTargetTransformInfo(*f);
    return static_cast<int>(tti.getRegisterBitWidth(llvm::TargetTransformInfo::RGK_FixedWidthVector).getFixedValue());
  }();
  return std::max<int>(1, bits / (8 * static_cast<int>(itemsize(t))));
}

}  // namespace strider
