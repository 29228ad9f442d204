#include <algorithm>
#include <set>
#include <sstream>

#include "support/flags.h"
#include "schedule/default_schedule.h"
#include "schedule/legality.h"
#include "transforms/passes.h"

namespace strider {

namespace {

// The loop domain of an op with its unit dimensions dropped, and the op rewritten onto it.
// Elementwise ops iterate their output's shape; a reduction iterates its input's (the unit axes it
// folds are dropped where it folds another, so a sum over a batch of one meets its producers' domain,
// else kept: it folds at least one axis); arange iterates its 1-d output as it is.
struct Placed {
  Shape domain;
  Op op;
  std::vector<int> reduce_axes;
};

View drop_dims(const View& v, const std::vector<bool>& keep) {
  View out;
  out.storage = v.storage;
  out.offset = v.offset;
  for (int d = 0; d < v.ndim(); ++d)
    if (keep[d]) {
      out.shape.push_back(v.shape[d]);
      out.strides.push_back(v.strides[d]);
      if (v.is_dynamic()) out.extents.push_back(v.extents[d]);
    }
  return out;
}

// An elementwise op over its output's shape, its unit dimensions dropped.
Placed over_output(Placed p) {
  // (a run-time length bounded by 1 may be 0: its axis stays)
  std::vector<bool> keep(p.op.output.ndim());
  for (int d = 0; d < p.op.output.ndim(); ++d) keep[d] = p.op.output.shape[d] != 1 || p.op.output.extent_of(d) >= 0;
  for (View& v : p.op.inputs) v = drop_dims(v, keep);
  p.op.output = drop_dims(p.op.output, keep);
  p.domain = p.op.output.shape;
  return p;
}

// A take over its output's domain (ops.def): the source at row 0, walking the row's axes and
// broadcast over the index axes, the indices broadcast over the row's axes; false where the row
// stride does not fit the op's axes.
bool gather_over_domain(Op& op) {
  const View src = op.inputs[0], idx = op.inputs[1];
  const int lead = idx.ndim(), rank = op.output.ndim();
  if (src.ndim() < 1 || src.strides[0] > INT32_MAX || src.strides[0] < INT32_MIN || src.shape[0] > INT32_MAX) return false;
  View row = op.output, at = op.output;  // the output's shape and run-time extents, the row's axes the source's
  row.storage = src.storage;
  row.offset = src.offset;
  at.storage = idx.storage;
  at.offset = idx.offset;
  for (int d = 0; d < rank; ++d) {
    row.strides[d] = d < lead ? 0 : src.strides[d - lead + 1];
    at.strides[d] = d < lead ? idx.strides[d] : 0;
  }
  op.inputs = {row, at};
  op.axes = {static_cast<int>(src.strides[0]), static_cast<int>(src.shape[0])};
  return true;
}

// A put of one-element rows by 0-d or 1-d indices over its indices' domain (ops.def): the
// output the target's row 0 broadcast there; false where it writes longer rows or a row stride
// does not fit the op's axes.
bool scatter_over_domain(Op& op) {
  const View out = op.output, idx = op.inputs[0], values = op.inputs[1];
  if (out.ndim() != 1 || idx.ndim() > 1 || values.shape != idx.shape || values.extents != idx.extents ||
      out.strides[0] > INT32_MAX || out.strides[0] < INT32_MIN || out.shape[0] > INT32_MAX)
    return false;
  op.output = View{out.storage, idx.shape, Shape(idx.shape.size(), 0), out.offset, idx.extents};
  op.axes = {static_cast<int>(out.strides[0]), static_cast<int>(out.shape[0])};
  return true;
}

Placed place(const Op& op, Target target) {
  Placed p{{}, op, {}};
  if (target == Target::Cpu && op.code == OpCode::take && gather_over_domain(p.op)) return over_output(std::move(p));
  if (target == Target::Cpu && op.code == OpCode::put && scatter_over_domain(p.op)) return over_output(std::move(p));
  if (target == Target::Cpu && joins_scalar_stage(op)) return p;  // one point, among a 0-d stage's ops
  if (is_data_dependent(op.code)) {  // a stage of its own, run by the library as it is
    p.domain = op.output.shape;
    // on the CPU a compress walks its mask: rows move whole (emit_compress.cc)
    if (target == Target::Cpu && op.code == OpCode::compress && p.domain.size() > 1) p.domain.resize(1);
    return p;
  }
  switch (op_kind(op.code)) {
    case OpKind::Arange:
      p.domain = op.output.shape;
      return p;
    case OpKind::Reduce: {
      const View& in = op.inputs[0];
      std::vector<bool> keep(in.ndim()), folded(in.ndim(), false), keep_out;
      for (int a : op.axes) folded[a] = true;
      bool folds = false;
      for (int d = 0; d < in.ndim(); ++d) {
        keep[d] = in.shape[d] != 1 || in.extent_of(d) >= 0;
        folds = folds || (folded[d] && keep[d]);
      }
      for (int d = 0; d < in.ndim(); ++d) {
        keep[d] = keep[d] || (folded[d] && !folds);
        if (!folded[d]) keep_out.push_back(keep[d]);
      }
      p.op.inputs[0] = drop_dims(in, keep);
      p.op.output = drop_dims(op.output, keep_out);
      p.op.axes.clear();
      for (int d = 0, k = 0; d < in.ndim(); ++d) {
        if (!keep[d]) continue;
        if (folded[d]) p.op.axes.push_back(k);
        ++k;
      }
      p.domain = p.op.inputs[0].shape;
      p.reduce_axes = p.op.axes;
      return p;
    }
    default: return over_output(std::move(p));
  }
}

std::string shape_text(const Shape& s) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? "," : "") << s[i];
  os << "]";
  return os.str();
}

