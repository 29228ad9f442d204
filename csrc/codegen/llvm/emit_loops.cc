#include <algorithm>
#include <functional>
#include <map>
#include <stdexcept>

#include <llvm/IR/MDBuilder.h>

#include "analysis/overlap.h"
#include "codegen/llvm/emitter.h"
#include "schedule/default_schedule.h"

namespace strider::detail {

using llvm::Value;

namespace {

// Storages and scratch arrays a stage's alias scopes name at most (see Emitter::emit).
constexpr int kMaxAliasScopes = 128;

}  // namespace

Emitter::Emitter(const Graph& g, const StagePlan& p, llvm::Module& m, bool vector_math, bool versions)
    : g_(g), p_(p), m_(m), ctx_(m.getContext()), b_(m.getContext()), vector_math_(vector_math), versions_(versions) {}

llvm::Value* Emitter::base_slot(llvm::Value* args, int sid) {
  const auto at = std::find(p_.bases.begin(), p_.bases.end(), sid);
  if (at == p_.bases.end()) throw std::logic_error("a storage the stage's text does not name: %s" + std::to_string(sid));
  // args[2][k]: where the k-th storage the text names is among the bases (args[0])
  llvm::Value* table = b_.CreateLoad(b_.getPtrTy(), b_.CreateConstInBoundsGEP1_64(b_.getPtrTy(), args, 2));
  llvm::Value* index = b_.CreateLoad(b_.getInt64Ty(), b_.CreateConstInBoundsGEP1_64(b_.getInt64Ty(), table,
                                                                                    at - p_.bases.begin()));
  return b_.CreateInBoundsGEP(b_.getPtrTy(), b_.CreateLoad(b_.getPtrTy(), args), index);
}

llvm::Type* Emitter::mem_type(DType t) {
  switch (t) {
    case DType::Float16: return b_.getHalfTy();
    case DType::Float32: return b_.getFloatTy();
    case DType::Float64: return b_.getDoubleTy();
    default: return b_.getIntNTy(8 * itemsize(t));  // bool as a byte; signedness is in the ops
  }
}

// bool computes as i1, float16 as float (st::reg_t)
llvm::Type* Emitter::reg_type(DType t) {
  return t == DType::Bool ? b_.getInt1Ty() : t == DType::Float16 ? b_.getFloatTy() : mem_type(t);
}

void Emitter::refuse(const std::string& why) const {
  std::string id = cur_op_ >= 0 && cur_op_ < static_cast<int>(p_.op_ids.size()) ? "op" + std::to_string(p_.op_ids[cur_op_])
                                                                                 : "stage op " + std::to_string(cur_op_);
  std::string name = cur_op_ >= 0 ? op_name(p_.ops[cur_op_].code) : "?";
  throw std::invalid_argument("LLVM backend cannot compile " + id + " (" + name + "): " + why);
}

Emitter::Values Emitter::loop(Value* lo, Value* hi, const Values& init, const LoopBody& body, llvm::MDNode* md) {
  llvm::Function* f = b_.GetInsertBlock()->getParent();
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  llvm::BasicBlock* header = llvm::BasicBlock::Create(ctx_, "loop", f);
  // in the function from the start (a body that refuses its op throws, and the module must still
  // own and free the block); moved after the body's blocks below
  llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx_, "loop.exit", f);
  // rotated form (guard, then do-while): what the loop passes expect
  b_.CreateCondBr(b_.CreateICmpSLT(lo, hi), header, exit);
  b_.SetInsertPoint(header);
  llvm::PHINode* i = b_.CreatePHI(b_.getInt64Ty(), 2, "i");
  i->addIncoming(lo, pre);
  std::vector<llvm::PHINode*> phis;
  Values carried;
  for (Value* v : init) {
    phis.push_back(b_.CreatePHI(v->getType(), 2));
    phis.back()->addIncoming(v, pre);
    carried.push_back(phis.back());
  }
  Values next = body(i, carried);
  Value* inext = b_.CreateAdd(i, i64(1), "i.next", /*HasNUW=*/true, /*HasNSW=*/true);
  llvm::BasicBlock* latch = b_.GetInsertBlock();
  i->addIncoming(inext, latch);
  for (size_t k = 0; k < phis.size(); ++k) phis[k]->addIncoming(next[k], latch);
  llvm::BranchInst* br = b_.CreateCondBr(b_.CreateICmpSLT(inext, hi), header, exit);
  if (md) br->setMetadata(llvm::LLVMContext::MD_loop, md);
  if (exit != &f->back()) exit->moveAfter(&f->back());
  b_.SetInsertPoint(exit);
  Values out;
  for (size_t k = 0; k < init.size(); ++k) {
    llvm::PHINode* phi = b_.CreatePHI(init[k]->getType(), 2);
    phi->addIncoming(init[k], pre);
    phi->addIncoming(next[k], latch);
    out.push_back(phi);
  }
  return out;
}

