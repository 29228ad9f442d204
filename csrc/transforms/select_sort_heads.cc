#include <algorithm>

#include "transforms/passes.h"

namespace strider {

namespace {

// The lowest and highest storage offsets a view with static extents touches (lo > hi: none).
std::pair<int64_t, int64_t> span(const View& v) {
  int64_t lo = v.offset, hi = v.offset;
  for (int d = 0; d < v.ndim(); ++d) {
    if (v.shape[d] == 0) return {1, 0};
    const int64_t reach = v.strides[d] * (v.shape[d] - 1);
    (reach < 0 ? lo : hi) += reach;
  }
  return {lo, hi};
}

}  // namespace

Graph select_sort_heads(const Graph& g, const StorageTable& t) {
  Graph out = g;
  for (size_t i = 0; i < g.ops.size(); ++i) {
    const Op& op = g.ops[i];
    const View& w = op.output;
    const int s = w.storage;
    const int64_t n = w.ndim() == 1 ? w.shape[0] : 0;
    // a whole ascending sort of one row into a temporary of its own, of a length fixed while tracing
    const bool whole_ascending = op.axes.empty() || (op.axes[0] == 0 && op.axes[1] == -1);
    if (op_kind(op.code) != OpKind::Sort || !whole_ascending || n < 2 || w.offset != 0 || w.strides[0] != 1 ||
        g.storages[s].kind != StorageKind::Temp || g.storages[s].size != n || w.is_dynamic())
      continue;
    // the span its readers read; a write, a run-time extent or a return may observe any element
    bool whole = std::any_of(g.outputs.begin(), g.outputs.end(), [&](const View& r) { return r.storage == s; });
    int64_t lo = n, hi = -1;
    for (const Access& a : t.accesses[s]) {
      if (a.op == static_cast<int>(i)) continue;
      if (a.write || a.view.is_dynamic()) {
        whole = true;
        break;
      }
      const auto [first, last] = span(a.view);
      lo = std::min(lo, first);
      hi = std::max(hi, last);
    }
    if (whole || hi < lo) continue;
    Op& sel = out.ops[i];
    if (hi < n - 1) {  // the head: the first hi + 1 of the order
      sel.axes = {0, hi + 1};
      sel.output = View{s, {hi + 1}, {1}, 0};
    } else if (lo > 0) {  // the tail: the last n - lo, selected last first and written backwards
      sel.axes = {1, n - lo};
      sel.output = View{s, {n - lo}, {-1}, n - 1};
    }
    // (and how ties come: NumPy's default kind's order, or its partition's, with its kth)
    if (sel.axes.size() == 2 && op.axes.size() > 2) sel.axes.insert(sel.axes.end(), op.axes.begin() + 2, op.axes.end());
  }
  return out == g ? g : out;
}

}  // namespace strider
