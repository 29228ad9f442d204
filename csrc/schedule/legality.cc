#include "schedule/legality.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <stdexcept>

#include "analysis/overlap.h"

namespace strider {

AccessList stage_accesses(const Op& op, const Shape& domain, const std::vector<int>& reduce_axes) {
  AccessList out;
  if (op_kind(op.code) != OpKind::Arange)
    for (const View& v : op.inputs) out.push_back({v, false});
  View w = op.output;
  if (!reduce_axes.empty()) {
    View expanded{w.storage, {}, {}, w.offset, {}};
    for (int d = 0, k = 0; d < static_cast<int>(domain.size()); ++d) {
      bool folded = std::find(reduce_axes.begin(), reduce_axes.end(), d) != reduce_axes.end();
      expanded.shape.push_back(domain[d]);
      expanded.strides.push_back(folded ? 0 : w.strides[k++]);
    }
    w = expanded;
  }
  out.push_back({w, true});
  return out;
}

std::vector<TailBound> tail_bounds(const Stage& s) {
  std::vector<TailBound> out;
  auto axis = [&](const std::string& name) {
    auto it = std::find(s.loops.begin(), s.loops.end(), name);
    if (it == s.loops.end()) throw std::logic_error("a tail names no loop " + name);
    return static_cast<int>(it - s.loops.begin());
  };
  for (const Tail& t : s.tails) out.push_back({axis(t.outer), axis(t.inner), t.factor, t.extent});
  return out;
}

std::string order_conflict(const std::vector<AccessList>& earlier, const AccessList& later,
                           const std::vector<TailBound>& tails) {
  for (const auto& [view, writes] : later)
    for (const AccessList& q : earlier)
      for (const auto& [before, before_writes] : q) {
        if ((!before_writes && !writes) || before.storage != view.storage) continue;
        if (reordered_when_fused(before, view, tails))
          return std::string(before_writes ? "it reads or writes %s" : "it writes %s") + std::to_string(view.storage) +
                 " where an earlier op of the stage " + (before_writes ? "wrote" : "read") +
                 " it, at a later point of the loop";
      }
  const View& w = later.back().first;
  for (size_t k = 0; k + 1 < later.size(); ++k)
    if (later[k].first.storage == w.storage && reordered_when_fused(later[k].first, w, tails))
      return "it reads elements it overwrites at an earlier point";
  return "";
}

std::string stage_order_conflict(const Stage& s) {
  const std::vector<TailBound> tails = tail_bounds(s);
  std::vector<AccessList> done;
  for (size_t k = 0; k < s.ops.size(); ++k) {
    const bool last_reduce = k + 1 == s.ops.size() && op_kind(s.ops[k].code) == OpKind::Reduce;
    AccessList acc = stage_accesses(s.ops[k], s.domain, last_reduce ? s.reduce_axes : std::vector<int>{});
    std::string why = order_conflict(done, acc, tails);
    if (!why.empty()) return "op" + std::to_string(s.op_ids[k]) + ": " + why;
    done.push_back(std::move(acc));
  }
  return "";
}

namespace {
// op k's accesses over the stage's domain, its registers left out
AccessList op_memory_accesses(const Stage& s, size_t k) {
  const bool last_reduce = k + 1 == s.ops.size() && op_kind(s.ops[k].code) == OpKind::Reduce;
  AccessList out;
  for (auto& a : stage_accesses(s.ops[k], s.domain, last_reduce ? s.reduce_axes : std::vector<int>{}))
    if (std::find(s.registers.begin(), s.registers.end(), a.first.storage) == s.registers.end())
      out.push_back(std::move(a));
  return out;
}
}  // namespace

std::string point_conflict(const std::vector<AccessList>& earlier, const AccessList& later,
                           const std::vector<TailBound>& tails) {
  for (size_t k = 0; k < later.size(); ++k) {
    const auto& [view, writes] = later[k];
    for (const AccessList& q : earlier)
      for (const auto& [before, before_writes] : q) {
        if ((!before_writes && !writes) || before.storage != view.storage) continue;
        if (shared_between_points(before, view, tails))
          return std::string(writes ? "it writes %s" : "it reads %s") + std::to_string(view.storage) +
                 " where an earlier op of the stage " + (before_writes ? "wrote" : "read") +
                 " it at another point, and the points run at once";
      }
    for (size_t j = 0; j < k; ++j) {
      const auto& [other, other_writes] = later[j];
      if ((other_writes || writes) && other.storage == view.storage && shared_between_points(other, view, tails))
        return "it reads elements of %s" + std::to_string(view.storage) + " that it writes at another point, and the points run at once";
    }
  }
  return "";
}

std::string stage_point_conflict(const Stage& s) {
  const std::vector<TailBound> tails = tail_bounds(s);
  std::vector<AccessList> done;
  for (size_t k = 0; k < s.ops.size(); ++k) {
    AccessList acc = op_memory_accesses(s, k);
    std::string why = point_conflict(done, acc, tails);
    if (!why.empty()) return "op" + std::to_string(s.op_ids[k]) + ": " + why;
    done.push_back(std::move(acc));
  }
  return "";
}

AccessList memory_accesses(const Stage& s) {
  AccessList out;
  for (size_t k = 0; k < s.ops.size(); ++k)
    for (auto& a : op_memory_accesses(s, k)) out.push_back(std::move(a));
  return out;
}

namespace {

// outer_loop_conflict, leaving out storage `own` (-1: none)
std::string outer_loop_conflict(const Stage& s, int own) {
  const std::vector<TailBound> tails = tail_bounds(s);
  const AccessList all = memory_accesses(s);
  for (size_t i = 0; i < all.size(); ++i)
    for (size_t j = i; j < all.size(); ++j) {
      const auto& [a, a_writes] = all[i];
      const auto& [b, b_writes] = all[j];
      if ((!a_writes && !b_writes) || a.storage != b.storage || a.storage == own) continue;
      if (shared_across_outer(a, b, tails))
        return "two iterations of " + (s.loops.empty() ? std::string("the outer loop") : s.loops[0]) +
               " touch one element of %s" + std::to_string(a.storage) + " that one of them writes";
    }
  return "";
}

}  // namespace

std::string outer_loop_conflict(const Stage& s) { return outer_loop_conflict(s, -1); }

namespace {

// Whether op writes v's storage or one of its run-time extents.
bool writes(const Op& op, const View& v) {
  bool hit = op.output.storage == v.storage;
  for (int e : v.extents) hit = hit || e == op.output.storage;
  return hit;
}

// Whether op ka's read of a and op kb's read of b take the same value at every point: the same
// view of what no op of [0, n) writes, or the results of equal ops before them, each its
// storage's one writer there, on such values (inline_producers copies the ops that make a mask
// for the reduction that counts it). Each step goes to earlier ops: it ends.
bool same_value(const Graph& g, const std::vector<Op>& ops, size_t n, size_t ka, const View& a, size_t kb, const View& b) {
  auto writers = [&](const View& v) {
    std::vector<size_t> w;
    for (size_t k = 0; k < n; ++k)
      if (ops[k].output.storage == v.storage) w.push_back(k);
    return w;
  };
  const std::vector<size_t> wa = writers(a), wb = writers(b);
  if (wa.empty() && wb.empty()) return a == b;
  if (wa.size() != 1 || wb.size() != 1 || wa[0] >= ka || wb[0] >= kb) return false;
  const Op &pa = ops[wa[0]], &pb = ops[wb[0]];
  if (pa.output != a || pb.output != b) return false;
  if (wa[0] == wb[0]) return true;
  if (pa.code != pb.code || pa.axes != pb.axes || pa.inputs.size() != pb.inputs.size() ||
      g.dtype_of(pa.output) != g.dtype_of(pb.output) || op_kind(pa.code) == OpKind::Reduce || is_data_dependent(pa.code))
    return false;
  for (size_t i = 0; i < pa.inputs.size(); ++i)
    if (!same_value(g, ops, n, wa[0], pa.inputs[i], wb[0], pb.inputs[i])) return false;
  return true;
}

// Whether a write through w at point i lands in row i of the dense rows of src (YOLOv5's concat
// of a detection's columns before its rows compress): the block's rows are whole when they move.
bool within_row(const View& w, const View& src) {
  if (w.storage != src.storage || w.ndim() != 1 || src.ndim() < 2 || w.shape[0] != src.shape[0] ||
      w.strides[0] != src.strides[0])
    return false;
  const View row = src.tail(1);
  const int64_t at = w.offset - src.offset;
  return row.is_c_contiguous() && at >= 0 && at < row.numel();
}

// compress_conflict's rules for compress c after the ops [0, first) that compute and count its mask.
std::string counted_conflict(const Graph& g, const std::vector<Op>& ops, size_t first, const Op& c) {
  const View &mask = c.inputs[0], &src = c.inputs[1], &out = c.output;
  const Op& sum = ops[first - 1];
  size_t cast = first;  // the op whose int64 values the sum adds up
  int makers = 0;
  for (size_t k = 0; k + 1 < first; ++k) {
    const Op& op = ops[k];
    if (op.code == OpCode::cast && op.output == sum.inputs[0]) cast = k;
    if (op.output.storage == mask.storage) makers += op.output == mask ? 1 : 2;
  }
  if (sum.code != OpCode::sum || g.dtype_of(sum.output) != DType::Int64 || cast == first ||
      !same_value(g, ops, first - 1, cast, ops[cast].inputs[0], first, mask) || g.dtype_of(mask) != DType::Bool ||
      g.dtype_of(ops[cast].output) != DType::Int64 || makers != 1)
    return "a reduction ends its stage, unless it counts the mask the compress reads";
  const int count = sum.output.storage;
  if (out.extent_of(0) != count) return "its output's length is not the count the stage computes";
  if (out.storage == count || src.storage == count || mask.storage == count)
    return "it touches %s" + std::to_string(count) + ", the count the stage computes";
  for (size_t k = 0; k < first; ++k) {
    const Op& op = ops[k];
    if ((writes(op, src) && !within_row(op.output, src)) || op.output.storage == out.storage)
      return "it touches %s" + std::to_string(op.output.storage) + ", which an op of the stage before it computes";
    for (const View& v : op.inputs) {
      for (int e : v.extents)
        if (e == out.storage) return "an op of the stage sizes a loop by %s" + std::to_string(e) + ", which it writes";
      if (v.storage == out.storage &&
          !(v.ndim() == 1 && v.strides[0] == out.strides[0] && v.strides[0] > 0 && v.offset >= out.offset))
        return "an op of the stage reads %s" + std::to_string(out.storage) + " where it may already have written";
    }
  }
  return "";
}

// The step a of an int64 index that is a * i + b at point i of a 1-d stage (b the same at every
// point), where ops [0, n) compute it from an arange's point with adds, subtracts, copies and
// multiplies by constants, each the one writer of its result there; or, where none of them writes
// it, the graph's ops (an earlier stage's positions: its one writer's step whenever it ran);
// nullopt where not shown.
std::optional<int64_t> affine_step(const Graph& g, const std::vector<Op>& ops, size_t n, const View& v, int depth = 0) {
  if (v.ndim() != 1 || g.dtype_of(v) != DType::Int64 || depth > 16) return std::nullopt;
  const bool graph = &ops == &g.ops;  // (a broadcast input there was computed before the stage)
  if (graph && v.strides[0] == 0) return int64_t{0};
  auto writer_in = [&](const std::vector<Op>& list, size_t end) {
    size_t found = end;
    for (size_t k = 0; k < end; ++k)
      if (list[k].output.storage == v.storage) {
        if (found != end) return end + 1;  // two: not shown
        found = k;
      }
    return found;
  };
  const std::vector<Op>* list = &ops;
  size_t writer = writer_in(ops, n);
  if (writer == n) {
    if (v.strides[0] == 0) return int64_t{0};  // computed before the stage: the same at every point
    list = &g.ops;
    n = g.ops.size();
    writer = writer_in(g.ops, n);
    if (g.storages[v.storage].kind != StorageKind::Temp) return std::nullopt;
  }
  if (writer >= n) return std::nullopt;
  const Op& op = (*list)[writer];
  if (op.output.ndim() != 1 || op.output.strides != v.strides || op.output.offset != v.offset) return std::nullopt;
  auto constant = [&](const View& c) -> std::optional<int64_t> {
    const Storage& cs = g.storages[c.storage];
    if (cs.kind != StorageKind::Const || cs.dtype != DType::Int64 || c.offset < 0 || c.offset >= cs.size ||
        cs.data.size() != static_cast<size_t>(cs.size) * sizeof(int64_t) ||
        std::any_of(c.strides.begin(), c.strides.end(), [](int64_t s) { return s != 0; }))
      return std::nullopt;
    int64_t x;
    std::memcpy(&x, cs.data.data() + c.offset * sizeof(int64_t), sizeof x);
    return x;
  };
  auto step = [&](const View& in) { return affine_step(g, *list, list == &g.ops ? n : writer, in, depth + 1); };
  std::optional<int64_t> a, b;
  int64_t out = 0;
  switch (op.code) {
    case OpCode::arange: return constant(op.inputs[1]);
    case OpCode::copy:
    case OpCode::cast: return step(op.inputs[0]);
    case OpCode::add:
    case OpCode::subtract:
      a = step(op.inputs[0]);
      b = step(op.inputs[1]);
      if (!a || !b || (op.code == OpCode::add ? __builtin_add_overflow(*a, *b, &out) : __builtin_sub_overflow(*a, *b, &out)))
        return std::nullopt;
      return out;
    case OpCode::multiply:
      for (int k = 0; k < 2; ++k)
        if ((a = constant(op.inputs[k])) && (b = step(op.inputs[1 - k])) && !__builtin_mul_overflow(*a, *b, &out))
          return out;
      return std::nullopt;
    default: return std::nullopt;
  }
}

}  // namespace

std::string scatter_conflict(const Graph& g, const std::vector<Op>& ops, const Op& w) {
  const int s = w.output.storage;
  const std::string name = "%s" + std::to_string(s);
  const std::optional<int64_t> step = affine_step(g, ops, ops.size(), w.inputs[0]);  // the indices' a
  for (size_t k = 0; k < ops.size(); ++k) {
    const Op& op = ops[k];
    if (is_domain_scatter(op)) return "a scatter ends its stage";
    bool touches = op.output.storage == s;
    for (const View& v : op.inputs) touches = touches || v.storage == s;
    if (!touches) continue;
    if (!is_domain_gather(op) || op.output.storage == s || op.inputs[1].storage == s)
      return "an op of the stage touches " + name + ", which it writes at the rows its indices name";
    const View& row = op.inputs[0];
    if (std::any_of(row.strides.begin(), row.strides.end(), [](int64_t x) { return x != 0; }) || op.axes[0] != w.axes[0] ||
        !same_value(g, ops, ops.size(), k, op.inputs[1], ops.size(), w.inputs[0]))
      return "an op of the stage gathers from " + name + ", which it writes, by other indices or rows";
    int64_t apart = 0;  // a point's row from the next one's, in elements
    if (!step || *step == 0 || __builtin_mul_overflow(*step, w.axes[0], &apart))
      return "an op of the stage gathers from " + name + ", which it writes, and its indices may repeat";
    const int64_t d = w.output.offset - row.offset;
    if (d != 0 && d % apart == 0)
      return "an op of the stage gathers from " + name + " what it writes at another point";
  }
  for (const View& v : w.inputs)
    if (v.storage == s) return "it reads " + name + ", which it writes";
  return "";
}

int private_scatter(const Graph& g, const std::vector<Op>& ops) {
  if (ops.empty() || !is_domain_scatter(ops.back())) return -1;
  const Op& w = ops.back();
  const std::vector<Op> before(ops.begin(), ops.end() - 1);
  const std::optional<int64_t> step = affine_step(g, before, before.size(), w.inputs[0]);
  int64_t apart = 0;
  if (!step || __builtin_mul_overflow(*step, w.axes[0], &apart) || apart == 0 || !scatter_conflict(g, before, w).empty())
    return -1;
  return w.output.storage;
}

std::string outer_loop_conflict(const Graph& g, const Stage& s) { return outer_loop_conflict(s, private_scatter(g, s.ops)); }

std::string compress_conflict(const Graph& g, const std::vector<Op>& ops, const Op& c) {
  size_t first = 0;  // the stage's first compress
  while (first < ops.size() && ops[first].code != OpCode::compress) ++first;
  // a row moves while the predicate's load of it is still in cache; alone, the library's
  // prefetching compaction moves rows faster
  if (first == 0 && (c.output.ndim() != 1 || (!ops.empty() && ops[0].output.ndim() != 1)))
    return "a compress of rows runs as a stage of its own, unless its stage makes and counts the mask";
  if (first < ops.size() && c.inputs[0] != ops[first].inputs[0]) return "it compresses by another mask than the stage's";
  if (first > 0)
    if (std::string why = counted_conflict(g, ops, first, c); !why.empty()) return why;
  for (size_t k = first; k < ops.size(); ++k)
    for (const auto& [w, r] : {std::pair<const Op*, const Op*>{&ops[k], &c}, {&c, &ops[k]}})
      for (const View& v : {r->inputs[0], r->inputs[1], r->output})
        if (writes(*w, v)) return "it touches %s" + std::to_string(w->output.storage) + ", which a compress of the stage writes";
  return "";
}

std::string parallel_compaction_conflict(const Stage& s) {
  size_t first = 0;
  while (first < s.ops.size() && s.ops[first].code != OpCode::compress) ++first;
  if (s.domain.size() != 1 || first < 2 || first == s.ops.size() || op_kind(s.ops[first - 1].code) != OpKind::Reduce)
    return "it is not a compaction after the ops that make and count its mask";
  Stage makers = s;  // the count, one result of all the points, goes by chunk
  makers.ops.resize(first - 1);
  makers.op_ids.resize(first - 1);
  makers.reduce_axes.clear();
  if (std::string why = outer_loop_conflict(makers); !why.empty()) return why;
  for (size_t k = first; k < s.ops.size(); ++k) {
    // in place, a chunk's moves would reach the elements the chunk before it has yet to move
    const View &src = s.ops[k].inputs[1], &out = s.ops[k].output;
    if (out.storage == src.storage) return "op" + std::to_string(s.op_ids[k]) + " compresses in place";
    for (size_t j = 0; j < first; ++j) {
      bool touches = s.ops[j].output.storage == out.storage;
      for (const View& v : s.ops[j].inputs) touches = touches || v.storage == out.storage;
      if (touches) return "op" + std::to_string(s.op_ids[j]) + " touches %s" + std::to_string(out.storage) + ", which a compress writes";
    }
  }
  return "";
}

}  // namespace strider
