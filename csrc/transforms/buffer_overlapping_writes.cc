#include <algorithm>
#include <string>
#include <vector>

#include "analysis/overlap.h"
#include "transforms/passes.h"

namespace strider {

namespace {

// Elementwise ops and copies see every input at the output's shape: the op's points are the
// output's. A reduction (whose output is stored after its folded points) is left as it is.
bool reads_own_write_elsewhere(const Op& op) {
  if (op_kind(op.code) == OpKind::Reduce || op_kind(op.code) == OpKind::Arange || is_data_dependent(op.code)) return false;
  for (const View& v : op.inputs)
    if (v.storage == op.output.storage && shared_between_points(v, op.output)) return true;
  return false;
}

}  // namespace

Graph buffer_overlapping_writes(const Graph& g, std::vector<std::string>* log) {
  std::vector<bool> buffered(g.ops.size());
  for (size_t i = 0; i < g.ops.size(); ++i) buffered[i] = reads_own_write_elsewhere(g.ops[i]);
  if (std::find(buffered.begin(), buffered.end(), true) == buffered.end()) return g;
  Graph out = g;
  out.ops.clear();
  for (size_t i = 0; i < g.ops.size(); ++i) {
    const Op& op = g.ops[i];
    if (!buffered[i]) {
      out.ops.push_back(op);
      continue;
    }
    const View& target = op.output;
    Storage temp;
    temp.dtype = g.storages[target.storage].dtype;
    temp.size = shape_numel(target.shape);
    temp.kind = StorageKind::Temp;
    const View dense{out.add_storage(std::move(temp)), target.shape, contiguous_strides(target.shape), 0, target.extents};
    Op compute = op;
    compute.output = dense;
    Op store;
    store.code = OpCode::copy;
    store.inputs = {dense};
    store.output = target;
    store.file = op.file;
    store.line = op.line;
    out.ops.push_back(std::move(compute));
    out.ops.push_back(std::move(store));
    if (log)
      log->push_back(describe_op(g, static_cast<int>(i)) + " writes %s" + std::to_string(dense.storage) +
                     ", copied into %s" + std::to_string(target.storage) +
                     " after it: it reads elements of %s" + std::to_string(target.storage) + " that it writes at another point");
  }
  return out;
}

}  // namespace strider
