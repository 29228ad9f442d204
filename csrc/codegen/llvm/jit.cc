#include "codegen/llvm/jit.h"

#include <gnu/libc-version.h>

#include <atomic>
#include <mutex>
#include <stdexcept>

#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/Analysis/TargetTransformInfo.h>
#include <llvm/ExecutionEngine/Orc/CompileUtils.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/DynamicLibrary.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/TargetParser/Host.h>

#include "ops/numpy_loops.h"
#include "runtime/thread_pool.h"

namespace strider::detail {

namespace {

std::string message(llvm::Error e) { return llvm::toString(std::move(e)); }

template <typename T>
T take(llvm::Expected<T> v, const char* what) {
  if (!v) throw std::runtime_error(std::string(what) + ": " + message(v.takeError()));
  return std::move(*v);
}

// The kernels' ways into the thread pool: body(args, begin, end) over chunks of [0, n) by
// parallel_for or parallel_for_warm (thread_pool.h); the error codes of the chunks are or-ed.
template <void (*For)(int64_t, const std::function<void(int64_t, int64_t)>&)>
int32_t trampoline(int64_t n, int32_t (*body)(void*, int64_t, int64_t), void* args) {
  std::atomic<int32_t> err{0};
  For(n, [&](int64_t begin, int64_t end) { err.fetch_or(body(args, begin, end)); });
  return err.load();
}

class Code final : public JitCode {
 public:
  Code(llvm::orc::LLJIT& jit, llvm::orc::JITDylib& dylib) : jit_(jit), dylib_(dylib) {}
  ~Code() override {
    if (llvm::Error e = jit_.getExecutionSession().removeJITDylib(dylib_)) llvm::consumeError(std::move(e));
  }
  void* lookup(const std::string& name) override {
    auto addr = jit_.lookup(dylib_, name);
    if (!addr) throw std::runtime_error("LLVM JIT could not link " + name + ": " + message(addr.takeError()));
    return addr->toPtr<void*>();
  }

 private:
  llvm::orc::LLJIT& jit_;
  llvm::orc::JITDylib& dylib_;
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
          // stages arrive as object files (emit_object, or the disk cache): the JIT only links
          llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(jtmb).create(),
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
      {
        llvm::LLVMContext ctx;
        llvm::Module probe("probe", ctx);
        j->prepare(probe);
        auto* f = llvm::Function::Create(llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), false),
                                         llvm::Function::ExternalLinkage, "probe", probe);
        llvm::TargetTransformInfo tti = j->target_machine().getTargetTransformInfo(*f);
        j->vector_bits_ = static_cast<int>(
            tti.getRegisterBitWidth(llvm::TargetTransformInfo::RGK_FixedWidthVector).getFixedValue());
      }
      j->vector_math_512_ = j->vector_math_ && features.lookup("avx512f") && j->vector_bits_ >= 512;
      j->widen_half_ = jtmb.getTargetTriple().isX86() && !features.lookup("avx512fp16");
      if (jtmb.getTargetTriple().isX86())
        j->best_compress_ = features.lookup("avx512f") ? VectorCompress::kCompressStore
                            : features.lookup("avx2")  ? VectorCompress::kPermute
                                                       : VectorCompress::kNone;
      j->vector_compress_ = j->best_compress_;
      j->target_ = jtmb.getTargetTriple().str() + " cpu=" + jtmb.getCPU() + " features=" + jtmb.getFeatures().getString() +
                   " libmvec=" + (j->vector_math_512_ ? "avx512" : j->vector_math_ ? "avx2" : "off") + " glibc=" +
                   gnu_get_libc_version();
      llvm::orc::SymbolMap symbols;
      symbols[jit.mangleAndIntern("strider_parallel_for")] =
          llvm::JITEvaluatedSymbol::fromPointer(&trampoline<parallel_for>, llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable);
      symbols[jit.mangleAndIntern("strider_parallel_for_warm")] =
          llvm::JITEvaluatedSymbol::fromPointer(&trampoline<parallel_for_warm>, llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable);
      symbols[jit.mangleAndIntern("strider_numpy_loop")] =
          llvm::JITEvaluatedSymbol::fromPointer(&strider_numpy_loop, llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable);
      if (llvm::Error e = main.define(llvm::orc::absoluteSymbols(std::move(symbols))))
        throw std::runtime_error(message(std::move(e)));
      return j;
    } catch (const std::exception&) {
      return nullptr;
    }
  }();
  return instance;
}

bool Jit::set_vector_compress(VectorCompress how) {
  if (how > best_compress_) return false;  // each way needs what the ones before it need
  vector_compress_ = how;
  return true;
}

llvm::TargetMachine& Jit::target_machine(Effort effort) {
  thread_local std::unique_ptr<llvm::TargetMachine> tm[3];
  std::unique_ptr<llvm::TargetMachine>& at = tm[static_cast<int>(effort)];
  if (!at) {
    llvm::orc::JITTargetMachineBuilder jtmb = state_->jtmb;
    if (effort == Effort::kQuick) jtmb.setCodeGenOptLevel(llvm::CodeGenOpt::None);
    at = take(jtmb.createTargetMachine(), "creating a target machine");
  }
  return *at;
}

bool Jit::has_symbol(const std::string& name) const {
  return llvm::sys::DynamicLibrary::SearchForAddressOfSymbol(name) != nullptr;
}

void Jit::prepare(llvm::Module& m) {
  m.setTargetTriple(state_->triple);
  m.setDataLayout(state_->layout);
}

void Jit::optimize(llvm::Module& m, Effort effort) {
  llvm::TargetMachine& tm = target_machine(effort);
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
  llvm::ModulePassManager mpm;
  if (effort == Effort::kFull) {
    mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  } else if (llvm::Error e = pb.parsePassPipeline(
                 mpm, effort == Effort::kQuick ? "always-inline,function(sroa,early-cse,instcombine,simplifycfg)"
                                               : "always-inline,function(sroa,early-cse,instcombine,simplifycfg,loop-simplify,"
                                                 "lcssa,loop-rotate,loop-mssa(licm),indvars,loop-vectorize,instcombine,simplifycfg)")) {
    throw std::logic_error("the quick pipeline does not parse: " + message(std::move(e)));
  }
  mpm.run(m, mam);
  // after the vectorizer, whose half vectors InstCombine would otherwise narrow back
  if (widen_half_) widen_half_ops(m);
}

std::string Jit::emit_object(llvm::Module& m, Effort effort) {
  // what LLJIT's own IR layer runs, on this thread's target machine
  std::unique_ptr<llvm::MemoryBuffer> object =
      take(llvm::orc::SimpleCompiler(target_machine(effort))(m), "LLVM codegen");
  return object->getBuffer().str();
}

std::unique_ptr<JitCode> Jit::add_object(const std::string& object) {
  static std::atomic<uint64_t> counter{0};
  llvm::orc::LLJIT& jit = *state_->jit;
  llvm::orc::JITDylib& dylib = jit.getExecutionSession().createBareJITDylib("strider." + std::to_string(counter++));
  dylib.addToLinkOrder(jit.getMainJITDylib());
  auto code = std::make_unique<Code>(jit, dylib);  // removes the dylib on every path out
  if (llvm::Error e = jit.addObjectFile(dylib, llvm::MemoryBuffer::getMemBufferCopy(object, "strider-stage")))
    throw std::runtime_error("LLVM JIT rejected an object file: " + message(std::move(e)));
  return code;
}

}  // namespace strider::detail
