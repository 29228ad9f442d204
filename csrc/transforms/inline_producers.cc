#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>
#include <tuple>

#include "transforms/passes.h"

namespace strider {

namespace {

// Where a read view meets the points of the op that wrote it: point i of the read touches the
// element the writer produced at j_d = start[d] + sum over read axes k with dim[k] == d of
// step[k] * i_k (dim[k] == -1: the read broadcasts along k, or k has extent 1).
struct PointMap {
  std::vector<int64_t> start;  // per writer dim
  std::vector<int> dim;        // per read axis
  std::vector<int64_t> step;   // per read axis: a nonzero multiple (dx = t[:, 0::4]: 4)
};

// The writer's view must be dense (one element per point, in some axis order) for the element
// a read touches to name one point of the writer.
bool is_dense(const View& w) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, extent) of non-unit dims
  for (int d = 0; d < w.ndim(); ++d)
    if (w.shape[d] != 1) dims.emplace_back(w.strides[d], w.shape[d]);
  std::sort(dims.begin(), dims.end());
  int64_t expect = 1;
  for (const auto& [stride, extent] : dims) {
    if (stride != expect) return false;
    expect *= extent;
  }
  return true;
}

std::optional<PointMap> map_read(const View& w, const View& r) {
  if (w.is_dynamic() || r.is_dynamic() || w.numel() == 0 || r.numel() == 0 || !is_dense(w)) return std::nullopt;
  PointMap m;
  m.start.assign(w.ndim(), 0);
  m.dim.assign(r.ndim(), -1);
  m.step.assign(r.ndim(), 0);
  for (int k = 0; k < r.ndim(); ++k) {
    if (r.shape[k] == 1 || r.strides[k] == 0) continue;
    // the writer dim with the largest stride dividing the read's: the read steps it by a multiple
    for (int d = 0; d < w.ndim(); ++d)
      if (w.shape[d] != 1 && r.strides[k] % w.strides[d] == 0 && (m.dim[k] < 0 || w.strides[d] > w.strides[m.dim[k]]))
        m.dim[k] = d;
    if (m.dim[k] < 0) return std::nullopt;
    m.step[k] = r.strides[k] / w.strides[m.dim[k]];
  }
  // The first element read, as a point of the writer: dense strides decompose it greedily.
  std::vector<int> order;
  for (int d = 0; d < w.ndim(); ++d)
    if (w.shape[d] != 1) order.push_back(d);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return w.strides[a] > w.strides[b]; });
  int64_t rest = r.offset - w.offset;
  for (int d : order) {
    if (rest < 0) return std::nullopt;
    m.start[d] = rest / w.strides[d];
    rest %= w.strides[d];
  }
  if (rest != 0) return std::nullopt;
  for (int d = 0; d < w.ndim(); ++d) {
    int64_t lo = m.start[d], hi = m.start[d];
    for (int k = 0; k < r.ndim(); ++k)
      if (m.dim[k] == d) (m.step[k] > 0 ? hi : lo) += m.step[k] * (r.shape[k] - 1);
    if (lo < 0 || hi >= w.shape[d]) return std::nullopt;
  }
  return m;
}

// `v`, a view over the writer's points, over the read's points instead.
View compose(const View& v, const View& r, const PointMap& m) {
  View out;
  out.storage = v.storage;
  out.shape = r.shape;
  out.offset = v.offset;
  for (size_t d = 0; d < m.start.size(); ++d) out.offset += v.strides[d] * m.start[d];
  for (int k = 0; k < r.ndim(); ++k) out.strides.push_back(m.dim[k] < 0 ? 0 : m.step[k] * v.strides[m.dim[k]]);
  return out;
}

// Ops worth computing once and storing when more than one read wants them: libm calls.
bool expensive(OpCode c) { return (op_attrs(c) & kLibm) != 0; }

