#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "analysis/dependence.h"
#include "analysis/storage_table.h"
#include "ir/graph.h"
#include "schedule/loop_nest.h"

namespace strider {

class CompiledStage;

/// Where a program's stages run: on the CPU each stage is a loop nest whose points run in
/// lexicographic order (rows across threads where they are independent); on a GPU every point of
/// a stage runs at once, one per thread, so a stage may not carry a dependence between points.
enum class Target { Cpu, Cuda };

/// A graph with the analyses every later stage reads, its stages, and their native code.
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
  int compiled = 0;   // kernels LLVM compiled for this program
  int disk_hits = 0;  // kernels loaded from the disk cache instead
};

/// Drops ops whose results nobody observes (not returned, not in caller-visible storage, not
/// read by a live op) and the temporaries only they used. Returns its input when nothing is dead.
Graph eliminate_dead_ops(const Graph& g, const StorageTable& t, const Dag& d);

/// Recomputes cheap elementwise producers where they are read, so that a consumer over another
/// loop domain (a slice, a transpose, a flip or an inner broadcast of the temporary) fuses with
/// them instead of reading a stored temporary: a read of a temporary written once, densely, by
/// an elementwise op or copy gets a copy of that op inserted just before the reader, its inputs
/// composed with the read's view (recursively, at most 48 ops per read). Not done when the read
/// broadcasts along an axis outside the axes it walks (the work would repeat), when an op of
/// the exp/log/power family would run twice, or when an input of the producer is written between
/// it and the reader. The producer is left for eliminate_dead_ops. `log` gets one line per copy.
Graph inline_producers(const Graph& g, const StorageTable& t, std::vector<std::string>* log = nullptr);

/// For Target::Cuda: an op that reads elements which its own write changes at another point
/// (x[:-1] = x[1:] as one copy) writes a new dense temporary instead, and a copy after it stores
/// that into place, so that fuse_stages can put the two in different stages (kernels). `log` gets
/// one line per op.
Graph buffer_overlapping_writes(const Graph& g, std::vector<std::string>* log = nullptr);

/// Groups ops, in program order, into stages (one loop nest each): neighbours with the same loop
/// domain (unit dimensions dropped) join while the exact dependence test says running them point
/// by point keeps every conflicting pair of accesses in order, and for Target::Cuda that no
/// element one of them writes is touched at another point; a reduction ends its stage. Every
/// rejected fusion is recorded with its reason.
StageGraph fuse_stages(const Graph& g, const StorageTable& t, Target target = Target::Cpu);

/// Compiles every stage to native code where the backend can (LLVM), or loads it from the disk
/// cache (runtime/kernel_cache.h); records why not elsewhere, and counts compiles and disk hits.
void compile_stages(Program& p);

/// THE pipeline (lower.cc), one step a line: verify_graph, build_storage_table,
/// eliminate_dead_ops, inline_producers (eliminate_dead_ops again when it copied any),
/// buffer_overlapping_writes (Target::Cuda), build_dependence_dag, verify_graph, fuse_stages,
/// schedule_stages (the user's schedule text for a stage index where given, else the default),
/// compile_stages. Each step is logged with its time and whether it changed anything
/// (STRIDER_LOG=passes), and the IR after it is dumped to
/// STRIDER_DUMP_DIR/<graph>.<NN>.<step>.ir, numbered in run order.
/// `jit` false leaves every stage to the reference executor. Target::Cuda stages are fused for a
/// GPU and left for its backend (runtime/cuda_executor.h) to compile.
Program lower(Graph g, const std::map<int, std::string>& schedules = {}, bool jit = true, Target target = Target::Cpu);

/// The names of the steps lower() runs, and of emit_cuda (fused for a GPU; each stage's CUDA C,
/// or why the CUDA backend refuses it) and lower (the whole pipeline), which only run_passes runs.
std::vector<std::string> pass_names();

/// Runs the named steps in order on IR text and prints the resulting graph, followed by what
/// each step printed (its storage table, edges, stages, ...): the text tests and the
/// strider-opt tool use this. fuse_stages is followed by schedule_stages unless that is the
/// next name, so that stages print scheduled. An unknown name throws, listing the known ones.
std::string run_passes(const std::string& ir_text, const std::vector<std::string>& passes,
                       const std::map<int, std::string>& schedules = {}, Target target = Target::Cpu);

}  // namespace strider
