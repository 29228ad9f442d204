#include <algorithm>
#include <cstdlib>
#include <optional>

#include "schedule/default_schedule.h"
#include "schedule/legality.h"
#include "schedule/primitives.h"

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

// The work of one point of `ops` (warm_parallel_min_points' units).
int64_t point_work(const std::vector<Op>& ops) {
  int64_t work = 0;
  for (const Op& op : ops) {
    if (is_domain_gather(op) || is_domain_scatter(op)) work += 8;
    else if (op_attrs(op.code) & kLibm) work += 16;
    else if (op.code == OpCode::divide || op.code == OpCode::sqrt) work += 4;
    else work += 1;
  }
  return work;
}

}  // namespace

int64_t warm_parallel_min_points(const Graph& g, const std::vector<Op>& ops, int rank) {
  const int64_t work = std::max<int64_t>(1, point_work(ops));
  return std::min(parallel_min_points(g, ops, rank), (kWarmParallelWork + work - 1) / work);
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

// What the vectorizer would meet in a stage's innermost loop: the widest element types, and
// whether every store walks it contiguously and every load with a small stride (values kept in
// registers are not memory; vector_stores). Ops from `end` on, and the mask a compress counts, are
// left out.
struct VectorScan {
  size_t widest = 1, widest_float = 0;
  bool unit_inner = true;
};

VectorScan scan_inner(const Graph& g, const Stage& s, size_t end, const View* counted) {
  VectorScan v;
  auto count = [&](DType t) {
    v.widest = std::max(v.widest, itemsize(t));
    if (is_float(t)) v.widest_float = std::max(v.widest_float, itemsize(t));
  };
  auto memory = [&](const View& w) {
    return std::find(s.registers.begin(), s.registers.end(), w.storage) == s.registers.end();
  };
  const int inner = static_cast<int>(s.domain.size()) - 1;
  std::vector<const View*> stores;
  for (size_t k = 0; k < end; ++k) {
    const Op& op = s.ops[k];
    if (counted && op.output == *counted) continue;
    for (const View& w : op.inputs) {
      count(g.dtype_of(w));
      if (w.ndim() == inner + 1 && memory(w) && !vector_load_stride(w.strides[inner])) v.unit_inner = false;
    }
    // a reduction's output is written once per outer point, outside the vector loop; a
    // scatter's, one element a point as a gather reads them
    if (op_kind(op.code) == OpKind::Reduce || is_domain_scatter(op)) continue;
    const View& w = op.output;
    count(g.dtype_of(w));
    if (w.ndim() == inner + 1 && memory(w)) stores.push_back(&w);
  }
  v.unit_inner = v.unit_inner && vector_stores(stores, inner);
  return v;
}

// A reduction whose innermost loop is kept and walks memory with a stride, where the loop of its
// last reduced axis walks it contiguously (m @ m.T: a row of m against every other row, reached
// a row apart, 4,096 floats) folds that axis innermost: each output then sums a contiguous run.
// reorder() keeps the reduced loops' order and refuses where an access would change order. On
// success `s` is reordered and its scan returned.
std::optional<VectorScan> fold_reduced_axis_innermost(const Graph& g, Stage& s, std::vector<Primitive>& sch) {
  const int inner = static_cast<int>(s.domain.size()) - 1;
  if (!s.is_reduction() || s.reduce_axes.empty() || detail::is_reduced(s, inner)) return std::nullopt;
  for (const Op& op : s.ops)
    if (is_data_dependent(op.code)) return std::nullopt;
  std::vector<std::string> order;
  for (int d = 0; d <= inner; ++d)
    if (d != s.reduce_axes.back()) order.push_back(s.loops[d]);
  order.push_back(s.loops[s.reduce_axes.back()]);
  Primitive p{"reorder", order, {}};
  Stage t = s;
  try {
    apply_schedule(g, t, {p});
  } catch (const ScheduleError&) {
    return std::nullopt;
  }
  const VectorScan v = scan_inner(g, t, t.ops.size(), nullptr);
  if (!v.unit_inner) return std::nullopt;
  s = std::move(t);
  sch.push_back(std::move(p));
  return v;
}

}  // namespace

std::vector<Primitive> default_schedule(const Graph& g, const Stage& stage) {
  std::vector<Primitive> sch;
  // the runtime's library runs a data-dependent op as it is: no loops to schedule
  if (stage.domain.empty() || (stage.ops.size() == 1 && runs_in_library(stage.ops[0]))) return sch;
  // compresses after the ops that make and count their mask (legality's compress_conflict): the
  // vector loop is those ops', without the count (the compresses' own: an int64 cast, a sum)
  size_t end = stage.ops.size();
  const View* counted = nullptr;
  if (stage.ops.back().code == OpCode::compress && stage.is_reduction()) {
    while (stage.ops[end - 1].code == OpCode::compress) --end;
    counted = &stage.ops[--end].inputs[0];
  }
  Stage s = stage;  // (its loops reordered first where fold_reduced_axis_innermost says)
  VectorScan v = scan_inner(g, s, end, counted);
  if (!v.unit_inner && !counted)
    if (std::optional<VectorScan> folded = fold_reduced_axis_innermost(g, s, sch)) v = *folded;
  const int inner = static_cast<int>(s.domain.size()) - 1;
  // lanes of the widest element type that fit one register, when the innermost loop is long
  // enough and unit_inner. Where the stage computes in floats, only theirs count: positions of
  // float32 elements in int64 (a take's, an arange's) then take two registers a vector, where the
  // floats would otherwise take half of one (Soft-NMS's Gaussian IoU, three divides an element:
  // 1.4x faster); no fewer than the widest type's lanes, nor more than the innermost loop's
  // points (a box's 4 floats gathered by an int64 index stay one vector a row)
  const int narrowest = host_vector_bytes() / static_cast<int>(v.widest);
  int lanes = host_vector_bytes() / static_cast<int>(v.widest_float ? v.widest_float : v.widest);
  const int64_t points = merged_inner(s);
  while (lanes > narrowest && points < lanes) lanes /= 2;
  if (v.unit_inner && points >= lanes) sch.push_back({"vectorize", {s.loops[inner]}, {lanes}});
  // threads pay off past this many points (measured by the benchmarks; see README)
  if (!detail::is_reduced(s, 0) && s.domain[0] > 1 && shape_numel(s.domain) >= warm_parallel_min_points(g, s.ops, inner + 1) &&
      outer_loop_conflict(g, s).empty())
    sch.push_back({"parallel", {s.loops[0]}, {}});
  if (counted && s.domain[0] >= kParallelCompactionPoints && loads_a_line_a_point(g, s) && parallel_compaction_conflict(s).empty())
    sch.push_back({"parallel", {s.loops[0]}, {}});
  return sch;
}

}  // namespace strider
