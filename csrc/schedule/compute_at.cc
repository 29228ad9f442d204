#include <algorithm>
#include <string>

#include "schedule/legality.h"
#include "schedule/primitives.h"

namespace strider {

namespace detail {

void check_compute_at(const Stage& s, const Primitive& p) {
  if (p.names.size() != 2 || !p.factors.empty()) refuse(p, "takes (%sN, loop)");
  storage_arg(p, p.names[0]);
  loop_index(s, p, p.names[1]);
}

namespace {

// The stage loops a member and the consumer share must be plain and unreduced, and a reduction
// must fold the innermost loops (its accumulator then lives in registers, one row at a time).
void require_nestable(const Stage& s, int shared, const Primitive& p, const std::string& which) {
  require_plain_loops(s, p);
  for (int a : s.reduce_axes)
    if (a < shared) refuse(p, which + " reduces loop " + s.loops[a] + ", which the stages share");
  for (size_t k = 0; k < s.reduce_axes.size(); ++k)
    if (s.reduce_axes[s.reduce_axes.size() - 1 - k] != static_cast<int>(s.domain.size()) - 1 - static_cast<int>(k))
      refuse(p, which + " reduces loops that are not its innermost ones");
  for (const Tail& t : s.tails)
    for (int d = 0; d < shared; ++d)
      if (t.outer == s.loops[d] || t.inner == s.loops[d]) refuse(p, which + " has a tail on loop " + s.loops[d] + ", which the stages share");
}

}  // namespace

}  // namespace detail

// compute_at(%sN, loop) in stage c's schedule: the stage that writes temporary %sN, and every
// stage between it and c, run inside c's loops down to `loop`: at each iteration of those loops
// they compute their part, then c runs its own. NumPy ran each of them over all points before
// the next: the result is the same when no element one stage writes is touched by a later one at
// another iteration of the shared loops (isl decides it on the exact accesses).
void compute_at_stages(const Graph& g, StageGraph& sg) {
  using namespace detail;
  for (size_t c = 0; c < sg.stages.size(); ++c) {
    Stage& consumer = sg.stages[c];
    int first = static_cast<int>(c), shared = 0;
    const Primitive* where = nullptr;
    for (const Primitive& p : consumer.schedule.primitives) {
      if (p.verb != "compute_at") continue;
      const int sid = storage_arg(p, p.names[0]);
      const int loops = loop_index(consumer, p, p.names[1]) + 1;
      if (where && loops != shared) refuse(p, "every compute_at of a stage names the same loop (" + where->names[1] + ")");
      where = &p;
      shared = loops;
      if (sid < 0 || sid >= static_cast<int>(g.storages.size()) || g.storages[sid].kind != StorageKind::Temp)
        refuse(p, p.names[0] + " is not a temporary");
      int writer = -1;
      for (int m = 0; m < static_cast<int>(c); ++m)
        for (const Op& op : sg.stages[m].ops)
          if (op.output.storage == sid) writer = m;
      if (writer < 0) refuse(p, p.names[0] + " is not written by an earlier stage");
      first = std::min(first, writer);
    }
    if (!where) continue;
    const Primitive& p = *where;
    require_nestable(consumer, shared, p, "stage " + std::to_string(c));
    std::vector<AccessList> accesses;
    for (int m = first; m <= static_cast<int>(c); ++m) {
      const Stage& s = sg.stages[m];
      const std::string which = "stage " + std::to_string(m);
      if (m < static_cast<int>(c)) {
        if (s.computed_in >= 0) refuse(p, which + " already runs inside stage " + std::to_string(s.computed_in));
        if (!s.computed_at.empty()) refuse(p, which + " runs other stages inside its own loops");
        if (static_cast<int>(s.domain.size()) < shared) refuse(p, which + " has fewer loops than the stages share");
        for (int d = 0; d < shared; ++d)
          if (s.domain[d] != consumer.domain[d])
            refuse(p, which + "'s loop " + s.loops[d] + " runs " + std::to_string(s.domain[d]) + " times, " +
                          consumer.loops[d] + " " + std::to_string(consumer.domain[d]));
        require_nestable(s, shared, p, which);
      }
      accesses.push_back(memory_accesses(s));
    }
    for (size_t x = 0; x < accesses.size(); ++x)
      for (size_t y = x + 1; y < accesses.size(); ++y)
        for (const auto& [a, a_writes] : accesses[x])
          for (const auto& [b, b_writes] : accesses[y]) {
            if ((!a_writes && !b_writes) || a.storage != b.storage) continue;
            if (g.storages[a.storage].kind == StorageKind::Const) continue;
            if (shared_across_prefix(a, b, shared))
              refuse(p, "stage " + std::to_string(first + y) + " touches an element of %s" + std::to_string(a.storage) +
                            " that stage " + std::to_string(first + x) + (a_writes ? " writes" : " reads") +
                            " at another iteration of the loops they would share");
          }
    for (int m = first; m < static_cast<int>(c); ++m) {
      consumer.computed_at.push_back(sg.stages[m]);
      sg.stages[m].computed_in = static_cast<int>(c);
    }
    consumer.shared_loops = shared;
  }
}

}  // namespace strider
