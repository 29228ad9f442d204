// The scalar semantics of ops/scalar_ops.inc as LLVM IR, op for op. No fast-math flags: every
// float operation is the IEEE one the reference executes. Division, shifts and float-to-int
// conversions guard the cases LLVM leaves undefined (by zero, INT_MIN / -1, out of range) with
// selects, so the loops stay branch-free and vectorize.

#include <cmath>
#include <cstdint>
#include <limits>

#include "codegen/llvm/emitter.h"

namespace strider::detail {

using llvm::Value;

namespace {

llvm::Constant* fconst(llvm::Type* t, double v) { return llvm::ConstantFP::get(t, v); }
llvm::Constant* iconst(llvm::Type* t, int64_t v) { return llvm::ConstantInt::get(t, static_cast<uint64_t>(v), true); }

}  // namespace

void Emitter::emit_op(const Op& op) {
  const DType out = g_.dtype_of(op.output);
  switch (op_kind(op.code)) {
    case OpKind::Copy:
      if (g_.dtype_of(op.inputs[0]) != out) refuse("copy between different dtypes");
      return store(op.output, load(op.inputs[0]));
    case OpKind::Unary: {
      const DType t = g_.dtype_of(op.inputs[0]);
      Value* x = load(op.inputs[0]);
      if (op.code == OpCode::cast) return store(op.output, convert(x, t, out));
      require_loop(op.code, t);
      if (is_predicate(op.code)) return store(op.output, convert(predicate(op.code, t, x), DType::Bool, out));
      return store(op.output, convert(unary(op.code, t, x), t, out));
    }
    case OpKind::Binary: {
      const DType t = g_.dtype_of(op.inputs[0]);
      if (g_.dtype_of(op.inputs[1]) != t) refuse("its inputs do not share one dtype");
      require_loop(op.code, t);
      Value* a = load(op.inputs[0]);
      Value* c = load(op.inputs[1]);
      if (is_comparison(op.code)) return store(op.output, convert(compare(op.code, t, a, c), DType::Bool, out));
      return store(op.output, convert(binary(op.code, t, a, c), t, out));
    }
    case OpKind::Ternary: {
      // the reference copies the chosen element's bytes: the values must have the output's dtype
      if (g_.dtype_of(op.inputs[0]) != DType::Bool) refuse("where needs a bool condition");
      if (g_.dtype_of(op.inputs[1]) != out || g_.dtype_of(op.inputs[2]) != out) refuse("its values do not have the output's dtype");
      Value* cond = load(op.inputs[0]);
      Value* a = load(op.inputs[1]);
      Value* c = load(op.inputs[2]);
      return store(op.output, b_.CreateSelect(cond, a, c));
    }
    case OpKind::Arange: {
      if (g_.dtype_of(op.inputs[0]) != out || g_.dtype_of(op.inputs[1]) != out) refuse("start and step must have the output's dtype");
      Value* first = load(op.inputs[0]);
      Value* second = load(op.inputs[1]);
      Value* i = p_.rank() > 0 ? idx_[0] : i64(0);
      llvm::Type* ty = reg_type(out);
      // NumPy's fill: the first two values as given, then first + i * (second - first)
      Value* v = second;
      if (is_float(out)) v = b_.CreateFAdd(first, b_.CreateFMul(b_.CreateSIToFP(i, ty), b_.CreateFSub(second, first)));
      else if (out != DType::Bool) v = b_.CreateAdd(first, b_.CreateMul(b_.CreateSExtOrTrunc(i, ty), b_.CreateSub(second, first)));
      v = b_.CreateSelect(b_.CreateICmpEQ(i, i64(1)), second, v);
      return store(op.output, b_.CreateSelect(b_.CreateICmpEQ(i, i64(0)), first, v));
    }
    case OpKind::Reduce: break;
  }
  refuse("a reduction must be the last op of its stage");
}

void Emitter::require_loop(OpCode code, DType t) const {
  if (!has_loop(code, t)) refuse(std::string(op_name(code)) + " has no " + loop_family(t) + " loop");
}

Value* Emitter::convert(Value* x, DType from, DType to) {
  if (from == to) return x;
  llvm::Type* ty = reg_type(to);
  if (to == DType::Bool)
    return is_float(from) ? b_.CreateFCmpUNE(x, fconst(x->getType(), 0.0)) : b_.CreateICmpNE(x, iconst(x->getType(), 0));
  if (from == DType::Bool) return is_float(to) ? b_.CreateUIToFP(x, ty) : b_.CreateZExt(x, ty);
  if (is_float(from) && is_float(to)) return b_.CreateFPCast(x, ty);
  if (!is_float(from) && !is_float(to)) return b_.CreateSExtOrTrunc(x, ty);
  if (!is_float(from)) return b_.CreateSIToFP(x, ty);
  // float to int: NaN and out-of-range values give INT_MIN, as x86's cvtt* (and the reference)
  llvm::Type* ft = x->getType();
  Value* in_range = b_.CreateAnd(b_.CreateFCmpOGE(x, fconst(ft, -0x1p63)), b_.CreateFCmpOLT(x, fconst(ft, 0x1p63)));
  Value* wide = b_.CreateFPToSI(b_.CreateSelect(in_range, x, fconst(ft, 0.0)), b_.getInt64Ty());
  if (to == DType::Int64) return b_.CreateSelect(in_range, wide, i64(std::numeric_limits<int64_t>::min()));
  Value* fits = b_.CreateAnd(b_.CreateICmpSGE(wide, i64(std::numeric_limits<int32_t>::min())),
                             b_.CreateICmpSLE(wide, i64(std::numeric_limits<int32_t>::max())));
  return b_.CreateSelect(b_.CreateAnd(in_range, fits), b_.CreateTrunc(wide, ty), iconst(ty, std::numeric_limits<int32_t>::min()));
}

Value* Emitter::unary(OpCode code, DType t, Value* x) {
  llvm::Type* ty = x->getType();
  if (t == DType::Bool) return code == OpCode::invert || code == OpCode::logical_not ? b_.CreateNot(x) : x;
  if (!is_float(t)) {
    Value* zero = iconst(ty, 0);
    switch (code) {
      case OpCode::negative: return b_.CreateSub(zero, x);
      case OpCode::absolute: return b_.CreateSelect(b_.CreateICmpSLT(x, zero), b_.CreateSub(zero, x), x);
      case OpCode::sign: return b_.CreateSub(b_.CreateZExt(b_.CreateICmpSGT(x, zero), ty), b_.CreateZExt(b_.CreateICmpSLT(x, zero), ty));
      case OpCode::square: return b_.CreateMul(x, x);
      case OpCode::reciprocal:  // 1 / x truncates to 0 unless |x| == 1; the reference gives 0 for 0
        return b_.CreateSelect(b_.CreateICmpEQ(x, iconst(ty, 1)), iconst(ty, 1),
                               b_.CreateSelect(b_.CreateICmpEQ(x, iconst(ty, -1)), iconst(ty, -1), zero));
      case OpCode::invert: return b_.CreateNot(x);
      default: return x;  // positive, floor, ceil, trunc, rint (and any other op) are the identity
    }
  }
  auto intrinsic = [&](llvm::Intrinsic::ID id) { return b_.CreateUnaryIntrinsic(id, x); };
  switch (code) {
    case OpCode::negative: return b_.CreateFNeg(x);
    case OpCode::positive: return x;
    case OpCode::absolute: return intrinsic(llvm::Intrinsic::fabs);
    case OpCode::sign: {
      Value* s = b_.CreateSelect(b_.CreateFCmpOGT(x, fconst(ty, 0)), fconst(ty, 1),
                                 b_.CreateSelect(b_.CreateFCmpOLT(x, fconst(ty, 0)), fconst(ty, -1), fconst(ty, 0)));
      return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, s);
    }
    case OpCode::square: return b_.CreateFMul(x, x);
    case OpCode::reciprocal: return b_.CreateFDiv(fconst(ty, 1), x);
    case OpCode::sqrt: return intrinsic(llvm::Intrinsic::sqrt);
    case OpCode::floor: return intrinsic(llvm::Intrinsic::floor);
    case OpCode::ceil: return intrinsic(llvm::Intrinsic::ceil);
    case OpCode::trunc: return intrinsic(llvm::Intrinsic::trunc);
    case OpCode::rint: return intrinsic(llvm::Intrinsic::rint);  // nearbyint: the default rounding mode
    case OpCode::cbrt: return call_math("cbrt", t, {x});
    case OpCode::exp: return call_math("exp", t, {x});
    case OpCode::exp2: return call_math("exp2", t, {x});
    case OpCode::expm1: return call_math("expm1", t, {x});
    case OpCode::log: return call_math("log", t, {x});
    case OpCode::log2: return call_math("log2", t, {x});
    case OpCode::log10: return call_math("log10", t, {x});
    case OpCode::log1p: return call_math("log1p", t, {x});
    case OpCode::sin: return call_math("sin", t, {x});
    case OpCode::cos: return call_math("cos", t, {x});
    case OpCode::tan: return call_math("tan", t, {x});
    case OpCode::arcsin: return call_math("asin", t, {x});
    case OpCode::arccos: return call_math("acos", t, {x});
    case OpCode::arctan: return call_math("atan", t, {x});
    case OpCode::sinh: return call_math("sinh", t, {x});
    case OpCode::cosh: return call_math("cosh", t, {x});
    case OpCode::tanh: return call_math("tanh", t, {x});
    case OpCode::arcsinh: return call_math("asinh", t, {x});
    case OpCode::arccosh: return call_math("acosh", t, {x});
    case OpCode::arctanh: return call_math("atanh", t, {x});
    default: refuse(std::string(op_name(code)) + " has no float loop");
  }
}