void Emitter::nest(const std::vector<int>& axes, const std::function<void()>& at_point, llvm::MDNode* md) {
  std::function<void(size_t)> level = [&](size_t k) {
    if (k == axes.size()) return at_point();
    const int a = axes[k];
    if (idx_[a]) return level(k + 1);
    const bool split = a == 0 && p_.splits();
    loop(split ? begin_ : i64(0), split ? end_ : upper(a), {},
         [&](Value* i, const Values&) {
           idx_[a] = i;
           level(k + 1);
           return Values{};
         },
         k + 1 == axes.size() ? md : outer_hints(p_.extent[a] < 0 && p_.domain[a] < kShortLoop));
    idx_[a] = nullptr;
  };
  level(0);
}

Value* Emitter::upper(int a) {
  Value* hi = bound_[a];
  for (const TailBound& t : p_.tails) {
    Value* left = nullptr;  // points of a left before the extent
    if (t.inner == a && idx_[t.outer])
      left = b_.CreateSub(i64(t.extent), b_.CreateMul(idx_[t.outer], i64(t.factor)));
    else if (t.outer == a && idx_[t.inner])
      left = b_.CreateSDiv(b_.CreateAdd(b_.CreateSub(i64(t.extent), idx_[t.inner]), i64(t.factor - 1)), i64(t.factor));
    if (left) hi = b_.CreateSelect(b_.CreateICmpSLT(left, hi), left, hi);
  }
  return hi;
}

llvm::MDNode* Emitter::outer_hints(bool scalar) {
  // an outer loop's body is a whole inner loop: unrolling it multiplies compile time (a softmax
  // divide stage: 88 vector divides instead of 11) for no measurable speed
  llvm::SmallVector<llvm::Metadata*, 3> ops{nullptr, llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.unroll.disable")})};
  // a few trips around an innermost loop LLVM unrolls whole become its innermost loop, which it
  // then vectorizes with masked gathers and scatters (grid_anchors' base[None] + shifts[:, None]
  // over (6800, 3, 4): 12x slower than a contiguous add of as many elements)
  if (scalar)
    ops.push_back(llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.vectorize.width"),
                                           llvm::ConstantAsMetadata::get(b_.getInt32(1))}));
  llvm::MDNode* md = llvm::MDNode::getDistinct(ctx_, ops);
  md->replaceOperandWith(0, md);
  return md;
}

