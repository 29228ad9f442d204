// A 1-d compress (ops.def) compiled into the stage instead of run by the runtime's library: an NMS
// loop compacts its candidates every trip, and the library's call and byte-wise loop cost more
// than the trip's arithmetic. Elements move as integers of their size (the library copies bytes).

#include <llvm/IR/Intrinsics.h>

#include "codegen/llvm/emitter.h"

namespace strider::detail {

using llvm::Value;

void Emitter::emit_compress() {
  cur_op_ = 0;
  const Op& op = p_.ops[0];
  const View &mask = op.inputs[0], &src = op.inputs[1], &out = op.output;
  const int64_t size = static_cast<int64_t>(itemsize(g_.dtype_of(src)));
  if (static_cast<int64_t>(itemsize(g_.dtype_of(out))) != size) refuse("its input and output differ in element size");
  llvm::Type* elem = b_.getIntNTy(static_cast<unsigned>(8 * size));
  llvm::Type* i64t = b_.getInt64Ty();
  Value* n = bound_[0];
  // the output's count: no store reaches past it
  Value* room = out.extent_of(0) >= 0 ? run_time_extent(base_[out.extent_of(0)], out.shape[0]) : i64(out.shape[0]);
  auto at = [&](const View& v, Value* i) {
    Value* e = b_.CreateAdd(i64(v.offset), b_.CreateMul(i, i64(v.strides[0]), "", false, true), "", false, true);
    return b_.CreateInBoundsGEP(v.storage == mask.storage ? b_.getInt8Ty() : elem, base_[v.storage], e);
  };
  // one element: kept while there is room
  auto one = [&](Value* j, Value* k) -> Value* {
    auto* m = b_.CreateAlignedLoad(b_.getInt8Ty(), at(mask, j), llvm::Align(1));
    set_scopes(m, object_of(mask));
    Value* keep = b_.CreateAnd(b_.CreateICmpNE(m, b_.getInt8(0)), b_.CreateICmpSLT(k, room));
    llvm::Function* f = b_.GetInsertBlock()->getParent();
    llvm::BasicBlock* from = b_.GetInsertBlock();
    auto* move = llvm::BasicBlock::Create(ctx_, "keep", f);
    auto* next = llvm::BasicBlock::Create(ctx_, "next", f);
    b_.CreateCondBr(keep, move, next);
    b_.SetInsertPoint(move);
    auto* x = b_.CreateAlignedLoad(elem, at(src, j), llvm::Align(size));
    set_scopes(x, object_of(src));
    set_scopes(b_.CreateAlignedStore(x, at(out, k), llvm::Align(size)), object_of(out));
    Value* k1 = b_.CreateAdd(k, i64(1));
    b_.CreateBr(next);
    b_.SetInsertPoint(next);
    llvm::PHINode* k2 = b_.CreatePHI(i64t, 2);
    k2->addIncoming(k, from);
    k2->addIncoming(k1, move);
    return k2;
  };
  auto ones = [&](Value* lo, Value* hi, Value* k) {
    return loop(lo, hi, {k}, [&](Value* j, const Values& c) { return Values{one(j, c[0])}; }, outer_hints())[0];
  };
  // contiguous operands of 4 or 8 bytes (vpcompressd/q on AVX-512; elsewhere LLVM expands the
  // store): a 64-byte vector per step while its kept elements fit the room
  const bool vector = (size == 4 || size == 8) && mask.strides[0] == 1 && src.strides[0] == 1 && out.strides[0] == 1;
  Value* k = i64(0);
  Value* done = i64(0);
  if (vector) {
    const int64_t lanes = 64 / size;
    auto* vec = llvm::FixedVectorType::get(elem, static_cast<unsigned>(lanes));
    auto* bytes = llvm::FixedVectorType::get(b_.getInt8Ty(), static_cast<unsigned>(lanes));
    Value* steps = b_.CreateSDiv(n, i64(lanes));
    k = loop(i64(0), steps, {k}, [&](Value* s, const Values& c) {
      Value* j = b_.CreateMul(s, i64(lanes), "", true, true);
      auto* m = b_.CreateAlignedLoad(bytes, at(mask, j), llvm::Align(1));
      set_scopes(m, object_of(mask));
      Value* bits = b_.CreateICmpNE(m, llvm::Constant::getNullValue(bytes));
      Value* count = b_.CreateZExt(
          b_.CreateUnaryIntrinsic(llvm::Intrinsic::ctpop, b_.CreateBitCast(bits, b_.getIntNTy(static_cast<unsigned>(lanes)))), i64t);
      Value* after = b_.CreateAdd(c[0], count);
      llvm::Function* f = b_.GetInsertBlock()->getParent();
      auto* whole = llvm::BasicBlock::Create(ctx_, "whole", f);
      auto* split = llvm::BasicBlock::Create(ctx_, "split", f);
      auto* join = llvm::BasicBlock::Create(ctx_, "join", f);
      b_.CreateCondBr(b_.CreateICmpSLE(after, room), whole, split);
      b_.SetInsertPoint(whole);
      auto* x = b_.CreateAlignedLoad(vec, at(src, j), llvm::Align(size));
      set_scopes(x, object_of(src));
      auto* st = b_.CreateIntrinsic(llvm::Intrinsic::masked_compressstore, {vec}, {x, at(out, c[0]), bits});
      set_scopes(st, object_of(out));
      b_.CreateBr(join);
      b_.SetInsertPoint(split);  // the room ends inside this vector: one at a time
      Value* partial = ones(j, b_.CreateAdd(j, i64(lanes)), c[0]);
      llvm::BasicBlock* tail = b_.GetInsertBlock();
      b_.CreateBr(join);
      b_.SetInsertPoint(join);
      llvm::PHINode* next = b_.CreatePHI(i64t, 2);
      next->addIncoming(after, whole);
      next->addIncoming(partial, tail);
      return Values{next};
    }, outer_hints())[0];
    done = b_.CreateMul(steps, i64(lanes));
  }
  ones(done, n, k);
}

}  // namespace strider::detail
