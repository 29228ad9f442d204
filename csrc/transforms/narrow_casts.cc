#include <cmath>
#include <cstring>
#include <iterator>
#include <map>
#include <optional>

#include "transforms/passes.h"

namespace strider {

namespace {

// Ops whose float64 result rounded to float32 is the float32 op's result on the same float32
// operands: float64 carries more than twice float32's precision plus two bits, so rounding
// twice is rounding once (Figueroa, "When is double rounding innocuous?", 1995).
bool rounds_once(OpCode c) {
  return c == OpCode::add || c == OpCode::subtract || c == OpCode::multiply || c == OpCode::divide || c == OpCode::sqrt;
}

// Ops that pick or negate one of their float operands: exact in either dtype, NaNs included.
bool picks(OpCode c) {
  return c == OpCode::where || c == OpCode::maximum || c == OpCode::minimum || c == OpCode::negative;
}

// Dtypes whose every value float32 holds exactly.
bool exact_in_float32(DType t) {
  return t == DType::Bool || t == DType::Int8 || t == DType::UInt8 || t == DType::Int16 || t == DType::UInt16 ||
         t == DType::Float16;
}

class Narrower {
 public:
  Narrower(const Graph& g, const StorageTable& t) : g_(g), t_(t), once_(single_writers(g, t)) {}

  Graph run(std::vector<std::string>* log) {
    out_ = g_.without_ops();
    for (size_t c = 0; c < g_.ops.size(); ++c) {
      Op op = g_.ops[c];
      const int at = static_cast<int>(c);
      const int b = op.code == OpCode::cast ? computed(op, at) : -1;
      if (b >= 0) {
        const size_t ops = out_.ops.size(), storages = out_.storages.size();
        Op narrowed = g_.ops[b];
        bool ok = true;
        for (View& v : narrowed.inputs) {
          std::optional<View> n = as_float32(v, at);
          if (!n) {
            ok = false;
            break;
          }
          v = *n;
        }
        if (ok) {
          narrowed.output = op.output;
          if (log) log->push_back(describe_op(g_, b) + " computed in float32 for " + describe_op(g_, at));
          op = std::move(narrowed);
        } else {  // what the operands that did narrow added
          out_.ops.resize(ops);
          out_.storages.resize(storages);
          for (auto it = consts_.begin(); it != consts_.end();)
            it = it->second >= static_cast<int>(storages) ? consts_.erase(it) : std::next(it);
        }
      }
      out_.ops.push_back(std::move(op));
    }
    return std::move(out_);
  }

 private:
  // Where cast `op` (float64 to float32) at `at` rounds the whole result of an op that
  // rounds_once and nothing else reads (a return counts as a read): that op, else -1.
  int computed(const Op& op, int at) const {
    if (g_.dtype_of(op.output) != DType::Float32 || g_.dtype_of(op.inputs[0]) != DType::Float64) return -1;
    const int b = producer(op.inputs[0], at);
    return b >= 0 && rounds_once(g_.ops[b].code) && once_.reads[op.inputs[0].storage] == 1 ? b : -1;
  }

  // The op that wrote exactly `v`, a temporary written once, before `at`; else -1.
  int producer(const View& v, int at) const {
    const int w = once_.writer[v.storage];
    return w >= 0 && w < at && g_.ops[w].output == v ? w : -1;
  }

  // Whether what op w read is still there at op `at` (its elements and run-time extents).
  bool unchanged(int w, int at) const {
    for (const View& v : g_.ops[w].inputs) {
      if (written_between(t_, v.storage, w, at)) return false;
      for (int e : v.extents)
        if (e >= 0 && written_between(t_, e, w, at)) return false;
    }
    return true;
  }

  // `v`, float64, as a float32 view of the same values at op `at` (ops computing it inserted
  // before `at` where needed), or nothing.
  std::optional<View> as_float32(const View& v, int at) {
    const Storage& s = g_.storages[v.storage];
    if (s.dtype != DType::Float64) return std::nullopt;
    if (s.kind == StorageKind::Const) {
      const int id = const_in_float32(v.storage);
      if (id < 0) return std::nullopt;
      View n = v;
      n.storage = id;
      return n;
    }
    const int w = producer(v, at);
    if (w < 0 || !unchanged(w, at)) return std::nullopt;
    Op op = g_.ops[w];
    if (op.code == OpCode::cast) {
      const DType from = g_.dtype_of(op.inputs[0]);
      if (from == DType::Float32) return op.inputs[0];
      if (!exact_in_float32(from)) return std::nullopt;
    } else if (picks(op.code)) {
      for (size_t k = op.code == OpCode::where ? 1 : 0; k < op.inputs.size(); ++k) {  // (not where's condition)
        std::optional<View> n = as_float32(op.inputs[k], at);
        if (!n) return std::nullopt;
        op.inputs[k] = *n;
      }
    } else {
      return std::nullopt;
    }
    Storage t;
    t.dtype = DType::Float32;
    t.size = s.size;
    t.kind = StorageKind::Temp;
    op.output.storage = out_.add_storage(std::move(t));
    out_.ops.push_back(op);
    return op.output;
  }

  // A float32 copy of a float64 constant whose every element float32 holds exactly; else -1.
  int const_in_float32(int id) {
    if (auto hit = consts_.find(id); hit != consts_.end()) return hit->second;
    const Storage& s = g_.storages[id];
    Storage f;
    f.dtype = DType::Float32;
    f.size = s.size;
    f.kind = StorageKind::Const;
    f.data.resize(static_cast<size_t>(s.size) * sizeof(float));
    for (int64_t i = 0; i < s.size; ++i) {
      double x;
      std::memcpy(&x, s.data.data() + i * sizeof(double), sizeof(double));
      const float y = static_cast<float>(x);
      if (!std::isnan(x) && static_cast<double>(y) != x) return -1;
      std::memcpy(f.data.data() + i * sizeof(float), &y, sizeof(float));
    }
    const int n = out_.add_storage(std::move(f));
    consts_.emplace(id, n);
    return n;
  }

  const Graph& g_;
  const StorageTable& t_;
  const SingleWriters once_;
  std::map<int, int> consts_;  // float64 constant -> its float32 copy in out_
  Graph out_;
};

}  // namespace

Graph narrow_casts(const Graph& g, const StorageTable& t, std::vector<std::string>* log) {
  std::vector<std::string> lines;
  Graph out = Narrower(g, t).run(&lines);
  if (log) log->insert(log->end(), lines.begin(), lines.end());
  return lines.empty() ? g : out;
}

}  // namespace strider