llvm::MDNode* Emitter::loop_hints(int axis, int chains) {
  bool unit = true, strided = false;
  std::vector<const View*> stores;
  for (const Op& op : p_.ops) {
    for (const View& v : op.inputs) {
      if (p_.registers.count(v.storage)) continue;
      if (!vector_load_stride(v.strides[axis])) unit = false;
      strided = strided || std::abs(v.strides[axis]) > 1;
    }
    const View& w = op.output;
    if (!p_.registers.count(w.storage) && w.strides[axis] != 0) stores.push_back(&w);
  }
  unit = unit && vector_stores(stores, axis);
  // a fold in order along this loop: any width hint lets the vectorizer reorder a float reduction
  const int w = p_.reduction && p_.reduce.in_order() && p_.reduced[axis] ? 1 : p_.vector_width;
  // a forced width on a short constant trip count would only leave a scalar remainder
  if (p_.extent[axis] < 0 && p_.domain[axis] < w) unit = false;
  llvm::SmallVector<llvm::Metadata*, 4> ops{nullptr};
  auto hint = [&](const char* name, int value) {
    ops.push_back(llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, name),
                                           llvm::ConstantAsMetadata::get(b_.getInt32(value))}));
  };
  // width only, not vectorize.enable: a loop the vectorizer cannot handle (a NaN-aware max) then
  // stays scalar without a "transformation not performed" warning
  if (w == 1 || chains > 1) hint("llvm.loop.vectorize.width", 1);
  else if (unit) hint("llvm.loop.vectorize.width", w);
  if (std::max(p_.unroll, chains) > 1) hint("llvm.loop.interleave.count", std::max(p_.unroll, chains));
  // strided loads vectorize as wide loads and deinterleaving shuffles, which the x86 backend is
  // slow to lower: unrolled 8 times more after vectorization they cost 100+ ms of compile time
  if (strided && unit && w > 1) ops.push_back(llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.unroll.disable")}));
  if (ops.size() == 1) return nullptr;
  llvm::MDNode* md = llvm::MDNode::getDistinct(ctx_, ops);
  md->replaceOperandWith(0, md);
  return md;
}

Value* Emitter::run_time_extent(Value* at, int64_t bound) {
  Value* v = b_.CreateAlignedLoad(b_.getInt64Ty(), at, llvm::Align(8));
  v = b_.CreateSelect(b_.CreateICmpSLT(v, i64(0)), i64(0), v);
  return b_.CreateSelect(b_.CreateICmpSGT(v, i64(bound)), i64(bound), v);
}

void Emitter::prefetch_strided(size_t begin, size_t end, int axis) {
  // the hardware's stream prefetch stops at every page: YOLOv5's confidence column, a row of 85
  // floats apart, is read ~1.15x faster so where the compaction of one image's rows reads it (the
  // same in a plain loop over the batch's column, parallel over images, measured no faster); 16 KB
  // ahead (48 such rows), as the column comes out of memory, the prologue is ~10% faster than at 4
  // KB, and no faster at 32 KB
  constexpr int64_t kAhead = 16384;
  std::vector<const View*> seen;
  for (size_t k = begin; k < end; ++k)
    for (const View& v : p_.ops[k].inputs) {
      const int64_t bytes = std::abs(v.strides[axis] * static_cast<int64_t>(itemsize(g_.dtype_of(v))));
      if (p_.registers.count(v.storage) || bytes < 64 || std::any_of(seen.begin(), seen.end(), [&](const View* s) {
            return s->storage == v.storage && s->offset == v.offset && s->strides == v.strides;
          }))
        continue;
      seen.push_back(&v);
      // a plain GEP: the address may lie past the storage, which a prefetch may
      Value* at = b_.CreateAdd(element_index(v), i64(std::max<int64_t>(1, kAhead / bytes) * v.strides[axis]));
      prefetch(b_.CreateGEP(mem_type(g_.dtype_of(v)), base_[v.storage], at));
    }
}

void Emitter::prefetch(Value* address) {
  // for reading, into every cache level, as data
  b_.CreateIntrinsic(llvm::Intrinsic::prefetch, {b_.getPtrTy()}, {address, b_.getInt32(0), b_.getInt32(3), b_.getInt32(1)});
}

