#include <algorithm>
#include <stdexcept>
#include <string>

#include "analysis/overlap.h"
#include "codegen/stage_plan.h"
#include "ops/reduce_spec.h"
#include "schedule/legality.h"

namespace strider::detail {

namespace {

std::string op_label(const StagePlan& p, size_t k) {
  std::string id = k < p.op_ids.size() && p.op_ids[k] >= 0 ? "op" + std::to_string(p.op_ids[k]) : "stage op " + std::to_string(k);
  return id + " (" + op_name(p.ops[k].code) + ")";
}

[[noreturn]] void refuse(const StagePlan& p, size_t k, const std::string& why) {
  throw std::invalid_argument(p.backend + " backend cannot compile " + op_label(p, k) + ": " + why);
}

// Gives v the domain's rank: 0-d inputs broadcast, a reduction's output gets stride 0 (and no
// extent) on the folded axes.
void fit_view(const StagePlan& p, size_t k, View& v, bool reduce_output) {
  const int rank = p.rank();
  if (reduce_output) {
    View full = v;
    full.shape = p.domain;
    full.strides.assign(rank, 0);
    full.extents.assign(rank, -1);
    int kept = 0;
    for (int d = 0; d < rank; ++d) {
      if (p.reduced[d]) continue;
      if (kept >= v.ndim() || v.shape[kept] != p.domain[d])
        refuse(p, k, "its output " + print_view(v) + " is not the domain without the reduced axes");
      full.strides[d] = v.strides[kept];
      full.extents[d] = v.extent_of(kept);
      ++kept;
    }
    if (kept != v.ndim()) refuse(p, k, "its output " + print_view(v) + " is not the domain without the reduced axes");
    if (!v.is_dynamic()) full.extents.clear();
    v = full;
    return;
  }
  if (v.ndim() == 0 && rank > 0) {
    v.shape = p.domain;
    v.strides.assign(rank, 0);
    return;
  }
  if (v.shape != p.domain) refuse(p, k, "view " + print_view(v) + " does not have the stage's domain shape");
}

// Every op of the stage iterates the same run-time extents (the loop bounds are per stage). A
// length a check passed through (check_nonempty's, check_equal's) is the length it checked,
// written in a stage before this one (fuse_stages hoists checks: a gather and the argmax of what
// it gathers share a stage); the loop runs to the passed one, at least 1 for check_nonempty,
// which a reduction without identity needs.
// The check_nonempty or check_equal that writes the length in `storage` (passing one through), or null.
const Op* length_check(const Graph& g, int storage) {
  for (const Op& op : g.ops)
    if ((op.code == OpCode::check_nonempty || op.code == OpCode::check_equal) && op.output.storage == storage) return &op;
  return nullptr;
}

void collect_extents(const Graph& g, StagePlan& p) {
  auto passes = [&](int out, int in) {  // whether a check passes the length `in` through as `out`
    const Op* c = length_check(g, out);
    return c && std::any_of(c->inputs.begin(), c->inputs.end(), [&](const View& v) { return v.storage == in; });
  };
  for (size_t k = 0; k < p.ops.size(); ++k) {
    const Op& op = p.ops[k];
    const View& walked = op_kind(op.code) == OpKind::Reduce || op.code == OpCode::compress ? op.inputs[0] : op.output;
    for (int d = 0; d < p.rank(); ++d) {
      const int e = walked.extent_of(d);
      if (k == 0 || (p.extent[d] >= 0 && e >= 0 && passes(e, p.extent[d]))) p.extent[d] = e;
      else if (p.extent[d] != e && !(p.extent[d] >= 0 && e >= 0 && passes(p.extent[d], e)))
        refuse(p, k, "its ops run over different run-time extents");
    }
  }
}

// The stage runs its ops point by point; NumPy runs each op over all points first. They agree
// unless some point reads or writes an element that an earlier point of a later access (or a later
// point of an earlier access) writes, which reordered_when_fused decides exactly.
// Only ops [0, n) take part (the ops before a plan's compresses); a reduction among them is the last.
void check_hazards(const Graph& g, const StagePlan& p, size_t n) {
  struct Access {
    const View* view;
    bool write;
    size_t op;
  };
  std::vector<Access> list;
  for (size_t k = 0; k < n; ++k) {
    const Op& op = p.ops[k];
    for (const View& v : op.inputs)
      if (!p.registers.count(v.storage)) list.push_back({&v, false, k});
    if (!p.registers.count(op.output.storage)) list.push_back({&op.output, true, k});
  }
  if (n == 0 || p.rank() == 0) return;  // one point: its ops run in program order
  // the rows a scatter writes, which no footprint shows, go by its own rule (fuse_stages')
  std::vector<int> scattered;
  for (size_t k = 0; k < n; ++k)
    if (is_domain_scatter(p.ops[k])) {
      if (std::string why = scatter_conflict(g, std::vector<Op>(p.ops.begin(), p.ops.begin() + k), p.ops[k]); !why.empty())
        refuse(p, k, why);
      if (k + 1 != n) refuse(p, k + 1, "a scatter ends its stage");
      scattered.push_back(p.ops[k].output.storage);
    }
  const size_t last = n - 1;
  const bool reduction = op_kind(p.ops[last].code) == OpKind::Reduce;
  for (size_t i = 0; i < list.size(); ++i)
    for (size_t j = i + 1; j < list.size(); ++j) {
      const Access& a = list[i];
      const Access& b = list[j];
      if (a.view->storage != b.view->storage || !(a.write || b.write)) continue;
      if (g.storages[a.view->storage].kind == StorageKind::Const) continue;
      if (std::find(scattered.begin(), scattered.end(), a.view->storage) != scattered.end()) continue;
      // the reduction's result is stored after every point: nothing else may touch its storage
      if (reduction && ((a.write && a.op == last) || (b.write && b.op == last)))
        refuse(p, last, "another op of the stage touches its output storage");
      if (reordered_when_fused(*a.view, *b.view, p.tails))
        refuse(p, b.op, "it and " + op_label(p, a.op) + " access overlapping parts of storage %s" +
                            std::to_string(a.view->storage) + " in an order one loop nest would change");
    }
}

// Chunks of axis 0 run concurrently: no element may be written at one row and touched at
// another. Proven cheaply (identical views, or footprints that never meet); otherwise serial.
bool rows_independent(const Graph& g, const StagePlan& p) {
  std::vector<std::pair<const View*, bool>> list;
  const int own = private_scatter(g, p.ops);  // its rows go by its own rule
  for (const Op& op : p.ops) {
    if (is_domain_scatter(op) && op.output.storage != own) return false;  // its rows' footprint is not its view's
    for (const View& v : op.inputs)
      if (!p.registers.count(v.storage) && v.storage != own) list.push_back({&v, false});
    if (!p.registers.count(op.output.storage) && op.output.storage != own) list.push_back({&op.output, true});
  }
  for (size_t i = 0; i < list.size(); ++i)
    for (size_t j = i + 1; j < list.size(); ++j) {
      const View& a = *list[i].first;
      const View& b = *list[j].first;
      if (a.storage != b.storage || !(list[i].second || list[j].second) || a == b) continue;
      if (g.storages[a.storage].kind == StorageKind::Const) continue;
      if (footprints_overlap(a, b).overlap) return false;
    }
  return true;
}

bool has_tail(const StagePlan& p, int d) {
  for (const TailBound& t : p.tails)
    if (t.outer == d || t.inner == d) return true;
  return false;
}

void erase_axis(StagePlan& p, int d) {
  // an outer loop of one iteration: its inner loop just ends at the extent
  for (size_t k = 0; k < p.tails.size(); ++k) {
    const TailBound t = p.tails[k];
    if (t.outer != d) continue;
    auto shorten = [&](View& v) { v.shape[t.inner] = t.extent; };
    for (Op& op : p.ops) {
      for (View& v : op.inputs) shorten(v);
      shorten(op.output);
    }
    p.domain[t.inner] = t.extent;
    p.tails.erase(p.tails.begin() + static_cast<long>(k--));
  }
  for (TailBound& t : p.tails) {
    if (t.outer > d) --t.outer;
    if (t.inner > d) --t.inner;
  }
  auto erase = [d](View& v) {
    v.shape.erase(v.shape.begin() + d);
    v.strides.erase(v.strides.begin() + d);
    if (v.is_dynamic()) v.extents.erase(v.extents.begin() + d);
  };
  for (Op& op : p.ops) {
    for (View& v : op.inputs) erase(v);
    erase(op.output);
  }
  p.domain.erase(p.domain.begin() + d);
  p.extent.erase(p.extent.begin() + d);
  p.reduced.erase(p.reduced.begin() + d);
}

// Axes d and d+1 walk every view as one axis: fold d+1 into d (same order of points).
bool try_merge(StagePlan& p, int d) {
  if (p.extent[d] >= 0 || p.extent[d + 1] >= 0 || p.reduced[d] != p.reduced[d + 1]) return false;
  if (has_tail(p, d) || has_tail(p, d + 1)) return false;
  auto fits = [&](const View& v) { return v.strides[d] == v.strides[d + 1] * p.domain[d + 1]; };
  for (const Op& op : p.ops) {
    for (const View& v : op.inputs)
      if (!fits(v)) return false;
    if (!fits(op.output)) return false;
  }
  const int64_t inner = p.domain[d + 1];
  auto merge = [&](View& v) {
    v.shape[d] *= inner;
    v.strides[d] = v.strides[d + 1];
  };
  for (Op& op : p.ops) {
    for (View& v : op.inputs) merge(v);
    merge(op.output);
  }
  p.domain[d] *= inner;
  erase_axis(p, d + 1);
  return true;
}

// `keep`: the outer axes a compute_at group shares, neither dropped nor merged.
StagePlan plan_of(const Graph& g, const Stage& s, int keep, const std::string& backend) {
  StagePlan p;
  p.backend = backend;
  p.domain = s.domain;
  p.ops = s.ops;
  p.op_ids = s.op_ids;
  p.registers.insert(s.registers.begin(), s.registers.end());
  const int rank = p.rank();
  p.tails = tail_bounds(s);
  p.reduced.assign(rank, false);
  p.extent.assign(rank, -1);
  if (p.ops.empty()) throw std::invalid_argument(backend + " backend cannot compile an empty stage");
  // compresses by one mask, each with storages of its own, maybe after the ops that make and
  // count the mask (legality's compress_conflict)
  size_t first = 0;
  while (first < p.ops.size() && p.ops[first].code != OpCode::compress) ++first;
  p.compress = backend == "LLVM" && first < p.ops.size() && std::all_of(p.ops.begin() + first, p.ops.end(), [&](const Op& op) {
    return op.code == OpCode::compress && op.inputs.size() == 2 && op.inputs[0] == p.ops[first].inputs[0];
  });
  if (p.compress) p.first_compress = first;
  for (size_t k = first; p.compress && k < p.ops.size(); ++k) {
    const Op& op = p.ops[k];
    const View &src = op.inputs[1], &out = op.output;
    if (rank != 1 || src.ndim() != out.ndim()) refuse(p, k, "its domain is not its mask's");
    if (src.ndim() > 1) {
      if (first == 0) refuse(p, k, "a compress of rows runs in the runtime's library");
      // a row: one block where both sides are dense, else a strided walk of one axis
      for (int d = 1; d < src.ndim(); ++d)
        if (src.shape[d] != out.shape[d] || src.extent_of(d) >= 0 || out.extent_of(d) >= 0)
          refuse(p, k, "its rows have run-time or different shapes");
      if (src.ndim() > 2 && !(src.tail(1).is_c_contiguous() && out.tail(1).is_c_contiguous()))
        refuse(p, k, "its rows are neither contiguous nor of one axis");
    }
    // fuse_stages' own rule, again: a stage it got wrong would write wrong data
    if (std::string why = compress_conflict(g, std::vector<Op>(p.ops.begin(), p.ops.begin() + k), op); !why.empty())
      refuse(p, k, why);
    // the output may be the input moved towards its start (compress_in_place), as the library allows
    const View row = src.tail(1);
    const bool moved = src.ndim() == 1 ? src.strides[0] == 1 && out.strides[0] == 1
                                       : src.strides == out.strides && row.is_c_contiguous() && src.strides[0] == row.numel();
    if (op.inputs[0].storage == out.storage || (src.storage == out.storage && (!moved || out.offset > src.offset)))
      refuse(p, k, "its output overlaps its inputs other than as the input moved towards its start");
  }
  if (p.compress) keep = rank;  // the output's axis is not the domain's: never dropped
  for (size_t k = 0; k < p.ops.size(); ++k) {
    const Op& op = p.ops[k];
    if (is_control(op.code)) refuse(p, k, "a loop or branch op has no kernel: the host drives it");
    if (static_cast<int>(op.inputs.size()) != op_arity(op.code)) refuse(p, k, "wrong number of inputs");
    const bool scalar = joins_scalar_stage(op) && backend == "LLVM";
    if (scalar && rank != 0) refuse(p, k, "a check or append of one element runs in a 0-d stage");
    if (runs_in_library(op) && !scalar && !(p.compress && k >= p.first_compress))
      refuse(p, k, "a data-dependent op runs in the runtime's library");
    for (const View& v : op.inputs)
      if (v.storage < 0 || v.storage >= static_cast<int>(g.storages.size())) refuse(p, k, "unknown storage");
    if (op.output.storage < 0 || op.output.storage >= static_cast<int>(g.storages.size())) refuse(p, k, "unknown storage");
    if (op_kind(op.code) == OpKind::Reduce) {
      if (p.registers.count(op.output.storage)) refuse(p, k, "a reduction's result cannot be a register");
      if (p.compress && k + 1 == p.first_compress) continue;  // the count: the compresses' own (emit_compress.cc)
      if (k + 1 != p.ops.size()) refuse(p, k, "a reduction must be the last op of its stage");
      p.reduction = true;
      p.reduce = reduce_spec(op.code, g.dtype_of(op.inputs[0]), g.dtype_of(op.output));
      for (size_t a = 0; a < op.axes.size(); ++a)
        if (op.axes[a] < 0 || op.axes[a] >= rank || (a > 0 && op.axes[a] <= op.axes[a - 1]))
          refuse(p, k, "reduction axes must be ascending domain axes");
      for (int a : op.axes) p.reduced[a] = true;
    }
  }
  for (size_t k = 0; k < p.ops.size(); ++k) {
    Op& op = p.ops[k];
    // a compress's output runs over its count, not the domain (emit_compress.cc); the count the
    // ops before it compute is stored once, after every point (stride 0); a row of its source
    // moves whole
    if (p.compress && k >= p.first_compress) {
      fit_view(p, k, op.inputs[0], false);
      if (op.inputs[1].shape[0] != p.domain[0]) refuse(p, k, "its source's rows are not its mask's elements");
      continue;
    }
    if (joins_scalar_stage(op)) continue;  // 0-d values, an append's list and a message the emitter addresses itself
    for (View& v : op.inputs) fit_view(p, k, v, false);
    fit_view(p, k, op.output, op_kind(op.code) == OpKind::Reduce && !(p.compress && k + 1 == p.first_compress));
  }
  collect_extents(g, p);
  check_hazards(g, p, p.compress ? p.first_compress : p.ops.size());
  // a register holds one value per point: every access must be the producer's own view
  for (size_t k = 0; k < p.ops.size(); ++k) {
    const View& out = p.ops[k].output;
    if (!p.registers.count(out.storage)) continue;
    for (size_t j = 0; j < p.ops.size(); ++j) {
      for (const View& v : p.ops[j].inputs)
        if (v.storage == out.storage && v != out) refuse(p, j, "it reads register %s" + std::to_string(v.storage) + " through another view");
      if (j != k && p.ops[j].output.storage == out.storage) refuse(p, j, "it writes register %s" + std::to_string(out.storage) + " again");
    }
  }

  if (p.reduction) {
    const bool no_identity = !p.reduce.has_identity();
    bool kept_empty = false, folded_empty = false, folded_dynamic = false;
    // a length check_nonempty passed through is at least 1 when the stage runs
    auto checked = [&](int storage) {
      const Op* c = length_check(g, storage);
      return c && c->code == OpCode::check_nonempty;
    };
    for (int d = 0; d < rank; ++d) {
      if (!p.reduced[d]) kept_empty = kept_empty || (p.domain[d] == 0 && p.extent[d] < 0);
      else if (p.extent[d] >= 0) folded_dynamic = folded_dynamic || !checked(p.extent[d]);
      else folded_empty = folded_empty || p.domain[d] == 0;
    }
    if (no_identity && !kept_empty && folded_empty)
      refuse(p, p.ops.size() - 1, "zero-size array to reduction operation which has no identity");
    if (no_identity && !kept_empty && folded_dynamic)
      refuse(p, p.ops.size() - 1, "its reduced axes have run-time extents that may be zero (no identity)");
  }
  for (size_t k = 0; k < p.ops.size(); ++k)
    if (p.ops[k].code == OpCode::arange && rank > 1 && std::count(p.domain.begin(), p.domain.end(), 1) < rank - 1)
      refuse(p, k, "arange runs over a 1-d domain");

  for (int d = p.rank() - 1; d >= keep; --d)
    if (p.domain[d] == 1 && p.extent[d] < 0) erase_axis(p, d);
  for (int d = p.rank() - 2; d >= keep; --d) try_merge(p, d);

  int width = 1;
  while (width * 2 <= std::min(s.schedule.vector_width, 64)) width *= 2;
  p.vector_width = width;
  p.unroll = std::clamp(s.schedule.unroll, 1, 16);
  p.parallel = s.schedule.parallel && p.splits() && !p.compress && rows_independent(g, p);
  p.parallel_compress = s.schedule.parallel && p.compress && p.first_compress > 0 && parallel_compaction_conflict(s).empty();
  return p;
}

// A folded temporary's views address its slab: the shared axes drop out, offsets start at 0.
void address_slabs(StagePlan& p, const std::vector<Stage::Folded>& folded, int shared) {
  for (const Stage::Folded& f : folded) {
    auto rebase = [&](View& v) {
      if (v.storage != f.storage) return;
      for (int d = 0; d < shared; ++d) v.strides[d] = 0;
      v.offset -= f.base;
    };
    for (Op& op : p.ops) {
      for (View& v : op.inputs) rebase(v);
      rebase(op.output);
    }
  }
}

}  // namespace

StagePlan make_plan(const Graph& g, const Stage& s, const std::string& backend) {
  StagePlan p = plan_of(g, s, s.shared_loops, backend);
  p.shared = s.shared_loops;
  p.folded = s.folded;
  for (const Stage& m : s.computed_at) {
    p.members.push_back(plan_of(g, m, s.shared_loops, backend));
    p.parallel = p.parallel && rows_independent(g, p.members.back());
    address_slabs(p.members.back(), s.folded, p.shared);
  }
  address_slabs(p, s.folded, p.shared);
  p.bases = stage_storages(s);
  return p;
}

}  // namespace strider::detail