// A read broadcast along an axis outside the axes it walks would recompute the producer at every
// step of that axis; broadcast axes inside the walked ones only repeat loop-invariant work,
// which stays hoisted out of the inner loops.
bool broadcast_inside(const View& r, const PointMap& m) {
  bool walked_inner = false;
  for (int k = r.ndim() - 1; k >= 0; --k) {
    if (r.shape[k] == 1) continue;
    if (m.dim[k] >= 0) walked_inner = true;
    else if (walked_inner) return false;
  }
  return true;
}

// Whether an op's reads may recompute their producers (the library's ops read stored inputs).
bool recomputes(const Op& op) { return op_kind(op.code) != OpKind::Arange && !is_data_dependent(op.code); }

// Whether `v`, read by `op`, is a compress's mask: it reads the copy an earlier reader of the same
// view recomputed (the count: sum(m) before x[m]), as the compaction stage fuses the ops that make
// and count its mask (YOLOv5's xc = pred[..., 4] > t, then x[xc[xi]] for each image).
bool mask_of(const Op& op, const View& v) { return op.code == OpCode::compress && op.inputs[0] == v; }

constexpr int kMaxOpsPerRead = 48;  // bounds the code one consumer may pull in
constexpr int64_t kCacheLine = 64;    // bytes

class Inliner {
 public:
  Inliner(const Graph& g, const StorageTable& t) : g_(g), t_(t) {
    SingleWriters w = single_writers(g, t);
    writer_ = std::move(w.writer);
    reads_ = std::move(w.reads);
    for (const View& v : g.outputs) reads_[v.storage] += 2;  // returned: it stays stored
    // An op whose every reader will recompute it dies: copies for its own reads would be waste.
    // (While this is decided, every op counts as dying: see gathers.)
    dies_.assign(g.ops.size(), true);
    std::vector<bool> dies(g.ops.size(), false);
    for (size_t s = 0; s < g.storages.size(); ++s) {
      if (writer_[s] < 0 || reads_[s] == 0) continue;
      bool all = true;
      for (size_t k = 0; k < t.accesses[s].size(); ++k) {
        const Access& a = t.accesses[s][k];
        if (a.write) continue;
        if (a.op >= static_cast<int>(g.ops.size()) || !recomputable(a.view, a.op, false)) all = false;
        else if (mask_of(g.ops[a.op], a.view)) all = all && recomputed_before(t.accesses[s], k);
        else if (!recomputes(g.ops[a.op])) all = false;
      }
      dies[writer_[s]] = all;
    }
    dies_ = std::move(dies);
  }

  Graph run(std::vector<std::string>* log) {
    out_ = g_.without_ops();
    for (size_t b = 0; b < g_.ops.size(); ++b) {
      Op op = g_.ops[b];
      memo_.clear();
      budget_ = kMaxOpsPerRead;
      if (recomputes(op) && !dies_[b]) {
        for (View& v : op.inputs) v = read(v, static_cast<int>(b), false, log);
      } else if (!dies_[b] && !op.inputs.empty() && mask_of(op, op.inputs[0])) {
        auto hit = shared_.find(key_of(op.inputs[0]));
        if (hit != shared_.end() && recomputable(op.inputs[0], static_cast<int>(b), false)) op.inputs[0] = hit->second;
      }
      out_.ops.push_back(std::move(op));
    }
    return std::move(out_);
  }

 private:
  using Key = std::tuple<int, Shape, Shape, int64_t>;
  static Key key_of(const View& v) { return std::make_tuple(v.storage, v.shape, v.strides, v.offset); }

  // Whether a read before accesses[k], of the same view, recomputes its producer (mask_of).
  bool recomputed_before(const std::vector<Access>& accesses, size_t k) const {
    for (size_t j = 0; j < k; ++j) {
      const Access& a = accesses[j];
      if (!a.write && a.view == accesses[k].view && a.op < static_cast<int>(g_.ops.size()) &&
          recomputes(g_.ops[a.op]) && recomputable(a.view, a.op, false))
        return true;
    }
    return false;
  }