Value* Emitter::any_nan(const View& v) {
  // the elements the stage's points read: loops over the axes v walks (axis 0 within the body's
  // range where the body splits it), the others at 0
  std::vector<int> walked;
  for (int d = 0; d < v.ndim(); ++d)
    if (v.strides[d] != 0) walked.push_back(d);
  std::function<Value*(size_t, Value*)> over = [&](size_t k, Value* nan) -> Value* {
    if (k == walked.size()) {
      Value* x = load(v);
      return b_.CreateOr(nan, b_.CreateFCmpUNO(x, x));
    }
    const int d = walked[k];
    Value* lo = d == 0 && p_.splits() ? begin_ : i64(0);
    Value* hi = d == 0 && p_.splits() ? end_ : bound_[d];
    const Values out = loop(lo, hi, {nan}, [&](Value* i, const Values& c) {
      idx_[d] = i;
      return Values{over(k + 1, c[0])};
    }, nullptr);
    idx_[d] = nullptr;
    return out[0];
  };
  return over(0, b_.getFalse());
}

Value* Emitter::element_index(const View& v) {
  Value* at = i64(v.offset);
  for (int d = 0; d < v.ndim(); ++d) {
    if (v.strides[d] == 0) continue;
    if (!idx_[d]) throw std::logic_error("LLVM backend: axis " + std::to_string(d) + " used outside its loop");
    at = b_.CreateAdd(at, b_.CreateMul(idx_[d], i64(v.strides[d]), "", false, true), "", false, true);
  }
  return at;
}

int Emitter::object_of(const View& v) const {
  bool split = false;
  for (const auto& [view, object] : region_) {
    if (view.storage != v.storage) continue;
    if (view.offset == v.offset && view.shape == v.shape && view.strides == v.strides) return object;
    split = true;
  }
  return split ? -1 : v.storage;  // a view of a split storage not in any region: no scope (may alias all)
}

void Emitter::set_scopes(llvm::Instruction* access, int object) {
  if (object < 0 || object >= static_cast<int>(scope_.size()) || !scope_[object]) return;
  access->setMetadata(llvm::LLVMContext::MD_alias_scope, llvm::MDNode::get(ctx_, {scope_[object]}));
  if (noalias_[object]) access->setMetadata(llvm::LLVMContext::MD_noalias, noalias_[object]);
}

Value* Emitter::load(const View& v, Value* shift) {
  const DType t = g_.dtype_of(v);
  if (p_.registers.count(v.storage)) {
    if (shift) refuse("it gathers from register %s" + std::to_string(v.storage));
    if (!reg_[v.storage]) refuse("it reads register %s" + std::to_string(v.storage) + " before the stage computes it");
    return reg_[v.storage];
  }
  llvm::Type* ty = mem_type(t);
  Value* at = element_index(v);
  if (shift) at = b_.CreateAdd(at, shift, "", false, true);
  Value* ptr = b_.CreateInBoundsGEP(ty, base_[v.storage], at);
  llvm::LoadInst* x = b_.CreateAlignedLoad(ty, ptr, llvm::Align(itemsize(t)));
  set_scopes(x, object_of(v));
  if (t == DType::Float16) return b_.CreateFPExt(x, b_.getFloatTy());
  return t == DType::Bool ? b_.CreateICmpNE(x, b_.getInt8(0)) : x;
}

void Emitter::store(const View& v, Value* x, Value* shift) {
  const DType t = g_.dtype_of(v);
  if (p_.registers.count(v.storage)) {
    if (shift) refuse("it scatters into register %s" + std::to_string(v.storage));
    reg_[v.storage] = x;
    return;
  }
  if (t == DType::Bool) x = b_.CreateZExt(x, b_.getInt8Ty());
  if (t == DType::Float16) x = b_.CreateFPTrunc(x, b_.getHalfTy());  // exact: the value is rounded
  Value* at = element_index(v);
  if (shift) at = b_.CreateAdd(at, shift, "", false, true);
  Value* ptr = b_.CreateInBoundsGEP(mem_type(t), base_[v.storage], at);
  set_scopes(b_.CreateAlignedStore(x, ptr, llvm::Align(itemsize(t))), object_of(v));
}

