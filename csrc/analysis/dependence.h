#pragma once

#include <string>
#include <vector>

#include "analysis/storage_table.h"

namespace strider {

enum class DepKind : uint8_t { RAW, WAR, WAW, RAR };
const char* dep_name(DepKind k);

struct DepEdge {
  int src = 0;  // earlier op
  int dst = 0;  // later op
  DepKind kind = DepKind::RAW;
  int storage = 0;

  bool operator==(const DepEdge& o) const {
    return src == o.src && dst == o.dst && kind == o.kind && storage == o.storage;
  }
};

/// The dependence DAG over a graph's ops. RAW/WAR/WAW edges order execution; RAR edges are
/// fusion hints only.
struct Dag {
  int num_ops = 0;
  std::vector<DepEdge> edges;

  /// A legal execution order: Kahn's algorithm over the ordering edges, taking the lowest
  /// (or, with `latest_first`, the highest) ready op first. Both orders are legal; the tests run
  /// both to show the edges are sufficient.
  std::vector<int> topological_order(bool latest_first = false) const;
};

/// Every edge decided on exact footprints; `hints` false leaves out the RAR edges (nothing orders
/// on them, and an argument read by many ops has many pairs of readers to decide).
Dag build_dependence_dag(const Graph& g, const StorageTable& t, bool hints = true);
std::string print_dag(const Dag& d);

}  // namespace strider
