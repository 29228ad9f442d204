#include "analysis/storage_table.h"

#include <sstream>

namespace strider {

StorageTable build_storage_table(const Graph& g) {
  StorageTable t;
  t.accesses.resize(g.storages.size());
  for (size_t i = 0; i < g.ops.size(); ++i) {
    const Op& op = g.ops[i];
    for (const View& v : op.inputs) t.accesses[v.storage].push_back({static_cast<int>(i), v, false});
    t.accesses[op.output.storage].push_back({static_cast<int>(i), op.output, true});
  }
  for (const View& v : g.outputs) t.accesses[v.storage].push_back({static_cast<int>(g.ops.size()), v, false});
  return t;
}

std::string print_storage_table(const Graph& g, const StorageTable& t) {
  std::ostringstream os;
  for (size_t s = 0; s < t.accesses.size(); ++s) {
    os << "%s" << s << ":";
    if (t.accesses[s].empty()) os << " (unused)";
    os << "\n";
    for (const Access& a : t.accesses[s]) {
      os << "  " << (a.write ? "write " : "read  ");
      if (a.op == static_cast<int>(g.ops.size())) os << "return";
      else os << "op" << a.op;
      os << " " << print_view(a.view) << "\n";
    }
  }
  return os.str();
}

}  // namespace strider
