// The compresses of a stage, all by one mask (ops.def), compiled into the stage instead of run
// by the runtime's library: an NMS loop compacts its candidates and each of their columns every
// trip, and the library's calls and byte-wise loops cost more than the trip's arithmetic. The
// mask is read and counted once for all of them. Elements move as integers of their size (the
// library copies bytes), dense rows as one block. Where the ops that make and count the mask lead
// the stage (legality's compress_conflict), the mask is made a block at a time into a stack slab
// and the block's elements or rows move while they are still in cache (YOLOv5's rows of 85
// floats, whose column the predicate has just read); the count is where the moves end.
// Contiguous 4- and 8-byte elements move a vector at a time where the host has AVX-512 or AVX2
// (jit.h's VectorCompress), else one at a time.

#include <algorithm>

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/TargetParser/Triple.h>

#include "codegen/llvm/emitter.h"
#include "codegen/llvm/jit.h"
#include "schedule/default_schedule.h"

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
  const Jit::VectorCompress how = Jit::get()->vector_compress();
  bool vector = contiguous && how != Jit::VectorCompress::kNone;
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
    // contiguous operands of 4 or 8 bytes, where the host compresses vectors (jit.h)
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
  // then() where `cond` holds, else otherwise(): the values of the branch taken
  auto choose = [&](Value* cond, const std::function<Values()>& then, const std::function<Values()>& otherwise) {
    llvm::Function* f = b_.GetInsertBlock()->getParent();
    auto* yes = llvm::BasicBlock::Create(ctx_, "then", f);
    auto* no = llvm::BasicBlock::Create(ctx_, "else", f);
    auto* join = llvm::BasicBlock::Create(ctx_, "join", f);
    b_.CreateCondBr(cond, yes, no);
    Values phis;
    for (auto [from, value] : {std::pair{yes, &then}, {no, &otherwise}}) {
      b_.SetInsertPoint(from);
      const Values v = (*value)();
      llvm::BasicBlock* end = b_.GetInsertBlock();
      b_.CreateBr(join);
      b_.SetInsertPoint(join);
      for (size_t i = 0; i < v.size(); ++i) {
        if (phis.size() == i) phis.push_back(b_.CreatePHI(v[i]->getType(), 2));
        llvm::cast<llvm::PHINode>(phis[i])->addIncoming(v[i], end);
      }
    }
    return phis;
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
  // elements [from, from + 64 * words) of a contiguous mask, a word of 64 at a time: a word of
  // false costs a compare, each kept element j a bit scan and kept(j, c), with c carried
  constexpr int64_t kWord = 64;
  auto each_kept = [&](Value* from, Value* words, const Values& init, const std::function<Values(Value*, const Values&)>& kept) {
    auto* bytes = llvm::FixedVectorType::get(i8t, kWord);
    return loop(i64(0), words, init, [&](Value* w, const Values& c) {
      Value* j = b_.CreateAdd(from, b_.CreateMul(w, i64(kWord), "", true, true));
      Value* bits = b_.CreateBitCast(b_.CreateICmpNE(load_mask(bytes, j), llvm::Constant::getNullValue(bytes)), i64t);
      Values carried{bits};
      carried.insert(carried.end(), c.begin(), c.end());
      const Values out = loop(i64(0), b_.CreateUnaryIntrinsic(llvm::Intrinsic::ctpop, bits), carried, [&](Value*, const Values& d) {
        Values next{b_.CreateAnd(d[0], b_.CreateSub(d[0], i64(1)))};
        const Values rest = kept(b_.CreateAdd(j, b_.CreateBinaryIntrinsic(llvm::Intrinsic::cttz, d[0], b_.getTrue())),
                                 Values(d.begin() + 1, d.end()));
        next.insert(next.end(), rest.begin(), rest.end());
        return next;
      }, nullptr);
      return Values(out.begin() + 1, out.end());
    }, outer_hints());
  };
  // Rows of a cache line or more, a few percent of a large prediction kept: each one's lines are
  // requested for all the block's kept rows before any moves, so their misses overlap instead of
  // each row's waiting in turn (YOLOv5's rows of 85 floats out of memory, 7% of the stage)
  auto far = [](const Move& mv) { return mv.src->ndim() > 1 && mv.src_row.is_c_contiguous() && mv.src_row.numel() * mv.size >= 64; };
  const bool far_rows = std::any_of(moves.begin(), moves.end(), far);
  auto prefetch_row = [&](Value* j, const Values&) {
    for (const Move& mv : moves) {
      if (!far(mv)) continue;
      const int64_t row = mv.src_row.numel() * mv.size;
      Value* first = at(*mv.src, mv.elem, j);
      for (int64_t off = 0; off < row + 63; off += 64) prefetch(b_.CreateGEP(i8t, first, i64(std::min(off, row - 1))));  // the last byte's line too
    }
    return Values{};
  };
  // elements [from, to) of a contiguous mask (a score threshold keeps a few percent of a
  // prediction's rows): whole words by each_kept, then one at a time
  auto sparse = [&](Value* from, Value* to, Value* k) {
    Value* words = b_.CreateSDiv(b_.CreateSub(to, from), i64(kWord));
    if (slab && far_rows) each_kept(from, words, {}, prefetch_row);
    k = each_kept(from, words, {k}, [&](Value* j, const Values& c) {
      move_kept(j, c[0]);
      return Values{b_.CreateAdd(c[0], i64(1))};
    })[0];
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
  // With AVX2 (no compressing store: jit.h) each output's kept elements gather in a register, its
  // pending ones, and store a whole vector at a time, where a vector ends: a masked store of the
  // kept lanes alone is slow on AMD (an NMS loop 3x slower), and nothing past them may be written
  // (an output in place may be an array whose elements past the count NumPy keeps). Where every
  // output is its own source moved towards its start in a temporary (an NMS loop's candidates,
  // compress_in_place), a permuted vector stores whole: its lanes past the kept ones land on
  // source elements already read, which nothing reads again (an array's elements end at its
  // count); only a step the elements end inside stores its kept lanes alone (past them may be
  // elements still to read, or the storage's end).
  const bool permute = vector && how == Jit::VectorCompress::kPermute;
  bool in_place = permute;
  for (const Move& mv : moves)
    in_place = in_place && mv.out->storage == mv.src->storage && g_.storages[mv.src->storage].kind == StorageKind::Temp &&
               std::count_if(moves.begin(), moves.end(), [&](const Move& o) { return o.src->storage == mv.src->storage; }) == 1;
  const bool buffered = permute && !in_place;
  const int64_t vector_bytes = permute ? 32 : 64;
  auto* words = llvm::FixedVectorType::get(b_.getInt32Ty(), 8);
  // a constant table, made once per module (the stages of a group share it)
  auto table = [&](const std::string& name, auto values) {
    if (llvm::GlobalVariable* t = m_.getNamedGlobal(name)) return t;
    auto* data = llvm::ConstantDataArray::get(ctx_, values);
    auto* t = new llvm::GlobalVariable(m_, data->getType(), true, llvm::GlobalValue::PrivateLinkage, data, name);
    t->setAlignment(llvm::Align(64));
    return t;
  };
  // for `per` lanes of 32 / per bytes, row m: the 4-byte words of the lanes m's bits keep, in
  // order, as byte indices
  auto rows_of = [&](unsigned per) {
    std::vector<uint64_t> packed;
    const unsigned size = 8 / per;  // words in a lane
    for (unsigned m = 0; m < (1u << per); ++m) {
      uint64_t row = 0;
      unsigned at = 0;
      for (unsigned l = 0; l < per; ++l)
        if (m >> l & 1)
          for (unsigned w = 0; w < size; ++w) row |= uint64_t{l * size + w} << (8 * at++);
      packed.push_back(row);
    }
    return table("strider.compress.lanes" + std::to_string(per), packed);
  };
  // the vpermd order that moves the lanes `bits` keeps (of `per`) to the front, rotated by
  // `shift` words (null: none)
  auto permutation = [&](unsigned per, Value* bits, Value* shift) {
    Value* row = b_.CreateAlignedLoad(i64t, b_.CreateInBoundsGEP(i64t, rows_of(per), bits), llvm::Align(8));
    if (shift) row = b_.CreateIntrinsic(llvm::Intrinsic::fshl, {i64t}, {row, row, b_.CreateMul(shift, i64(8))});
    return b_.CreateZExt(b_.CreateBitCast(row, llvm::FixedVectorType::get(i8t, 8)), words);
  };
  // the first `count` of `per` lanes
  auto lanes_below = [&](unsigned per, Value* count) {
    llvm::SmallVector<llvm::Constant*, 8> ids;
    for (unsigned l = 0; l < per; ++l) ids.push_back(b_.getInt64(l));
    return b_.CreateICmpULT(llvm::ConstantVector::get(ids), b_.CreateVectorSplat(per, count));
  };
  // lanes [part, part + per) of a step from element j of a move's source; only the `active`
  // lanes load (null: all)
  auto load_part = [&](const Move& mv, Value* j, int64_t part, int64_t per, Value* active) {
    auto* vec = llvm::FixedVectorType::get(mv.elem, static_cast<unsigned>(per));
    Value* from = at(*mv.src, mv.elem, b_.CreateAdd(j, i64(part)));
    llvm::Instruction* x = active ? static_cast<llvm::Instruction*>(b_.CreateMaskedLoad(vec, from, llvm::Align(mv.size), part_of(active, part, per)))
                                  : b_.CreateAlignedLoad(vec, from, llvm::Align(mv.size));
    set_scopes(x, object_of(*mv.src));
    return x;
  };
  // the loop-carried state of the buffered moves: each move's pending words, then, for 4- and
  // 8-byte elements, the output element the pending ones store from (the kept ones before it
  // are stored)
  Values pend;
  auto from_of = [&](int64_t size) -> Value*& { return pend[moves.size() + (size == 4 ? 0 : 1)]; };
  auto with_pending = [&](Value* k) {
    Values v{k};
    v.insert(v.end(), pend.begin(), pend.end());
    return v;
  };
  auto take_pending = [&](const Values& v) {
    pend.assign(v.begin() + 1, v.end());
    return v[0];
  };
  auto start_pending = [&](Value* k) {
    if (!buffered) return;
    pend.assign(moves.size(), llvm::Constant::getNullValue(words));
    pend.push_back(k);
    pend.push_back(k);
  };
  // stores each move's pending elements (the kept ones before k), a masked store of as many lanes
  auto drain = [&](Value* k) {
    if (!buffered) return;
    for (size_t m = 0; m < moves.size(); ++m) {
      const Move& mv = moves[m];
      const unsigned per = static_cast<unsigned>(vector_bytes / mv.size);
      Value* from = from_of(mv.size);
      Value* lanes = lanes_below(per, b_.CreateSub(k, from));
      auto* vec = llvm::FixedVectorType::get(mv.elem, per);
      set_scopes(b_.CreateMaskedStore(b_.CreateBitCast(pend[m], vec), at(*mv.out, mv.elem, from), llvm::Align(mv.size), lanes),
                 object_of(*mv.out));
    }
    from_of(4) = from_of(8) = k;
  };
  // elements [lo, hi) one at a time after k kept ones, the pending ones stored first
  auto singly = [&](Value* lo, Value* hi, Value* k) {
    drain(k);
    k = ones(lo, hi, k);
    if (buffered) from_of(4) = from_of(8) = k;
    return k;
  };
  // the step's lanes [part, part + per) of the moves of `size`-byte elements, `bits` of which are
  // kept, after k kept ones (buffered): each move's kept words, permuted (vpermd) to follow its
  // pending ones (the permutation's row rotated by them), join them; where they fill a vector, it
  // stores and those left over are pending
  auto append = [&](int64_t size, Value* j, int64_t part, Value* bits, Value* active, Value* k) {
    const unsigned per = static_cast<unsigned>(vector_bytes / size);
    Value*& from = from_of(size);
    Value* b = b_.CreateSub(k, from);  // pending: fewer than per
    Value* shift = b_.CreateMul(b, i64(8 / per));  // in words
    Value* order = permutation(per, bits, shift);
    // the words below `shift`, from a table: fewer instructions than comparing with a splat
    std::vector<uint32_t> rows;
    for (unsigned r = 0; r < 8; ++r)
      for (unsigned w = 0; w < 8; ++w) rows.push_back(w < r ? ~0u : 0u);
    llvm::GlobalVariable* below = table("strider.compress.below", rows);
    Value* old = b_.CreateICmpNE(b_.CreateAlignedLoad(words, b_.CreateInBoundsGEP(b_.getInt32Ty(), below, b_.CreateMul(shift, i64(8))), llvm::Align(32)),
                                 llvm::Constant::getNullValue(words));
    Value* full = b_.CreateICmpSGE(b_.CreateAdd(b, b_.CreateUnaryIntrinsic(llvm::Intrinsic::ctpop, bits)), i64(per));
    std::vector<std::pair<size_t, Value*>> led, joined;
    for (size_t m = 0; m < moves.size(); ++m) {
      const Move& mv = moves[m];
      if (mv.size != size) continue;
      Value* x = load_part(mv, j, part, per, active);
      led.emplace_back(m, b_.CreateIntrinsic(llvm::Intrinsic::x86_avx2_permd, {}, {b_.CreateBitCast(x, words), order}));
      joined.emplace_back(m, b_.CreateSelect(old, pend[m], led.back().second));
    }
    when(full, [&] {
      for (auto [m, v] : joined) {
        const Move& mv = moves[m];
        auto* vec = llvm::FixedVectorType::get(mv.elem, per);
        set_scopes(b_.CreateAlignedStore(b_.CreateBitCast(v, vec), at(*mv.out, mv.elem, from), llvm::Align(mv.size)),
                   object_of(*mv.out));
      }
    });
    for (size_t i = 0; i < led.size(); ++i) pend[led[i].first] = b_.CreateSelect(full, led[i].second, joined[i].second);
    from = b_.CreateSelect(full, b_.CreateAdd(from, i64(per)), from);
  };
  // the same lanes of the moves in place in temporaries (in_place): each move's kept words,
  // permuted to the front, store whole at k; where only the `active` lanes load (the elements
  // end inside the step), the kept ones alone
  auto place = [&](int64_t size, Value* j, int64_t part, Value* bits, Value* active, Value* k) {
    const unsigned per = static_cast<unsigned>(vector_bytes / size);
    Value* order = permutation(per, bits, nullptr);
    for (const Move& mv : moves) {
      if (mv.size != size) continue;
      auto* vec = llvm::FixedVectorType::get(mv.elem, per);
      Value* v = b_.CreateBitCast(b_.CreateIntrinsic(llvm::Intrinsic::x86_avx2_permd, {},
                                                     {b_.CreateBitCast(load_part(mv, j, part, per, active), words), order}), vec);
      Value* to = at(*mv.out, mv.elem, k);
      llvm::Instruction* st = active ? static_cast<llvm::Instruction*>(b_.CreateMaskedStore(
                                           v, to, llvm::Align(mv.size), lanes_below(per, b_.CreateUnaryIntrinsic(llvm::Intrinsic::ctpop, bits))))
                                     : b_.CreateAlignedStore(v, to, llvm::Align(mv.size));
      set_scopes(st, object_of(*mv.out));
    }
  };
  // the step from element j, after k kept ones: each output's elements where `bits` holds, a
  // compressing store per 64 bytes, or with AVX2 32 bytes at a time, joined to its pending ones
  // (buffered) or stored whole (in_place); only the `active` lanes load
  auto compact_step = [&](Value* j, Value* k, Value* bits, Value* active) {
    if (permute) {
      // the step's lanes as bits of an integer: a part's are a shift and a mask away
      Value* all = b_.CreateZExt(b_.CreateBitCast(bits, b_.getIntNTy(static_cast<unsigned>(lanes))), i64t);
      for (int64_t size : {4, 8}) {
        if (std::none_of(moves.begin(), moves.end(), [&](const Move& mv) { return mv.size == size; })) continue;
        const int64_t per = vector_bytes / size;
        Value* to = k;
        for (int64_t part = 0; part < lanes; part += per) {
          Value* sel = b_.CreateAnd(b_.CreateLShr(all, i64(part)), i64((int64_t{1} << per) - 1));
          if (in_place) place(size, j, part, sel, active, to);
          else append(size, j, part, sel, active, to);
          to = b_.CreateAdd(to, b_.CreateUnaryIntrinsic(llvm::Intrinsic::ctpop, sel));
        }
      }
      return;
    }
    for (const Move& mv : moves) {
      const int64_t per = vector_bytes / mv.size;
      auto* vec = llvm::FixedVectorType::get(mv.elem, static_cast<unsigned>(per));
      Value* to = k;
      for (int64_t part = 0; part < lanes; part += per) {
        Value* sel = part_of(bits, part, per);
        Value* x = load_part(mv, j, part, per, active);
        auto* st = b_.CreateIntrinsic(llvm::Intrinsic::masked_compressstore, {vec}, {x, at(*mv.out, mv.elem, to), sel});
        set_scopes(st, object_of(*mv.out));
        if (part + per < lanes) to = b_.CreateAdd(to, kept(sel));
      }
    }
  };
  // the same where every lane of a whole step is kept (an NMS trip drops a few of thousands of
  // candidates): its lanes move as they are, plain loads and stores of 32 bytes (the same memory
  // written; buffered moves keep their pending words first). 64-byte ones, which the moves in
  // place leave unaligned, made an NMS loop 1.5x slower on a Zen 5.
  auto move_step = [&](Value* j, Value* k, Value* bits, Value* active) {
    if (active || buffered) return compact_step(j, k, bits, active);
    llvm::IntegerType* lane_bits = b_.getIntNTy(static_cast<unsigned>(lanes));
    Value* every = b_.CreateICmpEQ(b_.CreateBitCast(bits, lane_bits), llvm::Constant::getAllOnesValue(lane_bits));
    llvm::Function* f = b_.GetInsertBlock()->getParent();
    auto* whole = llvm::BasicBlock::Create(ctx_, "step.whole", f);
    auto* compacted = llvm::BasicBlock::Create(ctx_, "step.compacted", f);
    auto* done = llvm::BasicBlock::Create(ctx_, "step.done", f);
    b_.CreateCondBr(every, whole, compacted);
    b_.SetInsertPoint(whole);
    for (const Move& mv : moves)
      for (int64_t part = 0, per = 32 / mv.size; part < lanes; part += per)
        set_scopes(b_.CreateAlignedStore(load_part(mv, j, part, per, nullptr),
                                         at(*mv.out, mv.elem, b_.CreateAdd(k, i64(part))), llvm::Align(mv.size)),
                   object_of(*mv.out));
    b_.CreateBr(done);
    b_.SetInsertPoint(compacted);
    compact_step(j, k, bits, nullptr);
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
  };
  // elements [from, to) after k kept ones; returns the kept ones after them (pending ones stored)
  auto range = [&](Value* from, Value* to, Value* k) {
    if (!vector) return contiguous ? sparse(from, to, k) : ones(from, to, k);
    Value* steps = b_.CreateSDiv(b_.CreateSub(to, from), i64(lanes));
    k = take_pending(loop(i64(0), steps, with_pending(k), [&](Value* s, const Values& c) {
      Value* k = take_pending(c);
      Value* j = b_.CreateAdd(from, b_.CreateMul(s, i64(lanes), "", true, true));
      Value* bits = b_.CreateICmpNE(load_mask(bytes, j), llvm::Constant::getNullValue(bytes));
      Value* after = b_.CreateAdd(k, kept(bits));
      const Values before = pend;
      return choose(b_.CreateICmpSLE(after, room), [&] {
        move_step(j, k, bits, nullptr);
        return with_pending(after);
      }, [&] {  // a room ends inside this vector: one at a time
        pend = before;
        return with_pending(singly(j, b_.CreateAdd(j, i64(lanes)), k));
      });
    }, outer_hints()));
    return singly(b_.CreateAdd(from, b_.CreateMul(steps, i64(lanes))), to, k);
  };
  if (first == 0) {
    start_pending(i64(0));
    range(i64(0), n, i64(0));
    return;
  }
  // where no output's room ends before the elements do (the count the stage computes is at most
  // the bound), every step moves whole vectors: plain loads while whole steps remain (masked
  // ones cost an NMS trip 3-4%), then one step with the lanes past `to` masked off; no element
  // goes one at a time, and pending ones (AVX2) stay pending from block to block
  bool roomy = vector;
  for (const Move& mv : moves) roomy = roomy && mv.out->shape[0] >= p_.domain[0];
  auto steps_of = [&](Value* from, Value* to, Value* k) {
    llvm::SmallVector<llvm::Constant*, 64> ids;
    for (int64_t l = 0; l < lanes; ++l) ids.push_back(b_.getInt8(static_cast<uint8_t>(l)));
    Value* lane = llvm::ConstantVector::get(ids);
    Value* whole = b_.CreateSDiv(b_.CreateSub(to, from), i64(lanes));
    k = take_pending(loop(i64(0), whole, with_pending(k), [&](Value* s, const Values& c) {
      Value* k = take_pending(c);
      Value* j = b_.CreateAdd(from, b_.CreateMul(s, i64(lanes), "", true, true));
      Value* bits = b_.CreateICmpNE(load_mask(bytes, j), llvm::Constant::getNullValue(bytes));
      move_step(j, k, bits, nullptr);
      return with_pending(b_.CreateAdd(k, kept(bits)));
    }, outer_hints()));
    // the last, partial step: the lanes past `to` masked off
    Value* j = b_.CreateAdd(from, b_.CreateMul(whole, i64(lanes), "", true, true));
    Value* left = b_.CreateSub(to, j);
    const Values before = with_pending(k);
    return take_pending(choose(b_.CreateICmpSGT(left, i64(0)), [&] {
      Value* active = b_.CreateICmpULT(lane, b_.CreateVectorSplat(static_cast<unsigned>(lanes), b_.CreateTrunc(left, i8t)));
      Value* bits = b_.CreateAnd(b_.CreateICmpNE(load_mask(bytes, j), llvm::Constant::getNullValue(bytes)), active);
      move_step(j, k, bits, active);
      return with_pending(b_.CreateAdd(k, kept(bits)));
    }, [&] { return before; }));
  };
  // ops [0, first - 1) make the mask over [from, to) into `into` (from its start), ops[first - 1]
  // counts it where `counted` (else the moves do); returns the count or null
  auto make_mask = [&](Value* from, Value* to, Value* into, bool counted) -> Value* {
    const Values kept = loop(from, to, counted ? Values{i64(0)} : Values{}, [&](Value* j, const Values& c) {
      idx_[0] = j;
      prefetch_strided(0, first - 1, 0);
      for (size_t k = 0; k + 1 < first; ++k) {
        cur_op_ = static_cast<int>(k);
        emit_op(p_.ops[k]);
      }
      Value* m = b_.CreateZExt(load(mask), i8t);
      b_.CreateAlignedStore(m, b_.CreateInBoundsGEP(i8t, into, b_.CreateSub(j, from)), llvm::Align(1));
      std::fill(reg_.begin(), reg_.end(), nullptr);
      return counted ? Values{b_.CreateAdd(c[0], b_.CreateZExt(m, i64t))} : Values{};
    }, loop_hints(0));
    idx_[0] = nullptr;
    return counted ? kept[0] : nullptr;
  };
  if (p_.parallel_compress) {
    // chunks [begin, end) of the body's call: a chunk's mask into a slab, counted; once chunk c - 1
    // has published how many elements the chunks before c keep (scratch[c], -1 until then), c
    // publishes its own sum and moves its kept elements after theirs. The pool claims chunks in
    // order, so the one a chunk waits on is always running or done.
    const int64_t chunks = compaction_chunks();
    const int64_t most = ((p_.domain[0] + chunks - 1) / chunks + 63) / 64 * 64;  // whole vectors of the mask
    llvm::AllocaInst* chunk = b_.CreateAlloca(llvm::ArrayType::get(i8t, most), nullptr, "mask.chunk");
    chunk->setAlignment(llvm::Align(64));
    Value* len = b_.CreateSDiv(b_.CreateAdd(n, i64(chunks - 1)), i64(chunks));
    auto at_most_n = [&](Value* v) { return b_.CreateSelect(b_.CreateICmpSLT(v, n), v, n); };
    const bool x86 = llvm::Triple(m_.getTargetTriple()).isX86();
    loop(begin_, end_, {}, [&](Value* c, const Values&) {
      Value* from = at_most_n(b_.CreateMul(c, len, "", true, true));
      Value* to = at_most_n(b_.CreateAdd(from, len, "", true, true));
      Value* kept = make_mask(from, to, chunk, true);
      Value* slot = b_.CreateInBoundsGEP(i64t, scratch_, c);
      llvm::Function* f = b_.GetInsertBlock()->getParent();
      auto* wait = llvm::BasicBlock::Create(ctx_, "chunk.wait", f);
      auto* spin = llvm::BasicBlock::Create(ctx_, "chunk.spin", f);
      auto* go = llvm::BasicBlock::Create(ctx_, "chunk.go", f);
      b_.CreateBr(wait);
      b_.SetInsertPoint(wait);
      llvm::LoadInst* before = b_.CreateAlignedLoad(i64t, slot, llvm::Align(8));
      before->setAtomic(llvm::AtomicOrdering::Acquire);
      b_.CreateCondBr(b_.CreateICmpSGE(before, i64(0)), go, spin);
      b_.SetInsertPoint(spin);
      if (x86) b_.CreateIntrinsic(llvm::Intrinsic::x86_sse2_pause, {}, {});
      b_.CreateBr(wait);
      b_.SetInsertPoint(go);
      b_.CreateAlignedStore(b_.CreateAdd(before, kept), b_.CreateInBoundsGEP(i64t, scratch_, b_.CreateAdd(c, i64(1))), llvm::Align(8))
          ->setAtomic(llvm::AtomicOrdering::Release);
      slab = chunk;
      lo = from;
      start_pending(before);
      drain(roomy ? steps_of(from, to, before) : range(from, to, before));
      return Values{};
    }, nullptr);
    return;
  }
  // serially: a block's mask into the slab, then its elements move; a block is whole steps of
  // every width
  constexpr int64_t kBlock = 256;
  llvm::AllocaInst* block = b_.CreateAlloca(llvm::ArrayType::get(i8t, kBlock), nullptr, "mask.block");
  block->setAlignment(llvm::Align(64));
  slab = block;
  Value* blocks = b_.CreateSDiv(b_.CreateAdd(n, i64(kBlock - 1)), i64(kBlock));
  start_pending(i64(0));
  Value* count = take_pending(loop(i64(0), blocks, with_pending(i64(0)), [&](Value* bi, const Values& c) {
    Value* k = take_pending(c);
    lo = b_.CreateMul(bi, i64(kBlock), "", true, true);
    Value* end = b_.CreateAdd(lo, i64(kBlock), "", true, true);
    Value* hi = b_.CreateSelect(b_.CreateICmpSLT(end, n), end, n);
    make_mask(lo, hi, block, false);
    return with_pending(roomy ? steps_of(lo, hi, k) : range(lo, hi, k));
  }, outer_hints()));
  drain(count);
  store(p_.ops[first - 1].output, count);
}

int64_t Emitter::compaction_chunks() const {
  // eight at least, a few per thread: a worker that starts late holds back one short chunk; at
  // most kChunk points each: a chunk's mask is a slab on the stack
  constexpr int64_t kChunk = 4096;
  return std::max<int64_t>(8, (p_.domain[0] + kChunk - 1) / kChunk);
}

void Emitter::emit_compaction_entry(llvm::Function* entry, llvm::Function* body) {
  llvm::Type* ptr = b_.getPtrTy();
  llvm::Type* i64t = b_.getInt64Ty();
  b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", entry));
  Value* args = entry->getArg(0);
  const int64_t chunks = compaction_chunks();
  // the body's arguments: these, but for scratch the counts the chunks publish (scratch[0]: none
  // before the first chunk; -1: not yet)
  llvm::AllocaInst* before = b_.CreateAlloca(llvm::ArrayType::get(i64t, chunks + 1), nullptr, "chunks.before");
  b_.CreateMemSet(before, b_.getInt8(0xFF), (chunks + 1) * 8, llvm::MaybeAlign(8));
  b_.CreateAlignedStore(i64(0), before, llvm::Align(8));
  llvm::AllocaInst* own = b_.CreateAlloca(llvm::ArrayType::get(ptr, 4), nullptr, "chunk.args");
  for (int64_t slot = 0; slot < 4; ++slot) {
    Value* v = slot == 1 ? static_cast<Value*>(before) : b_.CreateLoad(ptr, b_.CreateConstInBoundsGEP1_64(ptr, args, slot));
    b_.CreateStore(v, b_.CreateConstInBoundsGEP1_64(ptr, own, slot));
  }
  Value* n = axis0_extent(args);
  // the pool's warm workers where the call has the points to share, else every chunk here
  llvm::FunctionCallee pf = m_.getOrInsertFunction("strider_parallel_for_warm", llvm::FunctionType::get(b_.getInt32Ty(), {i64t, ptr, ptr}, false));
  auto* here = llvm::BasicBlock::Create(ctx_, "serial", entry);
  auto* pooled = llvm::BasicBlock::Create(ctx_, "pooled", entry);
  auto* counted = llvm::BasicBlock::Create(ctx_, "counted", entry);
  b_.CreateCondBr(b_.CreateICmpSLT(n, i64(kParallelCompactionPoints)), here, pooled);
  b_.SetInsertPoint(here);
  Value* alone = b_.CreateCall(body, {own, i64(0), i64(chunks)});
  b_.CreateBr(counted);
  b_.SetInsertPoint(pooled);
  Value* shared = b_.CreateCall(pf, {i64(chunks), body, own});
  b_.CreateBr(counted);
  b_.SetInsertPoint(counted);
  llvm::PHINode* err = b_.CreatePHI(b_.getInt32Ty(), 2);
  err->addIncoming(alone, here);
  err->addIncoming(shared, pooled);
  // the count: what the chunks keep in all
  const View& count = p_.ops[p_.first_compress - 1].output;
  Value* total = b_.CreateAlignedLoad(i64t, b_.CreateConstInBoundsGEP1_64(i64t, before, chunks), llvm::Align(8));
  Value* base = b_.CreateLoad(ptr, base_slot(args, count.storage));
  b_.CreateAlignedStore(total, b_.CreateInBoundsGEP(i64t, base, i64(count.offset)), llvm::Align(8));
  b_.CreateRet(err);
}

}  // namespace strider::detail
