// The stage's final reduction. Two loop shapes:
// - the reduced axes are the innermost ones: each output element's accumulator lives in registers
//   (loop-carried values) across the reduced loops, and the innermost of them vectorizes as an
//   LLVM reduction (sum, prod, any, all);
// - otherwise (a column sum, say): accumulators live in scratch memory, one per output element,
//   initialized, updated at every point of the full nest (whose innermost loop runs over output
//   elements and vectorizes), then converted into the output.
// The order in which each output element sees its inputs is the reference's in both, so only the
// vectorizer's reassociation of float sums and products can change a result.
//
// max, min, argmax and argmin over one innermost axis (a row) take a third shape, because their
// fold (NaN wins, then strictly better values, the first occurrence kept) does not vectorize:
// a pass computing the row's extreme with a NaN flag (which does), then a scan for the element
// the fold would have kept: the first NaN, else the first element equal to the extreme. The
// scan reads the input again, or a row buffer on the stack where the input lives in registers.

#include "codegen/llvm/emitter.h"

namespace strider::detail {

using llvm::Value;

namespace {


bool innermost_reduction(const StagePlan& p) {
  bool seen = false;
  for (bool r : p.reduced) {
    if (r) seen = true;
    else if (seen) return false;
  }
  return true;
}

// One reduction's accumulator: its values, start, step and result, as ops/reduce_spec.h says.
struct Fold {
  Emitter& e;
  const ReduceSpec& spec;
  DType in, out;

  using C = ReduceSpec::Combine;
  llvm::IRBuilder<>& b() { return e.b_; }

  llvm::Type* value_type() { return e.reg_type(spec.acc); }

  std::vector<llvm::Type*> types() {
    if (spec.index) return {value_type(), b().getInt64Ty()};
    return {value_type()};
  }

  Emitter::Values init() {
    llvm::Type* t = value_type();
    if (spec.has_identity()) {
      if (t->isFloatingPointTy()) return {llvm::ConstantFP::get(t, spec.identity())};
      return {llvm::ConstantInt::get(t, spec.identity())};
    }
    // the extremes start below (above) every value at index 0: the first element then replaces
    // them unless it equals them, and the result is the reference's either way
    const bool up = spec.is_max();
    Value* start;
    if (is_float(in)) start = llvm::ConstantFP::getInfinity(t, up);
    else if (in == DType::Bool) start = up ? b().getFalse() : b().getTrue();
    else if (dtype_kind(in) == 'u') start = up ? llvm::ConstantInt::get(t, 0) : llvm::ConstantInt::getAllOnesValue(t);
    else start = up ? llvm::ConstantInt::get(t, llvm::APInt::getSignedMinValue(t->getIntegerBitWidth()))
                    : llvm::ConstantInt::get(t, llvm::APInt::getSignedMaxValue(t->getIntegerBitWidth()));
    if (spec.index) return {start, e.i64(0)};
    return {start};
  }

  Emitter::Values update(const Emitter::Values& s, Value* x, Value* flat) {
    switch (spec.combine) {
      case C::Add:
      case C::Multiply: {
        const bool sum = spec.combine == C::Add;
        if (spec.acc == DType::Float16) {
          // NumPy's float16 steps: in float, rounded to half after each, in order
          Value* wide = e.convert(x, in, DType::Float32);
          Value* next = sum ? b().CreateFAdd(s[0], wide) : b().CreateFMul(s[0], wide);
          return {b().CreateFPExt(b().CreateFPTrunc(next, b().getHalfTy()), b().getFloatTy())};
        }
        if (is_float(in)) {
          // float sums may be reassociated (and so vectorized; NumPy's are pairwise, README's
          // Accuracy); products not: NumPy multiplies in order, and its product is bit for bit
          llvm::IRBuilderBase::FastMathFlagGuard guard(b());
          llvm::FastMathFlags fmf;
          if (sum) fmf.setAllowReassoc();
          b().setFastMathFlags(fmf);
          Value* wide = e.convert(x, in, spec.acc);
          return {sum ? b().CreateFAdd(s[0], wide) : b().CreateFMul(s[0], wide)};
        }
        if (in == DType::Bool) return {sum ? b().CreateOr(s[0], x) : b().CreateAnd(s[0], x)};
        return {sum ? b().CreateAdd(s[0], x) : b().CreateMul(s[0], x)};
      }
      case C::Or: return {b().CreateOr(s[0], e.convert(x, in, DType::Bool))};
      case C::And: return {b().CreateAnd(s[0], e.convert(x, in, DType::Bool))};
      case C::Max:
      case C::Min: break;
    }
    // st::replaces: NaN wins, then strictly better values, so the first occurrence is kept
    Value* best = s[0];
    Value* take = e.call_scalar(std::string(spec.is_max() ? "st_replaces_max_" : "st_replaces_min_") + dtype_name(in),
                                b().getInt1Ty(), {x, best});
    Emitter::Values next{b().CreateSelect(take, x, best)};
    if (spec.index) next.push_back(b().CreateSelect(take, flat, s[1]));
    return next;
  }

