// Elementwise ops as calls of ops/scalar_ops.inc's functions, which the module links from the
// bitcode clang made of that text (scalar_ops_bitcode.cc) and the optimizer inlines: the scalar
// semantics are the reference executor's by construction. What is left here is data movement.

#include <map>
#include <mutex>
#include <set>

#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/InstIterator.h>
#include <llvm/Linker/Linker.h>
#include <llvm/Transforms/Utils/Cloning.h>
#include <llvm/Transforms/Utils/ValueMapper.h>

#include "codegen/llvm/emitter.h"
#include "ops/numpy_loops.h"

namespace strider::detail {

using llvm::Value;

namespace {

// ops/scalar_ops.inc compiled by clang (CMakeLists.txt), as generated/codegen/llvm/scalar_ops.bc.inc spells it
alignas(8) constexpr unsigned char kScalarOpsBitcode[] = {
#include "codegen/llvm/scalar_ops.bc.inc"
};

// The bitcode's functions one at a time. A stage calls a few of its ~1,300 functions, and
// reading the declarations of them all into every stage module took 2-5 ms a module: each
// function is cut out once per process instead, with the local functions and globals it reaches,
// as bitcode of its own that a stage module reads in microseconds. Thread-safe.
class ScalarOpsLibrary {
 public:
  struct Part {
    std::string bitcode;             // empty where the bitcode does not define the function
    std::vector<std::string> needs;  // the exported functions it calls: in parts of their own
  };

  static ScalarOpsLibrary& get() {
    static ScalarOpsLibrary* library = new ScalarOpsLibrary();  // (a worker may compile at exit)
    return *library;
  }

  const Part& part(const std::string& name) {
    std::lock_guard<std::mutex> lock(m_);
    auto [at, fresh] = parts_.try_emplace(name);
    if (fresh) at->second = cut(name);
    return at->second;  // (never changed again: safe to read unlocked)
  }

 private:
  Part cut(const std::string& name) {
    if (!whole_) {
      const llvm::StringRef bytes(reinterpret_cast<const char*>(kScalarOpsBitcode), sizeof(kScalarOpsBitcode));
      llvm::Expected<std::unique_ptr<llvm::Module>> m =
          llvm::getLazyBitcodeModule(llvm::MemoryBufferRef(bytes, "scalar_ops.bc"), ctx_);
      if (!m) throw std::logic_error("the scalar ops' bitcode does not load: " + llvm::toString(m.takeError()));
      whole_ = std::move(*m);
    }
    Part part;
    llvm::Function* root = whole_->getFunction(name);
    if (!root || root->isDeclaration()) return part;
    // the root, the local or linkonce definitions it reaches (copied along: alike in every part
    // that has them, so the linker keeps one), and declarations of everything else
    std::vector<llvm::GlobalValue*> reached{root};
    std::set<llvm::GlobalValue*> seen{root};
    std::vector<char> copied{1};
    auto reach = [&](auto& self, llvm::Value* v) -> void {
      if (auto* gv = llvm::dyn_cast<llvm::GlobalValue>(v)) {
        if (!seen.insert(gv).second) return;
        if (!llvm::isa<llvm::Function>(gv) && !llvm::isa<llvm::GlobalVariable>(gv))
          throw std::logic_error("the scalar ops' bitcode holds an alias: " + gv->getName().str());
        reached.push_back(gv);
        const bool copy = !gv->isDeclaration() && (gv->hasLocalLinkage() || gv->hasLinkOnceLinkage());
        copied.push_back(copy);
        if (!copy && !gv->isDeclaration()) part.needs.push_back(gv->getName().str());
      } else if (auto* c = llvm::dyn_cast<llvm::Constant>(v)) {
        for (llvm::Value* o : c->operands()) self(self, o);
      }
    };
    for (size_t k = 0; k < reached.size(); ++k) {
      if (!copied[k]) continue;
      if (llvm::Error e = reached[k]->materialize())
        throw std::logic_error("the scalar ops' bitcode does not load " + reached[k]->getName().str() + ": " +
                               llvm::toString(std::move(e)));
      if (auto* f = llvm::dyn_cast<llvm::Function>(reached[k])) {
        for (const llvm::Instruction& inst : llvm::instructions(*f))
          for (llvm::Value* o : inst.operands()) reach(reach, o);
      } else {
        reach(reach, llvm::cast<llvm::GlobalVariable>(reached[k])->getInitializer());
      }
    }
    llvm::Module out(name, ctx_);
    out.setTargetTriple(whole_->getTargetTriple());
    out.setDataLayout(whole_->getDataLayout());
    llvm::ValueToValueMapTy map;
    for (size_t k = 0; k < reached.size(); ++k) {
      const auto linkage = copied[k] ? reached[k]->getLinkage() : llvm::GlobalValue::ExternalLinkage;
      if (auto* f = llvm::dyn_cast<llvm::Function>(reached[k])) {
        llvm::Function* g = llvm::Function::Create(f->getFunctionType(), linkage, f->getAddressSpace(), f->getName(), &out);
        g->copyAttributesFrom(f);
        map[f] = g;
      } else {
        auto* v = llvm::cast<llvm::GlobalVariable>(reached[k]);
        auto* w = new llvm::GlobalVariable(out, v->getValueType(), v->isConstant(), linkage, nullptr, v->getName(), nullptr,
                                           v->getThreadLocalMode(), v->getAddressSpace());
        w->copyAttributesFrom(v);
        map[v] = w;
      }
    }
    for (size_t k = 0; k < reached.size(); ++k) {
      if (!copied[k]) continue;
      if (auto* f = llvm::dyn_cast<llvm::Function>(reached[k])) {
        auto* g = llvm::cast<llvm::Function>(map[f]);
        auto arg = g->arg_begin();
        for (llvm::Argument& a : f->args()) map[&a] = &*arg++;
        llvm::SmallVector<llvm::ReturnInst*, 4> returns;
        llvm::CloneFunctionInto(g, f, map, llvm::CloneFunctionChangeType::DifferentModule, returns);
      } else {
        auto* v = llvm::cast<llvm::GlobalVariable>(reached[k]);
        llvm::cast<llvm::GlobalVariable>(map[v])->setInitializer(llvm::MapValue(v->getInitializer(), map));
      }
    }
    llvm::raw_string_ostream os(part.bitcode);
    llvm::WriteBitcodeToFile(out, os);
    os.flush();
    return part;
  }

