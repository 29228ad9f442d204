#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace strider {

/// How a stage's loops run, as data: it prints, parses back and enters the cache key.
/// Loops are the stage's domain axes, outermost first (loop d iterates domain[d]).
struct Schedule {
  int vector_width = 1;  // innermost loop vectorized at this many lanes (1: scalar)
  int unroll = 1;        // innermost loop unrolled by this factor after vectorization
  bool parallel = false; // the outermost loop is split across the thread pool

  bool operator==(const Schedule& o) const {
    return vector_width == o.vector_width && unroll == o.unroll && parallel == o.parallel;
  }
};

/// One stage: a loop nest over `domain` that runs `ops` (graph op indices, program order) once
/// per point, in order. Every view an op touches has the domain's shape (unit dimensions of the
/// graph's views are dropped by fuse_stages, which rewrites the stage's own copy of the ops), so
/// the element op k touches at point i is view.offset + sum_d i_d * view.strides[d].
///
/// A stage may end with one reduction: its input has the domain's shape and its output the
/// domain without `reduce_axes`; the stage's other ops all come before it.
struct Stage {
  Shape domain;
  std::vector<int> op_ids;       // indices into Graph::ops
  std::vector<Op> ops;           // those ops, views rewritten onto the domain
  std::vector<int> reduce_axes;  // folded by the final op when it is a reduction
  std::vector<int> registers;    // temp storages produced and consumed only inside this stage,
                                 // always through the same view: kept in registers, never stored
  Schedule schedule;

  bool is_reduction() const { return !reduce_axes.empty() || (!ops.empty() && op_kind(ops.back().code) == OpKind::Reduce); }
};

/// The stages of a graph in execution order, and why neighbouring ops were not fused.
struct StageGraph {
  std::vector<Stage> stages;
  std::vector<std::string> rejections;  // one line per rejected fusion (the explain output)
};

std::string print_schedule(const Schedule& s);
std::string print_stages(const Graph& g, const StageGraph& sg);

}  // namespace strider
