#include "analysis/storage_table.h"

#include <sstream>

namespace strider {

bool written_between(const StorageTable& t, int storage, int after, int before) {
  for (const Access& a : t.accesses[storage])
    if (a.write && a.op > after && a.op < before) return true;
  return false;
}

SingleWriters single_writers(const Graph& g, const StorageTable& t) {
  SingleWriters w;
  w.writer.assign(g.storages.size(), -1);
  w.reads.assign(g.storages.size(), 0);
  for (size_t s = 0; s < g.storages.size(); ++s) {
    int writes = 0;
    for (const Access& a : t.accesses[s]) {
      writes += a.write;
      w.reads[s] += !a.write;
      if (a.write) w.writer[s] = a.op;
    }
    if (writes != 1 || g.storages[s].kind != StorageKind::Temp) w.writer[s] = -1;
  }
  return w;
}

StorageTable build_storage_table(const Graph& g) {
  StorageTable t;
  t.accesses.resize(g.storages.size());
  // an op reads the run-time extents of every view it touches before anything else
  auto read_extents = [&](int op, const View& v) {
    for (int e : v.extents)
      if (e >= 0) t.accesses[e].push_back({op, View{e, {}, {}, 0, {}}, false});
  };
  for (size_t i = 0; i < g.ops.size(); ++i) {
    const Op& op = g.ops[i];
    const int id = static_cast<int>(i);
    for (const View& v : op.inputs) read_extents(id, v);
    read_extents(id, op.output);
    for (const View& v : op.inputs) t.accesses[v.storage].push_back({id, v, false});
    // a region's boundary reads what its body left and writes what the next part reads
    if (carries(op.code))
      for (const View& v : op.inputs) t.accesses[v.storage].push_back({id, v, true});
    t.accesses[op.output.storage].push_back({id, op.output, true});
  }
  const int ret = static_cast<int>(g.ops.size());
  for (const View& v : g.outputs) {
    read_extents(ret, v);
    t.accesses[v.storage].push_back({ret, v, false});
  }
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
