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

/// On the CPU, compresses by one mask share a stage (emit_compress.cc): alone, or after the
/// ops that compute that mask and count it (the sum of its int64 cast, the last of them), when
/// the count is the length of their outputs (an NMS loop's `np.where(ovr <= t)[0]`, YOLOv5's
/// `x[x[:, 4] > t]`): one pass then computes a block of the mask and moves its elements, where a
/// second pass would read the mask and the columns again. A compress of rows joins only such a
/// stage. Empty when compress `c` may join the stage whose ops so far are `ops` (over the same
/// 1-d domain, the mask's), else why not. No two compresses of the stage may read or
/// write what another writes; the ops before them may not write what a compress reads or writes,
/// and read what it writes only at or after where it writes (a block's moves never reach what a
/// later block reads).
std::string compress_conflict(const Graph& g, const std::vector<Op>& ops, const Op& c);

/// On the CPU a put of one-element rows (is_domain_scatter: Soft-NMS's x[i + 1:, 4] *= w) ends
/// a stage over its indices' domain: the stage's ops before it, `ops`, compute the values and
/// the indices, and may read the storage it writes only through domain gathers of one-element
/// rows by the same indices, each row's element either the one written (the index is a * i + b
/// at point i with a != 0: no two points write one row) or one no other point writes (a * row
/// stride does not divide its distance from it: x[i + 1:, 0] beside x[i + 1:, 4] in rows of 5).
/// No point then reads what another writes, in any order of the points. Empty when scatter `w`
/// may so end a stage of more than one point, else why not.
std::string scatter_conflict(const Graph& g, const std::vector<Op>& ops, const Op& w);

/// The storage the last of `ops` scatters into where each point of their stage touches only
/// rows of it that no other point touches: a scatter by scatter_conflict's rule whose indices
/// are a * i + b with a != 0 (shown, not assumed: repeated indices keep the last write, in the
/// points' order); else -1.
int private_scatter(const Graph& g, const std::vector<Op>& ops);

/// outer_loop_conflict, with a private_scatter's storage left to its rule: Soft-NMS's
/// x[i + 1:, 4] *= w splits across threads.
std::string outer_loop_conflict(const Graph& g, const Stage& s);

/// Empty when such a stage, its compresses after the ops that make and count their mask, may
/// compact in parallel (emit_compress.cc): chunks of the mask's points, each counting its part
/// of the mask, then moving its kept elements after those of the chunks before it once the one
/// before has published their count. The makers' points must be independent, nothing they touch
/// a compress writes, and no compress in place. Else why not.
std::string parallel_compaction_conflict(const Stage& s);

}  // namespace strider
