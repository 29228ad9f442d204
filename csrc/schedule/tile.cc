#include <algorithm>

#include "schedule/primitives.h"

namespace strider::detail {

// tile(x, y, xo, yo, xi, yi, fx, fy): x outside y; splits both and moves xi inside yo, giving
// ... xo, yo, xi, yi ... (a reorder, so it is checked like one).
void tile(Stage& s, const Primitive& p) {
  if (p.names.size() != 6 || p.factors.size() != 2) refuse(p, "takes (x, y, xo, yo, xi, yi, fx, fy)");
  if (loop_index(s, p, p.names[0]) >= loop_index(s, p, p.names[1])) refuse(p, p.names[0] + " must be outside " + p.names[1]);
  split(s, {"split", {p.names[0], p.names[2], p.names[4]}, {p.factors[0]}});
  split(s, {"split", {p.names[1], p.names[3], p.names[5]}, {p.factors[1]}});
  std::vector<std::string> order = s.loops;
  order.erase(std::find(order.begin(), order.end(), p.names[4]));
  order.insert(std::find(order.begin(), order.end(), p.names[5]), p.names[4]);
  reorder(s, {"reorder", order, {}});
}

}  // namespace strider::detail