  Value* finish(const Emitter::Values& s) {
    if (spec.index) return e.convert(s[1], DType::Int64, out);
    if (spec.acc == DType::Bool && in != DType::Bool) return e.convert(s[0], DType::Bool, out);  // any, all
    return e.convert(e.convert(s[0], spec.acc, in), in, out);
  }
};

// A strided row's extreme is folded in this many interleaved chains: in one, each step waits on
// the compare before it.
constexpr int kStridedExtremeChains = 4;

// Rows whose input lives in registers are buffered on the stack up to this size.
constexpr int64_t kRowBufferBytes = 16384;

bool row_extreme_applies(const Graph& g, const StagePlan& p, const std::vector<int>& folded) {
  const Op& r = p.ops.back();
  // float16 computes in float but lives in half: the generic fold (st::replaces) takes it
  if (p.reduce.has_identity() || folded.size() != 1 || g.dtype_of(r.inputs[0]) == DType::Float16) return false;
  const int a = folded[0];
  if (p.domain[a] < 1) return false;  // a run-time extent's bound: the row buffer's size
  const bool in_registers = p.registers.count(r.inputs[0].storage) > 0;
  return !in_registers || p.domain[a] * static_cast<int64_t>(itemsize(g.dtype_of(r.inputs[0]))) <= kRowBufferBytes;
}

}  // namespace

Value* Emitter::find_first(Value* enabled, Value* n, llvm::Type* elem, bool contiguous, int lanes,
                           const std::function<Value*(Value*)>& at, const std::function<Value*(Value*)>& pred) {
  llvm::Function* f = b_.GetInsertBlock()->getParent();
  auto block = [&](const char* name) { return llvm::BasicBlock::Create(ctx_, name, f); };
  llvm::BasicBlock* done = block("scan.done");  // owned by f at once, as in loop(); moved last below
  std::vector<std::pair<Value*, llvm::BasicBlock*>> results;
  const llvm::Align align(m_.getDataLayout().getTypeAllocSize(elem).getFixedValue());
  const bool vector = contiguous && lanes >= 2 && lanes <= 64;
  llvm::BasicBlock* tail = block("scan.tail");
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  results.push_back({i64(0), pre});
  llvm::BasicBlock* scan = block("scan");
  b_.CreateCondBr(enabled, scan, done);
  b_.SetInsertPoint(scan);
  std::vector<std::pair<Value*, llvm::BasicBlock*>> tail_starts{{i64(0), scan}};
  if (vector) {
    // whole vectors: the lanes' matches as bits, the first set one is the answer
    llvm::BasicBlock* first = block("scan.vector");
    b_.CreateCondBr(b_.CreateICmpSGE(n, i64(lanes)), first, tail);
    b_.SetInsertPoint(first);
    llvm::PHINode* i = b_.CreatePHI(b_.getInt64Ty(), 2, "i");
    i->addIncoming(i64(0), scan);
    auto* vty = llvm::FixedVectorType::get(elem, lanes);
    llvm::LoadInst* v = b_.CreateAlignedLoad(vty, at(i), align);
    Value* bits = b_.CreateBitCast(pred(v), b_.getIntNTy(lanes));
    llvm::BasicBlock* found = block("scan.found");
    llvm::BasicBlock* next = block("scan.next");
    b_.CreateCondBr(b_.CreateICmpNE(bits, llvm::ConstantInt::get(bits->getType(), 0)), found, next);
    b_.SetInsertPoint(found);
    Value* lane = b_.CreateZExtOrTrunc(b_.CreateBinaryIntrinsic(llvm::Intrinsic::cttz, bits, b_.getTrue()), b_.getInt64Ty());
    results.push_back({b_.CreateAdd(i, lane), found});
    b_.CreateBr(done);
    b_.SetInsertPoint(next);
    Value* inext = b_.CreateAdd(i, i64(lanes), "", true, true);
    i->addIncoming(inext, next);
    tail_starts.push_back({inext, next});
    b_.CreateCondBr(b_.CreateICmpSLE(inext, b_.CreateSub(n, i64(lanes))), first, tail);
  } else {
    b_.CreateBr(tail);
  }
  // one element at a time (the remainder, or all of a strided row)
  b_.SetInsertPoint(tail);
  llvm::PHINode* start = b_.CreatePHI(b_.getInt64Ty(), static_cast<unsigned>(tail_starts.size()), "tail");
  for (const auto& [v, from] : tail_starts) start->addIncoming(v, from);
  llvm::BasicBlock* body = block("scan.one");
  results.push_back({i64(0), tail});  // not found: cannot happen, the row holds its extreme
  b_.CreateCondBr(b_.CreateICmpSLT(start, n), body, done);
  b_.SetInsertPoint(body);
  llvm::PHINode* j = b_.CreatePHI(b_.getInt64Ty(), 2, "j");
  j->addIncoming(start, tail);
  llvm::LoadInst* x = b_.CreateAlignedLoad(elem, at(j), align);
  llvm::BasicBlock* found = block("scan.found");
  llvm::BasicBlock* next = block("scan.next");
  b_.CreateCondBr(pred(x), found, next);
  b_.SetInsertPoint(found);
  results.push_back({j, found});
  b_.CreateBr(done);
  b_.SetInsertPoint(next);
  Value* jnext = b_.CreateAdd(j, i64(1), "", true, true);
  j->addIncoming(jnext, next);
  results.push_back({i64(0), next});
  b_.CreateCondBr(b_.CreateICmpSLT(jnext, n), body, done);
  if (done != &f->back()) done->moveAfter(&f->back());
  b_.SetInsertPoint(done);
  llvm::PHINode* k = b_.CreatePHI(b_.getInt64Ty(), static_cast<unsigned>(results.size()), "first");
  for (const auto& [v, from] : results) k->addIncoming(v, from);
  return k;
}

Value* Emitter::row_extreme(int a, const std::function<Value*()>& point) {
  const Op& r = p_.ops.back();
  const DType t = g_.dtype_of(r.inputs[0]);
  const int64_t room = p_.domain[a];  // the row's length, or the bound of its run-time length
  Value* n = bound_[a];
  const bool fp = is_float(t);
  const View& in = r.inputs[0];
  Fold fold{*this, p_.reduce, t, g_.dtype_of(r.output)};
  const bool up = fold.spec.is_max();
  llvm::Type* elem = mem_type(t);

  // a register input is kept in a row buffer for the scan, allocated once per call
  Value* buffer = nullptr;
  if (p_.registers.count(in.storage)) {
    llvm::Function* f = b_.GetInsertBlock()->getParent();
    llvm::IRBuilder<> entry(&f->getEntryBlock(), f->getEntryBlock().begin());
    llvm::AllocaInst* alloca = entry.CreateAlloca(llvm::ArrayType::get(elem, room), nullptr, "row");
    alloca->setAlignment(llvm::Align(64));
    buffer = alloca;
  }
  auto at = [&](Value* i) -> Value* {
    if (buffer) return b_.CreateInBoundsGEP(elem, buffer, i);
    idx_[a] = i;
    Value* ptr = b_.CreateInBoundsGEP(elem, base_[in.storage], element_index(in));
    idx_[a] = nullptr;
    return ptr;
  };

  // pass 1: the extreme and whether the row holds a NaN. Floats compare as integers (the sign
  // bit kept, the other bits flipped for negatives: the IEEE order, -0 below +0, NaNs past the
  // infinities at both ends), which the loop vectorizer reduces where it cannot reduce a
  // NaN-aware float compare. A NaN shows as a key past an infinity's, so the other extreme of the
  // keys is folded too: an or-ed flag instead would chain each step to the last in a mask
  // register, which serializes the gathers of a strided row.
  const unsigned bits = fp ? static_cast<unsigned>(8 * itemsize(t)) : 0;
  auto order_key = [&](Value* x) -> Value* {  // its own inverse
    Value* xi = b_.CreateBitCast(x, b_.getIntNTy(bits));
    return b_.CreateXor(xi, b_.CreateLShr(b_.CreateAShr(xi, bits - 1), 1));
  };
  const bool uns = dtype_kind(t) == 'u';
  auto beyond = [&](bool above, Value* key, Value* than) {
    return above ? (uns ? b_.CreateICmpUGT(key, than) : b_.CreateICmpSGT(key, than))
                 : (uns ? b_.CreateICmpULT(key, than) : b_.CreateICmpSLT(key, than));
  };
  auto infinity = [&](bool positive) { return order_key(llvm::ConstantFP::getInfinity(reg_type(t), !positive)); };
  Values init = fold.init();
  init.resize(1);
  if (fp) init = {order_key(init[0]), infinity(up)};
  Values out = loop(i64(0), n, init,
                    [&](Value* i, const Values& c) -> Values {
                      idx_[a] = i;
                      Value* x = point();
                      if (buffer) b_.CreateStore(t == DType::Bool ? b_.CreateZExt(x, elem) : x, at(i));
                      if (t == DType::Bool) return {up ? b_.CreateOr(c[0], x) : b_.CreateAnd(c[0], x)};
                      Value* key = fp ? order_key(x) : x;
                      Values next{b_.CreateSelect(beyond(up, key, c[0]), key, c[0])};
                      if (fp) next.push_back(b_.CreateSelect(beyond(!up, key, c[1]), key, c[1]));
                      return next;
                    },
                    loop_hints(a, in.strides[a] == 1 || buffer ? 1 : kStridedExtremeChains));
  idx_[a] = nullptr;
  Value* m = fp ? b_.CreateBitCast(order_key(out[0]), reg_type(t)) : out[0];
  Value* any_nan = fp ? b_.CreateOr(beyond(up, out[0], infinity(up)), beyond(!up, out[1], infinity(!up))) : b_.getFalse();
  if (!fold.spec.index && !fp) return fold.finish({m, i64(0)});  // integers: the extreme is the element

  // pass 2: the first NaN, else the first element equal to the extreme (== ignores the sign of
  // zero, as the fold's strict compares do)
  auto pred = [&](Value* x) -> Value* {
    auto splat = [&](Value* s) -> Value* {
      auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(x->getType());
      return vt ? b_.CreateVectorSplat(vt->getNumElements(), s) : s;
    };
    if (t == DType::Bool) {
      Value* truth = b_.CreateICmpNE(x, llvm::Constant::getNullValue(x->getType()));
      return b_.CreateICmpEQ(truth, splat(m));
    }
    if (!fp) return b_.CreateICmpEQ(x, splat(m));
    return b_.CreateSelect(any_nan, b_.CreateFCmpUNO(x, x), b_.CreateFCmpOEQ(x, splat(m)));
  };
  const bool contiguous = buffer || in.strides[a] == 1;
  // max and min need the element itself only for a NaN's payload or a zero's sign
  Value* enabled = fold.spec.index ? b_.getTrue()
                                  : b_.CreateOr(any_nan, b_.CreateFCmpOEQ(m, llvm::ConstantFP::get(m->getType(), 0.0)));
  Value* k = find_first(enabled, n, elem, contiguous, p_.vector_width, at, pred);
  if (fold.spec.index) return fold.finish({m, k});
  Value* x = b_.CreateAlignedLoad(elem, at(k), llvm::Align(itemsize(t)));
  return fold.finish({b_.CreateSelect(enabled, x, m), k});
}

int Emitter::scratch_arrays() const {
  if (!p_.reduction || innermost_reduction(p_)) return 0;
  return p_.reduce.index ? 2 : 1;
}

void Emitter::emit_reduction() {
  const int last = static_cast<int>(p_.ops.size()) - 1;
  const Op& r = p_.ops[last];
  cur_op_ = last;
  Fold fold{*this, p_.reduce, g_.dtype_of(r.inputs[0]), g_.dtype_of(r.output)};
  std::vector<int> kept, folded;
  for (int a = 0; a < p_.rank(); ++a) (p_.reduced[a] ? folded : kept).push_back(a);

  // the elementwise ops before the reduction, then its input, at the current point
  auto point = [&]() -> Value* {
    for (int k = 0; k < last; ++k) {
      cur_op_ = k;
      emit_op(p_.ops[k]);
    }
    cur_op_ = last;
    Value* x = load(r.inputs[0]);
    std::fill(reg_.begin(), reg_.end(), nullptr);
    return x;
  };
  // C-order index over the reduced axes (argmax's answer)
  auto flat = [&]() -> Value* {
    if (!fold.spec.index) return nullptr;
    Value* f = i64(0);
    for (int a : folded) f = b_.CreateAdd(b_.CreateMul(f, bound_[a], "", false, true), idx_[a], "", false, true);
    return f;
  };

  if (scratch_arrays() == 0 && row_extreme_applies(g_, p_, folded)) {
    nest(kept, [&] { store(r.output, row_extreme(folded[0], point)); }, nullptr);
    return;
  }
  if (scratch_arrays() == 0) {
    std::function<Values(size_t, const Values&)> fold_loops = [&](size_t k, const Values& state) -> Values {
      if (k == folded.size()) {
        Value* x = point();
        return fold.update(state, x, flat());
      }
      const int a = folded[k];
      Values out = loop(i64(0), upper(a), state,
                        [&](Value* i, const Values& carried) {
                          idx_[a] = i;
                          return fold_loops(k + 1, carried);
                        },
                        k + 1 == folded.size() ? loop_hints(a) : nullptr);
      idx_[a] = nullptr;
      return out;
    };
    nest(kept, [&] { store(r.output, fold.finish(fold_loops(0, fold.init()))); },
         folded.empty() && !kept.empty() ? loop_hints(kept.back()) : nullptr);
    return;
  }

  // accumulators in scratch: array c holds component c for every output element, C order
  const int n = static_cast<int>(g_.storages.size());
  std::vector<llvm::Type*> types = fold.types();
  std::vector<Value*> arrays;
  std::vector<llvm::Type*> mem;
  int64_t count = 1;
  for (int a : kept) count *= p_.domain[a];
  for (llvm::Type* t : types) {
    mem.push_back(t->isIntegerTy(1) ? b_.getInt8Ty() : t);
    scratch_bytes_ = (scratch_bytes_ + 7) / 8 * 8;
    arrays.push_back(b_.CreateConstInBoundsGEP1_64(b_.getInt8Ty(), scratch_, scratch_bytes_));
    scratch_bytes_ += count * m_.getDataLayout().getTypeAllocSize(mem.back());
  }
  std::vector<int64_t> stride(p_.rank(), 0);
  for (int64_t s = 1, k = static_cast<int>(kept.size()) - 1; k >= 0; --k) {
    stride[kept[k]] = s;
    s *= p_.domain[kept[k]];
  }
  auto slot = [&](Value* at, size_t c) { return b_.CreateInBoundsGEP(mem[c], arrays[c], at); };
  auto load_state = [&](Value* at) {
    Values s;
    for (size_t c = 0; c < types.size(); ++c) {
      llvm::LoadInst* v = b_.CreateLoad(mem[c], slot(at, c));
      set_scopes(v, n + static_cast<int>(c));
      s.push_back(mem[c] == types[c] ? static_cast<Value*>(v) : b_.CreateTrunc(v, types[c]));
    }
    return s;
  };
  auto store_state = [&](Value* at, const Values& s) {
    for (size_t c = 0; c < types.size(); ++c)
      set_scopes(b_.CreateStore(b_.CreateZExtOrBitCast(s[c], mem[c]), slot(at, c)), n + static_cast<int>(c));
  };
  auto element = [&]() {
    Value* at = i64(0);
    for (int a : kept) at = b_.CreateAdd(at, b_.CreateMul(idx_[a], i64(stride[a]), "", false, true), "", false, true);
    return at;
  };

  // this call's output elements: a block of rows when axis 0 is split, else all of them
  Value* lo = i64(0);
  Value* hi = i64(count);
  if (p_.splits()) {
    int64_t row = 1;
    for (int a : kept)
      if (a != 0) row *= p_.domain[a];
    lo = b_.CreateMul(begin_, i64(row));
    hi = b_.CreateMul(end_, i64(row));
  }
  loop(lo, hi, {},
       [&](Value* i, const Values&) {
         store_state(i, fold.init());
         return Values{};
       },
       nullptr);
  std::vector<int> all(p_.rank());
  for (int a = 0; a < p_.rank(); ++a) all[a] = a;
  nest(all, [&] {
    Value* x = point();
    Value* at = element();
    store_state(at, fold.update(load_state(at), x, flat()));
  }, loop_hints(p_.rank() - 1));
  nest(kept, [&] { store(r.output, fold.finish(load_state(element()))); }, nullptr);
}

}  // namespace strider::detail