void Emitter::fail_if(Value* bad, Value* a, Value* b) {
  if (p_.rank() != 0) refuse("a check runs in a 0-d stage");  // (so serial, and no members)
  llvm::Function* f = b_.GetInsertBlock()->getParent();
  auto* fail = llvm::BasicBlock::Create(ctx_, "check.fail", f);
  auto* ok = llvm::BasicBlock::Create(ctx_, "check.ok", f);
  llvm::MDBuilder mdb(ctx_);
  b_.CreateCondBr(bad, fail, ok, mdb.createBranchWeights(1, 1 << 20));
  b_.SetInsertPoint(fail);
  llvm::Type* ptr = b_.getPtrTy();
  Value* record = b_.CreateLoad(ptr, b_.CreateConstInBoundsGEP1_64(ptr, args_, 3));
  b_.CreateStore(a, record);
  b_.CreateStore(b, b_.CreateConstInBoundsGEP1_64(b_.getInt64Ty(), record, 1));
  // an integer power that failed before it stops the reference there: its error wins
  Value* flagged = b_.CreateLoad(b_.getInt32Ty(), err_);
  b_.CreateRet(b_.CreateSelect(b_.CreateICmpNE(flagged, b_.getInt32(0)), flagged, b_.getInt32(2 + cur_op_)));
  b_.SetInsertPoint(ok);
}

namespace {

// Storages the stage reads or writes in memory, and those holding run-time extents.
std::vector<bool> used_storages(const Graph& g, const StagePlan& p) {
  std::vector<bool> used(g.storages.size(), false);
  for (const Op& op : p.ops) {
    for (const View& v : op.inputs)
      if (!p.registers.count(v.storage)) used[v.storage] = true;
    if (!p.registers.count(op.output.storage)) used[op.output.storage] = true;
    for (int e : op.output.extents)  // a compress's count (emit_compress.cc)
      if (e >= 0) used[e] = true;
  }
  for (int e : p.extent)
    if (e >= 0) used[e] = true;
  return used;
}

// The views of storages the stage writes, split into regions no two of which share an element
// (views that may overlap, bound extents standing for run-time ones, join one region): each view
// of a storage split so with its region's alias object, the storage's own for the first region,
// numbered from `objects` on for the others.
std::vector<std::pair<View, int>> disjoint_regions(const Graph& g, const StagePlan& p, int& objects) {
  std::map<int, std::vector<View>> views, spans;  // storage: its distinct views, and what each may touch
  std::vector<bool> written(g.storages.size(), false);
  // a domain gather's or scatter's row view stands for every row its indices may name
  auto span = [](const Op& op, const View& v) {
    View all = v;
    all.shape.insert(all.shape.begin(), op.axes[1]);
    all.strides.insert(all.strides.begin(), op.axes[0]);
    if (!all.extents.empty()) all.extents.insert(all.extents.begin(), -1);
    return all;
  };
  auto add = [&](const StagePlan& plan) {
    for (const Op& op : plan.ops) {
      for (size_t k = 0; k < op.inputs.size(); ++k)
        if (!plan.registers.count(op.inputs[k].storage)) {
          views[op.inputs[k].storage].push_back(op.inputs[k]);
          spans[op.inputs[k].storage].push_back(k == 0 && is_domain_gather(op) ? span(op, op.inputs[k]) : op.inputs[k]);
        }
      if (plan.registers.count(op.output.storage)) continue;
      views[op.output.storage].push_back(op.output);
      spans[op.output.storage].push_back(is_domain_scatter(op) ? span(op, op.output) : op.output);
      written[op.output.storage] = true;
    }
  };
  add(p);
  for (const StagePlan& m : p.members) add(m);
  std::vector<std::pair<View, int>> out;
  for (auto& [storage, vs] : views) {
    if (!written[storage] || vs.size() < 2) continue;
    const std::vector<View>& at = spans[storage];
    std::vector<int> region(vs.size());
    for (size_t i = 0; i < vs.size(); ++i) region[i] = static_cast<int>(i);
    std::function<int(int)> root = [&](int i) { return region[i] == i ? i : region[i] = root(region[i]); };
    for (size_t i = 0; i < vs.size(); ++i)
      for (size_t j = 0; j < i; ++j)
        if (root(static_cast<int>(i)) != root(static_cast<int>(j)) && footprints_overlap(at[i], at[j]).overlap)
          region[root(static_cast<int>(i))] = root(static_cast<int>(j));
    std::map<int, int> object;  // region root: its alias object (the storage's own for the first)
    for (size_t i = 0; i < vs.size(); ++i) {
      const int r = root(static_cast<int>(i));
      if (!object.count(r)) object[r] = object.empty() ? storage : objects++;
    }
    if (object.size() < 2) continue;
    for (size_t i = 0; i < vs.size(); ++i) out.emplace_back(vs[i], object[root(static_cast<int>(i))]);
  }
  return out;
}

}  // namespace