// Ops one stage takes at most: past a few hundred, LLVM's scheduling and register allocation of
// the stage's one block grow faster than its ops (a list of 2,304 anchors' numbers, each computed
// from the image size, joined by np.array: one 0-d stage of 16,704 ops, seconds to compile), and
// so does fusion's own bookkeeping.
constexpr size_t kMaxStageOps = 256;

class Fuser {
 public:
  Fuser(const Graph& g, const StorageTable& t, Target target) : g_(g), t_(t), target_(target) {}

  StageGraph run() {
    for (size_t i = 0; i < g_.ops.size(); ++i) add(static_cast<int>(i));
    close();
    return std::move(sg_);
  }

 private:
  void add(int id) {
    Placed p = place(g_.ops[id], target_);
    if (!open_.empty()) {
      std::string why = why_not(p);
      if (why.empty()) {
        if (const size_t k = parallel_prefix(p, id); k > 0) split(k, id);
        join(id, std::move(p));
        return;
      }
      sg_.rejections.push_back(describe_op(g_, id) + " not fused into stage " + std::to_string(sg_.stages.size()) +
                               " after " + describe_op(g_, cur_.op_ids.back()) + ": " + why);
      if (hoistable(p)) {
        sg_.rejections.back() += "; it runs in a 0-d stage before it, which stays open";
        log_line("fusion", sg_.rejections.back());
        hoisted_.push_back({id, std::move(p)});
        return;
      }
      log_line("fusion", sg_.rejections.back());
      close();
    }
    cur_ = Stage{};
    cur_.domain = p.domain;
    join(id, std::move(p));
  }

  // Whether a 0-d elementwise op that may not join the open stage (which has loops) can run
  // before it instead: it reads nothing the open stage writes and writes nothing it touches
  // (x1[i] between the gathers of x1[order[1:]] in an NMS loop's body). The open stage then
  // takes the ops after it.
  bool hoistable(const Placed& p) const {
    // a check of a 0-d value compiles into a 0-d stage on the CPU (joins_scalar_stage); it may
    // raise there before the open stage's ops only where those write none of the caller's arrays
    // (NumPy raises after the writes before it: dependence.cc's edges)
    const bool check = target_ == Target::Cpu && op_kind(p.op.code) == OpKind::Check && joins_scalar_stage(p.op);
    if (!p.domain.empty() || cur_.domain.empty() || (runs_in_library(p.op) && !check) ||
        op_kind(p.op.code) == OpKind::Reduce || op_kind(p.op.code) == OpKind::Arange)
      return false;
    if (check && std::any_of(open_.begin(), open_.end(), [&](const Placed& q) {
          return g_.storages[q.op.output.storage].kind == StorageKind::Arg;
        }))
      return false;
    std::set<int> written, touched;
    auto touch = [&](const View& v) {
      touched.insert(v.storage);
      for (int e : v.extents)
        if (e >= 0) touched.insert(e);
    };
    for (const Placed& q : open_) {
      written.insert(q.op.output.storage);
      touch(q.op.output);
      for (const View& v : q.op.inputs) touch(v);
    }
    for (const View& v : p.op.inputs) {
      if (written.count(v.storage)) return false;
      for (int e : v.extents)
        if (e >= 0 && written.count(e)) return false;
    }
    return !touched.count(p.op.output.storage);
  }