Value* Emitter::predicate(OpCode code, DType t, Value* x) {
  llvm::Type* ty = x->getType();
  const bool fp = is_float(t);
  switch (code) {
    case OpCode::logical_not:
      if (t == DType::Bool) return b_.CreateNot(x);
      return fp ? b_.CreateFCmpOEQ(x, fconst(ty, 0)) : b_.CreateICmpEQ(x, iconst(ty, 0));
    case OpCode::isfinite:
      return fp ? b_.CreateFCmpOLT(b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x), fconst(ty, INFINITY)) : b_.getTrue();
    case OpCode::isnan: return fp ? b_.CreateFCmpUNO(x, x) : b_.getFalse();
    case OpCode::isinf:
      return fp ? b_.CreateFCmpOEQ(b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x), fconst(ty, INFINITY)) : b_.getFalse();
    case OpCode::signbit:
      if (fp) return b_.CreateICmpSLT(b_.CreateBitCast(x, b_.getIntNTy(ty->getPrimitiveSizeInBits())), iconst(b_.getIntNTy(ty->getPrimitiveSizeInBits()), 0));
      return t == DType::Bool ? b_.getFalse() : b_.CreateICmpSLT(x, iconst(ty, 0));
    default: refuse(std::string(op_name(code)) + " is not a predicate");
  }
}

