#include "schedule/legality.h"
#include "schedule/primitives.h"

namespace strider::detail {

// parallel(loop): the outermost loop, split across the thread pool; its points must be
// independent, so it may not be a reduced loop, and no two points may touch one element where
// one of them writes (a scatter's rows by legality's private_scatter). A compaction counting its
// mask is the exception: its chunks count apart and move in order (legality's
// parallel_compaction_conflict).
void parallel(const Graph& g, Stage& s, const Primitive& p) {
  if (p.names.size() != 1 || !p.factors.empty()) refuse(p, "takes (loop)");
  const int d = loop_index(s, p, p.names[0]);
  if (d != 0) refuse(p, "only the outermost loop (" + s.loops.front() + ") runs in parallel");
  const bool compaction = s.ops.back().code == OpCode::compress && is_reduced(s, d);
  if (is_reduced(s, d) && !compaction) refuse(p, p.names[0] + " is reduced");
  std::string why = compaction ? parallel_compaction_conflict(s) : outer_loop_conflict(g, s);
  if (!why.empty()) refuse(p, why);
  s.schedule.parallel = true;
}

}  // namespace strider::detail