  // Empty when op `p` may join the open stage; else the reason it may not.
  std::string why_not(const Placed& p) const {
    if (cur_.ops.size() >= kMaxStageOps) return "the stage holds " + std::to_string(kMaxStageOps) + " ops, the most one takes";
    // on the CPU compresses by one mask share a stage, alone or after the ops that make and count
    // the mask (legality's compress_conflict)
    if (target_ == Target::Cpu && p.op.code == OpCode::compress &&
        (cur_.is_reduction() ||
         std::all_of(cur_.ops.begin(), cur_.ops.end(), [](const Op& op) { return op.code == OpCode::compress; }))) {
      std::string why = compress_conflict(g_, cur_.ops, p.op);
      if (why.empty() && p.domain != cur_.domain)
        why = "its loop domain " + shape_text(p.domain) + " differs from the stage's " + shape_text(cur_.domain);
      return why;
    }
    if (cur_.is_reduction()) return "a reduction ends its stage";
    if (alone(cur_.ops.back())) return std::string(op_name(cur_.ops.back().code)) + " runs as a stage of its own";
    if (alone(p.op)) return std::string(op_name(p.op.code)) + " runs as a stage of its own";
    if (p.domain != cur_.domain)
      return "its loop domain " + shape_text(p.domain) + " differs from the stage's " + shape_text(cur_.domain);
    if (p.domain.empty()) return "";  // one point: the stage runs its ops in program order
    if (is_domain_scatter(cur_.ops.back())) return "a scatter ends its stage";
    // a gather may read any row of its source: no op of its stage may write there, but a
    // scatter that ends it by the gather's own indices (scatter_conflict)
    const bool scatter = is_domain_scatter(p.op);
    if (scatter)
      if (std::string why = scatter_conflict(g_, cur_.ops, p.op); !why.empty()) return why;
    for (const Op& op : cur_.ops) {
      if (is_domain_gather(p.op) && op.output.storage == p.op.inputs[0].storage)
        return "it gathers from %s" + std::to_string(op.output.storage) + ", which an earlier op of the stage writes";
      if (is_domain_gather(op) && p.op.output.storage == op.inputs[0].storage && !scatter)
        return "it writes %s" + std::to_string(op.inputs[0].storage) + ", which an earlier op of the stage gathers from";
    }
    if (op_kind(p.op.code) == OpKind::Arange && p.domain.size() != 1) return "arange iterates one axis";
    AccessList accesses = stage_accesses(p.op, p.domain, p.reduce_axes);
    if (scatter) accesses.pop_back();  // the rows it writes, which scatter_conflict checked
    std::string why = order_conflict(open_accesses_, accesses);
    if (!why.empty() || target_ == Target::Cpu) return why;
    if (op_kind(p.op.code) == OpKind::Reduce)  // its results are stored after every point
      for (const AccessList& q : open_accesses_)
        for (const auto& access : q)
          if (access.first.storage == p.op.output.storage)
            return "it reduces into %s" + std::to_string(p.op.output.storage) + ", which an earlier op of the stage touches";
    return point_conflict(open_accesses_, accesses);
  }

  // Whether op runs as a stage of its own: the library's ops, but on the CPU a check or append of
  // one element, which a 0-d stage compiles.
  bool alone(const Op& op) const { return runs_in_library(op) && !(target_ == Target::Cpu && joins_scalar_stage(op)); }

  // On the CPU a reduction over axis 0 makes its stage serial. Where the open stage stores a
  // result read outside it anyway and has the points to run in parallel (default_schedule's
  // threshold), the reduction takes a stage of its own with the ops that only feed it: one more
  // pass over a stored result, in place of a serial pass over everything the stage reads (YOLOv5's
  // column scan before its count). Returns how many of the open ops stay, 0 where nothing splits.
  size_t parallel_prefix(const Placed& p, int id) const {
    if (target_ != Target::Cpu || op_kind(p.op.code) != OpKind::Reduce || p.reduce_axes.empty() || p.reduce_axes[0] != 0)
      return 0;
    std::vector<bool> after(g_.ops.size(), false);  // the ops that go with the reduction
    after[id] = true;
    size_t k = open_.size();
    for (; k > 0; --k) {
      // an op moves when only the ops after it (in the stage, or the reduction) read its result
      const int s = open_[k - 1].op.output.storage;
      bool feeds_only = g_.storages[s].kind == StorageKind::Temp;
      for (const Access& a : t_.accesses[s])
        feeds_only = feeds_only && (a.op == cur_.op_ids[k - 1] || (a.op < static_cast<int>(after.size()) && after[a.op] && !a.write));
      if (!feeds_only) break;
      after[cur_.op_ids[k - 1]] = true;
    }
    if (k == 0 || shape_numel(cur_.domain) < parallel_min_points(g_, std::vector<Op>(cur_.ops.begin(), cur_.ops.begin() + k),
                                                                 static_cast<int>(cur_.domain.size())))
      return 0;
    return k;
  }