void Emitter::emit_body() {
  if (p_.reduction) return emit_reduction();
  if (p_.compress) return emit_compress();
  const int rank = p_.rank();
  std::vector<int> axes(rank);
  for (int a = 0; a < rank; ++a) axes[a] = a;
  nest(axes, [&] {
    for (size_t k = 0; k < p_.ops.size(); ++k) {
      cur_op_ = static_cast<int>(k);
      emit_op(p_.ops[k]);
    }
    std::fill(reg_.begin(), reg_.end(), nullptr);
  }, rank > 0 ? loop_hints(rank - 1) : nullptr);
}

void Emitter::emit_member(const StagePlan& member) {
  Emitter sub(g_, member, m_, vector_math_);
  sub.b_.SetInsertPoint(b_.GetInsertBlock());
  sub.begin_ = begin_;
  sub.end_ = end_;
  sub.scratch_ = scratch_;
  sub.err_ = err_;
  sub.base_ = base_;
  sub.scope_ = scope_;
  sub.noalias_ = noalias_;
  sub.region_ = region_;
  sub.reg_.assign(reg_.size(), nullptr);
  sub.idx_.assign(member.rank(), nullptr);
  sub.bound_.assign(member.rank(), nullptr);
  for (int a = 0; a < member.rank(); ++a) {
    if (a < p_.shared) sub.idx_[a] = idx_[a];
    sub.bound_[a] = i64(member.domain[a]);  // compute_at takes no run-time extents
  }
  sub.emit_body();
  b_.SetInsertPoint(sub.b_.GetInsertBlock());
}

Value* Emitter::axis0_extent(Value* args) {
  if (p_.extent[0] < 0) return i64(p_.domain[0]);
  return run_time_extent(b_.CreateLoad(b_.getPtrTy(), base_slot(args, p_.extent[0])), p_.domain[0]);
}