Value* Emitter::compare(OpCode code, DType t, Value* a, Value* c) {
  llvm::Type* ty = a->getType();
  auto nonzero = [&](Value* v) -> Value* {
    if (t == DType::Bool) return v;
    return is_float(t) ? b_.CreateFCmpUNE(v, fconst(ty, 0)) : b_.CreateICmpNE(v, iconst(ty, 0));
  };
  switch (code) {
    case OpCode::logical_and: return b_.CreateAnd(nonzero(a), nonzero(c));
    case OpCode::logical_or: return b_.CreateOr(nonzero(a), nonzero(c));
    case OpCode::logical_xor: return b_.CreateXor(nonzero(a), nonzero(c));
    default: break;
  }
  using P = llvm::CmpInst::Predicate;
  const int k = code == OpCode::equal ? 0 : code == OpCode::not_equal ? 1 : code == OpCode::less ? 2
              : code == OpCode::less_equal ? 3 : code == OpCode::greater ? 4 : 5;
  // ordered float compares, except != which is true for NaN; bool compares as 0 < 1
  static const P kFloat[] = {P::FCMP_OEQ, P::FCMP_UNE, P::FCMP_OLT, P::FCMP_OLE, P::FCMP_OGT, P::FCMP_OGE};
  static const P kSigned[] = {P::ICMP_EQ, P::ICMP_NE, P::ICMP_SLT, P::ICMP_SLE, P::ICMP_SGT, P::ICMP_SGE};
  static const P kUnsigned[] = {P::ICMP_EQ, P::ICMP_NE, P::ICMP_ULT, P::ICMP_ULE, P::ICMP_UGT, P::ICMP_UGE};
  if (is_float(t)) return b_.CreateFCmp(kFloat[k], a, c);
  return b_.CreateICmp(t == DType::Bool ? kUnsigned[k] : kSigned[k], a, c);
}

