#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "transforms/passes.h"

namespace strider {

namespace {

// Whether every element of i64 storage s lies in [0, rows) wherever it is read: every write into
// it copies or compresses elements of such a storage, or is an argsort over at most `rows`
// positions. Storages already on the path count as proven (a loop compacts its own array).
bool positions_below(const Graph& g, const StorageTable& t, int s, int64_t rows, std::set<int>& path) {
  if (!path.insert(s).second) return true;
  if (g.storages[s].kind != StorageKind::Temp || g.storages[s].dtype != DType::Int64) return false;
  for (const Access& a : t.accesses[s]) {
    if (!a.write) continue;
    const Op& op = g.ops[a.op];
    if (carries(op.code)) continue;  // a region's boundary passes its values on
    if (op.code == OpCode::argsort) {
      if (op.inputs[0].ndim() < 1 || op.inputs[0].shape.back() > rows) return false;
    } else if (op.code == OpCode::copy || op.code == OpCode::compress) {
      if (!positions_below(g, t, op.inputs.back().storage, rows, path)) return false;
    } else {
      return false;
    }
  }
  return true;
}

bool dense_1d(const View& v) { return v.ndim() == 1 && v.strides[0] == 1; }

View on(int storage, View v) {
  v.storage = storage;
  return v;
}

// What carrying the gathers of one loop's array of positions changes.
struct Edits {
  std::map<int, Op> replaced;               // op index -> the op in its place
  std::map<int, std::vector<Op>> before, after;  // ops inserted around an op index
};

// The loop's region: the indices of its loop_begin and loop_end.
int loop_end_of(const Graph& g, int begin) {
  for (int i = begin + 1; i < static_cast<int>(g.ops.size()); ++i)
    if (g.ops[i].code == OpCode::loop_end && g.ops[i].axes == g.ops[begin].axes) return i;
  return -1;
}

// One array of positions `order` (a storage the loop at [b, e] carries): where every write into it
// in the loop is `order = compress(m, order[v])` (a compress into a temporary, copied back), each
// gather `src[order[r]]` of a 1-d `src` the loop does not write becomes a read `carried[r]` of an
// array the loop carries alongside: src[order] once before the loop, then compacted by the same
// masks as order (py_cpu_nms's x1[order[1:]]: the loop's reads go sequential, the gathers out).
void carry(Graph& out, const Graph& g, const StorageTable& t, int b, int e, const View& carried, Edits& ed,
           std::vector<std::string>* log) {
  const int order = carried.storage;
  const Storage& st = g.storages[order];
  if (st.dtype != DType::Int64 || st.kind != StorageKind::Temp || !dense_1d(carried) || carried.offset != 0 ||
      carried.shape[0] != st.size)
    return;
  std::vector<std::pair<int, int>> compactions;  // (compress, copy back into order)
  int last_write = -1;
  for (const Access& a : t.accesses[order]) {
    if (!a.write) continue;
    if (a.op < b) last_write = a.op;
    if (a.op <= b || a.op >= e) continue;
    const Op& w = g.ops[a.op];
    if (w.code != OpCode::copy || !dense_1d(w.output) || !dense_1d(w.inputs[0])) return;
    const int tmp = w.inputs[0].storage;
    int compress = -1, writes = 0;
    for (const Access& x : t.accesses[tmp])
      if (x.write) {
        ++writes;
        compress = x.op;
      }
    if (writes != 1 || compress <= b || compress >= a.op || g.storages[tmp].kind != StorageKind::Temp) return;
    const Op& c = g.ops[compress];
    if (c.code != OpCode::compress || c.inputs[1].storage != order || !dense_1d(c.inputs[1]) ||
        !(c.output == w.inputs[0]))
      return;
    compactions.push_back({compress, a.op});
  }
  // what order holds as the loop starts: the last write before it, dense from 0, its length unchanged since
  if (compactions.empty() || last_write < 0 || is_control(g.ops[last_write].code)) return;
  const View init = g.ops[last_write].output;
  if (!dense_1d(init) || init.offset != 0) return;
  for (int i = last_write + 1; i < b; ++i)
    if (is_control(g.ops[i].code)) return;
  if (init.extent_of(0) >= 0)
    for (const Access& x : t.accesses[init.extent_of(0)])
      if (x.write && x.op > last_write && x.op < b) return;
  // the gathers, by source; a source the loop writes (or carries) is left alone
  std::map<std::tuple<int, int64_t, int64_t, int64_t>, int> carriers;  // source view -> its carried copy
  for (int k = b + 1; k < e; ++k) {
    const Op& op = g.ops[k];
    if (op.code != OpCode::take || op.inputs[1].storage != order || op.inputs[0].ndim() != 1 ||
        op.inputs[1].ndim() != 1 || op.inputs[0].is_dynamic())
      continue;
    const View& src = op.inputs[0];
    const bool written = std::any_of(t.accesses[src.storage].begin(), t.accesses[src.storage].end(),
                                     [&](const Access& x) { return x.write && x.op >= b && x.op <= e; });
    std::set<int> path;
    if (written || !positions_below(g, t, order, src.shape[0], path)) continue;
    const auto key = std::make_tuple(src.storage, src.shape[0], src.strides[0], src.offset);
    auto [it, fresh] = carriers.insert({key, -1});
    if (fresh) {
      const DType dt = g.dtype_of(src);
      it->second = out.add_storage(Storage{dt, st.size, StorageKind::Temp, -1, {}});
      const int c = it->second;
      ed.before[b].push_back(Op{OpCode::take, {src, init}, on(c, init), {}, op.file, op.line});
      ed.replaced[b].inputs.push_back(on(c, carried));
      ed.replaced[e].inputs.push_back(on(c, carried));
      for (const auto& [compress, copy] : compactions) {
        const Op& cp = g.ops[compress];
        const int tmp = out.add_storage(Storage{dt, g.storages[cp.output.storage].size, StorageKind::Temp, -1, {}});
        ed.after[compress].push_back(
            Op{OpCode::compress, {cp.inputs[0], on(c, cp.inputs[1])}, on(tmp, cp.output), {}, cp.file, cp.line});
        const Op& back = g.ops[copy];
        ed.after[copy].push_back(Op{OpCode::copy, {on(tmp, back.inputs[0])}, on(c, back.output), {}, back.file, back.line});
      }
      if (log)
        log->push_back(describe_op(g, k) + " reads %s" + std::to_string(c) + ", which " +
                       describe_op(g, b) + " carries alongside %s" + std::to_string(order) + ", compacted with it");
    } else if (log) {
      log->push_back(describe_op(g, k) + " reads %s" + std::to_string(it->second) + " too");
    }
    ed.replaced[k] = Op{OpCode::copy, {on(it->second, op.inputs[1])}, op.output, {}, op.file, op.line};
  }
}

}  // namespace

Graph carry_gathers(const Graph& g, const StorageTable& t, std::vector<std::string>* log) {
  Graph out = g;
  Edits ed;
  for (int b = 0; b < static_cast<int>(g.ops.size()); ++b) {
    if (g.ops[b].code != OpCode::loop_begin) continue;
    const int e = loop_end_of(g, b);
    if (e < 0) continue;
    ed.replaced.emplace(b, g.ops[b]);
    ed.replaced.emplace(e, g.ops[e]);
    for (const View& v : g.ops[b].inputs) carry(out, g, t, b, e, v, ed, log);
  }
  if (ed.before.empty()) return g;
  out.ops.clear();
  for (int i = 0; i < static_cast<int>(g.ops.size()); ++i) {
    for (const Op& op : ed.before[i]) out.ops.push_back(op);
    const auto r = ed.replaced.find(i);
    out.ops.push_back(r != ed.replaced.end() ? r->second : g.ops[i]);
    for (const Op& op : ed.after[i]) out.ops.push_back(op);
  }
  return out;
}

}  // namespace strider
