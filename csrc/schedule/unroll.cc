#include "schedule/primitives.h"

namespace strider::detail {

// unroll(loop, factor): the innermost loop, by a constant factor.
void unroll(Stage& s, const Primitive& p) {
  if (p.names.size() != 1 || p.factors.size() != 1) refuse(p, "takes (loop, factor)");
  const int d = loop_index(s, p, p.names[0]);
  if (d != static_cast<int>(s.loops.size()) - 1) refuse(p, p.names[0] + " is not the innermost loop (" + s.loops.back() + " is)");
  if (p.factors[0] < 1 || p.factors[0] > 64) refuse(p, "the factor must be between 1 and 64");
  s.schedule.unroll = static_cast<int>(p.factors[0]);
}

}  // namespace strider::detail