Value* Emitter::binary(OpCode code, DType t, Value* a, Value* c) {
  llvm::Type* ty = a->getType();
  if (t == DType::Bool) {
    switch (code) {
      case OpCode::add: case OpCode::maximum: case OpCode::fmax: case OpCode::bitwise_or: return b_.CreateOr(a, c);
      case OpCode::multiply: case OpCode::minimum: case OpCode::fmin: case OpCode::bitwise_and: return b_.CreateAnd(a, c);
      case OpCode::bitwise_xor: return b_.CreateXor(a, c);
      default: refuse(std::string(op_name(code)) + " has no bool loop");
    }
  }
  if (!is_float(t)) {
    const int64_t bits = ty->getIntegerBitWidth();
    Value* zero = iconst(ty, 0);
    Value* by_zero = b_.CreateICmpEQ(c, zero);
    Value* by_minus_one = b_.CreateICmpEQ(c, iconst(ty, -1));
    Value* special = b_.CreateOr(by_zero, by_minus_one);
    // 0 and -1 (INT_MIN / -1 traps) never reach sdiv/srem; the selects give NumPy's values
    Value* safe = b_.CreateSelect(special, iconst(ty, 1), c);
    switch (code) {
      case OpCode::add: return b_.CreateAdd(a, c);
      case OpCode::subtract: return b_.CreateSub(a, c);
      case OpCode::multiply: return b_.CreateMul(a, c);
      case OpCode::floor_divide: {
        Value* q = b_.CreateSDiv(a, safe);
        Value* r = b_.CreateSRem(a, safe);
        Value* adjust = b_.CreateAnd(b_.CreateICmpNE(r, zero), b_.CreateXor(b_.CreateICmpSLT(a, zero), b_.CreateICmpSLT(c, zero)));
        Value* v = b_.CreateSelect(adjust, b_.CreateSub(q, iconst(ty, 1)), q);
        v = b_.CreateSelect(by_minus_one, b_.CreateSub(zero, a), v);
        return b_.CreateSelect(by_zero, zero, v);
      }
      case OpCode::remainder: {
        Value* r = b_.CreateSRem(a, safe);
        Value* adjust = b_.CreateAnd(b_.CreateICmpNE(r, zero), b_.CreateXor(b_.CreateICmpSLT(r, zero), b_.CreateICmpSLT(c, zero)));
        return b_.CreateSelect(special, zero, b_.CreateSelect(adjust, b_.CreateAdd(r, c), r));
      }
      case OpCode::fmod: return b_.CreateSelect(special, zero, b_.CreateSRem(a, safe));
      case OpCode::power: return int_power(a, c);
      case OpCode::maximum: case OpCode::fmax: return b_.CreateSelect(b_.CreateICmpSGE(a, c), a, c);
      case OpCode::minimum: case OpCode::fmin: return b_.CreateSelect(b_.CreateICmpSLE(a, c), a, c);
      case OpCode::bitwise_and: return b_.CreateAnd(a, c);
      case OpCode::bitwise_or: return b_.CreateOr(a, c);
      case OpCode::bitwise_xor: return b_.CreateXor(a, c);
      case OpCode::left_shift:  // shifting by the width or more (or a negative count) gives 0
        return b_.CreateSelect(b_.CreateICmpULT(c, iconst(ty, bits)), b_.CreateShl(a, c), zero);
      case OpCode::right_shift:  // ... and the sign here
        return b_.CreateSelect(b_.CreateICmpULT(c, iconst(ty, bits)), b_.CreateAShr(a, c), b_.CreateAShr(a, iconst(ty, bits - 1)));
      default: refuse(std::string(op_name(code)) + " has no integer loop");
    }
  }
  switch (code) {
    case OpCode::add: return b_.CreateFAdd(a, c);
    case OpCode::subtract: return b_.CreateFSub(a, c);
    case OpCode::multiply: return b_.CreateFMul(a, c);
    case OpCode::divide: return b_.CreateFDiv(a, c);
    case OpCode::floor_divide:
    case OpCode::remainder: {
      // npy_divmod, step by step (float_floor_divide in elementwise.h)
      Value* zero = fconst(ty, 0);
      Value* mod = b_.CreateFRem(a, c);
      Value* quotient = b_.CreateFDiv(a, c);
      Value* by_zero = b_.CreateFCmpOEQ(c, zero);
      Value* div = b_.CreateFDiv(b_.CreateFSub(a, mod), c);
      Value* mod_nonzero = b_.CreateFCmpUNE(mod, zero);
      Value* adjust = b_.CreateAnd(mod_nonzero, b_.CreateXor(b_.CreateFCmpOLT(c, zero), b_.CreateFCmpOLT(mod, zero)));
      Value* mod1 = b_.CreateSelect(adjust, b_.CreateFAdd(mod, c), mod);
      div = b_.CreateSelect(adjust, b_.CreateFSub(div, fconst(ty, 1)), div);
      Value* signed_zero_b = b_.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, zero, c);
      mod1 = b_.CreateSelect(mod_nonzero, mod1, signed_zero_b);
      if (code == OpCode::remainder) return b_.CreateSelect(by_zero, mod, mod1);
      Value* fl = b_.CreateUnaryIntrinsic(llvm::Intrinsic::floor, div);
      fl = b_.CreateSelect(b_.CreateFCmpOGT(b_.CreateFSub(div, fl), fconst(ty, 0.5)), b_.CreateFAdd(fl, fconst(ty, 1)), fl);
      Value* signed_zero_q = b_.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, zero, quotient);
      Value* floordiv = b_.CreateSelect(b_.CreateFCmpUNE(div, zero), fl, signed_zero_q);
      return b_.CreateSelect(by_zero, quotient, floordiv);
    }
    case OpCode::fmod: return b_.CreateFRem(a, c);
    case OpCode::power:  // NumPy's loop takes sqrt for an exponent of 0.5
      return b_.CreateSelect(b_.CreateFCmpOEQ(c, fconst(ty, 0.5)), b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, a),
                             call_math("pow", t, {a, c}));
    case OpCode::maximum: return b_.CreateSelect(b_.CreateOr(b_.CreateFCmpOGE(a, c), b_.CreateFCmpUNO(a, a)), a, c);
    case OpCode::minimum: return b_.CreateSelect(b_.CreateOr(b_.CreateFCmpOLE(a, c), b_.CreateFCmpUNO(a, a)), a, c);
    case OpCode::fmax: return b_.CreateSelect(b_.CreateOr(b_.CreateFCmpOGE(a, c), b_.CreateFCmpUNO(c, c)), a, c);
    case OpCode::fmin: return b_.CreateSelect(b_.CreateOr(b_.CreateFCmpOLE(a, c), b_.CreateFCmpUNO(c, c)), a, c);
    case OpCode::arctan2: return call_math("atan2", t, {a, c});
    case OpCode::hypot: return call_math("hypot", t, {a, c});
    case OpCode::copysign: return b_.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, a, c);
    case OpCode::logaddexp: {
      // exp(-d) for d > 0 and exp(d) for d <= 0 are both exp(-|d|)
      Value* d = b_.CreateFSub(a, c);
      Value* tail = call_math("log1p", t, {call_math("exp", t, {b_.CreateFNeg(b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, d))})});
      Value* v = b_.CreateSelect(b_.CreateFCmpOLE(d, fconst(ty, 0)), b_.CreateFAdd(c, tail), d);
      v = b_.CreateSelect(b_.CreateFCmpOGT(d, fconst(ty, 0)), b_.CreateFAdd(a, tail), v);
      return b_.CreateSelect(b_.CreateFCmpOEQ(a, c), b_.CreateFAdd(a, fconst(ty, 0.693147180559945309417232121458176568)), v);
    }
    default: refuse(std::string(op_name(code)) + " has no float loop");
  }
}

