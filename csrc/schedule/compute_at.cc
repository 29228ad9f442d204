#include <algorithm>
#include <climits>
#include <optional>
#include <set>
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

// A stack buffer holds at most this much of a folded temporary.
constexpr int64_t kSlabBytes = 32768;

// Folds temporary `sid` when the group's accesses are all it has (none elsewhere, not returned)
// and they agree on the offset and the shared loops' strides: each iteration of the shared loops
// then touches its own slab, and no other iteration reads it (compute_at_stages checked that).
void fold(const Graph& g, const std::vector<const Stage*>& group, const std::vector<int>& op_ids, int shared, int sid,
          std::vector<Stage::Folded>& out) {
  for (const View& v : g.outputs)
    if (v.storage == sid) return;
  for (size_t i = 0; i < g.ops.size(); ++i) {
    if (std::find(op_ids.begin(), op_ids.end(), static_cast<int>(i)) != op_ids.end()) continue;
    const Op& op = g.ops[i];
    if (op.output.storage == sid) return;
    for (const View& v : op.inputs)
      if (v.storage == sid) return;
  }
  std::optional<View> first;
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (const Stage* s : group)
    for (const auto& [v, writes] : memory_accesses(*s)) {
      if (v.storage != sid) continue;
      if (v.is_dynamic()) return;
      if (!first) first = v;
      if (v.offset != first->offset) return;
      int64_t a = v.offset, b = v.offset;
      for (int d = 0; d < v.ndim(); ++d) {
        if (d < shared) {
          if (v.strides[d] != first->strides[d]) return;
          continue;
        }
        (v.strides[d] < 0 ? a : b) += v.strides[d] * (v.shape[d] - 1);
      }
      lo = std::min(lo, a);
      hi = std::max(hi, b);
    }
  if (!first || (hi - lo + 1) * static_cast<int64_t>(itemsize(g.storages[sid].dtype)) > kSlabBytes) return;
  out.push_back({sid, lo, hi - lo + 1});
}

// Throws (naming p) unless stages first..c-1 may run inside stage c's outer `shared` loops.
void check_group(const Graph& g, const StageGraph& sg, int c, int first, int shared, const Primitive& p) {
  const Stage& consumer = sg.stages[c];
  require_nestable(consumer, shared, p, "stage " + std::to_string(c));
  std::vector<AccessList> accesses;
  for (int m = first; m <= c; ++m) {
    const Stage& s = sg.stages[m];
    const std::string which = "stage " + std::to_string(m);
    if (m < c) {
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
}

// The temporaries written by stages first..c-1 that the group may keep in slabs.
std::vector<Stage::Folded> slabs(const Graph& g, const StageGraph& sg, int c, int first, int shared) {
  std::vector<const Stage*> group;
  std::vector<int> op_ids;
  for (int m = first; m <= c; ++m) {
    group.push_back(&sg.stages[m]);
    op_ids.insert(op_ids.end(), sg.stages[m].op_ids.begin(), sg.stages[m].op_ids.end());
  }
  std::vector<Stage::Folded> folded;
  for (int m = first; m < c; ++m)
    for (const Op& op : sg.stages[m].ops) {
      const int sid = op.output.storage;
      const bool seen = std::any_of(folded.begin(), folded.end(), [&](const Stage::Folded& f) { return f.storage == sid; });
      if (!seen && g.storages[sid].kind == StorageKind::Temp) fold(g, group, op_ids, shared, sid, folded);
    }
  return folded;
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
  for (int c = 0; c < static_cast<int>(sg.stages.size()); ++c) {
    Stage& consumer = sg.stages[c];
    int first = c, shared = 0;
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
      for (int m = 0; m < c; ++m)
        for (const Op& op : sg.stages[m].ops)
          if (op.output.storage == sid) writer = m;
      if (writer < 0) refuse(p, p.names[0] + " is not written by an earlier stage");
      first = std::min(first, writer);
    }
    if (!where) continue;
    check_group(g, sg, c, first, shared, *where);
    std::vector<Stage::Folded> folded = slabs(g, sg, c, first, shared);
    for (int m = first; m < c; ++m) {
      consumer.computed_at.push_back(sg.stages[m]);
      sg.stages[m].computed_in = c;
    }
    consumer.shared_loops = shared;
    consumer.folded = std::move(folded);
  }
}

// A reduction ends a stage, so a softmax's max, exp-sum and divide are three passes over the
// scores. Run inside the consumer's rows they fold their temporaries into stack slabs: the
// scores are read from memory once and nothing in between is stored. Done where it folds
// something and the rows are long enough to amortize the per-row loops (measured: softmax over
// 81 classes, 160k rows, 2.4x faster than three parallel passes).
void default_compute_at(const Graph& g, StageGraph& sg, const std::set<int>& user_scheduled) {
  using namespace detail;
  constexpr int64_t kMinRowPoints = 16;
  auto has_compute_at = [](const Stage& s) {
    return std::any_of(s.schedule.primitives.begin(), s.schedule.primitives.end(),
                       [](const Primitive& p) { return p.verb == "compute_at"; });
  };
  auto first_reduced = [](const Stage& s) {
    return s.reduce_axes.empty() ? static_cast<int>(s.domain.size()) : s.reduce_axes.front();
  };
  // the user's groups are theirs to choose: no defaults beside them
  if (std::any_of(sg.stages.begin(), sg.stages.end(), has_compute_at)) return;
  for (int c = static_cast<int>(sg.stages.size()) - 1; c > 0; --c) {
    Stage& consumer = sg.stages[c];
    // the runtime's library runs a data-dependent op whole: it has no loop to nest producers in
    if (user_scheduled.count(c) || is_data_dependent(consumer.ops.front().code)) continue;
    int shared = first_reduced(consumer), best_first = -1, best_shared = 0;
    const Primitive probe{"compute_at", {}, {}};
    for (int first = c - 1; first >= 0; --first) {
      const Stage& s = sg.stages[first];
      if (user_scheduled.count(first) || s.reduce_axes.empty()) break;
      shared = std::min(shared, first_reduced(s));
      if (shared == 0) break;
      try {
        check_group(g, sg, c, first, shared, probe);
      } catch (const ScheduleError&) {
        break;
      }
      int64_t row = 1;
      for (size_t d = shared; d < consumer.domain.size(); ++d) row *= consumer.domain[d];
      if (row >= kMinRowPoints && !slabs(g, sg, c, first, shared).empty()) {
        best_first = first;
        best_shared = shared;
      }
    }
    if (best_first < 0) continue;
    // one primitive per member stage, naming a temporary it writes
    for (int m = best_first; m < c; ++m)
      for (const Op& op : sg.stages[m].ops)
        if (g.storages[op.output.storage].kind == StorageKind::Temp &&
            std::find(sg.stages[m].registers.begin(), sg.stages[m].registers.end(), op.output.storage) ==
                sg.stages[m].registers.end()) {
          consumer.schedule.primitives.push_back(
              {"compute_at", {"%s" + std::to_string(op.output.storage), consumer.loops[best_shared - 1]}, {}});
          break;
        }
    c = best_first;  // its members take no group of their own
  }
}

}  // namespace strider
