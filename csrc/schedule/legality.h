#pragma once

#include <string>
#include <utility>
#include <vector>

#include "analysis/overlap.h"
#include "schedule/loop_nest.h"

namespace strider {

/// The accesses of one stage op at a point of the stage's domain, reads first, then its write
/// (a reduction writes its output at every point of the folded axes: stride 0 there).
using AccessList = std::vector<std::pair<View, bool>>;  // (view over the domain, is a write)
AccessList stage_accesses(const Op& op, const Shape& domain, const std::vector<int>& reduce_axes);

/// Empty when running `later` after the ops whose accesses are `earlier`, point by point in the
/// domain's lexicographic order, keeps every conflicting pair of accesses (and the op's own read
/// before its write) in program order; else the reason it does not.
std::string order_conflict(const std::vector<AccessList>& earlier, const AccessList& later,
                           const std::vector<TailBound>& tails = {});

/// Empty when no element that one access of `earlier` or `later` writes is touched by another of
/// them at a different point of the domain, so that every point may run at once (a GPU's
/// threads); else the reason. An access is not compared with itself: a write through basic
/// indexing never repeats an element, and a reduction stores each result once (after its folded
/// points).
std::string point_conflict(const std::vector<AccessList>& earlier, const AccessList& later,
                           const std::vector<TailBound>& tails = {});

/// point_conflict over a whole stage, op by op, registers left out.
std::string stage_point_conflict(const Stage& s);

/// The stage's tails by loop index.
std::vector<TailBound> tail_bounds(const Stage& s);

/// Every access of a stage's ops except to its registers (a register is written and read at
/// one point only: it never carries a dependence between points).
AccessList memory_accesses(const Stage& s);

/// order_conflict over a whole stage, op by op.
std::string stage_order_conflict(const Stage& s);

/// Empty when the iterations of the stage's outermost loop are independent (no element that one
/// of them writes is touched by another), so they may run in parallel; else the reason.
std::string outer_loop_conflict(const Stage& s);

}  // namespace strider
