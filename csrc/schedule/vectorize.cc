#include "schedule/primitives.h"

namespace strider::detail {

// vectorize(loop, width): the innermost loop, at a constant power-of-two width.
void vectorize(Stage& s, const Primitive& p) {
  if (p.names.size() != 1 || p.factors.size() != 1) refuse(p, "takes (loop, width)");
  const int d = loop_index(s, p, p.names[0]);
  if (d != static_cast<int>(s.loops.size()) - 1) refuse(p, p.names[0] + " is not the innermost loop (" + s.loops.back() + " is)");
  const int64_t w = p.factors[0];
  if (w < 1 || w > 64 || (w & (w - 1))) refuse(p, "the width must be a power of two up to 64");
  s.schedule.vector_width = static_cast<int>(w);
}

}  // namespace strider::detail
