#include "schedule/primitives.h"

namespace strider::detail {

namespace {
// Dimension k of v as two: (ceil(extent / f), f) with strides (stride * f, stride). The same
// elements, and past the end when f does not divide the extent (those points are never run).
View split_dim(const View& v, int k, int64_t f) {
  View out = v;
  out.shape[k] = (v.shape[k] + f - 1) / f;
  out.strides[k] = v.strides[k] * f;
  out.shape.insert(out.shape.begin() + k + 1, f);
  out.strides.insert(out.strides.begin() + k + 1, v.strides[k]);
  return out;
}
}  // namespace

// split(loop, outer, inner, factor): loop becomes outer x inner, inner iterating `factor`
// consecutive points, with a tail when factor does not divide the extent. Never changes the
// order points run in, so it is always legal.
void split(Stage& s, const Primitive& p) {
  if (p.names.size() != 3 || p.factors.size() != 1) refuse(p, "takes (loop, outer, inner, factor)");
  require_plain_loops(s, p);
  const int d = loop_index(s, p, p.names[0]);
  const int64_t f = p.factors[0];
  if (f < 1) refuse(p, "the factor must be positive");
  require_no_tail(s, p, p.names[0]);
  const int64_t n = s.domain[d];
  if (n % f) s.tails.push_back({p.names[1], p.names[2], f, n});
  const bool reduced = is_reduced(s, d);
  rewrite_views(
      s, [&](const View& v) { return split_dim(v, d, f); },
      [&](const View& v, const std::vector<int>& kept) {
        if (reduced) return v;
        return split_dim(v, static_cast<int>(std::find(kept.begin(), kept.end(), d) - kept.begin()), f);
      });
  for (int& a : s.reduce_axes)
    if (a > d) ++a;
  if (reduced) s.reduce_axes.insert(std::find(s.reduce_axes.begin(), s.reduce_axes.end(), d) + 1, d + 1);
  s.domain[d] = (n + f - 1) / f;
  s.domain.insert(s.domain.begin() + d + 1, f);
  s.loops[d] = p.names[1];
  s.loops.insert(s.loops.begin() + d + 1, p.names[2]);
}

}  // namespace strider::detail
