#include <vector>

#include "transforms/passes.h"

namespace strider {

Graph eliminate_dead_ops(const Graph& g, const StorageTable& t, const Dag& d) {
  const int n = static_cast<int>(g.ops.size());
  std::vector<bool> live(n, false);
  std::vector<int> work;
  // writes into the caller's arrays, checks (NumPy raises even where the value is unused) and
  // control ops (what they carry is live: it reaches the next iteration or what follows)
  for (int i = 0; i < n; ++i)
    if (g.storages[g.ops[i].output.storage].kind == StorageKind::Arg || op_kind(g.ops[i].code) == OpKind::Check ||
        is_control(g.ops[i].code)) {
      live[i] = true;
      work.push_back(i);
    }
  // writers whose elements (or run-time extents) the return reads
  auto returned = [&](int s) {
    for (const Access& a : t.accesses[s])
      if (a.write && !live[a.op]) {
        live[a.op] = true;
        work.push_back(a.op);
      }
  };
  for (const View& out : g.outputs) {
    returned(out.storage);
    for (int e : out.extents)
      if (e >= 0) returned(e);
  }
  std::vector<std::vector<int>> raw_preds(n);
  for (const DepEdge& e : d.edges)
    if (e.kind == DepKind::RAW) raw_preds[e.dst].push_back(e.src);
  while (!work.empty()) {
    int op = work.back();
    work.pop_back();
    for (int p : raw_preds[op])
      if (!live[p]) {
        live[p] = true;
        work.push_back(p);
      }
  }
  bool all_live = true;
  for (bool l : live) all_live = all_live && l;
  if (all_live) return g;

  Graph out;
  out.name = g.name;
  std::vector<bool> used(g.storages.size(), false);
  for (size_t s = 0; s < g.storages.size(); ++s) used[s] = g.storages[s].kind == StorageKind::Arg;
  auto use = [&](const View& v) {
    used[v.storage] = true;
    for (int e : v.extents)
      if (e >= 0) used[e] = true;
  };
  for (int i = 0; i < n; ++i) {
    if (!live[i]) continue;
    for (const View& v : g.ops[i].inputs) use(v);
    use(g.ops[i].output);
  }
  for (const View& v : g.outputs) use(v);
  std::vector<int> remap(g.storages.size(), -1);
  for (size_t s = 0; s < g.storages.size(); ++s)
    if (used[s]) remap[s] = out.add_storage(g.storages[s]);
  auto moved = [&](View v) {
    v.storage = remap[v.storage];
    for (int& e : v.extents)
      if (e >= 0) e = remap[e];
    return v;
  };
  for (int i = 0; i < n; ++i) {
    if (!live[i]) continue;
    Op op = g.ops[i];
    for (View& v : op.inputs) v = moved(v);
    op.output = moved(op.output);
    out.ops.push_back(std::move(op));
  }
  for (const View& v : g.outputs) out.outputs.push_back(moved(v));
  return out;
}

}  // namespace strider
