#include <string>
#include <vector>

#include "transforms/passes.h"

namespace strider {

Graph compress_in_place(const Graph& g, const StorageTable& t, std::vector<std::string>* log) {
  const int n = static_cast<int>(g.ops.size());
  std::vector<bool> dropped(n, false);
  Graph out = g;
  for (int c = 0; c < n; ++c) {
    const Op& op = g.ops[c];
    const View& src = op.inputs[1];
    // elements or dense rows (a detection's): a row moves towards the start whole
    auto dense = [](const View& v) { return v.ndim() >= 1 && v.strides == contiguous_strides(v.shape); };
    if (op.code != OpCode::compress || !dense(src) || op.inputs[0].storage == src.storage) continue;
    const int tmp = op.output.storage;
    // the temporary: written by the compress, read once, by a copy of all it holds
    const std::vector<Access>& uses = t.accesses[tmp];
    if (g.storages[tmp].kind != StorageKind::Temp || uses.size() != 2 || uses[1].write) continue;
    const int k = uses[1].op;
    if (k >= n) continue;
    const Op& back = g.ops[k];
    if (back.code != OpCode::copy || !(back.inputs[0] == op.output) || back.output.storage != src.storage ||
        back.output.strides != src.strides || back.output.offset > src.offset ||
        back.output.shape != op.output.shape || back.output.extents != op.output.extents)
      continue;
    // nothing between them touches the compressed array (its rows there are still the old ones)
    // or writes the count, and both run in the same region (the copy may sit in a branch)
    bool touched = false;
    for (const Access& a : t.accesses[src.storage]) touched = touched || (a.op > c && a.op < k);
    for (int e : back.output.extents) touched = touched || (e >= 0 && written_between(t, e, c, k));
    for (int i = c + 1; i < k; ++i) touched = touched || is_control(g.ops[i].code);
    if (touched) continue;
    out.ops[c].output = back.output;
    dropped[k] = true;
    if (log) log->push_back(describe_op(g, c) + " writes " + print_view(back.output) + " for " + describe_op(g, k));
  }
  if (out == g) return g;
  std::vector<Op> kept;
  for (int i = 0; i < n; ++i)
    if (!dropped[i]) kept.push_back(std::move(out.ops[i]));
  out.ops = std::move(kept);
  return out;
}

}  // namespace strider