  std::mutex m_;
  llvm::LLVMContext ctx_;
  std::unique_ptr<llvm::Module> whole_;  // read lazily: a function's body when a part needs it
  std::map<std::string, Part> parts_;
};

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
      return store(op.output, convert(scalar_op(op.code, t, {x}), is_predicate(op.code) ? DType::Bool : t, out));
    }
    case OpKind::Binary: {
      const DType t = g_.dtype_of(op.inputs[0]);
      if (g_.dtype_of(op.inputs[1]) != t) refuse("its inputs do not share one dtype");
      Value* a = load(op.inputs[0]);
      Value* c = load(op.inputs[1]);
      if (no_nan_ && nan_tested(op)) {  // a is no NaN: c where c is one or they tie, as NumPy's
        Value* first = op.code == OpCode::maximum ? b_.CreateFCmpOGT(a, c) : b_.CreateFCmpOLT(a, c);
        return store(op.output, convert(b_.CreateSelect(first, a, c), t, out));
      }
      return store(op.output, convert(scalar_op(op.code, t, {a, c}), is_comparison(op.code) ? DType::Bool : t, out));
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
      Value* i = p_.rank() > 0 ? idx_[0] : i64(0);
      return store(op.output, call_scalar(std::string("st_arange_") + dtype_name(out), reg_type(out),
                                          {load(op.inputs[0]), load(op.inputs[1]), i}));
    }
    case OpKind::Reduce: refuse("a reduction must be the last op of its stage");
    case OpKind::Check: {
      if (!joins_scalar_stage(op)) break;
      // the value passes through where it holds; else the stage stops here (ops.def)
      Value* x = load(op.inputs[0]);
      Value* bad = nullptr;
      Value* a = i64(0);
      Value* n = i64(0);
      switch (op.code) {
        case OpCode::check_index:
          a = x;
          n = load(op.inputs[1]);
          bad = b_.CreateOr(b_.CreateICmpSLT(x, b_.CreateNeg(n)), b_.CreateICmpSGE(x, n));
          fail_if(bad, a, n);
          return store(op.output, b_.CreateSelect(b_.CreateICmpSLT(x, i64(0)), b_.CreateAdd(x, n), x));
        case OpCode::check_nonempty:
          a = x;
          bad = b_.CreateICmpSLE(x, i64(0));
          break;
        case OpCode::check_assert: bad = b_.CreateNot(x); break;
        case OpCode::check_equal:
          a = x;
          n = load(op.inputs[1]);
          bad = b_.CreateICmpNE(x, n);
          break;
        default: refuse("an unknown check");
      }
      store(op.output, x);  // passed through before it fails, as the library does
      return fail_if(bad, a, n);
    }
    case OpKind::Scatter: {
      if (is_domain_scatter(op)) {
        // the point's value into the row its index names (ops.def), the index in range as a
        // gather's: an address affine in the loop, which LLVM's dependence analysis then follows
        if (g_.dtype_of(op.inputs[0]) != DType::Int64) refuse("its indices are not int64");
        if (g_.dtype_of(op.inputs[1]) != out) refuse("it writes another dtype than its target's");
        Value* row = b_.CreateMul(load(op.inputs[0]), i64(op.axes[0]), "", false, true);
        return store(op.output, load(op.inputs[1]), row);
      }
      if (!joins_scalar_stage(op)) break;
      // append: the element at the list's length, which stays within its room (ops.def)
      if (g_.dtype_of(op.inputs[1]) != out) refuse("it appends another dtype than its list's");
      Value* at = load(op.inputs[0]);
      Value* x = load(op.inputs[1]);
      const int64_t rows = op.output.shape[0];
      fail_if(b_.CreateOr(b_.CreateICmpSLT(at, i64(0)), b_.CreateICmpSGE(at, i64(rows))), at, i64(rows));
      const View element{op.output.storage, {}, {}, op.output.offset, {}};
      return store(element, x, b_.CreateMul(at, i64(op.output.strides[0]), "", false, true));
    }
    case OpKind::Gather: {
      if (!is_domain_gather(op)) break;
      // the point's element of the row its index names (ops.def), the index checked before
      if (g_.dtype_of(op.inputs[1]) != DType::Int64) refuse("its indices are not int64");
      if (g_.dtype_of(op.inputs[0]) != out) refuse("it reads another dtype than it writes");
      Value* row = b_.CreateMul(load(op.inputs[1]), i64(op.axes[0]), "", false, true);
      return store(op.output, load(op.inputs[0], row));
    }
    default: break;  // stage_plan refuses the other data-dependent kinds before any emitter sees them
  }
  refuse("a data-dependent op runs in the runtime's library");
}

