#include <algorithm>

#include "schedule/primitives.h"

namespace strider::detail {

// fuse(outer, inner, fused): two neighbouring loops as one, where every view walks them as one
// stride (the points run in the same order, so it is always legal when it applies).
void fuse(Stage& s, const Primitive& p) {
  if (p.names.size() != 3 || !p.factors.empty()) refuse(p, "takes (outer, inner, fused)");
  require_plain_loops(s, p);
  const int d = loop_index(s, p, p.names[0]);
  require_no_tail(s, p, p.names[0]);
  require_no_tail(s, p, p.names[1]);
  if (loop_index(s, p, p.names[1]) != d + 1) refuse(p, p.names[1] + " is not the loop right inside " + p.names[0]);
  if (is_reduced(s, d) != is_reduced(s, d + 1)) refuse(p, "one loop is reduced and the other is not");
  auto merged = [&](const View& v, int k) {
    if (v.shape[k] != 1 && v.shape[k + 1] != 1 && v.strides[k] != v.strides[k + 1] * v.shape[k + 1])
      refuse(p, "%s" + std::to_string(v.storage) + " does not walk " + p.names[0] + " and " + p.names[1] +
                    " as one stride");
    View out = v;
    out.strides[k] = v.shape[k + 1] == 1 ? v.strides[k] : v.strides[k + 1];
    out.shape[k] = v.shape[k] * v.shape[k + 1];
    out.shape.erase(out.shape.begin() + k + 1);
    out.strides.erase(out.strides.begin() + k + 1);
    return out;
  };
  const bool reduced = is_reduced(s, d);
  Stage next = s;
  rewrite_views(
      next, [&](const View& v) { return merged(v, d); },
      [&](const View& v, const std::vector<int>& kept) {
        return reduced ? v : merged(v, static_cast<int>(std::find(kept.begin(), kept.end(), d) - kept.begin()));
      });
  next.domain[d] *= next.domain[d + 1];
  next.domain.erase(next.domain.begin() + d + 1);
  next.loops[d] = p.names[2];
  next.loops.erase(next.loops.begin() + d + 1);
  next.reduce_axes.clear();
  for (int a : s.reduce_axes)
    if (a != d + 1) next.reduce_axes.push_back(a > d + 1 ? a - 1 : a);
  s = std::move(next);
}

}  // namespace strider::detail