  // Closes the open stage after its first k ops; the rest open the next one.
  void split(size_t k, int id) {
    std::vector<int> ids(cur_.op_ids.begin() + k, cur_.op_ids.end());
    std::vector<Placed> rest(open_.begin() + k, open_.end());
    const Shape domain = cur_.domain;
    sg_.rejections.push_back(describe_op(g_, id) + " not fused into stage " + std::to_string(sg_.stages.size()) + " after " +
                             describe_op(g_, cur_.op_ids[k - 1]) +
                             ": it would make the stage serial, whose points run in parallel without it");
    log_line("fusion", sg_.rejections.back());
    cur_.op_ids.resize(k);
    cur_.ops.resize(k);
    open_.resize(k);
    open_accesses_.resize(k);
    close();
    cur_.domain = domain;
    for (size_t i = 0; i < ids.size(); ++i) join(ids[i], std::move(rest[i]));
  }

  void join(int id, Placed p) {
    open_accesses_.push_back(stage_accesses(p.op, p.domain, p.reduce_axes));
    cur_.op_ids.push_back(id);
    cur_.ops.push_back(p.op);
    if (!p.reduce_axes.empty() || op_kind(p.op.code) == OpKind::Reduce) cur_.reduce_axes = p.reduce_axes;
    open_.push_back(std::move(p));
  }

  // Closes the open stage, after a 0-d stage of the ops hoisted before it: the 0-d stage closed
  // just before it where that one may take them (a loop's trip then runs its scalar ops in one
  // kernel, in the order they ran in two).
  void close() {
    if (open_.empty()) return;
    if (!hoisted_.empty()) {
      Stage later = std::move(cur_);
      std::vector<Placed> later_open = std::move(open_);
      std::vector<AccessList> later_accesses = std::move(open_accesses_);
      std::vector<std::pair<int, Placed>> hoisted = std::move(hoisted_);
      hoisted_.clear();
      cur_ = Stage{};
      open_.clear();
      open_accesses_.clear();
      if (!sg_.stages.empty() && takes_scalar_ops(sg_.stages.back())) {
        Stage last = std::move(sg_.stages.back());
        sg_.stages.pop_back();
        for (size_t k = 0; k < last.ops.size(); ++k) join(last.op_ids[k], Placed{{}, last.ops[k], {}});
      }
      for (auto& [id, p] : hoisted) join(id, std::move(p));
      close_open();
      cur_ = std::move(later);
      open_ = std::move(later_open);
      open_accesses_ = std::move(later_accesses);
    }
    close_open();
  }

  // Whether 0-d ops may join stage s after its own (why_not's rules for a 0-d stage).
  bool takes_scalar_ops(const Stage& s) const {
    return s.domain.empty() && !s.is_reduction() && std::none_of(s.ops.begin(), s.ops.end(), [&](const Op& op) { return alone(op); });
  }

  // A temporary the stage writes once and reads only through the same view, that nothing
  // outside the stage touches, lives in registers.
  void close_open() {
    std::vector<bool> mine(g_.ops.size(), false);
    for (int id : cur_.op_ids) mine[id] = true;
    for (const Placed& p : open_) {
      const View& w = p.op.output;
      const int s = w.storage;
      if (g_.storages[s].kind != StorageKind::Temp || !p.reduce_axes.empty() ||
          op_kind(p.op.code) == OpKind::Reduce || runs_in_library(p.op))
        continue;
      bool reg = true;
      int writes = 0;
      for (const Access& a : t_.accesses[s]) {
        if (a.op >= static_cast<int>(g_.ops.size()) || !mine[a.op]) reg = false;
        writes += a.write;
      }
      for (const Placed& q : open_)
        for (const View& r : q.op.inputs)
          if (r.storage == s && r != w) reg = false;
      if (reg && writes == 1) cur_.inlinable.push_back(s);
    }
    std::sort(cur_.inlinable.begin(), cur_.inlinable.end());
    cur_.registers = cur_.inlinable;
    for (size_t d = 0; d < cur_.domain.size(); ++d) cur_.loops.push_back("i" + std::to_string(d));
    sg_.stages.push_back(std::move(cur_));
    open_.clear();
    open_accesses_.clear();
    cur_ = Stage{};
  }

  const Graph& g_;
  const StorageTable& t_;
  const Target target_;
  StageGraph sg_;
  Stage cur_;
  std::vector<Placed> open_;
  std::vector<AccessList> open_accesses_;
  std::vector<std::pair<int, Placed>> hoisted_;  // 0-d ops that run before the open stage
};

}  // namespace

StageGraph fuse_stages(const Graph& g, const StorageTable& t, Target target) { return Fuser(g, t, target).run(); }

}  // namespace strider
