#pragma once

#include <memory>
#include <string>
#include <vector>

#include "analysis/dependence.h"
#include "analysis/storage_table.h"
#include "ir/graph.h"
#include "runtime/background_compile.h"
#include "runtime/kernel.h"
#include "schedule/loop_nest.h"

namespace strider {

/// A lowered program (driver/driver.h's lower): a graph with the analyses every later stage
/// reads, its stages, and their native code for the host.
struct Program {
  /// Where a background compile runs (compile_stages_in_background), the owner's going away
  /// first drops what it has not started: its groups read the graph and stages, and write below.
  struct Background {
    std::shared_ptr<BackgroundCompile> job;
    Background() = default;
    Background(Background&&) = default;
    Background& operator=(Background&& o) {
      if (job && job != o.job) job->cancel();
      job = std::move(o.job);
      return *this;
    }
    ~Background() {
      if (job) job->cancel();
    }
  };

  Graph graph;
  StorageTable table;
  Dag dag;  // its ordering edges (RAW, WAR, WAW); build_dependence_dag adds the RAR hints on demand
  StageGraph stages;
  // per stage; null: the reference executor runs it. While a background compile runs, read only
  // through kernel(); the compile writes it, and the fields below but unstored, until it is done
  std::vector<std::shared_ptr<const CompiledStage>> kernels;
  std::vector<std::string> fallbacks;  // per stage: why it has no kernel (empty when it has one)
  // per stage: its quick kernel (Effort::kQuick), where a background compile made one for a first
  // call; kept while the program lives, since a run may still hold it after kernels' replaced it
  std::vector<std::shared_ptr<const CompiledStage>> quick_kernels;
  // per stage: its kernel of Effort::kLoops, made between the two for a loop nest over many
  // elements inside a loop; kept alike
  std::vector<std::shared_ptr<const CompiledStage>> loop_kernels;
  // per storage: never allocated when the stages run (registers and folded slabs of compiled
  // stages); empty when nothing is compiled. A background compile sets it before it starts, from
  // the stages it will compile, and clears unstored_holds should one of them get no kernel
  std::vector<bool> unstored;
  bool unstored_holds = true;
  // per stage: where its loop or branch op sends the run (region_jumps; empty: it has none)
  std::vector<int> jumps;
  int compiled = 0;   // kernels LLVM compiled for this program
  int disk_hits = 0;  // kernels loaded from the disk cache instead
  Background background;  // last: destroyed first

  /// Stage i's kernel (null: the reference executor runs it, or its compile is not done).
  const CompiledStage* kernel(size_t i) const {
    if (background.job) return background.job->kernel(i);
    return i < kernels.size() ? kernels[i].get() : nullptr;
  }
  /// False while a background compile runs.
  bool settled() const { return !background.job || background.job->done(); }
  /// Returns once settled(), compiling what no worker has started.
  void settle() const {
    if (background.job) background.job->wait();
  }
};

}  // namespace strider