bool Emitter::nan_tested(const Op& op) const {
  if (op.code != OpCode::maximum && op.code != OpCode::minimum) return false;
  const DType t = g_.dtype_of(op.inputs[0]);
  const View& a = op.inputs[0];
  if ((t != DType::Float32 && t != DType::Float64) || g_.dtype_of(op.inputs[1]) != t || p_.registers.count(a.storage))
    return false;
  // invariant, or (in a plain loop nest) reused along a loop: its elements, tested before the
  // loops, are at most a quarter of the points (mmdet's bbox_overlaps: an anchor's corner against
  // every gt box)
  if (std::any_of(a.strides.begin(), a.strides.end(), [](int64_t s) { return s != 0; })) {
    if (a.ndim() != p_.rank() || !p_.tails.empty() || !p_.members.empty() || !p_.folded.empty()) return false;
    int64_t footprint = 1;
    for (int d = 0; d < a.ndim(); ++d)
      if (a.strides[d] != 0) footprint *= p_.domain[d];
    if (footprint * 4 > shape_numel(p_.domain)) return false;
  }
  const Storage& st = g_.storages[a.storage];
  if (st.kind == StorageKind::Const && !st.data.empty()) return false;  // known, and folded by LLVM
  auto writes = [&](const std::vector<Op>& ops) {
    return std::any_of(ops.begin(), ops.end(), [&](const Op& o) { return o.output.storage == a.storage; });
  };
  if (writes(p_.ops)) return false;
  return std::none_of(p_.members.begin(), p_.members.end(), [&](const StagePlan& m) { return writes(m.ops); });
}

