#include "codegen/llvm/jit.h"

#include <atomic>
#include <mutex>
#include <stdexcept>

#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/ExecutionEngine/Orc/CompileUtils.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/DynamicLibrary.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/TargetParser/Host.h>

#include "runtime/thread_pool.h"

namespace strider::detail {

namespace {

std::string message(llvm::Error e) { return llvm::toString(std::move(e)); }

template <typename T>
T take(llvm::Expected<T> v, const char* what) {
  if (!v) throw std::runtime_error(std::string(what) + ": " + message(v.takeError()));
  return std::move(*v);
}

// The kernels' way into the thread pool: body(args, begin, end) over chunks of [0, n); the error
// codes of the chunks are or-ed.
int32_t parallel_trampoline(int64_t n, int32_t (*body)(void*, int64_t, int64_t), void* args) {
  std::atomic<int32_t> err{0};
  parallel_for(n, [&](int64_t begin, int64_t end) { err.fetch_or(body(args, begin, end)); });
  return err.load();
}

class Code final : public JitCode {
 public:
  Code(llvm::orc::LLJIT& jit, llvm::orc::ResourceTrackerSP rt) : jit_(jit), rt_(std::move(rt)) {}
  ~Code() override {
    if (llvm::Error e = rt_->remove()) llvm::consumeError(std::move(e));
  }
  void* lookup(const std::string& name) override {
    auto addr = jit_.lookup(rt_->getJITDylib(), name);
    if (!addr) throw std::runtime_error("LLVM JIT could not compile " + name + ": " + message(addr.takeError()));
    return addr->toPtr<void*>();
  }

 private:
  llvm::orc::LLJIT& jit_;
  llvm::orc::ResourceTrackerSP rt_;
};

}  // namespace

struct Jit::State {
  llvm::orc::JITTargetMachineBuilder jtmb;
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::string triple;
  llvm::DataLayout layout{""};
};

Jit::~Jit() = default;

Jit* Jit::get() {
  static Jit* instance = []() -> Jit* {
    try {
      llvm::InitializeNativeTarget();
      llvm::InitializeNativeTargetAsmPrinter();
      auto jtmb = take(llvm::orc::JITTargetMachineBuilder::detectHost(), "detecting the host");
      jtmb.setCodeGenOptLevel(llvm::CodeGenOpt::Aggressive);
      // no FMA contraction: results must match the reference executor bit for bit
      jtmb.getOptions().AllowFPOpFusion = llvm::FPOpFusion::Strict;
      auto* j = new Jit();
      j->state_ = std::make_unique<State>(State{jtmb, nullptr, jtmb.getTargetTriple().str(), llvm::DataLayout("")});
      j->state_->jit = take(
          llvm::orc::LLJITBuilder()
              .setJITTargetMachineBuilder(jtmb)
              // a target machine per compile: modules may be compiled on several threads at once
              .setCompileFunctionCreator([](llvm::orc::JITTargetMachineBuilder b)
                                             -> llvm::Expected<std::unique_ptr<llvm::orc::IRCompileLayer::IRCompiler>> {
                return std::make_unique<llvm::orc::ConcurrentIRCompiler>(std::move(b));
              })
              .create(),
          "creating the LLVM JIT");
      llvm::orc::LLJIT& jit = *j->state_->jit;
      j->state_->layout = jit.getDataLayout();
      const char prefix = jit.getDataLayout().getGlobalPrefix();
      llvm::orc::JITDylib& main = jit.getMainJITDylib();
      main.addGenerator(take(llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(prefix), "libm"));
      llvm::StringMap<bool> features;
      llvm::sys::getHostCPUFeatures(features);
      if (auto mvec = llvm::orc::DynamicLibrarySearchGenerator::Load("libmvec.so.1", prefix)) {
        main.addGenerator(std::move(*mvec));
        j->vector_math_ = features.lookup("avx2") && jtmb.getTargetTriple().isX86();
      } else {
        llvm::consumeError(mvec.takeError());
      }
      llvm::orc::SymbolMap symbols;
      symbols[jit.mangleAndIntern("strider_parallel_for")] =
          llvm::JITEvaluatedSymbol::fromPointer(&parallel_trampoline, llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable);
      if (llvm::Error e = main.define(llvm::orc::absoluteSymbols(std::move(symbols))))
        throw std::runtime_error(message(std::move(e)));
      return j;
    } catch (const std::exception&) {
      return nullptr;
    }
  }();
  return instance;
}

llvm::TargetMachine& Jit::target_machine() {
  thread_local std::unique_ptr<llvm::TargetMachine> tm;
  if (!tm) tm = take(state_->jtmb.createTargetMachine(), "creating a target machine");
  return *tm;
}

bool Jit::has_symbol(const std::string& name) const {
  return llvm::sys::DynamicLibrary::SearchForAddressOfSymbol(name) != nullptr;
}

void Jit::prepare(llvm::Module& m) {
  m.setTargetTriple(state_->triple);
  m.setDataLayout(state_->layout);
}

void Jit::optimize(llvm::Module& m) {
  llvm::TargetMachine& tm = target_machine();
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = true;
  pto.SLPVectorization = true;
  pto.LoopInterleaving = true;
  pto.LoopUnrolling = true;
  llvm::PassBuilder pb(&tm, pto);
  const llvm::Triple triple(m.getTargetTriple());
  llvm::TargetLibraryInfoImpl tlii(triple);
  if (vector_math_) tlii.addVectorizableFunctionsFromVecLib(llvm::TargetLibraryInfoImpl::LIBMVEC_X86, triple);
  // registered before the defaults so that this TLI wins
  fam.registerPass([&] { return llvm::TargetLibraryAnalysis(tlii); });
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(m, mam);
}

std::unique_ptr<JitCode> Jit::add(std::unique_ptr<llvm::Module> m, std::unique_ptr<llvm::LLVMContext> ctx) {
  llvm::orc::LLJIT& jit = *state_->jit;
  llvm::orc::ResourceTrackerSP rt = jit.getMainJITDylib().createResourceTracker();
  if (llvm::Error e = jit.addIRModule(rt, llvm::orc::ThreadSafeModule(std::move(m), std::move(ctx))))
    throw std::runtime_error("LLVM JIT rejected a module: " + message(std::move(e)));
  return std::make_unique<Code>(jit, std::move(rt));
}

}  // namespace strider::detail
