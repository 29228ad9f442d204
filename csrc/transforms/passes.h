#pragma once

#include <string>
#include <vector>

#include "analysis/dependence.h"
#include "analysis/storage_table.h"
#include "ir/graph.h"

namespace strider {

/// A graph with the analyses every later stage reads.
struct Program {
  Graph graph;
  StorageTable table;
  Dag dag;
};

/// Drops ops whose results nobody observes (not returned, not in caller-visible storage, not
/// read by a live op) and the temporaries only they used. Returns its input when nothing is dead.
Graph eliminate_dead_ops(const Graph& g, const StorageTable& t, const Dag& d);

/// THE pipeline (lower.cc): verify, analyse, simplify, analyse again.
Program lower(Graph g);

/// Runs the named passes in order on IR text and prints the result (the text tests and the
/// strider-opt tool use this). Names: verify_graph, build_storage_table, build_dependence_dag,
/// eliminate_dead_ops, lower.
std::string run_passes(const std::string& ir_text, const std::vector<std::string>& passes);

}  // namespace strider
