#pragma once

#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace strider {

/// One schedule primitive, Halide's verbs and argument order: split(loop, outer, inner, factor),
/// reorder(loops outermost first), fuse(outer, inner, fused), tile(x, y, xo, yo, xi, yi, fx, fy),
/// vectorize(loop, width), unroll(loop, factor), parallel(loop), compute_inline(%sN),
/// compute_root(%sN), compute_at(%sN, loop).
struct Primitive {
  std::string verb;
  std::vector<std::string> names;  // loops, or a storage as %sN
  std::vector<int64_t> factors;

  bool operator==(const Primitive& o) const { return verb == o.verb && names == o.names && factors == o.factors; }
};

/// A split whose factor does not divide the loop's extent: `outer` runs ceil(extent / factor) times
/// and the points where outer * factor + inner >= extent are skipped (whichever of the two loops
/// is inside gets a shorter bound).
struct Tail {
  std::string outer, inner;
  int64_t factor = 1, extent = 0;

  bool operator==(const Tail& o) const {
    return outer == o.outer && inner == o.inner && factor == o.factor && extent == o.extent;
  }
};

/// A primitive that does not apply: names the primitive, the loop and the reason.
struct ScheduleError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

/// How a stage's loops run, as data: the primitives applied (they print, parse back and enter
/// the cache key) and their effect on code generation. Loops are the stage's domain axes,
/// outermost first (loop d iterates domain[d]).
struct Schedule {
  std::vector<Primitive> primitives;
  int vector_width = 1;  // innermost loop vectorized at this many lanes (1: scalar)
  int unroll = 1;        // innermost loop unrolled by this factor after vectorization
  bool parallel = false; // the outermost loop is split across the thread pool

  bool operator==(const Schedule& o) const {
    return primitives == o.primitives && vector_width == o.vector_width && unroll == o.unroll &&
           parallel == o.parallel;
  }
};

/// Strides (in elements) along the innermost loop that its vectorization takes: loads walk it
/// forwards or backwards with a small stride (the fields of a box: LLVM loads whole vectors and
/// shuffles them apart) or broadcast.
inline bool vector_load_stride(int64_t stride) { return stride >= -4 && stride <= 4; }

/// Whether the memory stores `outputs` make vectorize along `axis`: each walks it contiguously,
/// or 2 to 4 elements apart in a group of views of one array that fills every element between
/// (a (n, 4) array's columns each written once: np.stack([dx, dy, dw, dh], -1), whose vectors
/// LLVM interleaves into wide stores); a group with gaps would store lane by lane, slower than
/// the scalar loop (bbox_flip's x1 and x2 columns alone: 0.7x).
bool vector_stores(const std::vector<const View*>& outputs, int axis);

/// One stage: a loop nest over `domain` that runs `ops` (graph op indices, program order) once
/// per point, in order. Every view an op touches has the domain's shape (unit dimensions of the
/// graph's views are dropped by fuse_stages, which rewrites the stage's own copy of the ops), so
/// the element op k touches at point i is view.offset + sum_d i_d * view.strides[d].
///
/// A stage may end with one reduction: its input has the domain's shape and its output the
/// domain without `reduce_axes`; the stage's other ops all come before it.
struct Stage {
  Shape domain;
  std::vector<std::string> loops;  // the name of each domain axis: i0, i1, ... until scheduled
  std::vector<int> op_ids;       // indices into Graph::ops
  std::vector<Op> ops;           // those ops, views rewritten onto the domain
  std::vector<int> reduce_axes;  // folded by the final op when it is a reduction
  std::vector<int> inlinable;    // temp storages produced and consumed only inside this stage,
                                 // always through the same view: they may live in registers
  std::vector<int> registers;    // those kept in registers, never stored (all, unless the
                                 // schedule says compute_root)
  Schedule schedule;
  std::vector<Tail> tails;       // splits with a remainder; views span the rounded-up domain
  // compute_at: a stage run inside a later one's loops names it here and is not run on its own;
  // that later stage holds copies of such stages (in order) and how many outer loops they share
  int computed_in = -1;
  std::vector<Stage> computed_at;
  int shared_loops = 0;
  // temporaries only that group touches, each iteration of the shared loops in a slab of its
  // own: they live in a stack buffer of `slab` elements, one iteration at a time
  struct Folded {
    int storage;
    int64_t base, slab;  // the slab starts at element base + (the shared loops' part)

    bool operator==(const Folded& o) const { return storage == o.storage && base == o.base && slab == o.slab; }
  };
  std::vector<Folded> folded;

  /// The stage's loop or branch op (ops.def's control kind: a stage of its own), or null.
  const Op* control() const { return ops.size() == 1 && is_control(ops[0].code) ? &ops[0] : nullptr; }
  bool is_reduction() const { return !reduce_axes.empty() || (!ops.empty() && op_kind(ops.back().code) == OpKind::Reduce); }
};

/// The stages of a graph in execution order, and why neighbouring ops were not fused.
struct StageGraph {
  std::vector<Stage> stages;
  std::vector<std::string> rejections;  // one line per rejected fusion (the explain output)
  std::vector<std::string> recomputed;  // one line per producer inline_producers copied
  std::vector<std::string> buffered;    // one line per op buffer_overlapping_writes rewrote
  std::vector<std::string> in_place;    // one line per compress compress_in_place rewrote
  std::vector<std::string> narrowed;    // one line per op narrow_casts computes in float32
  std::vector<std::string> carried;     // one line per gather carry_gathers rewrote
};

std::string print_primitive(const Primitive& p);
std::string print_schedule(const Schedule& s);
/// " tails [i0o*4+i0i<10]" for a stage with tails, else "".
std::string print_tails(const Stage& s);
/// Parses primitives written as print_schedule prints them ("split(i0, i0o, i0i, 8) parallel(i0o)").
std::vector<Primitive> parse_schedule(const std::string& text);
/// Applies primitives in order (after resetting the stage's schedule); throws ScheduleError.
/// compute_at is only checked for form here: it takes effect in compute_at_stages.
void apply_schedule(const Graph& g, Stage& s, const std::vector<Primitive>& primitives);
/// Carries out the compute_at primitives of scheduled stages (compute_at.cc): each moves the
/// stages from the writer of %sN up to the consumer into the consumer's loops; throws
/// ScheduleError naming the primitive and the reason where the result could differ.
void compute_at_stages(const Graph& g, StageGraph& sg);
/// Adds compute_at to the default schedules of stages that read what reductions just before
/// them wrote, where that keeps temporaries in stack slabs (compute_at.cc); stages with a
/// user's schedule are left alone, and none is added when a user's schedule has compute_at.
void default_compute_at(const Graph& g, StageGraph& sg, const std::set<int>& user_scheduled);
std::string print_stages(const Graph& g, const StageGraph& sg);

}  // namespace strider
