#include "schedule/legality.h"

#include <algorithm>
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

std::string outer_loop_conflict(const Stage& s) {
  const std::vector<TailBound> tails = tail_bounds(s);
  const AccessList all = memory_accesses(s);
  for (size_t i = 0; i < all.size(); ++i)
    for (size_t j = i; j < all.size(); ++j) {
      const auto& [a, a_writes] = all[i];
      const auto& [b, b_writes] = all[j];
      if ((!a_writes && !b_writes) || a.storage != b.storage) continue;
      if (shared_across_outer(a, b, tails))
        return "two iterations of " + (s.loops.empty() ? std::string("the outer loop") : s.loops[0]) +
               " touch one element of %s" + std::to_string(a.storage) + " that one of them writes";
    }
  return "";
}

}  // namespace strider
