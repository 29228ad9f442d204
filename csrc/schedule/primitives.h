#pragma once

// The schedule primitives, one file each, and what they share (apply_schedule.cc).
#include <functional>
#include <string>

#include "schedule/loop_nest.h"

namespace strider::detail {

[[noreturn]] void refuse(const Primitive& p, const std::string& why);
/// Index of the loop `name`; refuses naming the loops there are.
int loop_index(const Stage& s, const Primitive& p, const std::string& name);
bool is_reduced(const Stage& s, int loop);
/// Refuses loop transformations the stage cannot take (arange needs its flat index; run-time
/// extents are not split).
void require_plain_loops(const Stage& s, const Primitive& p);
/// The storage a %sN argument names.
int storage_arg(const Primitive& p, const std::string& name);
/// Refuses a loop that a split with a tail made (its bound depends on another loop).
void require_no_tail(const Stage& s, const Primitive& p, const std::string& loop);
/// Rewrites every view of the stage. Views over the domain get `domain_view`; the output of a
/// final reduction, which spans only the kept (not reduced) loops, gets `kept_view` with the
/// positions of the kept loops before the change.
void rewrite_views(Stage& s, const std::function<View(const View&)>& domain_view,
                   const std::function<View(const View&, const std::vector<int>& kept)>& kept_view);

void split(Stage& s, const Primitive& p);
void reorder(Stage& s, const Primitive& p);
void fuse(Stage& s, const Primitive& p);
void tile(Stage& s, const Primitive& p);
void vectorize(Stage& s, const Primitive& p);
void unroll(Stage& s, const Primitive& p);
void parallel(const Graph& g, Stage& s, const Primitive& p);
void compute_inline(const Graph& g, Stage& s, const Primitive& p);
void compute_root(Stage& s, const Primitive& p);
/// compute_at's form (a storage and a loop of this stage); compute_at_stages does the rest.
void check_compute_at(const Stage& s, const Primitive& p);

}  // namespace strider::detail
