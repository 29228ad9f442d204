#include <algorithm>

#include "schedule/legality.h"
#include "schedule/primitives.h"

namespace strider::detail {

// reorder(loops, outermost first): every loop, once. Legal when every conflicting pair of
// accesses stays in program order under the new order (the exact test fusion uses), and the
// reduced loops keep their relative order (argmax reports the first index in C order).
void reorder(Stage& s, const Primitive& p) {
  if (p.names.size() != s.loops.size() || !p.factors.empty()) refuse(p, "lists every loop of the stage once");
  require_plain_loops(s, p);
  std::vector<int> perm;
  for (const std::string& n : p.names) {
    int d = loop_index(s, p, n);
    if (std::find(perm.begin(), perm.end(), d) != perm.end()) refuse(p, "names " + n + " twice");
    perm.push_back(d);
  }
  std::vector<int> reduced_order;
  for (int d : perm)
    if (is_reduced(s, d)) reduced_order.push_back(d);
  if (!std::is_sorted(reduced_order.begin(), reduced_order.end()))
    refuse(p, "the reduced loops must keep their order");
  Stage next = s;
  auto permuted = [&](const View& v, const std::vector<int>& order) {
    View out = v;
    for (size_t i = 0; i < order.size(); ++i) {
      out.shape[i] = v.shape[order[i]];
      out.strides[i] = v.strides[order[i]];
    }
    return out;
  };
  rewrite_views(
      next, [&](const View& v) { return permuted(v, perm); },
      [&](const View& v, const std::vector<int>& kept) {
        std::vector<int> order;  // new kept order, as positions among the old kept loops
        for (int d : perm) {
          auto it = std::find(kept.begin(), kept.end(), d);
          if (it != kept.end()) order.push_back(static_cast<int>(it - kept.begin()));
        }
        return permuted(v, order);
      });
  for (size_t i = 0; i < perm.size(); ++i) {
    next.domain[i] = s.domain[perm[i]];
    next.loops[i] = s.loops[perm[i]];
  }
  next.reduce_axes.clear();
  for (size_t i = 0; i < perm.size(); ++i)
    if (is_reduced(s, perm[i])) next.reduce_axes.push_back(static_cast<int>(i));
  std::string why = stage_order_conflict(next);
  if (!why.empty()) refuse(p, why);
  s = std::move(next);
}

}  // namespace strider::detail
