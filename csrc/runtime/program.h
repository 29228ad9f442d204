#pragma once

#include <memory>
#include <string>
#include <vector>

#include "analysis/dependence.h"
#include "analysis/storage_table.h"
#include "ir/graph.h"
#include "runtime/kernel.h"
#include "schedule/loop_nest.h"

namespace strider {

/// A lowered program (driver/driver.h's lower): a graph with the analyses every later stage
/// reads, its stages, and their native code for the host.
struct Program {
  Graph graph;
  StorageTable table;
  Dag dag;  // its ordering edges (RAW, WAR, WAW); build_dependence_dag adds the RAR hints on demand
  StageGraph stages;
  std::vector<std::shared_ptr<const CompiledStage>> kernels;  // per stage; null: the reference executor runs it
  std::vector<std::string> fallbacks;  // per stage: why it has no kernel (empty when it has one)
  // per storage: never allocated when the stages run (registers and folded slabs of compiled
  // stages); empty when nothing is compiled
  std::vector<bool> unstored;
  // per stage: where its loop or branch op sends the run (region_jumps; empty: it has none)
  std::vector<int> jumps;
  int compiled = 0;   // kernels LLVM compiled for this program
  int disk_hits = 0;  // kernels loaded from the disk cache instead
};

}  // namespace strider
