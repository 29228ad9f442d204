#include <algorithm>
#include <cstdlib>

#include "schedule/default_schedule.h"
#include "schedule/legality.h"

namespace strider {

namespace {

// Widest SIMD register of the host, in bytes.
int host_vector_bytes() {
#if defined(__x86_64__) || defined(__i386__)
  if (__builtin_cpu_supports("avx512f")) return 64;
  if (__builtin_cpu_supports("avx2")) return 32;
#endif
  return 16;
}

}  // namespace

int64_t parallel_min_points(const Graph& g, const std::vector<Op>& ops, int rank) {
  constexpr int64_t kLine = 64;
  for (const Op& op : ops)
    for (const View& v : op.inputs)
      if (v.ndim() == rank && rank > 0 && std::abs(v.strides[rank - 1]) * static_cast<int64_t>(itemsize(g.dtype_of(v))) >= kLine)
        return kParallelMinPoints / 4;
  return kParallelMinPoints;
}

namespace {

// Whether every point of a compaction loads a cache line of its own: its mask made from a column
// of wide rows, or wide rows moved (YOLOv5's rows of 85 floats). The lines of a serial pass wait
// on one core; chunks on the pool wait on several at once.
bool loads_a_line_a_point(const Graph& g, const Stage& s) {
  constexpr int64_t kLine = 64;
  for (const Op& op : s.ops)
    for (const View& v : op.inputs)
      if (v.ndim() > 0 && std::abs(v.strides[0]) * static_cast<int64_t>(itemsize(g.dtype_of(v))) >= kLine) return true;
  return false;
}

// The points of the innermost loop once code generation merges into it the axes every view walks
// as one with it (stage_plan.cc's try_merge): a (n, 4) array read whole is one loop of 4n.
int64_t merged_inner(const Stage& s) {
  const int rank = static_cast<int>(s.domain.size());
  auto reduced = [&](int d) { return std::find(s.reduce_axes.begin(), s.reduce_axes.end(), d) != s.reduce_axes.end(); };
  int64_t run = s.domain[rank - 1];
  for (int d = rank - 2; d >= 0; --d) {
    if (reduced(d) != reduced(d + 1)) break;
    // a reduction's result has the kept axes only: axis d is its axis `at`
    const int at = d - static_cast<int>(std::count_if(s.reduce_axes.begin(), s.reduce_axes.end(), [&](int a) { return a < d; }));
    auto walks = [&](const View& v, int e) {
      return v.extent_of(e) < 0 && v.extent_of(e + 1) < 0 && v.strides[e] == v.strides[e + 1] * s.domain[d + 1];
    };
    bool fits = true;
    for (const Op& op : s.ops) {
      for (const View& v : op.inputs) fits = fits && (v.ndim() == 0 || (v.ndim() == rank && walks(v, d)));
      const View& w = op.output;
      if (op_kind(op.code) == OpKind::Reduce && w.ndim() != rank) fits = fits && (reduced(d) || walks(w, at));
      else fits = fits && w.ndim() == rank && walks(w, d);
    }
    if (!fits) break;
    run *= s.domain[d];
  }
  return run;
}

}  // namespace

std::vector<Primitive> default_schedule(const Graph& g, const Stage& s) {
  std::vector<Primitive> sch;
  // the runtime's library runs a data-dependent op as it is: no loops to schedule
  if (s.domain.empty() || (s.ops.size() == 1 && runs_in_library(s.ops[0]))) return sch;
  // lanes of the widest element type that fit one register, when the innermost loop is long
  // enough, every store walks it contiguously and every load walks it with a small stride. Where
  // the stage computes in floats, only theirs count: positions of float32 elements in int64 (a
  // take's, an arange's) then take two registers a vector, where the floats would otherwise take
  // half of one (Soft-NMS's Gaussian IoU, three divides an element: 1.4x faster)
  size_t widest = 1, widest_float = 0;
  auto count = [&](DType t) {
    widest = std::max(widest, itemsize(t));
    if (is_float(t)) widest_float = std::max(widest_float, itemsize(t));
  };
  bool unit_inner = true;
  const int inner = static_cast<int>(s.domain.size()) - 1;
  // compresses after the ops that make and count their mask (legality's compress_conflict): the
  // vector loop is those ops', without the count (the compresses' own: an int64 cast, a sum)
  size_t end = s.ops.size();
  const View* counted = nullptr;
  if (s.ops.back().code == OpCode::compress && s.is_reduction()) {
    while (s.ops[end - 1].code == OpCode::compress) --end;
    counted = &s.ops[--end].inputs[0];
  }
  for (size_t k = 0; k < end; ++k) {
    const Op& op = s.ops[k];
    if (counted && op.output == *counted) continue;
    for (const View& v : op.inputs) {
      count(g.dtype_of(v));
      if (v.ndim() == inner + 1 && !vector_load_stride(v.strides[inner])) unit_inner = false;
    }
    // a reduction's output is written once per outer point, outside the vector loop
    if (op_kind(op.code) == OpKind::Reduce) continue;
    const View& w = op.output;
    count(g.dtype_of(w));
    if (w.ndim() == inner + 1 && !vector_store_stride(w.strides[inner])) unit_inner = false;
  }
  // (no fewer than the widest type's lanes, nor more than the innermost loop's points: a box's 4
  // floats gathered by an int64 index stay one vector a row)
  const int narrowest = host_vector_bytes() / static_cast<int>(widest);
  int lanes = host_vector_bytes() / static_cast<int>(widest_float ? widest_float : widest);
  const int64_t points = merged_inner(s);
  while (lanes > narrowest && points < lanes) lanes /= 2;
  if (unit_inner && points >= lanes) sch.push_back({"vectorize", {s.loops[inner]}, {lanes}});
  // threads pay off past this many points (measured by the benchmarks; see README)
  const bool outer_reduced = std::find(s.reduce_axes.begin(), s.reduce_axes.end(), 0) != s.reduce_axes.end();
  if (!outer_reduced && s.domain[0] > 1 && shape_numel(s.domain) >= parallel_min_points(g, s.ops, inner + 1) &&
      outer_loop_conflict(s).empty())
    sch.push_back({"parallel", {s.loops[0]}, {}});
  if (counted && s.domain[0] >= kParallelCompactionPoints && loads_a_line_a_point(g, s) && parallel_compaction_conflict(s).empty())
    sch.push_back({"parallel", {s.loops[0]}, {}});
  return sch;
}

}  // namespace strider