void Emitter::emit(const std::string& name) {
  const int n = static_cast<int>(g_.storages.size());
  const int rank = p_.rank();
  llvm::Type* ptr = b_.getPtrTy();
  llvm::Type* i32 = b_.getInt32Ty();
  llvm::Type* i64t = b_.getInt64Ty();
  // the thread pool calls an internal body over chunks of axis 0, which the entry hands it; a
  // serial stage is its entry alone (a body to inline would be optimized twice: once alone, once
  // inlined, and LLVM's cost is mostly per function)
  auto* entry_ty = llvm::FunctionType::get(i32, {ptr}, false);
  llvm::Function* entry = llvm::Function::Create(entry_ty, llvm::Function::ExternalLinkage, name, m_);
  llvm::Function* body = entry;
  const bool pooled = p_.parallel || p_.parallel_compress;  // a compaction's body takes chunks
  if (pooled) {
    body = llvm::Function::Create(llvm::FunctionType::get(i32, {ptr, i64t, i64t}, false), llvm::Function::InternalLinkage,
                                  name + "_body", m_);
    body->addFnAttr(llvm::Attribute::NoUnwind);
  }
  b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", body));
  Value* args = body->getArg(0);
  args_ = args;
  if (pooled) {
    begin_ = body->getArg(1);
    end_ = body->getArg(2);
  }
  err_ = b_.CreateAlloca(i32);
  b_.CreateStore(b_.getInt32(0), err_);
  scratch_ = b_.CreateLoad(ptr, b_.CreateConstInBoundsGEP1_64(ptr, args, 1), "scratch");

  // one alias scope per storage and per scratch array, and one more per region of a storage
  // written in the stage whose views touch no other region's (`x[:, 5:] *= x[:, 4:5]`: the
  // column read is then loaded once per row, not after every store)
  std::vector<bool> used = used_storages(g_, p_);
  for (const StagePlan& m : p_.members) {
    const std::vector<bool> more = used_storages(g_, m);
    for (int s = 0; s < n; ++s) used[s] = used[s] || more[s];
  }
  int objects = n + scratch_arrays();
  region_ = disjoint_regions(g_, p_, objects);
  llvm::MDBuilder mdb(ctx_);
  llvm::MDNode* domain = mdb.createAnonymousAliasScopeDomain("stage");
  scope_.assign(objects, nullptr);
  noalias_.assign(objects, nullptr);
  // past kMaxAliasScopes objects, none: each access's list names every other object, which LLVM
  // reads at every alias query (a list of 2,304 anchors' numbers joined by np.array, one 0-d
  // stage: seconds of compile, more than quadratic in them)
  const int scoped = static_cast<int>(std::count(used.begin(), used.end(), true)) + objects - n;
  for (int o = 0; o < objects && scoped <= kMaxAliasScopes; ++o)
    if (o >= n || used[o]) scope_[o] = mdb.createAnonymousAliasScope(domain);
  for (int o = 0; o < objects; ++o) {
    if (!scope_[o]) continue;
    llvm::SmallVector<llvm::Metadata*, 8> others;
    for (int q = 0; q < objects; ++q)
      if (q != o && scope_[q]) others.push_back(scope_[q]);
    if (!others.empty()) noalias_[o] = llvm::MDNode::get(ctx_, others);
  }

  base_.assign(n, nullptr);
  reg_.assign(n, nullptr);
  for (int s = 0; s < n; ++s) {
    if (!used[s]) continue;
    const Storage& st = g_.storages[s];
    if (st.kind == StorageKind::Const && !st.data.empty() && st.data.size() <= kEmbedBytes) {
      auto* data = llvm::ConstantDataArray::getRaw(
          llvm::StringRef(reinterpret_cast<const char*>(st.data.data()), st.data.size()), st.size, mem_type(st.dtype));
      auto* gv = new llvm::GlobalVariable(m_, data->getType(), true, llvm::GlobalValue::PrivateLinkage, data,
                                          "const" + std::to_string(s));
      gv->setAlignment(llvm::Align(8));
      base_[s] = gv;
    } else {
      base_[s] = b_.CreateLoad(ptr, base_slot(args, s), "s" + std::to_string(s));
    }
  }
  // a folded temporary: one slab per call of the body (per thread), never in memory outside it
  for (const Stage::Folded& f : p_.folded) {
    llvm::Type* elem = mem_type(g_.storages[f.storage].dtype);
    llvm::AllocaInst* slab = b_.CreateAlloca(llvm::ArrayType::get(elem, f.slab), nullptr, "slab" + std::to_string(f.storage));
    slab->setAlignment(llvm::Align(64));
    base_[f.storage] = slab;
  }
  bound_.assign(rank, nullptr);
  idx_.assign(rank, nullptr);
  for (int a = 0; a < rank; ++a) bound_[a] = p_.extent[a] < 0 ? i64(p_.domain[a]) : run_time_extent(base_[p_.extent[a]], p_.domain[a]);
  if (!pooled) {
    begin_ = i64(0);
    end_ = p_.splits() ? bound_[0] : i64(1);
  }

  auto run = [&] {
    if (p_.members.empty()) {
      emit_body();
    } else {
      std::vector<int> shared(p_.shared);
      for (int a = 0; a < p_.shared; ++a) shared[a] = a;
      nest(shared, [&] {
        for (const StagePlan& m : p_.members) emit_member(m);
        emit_body();
      }, outer_hints());
    }
  };
  // the version where no nan_tested operand holds a NaN (each tested once, here), else the other
  Value* nan = nullptr;
  std::vector<const View*> tested;
  for (const Op& op : p_.ops) {
    if (!versions_ || rank == 0 || !nan_tested(op) ||
        std::any_of(tested.begin(), tested.end(), [&](const View* v) { return *v == op.inputs[0]; }))
      continue;
    tested.push_back(&op.inputs[0]);
    Value* is_nan = any_nan(op.inputs[0]);
    nan = nan ? b_.CreateOr(nan, is_nan) : is_nan;
  }
  if (!nan) {
    run();
  } else {
    llvm::Function* f = b_.GetInsertBlock()->getParent();
    auto* plain = llvm::BasicBlock::Create(ctx_, "no.nan", f);
    auto* general = llvm::BasicBlock::Create(ctx_, "nan", f);
    auto* join = llvm::BasicBlock::Create(ctx_, "versions.end", f);
    b_.CreateCondBr(nan, general, plain);
    for (auto [block, no_nan] : {std::pair{plain, true}, {general, false}}) {
      b_.SetInsertPoint(block);
      no_nan_ = no_nan;
      std::fill(reg_.begin(), reg_.end(), nullptr);
      run();
      b_.CreateBr(join);
    }
    no_nan_ = false;
    b_.SetInsertPoint(join);
  }
  b_.CreateRet(b_.CreateLoad(i32, err_));

  if (p_.parallel_compress) return emit_compaction_entry(entry, body);
  if (!p_.parallel) return;

  // the entry: all of axis 0 at once, or in chunks on the thread pool
  b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", entry));
  args = entry->getArg(0);
  Value* n0 = p_.splits() ? axis0_extent(args) : i64(1);
  // the pool's workers, all of them from parallel_min_points points, else those still warm from
  // the last parallel call (a loop's trips find them polling); a run-time extent that leaves too
  // little work to pay even for those (warm_parallel_min_points) runs here
  auto* pool_ty = llvm::FunctionType::get(i32, {i64t, ptr, ptr}, false);
  llvm::FunctionCallee cold = m_.getOrInsertFunction("strider_parallel_for", pool_ty);
  llvm::FunctionCallee warm = m_.getOrInsertFunction("strider_parallel_for_warm", pool_ty);
  int64_t inner = 1;
  for (size_t d = 1; d < p_.domain.size(); ++d) inner *= std::max<int64_t>(p_.domain[d], 1);
  auto rows = [&](int64_t points) { return (points + inner - 1) / inner; };
  const int64_t cold_rows = rows(parallel_min_points(g_, p_.ops, p_.rank()));
  if (!p_.splits() || p_.extent[0] < 0) {
    b_.CreateRet(b_.CreateCall(p_.domain[0] >= cold_rows ? cold : warm, {n0, body, args}));
    return;
  }
  auto* here = llvm::BasicBlock::Create(ctx_, "serial", entry);
  auto* shared = llvm::BasicBlock::Create(ctx_, "shared", entry);
  auto* some = llvm::BasicBlock::Create(ctx_, "warm", entry);
  auto* all = llvm::BasicBlock::Create(ctx_, "pooled", entry);
  b_.CreateCondBr(b_.CreateICmpSLT(n0, i64(rows(warm_parallel_min_points(g_, p_.ops, p_.rank())))), here, shared);
  b_.SetInsertPoint(here);
  b_.CreateRet(b_.CreateCall(body, {args, i64(0), n0}));
  b_.SetInsertPoint(shared);
  b_.CreateCondBr(b_.CreateICmpSLT(n0, i64(cold_rows)), some, all);
  b_.SetInsertPoint(some);
  b_.CreateRet(b_.CreateCall(warm, {n0, body, args}));
  b_.SetInsertPoint(all);
  b_.CreateRet(b_.CreateCall(cold, {n0, body, args}));
}

}  // namespace strider::detail
