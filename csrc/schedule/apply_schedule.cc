#include <algorithm>

#include "schedule/primitives.h"

namespace strider {

namespace detail {

void refuse(const Primitive& p, const std::string& why) { throw ScheduleError(print_primitive(p) + ": " + why); }

int loop_index(const Stage& s, const Primitive& p, const std::string& name) {
  auto it = std::find(s.loops.begin(), s.loops.end(), name);
  if (it != s.loops.end()) return static_cast<int>(it - s.loops.begin());
  std::string known;
  for (const std::string& l : s.loops) known += (known.empty() ? "" : ", ") + l;
  refuse(p, "no loop named " + name + " (the loops are " + (known.empty() ? "none" : known) + ")");
}

bool is_reduced(const Stage& s, int loop) {
  return std::find(s.reduce_axes.begin(), s.reduce_axes.end(), loop) != s.reduce_axes.end();
}

void require_plain_loops(const Stage& s, const Primitive& p) {
  for (const Op& op : s.ops) {
    if (op_kind(op.code) == OpKind::Arange) refuse(p, "the stage's arange needs its loop as it is");
    if (is_domain_gather(op)) refuse(p, "the stage's take reads the rows its indices name, which no loop's footprint shows");
    if (is_data_dependent(op.code)) refuse(p, std::string("the stage's ") + op_name(op.code) + " runs in the runtime's library");
    if (op.output.is_dynamic()) refuse(p, "the stage has a run-time extent");
    for (const View& v : op.inputs)
      if (v.is_dynamic()) refuse(p, "the stage has a run-time extent");
  }
}

int storage_arg(const Primitive& p, const std::string& name) {
  if (name.size() < 3 || name.rfind("%s", 0) != 0 || name.find_first_not_of("0123456789", 2) != std::string::npos)
    refuse(p, name + " is not a storage, written %sN");
  return std::stoi(name.substr(2));
}

void require_no_tail(const Stage& s, const Primitive& p, const std::string& loop) {
  for (const Tail& t : s.tails)
    if (t.outer == loop || t.inner == loop)
      refuse(p, loop + " has a tail (" + t.outer + " * " + std::to_string(t.factor) + " + " + t.inner + " < " +
                    std::to_string(t.extent) + "): split or fuse it before the split that made the tail");
}

void rewrite_views(Stage& s, const std::function<View(const View&)>& domain_view,
                   const std::function<View(const View&, const std::vector<int>& kept)>& kept_view) {
  std::vector<int> kept;
  for (int d = 0; d < static_cast<int>(s.domain.size()); ++d)
    if (!is_reduced(s, d)) kept.push_back(d);
  for (size_t k = 0; k < s.ops.size(); ++k) {
    Op& op = s.ops[k];
    for (View& v : op.inputs) v = domain_view(v);
    const bool reduction = k + 1 == s.ops.size() && op_kind(op.code) == OpKind::Reduce;
    op.output = reduction ? kept_view(op.output, kept) : domain_view(op.output);
  }
}

}  // namespace detail

void apply_schedule(const Graph& g, Stage& s, const std::vector<Primitive>& primitives) {
  using namespace detail;
  s.schedule = Schedule{};
  s.registers = s.inlinable;
  for (const Primitive& p : primitives) {
    if (p.verb == "split") split(s, p);
    else if (p.verb == "reorder") reorder(s, p);
    else if (p.verb == "fuse") fuse(s, p);
    else if (p.verb == "tile") tile(s, p);
    else if (p.verb == "vectorize") vectorize(s, p);
    else if (p.verb == "unroll") unroll(s, p);
    else if (p.verb == "parallel") parallel(g, s, p);
    else if (p.verb == "compute_inline") compute_inline(g, s, p);
    else if (p.verb == "compute_root") compute_root(s, p);
    else if (p.verb == "compute_at") check_compute_at(s, p);
    else refuse(p, "unknown primitive (split, reorder, fuse, tile, vectorize, unroll, parallel, compute_inline, "
                   "compute_root, compute_at)");
    if (!s.ops.empty() && op_kind(s.ops.back().code) == OpKind::Reduce) s.ops.back().axes = s.reduce_axes;
    s.schedule.primitives.push_back(p);
  }
  // a later split or reorder must not leave a loop mark on a loop that moved
  for (const Primitive& p : s.schedule.primitives) {
    if ((p.verb == "vectorize" || p.verb == "unroll") && p.names[0] != s.loops.back())
      refuse(p, p.names[0] + " is no longer the innermost loop after the primitives that follow it");
    if (p.verb == "parallel" && p.names[0] != s.loops.front())
      refuse(p, p.names[0] + " is no longer the outermost loop after the primitives that follow it");
  }
}

}  // namespace strider