Value* Emitter::int_power(Value* base, Value* exp) {
  // a negative exponent is the reference's domain_error: flag it, compute with 0 to stay finite
  llvm::Type* ty = base->getType();
  Value* negative = b_.CreateICmpSLT(exp, iconst(ty, 0));
  b_.CreateStore(b_.CreateOr(b_.CreateLoad(b_.getInt32Ty(), err_), b_.CreateZExt(negative, b_.getInt32Ty())), err_);
  Value* e0 = b_.CreateSelect(negative, iconst(ty, 0), exp);
  // square and multiply while bits remain (a loop of its own: the element loop then stays scalar)
  llvm::Function* f = b_.GetInsertBlock()->getParent();
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  llvm::BasicBlock* body = llvm::BasicBlock::Create(ctx_, "pow", f);
  llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx_, "pow.done", f);
  b_.CreateCondBr(b_.CreateICmpNE(e0, iconst(ty, 0)), body, done);
  b_.SetInsertPoint(body);
  llvm::PHINode* r = b_.CreatePHI(ty, 2);
  llvm::PHINode* bb = b_.CreatePHI(ty, 2);
  llvm::PHINode* e = b_.CreatePHI(ty, 2);
  Value* odd = b_.CreateICmpNE(b_.CreateAnd(e, iconst(ty, 1)), iconst(ty, 0));
  Value* r2 = b_.CreateSelect(odd, b_.CreateMul(r, bb), r);
  Value* b2 = b_.CreateMul(bb, bb);
  Value* e2 = b_.CreateLShr(e, iconst(ty, 1));
  r->addIncoming(iconst(ty, 1), pre);
  r->addIncoming(r2, body);
  bb->addIncoming(base, pre);
  bb->addIncoming(b2, body);
  e->addIncoming(e0, pre);
  e->addIncoming(e2, body);
  b_.CreateCondBr(b_.CreateICmpNE(e2, iconst(ty, 0)), body, done);
  b_.SetInsertPoint(done);
  llvm::PHINode* result = b_.CreatePHI(ty, 2);
  result->addIncoming(iconst(ty, 1), pre);
  result->addIncoming(r2, body);
  return result;
}

}  // namespace strider::detail
