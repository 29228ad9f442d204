// The compresses of a stage, all by one mask (ops.def), compiled into the stage instead of run
// by the runtime's library: an NMS loop compacts its candidates and each of their columns every
// trip, and the library's calls and byte-wise loops cost more than the trip's arithmetic. The
// mask is read and counted once for all of them. Elements move as integers of their size (the
// library copies bytes), dense rows as one block. Where the ops that make and count the mask lead
// the stage (legality's compress_conflict), the mask is made a block at a time into a stack slab
// and the block's elements or rows move while they are still in cache (YOLOv5's rows of 85
// floats, whose column the predicate has just read); the count is where the moves end.

#include <algorithm>

#include <llvm/IR/Intrinsics.h>

#include "codegen/llvm/emitter.h"

namespace strider::detail {

using llvm::Value;

void Emitter::emit_compress() {
  const size_t first = p_.first_compress;
  const View& mask = p_.ops[first].inputs[0];
  llvm::Type* i64t = b_.getInt64Ty();
  llvm::Type* i8t = b_.getInt8Ty();
  struct Move {
    const View *src, *out;
    int64_t size;
    llvm::Type* elem;
    Value* room;  // the output's count: no store reaches past it
    View src_row, out_row;  // for a compress of rows (stage_plan.cc): one row of each side
  };
  std::vector<Move> moves;
  const bool contiguous = first > 0 || mask.strides[0] == 1;  // a slab is contiguous
  bool vector = contiguous;
  int64_t narrowest = 8;
  for (size_t k = first; k < p_.ops.size(); ++k) {
    cur_op_ = static_cast<int>(k);
    const Op& op = p_.ops[k];
    const View &src = op.inputs[1], &out = op.output;
    const int64_t size = static_cast<int64_t>(itemsize(g_.dtype_of(src)));
    if (static_cast<int64_t>(itemsize(g_.dtype_of(out))) != size) refuse("its input and output differ in element size");
    // a count the stage computes is where the moves end: only the bound limits them
    Value* room = out.extent_of(0) >= 0 && first == 0 ? run_time_extent(base_[out.extent_of(0)], out.shape[0])
                                                      : i64(out.shape[0]);
    moves.push_back({&src, &out, size, b_.getIntNTy(static_cast<unsigned>(8 * size)), room, src.tail(1), out.tail(1)});
    // contiguous operands of 4 or 8 bytes: vpcompressd/q on AVX-512 (elsewhere LLVM expands the store)
    vector = vector && src.ndim() == 1 && (size == 4 || size == 8) && src.strides[0] == 1 && out.strides[0] == 1;
    narrowest = std::min(narrowest, size);
  }
  Value* room = moves[0].room;  // the least of the rooms: where whole vectors stop
  for (const Move& m : moves) room = b_.CreateSelect(b_.CreateICmpSLT(m.room, room), m.room, room);
  Value* n = bound_[0];
  auto at = [&](const View& v, llvm::Type* elem, Value* i) {
    Value* e = b_.CreateAdd(i64(v.offset), b_.CreateMul(i, i64(v.strides[0]), "", false, true), "", false, true);
    return b_.CreateInBoundsGEP(elem, base_[v.storage], e);
  };
  // the mask's bytes from element j on: in memory, or in the slab holding the block from `lo`
  Value* slab = nullptr;
  Value* lo = nullptr;
  auto load_mask = [&](llvm::Type* type, Value* j) {
    if (slab) return b_.CreateAlignedLoad(type, b_.CreateInBoundsGEP(i8t, slab, b_.CreateSub(j, lo)), llvm::Align(1));
    auto* m = b_.CreateAlignedLoad(type, at(mask, i8t, j), llvm::Align(1));
    set_scopes(m, object_of(mask));
    return m;
  };
  // Runs then() where `cond` holds, continuing after it.
  auto when = [&](Value* cond, const std::function<void()>& then) {
    llvm::Function* f = b_.GetInsertBlock()->getParent();
    auto* yes = llvm::BasicBlock::Create(ctx_, "keep", f);
    auto* next = llvm::BasicBlock::Create(ctx_, "next", f);
    b_.CreateCondBr(cond, yes, next);
    b_.SetInsertPoint(yes);
    then();
    b_.CreateBr(next);
    b_.SetInsertPoint(next);
  };
  // element or row j of a move's source to its output's k: a dense row as one block (moved: the
  // output may be the source moved towards its start), a row of one axis element by element
  auto move_one = [&](const Move& mv, Value* j, Value* k) {
    Value* from = at(*mv.src, mv.elem, j);
    Value* to = at(*mv.out, mv.elem, k);
    const llvm::Align align(mv.size);
    auto element = [&](Value* from, Value* to) {
      auto* x = b_.CreateAlignedLoad(mv.elem, from, align);
      set_scopes(x, object_of(*mv.src));
      set_scopes(b_.CreateAlignedStore(x, to, align), object_of(*mv.out));
    };
    if (mv.src->ndim() == 1) return element(from, to);
    if (mv.src_row.is_c_contiguous() && mv.out_row.is_c_contiguous()) {
      Value* bytes = i64(mv.src_row.numel() * mv.size);
      if (mv.src->storage == mv.out->storage) b_.CreateMemMove(to, align, from, align, bytes);
      else b_.CreateMemCpy(to, align, from, align, bytes);
      return;
    }
    loop(i64(0), i64(mv.src_row.shape[0]), {}, [&](Value* e, const Values&) {
      element(b_.CreateInBoundsGEP(mv.elem, from, b_.CreateMul(e, i64(mv.src_row.strides[0]))),
              b_.CreateInBoundsGEP(mv.elem, to, b_.CreateMul(e, i64(mv.out_row.strides[0]))));
      return Values{};
    }, nullptr);
  };
  // a kept element j, after k kept ones: each output takes it while it has room
  auto move_kept = [&](Value* j, Value* k) {
    for (const Move& mv : moves) when(b_.CreateICmpSLT(k, mv.room), [&] { move_one(mv, j, k); });
  };
  // then() where `cond` holds, else otherwise(): the value of the branch taken
  auto choose = [&](Value* cond, const std::function<Value*()>& then, const std::function<Value*()>& otherwise) {
    llvm::Function* f = b_.GetInsertBlock()->getParent();
    auto* yes = llvm::BasicBlock::Create(ctx_, "then", f);
    auto* no = llvm::BasicBlock::Create(ctx_, "else", f);
    auto* join = llvm::BasicBlock::Create(ctx_, "join", f);
    b_.CreateCondBr(cond, yes, no);
    llvm::PHINode* phi = nullptr;
    for (auto [from, value] : {std::pair{yes, &then}, {no, &otherwise}}) {
      b_.SetInsertPoint(from);
      Value* v = (*value)();
      llvm::BasicBlock* end = b_.GetInsertBlock();
      b_.CreateBr(join);
      b_.SetInsertPoint(join);
      if (!phi) phi = b_.CreatePHI(v->getType(), 2);
      phi->addIncoming(v, end);
    }
    return static_cast<Value*>(phi);
  };
  // one element: k counts the kept elements before it
  auto one = [&](Value* j, Value* k) -> Value* {
    Value* kept = b_.CreateICmpNE(load_mask(i8t, j), b_.getInt8(0));
    when(kept, [&] { move_kept(j, k); });
    return b_.CreateAdd(k, b_.CreateZExt(kept, i64t));
  };
  auto ones = [&](Value* lo, Value* hi, Value* k) {
    return loop(lo, hi, {k}, [&](Value* j, const Values& c) { return Values{one(j, c[0])}; }, outer_hints())[0];
  };
  // elements [from, to) of a contiguous mask, 64 at a time: a word of false costs a compare,
  // each kept element a bit scan (a score threshold keeps a few percent of a prediction's rows)
  auto sparse = [&](Value* from, Value* to, Value* k) {
    constexpr int64_t kWord = 64;
    auto* bytes = llvm::FixedVectorType::get(i8t, kWord);
    Value* words = b_.CreateSDiv(b_.CreateSub(to, from), i64(kWord));
    k = loop(i64(0), words, {k}, [&](Value* w, const Values& c) {
      Value* j = b_.CreateAdd(from, b_.CreateMul(w, i64(kWord), "", true, true));
      Value* bits = b_.CreateBitCast(b_.CreateICmpNE(load_mask(bytes, j), llvm::Constant::getNullValue(bytes)), i64t);
      Value* set = b_.CreateUnaryIntrinsic(llvm::Intrinsic::ctpop, bits);
      return Values{loop(i64(0), set, {bits, c[0]}, [&](Value*, const Values& d) {
        move_kept(b_.CreateAdd(j, b_.CreateBinaryIntrinsic(llvm::Intrinsic::cttz, d[0], b_.getTrue())), d[1]);
        return Values{b_.CreateAnd(d[0], b_.CreateSub(d[0], i64(1))), b_.CreateAdd(d[1], i64(1))};
      }, nullptr)[1]};
    }, outer_hints())[0];
    return ones(b_.CreateAdd(from, b_.CreateMul(words, i64(kWord))), to, k);
  };
  // a 64-byte vector of the narrowest elements per step; wider ones move in several
  const int64_t lanes = 64 / narrowest;
  auto* bytes = llvm::FixedVectorType::get(i8t, static_cast<unsigned>(lanes));
  auto kept = [&](Value* part) {
    const unsigned width = llvm::cast<llvm::FixedVectorType>(part->getType())->getNumElements();
    return b_.CreateZExt(b_.CreateUnaryIntrinsic(llvm::Intrinsic::ctpop, b_.CreateBitCast(part, b_.getIntNTy(width))), i64t);
  };
  // lanes [part, part + per) of a step's lane vector
  auto part_of = [&](Value* v, int64_t part, int64_t per) -> Value* {
    if (per == lanes) return v;
    llvm::SmallVector<int, 16> idx;
    for (int64_t l = 0; l < per; ++l) idx.push_back(static_cast<int>(part + l));
    return b_.CreateShuffleVector(v, idx);
  };
  // the step from element j, after k kept ones: each output's elements where `bits` holds, a
  // compressing store per 64 bytes; only the `active` lanes load (null: all)
  auto move_step = [&](Value* j, Value* k, Value* bits, Value* active) {
    for (const Move& mv : moves) {
      const int64_t per = 64 / mv.size;
      auto* vec = llvm::FixedVectorType::get(mv.elem, static_cast<unsigned>(per));
      Value* to = k;
      for (int64_t part = 0; part < lanes; part += per) {
        Value* sel = part_of(bits, part, per);
        Value* from = at(*mv.src, mv.elem, b_.CreateAdd(j, i64(part)));
        llvm::Instruction* x = active ? static_cast<llvm::Instruction*>(b_.CreateMaskedLoad(vec, from, llvm::Align(mv.size), part_of(active, part, per)))
                                      : b_.CreateAlignedLoad(vec, from, llvm::Align(mv.size));
        set_scopes(x, object_of(*mv.src));
        auto* st = b_.CreateIntrinsic(llvm::Intrinsic::masked_compressstore, {vec}, {x, at(*mv.out, mv.elem, to), sel});
        set_scopes(st, object_of(*mv.out));
        if (part + per < lanes) to = b_.CreateAdd(to, kept(sel));
      }
    }
  };
  // elements [from, to) after k kept ones; returns the kept ones after them
  auto range = [&](Value* from, Value* to, Value* k) {
    if (!vector) return contiguous ? sparse(from, to, k) : ones(from, to, k);
    Value* steps = b_.CreateSDiv(b_.CreateSub(to, from), i64(lanes));
    k = loop(i64(0), steps, {k}, [&](Value* s, const Values& c) {
      Value* j = b_.CreateAdd(from, b_.CreateMul(s, i64(lanes), "", true, true));
      Value* bits = b_.CreateICmpNE(load_mask(bytes, j), llvm::Constant::getNullValue(bytes));
      Value* after = b_.CreateAdd(c[0], kept(bits));
      return Values{choose(b_.CreateICmpSLE(after, room), [&] {
        move_step(j, c[0], bits, nullptr);
        return after;
      }, [&] { return ones(j, b_.CreateAdd(j, i64(lanes)), c[0]); })};  // a room ends inside this vector: one at a time
    }, outer_hints())[0];
    return ones(b_.CreateAdd(from, b_.CreateMul(steps, i64(lanes))), to, k);
  };
  if (first == 0) {
    range(i64(0), n, i64(0));
    return;
  }
  // where no output's room ends before the elements do (the count the stage computes is at most
  // the bound), every step moves whole vectors: plain loads while whole steps remain (masked
  // ones cost an NMS trip 3-4%), then one step with the lanes past `to` masked off; no element
  // goes one at a time
  bool roomy = vector;
  for (const Move& mv : moves) roomy = roomy && mv.out->shape[0] >= p_.domain[0];
  auto steps_of = [&](Value* from, Value* to, Value* k) {
    llvm::SmallVector<llvm::Constant*, 64> ids;
    for (int64_t l = 0; l < lanes; ++l) ids.push_back(b_.getInt8(static_cast<uint8_t>(l)));
    Value* lane = llvm::ConstantVector::get(ids);
    Value* whole = b_.CreateSDiv(b_.CreateSub(to, from), i64(lanes));
    k = loop(i64(0), whole, {k}, [&](Value* s, const Values& c) {
      Value* j = b_.CreateAdd(from, b_.CreateMul(s, i64(lanes), "", true, true));
      Value* bits = b_.CreateICmpNE(load_mask(bytes, j), llvm::Constant::getNullValue(bytes));
      move_step(j, c[0], bits, nullptr);
      return Values{b_.CreateAdd(c[0], kept(bits))};
    }, outer_hints())[0];
    // the last, partial step: the lanes past `to` masked off
    Value* j = b_.CreateAdd(from, b_.CreateMul(whole, i64(lanes), "", true, true));
    Value* left = b_.CreateSub(to, j);
    return choose(b_.CreateICmpSGT(left, i64(0)), [&] {
      Value* active = b_.CreateICmpULT(lane, b_.CreateVectorSplat(static_cast<unsigned>(lanes), b_.CreateTrunc(left, i8t)));
      Value* bits = b_.CreateAnd(b_.CreateICmpNE(load_mask(bytes, j), llvm::Constant::getNullValue(bytes)), active);
      move_step(j, k, bits, active);
      return b_.CreateAdd(k, kept(bits));
    }, [&] { return k; });
  };
  // ops [0, first - 1) make the mask over a block into the slab, ops[first - 1] counts it; a
  // block is whole steps of every width
  constexpr int64_t kBlock = 256;
  llvm::AllocaInst* block = b_.CreateAlloca(llvm::ArrayType::get(i8t, kBlock), nullptr, "mask.block");
  block->setAlignment(llvm::Align(64));
  slab = block;
  Value* blocks = b_.CreateSDiv(b_.CreateAdd(n, i64(kBlock - 1)), i64(kBlock));
  Value* count = loop(i64(0), blocks, {i64(0)}, [&](Value* bi, const Values& c) {
    lo = b_.CreateMul(bi, i64(kBlock), "", true, true);
    Value* end = b_.CreateAdd(lo, i64(kBlock), "", true, true);
    Value* hi = b_.CreateSelect(b_.CreateICmpSLT(end, n), end, n);
    loop(lo, hi, {}, [&](Value* j, const Values&) {
      idx_[0] = j;
      for (size_t k = 0; k + 1 < first; ++k) {
        cur_op_ = static_cast<int>(k);
        emit_op(p_.ops[k]);
      }
      b_.CreateAlignedStore(b_.CreateZExt(load(mask), i8t), b_.CreateInBoundsGEP(i8t, block, b_.CreateSub(j, lo)), llvm::Align(1));
      std::fill(reg_.begin(), reg_.end(), nullptr);
      return Values{};
    }, loop_hints(0));
    idx_[0] = nullptr;
    return Values{roomy ? steps_of(lo, hi, c[0]) : range(lo, hi, c[0])};
  }, outer_hints())[0];
  store(p_.ops[first - 1].output, count);
}

}  // namespace strider::detail