  // Where op `at` reads `r`, the point map under which a copy of r's writer may be inserted just
  // before `at`. `repeated`: the reader is itself a copy that other reads repeat.
  std::optional<PointMap> recomputable(const View& r, int at, bool repeated) const {
    const int a = writer_[r.storage];
    if (a < 0 || a >= at) return std::nullopt;
    const Op& src = g_.ops[a];
    const OpKind kind = op_kind(src.code);
    if (kind == OpKind::Reduce || kind == OpKind::Arange || is_data_dependent(src.code)) return std::nullopt;
    if (expensive(src.code) && (repeated || reads_[r.storage] > 1)) return std::nullopt;
    std::optional<PointMap> m = map_read(src.output, r);
    if (!m || !broadcast_inside(r, *m)) return std::nullopt;
    if (!dies_[a] && gathers(src, r, *m)) return std::nullopt;
    for (const View& v : src.inputs)
      // a write between them: a copy placed at `at` would read newer elements than the original did
      if (v.is_dynamic() || written_between(t_, v.storage, a, at)) return std::nullopt;
    return m;
  }

  // Whether recomputing `src` where `r` reads it would load an input across cache lines (a
  // column of wide rows: pred[:, 4] > t) along r's innermost axis, more sparsely than r itself
  // reads: a producer that stays stored for another reader is cheaper to read back then.
  bool gathers(const Op& src, const View& r, const PointMap& m) const {
    int k = r.ndim() - 1;
    while (k >= 0 && r.shape[k] == 1) --k;
    if (k < 0) return false;
    const int64_t read = std::abs(r.strides[k]) * itemsize(g_.storages[r.storage].dtype);
    for (const View& v : src.inputs) {
      const int64_t step = std::abs(compose(v, r, m).strides[k]) * itemsize(g_.storages[v.storage].dtype);
      if (step > kCacheLine && step > read) return true;
    }
    return false;
  }

  // The view op `at` should read instead of `r`: a fresh temporary that a copy of r's writer,
  // inserted just before `at`, fills point for point with the consumer; or `r` itself.
  View read(const View& r, int at, bool repeated, std::vector<std::string>* log) {
    if (budget_ <= 0) return r;
    std::optional<PointMap> m = recomputable(r, at, repeated);
    if (!m) return r;
    const int a = writer_[r.storage];
    const Op& src = g_.ops[a];
    repeated = repeated || reads_[r.storage] > 1;
    auto key = std::make_tuple(a, r.shape, r.strides, r.offset);
    if (auto hit = memo_.find(key); hit != memo_.end()) return hit->second;
    --budget_;
    Op copy = src;
    for (View& v : copy.inputs) v = read(compose(v, r, *m), at, repeated, log);
    Storage t;
    t.dtype = g_.storages[r.storage].dtype;
    t.size = r.numel();
    t.kind = StorageKind::Temp;
    copy.output = View{out_.add_storage(std::move(t)), r.shape, contiguous_strides(r.shape), 0, {}};
    if (log) log->push_back(describe_op(g_, a) + " recomputed for " + describe_op(g_, at));
    memo_.emplace(key, copy.output);
    shared_.emplace(key_of(r), copy.output);
    out_.ops.push_back(std::move(copy));
    return out_.ops.back().output;
  }

  const Graph& g_;
  const StorageTable& t_;
  std::vector<int> writer_;  // per storage: its one writer, when a temporary written once
  std::vector<int> reads_;
  std::vector<bool> dies_;  // per op
  Graph out_;
  std::map<std::tuple<int, Shape, Shape, int64_t>, View> memo_;
  std::map<Key, View> shared_;  // an op's reads that recomputed their producer: the copy (mask_of)
  int budget_ = 0;
};

}  // namespace

Graph inline_producers(const Graph& g, const StorageTable& t, std::vector<std::string>* log) {
  return Inliner(g, t).run(log);
}

}  // namespace strider
