// Math calls the loop vectorizer can widen: libm's, and NumPy's loops (call_numpy). Each call
// names its vector variants in the "vector-function-abi-variant" attribute (what InjectTLIMappings writes for TargetLibraryInfo's
// own, shorter list): glibc's libmvec where the lane count matches an entry point ('b': SSE4.1
// with 4 floats or 2 doubles, 'd': AVX2 with 8 or 4, 'e': AVX-512 with 16 or 8), and a small
// wrapper that splits or pads to one otherwise. The 'e' entry points are used only where LLVM
// keeps 512-bit vectors whole (Jit::vector_math_512): an AVX-512 host that prefers 256-bit
// vectors would pass their arguments in two ymm registers instead of one zmm. Scalar code
// (remainders, loops that do not vectorize) calls libm itself, bit-identical to the reference.

#include <llvm/Analysis/VectorUtils.h>
#include <llvm/IR/InstIterator.h>
#include <llvm/Transforms/Utils/ModuleUtils.h>

#include "codegen/llvm/emitter.h"
#include "codegen/llvm/jit.h"
#include "ops/numpy_loops.h"

namespace strider::detail {

using llvm::Value;

namespace {

constexpr const char* kWrapperPrefix = "strider_vm_";

llvm::Function* declare(llvm::Module& m, const std::string& name, llvm::FunctionType* ty) {
  llvm::Function* f = llvm::cast<llvm::Function>(m.getOrInsertFunction(name, ty).getCallee());
  f->setDoesNotAccessMemory();  // no errno: what clang's -fno-math-errno assumes
  f->setDoesNotThrow();
  f->setWillReturn();
  return f;
}

// libmvec's entry point for `lanes` lanes of `scalar` (e.g. _ZGVdN8v_expf), or "" for none;
// the 512-bit ones only when `wide`.
std::string libmvec_name(const std::string& scalar, bool single, int lanes, size_t nargs, bool wide) {
  const int b = single ? 4 : 2;
  char isa;
  if (lanes == b) isa = 'b';
  else if (lanes == 2 * b) isa = 'd';
  else if (lanes == 4 * b && wide) isa = 'e';
  else return "";
  return std::string("_ZGV") + isa + "N" + std::to_string(lanes) + std::string(nargs, 'v') + "_" + scalar;
}

// A vector function of `lanes` lanes built from libmvec calls of `native` lanes each: the
// arguments are cut into pieces (or padded with 0.5, a value no function here finds special).
llvm::Function* define_wrapper(llvm::Module& m, const std::string& scalar, llvm::Type* elem, int lanes, int native,
                               size_t nargs, bool wide) {
  const std::string name = kWrapperPrefix + scalar + "_" + std::to_string(lanes);
  if (llvm::Function* f = m.getFunction(name)) return f;
  llvm::LLVMContext& ctx = m.getContext();
  auto* vty = llvm::FixedVectorType::get(elem, lanes);
  auto* nty = llvm::FixedVectorType::get(elem, native);
  auto* f = llvm::Function::Create(llvm::FunctionType::get(vty, std::vector<llvm::Type*>(nargs, vty), false),
                                   llvm::Function::InternalLinkage, name, m);
  f->setDoesNotAccessMemory();
  f->setDoesNotThrow();
  f->setWillReturn();
  llvm::Function* callee = declare(m, libmvec_name(scalar, elem->isFloatTy(), native, nargs, wide),
                                   llvm::FunctionType::get(nty, std::vector<llvm::Type*>(nargs, nty), false));
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", f));
  std::vector<Value*> pieces;
  if (lanes < native) {
    std::vector<int> pad(native, lanes);  // lane `lanes` of the second operand: the splat
    for (int i = 0; i < lanes; ++i) pad[i] = i;
    Value* filler = llvm::ConstantVector::getSplat(llvm::ElementCount::getFixed(lanes), llvm::ConstantFP::get(elem, 0.5));
    std::vector<Value*> args;
    for (size_t a = 0; a < nargs; ++a) args.push_back(b.CreateShuffleVector(f->getArg(a), filler, pad));
    std::vector<int> keep(lanes);
    for (int i = 0; i < lanes; ++i) keep[i] = i;
    b.CreateRet(b.CreateShuffleVector(b.CreateCall(callee, args), keep));
    return f;
  }
  for (int at = 0; at < lanes; at += native) {
    std::vector<int> cut(native);
    for (int i = 0; i < native; ++i) cut[i] = at + i;
    std::vector<Value*> args;
    for (size_t a = 0; a < nargs; ++a) args.push_back(b.CreateShuffleVector(f->getArg(a), cut));
    pieces.push_back(b.CreateCall(callee, args));
  }
  // concatenate pairwise until one vector remains (the counts are powers of two)
  while (pieces.size() > 1) {
    std::vector<Value*> joined;
    const int width = llvm::cast<llvm::FixedVectorType>(pieces[0]->getType())->getNumElements();
    std::vector<int> both(2 * width);
    for (int i = 0; i < 2 * width; ++i) both[i] = i;
    for (size_t k = 0; k + 1 < pieces.size(); k += 2) joined.push_back(b.CreateShuffleVector(pieces[k], pieces[k + 1], both));
    pieces = joined;
  }
  b.CreateRet(pieces[0]);
  return f;
}

// A function of `lanes` elements (a scalar for 1) that hands them to NumPy's loop `id` through
// two stack slots (ops/numpy_loops.h's strider_numpy_loop).
llvm::Function* define_numpy_caller(llvm::Module& m, const std::string& name, llvm::Type* elem, int lanes, int32_t id) {
  if (llvm::Function* f = m.getFunction(name)) return f;
  llvm::LLVMContext& ctx = m.getContext();
  llvm::Type* ty = lanes == 1 ? elem : llvm::FixedVectorType::get(elem, lanes);
  auto* f = llvm::Function::Create(llvm::FunctionType::get(ty, {ty}, false), llvm::Function::InternalLinkage, name, m);
  // a value of its argument alone, whatever the slots: what lets the vectorizer widen its calls
  f->setDoesNotAccessMemory();
  f->setDoesNotThrow();
  f->setWillReturn();
  auto* ptr = llvm::PointerType::get(ctx, 0);
  llvm::FunctionCallee loop = m.getOrInsertFunction(
      "strider_numpy_loop", llvm::FunctionType::get(llvm::Type::getVoidTy(ctx),
                                                    {llvm::Type::getInt32Ty(ctx), ptr, ptr, llvm::Type::getInt64Ty(ctx)}, false));
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", f));
  llvm::AllocaInst* in = b.CreateAlloca(ty);
  llvm::AllocaInst* out = b.CreateAlloca(ty);
  b.CreateStore(f->getArg(0), in);
  b.CreateCall(loop, {b.getInt32(id), in, out, b.getInt64(lanes)});
  b.CreateRet(b.CreateLoad(ty, out));
  return f;
}

}  // namespace

Value* Emitter::call_numpy(OpCode code, DType t, Value* x) {
  llvm::Type* elem = reg_type(t);
  const int32_t id = numpy_loop_id(code, t);
  const std::string name = std::string("numpy_") + op_name(code) + "_" + dtype_name(t);
  llvm::Function* scalar = define_numpy_caller(m_, "strider_" + name, elem, 1, id);
  // kept out of line: the vectorizer widens calls, not the stack slots they would inline to
  scalar->addFnAttr(llvm::Attribute::NoInline);
  llvm::CallInst* call = b_.CreateCall(scalar, {x});
  if (!vector_math_) return call;
  add_variants(call, scalar->getName().str(), 1, [&](int lanes) {
    return define_numpy_caller(m_, kWrapperPrefix + name + "_" + std::to_string(lanes), elem, lanes, id);
  });
  return call;
}

Value* Emitter::call_math(const std::string& name, DType t, const Values& args) {
  const bool single = t == DType::Float32;
  const std::string scalar = single ? name + "f" : name;
  llvm::Type* elem = reg_type(t);
  llvm::Function* f = declare(m_, scalar, llvm::FunctionType::get(elem, std::vector<llvm::Type*>(args.size(), elem), false));
  llvm::CallInst* call = b_.CreateCall(f, args);
  if (!vector_math_) return call;
  const int native_b = single ? 4 : 2;
  Jit* jit = Jit::get();
  const size_t n = args.size();
  if (!jit->has_symbol(libmvec_name(scalar, single, native_b, n, false)) ||
      !jit->has_symbol(libmvec_name(scalar, single, 2 * native_b, n, false)))
    return call;  // an older libmvec without this function: scalar calls
  const bool wide = jit->vector_math_512() && jit->has_symbol(libmvec_name(scalar, single, 4 * native_b, n, true));
  const int widest = (wide ? 4 : 2) * native_b;
  add_variants(call, scalar, n, [&](int lanes) {
    const std::string direct = libmvec_name(scalar, single, lanes, n, wide);
    if (direct.empty()) return define_wrapper(m_, scalar, elem, lanes, lanes < native_b ? native_b : widest, n, wide);
    auto* vty = llvm::FixedVectorType::get(elem, lanes);
    return declare(m_, direct, llvm::FunctionType::get(vty, std::vector<llvm::Type*>(n, vty), false));
  });
  return call;
}

void Emitter::add_variants(llvm::CallInst* call, const std::string& scalar, size_t nargs,
                           const std::function<llvm::Function*(int lanes)>& variant) {
  std::string variants;
  std::vector<llvm::GlobalValue*> keep;
  for (int lanes = 2; lanes <= std::max(16, p_.vector_width); lanes *= 2) {
    llvm::Function* vf = variant(lanes);
    keep.push_back(vf);
    if (!variants.empty()) variants += ",";
    variants += llvm::VFABI::mangleTLIVectorName(vf->getName(), scalar, nargs, llvm::ElementCount::getFixed(lanes));
  }
  call->addFnAttr(llvm::Attribute::get(ctx_, llvm::VFABI::MappingsAttrName, variants));
  // kept alive until the vectorizer has looked (what InjectTLIMappings does too)
  llvm::appendToCompilerUsed(m_, keep);
}

namespace {

// The libm function (double spelling) a call of f computes, or "" for none: the bitcode of
// ops/scalar_ops.inc calls libm directly, or through the intrinsics clang makes of exp, log, pow,
// sin, cos and their kin (the others, sqrt and floor among them, are single instructions).
std::string libm_name(const llvm::Function& f) {
  if (f.isIntrinsic()) {
    switch (f.getIntrinsicID()) {
      case llvm::Intrinsic::exp: return "exp";
      case llvm::Intrinsic::exp2: return "exp2";
      case llvm::Intrinsic::log: return "log";
      case llvm::Intrinsic::log2: return "log2";
      case llvm::Intrinsic::log10: return "log10";
      case llvm::Intrinsic::sin: return "sin";
      case llvm::Intrinsic::cos: return "cos";
      case llvm::Intrinsic::pow: return "pow";
      default: return "";
    }
  }
  if (!f.isDeclaration() || !f.getReturnType()->isFloatingPointTy()) return "";
  const std::string name = f.getName().str();
  return f.getReturnType()->isFloatTy() ? name.substr(0, name.size() - 1) : name;  // expf: exp
}

}  // namespace

void Emitter::widen_math_calls(llvm::Function& f) {
  for (llvm::Instruction& inst : llvm::make_early_inc_range(llvm::instructions(f))) {
    auto* call = llvm::dyn_cast<llvm::CallInst>(&inst);
    const llvm::Function* callee = call ? call->getCalledFunction() : nullptr;
    const std::string name = callee ? libm_name(*callee) : "";
    if (name.empty()) continue;
    b_.SetInsertPoint(call);
    Value* v = call_math(name, callee->getReturnType()->isFloatTy() ? DType::Float32 : DType::Float64,
                         Values(call->arg_begin(), call->arg_end()));
    call->replaceAllUsesWith(v);
    call->eraseFromParent();
  }
}

void drop_unused_vector_math(llvm::Module& m) {
  auto ours = [](llvm::Constant* c) {
    llvm::StringRef name = c->getName();
    return name.startswith(kWrapperPrefix) || name.startswith("_ZGV");
  };
  llvm::removeFromUsedLists(m, ours);
  for (bool changed = true; changed;) {
    changed = false;
    for (llvm::Function& f : llvm::make_early_inc_range(m.functions())) {
      if (!ours(&f)) continue;
      f.removeDeadConstantUsers();  // the old llvm.compiler.used array
      if (f.use_empty()) {
        f.eraseFromParent();
        changed = true;
      }
    }
  }
}

}  // namespace strider::detail