Value* Emitter::scalar_op(OpCode code, DType t, const Values& args) {
  if (!has_loop(code, t)) refuse(std::string(op_name(code)) + " has no " + loop_family(t) + " loop");
  if (op_kind(code) == OpKind::Unary && numpy_decides(code, t)) return call_numpy(code, t, args[0]);
  const std::string suffix = std::string("_") + dtype_name(t);
  if (op_attrs(code) & kMayFail) {
    // NumPy raises for these inputs: flag it for the entry to throw
    Value* fails = call_scalar("st_" + std::string(op_name(code)) + "_fails" + suffix, b_.getInt1Ty(), args);
    b_.CreateStore(b_.CreateOr(b_.CreateLoad(b_.getInt32Ty(), err_), b_.CreateZExt(fails, b_.getInt32Ty())), err_);
  }
  const bool to_bool = is_predicate(code) || is_comparison(code);
  return call_scalar("st_" + scalar_function(code, t) + suffix, to_bool ? b_.getInt1Ty() : reg_type(t), args);
}

Value* Emitter::convert(Value* x, DType from, DType to) {
  if (from == to) return x;
  return call_scalar(std::string("st_convert_") + dtype_name(from) + "_" + dtype_name(to), reg_type(to), {x});
}

Value* Emitter::call_scalar(const std::string& name, llvm::Type* result, const Values& args) {
  std::vector<llvm::Type*> params;
  for (Value* a : args) params.push_back(a->getType());
  auto* type = llvm::FunctionType::get(result, params, false);
  auto [at, fresh] = scalar_calls_.emplace(name, type);
  if (!fresh && at->second != type) throw std::logic_error(name + " called with two signatures");
  return b_.CreateCall(m_.getOrInsertFunction(name, type), args);
}

void Emitter::link_scalar_ops(const ScalarCalls& calls) {
  if (calls.empty()) return;
  std::set<const llvm::Function*> own;
  for (const llvm::Function& f : m_.functions())
    if (!f.isDeclaration()) own.insert(&f);
  ScalarOpsLibrary& library = ScalarOpsLibrary::get();
  // what the stages call: `calls`, and what other emitters of the module declared (a member
  // stage's, a reduction's) without telling it
  std::vector<std::string> wanted;
  for (const auto& [name, type] : calls) wanted.push_back(name);
  for (const llvm::Function& f : m_.functions())
    if (f.isDeclaration() && !f.isIntrinsic()) wanted.push_back(f.getName().str());
  for (std::set<std::string> linked; !wanted.empty();) {
    const std::string name = std::move(wanted.back());
    wanted.pop_back();
    if (!linked.insert(name).second) continue;
    const ScalarOpsLibrary::Part& part = library.part(name);
    if (part.bitcode.empty()) continue;  // (said below)
    llvm::Expected<std::unique_ptr<llvm::Module>> ops = llvm::parseBitcodeFile(llvm::MemoryBufferRef(part.bitcode, name), ctx_);
    if (!ops) throw std::logic_error("the scalar ops' bitcode of " + name + " does not load: " + llvm::toString(ops.takeError()));
    (*ops)->setTargetTriple(m_.getTargetTriple());
    (*ops)->setDataLayout(m_.getDataLayout());
    if (llvm::Linker::linkModules(m_, std::move(*ops))) throw std::logic_error("linking the scalar ops' bitcode of " + name + " failed");
    wanted.insert(wanted.end(), part.needs.begin(), part.needs.end());
  }
  for (const auto& [name, type] : calls) {
    llvm::Function* f = m_.getFunction(name);
    if (!f || f->isDeclaration()) throw std::logic_error(name + " is not in ops/scalar_ops.inc's bitcode");
    if (f->getFunctionType() != type) throw std::logic_error(name + " has another signature in ops/scalar_ops.inc");
  }
  for (llvm::Function& f : m_.functions()) {
    if (f.isDeclaration() || own.count(&f)) continue;
    // inlined everywhere, then dropped; compiled for this host, not for clang's default CPU
    f.setLinkage(llvm::GlobalValue::InternalLinkage);
    f.removeFnAttr("target-cpu");
    f.removeFnAttr("target-features");
    f.removeFnAttr("tune-cpu");
    f.addFnAttr(llvm::Attribute::AlwaysInline);
    widen_math_calls(f);
  }
}

}  // namespace strider::detail
