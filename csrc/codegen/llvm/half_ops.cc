// float16 ops the x86 backend would take apart lane by lane, rewritten on float lanes. Without
// AVX512-FP16, LLVM 16 promotes a half vector's fadd, fsub, fmul and fdiv to float vectors, but
// splits every other op on half vectors (fneg, fcmp, frem, fabs, sqrt, floor, minnum, ...) into
// one scalar conversion and op per lane: a float16 sigmoid's negate cost ~6 instructions a lane,
// and yolo_decode_f16_ ran at a third of its float32 speed. The rewritten ops give the same bits
// as the reference's float16 (ops/scalar_ops.inc: values compute as float, so a signaling NaN
// loads quiet): the conversions from half are exact, and every listed op's float result is exact
// or (sqrt) correctly rounded twice, which float's 24 bits keep right for half. Selects of half
// values convert too: their operands would otherwise keep a signaling NaN's bits, which the
// soft-promoted compare and select they were before did not.

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/InstIterator.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicInst.h>

#include "codegen/llvm/jit.h"

namespace strider::detail {

namespace {

bool is_half(const llvm::Type* t) { return t->getScalarType()->isHalfTy(); }

// The float (or float vector) type in t's shape.
llvm::Type* widened(llvm::Type* t) {
  llvm::Type* f = llvm::Type::getFloatTy(t->getContext());
  if (auto* v = llvm::dyn_cast<llvm::VectorType>(t)) return llvm::VectorType::get(f, v->getElementCount());
  return f;
}

// Intrinsics whose float result on half inputs, rounded to half, is the half op's.
bool widens(llvm::Intrinsic::ID id) {
  switch (id) {
    case llvm::Intrinsic::fabs:
    case llvm::Intrinsic::copysign:
    case llvm::Intrinsic::sqrt:
    case llvm::Intrinsic::floor:
    case llvm::Intrinsic::ceil:
    case llvm::Intrinsic::trunc:
    case llvm::Intrinsic::rint:
    case llvm::Intrinsic::nearbyint:
    case llvm::Intrinsic::round:
    case llvm::Intrinsic::roundeven:
    case llvm::Intrinsic::minnum:
    case llvm::Intrinsic::maxnum:
    case llvm::Intrinsic::minimum:
    case llvm::Intrinsic::maximum:
      return true;
    default:
      return false;
  }
}

// The replacement of `inst`, built before it; null where it stays.
llvm::Value* rewrite(llvm::Instruction& inst) {
  llvm::IRBuilder<> b(&inst);
  auto wide = [&](llvm::Value* v) { return b.CreateFPExt(v, widened(v->getType())); };
  if (inst.getOpcode() == llvm::Instruction::FNeg && is_half(inst.getType()))
    return b.CreateFPTrunc(b.CreateFNeg(wide(inst.getOperand(0))), inst.getType());
  if (auto* sel = llvm::dyn_cast<llvm::SelectInst>(&inst); sel && is_half(sel->getType()))
    return b.CreateFPTrunc(b.CreateSelect(sel->getCondition(), wide(sel->getTrueValue()), wide(sel->getFalseValue())), sel->getType());
  if (inst.getOpcode() == llvm::Instruction::FRem && is_half(inst.getType()))
    return b.CreateFPTrunc(b.CreateFRem(wide(inst.getOperand(0)), wide(inst.getOperand(1))), inst.getType());
  if (auto* cmp = llvm::dyn_cast<llvm::FCmpInst>(&inst); cmp && is_half(cmp->getOperand(0)->getType())) {
    auto* out = llvm::cast<llvm::Instruction>(b.CreateFCmp(cmp->getPredicate(), wide(cmp->getOperand(0)), wide(cmp->getOperand(1))));
    out->copyFastMathFlags(cmp);
    return out;
  }
  auto* call = llvm::dyn_cast<llvm::IntrinsicInst>(&inst);
  if (!call || !is_half(call->getType()) || !widens(call->getIntrinsicID())) return nullptr;
  std::vector<llvm::Value*> args;
  for (llvm::Value* a : call->args()) args.push_back(wide(a));
  llvm::Value* out = b.CreateIntrinsic(call->getIntrinsicID(), {widened(call->getType())}, args, call);
  return b.CreateFPTrunc(out, call->getType());
}

}  // namespace

void widen_half_ops(llvm::Module& m) {
  for (llvm::Function& f : m) {
    std::vector<llvm::Instruction*> dead;
    for (llvm::Instruction& inst : llvm::instructions(f))
      if (llvm::Value* v = rewrite(inst)) {
        inst.replaceAllUsesWith(v);
        dead.push_back(&inst);
      }
    for (llvm::Instruction* inst : dead) inst->eraseFromParent();
  }
}

}  // namespace strider::detail
